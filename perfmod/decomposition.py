"""Domain decompositions and halo-exchange message lists of the proxies (paper 000 §4.2).

Paper: ``shared/papers/000_95042cffe07dd549.txt``.  Each constructor returns
an :class:`Exchange`: one communication phase as a flat list of messages
(sender, receiver, bytes), from which :func:`perfmod.topology.kmodel_counts`
counts K_inter and K_total.  The rules come from the proxies' own code in
the versions the paper's author used (github.com/minitu/jacobi2d,
minitu/miniFE, minitu/miniMD), read for facts only, and were checked against
the DUMPI traces stored there (see each function).

Jacobi2D (:func:`jacobi2d`)
    ``MPI_Dims_create(P, 2)``, ``MPI_Cart_create`` non-periodic, no reorder;
    ``MPI_Cart_shift`` along dim 0 (west/east) and dim 1 (north/south): up
    to 4 neighbours; a face message is one block edge, ``block`` doubles
    (16,384 doubles = 131,072 B at the paper's size).
MiniFE (:func:`minife`)
    miniFE's recursive coordinate bisection of the global element box
    (x, then y, then z, cyclically; any rank count), node ownership and the
    27-point matrix graph give up to 26 neighbours and the message sizes:
    1 double at a corner, ``box`` along an edge, ``box**2`` across a face
    (one more node per dimension at the global upper boundary).
MiniMD (:func:`minimd`)
    miniMD's surface-minimizing processor grid, periodic, six swaps (two per
    dimension) of border atoms of an FCC lattice counted plane by plane.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .topology import cart_coords, cart_shift, dims_create, positive_int

__all__ = [
    "DOUBLE",
    "Exchange",
    "APPS",
    "jacobi2d",
    "minife",
    "minife_global_box",
    "box_partition",
    "minimd",
    "minimd_procgrid",
    "minimd_border_atoms",
    "fcc_lattice_constant",
    "exchange",
]

DOUBLE = 8  # bytes per double


@dataclass(frozen=True)
class Exchange:
    """One communication phase as a message list.

    Attributes
    ----------
    app : str
        Application name.
    nprocs : int
        Number of ranks.
    src, dst : numpy.ndarray of int64
        Sender and receiver of each message (sorted by sender, in the
        application's send order per sender).
    nbytes : numpy.ndarray of int64
        Message sizes (B).
    stencil : int
        The application's maximum neighbour count per rank (4, 26, 6).
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

    def messages(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        """Destinations and sizes (B) of the messages ``rank`` sends, in send order."""
        sel = self.src == rank
        return self.dst[sel], self.nbytes[sel]

    def neighbours(self, rank: int) -> dict[int, int]:
        """``{destination: bytes}`` of ``rank``'s messages (summed per destination)."""
        out: dict[int, int] = {}
        for d, n in zip(*(a.tolist() for a in self.messages(rank)), strict=True):
            out[d] = out.get(d, 0) + n
        return out

    def messages_per_rank(self) -> np.ndarray:
        """Number of messages each rank sends, shape ``(nprocs,)``."""
        return np.bincount(self.src, minlength=self.nprocs)

    @property
    def max_neighbours(self) -> int:
        """Largest number of messages any rank sends."""
        return int(self.messages_per_rank().max(initial=0))

    def to_frame(self) -> Any:
        """The messages as a pandas DataFrame (``src``, ``dst``, ``nbytes``)."""
        import pandas as pd

        return pd.DataFrame({"src": self.src, "dst": self.dst, "nbytes": self.nbytes})


def _check_nprocs(nprocs: Any) -> int:
    return positive_int("nprocs", nprocs)


def _grid(name: str, dims: Any, p: int, ndims: int) -> tuple[int, ...]:
    if dims is None:
        return dims_create(p, ndims)
    dims = tuple(int(x) for x in dims)
    if len(dims) != ndims or min(dims) < 1 or int(np.prod(dims)) != p:
        raise ValueError(f"{name}: dims {dims} are not {ndims} positive ints that multiply to nprocs={p}")
    return dims


def _sort(src: list, dst: list, nb: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s, d, n = (np.concatenate(x).astype(np.int64) if x else np.zeros(0, np.int64) for x in (src, dst, nb))
    order = np.argsort(s, kind="stable")
    return s[order], d[order], n[order]


def jacobi2d(nprocs: int, block: int = 16384, periodic: bool = False, dims: Any = None) -> Exchange:
    """Jacobi2D halo exchange (paper 000 §4.2, Listing 1).

    Rule (minitu/jacobi2d ``jacobi2d.cu``): ``MPI_Dims_create(P, 2)``,
    ``MPI_Cart_create`` with periods 0 and reorder 0, neighbours from
    ``MPI_Cart_shift`` along dim 0 (west, east) and dim 1 (north, south).
    Each rank holds ``block x block`` doubles and sends one edge, ``block``
    doubles, to each neighbour (the stored Lassen DUMPI traces, 1,024
    ranks, show 16,384-double messages to ranks -32, +32, -1, +1).

    Parameters
    ----------
    nprocs : int
        Number of ranks.
    block : int
        Cells per side of a rank's block (16,384 in the paper).
    periodic : bool
        Wrap both dimensions (the §3.1 example assumes periodic boundaries).
    dims : tuple of int, optional
        Process grid; default ``dims_create(nprocs, 2)``.

    Returns
    -------
    Exchange
        Messages of ``block * 8`` B; order per rank: west, east, north, south.
    """
    p = _check_nprocs(nprocs)
    dims = _grid("jacobi2d", dims, p, 2)
    if int(block) < 1:
        raise ValueError(f"jacobi2d: block must be a positive number of cells, got {block!r}")
    ranks = np.arange(p)
    src, dst, nb = [], [], []
    for direction in (0, 1):
        lower, upper = cart_shift(ranks, dims, direction, 1, periodic)
        for nbr in (lower, upper):
            keep = (nbr >= 0) & (nbr != ranks)
            src.append(ranks[keep])
            dst.append(nbr[keep])
            nb.append(np.full(int(keep.sum()), int(block) * DOUBLE))
    return Exchange("jacobi2d", p, *_sort(src, dst, nb), 4,
                    {"dims": list(dims), "periodic": bool(periodic), "block": int(block)})


# --------------------------------------------------------------------------- MiniFE


def minife_global_box(nprocs: int, box: int = 200) -> tuple[int, int, int]:
    """Weak-scaled global element box: ``box * MPI_Dims_create(nprocs, 3)`` (elements).

    This is the convention of the paper's runs (minitu/miniFE scripts and
    DUMPI headers: 2 ranks ``-nx 400 -ny 200 -nz 200``, 16 ranks 800 x 400 x
    400, 256 ranks 1600 x 1600 x 800, 1,024 ranks 3200 x 1600 x 1600): for a
    power of two the bisection then gives every rank ``box**3`` elements.
    """
    return tuple(int(box) * d for d in dims_create(_check_nprocs(nprocs), 3))  # type: ignore[return-value]


def box_partition(nprocs: int, global_box: Any) -> np.ndarray:
    """miniFE's recursive coordinate bisection of an element box.

    Rule (miniFE ``utils/BoxPartition.cpp``, ``box_partition``, called from
    ``main`` with axis 0): a range of ``np`` ranks splits into the lower
    ``np // 2`` and the upper ``np - np // 2``; the upper part gets
    ``int(n * (np_upp / np))`` of the ``n`` elements along the current axis
    and the lower part the rest; the next level splits along the next axis
    (x, y, z, x, ...).

    Parameters
    ----------
    nprocs : int
        Number of ranks (any positive integer).
    global_box : sequence of 3 int
        Elements along x, y, z.

    Returns
    -------
    numpy.ndarray of int64, shape (nprocs, 3, 2)
        ``[rank, axis, (lo, hi)]`` element ranges (hi exclusive).
    """
    p = _check_nprocs(nprocs)
    g = np.asarray(global_box, dtype=np.int64)
    if g.shape != (3,) or g.min() < 1:
        raise ValueError(f"global_box must be 3 positive element counts, got {global_box!r}")
    boxes = np.zeros((p, 3, 2), dtype=np.int64)
    # segments: first rank, rank count, axis, lo (3), hi (3)
    ip, n, axis = np.zeros(1, np.int64), np.full(1, p, np.int64), np.zeros(1, np.int64)
    lo, hi = np.zeros((1, 3), np.int64), g[None, :].copy()
    while ip.size:
        leaf = n == 1
        boxes[ip[leaf], :, 0], boxes[ip[leaf], :, 1] = lo[leaf], hi[leaf]
        ip, n, axis, lo, hi = ip[~leaf], n[~leaf], axis[~leaf], lo[~leaf], hi[~leaf]
        rows = np.arange(ip.size)
        ne = hi[rows, axis] - lo[rows, axis]
        np_low = n // 2
        n_upp = (ne.astype(np.float64) * ((n - np_low) / n)).astype(np.int64)
        cut = lo[rows, axis] + ne - n_upp
        lo_hi, up_lo = hi.copy(), lo.copy()
        lo_hi[rows, axis], up_lo[rows, axis] = cut, cut
        ip = np.concatenate([ip, ip + np_low])
        n = np.concatenate([np_low, n - np_low])
        axis = np.concatenate([axis, axis]) + 1
        axis %= 3
        lo, hi = np.concatenate([lo, up_lo]), np.concatenate([lo_hi, hi])
    return boxes


def _touching_pairs(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ordered pairs (a, b), a != b, of boxes ``[lo, hi)`` whose closed extents intersect.

    Boxes go into buckets as wide as the widest box (by their lower corner),
    so a touching box lies in one of the 27 buckets around a box's own.
    """
    w = np.maximum((hi - lo).max(axis=0), 1)
    bucket = lo // w
    shape = bucket.max(axis=0) + 1
    key = np.ravel_multi_index(tuple(bucket.T), tuple(shape))
    order = np.argsort(key, kind="stable")
    skey = key[order]
    a_all, b_all = [], []
    for off in np.array(list(np.ndindex(3, 3, 3))) - 1:
        nb = bucket + off
        ok = np.all((nb >= 0) & (nb < shape), axis=1)
        k = np.ravel_multi_index(tuple(nb[ok].T), tuple(shape))
        start = np.searchsorted(skey, k, side="left")
        counts = np.searchsorted(skey, k, side="right") - start
        a = np.repeat(np.flatnonzero(ok), counts)
        pos = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        a_all.append(a)
        b_all.append(order[np.repeat(start, counts) + pos])
    a, b = np.concatenate(a_all), np.concatenate(b_all)
    ok = (a != b) & np.all((lo[a] <= hi[b]) & (lo[b] <= hi[a]), axis=1)
    return a[ok], b[ok]


def minife(nprocs: int, box: int = 200, global_box: Any = None) -> Exchange:
    """MiniFE halo exchange of the matrix-vector product (paper 000 §4.2).

    Rules (minitu/miniFE, the CUDA version the paper ran):

    - partition: :func:`box_partition` of ``global_box`` (default
      :func:`minife_global_box`), so any rank count works as in miniFE;
    - node ownership (``simple_mesh_description``): a rank owns the nodes
      ``[lo, hi)`` of its element box in each dimension, plus node ``hi``
      where ``hi`` is the global upper boundary;
    - neighbours (``make_local_matrix``): the matrix row of a node has the 27
      nodes around it, and a rank receives from the owner every external
      node its rows reference, so rank A sends to rank B the nodes of A
      within one node of B's nodes: ``prod_d |own_A,d & [lo_B,d - 1,
      hi_B,d + 1)|`` doubles, non-periodic.  Boxes that touch at a face,
      edge or corner exchange: up to 26 neighbours.

    Checked against the stored Lassen DUMPI traces (2-256 ranks): every
    (sender, receiver, count) of the first exchange matches, e.g. 256 ranks:
    4,584 messages of 1, 200, 201, 40,000, 40,200 and 40,401 doubles.

    Parameters
    ----------
    nprocs : int
        Number of ranks.
    box : int
        Elements per rank per dimension of the weak-scaled default box (200).
    global_box : sequence of 3 int, optional
        Global elements along x, y, z.

    Returns
    -------
    Exchange
        Message sizes in bytes (doubles x 8).
    """
    p = _check_nprocs(nprocs)
    if int(box) < 1:
        raise ValueError(f"minife: box must be a positive number of elements, got {box!r}")
    g = np.asarray(minife_global_box(p, box) if global_box is None else global_box, dtype=np.int64)
    boxes = box_partition(p, g)
    lo, hi = boxes[:, :, 0], boxes[:, :, 1]
    if (hi <= lo).any():
        raise ValueError(f"minife: global box {g.tolist()} leaves some of the {p} ranks without elements")
    own_hi = hi + (hi == g)  # owned nodes [lo, own_hi)
    a, b = _touching_pairs(lo, hi)
    n = np.prod(np.clip(np.minimum(own_hi[a], own_hi[b] + 1) - np.maximum(lo[a], lo[b] - 1), 0, None), axis=1)
    keep = n > 0
    order = np.lexsort((b[keep], a[keep]))
    src, dst, nb = a[keep][order], b[keep][order], n[keep][order] * DOUBLE
    cfg: dict[str, Any] = {"global_box": g.tolist(), "box": int(box), "periodic": False,
                           "partition": "miniFE box_partition, axes x, y, z cyclic"}
    cuts = [np.unique(lo[:, d]) for d in range(3)]
    if np.prod([len(c) for c in cuts]) == p:
        cfg["grid"] = [len(c) for c in cuts]
    return Exchange("minife", p, src, dst, nb, 26, cfg)


# --------------------------------------------------------------------------- MiniMD

LJ_DENSITY = 0.8442  # in.lj.miniMD: reduced density
LJ_CUTOFF = 2.5  # in.lj.miniMD: force cutoff (sigma)
LJ_SKIN = 0.3  # in.lj.miniMD: neighbour skin (sigma)


def fcc_lattice_constant(density: float = LJ_DENSITY) -> float:
    """FCC lattice constant ``(4 / density)**(1/3)`` (sigma; 4 atoms per unit cell)."""
    return (4.0 / density) ** (1.0 / 3.0)


def minimd_procgrid(nprocs: int, global_cells: Any, density: float = LJ_DENSITY) -> tuple[int, int, int]:
    """miniMD's processor grid: the factorization with the least sub-domain surface.

    Rule (miniMD ``Comm::setup``): over ``ipx`` then ``ipy`` ascending
    (``ipz = P / ipx / ipy``), the first grid with the strictly smallest
    ``xy/ipx/ipy + xz/ipx/ipz + yz/ipy/ipz`` of the box side lengths wins.
    For the paper's weak-scaled boxes (64 unit cells per rank and
    dimension, e.g. 1024 x 512 x 512 cells at 1,024 ranks) this is the grid
    of ``MPI_Dims_create(P, 3)``.
    """
    p = _check_nprocs(nprocs)
    prd = np.asarray(global_cells, dtype=np.float64) * fcc_lattice_constant(density)
    area = (prd[0] * prd[1], prd[0] * prd[2], prd[1] * prd[2])
    best, grid = 2.0 * sum(area), (0, 0, 0)
    for ipx in (x for x in range(1, p + 1) if p % x == 0):
        rem = p // ipx
        for ipy in (y for y in range(1, rem + 1) if rem % y == 0):
            ipz = rem // ipy
            surf = area[0] / ipx / ipy + area[1] / ipx / ipz + area[2] / ipy / ipz
            if surf < best:
                best, grid = surf, (ipx, ipy, ipz)
    return grid


def _fcc_sites(ranges: np.ndarray) -> np.ndarray:
    """FCC atoms (half-lattice sites with an even index sum) in index boxes ``[..., 3, (lo, hi)]``."""
    lo, hi = ranges[..., 0], ranges[..., 1]
    even = hi // 2 - (lo + 1) // 2  # even indices in [lo, hi)  (floor division handles negatives)
    odd = (hi - lo) - even
    e, o = np.moveaxis(even, -1, 0), np.moveaxis(odd, -1, 0)
    return e[0] * e[1] * e[2] + e[0] * o[1] * o[2] + o[0] * e[1] * o[2] + o[0] * o[1] * e[2]


def minimd_border_atoms(
    cells: Any = 64, density: float = LJ_DENSITY, cutneigh: float = LJ_CUTOFF + LJ_SKIN,
    ghosts: Any = True,
) -> np.ndarray:
    """Atoms a rank sends in each swap of miniMD's forward communication.

    Rule (miniMD ``Comm::setup`` and ``Comm::borders``): swap ``2d`` sends to
    the lower neighbour along dimension ``d`` the atoms with ``lo <= x <= lo
    + cutneigh``, swap ``2d + 1`` to the upper neighbour those with ``hi -
    cutneigh <= x <= hi``; both swaps of a dimension test the owned atoms
    plus the ghosts received in earlier dimensions.  Atoms sit on an FCC
    lattice (4 per unit cell, half-lattice planes ``a/2`` apart, the site at
    the origin occupied; no re-neighbouring in 100 steps, so the lists stay
    those of the initial lattice).  With 64 cells, density 0.8442 and
    cutneigh 2.8: 4 planes go down and 3 up, i.e. x 32,768 / 24,576, y
    34,560 / 25,920, z 36,450 / 27,337 atoms, exactly the counts (x3
    doubles) in the stored Lassen DUMPI traces of 512 ranks.

    Parameters
    ----------
    cells : int or sequence of 3 int
        Unit cells per rank along x, y, z.
    density : float
        Reduced density (atoms / sigma^3).
    cutneigh : float
        Force cutoff plus skin (sigma).
    ghosts : bool or array_like of bool, shape (..., 3, 2)
        Whether the rank has ghost atoms below / above in each dimension
        (always with periodic boundaries).

    Returns
    -------
    numpy.ndarray of int64, shape (..., 3, 2)
        Atoms sent ``[dim, (to lower, to upper)]``.
    """
    c = np.broadcast_to(np.asarray(cells, dtype=np.int64), (3,))
    half = fcc_lattice_constant(density) / 2.0
    if cutneigh >= c.min() * 2 * half:
        raise ValueError(f"minimd: sub-domain ({c.min()} cells) smaller than cutneigh={cutneigh}: "
                         "miniMD would exchange with more than one rank per direction (not modelled)")
    n_up = int(np.floor(cutneigh / half))  # planes hi - k*a/2, k = 1..n_up
    n_down = n_up + 1  # planes lo + k*a/2, k = 0..n_up
    g = np.broadcast_to(np.asarray(ghosts, dtype=bool), np.broadcast_shapes(np.shape(ghosts), (3, 2)))
    lead = g.shape[:-2]
    out = np.zeros((*lead, 3, 2), dtype=np.int64)
    ext = np.zeros((*lead, 3, 2), dtype=np.int64)
    ext[..., 1] = 2 * c
    for d in range(3):
        for side, planes in ((0, (0, n_down)), (1, (2 * c[d] - n_up, 2 * c[d]))):
            r = ext.copy()
            r[..., d, 0], r[..., d, 1] = planes
            out[..., d, side] = _fcc_sites(r)
        ext[..., d, 0] -= np.where(g[..., d, 0], n_up, 0)  # ghosts from the lower neighbour's upper slab
        ext[..., d, 1] += np.where(g[..., d, 1], n_down, 0)
    return out


def minimd(
    nprocs: int, cells: Any = 64, periodic: bool = True, dims: Any = None, global_cells: Any = None,
    phase: str = "forward", density: float = LJ_DENSITY, cutneigh: float = LJ_CUTOFF + LJ_SKIN,
) -> Exchange:
    """MiniMD communication of one timestep (paper 000 §4.2, ``in.lj.miniMD``).

    Rules (minitu/miniMD ``kokkos/comm.cpp``): a periodic 3D grid
    (:func:`minimd_procgrid` of ``global_cells``; by default ``dims_create(P,
    3)``, which that rule also picks for the weak-scaled box of ``cells``
    per rank), ``MPI_Cart_create`` without reorder, six swaps per step (x
    down, x up, y down, ...), each one message of 3 doubles per border atom
    (:func:`minimd_border_atoms`) followed by a wait (the swaps run one after
    another).  A swap whose partner is the rank itself (a dimension of size
    1) sends no MPI message; in a periodic dimension of size 2 both swaps go
    to the same rank and two messages are sent (``sendproc != me`` for both;
    Choi's ``K_MODE`` counter counts both).  ``phase="reverse"`` gives the
    reverse communication of forces: each swap's received atoms go back to
    their sender (3 doubles per atom).

    Parameters
    ----------
    nprocs : int
        Number of ranks.
    cells : int or sequence of 3 int
        FCC unit cells per rank per dimension (64: 4 x 64**3 = 1,048,576 atoms).
    periodic : bool
        miniMD is periodic; False gives a what-if with no wrap-around.
    dims : sequence of 3 int, optional
        Processor grid (overrides the rules above).
    global_cells : sequence of 3 int, optional
        Global unit cells; the grid is then miniMD's choice for that box and
        ``global_cells / grid`` must be whole cells.
    phase : {"forward", "reverse"}
    density, cutneigh : float
        Reduced density and force cutoff + skin (sigma).

    Returns
    -------
    Exchange
    """
    p = _check_nprocs(nprocs)
    if phase not in ("forward", "reverse"):
        raise ValueError(f"minimd: phase must be 'forward' or 'reverse', got {phase!r}")
    if global_cells is not None:
        gc = np.asarray(global_cells, dtype=np.int64)
        dims = _grid("minimd", dims if dims is not None else minimd_procgrid(p, gc, density), p, 3)
        if np.any(gc % dims):
            raise ValueError(f"minimd: global_cells {gc.tolist()} do not split into whole cells over {dims}")
        cells = gc // dims
    else:
        dims = _grid("minimd", dims, p, 3)
    c = np.broadcast_to(np.asarray(cells, dtype=np.int64), (3,))
    ranks = np.arange(p)
    loc = cart_coords(ranks, dims)
    ghosts = np.stack([loc > 0, loc < np.asarray(dims) - 1], axis=-1) | bool(periodic)
    atoms = minimd_border_atoms(c, density, cutneigh, ghosts)  # (p, 3, 2)
    src, dst, nb = [], [], []
    for d in range(3):
        down, up = cart_shift(ranks, dims, d, 1, periodic)
        for side, nbr in ((0, down), (1, up)):
            keep = (nbr >= 0) & (nbr != ranks)
            src.append(ranks[keep])
            dst.append(nbr[keep])
            nb.append(atoms[keep, d, side] * 3 * DOUBLE)
    if phase == "reverse":  # swaps run backwards; each returns what it received
        src, dst, nb = dst[::-1], src[::-1], nb[::-1]
    interior = minimd_border_atoms(c, density, cutneigh)
    return Exchange("minimd", p, *_sort(src, dst, nb), 6, {
        "dims": list(dims), "periodic": bool(periodic), "cells": c.tolist(), "phase": phase,
        "border_atoms": interior.tolist(), "density": density, "cutneigh": cutneigh,
        "sequential_swaps": True,
    })


APPS = {"jacobi2d": jacobi2d, "minife": minife, "minimd": minimd}


def exchange(app: str, nprocs: int, **options: Any) -> Exchange:
    """The halo exchange of ``app`` (one of :data:`APPS`) at ``nprocs`` ranks.

    Raises
    ------
    ValueError
        Unknown app (the message lists the known ones) or bad ``nprocs``.
    """
    fn = APPS.get(str(app).lower())
    if fn is None:
        raise ValueError(f"unknown app {app!r}; known apps: {', '.join(sorted(APPS))}")
    return fn(nprocs, **options)
