"""The replay's discrete-event loop, compiled with numba (the hot path).

Events are processed in simulated-time order from one priority queue of
``(time, key)`` (key: the rank, or the number of ranks plus the rank for
its NIC): a 4-ary heap beside a *run queue*, a ring that takes every push
no earlier than its last entry (a collective's release of its members in
rank order, the NIC steps a release's rank steps schedule at that time) in
O(1), the first of the two heads popped first, so that the order is the
heap's alone.  A *rank step* runs a rank from
its clock as far as it can go without its clock passing the time of the
step; a *NIC step* hands a rank's ready messages to its network interface.
A rank that needs something another rank has not done yet (a matching
receive posted, a message delivered, every member at a collective) is
parked, and woken by the event that provides it.  Message times are known
beforehand (size, mode, the phase's K counts), so the loop is an exact
evaluation of the timing rules below, in time order.

Each event's state is two short rows read together (indices: partner,
requests or instance, ready-list link; times: posting/ready time and the
message's duration, then its completion), about 29 bytes per event with
the flag byte (:func:`replay_events`); the loop's helpers are closures over
its arrays, and the loop is compiled without numba's reference counting
(:func:`run_kernel`).

Every model but ``loggp`` runs here (``loggp_nic`` is LogGP under these
rules); ``loggp`` runs as LogGOPSim does, :mod:`perfmod.replay.loggops`.

Timing rules (all times in seconds):

- a call starts after the compute time recorded before it;
- a message is *ready* when its send is posted, or for rendezvous (and
  synchronous sends) when both the send and the matching receive are
  posted;
- each rank injects one message at a time: its ready messages go out in
  order of readiness (posting order among equally ready ones); a message
  of duration ``T`` starts at ``max(ready, nic)`` and ends ``T`` later,
  when it has arrived and the send is complete;
- a receive completes at ``max(post, arrival)``; a send to or receive from
  ``MPI_PROC_NULL`` completes at once;
- ``Isend``/``Irecv`` take no time; waits and tests (those that completed
  requests in the recorded run) end when their last request completes;
- a collective ends for every member at the last member's arrival plus the
  collective's cost.
"""

from __future__ import annotations

from collections.abc import Set

import numpy as np

from perfmod.core.kernel_cache import njit
from perfmod.core.prefetch import prefetch
from perfmod.trace.core import COLLECTIVES, WAITS, Call

__all__ = ["replay_events", "run_kernel", "pack_events", "pack_times", "unpack_matching", "F_RNDV", "F_READY",
           "STATUS_OK", "STATUS_DEADLOCK", "ACC_SEND", "ACC_RECV", "ACC_WAIT", "ACC_COLL", "ACC_COMPUTE"]

STATUS_OK = 0
STATUS_DEADLOCK = 1


def _code_range(calls: Set[Call], what: str) -> tuple[int, int]:
    """(lowest, highest) code of ``calls``, which the kernel tests as one range: they must be contiguous."""
    lo, hi = min(map(int, calls)), max(map(int, calls))
    if set(range(lo, hi + 1)) != set(map(int, calls)):
        raise ImportError(f"perfmod.replay.kernel: the {what} codes of perfmod.trace.Call are not contiguous "
                          f"({sorted(map(int, calls))}); the kernel tests them as a range")
    return lo, hi


# call codes from perfmod.trace.core.Call, as plain ints: numba freezes module globals as compile-time constants
_SEND, _RECV, _SENDRECV, _ISEND, _IRECV = (int(c) for c in (Call.SEND, Call.RECV, Call.SENDRECV, Call.ISEND,
                                                             Call.IRECV))
_SSEND, _ISSEND = int(Call.SSEND), int(Call.ISSEND)
_WAIT_LO, _WAIT_HI = _code_range(WAITS, "wait and test")
_COLL_LO, _COLL_HI = _code_range(COLLECTIVES, "collective")

# accumulator columns
ACC_SEND, ACC_RECV, ACC_WAIT, ACC_COLL, ACC_COMPUTE = 0, 1, 2, 3, 4

