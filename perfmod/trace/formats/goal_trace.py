"""GOAL schedules as traces: what the replay takes, so a Schedgen or LogGOPSim schedule runs in perfmod.

Paper: Choi et al., ICS 2020 (paper 000) §2.2, §3.2 (trace-driven
replay).  A GOAL schedule (:mod:`perfmod.trace.formats.goal`; LogGOPSim's
``txt2bin`` input, written by Schedgen, Schedgen2, ATLAHS or
:func:`~perfmod.trace.formats.goal.write_goal`) is a dependency graph per
rank: ``send``, ``recv`` and ``calc`` operations, ``A requires B`` (A starts
after B completed) and ``A irequires B`` (after B started).  perfmod's
replay runs a rank as one sequence of calls, so :func:`goal_to_trace` puts
each rank's graph in one order, as an MPI program would post it:

- an operation is posted as soon as every operation it ``requires`` has
  completed and every one it ``irequires`` has started, lowest line first
  among those ready;
- ``send``/``recv`` become ``MPI_Isend``/``MPI_Irecv`` (posting takes no
  time; the message is costed by the replay's model), ``calc N`` a compute
  event of ``N x time_unit`` seconds (the CPU is busy for it);
- when nothing can be posted, the rank waits (``MPI_Wait``, or
  ``MPI_Waitall`` for several) for the unfinished sends and receives that
  the lowest-line blocked operation requires, and goes on;
- at its end the rank waits for every send and receive still open (LogGOPSim
  counts a rank finished when all its operations are).

For schedules whose ranks proceed in rounds (each step requiring the
previous one: what Schedgen and ``write_goal`` write) this order is the
order LogGOPSim runs them in.  Where a rank's graph has independent
branches, LogGOPSim lets a ready branch run while another waits for a
message; this sequence waits for the lowest-line branch first.  The
``loggp`` replay therefore does not run the sequence: a trace from
:func:`read_goal_trace` remembers the graph as written
(:func:`as_written`), and LogGOPS runs that graph, dependencies and order
exactly as the file gives them, as LogGOPSim does.

LogGOPSim's ``cpu``/``nic`` extensions pick one of several CPUs and network
interfaces of a rank; the replay models one of each per rank, so ``cpu 0``
and ``nic 0`` are accepted and any other is an error naming the line.
Tags: a ``recv`` with tag ``-1`` is ``MPI_ANY_TAG``, from ``-1`` is
``MPI_ANY_SOURCE``; peers are world ranks.
"""

from __future__ import annotations

import os
import weakref

import numpy as np

from perfmod.core.jit import first_call
from perfmod.trace.builder import TraceBuilder
from perfmod.trace.core import ANY_SOURCE, ANY_TAG, NO_PEER, NO_REQUEST, Call, Trace
from perfmod.trace.formats.goal import write_goal
from perfmod.trace.formats.goal_bin import MAGIC_BYTES as LOGGOPSIM_MAGIC
from perfmod.trace.formats.goal_order import POST, post_order
from perfmod.trace.formats.goal_scan import CALC, RECV, SEND, WILD, GoalGraph, read_goal_graph
from perfmod.trace.formats.goal_scan_kernels import _csr
from perfmod.trace.formats.registry import TraceFormat, first_line
from perfmod.trace.formats.textio import FormatError

__all__ = ["as_written", "goal_to_trace", "read_goal_trace", "TRACE_FORMAT"]

