"""Each rank's GOAL operations in one posting order, compiled: the steps of :func:`~.goal_trace.goal_to_trace`.

The rules are :mod:`perfmod.trace.formats.goal_trace`'s (its module
docstring): an operation is posted once everything it ``requires`` has
completed and everything it ``irequires`` has been posted, the lowest of
those ready first (operations numbered in the rank's file order); a
``calc`` completes when posted; when nothing can be posted, the rank waits
for the unfinished operations that the lowest blocked one requires; at its
end it waits for every send and receive still open.  A dependency written
twice (Schedgen writes some) is waited for once.  :func:`post_order`
runs them for every rank of a graph read by
:func:`~perfmod.trace.formats.goal_scan.read_goal_graph` in one compiled
pass, where a Python loop had taken each operation in turn (the docs'
replay page gives the times measured).
"""

from __future__ import annotations

import numpy as np

from perfmod.core.kernel_cache import njit

__all__ = ["POST", "WAIT", "post_order"]

POST, WAIT = 0, 1  #: a step: post an operation, or wait for requests


@njit(cache=True)
def _push(heap, n, x):
    """Push ``x`` on the binary min-heap ``heap[:n]``; returns the new size."""
    i = n
    heap[i] = x
    while i > 0:
        p = (i - 1) >> 1
        if heap[p] <= x:
            break
        heap[i] = heap[p]
        i = p
    heap[i] = x
    return n + 1


@njit(cache=True)
def _pop(heap, n):
    """Remove the least of ``heap[:n]``; returns the new size (the least was ``heap[0]``)."""
    n -= 1
    x = heap[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] >= x:
            break
        heap[i] = heap[c]
        i = c
    if n > 0:
        heap[i] = x
    return n


@njit(cache=True)
def _complete(j, done, need_done, need_posted, succ_ptr, succ, ready, nr):
    """Operation ``j`` completed: what required it may become ready."""
    done[j] = True
    for q in range(succ_ptr[j], succ_ptr[j + 1]):
        i = succ[q]
        need_done[i] -= 1
        if need_done[i] == 0 and need_posted[i] == 0:
            nr = _push(ready, nr, i)
    return nr


@njit(cache=True)
def _posted(k, ptr, nodes, need_done, need_posted, ready, nr, waitable, nq):
    """Operation ``k`` posted: of those requiring it (or irequiring: ``ptr``/``nodes``), each with nothing
    left to be posted goes to ``ready`` if nothing it requires is open, else to ``waitable``."""
    for q in range(ptr[k], ptr[k + 1]):
        i = nodes[q]
        need_posted[i] -= 1
        if need_posted[i] == 0:
            if need_done[i] == 0:
                nr = _push(ready, nr, i)
            else:
                nq = _push(waitable, nq, i)
    return nr, nq


@njit(cache=True)
def post_order(rank_ptr, calc, ndeps, succ_ptr, succ, ssucc_ptr, ssucc, pred_ptr, pred):
    """The steps of every rank (module docstring) of a graph whose nodes are in rank order.

    ``calc``: per node, whether it is a ``calc`` (else a send or receive: a request); ``ndeps`` its
    ``requires`` plus ``irequires``; ``succ_ptr``/``succ`` the nodes requiring each node, ``ssucc_ptr``/``ssucc``
    those irequiring it, ``pred_ptr``/``pred`` those it requires (ascending).
    Returns ``(step, node, wptr, wnode, request, cycle)``: per step its kind (:data:`POST`, :data:`WAIT`)
    and the node posted (for a wait: the first node waited for); a wait's nodes
    ``wnode[wptr[w]:wptr[w + 1]]`` (``w`` counting the waits); each node's request number on its rank
    (order of posting among the rank's sends and receives; -1 a calc); ``cycle`` the first node never posted
    (its rank's dependencies form a cycle; -1 none).
    """
    nn = calc.size
    nprocs = rank_ptr.size - 1
    need_done = np.diff(pred_ptr)  # requires not yet completed
    need_posted = ndeps.copy()  # requires and irequires not yet posted
    posted = np.zeros(nn, dtype=np.bool_)
    done = np.zeros(nn, dtype=np.bool_)
    request = np.full(nn, -1, dtype=np.int64)
    step = np.empty(2 * nn + nprocs, dtype=np.int8)
    node = np.empty(2 * nn + nprocs, dtype=np.int64)
    wptr = np.zeros(nn + nprocs + 1, dtype=np.int64)
    wnode = np.empty(pred_ptr[nn] + nn, dtype=np.int64)
    cap = 1
    for r in range(nprocs):
        b, e = rank_ptr[r], rank_ptr[r + 1]
        cap = max(cap, (e - b) + (succ_ptr[e] - succ_ptr[b]) + (ssucc_ptr[e] - ssucc_ptr[b]) + 1)
    ready = np.empty(cap, dtype=np.int64)
    waitable = np.empty(cap, dtype=np.int64)
    ns = 0
    nw = 0
    cycle = -1
    for r in range(nprocs):
        b, e = rank_ptr[r], rank_ptr[r + 1]
        nr = 0
        nq = 0
        nreq = 0
        for k in range(b, e):  # ascending: already a heap
            if need_posted[k] == 0:
                ready[nr] = k
                nr += 1
        while True:
            while nr > 0:
                k = ready[0]
                nr = _pop(ready, nr)
                if posted[k]:
                    continue
                posted[k] = True
                step[ns] = POST
                node[ns] = k
                ns += 1
                if not calc[k]:
                    request[k] = nreq
                    nreq += 1
                nr, nq = _posted(k, succ_ptr, succ, need_done, need_posted, ready, nr, waitable, nq)
                nr, nq = _posted(k, ssucc_ptr, ssucc, need_done, need_posted, ready, nr, waitable, nq)
                if calc[k]:
                    nr = _complete(k, done, need_done, need_posted, succ_ptr, succ, ready, nr)
            while nq > 0 and (posted[waitable[0]] or need_done[waitable[0]] == 0):
                nq = _pop(waitable, nq)
            if nq == 0:
                break
            k = waitable[0]
            nq = _pop(waitable, nq)
            w0 = wptr[nw]
            m = w0
            for q in range(pred_ptr[k], pred_ptr[k + 1]):  # ascending: what a rank waits for, each once
                j = pred[q]
                if not done[j] and (m == w0 or wnode[m - 1] != j):  # a dependency written twice: one request
                    wnode[m] = j
                    m += 1
            step[ns] = WAIT
            node[ns] = wnode[w0]
            ns += 1
            nw += 1
            wptr[nw] = m
            for q in range(w0, m):
                nr = _complete(wnode[q], done, need_done, need_posted, succ_ptr, succ, ready, nr)
        for k in range(b, e):
            if not posted[k]:
                cycle = k
                break
        if cycle >= 0:
            break
        w0 = wptr[nw]
        m = w0
        for k in range(b, e):  # the rank's end: every send and receive still open
            if not calc[k] and not done[k]:
                wnode[m] = k
                m += 1
        if m > w0:
            step[ns] = WAIT
            node[ns] = wnode[w0]
            ns += 1
            nw += 1
            wptr[nw] = m
    return step[:ns], node[:ns], wptr[:nw + 1], wnode[:wptr[nw]], request, cycle
