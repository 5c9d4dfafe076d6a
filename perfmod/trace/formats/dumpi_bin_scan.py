"""One compiled pass over a DUMPI ``.bin`` call stream (numba), for :mod:`perfmod.trace.formats.dumpi_bin`.

Each record of the stream (sst-dumpi ``dumpi/common/iodefs.h``,
``STARTREAD``) is, big-endian:

- ``uint16`` function label (:data:`~perfmod.trace.formats.dumpi_bin_layout.RECORDS`);
- ``uint8`` config mask: bits 0-1 statuses recorded, bit 2 CPU time, bit 3
  wall time, bit 6 thread id, bit 7 PAPI counters;
- ``uint16`` thread (mask bit 6);
- CPU times (bit 2), then wall times (bit 3), each as entry and exit of
  ``uint16`` seconds (added to the stream's 32-bit time offset) and
  ``uint32`` nanoseconds;
- PAPI counters (bit 7): ``uint8`` count, then per counter two ``uint64``;
- the arguments, by the label's layout.

:func:`scan` walks the records from ``start`` to ``end`` once.  For the
calls perfmod models it writes one event (call code, peer, bytes, tag,
local communicator index, request, entry and exit wall time in integer ns,
byte offset of the record, seconds since the rank's previous event ended,
and the ``aux`` list), following requests and
datatype sizes as the text reader (:mod:`perfmod.trace.dumpi`) does; the
calls that define communicators and groups are listed as side records for
the caller to resolve across ranks.  With ``fill=False`` it only counts, so
the caller can allocate exactly.  Errors come back as a status code with the
byte offset, never as an exception inside the compiled code.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.typed import Dict

from perfmod.core.kernel_cache import njit

__all__ = ["H", "ERR", "scan", "layout_tokens"]

#: Handlers: what :func:`scan` does with a label (anything else is a call perfmod does not model).
H = {
    "p2p": 1, "sendrecv": 2, "wait": 3, "test": 4, "waitany": 5, "testany": 6, "waitall": 7, "testall": 8,
    "waitsome": 9, "barrier": 10, "bcast": 11, "reduce": 12, "allreduce": 13, "alltoall": 14, "gather": 15,
    "scatter": 16, "reduce_scatter": 17, "alltoallv": 18, "noargs": 19,
    # side effects (not events): datatypes, communicators, groups
    "type_contiguous": 30, "type_vector": 31, "comm_dup": 40, "comm_split": 41, "cart_create": 42,
    "comm_create": 43, "comm_group": 44, "group_op": 45,
}
#: Status codes of :func:`scan`.
ERR = {"ok": 0, "truncated": 1, "bad_label": 2, "no_record": 3, "datatype": 4, "comm": 5, "time": 6,
       "exit_before_entry": 7, "alltoallv": 8, "unknown_call": 9, "layout": 10}

_TOK = "bhikoqIHBJcCDsa?"
_ISEND, _IRECV, _ISSEND, _RECV = 4, 5, 25, 2  # perfmod Call codes the scanner tells apart
_OTHER = 255
_COMM_NULL = 1
_NO_PEER, _ANY_SOURCE, _PROC_NULL, _ANY_TAG, _NO_REQUEST = -1, -2, -3, -1, -1


def layout_tokens(layouts: list[str | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token codes of every label's layout (CSR ``tok``, ``ptr``) and whether the label has a record."""
    tok: list[int] = []
    ptr = [0]
    has = []
    for lay in layouts:
        has.append(lay is not None)
        tok.extend(_TOK.index(c) + 1 for c in (lay or ""))
        ptr.append(len(tok))
    return np.array(tok, np.uint8), np.array(ptr, np.int64), np.array(has, np.bool_)


@njit(inline="always")
def _u16(b: np.ndarray, p: int) -> int:
    return (np.int64(b[p]) << 8) | np.int64(b[p + 1])


