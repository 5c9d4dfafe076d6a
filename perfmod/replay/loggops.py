"""The ``loggp`` replay: LogGOPS as LogGOPSim computes it (issue 14 item 11).

LogGP (Alexandrov et al.) charges a message of n bytes ``o`` on the
sender's CPU, ``g`` between two messages of one network interface, ``L``
on the wire and ``G`` per further byte; LogGOPSim (Hoefler, Schneider,
Lumsdaine, HPDC 2010; github.com/spcl/LogGOPSim) simulates it with a CPU
and a NIC per rank, and so does this replay for every model whose
registry entry says ``replay="loggops"`` (``loggp``):

- the trace becomes LogGOPSim's operation graph, the graph ``write_goal``
  writes for it (:mod:`perfmod.replay.graph` builds it whole; collectives
  expanded by MPICH's algorithms into point-to-point rounds), made rank by
  rank as the event loop reaches it and never held whole
  (:mod:`perfmod.replay.loggops_stream`); a GOAL file read as written runs
  its own graph, whole;
- a send holds its CPU ``o`` and its NIC ``g + (n - 1) G``, so one rank
  injects messages every ``max(o, g + (n - 1) G)``; the message reaches
  the receiver ``o + L`` after the send started;
- the receiver takes it in when its CPU and NIC are free and holds them
  ``o + (n - 1) G`` and ``g + (n - 1) G``; a rank's sends and computation
  queue behind those receptions;
- messages of more than S = the platform's ``eager_max_bytes`` bytes (and
  synchronous sends) complete at the sender only when matched at the
  receiver (rendezvous); smaller ones when they start;
- the exact event order and tie-breaking rules are those of
  :mod:`perfmod.replay.loggops_kernel`.

So ``replay(trace, platform, "loggp")`` with the platform's L, o, g, G in
whole nanoseconds gives, per rank, the finishing time LogGOPSim computes
for ``write_goal(trace)`` run with the same ``-L -o -g -G -S``, to the
nanosecond (the tests compare them).  A zero-byte message costs what
LogGOPSim computes, ``(0 - 1) G`` in its unsigned arithmetic, i.e. ``-G``,
where o and g are at least G (a trace's as a GOAL file's; the other models
cost it like one byte); where o or g is less than G, LogGOPSim's times wrap
around below 0, and perfmod costs it like one byte and warns
(``_zero_byte_durations``).  Differences that remain: compute is kept to the
picosecond where ``write_goal`` rounds it to nanoseconds; parameters differ per mode and protocol
(intra-socket, inter-socket, inter-node; short, eager, rendezvous) where
LogGOPSim has one set.  LogGOPSim orders the operations one event frees
with GCC's unstable ``std::sort``; the kernel reproduces that order.

Per rank, the dataset's times follow the rank's program: each call ends
when what it waits for is done and the CPU is free for the next step;
``compute_time`` is the computation itself, and the time a computation
waits for a CPU busy with message overheads, and the CPU time after the
rank's last call, count in ``wait_time``, so ``comm_time + compute_time
= total_time``, and ``total_time`` is LogGOPSim's finishing time.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from perfmod.core.aot import Arg, Kernel, kernels
from perfmod.core.jit import first_call
from perfmod.core.kernel_progress import polled
from perfmod.core.memory import check_fits
from perfmod.machine.platforms import MODES, PROTOCOLS, ParameterNotAvailable, Platform
from perfmod.models.comm.network import Network
from perfmod.replay.diagnostics import ReplayWarning
from perfmod.replay.loggops_layout import _DONE, ROW, STATUS_EARLY, STATUS_OK, STATUS_UNEXPECTED
from perfmod.trace.formats.goal_scan import CALC, RECV, SEND, GoalGraph

if TYPE_CHECKING:
    import xarray as xr

    from perfmod.trace.core import Trace

__all__ = ["GoalTimes", "LogGOPSResult", "LoopInput", "goal_finish_times", "kernel_input", "message_params",
           "replay_goal", "replay_loggops", "run_goal_graph"]

_PS = 1e12  # picoseconds per second: the kernel's time unit
#: what the event loop allocates per node of a GOAL file, by its layout (rows 32, successor ranges 16, a successor
#: about 4, the order of the rows 4, the event queue's blocks 16 and current-time ring 8, per-node results 24 where
#: asked and 24 more while they are put back in node order), for the check before allocating
_KERNEL_BYTES_PER_NODE = 120
#: what the replay of a trace (:mod:`perfmod.replay.loggops_stream`) allocates per event and per rank beyond the
#: trace, for the check before allocating (the graph is never held whole; :func:`stream_bytes`): per event its
#: record (24 bytes: its inputs, then its two times and its pending request's slot, ``loggops_stream.RESULT``),
#: whether its send was done (1; the receive it matched, 8 more, only where wildcard receives leave the matching
#: to the loop), and room for the other stages' arrays (the matching, the requests); per rank its home slots
#: and cells (640), their share of the event queue and buffers (about 300) and its state (about 150); and where
#: ranks have several events, the shared pool of the nodes beyond a home's 8 (a halo's requests, a collective's
#: rounds: about 8 more slots of 64 bytes and their 41 bytes of queue and buffers), twice that while the pool
#: grows (old and new arrays at once),
#: counted in full from 10 events a rank.  Measured peaks beyond the trace (tracemalloc, 2026-11-28): Jacobi2D
#: 131,072 x 2 238 bytes per event (4,760 a rank), 1,048,576 x 1 365 (3,650 a rank), 16,384 x 10 94 (63 once
#: the times took the inputs' place, 131,072 x 2 165); a lone
#: allreduce over 1,048,576 ranks 1,663 bytes a rank, a broadcast 1,243; an 8,388,608-rank allreduce 15.8 GB
#: whole job (2026-11-27); and a fixed part, the pools' and the event queue's first sizes (0.69 MB measured for 2 to
#: 8 ranks)
_TRACE_BYTES_PER_EVENT, _STREAM_BYTES_PER_RANK, _SHARED_BYTES_PER_RANK, _STREAM_FIXED_BYTES = 90, 1900, 1700, 2 << 20
#: nodes of a rank kept together in the loop's time-major order (:func:`~perfmod.replay.loggops_kernel.time_major`):
#: 16 rows are 512 bytes, so the passes that reorder the graph read and write whole cache lines, while the rows
#: the ranks run at one simulated moment stay close (measured 4, 16, 64 at 1,536 and 16,384 ranks: 16 best)
_BAND = 16


_I, _I0, _B0, _I32 = Arg(np.int64), Arg(np.int64, 0), Arg(np.bool_, 0), Arg(np.int32)
#: the event loop's kernels (:mod:`perfmod.replay.loggops_kernel`) with the argument types a GOAL graph gives them
#: (:class:`~perfmod.trace.formats.goal_scan.GoalGraph`'s arrays), which :mod:`perfmod.core.aot` compiles them for
AOT_KERNELS = (
    Kernel("time_major", (_I, _I, _I0, _I0), (_I32, _I32, _I32, _I)),
    Kernel("time_major_edges", (_I32, _I32, _I, _I, _I, _I), (_I, _I32)),
    Kernel("fill_rows", (Arg(ROW), _I32, _I, Arg(np.int8), _I, _I, _I, _I, Arg(np.float64, 0), Arg(np.int8),
                         Arg(np.bool_), Arg(np.float64), _I, _I0, _I0, _B0)),
    Kernel("by_node", (_I32, _I, _I, _I), (_I, _I, _I)),
    Kernel("run_loggops", (_I0, Arg(ROW), _I, _I32, Arg(np.int64, 2), _B0, _B0, _I32, _I),
           (_I0, _I, _I, _I, _I, _I0, _I)),
)


def _kernels() -> Any:
    """The event loop's kernels for a GOAL graph: compiled ahead of time where they could be built
    (:mod:`perfmod.core.aot`; the whole GOAL job then starts without numba), else numba's."""
    return kernels("loggops_loop", "perfmod.replay.loggops_kernel", f"{__name__}:AOT_KERNELS",
                   ("perfmod.replay.loggops_layout", "perfmod.core.prefetch", "perfmod.core.bitlen"))


