"""Message matching and collective instances, vectorized (MPI semantics).

Point-to-point matching follows MPI's non-overtaking rule: for one
(source, destination, tag, communicator) the k-th send posted matches the
k-th receive posted.  With explicit sources and tags this pairing does not
depend on timing, so it is computed once for the whole trace by sorting.
Receives with ``MPI_ANY_SOURCE`` or ``MPI_ANY_TAG`` make the pairing depend
on timing: every message to a rank and communicator that posts one is
matched by the kernel instead, in simulated time (a message is matched
against the receives posted when it is sent, in posting order, and a
receive against the unmatched messages in the order they were sent).

Collectives match per communicator in call order: the k-th collective
call of every member is instance k.  Members must agree on the call and
the size (except ``MPI_Alltoallv``, whose members may send different
totals: its per-destination counts are in ``aux``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmod.core.kernel_cache import njit
from perfmod.core.memory import index_dtype
from perfmod.trace.core import ANY_SOURCE, ANY_TAG, CALL_NAMES, COLLECTIVES, PROC_NULL, Call, Trace, code_set
from perfmod.trace.requests import group_key

__all__ = ["ReplayError", "Matching", "match_messages", "Collectives", "collective_instances", "world_peer", "call_is",
           "SEND_CODES", "has_wildcards"]


class ReplayError(RuntimeError):
    """A trace that cannot be replayed: deadlock, unmatched or truncated messages, collective mismatch.

    ``details`` holds one dict per rank or message involved (rank, event,
    call, peer, tag, comm, ...).
    """

    def __init__(self, message: str, details: list[dict] | None = None) -> None:
        super().__init__(message)
        self.details = details or []


@njit(cache=True)
def _look_up(table, call, out):
    for i in range(call.size):
        out[i] = table[call[i]]


def call_is(call: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``np.isin(call, codes)`` for the uint8 call column, as one compiled table look-up (a pass, not one per
    code; NumPy's ``table[call]`` takes six times as long and a temporary of 8 bytes per event)."""
    if call.dtype != np.uint8:
        return np.isin(call, codes)
    table = np.zeros(256, dtype=bool)
    table[codes] = True
    out = np.empty(call.shape, dtype=bool)
    _look_up(table, call.ravel(), out.ravel())
    return out


#: call codes that send a point-to-point message
SEND_CODES = code_set({Call.SEND, Call.ISEND, Call.SSEND, Call.ISSEND, Call.SENDRECV})
_RECV_CODES = code_set({Call.RECV, Call.IRECV})


def world_peer(trace: Trace, peer: np.ndarray, comm: np.ndarray) -> np.ndarray:
    """World ranks of communicator-local ``peer`` ranks (negative values kept)."""
    out = peer.astype(np.int64)
    if not comm.any():  # all on MPI_COMM_WORLD (no sort to find the communicators)
        return out
    for c in np.unique(comm).tolist():
        if c == 0:
            continue
        sel = (comm == c) & (peer >= 0)
        out[sel] = trace.comm_ranks(c)[peer[sel]]
    return out


@dataclass(frozen=True)
class Matching:
    """Matched point-to-point messages.

    Attributes
    ----------
    pdst : numpy.ndarray of int32 (int64 from 2^31 events), shape (len(trace),)
        Receive event matching each send event (-1 unmatched, -2 to PROC_NULL).
    psrc : numpy.ndarray of int32 (int64 from 2^31 events), shape (len(trace),)
        Send event matching each receive event (-1 unmatched, -2 from PROC_NULL).
    send_events : numpy.ndarray of int64
        Events that send a message (PROC_NULL excluded).
    src, dst : numpy.ndarray of int64
        World sender and receiver of each of ``send_events``.
    nbytes : numpy.ndarray of int64
        Bytes of each message.
    dynamic : Dynamic or None
        What the kernel needs to match messages to wildcard receives.
    """

    pdst: np.ndarray
    psrc: np.ndarray
    send_events: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    dynamic: Dynamic | None = None


