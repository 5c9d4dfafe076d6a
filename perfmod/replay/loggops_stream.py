"""The ``loggp`` replay of a trace without its whole operation graph: each rank's operations made as they are needed.

:mod:`perfmod.replay.loggops_kernel` runs LogGOPSim's event loop on a
graph built whole (:func:`~perfmod.trace.formats.goal_graph.op_graph`),
about 1 KB per trace event at its peak (issue 23).  Here the same loop
(:func:`~perfmod.replay.loggops_kernel._run`, one function for both: this
module registers the hooks of its node layout, :data:`SLOT`) runs on the
same graph made rank by rank as the simulation reaches it:
:func:`run_stream` resumes, per rank, the pass of
:func:`~perfmod.trace.formats.goal_graph._build` over the rank's events (a
cursor into them, the position inside a collective's rounds, the
frontier, the pending requests), and the nodes live in 64-byte slots
(:data:`SLOT`: the loop's :data:`~perfmod.replay.loggops_layout.ROW` and
the stream's own fields) recycled when done and no longer referenced, 8
of each rank's own (so that the ranks running at one simulated moment
touch memory together, as the full graph's time-major rows did) and a
shared pool beyond; a node's successors are a linked list of cells,
appended in creation order (the order LogGOPSim frees them in).

Why the result is the full graph's, event for event: a node's
predecessors are always the rank's frontier when it is made, and a node
is freed when its last predecessor is done, the successors of one node
in creation order.  A rank's next chunk of nodes is made when the first
node of its current frontier is queued (before it can be done: a node is
done only after it is queued), and a chunk ends only where no
not-yet-done node of the frontier is already queued, so every node is made
before its last predecessor is done and counts only those not done yet:
it is freed at the same event and in the same place of that event's
order as in the full graph.  The nodes that require nothing (a rank's
first operations, before its frontier holds any) are all in the rank's
first chunk, made before the loop starts, and queued as the full graph's
``init``.  Slot numbers order nothing (sequences break every tie).

The per-rank accounting of :func:`~perfmod.replay.loggops_kernel._account`
takes two times per event, filled as nodes are done: the CPU time when
the event's calc is done (``cend``) and the latest over the nodes the
event adds to its rank's frontier (``emax``).  They take the place of the
event's inputs in its record once its first step has read them
(:data:`RESULT`), so that the loop keeps 24 bytes per event, not 44.
"""

from __future__ import annotations

import numpy as np

from perfmod.core.kernel_cache import njit
from perfmod.replay.loggops_kernel import (
    _BS,
    _EARLY,
    _END,
    _FAR,
    _FREE,
    _LIVE,
    _NB,
    _POS,
    _queue,
    _release_one,
    _run,
    graph_hooks,
    send_cost,
)
from perfmod.replay.loggops_layout import _CALC, _DONE, _RECV, _SEND, _WILD, STATUS_DEADLOCK, STATUS_EARLY, STATUS_OK
from perfmod.trace.core import ANY_SOURCE, PROC_NULL
from perfmod.trace.formats.goal_graph import (
    _BLOCKING,
    _COLLECTIVE,
    _NONBLOCKING,
    _SENDRECV,
    _WAIT,
    COLLECTIVE_TAG,
    _recv_tag,
)

__all__ = ["CHUNK", "EVENT", "RESULT", "SLOT", "STATUS_CLASS", "run_stream", "stream_inputs"]

#: the loop stopped at a send whose message class the platform lacks (``run_stream``'s ``bad``: the class)
STATUS_CLASS = 3
#: nodes a rank's chunk makes at least (then up to the next place where it may end: the module docstring): one
#: step, so that a rank's live nodes stay within its home of 8 slots (1,048,576-rank allreduce: 2.24 GB resident
#: with 1, 2.98 GB with 4, which overflowed the homes; 16,384-rank Jacobi2D: 1, 2, 4 within 5 %, 32 slower)
CHUNK = 1
#: a trace event as the generator reads it (24 bytes, one read where seven arrays took a cache line each): its
#: calc in ps (none where not positive), world peer, GOAL tag's low 32 bits, communicator (compact index), class
#: (:func:`~perfmod.trace.formats.goal_graph._build`'s), node kind and synchronous send
EVENT = np.dtype([("units", np.int64), ("peer", np.int32), ("tag", np.int32), ("ck", np.int32), ("cls", np.int8),
                  ("kind", np.int8), ("sync", np.int8)], align=True)
#: the same record once the event's first step has read it (``evr.view(RESULT)``: its inputs but ``units`` are
#: not read again): the CPU time when its calc was done (``cend``) and the latest over the nodes it adds to its
#: rank's frontier (``emax``), ps, -1 none; until its request is waited for, a nonblocking event's ``emax`` holds
#: ``-2 - slot`` of that request's node (any negative ``emax`` counts as none)
RESULT = np.dtype([("units", np.int64), ("cend", np.int64), ("emax", np.int64)])
assert EVENT.itemsize == RESULT.itemsize == 24
#: a node in its slot (64 bytes, one cache line): the event loop's :data:`~perfmod.replay.loggops_layout.ROW`,
#: then ``head``/``tail`` of its successors' cells (a free slot: ``head`` the next free one), the trace ``event``
#: that made it (-1 a join), the event whose frontier it joins (``rel``, -1 none yet), the chunk mark ``trig``,
#: ``flag`` (:data:`_F_FR` ...), and ``rr`` the CPU time when it was done (kept for a request not yet waited for)
SLOT = np.dtype([("dur", np.int64), ("rank", np.int32), ("peer", np.int32), ("tag", np.int32), ("link", np.int32),
                 ("ndeps", np.int32), ("kind", np.int8), ("rndv", np.int8), ("cls", np.int16), ("head", np.int32),
                 ("tail", np.int32), ("event", np.int32), ("rel", np.int32), ("trig", np.int32), ("flag", np.int32),
                 ("rr", np.int64)], align=True)
