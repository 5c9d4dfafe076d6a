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
from numba import njit

from perfmod.core.memory import index_dtype
from perfmod.trace.core import ANY_SOURCE, ANY_TAG, CALL_NAMES, COLLECTIVES, PROC_NULL, Call, Trace, code_set
from perfmod.trace.requests import group_key

__all__ = ["ReplayError", "Matching", "match_messages", "Collectives", "collective_instances", "world_peer", "call_is",
           "SEND_CODES"]


class ReplayError(RuntimeError):
    """A trace that cannot be replayed: deadlock, unmatched or truncated messages, collective mismatch.

    ``details`` holds one dict per rank or message involved (rank, event,
    call, peer, tag, comm, ...).
    """

    def __init__(self, message: str, details: list[dict] | None = None) -> None:
        super().__init__(message)
        self.details = details or []


def call_is(call: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``np.isin(call, codes)`` for the uint8 call column, as one table look-up (a pass, not one per code)."""
    if call.dtype != np.uint8:
        return np.isin(call, codes)
    table = np.zeros(256, dtype=bool)
    table[codes] = True
    return table[call]


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
    pdst : numpy.ndarray of int32 (int64 from 2**31 events), shape (len(trace),)
        Receive event matching each send event (-1 unmatched, -2 to PROC_NULL).
    psrc : numpy.ndarray of int32 (int64 from 2**31 events), shape (len(trace),)
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
def _pair(s_ev, s_src, s_dst, s_tag, s_comm, s_bytes, r_ev, r_src, r_dst, r_tag, r_comm, r_bytes, pdst, psrc):
    """Pair the k-th send of each (src, dst, tag, comm) group with its k-th receive (both in event order).

    Groups are numbered through an open-addressing hash table (no sort); fills ``pdst``/``psrc`` and
    returns ``(truncated, a, b)``: the number of receives smaller than their message and, of the first
    in (src, dst, tag, comm, occurrence) order, the send and receive positions.
    """
    ns, nr = s_ev.size, r_ev.size
    cap = 16
    while cap < 2 * ns:
        cap *= 2
    mask = cap - 1
    table = np.full(cap, -1, dtype=np.int64)  # group id (= its first send's position)
    grp = np.empty(ns, dtype=np.int64)
    count = np.zeros(ns, dtype=np.int64)  # sends per group, at the group's id
    for k in range(ns):
        h = (np.uint64(s_src[k]) * np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(s_dst[k]) * np.uint64(
            0xC2B2AE3D27D4EB4F) ^ np.uint64(s_tag[k]) * np.uint64(0x165667B19E3779F9) ^ np.uint64(
            s_comm[k]) * np.uint64(0x27D4EB2F165667C5))
        j = np.int64((h ^ (h >> np.uint64(31))) & np.uint64(mask))
        while True:
            g = table[j]
            if g < 0:
                table[j] = k
                g = k
                break
            if s_src[g] == s_src[k] and s_dst[g] == s_dst[k] and s_tag[g] == s_tag[k] and s_comm[g] == s_comm[k]:
                break
            j = (j + 1) & mask
        grp[k] = g
        count[g] += 1
    # the sends of each group in event order: CSR over group ids
    ptr = np.zeros(ns + 1, dtype=np.int64)
    for k in range(ns):
        ptr[k + 1] = ptr[k] + count[k]
    fill = ptr[:-1].copy()
    slot = np.empty(ns, dtype=np.int64)
    for k in range(ns):
        slot[fill[grp[k]]] = k
        fill[grp[k]] += 1
    taken = count  # reused: receives matched per group so far
    taken[:] = 0
    nbad = 0
    best_a = -1
    best_b = -1
    cur = np.empty(5, dtype=np.int64)
    best = np.empty(5, dtype=np.int64)
    for m in range(nr):
        h = (np.uint64(r_src[m]) * np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(r_dst[m]) * np.uint64(
            0xC2B2AE3D27D4EB4F) ^ np.uint64(r_tag[m]) * np.uint64(0x165667B19E3779F9) ^ np.uint64(
            r_comm[m]) * np.uint64(0x27D4EB2F165667C5))
        j = np.int64((h ^ (h >> np.uint64(31))) & np.uint64(mask))
        g = -1
        while table[j] >= 0:
            t = table[j]
            if s_src[t] == r_src[m] and s_dst[t] == r_dst[m] and s_tag[t] == r_tag[m] and s_comm[t] == r_comm[m]:
                g = t
                break
            j = (j + 1) & mask
        if g < 0:
            continue
        occ = taken[g]
        if ptr[g] + occ >= fill[g]:
            continue  # more receives than sends
        taken[g] = occ + 1
        k = slot[ptr[g] + occ]
        pdst[s_ev[k]] = r_ev[m]
        psrc[r_ev[m]] = s_ev[k]
        if r_bytes[m] < s_bytes[k]:
            nbad += 1
            cur[0], cur[1], cur[2], cur[3], cur[4] = s_src[k], s_dst[k], s_tag[k], s_comm[k], occ
            if best_a < 0 or _lex_less(cur, best):
                best[:] = cur
                best_a, best_b = k, m
    return nbad, best_a, best_b


def match_messages(trace: Trace) -> Matching:
    """Pair every send with its receive by (source, destination, tag, communicator) in posting order.

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
    is_send = call_is(call, SEND_CODES)
    is_recv = call_is(call, _RECV_CODES)
    sr = call == Call.SENDRECV
    s_ev = np.flatnonzero(is_send)
    s_peer, s_tag, s_comm, s_bytes = trace.peer[s_ev], trace.tag[s_ev], trace.comm[s_ev], trace.nbytes[s_ev]
    r_ev = np.flatnonzero(is_recv)
    r_peer, r_tag, r_comm, r_bytes = trace.peer[r_ev], trace.tag[r_ev], trace.comm[r_ev], trace.nbytes[r_ev]
    sr_ev = np.flatnonzero(sr)
    if sr_ev.size:  # receive side of Sendrecv: aux = [source, recv_nbytes, recv_tag]
        base = trace.aux_ptr[sr_ev]
        r_ev = np.concatenate([r_ev, sr_ev])
        r_peer = np.concatenate([r_peer, trace.aux[base]]).astype(np.int64)
        r_bytes = np.concatenate([r_bytes, trace.aux[base + 1]])
        r_tag = np.concatenate([r_tag, trace.aux[base + 2]]).astype(np.int64)
        r_comm = np.concatenate([r_comm, trace.comm[sr_ev]])
        o = np.argsort(r_ev, kind="stable")
        r_ev, r_peer, r_bytes, r_tag, r_comm = r_ev[o], r_peer[o], r_bytes[o], r_tag[o], r_comm[o]
    pdst = np.full(n, -1, dtype=index_dtype(n))
    psrc = np.full(n, -1, dtype=index_dtype(n))
    s_null, r_null = s_peer == PROC_NULL, r_peer == PROC_NULL
    pdst[s_ev[s_null]] = -2
    psrc[r_ev[r_null]] = -2
    s_ev, s_peer, s_tag, s_comm, s_bytes = (a[~s_null] for a in (s_ev, s_peer, s_tag, s_comm, s_bytes))
    r_ev, r_peer, r_tag, r_comm, r_bytes = (a[~r_null] for a in (r_ev, r_peer, r_tag, r_comm, r_bytes))
    s_src = trace.rank[s_ev].astype(np.int64)
    s_dst = world_peer(trace, s_peer, s_comm)
    all_ev, all_src, all_dst, all_bytes = s_ev, s_src, s_dst, s_bytes
    r_dst = trace.rank[r_ev].astype(np.int64)
    r_src = world_peer(trace, r_peer, r_comm)
    dyn = _dynamic(n, s_ev, s_src, s_dst, s_tag, s_comm, r_ev, r_src, r_dst, r_tag, r_comm)
    if dyn is not None:  # messages to (rank, comm) pairs with wildcard receives are matched by the kernel
        s_keep, r_keep = dyn.sgrp[s_ev] < 0, dyn.rgrp[r_ev] < 0
        s_ev, s_src, s_dst, s_tag, s_comm, s_bytes = (
            a[s_keep] for a in (s_ev, s_src, s_dst, s_tag, s_comm, s_bytes))
        r_ev, r_src, r_dst, r_tag, r_comm, r_bytes = (
            a[r_keep] for a in (r_ev, r_src, r_dst, r_tag, r_comm, r_bytes))
    # the k-th send of a (src, dst, tag, comm) group, in posting (event) order, matches its k-th receive
    nbad, a, b = _pair(s_ev, s_src, s_dst, s_tag, s_comm, s_bytes, r_ev, r_src, r_dst, r_tag, r_comm, r_bytes,
                       pdst, psrc)
    if nbad:
        raise ReplayError(
            f"{trace._at(int(r_ev[b]))}: receive buffer of {int(r_bytes[b])} B is smaller than the "
            f"{int(s_bytes[a])} B message from rank {int(s_src[a])} (tag {int(s_tag[a])}): "
            f"MPI_ERR_TRUNCATE in {int(nbad)} receives")
    return Matching(pdst, psrc, all_ev, all_src, all_dst, all_bytes.astype(np.int64), dyn)


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
    inst : numpy.ndarray of int32 (int64 from 2**31 events), shape (len(trace),)
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


def collective_instances(trace: Trace) -> Collectives:
    """Number the collectives per communicator (the k-th call of every member is instance k).

    Raises
    ------
    ReplayError
        Members of one instance disagree on the call, the byte count or the root.
    """
    n = len(trace)
    ev = np.flatnonzero(call_is(trace.call, code_set(COLLECTIVES)))
    inst = np.full(n, -1, dtype=index_dtype(n))
    empty = np.zeros(0, np.int64)
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
