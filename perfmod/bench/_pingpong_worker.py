"""The MPI side of :mod:`perfmod.bench.pingpong` (run under mpiexec, not imported).

Ranks ``0..k-1`` are senders, rank ``i`` paired with rank ``i + k``; all k
pairs exchange at once.  Per size: ``warmup`` untimed round trips, then
``reps`` timed samples, each the mean of ``inner`` round trips (more for
small messages, so that a sample is well above the timer resolution).  The
one-way time of a sample is half the round trip; the slowest pair's time
is kept (the pairs run concurrently, as in the multi-process ping-pong of
paper 000 §4.1).  Rank 0 writes ``sizes``, ``inner`` and ``t_oneway``
(shape ``(len(sizes), reps)``) to an ``.npz`` file.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from mpi4py import MPI


def inner_iterations(nbytes: int) -> int:
    """Round trips averaged per sample: 200 for tiny messages, 1 from 1 MiB up."""
    return int(np.clip((1 << 20) // max(nbytes, 1), 1, 200))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--reps", type=int, required=True)
    ap.add_argument("--warmup", type=int, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if size % 2:
        raise SystemExit("ping-pong needs an even number of ranks")
    k = size // 2
    sender = rank < k
    peer = rank + k if sender else rank - k
    sizes = [int(s) for s in args.sizes.split(",")]
    out = np.zeros((len(sizes), args.reps))
    inners = np.zeros(len(sizes), dtype=np.int64)
    for i, n in enumerate(sizes):
        buf = np.zeros(n, dtype=np.uint8)
        inner = inner_iterations(n)
        inners[i] = inner
        for rep in range(-args.warmup, args.reps):
            comm.Barrier()
            t0 = MPI.Wtime()
            for _ in range(inner):
                if sender:
                    comm.Send([buf, MPI.BYTE], dest=peer, tag=1)
                    comm.Recv([buf, MPI.BYTE], source=peer, tag=2)
                else:
                    comm.Recv([buf, MPI.BYTE], source=peer, tag=1)
                    comm.Send([buf, MPI.BYTE], dest=peer, tag=2)
            t = (MPI.Wtime() - t0) / inner / 2
            worst = comm.reduce(t if sender else 0.0, op=MPI.MAX, root=0)
            if rank == 0 and rep >= 0:
                out[i, rep] = worst
        if rank == 0:
            print(f"pingpong: {n} B done ({i + 1}/{len(sizes)})", file=sys.stderr, flush=True)
    if rank == 0:
        np.savez(args.out, sizes=np.asarray(sizes), inner=inners, t_oneway=out,
                 mpi_version=MPI.Get_library_version().splitlines()[0])


if __name__ == "__main__":
    main()
