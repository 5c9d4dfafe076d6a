"""What every MPI proxy's ``main`` does around its work: abort all ranks on a failure, probe, report on rank 0.

A launched proxy (``mpiexec -n P python -m perfmod.measure.proxies.<name>``)
runs its work on every rank under an interference probe
(:class:`perfmod.measure.interference.Probe`); a rank whose work raises
prints its traceback and aborts the whole job, since the other ranks would
otherwise wait for it forever; the probe reports of all ranks are gathered
on rank 0, which prints the result as one JSON line
(:func:`perfmod.measure.runner.run_mpi` reads it).  Standard library and
:mod:`perfmod.measure.interference` only, so a rank starts cheaply.

:func:`serve` is such a ``main``: the proxy gives its argument parser and a
function that runs one configuration; ``--batch FILE`` runs the argument
lists of a batch file one after another in the same launch, each probed and
printed on its own (:func:`perfmod.measure.runner.run_mpi_batch`): the
launch itself (``mpiexec`` and Python's start, about 0.3 s on the
development VM) is then paid once per batch instead of once per run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from perfmod.measure.interference import Probe, gather_reports

__all__ = ["BATCH_FLAG", "or_abort", "probed", "print_on_root", "read_batch", "serve"]

#: the command-line option that makes :func:`serve` run a batch file
BATCH_FLAG = "--batch"

T = TypeVar("T")


def or_abort(comm: Any, work: Callable[[], T]) -> T:
    """``work()``; if it raises, print the traceback and ``comm.Abort(1)`` (every rank ends)."""
    try:
        return work()
    except Exception:  # one failing rank must not leave the others waiting forever
        traceback.print_exc()
        comm.Abort(1)
        raise SystemExit(1) from None  # Abort does not return; a stand-in communicator's might


def probed(comm: Any, work: Callable[[], T]) -> tuple[T, float, dict[str, list[float]] | None]:
    """Run ``work`` under a probe (:func:`or_abort`): its result, its wall time (s), every rank's report on rank 0."""
    probe = Probe()
    t0 = time.perf_counter()
    res = or_abort(comm, work)
    total = time.perf_counter() - t0
    return res, total, gather_reports(comm, probe.stop())


def print_on_root(comm: Any, record: Mapping[str, Any], **dumps: Any) -> None:
    """Rank 0 prints ``record`` as one JSON line (``dumps``: arguments of :func:`json.dumps`)."""
    if comm.Get_rank() == 0:
        print(json.dumps(dict(record), **dumps))


def read_batch(path: str) -> list[list[str]]:
    """The argument lists of a batch file: JSON ``{"runs": [[arg, ...], ...]}``, every argument a string."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable JSON batch file: {e}") from None
    runs = doc.get("runs") if isinstance(doc, dict) else None
    if not isinstance(runs, list) or not runs:
        raise ValueError(f"{path}: a batch file is {{\"runs\": [[arg, ...], ...]}} with at least one run")
    for k, run in enumerate(runs):
        if not isinstance(run, list) or not all(isinstance(a, str) for a in run):
            raise ValueError(f"{path}: run {k} is not a list of strings")
    return runs


def serve(parser: argparse.ArgumentParser, record: Callable[[Any, argparse.Namespace], Mapping[str, Any] | None],
          argv: Sequence[str] | None = None) -> None:
    """An MPI proxy's entry point: run ``record(comm, args)`` and print its result on rank 0.

    ``record`` runs one configuration on every rank (under :func:`probed`)
    and returns rank 0's JSON record (other ranks' return values are not
    used).  With ``--batch FILE`` (:func:`read_batch`) each argument list of
    the file is parsed by ``parser`` and run in turn, the ranks meeting at a
    barrier before each, and each record is printed with its
    ``"batch_index"``.
    """
    from mpi4py import MPI

    argv = list(sys.argv[1:] if argv is None else argv)
    comm = MPI.COMM_WORLD
    if argv[:1] != [BATCH_FLAG]:
        rec = record(comm, parser.parse_args(argv))
        if rec is not None:
            print_on_root(comm, rec)
        return
    if len(argv) != 2:
        parser.error(f"{BATCH_FLAG} takes one batch file and nothing else")
    runs = or_abort(comm, lambda: read_batch(argv[1]))
    for k, run in enumerate(runs):
        args = parser.parse_args(run)
        comm.Barrier()
        rec = record(comm, args)
        if rec is not None:
            print_on_root(comm, {**rec, "batch_index": k})
            sys.stdout.flush()
