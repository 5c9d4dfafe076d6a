"""The compiled passes of :func:`perfmod.machine.mapping.pair_modes` (a module of their own, imported on first use,
so that importing the mapping does not import numba)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def rank_bounds(s, d):
    """(lowest, highest) rank in ``s`` and ``d`` (not empty)."""
    lo = hi = np.int64(s[0])
    for i in range(s.size):
        lo, hi = min(lo, np.int64(s[i]), np.int64(d[i])), max(hi, np.int64(s[i]), np.int64(d[i]))
    return lo, hi


@njit(cache=True)
def table_modes(s, d, sock, node, out):
    """The mode of each pair from the ranks' sockets and nodes (the codes of
    :func:`perfmod.machine.mapping.pair_modes`)."""
    for i in range(s.size):
        a, b = s[i], d[i]
        out[i] = 0 if sock[a] == sock[b] else (1 if node[a] == node[b] else 2)
