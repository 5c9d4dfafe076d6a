"""A trace as LogGOPSim's operation graph: what :func:`perfmod.trace.formats.goal.write_goal` writes, as arrays.

The ``loggp`` replay (:mod:`perfmod.replay.loggops`) runs each rank as a
graph of ``send``, ``recv`` and ``calc`` operations with "requires"
dependencies, as LogGOPSim does.  :func:`build_graph` makes that graph from
a :class:`~perfmod.trace.core.Trace` by the rules of ``write_goal`` (its
module docstring states them), node for node and dependency for
dependency, so the replay of a trace and LogGOPSim's run of ``write_goal``'s
schedule of it simulate the same graph:

- compute before a call: a ``calc`` node requiring the frontier (the
  operations the next step waits for), which becomes the frontier;
- blocking sends and receives, ``Sendrecv`` and each round of a collective
  (expanded by :func:`~perfmod.trace.formats.goal.collective_rounds`):
  nodes requiring the frontier, which they become;
- ``Isend``/``Irecv``: a node requiring the frontier, added to it by the
  wait that completes it;
- a frontier of several nodes is joined by a ``calc 0`` node before the next step.

Compute is kept in picoseconds (``write_goal`` rounds it to nanoseconds);
peers are world ranks; tags are ``write_goal``'s (``tag * 1000 + comm`` on
communicator ``comm != 0``, ``COLLECTIVE_TAG + comm`` for collectives), so
matching by (source, tag) is LogGOPSim's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmod.trace.core import ANY_SOURCE, ANY_TAG, PROC_NULL, Call, Trace
from perfmod.trace.formats.goal import COLLECTIVE_TAG, collective_rounds
from perfmod.trace.formats.textio import alltoallv_recv_bytes

__all__ = ["SEND", "RECV", "CALC", "WILD", "Graph", "build_graph"]

SEND, RECV, CALC = 1, 2, 3  #: node types, LogGOPSim's order (its free operations are sorted by type)
WILD = -1  #: any source / any tag in :attr:`Graph.peer` and :attr:`Graph.tag`

_SENDS = frozenset(int(c) for c in (Call.SEND, Call.SSEND, Call.ISEND, Call.ISSEND))
_RECVS = frozenset(int(c) for c in (Call.RECV, Call.IRECV))
_BLOCKING = frozenset(int(c) for c in (Call.SEND, Call.SSEND, Call.RECV))
_SYNC = frozenset(int(c) for c in (Call.SSEND, Call.ISSEND))
_WAITS = frozenset(int(c) for c in (Call.WAIT, Call.WAITALL, Call.WAITANY, Call.WAITSOME, Call.TEST, Call.TESTALL,
                                    Call.TESTANY, Call.TESTSOME))
_EXPANDED = frozenset(int(k) for k in (Call.BARRIER, Call.BCAST, Call.REDUCE, Call.ALLREDUCE, Call.ALLGATHER,
                                       Call.ALLTOALL, Call.ALLTOALLV, Call.GATHER, Call.SCATTER))
_ROOTED = frozenset(int(k) for k in (Call.BCAST, Call.REDUCE, Call.GATHER, Call.SCATTER))


@dataclass(frozen=True)
class Graph:
    """Operation graph of a trace (one entry per node; nodes of a rank are contiguous, in creation order).

    Attributes
    ----------
    rank, kind : numpy.ndarray
        Owner (world rank) and type (:data:`SEND`, :data:`RECV`, :data:`CALC`) of each node.
    size : numpy.ndarray of int64
        Bytes of a send or receive; picoseconds of a calc.
    peer, tag : numpy.ndarray of int64
        World destination (send) or source (receive, :data:`WILD` for any) and tag (:data:`WILD` any).
    sync : numpy.ndarray of bool
        A synchronous send (rendezvous whatever its size).
    event : numpy.ndarray of int64
        Trace event that made the node (-1: a join).
    ndeps : numpy.ndarray of int64
        Nodes each node requires.
    succ_ptr, succ : numpy.ndarray of int64
        CSR: the nodes requiring each node, in creation order (LogGOPSim frees them in this order).
    rank_ptr : numpy.ndarray of int64
        Nodes of rank r: ``rank_ptr[r]:rank_ptr[r + 1]``.
    release : numpy.ndarray of int64, shape (len(trace) + 1,)
        CSR over events: ``frontier[release[i]:release[i + 1]]`` are the nodes event ``i`` adds to its
        rank's frontier (what the program waits for at that event); empty for non-blocking calls.
    frontier : numpy.ndarray of int64
    calc_of : numpy.ndarray of int64, shape (len(trace),)
        The calc node of the compute before each event (-1: none).
    """

    rank: np.ndarray
    kind: np.ndarray
    size: np.ndarray
    peer: np.ndarray
    tag: np.ndarray
    sync: np.ndarray
    event: np.ndarray
    ndeps: np.ndarray
    succ_ptr: np.ndarray
    succ: np.ndarray
    rank_ptr: np.ndarray
    release: np.ndarray
    frontier: np.ndarray
    calc_of: np.ndarray

    def __len__(self) -> int:
        return int(self.kind.size)


class _Builder:
    """Nodes and edges in Python lists (one pass over the events, as ``write_goal``)."""

    def __init__(self) -> None:
        self.rank: list[int] = []
        self.kind: list[int] = []
        self.size: list[int] = []
        self.peer: list[int] = []
        self.tag: list[int] = []
        self.sync: list[bool] = []
        self.event: list[int] = []
        self.dep_from: list[int] = []  # edge: dep_to requires dep_from
        self.dep_to: list[int] = []

    def node(self, r: int, kind: int, size: int, peer: int, tag: int, event: int, deps: list[int],
             sync: bool = False) -> int:
        v = len(self.kind)
        self.rank.append(r)
        self.kind.append(kind)
        self.size.append(size)
        self.peer.append(peer)
        self.tag.append(tag)
        self.sync.append(sync)
        self.event.append(event)
        self.dep_from += deps
        self.dep_to += [v] * len(deps)
        return v


def _msg(b: _Builder, r: int, kind: str, nbytes: int, peer: int, tag: int, event: int, deps: list[int],
         sync: bool = False) -> int:
    if kind == "send":
        return b.node(r, SEND, nbytes, peer, tag, event, deps, sync)
    return b.node(r, RECV, nbytes, WILD if peer == ANY_SOURCE else peer, WILD if tag == ANY_TAG else tag, event,
                  deps)


def build_graph(trace: Trace, reqs, compute: np.ndarray) -> Graph:  # noqa: C901 -- one branch per kind of call
    """The operation graph of ``trace`` (see the module docstring).

    Parameters
    ----------
    trace : Trace
        A validated trace.
    reqs : Requests
        :func:`perfmod.trace.requests.resolve_requests` of ``trace``.
    compute : numpy.ndarray
        Seconds of computation before each event (the replay's compute times).
    """
    b = _Builder()
    n = len(trace)
    rel_nodes: list[int] = []
    rel_ptr = np.zeros(n + 1, dtype=np.int64)
    calc_of = np.full(n, -1, dtype=np.int64)
    ps = np.rint(np.asarray(compute, dtype=np.float64) * 1e12).astype(np.int64)
    a2av = alltoallv_recv_bytes(trace)
    world: dict[int, list[int]] = {}
    pos: dict[int, dict[int, int]] = {}
    rank_ptr = np.zeros(trace.nprocs + 1, dtype=np.int64)
    calls, comms, tags, nbs, peers = (a.tolist() for a in (trace.call, trace.comm, trace.tag, trace.nbytes,
                                                           trace.peer))
    ref, created = reqs.ref_ptr.tolist(), reqs.created.tolist()
    pslist = ps.tolist()

    def members(c: int) -> list[int]:
        if c not in world:
            world[c] = trace.comm_ranks(c).tolist()
            pos[c] = {w: k for k, w in enumerate(world[c])}
        return world[c]

    for r in range(trace.nprocs):
        frontier: list[int] = []
        pending: dict[int, int] = {}

        def join(r: int = r) -> list[int]:
            nonlocal frontier
            if len(frontier) > 1:
                frontier = [b.node(r, CALC, 0, 0, 0, -1, frontier)]
            return frontier

        sl = trace.rank_events(r)
        for i in range(sl.start, sl.stop):
            added: list[int] = []
            if pslist[i] > 0:
                frontier = [b.node(r, CALC, pslist[i], 0, 0, i, join())]
                calc_of[i] = frontier[0]
                added = frontier
            c, comm = calls[i], comms[i]
            tag = tags[i]
            tag = tag if comm == 0 or tag == ANY_TAG else tag * 1000 + comm
            peer = peers[i]
            if c in _SENDS or c in _RECVS:
                if peer != PROC_NULL:
                    w = peer if peer < 0 else members(comm)[peer]
                    v = _msg(b, r, "send" if c in _SENDS else "recv", nbs[i], w, tag, i, join(), c in _SYNC)
                    if c in _BLOCKING:
                        frontier = added = [v]
                    else:
                        pending[i] = v
            elif c in _WAITS:
                done = [pending.pop(x) for x in created[ref[i]:ref[i + 1]] if x in pending]
                frontier = frontier + done
                added = added + done
            elif c == Call.SENDRECV:
                src, rb, rt = (int(x) for x in trace.aux_of(i))
                rt = rt if comm == 0 or rt == ANY_TAG else rt * 1000 + comm
                deps = join()
                ops = []
                if peer != PROC_NULL:
                    ops.append(_msg(b, r, "send", nbs[i], members(comm)[peer], tag, i, deps))
                if src != PROC_NULL:
                    ops.append(_msg(b, r, "recv", rb, src if src < 0 else members(comm)[src], rt, i, deps))
                if ops:
                    frontier = added = ops
            elif c in _EXPANDED or c == Call.REDUCE_SCATTER:
                mem = members(comm)
                v, p = pos[comm][r], len(mem)
                ctag = COLLECTIVE_TAG + comm
                if c == Call.REDUCE_SCATTER:
                    parts = [(int(Call.REDUCE), nbs[i], 0), (int(Call.SCATTER), -(-nbs[i] // p), 0)]
                else:
                    parts = [(c, 0 if c == Call.BARRIER else nbs[i], peers[i] if c in _ROOTED else 0)]
                sizes = trace.aux_of(i).tolist() if c == Call.ALLTOALLV else None
                for call, size, root in parts:
                    for rnd in collective_rounds(call, v, p, root):
                        deps = join()
                        ops = []
                        for k, x in rnd:
                            nb = size if sizes is None else (sizes[x] if k == "send" else a2av[i][x])
                            ops.append(_msg(b, r, k, nb, mem[x], ctag, i, deps))
                        if ops:
                            frontier = ops
                            added = added + ops
            rel_nodes += added
            rel_ptr[i + 1] = len(rel_nodes)
        rank_ptr[r + 1] = len(b.kind)
    rank_ptr[trace.nprocs] = len(b.kind)
    nn = len(b.kind)
    dep_from = np.asarray(b.dep_from, dtype=np.int64)
    dep_to = np.asarray(b.dep_to, dtype=np.int64)
    order = np.lexsort((dep_to, dep_from))
    succ_ptr = np.zeros(nn + 1, dtype=np.int64)
    np.cumsum(np.bincount(dep_from, minlength=nn), out=succ_ptr[1:])
    return Graph(np.asarray(b.rank, dtype=np.int64), np.asarray(b.kind, dtype=np.int8),
                 np.asarray(b.size, dtype=np.int64), np.asarray(b.peer, dtype=np.int64),
                 np.asarray(b.tag, dtype=np.int64), np.asarray(b.sync, dtype=bool),
                 np.asarray(b.event, dtype=np.int64), np.bincount(dep_to, minlength=nn).astype(np.int64),
                 succ_ptr, dep_to[order], rank_ptr, rel_ptr, np.asarray(rel_nodes, dtype=np.int64), calc_of)
