"""Domain decompositions and halo-exchange message lists of the proxies (paper 000 §4.2).

Paper: Choi et al., ICS 2020 (paper 000).  Each constructor returns
an :class:`Exchange`: one communication phase as a flat list of messages
(sender, receiver, bytes), from which :func:`perfmod.apps.registry.kmodel_counts`
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

from perfmod.core.checks import positive_int
from perfmod.machine.cart import dims_create

__all__ = [
    "DOUBLE",
    "Exchange",
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


# --------------------------------------------------------------------------- MiniFE


# --------------------------------------------------------------------------- MiniMD