assert SLOT.itemsize == 64
_MSG = np.int64(1) << 31  # an event's key: the message of the send in slot ``key - _MSG``, else a node's slot
# flags: in its rank's frontier, a pending request, its message not yet matched, the send its event reports
_F_FR, _F_PEND, _F_MSG, _F_LAST = 1, 2, 4, 8
# the pools' words ``gs``: free shared slots (count, first), free shared cells (count, first), nodes made, the bad
# message class, init nodes recorded (-1: not recording), the home slots and cells, the ranks whose
# next chunk an event triggered (count, those made), the nodes made of the current one, log2 of a home's slots,
# the zero-byte sends made in a class where LogGOPSim's arithmetic wraps around
(_G_SFREE, _G_SHEAD, _G_LFREE, _G_LHEAD, _G_NODES, _G_BAD, _G_NI, _G_HS, _G_HC, _G_NG, _G_NJ, _G_MADE, _G_HSH,
 _G_ZW, _G_WORDS) = range(15)
#: the columns of ``par`` beyond the event loop's o, g, L: what a zero-byte send of the class costs (ps: LogGOPSim's
#: ``(0 - 1) G``, else 0 where its arithmetic wraps around) and whether it wraps (1: counted in ``gs[_G_ZW]``)
_P_Z, _P_W = 3, 4
#: log2 of the slots of each rank's own (its "home": rank r's are r * 2**h .. (r + 1) * 2**h - 1, the shared
#: pool after all homes; twice as many cells): the nodes the ranks run at one simulated moment lie together in
#: memory, as in the full graph's time-major rows (from a shared pool alone, 131,072-rank Jacobi2D ran at 0.8 M
#: operations/s; 16,384: 1.0).  8 slots, but 4 where the ranks have about one event each and a collective's
#: round is one operation (a lone broadcast or reduce: the homes were most of its memory; 2,097,152-rank
#: broadcast 17.5 -> 11.5 CPU-s, 3.78 -> 2.44 GiB; a recursive-doubling allreduce, two operations a round,
#: overflowed 4 into the shared pool: 1,048,576 ranks 2.00 -> 2.28 GiB)
_HOME_SHIFT, _HOME_SHIFT_ONE = 3, 2
#: a rank's generator state in one record (one cache line, where eight arrays and the message mode's two took a
#: line each): its cursor into its events, the collective part and round it is in (-1: none), its frontier's
#: cells (head, tail, count), the chunk epoch, the send that reports its current collective event, socket, node,
#: the first free slot and cell of its home (-1: none), the communicator of its current collective event
RANK = np.dtype([("gcur", np.int64), ("gq", np.int64), ("grd", np.int64), ("frh", np.int32), ("frt", np.int32),
                 ("gnf", np.int32), ("epoch", np.int32), ("cand", np.int32), ("sock", np.int32), ("host", np.int32),
                 ("sfree", np.int32), ("cfree", np.int32), ("gck", np.int32)], align=True)
assert RANK.itemsize == 64
_NEED, _OK, _BAD = 0, 1, 2  # what a generator call ends with
_GROW, _LACKS = 1, 2  # what the loop's hook (_freed) stops it with: the pools must grow, a message class lacking


@njit(cache=True, _nrt=False)
def _cell(r, gs, rs, cells, x):
    """A cell of rank ``r`` holding ``x`` (``cells[2 c]``; ``cells[2 c + 1]`` the next cell of its list, -1
    none): from its home, else from the shared pool."""
    c = rs[r].cfree
    if c >= 0:
        rs[r].cfree = cells[2 * c + 1]
    else:
        c = gs[_G_LHEAD]
        gs[_G_LHEAD] = cells[2 * c + 1]
        gs[_G_LFREE] -= 1
    cells[2 * c] = x
    cells[2 * c + 1] = -1
    return c


@njit(cache=True, _nrt=False)
def _push_cell(r, gs, rs, cells, x, head, tail):
    """Append a cell of rank ``r`` holding ``x`` to the list ``head`` .. ``tail`` (-1: empty); the new ends."""
    c = _cell(r, gs, rs, cells, x)
    if head < 0:
        return c, c
    cells[2 * tail + 1] = c
    return head, c


@njit(cache=True, _nrt=False)
def _free_cell(gs, rs, cells, c):
    if c < gs[_G_HC]:
        h = c >> (gs[_G_HSH] + 1)
        cells[2 * c + 1] = rs[h].cfree
        rs[h].cfree = c
    else:
        cells[2 * c + 1] = gs[_G_LHEAD]
        gs[_G_LHEAD] = c
        gs[_G_LFREE] += 1


@njit(cache=True, _nrt=False)
def _maybe_free(v, nd, rs, gs):
    """Give slot ``v`` back if its node is done and nothing refers to it (frontier, request, message)."""
    x = nd[v]
    if x.kind >= _DONE and x.flag & (_F_FR | _F_PEND | _F_MSG) == 0:
        if rs[x.rank].cand == v:
            rs[x.rank].cand = -1
        x.kind = 0
        if v < gs[_G_HS]:
            h = v >> gs[_G_HSH]
            x.head = rs[h].sfree
            rs[h].sfree = v
        else:
            x.head = gs[_G_SHEAD]
            gs[_G_SHEAD] = v
            gs[_G_SFREE] += 1


