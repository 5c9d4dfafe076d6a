"""The per-event checks of :meth:`perfmod.trace.core.Trace.validate` as one compiled pass (issue 23: the replay
validated a trace in a dozen NumPy passes, each with its own temporaries).

:func:`check_columns` returns, for each check of :data:`CHECKS` (in the order
``validate`` reports them), the first failing event and how many fail; the
trace names the event (:meth:`perfmod.trace.core.Trace._fail_at`).
"""

from __future__ import annotations

import numpy as np

from perfmod.core.kernel_cache import njit

__all__ = ["CHECKS", "check_columns"]

#: (index, column, what) of each check; ``validate`` raises for the first that fails, in this order
#: (the last six: ``aux_ptr`` falling, a Sendrecv without its 3 aux entries, an Alltoallv without one per
#: communicator rank, an aux list on a call that takes none; and the Sendrecv and Alltoallv events, counted for
#: the checks of their aux values)
CHECKS = ("rank", "sorted", "seq", "call", "nbytes", "compute", "send_peer", "recv_peer", "root", "tag",
          "other", "aux_rise", "sr_aux", "a2av_aux", "no_aux", "sendrecv", "alltoallv")
(RANK, SORTED, SEQ, CALL, NBYTES, COMPUTE, SEND_PEER, RECV_PEER, ROOT, TAG, OTHER, AUX_RISE, SR_AUX, A2AV_AUX, NO_AUX,
 SENDRECV, ALLTOALLV) = range(len(CHECKS))


@njit(cache=True)
def _pass(nprocs, rank, seq, call, peer, nbytes, tag, comm, compute, aux_ptr, known, sends, recvs, rooted, lists,
          other_code, sr_code, a2av_code, n_other, comm_ids, comm_sizes, any_source, proc_null, any_tag):
    n = rank.size
    first = np.full(len(CHECKS), -1, dtype=np.int64)
    count = np.zeros(len(CHECKS), dtype=np.int64)
    expect = 0
    for i in range(n):
        r = rank[i]
        if r < 0 or r >= nprocs:
            count[RANK] += 1
            if first[RANK] < 0:
                first[RANK] = i
        if i + 1 < n and rank[i + 1] < r:  # reported at the earlier event, as a diff of the column
            count[SORTED] += 1
            if first[SORTED] < 0:
                first[SORTED] = i
        if i > 0 and r != rank[i - 1]:
            expect = 0
        if seq[i] != expect:
            count[SEQ] += 1
            if first[SEQ] < 0:
                first[SEQ] = i
        expect += 1
        c = call[i]
        if not known[c]:
            count[CALL] += 1
            if first[CALL] < 0:
                first[CALL] = i
        if nbytes[i] < 0:
            count[NBYTES] += 1
            if first[NBYTES] < 0:
                first[NBYTES] = i
        x = compute[i]
        if not np.isfinite(x) or x < 0:
            count[COMPUTE] += 1
            if first[COMPUTE] < 0:
                first[COMPUTE] = i
        size = nprocs
        if comm[i] != 0:
            k = np.searchsorted(comm_ids, comm[i])
            size = comm_sizes[k] if k < comm_ids.size and comm_ids[k] == comm[i] else nprocs
        p = peer[i]
        ok = p >= 0 and p < size
        bad = -1
        if sends[c] and not (ok or p == proc_null):
            bad = SEND_PEER
        elif recvs[c] and not (ok or p == proc_null or p == any_source):
            bad = RECV_PEER
        if bad >= 0:
            count[bad] += 1
            if first[bad] < 0:
                first[bad] = i
        if rooted[c] and not ok:
            count[ROOT] += 1
            if first[ROOT] < 0:
                first[ROOT] = i
        if (sends[c] or recvs[c]) and tag[i] < 0 and not (recvs[c] and tag[i] == any_tag):
            count[TAG] += 1
            if first[TAG] < 0:
                first[TAG] = i
        if c == other_code and (p < 0 or p >= n_other):
            count[OTHER] += 1
            if first[OTHER] < 0:
                first[OTHER] = i
        alen = aux_ptr[i + 1] - aux_ptr[i]
        if alen < 0:
            count[AUX_RISE] += 1
            if first[AUX_RISE] < 0:
                first[AUX_RISE] = i
        bad = -1
        if c == sr_code:
            count[SENDRECV] += 1
            if first[SENDRECV] < 0:
                first[SENDRECV] = i
            if alen != 3:
                bad = SR_AUX
        elif c == a2av_code:
            count[ALLTOALLV] += 1
            if first[ALLTOALLV] < 0:
                first[ALLTOALLV] = i
            if alen != size:
                bad = A2AV_AUX
        elif not lists[c] and alen != 0:
            bad = NO_AUX
        if bad >= 0:
            count[bad] += 1
            if first[bad] < 0:
                first[bad] = i
    return first, count


def _table(codes: np.ndarray) -> np.ndarray:
    t = np.zeros(256, dtype=np.bool_)
    t[codes] = True
    return t


def check_columns(trace, known: np.ndarray, sends: np.ndarray, recvs: np.ndarray, rooted: np.ndarray,
                  lists: np.ndarray, comm_sizes: dict[int, int], other_code: int, sr_code: int, a2av_code: int,
                  any_source: int, proc_null: int, any_tag: int) -> tuple[np.ndarray, np.ndarray]:
    """(first failing event or -1, number failing) per check of :data:`CHECKS`; the call sets are code arrays
    (``lists``: the calls that take a list of requests in ``aux``), ``comm_sizes`` the size of each communicator
    but ``MPI_COMM_WORLD``."""
    ids = np.array(sorted(comm_sizes), dtype=np.int64)
    sizes = np.array([comm_sizes[c] for c in ids.tolist()], dtype=np.int64)
    return _pass(trace.nprocs, trace.rank, trace.seq, trace.call, trace.peer, trace.nbytes, trace.tag, trace.comm,
                 trace.compute, trace.aux_ptr, _table(known), _table(sends), _table(recvs), _table(rooted),
                 _table(lists), other_code, sr_code, a2av_code, len(trace.other_names), ids, sizes, any_source,
                 proc_null, any_tag)
