"""Synthetic traces of the proxies' communication at any rank count (paper 000 §4.2, Listing 1).

Paper: Choi et al., ICS 2020 (paper 000).  The paper replays DUMPI
traces of Jacobi2D, MiniFE and MiniMD runs (up to 1,536 ranks); here the
same communication is generated from the decompositions of
:mod:`perfmod.apps` (message lists checked there against the
stored DUMPI traces), so the replay can run at the paper's scales, and far
beyond, without running the proxies.

One iteration per rank, by application (each module declares its phases and
allreduces, :class:`~perfmod.apps.application.Application`; an application
registered with :func:`~perfmod.apps.registry.register_application` is
generated the same way):

``"jacobi2d"``
    Listing 1: ``MPI_Irecv`` from every neighbour, ``MPI_Isend`` to every
    neighbour, ``MPI_Waitall``; then ``allreduces`` (default 1) 8-byte
    ``MPI_Allreduce`` (the residual).
``"minife"``
    The CG iteration: the matrix-vector halo exchange as in Listing 1
    (miniFE's ``exchange_externals``: receives posted, sends, wait for all),
    then two dot products, i.e. 2 allreduces of 8 B by default.
``"minimd"``
    The forward exchange of positions and the reverse exchange of forces
    (``reverse=True``), each as miniMD's six sequential swaps:
    ``MPI_Irecv``, ``MPI_Send``, ``MPI_Wait`` per swap (a round per swap;
    the swap of a message is its position among its sender's messages);
    no allreduce by default (thermodynamic output is not every step).
``"allreduce"``
    ``allreduces`` (default 1) allreduces of ``allreduce_bytes`` per iteration.

Receives are posted in the order of their senders' sends per sender, so
the k-th receive a rank posts for a source matches the k-th message that
source sends it (MPI's non-overtaking rule gives the intended pairs).
Request handles are reused every iteration, as MPI programs do.  The
construction is vectorized: one iteration is built as arrays and tiled,
so 100,000 ranks take seconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perfmod.apps.exchange import DOUBLE, Exchange
from perfmod.apps.registry import application, exchange
from perfmod.core.checks import positive_int
from perfmod.trace.core import Call, Trace

__all__ = [
    "synthetic",
    "collective",
    "COLLECTIVE_CALLS",
    "phases_of",
]



def phases_of(app: str, nprocs: int, reverse: bool = True, **options: Any) -> list[tuple[Exchange, bool]]:
    """The communication phases of one iteration: ``(exchange, sequential)`` pairs.

    ``sequential`` phases run as rounds (one per swap), the others post
    everything and wait for all (Listing 1).
    """
    spec = application(app)
    if not spec.phases and options:
        raise ValueError(f"synthetic({spec.name!r}): unknown options {sorted(options)}")
    return [(exchange(spec.name, nprocs, **{**options, **ph.options}), ph.sequential)
            for ph in spec.phases if reverse or not ph.optional]


def _position_in_group(keys: np.ndarray) -> np.ndarray:
    """0, 1, 2, ... within runs of equal ``keys`` (``keys`` sorted)."""
    n = keys.size
    if n == 0:
        return np.zeros(0, np.int64)
    start = np.ones(n, dtype=bool)
    start[1:] = keys[1:] != keys[:-1]
    idx = np.arange(n)
    first = np.maximum.accumulate(np.where(start, idx, 0))
    return idx - first


def _phase_events(ex: Exchange, sequential: bool, phase: int) -> dict[str, np.ndarray]:
    """Template events of one phase (unsorted): rank, round, kind, order, call, peer, nbytes."""
    src, dst, nb = (np.asarray(a, dtype=np.int64) for a in (ex.src, ex.dst, ex.nbytes))
    swap = _position_in_group(src) if sequential else np.zeros(src.size, np.int64)  # src is sorted
    m = np.arange(src.size)
    # receives: per receiver, round, then sender, then the sender's order
    rorder = np.lexsort((m, src, swap, dst))
    send_call = Call.SEND if sequential else Call.ISEND
    rank = np.concatenate([dst[rorder], src])
    rnd = np.concatenate([swap[rorder], swap])
    kind = np.concatenate([np.zeros(src.size, np.int64), np.ones(src.size, np.int64)])
    order = np.concatenate([np.arange(src.size), m])
    call = np.concatenate([np.full(src.size, Call.IRECV, np.int64), np.full(src.size, send_call, np.int64)])
    peer = np.concatenate([src[rorder], dst])
    nbytes = np.concatenate([nb[rorder], nb])
    # one wait per (rank, round) that has receives or nonblocking sends
    waiters = rank if not sequential else rank[kind == 0]
    wrnd = rnd if not sequential else rnd[kind == 0]
    key = np.unique(waiters * (int(rnd.max(initial=0)) + 1) + wrnd)
    wr, wround = key // (int(rnd.max(initial=0)) + 1), key % (int(rnd.max(initial=0)) + 1)
    rank = np.concatenate([rank, wr])
    rnd = np.concatenate([rnd, wround])
    kind = np.concatenate([kind, np.full(wr.size, 2)])
    order = np.concatenate([order, np.zeros(wr.size, np.int64)])
    call = np.concatenate([call, np.full(wr.size, Call.WAITALL, np.int64)])
    peer = np.concatenate([peer, np.full(wr.size, -1)])
    nbytes = np.concatenate([nbytes, np.zeros(wr.size, np.int64)])
    return {"rank": rank, "phase": np.full(rank.size, phase), "round": rnd, "kind": kind, "order": order,
            "call": call, "peer": peer, "nbytes": nbytes}


def _iteration_template(nprocs: int, phases: list[tuple[Exchange, bool]], allreduces: int,
                        allreduce_bytes: int) -> dict[str, np.ndarray]:
    """One iteration's events, sorted by rank, with request ids and wait lists."""
    parts = [_phase_events(ex, seq, i) for i, (ex, seq) in enumerate(phases)]
    ranks = np.arange(nprocs)
    for a in range(allreduces):
        parts.append({"rank": ranks, "phase": np.full(nprocs, len(phases) + a), "round": np.zeros(nprocs, np.int64),
                      "kind": np.zeros(nprocs, np.int64), "order": np.zeros(nprocs, np.int64),
                      "call": np.full(nprocs, Call.ALLREDUCE, np.int64), "peer": np.full(nprocs, -1),
                      "nbytes": np.full(nprocs, allreduce_bytes, np.int64)})
    if not parts:
        raise ValueError("synthetic: an iteration without communication (give allreduces >= 1)")
    ev = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    o = np.lexsort((ev["order"], ev["kind"], ev["round"], ev["phase"], ev["rank"]))
    ev = {k: v[o] for k, v in ev.items()}
    n = ev["rank"].size
    ptr = np.searchsorted(ev["rank"], np.arange(nprocs + 1))
    pos = np.arange(n) - ptr[ev["rank"]]  # position within the rank's iteration
    nonblocking = (ev["call"] == Call.IRECV) | (ev["call"] == Call.ISEND)
    request = np.where(nonblocking, pos, -1)
    # a wait completes the nonblocking events of its (rank, phase, round) group, which precede it
    grp = (ev["rank"] * (int(ev["phase"].max()) + 1) + ev["phase"]) * (int(ev["round"].max()) + 1) + ev["round"]
    n_nb = np.bincount(np.unique(grp, return_inverse=True)[1], weights=nonblocking).astype(np.int64)
    grp_id = np.unique(grp, return_inverse=True)[1]
    is_wait = ev["call"] == Call.WAITALL
    group_start = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1]])
    aux_len = np.where(is_wait, n_nb[grp_id], 0)
    first = pos[group_start][grp_id]  # position of the group's first event (its first Irecv)
    aux = np.repeat(first[is_wait], aux_len[is_wait]) + _position_in_group(np.repeat(np.flatnonzero(is_wait),
                                                                                      aux_len[is_wait]))
    call = ev["call"].copy()
    single = is_wait & (aux_len == 1)
    call[single] = Call.WAIT
    request = np.where(single, 0, request)
    request[single] = aux[np.cumsum(aux_len)[single] - 1]
    keep_aux = np.repeat(~single[is_wait], aux_len[is_wait])
    aux_len = np.where(single, 0, aux_len)
    return {"rank": ev["rank"], "call": call, "peer": ev["peer"], "nbytes": ev["nbytes"], "request": request,
            "aux_len": aux_len, "aux": aux[keep_aux], "ptr": ptr}


