"""Rank placement, process grids and the K-model counts (paper 000 §3.1, Table 5).

Paper: Choi et al., ICS 2020 (paper 000) (Choi et al., ICS 2020).

- :func:`node_of`, :func:`socket_of`, :func:`pair_modes`, :func:`mode_names`:
  where ranks live and the communication mode of each (src, dst) pair.
  Block mapping is the default (ranks ``0..r-1`` on node 0, the node's
  sockets filled in order), as ``jsrun`` packs resource sets on Summit and
  Lassen (the paper's Fig. 1: "ranks 0-5 ... mapped to the first node");
  round-robin is an option.
- :func:`dims_create`: ``MPI_Dims_create`` as MPICH computes it (checked
  against ``mpi4py``'s ``MPI.Compute_dims`` in the tests).
- :func:`cart_coords`, :func:`cart_rank`, :func:`cart_shift`: the row-major
  Cartesian topology of ``MPI_Cart_create`` without reordering.
- :func:`kmodel_counts`: K_inter, K_total, k' and k (Eq. 4) of one
  communication phase of an application; :func:`table5_reproduction`
  recomputes Table 5 cell by cell from the configurations in
  :data:`TABLE5_CONFIGS`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from perfmod.core.checks import positive_int

__all__ = [
    "MODES",
    "MAPPINGS",
    "node_of",
    "socket_of",
    "pair_modes",
    "mode_names",
]

#: Communication modes; :func:`pair_modes` returns indices into this tuple.
MODES = ("intra_socket", "inter_socket", "inter_node")
MAPPINGS = ("block", "round_robin")


def _check_mapping(mapping: str, nnodes: int | None) -> None:
    if mapping not in MAPPINGS:
        raise ValueError(f"unknown mapping {mapping!r}; expected one of {MAPPINGS}")
    if mapping == "round_robin":
        if nnodes is None:
            raise ValueError("mapping 'round_robin' needs nnodes (the number of nodes)")
        positive_int("nnodes", nnodes)


def node_of(ranks: Any, ranks_per_node: int, mapping: str = "block", nnodes: int | None = None) -> np.ndarray:
    """Node index of each rank.

    Parameters
    ----------
    ranks : array_like of int
        MPI ranks (``MPI_COMM_WORLD``).
    ranks_per_node : int
        MPI ranks per node (the paper's k').
    mapping : {"block", "round_robin"}
        Block: rank ``r`` on node ``r // ranks_per_node``.  Round-robin: rank
        ``r`` on node ``r % nnodes``.
    nnodes : int, optional
        Number of nodes (required for round-robin).

    Returns
    -------
    numpy.ndarray of int64
        Node index per rank, same shape as ``ranks``.
    """
    rpn = positive_int("ranks_per_node", ranks_per_node)
    _check_mapping(mapping, nnodes)
    r = np.asarray(ranks, dtype=np.int64)
    return r // rpn if mapping == "block" else r % int(nnodes)  # type: ignore[arg-type]


def socket_of(
    ranks: Any, ranks_per_node: int, sockets_per_node: int, mapping: str = "block", nnodes: int | None = None
) -> np.ndarray:
    """Global socket index (``node * sockets_per_node + local socket``) of each rank.

    Within a node, the node-local rank index (``r % ranks_per_node`` for
    block, ``r // nnodes`` for round-robin) fills the sockets in order,
    ``ceil(ranks_per_node / sockets_per_node)`` ranks per socket (one rank
    per GPU, the GPUs split evenly over the sockets: 000 Table 1, §4.1).
    """
    rpn = positive_int("ranks_per_node", ranks_per_node)
    spn = positive_int("sockets_per_node", sockets_per_node)
    rps = math.ceil(rpn / spn)
    r = np.asarray(ranks, dtype=np.int64)
    node = node_of(r, rpn, mapping, nnodes)
    local = r % rpn if mapping == "block" else r // int(nnodes)  # type: ignore[arg-type]
    return node * spn + local // rps


def pair_modes(
    src: Any,
    dst: Any,
    ranks_per_node: int,
    sockets_per_node: int,
    mapping: str = "block",
    nnodes: int | None = None,
) -> np.ndarray:
    """Mode code of each (src, dst) pair: 0 intra-socket, 1 inter-socket, 2 inter-node.

    The codes index :data:`MODES`; :func:`mode_names` turns them into names.
    """
    s, d = np.asarray(src), np.asarray(dst)
    if s.shape != d.shape:
        raise ValueError(f"src and dst differ in shape: {s.shape} vs {d.shape}")
    spn = positive_int("sockets_per_node", sockets_per_node)
    out = np.empty(s.shape, dtype=np.int8)
    flat, sf, df = out.reshape(-1), s.reshape(-1), d.reshape(-1)
    if flat.size >= _TABLE_PAIRS and sf.dtype.kind in "iu" and df.dtype.kind in "iu":
        lo, hi = min(int(sf.min()), int(df.min())), max(int(sf.max()), int(df.max()))
        if lo >= 0 and hi < min(flat.size, _TABLE_RANKS):  # each rank's socket and node looked up in tables
            ranks = np.arange(hi + 1)
            sock = socket_of(ranks, ranks_per_node, spn, mapping, nnodes).astype(np.int32)
            node = node_of(ranks, ranks_per_node, mapping, nnodes).astype(np.int32)
            for a in range(0, flat.size, _PAIR_CHUNK):
                ps, pd = sf[a:a + _PAIR_CHUNK], df[a:a + _PAIR_CHUNK]
                flat[a:a + _PAIR_CHUNK] = np.where(sock[ps] == sock[pd], 0, np.where(node[ps] == node[pd], 1, 2))
            return out
    for a in range(0, flat.size, _PAIR_CHUNK):  # in chunks: the temporaries stay small for millions of pairs
        ss = socket_of(sf[a:a + _PAIR_CHUNK], ranks_per_node, spn, mapping, nnodes)
        sd = socket_of(df[a:a + _PAIR_CHUNK], ranks_per_node, spn, mapping, nnodes)
        # a socket index is node * sockets_per_node + local socket: the node is the quotient
        flat[a:a + _PAIR_CHUNK] = np.where(ss // spn != sd // spn, 2, np.where(ss != sd, 1, 0))
    return out


#: pairs per chunk of :func:`pair_modes`
_PAIR_CHUNK = 1 << 18
#: from this many pairs, when the ranks are at most this many and fewer than the pairs, :func:`pair_modes` looks
#: each rank's socket and node up in tables (of 8 bytes per rank) instead of dividing every pair's ranks (NumPy
#: gathers: 1.3-1.5x the time of a numba pass over the tables, measured on 0.5-10 M pairs, without importing numba
#: into a GOAL job that needs none)
_TABLE_PAIRS, _TABLE_RANKS = 1 << 12, 1 << 28


def mode_names(codes: Any) -> np.ndarray:
    """Names (:data:`MODES`) of mode codes from :func:`pair_modes`."""
    return np.asarray(MODES, dtype=object)[np.asarray(codes, dtype=np.int64)]