def _group_position(keys: tuple[np.ndarray, ...], order: np.ndarray) -> np.ndarray:
    """Occurrence number of each element within its key group (elements visited in ``order``)."""
    n = order.size
    if n == 0:
        return np.zeros(0, np.int64)
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for k in keys:
        ks = k[order]
        new[1:] |= ks[1:] != ks[:-1]
    idx = np.arange(n)
    pos_sorted = idx - np.maximum.accumulate(np.where(new, idx, 0))
    pos = np.empty(n, np.int64)
    pos[order] = pos_sorted
    return pos


@njit(cache=True, inline="always")
def _lex_less(x, y):
    """Tuple ``x < y`` for equally long int64 arrays."""
    for k in range(x.size):
        if x[k] != y[k]:
            return x[k] < y[k]
    return False


@njit(cache=True)
def _list_sends(call, rank, wpeer, nbytes, send_tab, sgrp, pdst, psrc, ev, src, dst, nb, cnt):
    """List the sends (event, sender, receiver, bytes; PROC_NULL excluded) and count, in ``cnt[d + 1]``, those
    that rank ``d`` receives (those left to the kernel, and those to no rank of the trace, excluded); every
    event's ``pdst``/``psrc`` starts at -1 (-2: a send to PROC_NULL)."""
    dyn = sgrp.size > 0
    p = cnt.size - 1
    k = 0
    for i in range(call.size):
        pdst[i] = -1
        psrc[i] = -1
        if not send_tab[call[i]]:
            continue
        d = wpeer[i]
        if d == PROC_NULL:
            pdst[i] = -2
            continue
        ev[k], src[k], dst[k], nb[k] = i, rank[i], d, nbytes[i]
        k += 1
        if 0 <= d < p and not (dyn and sgrp[i] >= 0):
            cnt[d + 1] += 1


@njit(cache=True)
def _place(ev, dst, sgrp, cnt, bucket):
    """``bucket``: the sends each rank receives, rank by rank, in event order (so by sender, then posting order);
    ``cnt`` holds the buckets' starts (CSR) on entry and their ends on return."""
    dyn = sgrp.size > 0
    p = cnt.size - 1
    for k in range(ev.size):
        d = dst[k]
        if 0 <= d < p and not (dyn and sgrp[ev[k]] >= 0):
            bucket[cnt[d]] = ev[k]
            cnt[d] += 1


@njit(cache=True, inline="always")
def _below(rank, tag, comm, e, s, t, c):
    """Whether send event ``e``'s key (sender, tag, communicator) is below (s, t, c)."""
    if rank[e] != s:
        return rank[e] < s
    if tag[e] != t:
        return tag[e] < t
    return comm[e] < c


@njit(cache=True, inline="always")
def _send_less(rank, tag, comm, e, f):
    """Order of send events in a bucket: by (sender, tag, communicator), then posting (event) order."""
    if rank[e] != rank[f] or tag[e] != tag[f] or comm[e] != comm[f]:
        return _below(rank, tag, comm, e, rank[f], tag[f], comm[f])
    return e < f


@njit(cache=True, inline="always")
def _in_order(bucket, lo, hi, rank, tag, comm):
    """Whether ``bucket[lo:hi]`` is in :func:`_send_less` order already (as a bucket is unless a sender sends to
    the rank with several tags or communicators: it is in sender and posting order)."""
    m = lo + 1
    while m < hi and not _send_less(rank, tag, comm, bucket[m], bucket[m - 1]):
        m += 1
    return m >= hi


@njit(cache=True)
def _sort_bucket(bucket, lo, hi, rank, tag, comm, scratch):
    """Sort ``bucket[lo:hi]`` by :func:`_send_less` (the sends of one (sender, tag, communicator) group together, in
    posting order) by a merge sort through ``scratch``."""
    width = 1
    a, b = bucket, scratch
    swapped = False
    while width < hi - lo:
        for left in range(lo, hi, 2 * width):
            mid, right = min(left + width, hi), min(left + 2 * width, hi)
            x, y = left, mid
            for o in range(left, right):
                if x < mid and (y >= right or not _send_less(rank, tag, comm, a[y], a[x])):
                    b[o] = a[x]
                    x += 1
                else:
                    b[o] = a[y]
                    y += 1
        a, b = b, a
        swapped = not swapped
        width *= 2
    if swapped:  # the last pass wrote into the scratch
        bucket[lo:hi] = scratch[lo:hi]


