"""Which nonblocking call each wait or test completes (vectorized).

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
    ref_ptr : numpy.ndarray of int64, shape (len(trace) + 1,)
        CSR offsets: event ``i`` completes the requests
        ``created[ref_ptr[i]:ref_ptr[i + 1]]``.
    created : numpy.ndarray of int64
        Index of the creating event of each completed request.
    never_completed : numpy.ndarray of int64
        Creating events whose request no wait or test completes.
    """

    ref_ptr: np.ndarray
    created: np.ndarray
    never_completed: np.ndarray


def resolve_requests(trace: Trace) -> Requests:
    """Resolve every request completed by a wait or test to the event that created it.

    Raises
    ------
    TraceError
        A nonblocking call without a request id, a completion of an id
        never created (or already completed) on that rank, or an id created
        again while still pending.
    """
    n = len(trace)
    call = trace.call
    is_create = np.isin(call, code_set(NONBLOCKING))
    trace._fail(is_create & (trace.request < 0), "nonblocking call needs a request id >= 0", "request")
    single = np.isin(call, code_set({Call.WAIT, Call.TEST})) & (trace.request != NO_REQUEST)
    trace._fail(~(is_create | single) & (trace.request != NO_REQUEST) & ~np.isin(call, code_set(LIST_CALLS)),
                "only nonblocking calls, waits and tests carry a request", "request")
    lists = np.isin(call, code_set(LIST_CALLS))
    alen = np.diff(trace.aux_ptr)
    list_ev = np.repeat(np.arange(n, dtype=np.int64), np.where(lists, alen, 0))
    # aux entries belonging to list calls, in event order
    mask_aux = np.repeat(lists, alen)
    list_ids = trace.aux[mask_aux]
    single_ev = np.flatnonzero(single).astype(np.int64)
    ref_ev = np.concatenate([single_ev, list_ev])
    ref_id = np.concatenate([trace.request[single_ev], list_ids])
    # keep each event's references in their aux order: sort by event, stable
    o = np.argsort(ref_ev, kind="stable")
    ref_ev, ref_id = ref_ev[o], ref_id[o]
    trace._fail(np.isin(np.arange(n), ref_ev[ref_id < 0]), "waits on a negative request id", "aux_ptr")
    cre_ev = np.flatnonzero(is_create).astype(np.int64)
    cre_id = trace.request[cre_ev]
    ev = np.concatenate([cre_ev, ref_ev])
    ids = np.concatenate([cre_id, ref_id])
    kind = np.concatenate([np.zeros(cre_ev.size, np.int8), np.ones(ref_ev.size, np.int8)])
    # records in event order (a creation and a completion never share an event), then grouped by
    # (rank, id) with a stable sort, so each group lists its creations and completions in program order
    by_event = np.argsort(ev, kind="stable")
    order = by_event[np.argsort(group_key(trace.rank[ev[by_event]], ids[by_event]), kind="stable")]
    ev_s, id_s, kind_s = ev[order], ids[order], kind[order]
    rank_s = trace.rank[ev_s]
    new_group = np.ones(ev_s.size, dtype=bool)
    new_group[1:] = (rank_s[1:] != rank_s[:-1]) | (id_s[1:] != id_s[:-1])
    prev_kind = np.empty_like(kind_s)
    if kind_s.size:
        prev_kind[0] = -1
        prev_kind[1:] = kind_s[:-1]
    prev_kind[new_group] = -1
    bad_ref = (kind_s == 1) & (prev_kind != 0)
    if bad_ref.any():
        j = int(np.flatnonzero(bad_ref)[0])
        i = int(ev_s[j])
        raise TraceError(f"{trace._at(i)}: request {int(id_s[j])} was never created on this rank by an earlier "
                         f"nonblocking call, or was already completed")
    bad_cre = (kind_s == 0) & (prev_kind == 0)
    if bad_cre.any():
        j = int(np.flatnonzero(bad_cre)[0])
        raise TraceError(f"{trace._at(int(ev_s[j]))}: request {int(id_s[j])} created again while the earlier "
                         f"request with this id (event {int(trace.seq[ev_s[j - 1]])}) is still pending")
    created_sorted = np.full(ev_s.size, -1, dtype=np.int64)
    is_ref = kind_s == 1
    created_sorted[is_ref] = ev_s[np.flatnonzero(is_ref) - 1]
    # back to the (event, aux) order of the references
    created = np.empty(ref_ev.size, dtype=np.int64)
    ref_positions = order[is_ref] - cre_ev.size  # index into ref arrays
    created[ref_positions] = created_sorted[is_ref]
    ref_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(ref_ev, minlength=n), out=ref_ptr[1:])
    last_in_group = np.ones(ev_s.size, dtype=bool)
    last_in_group[:-1] = new_group[1:]
    never = np.sort(ev_s[last_in_group & (kind_s == 0)])
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