@njit(cache=True, _nrt=False)
def _requires_frontier(s, r, nd, rs, gs, cells):
    """Node ``s`` requires its rank's frontier: an edge from each member not done yet (those done count no
    more; the module docstring says why one is always left)."""
    c = rs[r].frh
    k = 0
    while c >= 0:
        u = cells[2 * c]
        if nd[u].kind < _DONE:
            e = _cell(r, gs, rs, cells, s)
            if nd[u].head < 0:
                nd[u].head = e
            else:
                cells[2 * nd[u].tail + 1] = e
            nd[u].tail = e
            k += 1
        c = cells[2 * c + 1]
    nd[s].ndeps = k


@njit(cache=True, _nrt=False)
def _fr_clear(r, nd, rs, gs, cells):
    c = rs[r].frh
    while c >= 0:
        u = cells[2 * c]
        nd[u].flag &= ~_F_FR
        _maybe_free(u, nd, rs, gs)
        nxt = cells[2 * c + 1]
        _free_cell(gs, rs, cells, c)
        c = nxt
    rs[r].frh = -1
    rs[r].frt = -1
    rs[r].gnf = 0


@njit(cache=True, _nrt=False)
def _fr_push(r, u, nd, rs, gs, cells):
    c = _cell(r, gs, rs, cells, u)
    if rs[r].frh < 0:
        rs[r].frh = c
    else:
        cells[2 * rs[r].frt + 1] = c
    rs[r].frt = c
    rs[r].gnf += 1
    nd[u].flag |= _F_FR


@njit(cache=True, _nrt=False)
def _new_frontier(r, head, tail, cnt, nd, rs, gs, cells):
    """The cells ``head`` .. ``tail`` (``cnt`` new nodes) become rank ``r``'s frontier, the old one let go."""
    _fr_clear(r, nd, rs, gs, cells)
    rs[r].frh = head
    rs[r].frt = tail
    rs[r].gnf = cnt
    c = head
    while c >= 0:
        nd[cells[2 * c]].flag |= _F_FR
        c = cells[2 * c + 1]


# made for each operation, inside the generator: inlined there (numba's IR), where the call passed its 16 arguments
# (a 16,384-rank x 10 Jacobi2D trace's replay 4.79-5.19 -> 4.12-4.16 CPU-s, paired runs, 2026-11-28; inlining
# every helper of the generator too measured about 5 % more and took 93 s to compile, not 55)
@njit(cache=True, _nrt=False, inline="always")
def _node(r, kind, size, peer, tag, sync, ev, nd, gs, rs, cells, ibuf, par, gps, short_max, eager_max):
    """Make a node of rank ``r`` requiring its frontier (its row as :func:`~perfmod.replay.loggops_kernel.fill_rows`
    fills it; a calc's ``size`` in ps); returns its slot."""
    s = rs[r].sfree
    if s >= 0:
        row = nd[s]
        rs[r].sfree = row.head
    else:
        s = gs[_G_SHEAD]
        row = nd[s]
        gs[_G_SHEAD] = row.head
        gs[_G_SFREE] -= 1
    row.rank = r
    row.peer = peer
    row.tag = np.int32(tag & 0xFFFFFFFF)
    row.link = -1
    row.kind = kind
    row.rndv = 0
    row.cls = 0
    row.dur = 0
    if kind == _CALC:
        row.dur = size
    elif kind == _SEND:
        mode = 0 if rs[r].sock == rs[peer].sock else (1 if rs[r].host == rs[peer].host else 2)
        c, row.dur = send_cost(size, mode, gps, par[:, _P_Z], short_max, eager_max)
        if par[c, 0] < 0 and gs[_G_BAD] < 0:
            gs[_G_BAD] = c
        row.cls = c
        if size <= 0:  # counted where LogGOPSim's arithmetic wraps (costed as one byte): the caller warns
            gs[_G_ZW] += par[c, _P_W]
        row.rndv = size > eager_max or sync != 0
    row.head = -1
    row.tail = -1
    row.event = ev
    row.rel = -1
    row.trig = -1
    row.flag = 0
    row.rr = -1
    gs[_G_NODES] += 1
    _requires_frontier(s, r, nd, rs, gs, cells)
    if gs[_G_NI] >= 0 and row.ndeps == 0:  # the first chunks: an init node
        ibuf[gs[_G_NI]] = s
        gs[_G_NI] += 1
    return s


@njit(cache=True, _nrt=False, inline="always")
def _join(r, nd, gs, rs, cells, ibuf, par, gps, short_max, eager_max):
    """A frontier of several nodes joined by one zero calc that requires them all, made the frontier
    (:func:`~perfmod.trace.formats.goal_graph._join`); returns the nodes made (0 or 1)."""
    if rs[r].gnf <= 1:
        return 0
    s = _node(r, _CALC, 0, 0, 0, 0, -1, nd, gs, rs, cells, ibuf, par, gps, short_max, eager_max)
    _fr_clear(r, nd, rs, gs, cells)
    _fr_push(r, s, nd, rs, gs, cells)
    return 1


@njit(cache=True, _nrt=False)
def _may_end(r, nd, rs, cells):
    """A chunk may end here: the frontier holds nodes, and none not done is queued yet (``ndeps`` 0)."""
    if rs[r].gnf == 0:
        return False
    c = rs[r].frh
    while c >= 0:
        u = cells[2 * c]
        if nd[u].kind < _DONE and nd[u].ndeps == 0:
            return False
        c = cells[2 * c + 1]
    return True