@njit(cache=True)
def _pair_receives(call, rank, wpeer, tag, comm, nbytes, aux_ptr, aux, sr_src, recv_tab, sr_code, rgrp, pdst, psrc,
                   bucket, ends, taken, scratch):
    """Match each receive, in event order, to the next send of its group in its rank's bucket (see
    :func:`_match_all`): ``taken`` counts, at the first position of each group, its sends already matched."""
    dyn = rgrp.size > 0
    nbad = 0
    best_s, best_r, best_b = -1, -1, 0
    cur = np.empty(5, dtype=np.int64)
    best = np.empty(5, dtype=np.int64)
    nsr = 0
    r, lo, hi = -1, 0, 0
    for i in range(call.size):
        c = call[i]
        if c == sr_code:  # the receive side of a Sendrecv: aux = [source, recv_nbytes, recv_tag]
            rs, rb, rt = sr_src[nsr], aux[aux_ptr[i] + 1], aux[aux_ptr[i] + 2]
            nsr += 1
        elif recv_tab[c]:
            rs, rb, rt = np.int64(wpeer[i]), nbytes[i], np.int64(tag[i])
        else:
            continue
        if rs == PROC_NULL:
            psrc[i] = -2
            continue
        if dyn and rgrp[i] >= 0:
            continue
        if rank[i] != r:  # the rank's bucket, sorted by group on the rank's first receive
            r = rank[i]
            lo, hi = (ends[r - 1] if r else 0), ends[r]
            if not _in_order(bucket, lo, hi, rank, tag, comm):
                _sort_bucket(bucket, lo, hi, rank, tag, comm, scratch)
        cm = comm[i]
        g, top = lo, hi  # the group's first position: the first send whose key is not below (rs, rt, cm)
        while top - g > 8:
            mid = (g + top) >> 1
            if _below(rank, tag, comm, bucket[mid], rs, rt, cm):
                g = mid + 1
            else:
                top = mid
        while g < top and _below(rank, tag, comm, bucket[g], rs, rt, cm):
            g += 1
        if g == hi:
            continue
        occ = taken[g]
        m = g + occ
        if m >= hi:
            continue
        s = bucket[m]
        if rank[s] != rs or tag[s] != rt or comm[s] != cm:
            continue  # no send of the group left (or none at all)
        taken[g] = occ + 1
        pdst[s] = i
        psrc[i] = s
        if rb < nbytes[s]:
            nbad += 1
            cur[0], cur[1], cur[2], cur[3], cur[4] = rs, r, rt, cm, occ
            if best_s < 0 or _lex_less(cur, best):
                best[:] = cur
                best_s, best_r, best_b = s, i, rb
    return nbad, best_s, best_r, best_b


