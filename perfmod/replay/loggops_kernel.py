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

Layout, for speed: what an event reads of its node (rank, type, size, peer,
tag, matching-queue link, open dependencies, protocol) is one 64-byte row,
a send's message parameters another; the event queue is a binary heap of
``(time, sequence, key)`` rows, where an event that only moves in time (a
resource busy) or a send that becomes its message replaces the top instead
of a pop and a push (sequences are unique, so the order is unchanged).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["run_loggops", "STATUS_OK", "STATUS_DEADLOCK"]

STATUS_OK = 0
STATUS_DEADLOCK = 1
_SEND, _RECV, _CALC = 1, 2, 3
_WILD = -1
# columns of the kernel's node rows (what one event reads of its node, in one cache line)
_C_RANK, _C_KIND, _C_SIZE, _C_PEER, _C_TAG, _C_LINK, _C_NDEPS, _C_RNDV = range(8)
_NCOL = 8  # one cache line per node
# columns of a send's message parameters
_P_O, _P_G, _P_L, _P_GN = range(4)


@njit(cache=True, inline="always")
def _push(hp, size, t, ts, key):
    """Push ``(t, ts, key)`` on the binary heap ``hp`` (rows ``(time, sequence, key)``, least first)."""
    i = size[0]
    while i > 0:
        p = (i - 1) >> 1
        pt = hp[p, 0]
        if pt < t or (pt == t and hp[p, 1] < ts):
            break
        hp[i, 0], hp[i, 1], hp[i, 2] = pt, hp[p, 1], hp[p, 2]
        i = p
    hp[i, 0], hp[i, 1], hp[i, 2] = t, ts, key
    size[0] += 1


@njit(cache=True, inline="always")
def _sift_down(hp, n, lt, ls, lk):
    """Put ``(lt, ls, lk)`` at the root of the heap of ``n`` rows and sift it down."""
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and (hp[c + 1, 0] < hp[c, 0] or (hp[c + 1, 0] == hp[c, 0] and hp[c + 1, 1] < hp[c, 1])):
            c += 1
        if lt < hp[c, 0] or (lt == hp[c, 0] and ls < hp[c, 1]):
            break
        hp[i, 0], hp[i, 1], hp[i, 2] = hp[c, 0], hp[c, 1], hp[c, 2]
        i = c
    hp[i, 0], hp[i, 1], hp[i, 2] = lt, ls, lk


@njit(cache=True, inline="always")
def _pop(hp, size):
    """Remove the least row of the heap (the caller has read it at ``hp[0]``)."""
    n = size[0] - 1
    size[0] = n
    if n > 0:
        _sift_down(hp, n, hp[n, 0], hp[n, 1], hp[n, 2])


@njit(cache=True, inline="always")
def _done(v, t, rr, done, nexto_h, nd, succ_ptr, succ, fbuf, nfree):
    """Mark node ``v`` done at ``t``; append the nodes it frees to ``fbuf``."""
    done[v] = t
    rr[v] = nexto_h
    return _started(v, succ_ptr, succ, nd, fbuf, nfree)  # the same release, over the done-successors


@njit(cache=True, inline="always")
def _started(v, ssucc_ptr, ssucc, nd, fbuf, nfree):
    """Node ``v`` starts: append the nodes that only waited for its start (GOAL's ``irequires``) to ``fbuf``.

    Given the done-successor lists instead, it releases what waited for ``v`` to finish (:func:`_done`)."""
    for q in range(ssucc_ptr[v], ssucc_ptr[v + 1]):
        w = ssucc[q]
        nd[w, _C_NDEPS] -= 1
        if nd[w, _C_NDEPS] == 0:
            fbuf[nfree] = w
            nfree += 1
    return nfree