@njit(inline="always")
def _u32(b: np.ndarray, p: int) -> int:
    return (np.int64(b[p]) << 24) | (np.int64(b[p + 1]) << 16) | (np.int64(b[p + 2]) << 8) | np.int64(b[p + 3])


@njit(inline="always")
def _i32(b: np.ndarray, p: int) -> int:
    v = _u32(b, p)
    return v - 4294967296 if v >= 2147483648 else v


_SMALL = 1 << 16  # request ids below this are tracked in a flag array, others in a dict


@njit(inline="always")
def _add(small, pending, r):  # noqa: ANN001, ANN202
    if 0 <= r < _SMALL:
        small[r] = 1
    else:
        pending[r] = 1


@njit(inline="always")
def _take(small, pending, r):  # noqa: ANN001, ANN202
    """Remove request ``r`` from the pending ones; True when it was pending."""
    if 0 <= r < _SMALL:
        if small[r]:
            small[r] = 0
            return True
        return False
    if r in pending:
        del pending[r]
        return True
    return False


@njit(cache=True)
def _skip_fields(b, p, end, tok, t0, t1, mask, v, apos, alen):  # noqa: ANN001, ANN202
    """Read the arguments ``tok[t0:t1]`` at ``p``: scalars into ``v``, arrays' (data offset, count) into apos/alen.

    Returns (new position or -1 when past ``end``, number of scalars, number of arrays).
    """
    nv = 0
    na = 0
    rank_in = np.int64(0)
    root = np.int64(-1)
    cond = False
    t = t0
    while t < t1:
        c = tok[t]
        t += 1
        if c == 16:  # '?': the next field only when commrank == root
            cond = True
            continue
        if cond:
            cond = False
            if rank_in != root:
                continue
        if c == 1:  # b
            if p + 1 > end:
                return -1, nv, na
            if nv < v.size:
                v[nv] = b[p]
            nv += 1
            p += 1
        elif c == 2:  # h
            if p + 2 > end:
                return -1, nv, na
            if nv < v.size:
                v[nv] = _u16(b, p)
            nv += 1
            p += 2
        elif c == 3 or c == 4 or c == 5:  # i, k, o
            if p + 4 > end:
                return -1, nv, na
            x = _i32(b, p)
            if c == 4:
                rank_in = x
            elif c == 5:
                root = x
            if nv < v.size:
                v[nv] = x
            nv += 1
            p += 4
        elif c == 6:  # q
            if p + 8 > end:
                return -1, nv, na
            nv += 1
            p += 8
        elif c == 7 or c == 8 or c == 9 or c == 14:  # I, H, B (count + elements), s (statuses)
            if c == 14 and (mask & 3) == 0:
                continue
            if p + 4 > end:
                return -1, nv, na
            n = max(_i32(b, p), 0)
            size = 4 if c == 7 else 2 if c == 8 else 1 if c == 9 else 14
            if n > (end - p - 4) // size:
                return -1, nv, na
            if na < apos.size:
                apos[na] = p + 4
                alen[na] = n
            na += 1
            p += 4 + n * size
        elif c == 10 or c == 11 or c == 12 or c == 13 or c == 15:  # J, c, C, D, a
            if p + 4 > end:
                return -1, nv, na
            n = max(_i32(b, p), 0)
            p += 4
            if c == 11:  # c: bytes
                if n > end - p:
                    return -1, nv, na
                p += n
                continue
            for _ in range(n):
                if p + 4 > end:
                    return -1, nv, na
                m = max(_i32(b, p), 0)
                p += 4
                if c == 10:  # J: arrays of int32
                    if m > (end - p) // 4:
                        return -1, nv, na
                    p += 4 * m
                elif c == 12 or c == 15:  # C, a: strings
                    if m > end - p:
                        return -1, nv, na
                    p += m
                else:  # D: arrays of strings
                    for _ in range(m):
                        if p + 4 > end:
                            return -1, nv, na
                        s = max(_i32(b, p), 0)
                        if s > end - p - 4:
                            return -1, nv, na
                        p += 4 + s
        else:
            return -2, nv, na
    return p, nv, na