#: ranks expanded at a time by :func:`_expand` (its temporaries are per chunk, not per trace)
_CHUNK_RANKS = 1 << 16


def _expand(tpl: dict[str, np.ndarray], p: int, iters: int, comp: np.ndarray) -> dict[str, np.ndarray]:
    """The trace's columns: ``iters`` copies of each rank's template events, written into the final arrays a
    chunk of ranks at a time (issue 23: building a trace held about 300 bytes per event of temporaries)."""
    block = np.diff(tpl["ptr"])  # events per rank per iteration
    per_rank = block * iters
    starts = np.zeros(p + 1, dtype=np.int64)
    np.cumsum(per_rank, out=starts[1:])
    tpl_aux_start = np.zeros(tpl["aux_len"].size + 1, dtype=np.int64)
    np.cumsum(tpl["aux_len"], out=tpl_aux_start[1:])
    aux_per_rank = (tpl_aux_start[tpl["ptr"][1:]] - tpl_aux_start[tpl["ptr"][:-1]]) * iters
    aux_starts = np.zeros(p + 1, dtype=np.int64)
    np.cumsum(aux_per_rank, out=aux_starts[1:])
    n, naux = int(starts[-1]), int(aux_starts[-1])
    cols = {"rank": np.empty(n, np.int32), "seq": np.empty(n, np.int32), "call": np.empty(n, np.uint8),
            "peer": np.empty(n, np.int32), "nbytes": np.empty(n, np.int64), "tag": np.zeros(n, np.int32),
            "comm": np.zeros(n, np.int32), "request": np.empty(n, np.int64), "compute": np.empty(n, np.float64),
            "aux_ptr": np.empty(n + 1, np.int64), "aux": np.empty(naux, np.int64),
            "iteration": np.empty(n, np.int32)}
    cols["aux_ptr"][0] = 0
    for r0 in range(0, p, _CHUNK_RANKS):
        r1 = min(p, r0 + _CHUNK_RANKS)
        e0, e1 = int(starts[r0]), int(starts[r1])
        rank = np.repeat(np.arange(r0, r1, dtype=np.int32), per_rank[r0:r1])
        q = np.arange(e0, e1, dtype=np.int64) - starts[rank]  # position on the rank
        bl = block[rank]
        t = tpl["ptr"][rank] + q % bl  # template index of every event
        cols["rank"][e0:e1] = rank
        cols["seq"][e0:e1] = q
        cols["iteration"][e0:e1] = q // bl
        cols["call"][e0:e1] = tpl["call"][t]
        cols["peer"][e0:e1] = tpl["peer"][t]
        cols["nbytes"][e0:e1] = tpl["nbytes"][t]
        cols["request"][e0:e1] = tpl["request"][t]
        cols["compute"][e0:e1] = np.where(q % bl == 0, comp[rank], 0.0)
        alen = tpl["aux_len"][t]
        np.cumsum(alen, out=cols["aux_ptr"][e0 + 1:e1 + 1])
        cols["aux_ptr"][e0 + 1:e1 + 1] += aux_starts[r0]
        a0, a1 = int(aux_starts[r0]), int(aux_starts[r1])
        aux_idx = np.repeat(tpl_aux_start[t], alen) + _position_in_group(np.repeat(np.arange(t.size), alen))
        cols["aux"][a0:a1] = tpl["aux"][aux_idx]
    return cols


