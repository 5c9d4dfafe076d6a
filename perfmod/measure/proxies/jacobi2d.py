"""Jacobi2D proxy (paper 000 §4.2, Eq. 6, Listing 1): NumPy on the CPU, CuPy on a GPU.

Each of P ranks holds a ``block x block`` block of doubles (weak scaling, as
the paper: 16,384 x 16,384 per GPU) with one ghost cell on each side.  The
process grid is ``MPI_Dims_create(P, 2)``, non-periodic, neighbours from
``MPI_Cart_shift`` (:func:`perfmod.machine.cart.dims_create`,
:func:`perfmod.machine.cart.cart_shift`, the rule of
:func:`perfmod.apps.jacobi2d.decompose`); cells outside the global grid are
fixed boundary values.  Every iteration runs the paper's nine phases, each
timed on its own (the device is synchronized before every timer read):

1. PACK: the block's edges into contiguous device send buffers;
2. D2H: send buffers to host memory;
3. EXCHANGE: ``Irecv`` from every neighbour, ``Isend`` to every neighbour,
   ``Waitall`` (Listing 1);
4. H2D: received halos to device buffers;
5. UNPACK: device receive buffers into the ghost cells;
6. STENCIL: Eq. 6, ``A'[i,j] = (A[i,j] + (A[i-1,j] + A[i+1,j] + A[i,j-1] + A[i,j+1]) / 4) / 2``,
   into a second buffer (the two are swapped);
7. REDUCE: the sum of the block's cells;
8. SUM_D2H: that sum to the host;
9. ALLREDUCE: the global sum (``MPI_Allreduce``).

On the CPU the "device" and "host" buffers are distinct NumPy arrays, so
phases 2, 4 and 8 are memory copies, as they are transfers on a GPU.  All
buffers are allocated once before the loop.  The kernels are written against
the array module ``xp`` (:mod:`perfmod.measure.bench.xp`) as element-wise passes
with ``out=`` arguments; :func:`perfmod.apps.jacobi2d.proxy_kernel_counts`
counts their operations and the bytes they move (the model of this program
lives with the application, below ``measure``), giving the QRoof kernel
metrics per iteration without a profiler.

Run with MPI: ``mpiexec -n P python -m perfmod.measure.proxies.jacobi2d --block .. --iters ..``
(or :func:`perfmod.measure.runner.run_mpi`); rank 0 prints one JSON line.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from perfmod.core.checks import positive_int
from perfmod.machine.cart import COMPASS, cart_coords, compass_neighbours, dims_create
from perfmod.measure.bench.xp import array_module, backend_info, synchronize, to_host
from perfmod.measure.proxies.ranks import probed, serve

__all__ = [
    "PHASES",
    "KERNELS",
    "initial_field",
    "stencil_step",
    "jacobi_serial",
    "SerialComm",
    "JacobiRank",
    "kernel_times",
    "run_jacobi",
    "main",
]

PHASES = ("pack", "d2h", "exchange", "h2d", "unpack", "stencil", "reduce", "sum_d2h", "allreduce")
#: The device kernels (phases 1, 5, 6, 7), modelled by QRoof: their model,
#: :func:`perfmod.apps.jacobi2d.proxy_kernel_counts`, names the same four
#: (:data:`perfmod.apps.jacobi2d.KERNELS`; ``measure`` may not import ``apps``, a test ties them).
KERNELS = tuple(PHASES[i] for i in (0, 4, 5, 6))
INITS = ("wave", "constant", "linear")


def initial_field(gy: np.ndarray, gx: np.ndarray, init: str = "wave", seed: int = 0) -> np.ndarray:
    """Cell values at global coordinates ``(gy, gx)`` (ghost coordinates -1 and N included).

    ``"wave"`` is a deterministic pseudo-random pattern in [0, 1) (the same on
    any decomposition); ``"constant"`` is 1 everywhere and ``"linear"`` is
    ``0.5 + 0.25 gy - 0.125 gx``; both are fixed points of Eq. 6 (a linear
    function equals the mean of its four neighbours).
    """
    gy, gx = np.broadcast_arrays(np.asarray(gy, dtype=float), np.asarray(gx, dtype=float))
    if init == "constant":
        return np.ones(gy.shape)
    if init == "linear":
        return 0.5 + 0.25 * gy - 0.125 * gx
    if init == "wave":
        v = np.sin(gy * 12.9898 + gx * 78.233 + seed * 37.719) * 43758.5453
        return v - np.floor(v)
    raise ValueError(f"unknown init {init!r}; known: {', '.join(INITS)}")


def stencil_step(xp: ModuleType, a: Any, out: Any, tmp: Any) -> None:
    """Eq. 6 on the interior of padded ``a`` into the interior of ``out`` (six element-wise passes).

    ``tmp`` has the interior's shape.  Passes: ``N+S``, ``+W``, ``+E``, ``*1/4``,
    ``+centre``, ``*1/2``; 6 flops per cell.
    """
    xp.add(a[:-2, 1:-1], a[2:, 1:-1], out=tmp)
    xp.add(tmp, a[1:-1, :-2], out=tmp)
    xp.add(tmp, a[1:-1, 2:], out=tmp)
    xp.multiply(tmp, 0.25, out=tmp)
    xp.add(tmp, a[1:-1, 1:-1], out=tmp)
    xp.multiply(tmp, 0.5, out=out[1:-1, 1:-1])


def jacobi_serial(padded: np.ndarray, iters: int) -> np.ndarray:
    """Reference: ``iters`` sweeps of Eq. 6 over a whole padded grid (ghosts fixed); returns the padded grid."""
    a, b = padded.astype(float), padded.astype(float)
    tmp = np.empty((a.shape[0] - 2, a.shape[1] - 2))
    for _ in range(iters):
        stencil_step(np, a, b, tmp)
        a, b = b, a
    return a


_IDX = {d: i for i, d in enumerate(COMPASS)}
_OPPOSITE = {"north": "south", "south": "north", "west": "east", "east": "west"}


def _mpi() -> Any:
    from mpi4py import MPI

    return MPI


class SerialComm:
    """The few communicator calls the proxy makes, for one process without MPI (GPU kernel timing)."""

    def Get_size(self) -> int:  # noqa: N802 (mpi4py's names)
        return 1

    def Get_rank(self) -> int:  # noqa: N802
        return 0

    def Barrier(self) -> None:  # noqa: N802
        pass

    def Allreduce(self, send: Any, recv: Any, op: Any = None) -> None:  # noqa: N802
        np.copyto(recv, send)

    def allreduce(self, value: Any, op: Any = None) -> Any:
        return value

    def gather(self, value: Any, root: int = 0) -> list:
        return [value]


def _sum_op(comm: Any) -> Any:
    return None if isinstance(comm, SerialComm) else _mpi().SUM


def _max_op(comm: Any) -> Any:
    return None if isinstance(comm, SerialComm) else _mpi().MAX


class JacobiRank:
    """One rank's block, buffers and neighbours; :meth:`iterate` runs and times the nine phases."""

    def __init__(self, comm: Any, block: int, xp: ModuleType, init: str = "wave", seed: int = 0,
                 halos: Any = None) -> None:
        self.comm, self.xp = comm, xp
        self.n = n = positive_int("block", block)
        size, rank = comm.Get_size(), comm.Get_rank()
        self.dims = dims_create(size, 2)
        self.coords = tuple(int(c) for c in cart_coords(rank, self.dims))
        self.nbr = compass_neighbours(rank, self.dims)
        self.active = [d for d in COMPASS if self.nbr[d] >= 0]
        # the edges PACK and UNPACK move: those with a neighbour, or all given ``halos`` (kernel timing)
        self.halos = list(self.active if halos is None else halos)
        gy = self.coords[0] * n + np.arange(-1, n + 1)[:, None]
        gx = self.coords[1] * n + np.arange(-1, n + 1)[None, :]
        host = initial_field(gy, gx, init, seed)
        self.a = xp.asarray(host)
        self.b = xp.asarray(host)  # same boundary ghosts in both buffers
        self.tmp = xp.empty((n, n))
        self.rowsum = xp.empty(n)
        k = len(COMPASS)
        self.sbuf, self.rbuf = xp.empty((k, n)), xp.empty((k, n))  # device buffers
        self.hsend, self.hrecv = np.empty((k, n)), np.empty((k, n))  # host buffers
        self.hsum, self.gsum = np.zeros(1), np.zeros(1)
        self.local_sum: Any = None
        self.times = dict.fromkeys(PHASES, 0.0)
        self.t_loop = 0.0
        self.iteration = 0  # timed iterations run so far (the recorded trace's iteration numbers)

    def _edge(self, a: Any, d: str, ghost: bool) -> Any:
        n = self.n
        i = {"north": 0 if ghost else 1, "south": n + 1 if ghost else n,
             "west": 0 if ghost else 1, "east": n + 1 if ghost else n}[d]
        return a[i, 1:-1] if d in ("north", "south") else a[1:-1, i]

    def pack(self) -> None:
        """PACK: the halo edges into the contiguous device send buffers."""
        for d in self.halos:
            self.xp.copyto(self.sbuf[_IDX[d]], self._edge(self.a, d, ghost=False))

    def unpack(self) -> None:
        """UNPACK: the device receive buffers into the ghost cells."""
        for d in self.halos:
            self.xp.copyto(self._edge(self.a, d, ghost=True), self.rbuf[_IDX[d]])

    def stencil(self) -> None:
        """STENCIL: Eq. 6 into the second buffer, then swap the two."""
        stencil_step(self.xp, self.a, self.b, self.tmp)
        self.a, self.b = self.b, self.a

    def reduce(self) -> None:
        """REDUCE: the sum of the block's cells (left on the device), row sums first.

        Summing the strided interior view in one call is slow on CuPy (1.3
        GB/s on an H100 at 16,384 x 16,384: its generic indexer on a
        non-contiguous view); row sums over the contiguous rows, then their
        sum, run at memory speed on both backends.
        """
        self.xp.sum(self.a[1:-1, 1:-1], axis=1, out=self.rowsum)
        self.local_sum = self.xp.sum(self.rowsum)

    def iterate(self, iters: int, timed: bool = True) -> None:
        """Run ``iters`` iterations; add their phase times when ``timed``."""
        xp, comm = self.xp, self.comm
        gpu = xp.__name__ != "numpy"
        # a recording communicator (perfmod.trace.recorder) records its Waitall and numbers the iterations
        waitall = getattr(comm, "Waitall", None) or (_mpi().Request.Waitall if self.active else None)
        recorder = getattr(comm, "recorder", None)
        acc = dict.fromkeys(PHASES, 0.0)
        synchronize(xp)
        start = last = time.perf_counter()

        def lap(phase: str) -> None:
            nonlocal last
            synchronize(xp)
            now = time.perf_counter()
            acc[phase] += now - last
            last = now

        for _ in range(iters):
            if recorder is not None:
                recorder.iteration(self.iteration if timed else None)
            self.iteration += timed
            self.pack()  # 1 PACK
            lap("pack")
            for d in self.halos:  # 2 D2H
                if gpu:
                    self.sbuf[_IDX[d]].get(out=self.hsend[_IDX[d]])
                else:
                    np.copyto(self.hsend[_IDX[d]], self.sbuf[_IDX[d]])
            lap("d2h")
            if self.active:  # 3 EXCHANGE (Listing 1)
                reqs = [comm.Irecv(self.hrecv[_IDX[d]], source=self.nbr[d], tag=_IDX[_OPPOSITE[d]])
                        for d in self.active]
                reqs += [comm.Isend(self.hsend[_IDX[d]], dest=self.nbr[d], tag=_IDX[d]) for d in self.active]
                waitall(reqs)
            lap("exchange")
            for d in self.halos:  # 4 H2D
                if gpu:
                    self.rbuf[_IDX[d]].set(self.hrecv[_IDX[d]])
                else:
                    np.copyto(self.rbuf[_IDX[d]], self.hrecv[_IDX[d]])
            lap("h2d")
            self.unpack()  # 5 UNPACK
            lap("unpack")
            self.stencil()  # 6 STENCIL (Eq. 6)
            lap("stencil")
            self.reduce()  # 7 REDUCE
            lap("reduce")
            self.hsum[0] = float(self.local_sum)  # 8 sum to the host
            lap("sum_d2h")
            comm.Allreduce(self.hsum, self.gsum, op=_sum_op(comm))  # 9 ALLREDUCE
            lap("allreduce")
        synchronize(xp)
        if recorder is not None:
            recorder.iteration(None)
        if timed:
            self.t_loop += time.perf_counter() - start
            for p in PHASES:
                self.times[p] += acc[p]

    def interior(self) -> np.ndarray:
        """The block's cells on the host."""
        return to_host(self.xp, self.a[1:-1, 1:-1])