@njit(cache=True, _nrt=False)
def _generate(r, made, chunk, smax, lmax, ev, st, nd, gs, cells, ibuf, out):
    """Make rank ``r``'s next operations, step by step (the rest of an event, or one round of a collective), as
    :func:`~perfmod.trace.formats.goal_graph._build` does, until at least ``chunk`` are made (``made`` so far)
    and the chunk may end (:func:`_may_end`), or the rank's events are spent.

    Returns ``(status, made)``: ``_NEED`` when fewer than ``smax`` free slots or too few free cells are left
    for a step (the caller grows the pools and calls again), ``_BAD`` at a message class the platform lacks,
    else ``_OK``.  ``ev``: :func:`stream_inputs`' arrays; ``st``: the
    generator's per-rank state and the message parameters; ``out``: the per-event results.
    """
    (rank_ptr, evr, nbytes, comm, mem, mem_ptr, ref_ptr, created, aux, aux_ptr, raux, part_ptr, part_key, part_size,
     part_a2av, key_rptr, rnd_optr, op_kind, op_x, res) = ev
    rs, par, gps, short_max, eager_max, prog = st
    end = rank_ptr[r + 1]
    while True:
        i = rs[r].gcur
        if i >= end:
            return _OK, made
        if made >= chunk and _may_end(r, nd, rs, cells):
            rs[r].epoch += 1  # the frontier's nodes: the first of them queued makes the next chunk
            c = rs[r].frh
            while c >= 0:
                nd[cells[2 * c]].trig = rs[r].epoch
                c = cells[2 * c + 1]
            return _OK, made
        if gs[_G_BAD] >= 0:
            return _BAD, made
        if gs[_G_SFREE] < smax or gs[_G_LFREE] < lmax + rs[r].gnf + ref_ptr[i + 1] - ref_ptr[i]:
            return _NEED, made
        if rs[r].gq >= 0:  # one round of the collective event i
            q, rnd = rs[r].gq, rs[r].grd
            made += _join(r, nd, gs, rs, cells, ibuf, par, gps, short_max, eager_max)
            base = mem_ptr[rs[r].gck]
            a = aux_ptr[i]
            ctag = COLLECTIVE_TAG + comm[i]
            head = -1
            tail = -1
            last = -1
            for o in range(rnd_optr[rnd], rnd_optr[rnd + 1]):  # they require the frontier, then become it
                x = op_x[o]
                nb = part_size[q]
                if part_a2av[q]:
                    nb = aux[a + x] if op_kind[o] == _SEND else raux[a + x]
                s = _node(r, op_kind[o], nb, mem[base + x], ctag, 0, i, nd, gs, rs, cells, ibuf, par, gps,
                          short_max, eager_max)
                nd[s].rel = i
                head, tail = _push_cell(r, gs, rs, cells, s, head, tail)
                if op_kind[o] == _SEND:
                    last = s
            n_new = rnd_optr[rnd + 1] - rnd_optr[rnd]
            made += n_new
            if head >= 0:
                _new_frontier(r, head, tail, n_new, nd, rs, gs, cells)
            if last >= 0:  # the event's latest send reports it (the full graph's last send of an event wins)
                if rs[r].cand >= 0:
                    nd[rs[r].cand].flag &= ~_F_LAST
                nd[last].flag |= _F_LAST
                rs[r].cand = last
            rnd += 1  # the next round: of this part, else of the next part with rounds, else the next event
            while q < part_ptr[i + 1] and rnd >= key_rptr[part_key[q] + 1]:
                q += 1
                if q < part_ptr[i + 1]:
                    rnd = key_rptr[part_key[q]]
            if q < part_ptr[i + 1]:
                rs[r].gq = q
                rs[r].grd = rnd
            else:
                rs[r].gq = -1
                rs[r].cand = -1
                rs[r].gcur = i + 1
                prog[0] += 1
            continue
        # an event's start: its inputs read, its record holds its times from here on (RESULT)
        e_i = evr[i]
        units, c, kind, peer, tag, sync, ck = e_i.units, e_i.cls, e_i.kind, e_i.peer, e_i.tag, e_i.sync, e_i.ck
        res[i].cend = -1
        res[i].emax = -1
        rs[r].gck = ck
        if units > 0:  # its calc, then its operation
            made += _join(r, nd, gs, rs, cells, ibuf, par, gps, short_max, eager_max)
            s = _node(r, _CALC, units, 0, 0, 0, i, nd, gs, rs, cells, ibuf, par, gps, short_max, eager_max)
            made += 1
            e = _cell(r, gs, rs, cells, s)
            _new_frontier(r, e, e, 1, nd, rs, gs, cells)
        if c == _NONBLOCKING or c == _BLOCKING:
            made += _join(r, nd, gs, rs, cells, ibuf, par, gps, short_max, eager_max)
            s = _node(r, kind, nbytes[i], peer, tag, sync, i, nd, gs, rs, cells, ibuf, par, gps, short_max,
                      eager_max)
            made += 1
            if kind == _SEND:
                nd[s].flag |= _F_LAST
            if c == _BLOCKING:
                nd[s].rel = i
                e = _cell(r, gs, rs, cells, s)
                _new_frontier(r, e, e, 1, nd, rs, gs, cells)
            else:  # the request's node, until a wait takes it (no node adds to this event's frontier)
                res[i].emax = -2 - s
                nd[s].flag |= _F_PEND
        elif c == _WAIT:
            for q in range(ref_ptr[i], ref_ptr[i + 1]):
                x = created[q]
                u = -2 - res[x].emax
                if u >= 0:
                    res[x].emax = -1
                    nd[u].flag &= ~_F_PEND
                    _fr_push(r, u, nd, rs, gs, cells)
                    if nd[u].kind >= _DONE:
                        res[i].emax = max(res[i].emax, nd[u].rr)
                    else:
                        nd[u].rel = i
        elif c == _SENDRECV:
            a = aux_ptr[i]
            src, rb, rt = aux[a], aux[a + 1], _recv_tag(aux[a + 2], comm[i])
            made += _join(r, nd, gs, rs, cells, ibuf, par, gps, short_max, eager_max)
            head = -1
            tail = -1
            n_new = 0
            if peer != PROC_NULL:
                s = _node(r, _SEND, nbytes[i], peer, tag, 0, i, nd, gs, rs, cells, ibuf, par, gps, short_max,
                          eager_max)
                nd[s].flag |= _F_LAST
                nd[s].rel = i
                head = tail = _cell(r, gs, rs, cells, s)
                n_new += 1
            if src != PROC_NULL:
                ws = _WILD if src == ANY_SOURCE else (src if src < 0 else mem[mem_ptr[ck] + src])
                s = _node(r, _RECV, rb, ws, rt, 0, i, nd, gs, rs, cells, ibuf, par, gps, short_max,
                          eager_max)
                nd[s].rel = i
                head, tail = _push_cell(r, gs, rs, cells, s, head, tail)
                n_new += 1
            made += n_new
            if n_new:
                _new_frontier(r, head, tail, n_new, nd, rs, gs, cells)
        elif c == _COLLECTIVE:
            q = part_ptr[i]
            while q < part_ptr[i + 1] and key_rptr[part_key[q]] == key_rptr[part_key[q] + 1]:
                q += 1
            if q < part_ptr[i + 1]:
                rs[r].gq = q
                rs[r].grd = key_rptr[part_key[q]]
                continue  # its rounds, a step each
        rs[r].gcur = i + 1
        prog[0] += 1


