"""Jacobi2D (paper 000 §4.2): 2D block decomposition, halo exchange and kernel counts.

Paper: Choi et al., ICS 2020 (paper 000) (Choi et al., ICS 2020).

- :func:`decompose`: ``MPI_Dims_create(P, 2)``, ``MPI_Cart_create`` non-periodic, no reorder;
  up to 4 neighbours, a face message is one block edge (``block`` doubles).
- :func:`kernel_counts`: the per-iteration GPU kernels' algorithmic counts.
- :func:`proxy_kernel_counts`: the same kernels (:data:`KERNELS`) as the
  NumPy/CuPy proxy (:mod:`perfmod.measure.proxies.jacobi2d`) runs them,
  unfused, with the bytes they move.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perfmod.apps.application import Application, Phase
from perfmod.apps.exchange import DOUBLE, Exchange, _check_nprocs, _grid, _sort
from perfmod.apps.kernels import SECTOR, KernelCounts, _positive
from perfmod.core.checks import positive_int
from perfmod.machine.cart import COMPASS, cart_shift
from perfmod.models.roofline.traffic import traffic_bytes

__all__ = [
    "APPLICATION",
    "decompose",
    "kernel_counts",
    "KERNELS",
    "proxy_kernel_counts",
]

#: The device kernels of an iteration (the proxy's phases 1, 5, 6, 7), as :func:`proxy_kernel_counts` names them.
KERNELS = ("pack", "unpack", "stencil", "reduce")


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
    :func:`proxy_kernel_counts`.
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


def proxy_kernel_counts(block: int, directions: Any = COMPASS, write_allocate: bool = True,
                  line_bytes: int = 64) -> dict[str, dict[str, Any]]:
    """QRoof kernel metrics of one iteration of one rank of the NumPy/CuPy proxy (totals over its passes).

    The proxy is :mod:`perfmod.measure.proxies.jacobi2d`; its kernels are
    :data:`KERNELS`, the keys of the result.

    Parameters
    ----------
    block : int
        Cells per side of the rank's block.
    directions : iterable of str
        The directions that have a neighbour (the edges packed and unpacked).
    write_allocate : bool
        Count a read of every written array a pass does not read (CPU).
    line_bytes : int
        Bytes fetched per element of a strided (column) access: a cache line
        (64 B) on a CPU, a sector (32 B) on a GPU.

    Returns
    -------
    dict
        Kernel -> ``compute_ops`` (flops; for the copies PACK and UNPACK one
        integer multiply-add, 2 operations, per element moved),
        ``dram_bytes`` (B), ``dominant_op`` ("fp_64"; "integer" for the
        copies), ``opmix_efficiency`` (0.5: no fused multiply-adds; 1 for the
        copies' address multiply-adds),
        ``mix_compute`` 1 and ``mix_ldst`` 0 (element-wise passes: the
        instruction mix is not measured; the toolkit's formula then gives
        an instruction efficiency of 1), ``passes`` (element-wise operations
        issued: launches on a GPU, NumPy calls on the CPU) and ``cells``.

    Notes
    -----
    Not the same model as :func:`kernel_counts`, and
    deliberately kept apart: that one counts the paper's fused CUDA kernels
    (instructions by class per cell, one launch each, 16 B of DRAM traffic
    per stencil cell, all four halos, 32-byte sectors), this one counts the
    unfused element-wise passes this proxy runs (six stencil passes with a
    temporary: 15 x 8 B per cell, 17 x 8 B with write-allocate; the
    reduction as row sums then their sum; only the halos that have a
    neighbour; a cache line or a sector per strided element, as given).
    Both count 6 flops per stencil cell.  Each predicts the program it
    describes.
    """
    n = positive_int("block", block)
    dirs = [d for d in directions]
    bad = [d for d in dirs if d not in COMPASS]
    if bad:
        raise ValueError(f"unknown directions {bad}; known: {COMPASS}")
    rows = sum(d in ("north", "south") for d in dirs)
    cols = len(dirs) - rows
    wa = bool(write_allocate)
    strided = line_bytes // 8  # elements' worth of traffic per strided element
    cells = n * n

    def tb(reads: int, writes: int, alloc: int, m: int = cells) -> int:
        return traffic_bytes(m, 8, reads, writes, alloc, wa)

    # stencil: (A->T alloc) (T,A->T) (T,A->T) (T->T) (T,A->T) (T->B alloc)
    stencil = tb(1, 1, 1) + 3 * tb(2, 1, 0) + tb(1, 1, 0) + tb(1, 1, 1)
    # pack: a row is a contiguous read; a column reads one line per element; send buffers are written
    pack = rows * tb(1, 1, 1, n) + cols * (traffic_bytes(n, 8, strided, 0, 0, wa) + tb(0, 1, 1, n))
    # unpack: contiguous receive buffer read; a ghost column is written one line per element
    unpack = rows * tb(1, 1, 1, n) + cols * (tb(1, 0, 0, n) + traffic_bytes(n, 8, 0, strided, strided, wa))
    base = {"dominant_op": "fp_64", "opmix_efficiency": 0.5, "mix_compute": 1.0, "mix_ldst": 0.0}
    # copies do no arithmetic; their operations are the address computations, one integer
    # multiply-add per element moved (an assumption; zero when there is no halo to move)
    copy = {**base, "dominant_op": "integer", "opmix_efficiency": 1.0, "compute_ops": 2.0 * n * len(dirs)}
    return {
        "pack": {**copy, "dram_bytes": float(pack), "passes": len(dirs), "cells": cells},
        "unpack": {**copy, "dram_bytes": float(unpack), "passes": len(dirs), "cells": cells},
        "stencil": {**base, "compute_ops": 6.0 * cells, "dram_bytes": float(stencil), "passes": 6, "cells": cells},
        "reduce": {**base, "compute_ops": float(cells + n), "dram_bytes": float(tb(1, 0, 0) + tb(1, 1, 1, n)),
                   "passes": 2, "cells": cells},
    }
