"""The compiled part of the GOAL reader (:mod:`perfmod.trace.formats.goal_scan`): the scanner and its tables.

numba compiles these; :func:`perfmod.trace.formats.goal_scan.read_goal_graph`
calls them ahead-of-time compiled where it can (:mod:`perfmod.core.aot`), so
that reading a schedule starts without numba.
"""

from __future__ import annotations

import numpy as np

from perfmod.core.kernel_cache import njit
from perfmod.trace.formats.goal_scan import (
    _ANY32,
    _OK,
    _ROOM,
    _TABLE,
    CALC,
    E_BIG,
    E_DIR,
    E_NUMRANKS,
    E_OP,
    E_RANK,
    E_RANK_RANGE,
    E_TWICE,
    E_UNDEF,
    RECV,
    S_BLOCK,
    S_BLOCKS,
    S_COMMENT,
    S_EDGES,
    S_KEEP,
    S_LABELS,
    S_LINE,
    S_LIVE,
    S_NODES,
    S_NRANKS,
    S_PHASE,
    S_RANK,
    SEND,
    WILD,
)


@njit(cache=True, inline="always")
def _ws(c):
    return c == 32 or c == 9 or c == 13


@njit(cache=True, inline="always")
def _alpha(c):
    return (65 <= c <= 90) or (97 <= c <= 122)


@njit(cache=True, inline="always")
def _wordc(c):
    return _alpha(c) or (48 <= c <= 57) or c == 95


@njit(cache=True)
def _is(buf, a, b, word):
    """``buf[a:b]`` equals ``word``."""
    if b - a != word.size:
        return False
    for k in range(word.size):
        if buf[a + k] != word[k]:
            return False
    return True


@njit(cache=True)
def _uint(buf, p, e):
    """Decimal digits at ``p``: ``(value mod 2**64 as int64 bits, end, ok, fits in int63)``."""
    q = p
    v = np.uint64(0)
    big = False
    while q < e and 48 <= buf[q] <= 57:
        d = np.uint64(buf[q] - 48)
        if v > np.uint64(922337203685477579) or (v == np.uint64(922337203685477580) and d > np.uint64(7)):
            big = True
        v = v * np.uint64(10) + d
        q += 1
    return np.int64(v), q, q > p, not big


@njit(cache=True)
def _sint(buf, p, e):
    """``-1`` or decimal digits: ``(value, end, ok, fits)``; -1 as -1."""
    if p < e and buf[p] == 45:
        if p + 1 < e and buf[p + 1] == 49 and (p + 2 >= e or not (48 <= buf[p + 2] <= 57)):
            return np.int64(-1), p + 2, True, True
        return np.int64(0), p, False, True
    return _uint(buf, p, e)


@njit(cache=True)
def _hash(buf, a, b):
    h = np.uint64(14695981039346656037)
    for k in range(a, b):
        h = (h ^ np.uint64(buf[k])) * np.uint64(1099511628211)
    return h


@njit(cache=True)
def _lookup(buf, a, b, h, t_hash, t_node, t_stamp, t_off, t_len, store, stamp):
    """Slot of label ``buf[a:b]`` (hash ``h``) in the table: ``(slot, found)``; an empty slot if not found."""
    mask = t_hash.size - 1
    s = np.int64(h & np.uint64(mask))
    n = b - a
    while True:
        if t_stamp[s] != stamp:
            return s, False
        if t_hash[s] == h and t_len[s] == n:
            o = t_off[s]
            same = True
            for k in range(n):
                if store[o + k] != buf[a + k]:
                    same = False
                    break
            if same:
                return s, True
        s = (s + 1) & mask


@njit(cache=True)
def _word(buf, p, e):
    """End of the identifier at ``p`` (``[A-Za-z]\\w*``; ``p`` if none)."""
    if p < e and _alpha(buf[p]):
        p += 1
        while p < e and _wordc(buf[p]):
            p += 1
    return p


@njit(cache=True)
def _skip(buf, p, e):
    while p < e and _ws(buf[p]):
        p += 1
    return p


_W = {w: np.frombuffer(w.encode(), dtype=np.uint8).copy() for w in
      ("num_ranks", "rank", "send", "recv", "calc", "to", "from", "tag", "cpu", "nic", "requires", "irequires")}