def run_jacobi(comm: Any, block: int, iters: int, warmup: int = 2, backend: str = "numpy", init: str = "wave",
               seed: int = 0, gather: bool = False, trace: str | Path | None = None) -> dict[str, Any]:
    """Run the proxy on ``comm``: ``warmup`` untimed iterations, then ``iters`` timed ones.

    With ``trace`` the run records its MPI calls (:func:`perfmod.trace.recorder.record`; the timed
    iterations numbered, the warm-up and the statistics afterwards outside any iteration) and rank 0
    writes the whole run's trace there (:func:`perfmod.trace.formats.npz.write_npz`), ready for
    :func:`perfmod.replay.replay` or an export.

    Returns (on every rank) per-phase seconds per iteration, the mean over
    ranks (``t_<phase>``; the allreduce ends every iteration, so the ranks'
    loop times agree and the phases of the mean rank add up to its
    iteration), ``t_iter`` (mean loop time per iteration), ``t_iter_max``
    (the slowest rank's), the global sum after the last iteration and, with
    ``gather`` on rank 0, the global grid (``grid``).
    """
    positive_int("iters", iters)
    xp = array_module(backend)
    if trace is not None:
        from perfmod.trace.recorder import record

        comm = record(comm)
    r = JacobiRank(comm, block, xp, init, seed)
    if warmup:
        r.iterate(warmup, timed=False)
    comm.Barrier()
    r.iterate(iters)
    vals = np.array([r.times[p] for p in PHASES] + [r.t_loop]) / iters
    total, worst = np.zeros_like(vals), np.zeros_like(vals)
    comm.Allreduce(vals, total, op=_sum_op(comm))
    comm.Allreduce(vals, worst, op=_max_op(comm))
    mean = total / comm.Get_size()
    out: dict[str, Any] = {f"t_{p}": float(mean[i]) for i, p in enumerate(PHASES)}
    out["t_iter"] = float(mean[-1])
    out["t_iter_max"] = float(worst[-1])
    out["global_sum"] = float(r.gsum[0])
    out["neighbours_max"] = comm.allreduce(len(r.active), op=_max_op(comm))
    out["dims"] = list(r.dims)
    out["info"] = backend_info(xp)
    if gather:
        parts = comm.gather((r.coords, r.interior()), root=0)
        if comm.Get_rank() == 0:
            n = r.n
            grid = np.empty((r.dims[0] * n, r.dims[1] * n))
            for (cy, cx), blk in parts:
                grid[cy * n:(cy + 1) * n, cx * n:(cx + 1) * n] = blk
            out["grid"] = grid
    if trace is not None:
        from perfmod.trace.formats.npz import write_npz

        recorded = comm.recorder.gather()
        if recorded is not None:
            out["trace"] = str(write_npz(recorded, trace))
            out["trace_events"] = len(recorded)
    return out


