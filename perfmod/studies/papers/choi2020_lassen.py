"""Paper 000's own Lassen DUMPI traces, as its studies use them: where they are, K counts, replayed time.

Shared by the studies ``choi2020_traces`` and ``choi2020_extrapolation``.  The
MiniFE and MiniMD traces the paper's authors recorded with DUMPI on Lassen
(000 §4.2) are another project's data: :func:`trace_root` finds them
(``trace_dir``, ``$PERFMOD_CHOI2020_TRACES`` or ``../shared/data/choi2020-traces``
beside the checkout), :data:`GET_TRACES` says how to get them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from perfmod.core.paths import repo_root
from perfmod.models.comm.kmodel import kmodel_counts_from
from perfmod.replay import replay
from perfmod.replay.matching import match_messages
from perfmod.trace import TraceError
from perfmod.trace.core import WAITS, Trace, code_set

__all__ = ["TRACE_ENV", "GET_TRACES", "DEFAULT_TRACE_DIR", "trace_root", "find_traces", "exchange_index",
           "trace_k_counts", "predicted_comm"]

_WAIT_CALLS = code_set(WAITS)

TRACE_ENV = "PERFMOD_CHOI2020_TRACES"
"""Environment variable naming the trace directory when ``trace_dir`` is empty."""

GET_TRACES = (
    "git clone https://github.com/minitu/miniFE && git clone https://github.com/minitu/miniMD && "
    "git -C miniMD checkout bcfd595^ && mkdir traces && "
    "ln -s \"$PWD/miniFE/cuda/src/dumpi/lassen\" traces/minife && "
    "ln -s \"$PWD/miniMD/kokkos/dumpi/lassen\" traces/minimd; then run with trace_dir=traces "
    f"(or {TRACE_ENV}=traces)")
"""How to get the traces (shell), for the ``traces_missing`` attribute."""

DEFAULT_TRACE_DIR = repo_root().parent / "shared" / "data" / "choi2020-traces"
"""Where a checkout finds the traces when nothing names them: ``../shared/data/choi2020-traces`` beside it."""


def trace_root(trace_dir: str | os.PathLike) -> Path | None:
    """The trace directory: ``trace_dir``, else ``$PERFMOD_CHOI2020_TRACES``, else :data:`DEFAULT_TRACE_DIR`
    when it exists, else None."""
    chosen = str(trace_dir) or os.environ.get(TRACE_ENV, "")
    if chosen:
        return Path(chosen).expanduser()
    return DEFAULT_TRACE_DIR if DEFAULT_TRACE_DIR.is_dir() else None


def find_traces(app_dir: str | os.PathLike) -> dict[int, Path]:
    """Every DUMPI run in ``app_dir``: ``{nprocs: .meta file}``, nprocs from each file's ``numprocs`` line.

    Raises
    ------
    TraceError
        A ``.meta`` file without a ``numprocs=<int>`` line, or two runs of one rank count.
    """
    out: dict[int, Path] = {}
    for meta in sorted(Path(app_dir).glob("*.meta")):
        fields = dict(line.split("=", 1) for line in meta.read_text(errors="replace").splitlines() if "=" in line)
        try:
            p = int(fields["numprocs"])
        except (KeyError, ValueError):
            raise TraceError(f"{meta}: no numprocs=<int> line") from None
        if p in out:
            raise TraceError(f"{meta}: a second run of {p} ranks in {app_dir} (the other is {out[p].name})")
        out[p] = meta
    return out


def exchange_index(trace: Trace, n_exchanges: int) -> np.ndarray:
    """Exchange of every event: the waits its rank made before it, integer-divided by the waits per exchange.

    The waits per exchange are the most waits of any rank over ``n_exchanges``
    (see the module docstring).

    Raises
    ------
    TraceError
        That count is not a whole number (the trace is not ``n_exchanges``
        equal exchanges).
    """
    wait = np.isin(trace.call, _WAIT_CALLS).astype(np.int64)
    ptr = trace.rank_ptr
    per_rank = np.add.reduceat(wait, ptr[:-1][ptr[:-1] < len(trace)]) if len(trace) else np.zeros(0, np.int64)
    most = int(per_rank.max(initial=0))
    if most % int(n_exchanges):
        raise TraceError(f"{trace.source}: the most waits of a rank, {most}, are not a multiple of "
                         f"{n_exchanges} exchanges (iterations x exchanges per iteration)")
    w = max(most // int(n_exchanges), 1)
    before = np.cumsum(wait) - wait
    start = np.repeat(before[ptr[:-1]][np.diff(ptr) > 0], np.diff(ptr)[np.diff(ptr) > 0])
    return (before - start) // w


def trace_k_counts(trace: Trace, n_exchanges: int, ranks_per_node: int, stencil: int) -> dict[str, float]:
    """Table 5's K counts from the messages of every exchange of ``trace`` (block mapping).

    Returns
    -------
    dict
        ``k_inter`` (most over exchanges), ``k_inter_min`` (least over the
        exchanges with messages), ``k_total`` (k' x ``stencil``, Table 5's
        rule), ``k_total_counted`` (most over exchanges), ``k`` (Eq. 4 with
        ``k_inter`` and ``k_total``), ``exchanges`` (with messages).
    """
    match = match_messages(trace)
    ex = exchange_index(trace, n_exchanges)[match.send_events]
    counts = [kmodel_counts_from(match.src[ex == e], match.dst[ex == e], trace.nprocs, ranks_per_node,
                                 stencil=stencil, k_total_rule="kprime_x_stencil") for e in np.unique(ex)]
    if not counts:
        return dict(k_inter=np.nan, k_inter_min=np.nan, k_total=np.nan, k_total_counted=np.nan, k=np.nan,
                    exchanges=0)
    best = max(counts, key=lambda c: (c.k_inter, c.k_total_counted))
    return dict(k_inter=best.k_inter, k_inter_min=min(c.k_inter for c in counts), k_total=best.k_total,
                k_total_counted=max(c.k_total_counted for c in counts), k=best.k, exchanges=len(counts))


def predicted_comm(trace: Trace, platform: Any, model: str, iterations: int) -> np.ndarray:
    """Replayed point-to-point time (send + receive + wait) per rank and iteration (s) under ``model``."""
    ds = replay(trace, platform, model)
    return ((ds.send_time + ds.recv_time + ds.wait_time) / iterations).values
