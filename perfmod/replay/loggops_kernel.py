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

One loop, :func:`_run`, serves a graph held whole (:func:`run_loggops`: a
GOAL file as written, rows of :data:`ROW`) and a trace's graph made as the
loop reaches it (:func:`~perfmod.replay.loggops_stream.run_stream`, slots of
its own layout): what a node layout does when a node is done, starts or is
matched, and after an event's operations are queued, are its hooks
(:func:`on_done`, :func:`on_start`, :func:`on_match`, :func:`on_freed`),
registered per layout as numba overloads (:func:`graph_hooks`) and chosen
when the loop is compiled.  A step function called per event instead
measured 15-20 % slower (it copied some 30 arrays' descriptors per call),
and a function passed as an argument cannot be cached.  Against the two
loops it replaced (2026-11-27, load 0.5-1): the same CPU time on a trace
(Jacobi2D, 16,384 ranks x 10), 5-10 % more on a GOAL file's simulation.

Layout, for speed and memory (issue 23), so that the cost of an operation
does not grow with the number of ranks:

- what an event reads of its node (its duration: a calc's time or a send's
  ``(n - 1) G``; rank, peer, tag, matching-queue link, open dependencies,
  type, protocol, message class) is one 32-byte record (:data:`ROW`); the
  rows are in *time-major* order (:func:`time_major`): the first 16 nodes
  of every rank, ranks in increasing order, then the next 16, ..., so that
  the operations the ranks run at about the same simulated time lie
  together (in a rank-by-rank order each event read another part of the
  array: 0.3 us per operation at 1,536 ranks grew to 0.9 us at 131,072);
- the nodes an event frees are one int32 array, a row's done-successors
  then its start-successors (``eptr[2 u] : eptr[2 u + 1] : eptr[2 u + 2]``);
  a row whose one successor lies within 127 rows after it (a rank's next
  operation, mostly) names it in its own ``snext``, and a row whose two
  successors are two rows in a row so close gives ``-snext``, so that a done node
  reads no other array (the successor list and its pointers were two cache
  misses per operation; 1,536-rank x 20 Jacobi2D schedule, 924,928
  operations: the event loop 0.29-0.31 -> 0.25-0.26 s, 2026-11-28, load 0.6-0.8);
  a send's o, g and L come from a small table by its message class;
- the event queue is a *radix queue* on the integer times (a monotone
  priority queue: no event is queued before the current time, since every
  operation is queued at its rank's CPU time, which is at least the
  current time, or later when a resource is busy): events at the current
  time in ``cur`` in sequence order, the others in 63 buckets by the
  highest bit in which their time differs from the current one, each a
  list of 256-entry blocks; when ``cur`` is spent, the least time of the
  lowest non-empty bucket becomes the current time, its events move into
  ``cur`` (sorted by sequence, where they are not in order already: a
  bucket keeps the order they were pushed in, which is mostly theirs: on
  a 32 x 48 halo of 20 iterations with summit's parameters no refill needed
  the sort and the loop went from 0.17-0.20 s to 0.15-0.16 s; with the
  rendezvous messages of ``make bench``'s LogGOPSim side by side some refills
  still sort and the time did not change measurably) and the rest of that
  bucket into lower buckets.  Pushes and pops read and write whole blocks in order, where
  the 4-ary heap it replaces (an entry per pending operation, up to about
  eight per rank) sifted through memory that outgrew the caches; a new event at
  the current time has the largest sequence yet, so it goes at the end of
  ``cur``.  The loop counts an event queued before the current time and
  returns ``STATUS_EARLY`` (never seen: the caller raises);
- the loop and its helpers are compiled without numba's reference counting
  (``_nrt=False``: they allocate nothing; the queue's refill sorts in place,
  :func:`_sort_head`), so that passing them arrays costs no atomic
  increments (with them, half of the loop's time), and the layout's hooks
  are inlined into the loop (numba's ``inline="always"``), where each call
  had passed some 50 words of array descriptors (2026-11-28, both run at
  once, one core each: a 4,096-rank x 20 Jacobi2D trace's replay 3.19-3.28
  -> 2.64-2.68 CPU-s, its GOAL file's loop at 16,384 x 10 3.39 -> 2.98 s);
  an event that frees one operation queues it in the loop itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.extending import overload
from numba.np.numpy_support import from_dtype

from perfmod.core.bitlen import bit_length
from perfmod.core.kernel_cache import njit
from perfmod.core.prefetch import prefetch
from perfmod.replay.kernel import ACC_COLL, ACC_COMPUTE, ACC_RECV, ACC_SEND, ACC_WAIT
from perfmod.replay.loggops_layout import (
    _CALC,
    _DONE,
    _RECV,
    _SEND,
    _WILD,
    ROW,
    STATUS_DEADLOCK,
    STATUS_EARLY,
    STATUS_OK,
    STATUS_UNEXPECTED,
)
from perfmod.trace.core import COLLECTIVES, WAITS, Call, code_set

__all__ = ["ROW", "fill_rows", "run_loggops", "STATUS_OK", "STATUS_DEADLOCK"]

_P_O, _P_G, _P_L = range(3)  # columns of the message parameter table
_SHIFT = 32  # a heap entry's second word: sequence << _SHIFT | key
#: pops ahead in the current time's events at which the loop prefetches an event's node (its slot or row), and
#: then its rank's CPU and NIC clocks (read from that node, by then in cache): ranks out of step after a trace's
#: first iteration are run in no memory order, and each event's first loads had waited on memory (262,144-rank
#: Jacobi2D x 4, ``run_stream``: 68.8 -> 58.0 s; 16,384 x 10: 5.83 -> 5.63 s; a 16,384 x 5 GOAL file's whole job
#: in-process 2.55 -> 2.30 s; 16 and 6 measured the same as 8 and 3; 2026-11-28, load about 1); at 3 pops also
#: the head of the queue the event will search (a message: its receiver's posted receives; a receive: its rank's
#: unexpected messages), and one pop ahead that queue's first entry (262,144 x 4: 52.9-55.1 -> 50.3-52.0 s in
#: three alternated pairs; 16,384 x 10 and the GOAL file unchanged)
_PF_FAR, _PF_NEAR = 8, 3


_BS = 256  # entries (time, sequence << 32 | key) per block of a bucket of the event queue
_NB = 64  # buckets 1 .. 63 (by the highest bit in which a time differs from the current one); 0 is ``cur``
_LAST, _POS, _END, _FREE, _LIVE, _EARLY = range(6)  # the queue's state words (``qs``)
_FAR = np.iinfo(np.int64).max


@njit(cache=True, _nrt=False)
def _bappend(b, t, k, pool, bnext, bhead, btail, bfill, bmin, fstk, qs):
    """Append ``(t, k)`` to bucket ``b``: a list of blocks of ``_BS`` entries taken from the free stack ``fstk``."""
    tb = btail[b]
    f = bfill[b]
    if tb < 0 or f == _BS:
        qs[_FREE] -= 1
        nb = fstk[qs[_FREE]]
        bnext[nb] = -1
        if tb < 0:
            bhead[b] = nb
        else:
            bnext[tb] = nb
        btail[b] = nb
        tb = nb
        f = 0
    q = 2 * (tb * _BS + f)
    pool[q], pool[q + 1] = t, k
    bfill[b] = f + 1
    if t < bmin[b]:
        bmin[b] = t


@njit(cache=True, _nrt=False)
def _qpush(t, k, cur, pool, bnext, bhead, btail, bfill, bmin, fstk, qs):
    """Queue the event ``(t, k)``: at the current time (``k`` is then larger than any queued: a new sequence)
    at the end of ``cur``, else in the bucket of the highest bit in which ``t`` differs from the current time
    (``t`` is never earlier: see the module docstring)."""
    qs[_LIVE] += 1
    if t < qs[_LAST]:  # cannot happen (the module docstring says why): counted, and the loop reports it
        qs[_EARLY] += 1
    x = t ^ qs[_LAST]
    if x == 0:
        e = qs[_END]
        cur[e] = k
        qs[_END] = e + 1 if e + 1 < cur.size else 0  # a ring: at most nn + 1 entries are queued
        return
    _bappend(bit_length(x), t, k, pool, bnext, bhead, btail, bfill, bmin, fstk, qs)


@njit(cache=True, _nrt=False)
def _qrefill(cur, pool, bnext, bhead, btail, bfill, bmin, fstk, qs):
    """``cur`` is spent: the least time queued becomes the current time; its events move into ``cur``, sorted
    by sequence, the others of their bucket into lower buckets."""
    i = 1
    while bhead[i] < 0:
        i += 1
    m = bmin[i]
    bmin[i] = _FAR
    qs[_LAST] = m
    blk, last_blk, fill_last = bhead[i], btail[i], bfill[i]
    bhead[i], btail[i], bfill[i] = -1, -1, 0
    e = 0
    ordered = True  # the bucket's order is mostly the sequences' already: sort only where it is not
    last = np.int64(-1)
    while blk >= 0:
        cnt = fill_last if blk == last_blk else _BS
        for j in range(cnt):
            q = 2 * (blk * _BS + j)
            tt, kk = pool[q], pool[q + 1]
            x = tt ^ m
            if x == 0:
                cur[e] = kk
                e += 1
                if kk < last:
                    ordered = False
                last = kk
            else:
                _bappend(bit_length(x), tt, kk, pool, bnext, bhead, btail, bfill, bmin, fstk, qs)
        nxt = bnext[blk]
        fstk[qs[_FREE]] = blk
        qs[_FREE] += 1
        blk = nxt
    qs[_POS] = 0
    qs[_END] = e
    if not ordered:
        _sort_head(cur, e)


@njit(cache=True, _nrt=False)
def _sort_head(a, n):
    """Sort ``a[:n]`` in place, allocating nothing (so that the loop compiles without numba's reference
    counting): insertion sort, as the entries are mostly in order already, and heap sort once that has moved
    more than ``8 n`` entries."""
    moved = 0
    for i in range(1, n):
        v = a[i]
        j = i
        while j > 0 and a[j - 1] > v:
            a[j] = a[j - 1]
            j -= 1
        a[j] = v
        moved += i - j
        if moved > 8 * n:
            break
    else:
        return
    for start in range(n // 2 - 1, -1, -1):
        _sift(a, start, n)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift(a, 0, end)


@njit(cache=True, _nrt=False)
def _sift(a, i, n):
    """Heap sort's sift-down of ``a[i]`` in the max-heap ``a[:n]``."""
    v = a[i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and a[c + 1] > a[c]:
            c += 1
        if a[c] <= v:
            break
        a[i] = a[c]
        i = c
    a[i] = v


@njit(cache=True, _nrt=False, inline="always")
def _release_one(w, nd, fbuf, nfree):
    """One dependency of node ``w`` is met: append it to ``fbuf`` if it is free now."""
    k = nd[w].ndeps - 1
    nd[w].ndeps = k
    if k == 0:
        fbuf[nfree] = w
        nfree += 1
    return nfree


@njit(cache=True, _nrt=False)
def _release(lo, hi, edges, nd, fbuf, nfree):
    """One dependency of each node ``edges[lo:hi]`` is met: append those now free to ``fbuf``."""
    for q in range(lo, hi):
        nfree = _release_one(edges[q], nd, fbuf, nfree)
    return nfree


def on_done(v, t, cpu_t, nd, g, fbuf, nfree):
    """:func:`_run`'s hook: mark node ``v`` done at ``t`` (the CPU's time then: ``cpu_t``), append the nodes it
    frees to ``fbuf``; returns their new count.  Compiled code only: each node layout ``nd`` registers its
    implementation (:func:`graph_hooks`)."""
    raise NotImplementedError("a compiled hook of the LogGOPS loop")


def on_start(v, nd, g, fbuf, nfree):
    """:func:`_run`'s hook: node ``v`` starts; append the nodes its start frees to ``fbuf`` (see :func:`on_done`)."""
    raise NotImplementedError("a compiled hook of the LogGOPS loop")


def on_match(m, v, nd, g):
    """:func:`_run`'s hook: send ``m``'s message matched receive ``v`` (see :func:`on_done`)."""
    raise NotImplementedError("a compiled hook of the LogGOPS loop")


def on_freed(nd, g, gen, fbuf, nfree):
    """:func:`_run`'s hook after an event freed ``fbuf[:nfree]`` (queued already): 0 to go on, else a code
    :func:`_run` returns with (the caller acts and calls it again; see :func:`on_done`)."""
    raise NotImplementedError("a compiled hook of the LogGOPS loop")


def graph_hooks(layout: np.dtype, done: Any, start: Any, match: Any, freed: Any) -> None:
    """Register the hooks of :func:`_run` (``@njit`` functions with the stubs' arguments) for the node arrays
    of dtype ``layout``: chosen when the loop is compiled, so that the loop stays one function that numba
    caches (a function passed as an argument would not be cached), with their bodies inlined where it calls
    them (numba's IR: keep loops out of a hook's own body, in a helper it calls, or numba's IR checks warn)."""
    record = from_dtype(layout)
    for stub, impl, at in ((on_done, done, 3), (on_start, start, 1), (on_match, match, 2), (on_freed, freed, 0)):
        overload(stub, jit_options={"_nrt": False}, strict=False, inline="always")(_chooser(impl, at, record))


def _chooser(impl: Any, at: int, record: Any) -> Any:
    """An overload's typing function: ``impl`` where the argument at ``at`` is an array of ``record``s."""

    def choose(*args: Any) -> Any:
        return impl.py_func if getattr(args[at], "dtype", None) == record else None

    return choose


@njit(cache=True, _nrt=False)
def _done(v, t, cpu_t, nd, g, fbuf, nfree):
    """A graph held whole (``nd`` :data:`ROW`; ``g`` is ``(eptr, edges, done, rr, mate, detail, starts)``): node
    ``v`` done; its done-successors have one dependency less (its ``snext``: the one close by, or two rows in a
    row, ``-snext`` away)."""
    eptr, edges, done, rr, detail = g[0], g[1], g[2], g[3], g[5]
    nd[v].kind += _DONE
    if detail:
        done[v] = t
        rr[v] = cpu_t
    d = nd[v].snext
    if d > 0:
        return _release_one(v + d, nd, fbuf, nfree)
    if d < 0:
        return _release_one(v - d + 1, nd, fbuf, _release_one(v - d, nd, fbuf, nfree))
    return _release(eptr[2 * v], eptr[2 * v + 1], edges, nd, fbuf, nfree)


@njit(cache=True, _nrt=False)
def _started(v, nd, g, fbuf, nfree):
    """Node ``v`` starts: its start-successors (GOAL's ``irequires``; ``g[6]``: the graph has some) have one
    dependency less."""
    if not g[6]:
        return nfree
    eptr, edges = g[0], g[1]
    return _release(eptr[2 * v + 1], eptr[2 * v + 2], edges, nd, fbuf, nfree)


@njit(cache=True, _nrt=False)
def _matched(m, v, nd, g):
    """Send ``m``'s message matched receive ``v``: each is the other's mate (with ``detail``)."""
    mate, detail = g[4], g[5]
    if detail:
        mate[v], mate[m] = m, v


@njit(cache=True, _nrt=False)
def _freed(nd, g, gen, fbuf, nfree):
    """A graph held whole: nothing to do once an event's operations are queued."""
    return 0


graph_hooks(ROW, _done, _started, _matched, _freed)


@njit(cache=True, _nrt=False)
def _run(nd, g, gen, msgbase, recv_decides, par, nexto, nextgs, nextgr, rq_head, rq_tail, uq_head, uq_tail, fbuf,
         sbuf, abuf, kbuf, fhost, aqtime, stats, stk, cur, pool, bnext, bhead, btail, bfill, bmin, fstk, qs):
    """The LogGOPS event loop (see the module docstring): the least (time, sequence) event taken off the queue,
    processed, and the operations it frees queued (:func:`_queue_freed`), until the queue is empty (returns
    ``(0, aqtime)``) or :func:`on_freed` returns a code (returns ``(code, aqtime)``: the caller acts and calls
    again; ``aqtime`` the next sequence).

    The one loop of :func:`run_loggops` (a graph held whole) and
    :func:`~perfmod.replay.loggops_stream.run_stream` (a graph made as the loop reaches it); what differs is
    ``nd``'s layout and its hooks (:func:`on_done`, :func:`on_start`, :func:`on_match`, :func:`on_freed`,
    chosen by that layout when the loop is compiled), ``g`` and ``gen`` their state.  A key below ``msgbase``
    is a node, else the message of the send ``key - msgbase``.  ``nexto``, ``nextgs``, ``nextgr``: the CPU,
    send-NIC and receive-NIC clocks per rank; ``rq_*``, ``uq_*``: the posted-receive and unexpected-message
    queues; ``cur`` .. ``qs``: the event queue.
    """
    mask = (np.int64(1) << _SHIFT) - 1
    while qs[_LIVE] > 0:
        if qs[_POS] == qs[_END]:
            _qrefill(cur, pool, bnext, bhead, btail, bfill, bmin, fstk, qs)
        # an event that only moves in time, or a send that becomes its message, is queued again with its sequence
        # (its place in the order is the same)
        t, sk = qs[_LAST], cur[qs[_POS]]
        qs[_POS] = qs[_POS] + 1 if qs[_POS] + 1 < cur.size else 0
        ahead = qs[_END] - qs[_POS]  # the current time's events after this one (timing only, below)
        if ahead < 0:
            ahead += cur.size
        if ahead > _PF_FAR:  # the node of an event a few pops ahead, and its rank's clocks nearer
            k2 = _key_ahead(cur, qs, _PF_FAR, mask)
            prefetch(nd, k2 if k2 < msgbase else k2 - msgbase)
        if ahead > _PF_NEAR:
            k2 = _key_ahead(cur, qs, _PF_NEAR, mask)
            if k2 < msgbase:
                h2 = nd[k2].rank
                prefetch(uq_head, h2)
            else:
                h2 = nd[k2 - msgbase].peer
                prefetch(rq_head, h2)
            prefetch(nexto, h2)
            prefetch(nextgs, h2)
            prefetch(nextgr, h2)
        if ahead > 1:  # the first entry of the queue that event will search
            k2 = _key_ahead(cur, qs, 1, mask)
            if k2 >= msgbase:
                y = rq_head[nd[k2 - msgbase].peer]
                if y >= 0:
                    prefetch(nd, y)
            elif nd[k2].kind == _RECV:
                y = uq_head[nd[k2].rank]
                if y >= 0:
                    prefetch(nd, y)
        qs[_LIVE] -= 1
        key = sk & mask
        nfree = 0
        nh = 0
        if key < msgbase:
            v = key
            h = nd[v].rank
            ty = nd[v].kind
            if ty == _CALC:
                if nexto[h] <= t:
                    nexto[h] = t + nd[v].dur
                    nfree = on_start(v, nd, g, fbuf, nfree)
                    nfree = on_done(v, t, nexto[h], nd, g, fbuf, nfree)
                    fhost[nh] = h
                    nh += 1
                else:
                    _qpush(nexto[h], sk, cur, pool, bnext, bhead, btail, bfill, bmin, fstk, qs)
            elif ty == _SEND:
                avail = max(nexto[h], nextgs[h])
                if avail <= t:
                    nfree = on_start(v, nd, g, fbuf, nfree)
                    c = nd[v].cls
                    nexto[h] = t + par[c, _P_O]
                    nextgs[h] = t + par[c, _P_G] + nd[v].dur
                    _qpush(t + par[c, _P_O] + par[c, _P_L], (aqtime << _SHIFT) | (msgbase + v), cur, pool, bnext,
                           bhead, btail, bfill, bmin, fstk, qs)
                    aqtime += 1
                    if not nd[v].rndv:
                        nfree = on_done(v, t, nexto[h], nd, g, fbuf, nfree)
                    fhost[nh] = h
                    nh += 1
                else:
                    _qpush(avail, sk, cur, pool, bnext, bhead, btail, bfill, bmin, fstk, qs)
            else:  # receive: posted at once
                fhost[nh] = h
                nh += 1
                nfree = on_start(v, nd, g, fbuf, nfree)
                m = _find(h, nd[v].peer, nd[v].tag, uq_head, uq_tail, nd, False)
                if m >= 0:
                    rz = nd[v].rndv if recv_decides else nd[m].rndv
                    nfree, nh = _pair(m, v, t, rz, nd, g, nexto, nextgs, fbuf, nfree, fhost, nh)
                    nfree = on_done(v, t, nexto[h], nd, g, fbuf, nfree)
                else:
                    _append(h, v, rq_head, rq_tail, nd)
        else:  # a message arrives at its receiver
            m = key - msgbase
            h = nd[m].peer
            avail = max(nexto[h], nextgr[h])
            if avail <= t:
                c = nd[m].cls
                nexto[h] = t + par[c, _P_O] + nd[m].dur
                nextgr[h] = t + par[c, _P_G] + nd[m].dur
                v = _find(h, nd[m].rank, nd[m].tag, rq_head, rq_tail, nd, True)
                if v >= 0:
                    nfree, nh = _pair(m, v, t, nd[m].rndv, nd, g, nexto, nextgs, fbuf, nfree, fhost, nh)
                    nfree = on_done(v, t, nexto[h], nd, g, fbuf, nfree)
                    fhost[nh] = h
                    nh += 1
                else:
                    _append(h, m, uq_head, uq_tail, nd)
            else:
                _qpush(avail, sk, cur, pool, bnext, bhead, btail, bfill, bmin, fstk, qs)
        if nfree == 1 and nh == 1:  # the usual case: one operation freed, queued here, not by a call of 17 arrays
            w = fbuf[0]
            tw = max(nexto[fhost[0]], nextgs[fhost[0]]) if nd[w].kind == _SEND else nexto[fhost[0]]
            _qpush(tw, (aqtime << _SHIFT) | w, cur, pool, bnext, bhead, btail, bfill, bmin, fstk, qs)
            aqtime += 1
        elif nfree:
            aqtime = _queue_freed(nd, fbuf, nfree, fhost, nh, sbuf, abuf, kbuf, nexto, nextgs, aqtime, stats, stk, cur,
                                  pool, bnext, bhead, btail, bfill, bmin, fstk, qs)
        if nfree:
            code = on_freed(nd, g, gen, fbuf, nfree)
            if code:
                return code, aqtime
    return 0, aqtime


@njit(cache=True, _nrt=False)
def _key_ahead(cur, qs, d, mask):
    """The key of the current time's event ``d`` places after the next one (the caller checks there is one)."""
    p = qs[_POS] + d
    return cur[p - cur.size if p >= cur.size else p] & mask


@njit(cache=True, _nrt=False)
def _pair(m, v, t, rz, nd, g, nexto, nextgs, fbuf, nfree, fhost, nh):
    """Send ``m`` matched receive ``v`` at ``t`` (:func:`on_match`); with rendezvous (``rz``) the send is done then,
    its rank's CPU and send NIC held until at least ``t`` (the rank appended to ``fhost``); returns
    ``(nfree, nh)``."""
    on_match(m, v, nd, g)
    if rz:
        s = nd[m].rank
        nexto[s] = max(nexto[s], t)
        nextgs[s] = max(nextgs[s], t)
        nfree = on_done(m, t, nexto[s], nd, g, fbuf, nfree)
        fhost[nh] = s
        nh += 1
    return nfree, nh


@njit(cache=True, _nrt=False)
def _find(h, src, tag, head, tail, nd, is_recv_queue):
    """Unlink and return the first entry of queue ``head[h]`` matching (src, tag) (-1: none)."""
    prev = -1
    y = head[h]
    while y >= 0:
        ysrc = nd[y].peer if is_recv_queue else nd[y].rank
        yt = nd[y].tag
        if (src == _WILD or ysrc == _WILD or ysrc == src) and (tag == _WILD or yt == _WILD or yt == tag):
            if prev < 0:
                head[h] = nd[y].link
            else:
                nd[prev].link = nd[y].link
            if tail[h] == y:
                tail[h] = prev
            return y
        prev = y
        y = nd[y].link
    return -1


@njit(cache=True, _nrt=False)
def _append(h, x, head, tail, nd):
    nd[x].link = -1
    if head[h] < 0:
        head[h] = x
    else:
        nd[tail[h]].link = x
    tail[h] = x


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
def _std_sort(a, n, key, stk):
    """Sort ``a[:n]`` by ``key[a]`` exactly as GCC's ``std::sort`` does (introsort, then insertion sort).

    LogGOPSim sorts the operations freed by one event with ``std::sort``,
    which is not stable above 16 elements; replaying its order keeps the
    simulations equal.  The heap-sort fallback (recursion depth beyond
    ``2 lg n``) is not reproduced: there a stable sort (insertion) is used,
    which cannot happen with three keys in practice.  Returns False if it
    did.  ``stk``: an int64 array of 3 x 128 (the partition stack).
    """
    if n <= 16:  # the introsort loop does nothing: only the insertion sort
        for i in range(1, n):
            _ins(a, key, 0, i, True)
        return True
    exact = True
    stack_lo, stack_hi, stack_d = stk[0], stk[1], stk[2]
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
                for i in range(lo + 1, hi):  # stable
                    _ins(a, key, lo, i, True)
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


@njit(cache=True, _nrt=False)
def _queue(nd, fbuf, m, abuf, kbuf, tcpu, tsend, seq, stats, stk, cur, pool, bnext, bhead, btail, bfill, bmin, fstk,
           qs):
    """Queue the ``m`` nodes of ``fbuf`` (one rank's) sorted by type as ``std::sort`` leaves them, at the
    CPU's time ``tcpu`` (a send: ``tsend``), with sequences from ``seq``."""
    for q in range(m):
        abuf[q] = q
        kbuf[q] = nd[fbuf[q]].kind
    if not _std_sort(abuf, m, kbuf, stk):
        stats[0] += 1
    for q in range(m):
        w = fbuf[abuf[q]]
        tw = tsend if kbuf[abuf[q]] == _SEND else tcpu
        _qpush(tw, ((seq + q) << _SHIFT) | w, cur, pool, bnext, bhead, btail, bfill, bmin, fstk, qs)


@njit(cache=True, _nrt=False)
def _queue_freed(nd, fbuf, nfree, fhost, nh, sbuf, abuf, kbuf, nexto, nextgs, aqtime, stats, stk, cur, pool, bnext,
                 bhead, btail, bfill, bmin, fstk, qs):
    """Queue the ``nfree`` operations one event freed (``fbuf``, of the ``nh`` ranks ``fhost``): ranks in
    increasing order, each rank's sorted by type (:func:`_queue`), at its CPU's time (a send: the later of CPU
    and send NIC), with sequences from ``aqtime``; returns the next sequence.  (The event loops of
    :func:`run_loggops` and :func:`~perfmod.replay.loggops_stream.run_stream`.)"""
    if nh == 1:  # one rank freed operations: sort and queue them (one operation: :func:`_run` queues it)
        h = fhost[0]
        _queue(nd, fbuf, nfree, abuf, kbuf, nexto[h], max(nexto[h], nextgs[h]), aqtime, stats, stk, cur, pool,
               bnext, bhead, btail, bfill, bmin, fstk, qs)
        return aqtime + nfree
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
            if nd[fbuf[q]].rank == nxt:
                sbuf[m] = fbuf[q]
                m += 1
        _queue(nd, sbuf, m, abuf, kbuf, nexto[nxt], max(nexto[nxt], nextgs[nxt]), aqtime, stats, stk, cur, pool,
               bnext, bhead, btail, bfill, bmin, fstk, qs)
        aqtime += m
    return aqtime


@njit(cache=True)
def time_major(rank, ndeps, nprocs, band):
    """The loop's node order: ``(order, newpos, init, init_ptr)``.

    ``rank``: the graph's nodes' ranks, those of a rank contiguous, ranks in
    increasing order.  The loop's row ``u`` is node ``order[u]`` (``newpos``
    the inverse, int32): the ``j``-th nodes of all ranks, ranks in
    increasing order, then the ``j + 1``-th, ..., so that the nodes the
    ranks run at about the same simulated time lie together in memory.
    ``init[init_ptr[r]:init_ptr[r + 1]]`` are the rows of rank ``r``'s nodes
    that require nothing, in node order (:func:`run_loggops`).
    """
    nn = rank.size
    longest = 0
    start = 0
    init_ptr = np.zeros(nprocs + 1, dtype=np.int64)
    for v in range(nn):
        if v > 0 and rank[v] != rank[v - 1]:
            if rank[v] < rank[v - 1]:
                raise ValueError("the graph's nodes are not in rank order")
            start = v
        if rank[v] < 0 or rank[v] >= nprocs:
            raise ValueError("a node's rank is outside 0 .. nprocs - 1")
        longest = max(longest, v - start + 1)
        if ndeps[v] == 0:
            init_ptr[rank[v] + 1] += 1
    for r in range(nprocs):
        init_ptr[r + 1] += init_ptr[r]
    nb = (longest + band - 1) // band
    off = np.zeros(nb + 1, dtype=np.int64)
    start = 0
    for v in range(nn):
        if v > 0 and rank[v] != rank[v - 1]:
            start = v
        off[(v - start) // band + 1] += 1
    for j in range(nb):
        off[j + 1] += off[j]
    order = np.empty(nn, dtype=np.int32)
    newpos = np.empty(nn, dtype=np.int32)
    init = np.empty(init_ptr[nprocs], dtype=np.int32)
    fill = init_ptr[:-1].copy()
    start = 0
    for v in range(nn):
        if v > 0 and rank[v] != rank[v - 1]:
            start = v
        j = (v - start) // band
        u = off[j]
        off[j] = u + 1
        order[u] = v
        newpos[v] = u
        if ndeps[v] == 0:
            init[fill[rank[v]]] = u
            fill[rank[v]] += 1
    return order, newpos, init, init_ptr


@njit(cache=True)
def time_major_edges(order, newpos, sp, succ, ssp, ssucc):
    """The successors of the rows (:func:`time_major`): ``(eptr, edges)`` as :func:`run_loggops` takes them,
    from the CSR lists of a node's done-successors (``sp``, ``succ``) and start-successors (``ssp``, ``ssucc``;
    empty: none)."""
    nn = order.size
    starts = ssp.size > 0
    eptr = np.empty(2 * nn + 1, dtype=np.int64)
    q = 0
    for u in range(nn):
        v = order[u]
        eptr[2 * u] = q
        q += sp[v + 1] - sp[v]
        eptr[2 * u + 1] = q
        if starts:
            q += ssp[v + 1] - ssp[v]
    eptr[2 * nn] = q
    edges = np.empty(q, dtype=np.int32)
    for v in range(nn):  # the lists read in node order, written to their rows
        u = newpos[v]
        q = eptr[2 * u]
        for e in range(sp[v], sp[v + 1]):
            edges[q] = newpos[succ[e]]
            q += 1
        if starts:
            for e in range(ssp[v], ssp[v + 1]):
                edges[q] = newpos[ssucc[e]]
                q += 1
    return eptr, edges


@njit(cache=True)
def by_node(order, done, rr, mate):
    """:func:`run_loggops`'s per-row ``done``, ``rr`` and ``mate`` (a row) per node (``mate`` a node): row ``u``
    is node ``order[u]``."""
    nn = order.size
    d = np.empty(nn, dtype=np.int64)
    r = np.empty(nn, dtype=np.int64)
    m = np.empty(nn, dtype=np.int64)
    for u in range(nn):
        v = order[u]
        d[v] = done[u]
        r[v] = rr[u]
        w = mate[u]
        m[v] = order[w] if w >= 0 else -1
    return d, r, m


@njit(cache=True, _nrt=False)
def send_cost(size, smode, gps, zero_dur, short_max, eager_max):
    """A send's message class ``3 * mode + protocol`` (short, eager, rendezvous by its bytes, a zero-byte message
    counting as one) and its ``rint((n - 1) G)`` ps (``gps``: G in s per byte per class), a zero-byte message its
    class's ``zero_dur`` (:func:`~perfmod.replay.loggops._zero_byte_durations`): the one rule of a GOAL file's
    rows (:func:`fill_rows`) and a trace's streamed nodes (:mod:`perfmod.replay.loggops_stream`)."""
    nb = max(size, 1)
    c = 3 * smode + (0 if nb <= short_max else (1 if nb <= eager_max else 2))
    return c, (np.int64(np.rint((nb - 1.0) * gps[c] * 1e12)) if size > 0 else np.int64(zero_dur[c]))


@njit(cache=True)
def fill_rows(rows, newpos, rank, kind, size, peer, tag, ndeps, calc_scale, smode, sync, gps, zero_dur, short_max,
              eager_max, recv_rndv):
    """Fill the kernel rows (:data:`ROW`) of a graph in one pass, node ``v`` into row ``newpos[v]``.

    A calc's ``dur`` is ``rint(size * calc_scale)`` ps (``calc_scale`` <= 0:
    ``size`` is already ps); a send's message class is ``3 * mode + protocol``
    (``smode`` per node, the protocol 0, 1, 2 for short, eager, rendezvous by
    its bytes, a zero-byte message counting as one), its ``dur`` the
    ``rint((n - 1) G)`` of its class (``gps``: G in s per byte), a zero-byte
    message's ``zero_dur`` of its class (ps: 0 costs it like one byte,
    ``-G`` as LogGOPSim), rendezvous
    above ``eager_max`` bytes or when synchronous; with ``recv_rndv`` a
    receive above ``eager_max`` bytes is rendezvous too (see
    :func:`run_loggops`).  Tags keep their low 32 bits (GOAL's 32-bit tags, -1 any).
    """
    for v in range(rows.shape[0]):
        r = rows[newpos[v]]
        k = kind[v]
        r.rank = rank[v]
        r.peer = peer[v]
        r.tag = np.int32(tag[v] & 0xFFFFFFFF)
        r.link = -1
        r.ndeps = ndeps[v]
        r.kind = k
        r.rndv = 0
        r.cls = 0
        r.snext = 0
        r.dur = 0
        if k == _CALC:
            r.dur = np.int64(np.rint(size[v] * calc_scale)) if calc_scale > 0 else size[v]
        elif k == _SEND:
            c, r.dur = send_cost(size[v], smode[v], gps, zero_dur, short_max, eager_max)
            r.cls = c
            r.rndv = size[v] > eager_max or sync[v]
        elif k == _RECV and recv_rndv:
            r.rndv = size[v] > eager_max


@njit(cache=True)
def run_loggops(nprocs, nd, eptr, edges, par, recv_decides, detail, init, init_ptr):
    """Simulate the graph ``nd`` (rows :data:`ROW`, in any order: :func:`time_major`; see the module docstring).

    ``nd`` is changed: its ``ndeps`` and ``link`` are the loop's state, and a
    node's ``kind`` gains 8 when it is done.  ``eptr``, ``edges``: a node
    ``v``'s done-successors are ``edges[eptr[2 v]:eptr[2 v + 1]]`` (freed when
    it is done), its start-successors ``edges[eptr[2 v + 1]:eptr[2 v + 2]]``
    (GOAL's ``irequires``: LogGOPSim's ``MarkNodeAsStarted``, before
    ``MarkNodeAsDone``); ``par`` the o, g and L of each message class (ps);
    ``init[init_ptr[r]:init_ptr[r + 1]]`` the nodes of rank ``r`` that require
    nothing, in the rank's order (queued first, ranks in increasing order).
    With ``recv_decides``, a receive that finds its message already there
    takes the protocol from its own ``rndv`` (its own size), as LogGOPSim
    does (a rendezvous receive of an eager message marks that send done a
    second time there, and so here); else from the send's.
    Returns ``(status, done, rr, mate, nexto, inexact, unexpected)``: with
    ``detail``, per node the time it was marked done (-1: never) and the CPU's
    time then (what requires it is queued at), and the node it matched (sends
    and receives, -1 none), else empty arrays; each rank's CPU time at the end
    (LogGOPSim's finishing time per host), how many sorts could not follow
    ``std::sort`` (:func:`_std_sort`), and the sends whose messages arrived
    and no receive took (the receivers' unexpected queues, receivers in
    increasing order: LogGOPSim lists them; status ``STATUS_UNEXPECTED`` when
    every operation completed all the same).
    """
    nn = nd.shape[0]
    nexto = np.zeros(nprocs, dtype=np.int64)
    nextgs = np.zeros(nprocs, dtype=np.int64)
    nextgr = np.zeros(nprocs, dtype=np.int64)
    nd_ = nn if detail else 0
    done = np.full(nd_, -1, dtype=np.int64)
    rr = np.full(nd_, -1, dtype=np.int64)
    mate = np.full(nd_, -1, dtype=np.int64)
    rq_head = np.full(nprocs, -1, dtype=np.int32)
    rq_tail = np.full(nprocs, -1, dtype=np.int32)
    uq_head = np.full(nprocs, -1, dtype=np.int32)
    uq_tail = np.full(nprocs, -1, dtype=np.int32)
    # an event frees at most the successors of two nodes (a receive and its send) and starts one; a node whose
    # one successor follows it closely names it in its row (``snext``)
    most = 1
    starts = False
    for v in range(nn):
        a, b, c = eptr[2 * v], eptr[2 * v + 1], eptr[2 * v + 2]
        most = max(most, c - a)
        starts = starts or c > b
        d = 0
        if c == b and (b - a == 1 or b - a == 2 and edges[a + 1] == edges[a] + 1):
            d = edges[a] - v
        nd[v].snext = 0 if d <= 0 or d >= 128 else (d if b - a == 1 else -d)
    fbuf = np.empty(2 * most + 2, dtype=np.int64)  # nodes freed by the current event, in order
    sbuf = np.empty(2 * most + 2, dtype=np.int64)
    abuf = np.empty(2 * most + 2, dtype=np.int64)
    kbuf = np.empty(2 * most + 2, dtype=np.int8)
    fhost = np.empty(4, dtype=np.int64)
    # the event queue (see the module docstring): at most one entry per node or message (a send's message
    # takes its node's place), so at most nn in buckets (each with a block part full) or in ``cur``, a ring
    nblk = nn // _BS + 2 * _NB + 2
    pool = np.empty(2 * _BS * nblk, dtype=np.int64)
    bnext = np.full(nblk, -1, dtype=np.int64)
    fstk = np.arange(nblk)[::-1].copy()  # free blocks, the lowest on top
    bhead = np.full(_NB, -1, dtype=np.int64)
    btail = np.full(_NB, -1, dtype=np.int64)
    bfill = np.zeros(_NB, dtype=np.int64)
    bmin = np.full(_NB, _FAR, dtype=np.int64)
    cur = np.empty(nn + 2, dtype=np.int64)
    qs = np.zeros(6, dtype=np.int64)
    qs[_FREE] = nblk
    stk = np.empty((3, 128), dtype=np.int64)  # std::sort's partition stack
    stats = np.zeros(1, dtype=np.int64)  # sorts that fell back from std::sort's order (see _std_sort)
    aqtime = 0
    # initial free operations: per rank, in the rank's order, sorted by type, at time 0
    ready = 1
    for r in range(init_ptr.size - 1):
        ready = max(ready, init_ptr[r + 1] - init_ptr[r])
    ids = np.empty(ready, dtype=np.int64)
    keys = np.empty(ready, dtype=np.int8)
    order = np.empty(ready, dtype=np.int64)
    for r in range(init_ptr.size - 1):
        m = init_ptr[r + 1] - init_ptr[r]
        for q in range(m):
            ids[q] = init[init_ptr[r] + q]
        _queue(nd, ids, m, order, keys, 0, 0, aqtime, stats, stk, cur, pool, bnext, bhead, btail, bfill, bmin, fstk,
               qs)
        aqtime += m
    _run(nd, (eptr, edges, done, rr, mate, detail, starts), (0,), nn, recv_decides, par, nexto, nextgs, nextgr, rq_head,
         rq_tail, uq_head, uq_tail, fbuf, sbuf, abuf, kbuf, fhost, aqtime, stats, stk, cur, pool, bnext, bhead, btail,
         bfill, bmin, fstk, qs)
    status = STATUS_OK
    left = 0  # messages no receive took: each rank's unexpected queue, ranks in increasing order
    for r in range(nprocs):
        y = uq_head[r]
        while y >= 0:
            left += 1
            y = nd[y].link
    unexpected = np.empty(left, dtype=np.int64)
    left = 0
    for r in range(nprocs):
        y = uq_head[r]
        while y >= 0:
            unexpected[left] = y
            left += 1
            y = nd[y].link
    if qs[_EARLY] > 0:
        return STATUS_EARLY, done, rr, mate, nexto, stats[0], unexpected
    for v in range(nn):
        if nd[v].kind < _DONE:
            status = STATUS_DEADLOCK
            break
    if status == STATUS_OK and left > 0:
        status = STATUS_UNEXPECTED
    return status, done, rr, mate, nexto, stats[0], unexpected


_SLOT = np.full(256, -1, dtype=np.int64)
_SLOT[[int(Call.SEND), int(Call.SSEND)]] = ACC_SEND
_SLOT[[int(Call.RECV), int(Call.SENDRECV)]] = ACC_RECV
_SLOT[list(code_set(WAITS))] = ACC_WAIT
_SLOT[list(code_set(COLLECTIVES))] = ACC_COLL


@njit(cache=True)
def _account(rank_ptr, call, iteration, n_iter, slot_of, units, cend, emax, nexto):
    """Per rank and event: the program's clock after each event, split into the accumulator slots.

    ``units``: the calc before each event (ps; none where not positive); ``cend``: the CPU time when that calc
    was done; ``emax``: the latest CPU time at which a node the event adds to its rank's frontier was done
    (negative: none; :func:`~perfmod.replay.loggops_stream.run_stream`)."""
    nprocs = rank_ptr.size - 1
    acc = np.zeros((nprocs, 5))
    iter_comm = np.zeros((nprocs, max(n_iter, 1)))
    clock = np.zeros(nprocs)
    for r in range(nprocs):
        cur = np.int64(0)
        last_it = -1
        for i in range(rank_ptr[r], rank_ptr[r + 1]):
            prev = cur
            comm = 0.0
            if units[i] > 0:
                end = cend[i]
                acc[r, ACC_COMPUTE] += units[i] / 1e12
                wait = (end - units[i] - prev) / 1e12  # the calc waited for a busy CPU
                acc[r, ACC_WAIT] += wait
                comm += wait
                cur = max(cur, end)
            base = cur
            cur = max(cur, emax[i])
            s = slot_of[call[i]]
            if s >= 0:
                acc[r, s] += (cur - base) / 1e12
                comm += (cur - base) / 1e12
            if n_iter > 0 and iteration[i] >= 0:
                iter_comm[r, iteration[i]] += comm
                last_it = iteration[i]
        tail = max(nexto[r] - cur, 0)
        acc[r, ACC_WAIT] += tail / 1e12
        if last_it >= 0:
            iter_comm[r, last_it] += tail / 1e12
        clock[r] = max(nexto[r], cur) / 1e12
    return acc, iter_comm, clock
