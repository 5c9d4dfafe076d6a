"""A trace as GOAL's operation graph, built by compiled code: what ``write_goal`` writes and ``loggp`` replays.

Paper: Choi et al., ICS 2020 (paper 000) §2.2, §3.2.  The rules
are those of :mod:`perfmod.trace.formats.goal` (its module docstring states
them): per rank a *frontier* of the operations the next blocking step waits
for, ``calc`` nodes for compute, ``send``/``recv`` nodes for messages,
collectives expanded into rounds by :func:`collective_rounds` (MPICH's
algorithms), and a ``calc 0``
join before a step whose frontier holds several nodes.  :func:`op_graph`
makes the graph once, as arrays: :func:`~perfmod.trace.formats.goal.write_goal`
formats it (:func:`format_ranks`).  The ``loggp`` replay of a trace never
holds it whole: :mod:`perfmod.replay.loggops_stream` makes the same graph
rank by rank as its event loop reaches it, by the same rules (the
collectives' rounds from the same templates, :func:`collective_inputs`;
the same per-event fields, :func:`event_fields`; the Sendrecv receive's
tag, :func:`_recv_tag`).  The tests keep the two equal: the operations
the replay simulates are :func:`op_graph`'s, and LogGOPSim run on
``write_goal``'s text finishes each host when the replay does.

The event loop runs in numba (one pass over the events, no per-event
Python); collectives are expanded from templates made once per distinct
``(call, rank in communicator, size, root)``.  Linear in events and
operations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from perfmod.core.kernel_cache import njit
from perfmod.core.memory import index_dtype
from perfmod.core.rows import unique_rows
from perfmod.trace.core import ANY_SOURCE, ANY_TAG, PROC_NULL, Call, Trace, TraceError
from perfmod.trace.formats.textio import alltoallv_recv_bytes

__all__ = ["SEND", "RECV", "CALC", "WILD", "COLLECTIVE_TAG", "LINE_BYTES", "RANK_BYTES", "REQUIRES_BYTES", "OpGraph",
           "build_inputs", "collective_inputs", "collective_rounds", "event_fields", "format_ranks", "op_graph"]

SEND, RECV, CALC = 1, 2, 3  #: node types, LogGOPSim's order (its free operations are sorted by type)
WILD = -1  #: any source / any tag in :attr:`OpGraph.peer` and :attr:`OpGraph.tag`
COLLECTIVE_TAG = 1_000_000_000  #: tag base of the messages a collective is expanded into

# event classes of the compiled loop
_NONE, _NONBLOCKING, _BLOCKING, _WAIT, _SENDRECV, _COLLECTIVE = 0, 1, 2, 3, 4, 5

_SENDS = [Call.SEND, Call.SSEND, Call.ISEND, Call.ISSEND]
_RECVS = [Call.RECV, Call.IRECV]
_BLOCKING_CALLS = [Call.SEND, Call.SSEND, Call.RECV]
_SYNC = [Call.SSEND, Call.ISSEND]
_WAIT_CALLS = [Call.WAIT, Call.WAITALL, Call.WAITANY, Call.WAITSOME, Call.TEST, Call.TESTALL, Call.TESTANY,
               Call.TESTSOME]
_EXPANDED = [Call.BARRIER, Call.BCAST, Call.REDUCE, Call.ALLREDUCE, Call.ALLGATHER, Call.ALLTOALL, Call.ALLTOALLV,
             Call.GATHER, Call.SCATTER]
_ROOTED = [Call.BCAST, Call.REDUCE, Call.GATHER, Call.SCATTER]


_C_BARRIER, _C_BCAST, _C_REDUCE, _C_ALLREDUCE, _C_ALLGATHER, _C_ALLTOALL, _C_ALLTOALLV, _C_GATHER, _C_SCATTER = (
    int(c) for c in _EXPANDED)


@njit(cache=True, inline="always")
def _emit(fill, kinds, xs, o, kind, x):
    if fill:
        kinds[o] = kind
        xs[o] = x
    return o + 1


@njit(cache=True, inline="always")
def _end_round(fill, ocount, r, n):
    if fill:
        ocount[r] = n
    return r + 1


@njit(cache=True)
def _key_rounds(c, v, p, root, fill, ocount, kinds, xs, r, o):
    """The rounds of rank ``v`` of ``p`` in collective ``c`` (MPICH's algorithms; :func:`collective_rounds`):
    from round ``r`` and operation ``o`` on, their sizes into ``ocount`` and their operations (kind, peer) into
    ``kinds``, ``xs`` when ``fill``.  Returns the next ``(r, o)``; ``r = -1``: no expansion for ``c``."""
    if p == 1:
        return r, o
    if c == _C_BARRIER:
        k = 0
        while (1 << k) <= p - 1:
            o = _emit(fill, kinds, xs, o, SEND, (v + (1 << k)) % p)
            o = _emit(fill, kinds, xs, o, RECV, (v - (1 << k)) % p)
            r = _end_round(fill, ocount, r, 2)
            k += 1
        return r, o
    if c == _C_BCAST or c == _C_REDUCE:
        rel = (v - root) % p
        # the binomial bcast's rounds (one operation each) of rel; a reduce runs them reversed, kinds swapped
        bk = np.empty(130, dtype=np.int64)
        bx = np.empty(130, dtype=np.int64)
        n = 0
        mask = 1
        while mask < p:
            if rel & mask:
                bk[n], bx[n] = RECV, rel - mask
                n += 1
                break
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if rel + mask < p:
                bk[n], bx[n] = SEND, rel + mask
                n += 1
            mask >>= 1
        for q in range(n):
            j = q if c == _C_BCAST else n - 1 - q
            kind = bk[j] if c == _C_BCAST else (RECV if bk[j] == SEND else SEND)
            o = _emit(fill, kinds, xs, o, kind, (bx[j] + root) % p)
            r = _end_round(fill, ocount, r, 1)
        return r, o
    if c == _C_ALLREDUCE:  # recursive doubling
        pof2 = 1
        while pof2 * 2 <= p:
            pof2 *= 2
        rem = p - pof2
        if v < 2 * rem and v % 2 == 0:
            o = _emit(fill, kinds, xs, o, SEND, v + 1)
            r = _end_round(fill, ocount, r, 1)
            o = _emit(fill, kinds, xs, o, RECV, v + 1)
            r = _end_round(fill, ocount, r, 1)
            return r, o
        if v < 2 * rem:
            o = _emit(fill, kinds, xs, o, RECV, v - 1)
            r = _end_round(fill, ocount, r, 1)
            new = v // 2
        else:
            new = v - rem
        mask = 1
        while mask < pof2:
            nd = new ^ mask
            dst = nd * 2 + 1 if nd < rem else nd + rem
            o = _emit(fill, kinds, xs, o, SEND, dst)
            o = _emit(fill, kinds, xs, o, RECV, dst)
            r = _end_round(fill, ocount, r, 2)
            mask <<= 1
        if v < 2 * rem:
            o = _emit(fill, kinds, xs, o, SEND, v - 1)
            r = _end_round(fill, ocount, r, 1)
        return r, o
    if c == _C_ALLGATHER:
        for _ in range(p - 1):
            o = _emit(fill, kinds, xs, o, SEND, (v + 1) % p)
            o = _emit(fill, kinds, xs, o, RECV, (v - 1) % p)
            r = _end_round(fill, ocount, r, 2)
        return r, o
    if c == _C_ALLTOALL or c == _C_ALLTOALLV:
        for k in range(1, p):
            o = _emit(fill, kinds, xs, o, SEND, (v + k) % p)
            o = _emit(fill, kinds, xs, o, RECV, (v - k) % p)
        r = _end_round(fill, ocount, r, 2 * (p - 1))
        return r, o
    if c == _C_GATHER or c == _C_SCATTER:
        if v == root:
            for x in range(p):
                if x != v:
                    o = _emit(fill, kinds, xs, o, RECV if c == _C_GATHER else SEND, x)
            r = _end_round(fill, ocount, r, p - 1)
        else:
            o = _emit(fill, kinds, xs, o, SEND if c == _C_GATHER else RECV, root)
            r = _end_round(fill, ocount, r, 1)
        return r, o
    return -1, o


@njit(cache=True)
def _expand_keys(kc, kv, kp, kr):
    """:func:`_key_rounds` of every key ``(kc, kv, kp, kr)``: ``(rcount, ocount, kinds, xs, bad)`` (``bad``: the
    first key with no expansion, -1 when none), two passes (count, then fill)."""
    nk = kc.size
    rcount = np.zeros(nk, dtype=np.int64)
    dummy = np.zeros(0, dtype=np.int64)
    r, o = 0, 0
    for i in range(nk):
        r2, o = _key_rounds(kc[i], kv[i], kp[i], kr[i], False, dummy, dummy, dummy, r, o)
        if r2 < 0:
            return rcount, dummy, dummy, dummy, i
        rcount[i] = r2 - r
        r = r2
    ocount = np.empty(r, dtype=np.int64)
    kinds = np.empty(o, dtype=np.int64)
    xs = np.empty(o, dtype=np.int64)
    r, o = 0, 0
    for i in range(nk):
        r, o = _key_rounds(kc[i], kv[i], kp[i], kr[i], True, ocount, kinds, xs, r, o)
    return rcount, ocount, kinds, xs, -1


def _expand(kc: np.ndarray, kv: np.ndarray, kp: np.ndarray, kr: np.ndarray):
    rcount, ocount, kinds, xs, bad = _expand_keys(*(np.ascontiguousarray(a, dtype=np.int64) for a in (kc, kv, kp,
                                                                                                       kr)))
    if bad >= 0:
        raise ValueError(f"no GOAL expansion for {Call(int(kc[bad])).name}")
    return rcount, ocount, kinds, xs


def collective_rounds(call: int, v: int, p: int, root: int = 0) -> list[list[tuple[str, int]]]:
    """Rounds of point-to-point operations of rank ``v`` (of ``p``) in a collective.

    Each round is a list of ``("send" | "recv", peer)`` posted together;
    a round requires the previous one.  Peers are ranks in the
    communicator.  Message sizes are the caller's (see
    :func:`~perfmod.trace.formats.goal.write_goal`).  MPICH's algorithms:
    a dissemination barrier, binomial bcast and reduce, recursive-doubling
    allreduce (pairs folded first for a non-power-of-two count), ring
    allgather, pairwise alltoall(v), linear gather and scatter; compiled
    (``_key_rounds``), for all ranks at once when the graph is built.
    """
    Call(call)  # a ValueError for a code that is no call
    _, ocount, kinds, xs = _expand(*(np.array([x]) for x in (call, v, p, root)))
    out, o = [], 0
    for n in ocount.tolist():
        out.append([("send" if k == SEND else "recv", x) for k, x in zip(kinds[o:o + n].tolist(),
                                                                        xs[o:o + n].tolist(), strict=True)])
        o += n
    return out


def _codes(calls: list[Call]) -> np.ndarray:
    return np.array([int(c) for c in calls], dtype=np.int64)


@dataclass(frozen=True)
class OpGraph:
    """The operation graph of a trace (nodes of a rank contiguous, in creation order = GOAL label order).

    Attributes
    ----------
    rank, kind : numpy.ndarray
        Owner (world rank, int64) and type (:data:`SEND`, :data:`RECV`, :data:`CALC`; int8) of each node.
    size : numpy.ndarray of int64
        Bytes of a send or receive; the calc's units (as given to :func:`op_graph`).
    peer, tag : numpy.ndarray of int64
        World destination (send) or source (receive, :data:`WILD` for any) and tag (:data:`WILD` any); 0 for calc.
    sync : numpy.ndarray of bool
        A synchronous send.
    event : numpy.ndarray of int64
        Trace event that made the node (-1: a join).
    pred_ptr, pred : numpy.ndarray of int64
        CSR: the nodes each node requires, in GOAL's order of its ``requires`` lines.
    rank_ptr : numpy.ndarray of int64
        Nodes of rank r: ``rank_ptr[r]:rank_ptr[r + 1]``.
    """

    rank: np.ndarray
    kind: np.ndarray
    size: np.ndarray
    peer: np.ndarray
    tag: np.ndarray
    sync: np.ndarray
    event: np.ndarray
    pred_ptr: np.ndarray
    pred: np.ndarray
    rank_ptr: np.ndarray

    def __len__(self) -> int:
        return int(self.kind.size)


@njit(cache=True)
def _recv_tag(tag, comm):
    """GOAL's tag of a ``Sendrecv``'s receive of ``tag`` on communicator ``comm`` (:data:`WILD`: any tag), as
    :func:`op_graph` writes a receive's (``tag * 1000 + comm`` on a communicator other than 0)."""
    if tag == ANY_TAG:
        return WILD
    return tag * 1000 + comm if comm != 0 else tag


