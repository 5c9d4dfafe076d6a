"""MiniFE (paper 000 §4.2, paper 002): recursive coordinate bisection, 27-point halo and kernel counts.

Paper: Choi et al., ICS 2020 (paper 000) (Choi et al., ICS 2020).

- :func:`decompose`: miniFE's bisection of the global element box, up to 26 neighbours.
- :func:`kernel_counts`: the CG iteration's kernels' algorithmic counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perfmod.apps.application import Application, Phase
from perfmod.apps.exchange import DOUBLE, Exchange, _check_nprocs
from perfmod.apps.kernels import INT, KernelCounts, _positive
from perfmod.machine.cart import dims_create

__all__ = [
    "APPLICATION",
    "default_global_box",
    "box_partition",
    "decompose",
    "kernel_counts",
]


def default_global_box(nprocs: int, box: int = 200) -> tuple[int, int, int]:
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

def decompose(nprocs: int, box: int = 200, global_box: Any = None) -> Exchange:
    """MiniFE halo exchange of the matrix-vector product (paper 000 §4.2).

    Rules (minitu/miniFE, the CUDA version the paper ran):

    - partition: :func:`box_partition` of ``global_box`` (default
      :func:`default_global_box`), so any rank count works as in miniFE;
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
    g = np.asarray(default_global_box(p, box) if global_box is None else global_box, dtype=np.int64)
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


def kernel_counts(box: int = 200) -> list[KernelCounts]:
    """MiniFE CG-iteration kernels with ``box**3`` rows per rank (see module docstring)."""
    _positive("box", box)
    rows = float(box) ** 3
    nnz = 27
    return [
        KernelCounts("DOT", rows, 2, 1, 1, 4, 2, 2, 2 * DOUBLE),
        KernelCounts("WAXPBY", rows, 3, 2, 1, 4, 3, 2, 3 * DOUBLE),
        KernelCounts("MATVEC", rows, 1, nnz, nnz, 3 * nnz + 4, 3 * nnz + 3, 3,
                     nnz * (DOUBLE + INT) + 2 * DOUBLE + INT),
    ]


APPLICATION = Application(
    name="minife", decompose=decompose, kernel_counts=kernel_counts,
    phases=(Phase("halo"),),  # 000 §4.2: the CG iteration's dot-product allreduces count as overhead
    allreduces=2, module=__name__)
