"""Microbenchmarks run on the machine at hand: MPI ping-pong (:mod:`.pingpong`), memory and arithmetic rates as a
QRoof device row (:mod:`.devicebench`) on NumPy or CuPy (:mod:`.xp`)."""