def synthetic(app: str, nprocs: int, iterations: int = 1, *, allreduces: int | None = None,
              allreduce_bytes: int = DOUBLE, compute: Any = 0.0, reverse: bool = True, **options: Any) -> Trace:
    """A trace of ``iterations`` iterations of ``app``'s communication on ``nprocs`` ranks.

    Parameters
    ----------
    app : str
        A registered application (:func:`perfmod.apps.registry.applications`): ``"jacobi2d"``,
        ``"minife"``, ``"minimd"``, ``"allreduce"``; see the module docstring for each iteration's events.
    nprocs : int
        Number of ranks.
    iterations : int
        Number of iterations (the ``iteration`` column numbers them).
    allreduces : int, optional
        Allreduces at the end of each iteration (default: the application's
        ``allreduces``: 1 for Jacobi2D and ``"allreduce"``, 2 for MiniFE, 0 for MiniMD).
    allreduce_bytes : int
        Bytes of each allreduce vector (8: one double).
    compute : float or array_like
        Seconds of computation per iteration, before its first call (a
        scalar or one value per rank).
    reverse : bool
        Include the optional phases (MiniMD's reverse communication of forces).
    **options
        Passed to the decomposition (:func:`perfmod.apps.registry.exchange`),
        e.g. ``block=``, ``periodic=``, ``box=``, ``cells=``.

    Returns
    -------
    Trace
        ``len(trace)`` events; ``trace.meta`` records app, options and the
        exchange configurations.
    """
    p = positive_int("nprocs", nprocs)
    iters = positive_int("iterations", iterations)
    spec = application(app)
    app = spec.name
    nred = spec.allreduces if allreduces is None else int(allreduces)
    if nred < 0 or int(allreduce_bytes) < 1:
        raise ValueError(f"synthetic: need allreduces >= 0 and allreduce_bytes >= 1, got {nred}, {allreduce_bytes}")
    phases = phases_of(app, p, reverse=reverse, **options)
    tpl = _iteration_template(p, phases, nred, int(allreduce_bytes))
    comp = np.broadcast_to(np.asarray(compute, dtype=np.float64), (p,))
    if not np.all(np.isfinite(comp)) or np.any(comp < 0):
        raise ValueError("synthetic: compute must be finite and >= 0 seconds")
    cols = _expand(tpl, p, iters, comp)
    meta = {"app": app, "nprocs": p, "iterations": iters, "allreduces": nred, "allreduce_bytes": int(allreduce_bytes),
            "options": dict(options), "phases": [{"sequential": s, **ex.config} for ex, s in phases]}
    return Trace(p, source=f"synthetic:{app}", meta=meta, **cols)


