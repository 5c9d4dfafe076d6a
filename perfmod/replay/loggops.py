"""The ``loggp`` replay: LogGOPS as LogGOPSim computes it (issue 14 item 11).

LogGP (Alexandrov et al.) charges a message of n bytes ``o`` on the
sender's CPU, ``g`` between two messages of one network interface, ``L``
on the wire and ``G`` per further byte; LogGOPSim (Hoefler, Schneider,
Lumsdaine, HPDC 2010; github.com/spcl/LogGOPSim) simulates it with a CPU
and a NIC per rank, and so does this replay for every model whose
registry entry says ``replay="loggops"`` (``loggp``):

- the trace becomes LogGOPSim's operation graph, the graph ``write_goal``
  writes for it (:mod:`perfmod.replay.graph`; collectives expanded by
  MPICH's algorithms into point-to-point rounds);
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
nanosecond (the tests compare them).  Differences that remain: compute is
kept to the picosecond where ``write_goal`` rounds it to nanoseconds; a
zero-byte message costs like one byte (LogGOPSim computes ``(0 - 1) G`` in
unsigned arithmetic, i.e. ``-G``); parameters differ per mode and protocol
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

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from perfmod.machine.platforms import MODES
from perfmod.models.comm.network import Network
from perfmod.replay.graph import SEND, Graph, build_graph
from perfmod.replay.kernel import ACC_COLL, ACC_COMPUTE, ACC_RECV, ACC_SEND, ACC_WAIT
from perfmod.replay.loggops_kernel import STATUS_OK, run_loggops
from perfmod.trace.core import COLLECTIVES, WAITS, Call, Trace, code_set

__all__ = ["LogGOPSResult", "message_params", "replay_loggops"]

_PS = 1e12  # picoseconds per second: the kernel's time unit


def message_params(graph: Graph, net: Network, nprocs: int) -> tuple[np.ndarray, ...]:
    """``(o, g, L, (n - 1) G, rendezvous)`` of every send node, times in int64 picoseconds (0 elsewhere).

    The parameters of the message's mode and protocol as the bound network
    resolved them (:meth:`~perfmod.models.comm.network.Network.loggp_params`:
    the platform's table of the model, derived from the postal ones where it
    has none); a zero-byte
    message counts as one byte; rendezvous above ``eager_max_bytes`` and for
    synchronous sends.
    """
    plat = net.platform
    nn = len(graph)
    out = [np.zeros(nn, dtype=np.int64) for _ in range(4)]
    rndv = np.zeros(nn, dtype=bool)
    sends = np.flatnonzero(graph.kind == SEND)
    if sends.size == 0:
        return (*out, rndv)
    modes = net.modes(graph.rank[sends], graph.peer[sends], nprocs)
    nbytes = np.maximum(graph.size[sends], 1).astype(np.float64)
    protos = plat.protocol(nbytes)
    for code, mode in enumerate(MODES):
        for proto in np.unique(protos[modes == code]).tolist():
            sel = (modes == code) & (protos == proto)
            p = net.loggp_params(mode, proto)
            idx = sends[sel]
            out[0][idx] = round(p["o"] * _PS)
            out[1][idx] = round(p["g"] * _PS)
            out[2][idx] = round(p["L"] * _PS)
            out[3][idx] = np.rint((nbytes[sel] - 1) * p["G"] * _PS).astype(np.int64)
    rndv[sends] = (graph.size[sends] > plat.eager_max_bytes) | graph.sync[sends]
    return (*out, rndv)


_SLOT = np.full(256, -1, dtype=np.int64)
_SLOT[[int(Call.SEND), int(Call.SSEND)]] = ACC_SEND
_SLOT[[int(Call.RECV), int(Call.SENDRECV)]] = ACC_RECV
_SLOT[list(code_set(WAITS))] = ACC_WAIT
_SLOT[list(code_set(COLLECTIVES))] = ACC_COLL


@njit(cache=True)
def _account(rank_ptr, call, iteration, n_iter, slot_of, release, frontier, calc_of, calc_size, rr, nexto):
    """Per rank and event: the program's clock after each event, split into the accumulator slots."""
    nprocs = rank_ptr.size - 1
    acc = np.zeros((nprocs, 5))
    iter_comm = np.zeros((nprocs, max(n_iter, 1)))
    clock = np.zeros(nprocs)
    for r in range(nprocs):
        cur = np.int64(0)
        last_it = -1
        for i in range(rank_ptr[r], rank_ptr[r + 1]):
            prev = cur
            c = calc_of[i]
            comm = 0.0
            if c >= 0:
                end = rr[c]
                acc[r, ACC_COMPUTE] += calc_size[c] / 1e12
                wait = (end - calc_size[c] - prev) / 1e12  # the calc waited for a busy CPU
                acc[r, ACC_WAIT] += wait
                comm += wait
                cur = max(cur, end)
            base = cur
            for q in range(release[i], release[i + 1]):
                cur = max(cur, rr[frontier[q]])
            s = slot_of[call[i]]
            if s >= 0:
                acc[r, s] += (cur - base) / 1e12
                comm += (cur - base) / 1e12
            if n_iter > 0 and iteration[i] >= 0:
                iter_comm[r, iteration[i]] += comm
                last_it = iteration[i]
        tail = max(nexto[r] - cur, 0)
        acc[r, ACC_WAIT] += tail / 1e12
        if last_it >= 0:
            iter_comm[r, last_it] += tail / 1e12
        clock[r] = max(nexto[r], cur) / 1e12
    return acc, iter_comm, clock