@njit(cache=True)
def scan(b, start, end, wall_off, handler, code, tok, tok_ptr, has, sizes, locked, comm_map, unknown_mode, fill,
         o_call, o_peer, o_nbytes, o_tag, o_comm, o_req, o_t0, o_t1, o_off, o_compute, o_auxlen, o_aux,
         s_label, s_off, s_a, s_b, unknown_counts):  # noqa: ANN001, ANN201
    """Walk the records in ``b[start:end]`` (see the module docstring).

    ``unknown_mode``: 0 skip calls perfmod does not model, 1 keep them as
    ``OTHER`` events (``peer`` = label), 2 stop with ``ERR["unknown_call"]``.
    ``sizes`` (bytes per datatype id, -1 unknown), ``comm_map`` (DUMPI
    communicator handle -> local index, -1 unknown) are updated as the
    stream defines types and communicators.

    Returns ``(status, byte offset, label, value, events, aux entries, side
    records, ignored requests)``; the offset, label and value locate an error.
    """
    v = np.zeros(24, np.int64)
    apos = np.zeros(8, np.int64)
    alen = np.zeros(8, np.int64)
    pending = Dict.empty(key_type=types.int64, value_type=types.int64)
    small = np.zeros(_SMALL, np.uint8)
    n_ev = 0
    n_aux = 0
    n_side = 0
    ignored = 0
    next_local = 1
    finalized = False
    prev_t1 = np.int64(0)
    p = start
    while p < end:
        rec = p
        if p + 3 > end:
            return 1, rec, -1, 0, n_ev, n_aux, n_side, ignored
        label = _u16(b, p)
        if label >= 293:
            if label == 293:
                break
            return 2, rec, label, label, n_ev, n_aux, n_side, ignored
        if not has[label]:
            return 3, rec, label, label, n_ev, n_aux, n_side, ignored
        mask = np.int64(b[p + 2])
        p += 3
        if mask & 64:
            p += 2
        if mask & 4:
            p += 12
        t0 = np.int64(0)
        t1 = np.int64(0)
        if mask & 8:
            if p + 12 > end:
                return 1, rec, label, 0, n_ev, n_aux, n_side, ignored
            s0 = _u16(b, p) + wall_off
            ns0 = _u32(b, p + 2)
            s1 = _u16(b, p + 6) + wall_off
            ns1 = _u32(b, p + 8)
            if s0 < 0 or s1 < 0 or ns0 >= 1000000000 or ns1 >= 1000000000:
                return 6, rec, label, 0, n_ev, n_aux, n_side, ignored
            t0 = s0 * 1000000000 + ns0
            t1 = s1 * 1000000000 + ns1
            if t1 < t0:
                return 7, rec, label, 0, n_ev, n_aux, n_side, ignored
            p += 12
        if mask & 128:
            if p + 1 > end:
                return 1, rec, label, 0, n_ev, n_aux, n_side, ignored
            p += 1 + 16 * np.int64(b[p])
        if p > end:
            return 1, rec, label, 0, n_ev, n_aux, n_side, ignored
        args = p
        p, nv, na = _skip_fields(b, p, end, tok, tok_ptr[label], tok_ptr[label + 1], mask, v, apos, alen)
        if p < 0:
            return (1 if p == -1 else 10), rec, label, 0, n_ev, n_aux, n_side, ignored
        h = handler[label]
        cc = code[label]
        if h == 0 or h >= 30:  # a call perfmod does not model (side effects below)
            unknown_counts[label] += 1
            if unknown_mode == 2:
                return 9, rec, label, 0, n_ev, n_aux, n_side, ignored
        # ----------------------------------------------------------- side effects
        if h == 30 or h == 31:  # Type_contiguous / Type_(create_)(h)vector
            old = v[1] if h == 30 else v[3]
            new = v[2] if h == 30 else v[4]
            if sizes[old] < 0:
                return 4, rec, label, old, n_ev, n_aux, n_side, ignored
            if not locked[new]:
                sizes[new] = v[0] * (1 if h == 30 else v[1]) * sizes[old]
        elif h >= 40:
            a = np.int64(-1)
            nl = np.int64(-1)
            if h <= 43:  # a new communicator from v[0]
                a = comm_map[v[0]]
                if a < 0:
                    return 5, rec, label, v[0], n_ev, n_aux, n_side, ignored
                new = v[1] if h == 40 else v[3] if h <= 42 else v[2]
                if new != _COMM_NULL and (h != 41 or v[1] >= 0):
                    nl = next_local
                    next_local += 1
                    comm_map[new] = nl
            elif h == 44:
                a = comm_map[v[0]]
            if fill:
                if n_side >= s_label.size:
                    return 10, rec, label, 0, n_ev, n_aux, n_side, ignored
                s_label[n_side] = label
                s_off[n_side] = args
                s_a[n_side] = a
                s_b[n_side] = nl
            n_side += 1
        if h == 0 or h >= 30:
            if unknown_mode == 1:
                if fill:
                    if n_ev >= o_call.size:
                        return 10, rec, label, 0, n_ev, n_aux, n_side, ignored
                    o_call[n_ev] = _OTHER
                    o_peer[n_ev] = label
                    o_nbytes[n_ev] = 0
                    o_tag[n_ev] = 0
                    o_comm[n_ev] = 0
                    o_req[n_ev] = _NO_REQUEST
                    o_t0[n_ev] = t0
                    o_t1[n_ev] = t1
                    o_off[n_ev] = rec
                    o_compute[n_ev] = 0.0 if n_ev == 0 else max(np.float64(t0 - prev_t1) * 1e-9, 0.0)
                    o_auxlen[n_ev] = 0
                n_ev += 1
                prev_t1 = t1
            continue
        # ------------------------------------------------------------- an event
        peer = np.int64(_NO_PEER)
        nbytes = np.int64(0)
        tag = np.int64(0)
        comm = np.int64(-2)  # -2: the call has no communicator (world)
        req = np.int64(_NO_REQUEST)
        aux0 = n_aux
        dt = np.int64(-1)
        cnt = np.int64(0)
        if h == 1:  # send / recv, blocking or not: count, datatype, peer, tag, comm[, request]
            cnt, dt, peer, tag, comm = v[0], v[1], v[2], v[3], v[4]
            if cc == _RECV or cc == _IRECV:
                peer = _ANY_SOURCE if peer == -1 else (_PROC_NULL if peer < 0 else peer)
                tag = _ANY_TAG if tag == -1 else tag
            elif peer < 0:
                peer = _PROC_NULL
            if cc == _ISEND or cc == _IRECV or cc == _ISSEND:
                req = v[5]
                _add(small, pending, req)
        elif h == 2:  # sendrecv
            cnt, dt, comm = v[0], v[1], v[8]
            peer = _PROC_NULL if v[2] < 0 else v[2]
            tag = v[3]
            if sizes[v[5]] < 0:
                return 4, rec, label, v[5], n_ev, n_aux, n_side, ignored
            src = _ANY_SOURCE if v[6] == -1 else (_PROC_NULL if v[6] < 0 else v[6])
            if fill and n_aux + 3 <= o_aux.size:
                o_aux[n_aux] = src
                o_aux[n_aux + 1] = v[4] * sizes[v[5]]
                o_aux[n_aux + 2] = _ANY_TAG if v[7] == -1 else v[7]
            n_aux += 3
        elif h == 3 or h == 4:  # wait / test: one request
            if h == 3 or v[1] != 0:
                r = v[0]
                if _take(small, pending, r):
                    req = r
                else:
                    ignored += 1
        elif h >= 5 and h <= 9:  # waitany, testany, waitall, testall, waitsome / testsome
            pos, n = apos[0], alen[0]
            if h == 5 or h == 6:
                idx = v[1]
                done = (h == 5 or v[2] != 0) and idx >= 0 and idx < n
                lo, hi = (idx, idx + 1) if done else (0, 0)
            elif h == 7 or h == 8:
                done = h == 7 or v[1] != 0
                lo, hi = (0, n) if done else (0, 0)
            else:
                lo, hi = 0, alen[1]
            for k in range(lo, hi):
                if h == 9:
                    i = _i32(b, apos[1] + 4 * k)
                    if i < 0 or i >= n:
                        continue
                else:
                    i = k
                r = _i32(b, pos + 4 * i)
                if _take(small, pending, r):
                    if fill and n_aux < o_aux.size:
                        o_aux[n_aux] = r
                    n_aux += 1
                else:
                    ignored += 1
        elif h == 10:
            comm = v[0]
        elif h == 11:  # bcast: count, datatype, root, comm
            cnt, dt, peer, comm = v[0], v[1], v[2], v[3]
        elif h == 12:  # reduce: count, datatype, op, root, comm
            cnt, dt, peer, comm = v[0], v[1], v[3], v[4]
        elif h == 13:  # allreduce: count, datatype, op, comm
            cnt, dt, comm = v[0], v[1], v[3]
        elif h == 14:  # alltoall / allgather: sendcount, sendtype, recvcount, recvtype, comm
            cnt, dt, comm = v[0], v[1], v[4]
        elif h == 15 or h == 16:  # gather (send side) / scatter (receive side): rank, count, type, root, comm
            cnt, dt, peer, comm = v[1], v[2], v[3], v[4]
        elif h == 17:  # reduce_scatter: commsize, recvcounts, datatype, op, comm
            dt, comm = v[1], v[3]
            for k in range(alen[0]):
                cnt += _i32(b, apos[0] + 4 * k)
        elif h == 18:  # alltoallv: commsize, sendcounts, senddispls, sendtype, ..., comm
            dt, comm = v[1], v[3]
            if alen[0] != v[0]:
                return 8, rec, label, v[0], n_ev, n_aux, n_side, ignored
            if sizes[dt] < 0:
                return 4, rec, label, dt, n_ev, n_aux, n_side, ignored
            for k in range(alen[0]):
                c = _i32(b, apos[0] + 4 * k)
                cnt += c
                if fill and n_aux < o_aux.size:
                    o_aux[n_aux] = c * sizes[dt]
                n_aux += 1
        if dt >= 0:
            if sizes[dt] < 0:
                return 4, rec, label, dt, n_ev, n_aux, n_side, ignored
            nbytes = cnt * sizes[dt]
        lc = np.int64(0)
        if comm != -2:
            lc = comm_map[comm]
            if lc < 0:
                return 5, rec, label, comm, n_ev, n_aux, n_side, ignored
        if fill:
            if n_ev >= o_call.size or n_aux > o_aux.size:
                return 10, rec, label, 0, n_ev, n_aux, n_side, ignored
            o_call[n_ev] = cc
            o_peer[n_ev] = peer
            o_nbytes[n_ev] = nbytes
            o_tag[n_ev] = tag
            o_comm[n_ev] = lc
            o_req[n_ev] = req
            o_t0[n_ev] = t0
            o_t1[n_ev] = t1
            o_off[n_ev] = rec
            o_compute[n_ev] = 0.0 if n_ev == 0 else max(np.float64(t0 - prev_t1) * 1e-9, 0.0)
            o_auxlen[n_ev] = n_aux - aux0
        n_ev += 1
        prev_t1 = t1
        if label == 125:  # MPI_Finalize: an older stream ended at the next label 0 (libundumpi)
            finalized = True
        elif finalized and label == 0:
            break
    return 0, p, -1, 0, n_ev, n_aux, n_side, ignored
