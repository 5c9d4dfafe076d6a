"""A trace as LogGOPSim's operation graph: what :func:`perfmod.trace.formats.goal.write_goal` writes, as arrays.

The ``loggp`` replay (:mod:`perfmod.replay.loggops`) runs each rank as a
graph of ``send``, ``recv`` and ``calc`` operations with "requires"
dependencies, as LogGOPSim does.  :func:`build_graph` makes that graph whole
from a :class:`~perfmod.trace.core.Trace` with
:func:`~perfmod.trace.formats.goal_graph.op_graph`, the compiled builder
that ``write_goal`` formats too (the rules are in the ``goal`` module
docstring); the replay makes the same graph rank by rank as its event loop
reaches it (:mod:`perfmod.replay.loggops_stream`, from the same per-event
inputs, :func:`~perfmod.trace.formats.goal_graph.build_inputs`), so the
replay of a trace and LogGOPSim's run of ``write_goal``'s schedule of it
simulate the same graph, node for node (the tests compare the operations
counted and LogGOPSim's times):

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

from dataclasses import dataclass, fields

import numpy as np

from perfmod.trace.core import Trace
from perfmod.trace.formats.goal_graph import CALC, RECV, SEND, WILD, OpGraph, op_graph
from perfmod.trace.formats.goal_scan_kernels import _csr

__all__ = ["SEND", "RECV", "CALC", "WILD", "Graph", "build_graph"]


@dataclass(frozen=True)
class Graph(OpGraph):
    """A trace's :class:`~perfmod.trace.formats.goal_graph.OpGraph` plus the successor lists the replay walks.

    The node arrays (``rank``, ``kind``, ``size``, ``peer``, ``tag``,
    ``sync``, ``event``, ``pred_ptr``/``pred``, ``rank_ptr``) are the ``OpGraph``'s, described
    there; here a calc's ``size`` is in picoseconds and a ``sync`` send is a
    rendezvous whatever its size.

    Attributes
    ----------
    succ_ptr, succ : numpy.ndarray of int64
        CSR: the nodes requiring each node, in creation order (LogGOPSim frees them in this order).
    """

    succ_ptr: np.ndarray
    succ: np.ndarray

    @property
    def ndeps(self) -> np.ndarray:
        """Nodes each node requires (int64; a new array, ``diff(pred_ptr)``)."""
        return np.diff(self.pred_ptr)


def build_graph(trace: Trace, reqs, compute: np.ndarray, check=None) -> Graph:
    """:func:`~perfmod.trace.formats.goal_graph.op_graph` of ``trace`` and ``reqs`` with ``compute`` (seconds of
    computation before each event, the replay's compute times) in picoseconds, plus the successor lists
    (``check``: op_graph's memory check of the nodes' upper bound)."""
    ps = np.rint(np.asarray(compute, dtype=np.float64) * 1e12).astype(np.int64)
    g = op_graph(trace, reqs, ps, check)
    nn = len(g)
    # successors: the requiring nodes grouped by the node they require, each group in creation order (a stable
    # counting sort of the edges, which come in order of the requiring node)
    dep_to = np.repeat(np.arange(nn, dtype=np.int64), np.diff(g.pred_ptr))
    succ_ptr, succ = _csr(np.ascontiguousarray(g.pred, dtype=np.int64), dep_to, nn)
    return Graph(**{f.name: getattr(g, f.name) for f in fields(OpGraph)}, succ_ptr=succ_ptr, succ=succ)
