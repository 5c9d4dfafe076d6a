"""Domain decompositions and halo-exchange message lists of the proxies (paper 000 §4.2).

Each constructor returns an :class:`Exchange`: one communication phase as a
flat list of messages (sender, receiver, bytes).

Jacobi2D
    ``MPI_Dims_create(P, 2)``, non-periodic Cartesian communicator without
    reordering (row-major ranks), 4 neighbours, a ``block x block`` block of
    doubles per rank, so a face message is ``block`` doubles
    (16384 doubles = 131072 B at the paper's size).
MiniFE
    Recursive bisection of the global box as in Choi's miniFE fork: the rank
    range is halved at every level and the box split in x, then y, then z,
    cyclically, so rank bits (most significant first) pick the half at each
    level.  Power-of-two rank counts only.  A rank exchanges with all boxes
    touching it (up to 26, non-periodic); the message to a neighbour holds
    the shared points: ``box^2`` doubles across a face, ``box`` along an
    edge, 1 at a corner (paper: 1 double at corners, 40,000 at faces).
MiniMD
    A periodic 3D grid (``MPI_Dims_create(P, 3)``, row-major; for 1,024 ranks
    (16, 8, 8), which is also the grid miniMD's surface-minimizing choice
    gives for a global box of those proportions), 6 neighbours, a subdomain
    of ``cells^3`` FCC unit cells (4 atoms per cell: 64^3 cells = 1,048,576
    atoms).  Border atoms are those within ``cutoff + skin = 2.8`` sigma of
    a face at reduced density 0.8442 (lattice constant ``(4/0.8442)^(1/3)``);
    the forward exchange sends 3 doubles per atom, x first, then y and z
    including the ghosts already received (so the slabs grow by ``2 r``
    per direction).  Self-messages (a dimension of size 1) are dropped; in a
    periodic dimension of size 2 the two messages go to the same rank.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .topology import cart_coords, cart_rank, dims_create

__all__ = ["Exchange", "APPS", "jacobi2d", "minife", "minimd", "exchange"]

DOUBLE = 8


@dataclass(frozen=True)
class Exchange:
    """One communication phase as a message list.

    Attributes
    ----------
    app : str
    nprocs : int
    src, dst : numpy.ndarray of int
        Sender and receiver of each message.
    nbytes : numpy.ndarray of int
        Message sizes in bytes.
    stencil : int
        Nominal neighbours per rank of the application (4, 26, 6).
    config : dict
        Grid, periodicity and sizes used.
    """

    app: str
    nprocs: int
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    stencil: int
    config: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.src)

    def neighbours(self, rank: int) -> dict[int, int]:
        """``{destination: bytes}`` of the messages ``rank`` sends (summed per destination)."""
        sel = self.src == rank
        out: dict[int, int] = {}
        for d, n in zip(self.dst[sel].tolist(), self.nbytes[sel].tolist(), strict=True):
            out[d] = out.get(d, 0) + n
        return out

    @property
    def max_neighbours(self) -> int:
        """Largest number of messages any rank sends."""
        return int(np.bincount(self.src, minlength=self.nprocs).max(initial=0))


def _check_nprocs(nprocs: int) -> int:
    if isinstance(nprocs, bool) or int(nprocs) != nprocs or nprocs < 1:
        raise ValueError(f"nprocs must be a positive integer, got {nprocs!r}")
    return int(nprocs)


def _stencil_exchange(
    app: str, dims: tuple[int, ...], offsets: np.ndarray, sizes: np.ndarray, periodic: bool, stencil: int,
    config: dict,
) -> Exchange:
    p = int(np.prod(dims))
    ranks = np.arange(p)
    coords = cart_coords(ranks, dims)
    src, dst, nb = [], [], []
    for off, size in zip(offsets, sizes, strict=True):
        nbr = cart_rank(coords + off, dims, periodic)
        keep = (nbr >= 0) & (nbr != ranks)
        src.append(ranks[keep])
        dst.append(nbr[keep])
        nb.append(np.full(int(keep.sum()), size, dtype=np.int64))
    cat = np.concatenate
    return Exchange(app, p, cat(src), cat(dst), cat(nb), stencil,
                    {"dims": list(dims), "periodic": periodic} | config)


def jacobi2d(nprocs: int, block: int = 16384, periodic: bool = False, dims: tuple[int, int] | None = None) -> Exchange:
    """Jacobi2D halo exchange: 4 neighbours, ``block`` doubles per face message."""
    p = _check_nprocs(nprocs)
    dims = tuple(dims) if dims else dims_create(p, 2)
    if int(np.prod(dims)) != p:
        raise ValueError(f"dims {dims} do not multiply to nprocs={p}")
    offsets = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])
    sizes = np.full(4, block * DOUBLE)
    return _stencil_exchange("jacobi2d", dims, offsets, sizes, periodic, 4, {"block": block})


def _bisection_coords(nprocs: int) -> tuple[np.ndarray, tuple[int, int, int]]:
    m = nprocs.bit_length() - 1
    ranks = np.arange(nprocs)
    coords = np.zeros((nprocs, 3), dtype=np.int64)
    splits = [0, 0, 0]
    for level in range(m):
        d = level % 3
        bit = (ranks >> (m - 1 - level)) & 1
        coords[:, d] = coords[:, d] * 2 + bit
        splits[d] += 1
    return coords, (1 << splits[0], 1 << splits[1], 1 << splits[2])


def minife(nprocs: int, box: int = 200, periodic: bool = False) -> Exchange:
    """MiniFE halo exchange by recursive bisection (x, y, z cyclic), up to 26 neighbours."""
    p = _check_nprocs(nprocs)
    if p & (p - 1):
        raise ValueError(f"minife: recursive bisection needs a power-of-two nprocs, got {p}")
    coords, grid = _bisection_coords(p)
    # box index of each rank -> rank lookup
    lookup = np.empty(grid, dtype=np.int64)
    lookup[tuple(coords.T)] = np.arange(p)
    offsets = np.array([o for o in itertools.product((-1, 0, 1), repeat=3) if any(o)])
    zeros = (offsets == 0).sum(axis=1)
    sizes = (box**zeros) * DOUBLE  # face box^2, edge box, corner 1 double
    ranks = np.arange(p)
    src, dst, nb = [], [], []
    g = np.asarray(grid)
    for off, size in zip(offsets, sizes, strict=True):
        c = coords + off
        if periodic:
            c %= g
            ok = np.ones(p, dtype=bool)
        else:
            ok = np.all((c >= 0) & (c < g), axis=1)
        nbr = np.full(p, -1)
        nbr[ok] = lookup[tuple(c[ok].T)]
        keep = ok & (nbr != ranks)
        src.append(ranks[keep])
        dst.append(nbr[keep])
        nb.append(np.full(int(keep.sum()), size, dtype=np.int64))
    cat = np.concatenate
    return Exchange("minife", p, cat(src), cat(dst), cat(nb), 26,
                    {"grid": list(grid), "periodic": periodic, "box": box, "split_order": "x,y,z"})


def minimd_border_atoms(cells: int = 64, density: float = 0.8442, cutneigh: float = 2.8) -> tuple[int, int, int]:
    """Atoms sent per message in x, y and z (forward exchange; later dims carry earlier ghosts)."""
    a = (4.0 / density) ** (1.0 / 3.0)
    side = cells * a
    r = cutneigh
    vols = (side * side * r, (side + 2 * r) * side * r, (side + 2 * r) ** 2 * r)
    return tuple(int(round(density * v)) for v in vols)


def minimd(nprocs: int, cells: int = 64, periodic: bool = True, dims: tuple[int, int, int] | None = None) -> Exchange:
    """MiniMD forward communication: 6 neighbours on a periodic 3D grid, 3 doubles per border atom."""
    p = _check_nprocs(nprocs)
    dims = tuple(dims) if dims else dims_create(p, 3)
    if int(np.prod(dims)) != p:
        raise ValueError(f"dims {dims} do not multiply to nprocs={p}")
    atoms = minimd_border_atoms(cells)
    offsets = np.array([[-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]])
    sizes = np.repeat(np.array(atoms, dtype=np.int64) * 3 * DOUBLE, 2)
    return _stencil_exchange("minimd", dims, offsets, sizes, periodic, 6,
                             {"cells": cells, "border_atoms": list(atoms)})


APPS = {"jacobi2d": jacobi2d, "minife": minife, "minimd": minimd}


def exchange(app: str, nprocs: int, **options: Any) -> Exchange:
    """The halo exchange of ``app`` (``"jacobi2d"``, ``"minife"``, ``"minimd"``) at ``nprocs`` ranks."""
    try:
        fn = APPS[app.lower()]
    except KeyError:
        raise ValueError(f"unknown app {app!r}; known: {sorted(APPS)}") from None
    return fn(nprocs, **options)