def _match_all(call, rank, wpeer, tag, comm, nbytes, aux_ptr, aux, sr_src, sr_code, sgrp, rgrp, pdst, psrc):
    """Pair the k-th send of each (src, dst, tag, comm) group with its k-th receive, both in event order (MPI's
    non-overtaking rule), in compiled passes over the events, with no hash table and no global sort: the sends
    are put in buckets by receiver (a counting sort, in event order), and as the events are in rank order, each
    rank's receives then look their groups up in the rank's own bucket (sorted by group where it is not already).
    Every look-up so reads memory near the last one, where a hash table of groups was read at random (256 MiB
    at 1,048,576 ranks).  The arrays are allocated here, by NumPy, so that the replay's memory measurement
    (``tracemalloc``) sees them.

    ``wpeer``: world peer of each point-to-point event; ``sr_src``: world source of each Sendrecv's receive
    side, in event order; ``sgrp``/``rgrp`` (empty, or per event): sides left to the kernel (>= 0).  Fills
    ``pdst``/``psrc`` (every event's) and returns the sends (events, sender, receiver, bytes; PROC_NULL
    excluded) and ``(truncated, send, receive, receive bytes)``: how many receive buffers are smaller than their
    message, and the first such message in (src, dst, tag, comm, occurrence) order.
    """
    ns = int(np.count_nonzero(call_is(call, SEND_CODES) & (wpeer != PROC_NULL)))
    ev, src, dst, nb = (np.empty(ns, dtype=np.int64) for _ in range(4))
    p = int(rank[-1]) + 1 if rank.size else 0  # the events are in rank order
    cnt = np.zeros(p + 1, dtype=np.int64)
    _list_sends(call, rank, wpeer, nbytes, _SEND_TAB, sgrp, pdst, psrc, ev, src, dst, nb, cnt)
    np.cumsum(cnt, out=cnt)
    idx = index_dtype(max(len(call), 1))
    bucket = np.empty(int(cnt[-1]), dtype=idx)
    _place(ev, dst, sgrp, cnt, bucket)
    # cnt[:p] now ends each rank's bucket; taken: per group (at its first position), its sends matched so far
    out = _pair_receives(call, rank, wpeer, tag, comm, nbytes, aux_ptr, aux, sr_src, _RECV_TAB, sr_code, rgrp, pdst,
                         psrc, bucket, cnt, np.zeros(bucket.size, dtype=index_dtype(max(ns, 1))),
                         np.empty(bucket.size, dtype=idx))
    return (ev, src, dst, nb, *out)


_SEND_TAB = np.zeros(256, dtype=np.bool_)
_SEND_TAB[SEND_CODES] = True
_RECV_TAB = np.zeros(256, dtype=np.bool_)
_RECV_TAB[_RECV_CODES] = True
_P2P_CODES = np.union1d(SEND_CODES, _RECV_CODES)


@njit(cache=True)
def _any_wildcard(call, peer, tag, aux_ptr, aux, recv_tab, sr_code, any_source, any_tag):
    for i in range(call.size):
        c = call[i]
        if recv_tab[c]:
            if peer[i] == any_source or tag[i] == any_tag:
                return True
        elif c == sr_code:
            a = aux_ptr[i]  # [source, recv_nbytes, recv_tag]
            if aux[a] == any_source or aux[a + 2] == any_tag:
                return True
    return False


def has_wildcards(trace: Trace) -> bool:
    """Whether a receive of ``trace`` (Sendrecv's receive side included) names ``MPI_ANY_SOURCE`` or
    ``MPI_ANY_TAG`` (one compiled pass, to the first)."""
    return bool(_any_wildcard(trace.call, trace.peer, trace.tag, trace.aux_ptr, trace.aux, _RECV_TAB,
                              int(Call.SENDRECV), ANY_SOURCE, ANY_TAG))


def _envelopes(trace: Trace, wpeer: np.ndarray, sr_ev: np.ndarray, sr_src: np.ndarray) -> tuple:
    """Per message (PROC_NULL excluded), in event order: the sends' (event, src, dst, tag, comm) and the
    receives' (event, src, dst, tag, comm), for :func:`_dynamic`."""
    call = trace.call
    s_ev = np.flatnonzero(call_is(call, SEND_CODES) & (wpeer != PROC_NULL))
    r_ev = np.flatnonzero(call_is(call, _RECV_CODES))
    r_src, r_tag = wpeer[r_ev].astype(np.int64), trace.tag[r_ev].astype(np.int64)
    if sr_ev.size:
        r_ev = np.concatenate([r_ev, sr_ev])
        r_src = np.concatenate([r_src, sr_src])
        r_tag = np.concatenate([r_tag, trace.aux[trace.aux_ptr[sr_ev] + 2]])
        o = np.argsort(r_ev, kind="stable")
        r_ev, r_src, r_tag = r_ev[o], r_src[o], r_tag[o]
    keep = r_src != PROC_NULL
    r_ev, r_src, r_tag = r_ev[keep], r_src[keep], r_tag[keep]
    return (s_ev, trace.rank[s_ev].astype(np.int64), wpeer[s_ev].astype(np.int64), trace.tag[s_ev],
            trace.comm[s_ev], r_ev, r_src, trace.rank[r_ev].astype(np.int64), r_tag, trace.comm[r_ev])


