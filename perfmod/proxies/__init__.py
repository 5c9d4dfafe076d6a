"""Proxy applications run for real on this machine (NumPy; MPI through mpi4py)."""
