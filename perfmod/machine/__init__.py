"""The machine: rank placement and communication modes (:mod:`.mapping`), MPI Cartesian grids
(:mod:`.cart`), platforms with their communication parameters (:mod:`.platforms`) and GPU device
tables (:mod:`.devices`)."""