def match_messages(trace: Trace, out: np.ndarray | None = None, wildcards: bool | None = None) -> Matching:
    """Pair every send with its receive by (source, destination, tag, communicator) in posting order.

    ``out``, if given, is an index array of shape (len(trace), k >= 2) whose columns 0 and 1 receive ``pdst``
    and ``psrc`` (the replay's event rows: no arrays of their own); ``Matching.pdst``/``psrc`` are then
    views of it.  ``wildcards``: :func:`has_wildcards` of the trace, if the caller knows it.

    Messages to a (rank, communicator) that posts any wildcard receive
    (``MPI_ANY_SOURCE``/``MPI_ANY_TAG``) are left to the kernel, which
    matches them in simulated time (:class:`Dynamic`).

    Raises
    ------
    ReplayError
        A receive buffer smaller than its message (MPI_ERR_TRUNCATE; checked
        for the messages matched here).
    """
    n = len(trace)
    call = trace.call
    wpeer = trace.peer
    if trace.comm.any():  # communicator-local peers to world ranks
        sel = np.flatnonzero(call_is(call, _P2P_CODES) & (trace.comm != 0))
        wpeer = wpeer.astype(np.int64)
        wpeer[sel] = world_peer(trace, trace.peer[sel], trace.comm[sel])
    sr_ev = np.flatnonzero(call == Call.SENDRECV)
    sr_src = world_peer(trace, trace.aux[trace.aux_ptr[sr_ev]], trace.comm[sr_ev])
    if wildcards is None:
        wildcards = has_wildcards(trace)
    dyn = _dynamic(n, *_envelopes(trace, wpeer, sr_ev, sr_src)) if wildcards else None
    none = np.zeros(0, dtype=np.int64)
    if out is None:
        pdst = np.empty(n, dtype=index_dtype(n))
        psrc = np.empty(n, dtype=index_dtype(n))
    else:
        if out.shape[0] != n or out.ndim != 2 or out.shape[1] < 2:
            raise ValueError(f"out must have shape ({n}, k >= 2), got {out.shape}")
        pdst, psrc = out[:, 0], out[:, 1]  # every event's set by the matching
    ev, src, dst, nbytes, nbad, a, b, rbytes = _match_all(
        call, trace.rank, wpeer, trace.tag, trace.comm, trace.nbytes, trace.aux_ptr, trace.aux, sr_src,
        int(Call.SENDRECV), none if dyn is None else dyn.sgrp, none if dyn is None else dyn.rgrp, pdst, psrc)
    if nbad:
        raise ReplayError(
            f"{trace._at(int(b))}: receive buffer of {int(rbytes)} B is smaller than the "
            f"{int(trace.nbytes[a])} B message from rank {int(trace.rank[a])} (tag {int(trace.tag[a])}): "
            f"MPI_ERR_TRUNCATE in {int(nbad)} receives")
    return Matching(pdst, psrc, ev, src, dst, nbytes, dyn)


@dataclass(frozen=True)
class Dynamic:
    """Messages matched at run time (to ranks and communicators that post wildcard receives).

    Per event (``len(trace)``): ``sgrp``/``rgrp`` the matching group of the
    event's send / receive side (-1: matched beforehand), ``stag`` the send
    tag, ``rsrc``/``rtag`` the receive's world source and tag (-2 any
    source, -1 any tag); ``ngroups`` groups, one per (receiver, communicator).
    """

    sgrp: np.ndarray
    rgrp: np.ndarray
    stag: np.ndarray
    rsrc: np.ndarray
    rtag: np.ndarray
    ngroups: int


