"""Structured hexahedral mesh, decompositions and edge-cuts of the Sedov proxy (paper 001 §5).

The mesh has ``nx * ny * nz`` hexahedral elements and ``(nx+1)(ny+1)(nz+1)``
nodes; every element references its 8 corner nodes and nodes are shared by
up to 8 elements (paper 001 §5: "Each hexahedron (element) has 8 corner
nodes, with nodes shared between neighboring elements").  Ids are global and
x-fastest: node ``(i, j, k)`` has id ``i + (nx+1) * (j + (ny+1) * k)``,
element ``(i, j, k)`` has id ``i + nx * (j + ny * k)``.  Corner order is the
usual hexahedron order (LULESH/VTK): the bottom face (z = 0) counter-clockwise,
then the top face.

Elements and nodes are decomposed *differently* (§5: "Elements and nodes had
different decompositions across GPUs, which created peer memory accesses"):
elements in contiguous blocks of ids (slabs along z), nodes in blocks of
planes along a chosen axis.  :func:`edge_cut` is the auxiliary function of
§5.1 that counts, per element partition, the element-node references whose
node lives in another partition (the peer accesses, X3; at process level the
inter-process edges, X4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmod.measure.proxies.gol import row_block

__all__ = ["CORNERS", "HexMesh", "element_blocks", "split_sorted", "node_blocks", "edge_cut", "edge_cut_max"]

#: local (di, dj, dk) offsets of the 8 corners of a hexahedron, LULESH/VTK order
CORNERS = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                    [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], dtype=np.int64)

AXES = {"x": 0, "y": 1, "z": 2}


def _positive(name: str, value: int) -> int:
    if int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class HexMesh:
    """A box of ``nx x ny x nz`` hexahedra of edge lengths ``lengths / (nx, ny, nz)`` (m)."""

    nx: int
    ny: int
    nz: int
    lengths: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        for name in ("nx", "ny", "nz"):
            _positive(name, getattr(self, name))

    @property
    def n_elements(self) -> int:
        """Number of elements."""
        return self.nx * self.ny * self.nz

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return (self.nx + 1) * (self.ny + 1) * (self.nz + 1)

    def element_ijk(self, elems: np.ndarray | None = None) -> np.ndarray:
        """Integer (i, j, k) of element ids ``elems`` (all by default), shape ``(n, 3)``."""
        e = np.arange(self.n_elements) if elems is None else np.asarray(elems, dtype=np.int64)
        return np.stack([e % self.nx, (e // self.nx) % self.ny, e // (self.nx * self.ny)], axis=1)

    def node_ijk(self, nodes: np.ndarray | None = None) -> np.ndarray:
        """Integer (i, j, k) of node ids ``nodes`` (all by default), shape ``(n, 3)``."""
        n = np.arange(self.n_nodes) if nodes is None else np.asarray(nodes, dtype=np.int64)
        mx, my = self.nx + 1, self.ny + 1
        return np.stack([n % mx, (n // mx) % my, n // (mx * my)], axis=1)

    def node_id(self, ijk: np.ndarray) -> np.ndarray:
        """Node ids of integer coordinates ``ijk`` (last axis of length 3)."""
        ijk = np.asarray(ijk, dtype=np.int64)
        return ijk[..., 0] + (self.nx + 1) * (ijk[..., 1] + (self.ny + 1) * ijk[..., 2])

    def connectivity(self, elems: np.ndarray | None = None) -> np.ndarray:
        """Global node ids of the 8 corners of elements ``elems`` (all by default), shape ``(n, 8)``."""
        return self.node_id(self.element_ijk(elems)[:, None, :] + CORNERS[None, :, :])

    def coordinates(self, nodes: np.ndarray | None = None) -> np.ndarray:
        """Initial node positions (m), shape ``(n, 3)``."""
        h = np.asarray(self.lengths, dtype=float) / np.array([self.nx, self.ny, self.nz])
        return self.node_ijk(nodes) * h


def element_blocks(mesh: HexMesh, parts: int) -> np.ndarray:
    """Owner of every element: ``parts`` contiguous blocks of element ids (slabs along z)."""
    _positive("parts", parts)
    owner = np.empty(mesh.n_elements, dtype=np.int64)
    for p in range(parts):
        a, b = row_block(mesh.n_elements, parts, p)
        owner[a:b] = p
    return owner


def split_sorted(keys: np.ndarray, parts: int) -> np.ndarray:
    """Owner of every item: ``parts`` near-equal blocks of the items sorted (stably) by ``keys``."""
    _positive("parts", parts)
    keys = np.asarray(keys)
    if keys.shape[0] < parts:
        raise ValueError(f"{keys.shape[0]} items cannot be split over {parts} partitions")
    order = np.argsort(keys, kind="stable")
    owner = np.empty(keys.shape[0], dtype=np.int64)
    for p in range(parts):
        a, b = row_block(keys.shape[0], parts, p)
        owner[order[a:b]] = p
    return owner


def node_blocks(mesh: HexMesh, parts: int, axis: str = "z", nodes: np.ndarray | None = None) -> np.ndarray:
    """Owner of every node: ``parts`` near-equal blocks of nodes ordered along ``axis`` ("x", "y", "z").

    Nodes are sorted by their coordinate index along ``axis`` (ties by id), so
    with ``axis="z"`` the blocks are contiguous id ranges of the same size as
    the element blocks would be for nodes; they never coincide with the
    element blocks (a slab of element planes touches one more node plane), and
    with ``axis="x"`` they cut across every element slab.  ``nodes`` restricts
    the split to a subset of node ids (the local nodes of one process).
    """
    if axis not in AXES:
        raise ValueError(f"node split axis must be one of {sorted(AXES)}, got {axis!r}")
    return split_sorted(mesh.node_ijk(nodes)[:, AXES[axis]], parts)


def edge_cut(conn: np.ndarray, elem_owner: np.ndarray, node_owner: np.ndarray,
             parts: int | None = None) -> np.ndarray:
    """Element-node references that cross partitions, per element partition.

    Parameters
    ----------
    conn : array of int, shape (n_elements, 8)
        Node ids of each element's corners.
    elem_owner : array of int, shape (n_elements,)
        Partition of each element.
    node_owner : array of int, shape (n_nodes,)
        Partition of each node.
    parts : int, optional
        Number of partitions (default: largest owner + 1).

    Returns
    -------
    numpy.ndarray of int, shape (parts,)
        For partition p, the number of (element in p, corner node not in p)
        references: the peer-memory accesses one sweep over p's elements makes
        (paper 001 §5.1, X3; across processes, X4 of §5.2.2).
    """
    conn = np.asarray(conn)
    elem_owner = np.asarray(elem_owner)
    node_owner = np.asarray(node_owner)
    if conn.ndim != 2 or conn.shape[0] != elem_owner.shape[0]:
        raise ValueError(f"conn has shape {conn.shape}; expected ({elem_owner.shape[0]}, corners)")
    if conn.size and (conn.min() < 0 or conn.max() >= node_owner.shape[0]):
        raise ValueError(f"conn references node ids outside [0, {node_owner.shape[0]})")
    nparts = int(parts if parts is not None else max(elem_owner.max(initial=-1), node_owner.max(initial=-1)) + 1)
    remote = (node_owner[conn] != elem_owner[:, None]).sum(axis=1)
    return np.bincount(elem_owner, weights=remote, minlength=nparts).astype(np.int64)


def edge_cut_max(mesh: HexMesh, parts: int, axis: str = "z") -> int:
    """Largest edge-cut over partitions of the default decompositions of ``mesh`` (X3 of §5.1)."""
    return int(edge_cut(mesh.connectivity(), element_blocks(mesh, parts), node_blocks(mesh, parts, axis),
                        parts).max())
