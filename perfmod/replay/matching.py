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
from perfmod.core.prefetch import prefetch
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


@njit(cache=True, inline="always")
def _hash4(a, b, c, d, mask):
    h = (np.uint64(a) * np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(b) * np.uint64(0xC2B2AE3D27D4EB4F)
         ^ np.uint64(c) * np.uint64(0x165667B19E3779F9) ^ np.uint64(d) * np.uint64(0x27D4EB2F165667C5))
    return np.int64((h ^ (h >> np.uint64(31))) & np.uint64(mask))


@njit(cache=True, inline="always")
def _pair(a, b):
    """Ranks ``a`` and ``b`` (at most 32 bits each; ``a`` may be negative) as one int64."""
    return (np.int64(a) << np.int64(32)) | (np.int64(b) & np.int64(0xFFFFFFFF))


@njit(cache=True, inline="always")
def _home(table, ab, c, d):
    """The first slot :func:`_find` probes for group (a, b, c, d) (``ab = _pair(a, b)``)."""
    return _hash4(ab >> np.int64(32), ab & np.int64(0xFFFFFFFF), c, d, table.shape[0] - 1)


#: how many events ahead the matching passes prefetch the hash table's row of a message's group
#: (:mod:`perfmod.core.prefetch`): the table holds up to 8 rows of 32 bytes per rank (256 MiB at 1,048,576 ranks),
#: and a group's first look-up in each pass was a cache miss
_LOOK_AHEAD = 16


@njit(cache=True)
def _find(table, ab, c, d):
    """Slot of group (a, b, c, d) in ``table``, whose rows are (group id, -1 free; then its key: source and
    destination as ``ab = _pair(a, b)``, tag, communicator): the group's, or the free slot for it.  The key is
    kept in the row, 32 bytes, so that a look-up reads one cache line rather than the key's arrays."""
    mask = table.shape[0] - 1
    j = _home(table, ab, c, d)
    while table[j, 0] >= 0:
        if table[j, 1] == ab and table[j, 2] == c and table[j, 3] == d:
            return j
        j = (j + 1) & mask
    return j


@njit(cache=True)
def _group_sends(st, call, rank, wpeer, tag, comm, nbytes, send_tab, sgrp, pdst, ev, src, dst, nb, gsend, table,
                 count):
    """List the sends from event ``st[0]`` (send ``st[1]``) on and number their groups (``st[2]`` so far);
    returns True, before the event that would need it, when the table is half full (grow it, call again)."""
    dyn = sgrp.size > 0
    k, ng = st[1], st[2]
    for i in range(st[0], call.size):
        a = i + _LOOK_AHEAD
        if a < call.size and send_tab[call[a]]:
            prefetch(table, _home(table, _pair(rank[a], wpeer[a]), tag[a], comm[a]))
        if not send_tab[call[i]]:
            continue
        if wpeer[i] == PROC_NULL:
            pdst[i] = -2
            continue
        ev[k], src[k], dst[k], nb[k] = i, rank[i], wpeer[i], nbytes[i]
        gsend[k] = -1
        if not (dyn and sgrp[i] >= 0):
            ab = _pair(src[k], dst[k])
            j = _find(table, ab, tag[i], comm[i])
            if table[j, 0] < 0:
                if 2 * (ng + 1) > table.shape[0]:
                    st[0], st[1], st[2] = i, k, ng
                    return True
                table[j, 0] = ng
                table[j, 1], table[j, 2], table[j, 3] = ab, tag[i], comm[i]
                ng += 1
            g = table[j, 0]
            gsend[k] = g
            count[g] += 1
        k += 1
    st[0], st[1], st[2] = call.size, k, ng
    return False


@njit(cache=True)
def _rehash(old, table):
    """Insert the groups of the hash table ``old`` into the (larger, empty) ``table``."""
    for i in range(old.shape[0]):
        if old[i, 0] >= 0:
            table[_find(table, old[i, 1], old[i, 2], old[i, 3])] = old[i]


@njit(cache=True)
def _place(gsend, ptr, slot):
    """``slot``: the sends of each group in event order (CSR ``ptr`` over groups)."""
    fill = ptr[:-1].copy()
    for k in range(gsend.size):
        g = gsend[k]
        if g >= 0:
            slot[fill[g]] = k
            fill[g] += 1


