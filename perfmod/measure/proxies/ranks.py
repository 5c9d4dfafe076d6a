"""What every MPI proxy's ``main`` does around its work: abort all ranks on a failure, probe, report on rank 0.

A launched proxy (``mpiexec -n P python -m perfmod.measure.proxies.<name>``)
runs its work on every rank under an interference probe
(:class:`perfmod.measure.interference.Probe`); a rank whose work raises
prints its traceback and aborts the whole job, since the other ranks would
otherwise wait for it forever; the probe reports of all ranks are gathered
on rank 0, which prints the result as one JSON line
(:func:`perfmod.measure.runner.run_mpi` reads it).  Standard library and
:mod:`perfmod.measure.interference` only, so a rank starts cheaply.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from perfmod.measure.interference import Probe, gather_reports

__all__ = ["or_abort", "probed", "print_on_root"]

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