@njit(cache=True, inline="always")
def _match(v, m, t, h, mate, rz, nd, nexto, nextgs, rr, done, succ_ptr, succ, fbuf, nfree, fhost, nh):
    """Complete receive ``v`` (rank ``h``) with message ``m`` at ``t``.

    A rendezvous (``rz``) send is done now too: its sender's CPU and send NIC are
    held until at least ``t`` and the sender is added to the hosts whose
    freed operations are queued (``fhost``; adding ``h`` is the caller's).
    Returns the new ``(nfree, nh)``.
    """
    mate[v], mate[m] = m, v
    if rz:
        s = nd[m, _C_RANK]
        nexto[s] = max(nexto[s], t)
        nextgs[s] = max(nextgs[s], t)
        nfree = _done(m, t, rr, done, nexto[s], nd, succ_ptr, succ, fbuf, nfree)
        fhost[nh] = s
        nh += 1
    nfree = _done(v, t, rr, done, nexto[h], nd, succ_ptr, succ, fbuf, nfree)
    return nfree, nh


@njit(cache=True, inline="always")
def _find(h, src, tag, head, tail, nd, is_recv_queue):
    """Unlink and return the first entry of queue ``head[h]`` matching (src, tag) (-1: none)."""
    prev = -1
    y = head[h]
    col = _C_PEER if is_recv_queue else _C_RANK
    while y >= 0:
        ysrc = nd[y, col]
        yt = nd[y, _C_TAG]
        if (src == _WILD or ysrc == _WILD or ysrc == src) and (tag == _WILD or yt == _WILD or yt == tag):
            if prev < 0:
                head[h] = nd[y, _C_LINK]
            else:
                nd[prev, _C_LINK] = nd[y, _C_LINK]
            if tail[h] == y:
                tail[h] = prev
            return y
        prev = y
        y = nd[y, _C_LINK]
    return -1