#: bits of the per-event flag byte: the send waits for its receive (rendezvous or synchronous), its ready time is
#: known (``evf[i, 0]`` holds it)
F_RNDV, F_READY = 1, 2

#: how many pops ahead the run queue's steps have their event rows prefetched (:mod:`perfmod.core.prefetch`);
#: half as far ahead, the rows of their partners (read from those rows): 8 pops were too few for the second load
_AHEAD = 16

#: the heap's first size, in entries per rank beyond the room kept free (it doubles when that room runs short)
_HEAP_ENTRIES_PER_RANK = 2


@njit(cache=True, inline="always")
def _before(t1, k1, t2, k2):
    return t1 < t2 or (t1 == t2 and k1 < k2)


@njit(cache=True, inline="always")
def _sent(v):
    """Whether a send's ``evf[i, 1]`` is its completion time (sign bit clear) rather than its message's duration,
    stored negated (sign bit set, -0.0 included) until the message is sent: one load tells both."""
    return not np.signbit(v)


@njit(cache=True)
def _match(x, g, x_is_send, rank, stag, rsrc, rtag, qhead, qtail, qlink, ohead, otail, olink, evi):
    """Match event ``x`` of group ``g`` to the first entry of the other side's queue (``q*``) that fits, else
    append ``x`` to its own side's queue (``o*``).  A receive ``r`` accepts a send ``s`` when its source and
    tag match or are wildcards (-2, -1); queues keep posting order (MPI's non-overtaking rule).  A match is
    recorded in ``evi[s, 0]`` (the send's receive) and ``evi[r, 1]`` (the receive's send)."""
    prev = -1
    y = qhead[g]
    while y >= 0:
        s = x if x_is_send else y
        r = y if x_is_send else x
        if (rsrc[r] == -2 or rsrc[r] == rank[s]) and (rtag[r] == -1 or rtag[r] == stag[s]):
            nxt = qlink[y]
            if prev < 0:
                qhead[g] = nxt
            else:
                qlink[prev] = nxt
            if qtail[g] == y:
                qtail[g] = prev
            evi[s, 0] = r
            evi[r, 1] = s
            return y
        prev = y
        y = qlink[y]
    olink[x] = -1
    if otail[g] < 0:
        ohead[g] = x
    else:
        olink[otail[g]] = x
    otail[g] = x
    return -1


@njit(cache=True)
def _match_send(i, g, rank, stag, rsrc, rtag, rhead, rtail, rlink, shead, stail, slink, evi):
    """Match send ``i`` to the first posted receive of group ``g`` that accepts it, else queue it."""
    return _match(i, g, True, rank, stag, rsrc, rtag, rhead, rtail, rlink, shead, stail, slink, evi)


@njit(cache=True)
def _match_recv(j, g, rank, stag, rsrc, rtag, rhead, rtail, rlink, shead, stail, slink, evi):
    """Match receive ``j`` to the first unmatched message of group ``g`` it accepts, else post it."""
    return _match(j, g, False, rank, stag, rsrc, rtag, shead, stail, slink, rhead, rtail, rlink, evi)


#: numba's target option that compiles a function without its runtime's reference counting (the loop allocates
#: nothing and owns no array: the caller does); numba spells it with a leading underscore, outside its documented
#: options, so a test checks that the compiled loop has it
_NO_REFCOUNT = {"_nrt": False}