def _dynamic(n: int, s_ev: np.ndarray, s_src: np.ndarray, s_dst: np.ndarray, s_tag: np.ndarray, s_comm: np.ndarray,
             r_ev: np.ndarray, r_src: np.ndarray, r_dst: np.ndarray, r_tag: np.ndarray,
             r_comm: np.ndarray) -> Dynamic | None:
    wild = (r_src == ANY_SOURCE) | (r_tag == ANY_TAG)
    if not wild.any():
        return None
    keys = group_key(np.concatenate([r_dst[wild], s_dst, r_dst]), np.concatenate([r_comm[wild], s_comm, r_comm]))
    nw, ns = int(wild.sum()), s_ev.size
    s_key, r_key = keys[nw:nw + ns], keys[nw + ns:]
    wkeys = np.unique(keys[:nw])
    sgrp = np.full(n, -1, dtype=np.int64)
    rgrp = np.full(n, -1, dtype=np.int64)
    s_in = np.isin(s_key, wkeys)
    r_in = np.isin(r_key, wkeys)
    sgrp[s_ev[s_in]] = np.searchsorted(wkeys, s_key[s_in])
    rgrp[r_ev[r_in]] = np.searchsorted(wkeys, r_key[r_in])
    stag = np.zeros(n, dtype=np.int64)
    stag[s_ev] = s_tag
    rsrc = np.full(n, -1, dtype=np.int64)
    rtag = np.zeros(n, dtype=np.int64)
    rsrc[r_ev] = r_src
    rtag[r_ev] = r_tag
    return Dynamic(sgrp, rgrp, stag, rsrc, rtag, int(wkeys.size))


@dataclass(frozen=True)
class Collectives:
    """Collective instances of a trace.

    Attributes
    ----------
    inst : numpy.ndarray of int32 (int64 from 2^31 events), shape (len(trace),)
        Instance of each collective event (-1 for other events).
    call, comm, nbytes, root, size : numpy.ndarray
        Per instance: call code, communicator, bytes per rank, root
        (-1 unrooted), communicator size.
    first_event : numpy.ndarray of int64
        An event of each instance (its lowest rank's).
    members_ptr, members : numpy.ndarray of int64
        World ranks of each instance's communicator (CSR).
    """

    inst: np.ndarray
    call: np.ndarray
    comm: np.ndarray
    nbytes: np.ndarray
    root: np.ndarray
    size: np.ndarray
    first_event: np.ndarray
    members_ptr: np.ndarray
    members: np.ndarray


_COLL_TAB = np.zeros(256, dtype=np.bool_)
_COLL_TAB[code_set(COLLECTIVES)] = True
_ROOTED_TAB = np.zeros(256, dtype=np.bool_)
_ROOTED_TAB[code_set({Call.BCAST, Call.REDUCE, Call.GATHER, Call.SCATTER})] = True


@njit(cache=True)
def _world_instances(rank, call, nbytes, peer, coll_tab, rooted_tab, a2av, count, inst, first):
    """Number the collectives of a trace whose events are all on MPI_COMM_WORLD, in one pass in event order (the
    events sorted by rank): each rank's k-th collective is instance k, whose first event (lowest rank's) goes to
    ``first`` (``len(trace)`` until seen).  ``count`` (zeros, per rank) and ``inst`` (-1, per event) are filled.
    Returns the number of instances, or -1 when some members disagree on the call, the bytes (except
    ``MPI_Alltoallv``) or the root (the caller then takes the general path, which says where)."""
    n = call.size
    m = 0
    for i in range(n):
        c = call[i]
        if not coll_tab[c]:
            continue
        r = rank[i]
        k = count[r]
        count[r] = k + 1
        inst[i] = k
        f = first[k]
        if f == n:
            first[k] = i
            m = max(m, k + 1)
        elif call[f] != c or (c != a2av and nbytes[f] != nbytes[i]) or (rooted_tab[c] and peer[f] != peer[i]):
            return -1
    return m