_W_NUMRANKS, _W_RANK, _W_SEND, _W_RECV, _W_CALC = (_W[w] for w in ("num_ranks", "rank", "send", "recv", "calc"))
_W_TO, _W_FROM, _W_TAG, _W_CPU, _W_NIC = (_W[w] for w in ("to", "from", "tag", "cpu", "nic"))
_W_REQ, _W_IREQ = _W["requires"], _W["irequires"]


@njit(cache=True)
def _scan(buf, pos, end, st, err, n_rank, n_kind, n_size, n_peer, n_tag, n_cpu, n_nic, n_line, n_loff, n_llen,
          e_a, e_b, e_start, t_hash, t_node, t_stamp, t_off, t_len, store, b_rank, b_line, b_node0):
    """Parse the whole lines of ``buf[pos:end]``; returns ``(code, pos)``: :data:`_OK` at ``end``, :data:`_ROOM`
    or :data:`_TABLE` where more room is needed before the line at ``pos``, or an error code (``err`` holds the
    line's bounds and the offending token's)."""
    word_nr, word_rank, word_send, word_recv, word_calc = _W_NUMRANKS, _W_RANK, _W_SEND, _W_RECV, _W_CALC
    word_to, word_from, word_tag, word_cpu, word_nic = _W_TO, _W_FROM, _W_TAG, _W_CPU, _W_NIC
    word_req, word_ireq = _W_REQ, _W_IREQ
    cap_nodes = n_kind.size
    cap_edges = e_a.size
    keep = st[S_KEEP] != 0  # labels kept: each node's label offset and length (n_loff, n_llen; else left empty)
    while pos < end:
        # the line: [pos, le) up to the newline, content [a, b) without comment and blanks
        le = pos
        while le < end and buf[le] != 10:
            le += 1
        st[S_LINE] += 1
        a = _skip(buf, pos, le)
        # block comments, as LogGOPSim's txt2bin takes them: /* ... */ where a statement may start, across lines;
        # ``com`` the line the open one began on (0: none), kept in ``st`` once the line is taken (a line given
        # back for more room is read again from the state before it)
        com = st[S_COMMENT]
        while True:
            if com > 0:
                k = a
                while k + 1 < le and not (buf[k] == 42 and buf[k + 1] == 47):
                    k += 1
                if k + 1 >= le:
                    a = le
                    break
                com = 0
                a = _skip(buf, k + 2, le)
            elif a + 1 < le and buf[a] == 47 and buf[a + 1] == 42:
                com = st[S_LINE]
                a += 2
            else:
                break
        b = a
        while b < le and not (buf[b] == 47 and b + 1 < le and buf[b + 1] == 47):
            b += 1
        while b > a and _ws(buf[b - 1]):
            b -= 1
        err[0], err[1], err[2], err[3] = a, b, a, b
        if a == b:
            st[S_COMMENT] = com
            pos = le + 1
            continue
        phase = st[S_PHASE]
        if phase == 0:
            w = _word(buf, a, b)
            if not _is(buf, a, w, word_nr) or w >= b or not _ws(buf[w]):
                st[S_LINE] -= 1
                return E_NUMRANKS, pos
            v, q, ok, fits = _uint(buf, _skip(buf, w, b), b)
            if not ok or q != b or not fits:
                st[S_LINE] -= 1
                return E_NUMRANKS, pos
            st[S_NRANKS] = v
            st[S_PHASE] = 1
            st[S_COMMENT] = com
            pos = le + 1
            continue
        if phase == 1:
            w = _word(buf, a, b)
            ok = _is(buf, a, w, word_rank) and w < b and _ws(buf[w])
            r = np.int64(0)
            if ok:
                r, q, ok, fits = _uint(buf, _skip(buf, w, b), b)
                q = _skip(buf, q, b)
                ok = ok and fits and q == b - 1 and buf[q] == 123
            if not ok:
                st[S_LINE] -= 1
                return E_RANK, pos
            if r >= st[S_NRANKS]:
                err[4] = r
                st[S_LINE] -= 1
                return E_RANK_RANGE, pos
            if st[S_BLOCKS] >= b_rank.size:
                st[S_LINE] -= 1
                return _ROOM, pos
            k = st[S_BLOCKS]
            b_rank[k], b_line[k], b_node0[k] = r, st[S_LINE], st[S_NODES]
            st[S_BLOCKS] = k + 1
            st[S_RANK] = r
            st[S_BLOCK] += 1  # the label table's stamp: entries of earlier blocks read as empty
            st[S_LIVE] = 0
            if st[S_KEEP] == 0:
                st[S_LABELS] = 0
            st[S_PHASE] = 2
            st[S_COMMENT] = com
            pos = le + 1
            continue
        # in a rank block
        if b - a == 1 and buf[a] == 125:
            st[S_PHASE] = 1
            st[S_COMMENT] = com
            pos = le + 1
            continue
        if st[S_NODES] >= cap_nodes or st[S_EDGES] >= cap_edges or st[S_LABELS] + (b - a) > store.size:
            st[S_LINE] -= 1
            return _ROOM, pos
        if 2 * (st[S_LIVE] + 1) > t_hash.size:
            st[S_LINE] -= 1
            return _TABLE, pos
        w1 = _word(buf, a, b)
        p = _skip(buf, w1, b)
        # a dependency: LABEL (requires|irequires) LABEL
        if w1 > a and p > w1 and p < b:
            w2 = _word(buf, p, b)
            start = _is(buf, p, w2, word_ireq)
            if start or _is(buf, p, w2, word_req):
                p3 = _skip(buf, w2, b)
                w3 = _word(buf, p3, b)
                if p3 > w2 and w3 > p3 and w3 == b:
                    stamp = st[S_BLOCK]
                    s1, f1 = _lookup(buf, a, w1, _hash(buf, a, w1), t_hash, t_node, t_stamp, t_off, t_len, store,
                                     stamp)
                    if not f1:
                        err[2], err[3] = a, w1
                        st[S_LINE] -= 1
                        return E_UNDEF, pos
                    s3, f3 = _lookup(buf, p3, w3, _hash(buf, p3, w3), t_hash, t_node, t_stamp, t_off, t_len, store,
                                     stamp)
                    if not f3:
                        err[2], err[3] = p3, w3
                        st[S_LINE] -= 1
                        return E_UNDEF, pos
                    k = st[S_EDGES]
                    e_a[k], e_b[k], e_start[k] = t_node[s1], t_node[s3], start
                    st[S_EDGES] = k + 1
                    st[S_COMMENT] = com
                    pos = le + 1
                    continue
        # an operation: [LABEL :] (send|recv|calc) N [b] [(to|from) P] [tag T] [cpu C] [nic N]
        la, lb = a, a
        q = a
        if w1 > a and p < b and buf[p] == 58:
            la, lb = a, w1
            q = _skip(buf, p + 1, b)
        wk = _word(buf, q, b)
        kind = 0
        if _is(buf, q, wk, word_send):
            kind = SEND
        elif _is(buf, q, wk, word_recv):
            kind = RECV
        elif _is(buf, q, wk, word_calc):
            kind = CALC
        if kind == 0 or wk >= b or not _ws(buf[wk]):
            st[S_LINE] -= 1
            return E_OP, pos
        size, q, ok, fits = _uint(buf, _skip(buf, wk, b), b)
        if not ok:
            st[S_LINE] -= 1
            return E_OP, pos
        if not fits:
            st[S_LINE] -= 1
            return E_BIG, pos
        q2 = _skip(buf, q, b)
        has_b = q2 < b and buf[q2] == 98 and (q2 + 1 == b or not _wordc(buf[q2 + 1]))
        if has_b:
            q = q2 + 1
        peer = np.int64(0)
        tag = np.int64(0)
        cpu = np.int64(0)
        nic = np.int64(0)
        direction = 0
        clause = 0  # clauses in order: to/from (1), tag (2), cpu (3), nic (4)
        bad = False
        while True:
            q2 = _skip(buf, q, b)
            if q2 == b:
                q = b
                break
            if q2 == q and q != b:  # no blank before the clause
                bad = True
                break
            wq = _word(buf, q2, b)
            p2 = _skip(buf, wq, b)
            if p2 == wq or p2 >= b:
                bad = True
                break
            if clause < 1 and (_is(buf, q2, wq, word_to) or _is(buf, q2, wq, word_from)):
                direction = SEND if wq - q2 == 2 else RECV
                peer, q, ok, fits = _sint(buf, p2, b)
                clause = 1
            elif clause < 2 and _is(buf, q2, wq, word_tag):
                tag, q, ok, fits = _sint(buf, p2, b)
                fits = True  # a tag wraps to 32 bits as txt2bin stores it
                clause = 2
            elif clause < 3 and _is(buf, q2, wq, word_cpu):
                cpu, q, ok, fits = _uint(buf, p2, b)
                clause = 3
            elif clause < 4 and _is(buf, q2, wq, word_nic):
                nic, q, ok, fits = _uint(buf, p2, b)
                clause = 4
            else:
                bad = True
                break
            if not ok or (q < b and not _ws(buf[q])):
                bad = True
                break
            if not fits:
                st[S_LINE] -= 1
                return E_BIG, pos
        if bad or (kind != CALC) != has_b or (kind != CALC) != (direction != 0) or \
                (clause >= 3 and (cpu > 255 or nic > 255)):
            st[S_LINE] -= 1
            return E_OP, pos
        if direction != 0 and direction != kind:
            err[4] = kind
            st[S_LINE] -= 1
            return E_DIR, pos
        v = st[S_NODES]
        if lb > la:
            h = _hash(buf, la, lb)
            s, found = _lookup(buf, la, lb, h, t_hash, t_node, t_stamp, t_off, t_len, store, st[S_BLOCK])
            if found:
                err[2], err[3] = la, lb
                st[S_LINE] -= 1
                return E_TWICE, pos
            o = st[S_LABELS]
            for k in range(lb - la):
                store[o + k] = buf[la + k]
            st[S_LABELS] = o + lb - la
            t_hash[s], t_node[s], t_stamp[s], t_off[s], t_len[s] = h, v, st[S_BLOCK], o, lb - la
            st[S_LIVE] += 1
            if keep:
                n_loff[v], n_llen[v] = o, lb - la
        elif keep:
            n_loff[v], n_llen[v] = -1, 0
        if kind != CALC:
            t32 = tag & _ANY32
            tag = WILD if tag == -1 or t32 == _ANY32 else t32
        n_rank[v], n_kind[v], n_size[v], n_peer[v], n_tag[v] = st[S_RANK], kind, size, peer, tag
        n_cpu[v], n_nic[v], n_line[v] = cpu, nic, st[S_LINE]
        st[S_NODES] = v + 1
        st[S_COMMENT] = com
        pos = le + 1
    return _OK, pos


