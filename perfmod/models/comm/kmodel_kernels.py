"""The compiled passes that count k per phase of a replayed trace: the K-model's
(:func:`perfmod.models.comm.kmodel.kmodel_counts_per_phase`) and the max-rate model's senders per node and socket
(:meth:`perfmod.models.comm.krules.DefaultK.trace_k`) (a module of its own, imported on first use, so that
importing the models does not import numba)."""

from __future__ import annotations

from perfmod.core.kernel_cache import njit


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


@njit(cache=True)
def senders_per_group_in_order(phase, src, node, socket, k_node, k_socket, on_node, on_socket, touched_node,
                               touched_socket):
    """The max-rate k of every phase (:class:`perfmod.models.comm.krules.DefaultK`): the most distinct ranks of one
    node (``k_node``) and of one socket (``k_socket``) that send in it, in one sequential pass for messages in trace
    order (senders ascending, each sender's phases ascending) under a mapping that keeps each node's and socket's
    ranks contiguous (block), so that a (rank, phase) is one run and a node or socket one stretch.  ``k_node`` and
    ``k_socket`` (per phase) are zero on entry; ``on_node``, ``on_socket`` (per phase) are zero and the touched
    lists have room for every phase.  Returns False, leaving the outputs unfinished, at the first message out of
    that order (then count with NumPy)."""
    nt_n = nt_s = 0
    for m in range(src.size):
        r = src[m]
        f = phase[m]
        if m > 0:
            rp = src[m - 1]
            fp = phase[m - 1]
            if r < rp or (r == rp and f < fp) or node[r] < node[rp] or socket[r] < socket[rp]:
                return False
            if r == rp and f == fp:
                continue  # the same (rank, phase): the rank counts once
            if node[r] != node[rp]:  # the end of a node's ranks: its counts per phase
                for q in range(nt_n):
                    g = touched_node[q]
                    k_node[g] = max(k_node[g], on_node[g])
                    on_node[g] = 0
                nt_n = 0
            if socket[r] != socket[rp]:
                for q in range(nt_s):
                    g = touched_socket[q]
                    k_socket[g] = max(k_socket[g], on_socket[g])
                    on_socket[g] = 0
                nt_s = 0
        if on_node[f] == 0:
            touched_node[nt_n] = f
            nt_n += 1
        on_node[f] += 1
        if on_socket[f] == 0:
            touched_socket[nt_s] = f
            nt_s += 1
        on_socket[f] += 1
    for q in range(nt_n):
        g = touched_node[q]
        k_node[g] = max(k_node[g], on_node[g])
    for q in range(nt_s):
        g = touched_socket[q]
        k_socket[g] = max(k_socket[g], on_socket[g])
    return True