@njit(cache=True, _nrt=False)
def _done(v, t, cpu_t, nd, g, fbuf, nfree):
    """Mark node ``v`` done at ``t`` (the CPU's time then: ``cpu_t``): its event's times, the nodes it frees
    appended to ``fbuf`` (its successors in creation order); its slot given back if nothing refers to it.
    (The stream's hooks of :func:`~perfmod.replay.loggops_kernel._run`: ``g`` is ``(rs, gs, cells, out)``.)"""
    rs, gs, cells, out = g
    res, sdone = out[0], out[1]
    x = nd[v]
    k = x.kind
    x.kind = k + _DONE
    e = x.event
    if k == _SEND and x.flag & _F_LAST:
        sdone[e] = True
    elif k == _CALC and e >= 0:
        res[e].cend = cpu_t
    if x.rel >= 0:
        res[x.rel].emax = max(res[x.rel].emax, cpu_t)
    else:
        x.rr = cpu_t
    nfree = _release_cells(x.head, nd, gs, rs, cells, fbuf, nfree)
    x.head = -1
    x.tail = -1
    _maybe_free(v, nd, rs, gs)
    return nfree


@njit(cache=True, _nrt=False)
def _release_cells(c, nd, gs, rs, cells, fbuf, nfree):
    """The nodes of the successor list from cell ``c`` have one dependency less (those free now appended to
    ``fbuf``), its cells given back; returns the new count.  (Out of :func:`_done`, which the loop inlines: a
    loop inlined there made numba's IR checks warn.)"""
    while c >= 0:
        nfree = _release_one(cells[2 * c], nd, fbuf, nfree)
        nxt = cells[2 * c + 1]
        _free_cell(gs, rs, cells, c)
        c = nxt
    return nfree


@njit(cache=True, _nrt=False)
def _started(v, nd, g, fbuf, nfree):
    """Node ``v`` starts (a trace's nodes have no start-successors): a send's message holds its slot."""
    if nd[v].kind == _SEND:
        nd[v].flag |= _F_MSG
    return nfree


@njit(cache=True, _nrt=False)
def _matched(m, v, nd, g):
    """Send ``m``'s message matched receive ``v``: the send's event reports it (``pdst``, where it is kept), and
    the message holds the send's slot no more (an eager send, done when it started, lets it go)."""
    rs, gs, out = g[0], g[1], g[3]
    pdst = out[2]
    if pdst.size and nd[m].flag & _F_LAST:
        pdst[nd[m].event] = nd[v].event
    nd[m].flag &= ~_F_MSG
    _maybe_free(m, nd, rs, gs)


@njit(cache=True, _nrt=False)
def _freed(nd, g, gen, fbuf, nfree):
    """A queued node of its rank's frontier (``fbuf[:nfree]``, queued): the rank's next chunk, made before that
    node can be done (the module docstring).  Returns ``_GROW`` when the pools must grow first (the ranks left
    to do are kept in ``gs``: the caller grows them and calls again with ``nfree`` 0), ``_LACKS`` at a message
    class the platform lacks, else 0."""
    rs, gs, cells, out = g
    ev, st, chunk, smax, lmax, ibuf, gl = gen
    rs = st[0]
    ng = gs[_G_NG]
    for q in range(nfree):
        w = fbuf[q]
        r = nd[w].rank
        if nd[w].trig == rs[r].epoch:
            seen = False
            for j in range(ng):
                seen = seen or gl[j] == r
            if not seen:
                gl[ng] = r
                ng += 1
    gs[_G_NG] = ng
    while gs[_G_NJ] < ng:
        stt, made = _generate(gl[gs[_G_NJ]], gs[_G_MADE], chunk, smax, lmax, ev, st, nd, gs, cells, ibuf, out)
        gs[_G_MADE] = made
        if stt != _OK:
            return _GROW if stt == _NEED else _LACKS
        gs[_G_MADE] = 0
        gs[_G_NJ] += 1
    gs[_G_NG] = 0
    gs[_G_NJ] = 0
    return 0


