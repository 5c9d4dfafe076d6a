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

import heapq
import os
import weakref
from dataclasses import replace

from perfmod.trace.builder import TraceBuilder
from perfmod.trace.core import ANY_SOURCE, ANY_TAG, Call, Trace, TraceError
from perfmod.trace.formats.goal import GoalOp, GoalSchedule, schedule_of, write_goal
from perfmod.trace.formats.goal_bin import MAGIC_BYTES as LOGGOPSIM_MAGIC
from perfmod.trace.formats.goal_scan import GoalGraph, read_goal_graph
from perfmod.trace.formats.registry import TraceFormat, first_line
from perfmod.trace.formats.textio import FormatError

__all__ = ["as_written", "goal_to_trace", "read_goal_trace", "TRACE_FORMAT"]

#: trace -> (its GOAL graph as written, seconds per calc unit); weak, so the graph lives as long as the trace
_AS_WRITTEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _rank_order(ops: list[GoalOp], requires: list[tuple[str, str, bool]], source: str, rank: int) -> list[tuple]:
    """Steps of one rank: ``("post", op index)``, ``("wait", [op indices])``, in the order described above."""
    index = {op.label: k for k, op in enumerate(ops)}
    n = len(ops)
    need_done = [0] * n  # requires not yet completed
    need_posted = [0] * n  # requires and irequires not yet posted
    on_done: list[list[int]] = [[] for _ in range(n)]
    on_post: list[list[int]] = [[] for _ in range(n)]
    deps: list[list[int]] = [[] for _ in range(n)]
    for a, b, start in requires:
        i, j = index[a], index[b]
        need_posted[i] += 1
        on_post[j].append(i)
        if not start:
            need_done[i] += 1
            on_done[j].append(i)
            deps[i].append(j)
    ready = [k for k in range(n) if need_done[k] == 0 and need_posted[k] == 0]
    heapq.heapify(ready)
    waitable: list[int] = []  # every dependency posted, some not completed: a wait would unblock it
    posted, done = [False] * n, [False] * n
    steps: list[tuple] = []

    def complete(j: int) -> None:
        done[j] = True
        for i in on_done[j]:
            need_done[i] -= 1
            if need_done[i] == 0 and need_posted[i] == 0:
                heapq.heappush(ready, i)

    while True:
        while ready:
            k = heapq.heappop(ready)
            if posted[k]:
                continue
            posted[k] = True
            steps.append(("post", k))
            for i in on_post[k]:
                need_posted[i] -= 1
                if need_posted[i] == 0:
                    heapq.heappush(ready if need_done[i] == 0 else waitable, i)
            if ops[k].kind == "calc":
                complete(k)
        while waitable and (posted[waitable[0]] or need_done[waitable[0]] == 0):
            heapq.heappop(waitable)
        if not waitable:
            break
        k = heapq.heappop(waitable)
        open_ = sorted(j for j in deps[k] if not done[j])
        steps.append(("wait", open_))
        for j in open_:
            complete(j)
    left = [k for k in range(n) if not posted[k]]
    if left:
        op = ops[left[0]]
        raise FormatError(source, op.line, f"rank {rank}: operation {op.label!r} can never start: its "
                          "dependencies form a cycle")
    rest = [k for k in range(n) if ops[k].kind != "calc" and not done[k]]
    if rest:
        steps.append(("wait", rest))
    return steps


def goal_to_trace(schedule: GoalSchedule, time_unit: float = 1e-9) -> Trace:
    """The :class:`~perfmod.trace.core.Trace` that replays ``schedule`` (see the module docstring).

    Parameters
    ----------
    schedule : GoalSchedule
        From :func:`~perfmod.trace.formats.goal.read_goal`.
    time_unit : float
        Seconds per ``calc`` unit (1e-9: nanoseconds, LogGOPSim's usual unit).

    Returns
    -------
    Trace
        ``nprocs = num_ranks``; ``line`` holds each event's line in the
        GOAL file (waits: the line of the operation they complete first);
        ``meta["format"] = "goal"``.

    Raises
    ------
    FormatError
        A ``cpu``/``nic`` other than 0, a dependency cycle, a peer outside
        ``0 .. num_ranks - 1`` (naming file and line).
    """
    if time_unit <= 0:
        raise ValueError(f"time_unit must be > 0 s, got {time_unit!r}")
    src = schedule.source or "GOAL schedule"
    b = TraceBuilder(schedule.num_ranks, source=src)
    for rank in sorted(schedule.ops):
        ops = list(schedule.ops[rank].values())
        for op in ops:
            if op.cpu or op.nic:
                raise FormatError(src, op.line, f"rank {rank}: cpu {op.cpu} nic {op.nic}: perfmod's replay models "
                                  "one CPU and one network interface per rank (cpu 0, nic 0)")
            if op.kind != "calc" and not (op.peer == -1 and op.kind == "recv") and not 0 <= op.peer < \
                    schedule.num_ranks:
                raise FormatError(src, op.line, f"rank {rank}: {op.kind} peer {op.peer} is outside 0.."
                                  f"{schedule.num_ranks - 1}")
        request = {}
        for what, arg in _rank_order(ops, list(schedule.requires.get(rank, [])), src, rank):
            if what == "wait":
                reqs = [request[k] for k in arg]
                line = ops[arg[0]].line
                if len(reqs) == 1:
                    b.append(rank, Call.WAIT, request=reqs[0], line=line)
                else:
                    b.append(rank, Call.WAITALL, aux=reqs, line=line)
                continue
            op = ops[arg]
            if op.kind == "calc":
                b.append(rank, Call.COMPUTE, compute=op.size * time_unit, line=op.line)
                continue
            request[arg] = len(request)
            if op.kind == "send":
                b.append(rank, Call.ISEND, peer=op.peer, nbytes=op.size, tag=op.tag, request=request[arg],
                         line=op.line)
            else:
                b.append(rank, Call.IRECV, peer=ANY_SOURCE if op.peer == -1 else op.peer, nbytes=op.size,
                         tag=ANY_TAG if op.tag == -1 else op.tag, request=request[arg], line=op.line)
    try:
        return b.build(meta={"format": "goal", "time_unit": time_unit})
    except TraceError:
        raise
    except (ValueError, OverflowError) as err:  # sizes or tags beyond the trace's integer columns
        raise TraceError(f"{src}: {err}") from None


def read_goal_trace(path: str | os.PathLike, time_unit: float = 1e-9) -> Trace:
    """Read a GOAL schedule and turn it into a replayable trace (:func:`goal_to_trace`), remembering the
    graph as written for the ``loggp`` replay (:func:`as_written`)."""
    graph = read_goal_graph(path, labels=True)
    trace = goal_to_trace(schedule_of(graph), time_unit=time_unit)
    _AS_WRITTEN[trace] = (replace(graph, labels=None, pred_ptr=None, pred=None, pred_start=None), time_unit)
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