@njit(cache=True)
def _rehash(t_hash, t_node, t_stamp, t_off, t_len, stamp, cap):
    """The live entries (``stamp``) of the label table in a table of ``cap`` slots."""
    h2 = np.zeros(cap, dtype=np.uint64)
    n2 = np.zeros(cap, dtype=np.int64)
    s2 = np.full(cap, -1, dtype=np.int64)
    o2 = np.zeros(cap, dtype=np.int64)
    l2 = np.zeros(cap, dtype=np.int64)
    mask = cap - 1
    for s in range(t_hash.size):
        if t_stamp[s] == stamp:
            j = np.int64(t_hash[s] & np.uint64(mask))
            while s2[j] == stamp:
                j = (j + 1) & mask
            h2[j], n2[j], s2[j], o2[j], l2[j] = t_hash[s], t_node[s], stamp, t_off[s], t_len[s]
    return h2, n2, s2, o2, l2


@njit(cache=True)
def _csr(frm, to, n):
    """Successor lists of ``n`` nodes from edges ``frm -> to``, each list in edge order (a stable counting sort)."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    for k in range(frm.size):
        ptr[frm[k] + 1] += 1
    for v in range(n):
        ptr[v + 1] += ptr[v]
    fill = ptr[:-1].copy()
    out = np.empty(frm.size, dtype=np.int64)
    for k in range(frm.size):
        f = frm[k]
        out[fill[f]] = to[k]
        fill[f] += 1
    return ptr, out


@njit(cache=True)
def _spans(buf, start, stop):
    """The bytes of ``buf`` in ``[start[i], stop[i])`` for every ``i``, one span after the other (none where
    ``stop[i] <= start[i]``; the caller has checked the spans lie in ``buf``): a binary schedule's records of all
    ranks in one pass, where a step per rank in Python took a minute for 8 million ranks."""
    total = 0
    for i in range(start.size):
        if stop[i] > start[i]:
            total += stop[i] - start[i]
    out = np.empty(total, dtype=np.uint8)
    k = 0
    for i in range(start.size):
        for j in range(start[i], stop[i]):
            out[k] = buf[j]
            k += 1
    return out
