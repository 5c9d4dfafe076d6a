"""Measuring the machine at hand: microbenchmarks (:mod:`.bench`), proxy applications
(:mod:`.proxies`), power sensors (:mod:`.power`) and running MPI programs (:mod:`.runner`)."""