@njit(cache=True, inline="always")
def _append(h, x, head, tail, nd):
    nd[x, _C_LINK] = -1
    if head[h] < 0:
        head[h] = x
    else:
        nd[tail[h], _C_LINK] = x
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
    if n <= 16:  # the introsort loop does nothing: only the insertion sort
        for i in range(1, n):
            _ins(a, key, 0, i, True)
        return True
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

    ``ndeps`` counts the requires plus irequires of each node; ``succ`` lists the nodes freed when a node is done,
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
    nd = np.empty((nn, _NCOL), dtype=np.int64)  # the node rows (_C_*): read together, so packed together
    mp = np.empty((nn, 4), dtype=np.int64)  # a send's o, g, L, (n - 1) G
    for v in range(nn):
        nd[v, _C_RANK], nd[v, _C_KIND], nd[v, _C_SIZE], nd[v, _C_PEER] = rank[v], kind[v], size[v], peer[v]
        nd[v, _C_TAG], nd[v, _C_LINK], nd[v, _C_NDEPS], nd[v, _C_RNDV] = tag[v], -1, ndeps[v], rndv[v]
        mp[v, _P_O], mp[v, _P_G], mp[v, _P_L], mp[v, _P_GN] = m_o[v], m_g[v], m_L[v], m_Gn[v]
    nexto = np.zeros(nprocs, dtype=np.int64)
    nextgs = np.zeros(nprocs, dtype=np.int64)
    nextgr = np.zeros(nprocs, dtype=np.int64)
    done = np.full(nn, -1, dtype=np.int64)
    rr = np.full(nn, -1, dtype=np.int64)
    mate = np.full(nn, -1, dtype=np.int64)
    rq_head = np.full(nprocs, -1, dtype=np.int64)
    rq_tail = np.full(nprocs, -1, dtype=np.int64)
    uq_head = np.full(nprocs, -1, dtype=np.int64)
    uq_tail = np.full(nprocs, -1, dtype=np.int64)
    cap = 2 * nn + 16
    hp = np.empty((cap, 3), dtype=np.int64)
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
            if nd[v, _C_NDEPS] == 0:
                sbuf[m] = v
                m += 1
        if not _std_sort(sbuf, m, kind):
            inexact += 1
        for q in range(m):
            _push(hp, hsize, 0, aqtime, sbuf[q])
            aqtime += 1
        start = stop
    while hsize[0] > 0:
        # the least (time, sequence) event; an event that only moves in time, or a send that becomes its
        # message, replaces it in place (sequences are unique, so the order of events is the same)
        t, ts, key = hp[0, 0], hp[0, 1], hp[0, 2]
        nfree = 0
        nh = 0
        if key < nn:
            v = key
            h = nd[v, _C_RANK]
            ty = nd[v, _C_KIND]
            if ty == _CALC:
                if nexto[h] <= t:
                    _pop(hp, hsize)
                    nexto[h] = t + nd[v, _C_SIZE]
                    nfree = _started(v, ssucc_ptr, ssucc, nd, fbuf, nfree)
                    nfree = _done(v, t, rr, done, nexto[h], nd, succ_ptr, succ, fbuf, nfree)
                    fhost[nh] = h
                    nh += 1
                else:
                    _sift_down(hp, hsize[0], nexto[h], ts, v)
            elif ty == _SEND:
                avail = max(nexto[h], nextgs[h])
                if avail <= t:
                    nfree = _started(v, ssucc_ptr, ssucc, nd, fbuf, nfree)
                    nexto[h] = t + mp[v, _P_O]
                    nextgs[h] = t + mp[v, _P_G] + mp[v, _P_GN]
                    _sift_down(hp, hsize[0], t + mp[v, _P_O] + mp[v, _P_L], aqtime, nn + v)
                    aqtime += 1
                    if not nd[v, _C_RNDV]:
                        nfree = _done(v, t, rr, done, nexto[h], nd, succ_ptr, succ, fbuf, nfree)
                    fhost[nh] = h
                    nh += 1
                else:
                    _sift_down(hp, hsize[0], avail, ts, v)
            else:  # receive: posted at once
                _pop(hp, hsize)
                fhost[nh] = h
                nh += 1
                nfree = _started(v, ssucc_ptr, ssucc, nd, fbuf, nfree)
                m = _find(h, nd[v, _C_PEER], nd[v, _C_TAG], uq_head, uq_tail, nd, False)
                if m >= 0:
                    rz = nd[v, _C_RNDV] if recv_decides else nd[m, _C_RNDV]
                    nfree, nh = _match(v, m, t, h, mate, rz != 0, nd, nexto, nextgs, rr, done, succ_ptr, succ, fbuf,
                                       nfree, fhost, nh)
                else:
                    _append(h, v, rq_head, rq_tail, nd)
        else:  # a message arrives at its receiver
            m = key - nn
            h = nd[m, _C_PEER]
            avail = max(nexto[h], nextgr[h])
            if avail <= t:
                _pop(hp, hsize)
                nexto[h] = t + mp[m, _P_O] + mp[m, _P_GN]
                nextgr[h] = t + mp[m, _P_G] + mp[m, _P_GN]
                v = _find(h, nd[m, _C_RANK], nd[m, _C_TAG], rq_head, rq_tail, nd, True)
                if v >= 0:
                    nfree, nh = _match(v, m, t, h, mate, nd[m, _C_RNDV] != 0, nd, nexto, nextgs, rr, done, succ_ptr,
                                       succ, fbuf, nfree, fhost, nh)
                    fhost[nh] = h
                    nh += 1
                else:
                    _append(h, m, uq_head, uq_tail, nd)
            else:
                _sift_down(hp, hsize[0], avail, ts, key)
        if nfree == 0:
            continue
        if nh == 1:  # one rank freed operations (the usual case): sort and queue them
            h = fhost[0]
            if not _std_sort(fbuf, nfree, kind):
                inexact += 1
            for q in range(nfree):
                w = fbuf[q]
                tw = max(nexto[h], nextgs[h]) if kind[w] == _SEND else nexto[h]
                _push(hp, hsize, tw, aqtime, w)
                aqtime += 1
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
                if nd[fbuf[q], _C_RANK] == nxt:
                    sbuf[m] = fbuf[q]
                    m += 1
            if not _std_sort(sbuf, m, kind):
                inexact += 1
            for q in range(m):
                w = sbuf[q]
                tw = max(nexto[nxt], nextgs[nxt]) if kind[w] == _SEND else nexto[nxt]
                _push(hp, hsize, tw, aqtime, w)
                aqtime += 1
    status = STATUS_OK
    for v in range(nn):
        if done[v] < 0:
            status = STATUS_DEADLOCK
            break
    return status, done, rr, mate, nexto, inexact
