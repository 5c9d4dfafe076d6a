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
  receive before calc (LogGOPSim sorts them with ``std::sort``, which for up
  to 16 operations keeps their order within a type; perfmod always keeps it),
  at the CPU's time (a send: the later of CPU and send NIC).

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
def run_loggops(nprocs, rank, kind, size, peer, tag, ndeps, succ_ptr, succ, m_o, m_g, m_L, m_Gn, rndv):
    """Simulate the graph (see the module docstring).

    ``ndeps`` is consumed (a copy is the caller's business); ``m_*`` are the
    send nodes' o, g, L and (n - 1) G in picoseconds, ``rndv`` their protocol.
    Returns ``(status, done, rr, mate, nexto)``: per node the time it was
    marked done (-1: never) and the CPU's time then (what requires it is
    queued at), the node it matched (sends and receives, -1 none), and each
    rank's CPU time at the end (LogGOPSim's finishing time per host).
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
    aqtime = 0
    # initial free operations: per rank, in node order, sorted by type, at time 0
    start = 0
    while start < nn:
        h = rank[start]
        stop = start
        while stop < nn and rank[stop] == h:
            stop += 1
        for ty in (_SEND, _RECV, _CALC):
            for v in range(start, stop):
                if ndeps[v] == 0 and kind[v] == ty:
                    _push(ht, hs, hk, hsize, 0, aqtime, v)
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
                    nfree = _done(v, t, rr, done, nexto[h], ndeps, succ_ptr, succ, fbuf, nfree)
                    fhost[nh] = h
                    nh += 1
                else:
                    _push(ht, hs, hk, hsize, nexto[h], ts, v)
            elif ty == _SEND:
                avail = max(nexto[h], nextgs[h])
                if avail <= t:
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
                m = _find(h, peer[v], tag[v], uq_head, uq_tail, link, peer, tag, rank, False)
                if m >= 0:
                    mate[v], mate[m] = m, v
                    if rndv[m]:
                        s = rank[m]
                        nexto[s] = max(nexto[s], t)
                        nextgs[s] = max(nextgs[s], t)
                        nfree = _done(m, t, rr, done, nexto[s], ndeps, succ_ptr, succ, fbuf, nfree)
                        fhost[nh] = s
                        nh += 1
                    nfree = _done(v, t, rr, done, nexto[h], ndeps, succ_ptr, succ, fbuf, nfree)
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
                    mate[v], mate[m] = m, v
                    if rndv[m]:
                        s = rank[m]
                        nexto[s] = max(nexto[s], t)
                        nextgs[s] = max(nextgs[s], t)
                        nfree = _done(m, t, rr, done, nexto[s], ndeps, succ_ptr, succ, fbuf, nfree)
                        fhost[nh] = s
                        nh += 1
                    nfree = _done(v, t, rr, done, nexto[h], ndeps, succ_ptr, succ, fbuf, nfree)
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
            for ty in (_SEND, _RECV, _CALC):
                for q in range(nfree):
                    w = fbuf[q]
                    if rank[w] == nxt and kind[w] == ty:
                        tw = max(nexto[nxt], nextgs[nxt]) if ty == _SEND else nexto[nxt]
                        _push(ht, hs, hk, hsize, tw, aqtime, w)
                        aqtime += 1
    status = STATUS_OK
    for v in range(nn):
        if done[v] < 0:
            status = STATUS_DEADLOCK
            break
    return status, done, rr, mate, nexto