@njit(cache=True)
def _add(nodes, pred_ptr, pred, cnt, r, kind, size, peer, tag, sync, event, deps, nd):
    """Append a node requiring ``deps[:nd]``; returns its index."""
    v = cnt[0]
    nodes[0, v] = r
    nodes[1, v] = kind
    nodes[2, v] = size
    nodes[3, v] = peer
    nodes[4, v] = tag
    nodes[5, v] = sync
    nodes[6, v] = event
    e = cnt[1]
    for q in range(nd):
        pred[e + q] = deps[q]
    cnt[1] = e + nd
    pred_ptr[v + 1] = e + nd
    cnt[0] = v + 1
    return v


@njit(cache=True)
def _join(nodes, pred_ptr, pred, cnt, r, fr, nf):
    """Join a frontier of several nodes by one zero calc that requires them all (LogGOPSim's dependency
    node), made the frontier; returns the frontier's new size (0 or 1)."""
    if nf > 1:
        fr[0] = _add(nodes, pred_ptr, pred, cnt, r, CALC, 0, 0, 0, 0, -1, fr, nf)
        return 1
    return nf


@njit(cache=True)
def _build(rank_ptr, cls, mkind, sync, units, wpeer, wtag, nbytes, comm, ck, mem, mem_ptr, ref_ptr, created,
           aux, aux_ptr, raux, part_ptr, part_key, part_size, part_a2av, key_rptr, rnd_optr, op_kind, op_x, ub):
    """The compiled pass over the events (rules in the module docstrings); arrays sized by the upper bound ``ub``."""
    n = cls.size
    nodes = np.empty((7, ub), dtype=np.int64)  # a row per field: each a contiguous array (op_graph)
    pred_ptr = np.zeros(ub + 1, dtype=np.int64)
    pred = np.empty(2 * ub + 1, dtype=np.int64)
    pend = np.full(n, -1, dtype=np.int64)
    fr = np.empty(ub + 1, dtype=np.int64)
    d1 = np.empty(1, dtype=np.int64)
    cnt = np.zeros(2, dtype=np.int64)
    nprocs = rank_ptr.size - 1
    node_ptr = np.zeros(nprocs + 1, dtype=np.int64)
    for r in range(nprocs):
        nf = 0
        for i in range(rank_ptr[r], rank_ptr[r + 1]):
            if units[i] > 0:
                nf = _join(nodes, pred_ptr, pred, cnt, r, fr, nf)
                v = _add(nodes, pred_ptr, pred, cnt, r, CALC, units[i], 0, 0, 0, i, fr, nf)
                fr[0] = v
                nf = 1
            c = cls[i]
            if c == _NONBLOCKING or c == _BLOCKING:
                nf = _join(nodes, pred_ptr, pred, cnt, r, fr, nf)
                v = _add(nodes, pred_ptr, pred, cnt, r, mkind[i], nbytes[i], wpeer[i], wtag[i], sync[i], i, fr, nf)
                if c == _BLOCKING:
                    fr[0] = v
                    nf = 1
                else:
                    pend[i] = v
            elif c == _WAIT:
                for q in range(ref_ptr[i], ref_ptr[i + 1]):
                    x = created[q]
                    if pend[x] >= 0:
                        fr[nf] = pend[x]
                        nf += 1
                        pend[x] = -1
            elif c == _SENDRECV:
                a = aux_ptr[i]
                src, rb, rt = aux[a], aux[a + 1], _recv_tag(aux[a + 2], comm[i])
                nf = _join(nodes, pred_ptr, pred, cnt, r, fr, nf)
                nd = nf
                if nd:
                    d1[0] = fr[0]
                first = cnt[0]
                if wpeer[i] != PROC_NULL:
                    _add(nodes, pred_ptr, pred, cnt, r, SEND, nbytes[i], wpeer[i], wtag[i], 0, i, d1, nd)
                if src != PROC_NULL:
                    ws = WILD if src == ANY_SOURCE else (src if src < 0 else mem[mem_ptr[ck[i]] + src])
                    _add(nodes, pred_ptr, pred, cnt, r, RECV, rb, ws, rt, 0, i, d1, nd)
                if cnt[0] > first:
                    nf = 0
                    for v in range(first, cnt[0]):
                        fr[nf] = v
                        nf += 1
            elif c == _COLLECTIVE:
                ctag = COLLECTIVE_TAG + comm[i]
                base = mem_ptr[ck[i]]
                a = aux_ptr[i]
                for q in range(part_ptr[i], part_ptr[i + 1]):
                    k = part_key[q]
                    for rnd in range(key_rptr[k], key_rptr[k + 1]):
                        nf = _join(nodes, pred_ptr, pred, cnt, r, fr, nf)
                        nd = nf
                        if nd:
                            d1[0] = fr[0]
                        first = cnt[0]
                        for o in range(rnd_optr[rnd], rnd_optr[rnd + 1]):
                            x = op_x[o]
                            nb = part_size[q]
                            if part_a2av[q]:
                                nb = aux[a + x] if op_kind[o] == SEND else raux[a + x]
                            _add(nodes, pred_ptr, pred, cnt, r, op_kind[o], nb, mem[base + x], ctag, 0, i, d1, nd)
                        if cnt[0] > first:
                            nf = 0
                            for v in range(first, cnt[0]):
                                fr[nf] = v
                                nf += 1
        node_ptr[r + 1] = cnt[0]
    nn = cnt[0]
    return nodes, nn, pred_ptr[:nn + 1].copy(), pred[:cnt[1]].copy(), node_ptr


