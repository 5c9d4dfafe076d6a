"""A trace as LogGOPSim's operation graph: what :func:`perfmod.trace.formats.goal.write_goal` writes, as arrays.

The ``loggp`` replay (:mod:`perfmod.replay.loggops`) runs each rank as a
graph of ``send``, ``recv`` and ``calc`` operations with "requires"
dependencies, as LogGOPSim does.  :func:`build_graph` makes that graph from
a :class:`~perfmod.trace.core.Trace` with
:func:`~perfmod.trace.formats.goal_graph.op_graph`, the compiled builder
that ``write_goal`` formats too (the rules are in the ``goal`` module
docstring), so the replay of a trace and LogGOPSim's run of ``write_goal``'s
schedule of it simulate the same graph, node for node:

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

from perfmod.trace.core import Trace
from perfmod.trace.formats.goal_graph import CALC, RECV, SEND, WILD, op_graph

__all__ = ["SEND", "RECV", "CALC", "WILD", "Graph", "build_graph"]


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


def build_graph(trace: Trace, reqs, compute: np.ndarray) -> Graph:
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
    ps = np.rint(np.asarray(compute, dtype=np.float64) * 1e12).astype(np.int64)
    g = op_graph(trace, reqs, ps)
    nn = len(g)
    dep_from = g.pred
    dep_to = np.repeat(np.arange(nn, dtype=np.int64), np.diff(g.pred_ptr))
    order = np.lexsort((dep_to, dep_from))
    succ_ptr = np.zeros(nn + 1, dtype=np.int64)
    np.cumsum(np.bincount(dep_from, minlength=nn), out=succ_ptr[1:])
    return Graph(g.rank, g.kind, g.size, g.peer, g.tag, g.sync, g.event,
                 np.bincount(dep_to, minlength=nn).astype(np.int64), succ_ptr, dep_to[order], g.rank_ptr, g.release,
                 g.frontier, g.calc_of)
