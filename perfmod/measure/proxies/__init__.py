"""Proxy applications run for real on this machine (NumPy, CuPy for Jacobi2D on a GPU; MPI through mpi4py)."""
