"""Rank placement, process grids and the K-model counts (paper 000 §3.1, Table 5).

- :func:`node_of`, :func:`socket_of`, :func:`pair_modes`: where ranks live
  (block mapping by default: ranks ``0..r-1`` on node 0, sockets filled in
  order; round-robin as an option) and the mode of each (src, dst) pair as
  a code indexing :data:`MODES`.
- :func:`dims_create`: ``MPI_Dims_create`` (the balanced factorization,
  non-increasing; ties broken toward the larger smallest factor, which is
  what MPICH returns, checked against it for n <= 2000 in the tests).
- :func:`cart_coords`, :func:`cart_rank`: row-major Cartesian topology as
  ``MPI_Cart_create`` without reordering.
- :func:`kmodel_counts`: K_inter, K_total, k' and k of a communication phase.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

__all__ = [
    "MODES",
    "MAPPINGS",
    "node_of",
    "socket_of",
    "pair_modes",
    "dims_create",
    "cart_coords",
    "cart_rank",
    "KCounts",
    "kmodel_counts",
    "kmodel_counts_from",
]

MODES = ("intra_socket", "inter_socket", "inter_node")
MAPPINGS = ("block", "round_robin")


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_mapping(mapping: str, nnodes: int | None) -> None:
    if mapping not in MAPPINGS:
        raise ValueError(f"unknown mapping {mapping!r}; expected one of {MAPPINGS}")
    if mapping == "round_robin" and nnodes is None:
        raise ValueError("mapping 'round_robin' needs nnodes (the number of nodes)")


def node_of(ranks: Any, ranks_per_node: int, mapping: str = "block", nnodes: int | None = None) -> np.ndarray:
    """Node index of each rank.

    Parameters
    ----------
    ranks : array_like of int
    ranks_per_node : int
        MPI ranks per node (k').
    mapping : {"block", "round_robin"}
        Block: rank r on node ``r // ranks_per_node``; round-robin: rank r on
        node ``r % nnodes``.
    nnodes : int, optional
        Number of nodes (required for round-robin).
    """
    rpn = _positive("ranks_per_node", ranks_per_node)
    _check_mapping(mapping, nnodes)
    r = np.asarray(ranks, dtype=np.int64)
    return r // rpn if mapping == "block" else r % nnodes


def socket_of(
    ranks: Any, ranks_per_node: int, sockets_per_node: int, mapping: str = "block", nnodes: int | None = None
) -> np.ndarray:
    """Global socket index (``node * sockets_per_node + local socket``) of each rank.

    Within a node, ranks fill the sockets in order, ``ceil(ranks_per_node /
    sockets_per_node)`` per socket (one process per GPU, GPUs split evenly).
    """
    rpn = _positive("ranks_per_node", ranks_per_node)
    spn = _positive("sockets_per_node", sockets_per_node)
    rps = math.ceil(rpn / spn)
    r = np.asarray(ranks, dtype=np.int64)
    node = node_of(r, rpn, mapping, nnodes)
    local = r % rpn if mapping == "block" else r // nnodes
    return node * spn + local // rps


def pair_modes(
    src: Any,
    dst: Any,
    ranks_per_node: int,
    sockets_per_node: int,
    mapping: str = "block",
    nnodes: int | None = None,
) -> np.ndarray:
    """Mode code (0 intra-socket, 1 inter-socket, 2 inter-node; see :data:`MODES`) of each pair."""
    s, d = np.asarray(src), np.asarray(dst)
    if s.shape != d.shape:
        raise ValueError(f"src and dst differ in shape: {s.shape} vs {d.shape}")
    inter_node = node_of(s, ranks_per_node, mapping, nnodes) != node_of(d, ranks_per_node, mapping, nnodes)
    inter_sock = socket_of(s, ranks_per_node, sockets_per_node, mapping, nnodes) != socket_of(
        d, ranks_per_node, sockets_per_node, mapping, nnodes
    )
    return np.where(inter_node, 2, np.where(inter_sock, 1, 0)).astype(np.int8)


@cache
def _divisors(n: int) -> tuple[int, ...]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return tuple(sorted(set(small + [n // d for d in small])))


@cache
def dims_create(nnodes: int, ndims: int) -> tuple[int, ...]:
    """Balanced process grid as ``MPI_Dims_create(nnodes, ndims)`` returns it.

    The dims multiply to ``nnodes``, are non-increasing, minimize the
    spread ``max - min`` and, among equals, maximize the smallest dim.
    """
    n = _positive("nnodes", nnodes)
    d = _positive("ndims", ndims)
    best: tuple[tuple[int, int], tuple[int, ...]] | None = None

    def rec(rem: int, k: int, maxd: int, cur: tuple[int, ...]) -> None:
        nonlocal best
        if k == 1:
            if rem <= maxd:
                dims = (*cur, rem)
                key = (max(dims) - min(dims), -min(dims))
                if best is None or key < best[0]:
                    best = (key, dims)
            return
        for x in _divisors(rem):
            if x <= maxd and x**k >= rem:
                rec(rem // x, k - 1, x, (*cur, x))

    rec(n, d, n, ())
    assert best is not None
    return best[1]


def cart_coords(ranks: Any, dims: tuple[int, ...]) -> np.ndarray:
    """Row-major Cartesian coordinates (last dimension fastest), shape ``(len(ranks), ndims)``."""
    return np.stack(np.unravel_index(np.asarray(ranks, dtype=np.int64), dims), axis=-1)


def cart_rank(coords: Any, dims: tuple[int, ...], periods: tuple[bool, ...] | bool = False) -> np.ndarray:
    """Rank of each coordinate row; periodic dims wrap, others give -1 outside the grid."""
    c = np.array(coords, dtype=np.int64, copy=True)
    per = (periods,) * len(dims) if isinstance(periods, bool) else tuple(periods)
    dims_a = np.asarray(dims)
    outside = np.zeros(c.shape[:-1], dtype=bool)
    for i, p in enumerate(per):
        if p:
            c[..., i] %= dims_a[i]
        else:
            outside |= (c[..., i] < 0) | (c[..., i] >= dims_a[i])
    c = np.where(outside[..., None], 0, c)
    ranks = np.ravel_multi_index(tuple(np.moveaxis(c, -1, 0)), dims)
    return np.where(outside, -1, ranks)


@dataclass(frozen=True)
class KCounts:
    """K-model counts of one communication phase (paper 000 §3.1, Eq. 4).

    Attributes
    ----------
    k_inter : int
        Max over nodes of the inter-node messages sent by the node's ranks.
    k_total : int
        K_total by ``rule`` (see :func:`kmodel_counts`).
    k_prime : int
        Ranks per node communicating (k').
    k : float
        ``k_inter / k_total * k_prime``.
    k_total_counted : int
        Max over nodes of all messages sent by the node's ranks.
    max_neighbours : int
        Max over ranks of the messages a rank sends.
    rule : str
        How ``k_total`` was obtained.
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
    config: dict = field(default_factory=dict, compare=False)


K_TOTAL_RULES = ("kprime_x_stencil", "counted", "kprime_x_maxneighbours")


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

    Parameters
    ----------
    src, dst : array_like of int
        Sender and receiver of every message.
    nprocs : int
    ranks_per_node : int
        k'.
    mapping : {"block", "round_robin"}
    stencil : int, optional
        Nominal neighbours per rank of the application (4, 26, 6), needed by
        ``k_total_rule="kprime_x_stencil"``.
    k_total_rule : {"kprime_x_stencil", "counted", "kprime_x_maxneighbours"}
        K_total as k' times the stencil size, as counted (max over nodes), or
        k' times the largest neighbour count of any rank.
    """
    p = _positive("nprocs", nprocs)
    rpn = _positive("ranks_per_node", ranks_per_node)
    if k_total_rule not in K_TOTAL_RULES:
        raise ValueError(f"unknown k_total_rule {k_total_rule!r}; expected one of {K_TOTAL_RULES}")
    s, d = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    nnodes = -(-p // rpn)
    kw = {"nnodes": nnodes} if mapping == "round_robin" else {}
    ns, nd = node_of(s, rpn, mapping, **kw), node_of(d, rpn, mapping, **kw)
    k_inter = int(np.bincount(ns[ns != nd], minlength=nnodes).max(initial=0))
    counted = int(np.bincount(ns, minlength=nnodes).max(initial=0))
    max_nb = int(np.bincount(s, minlength=p).max(initial=0))
    k_prime = min(rpn, p)
    if k_total_rule == "counted":
        k_total = counted
    elif k_total_rule == "kprime_x_maxneighbours":
        k_total = k_prime * max_nb
    else:
        if stencil is None:
            raise ValueError("k_total_rule 'kprime_x_stencil' needs the stencil size")
        k_total = k_prime * int(stencil)
    k = k_inter / k_total * k_prime if k_total else 0.0
    cfg = dict(config or {}) | {"mapping": mapping, "ranks_per_node": rpn, "nprocs": p}
    return KCounts(k_inter, k_total, k_prime, k, counted, max_nb, k_total_rule, cfg)


def _rpn_of(platform: Any, ranks_per_node: int | None) -> int:
    if ranks_per_node is not None:
        return _positive("ranks_per_node", ranks_per_node)
    if isinstance(platform, str):
        from .platforms import load

        platform = load(platform)
    if platform is None:
        raise ValueError("give a platform or ranks_per_node")
    return _positive("ranks_per_node", platform.ranks_per_node)


def kmodel_counts(
    app: Any,
    platform: Any,
    nprocs: int | None = None,
    mapping: str = "block",
    ranks_per_node: int | None = None,
    k_total_rule: str = "kprime_x_stencil",
    **options: Any,
) -> KCounts:
    """K_inter, K_total, k' and k of an application's halo exchange (paper 000 §3.1, Table 5).

    Parameters
    ----------
    app : str or Exchange
        ``"jacobi2d"``, ``"minife"``, ``"minimd"`` or a prepared
        :class:`perfmod.decomposition.Exchange`.
    platform : Platform, str or None
        Supplies ranks per node (k') unless ``ranks_per_node`` is given.
    nprocs : int
        Number of ranks (ignored for an Exchange).
    mapping : {"block", "round_robin"}
    k_total_rule : str
        Default ``"kprime_x_stencil"``: K_total = k' x the application's
        nominal neighbour count (4, 26, 6).  This is what Table 5 lists: it
        gives 8 for Jacobi2D on Bridges, whose 6-rank grid (3 x 2,
        non-periodic) has at most 3 neighbours per rank, and 156 = 6 x 26 for
        MiniFE on Summit, where no node can send 156 messages counted; the
        counted maximum is kept as ``k_total_counted``.
    **options
        Passed to the decomposition (e.g. ``periodic=True``).
    """
    from .decomposition import Exchange, exchange

    ex = app if isinstance(app, Exchange) else exchange(app, _positive("nprocs", nprocs), **options)
    rpn = _rpn_of(platform, ranks_per_node)
    return kmodel_counts_from(
        ex.src, ex.dst, ex.nprocs, rpn, mapping=mapping, stencil=ex.stencil,
        k_total_rule=k_total_rule, config={"app": ex.app, **ex.config},
    )