@njit(cache=True, **_NO_REFCOUNT)
def run_kernel(hd, size, room, rq, buf, nprocs, pc, end, clock, nic, state, wcnt, wmax, acc, iter_comm, head, shead,
               stail, rhead, rtail, nic_sched, inst_arrived, inst_max, inst_done, qtime, dyn, rank, call, compute, evi,
               evf, flag, created, inst_size, inst_cost, inst_members_ptr, inst_members, iteration, n_iter, sgrp, rgrp,
               stag, rsrc, rtag, slink, rlink):
    """The event loop of :func:`replay_events`; returns True when the heap ``hd`` needs more room than ``room``
    free entries (then call it again with a larger one)."""
    # the helpers are closures over the loop's arrays, each calling no other closure (numba supports no more).
    # numba inlines them binding the arrays to new variables (about 380 in this loop), and with its reference
    # counting each binding is an atomic increment and decrement (at every call of an njit helper too): 40 % of
    # the loop's time at 16,384 ranks, and a full fence that stalled the loads in flight; compiled without it
    # (_NO_REFCOUNT) the loop has none
    mask = rq.shape[0] - 1  # the run queue's length is a power of two

    def push(t, key):
        """Queue ``(t, key)``: appended to the run queue when that keeps it sorted (no earlier than its last
        entry) and it has room, else pushed onto the 4-ary heap (four children share a cache line; entries
        move into a hole instead of being swapped)."""
        kf = np.float64(key)
        c = size[3]
        if c <= mask:
            last = (size[2] + c - 1) & mask
            if c == 0 or not _before(t, kf, rq[last, 0], rq[last, 1]):
                last = (size[2] + c) & mask
                rq[last, 0] = t
                rq[last, 1] = kf
                size[3] = c + 1
                return
        n = size[0]
        if n == hd.shape[0]:
            size[1] = 1
            return
        i = n
        while i > 0:
            p = (i - 1) >> 2
            if _before(t, kf, hd[p, 0], hd[p, 1]):
                hd[i, 0] = hd[p, 0]
                hd[i, 1] = hd[p, 1]
                i = p
            else:
                break
        hd[i, 0] = t
        hd[i, 1] = kf
        size[0] = n + 1

    def pop():
        """The first of the run queue's head and the heap's root; the heap's last entry is sifted down from
        the root."""
        c = size[3]
        if c > 0:
            h = size[2]
            if size[0] == 0 or not _before(hd[0, 0], hd[0, 1], rq[h, 0], rq[h, 1]):
                size[2] = (h + 1) & mask
                size[3] = c - 1
                if c > _AHEAD:  # the step _AHEAD pops later: start loading its rows now
                    w = np.int64(rq[(h + _AHEAD) & mask, 1])
                    if w < nprocs:  # and those of the events after it, which the partner scan below reads
                        x = pc[w]
                        prefetch(evi, x)
                        prefetch(evi, x + 4)
                        prefetch(evi, x + 8)
                        prefetch(evf, x)
                        prefetch(evf, x + 4)
                        prefetch(evf, x + 8)
                        prefetch(call, x)
                        prefetch(compute, x)
                        prefetch(iteration, x)
                        prefetch(acc, w)  # the rank's sums, which an ending wait or collective adds to
                        prefetch(iter_comm, w)
                    else:
                        x = head[w - nprocs]
                        if x >= 0:
                            prefetch(evi, x)
                            prefetch(evf, x)
                if c > _AHEAD // 2:  # a step half as far ahead (its own rows are loaded): its partners' rows
                    w = np.int64(rq[(h + _AHEAD // 2) & mask, 1])
                    if w >= nprocs:  # a NIC step: its messages' receive rows
                        x = head[w - nprocs]
                        while x >= 0:
                            prefetch(evf, x)  # its ready time (the list's first row is loaded)
                            y = evi[x, 0]
                            if y >= 0:
                                prefetch(evi, y)
                                prefetch(rank, y)
                                prefetch(call, y)
                            x = evi[x, 2]
                    else:  # a rank step: the rows its next point-to-point calls read when they post (after the
                        # call it is parked in, a wait or a collective, which the step ends)
                        x = pc[w]
                        for e in range(x, min(end[w], x + 8)):
                            ce = call[e]
                            if ce == _ISEND or ce == _ISSEND or ce == _SEND or ce == _SSEND or ce == _SENDRECV:
                                y = evi[e, 0]  # the receive: is it posted, when
                                if y >= 0:
                                    prefetch(evf, y)
                                    prefetch(call, y)
                                if ce != _SENDRECV:
                                    continue
                            elif ce != _IRECV and ce != _RECV:
                                if e == x:
                                    continue
                                if ce >= _WAIT_LO and ce <= _WAIT_HI:  # the wait it parks in: its requests
                                    prefetch(created, evi[e, 0])
                                break
                            y = evi[e, 1]  # the send: does it wait for this receive
                            if y >= 0:
                                prefetch(evf, y)
                                prefetch(flag, y)
                                prefetch(rank, y)
                return rq[h, 0], np.int64(rq[h, 1])
        n = size[0] - 1
        t, k = hd[0, 0], np.int64(hd[0, 1])
        size[0] = n
        if n == 0:
            return t, k
        lt, lk = hd[n, 0], hd[n, 1]
        i = 0
        while True:
            c = 4 * i + 1
            if c >= n:
                break
            m = c
            mt, mk = hd[c, 0], hd[c, 1]
            for q in range(c + 1, min(c + 4, n)):
                if _before(hd[q, 0], hd[q, 1], mt, mk):
                    m = q
                    mt, mk = hd[q, 0], hd[q, 1]
            if _before(mt, mk, lt, lk):
                hd[i, 0] = mt
                hd[i, 1] = mk
                i = m
            else:
                break
        hd[i, 0] = lt
        hd[i, 1] = lk
        w = np.int64(hd[0, 1])  # the heap's next step (unless the run queue's head comes first): its rows
        if w < nprocs:
            x = pc[w]
            prefetch(evi, x)
            prefetch(evf, x)
            prefetch(call, x)
            prefetch(compute, x)
        return t, k

    def claim(w, t):
        """Whether to queue a step of rank ``w`` at ``t`` (then push it): not if one is queued no later (an
        earlier one supersedes)."""
        if np.isnan(qtime[w]) or t < qtime[w]:
            qtime[w] = t
            return True
        return False

    def rpost(j):
        """Posting time of receive event ``j``.  A Sendrecv's slot holds its send side's ready time once that
        is known; a Sendrecv is read only while its rank is parked in it, so its posting time is that rank's
        clock."""
        return clock[rank[j]] if call[j] == _SENDRECV else evf[j, 0]

    def recv_done(j):  # completion time of the posted receive j (NaN: its message is not there)
        i = evi[j, 1]
        rp = rpost(j)
        if i == -2:  # MPI_PROC_NULL
            return rp
        if i < 0 or not _sent(evf[i, 1]):
            return np.nan
        return max(rp, evf[i, 1])

    def can_end(i):
        """Whether the posted blocking point-to-point call ``i`` has every completion time it needs (a wait
        counts its missing requests instead; a collective ends by its last member's arrival, not by a message:
        False).  A posted receive has its time once its message is sent, or at once from MPI_PROC_NULL."""
        c = call[i]
        if c == _SEND or c == _SSEND:
            return _sent(evf[i, 1])
        if c == _RECV or c == _SENDRECV:
            k = evi[i, 1]
            return (k == -2 or (k >= 0 and _sent(evf[k, 1]))) and (c == _RECV or _sent(evf[i, 1]))
        return False

    def wake_after(r, waiter, sd):
        """Rank ``r``, parked, after a message of its completed at ``sd``: a wait (state 3) whose request it is
        (``waiter``, the wait the request's event names, or -1) counts it off its missing requests (``wcnt[r]``),
        takes its completion into its running maximum (``wmax[r]``) and can end at zero; another blocking call
        (state 2) can end once it has every time it needs.  The rank's own arrays only: the wait's event row,
        another rank's from the NIC step's, is not read."""
        if state[r] == 3:
            if waiter != pc[r]:
                return
            wmax[r] = max(wmax[r], sd)
            wcnt[r] -= 1
            if wcnt[r] != 0:
                return
        elif not can_end(pc[r]):
            return
        tw = max(sd, clock[r])
        if claim(r, tw):
            push(tw, r)

    while size[0] + size[3] > 0 and not size[1]:
        if size[0] + room > hd.shape[0]:
            return True
        t_now, key = pop()
        if key >= nprocs:  # NIC step: send the rank's ready messages, oldest posting first
            s = key - nprocs
            if nic_sched[s] == t_now:
                nic_sched[s] = np.nan
            m = 0
            e = head[s]
            while e >= 0:
                buf[m] = e
                m += 1
                e = evi[e, 2]
            head[s] = -1
            for q in range(1, m):  # posting order = event order (insertion sort: a few messages)
                v = buf[q]
                p = q - 1
                while p >= 0 and buf[p] > v:
                    buf[p + 1] = buf[p]
                    p -= 1
                buf[p + 1] = v
            for q in range(m):
                i = buf[q]
                rd = evf[i, 0]
                if rd > t_now:  # not yet: keep for a later step
                    evi[i, 2] = head[s]
                    head[s] = i
                    continue
                sd = max(rd, nic[s]) - evf[i, 1]
                c_i = call[i]
                evf[i, 1] = sd  # the message's duration (negated), now its completion time
                nic[s] = sd
                # wake the sender and the receiver when this message completes, if parked in a call that can
                # now end (a wake before that would find the call still waiting: a step that changes nothing); a
                # wait parked on this message's request (its waiter, evi[i, 1] of an Isend, evi[j, 0] of an
                # Irecv) counts it off its missing requests (wcnt of its rank) and can end at zero
                if state[s] >= 2:
                    wake_after(s, evi[i, 1] if (c_i == _ISEND or c_i == _ISSEND) else -1, sd)
                j = evi[i, 0]
                if j >= 0:
                    w = np.int64(rank[j])
                    if state[w] >= 2:
                        wake_after(w, evi[j, 0] if call[j] == _IRECV else -1, sd)
            continue
        r = key
        if qtime[r] != t_now:
            continue  # superseded by an earlier step
        qtime[r] = np.nan
        while pc[r] < end[r]:
            i = pc[r]
            c = call[i]
            if state[r] == 0:
                state[r] = 1
                x = compute[i]
                if x != 0.0:  # adding 0 to a clock or a sum (both >= +0.0) changes nothing
                    clock[r] += x
                    acc[r, ACC_COMPUTE] += x
                    if clock[r] > t_now:  # computing: continue at the new time
                        tw = clock[r]
                        if claim(r, tw):
                            push(tw, r)
                        break
            t0 = clock[r]
            done = np.nan
            slot = -1
            if c == _ISEND or c == _ISSEND or c == _SEND or c == _SSEND or c == _SENDRECV:
                if state[r] == 1:
                    state[r] = 2
                    evf[i, 0] = t0
                    j = evi[i, 0]
                    if dyn and sgrp[i] >= 0:
                        j = _match_send(i, sgrp[i], rank, stag, rsrc, rtag, rhead, rtail, rlink, shead, stail,
                                        slink, evi)
                    rd = np.nan
                    if j == -2:
                        evf[i, 1] = t0
                    elif not (flag[i] & F_RNDV):
                        rd = t0
                    elif j >= 0 and not np.isnan(evf[j, 0]):
                        rd = max(t0, rpost(j))
                    if not np.isnan(rd):
                        evf[i, 0] = rd
                        flag[i] |= F_READY
                        evi[i, 2] = head[r]
                        head[r] = i
                        if nic_sched[r] != rd:
                            nic_sched[r] = rd
                            push(rd, nprocs + r)
                    if c == _SENDRECV:
                        k = evi[i, 1]
                        if dyn and rgrp[i] >= 0:
                            k = _match_recv(i, rgrp[i], rank, stag, rsrc, rtag, rhead, rtail, rlink, shead,
                                            stail, slink, evi)
                        if k >= 0 and flag[k] & F_RNDV and not np.isnan(evf[k, 0]) and not flag[k] & F_READY:
                            s = rank[k]
                            rk = max(t0, evf[k, 0])
                            evf[k, 0] = rk
                            flag[k] |= F_READY
                            evi[k, 2] = head[s]
                            head[s] = k
                            if nic_sched[s] != rk:
                                nic_sched[s] = rk
                                push(rk, nprocs + s)
                if c == _ISEND or c == _ISSEND:
                    done = t0
                elif c == _SENDRECV:
                    if _sent(evf[i, 1]):
                        d2 = recv_done(i)
                        if not np.isnan(d2):
                            done = max(evf[i, 1], d2)
                elif _sent(evf[i, 1]):
                    done = evf[i, 1]
                slot = ACC_RECV if c == _SENDRECV else ACC_SEND
                if c == _ISEND or c == _ISSEND:
                    slot = -1
            elif c == _IRECV or c == _RECV:
                if state[r] == 1:
                    state[r] = 2
                    # posting a receive is written out here and for SENDRECV above: a numba helper for it (even
                    # with inline="always") made the whole replay 15-20 % slower
                    evf[i, 0] = t0
                    k = evi[i, 1]
                    if dyn and rgrp[i] >= 0:
                        k = _match_recv(i, rgrp[i], rank, stag, rsrc, rtag, rhead, rtail, rlink, shead, stail,
                                        slink, evi)
                    if k >= 0 and flag[k] & F_RNDV and not np.isnan(evf[k, 0]) and not flag[k] & F_READY:
                        s = rank[k]
                        rk = max(t0, evf[k, 0])
                        evf[k, 0] = rk
                        flag[k] |= F_READY
                        evi[k, 2] = head[s]
                        head[s] = k
                        if nic_sched[s] != rk:
                            nic_sched[s] = rk
                            push(rk, nprocs + s)
                if c == _IRECV:
                    done = t0
                else:
                    done = recv_done(i)
                    slot = ACC_RECV
            elif c >= _WAIT_LO and c <= _WAIT_HI:
                # on arrival: the last completion, else park (state 3) with the number of requests missing in
                # wcnt[r] and the last completion so far in wmax[r] (the NIC steps count the missing ones off and
                # take their completion times in: max is exact in any order); woken with none missing: wmax[r]
                done = np.nan
                if state[r] == 1:
                    state[r] = 3
                    done = t0
                    miss = 0
                    for q in range(evi[i, 0], evi[i, 1]):
                        e = created[q]
                        if call[e] == _IRECV:
                            d = recv_done(e)
                        elif _sent(evf[e, 1]):
                            d = evf[e, 1]
                        else:
                            d = np.nan
                        if np.isnan(d):
                            miss += 1
                        else:
                            done = max(done, d)
                    if miss:
                        wcnt[r] = miss
                        wmax[r] = done
                        done = np.nan
                elif wcnt[r] == 0:
                    done = wmax[r]
                slot = ACC_WAIT
            elif c >= _COLL_LO and c <= _COLL_HI:
                k = evi[i, 0]
                if state[r] == 1:
                    state[r] = 2
                    inst_arrived[k] += 1
                    inst_max[k] = max(inst_max[k], t0)
                    if inst_arrived[k] == inst_size[k]:
                        inst_done[k] = inst_max[k] + inst_cost[k]
                        for mm in range(inst_members_ptr[k], inst_members_ptr[k + 1]):
                            w = inst_members[mm]
                            if w != r:
                                tw = inst_done[k]
                                if claim(w, tw):
                                    push(tw, w)
                done = inst_done[k]
                slot = ACC_COLL
            else:  # compute, init, finalize, unknown calls (skipped)
                done = t0
            if np.isnan(done):
                break  # parked; whatever provides the missing piece wakes r
            state[r] = 0
            pc[r] += 1
            if slot >= 0:
                dt = done - t0
                acc[r, slot] += dt
                if n_iter > 0 and iteration[i] >= 0:
                    iter_comm[r, iteration[i]] += dt
                clock[r] = done
                if done > t_now:  # blocked until `done`: continue then, in time order
                    if pc[r] < end[r]:
                        tw = done
                        if claim(r, tw):
                            push(tw, r)
                    break
    return False


@njit(cache=True)
def pack_events(call, coll_inst, ref_ptr, created, evi):
    """Complete the kernel's per-event index rows ``evi`` (see :func:`replay_events`), whose columns 0 and 1 hold
    the matching (:func:`perfmod.replay.matching.match_messages` with ``out=evi``), with the requests of the
    waits (``created[ref_ptr[i]:ref_ptr[i + 1]]``, each waited for by one wait at most), each request's wait
    and the instances of the collectives, in one pass."""
    for i in range(call.size):
        c = call[i]
        if c >= _WAIT_LO and c <= _WAIT_HI:
            evi[i, 0] = ref_ptr[i]
            evi[i, 1] = ref_ptr[i + 1]
            for q in range(ref_ptr[i], ref_ptr[i + 1]):  # each request's waiter, in a column its event leaves free
                e = created[q]
                if call[e] == _IRECV:
                    evi[e, 0] = i
                else:
                    evi[e, 1] = i
        elif c >= _COLL_LO and c <= _COLL_HI:
            evi[i, 0] = coll_inst[i]
        evi[i, 2] = -1


@njit(cache=True)
def pack_times(call, evi, neg_time, evf):
    """Fill the kernel's per-event time rows ``evf`` (see :func:`replay_events`): not posted (NaN), and for the
    k-th send event with a receiver (not to MPI_PROC_NULL: ``evi[i, 0] != -2``), the k-th of ``neg_time``, its
    message's duration negated (-0.0 elsewhere)."""
    k = 0
    for i in range(call.size):
        c = call[i]
        evf[i, 0] = np.nan
        if (c == _ISEND or c == _ISSEND or c == _SEND or c == _SSEND or c == _SENDRECV) and evi[i, 0] != -2:
            evf[i, 1] = neg_time[k]
            k += 1
        else:
            evf[i, 1] = -0.0


@njit(cache=True)
def unpack_matching(call, evi, pdst, psrc):
    """The matching back from ``evi`` after a replay (with the messages the kernel matched to wildcard
    receives): ``pdst`` of the send events and ``psrc`` of the receive events (the others keep theirs)."""
    for i in range(call.size):
        c = call[i]
        if c == _ISEND or c == _ISSEND or c == _SEND or c == _SSEND or c == _SENDRECV:
            pdst[i] = evi[i, 0]
        if c == _IRECV or c == _RECV or c == _SENDRECV:
            psrc[i] = evi[i, 1]


def replay_events(rank_ptr, rank, call, compute, evi, evf, flag, created, inst_size, inst_cost, inst_members_ptr,
                  inst_members, iteration, n_iter, sgrp, rgrp, stag, rsrc, rtag, ngroups, slink, rlink):
    """Replay; returns (status, clock, acc, iter_comm, pc).

    Sets up the per-rank state and runs :func:`run_kernel`, growing its heap between calls (the loop allocates
    nothing: it is compiled without reference counting).

    Each event's state is in two rows read together (one cache line rather than one per array), allocated by
    the caller (so that their memory is accounted where NumPy allocations are) and updated in place:

    - ``evi`` (int32 or int64, shape (n, 3)), filled by the matching and :func:`pack_events`: for a send,
      ``evi[i, 0]`` is its receive event (-1 none, -2 PROC_NULL); for a receive, ``evi[i, 1]`` its send event
      (-1, -2 likewise; a Sendrecv has both); for a wait or test, ``evi[i, 0]:evi[i, 1]`` its requests in
      ``created`` (their creating events); for a collective, ``evi[i, 0]`` its instance, whose members are
      ``inst_members[inst_members_ptr[k]:inst_members_ptr[k + 1]]``; ``evi[i, 2]`` (-1) links the rank's
      ready messages.  The column a request's event leaves free holds its wait (its waiter: ``evi[e, 1]`` of an
      Isend, ``evi[e, 0]`` of an Irecv), so that a completing message counts itself off the wait in O(1) (in
      per-rank arrays, with the last completion so far) instead of the wait's requests being scanned at every
      message of its rank, and again when it ends.
    - ``evf`` (float64, shape (n, 2)): ``evf[i, 0]`` NaN until the event is posted, then its posting time; a
      send's becomes its ready time once known (flag bit ``F_READY``); ``evf[i, 1]`` the duration of a
      send's message negated (-0.0 for 0), its completion time once sent (sign bit clear: :func:`_sent`).
    - ``flag`` (uint8): :data:`F_RNDV` where the send waits for its receive to be posted (rendezvous or
      synchronous), 0 elsewhere.

    Messages to wildcard receivers are matched here: ``sgrp``/``rgrp`` give each event's send / receive
    matching group (-1: matched beforehand), ``stag``, ``rsrc``, ``rtag`` the envelopes, ``slink``/``rlink``
    the queues (empty arrays when there is nothing to match); the matches go into ``evi``
    (:func:`unpack_matching`).
    """
    nprocs = rank_ptr.size - 1
    rank_ptr = np.asarray(rank_ptr, dtype=np.int64)
    pc = rank_ptr[:-1].copy()
    end = rank_ptr[1:].copy()
    clock = np.zeros(nprocs)
    nic = np.zeros(nprocs)
    state = np.zeros(nprocs, dtype=np.int8)  # 0 fresh event, 1 compute charged, 2 call posted (parked in it), 3 a wait
    wcnt = np.zeros(nprocs, dtype=np.int64)  # a rank parked in a wait: its requests still missing
    wmax = np.zeros(nprocs)  # and the last completion time among its requests so far
    acc = np.zeros((nprocs, 5))
    iter_comm = np.zeros((nprocs, max(n_iter, 1)))
    # ready, unassigned messages per rank: a linked list through `evi[:, 2]`
    head = np.full(nprocs, -1, dtype=np.int64)
    dyn = bool(sgrp.size > 0)
    shead = np.full(ngroups, -1, dtype=np.int64)
    stail = np.full(ngroups, -1, dtype=np.int64)
    rhead = np.full(ngroups, -1, dtype=np.int64)
    rtail = np.full(ngroups, -1, dtype=np.int64)
    nic_sched = np.full(nprocs, np.nan)  # time of the rank's pending NIC step
    ninst = inst_size.size
    inst_arrived = np.zeros(ninst, dtype=np.int64)
    inst_max = np.zeros(ninst)
    inst_done = np.full(ninst, np.nan)
    qtime = np.full(nprocs, np.nan)  # time of the rank's queued step (NaN: none); later entries are stale
    # room kept free in the heap before each step: a NIC step pushes at most two wakes per message of its
    # rank, a rank step about two entries per event it runs, and a collective's last arrival one per member
    most = int((end - pc).max(initial=0))
    room = 2 * most + 2 * nprocs + 64
    hd = np.empty((_HEAP_ENTRIES_PER_RANK * nprocs + room, 2))
    size = np.zeros(4, dtype=np.int64)  # heap entries, overflow flag, run queue's first entry and length
    # the run queue: a ring of (time, key) rows in order, which takes the pushes that come in order (a
    # collective's release, a rank's NIC step at the time of the step that readies it) in O(1)
    rq = np.empty((1 << max(6, int(nprocs + 64).bit_length()), 2))
    live = np.flatnonzero(pc < end)  # every rank with events steps at 0, in rank order: a sorted array is a heap
    hd[:live.size, 0] = 0.0
    hd[:live.size, 1] = live
    size[0] = live.size
    qtime[live] = 0.0
    buf = np.empty(most + 1, dtype=np.int64)  # a NIC step's messages
    while run_kernel(hd, size, room, rq, buf, nprocs, pc, end, clock, nic, state, wcnt, wmax, acc, iter_comm, head,
                     shead, stail, rhead, rtail, nic_sched, inst_arrived, inst_max, inst_done, qtime, dyn, rank,
                     call, compute, evi, evf, flag, created, inst_size, inst_cost, inst_members_ptr, inst_members,
                     iteration, n_iter, sgrp, rgrp, stag, rsrc, rtag, slink, rlink):
        grown = np.empty((2 * hd.shape[0], 2))  # out of the compiled loop, which allocates nothing
        grown[:size[0]] = hd[:size[0]]
        hd = grown
    if size[1]:
        raise RuntimeError("perfmod.replay.kernel: the event heap overflowed its reserved room (please report)")
    status = STATUS_DEADLOCK if np.any(pc < end) else STATUS_OK
    return status, clock, acc, iter_comm, pc
