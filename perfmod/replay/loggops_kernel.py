"""LogGOPS as LogGOPSim computes it: the compiled event loop of the ``loggp`` replay (numba).

A transcription, for facts, of the main loop of LogGOPSim
(github.com/spcl/LogGOPSim, ``src/LogGOPSim/LogGOPSim.cpp``, one CPU and
one NIC per rank, O = 0, no noise, the LogGP network) run on a
:class:`~perfmod.replay.graph.Graph`.  Each rank has three clocks: its CPU
(``nexto``), its NIC for sending (``nextgs``) and for receiving
(``nextgr``).  Operations whose dependencies are done are queued with a
time and a sequence number (``ts``, the order of creation) and processed in
(time, ts) order:

- ``calc`` of c: runs when the CPU is free: ``nexto = t + c``;
- ``send`` of n bytes: starts when CPU and send NIC are free:
  ``nexto = t + o``, ``nextgs = t + g + (n - 1) G``; the message reaches
  the receiver at ``t + o + L``; an eager send (``n <= S``) is done at
  ``t`` (what requires it is queued at the CPU's time, ``t + o``), a
  rendezvous send when its receive is matched (and the sender's CPU and
  NIC are then held until at least that time);
- a message that arrives is taken in when the receiver's CPU and receive
  NIC are free: ``nexto = t + o + (n - 1) G``, ``nextgr = t + g + (n - 1) G``;
  it completes the first posted receive that matches it (source and tag,
  wildcards either side), else waits in the unexpected queue;
- ``recv``: posted at once (no CPU); it completes at once with the first
  matching message in the unexpected queue;
- an operation that cannot have its resource is queued again at the time
  the resource frees, keeping its ts; operations freed by one event are
  queued per rank (ranks in increasing order) sorted by type, send before
  receive before calc, in the order GCC's ``std::sort`` leaves them
  (LogGOPSim's sort: it keeps the order within a type for up to 16
  operations and not always beyond), at the CPU's time (a send: the later
  of CPU and send NIC).

Times are int64 picoseconds, so equal times compare equal (LogGOPSim uses
integer nanoseconds).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["run_loggops", "STATUS_OK", "STATUS_DEADLOCK"]

STATUS_OK = 0
STATUS_DEADLOCK = 1
_SEND, _RECV, _CALC = 1, 2, 3
_WILD = -1


@njit(cache=True)
def _before(ht, hs, a, b):
    return ht[a] < ht[b] or (ht[a] == ht[b] and hs[a] < hs[b])


@njit(cache=True)
def _push(ht, hs, hk, size, t, ts, key):
    i = size[0]
    ht[i], hs[i], hk[i] = t, ts, key
    while i > 0:
        p = (i - 1) // 2
        if not _before(ht, hs, i, p):
            break
        ht[i], ht[p] = ht[p], ht[i]
        hs[i], hs[p] = hs[p], hs[i]
        hk[i], hk[p] = hk[p], hk[i]
        i = p
    size[0] += 1


@njit(cache=True)
def _pop(ht, hs, hk, size):
    n = size[0] - 1
    t, ts, k = ht[0], hs[0], hk[0]
    ht[0], hs[0], hk[0] = ht[n], hs[n], hk[n]
    size[0] = n
    i = 0
    while True:
        a, b, m = 2 * i + 1, 2 * i + 2, i
        if a < n and _before(ht, hs, a, m):
            m = a
        if b < n and _before(ht, hs, b, m):
            m = b
        if m == i:
            break
        ht[i], ht[m] = ht[m], ht[i]
        hs[i], hs[m] = hs[m], hs[i]
        hk[i], hk[m] = hk[m], hk[i]
        i = m
    return t, ts, k


@njit(cache=True)
def _done(v, t, rr, done, nexto_h, ndeps, succ_ptr, succ, fbuf, nfree):
    """Mark node ``v`` done at ``t``; append the nodes it frees to ``fbuf``."""
    done[v] = t
    rr[v] = nexto_h
    for q in range(succ_ptr[v], succ_ptr[v + 1]):
        w = succ[q]
        ndeps[w] -= 1
        if ndeps[w] == 0:
            fbuf[nfree] = w
            nfree += 1
    return nfree


@njit(cache=True)
def _started(v, ssucc_ptr, ssucc, ndeps, fbuf, nfree):
    """Node ``v`` starts: append the nodes that only waited for its start (GOAL's ``irequires``) to ``fbuf``."""
    for q in range(ssucc_ptr[v], ssucc_ptr[v + 1]):
        w = ssucc[q]
        ndeps[w] -= 1
        if ndeps[w] == 0:
            fbuf[nfree] = w
            nfree += 1
    return nfree


@njit(cache=True)
def _match(v, m, t, h, mate, rz, rank, nexto, nextgs, rr, done, ndeps, succ_ptr, succ, fbuf, nfree, fhost, nh):
    """Complete receive ``v`` (rank ``h``) with message ``m`` at ``t``.

    A rendezvous (``rz``) send is done now too: its sender's CPU and send NIC are
    held until at least ``t`` and the sender is added to the hosts whose
    freed operations are queued (``fhost``; adding ``h`` is the caller's).
    Returns the new ``(nfree, nh)``.
    """
    mate[v], mate[m] = m, v
    if rz:
        s = rank[m]
        nexto[s] = max(nexto[s], t)
        nextgs[s] = max(nextgs[s], t)
        nfree = _done(m, t, rr, done, nexto[s], ndeps, succ_ptr, succ, fbuf, nfree)
        fhost[nh] = s
        nh += 1
    nfree = _done(v, t, rr, done, nexto[h], ndeps, succ_ptr, succ, fbuf, nfree)
    return nfree, nh


@njit(cache=True)
def _find(h, src, tag, head, tail, link, peer, tag_of, rank, is_recv_queue):
    """Unlink and return the first entry of queue ``head[h]`` matching (src, tag) (-1: none)."""
    prev = -1
    y = head[h]
    while y >= 0:
        ysrc = peer[y] if is_recv_queue else rank[y]
        if (src == _WILD or ysrc == _WILD or ysrc == src) and (tag == _WILD or tag_of[y] == _WILD or tag_of[y] == tag):
            if prev < 0:
                head[h] = link[y]
            else:
                link[prev] = link[y]
            if tail[h] == y:
                tail[h] = prev
            return y
        prev = y
        y = link[y]
    return -1


@njit(cache=True)
def _append(h, x, head, tail, link):
    link[x] = -1
    if head[h] < 0:
        head[h] = x
    else:
        link[tail[h]] = x
    tail[h] = x


@njit(cache=True)
def _ins(a, key, lo, i, guarded):
    """libstdc++'s linear insert of ``a[i]`` into the sorted ``a[lo:i]`` (``guarded``: check ``lo`` first)."""
    v = a[i]
    if guarded and key[v] < key[a[lo]]:
        for j in range(i, lo, -1):
            a[j] = a[j - 1]
        a[lo] = v
        return
    j = i
    while key[v] < key[a[j - 1]]:
        a[j] = a[j - 1]
        j -= 1
    a[j] = v


@njit(cache=True)
def _std_sort(a, n, key):
    """Sort ``a[:n]`` by ``key[a]`` exactly as GCC's ``std::sort`` does (introsort, then insertion sort).

    LogGOPSim sorts the operations freed by one event with ``std::sort``,
    which is not stable above 16 elements; replaying its order keeps the
    simulations equal.  The heap-sort fallback (recursion depth beyond
    ``2 lg n``) is not reproduced: there a stable sort is used, which cannot
    happen with three keys in practice.  Returns False if it did.
    """
    exact = True
    stack_lo = np.empty(128, dtype=np.int64)
    stack_hi = np.empty(128, dtype=np.int64)
    stack_d = np.empty(128, dtype=np.int64)
    depth = 0
    m = n
    while m > 1:
        depth += 1
        m >>= 1
    sp = 0
    stack_lo[0], stack_hi[0], stack_d[0] = 0, n, 2 * (depth if n > 1 else 0)
    sp = 1
    while sp > 0:  # __introsort_loop(lo, hi, d): partition, recurse on the right, loop on the left
        sp -= 1
        lo, hi, d = stack_lo[sp], stack_hi[sp], stack_d[sp]
        while hi - lo > 16:
            if d == 0:
                exact = False
                seg = a[lo:hi].copy()
                order = np.argsort(key[seg], kind="mergesort")
                a[lo:hi] = seg[order]
                break
            d -= 1
            mid = lo + (hi - lo) // 2
            x, y, z = lo + 1, mid, hi - 1  # __move_median_to_first(lo, lo + 1, mid, hi - 1)
            if key[a[x]] < key[a[y]]:
                c = y if key[a[y]] < key[a[z]] else (z if key[a[x]] < key[a[z]] else x)
            else:
                c = x if key[a[x]] < key[a[z]] else (z if key[a[y]] < key[a[z]] else y)
            a[lo], a[c] = a[c], a[lo]
            f, last = lo + 1, hi  # __unguarded_partition(lo + 1, hi, pivot = lo)
            pk = key[a[lo]]
            while True:
                while key[a[f]] < pk:
                    f += 1
                last -= 1
                while pk < key[a[last]]:
                    last -= 1
                if not f < last:
                    break
                a[f], a[last] = a[last], a[f]
                f += 1
            stack_lo[sp], stack_hi[sp], stack_d[sp] = f, hi, d
            sp += 1
            hi = f
    # __final_insertion_sort
    if n > 16:
        for i in range(1, 16):
            _ins(a, key, 0, i, True)
        for i in range(16, n):
            _ins(a, key, 0, i, False)
    else:
        for i in range(1, n):
            _ins(a, key, 0, i, True)
    return exact


@njit(cache=True)
def run_loggops(nprocs, rank, kind, size, peer, tag, ndeps, succ_ptr, succ, ssucc_ptr, ssucc, m_o, m_g, m_L, m_Gn,
                rndv, recv_decides):
    """Simulate the graph (see the module docstring).

    ``ndeps`` (requires plus irequires of each node) is consumed (a copy is the
    caller's business); ``succ`` lists the nodes freed when a node is done,
    ``ssucc`` those freed when it starts (GOAL's ``irequires``: LogGOPSim's
    ``MarkNodeAsStarted``, before ``MarkNodeAsDone``); ``m_*`` are the
    send nodes' o, g, L and (n - 1) G in picoseconds, ``rndv`` their protocol.
    With ``recv_decides``, a receive that finds its message already there
    takes the protocol from its own ``rndv`` (its own size), as LogGOPSim
    does (a rendezvous receive of an eager message marks that send done a
    second time there, and so here); else from the send's.
    Returns ``(status, done, rr, mate, nexto, inexact)``: per node the time
    it was marked done (-1: never) and the CPU's time then (what requires it
    is queued at), the node it matched (sends and receives, -1 none), each
    rank's CPU time at the end (LogGOPSim's finishing time per host), and
    how many sorts could not follow ``std::sort`` (:func:`_std_sort`).
    """
    nn = kind.size
    nexto = np.zeros(nprocs, dtype=np.int64)
    nextgs = np.zeros(nprocs, dtype=np.int64)
    nextgr = np.zeros(nprocs, dtype=np.int64)
    done = np.full(nn, -1, dtype=np.int64)
    rr = np.full(nn, -1, dtype=np.int64)
    mate = np.full(nn, -1, dtype=np.int64)
    link = np.full(nn, -1, dtype=np.int64)
    rq_head = np.full(nprocs, -1, dtype=np.int64)
    rq_tail = np.full(nprocs, -1, dtype=np.int64)
    uq_head = np.full(nprocs, -1, dtype=np.int64)
    uq_tail = np.full(nprocs, -1, dtype=np.int64)
    cap = 2 * nn + 16
    ht = np.empty(cap, dtype=np.int64)
    hs = np.empty(cap, dtype=np.int64)
    hk = np.empty(cap, dtype=np.int64)
    hsize = np.zeros(1, dtype=np.int64)
    fbuf = np.empty(nn + 1, dtype=np.int64)  # nodes freed by the current event, in order
    fhost = np.empty(4, dtype=np.int64)
    sbuf = np.empty(nn + 1, dtype=np.int64)
    inexact = 0  # sorts that fell back from std::sort's order (see _std_sort)
    aqtime = 0
    # initial free operations: per rank, in node order, sorted by type, at time 0
    start = 0
    while start < nn:
        h = rank[start]
        stop = start
        while stop < nn and rank[stop] == h:
            stop += 1
        m = 0
        for v in range(start, stop):
            if ndeps[v] == 0:
                sbuf[m] = v
                m += 1
        if not _std_sort(sbuf, m, kind):
            inexact += 1
        for q in range(m):
            _push(ht, hs, hk, hsize, 0, aqtime, sbuf[q])
            aqtime += 1
        start = stop
    while hsize[0] > 0:
        t, ts, key = _pop(ht, hs, hk, hsize)
        nfree = 0
        nh = 0
        if key < nn:
            v = key
            h = rank[v]
            ty = kind[v]
            if ty == _CALC:
                if nexto[h] <= t:
                    nexto[h] = t + size[v]
                    nfree = _started(v, ssucc_ptr, ssucc, ndeps, fbuf, nfree)
                    nfree = _done(v, t, rr, done, nexto[h], ndeps, succ_ptr, succ, fbuf, nfree)
                    fhost[nh] = h
                    nh += 1
                else:
                    _push(ht, hs, hk, hsize, nexto[h], ts, v)
            elif ty == _SEND:
                avail = max(nexto[h], nextgs[h])
                if avail <= t:
                    nfree = _started(v, ssucc_ptr, ssucc, ndeps, fbuf, nfree)
                    nexto[h] = t + m_o[v]
                    nextgs[h] = t + m_g[v] + m_Gn[v]
                    _push(ht, hs, hk, hsize, t + m_o[v] + m_L[v], aqtime, nn + v)
                    aqtime += 1
                    if not rndv[v]:
                        nfree = _done(v, t, rr, done, nexto[h], ndeps, succ_ptr, succ, fbuf, nfree)
                    fhost[nh] = h
                    nh += 1
                else:
                    _push(ht, hs, hk, hsize, avail, ts, v)
            else:  # receive: posted at once
                fhost[nh] = h
                nh += 1
                nfree = _started(v, ssucc_ptr, ssucc, ndeps, fbuf, nfree)
                m = _find(h, peer[v], tag[v], uq_head, uq_tail, link, peer, tag, rank, False)
                if m >= 0:
                    rz = rndv[v] if recv_decides else rndv[m]
                    nfree, nh = _match(v, m, t, h, mate, rz, rank, nexto, nextgs, rr, done,
                                       ndeps, succ_ptr, succ, fbuf, nfree, fhost, nh)
                else:
                    _append(h, v, rq_head, rq_tail, link)
        else:  # a message arrives at its receiver
            m = key - nn
            h = peer[m]
            avail = max(nexto[h], nextgr[h])
            if avail <= t:
                nexto[h] = t + m_o[m] + m_Gn[m]
                nextgr[h] = t + m_g[m] + m_Gn[m]
                v = _find(h, rank[m], tag[m], rq_head, rq_tail, link, peer, tag, rank, True)
                if v >= 0:
                    nfree, nh = _match(v, m, t, h, mate, rndv[m], rank, nexto, nextgs, rr, done,
                                       ndeps, succ_ptr, succ, fbuf, nfree, fhost, nh)
                    fhost[nh] = h
                    nh += 1
                else:
                    _append(h, m, uq_head, uq_tail, link)
            else:
                _push(ht, hs, hk, hsize, avail, ts, key)
        if nfree == 0:
            continue
        # queue the freed operations: ranks in increasing order, each sorted by type (stable)
        lo = -1
        for _ in range(nh):
            nxt = -1
            for q in range(nh):
                if fhost[q] > lo and (nxt < 0 or fhost[q] < nxt):
                    nxt = fhost[q]
            if nxt < 0:
                break
            lo = nxt
            m = 0
            for q in range(nfree):
                if rank[fbuf[q]] == nxt:
                    sbuf[m] = fbuf[q]
                    m += 1
            if not _std_sort(sbuf, m, kind):
                inexact += 1
            for q in range(m):
                w = sbuf[q]
                tw = max(nexto[nxt], nextgs[nxt]) if kind[w] == _SEND else nexto[nxt]
                _push(ht, hs, hk, hsize, tw, aqtime, w)
                aqtime += 1
    status = STATUS_OK
    for v in range(nn):
        if done[v] < 0:
            status = STATUS_DEADLOCK
            break
    return status, done, rr, mate, nexto, inexact
