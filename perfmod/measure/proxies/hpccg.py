"""HPCCG-like conjugate gradient proxy with skeleton regions (paper 004 §VI-A, application 2).

Mantevo's HPCCG solves ``A x = b`` by unpreconditioned conjugate gradient on
a 27-point finite-difference matrix of a 3-D "chimney" domain: each rank owns
an ``nx x ny x nz`` block, the blocks are stacked along z, so a rank talks to
the ranks below and above it.  Row ``i`` has 27 on the diagonal and -1 for
each of its (up to 26) neighbours; ``b = A * ones``, so the exact solution is
all ones.  HPCCG runs a fixed number of iterations (its tolerance is 0), and
so does this proxy: the iteration count never depends on the data, which is
what lets a skeleton keep the control flow (paper 004 §III-A).

One iteration, as in HPCCG's ``HPCCG.cpp``::

    rtrans = ddot(r, r); Allreduce          (from the second iteration)
    p = r + beta p                          waxpby
    halo exchange of p (Irecv x2, Isend x2, Waitall)
    Ap = A p                                sparsemv
    alpha = ddot(p, Ap); Allreduce
    x = x + alpha p; r = r - alpha Ap       waxpby x 2

Regions (skeleton regions, parameter ``n`` = local rows): ``sparsemv``,
``ddot`` (local dot product only: the Allreduce stays outside, so the
skeleton keeps it; its stand-in returns 1.0), ``waxpby``; and ``generate``
(matrix assembly, outside the timed solve; its stand-in returns no matrix).
Working set per rank: about 370 B per row (27 nonzeros of 12 B, five
vectors), so ``n = 28^3`` rows fill an 8 MiB last-level cache.

Run with ``mpiexec -n P python -m perfmod.measure.proxies.hpccg --n 32 --iterations 20
[--mode measure|model|hybrid ...]`` (see :mod:`perfmod.measure.proxies.skeleton_cli`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from perfmod.measure.regions.skeleton import skeleton_function, skeleton_region, virtual_clock

__all__ = ["generate_matrix", "ddot", "waxpby", "sparsemv", "run_hpccg", "main", "REGIONS", "ROW_TRAFFIC",
           "ROW_WORKING_SET"]

#: Regions of the solve and their parameters.
REGIONS = {"sparsemv": ("n",), "ddot": ("n",), "waxpby": ("n",)}

#: Bytes one call of each region moves per local row (B): ``sparsemv`` streams the CSR matrix (27
#: nonzeros of an 8 B value and a 4 B column index, a 4 B row pointer), reads ``x`` and writes ``y``
#: (8 B each); ``ddot`` reads two vectors, ``waxpby`` reads two and writes one.
ROW_TRAFFIC = {"sparsemv": 27 * 12 + 4 + 16, "ddot": 16, "waxpby": 24}

#: Bytes per local row the solve keeps live (B): the matrix and five vectors (x, r, p, Ap, b).
ROW_WORKING_SET = 27 * 12 + 4 + 5 * 8


def _no_matrix(nx: int, ny: int, nz: int, rank: int, nprocs: int) -> tuple[None, np.ndarray]:
    return None, np.zeros(nx * ny * nz)


@skeleton_function("generate", params=lambda nx, ny, nz, rank, nprocs: {"n": nx * ny * nz}, stand_in=_no_matrix)
def generate_matrix(nx: int, ny: int, nz: int, rank: int, nprocs: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """This rank's rows of the 27-point matrix and right-hand side.

    Columns index the extended vector ``[ghost plane below | local rows | ghost
    plane above]`` (``nx * ny`` entries per ghost plane).

    Returns
    -------
    A : scipy.sparse.csr_matrix
        ``n x (n + 2 nx ny)``, ``n = nx ny nz``.
    b : ndarray
        ``A @ ones`` (so the solution is all ones).
    """
    for name, v in (("nx", nx), ("ny", ny), ("nz", nz)):
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    n, g = nx * ny * nz, nx * ny
    # The neighbourhood is the product of three 1-D ones (-1, 0, +1 along each axis, within the domain), so the
    # pattern is a Kronecker product: fewer and smaller temporaries than gathering 27 column arrays and
    # masking them (half the time, a third of the page faults), which kept the region's time noisy.
    z0 = rank * nz
    band = sp.kron(_ones_band(nz, nz + 2, 1, -z0, nprocs * nz - z0),
                   sp.kron(_ones_band(ny, ny, 0, 0, ny), _ones_band(nx, nx, 0, 0, nx), format="csr"), format="csr")
    counts = np.diff(band.indptr)
    cols = band.indices.astype(np.int32)
    rows = np.repeat(np.arange(n, dtype=np.int32), counts)
    vals = np.where(cols == rows + g, 27.0, -1.0)
    A = sp.csr_matrix((vals, cols, band.indptr), shape=(n, n + 2 * g))
    b = 28.0 - counts.astype(float)
    return A, b


def _ones_band(n: int, m: int, shift: int, lo: int, hi: int) -> sp.csr_matrix:
    """``n x m`` ones at ``(i, i + d + shift)`` for ``d`` in -1, 0, 1 where ``lo <= i + d < hi``."""
    i = np.repeat(np.arange(n), 3)
    d = np.tile(np.array([-1, 0, 1]), n)
    ok = (i + d >= lo) & (i + d < hi)
    return sp.csr_matrix((np.ones(int(ok.sum())), (i[ok], (i + d + shift)[ok])), shape=(n, m))


@skeleton_function("ddot", params=lambda x, y: {"n": len(x)}, stand_in=lambda x, y: 1.0)
def ddot(x: np.ndarray, y: np.ndarray) -> float:
    """Local dot product (the caller reduces it over ranks)."""
    return float(np.dot(x, y))


def waxpby(alpha: float, x: np.ndarray, beta: float, y: np.ndarray, w: np.ndarray) -> None:
    """``w = alpha x + beta y`` in place (``w`` may be ``x`` or ``y``); region ``waxpby``."""
    with skeleton_region("waxpby", n=len(w)) as run:
        if run:
            if beta == 0.0:
                np.multiply(x, alpha, out=w)
            elif w is y:
                w *= beta
                w += alpha * x
            else:
                if alpha == 1.0:
                    np.copyto(w, x)
                else:
                    np.multiply(x, alpha, out=w)
                w += beta * y


def sparsemv(A: sp.csr_matrix, x_ext: np.ndarray, y: np.ndarray) -> None:
    """``y = A x_ext`` (``x_ext`` with its ghost planes); region ``sparsemv``."""
    with skeleton_region("sparsemv", n=len(y)) as run:
        if run:
            y[:] = A @ x_ext


def _exchange(comm: Any, p_ext: np.ndarray, g: int, n: int, rank: int, nprocs: int) -> None:
    """Halo exchange of the ghost planes of ``p_ext`` with the ranks below and above."""
    reqs = []
    if rank > 0:
        reqs.append(comm.Irecv(p_ext[:g], source=rank - 1, tag=1))
    if rank < nprocs - 1:
        reqs.append(comm.Irecv(p_ext[g + n:], source=rank + 1, tag=2))
    if rank > 0:
        reqs.append(comm.Isend(p_ext[g:2 * g], dest=rank - 1, tag=2))
    if rank < nprocs - 1:
        reqs.append(comm.Isend(p_ext[n:g + n], dest=rank + 1, tag=1))
    if reqs:
        if hasattr(comm, "Waitall"):  # a recording or virtual communicator
            comm.Waitall(reqs)
        else:
            from mpi4py import MPI

            MPI.Request.Waitall(reqs)


def run_hpccg(comm: Any, nx: int, ny: int | None = None, nz: int | None = None, iterations: int = 20
              ) -> dict[str, Any]:
    """Run the CG solve on this rank; every rank calls it.

    Parameters
    ----------
    comm : mpi4py communicator
        ``COMM_WORLD``, a recording proxy or a virtual communicator.
    nx, ny, nz : int
        Local block (``ny``, ``nz`` default to ``nx``).
    iterations : int
        CG iterations (fixed, as HPCCG with tolerance 0).

    Returns
    -------
    dict
        ``time`` (s, real time of the timed solve on this rank, between two
        barriers), ``virtual_time`` (s, the same on the skeleton's virtual
        clock), ``cpu_time`` (s, this process's CPU time over the same section: close to
        the undisturbed time when other load descheduled the rank), ``normr`` (final residual norm), ``n`` (local rows).
    """
    from mpi4py import MPI

    ny = nx if ny is None else ny
    nz = nx if nz is None else nz
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    rank, nprocs = comm.Get_rank(), comm.Get_size()
    n, g = nx * ny * nz, nx * ny
    A, b = generate_matrix(nx, ny, nz, rank, nprocs)
    x = np.zeros(n)
    r = np.empty(n)
    Ap = np.empty(n)
    p_ext = np.zeros(n + 2 * g)
    p = p_ext[g:g + n]
    red_in, red_out = np.zeros(1), np.zeros(1)

    def allreduce(v: float) -> float:
        red_in[0] = v
        comm.Allreduce(red_in, red_out, op=MPI.SUM)
        return float(red_out[0])

    comm.Barrier()
    t0, v0, c0 = time.perf_counter(), virtual_clock(), time.process_time()
    # r = b - A x with x = 0 (HPCCG computes it; p carries x for the exchange)
    p[:] = 0.0
    _exchange(comm, p_ext, g, n, rank, nprocs)
    sparsemv(A, p_ext, Ap)
    waxpby(1.0, b, -1.0, Ap, r)
    rtrans = allreduce(ddot(r, r))
    for k in range(1, iterations + 1):
        if k == 1:
            waxpby(1.0, r, 0.0, r, p)
        else:
            old = rtrans
            rtrans = allreduce(ddot(r, r))
            waxpby(1.0, r, rtrans / old, p, p)
        _exchange(comm, p_ext, g, n, rank, nprocs)
        sparsemv(A, p_ext, Ap)
        alpha = rtrans / allreduce(ddot(p, Ap))
        waxpby(1.0, x, alpha, p, x)
        waxpby(1.0, r, -alpha, Ap, r)
    normr = float(np.sqrt(allreduce(ddot(r, r))))
    comm.Barrier()
    elapsed, virtual, cpu = time.perf_counter() - t0, virtual_clock() - v0, time.process_time() - c0
    return {"time": elapsed, "virtual_time": virtual, "cpu_time": cpu, "normr": normr, "n": n}


def main(argv: list[str] | None = None) -> None:
    """MPI entry point (see :mod:`perfmod.measure.proxies.skeleton_cli`)."""
    from perfmod.measure.proxies.skeleton_cli import proxy_main

    def add(ap: Any) -> None:
        ap.add_argument("--n", type=int, required=True, help="local block edge (nx = ny = nz)")
        ap.add_argument("--iterations", type=int, default=20)

    def program(comm: Any, args: Any) -> dict[str, Any]:
        return run_hpccg(comm, args.n, iterations=args.iterations)

    proxy_main("hpccg", add, program, argv)


if __name__ == "__main__":
    main()
