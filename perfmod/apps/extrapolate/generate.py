"""Build the trace of an SPMD stencil program at a rank count nobody traced, from a template trace.

The *template* is the largest training trace (:mod:`.training`).  A target
rank at grid position ``x`` (grid ``G``) takes its events from the template
ranks of the same *class* along every axis: ``lo`` (``x = 0``), ``hi`` (``x =
G - 1``), ``mid``, or ``both`` (``G = 1``).  Non-periodic grids:

- ``lo`` -> template position 0, ``hi`` -> the template's last position,
  ``mid`` -> position 1 when the template has interior ranks along that axis;
  when it has none (extent 2), a ``mid`` rank is composed message by message:
  messages with offset >= 0 along the axis come from the template's ``lo``
  rank, those with offset < 0 from its ``hi`` rank (so a message across the
  axis's faces carries the size of a rank that is not on the upper
  boundary);
- ``both`` takes the template's last position (the rank is the axis's upper
  boundary as well as its lower one) and keeps only the messages with offset
  0 along the axis.

Periodic grids have no boundary: every rank takes template rank 0's events.
A periodic axis of extent 2 in the template records one neighbour for both
directions; the direction of each of its blocks is taken, in order, from
the blocks of an axis the template resolves (extent >= 3), sends one way and
receives the other (the axes are assumed to exchange alike).

Every message keeps its grid offset, call, tag and size; the peer is the
target rank at ``x + offset``.  Within a block, events are
ordered by the template's call order, then by peer rank; requests are
renumbered per block and each wait completes the requests created since the
previous one (the pattern :mod:`.training` checks).  Computation gaps are the
template's (see :func:`generate` for which template rank's), scaled per call
site by a compute model of the rank count
(:func:`perfmod.models.compute.fit_compute_model`) fitted on the training
traces that share the template's skeleton; by default each rank's level
at every call site and its start-up gap are then set by the per-rank
imbalance model (:mod:`.imbalance`).  Ranks are generated in chunks into
preallocated columns, so the peak memory is the result plus one chunk (and
the per-rank levels, a few floats per rank and call site).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfmod.apps.extrapolate.imbalance import Imbalance, draw_levels
from perfmod.apps.extrapolate.training import ExtrapolationError, Training, grid_of
from perfmod.core.rows import unique_rows
from perfmod.trace.core import NO_PEER, NO_REQUEST, NONBLOCKING, ROOTED, Call, Trace, code_set

__all__ = ["Template", "build_template", "generate", "period_of", "sharing", "site_models"]

_NB = code_set(NONBLOCKING)
_SENDS = code_set({Call.SEND, Call.ISEND, Call.SSEND, Call.ISSEND})
_ROOTED = code_set(ROOTED)
LO, MID, HI, BOTH = 0, 1, 2, 3


def period_of(skeleton: np.ndarray) -> tuple[int, int]:
    """``(start, period)`` of a skeleton: the shortest period whose repetition covers most of it, and its first index.

    ``period`` 0 when nothing repeats.
    """
    s = np.asarray(skeleton)
    n = s.size
    for p in range(1, n // 2 + 1):
        same = s[p:] == s[:-p]
        if same.mean() < 0.9:
            continue
        run = np.flatnonzero(~same)
        # first index from which at least one full period repeats
        start = 0
        while start + 2 * p <= n and not same[start:start + p].all():
            start += 1
        if start + 2 * p <= n:
            return start, p
        del run
    return 0, 0


@dataclass
class Template:
    """The template trace, with what generation needs."""

    tr: Training
    ordering: str
    periodic: bool
    start: int
    period: int
    site: np.ndarray  # per event: call-site id
    sign: dict[int, np.ndarray]  # ambiguous periodic axis -> per-event resolved offset along it (p2p events)
    scale: dict[int, float]  # site -> compute scale factor (filled by site_models)
    site_fits: dict[int, dict]  # site -> description of the compute model

    @property
    def grid(self) -> tuple[int, int, int]:
        return self.tr.grid  # type: ignore[return-value]


def _sites(tr: Training, start: int, period: int) -> np.ndarray:
    """Call site of every event: its block's phase in the period (the prefix and the first period, start-up
    included, are sites of their own), times 2, plus 1 for sends and receives."""
    b = tr.block
    first = start + period
    phase = b if period == 0 else np.where(b < first, b, first + (b - start) % period)
    return phase * 2 + tr.is_p2p.astype(np.int64)


def _resolve_signs(tr: Training, periodic: bool) -> dict[int, np.ndarray]:
    """Directions along periodic axes of extent 2 (see the module docstring), as per-event offsets."""
    if not periodic:
        return {}
    g = np.asarray(tr.grid)
    amb = [d for d in range(3) if g[d] == 2]
    sure = [d for d in range(3) if g[d] >= 3]
    if not amb:
        return {}
    t = tr.trace
    sl = t.rank_events(0)
    ev = np.arange(sl.start, sl.stop)
    p2p = ev[tr.is_p2p[ev]]
    off = tr.offset[p2p]
    blocks = tr.block[p2p]
    out: dict[int, np.ndarray] = {}
    if not sure:
        return {d: np.zeros(0) for d in amb}  # unresolved: generation refuses targets that need the direction
    a = sure[0]

    def block_signs(axis: int) -> tuple[np.ndarray, np.ndarray]:
        on = off[:, axis] != 0
        ub = np.unique(blocks[on])
        signs = np.zeros(ub.size, np.int64)
        for k, bk in enumerate(ub):
            m = on & (blocks == bk) & np.isin(t.call[p2p], _SENDS)
            signs[k] = int(np.sign(off[m, axis][0])) if m.any() else 0
        return ub, signs

    _, ref = block_signs(a)
    for d in amb:
        ub, _ = block_signs(d)
        if ub.size != ref.size:
            out[d] = np.zeros(0)
            continue
        full = np.zeros(len(t), np.int64)
        is_send = np.isin(t.call, _SENDS)
        for bk, s in zip(ub, ref, strict=True):
            m = tr.is_p2p & (tr.block == bk) & (tr.offset[:, d] != 0)
            full[m] = np.where(is_send[m], s, -s)
        out[d] = full
    return out


def build_template(tr: Training, ordering: str, periodic: bool) -> Template:
    start, period = period_of(tr.skeleton.astype(np.int64) * 1_000_003 + tr.skel_nbytes)
    return Template(tr, ordering, periodic, start, period, _sites(tr, start, period), _resolve_signs(tr, periodic),
                    {}, {})


def sharing(tpl: Template, trainings: Sequence[Training]) -> dict[int, tuple[Training, np.ndarray]]:
    """The training traces whose call sequence is the template's, by rank count, with the call site of each of
    their events."""
    out = {x.nprocs: (x, _sites(x, tpl.start, tpl.period)) for x in trainings if x is not tpl.tr
           and x.skeleton.size == tpl.tr.skeleton.size and np.array_equal(x.skeleton, tpl.tr.skeleton)}
    out[tpl.tr.nprocs] = (tpl.tr, tpl.site)
    return out


def site_models(tpl: Template, trainings: Sequence[Training], nprocs: int, method: str = "mean") -> None:
    """Per call site, a compute model of the mean gap against the rank count.

    ``tpl.scale[site]`` = model(target) / model(template).
    """
    from perfmod.models.compute import fit_compute_model

    same = sharing(tpl, trainings)
    sites = np.unique(tpl.site)
    means = {}
    for x, s in same.values():
        tot = np.bincount(np.searchsorted(sites, s), weights=x.trace.compute, minlength=sites.size)
        cnt = np.bincount(np.searchsorted(sites, s), minlength=sites.size)
        means[x.nprocs] = tot / np.maximum(cnt, 1)
    for k, site in enumerate(sites.tolist()):
        ys = np.array([means[p][k] for p in sorted(means)])
        ps = np.array(sorted(means), dtype=float)
        base = means[tpl.tr.nprocs][k]
        if ps.size < 2 or base <= 0 or np.any(ys <= 0):
            tpl.scale[site] = 1.0
            tpl.site_fits[site] = {"method": "template", "points": int(ps.size)}
            continue
        frame = pd.DataFrame({"nprocs": ps, "time": ys})
        try:
            m = fit_compute_model(frame, "time", ["nprocs"], method=method)
            pred = m.predict(pd.DataFrame({"nprocs": [float(nprocs), float(tpl.tr.nprocs)]}))
            v = np.asarray(pred["predicted"].values, dtype=float)
            ratio = float(v[0] / v[1]) if v[1] > 0 and v[0] > 0 else 1.0
        except Exception as err:  # noqa: BLE001 - a site whose model cannot be fitted keeps the template's gaps
            tpl.scale[site] = 1.0
            tpl.site_fits[site] = {"method": "template", "why": f"{type(err).__name__}: {err}"}
            continue
        tpl.scale[site] = ratio
        tpl.site_fits[site] = {"method": method, "points": int(ps.size), "ratio": ratio,
                               "spread": float(np.std(ys) / np.mean(ys))}


def _classes(coords: np.ndarray, grid: Sequence[int]) -> np.ndarray:
    g = np.asarray(grid)
    c = np.where(coords == 0, LO, np.where(coords == g - 1, HI, MID))
    return np.where(g == 1, BOTH, c)


@dataclass
class _Program:
    events: np.ndarray  # template event indices
    offset: np.ndarray  # (n, 3)
    primary: np.ndarray | None = None  # (n,) bool: from the first contributing template rank (None: all)
    rank: int = 0  # the first contributing template rank (whose gaps the program keeps)


def _program(tpl: Template, cls: tuple[int, int, int], target_grid: Sequence[int]) -> _Program:
    """Template events (and their offsets) of a target rank of class ``cls``."""
    tr = tpl.tr
    g = np.asarray(tpl.grid)
    gt = np.asarray(target_grid)
    t = tr.trace
    for d in range(3):
        if g[d] == 1 and gt[d] > 1:
            raise ExtrapolationError(f"{tr.name}: the training traces never split axis {'xyz'[d]} of the process grid "
                                     f"(extent 1) but the target's grid {tuple(gt.tolist())} does; no message along "
                                     "it can be inferred")
    if tpl.periodic:
        for d in range(3):
            if g[d] > 1 and gt[d] == 1:
                raise ExtrapolationError(f"{tr.name}: periodic axis {'xyz'[d]} has extent 1 in the target grid "
                                         f"{tuple(gt.tolist())}: its messages would go to the rank itself and the "
                                         "calls around them change; use a target with every axis split")
            if g[d] == 2 and gt[d] >= 3 and tpl.sign.get(d, np.zeros(0)).size == 0:
                raise ExtrapolationError(f"{tr.name}: periodic axis {'xyz'[d]} has extent 2 in every training trace "
                                         "and no other axis shows the direction of its messages")
        sl = t.rank_events(0)
        ev = np.arange(sl.start, sl.stop)
        off = tr.offset[ev].copy()
        for d, s in tpl.sign.items():
            if s.size:
                off[:, d] = np.where(tr.is_p2p[ev], np.where(off[:, d] != 0, s[ev], 0), 0)
        return _Program(ev, off, rank=0)
    choices = []
    for d in range(3):
        c = cls[d]
        if c == BOTH:  # the only rank along the axis is its upper boundary too: the template's last position
            choices.append([(g[d] - 1, "keep0")])
        elif c == LO:
            choices.append([(0, "all")])
        elif c == HI:
            choices.append([(g[d] - 1, "all")])
        elif g[d] >= 3:
            choices.append([(1, "all")])
        else:
            choices.append([(0, "nonneg"), (g[d] - 1, "neg")])
    coords = tr.coords
    lookup = np.full(tuple(g.tolist()), -1, np.int64)
    lookup[tuple(coords.T)] = np.arange(tr.nprocs)
    parts, offs, prim = [], [], []
    first = True
    for cx in choices[0]:
        for cy in choices[1]:
            for cz in choices[2]:
                r = int(lookup[cx[0], cy[0], cz[0]])
                sl = t.rank_events(r)
                ev = np.arange(sl.start, sl.stop)
                off = tr.offset[ev]
                keep = tr.is_p2p[ev].copy()
                for d, (_, rule) in enumerate((cx, cy, cz)):
                    if rule == "keep0":
                        keep &= off[:, d] == 0
                    elif rule == "nonneg":
                        keep &= off[:, d] >= 0
                    elif rule == "neg":
                        keep &= off[:, d] < 0
                prim.append(np.full(int(keep.sum() + (~tr.is_p2p[ev]).sum() * first), first))
                if first:
                    keep |= ~tr.is_p2p[ev]
                    first = False
                parts.append(ev[keep])
                offs.append(off[keep])
    first_rank = int(lookup[choices[0][0][0], choices[1][0][0], choices[2][0][0]])
    return _Program(np.concatenate(parts), np.concatenate(offs), np.concatenate(prim), rank=first_rank)


def _layout(tpl: Template, prog: _Program, cut: int) -> dict[str, np.ndarray]:
    """Per-program arrays, the events of blocks >= ``cut`` dropped; ``order`` key without the peer."""
    tr = tpl.tr
    t = tr.trace
    ev = prog.events
    keep = tr.block[ev] < cut
    compute = t.compute[ev].copy()
    if prog.primary is not None and not prog.primary.all():
        # a composed rank's gaps are its first template rank's: the others' messages get that rank's median
        # gap of the same call site, so a gap that rank spent once (start-up) is not spent twice
        site = tpl.site[ev]
        for s in np.unique(site[~prog.primary]).tolist():
            ref = prog.primary & (site == s)
            compute[~prog.primary & (site == s)] = float(np.median(compute[ref])) if ref.any() else 0.0
    ev, off, compute = ev[keep], prog.offset[keep], compute[keep]
    call = t.call[ev]
    p2p = tr.is_p2p[ev]
    block = tr.block[ev]
    # call order within a block: the call code's first template position in its block
    kind = np.zeros(ev.size, np.int64)
    if ev.size:
        ukey, inv = np.unique(block * 256 + call.astype(np.int64), return_inverse=True)
        firstpos = np.full(ukey.size, np.iinfo(np.int64).max)
        np.minimum.at(firstpos, inv, t.seq[ev].astype(np.int64))
        kind = firstpos[inv]
    scale = np.array([tpl.scale.get(int(s), 1.0) for s in tpl.site[ev]]) if ev.size else np.zeros(0)
    return {"ev": ev, "off": off, "call": call, "p2p": p2p, "block": block, "kind": kind,
            "compute": compute * scale}


def _fill_requests(call_sorted: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Requests of nonblocking calls (2, 3, ... since the previous wait) and each wait's completed list."""
    n = call_sorted.size
    req = np.full(n, NO_REQUEST, np.int64)
    lists: list[np.ndarray] = [np.zeros(0, np.int64)] * n
    nxt = 2
    pending: list[int] = []
    for i, c in enumerate(call_sorted.tolist()):
        if c in (Call.ISEND, Call.IRECV, Call.ISSEND):
            req[i] = nxt
            pending.append(nxt)
            nxt += 1
        elif c == Call.WAITALL:
            lists[i] = np.array(pending, np.int64)
            pending, nxt = [], 2
        elif c == Call.WAIT:
            req[i] = pending[0] if pending else NO_REQUEST
            pending, nxt = pending[1:], (2 if len(pending) <= 1 else nxt)
    return req, lists