#: trace -> (its GOAL graph as written, seconds per calc unit); weak, so the graph lives as long as the trace
_AS_WRITTEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def goal_to_trace(graph: GoalGraph, time_unit: float = 1e-9) -> Trace:
    """The :class:`~perfmod.trace.core.Trace` that replays the GOAL graph ``graph`` (see the module docstring;
    the order is :func:`~perfmod.trace.formats.goal_order.post_order`'s, compiled).

    Parameters
    ----------
    graph : GoalGraph
        From :func:`~perfmod.trace.formats.goal_scan.read_goal_graph` (text or LogGOPSim's binary).
    time_unit : float
        Seconds per ``calc`` unit (1e-9: nanoseconds, LogGOPSim's usual unit).

    Returns
    -------
    Trace
        ``nprocs = num_ranks``; ``line`` holds each event's line in the
        GOAL file (waits: the line of the operation they complete first;
        -1 in a binary schedule); ``meta["format"] = "goal"``.

    Raises
    ------
    FormatError
        A ``cpu``/``nic`` other than 0, a dependency cycle, a peer outside
        ``0 .. num_ranks - 1``, a tag beyond the trace's 32-bit tags (naming file and line).
    """
    if time_unit <= 0:
        raise ValueError(f"time_unit must be > 0 s, got {time_unit!r}")
    src = graph.source or "GOAL schedule"
    kind, peer, tag = graph.kind, graph.peer, graph.tag
    calc = kind == CALC
    bad_cpu = (graph.cpu != 0) | (graph.nic != 0)
    bad_peer = ~calc & ~((kind == RECV) & (peer == WILD)) & ((peer < 0) | (peer >= graph.num_ranks))
    bad_tag = ~calc & ((tag > np.iinfo(np.int32).max) | (tag < WILD))
    if (bad_cpu | bad_peer | bad_tag).any():
        v = int(np.flatnonzero(bad_cpu | bad_peer | bad_tag)[0])
        r, what = int(graph.rank[v]), "send" if kind[v] == SEND else "recv"
        if bad_cpu[v]:
            why = (f"cpu {graph.cpu[v]} nic {graph.nic[v]}: perfmod's replay models one CPU and one network "
                   "interface per rank (cpu 0, nic 0)")
        elif bad_peer[v]:
            why = f"{what} peer {peer[v]} is outside 0..{graph.num_ranks - 1}"
        else:
            why = f"{what} tag {tag[v]} is beyond the trace's tags (signed 32-bit)"
        raise FormatError(src, int(graph.line[v]), f"rank {r}: {why}")
    rank_ptr = np.searchsorted(graph.rank, np.arange(graph.num_ranks + 1))
    with first_call("the GOAL schedule's posting order"):
        # what each node requires, ascending (the reader's CSR of the requires edges reversed)
        pred_ptr, pred = _csr(graph.succ, np.repeat(np.arange(len(graph)), np.diff(graph.succ_ptr)), len(graph))
        step, node, wptr, wnode, request, cycle = post_order(rank_ptr, calc, graph.ndeps, graph.succ_ptr, graph.succ,
                                                             graph.ssucc_ptr, graph.ssucc, pred_ptr, pred)
        del pred_ptr, pred
    if cycle >= 0:
        raise FormatError(src, int(graph.line[cycle]), f"rank {int(graph.rank[cycle])}: operation "
                          f"{_label(graph, cycle)!r} can never start: its dependencies form a cycle")
    k = node
    posted = step == POST
    nwait = np.diff(wptr)
    one = np.zeros(step.size, dtype=bool)
    one[~posted] = nwait == 1
    call = np.where(calc[k], int(Call.COMPUTE), np.where(kind[k] == SEND, int(Call.ISEND), int(Call.IRECV)))
    call = np.where(posted, call, np.where(one, int(Call.WAIT), int(Call.WAITALL)))
    msg = posted & ~calc[k]
    recv = msg & (kind[k] == RECV)
    aux_len = np.zeros(step.size, dtype=np.int64)
    aux_len[~posted] = np.where(nwait == 1, 0, nwait)
    keep = np.repeat(nwait > 1, nwait)
    b = TraceBuilder(graph.num_ranks, source=src)
    b.extend(graph.rank[k], call,
             peer=np.where(msg, np.where(recv & (peer[k] == WILD), ANY_SOURCE, peer[k]), NO_PEER),
             nbytes=np.where(msg, graph.size[k], 0),
             tag=np.where(msg, np.where(recv & (tag[k] == WILD), ANY_TAG, tag[k]), 0),
             request=np.where(msg | one, request[k], NO_REQUEST),
             compute=np.where(posted & calc[k], graph.size[k] * time_unit, 0.0),
             aux_len=aux_len, aux=request[wnode[keep]], line=graph.line[k])
    return b.build(meta={"format": "goal", "time_unit": time_unit})


def _label(graph: GoalGraph, v: int) -> str:
    """Node ``v``'s label (the file read again with its labels where the graph has none: an error's message),
    else where it is written."""
    labels = graph.labels
    if labels is None and graph.line[v] >= 0 and os.path.isfile(graph.source):
        labels = read_goal_graph(graph.source, labels=True).labels
    return labels[v] if labels is not None else graph.where(v)


def read_goal_trace(path: str | os.PathLike, time_unit: float = 1e-9) -> Trace:
    """Read a GOAL schedule and turn it into a replayable trace (:func:`goal_to_trace`), remembering the
    graph as written for the ``loggp`` replay (:func:`as_written`)."""
    graph = read_goal_graph(path)
    trace = goal_to_trace(graph, time_unit=time_unit)
    _AS_WRITTEN[trace] = (graph, time_unit)
    return trace


def as_written(trace: Trace) -> tuple[GoalGraph, float] | None:
    """``(graph, seconds per calc unit)`` of a trace :func:`read_goal_trace` made (None for any other trace).

    The graph is the file's (:func:`~perfmod.trace.formats.goal_scan.read_goal_graph`); the trace is its
    sequence per rank (see the module docstring), whose ``line`` names each operation's line.
    """
    return _AS_WRITTEN.get(trace)


TRACE_FORMAT = TraceFormat(
    name="goal", files="GOAL schedule (LogGOPSim, Schedgen), or LogGOPSim's binary one (`txt2bin`'s `.bin`)",
    extensions=(".goal",),
    guess_can_open=lambda path, head: first_line(head, comments=("#", "//", "/*")).startswith("num_ranks"),
    read=read_goal_trace, write=write_goal, module=__name__, magic=LOGGOPSIM_MAGIC)
