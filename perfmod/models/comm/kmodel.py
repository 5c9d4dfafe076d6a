"""K-model counts of a communication phase: K_inter, K_total, k' and k (paper 000 §3.1, Eq. 4-5).

Paper: Choi et al., ICS 2020 (paper 000) (Choi et al., ICS 2020).

The counts come from a phase's message list (sender, receiver) and the
rank-to-node mapping (:func:`perfmod.machine.mapping.node_of`); the
applications' message lists are in :mod:`perfmod.apps`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from perfmod.core.checks import positive_int
from perfmod.machine.mapping import node_of

__all__ = [
    "KCounts",
    "kmodel_counts_from",
    "kmodel_counts_per_phase",
    "phase_counts",
    "K_TOTAL_RULES",
]


K_TOTAL_RULES = ("kprime_x_stencil", "counted", "kprime_x_maxneighbours")

@dataclass(frozen=True)
class KCounts:
    """K-model counts of one communication phase (paper 000 §3.1, Eq. 4-5).

    Attributes
    ----------
    k_inter : int
        K_inter: max over nodes of the inter-node messages sent by the node's
        ranks in the phase (messages).
    k_total : int
        K_total by ``rule`` (messages; see :func:`kmodel_counts`).
    k_prime : int
        k': ranks per node taking part, ``min(ranks_per_node, nprocs)``.
    k : float
        ``k_inter / k_total * k_prime`` (Eq. 4); 0 when nothing is sent.
    k_total_counted : int
        Max over nodes of all messages sent by the node's ranks (messages).
    max_neighbours : int
        Max over ranks of the messages a rank sends in the phase.
    rule : str
        How ``k_total`` was obtained.
    node : int
        A node attaining ``k_inter`` (the lowest index).
    nnodes : int
        Nodes holding the ranks.
    config : dict
        The configuration counted (app, grid, periodicity, mapping, ...).
    """

    k_inter: int
    k_total: int
    k_prime: int
    k: float
    k_total_counted: int
    max_neighbours: int
    rule: str
    node: int = 0
    nnodes: int = 1
    config: dict = field(default_factory=dict, compare=False)

    def as_dict(self) -> dict[str, Any]:
        """Plain dict of the fields (for a pandas row)."""
        return asdict(self)

def kmodel_counts_from(
    src: Any,
    dst: Any,
    nprocs: int,
    ranks_per_node: int,
    mapping: str = "block",
    stencil: int | None = None,
    k_total_rule: str = "counted",
    config: dict | None = None,
) -> KCounts:
    """K counts from a raw message list of one phase (one entry per message sent).

    This is the counting of §3.1: each rank counts the messages it sends to
    other nodes, the counts are summed over the ranks of a node, and the
    maximum over nodes is K_inter.

    Parameters
    ----------
    src, dst : array_like of int
        Sender and receiver of every message of the phase.
    nprocs : int
        Number of ranks.
    ranks_per_node : int
        Ranks per node (k').
    mapping : {"block", "round_robin"}
        Rank placement (:func:`node_of`).
    stencil : int, optional
        The application's maximum neighbour count per rank (Jacobi2D 4,
        MiniFE 26, MiniMD 6); needed by ``k_total_rule="kprime_x_stencil"``.
    k_total_rule : {"counted", "kprime_x_stencil", "kprime_x_maxneighbours"}
        K_total as counted (max over nodes of all messages sent), k' times
        ``stencil``, or k' times the largest neighbour count of any rank in
        this configuration.
    config : dict, optional
        Stored in the result.
    """
    p = positive_int("nprocs", nprocs)
    rpn = positive_int("ranks_per_node", ranks_per_node)
    _check_rule(k_total_rule, stencil)
    s, d = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if s.shape != d.shape:
        raise ValueError(f"src and dst differ in shape: {s.shape} vs {d.shape}")
    if s.size and (min(s.min(), d.min()) < 0 or max(s.max(), d.max()) >= p):
        raise ValueError(f"message ranks outside 0..{p - 1}")
    nnodes = -(-p // rpn)
    kw = {"nnodes": nnodes} if mapping == "round_robin" else {}
    ns, nd = node_of(s, rpn, mapping, **kw), node_of(d, rpn, mapping, **kw)
    per_node = np.bincount(ns[ns != nd], minlength=nnodes)
    k_inter = int(per_node.max(initial=0))
    counted = int(np.bincount(ns, minlength=nnodes).max(initial=0))
    max_nb = int(np.bincount(s, minlength=p).max(initial=0))
    k_prime = min(rpn, p)
    k_total = _k_total(k_total_rule, counted, k_prime, max_nb, stencil)
    k = k_inter / k_total * k_prime if k_total else 0.0
    cfg = dict(config or {}) | {"mapping": mapping, "ranks_per_node": rpn, "nprocs": p}
    return KCounts(k_inter, k_total, k_prime, k, counted, max_nb, k_total_rule,
                   int(np.argmax(per_node)) if per_node.size else 0, nnodes, cfg)


def phase_counts(phase: Any, ranks_per_node: int, mapping: str = "block",
                 k_total_rule: str = "kprime_x_stencil") -> KCounts:
    """K counts of one phase given as an object with ``src``, ``dst``, ``nprocs`` and ``stencil``.

    ``phase`` is typically an :class:`perfmod.apps.exchange.Exchange`; its
    ``app`` and ``config`` (when present) are kept in the result's ``config``.
    See :func:`kmodel_counts_from` for the counting and the rules.
    """
    config = {"app": getattr(phase, "app", None), **dict(getattr(phase, "config", {}) or {})}
    return kmodel_counts_from(phase.src, phase.dst, phase.nprocs, ranks_per_node, mapping=mapping,
                              stencil=phase.stencil, k_total_rule=k_total_rule, config=config)



def _check_rule(k_total_rule: str, stencil: int | None) -> None:
    if k_total_rule not in K_TOTAL_RULES:
        raise ValueError(f"unknown k_total_rule {k_total_rule!r}; expected one of {K_TOTAL_RULES}")
    if k_total_rule == "kprime_x_stencil" and stencil is None:
        raise ValueError("k_total_rule 'kprime_x_stencil' needs stencil (the application's neighbour count)")


def _k_total(k_total_rule: str, counted: Any, k_prime: int, max_nb: Any, stencil: int | None) -> Any:
    """K_total by ``k_total_rule`` from the counted K_total and the largest neighbour count (ints or arrays)."""
    if k_total_rule == "counted":
        return counted
    if k_total_rule == "kprime_x_maxneighbours":
        return k_prime * max_nb
    return k_prime * int(stencil)  # type: ignore[arg-type]


def kmodel_counts_per_phase(phase: np.ndarray, src: np.ndarray, dst: np.ndarray, nph: int, nprocs: int,
                            ranks_per_node: int, mapping: str = "block", stencil: int | None = None,
                            k_total_rule: str = "counted") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K_inter, K_total and k' of every phase of a message list, as :func:`kmodel_counts_from` counts one phase.

    ``phase``, ``src``, ``dst``: the phase (0 to ``nph - 1``), sender and receiver (0 to ``nprocs - 1``) of
    each message.  One compiled pass over the messages (in trace order, or grouped by phase by a sort); float
    arrays, a phase without messages gets 0, 1 and k'.
    """
    from perfmod.models.comm.kmodel_kernels import phase_maxima, phase_maxima_in_order  # numba only here

    p = positive_int("nprocs", nprocs)
    rpn = positive_int("ranks_per_node", ranks_per_node)
    _check_rule(k_total_rule, stencil)
    nnodes = -(-p // rpn)
    node = node_of(np.arange(p), rpn, mapping, **({"nnodes": nnodes} if mapping == "round_robin" else {}))
    k_inter, counted, max_nb = (np.zeros(nph, dtype=np.int64) for _ in range(3))
    some = np.zeros(nph, dtype=bool)
    if not phase_maxima_in_order(phase, src, dst, node, k_inter, counted, max_nb, some, np.zeros(nph, np.int64),
                                 np.zeros(nph, np.int64), np.empty(nph, np.int64)):
        # a stable sort by phase: NumPy's is a radix sort for keys of 16 bits or fewer (one pass, no comparisons)
        order = np.argsort(phase.astype(np.uint16) if nph <= 1 << 16 else phase, kind="stable")
        bounds = np.searchsorted(phase[order], np.arange(nph + 1))
        k_inter, counted, max_nb = (np.zeros(nph, dtype=np.int64) for _ in range(3))
        phase_maxima(order, bounds, src, dst, node, k_inter, counted, max_nb, np.zeros(nnodes, dtype=np.int64),
                     np.zeros(nnodes, dtype=np.int64), np.zeros(p, dtype=np.int64))
        some = np.diff(bounds) > 0
    k_prime = min(rpn, p)
    k_total = np.where(some, _k_total(k_total_rule, counted, k_prime, max_nb, stencil), 1).astype(float)
    return np.where(some, k_inter, 0).astype(float), k_total, np.full(nph, float(k_prime))