def _members(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(compact index of each event's communicator, members CSR values, CSR offsets)``."""
    comm = trace.comm
    if comm.size and comm.min() == comm.max():  # one communicator (the usual case): no sort of every event
        ids, ck = comm[:1].copy(), np.zeros(comm.size, dtype=np.int32)
    else:
        ids, ck = np.unique(comm, return_inverse=True)
    lists = [trace.comm_ranks(int(c)) for c in ids.tolist()]
    mem_ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(np.array([m.size for m in lists], dtype=np.int64), out=mem_ptr[1:])
    mem = np.concatenate(lists).astype(np.int64) if lists else np.zeros(0, dtype=np.int64)
    return ck.reshape(-1).astype(np.int32, copy=False), mem, mem_ptr


def _positions(trace: Trace, ev: np.ndarray, ck: np.ndarray, mem: np.ndarray, mem_ptr: np.ndarray) -> np.ndarray:
    """Rank in its communicator of the caller of each event ``ev`` (the last position if listed twice)."""
    sizes = np.diff(mem_ptr)
    m = np.int64(max(trace.nprocs, int(mem.max()) + 1 if mem.size else 0, 1))
    key = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes) * m + mem
    order = np.argsort(key, kind="stable")
    skey = key[order]
    q = ck[ev] * m + trace.rank[ev].astype(np.int64)
    j = np.searchsorted(skey, q, side="right") - 1
    bad = (j < 0) | (skey[np.maximum(j, 0)] != q) if skey.size else np.ones(q.size, dtype=bool)
    if np.any(bad):
        i = int(ev[np.flatnonzero(bad)[0]])
        raise TraceError(f"{trace._at(i)}: rank {int(trace.rank[i])} is not a member of communicator "
                         f"{int(trace.comm[i])}")
    return order[j] - mem_ptr[ck[ev]]


@njit(cache=True)
def _sorted_ptr(keys, ptr):
    """CSR offsets of the sorted ``keys`` (``ptr[k]``: the first position of a key ``>= k``), with no array of a
    count per key (which at 8 bytes per event was the largest of the collectives' inputs)."""
    j = 0
    for k in range(ptr.size):
        while j < keys.size and keys[j] < k:
            j += 1
        ptr[k] = j


def _templates(trace: Trace, call: np.ndarray, ck: np.ndarray, mem: np.ndarray, mem_ptr: np.ndarray):
    """Collective parts per event (CSR) and the rounds of each distinct ``(call, v, p, root)``."""
    n = len(trace)
    rs = int(Call.REDUCE_SCATTER)
    ev = np.flatnonzero(np.isin(call, _codes(_EXPANDED)) | (call == rs))
    if not ev.size:
        z = np.zeros(1, dtype=np.int64)
        e = np.zeros(0, dtype=np.int64)
        return np.zeros(n + 1, dtype=np.int64), e, e, np.zeros(0, dtype=bool), z, z, e, e, 0
    v = _positions(trace, ev, ck, mem, mem_ptr)
    p = np.diff(mem_ptr)[ck[ev]]
    c = call[ev]
    nb = trace.nbytes[ev].astype(np.int64)
    is_rs = c == rs
    root = np.where(np.isin(c, _codes(_ROOTED)), trace.peer[ev].astype(np.int64), 0)
    first_call = np.where(is_rs, int(Call.REDUCE), c)
    first_size = np.where(c == int(Call.BARRIER), 0, nb)
    sec = np.flatnonzero(is_rs)
    p_ev = np.concatenate([ev, ev[sec]])
    p_no = np.concatenate([np.zeros(ev.size, np.int64), np.ones(sec.size, np.int64)])
    p_call = np.concatenate([first_call, np.full(sec.size, int(Call.SCATTER), np.int64)])
    p_v = np.concatenate([v, v[sec]])
    p_p = np.concatenate([p, p[sec]])
    p_root = np.concatenate([root, np.zeros(sec.size, np.int64)])
    p_size = np.concatenate([first_size, -(-nb[sec] // np.maximum(p[sec], 1))])
    order = np.lexsort((p_no, p_ev))
    p_ev, p_call, p_v, p_p, p_root, p_size = (x[order] for x in (p_ev, p_call, p_v, p_p, p_root, p_size))
    part_ptr = np.empty(n + 1, dtype=index_dtype(n + p_ev.size))
    _sorted_ptr(p_ev, part_ptr)
    keys, part_key = unique_rows(np.stack([p_call, p_v, p_p, p_root], axis=1).reshape(-1, 4))
    rcount, ocount, kinds, xs = _expand(keys[:, 0], keys[:, 1], keys[:, 2], keys[:, 3])
    key_rptr = np.zeros(len(rcount) + 1, dtype=np.int64)
    np.cumsum(np.asarray(rcount, dtype=np.int64), out=key_rptr[1:])
    rnd_optr = np.zeros(len(ocount) + 1, dtype=np.int64)
    np.cumsum(np.asarray(ocount, dtype=np.int64), out=rnd_optr[1:])
    part_key = part_key.reshape(-1).astype(np.int64)
    work = np.diff(key_rptr)[part_key] + (rnd_optr[key_rptr[1:]] - rnd_optr[key_rptr[:-1]])[part_key]
    return (part_ptr, part_key, p_size.astype(np.int64), p_call == int(Call.ALLTOALLV), key_rptr, rnd_optr,
            kinds, xs, int(work.sum()))


@njit(cache=True)
def _event_fields(call, comm, peer, tag, ck, mem, mem_ptr, tables, cls, mkind, sync, wpeer, wtag):
    """Per event, in one pass: its class for :func:`_build`, its node kind (a message), synchronous send, world
    peer (:data:`WILD`: any source) and GOAL tag (``tag * 1000 + comm`` on communicator ``comm != 0``, WILD any;
    ``wtag``'s dtype keeps what it can: int32 the low 32 bits, as the replay's rows do)."""
    is_send, is_recv, blocking, waits, coll, syncs = tables
    for i in range(call.size):
        c = call[i]
        pr = np.int64(peer[i])
        msg = (is_send[c] or is_recv[c]) and pr != PROC_NULL
        k = _NONE
        if msg:
            k = _BLOCKING if blocking[c] else _NONBLOCKING
        if waits[c]:
            k = _WAIT
        if c == _C_SENDRECV:
            k = _SENDRECV
        if coll[c]:
            k = _COLLECTIVE
        cls[i] = k
        tg = np.int64(tag[i])
        cm = np.int64(comm[i])
        wt = tg if cm == 0 or tg == ANY_TAG else tg * 1000 + cm
        if is_recv[c] and wt == ANY_TAG:
            wt = WILD
        wtag[i] = wt if wtag.itemsize == 8 else np.int32(wt & 0xFFFFFFFF)
        if pr >= 0 and (k == _SENDRECV or msg):
            pr = mem[mem_ptr[ck[i]] + pr]
        elif msg and is_recv[c] and pr == ANY_SOURCE:
            pr = WILD
        wpeer[i] = pr
        mkind[i] = SEND if is_send[c] else RECV
        sync[i] = syncs[c]


def _table(calls: list[Call]) -> np.ndarray:
    t = np.zeros(256, dtype=np.bool_)
    t[_codes(calls)] = True
    return t


_TABLES = (_table(_SENDS), _table(_RECVS), _table(_BLOCKING_CALLS), _table(_WAIT_CALLS),
           _table([*_EXPANDED, Call.REDUCE_SCATTER]), _table(_SYNC))
_C_SENDRECV = int(Call.SENDRECV)


def collective_inputs(trace: Trace, ck: np.ndarray, mem: np.ndarray, mem_ptr: np.ndarray) -> tuple:
    """The collectives' part of :func:`build_inputs`: ``(raux, part_ptr, part_key, part_size, part_a2av,
    key_rptr, rnd_optr, op_kind, op_x, work)``: each alltoallv's received bytes, the collective parts of each
    event and the rounds of each distinct ``(call, rank, size, root)``, and the operations they expand into."""
    recv_bytes = alltoallv_recv_bytes(trace)  # read only where an alltoallv's part is: none, none kept
    raux = np.zeros(trace.aux.size if recv_bytes else 0, dtype=np.int64)
    for i, recv in recv_bytes.items():
        raux[trace.aux_ptr[i]:trace.aux_ptr[i + 1]] = recv
    return raux, *_templates(trace, trace.call, ck, mem, mem_ptr)


def event_fields(trace: Trace, ck: np.ndarray, mem: np.ndarray, mem_ptr: np.ndarray, cls: np.ndarray,
                 mkind: np.ndarray, sync: np.ndarray, wpeer: np.ndarray, wtag: np.ndarray) -> None:
    """Fill each event's class, node kind, synchronous send, world peer and GOAL tag (:func:`_event_fields`)
    into the given arrays (any integer dtypes; int32 ``wtag``: the tag's low 32 bits)."""
    _event_fields(trace.call, trace.comm, trace.peer, trace.tag, ck, mem, mem_ptr, _TABLES, cls, mkind, sync, wpeer,
                  wtag)


def build_inputs(trace: Trace, reqs, units: np.ndarray) -> tuple[tuple, int]:
    """What the compiled pass over the events (:func:`_build`) takes: ``(args, ub)``, the per-event and template
    arrays in ``_build``'s order and an upper bound of the graph's nodes (collectives expanded into their
    rounds).  (The ``loggp`` replay's generator takes the same fields: :mod:`perfmod.replay.loggops_stream`.)"""
    n = len(trace)
    ck, mem, mem_ptr = _members(trace)
    cls, mkind, sync, wpeer, wtag = (np.empty(n, dtype=np.int64) for _ in range(5))
    event_fields(trace, ck, mem, mem_ptr, cls, mkind, sync, wpeer, wtag)
    raux, part_ptr, part_key, part_size, part_a2av, key_rptr, rnd_optr, op_kind, op_x, work = collective_inputs(
        trace, ck, mem, mem_ptr)
    units = np.asarray(units, dtype=np.int64)
    ub = int(2 * np.count_nonzero(units > 0) + 2 * np.count_nonzero((cls == _NONBLOCKING) | (cls == _BLOCKING))
             + 3 * np.count_nonzero(cls == _SENDRECV) + work + 1)
    args = (trace.rank_ptr, cls, mkind, sync, units, wpeer, wtag, trace.nbytes.astype(np.int64),
            trace.comm.astype(np.int64), ck, mem, mem_ptr, reqs.ref_ptr, reqs.created, trace.aux.astype(np.int64),
            trace.aux_ptr, raux, part_ptr, part_key, part_size, part_a2av, key_rptr, rnd_optr, op_kind, op_x)
    return args, ub


def op_graph(trace: Trace, reqs, units: np.ndarray, check: Callable[[int], None] | None = None) -> OpGraph:
    """The operation graph of ``trace`` (see the module docstring).

    Parameters
    ----------
    trace : Trace
        A validated trace.
    reqs : Requests
        :func:`perfmod.trace.requests.resolve_requests` of ``trace``.
    units : numpy.ndarray of int64
        The calc before each event in the caller's unit (nanoseconds for GOAL, picoseconds for the replay);
        no calc where it is not positive.
    check : callable, optional
        Called with an upper bound of the graph's nodes before the graph is allocated (collectives expanded
        into their rounds): a caller's memory check (the replay's), which raises to stop.
    """
    args, ub = build_inputs(trace, reqs, units)
    if check is not None:
        check(ub)
    nodes, nn, pred_ptr, pred, node_ptr = _build(*args, ub)
    # each field one contiguous copy (views would keep the table, sized by the upper bound, about 1.4 x the nodes)
    rank, kind, size, peer, tag, sync, event = (nodes[0, :nn].copy(), nodes[1, :nn].astype(np.int8),
                                                nodes[2, :nn].copy(), nodes[3, :nn].copy(), nodes[4, :nn].copy(),
                                                nodes[5, :nn].astype(bool), nodes[6, :nn].copy())
    del nodes
    return OpGraph(rank, kind, size, peer, tag, sync, event, pred_ptr, pred, node_ptr)


def _text(s: bytes) -> np.ndarray:
    return np.array(list(s), dtype=np.uint8)


_T_RANK, _T_OPEN, _T_CLOSE = _text(b"\nrank "), _text(b" {\n"), _text(b"}\n")
_T_CALC, _T_SEND, _T_RECV = _text(b": calc "), _text(b": send "), _text(b": recv ")
_T_TO, _T_FROM, _T_TAG, _T_REQ = _text(b"b to "), _text(b"b from "), _text(b" tag "), _text(b" requires l")
#: bytes a rank's block can take at most: per node line, per ``requires`` line, per rank
LINE_BYTES, REQUIRES_BYTES, RANK_BYTES = 100, 51, 64


@njit(cache=True)
def _put(buf, pos, s):
    for k in range(s.size):
        buf[pos + k] = s[k]
    return pos + s.size


@njit(cache=True)
def _int(buf, pos, x):
    """Write integer ``x`` in decimal (as Python's ``str``)."""
    if x < 0:
        buf[pos] = 45
        pos += 1
        x = -x
    nd = 1
    y = x // 10
    while y > 0:
        nd += 1
        y //= 10
    for k in range(nd - 1, -1, -1):
        buf[pos + k] = 48 + x % 10
        x //= 10
    return pos + nd


@njit(cache=True)
def format_ranks(r0, r1, rank_ptr, kind, size, peer, tag, pred_ptr, pred, buf):
    """Write the GOAL blocks of ranks ``r0:r1`` into ``buf``; returns the bytes written.

    Each block is a newline, ``rank r {``, one line per node and per
    dependency, and ``}``, each line ending in a newline.  Labels are
    ``l1, l2, ...`` in node order per rank; ``buf`` must hold
    :data:`LINE_BYTES` per node, :data:`REQUIRES_BYTES` per dependency and
    :data:`RANK_BYTES` per rank.
    """
    pos = 0
    for r in range(r0, r1):
        pos = _put(buf, pos, _T_RANK)
        pos = _int(buf, pos, r)
        pos = _put(buf, pos, _T_OPEN)
        base = rank_ptr[r] - 1
        for v in range(rank_ptr[r], rank_ptr[r + 1]):
            buf[pos] = 108  # l
            pos = _int(buf, pos + 1, v - base)
            k = kind[v]
            if k == CALC:
                pos = _put(buf, pos, _T_CALC)
                pos = _int(buf, pos, size[v])
            else:
                if k == SEND:
                    pos = _put(buf, pos, _T_SEND)
                    pos = _int(buf, pos, size[v])
                    pos = _put(buf, pos, _T_TO)
                else:
                    pos = _put(buf, pos, _T_RECV)
                    pos = _int(buf, pos, size[v])
                    pos = _put(buf, pos, _T_FROM)
                pos = _int(buf, pos, peer[v])
                pos = _put(buf, pos, _T_TAG)
                pos = _int(buf, pos, tag[v])
            buf[pos] = 10
            pos += 1
            for q in range(pred_ptr[v], pred_ptr[v + 1]):
                buf[pos] = 108
                pos = _int(buf, pos + 1, v - base)
                pos = _put(buf, pos, _T_REQ)
                pos = _int(buf, pos, pred[q] - base)
                buf[pos] = 10
                pos += 1
        pos = _put(buf, pos, _T_CLOSE)
    return pos
