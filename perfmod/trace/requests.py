"""Which nonblocking call each wait or test completes (one compiled pass).

A request id is a handle local to its rank; MPI reuses handles once a
request has completed, so a reference is resolved to the latest earlier
creation (``ISEND``, ``IRECV``, ``ISSEND``) of the same id on the same rank
that has not been completed yet.  Per (rank, id), creations and completions
must alternate, a creation first: anything else is a :class:`TraceError`
naming the event.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmod.core.kernel_cache import njit
from perfmod.core.memory import index_dtype
from perfmod.trace.core import LIST_CALLS, NO_REQUEST, NONBLOCKING, Call, Trace, TraceError, code_set

__all__ = ["Requests", "resolve_requests", "group_key", "validate_trace"]


def group_key(*columns: np.ndarray) -> np.ndarray:
    """One int64 per row that is equal exactly when all ``columns`` are, ordered like the rows' tuples.

    Non-negative columns whose value ranges multiply below 2**62 are packed
    directly; otherwise each column is first replaced by its rank among its
    unique values.
    """
    out = np.zeros(np.shape(columns[0]), dtype=np.int64)
    cols = []
    for c in columns:
        c = np.asarray(c, dtype=np.int64)
        lo = int(c.min(initial=0))
        hi = int(c.max(initial=0))
        cols.append((c - lo, hi - lo + 1))
    total = 1
    for _, width in cols:
        total *= width
    if total >= 1 << 62:
        cols = []
        for c in columns:
            u, inv = np.unique(np.asarray(c), return_inverse=True)
            cols.append((inv.astype(np.int64).reshape(np.shape(c)), max(u.size, 1)))
    for c, width in cols:
        out *= width
        out += c
    return out


@dataclass(frozen=True)
class Requests:
    """Resolved request references of a trace.

    Attributes
    ----------
    ref_ptr : numpy.ndarray of int32 (int64 from 2^31 references), shape (len(trace) + 1,)
        CSR offsets: event ``i`` completes the requests
        ``created[ref_ptr[i]:ref_ptr[i + 1]]``.
    created : numpy.ndarray of int32 (int64 from 2^31 events)
        Index of the creating event of each completed request.
    never_completed : numpy.ndarray of int64
        Creating events whose request no wait or test completes.
    """

    ref_ptr: np.ndarray
    created: np.ndarray
    never_completed: np.ndarray


def _table(codes: np.ndarray) -> np.ndarray:
    t = np.zeros(256, dtype=np.bool_)
    t[codes] = True
    return t


_CREATE = _table(code_set(NONBLOCKING))
_SINGLE = _table(code_set({Call.WAIT, Call.TEST}))
_LIST = _table(code_set(LIST_CALLS))


@njit(cache=True, inline="always")
def _slot(keys_r, keys_id, r, q):
    """Slot of ``(r, q)`` in the open-addressing table (its own or the free one where it would go)."""
    mask = keys_r.size - 1
    h = (np.uint64(r) * np.uint64(0x9E3779B97F4A7C15)) ^ (np.uint64(q) * np.uint64(0xC2B2AE3D27D4EB4F))
    s = np.int64((h ^ (h >> np.uint64(29))) & np.uint64(mask))
    while keys_r[s] >= 0 and (keys_r[s] != r or keys_id[s] != q):
        s = (s + 1) & mask
    return s


@njit(cache=True)
def _grow(keys_r, keys_id, pend):
    """The table at twice the size, every entry in its new slot."""
    kr = np.full(2 * keys_r.size, -1, dtype=np.int64)
    ki = np.zeros(2 * keys_r.size, dtype=np.int64)
    pe = np.full(2 * keys_r.size, -1, dtype=np.int64)
    for s in range(keys_r.size):
        if keys_r[s] >= 0:
            t = _slot(kr, ki, keys_r[s], keys_id[s])
            kr[t], ki[t], pe[t] = keys_r[s], keys_id[s], pend[s]
    return kr, ki, pe


@njit(cache=True)
def _count_refs(call, request, aux_ptr, create, single, lists, no_request, ref_ptr):
    """``ref_ptr``: CSR offsets of the requests each event completes; returns whether every event passes the
    request checks of :func:`resolve_requests` (a nonblocking call's id is >= 0; only nonblocking calls, waits and
    tests carry an id; a wait's id is >= 0), in the same pass."""
    ok = True
    ref_ptr[0] = 0
    for i in range(call.size):
        c = call[i]
        q = request[i]
        if create[c]:
            if q < 0:
                ok = False
        elif q != no_request and ((single[c] and q < 0) or not (single[c] or lists[c])):
            ok = False
        k = 0
        if single[c] and q != -1:
            k = 1
        elif lists[c]:
            k = aux_ptr[i + 1] - aux_ptr[i]
        ref_ptr[i + 1] = ref_ptr[i] + k
    return ok


# the state of :func:`_run` between calls (numba counts references on arrays a loop reassigns, which made
# the pass ten times slower: the tables are grown outside it)
_AT, _USED, _NN, _BAD_REF, _BREF_R, _BREF_Q, _BAD_CRE, _BAD_PREV, _BCRE_R, _BCRE_Q = range(10)


@njit(cache=True)
def _run(st, by_rank, rank, call, request, aux_ptr, aux, create, single, ref_ptr, created, keys_r, keys_id, pend,
         slots, never):
    """Resolve from event ``st[_AT]`` on; returns 0 at the end, 1 when the table must grow, 2 when ``never``
    must (``st[_AT]`` is then the event to resume at)."""
    used, nn = st[_USED], st[_NN]
    for i in range(st[_AT], rank.size):
        c = call[i]
        r = np.int64(rank[i])
        if by_rank and i > 0 and r != rank[i - 1]:  # a new rank: keep the last one's pending requests, empty
            if nn + used > never.size:
                st[_AT], st[_USED], st[_NN] = i, used, nn
                return 2
            for u in range(used):
                s = slots[u]
                if pend[s] >= 0:
                    never[nn] = pend[s]
                    nn += 1
                keys_r[s] = -1
                pend[s] = -1
            used = 0
        if create[c]:
            q = request[i]
            s = _slot(keys_r, keys_id, r, q)
            if keys_r[s] < 0:
                if 2 * (used + 1) > keys_r.size:  # keep the table at most half full
                    st[_AT], st[_USED], st[_NN] = i, used, nn
                    return 1
                slots[used] = s
                used += 1
                keys_r[s] = r
                keys_id[s] = q
            elif pend[s] >= 0 and (st[_BAD_CRE] < 0 or r < st[_BCRE_R] or (r == st[_BCRE_R] and q < st[_BCRE_Q])):
                st[_BAD_CRE], st[_BAD_PREV], st[_BCRE_R], st[_BCRE_Q] = i, pend[s], r, q
            pend[s] = i
            continue
        a, b = ref_ptr[i], ref_ptr[i + 1]
        for m in range(a, b):
            q = request[i] if single[c] else aux[aux_ptr[i] + m - a]
            s = _slot(keys_r, keys_id, r, q)
            if keys_r[s] < 0 or pend[s] < 0:
                created[m] = -1
                if st[_BAD_REF] < 0 or r < st[_BREF_R] or (r == st[_BREF_R] and q < st[_BREF_Q]):
                    st[_BAD_REF], st[_BREF_R], st[_BREF_Q] = i, r, q
            else:
                created[m] = pend[s]
                pend[s] = -1
    st[_AT], st[_USED], st[_NN] = rank.size, used, nn
    return 0


@njit(cache=True)
def _resolve(rank, call, request, aux_ptr, aux, create, single, ref_ptr, created):
    """One pass in event order over the references: per (rank, id) the pending creating event (-1: none).

    Fills ``created`` and returns ``(never, bad_ref, bad_ref_id, bad_cre, bad_cre_id, bad_prev)``: ``bad_ref`` and
    ``bad_cre`` are the first (by rank, id, event) reference to an id not pending and creation of an id still
    pending (-1: none), with their ids; ``bad_prev`` the pending creation of ``bad_cre``.
    """
    n = rank.size
    # the table grows with the distinct (rank, id) pairs, which MPI's handle reuse keeps far fewer than requests;
    # with events sorted by rank it holds one rank's ids at a time (emptied when the rank changes: it stays in cache)
    by_rank = True
    for i in range(1, n):
        if rank[i] < rank[i - 1]:
            by_rank = False
            break
    keys_r = np.full(64, -1, dtype=np.int64)
    keys_id = np.zeros(64, dtype=np.int64)
    pend = np.full(64, -1, dtype=np.int64)
    slots = np.empty(32, dtype=np.int64)  # the used slots, in use order
    never = np.empty(64, dtype=np.int64)
    st = np.zeros(10, dtype=np.int64)
    st[_BAD_REF] = st[_BAD_CRE] = st[_BAD_PREV] = -1
    while True:
        why = _run(st, by_rank, rank, call, request, aux_ptr, aux, create, single, ref_ptr, created, keys_r, keys_id,
                   pend, slots, never)
        if why == 0:
            break
        if why == 2:
            never = np.concatenate((never, np.empty(never.size + st[_USED], dtype=np.int64)))
            continue
        old_r, old_id = keys_r, keys_id
        keys_r, keys_id, pend = _grow(keys_r, keys_id, pend)
        slots = np.concatenate((slots, slots))
        for u in range(st[_USED]):
            slots[u] = _slot(keys_r, keys_id, old_r[slots[u]], old_id[slots[u]])
    nn = st[_NN]
    for s in range(keys_r.size):
        if pend[s] >= 0:
            if nn == never.size:
                never = np.concatenate((never, np.empty(nn, dtype=np.int64)))
            never[nn] = pend[s]
            nn += 1
    return np.sort(never[:nn]), st[_BAD_REF], st[_BREF_Q], st[_BAD_CRE], st[_BCRE_Q], st[_BAD_PREV]


def resolve_requests(trace: Trace) -> Requests:
    """Resolve every request completed by a wait or test to the event that created it.

    One compiled pass in event order keeps, per (rank, id), the pending
    creating event in a hash table (no sort); errors name the first bad
    event in (rank, id, event) order.

    Raises
    ------
    TraceError
        A nonblocking call without a request id, a completion of an id
        never created (or already completed) on that rank, or an id created
        again while still pending.
    """
    call = trace.call
    n = len(trace)
    ref_ptr = np.empty(n + 1, dtype=index_dtype(n + trace.aux.size))
    if not (_count_refs(call, trace.request, trace.aux_ptr, _CREATE, _SINGLE, _LIST, NO_REQUEST, ref_ptr)
            and not (trace.aux.size and (trace.aux < 0).any())):  # then find the first bad event, as NumPy masks
        is_create = _CREATE[call]
        trace._fail(is_create & (trace.request < 0), "nonblocking call needs a request id >= 0", "request")
        lists = _LIST[call]
        trace._fail(~(is_create | _SINGLE[call] | lists) & (trace.request != NO_REQUEST),
                    "only nonblocking calls, waits and tests carry a request", "request")
        single = _SINGLE[call] & (trace.request != NO_REQUEST)
        neg = single & (trace.request < 0)
        if trace.aux.size and (trace.aux < 0).any():  # a list call's negative ids (other calls' aux may be < 0)
            alen = np.diff(trace.aux_ptr)
            neg[np.repeat(np.arange(len(trace)), alen)[np.repeat(lists, alen) & (trace.aux < 0)]] = True
        trace._fail(neg, "waits on a negative request id", "aux_ptr")
    created = np.empty(int(ref_ptr[-1]), dtype=index_dtype(n))
    never, bad_ref, ref_id, bad_cre, cre_id, prev = _resolve(
        trace.rank, call, trace.request, trace.aux_ptr, trace.aux, _CREATE, _SINGLE, ref_ptr, created)
    if bad_ref >= 0:
        raise TraceError(f"{trace._at(int(bad_ref))}: request {int(ref_id)} was never created on this rank by an "
                         f"earlier nonblocking call, or was already completed")
    if bad_cre >= 0:
        raise TraceError(f"{trace._at(int(bad_cre))}: request {int(cre_id)} created again while the earlier "
                         f"request with this id (event {int(trace.seq[prev])}) is still pending")
    return Requests(ref_ptr, created, never)


def validate_trace(trace: Trace) -> Trace:
    """Check a trace completely: :meth:`Trace.validate` and its requests (:func:`resolve_requests`).

    Returns
    -------
    Trace
        ``trace`` itself, so that ``validate_trace(build(...))`` chains.

    Raises
    ------
    TraceError
        The first problem found, naming the file (the trace's ``source``),
        rank and event.
    """
    resolve_requests(trace.validate())
    return trace
