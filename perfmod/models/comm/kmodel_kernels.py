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


@njit(cache=True)
def phase_maxima_in_order(phase, src, dst, node, k_inter, counted, max_nb, some, inter, sent, touched):
    """:func:`phase_maxima` in one sequential pass for messages in trace order: senders ascending, each sender's
    phases ascending, and each node's ranks contiguous (block mapping), so that a (rank, phase) is one run and a
    node one stretch; ``some`` marks the phases with messages; ``inter``, ``sent`` (per phase) are zero and
    ``touched`` has room for every phase.  Returns False, leaving the outputs unfinished, at the first message out
    of that order (then count with :func:`phase_maxima`)."""
    n = src.size
    nt = 0
    run = 0
    for m in range(n):
        r = src[m]
        f = phase[m]
        nd = node[r]
        if m > 0:
            rp = src[m - 1]
            fp = phase[m - 1]
            ndp = node[rp]
            if r < rp or (r == rp and f < fp) or nd < ndp:
                return False
            if r != rp or f != fp:  # the end of a (rank, phase) run
                max_nb[fp] = max(max_nb[fp], run)
                run = 0
            if nd != ndp:  # the end of a node's messages: its counts per phase
                for q in range(nt):
                    g = touched[q]
                    k_inter[g] = max(k_inter[g], inter[g])
                    counted[g] = max(counted[g], sent[g])
                    inter[g] = sent[g] = 0
                nt = 0
        if sent[f] == 0:
            touched[nt] = f
            nt += 1
        sent[f] += 1
        if nd != node[dst[m]]:
            inter[f] += 1
        run += 1
        some[f] = True
    if n:
        max_nb[phase[n - 1]] = max(max_nb[phase[n - 1]], run)
        for q in range(nt):
            g = touched[q]
            k_inter[g] = max(k_inter[g], inter[g])
            counted[g] = max(counted[g], sent[g])
            inter[g] = sent[g] = 0
    return True