@njit(cache=True)
def _pair_receives(call, rank, wpeer, tag, comm, nbytes, aux_ptr, aux, sr_src, recv_tab, sr_code, rgrp, pdst, psrc,
                   ev, src, dst, nb, table, count, ptr, slot, taken):
    """Match each receive, in event order, to the next send of its group (see :func:`_match_all`)."""
    dyn = rgrp.size > 0
    nbad = 0
    best_s, best_r, best_b = -1, -1, 0
    cur = np.empty(5, dtype=np.int64)
    best = np.empty(5, dtype=np.int64)
    nsr = 0
    for i in range(call.size):
        a = i + _LOOK_AHEAD
        if a < call.size and recv_tab[call[a]]:
            prefetch(table, _home(table, _pair(wpeer[a], rank[a]), tag[a], comm[a]))
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
        if (dyn and rgrp[i] >= 0) or taken.size == 0:
            continue
        g = table[_find(table, _pair(rs, rank[i]), rt, comm[i]), 0]
        if g < 0 or taken[g] == count[g]:
            continue  # no send, or more receives than sends
        occ = taken[g]
        taken[g] = occ + 1
        k = slot[ptr[g] + occ]
        pdst[ev[k]] = i
        psrc[i] = ev[k]
        if rb < nb[k]:
            nbad += 1
            cur[0], cur[1], cur[2], cur[3], cur[4] = src[k], dst[k], rt, comm[i], occ
            if best_s < 0 or _lex_less(cur, best):
                best[:] = cur
                best_s, best_r, best_b = ev[k], i, rb
    return nbad, best_s, best_r, best_b


def _match_all(call, rank, wpeer, tag, comm, nbytes, aux_ptr, aux, sr_src, sr_code, sgrp, rgrp, pdst, psrc):
    """Pair the k-th send of each (src, dst, tag, comm) group with its k-th receive, both in event order (MPI's
    non-overtaking rule), in compiled passes over the events with a hash table of groups (no sort).  The arrays
    are allocated here, by NumPy, so that the replay's memory measurement (``tracemalloc``) sees them.

    ``wpeer``: world peer of each point-to-point event; ``sr_src``: world source of each Sendrecv's receive
    side, in event order; ``sgrp``/``rgrp`` (empty, or per event): sides left to the kernel (>= 0).  Fills
    ``pdst``/``psrc`` and returns the sends (events, sender, receiver, bytes; PROC_NULL excluded) and
    ``(truncated, send, receive, receive bytes)``: how many receive buffers are smaller than their message,
    and the first such message in (src, dst, tag, comm, occurrence) order.
    """
    ns = int(np.count_nonzero(call_is(call, SEND_CODES) & (wpeer != PROC_NULL)))
    ev, src, dst, nb = (np.empty(ns, dtype=np.int64) for _ in range(4))
    gsend = np.empty(ns, dtype=index_dtype(ns))  # group of each send (internal: narrow)
    # the groups' hash table (see _find), at most half full: first sized for four groups per rank (a 2D halo's),
    # at most two rows per send, so that it seldom grows
    size = 1 << max(10, (int(min(2 * ns, 8 * (int(rank[-1]) + 1 if rank.size else 0))) - 1).bit_length())
    table = np.full((size, 4), -1, dtype=np.int64)
    count = np.zeros(size // 2, dtype=np.int64)  # sends per group
    st = np.zeros(3, dtype=np.int64)  # next event, next send, groups
    # the tables grow here, between compiled calls (numba counts references on arrays a loop reassigns)
    while _group_sends(st, call, rank, wpeer, tag, comm, nbytes, _SEND_TAB, sgrp, pdst, ev, src, dst, nb, gsend,
                       table, count):
        old, table = table, np.full((2 * table.shape[0], 4), -1, dtype=np.int64)
        _rehash(old, table)
        del old
        count = np.concatenate((count, np.zeros(count.size, dtype=np.int64)))
    ng = int(st[2])
    ptr = np.zeros(ng + 1, dtype=np.int64)
    np.cumsum(count[:ng], out=ptr[1:])
    slot = np.empty(int(ptr[-1]), dtype=index_dtype(ns))
    _place(gsend, ptr, slot)
    del gsend
    out = _pair_receives(call, rank, wpeer, tag, comm, nbytes, aux_ptr, aux, sr_src, _RECV_TAB, sr_code, rgrp, pdst,
                         psrc, ev, src, dst, nb, table, count, ptr, slot, np.zeros(ng, dtype=np.int64))
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
        pdst = np.full(n, -1, dtype=index_dtype(n))
        psrc = np.full(n, -1, dtype=index_dtype(n))
    else:
        if out.shape[0] != n or out.ndim != 2 or out.shape[1] < 2:
            raise ValueError(f"out must have shape ({n}, k >= 2), got {out.shape}")
        pdst, psrc = out[:, 0], out[:, 1]
        pdst[:] = -1
        psrc[:] = -1
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
