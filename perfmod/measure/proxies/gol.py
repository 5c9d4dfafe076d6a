"""Game of Life proxy (paper 003 §III-A): NumPy stencil, row partitioning, halo exchange.

The global grid (``ny`` x ``nx`` cells, a torus) is split into contiguous
blocks of rows, one per rank; rank i exchanges one halo row with ranks
i - 1 and i + 1 (periodic) every generation.  Each rank times

- compute (T_w): the 8-neighbour update of its rows and the barrier after
  it (waiting for the slowest rank is the synchronization overhead O_w of
  Eq. 1, not communication);
- communication (T_c): the halo exchange (``Sendrecv`` up, then down);
- other (T_o): grid initialization and the final gather.

Run with MPI: ``mpiexec -n P python -m perfmod.measure.proxies.gol --ny .. --nx .. --generations ..``
(or :func:`perfmod.measure.runner.run_mpi`); rank 0 prints one JSON line.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from perfmod.measure.proxies.ranks import probed, serve

__all__ = ["STRIP_CELLS", "life_step", "LifeKernel", "life_serial", "row_block", "random_grid", "run_gol", "main"]


def life_step(padded: np.ndarray) -> np.ndarray:
    """One generation of the rows of ``padded`` between its first and last (halo) rows.

    Columns wrap around (torus); rows come with one halo row above and below.
    Returns the new interior, shape ``(padded.shape[0] - 2, padded.shape[1])``.
    """
    p = padded.astype(np.uint8, copy=False)
    mid = p[1:-1]
    rows = p[:-2] + mid + p[2:]  # vertical sums of three rows at each column
    n = rows + np.roll(rows, 1, axis=1) + np.roll(rows, -1, axis=1) - mid  # 8 neighbours
    return ((n == 3) | ((mid == 1) & (n == 2))).astype(np.uint8)


STRIP_CELLS = 262144
"""Cells updated per strip: the four one-byte temporaries of a strip (1 MiB) stay in cache (:class:`LifeKernel`
gives the measurement)."""


class LifeKernel:
    """:func:`life_step` with preallocated buffers (no allocation per generation), strip by strip.

    Allocating temporaries every step is slow under MPI (the MPI library's
    memory hooks make every large ``mmap``/``munmap`` cost system time), so
    the proxy's timed loop reuses these buffers.  The rows are updated in
    strips of about ``strip_cells`` cells: whole-block temporaries of a
    large grid leave the last-level cache (six bytes per cell), and the cost
    per cell then grows with the grid, which a BSP model with one K_w cannot
    follow.  Strips keep the temporaries in cache, as a cache-blocked stencil
    code does, so the per-cell cost no longer depends on the grid size.

    The measurement behind :data:`STRIP_CELLS` (measured on 2026-11-24,
    development VM: 2 cores, 1 MiB L2 per core, 8 MiB L3; one process on an
    idle machine, best of 5 x 10 steps; see commit 03ce907 and
    ``docs/study_notes/sharif_gol.md``): whole blocks took 0.98, 1.14, 1.49
    and 1.64 ns per cell at 800, 1,000, 1,200 and 1,400 cells square, strips
    of 262,144 cells 0.90, 0.91, 0.90 and 0.99 ns, strips of 65,536 cells
    1.25-1.40 ns (Python's cost per strip shows).  Other machines differ;
    re-measure before changing the constant.
    """

    def __init__(self, rows: int, nx: int, strip_cells: int = STRIP_CELLS) -> None:
        self.strip = max(1, min(rows, strip_cells // max(nx, 1)))
        shape = (self.strip, nx)
        self.r = np.empty(shape, dtype=np.uint8)
        self.n = np.empty(shape, dtype=np.uint8)
        self.b1 = np.empty(shape, dtype=bool)
        self.b2 = np.empty(shape, dtype=bool)

    def __call__(self, padded: np.ndarray, out: np.ndarray) -> None:
        """Write the next generation of ``padded``'s interior rows into ``out``."""
        rows = padded.shape[0] - 2
        for a in range(0, rows, self.strip):
            b = min(a + self.strip, rows)
            self._strip(padded[a:b + 2], out[a:b], b - a)

    def _strip(self, padded: np.ndarray, out: np.ndarray, k: int) -> None:
        mid = padded[1:-1]
        r, n, b1, b2 = self.r[:k], self.n[:k], self.b1[:k], self.b2[:k]
        np.add(padded[:-2], mid, out=r)
        np.add(r, padded[2:], out=r)
        np.subtract(r, mid, out=n)
        n[:, 1:] += r[:, :-1]
        n[:, 0] += r[:, -1]
        n[:, :-1] += r[:, 1:]
        n[:, -1] += r[:, 0]
        np.equal(n, 3, out=b1)
        np.equal(n, 2, out=b2)
        np.logical_and(b2, mid.view(bool), out=b2)
        np.logical_or(b1, b2, out=b1)
        out[...] = b1.view(np.uint8)


def life_serial(grid: np.ndarray, generations: int) -> np.ndarray:
    """Reference: ``generations`` steps of the whole torus on one process."""
    g = grid.astype(np.uint8)
    for _ in range(generations):
        g = life_step(np.concatenate([g[-1:], g, g[:1]]))
    return g


def row_block(ny: int, nprocs: int, rank: int) -> tuple[int, int]:
    """Rows ``[start, stop)`` of ``rank`` (blocks differ by at most one row)."""
    if ny < nprocs:
        raise ValueError(f"ny={ny} rows cannot be split over {nprocs} ranks")
    base, extra = divmod(ny, nprocs)
    start = rank * base + min(rank, extra)
    return start, start + base + (rank < extra)


def random_grid(ny: int, nx: int, seed: int = 0, density: float = 0.3) -> np.ndarray:
    """A random initial grid (the paper uses randomly generated inputs)."""
    return (np.random.default_rng(seed).random((ny, nx)) < density).astype(np.uint8)


def run_gol(comm: Any, ny: int, nx: int, generations: int, seed: int = 0,
            initial: np.ndarray | None = None) -> dict[str, Any]:
    """Run the proxy on ``comm``; return per-rank timings (s) and, on rank 0, the final grid."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    t0 = time.perf_counter()
    start, stop = row_block(ny, size, rank)
    full = initial if initial is not None else random_grid(ny, nx, seed)
    local = np.zeros((stop - start + 2, nx), dtype=np.uint8)
    local[1:-1] = full[start:stop]
    nxt = np.zeros_like(local)
    kernel = LifeKernel(stop - start, nx)
    up, down = (rank - 1) % size, (rank + 1) % size
    t_other = time.perf_counter() - t0
    t_comp = t_comm = 0.0
    for _ in range(generations):
        c0 = time.perf_counter()
        if size > 1:
            comm.Sendrecv(local[1], dest=up, sendtag=1, recvbuf=local[-1], source=down, recvtag=1)
            comm.Sendrecv(local[-2], dest=down, sendtag=2, recvbuf=local[0], source=up, recvtag=2)
        else:
            local[0], local[-1] = local[-2], local[1]
        c1 = time.perf_counter()
        kernel(local, nxt[1:-1])
        local, nxt = nxt, local
        if size > 1:
            comm.Barrier()  # waiting for the slowest rank is synchronization, O_w of Eq. 1
        c2 = time.perf_counter()
        t_comm += c1 - c0
        t_comp += c2 - c1
    g0 = time.perf_counter()
    parts = comm.gather(local[1:-1], root=0)
    t_other += time.perf_counter() - g0
    times = np.array([t_comp, t_comm, t_other])
    worst = np.zeros(3)
    comm.Reduce(times, worst, op=MPI.MAX, root=0)
    out: dict[str, Any] = {"t_w": worst[0], "t_c": worst[1], "t_o": worst[2]}
    if rank == 0:
        out["grid"] = np.concatenate(parts)
    return out


def main(argv: list[str] | None = None) -> None:
    """MPI entry point: prints ``{"t_w", "t_c", "t_o", "nprocs", "alive", ..., "interference"}`` as JSON on rank 0.

    ``interference`` holds every rank's probe report over the run
    (:mod:`perfmod.measure.interference`); ``--batch``: :func:`~perfmod.measure.proxies.ranks.serve`.
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ny", type=int, required=True)
    ap.add_argument("--nx", type=int, required=True)
    ap.add_argument("--generations", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)

    def record(comm: Any, args: argparse.Namespace) -> dict[str, Any] | None:
        res, total, reports = probed(comm, lambda: run_gol(comm, args.ny, args.nx, args.generations, args.seed))
        if comm.Get_rank() != 0:
            return None
        return {"t_w": res["t_w"], "t_c": res["t_c"], "t_o": res["t_o"], "total_time": total,
                "nprocs": comm.Get_size(), "alive": int(res["grid"].sum()),
                "ny": args.ny, "nx": args.nx, "generations": args.generations, "interference": reports}

    serve(ap, record, argv)


if __name__ == "__main__":
    main()
