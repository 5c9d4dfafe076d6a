"""The compiled pass of :func:`perfmod.models.comm.kmodel.kmodel_counts_per_phase` (a module of its own, imported on
first use, so that importing the K-model does not import numba)."""

from __future__ import annotations

from numba import njit


@njit(cache=True)
def phase_maxima(order, bounds, src, dst, node, k_inter, counted, max_nb, inter, sent, per_rank):
    """For each phase ``f`` (its messages ``order[bounds[f]:bounds[f + 1]]``): the most inter-node messages a node
    sends, the most messages a node sends, the most a rank sends; ``inter``, ``sent`` (per node) and ``per_rank``
    are zero and left so (only the entries a phase touched are reset)."""
    for f in range(bounds.size - 1):
        a, b = bounds[f], bounds[f + 1]
        mi = mc = mb = 0
        for q in range(a, b):
            m = order[q]
            r = src[m]
            ns = node[r]
            if ns != node[dst[m]]:
                inter[ns] += 1
                mi = max(mi, inter[ns])
            sent[ns] += 1
            mc = max(mc, sent[ns])
            per_rank[r] += 1
            mb = max(mb, per_rank[r])
        k_inter[f], counted[f], max_nb[f] = mi, mc, mb
        for q in range(a, b):
            r = src[order[q]]
            inter[node[r]] = sent[node[r]] = per_rank[r] = 0