def kernel_times(block: int, backend: str = "numpy", reps: int = 10, halos: Any = COMPASS,
                 warmup: int = 2) -> dict[str, np.ndarray]:
    """Seconds of each kernel (PACK, UNPACK, STENCIL, REDUCE) per repetition, on one process.

    The kernels of a rank with the given ``halos`` (default: all four, an
    interior rank), run back to back on a block of ``block x block`` cells,
    each timed alone with the device synchronized before and after; no MPI
    needed (the GPU kernel measurement).
    """
    positive_int("reps", reps)
    xp = array_module(backend)
    r = JacobiRank(SerialComm(), block, xp, halos=halos)
    out = {k: np.empty(reps) for k in KERNELS}
    for i in range(-warmup, reps):
        for k in KERNELS:
            synchronize(xp)
            t0 = time.perf_counter()
            getattr(r, k)()
            synchronize(xp)
            if i >= 0:
                out[k][i] = time.perf_counter() - t0
    return out


def main(argv: list[str] | None = None) -> None:
    """MPI entry point: rank 0 prints the timings and global sum as one JSON line (``--batch``:
    :func:`~perfmod.measure.proxies.ranks.serve`)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--block", type=int, required=True, help="cells per side of each rank's block")
    ap.add_argument("--iters", type=int, required=True, help="timed iterations")
    ap.add_argument("--warmup", type=int, default=2, help="untimed iterations first")
    ap.add_argument("--backend", default="numpy", choices=("numpy", "cupy"))
    ap.add_argument("--init", default="wave", choices=INITS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--checksum", action="store_true", help="also print the sum of squares of the final grid")
    ap.add_argument("--trace", help="record the MPI calls and write the run's trace (.npz) here")

    def record(comm: Any, args: argparse.Namespace) -> dict[str, Any] | None:
        res, _, reports = probed(comm, lambda: run_jacobi(comm, args.block, args.iters, args.warmup, args.backend,
                                                          args.init, args.seed, gather=args.checksum,
                                                          trace=args.trace))
        if comm.Get_rank() != 0:
            return None
        grid = res.pop("grid", None)
        if grid is not None:
            res["sum_squares"] = float(np.sum(grid * grid))
        return {**res, "nprocs": comm.Get_size(), "block": args.block, "iters": args.iters,
                "warmup": args.warmup, "backend": args.backend, "interference": reports}

    serve(ap, record, argv)


if __name__ == "__main__":
    main()
