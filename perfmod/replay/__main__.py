"""Command line: replay a saved trace (``python -m perfmod.replay TRACE.npz --platform summit``).

Prints the slowest rank's times and, with ``-o``, writes the per-rank
dataset (netCDF, :func:`perfmod.core.io.write_dataset`).  A synthetic trace can
be replayed without a file: ``--synthetic jacobi2d:1536:100``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from perfmod.apps.traces import synthetic
from perfmod.core.io import write_dataset
from perfmod.replay.costs import REPLAY_MODELS
from perfmod.replay.engine import ReplayError, replay
from perfmod.trace import read_trace


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m perfmod.replay", description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("trace", nargs="?",
                     help="trace file in any format perfmod.trace.read_trace reads (.npz, DUMPI, OTF2, TIT, GOAL)")
    src.add_argument("--synthetic", metavar="APP:NPROCS:ITERATIONS", help="e.g. jacobi2d:1536:100")
    ap.add_argument("--platform", default="summit", help="platform name or TOML file (default summit)")
    ap.add_argument("--model", default="kmodel", choices=REPLAY_MODELS)
    ap.add_argument("--mapping", default="block", choices=("block", "round_robin"))
    ap.add_argument("--unknown", default="skip", choices=("skip", "error"), help="unknown MPI calls")
    ap.add_argument("-o", "--output", help="write the per-rank dataset here (netCDF)")
    args = ap.parse_args(argv)
    try:
        if args.synthetic:
            app, nprocs, iters = args.synthetic.split(":")
            trace = synthetic(app, int(nprocs), int(iters))
        else:
            trace = read_trace(args.trace)
        ds = replay(trace, args.platform, args.model, mapping=args.mapping, unknown=args.unknown)
    except (ValueError, ReplayError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    slow = int(np.argmax(ds.comm_time.values))
    print(f"{trace!r} on {args.platform}, {args.model}: slowest rank {slow}")
    for v in ("comm_time", "send_time", "recv_time", "wait_time", "collective_time", "compute_time", "total_time"):
        print(f"  {v:16s} {float(ds[v][slow]):.6e} s   (mean over ranks {float(ds[v].mean()):.6e} s)")
    if args.output:
        print(f"wrote {write_dataset(ds, args.output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
