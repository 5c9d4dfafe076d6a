"""MiniMD (paper 000 §4.2): processor grid, border-atom exchange of an FCC lattice and kernel counts.

Paper: Choi et al., ICS 2020 (paper 000) (Choi et al., ICS 2020).

- :func:`decompose`: miniMD's surface-minimizing grid, periodic, six swaps per phase.
- :func:`kernel_counts`: the time step's kernels' algorithmic counts.
"""

from __future__ import annotations

from math import pi
from typing import Any

import numpy as np

from perfmod.apps.application import Application, Phase
from perfmod.apps.exchange import DOUBLE, Exchange, _check_nprocs, _grid, _sort
from perfmod.apps.kernels import INT, KernelCounts, _positive
from perfmod.machine.cart import cart_coords, cart_shift

__all__ = [
    "APPLICATION",
    "fcc_lattice_constant",
    "minimd_procgrid",
    "minimd_border_atoms",
    "decompose",
    "kernel_counts",
    "LJ_DENSITY",
    "LJ_CUTOFF",
    "LJ_SKIN",
]


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

def decompose(
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


def kernel_counts(cells: int = 64) -> list[KernelCounts]:
    """MiniMD timestep kernels with ``cells**3`` FCC unit cells per rank (see module docstring)."""
    _positive("cells", cells)
    atoms = 4.0 * float(cells) ** 3
    border = float(minimd_border_atoms(cells).sum())  # atoms packed per exchange (6 swaps)
    per_swap = border / 6
    neigh = 4.0 / 3.0 * pi * (LJ_CUTOFF + LJ_SKIN) ** 3 * LJ_DENSITY
    inside = 4.0 / 3.0 * pi * LJ_CUTOFF ** 3 * LJ_DENSITY
    force_fp = 6 * neigh + 12 * inside
    force_fma = 2 * neigh + 4 * inside
    return [
        KernelCounts("INIT", atoms, 1, 6, 6, 4, 7, 2, 5 * 3 * DOUBLE),
        KernelCounts("PACK", per_swap, 12, 3, 0, 6, 7, 2, INT + 2 * 3 * DOUBLE),
        KernelCounts("UNPACK", per_swap, 12, 0, 0, 6, 6, 2, 2 * 3 * DOUBLE),
        KernelCounts("FORCE", atoms, 1, force_fp, force_fma, 4 * neigh + 6, 2 * neigh + 2, neigh + inside + 2,
                     INT * neigh + 2 * 3 * DOUBLE),
        KernelCounts("FIN", atoms, 1, 3, 3, 4, 3, 2, 3 * 3 * DOUBLE),
    ]


APPLICATION = Application(
    name="minimd", decompose=decompose, kernel_counts=kernel_counts,
    # 000 §4.2: positions go forward in step 2 and forces come back in step 4, each as six sequential swaps;
    # thermodynamic output (an allreduce) is not every step
    phases=(Phase("forward", {"phase": "forward"}, sequential=True),
            Phase("reverse", {"phase": "reverse"}, sequential=True, optional=True)),
    allreduces=0, module=__name__)
