"""Jacobi2D (paper 000 §4.2): 2D block decomposition, halo exchange and kernel counts.

Paper: ``shared/papers/000_95042cffe07dd549.txt`` (Choi et al., ICS 2020).

- :func:`decompose`: ``MPI_Dims_create(P, 2)``, ``MPI_Cart_create`` non-periodic, no reorder;
  up to 4 neighbours, a face message is one block edge (``block`` doubles).
- :func:`kernel_counts`: the per-iteration GPU kernels' algorithmic counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perfmod.apps.application import Application, Phase
from perfmod.apps.exchange import DOUBLE, Exchange, _check_nprocs, _grid, _sort
from perfmod.apps.kernels import SECTOR, KernelCounts, _positive
from perfmod.machine.cart import cart_shift

__all__ = [
    "APPLICATION",
    "decompose",
    "kernel_counts",
]


def decompose(nprocs: int, block: int = 16384, periodic: bool = False, dims: Any = None) -> Exchange:
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


def kernel_counts(block: int = 16384) -> list[KernelCounts]:
    """Jacobi2D kernels of one iteration with a ``block`` x ``block`` block of doubles.

    The paper's fused CUDA kernels (counts in :mod:`perfmod.apps.kernels`);
    the NumPy/CuPy proxy's unfused passes have their own counts,
    :func:`perfmod.measure.proxies.jacobi2d.kernel_counts`.
    """
    _positive("block", block)
    n = float(block)
    halo_bytes = (2 * (DOUBLE + DOUBLE) + 2 * (SECTOR + DOUBLE)) / 4  # per element, averaged over the 4 faces
    return [
        KernelCounts("PACK", 4 * n, 1, 0, 0, 4, 2, 2, halo_bytes),
        KernelCounts("UNPACK", 4 * n, 1, 0, 0, 4, 2, 2, halo_bytes),
        KernelCounts("STENCIL", n * n, 1, 5, 1, 10, 6, 2, 2 * DOUBLE),
        KernelCounts("REDUCE", n * n, 1, 1, 0, 8, 2, 3, DOUBLE),
    ]


APPLICATION = Application(
    name="jacobi2d", decompose=decompose, kernel_counts=kernel_counts,
    phases=(Phase("halo"),),  # 000 §4.2: the allreduce of one double (the residual) counts as overhead
    allreduces=1, module=__name__)