@dataclass(frozen=True)
class LogGOPSResult:
    """What :func:`replay_loggops` gives the engine (the arrays of the message kernel's result)."""

    ok: bool
    clock: np.ndarray
    acc: np.ndarray
    iter_comm: np.ndarray
    blocked: dict[int, int]  # rank -> first trace event it cannot finish
    sdone: np.ndarray  # per event: when its send was done (NaN: never, or not a send)
    pdst: np.ndarray  # per event: the receive event a send matched (-1: none)


def replay_loggops(trace: Trace, net: Network, compute: np.ndarray, reqs: Any, n_iter: int,
                   iteration: np.ndarray) -> LogGOPSResult:
    """Replay ``trace`` on the bound network ``net`` under LogGOPS (see the module docstring)."""
    g = build_graph(trace, reqs, compute)
    o, gap, lat, gn, rndv = message_params(g, net, trace.nprocs)
    status, done, rr, mate, nexto, _ = run_loggops(trace.nprocs, g.rank, g.kind, g.size, g.peer, g.tag,
                                                g.ndeps, g.succ_ptr, g.succ, o, gap, lat, gn, rndv)
    calc_size = np.where(g.kind == 3, g.size, 0)
    acc, iter_comm, clock = _account(trace.rank_ptr, trace.call.astype(np.int64), iteration.astype(np.int64),
                                     n_iter, _SLOT, g.release, g.frontier, g.calc_of, calc_size, rr, nexto)
    n = len(trace)
    sdone = np.full(n, np.nan)
    pdst = np.full(n, -1, dtype=np.int64)
    sends = np.flatnonzero((g.kind == SEND) & (g.event >= 0))
    ev = g.event[sends]
    hit = done[sends] >= 0
    sdone[ev[hit]] = done[sends[hit]] / _PS
    m = mate[sends]
    ok_m = (m >= 0) & (g.event[np.maximum(m, 0)] >= 0)
    pdst[ev[ok_m]] = g.event[m[ok_m]]
    blocked: dict[int, int] = {}
    if status != STATUS_OK:
        for v in np.flatnonzero(done < 0).tolist():
            r = int(g.rank[v])
            if r not in blocked:  # a rank's first undone node is an operation: a join waits for an earlier one
                blocked[r] = int(g.event[v])
    return LogGOPSResult(status == STATUS_OK, clock, acc, iter_comm, blocked, sdone, pdst)