def message_params(graph: GoalGraph, net: Network, nprocs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The message classes of a graph's sends: ``(mode, par, gps)``.

    ``mode`` per node (int8; 0 but at sends) the mode code of the message
    (:meth:`~perfmod.models.comm.network.Network.modes`); a send's class is
    ``3 * mode + protocol`` (short, eager, rendezvous by its bytes:
    :func:`~perfmod.replay.loggops_kernel.fill_rows`), and ``par[c]`` the o,
    g, L of class c in int64 picoseconds, ``gps[c]`` its G in s per byte:
    the parameters of the mode and protocol as the bound network resolved
    them (:meth:`~perfmod.models.comm.network.Network.loggp_params`: the
    platform's table of the model, derived from the postal ones where it
    has none).
    """
    mode = np.zeros(len(graph), dtype=np.int8)
    sends = np.flatnonzero(graph.kind == SEND)
    if sends.size == 0:
        return mode, np.zeros((3 * len(MODES), 3), dtype=np.int64), np.zeros(3 * len(MODES))
    mode[sends] = net.modes(graph.rank[sends], graph.peer[sends], nprocs)
    return (mode, *_class_params(net))


def _class_params(net: Network) -> tuple[np.ndarray, np.ndarray]:
    """``(par, gps)`` of :func:`message_params`: per message class ``3 * mode + protocol`` its o, g, L (int64 ps;
    -1 where the platform lacks the class: an error only where a send uses it) and its G (s per byte)."""
    par = np.zeros((3 * len(MODES), 3), dtype=np.int64)
    gps = np.zeros(3 * len(MODES))
    for c in range(3 * len(MODES)):
        try:
            p = net.loggp_params(MODES[c // 3], PROTOCOLS[c % 3])
        except ParameterNotAvailable:
            par[c] = -1
            continue
        par[c] = round(p["o"] * _PS), round(p["g"] * _PS), round(p["L"] * _PS)
        gps[c] = p["G"]
    return par, gps


class LoopInput(NamedTuple):
    """What :func:`~perfmod.replay.loggops_kernel.run_loggops` takes for a graph (:func:`kernel_input`)."""

    rows: np.ndarray  # ROW per node, in the loop's order: row u is node order[u]
    eptr: np.ndarray  # row u's done-successors then start-successors: edges[eptr[2 u]:eptr[2 u + 1]:eptr[2 u + 2]]
    edges: np.ndarray  # rows (int32)
    par: np.ndarray  # o, g, L per message class (ps)
    init: np.ndarray  # the rows of each rank that require nothing: init[init_ptr[r]:init_ptr[r + 1]]
    init_ptr: np.ndarray
    order: np.ndarray  # the node of each row (int32)


def kernel_input(graph: GoalGraph, calc_scale: float, net: Network, nprocs: int) -> LoopInput:
    """What :func:`~perfmod.replay.loggops_kernel.run_loggops` takes for the GOAL graph ``graph`` (nodes of a rank
    contiguous, ranks increasing), its rows in the loop's order (:func:`~perfmod.replay.loggops_kernel.time_major`).

    ``calc_scale`` picoseconds per unit of a calc's ``size`` (0: they are picoseconds).  A trace's graph is not
    held whole: :mod:`perfmod.replay.loggops_stream` makes it as its loop runs.
    """
    rows, order, newpos, init, init_ptr, par = kernel_rows(graph, calc_scale, net, nprocs)
    eptr, edges = kernel_edges(_kernels(), order, newpos, graph.succ_ptr, graph.succ, graph.ssucc_ptr, graph.ssucc)
    return LoopInput(rows, eptr, edges, par, init, init_ptr, order)


def kernel_rows(graph: GoalGraph, calc_scale: float, net: Network, nprocs: int) -> tuple:
    """The first half of :func:`kernel_input`: ``(rows, order, newpos, init, init_ptr, par)``, what needs the
    graph's nodes (:func:`kernel_edges` then needs only its successor lists).  GOAL's rules, as LogGOPSim's: a
    receive's own size decides its protocol, a zero-byte send costs ``(0 - 1) G`` (:func:`_zero_byte_durations`)."""
    nn = len(graph)
    if 2 * nn >= 1 << 31:
        raise ValueError(f"the LogGOPS event loop takes fewer than 2**30 operations, not {nn:,}")
    k = _kernels()
    ndeps = graph.ndeps
    order, newpos, init, init_ptr = k.time_major(graph.rank, ndeps, nprocs, _BAND)
    mode, par, gps = message_params(graph, net, nprocs)
    rows = np.empty(nn, dtype=ROW)
    plat = net.platform
    zero_dur, wraps = _zero_byte_durations(par, gps)
    k.fill_rows(rows, newpos, graph.rank, graph.kind, graph.size, graph.peer, graph.tag, ndeps, float(calc_scale),
                mode, graph.sync, gps, zero_dur, plat.short_max_bytes, plat.eager_max_bytes, True)
    del mode, ndeps
    if wraps.any():
        _warn_zero_byte_sends(graph, rows, newpos, wraps)
    used = (np.flatnonzero(np.bincount(rows["cls"][rows["kind"] == SEND], minlength=len(par))) if (par < 0).any()
            else np.zeros(0, dtype=np.int64))
    for c in used.tolist():
        if par[c, 0] < 0:
            net.loggp_params(MODES[c // 3], PROTOCOLS[c % 3])  # raises the network's own error
    return rows, order, newpos, init, init_ptr, par


def kernel_edges(k: Any, order: np.ndarray, newpos: np.ndarray, succ_ptr: np.ndarray, succ: np.ndarray,
                 ssucc_ptr: np.ndarray, ssucc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The second half of :func:`kernel_input`: ``(eptr, edges)``, the rows' successors, from the graph's successor
    lists alone (``ssucc_ptr``, ``ssucc``: GOAL's irequires, if any); ``k`` the graph's kernels."""
    none = np.zeros(0, dtype=np.int64)
    starts = ssucc_ptr[-1] > 0
    return k.time_major_edges(order, newpos, succ_ptr, succ, ssucc_ptr if starts else none,
                              ssucc if starts else none)


def _zero_byte_durations(par: np.ndarray, gps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per message class, what a zero-byte send costs in place of ``(n - 1) G`` (ps), and where
    LogGOPSim's arithmetic wraps around: ``(0 - 1) G`` is ``-G`` in LogGOPSim's unsigned 64-bit arithmetic, as in
    signed, while ``t + o - G`` and ``t + g - G`` (the CPU and the NICs after such a message) cannot fall below 0,
    which holds at every time ``t`` where o and g are at least G: there perfmod computes LogGOPSim's ``-G``.  Where
    o or g is less than G, LogGOPSim's times wrap around (and an event would be queued before the current one):
    the class costs such a message like a 1-byte one (0), and :func:`_warn_zero_byte_sends` says so."""
    g_ps = np.rint(gps * _PS).astype(np.int64)
    wraps = (g_ps > 0) & ((par[:, 0] < g_ps) | (par[:, 1] < g_ps))
    return np.where(wraps, 0, -g_ps), wraps


def _warn_zero_byte_sends(graph: GoalGraph, rows: np.ndarray, newpos: np.ndarray, wraps: np.ndarray) -> None:
    """Say where a GOAL file's zero-byte messages cannot take LogGOPSim's times: their class's o or g is less than
    its G, where LogGOPSim's unsigned ``t + g - G`` wraps around (:func:`_zero_byte_durations`)."""
    z = np.flatnonzero((graph.kind == SEND) & (graph.size == 0))
    z = z[wraps[rows["cls"][newpos[z]]]] if z.size else z
    if z.size:
        _warn_zero_byte(graph.where(int(z[0])), z.size, stacklevel=5)


def _warn_zero_byte(where: str, count: int, stacklevel: int = 4) -> None:
    warnings.warn(f"{where}: {count:,} zero-byte message(s) where o or g is less than G: perfmod costs each like a "
                  "1-byte one; LogGOPSim computes their (0 - 1) G in unsigned arithmetic, where t + g - G wraps "
                  "around below 0, so its finishing times differ from perfmod's where they count", ReplayWarning,
                  stacklevel=stacklevel)


def _run(k: Any, nprocs: int, inp: LoopInput, recv_decides: bool, detail: bool) -> tuple:
    """:func:`~perfmod.replay.loggops_kernel.run_loggops` of ``inp``: ``(status, done, rr, mate, nexto,
    inexact, unexpected)``, the per-node arrays (with ``detail``) back in the graph's node order; ``unexpected``
    the rows of the sends whose messages no receive took."""
    with first_call("the LogGOPS event loop"):
        status, done, rr, mate, nexto, inexact, unexpected = k.run_loggops(
            nprocs, inp.rows, inp.eptr, inp.edges, inp.par, recv_decides, detail, inp.init, inp.init_ptr)
    if status == STATUS_EARLY:
        raise RuntimeError("the LogGOPS event loop queued an event before the current time, which its event queue "
                           "cannot order (a bug: please report it with the schedule)")
    if detail:
        done, rr, mate = k.by_node(inp.order, done, rr, mate)
    return status, done, rr, mate, nexto, inexact, unexpected


@dataclass(frozen=True)
class LogGOPSResult:
    """What :func:`replay_loggops` gives the engine (the arrays of the message kernel's result)."""

    ok: bool
    clock: np.ndarray
    acc: np.ndarray
    iter_comm: np.ndarray
    blocked: dict[int, int]  # rank -> first trace event it cannot finish
    sdone: np.ndarray  # per event: whether its send was done (bool; False: never, or not a send)
    pdst: np.ndarray  # per event: the receive event a send matched (-1: none; empty unless asked for: ``matches``)
    operations: int  # graph operations simulated (LogGOPSim's nodes)


def run_goal_graph(graph: GoalGraph, time_unit: float, net: Network, nprocs: int, detail: bool = True) -> tuple:
    """:func:`~perfmod.replay.loggops_kernel.run_loggops` of a GOAL graph as written (calc in ``time_unit`` s)
    on the bound network ``net`` (``detail``: per node done times and partners, else only the status and the
    per-rank finishing times)."""
    check_fits(_KERNEL_BYTES_PER_NODE * len(graph), f"the LogGOPS replay of {len(graph):,} operations")
    inp = kernel_input(graph, time_unit * _PS, net, nprocs)
    out = _run(_kernels(), nprocs, inp, True, detail)  # LogGOPSim: see run_loggops
    finished = np.empty(len(inp.order), dtype=bool)
    finished[inp.order] = inp.rows["kind"] >= _DONE
    return (*out, finished)


def _replay_error() -> type:
    """:class:`~perfmod.replay.matching.ReplayError`, imported when raised: the matching module compiles with
    numba, which the GOAL path otherwise does not load."""
    from perfmod.replay.matching import ReplayError

    return ReplayError


class GoalTimes(NamedTuple):
    """What :func:`goal_finish_times` gives: per rank, in seconds, and the schedule's size."""

    total_time: np.ndarray  # LogGOPSim's finishing time
    compute_time: np.ndarray  # the rank's calcs
    operations: int
    platform: str


def goal_finish_times(path: str | os.PathLike, platform: Platform | str, model: str = "loggp", *,
                      mapping: str = "block", time_unit: float = 1e-9, progress: bool = False) -> GoalTimes:
    """A GOAL file straight through LogGOPS, as LogGOPSim runs it: the whole job, with NumPy arrays only.

    :func:`~perfmod.trace.formats.goal_scan.read_goal_graph`, the kernel's rows
    (:func:`kernel_rows`; then the graph is let go, but for its lines and successor
    lists, before :func:`kernel_edges` builds the loop's edges from those), then
    :func:`~perfmod.replay.loggops_kernel.run_loggops`.  No dataset library is
    imported on this path (:func:`replay_goal` wraps the result in a dataset).

    Raises
    ------
    ReplayError
        Operations that never complete (LogGOPSim leaves them in its queues), naming the first per rank;
        a node on another CPU or NIC than 0, or a peer outside the ranks.
    """
    from perfmod.trace.formats.goal_scan import read_goal_graph

    net = Network(platform, model, mapping)
    if net.model.replay != "loggops":
        raise _replay_error()(f"replay_goal runs LogGOPS models (loggp), not {model!r}")
    graph = read_goal_graph(path, progress=progress)
    bad = np.flatnonzero((graph.cpu != 0) | (graph.nic != 0))
    if bad.size:
        raise _replay_error()(f"{graph.where(int(bad[0]))}: cpu {int(graph.cpu[bad[0]])} nic "
                          f"{int(graph.nic[bad[0]])}: perfmod's replay models one CPU and one network interface "
                          "per rank (cpu 0, nic 0)")
    msg = graph.kind != CALC
    out = msg & ((graph.peer >= graph.num_ranks) | (graph.peer < 0) & ~((graph.kind == RECV) & (graph.peer == -1)))
    if out.any():
        v = int(np.flatnonzero(out)[0])
        raise _replay_error()(f"{graph.where(v)}: rank {int(graph.rank[v])}: peer {int(graph.peer[v])} is "
                          f"outside 0..{graph.num_ranks - 1}")
    del bad, msg, out
    p, nn, line = graph.num_ranks, len(graph), graph.line
    # a binary schedule has no lines: its operations are named by their offset among their rank's
    rank_start = np.searchsorted(graph.rank, np.arange(p)) if nn and line[0] < 0 else None
    calc = graph.kind == CALC
    comp = np.bincount(graph.rank[calc], weights=graph.size[calc] * time_unit, minlength=p)
    del calc
    check_fits(_KERNEL_BYTES_PER_NODE * nn, f"the LogGOPS replay of {nn:,} operations")
    k = _kernels()
    rows, order, newpos, init, init_ptr, par = kernel_rows(graph, time_unit * _PS, net, p)
    # the rows hold what the loop needs of the nodes: only the successor lists are kept for the edges, so that
    # the nodes' arrays and the loop's edges are never held at once
    succ = (graph.succ_ptr, graph.succ, graph.ssucc_ptr, graph.ssucc)
    del graph
    eptr, edges = kernel_edges(k, order, newpos, *succ)
    del succ, newpos
    inp = LoopInput(rows, eptr, edges, par, init, init_ptr, order)
    status, _, _, _, nexto, _, unexpected = _run(k, p, inp, True, False)
    if status != STATUS_OK:
        raise _unfinished(path, inp, unexpected, line, rank_start)
    return GoalTimes(nexto / _PS, comp, nn, net.platform.name)


def _unfinished(path: str | os.PathLike, inp: LoopInput, unexpected: np.ndarray, line: np.ndarray,
                rank_start: np.ndarray | None) -> Exception:
    """The :class:`~perfmod.replay.matching.ReplayError` of a GOAL schedule that did not run through, as LogGOPSim
    reports it (it then prints no times): each rank's first operation that never completes, and the messages
    no receive took (LogGOPSim's unexpected queues: receiver, sender, tag).  An operation is named by its line,
    in a binary schedule (``rank_start``: each rank's first node) by its offset among its rank's."""

    def at(v: int, r: int) -> dict[str, int]:
        return {"line": int(line[v])} if rank_start is None else {"operation": int(v - rank_start[r])}

    def said(d: dict[str, int]) -> str:
        return f"line {d['line']}" if "line" in d else f"operation {d['operation']}"

    rows = np.flatnonzero(inp.rows["kind"] < _DONE)
    nodes = inp.order[rows]
    by = np.argsort(nodes, kind="stable")
    first: dict[int, int] = {}
    for v, r in zip(nodes[by].tolist(), inp.rows["rank"][rows[by]].tolist(), strict=True):
        first.setdefault(int(r), v)
    details = [{"rank": r, **at(v, r)} for r, v in first.items()]
    parts = []
    if first:
        parts.append(f"{rows.size} operations of {len(first)} ranks never complete: "
                     + "; ".join(f"rank {d['rank']}: {said(d)}" for d in details[:8]))
    if unexpected.size:
        got = inp.rows[unexpected]
        sent = inp.order[unexpected]
        msgs = [{"rank": int(h), "from": int(s), "tag": int(t), **at(int(v), int(s))}
                for h, s, t, v in zip(got["peer"].tolist(), got["rank"].tolist(), got["tag"].tolist(), sent.tolist(),
                                      strict=True)]
        parts.append(f"{unexpected.size} messages no receive took (LogGOPSim's unexpected queues): "
                     + "; ".join(f"rank {m['rank']}: from {m['from']} tag {m['tag']} (the send at {said(m)} of rank "
                                 f"{m['from']})" for m in msgs[:8]))
        details += [{"unexpected": True, **m} for m in msgs]
    return _replay_error()(f"{path}: " + "; and ".join(parts), details)


def replay_goal(path: str | os.PathLike, platform: Platform | str, model: str = "loggp", *, mapping: str = "block",
                time_unit: float = 1e-9, progress: bool = False) -> xr.Dataset:
    """A GOAL file straight through LogGOPS, as LogGOPSim runs it: the whole job without a :class:`Trace`.

    :func:`goal_finish_times` as a dataset: the same finishing times as
    ``replay(read_trace(path), platform, "loggp")``, at a fraction of its time and memory for large
    schedules (no per-rank sequence is built).  Returns over ``rank``: ``total_time`` (LogGOPSim's finishing
    time), ``compute_time`` (its calcs) and ``comm_time`` (the rest), in seconds.

    Raises
    ------
    ReplayError
        As :func:`goal_finish_times`.
    """
    import xarray as xr

    from perfmod.core.io import provenance_attrs

    res = goal_finish_times(path, platform, model, mapping=mapping, time_unit=time_unit, progress=progress)
    total, comp = res.total_time, res.compute_time
    ds = xr.Dataset({"total_time": ("rank", total, {"units": "s", "long_name": "finishing time (LogGOPSim's)"}),
                     "compute_time": ("rank", comp, {"units": "s", "long_name": "calc time"}),
                     "comm_time": ("rank", total - comp, {"units": "s",
                                                           "long_name": "the rest of the finishing time"})},
                    coords={"rank": np.arange(total.size)})
    ds.attrs.update(provenance_attrs("replay", f"LogGOPS replay of the GOAL schedule {path}",
                                     {"model": model, "platform": res.platform, "mapping": mapping,
                                      "time_unit": time_unit, "operations": res.operations}))
    ds.attrs.update(model=model, platform=res.platform, operations=res.operations)
    return ds


def _replay_as_written(trace: Trace, graph: GoalGraph, time_unit: float, net: Network,
                       n_iter: int) -> LogGOPSResult:
    """The ``loggp`` replay of a GOAL trace on the file's graph (:func:`~perfmod.trace.formats.goal_trace.as_written`).

    A rank's time is its CPU's finishing time; ``compute_time`` its calcs, the rest ``wait_time`` (the
    trace's sequence is not what ran, so its calls are not timed one by one).
    """
    from perfmod.replay.kernel import ACC_COMPUTE, ACC_WAIT
    from perfmod.trace.core import Call

    p = trace.nprocs
    status, done, _, mate, nexto, _, _, _ = run_goal_graph(graph, time_unit, net, p)
    calc = graph.kind == CALC
    comp = np.bincount(graph.rank[calc], weights=graph.size[calc] * time_unit, minlength=p)
    clock = nexto / _PS
    acc = np.zeros((p, 5))
    acc[:, ACC_COMPUTE] = comp
    acc[:, ACC_WAIT] = np.maximum(clock - comp, 0.0)
    # node -> trace event: each operation is one Isend, Irecv or compute event of its rank and line
    ops = np.flatnonzero(np.isin(trace.call, [int(Call.ISEND), int(Call.IRECV), int(Call.COMPUTE)]))
    span = int(max(trace.line.max(initial=0), graph.line.max(initial=0))) + 1
    ekey = trace.rank[ops].astype(np.int64) * span + trace.line[ops]
    order = np.argsort(ekey, kind="stable")
    event = ops[order][np.searchsorted(ekey[order], graph.rank * span + graph.line)]
    n = len(trace)
    sdone = np.zeros(n, dtype=bool)
    pdst = np.full(n, -1, dtype=np.int64)
    sends = np.flatnonzero(graph.kind == SEND)
    sdone[event[sends[done[sends] >= 0]]] = True
    m = mate[sends]
    pdst[event[sends[m >= 0]]] = event[m[m >= 0]]
    blocked: dict[int, int] = {}
    ok = status in (STATUS_OK, STATUS_UNEXPECTED)  # a message no receive took is the replay's unmatched send
    if not ok:
        for v in np.flatnonzero(done < 0).tolist():
            blocked.setdefault(int(graph.rank[v]), int(event[v]))
    return LogGOPSResult(ok, clock, acc, np.zeros((p, max(n_iter, 1))), blocked, sdone, pdst, len(graph))


def stream_bytes(events: int, ranks: int) -> int:
    """What the ``loggp`` replay of a trace of ``events`` events over ``ranks`` ranks allocates beyond the trace
    at its peak, as :func:`replay_loggops` checks before allocating (the constants above say what it counts)."""
    per_rank = _STREAM_BYTES_PER_RANK + _SHARED_BYTES_PER_RANK * min(events / max(ranks, 1), 10) / 10
    return int(_STREAM_FIXED_BYTES + _TRACE_BYTES_PER_EVENT * events + per_rank * ranks)


def replay_loggops(trace: Trace, net: Network, compute: np.ndarray, reqs: Any, n_iter: int,
                   iteration: np.ndarray, matches: bool = True,
                   show: Callable[[int, int], None] | None = None) -> LogGOPSResult:
    """Replay ``trace`` on the bound network ``net`` under LogGOPS (see the module docstring); a GOAL trace
    with its own compute runs the file's graph as written (:func:`_replay_as_written`), any other trace its
    graph made rank by rank as the loop reaches it (:mod:`perfmod.replay.loggops_stream`).  ``matches``: the
    result's ``pdst`` (the receive each send matched) is wanted (the replay wants it only where wildcard
    receives left the matching to the loop; without it the streamed replay keeps 8 bytes less per event).
    ``show(made, events)``, if given, is called every half second while the event loop runs with the events its
    generator has made so far (:func:`~perfmod.core.kernel_progress.polled`), and once at its end."""
    from perfmod.machine.mapping import node_of, socket_of
    from perfmod.replay.loggops_kernel import _SLOT, _account
    from perfmod.replay.loggops_stream import CHUNK, STATUS_CLASS, run_stream, stream_inputs
    from perfmod.trace.formats.goal_trace import as_written

    written = as_written(trace)
    if written is not None and compute is trace.compute:
        return _replay_as_written(trace, *written, net, n_iter)
    p, n = trace.nprocs, len(trace)
    check_fits(stream_bytes(n, p), f"the LogGOPS replay of {n:,} events")
    if n >= 1 << 31:
        raise ValueError(f"the LogGOPS replay takes fewer than 2**31 events, not {n:,}")
    ev = stream_inputs(trace, reqs, compute)
    plat = net.platform
    ranks = np.arange(p)
    sock = socket_of(ranks, plat.ranks_per_node, plat.sockets_per_node, net.mapping, **net.nnodes_kw(p))
    host = node_of(ranks, plat.ranks_per_node, net.mapping, **net.nnodes_kw(p))
    del ranks
    par, gps = _class_params(net)
    zero_dur, wraps = _zero_byte_durations(par, gps)
    made = np.zeros(1, dtype=np.int64)
    watch = nullcontext() if show is None else polled(made, lambda k: show(k, n))
    with first_call("the LogGOPS event loop"), watch:
        status, nexto, sdone, pdst, blocked, nops, bad, wrapped = run_stream(
            ev, sock.astype(np.int64), host.astype(np.int64), np.column_stack([par, zero_dur, wraps]), gps,
            int(plat.short_max_bytes), int(plat.eager_max_bytes), CHUNK, bool(matches), made)
    if wrapped:
        _warn_zero_byte(trace.source or "trace", int(wrapped), stacklevel=5)
    res = ev[-1]  # the events' times, where their inputs were (loggops_stream.RESULT)
    del ev
    if status == STATUS_CLASS:
        net.loggp_params(MODES[bad // 3], PROTOCOLS[bad % 3])  # raises the network's own error
    if status == STATUS_EARLY:
        raise RuntimeError("the LogGOPS event loop queued an event before the current time, which its event queue "
                           "cannot order (a bug: please report it with the schedule)")
    acc, iter_comm, clock = _account(trace.rank_ptr, trace.call, iteration, n_iter, _SLOT, res["units"], res["cend"],
                                     res["emax"], nexto)
    stuck = np.flatnonzero(blocked >= 0) if status != STATUS_OK else np.zeros(0, dtype=np.int64)
    return LogGOPSResult(status == STATUS_OK, clock, acc, iter_comm,
                         dict(zip(stuck.tolist(), blocked[stuck].tolist(), strict=True)), sdone, pdst, int(nops))