#: the collectives :func:`collective` generates, by name
COLLECTIVE_CALLS = {"bcast": Call.BCAST, "reduce": Call.REDUCE, "allreduce": Call.ALLREDUCE, "barrier": Call.BARRIER}
_ROOTED = {Call.BCAST, Call.REDUCE}  # their peer is the root


def collective(call: str, nprocs: int, nbytes: int = DOUBLE, *, root: int = 0, iterations: int = 1) -> Trace:
    """``iterations`` world collectives ``call`` on ``nprocs`` ranks, nothing else: the scale test of LogGOPSim
    (Hoefler, Schneider and Lumsdaine, "LogGOPSim", HPDC 2010, §4: a binomial broadcast and an allreduce over
    millions of processes).

    The events are written straight into the trace's columns (about 40 bytes per event, no temporaries
    beyond one column), so that 8,388,608 ranks take a third of a gigabyte.

    Parameters
    ----------
    call : {"bcast", "reduce", "allreduce", "barrier"}
        The collective (each replay model expands or costs it as it does any other, e.g. ``loggp``: a
        binomial tree, recursive doubling).
    nprocs : int
        Ranks (all of ``MPI_COMM_WORLD``).
    nbytes : int
        Bytes of the message (0 for the barrier, whatever is given).
    root : int
        Root of a broadcast or reduce.
    iterations : int
        Collectives per rank, one after the other.
    """
    p = positive_int("nprocs", nprocs)
    iters = positive_int("iterations", iterations)
    name = str(call).lower()
    if name not in COLLECTIVE_CALLS:
        raise ValueError(f"collective: call must be one of {sorted(COLLECTIVE_CALLS)}, not {call!r}")
    code = COLLECTIVE_CALLS[name]
    rooted = code in _ROOTED
    if rooted and not 0 <= int(root) < p:
        raise ValueError(f"collective: root {root} is not a rank of {p}")
    if int(nbytes) < 0:
        raise ValueError(f"collective: nbytes must be >= 0, got {nbytes}")
    size = 0 if code == Call.BARRIER else int(nbytes)
    n = p * iters
    rank = np.repeat(np.arange(p, dtype=np.int32), iters) if iters > 1 else np.arange(p, dtype=np.int32)
    seq = np.tile(np.arange(iters, dtype=np.int32), p) if iters > 1 else np.zeros(n, np.int32)
    cols = {"rank": rank, "seq": seq, "call": np.full(n, int(code), np.uint8),
            "peer": np.full(n, int(root) if rooted else -1, np.int32),
            "nbytes": np.full(n, size, np.int64), "tag": np.zeros(n, np.int32), "comm": np.zeros(n, np.int32),
            "request": np.full(n, -1, np.int64), "compute": np.zeros(n, np.float64),
            "aux_ptr": np.zeros(n + 1, np.int64), "aux": np.zeros(0, np.int64), "iteration": seq.copy()}
    meta = {"app": name, "nprocs": p, "iterations": iters, "nbytes": size,
            **({"root": int(root)} if rooted else {})}
    return Trace(p, source=f"synthetic:{name}", meta=meta, **cols)
