"""GOAL schedules for LogGOPSim / ATLAHS: writer, and a reader to check them (paper 000 §2.2, §3.2).

Paper: Choi et al., ICS 2020 (paper 000) §2.2, §3.2.  GOAL
("Group Operation Assembly Language", Hoefler et al.) describes each rank's
operations and their dependencies; LogGOPSim (github.com/spcl/LogGOPSim,
``src/LogGOPSim/txt2bin.re``) and ATLAHS simulate it at message or packet
level.  The text form::

    num_ranks 2

    rank 0 {
    l1: calc 1500
    l2: send 8b to 1 tag 0
    l2 requires l1
    l3: recv 8b from 1 tag 0
    l3 requires l1
    }

``calc`` takes integer time units (nanoseconds by default), sizes are bytes
(``8b``), a recv from ``-1`` is any source, tag ``-1`` any tag; ``A requires
B`` starts A after B completed, ``A irequires B`` after B started; ``//``
starts a comment, and ``/* ... */`` is one where a statement may start, over
any number of lines (as LogGOPSim's ``txt2bin`` takes them; Schedgen writes
them).

How a :class:`~perfmod.trace.core.Trace` becomes a schedule
------------------------------------------------------------
Per rank, the writer keeps the *frontier*: the operations the next blocking
step must wait for.  Compute between calls is a ``calc``; blocking sends
and receives chain (each requires the frontier and becomes it); ``Isend``
and ``Irecv`` require the frontier but do not join it, and the wait that
completes them (``Wait``, ``Waitall``, ``Waitany``, ``Waitsome``, a
``Test`` that succeeded) adds them to it; several frontier operations are
joined by a ``calc 0`` before the next step, so no operation has more than
one dependency besides the joins.  ``Sendrecv`` posts its send and receive
together.  Collectives are expanded into point-to-point messages by the
algorithms MPICH documents: dissemination barrier, binomial-tree broadcast
and reduce, recursive-doubling allreduce (with the non-power-of-two fold),
ring allgather, linear gather/scatter, pairwise-exchange alltoall(v), and
reduce-scatter as reduce then scatter; each round requires the previous
one.  Messages on communicator ``c != 0`` carry tag ``tag * 1000 + c`` (the
convention of LogGOPSim's Schedgen2) and collective messages the tag
:data:`COLLECTIVE_TAG` ``+ c``; ``MPI_PROC_NULL`` operations are left out.
GOAL has no communicator contexts: a receive with ``MPI_ANY_TAG`` can match a
collective's message in a simulator if one from the same source is already
there, where MPI would not.

The graph is built by compiled code (:mod:`perfmod.trace.formats.goal_graph`,
shared with the ``loggp`` replay) and formatted to bytes there too, so
writing is linear in the operations written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from perfmod.trace.core import Trace
from perfmod.trace.formats.goal_graph import (
    COLLECTIVE_TAG,
    LINE_BYTES,
    RANK_BYTES,
    REQUIRES_BYTES,
    collective_rounds,
    format_ranks,
    op_graph,
)
from perfmod.trace.formats.goal_scan import GoalGraph, read_goal_graph
from perfmod.trace.requests import resolve_requests

__all__ = ["COLLECTIVE_TAG", "GoalOp", "GoalSchedule", "collective_rounds", "read_goal", "schedule_of", "write_goal"]

_CHUNK_BYTES = 1 << 25  #: bytes formatted at a time


def write_goal(trace: Trace, path: str | os.PathLike, time_unit: float = 1e-9, progress: bool = False) -> Path:
    """Write ``trace`` as a GOAL text schedule (``txt2bin`` input of LogGOPSim, ATLAHS).

    Parameters
    ----------
    trace : Trace
        Any trace; communicators are translated to world ranks.
    path : path
        Destination (written atomically).
    time_unit : float
        Seconds per ``calc`` unit (1e-9: nanoseconds, LogGOPSim's usual unit).
    progress : bool
        Show a progress bar over the ranks.

    Returns
    -------
    Path
        ``path``.
    """
    if time_unit <= 0:
        raise ValueError(f"time_unit must be > 0 s, got {time_unit!r}")
    comp = np.asarray(trace.compute, dtype=np.float64)
    positive = comp > 0
    units = np.where(positive, np.rint(np.where(positive, comp, 0.0) / time_unit), 0).astype(np.int64)
    g = op_graph(trace, resolve_requests(trace), units)
    # num_ranks first, as Schedgen writes it: a file without the .goal extension is told by that line
    head = (f"num_ranks {trace.nprocs}\n// GOAL schedule written by perfmod from {trace.source or 'a trace'}: "
            f"calc in units of {time_unit!r} s, sizes in bytes\n")
    nodes = np.diff(g.rank_ptr)
    deps = np.diff(g.pred_ptr[g.rank_ptr])
    room = np.zeros(trace.nprocs + 1, dtype=np.int64)
    np.cumsum(LINE_BYTES * nodes + REQUIRES_BYTES * deps + RANK_BYTES, out=room[1:])
    buf = np.empty(_CHUNK_BYTES, dtype=np.uint8)
    dest = Path(path)
    from perfmod.core.io import atomic_path  # here: the GOAL -> loggp path starts without xarray

    with atomic_path(dest) as tmp, open(tmp, "w") as f, \
            tqdm(total=trace.nprocs, desc="GOAL ranks", disable=not progress) as bar:
        f.write(head)
        f.flush()
        r = 0
        while r < trace.nprocs:
            r1 = max(r + 1, int(np.searchsorted(room, room[r] + _CHUNK_BYTES, side="right")) - 1)
            if room[r1] - room[r] > buf.size:
                buf = np.empty(int(room[r1] - room[r]), dtype=np.uint8)
            n = format_ranks(r, r1, g.rank_ptr, g.kind, g.size, g.peer, g.tag, g.pred_ptr, g.pred, buf)
            f.buffer.write(buf[:n].data)
            bar.update(r1 - r)
            r = r1
    return dest


class _Lazy(dict):
    """Per-rank containers made on first use (a schedule may declare far more ranks than it lists)."""

    def __init__(self, factory: type) -> None:
        super().__init__()
        self.factory = factory

    def __missing__(self, rank: int) -> Any:
        self[rank] = value = self.factory()
        return value


@dataclass(frozen=True)
class GoalOp:
    """One GOAL operation: ``kind`` is ``"send"``, ``"recv"`` or ``"calc"``; ``peer``/``tag`` -1 = any.

    ``cpu`` and ``nic`` are LogGOPSim's extensions (``... cpu 1 nic 0``):
    the CPU and network interface of the rank the operation runs on.
    """

    label: str
    kind: str
    size: int
    peer: int = -1
    tag: int = 0
    line: int = 0
    cpu: int = 0
    nic: int = 0


@dataclass
class GoalSchedule:
    """A parsed GOAL schedule: operations and dependencies per rank.

    ``ops[r]`` maps labels to operations and ``requires[r]`` lists ``(a, b, start)`` (ranks
    without operations read as empty): op ``a`` of rank ``r`` waits for
    ``b`` to complete (``start=False``, ``requires``) or to start (``irequires``).
    """

    num_ranks: int
    ops: Mapping[int, dict[str, GoalOp]] = field(default_factory=dict)
    requires: Mapping[int, list[tuple[str, str, bool]]] = field(default_factory=dict)
    source: str = ""

    def messages(self, kind: str) -> list[tuple[int, int, int, int]]:
        """``(src, dst, tag, bytes)`` of every send (``kind="send"``) or receive, sorted."""
        out = []
        for r, ops in sorted(self.ops.items()):
            for op in ops.values():
                if op.kind == kind:
                    out.append((r, op.peer, op.tag, op.size) if kind == "send" else (op.peer, r, op.tag, op.size))
        return sorted(out)

    def total_calc(self, rank: int) -> int:
        """Sum of the ``calc`` units of ``rank``."""
        return sum(op.size for op in self.ops[rank].values() if op.kind == "calc")


_KINDS = {1: "send", 2: "recv", 3: "calc"}


def schedule_of(graph: GoalGraph) -> GoalSchedule:
    """The :class:`GoalSchedule` of a graph read with ``labels=True``
    (:func:`~perfmod.trace.formats.goal_scan.read_goal_graph`)."""
    if graph.labels is None:
        raise ValueError("schedule_of needs a GoalGraph read with labels=True")
    sched = GoalSchedule(graph.num_ranks, _Lazy(dict), _Lazy(list), graph.source)
    names = graph.labels
    rank, kind, size, peer, tag = (x.tolist() for x in (graph.rank, graph.kind, graph.size, graph.peer, graph.tag))
    line, cpu, nic = graph.line.tolist(), graph.cpu.tolist(), graph.nic.tolist()
    ptr, pred, start = graph.pred_ptr.tolist(), graph.pred.tolist(), graph.pred_start.tolist()
    ops = None
    cur = -1
    for v in range(len(kind)):
        r = rank[v]
        if r != cur:
            ops, reqs, cur = sched.ops[r], sched.requires[r], r
        k = kind[v]
        ops[names[v]] = GoalOp(names[v], _KINDS[k], size[v], -1 if k == 3 else peer[v], tag[v], line[v], cpu[v],
                               nic[v])
        for q in range(ptr[v], ptr[v + 1]):
            reqs.append((names[v], names[pred[q]], start[q]))
    return sched


def read_goal(path: str | os.PathLike) -> GoalSchedule:
    """Parse a GOAL text schedule; errors name file, line and what is wrong.

    Checks what ``txt2bin`` checks: ``num_ranks`` first, balanced rank
    blocks (each rank once), operation syntax (``b`` after send/recv sizes,
    ``to``/``from``), dependencies on labels defined earlier in the same rank
    block.  Tags are LogGOPSim's (unsigned 32-bit; -1 any tag): the parser is
    :func:`~perfmod.trace.formats.goal_scan.read_goal_graph`, whose graph the
    ``loggp`` replay runs as written.  A schedule's ``requires`` lists each
    rank's dependencies in file order.
    """
    return schedule_of(read_goal_graph(path, labels=True))