graph_hooks(SLOT, _done, _started, _matched, _freed)


@njit(cache=True, _nrt=False)
def _cells_to_grow(r, lmax, rs, ref_ptr):
    """The free cells to grow to before rank ``r``'s next step: what :func:`_generate` checks for it (``lmax``,
    the frontier's and the event's requests'), the requests' counted twice."""
    i = rs[r].gcur
    return lmax + rs[r].gnf + 2 * (ref_ptr[i + 1] - ref_ptr[i])


@njit(cache=True)
def _grow(smax, lneed, nd, cells, gs, ibuf, fbuf, sbuf, abuf, kbuf, qpool, bnext, fstk, cur, qs):
    """The shared pools with room for a step: slots doubled (the event queue and the buffers with them: a queued
    event holds a slot) where fewer than ``smax`` are free, cells where fewer than ``lneed``."""
    n = nd.shape[0]
    if gs[_G_SFREE] < smax:
        n2 = n + max(n - gs[_G_HS], smax, 1024)
        nd2 = np.empty(n2, dtype=SLOT)
        nd2[:n] = nd
        for s in range(n, n2):
            nd2[s].kind = 0
            nd2[s].head = s + 1
        nd2[n2 - 1].head = gs[_G_SHEAD]
        gs[_G_SHEAD] = n
        gs[_G_SFREE] += n2 - n
        nd = nd2
        if gs[_G_NI] >= 0:  # the first chunks are being made
            ibuf2 = np.empty(n2 + 2, dtype=np.int32)
            ibuf2[:gs[_G_NI]] = ibuf[:gs[_G_NI]]
            ibuf = ibuf2
        fbuf = np.empty(n2 + 2, dtype=np.int32)
        sbuf = np.empty(n2 + 2, dtype=np.int32)
        abuf = np.empty(n2 + 2, dtype=np.int32)
        kbuf = np.empty(n2 + 2, dtype=np.int8)
        nb0 = bnext.size
        nb1 = n2 // _BS + 2 * _NB + 2
        qpool2 = np.empty(2 * _BS * nb1, dtype=np.int64)
        qpool2[:qpool.size] = qpool
        bnext2 = np.full(nb1, -1, dtype=np.int64)
        bnext2[:nb0] = bnext
        fstk2 = np.empty(nb1, dtype=np.int64)
        nf = qs[_FREE]
        fstk2[:nf] = fstk[:nf]
        for b in range(nb1 - 1, nb0 - 1, -1):
            fstk2[nf] = b
            nf += 1
        qs[_FREE] = nf
        cur2 = np.empty(n2 + 2, dtype=np.int64)
        k = 0
        p = qs[_POS]
        while p != qs[_END]:
            cur2[k] = cur[p]
            k += 1
            p = p + 1 if p + 1 < cur.size else 0
        qs[_POS] = 0
        qs[_END] = k
        qpool, bnext, fstk, cur = qpool2, bnext2, fstk2, cur2
    if gs[_G_LFREE] < lneed:
        m = cells.size // 2
        m2 = m + max(m - gs[_G_HC], lneed, 1024)
        cells2 = np.empty(2 * m2, dtype=np.int32)
        cells2[:2 * m] = cells
        for c in range(m, m2):
            cells2[2 * c + 1] = c + 1
        cells2[2 * m2 - 1] = gs[_G_LHEAD]
        gs[_G_LHEAD] = m
        gs[_G_LFREE] += m2 - m
        cells = cells2
    return nd, cells, ibuf, fbuf, sbuf, abuf, kbuf, qpool, bnext, fstk, cur


