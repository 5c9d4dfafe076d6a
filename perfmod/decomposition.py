"""Domain decompositions and halo-exchange message lists of the proxies (paper 000 §4.2).

Each constructor returns an :class:`Exchange`: one communication phase as a
flat list of messages (sender, receiver, bytes).  Self-messages are never
listed.

Jacobi2D (000 §3.1 Listing 1, §4.2)
    ``MPI_Dims_create(P, 2)``, non-periodic Cartesian communicator without
    reordering (row-major ranks, last dimension fastest), 4 neighbours; every
    rank holds a ``block x block`` block of doubles, so a face message is
    ``block`` doubles (16,384 doubles = 131,072 B at the paper's size).
MiniFE (000 §4.2; Choi's fork github.com/minitu/miniFE, ``cuda/src/main.cu``
    and ``cuda/utils/BoxPartition.cpp``, commit "Change RCB to start with X
    axis, X->Y->Z order")
    ``box_partition(0, P, axis=0, global_box)``: the rank range is halved
    (lower half ``P // 2`` ranks, upper half the rest), the box axis cut in
    proportion (upper part ``int(n * np_upp / np)`` cells), and the next
    level cuts axis ``(axis + 1) % 3`` (upstream miniFE starts at z and uses
    ``(axis + 2) % 3``).  For a power-of-two P the boxes form a regular grid
    and the default global box is ``box`` times the pieces per axis (weak
    scaling, ``box^3`` cells per rank; 256 ranks: 1600 x 1600 x 800, grid
    8 x 8 x 4).  Other P need an explicit ``global_box``.  A rank exchanges
    with every box touching its own (up to 26, non-periodic); a message holds
    the shared points: the overlap extent in each dimension, 1 where the
    boxes only touch, i.e. ``box^2`` doubles across a face, ``box`` along an
    edge, 1 at a corner (paper: 1 double at corners, 40,000 at faces).
MiniMD (000 §4.2; Choi's fork github.com/minitu/miniMD ``kokkos/comm.cpp``)
    Periodic 3D grid from miniMD's ``procs2grid`` (first factorization, x
    slowest loop, with the smallest subdomain surface for the global box),
    ``MPI_Cart_create`` without reordering (z fastest).  The default global
    box is ``cells`` unit cells times ``MPI_Dims_create(P, 3)`` per axis
    (weak scaling with cubic ``cells^3`` subdomains, x longest as in the
    fork's scripts, e.g. 384 x 192 x 192); for 1,024 ranks procs2grid then
    returns (16, 8, 8), the dims_create grid (a cubic global box would give
    (8, 8, 16)).  Forward communication, one swap per direction (need = 1):
    border atoms are those within ``cutoff + skin = 2.5 + 0.3`` sigma of the
    face, FCC lattice with 4 atoms per unit cell at reduced density 0.8442
    (lattice constant ``(4/0.8442)^(1/3)`` sigma), 3 doubles per atom; x is
    exchanged first, then y and z including the ghosts already received (the
    slabs grow by ``2 r`` per earlier dimension).  Atom counts are the
    expected ``density x slab volume``, rounded.  In a periodic dimension of
    size 2 both messages go to the same rank (miniMD still sends two); in a
    dimension of size 1 miniMD copies locally (no message).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .topology import cart_coords, cart_rank, dims_create

__all__ = [
    "Exchange",
    "APPS",
    "jacobi2d",
    "minife",
    "minife_boxes",
    "minimd",
    "minimd_procgrid",
    "minimd_border_atoms",
    "exchange",
]

DOUBLE = 8  # bytes
MINIMD_DENSITY = 0.8442  # reduced units, in.lj.miniMD
MINIMD_CUTNEIGH = 2.5 + 0.3  # cutoff + skin, sigma


@dataclass(frozen=True)
class Exchange:
    """One communication phase as a flat message list.

    Attributes
    ----------
    app : str
    nprocs : int
    src, dst : numpy.ndarray of int64
        Sender and receiver of each message.
    nbytes : numpy.ndarray of int64
        Message sizes in bytes.
    max_neighbours : int
        The application's neighbour count of a rank in the interior of the
        decomposition (4, 26, 6; paper 000 §4.2 "a maximum of 26 neighbors",
        "at most six").  The largest number actually sent by one rank in this
        exchange is :attr:`max_sent`.
    config : dict
        Grid, periodicity and sizes used.
    """

    app: str
    nprocs: int
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    max_neighbours: int
    config: dict = field(default_factory=dict, compare=False)

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
    def max_sent(self) -> int:
        """Largest number of messages one rank sends in this exchange."""
        return int(np.bincount(self.src, minlength=self.nprocs).max(initial=0))


def _check_nprocs(nprocs: Any) -> int:
    if isinstance(nprocs, bool) or not isinstance(nprocs, (int, np.integer)) or nprocs < 1:
        raise ValueError(f"nprocs must be a positive integer, got {nprocs!r}")
    return int(nprocs)


def _stencil_exchange(
    app: str, dims: tuple[int, ...], offsets: np.ndarray, sizes: np.ndarray, periodic: bool, max_nb: int, config: dict
) -> Exchange:
    p = math.prod(dims)
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
    return Exchange(app, p, cat(src), cat(dst), cat(nb), max_nb, {"dims": list(dims), "periodic": periodic} | config)


def jacobi2d(nprocs: int, block: int = 16384, periodic: bool = False, dims: tuple[int, int] | None = None) -> Exchange:
    """Jacobi2D halo exchange (000 §4.2): 4 neighbours, ``block`` doubles per face message.

    Parameters
    ----------
    nprocs : int
    block : int
        Cells per side of a rank's block (face message ``8 * block`` bytes).
    periodic : bool
        Periodic grid (the §3.1 example) or not (the proxy, Table 5).
    dims : (int, int), optional
        Process grid; default ``MPI_Dims_create(nprocs, 2)``.
    """
    p = _check_nprocs(nprocs)
    dims = tuple(dims) if dims else dims_create(p, 2)
    if math.prod(dims) != p:
        raise ValueError(f"dims {dims} do not multiply to nprocs={p}")
    offsets = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])
    sizes = np.full(4, block * DOUBLE)
    return _stencil_exchange("jacobi2d", dims, offsets, sizes, periodic, 4, {"block": block})


def minife_boxes(nprocs: int, global_box: tuple[int, int, int], first_axis: int = 0, axis_step: int = 1) -> np.ndarray:
    """miniFE's ``box_partition``: half-open boxes ``[lo, hi)`` per rank, shape ``(P, 3, 2)``, cells.

    ``first_axis=0, axis_step=1`` is Choi's fork (x, y, z); upstream miniFE is
    ``first_axis=2, axis_step=2`` (z, y, x).
    """
    p = _check_nprocs(nprocs)
    out = np.zeros((p, 3, 2), dtype=np.int64)
    stack = [(0, p, first_axis, np.array([[0, n] for n in global_box], dtype=np.int64))]
    while stack:
        ip, up, axis, box = stack.pop()
        np_ = up - ip
        if np_ == 1:
            out[ip] = box
            continue
        n = int(box[axis, 1] - box[axis, 0])
        np_low = np_ // 2
        np_upp = np_ - np_low
        n_upp = int(float(n) * (float(np_upp) / float(np_)))
        n_low = n - n_upp
        nxt = (axis + axis_step) % 3
        low, upp = box.copy(), box.copy()
        low[axis, 1] = low[axis, 0] + n_low
        upp[axis, 0] = box[axis, 0] + n_low
        upp[axis, 1] = upp[axis, 0] + n_upp
        stack.append((ip, ip + np_low, nxt, low))
        stack.append((ip + np_low, up, nxt, upp))
    return out


def _touching_pairs(boxes: np.ndarray, pairwise: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All ordered pairs of distinct boxes whose closed boxes intersect, with shared points.

    Regular grids use a grid lookup unless ``pairwise`` (the general O(P^2) test, chunked).
    """
    p = len(boxes)
    lo, hi = boxes[:, :, 0], boxes[:, :, 1]
    uniq = [np.unique(lo[:, d]) for d in range(3)]
    grid = tuple(len(u) for u in uniq)
    regular = math.prod(grid) == p and all(len(np.unique(boxes[:, d, :], axis=0)) == grid[d] for d in range(3))
    if regular and not pairwise:
        # regular grid: look neighbours up by grid index
        coords = np.stack([np.searchsorted(uniq[d], lo[:, d]) for d in range(3)], axis=1)
        lookup = np.full(grid, -1, dtype=np.int64)
        lookup[tuple(coords.T)] = np.arange(p)
        src, dst = [], []
        for off in itertools.product((-1, 0, 1), repeat=3):
            if not any(off):
                continue
            c = coords + np.asarray(off)
            ok = np.all((c >= 0) & (c < np.asarray(grid)), axis=1)
            src.append(np.nonzero(ok)[0])
            dst.append(lookup[tuple(c[ok].T)])
        s, d = np.concatenate(src), np.concatenate(dst)
    else:  # general boxes: pairwise test in chunks
        src, dst = [], []
        step = max(1, 2_000_000 // p)
        for a in range(0, p, step):
            b = slice(a, min(p, a + step))
            ok = np.all((lo[b, None, :] <= hi[None, :, :]) & (lo[None, :, :] <= hi[b, None, :]), axis=2)
            i, j = np.nonzero(ok)
            i = i + a
            keep = i != j
            src.append(i[keep])
            dst.append(j[keep])
        s, d = np.concatenate(src), np.concatenate(dst)
    overlap = np.minimum(hi[s], hi[d]) - np.maximum(lo[s], lo[d])
    points = np.prod(np.maximum(overlap, 1), axis=1)
    return s, d, points


def minife(
    nprocs: int, box: int = 200, periodic: bool = False, global_box: tuple[int, int, int] | None = None
) -> Exchange:
    """MiniFE halo exchange by recursive coordinate bisection (x, y, z cyclic), up to 26 neighbours.

    Parameters
    ----------
    nprocs : int
    box : int
        Cells per side of a rank's box in weak scaling (paper: 200).
    periodic : bool
        Must be False: miniFE's mesh is not periodic.
    global_box : (int, int, int), optional
        Global cells (nx, ny, nz), as ``-nx -ny -nz``; required unless
        ``nprocs`` is a power of two (then ``box`` times the pieces per axis).
    """
    p = _check_nprocs(nprocs)
    if periodic:
        raise ValueError("minife: periodic=True is not supported (miniFE's mesh has no periodic boundary)")
    if global_box is None:
        if p & (p - 1):
            raise ValueError(f"minife: nprocs must be a power of two unless global_box is given, got {p}")
        m = p.bit_length() - 1
        global_box = tuple(box << sum(1 for lv in range(m) if lv % 3 == d) for d in range(3))
    boxes = minife_boxes(p, tuple(int(n) for n in global_box))
    if np.any(boxes[:, :, 1] <= boxes[:, :, 0]):
        raise ValueError(f"minife: global_box {tuple(global_box)} too small for {p} ranks")
    s, d, points = _touching_pairs(boxes)
    grid = [len(np.unique(boxes[:, k, 0])) for k in range(3)]
    return Exchange(
        "minife",
        p,
        s,
        d,
        points * DOUBLE,
        26,
        {"grid": grid, "global_box": list(global_box), "periodic": False, "box": box, "split_order": "x,y,z"},
    )


def minimd_procgrid(nprocs: int, global_box: tuple[float, float, float]) -> tuple[int, int, int]:
    """miniMD's ``procs2grid``: the first (ipx, ipy, ipz) with the least subdomain surface."""
    p = _check_nprocs(nprocs)
    lx, ly, lz = (float(v) for v in global_box)
    area = (lx * ly, lx * lz, ly * lz)
    best, grid = 2.0 * sum(area), (0, 0, 0)
    for ipx in range(1, p + 1):
        if p % ipx:
            continue
        rem = p // ipx
        for ipy in range(1, rem + 1):
            if rem % ipy:
                continue
            ipz = rem // ipy
            surf = area[0] / ipx / ipy + area[1] / ipx / ipz + area[2] / ipy / ipz
            if surf < best:
                best, grid = surf, (ipx, ipy, ipz)
    return grid


def minimd_border_atoms(
    sides: tuple[float, float, float] | int = 64, density: float = MINIMD_DENSITY, cutneigh: float = MINIMD_CUTNEIGH
) -> tuple[int, int, int]:
    """Atoms sent per forward-communication message in x, y and z.

    Parameters
    ----------
    sides : int or (float, float, float)
        Subdomain size in FCC unit cells (an int means a cube).
    density : float
        Reduced number density (atoms / sigma^3).
    cutneigh : float
        Force cutoff plus neighbour skin, sigma.
    """
    a = (4.0 / density) ** (1.0 / 3.0)
    lx, ly, lz = (np.full(3, float(sides)) if np.isscalar(sides) else np.asarray(sides, float)) * a
    r = cutneigh
    if min(lx, ly, lz) < r:
        raise ValueError("minimd: subdomain thinner than cutoff + skin (miniMD would need >1 swap per direction)")
    vols = (ly * lz * r, (lx + 2 * r) * lz * r, (lx + 2 * r) * (ly + 2 * r) * r)
    return tuple(int(round(density * v)) for v in vols)


def minimd(
    nprocs: int,
    cells: int = 64,
    periodic: bool = True,
    procgrid: tuple[int, int, int] | None = None,
    global_box: tuple[int, int, int] | None = None,
) -> Exchange:
    """MiniMD forward communication (000 §4.2): 6 neighbours on a periodic 3D grid, 3 doubles per atom.

    Parameters
    ----------
    nprocs : int
    cells : int
        FCC unit cells per side of a rank's subdomain (64: 4 x 64^3 =
        1,048,576 atoms, "one million").
    periodic : bool
        miniMD's box is periodic.
    procgrid : (int, int, int), optional
        Process grid; default miniMD's ``procs2grid`` for ``global_box``.
    global_box : (int, int, int), optional
        Global unit cells (``-nx -ny -nz``); default ``cells * dims_create(P, 3)``.
    """
    p = _check_nprocs(nprocs)
    if global_box is None:
        global_box = tuple(cells * d for d in dims_create(p, 3))
    dims = tuple(procgrid) if procgrid else minimd_procgrid(p, global_box)
    if math.prod(dims) != p:
        raise ValueError(f"procgrid {dims} does not multiply to nprocs={p}")
    atoms = minimd_border_atoms(tuple(g / n for g, n in zip(global_box, dims, strict=True)))
    offsets = np.array([[-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]])
    sizes = np.repeat(np.array(atoms, dtype=np.int64) * 3 * DOUBLE, 2)
    return _stencil_exchange(
        "minimd",
        dims,
        offsets,
        sizes,
        periodic,
        6,
        {"cells": cells, "global_box": list(global_box), "border_atoms": list(atoms)},
    )


APPS = {"jacobi2d": jacobi2d, "minife": minife, "minimd": minimd}


def exchange(app: str, nprocs: int, **options: Any) -> Exchange:
    """The halo exchange of ``app`` (``"jacobi2d"``, ``"minife"``, ``"minimd"``) at ``nprocs`` ranks."""
    fn = APPS.get(str(app).lower())
    if fn is None:
        raise ValueError(f"unknown app {app!r}; known apps: {sorted(APPS)}")
    return fn(nprocs, **options)