def collective_instances(trace: Trace) -> Collectives:
    """Number the collectives per communicator (the k-th call of every member is instance k).

    Raises
    ------
    ReplayError
        Members of one instance disagree on the call, the byte count or the root.
    """
    n = len(trace)
    inst = np.full(n, -1, dtype=index_dtype(n))
    empty = np.zeros(0, np.int64)
    if n and not trace.comm.any():  # all on MPI_COMM_WORLD: one compiled pass, no sort
        most = int(np.diff(trace.rank_ptr).max())  # no rank has more collectives than events
        first = np.full(most, n, dtype=np.int64)
        m = _world_instances(trace.rank, trace.call, trace.nbytes, trace.peer, _COLL_TAB, _ROOTED_TAB,
                             int(Call.ALLTOALLV), np.zeros(trace.nprocs, dtype=np.int64), inst, first)
        if m >= 0:
            first = first[:m]
            p = trace.nprocs
            c_call = trace.call[first].astype(np.int64)
            root = np.where(_ROOTED_TAB[c_call], trace.peer[first], -1).astype(np.int64)
            return Collectives(inst, c_call, np.zeros(m, np.int64), trace.nbytes[first], root,
                               np.full(m, p, dtype=np.int64), first, np.arange(0, (m + 1) * p, p, dtype=np.int64),
                               np.tile(trace.comm_ranks(0), m))
        inst[:] = -1
    ev = np.flatnonzero(call_is(trace.call, code_set(COLLECTIVES)))
    if ev.size == 0:
        return Collectives(inst, empty, empty, empty, empty, empty, empty, np.zeros(1, np.int64), empty)
    comm = trace.comm[ev].astype(np.int64)
    rank = trace.rank[ev].astype(np.int64)
    k = _group_position((comm, rank), np.lexsort((ev, rank, comm)))
    key = comm * (int(k.max()) + 1) + k
    uniq, inv = np.unique(key, return_inverse=True)
    inst[ev] = inv
    m = uniq.size
    c_call = trace.call[ev].astype(np.int64)
    c_bytes = trace.nbytes[ev]
    c_root = np.where(np.isin(trace.call[ev], code_set({Call.BCAST, Call.REDUCE, Call.GATHER, Call.SCATTER})),
                      trace.peer[ev], -1).astype(np.int64)
    # ALLTOALLV members send different totals (legal in MPI); its cost uses the per-destination counts
    c_bytes = np.where(trace.call[ev] == Call.ALLTOALLV, 0, c_bytes)
    for name, vals in (("call", c_call), ("nbytes", c_bytes), ("root", c_root)):
        lo = np.full(m, np.iinfo(np.int64).max)
        hi = np.full(m, np.iinfo(np.int64).min)
        np.minimum.at(lo, inv, vals)
        np.maximum.at(hi, inv, vals)
        bad = np.flatnonzero(lo != hi)
        if bad.size:
            sel = inv == bad[0]
            details = [{"rank": int(r), "event": int(trace.seq[e]), "call": CALL_NAMES[int(trace.call[e])],
                        "nbytes": int(trace.nbytes[e]), "root": int(rt)}
                       for r, e, rt in zip(rank[sel], ev[sel], c_root[sel], strict=True)][:20]
            raise ReplayError(
                f"{trace.source or 'trace'}: collective #{int(k[sel][0])} on communicator {int(comm[sel][0])}: "
                f"members disagree on the {name}: "
                + "; ".join(f"rank {d['rank']} event {d['event']} {d['call']} {d['nbytes']} B" for d in details[:6]),
                details)
    first = np.full(m, n, dtype=np.int64)
    np.minimum.at(first, inv, ev)
    i_comm = trace.comm[first].astype(np.int64)
    sizes = {c: trace.comm_ranks(c) for c in np.unique(i_comm).tolist()}
    size = np.array([sizes[c].size for c in i_comm.tolist()], dtype=np.int64)
    members_ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(size, out=members_ptr[1:])
    if len(sizes) == 1:
        only = next(iter(sizes.values()))
        members = np.tile(only, m)
    else:
        members = np.concatenate([sizes[c] for c in i_comm.tolist()])
    return Collectives(inst, trace.call[first].astype(np.int64), i_comm, trace.nbytes[first], c_root[
        np.searchsorted(ev, first)], size, first, members_ptr, members)