def generate(tpl: Template, nprocs: int, params: Mapping[str, float], iterations: int | None = None,
             chunk_ranks: int = 8192, source: str = "", gaps: str = "model", imbalance: Imbalance | None = None,
             seed: int = 0) -> Trace:
    """The trace at ``nprocs`` ranks and ``params`` (module docstring); ``iterations`` periods of the skeleton.

    ``gaps``: the computation before each skeleton call (wait, collective)
    and before each block's first send or receive is, for target rank ``t``,
    that of its class's template rank with the rank's own level drawn from
    the fitted per-rank imbalance and start-up skew (``"model"``, needs
    ``imbalance``: :mod:`.imbalance`, draws seeded by ``seed``), that of
    template rank ``t * P_template // P_target`` (``"ranks"``: each rank
    keeps a recorded rank's own imbalance, and the drift of the gaps along
    the rank numbers is kept in relative position), or that of its class's
    template rank (``"class"``: neighbours of one class then compute in
    lockstep).  ``trace.meta["imbalance"]`` records the draw kept
    (``"model"``).
    """
    if gaps not in ("model", "ranks", "class"):
        raise ValueError(f"gaps must be 'model', 'ranks' or 'class', got {gaps!r}")
    if gaps == "model" and imbalance is None:
        raise ValueError("gaps='model' needs the fitted imbalance (fit_imbalance)")
    coords, gt = grid_of(tpl.ordering, nprocs, params)
    tr = tpl.tr
    n_skel = tr.skeleton.size
    t = tr.trace
    skel_gap = None
    if gaps != "class":
        scale = np.array([tpl.scale.get(int(s), 1.0) for s in tpl.site[~tr.is_p2p]])
        skel_gap = (t.compute[~tr.is_p2p] * scale).reshape(tr.nprocs, n_skel)
        draw = (np.arange(nprocs, dtype=np.int64) * tr.nprocs) // nprocs
        # the gap before a block's first send or receive (the computation after the previous call) too
        first_gap = np.zeros((tr.nprocs, n_skel + 1))
        p2p_ev = np.flatnonzero(tr.is_p2p)
        if p2p_ev.size:
            key = t.rank[p2p_ev].astype(np.int64) * (n_skel + 1) + tr.block[p2p_ev]
            first = np.r_[True, key[1:] != key[:-1]]
            sc = np.array([tpl.scale.get(int(x), 1.0) for x in tpl.site[p2p_ev[first]]])
            first_gap[t.rank[p2p_ev[first]], tr.block[p2p_ev[first]]] = t.compute[p2p_ev[first]] * sc
    if iterations is None or tpl.period == 0:
        cut = n_skel + 1
    else:
        cut = min(tpl.start + int(iterations) * tpl.period, n_skel + 1)
    cls = _classes(coords, gt)
    cls_key = cls[:, 0] * 16 + cls[:, 1] * 4 + cls[:, 2]
    lookup = np.full(gt, -1, np.int64)
    lookup[tuple(coords.T)] = np.arange(nprocs)
    gt_a = np.asarray(gt)
    layouts: dict[int, dict] = {}
    class_rank: dict[int, int] = {}
    for key in np.unique(cls_key).tolist():
        c = (key // 16, (key // 4) % 4, key % 4)
        prog = _program(tpl, c, gt)
        class_rank[key] = prog.rank
        lay = _layout(tpl, prog, cut)
        # order by (block, p2p before skeleton, kind); the peer sorts within equal keys at instantiation
        o = np.lexsort((lay["kind"], ~lay["p2p"], lay["block"]))
        lay = {k: v[o] for k, v in lay.items()}
        lay["req"], lists = _fill_requests(lay["call"])
        lay["aux_len"] = np.array([x.size for x in lists], np.int64)
        lay["aux"] = np.concatenate(lists) if lists else np.zeros(0, np.int64)
        # group key of each position: positions with equal (block, p2p, kind) may be permuted by peer
        g = lay["block"] * 4 + (~lay["p2p"]) * 2
        grp = np.r_[0, np.cumsum((np.diff(g) != 0) | (np.diff(lay["kind"]) != 0))] if g.size else g
        lay["grp"] = grp
        layouts[key] = lay
    n_ev = np.zeros(nprocs, np.int64)
    n_aux = np.zeros(nprocs, np.int64)
    for key, lay in layouts.items():
        m = cls_key == key
        n_ev[m] = lay["call"].size
        n_aux[m] = lay["aux"].size
    ptr = np.concatenate([[0], np.cumsum(n_ev)])
    aptr = np.concatenate([[0], np.cumsum(n_aux)])
    total = int(ptr[-1])
    _check_memory(total, int(aptr[-1]), nprocs)
    delta = start = None
    drawn = None
    if gaps == "model":
        draw = np.zeros(nprocs, np.int64)
        for key, r in class_rank.items():
            draw[cls_key == key] = r
        pairs = _pairs(tpl, layouts, cls_key, coords, lookup, gt_a)
        nb = np.bincount(pairs[0], minlength=nprocs).astype(np.float64)
        delta, start, drawn = draw_levels(imbalance, draw, nb, pairs, nprocs, seed=seed)
    cols = {"rank": np.empty(total, np.int32), "seq": np.empty(total, np.int32), "call": np.empty(total, np.uint8),
            "peer": np.empty(total, np.int32), "nbytes": np.empty(total, np.int64), "tag": np.empty(total, np.int32),
            "comm": np.zeros(total, np.int32), "request": np.empty(total, np.int64),
            "compute": np.empty(total, np.float64)}
    aux_len = np.empty(total, np.int64)
    aux = np.empty(int(aptr[-1]), np.int64)
    for a in range(0, nprocs, chunk_ranks):
        b = min(a + chunk_ranks, nprocs)
        for key, lay in layouts.items():
            ranks = a + np.flatnonzero(cls_key[a:b] == key)
            if not ranks.size:
                continue
            ne = lay["call"].size
            x = coords[ranks]
            p2p = lay["p2p"]
            tgt = x[:, None, :] + lay["off"][None, :, :]
            if tpl.periodic:
                tgt %= gt_a
            ok = np.all((tgt >= 0) & (tgt < gt_a), axis=2)
            if np.any(~ok & p2p[None, :]):
                raise ExtrapolationError(f"{tr.name}: a generated message leaves the target grid {gt} (internal)")
            peer = np.where(p2p[None, :], lookup[tuple(np.moveaxis(np.where(ok[..., None], tgt, 0), 2, 0))],
                            t.peer[lay["ev"]][None, :])
            # within each group of equal (block, p2p, kind): sort by peer
            order = np.lexsort((np.where(p2p[None, :], peer, 0), np.broadcast_to(lay["grp"], peer.shape)), axis=1) \
                if ne else np.zeros((ranks.size, 0), np.int64)
            peer = np.take_along_axis(peer, order, 1)
            src = lay["ev"][order]
            comp = np.broadcast_to(lay["compute"], order.shape)  # gaps stay with positions, not with peers
            idx = (ptr[ranks][:, None] + np.arange(ne)[None, :]).ravel()
            cols["rank"][idx] = np.repeat(ranks, ne)
            cols["seq"][idx] = np.tile(np.arange(ne), ranks.size)
            cols["call"][idx] = np.tile(lay["call"], ranks.size)
            cols["peer"][idx] = peer.ravel()
            cols["nbytes"][idx] = t.nbytes[src].ravel()
            cols["tag"][idx] = t.tag[src].ravel()
            cols["request"][idx] = np.tile(lay["req"], ranks.size)
            if skel_gap is not None:
                comp = comp.copy()
                sp = np.flatnonzero(~p2p)
                comp[:, sp] = skel_gap[draw[ranks][:, None], lay["block"][sp][None, :]]
                fp = np.flatnonzero(p2p & np.r_[True, lay["block"][1:] != lay["block"][:-1]])
                comp[:, fp] = first_gap[draw[ranks][:, None], lay["block"][fp][None, :]]
                if delta is not None:
                    pos = np.concatenate([sp, fp])
                    pos = pos[pos > 1]  # not MPI_Init, nor the start-up gap after it (below)
                    k = np.searchsorted(imbalance.sites, tpl.site[lay["ev"][pos]])
                    known = (k < imbalance.sites.size) & (imbalance.sites[np.minimum(k, imbalance.sites.size - 1)]
                                                          == tpl.site[lay["ev"][pos]])
                    comp[:, pos[known]] += delta[ranks][:, k[known]]
                    if ne > 1:
                        comp[:, 1] += start[ranks]
                    np.maximum(comp, 0.0, out=comp)
            cols["compute"][idx] = comp.ravel()
            aux_len[idx] = np.tile(lay["aux_len"], ranks.size)
            if lay["aux"].size:
                aidx = (aptr[ranks][:, None] + np.arange(lay["aux"].size)[None, :]).ravel()
                aux[aidx] = np.tile(lay["aux"], ranks.size)
    rooted = np.isin(cols["call"], _ROOTED)
    cols["peer"][~np.isin(cols["call"], code_set({Call.SEND, Call.ISEND, Call.SSEND, Call.ISSEND, Call.RECV,
                                                  Call.IRECV})) & ~rooted] = NO_PEER
    aux_ptr = np.concatenate([[0], np.cumsum(aux_len)])
    meta = {} if drawn is None else {"imbalance": {"draw": drawn, "seed": seed, **imbalance.describe(nprocs)}}
    return Trace(nprocs, cols["rank"], cols["seq"], cols["call"], cols["peer"], cols["nbytes"], cols["tag"],
                 cols["comm"], cols["request"], cols["compute"], aux_ptr, aux, source=source, meta=meta)


def _pairs(tpl: Template, layouts: Mapping[int, dict], cls_key: np.ndarray, coords: np.ndarray,
           lookup: np.ndarray, gt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sender, receiver) of every distinct message pair of the target (from each class's send offsets)."""
    snd, rcv = [], []
    for key, lay in layouts.items():
        m = np.isin(lay["call"], _SENDS)
        if not m.any():
            continue
        off = unique_rows(lay["off"][m])[0]
        ranks = np.flatnonzero(cls_key == key)
        tgt = coords[ranks][:, None, :] + off[None, :, :]
        if tpl.periodic:
            tgt %= gt
        ok = np.all((tgt >= 0) & (tgt < gt), axis=2)
        peer = lookup[tuple(np.moveaxis(np.where(ok[..., None], tgt, 0), 2, 0))]
        snd.append(np.broadcast_to(ranks[:, None], peer.shape)[ok])
        rcv.append(peer[ok])
    if not snd:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    p = int(cls_key.size)
    u = np.unique(np.concatenate(snd).astype(np.int64) * p + np.concatenate(rcv))
    return u // p, u % p


def _check_memory(events: int, aux: int, nprocs: int) -> None:
    need = events * 64 + aux * 8  # 53 bytes of columns per event, and the chunk being built
    try:
        with open("/proc/meminfo") as f:
            avail = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable"))
    except (OSError, StopIteration):
        return
    if need > 0.6 * avail:
        raise ExtrapolationError(f"the trace of {nprocs} ranks would hold {events:,} events ({need / 2**30:.1f} GiB), "
                                 f"more than this machine's available memory allows ({avail / 2**30:.1f} GiB): "
                                 "give iterations= to keep fewer repetitions of the program's period")
