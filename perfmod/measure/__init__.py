"""Measuring the machine at hand: microbenchmarks (:mod:`.bench`), proxy applications
(:mod:`.proxies`), power sensors (:mod:`.power`), running MPI programs (:mod:`.runner`) and region
instrumentation of Python programs (:mod:`.regions`, paper 004)."""
