"""The MPI side of :mod:`perfmod.measure.bench.pingpong` (run under mpiexec, not imported).

Pairing: with ``2k`` ranks, ranks ``0..k-1`` are senders and rank ``i`` is
paired with rank ``i + k``; all k pairs exchange at once.  With hydra's
``-bind-to core`` rank r runs on core r, so the senders fill the first k
cores and their partners the next k (on a two-socket node with k equal to
the cores per socket every pair crosses the socket boundary; each rank's
core and socket are reported, so the mode is known from the data).

Order: the sizes are measured in interleaved sweeps (``warmup`` untimed
sweeps over all sizes, then ``reps`` timed ones), each sweep in a new random
order (seeded, the same on every rank), so that a burst of load from another
process on this shared machine costs each size a sample or two instead of
shifting every sample of a few consecutive sizes, and no size always follows
the same one (e.g. 8 B always right after 4 MiB).  Each sample:
a barrier, one untimed round trip (warms the caches and the protocol path
for this size), then the mean of ``inner`` timed round trips (more for small
messages, so that a sample is well above the timer resolution).  The one-way
time is half the round trip, timed on the senders; the slowest pair's time
is kept (the pairs run concurrently, as in the multi-process ping-pong of
paper 000 §4.1).  Buffers are NumPy ``uint8`` arrays, allocated and touched
once, sent with ``Send``/``Recv`` (buffer interface, no pickling).

Rank 0 prints ``pingpong: sweep <i>/<m>`` to stderr after each sweep and
writes ``sizes``, ``inner``, ``t_oneway`` (shape ``(len(sizes), reps)``),
the MPI library version, the ranks' cores/sockets and every rank's
interference probe over the sweeps (``probe_<field>``,
:mod:`perfmod.measure.interference`) and over each timed sweep
(``sweep_<field>``, shape ``(reps, ranks)``: a repetition of every size is
flagged on its own) to an ``.npz`` file.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

from perfmod.measure.interference import Probe, gather_reports


def inner_iterations(nbytes: int) -> int:
    """Round trips averaged per sample: 200 for tiny messages, 1 from 1 MiB up."""
    return int(np.clip((1 << 20) // max(nbytes, 1), 1, 200))


def placement() -> tuple[str, str]:
    """(cores this rank may run on, their sockets), as comma-separated strings."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return "?", "?"
    sockets = []
    for c in cpus:
        p = Path(f"/sys/devices/system/cpu/cpu{c}/topology/physical_package_id")
        try:
            sockets.append(p.read_text().strip())
        except OSError:
            sockets.append("?")
    return ",".join(map(str, cpus)), ",".join(sorted(set(sockets)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--reps", type=int, required=True)
    ap.add_argument("--warmup", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if size % 2:
        raise SystemExit("ping-pong needs an even number of ranks")
    k = size // 2
    sender = rank < k
    peer = rank + k if sender else rank - k
    where = comm.gather(placement(), root=0)
    sizes = [int(s) for s in args.sizes.split(",")]
    out = np.zeros((len(sizes), args.reps))
    inners = np.array([inner_iterations(n) for n in sizes], dtype=np.int64)
    bufs = [np.full(n, rank, dtype=np.uint8) for n in sizes]  # touched: no page faults in the timing

    def round_trip(buf: np.ndarray) -> None:
        if sender:
            comm.Send([buf, MPI.BYTE], dest=peer, tag=1)
            comm.Recv([buf, MPI.BYTE], source=peer, tag=2)
        else:
            comm.Recv([buf, MPI.BYTE], source=peer, tag=1)
            comm.Send([buf, MPI.BYTE], dest=peer, tag=2)

    nsweeps = args.warmup + args.reps
    rng = np.random.default_rng(args.seed)
    probe = Probe()
    per_sweep = []  # this rank's probe over each timed sweep
    for sweep in range(-args.warmup, args.reps):
        sweep_probe = Probe() if sweep >= 0 else None
        for i in rng.permutation(len(sizes)):  # same order on every rank: same seed
            buf = bufs[i]
            comm.Barrier()
            round_trip(buf)
            t0 = MPI.Wtime()
            for _ in range(inners[i]):
                round_trip(buf)
            t = (MPI.Wtime() - t0) / inners[i] / 2
            worst = comm.reduce(t if sender else 0.0, op=MPI.MAX, root=0)
            if rank == 0 and sweep >= 0:
                out[i, sweep] = worst
        if sweep_probe is not None:
            per_sweep.append(sweep_probe.stop())
        if rank == 0:
            print(f"pingpong: sweep {sweep + args.warmup + 1}/{nsweeps}", file=sys.stderr, flush=True)
    probed = gather_reports(comm, probe.stop())
    sweeps = [gather_reports(comm, rep) for rep in per_sweep]  # per timed sweep: every rank's report
    if rank == 0:
        assert where is not None and probed is not None
        np.savez(
            args.out, sizes=np.asarray(sizes), inner=inners, t_oneway=out,
            mpi_version=" ".join(MPI.Get_library_version().splitlines()[0].split()),
            rank_cpus=np.array([w[0] for w in where]), rank_sockets=np.array([w[1] for w in where]),
            wtime_resolution=MPI.Wtick(), **{f"probe_{k}": np.asarray(v) for k, v in probed.items()},
            **{f"sweep_{k}": np.array([sw[k] for sw in sweeps]) for k in probed},
        )


if __name__ == "__main__":
    main()