@njit(cache=True, nogil=True)
def run_stream(ev, sock, host, par, gps, short_max, eager_max, chunk, matches, prog):
    """The LogGOPS event loop (:func:`~perfmod.replay.loggops_kernel.run_loggops`, for a trace: no start
    successors, each send's own size decides its protocol) on the operation graph of the trace whose
    :func:`stream_inputs` are ``ev`` (a calc's units in ps), made rank by rank
    as the loop reaches it (the module docstring).

    ``sock``, ``host``: each rank's socket and node (a message's mode); ``par``, ``gps``: o, g, L, a zero-byte
    send's cost (ps) and whether LogGOPSim's arithmetic wraps there (:data:`_P_Z`, :data:`_P_W`), and G (s per
    byte) per message class; ``short_max``, ``eager_max``: the protocols' limits in bytes; ``prog[0]``: counts
    the events the generator has made (it runs without the GIL, so that another thread can show it).  Returns
    ``(status, nexto, sdone, pdst, blocked, nodes, bad, wrapped)``: each rank's CPU time at the end; per event
    (in ``ev``'s last array, :data:`RESULT`, where the event's inputs were) the CPU time when its calc was done
    and the latest over the nodes it adds to its rank's frontier (ps, negative: none or never; once the loop
    has run through, or deadlocked), whether its send was done (of several, the last made) and, with ``matches``, the
    receive event it matched (-1: none; else an empty array, as the replay needs it only where the matching was
    left to the loop: 8 bytes per event); on a deadlock each rank's first event not finished (-1: none); the
    operations made; the message class the platform lacks (``STATUS_CLASS``; else -1); the zero-byte sends
    costed as one byte where LogGOPSim's arithmetic wraps.
    """
    rank_ptr, ref_ptr, rnd_optr = ev[0], ev[6], ev[16]
    nprocs = rank_ptr.size - 1
    n = ev[1].size
    maxops = 1
    for k in range(rnd_optr.size - 1):
        maxops = max(maxops, rnd_optr[k + 1] - rnd_optr[k])
    smax = maxops + 8  # slots a step makes at most (joins, a calc, its operations)
    lmax = 2 * maxops + 16  # cells a step takes at most, but for the frontier's and the requests'
    rs = np.empty(nprocs, dtype=RANK)
    for r in range(nprocs):
        x = rs[r]
        x.gcur = rank_ptr[r]
        x.gq = -1
        x.grd = 0
        x.frh = -1
        x.frt = -1
        x.gnf = 0
        x.epoch = 0
        x.cand = -1
        x.sock = sock[r]
        x.host = host[r]
    res = ev[19]
    sdone = np.zeros(n, dtype=np.bool_)
    pdst = np.full(n if matches else 0, -1, dtype=np.int64)
    out = (res, sdone, pdst)
    st = (rs, par, gps, short_max, eager_max, prog)
    # the slots: each rank's home (its free ones chained from its record's sfree), then the shared pool (grown as
    # needed); the cells likewise
    hsh = _HOME_SHIFT_ONE if n < 2 * nprocs and maxops <= 1 else _HOME_SHIFT
    home = 1 << hsh
    hs, hc = nprocs * home, nprocs * 2 * home
    # where ranks have several events (a halo's requests, a collective's rounds), their live nodes outgrow a home:
    # the shared pool starts as large as the homes from 10 events a rank, where doubling it from 1,024 slots had
    # copied the homes along at every step (Jacobi2D 131,072 x 2: peak 238 -> 185 bytes per event, 16,384 x 10:
    # 94 -> 83; 2026-11-28, tracemalloc)
    per = n // max(nprocs, 1)
    cap = hs + max(1024, 2 * smax, hs * min(per, 10) // 10 if per >= 2 else 0)
    nd = np.empty(cap, dtype=SLOT)
    gs = np.zeros(_G_WORDS, dtype=np.int64)
    gs[_G_HSH] = hsh
    for s in range(cap):
        nd[s].kind = 0
        nd[s].head = s + 1 if s + 1 < cap and (s >= hs or (s + 1) & (home - 1)) else -1
    for r in range(nprocs):
        rs[r].sfree = r * home
    lcap = hc + max(1024, 2 * lmax)
    cells = np.empty(2 * lcap, dtype=np.int32)
    for c in range(lcap):
        cells[2 * c + 1] = c + 1 if c + 1 < lcap and (c >= hc or (c + 1) & (2 * home - 1)) else -1
    for r in range(nprocs):
        rs[r].cfree = r * 2 * home
    gs[_G_SFREE] = cap - hs
    gs[_G_SHEAD] = hs
    gs[_G_LFREE] = lcap - hc
    gs[_G_LHEAD] = hc
    gs[_G_BAD] = -1
    gs[_G_HS] = hs
    gs[_G_HC] = hc
    ibuf = np.empty(cap + 2, dtype=np.int32)
    fbuf = np.empty(cap + 2, dtype=np.int32)
    sbuf = np.empty(cap + 2, dtype=np.int32)
    abuf = np.empty(cap + 2, dtype=np.int32)
    kbuf = np.empty(cap + 2, dtype=np.int8)
    nblk = cap // _BS + 2 * _NB + 2
    qpool = np.empty(2 * _BS * nblk, dtype=np.int64)
    bnext = np.full(nblk, -1, dtype=np.int64)
    fstk = np.arange(nblk)[::-1].copy()
    bhead = np.full(_NB, -1, dtype=np.int64)
    btail = np.full(_NB, -1, dtype=np.int64)
    bfill = np.zeros(_NB, dtype=np.int64)
    bmin = np.full(_NB, _FAR, dtype=np.int64)
    cur = np.empty(cap + 2, dtype=np.int64)
    qs = np.zeros(6, dtype=np.int64)
    qs[_FREE] = nblk
    stk = np.empty((3, 128), dtype=np.int64)
    stats = np.zeros(1, dtype=np.int64)
    nexto = np.zeros(nprocs, dtype=np.int64)
    nextgs = np.zeros(nprocs, dtype=np.int64)
    nextgr = np.zeros(nprocs, dtype=np.int64)
    rq_head = np.full(nprocs, -1, dtype=np.int32)
    rq_tail = np.full(nprocs, -1, dtype=np.int32)
    uq_head = np.full(nprocs, -1, dtype=np.int32)
    uq_tail = np.full(nprocs, -1, dtype=np.int32)
    fhost = np.empty(4, dtype=np.int64)
    blocked = np.full(nprocs, -1, dtype=np.int64)
    aqtime = 0
    # each rank's first chunk, and the nodes in it that require nothing (recorded in ibuf as they are made)
    # queued as the full graph's init: per rank, in the rank's order, sorted by type, at time 0
    for r in range(nprocs):
        made = 0
        gs[_G_NI] = 0
        while True:
            stt, made = _generate(r, made, chunk, smax, lmax, ev, st, nd, gs, cells, ibuf, out)
            if stt != _NEED:
                break
            nd, cells, ibuf, fbuf, sbuf, abuf, kbuf, qpool, bnext, fstk, cur = _grow(
                smax, _cells_to_grow(r, lmax, rs, ref_ptr), nd, cells, gs, ibuf, fbuf, sbuf, abuf, kbuf,
                qpool, bnext, fstk, cur, qs)
        if stt == _BAD:
            return STATUS_CLASS, nexto, sdone, pdst, blocked, gs[_G_NODES], gs[_G_BAD], gs[_G_ZW]
        m = gs[_G_NI]
        _queue(nd, ibuf, m, abuf, kbuf, 0, 0, aqtime, stats, stk, cur, qpool, bnext, bhead, btail, bfill, bmin, fstk,
               qs)
        aqtime += m
    gs[_G_NI] = -1
    ibuf = np.empty(0, dtype=np.int32)  # no more init nodes
    gl = np.empty(4, dtype=np.int64)  # the ranks whose next chunk an event triggered (of at most 4 it frees)
    while True:
        hook, gen = (rs, gs, cells, out), (ev, st, chunk, smax, lmax, ibuf, gl)  # the hooks' state
        code, aqtime = _run(nd, hook, gen, _MSG, False, par, nexto, nextgs, nextgr, rq_head, rq_tail, uq_head, uq_tail,
                            fbuf, sbuf, abuf, kbuf, fhost, aqtime, stats, stk, cur, qpool, bnext, bhead, btail, bfill,
                            bmin, fstk, qs)
        while code == _GROW:  # grow the pools (new arrays: the hooks' state again), then the triggered ranks go on
            r = gl[gs[_G_NJ]]
            nd, cells, ibuf, fbuf, sbuf, abuf, kbuf, qpool, bnext, fstk, cur = _grow(
                smax, _cells_to_grow(r, lmax, rs, ref_ptr), nd, cells, gs, ibuf, fbuf, sbuf, abuf, kbuf,
                qpool, bnext, fstk, cur, qs)
            hook, gen = (rs, gs, cells, out), (ev, st, chunk, smax, lmax, ibuf, gl)
            code = _freed(nd, hook, gen, fbuf, 0)
        if code == _LACKS:
            return STATUS_CLASS, nexto, sdone, pdst, blocked, gs[_G_NODES], gs[_G_BAD], gs[_G_ZW]
        if qs[_LIVE] == 0:
            break
    if qs[_EARLY] > 0:
        return STATUS_EARLY, nexto, sdone, pdst, blocked, gs[_G_NODES], -1, gs[_G_ZW]
    # each rank's first node not done is an operation (a join waits for an earlier one), of its earliest event
    status = STATUS_OK
    for s in range(nd.shape[0]):
        k = nd[s].kind
        if 0 < k < _DONE:
            r = nd[s].rank
            e = nd[s].event
            if e >= 0 and (blocked[r] < 0 or e < blocked[r]):
                blocked[r] = e
            status = STATUS_DEADLOCK
    for r in range(nprocs):
        if rs[r].gcur < rank_ptr[r + 1]:
            status = STATUS_DEADLOCK
            if blocked[r] < 0:
                blocked[r] = rs[r].gcur
            for i in range(rs[r].gcur + (rs[r].gq >= 0), rank_ptr[r + 1]):  # never started: no times
                res[i].cend = -1
                res[i].emax = -1
    return status, nexto, sdone, pdst, blocked, gs[_G_NODES], -1, gs[_G_ZW]



@njit(cache=True)
def _picoseconds(compute, out):
    """``out[i] = rint(compute[i] * 1e12)``: seconds to whole picoseconds, as NumPy's ``rint`` and ``astype``."""
    for i in range(compute.size):
        out[i] = np.int64(np.rint(compute[i] * 1e12))


def stream_inputs(trace, reqs, compute: np.ndarray) -> tuple:
    """:func:`run_stream`'s ``ev`` for ``trace`` with ``compute`` (s before each event): the per-event fields of
    :func:`~perfmod.trace.formats.goal_graph.build_inputs` written straight into :data:`EVENT` records (no
    per-field array), the trace's own arrays and the collectives' templates as they are."""
    from perfmod.trace.formats.goal_graph import _members, collective_inputs, event_fields

    ck, mem, mem_ptr = _members(trace)
    evr = np.empty(len(trace), dtype=EVENT)
    event_fields(trace, ck, mem, mem_ptr, evr["cls"], evr["kind"], evr["sync"], evr["peer"], evr["tag"])
    evr["ck"] = ck
    del ck
    _picoseconds(np.asarray(compute, dtype=np.float64), evr["units"])
    raux, part_ptr, part_key, part_size, part_a2av, key_rptr, rnd_optr, op_kind, op_x, _ = collective_inputs(
        trace, evr["ck"], mem, mem_ptr)
    # an operation's kind and member index, narrower: 11 of the 16 bytes of each template operation
    op_x, op_kind = op_x.astype(np.int32), op_kind.astype(np.int8)
    return (trace.rank_ptr, evr, trace.nbytes, trace.comm, mem, mem_ptr, reqs.ref_ptr, reqs.created, trace.aux,
            trace.aux_ptr, raux, part_ptr, part_key, part_size, part_a2av, key_rptr, rnd_optr, op_kind, op_x,
            evr.view(RESULT))
