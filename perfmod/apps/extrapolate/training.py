"""What the training traces of an extrapolation say: program, parameters, process grid, rank programs.

A training set is traces of one SPMD program at several rank counts.  For each
trace this module finds

- its parameters: ``-name value`` pairs of the command line the trace kept
  (DUMPI's ``MPI_Init`` record, ``trace.meta["argv"]``) or given by the caller;
- its *skeleton*: the events other than point-to-point sends and receives
  (waits, collectives, init), which must be the same sequence on every rank
  (the SPMD check); the point-to-point events between skeleton events ``j - 1``
  and ``j`` form *block* ``j``;
- its process grid: the ranks' coordinates under one of the rank-ordering rules
  of :data:`ORDERINGS` (miniFE's recursive coordinate bisection of the
  problem box, or ``MPI_Dims_create`` in 3 or 2 dimensions with
  ``MPI_Cart_create``'s row-major order), non-periodic or, where that fails,
  periodic, chosen among those under which every message of every training
  trace goes to a grid neighbour (offset -1, 0 or +1 along each axis) as the
  one with the fewest distinct offsets, the premise of ScalaExtrap (Wu and Mueller, PPoPP 2011):
  an SPMD stencil code's peers are fixed offsets in its process grid.

Errors name the trace and the reason (:class:`ExtrapolationError`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perfmod.apps.minife import box_partition, default_global_box
from perfmod.core.rows import unique_rows
from perfmod.machine.cart import cart_coords, dims_create
from perfmod.trace.core import CALL_NAMES, NONBLOCKING, WAITS, Call, Trace, TraceError, code_set

__all__ = ["ExtrapolationError", "Training", "ORDERINGS", "P2P", "load_training", "grid_of", "command_params",
           "program_name"]

#: Point-to-point calls that move data; every other event is part of the skeleton.
P2P = code_set({Call.SEND, Call.ISEND, Call.SSEND, Call.ISSEND, Call.RECV, Call.IRECV})
_NB = code_set(NONBLOCKING)
_WAITS = code_set(WAITS)


class ExtrapolationError(TraceError):
    """Training traces that cannot be extrapolated; the message names the trace and the reason."""


def program_name(argv: Sequence[str]) -> str:
    """The program of a command line: the base name of ``argv[0]``."""
    return os.path.basename(str(argv[0])) if argv else ""


def command_params(argv: Sequence[str]) -> dict[str, float]:
    """``-name value`` / ``--name value`` pairs of a command line whose value is a number."""
    out: dict[str, float] = {}
    args = [str(a) for a in argv[1:]]
    for k, a in enumerate(args[:-1]):
        if a.startswith("-") and not _is_number(a):
            try:
                out[a.lstrip("-")] = float(args[k + 1])
            except ValueError:
                continue
    return out


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _bisection(p: int, params: Mapping[str, float]) -> np.ndarray | None:
    box = [params.get(k) for k in ("nx", "ny", "nz")]
    g = [int(b) for b in box] if all(b is not None and b >= 1 for b in box) else list(default_global_box(p))
    try:
        lo = box_partition(p, g)[:, :, 0]
    except ValueError:
        return None
    coords = np.stack([np.unique(lo[:, d], return_inverse=True)[1] for d in range(3)], axis=1)
    return coords.astype(np.int64)


def _cartesian(p: int, params: Mapping[str, float]) -> np.ndarray:
    return np.asarray(cart_coords(np.arange(p), tuple(dims_create(p, 3))), dtype=np.int64).reshape(p, 3)


def _cartesian2d(p: int, params: Mapping[str, float]) -> np.ndarray:
    xy = np.asarray(cart_coords(np.arange(p), tuple(dims_create(p, 2))), dtype=np.int64).reshape(p, 2)
    return np.concatenate([xy, np.zeros((p, 1), np.int64)], axis=1)


#: Rank-ordering rules: name -> f(nprocs, params) -> (nprocs, 3) grid coordinates of each rank (None: no grid).
ORDERINGS: dict[str, Callable[[int, Mapping[str, float]], np.ndarray | None]] = {
    "bisection": _bisection,
    "cartesian": _cartesian,
    "cartesian2d": _cartesian2d,
}


def grid_of(ordering: str, nprocs: int, params: Mapping[str, float]) -> tuple[np.ndarray, tuple[int, int, int]]:
    """Coordinates of every rank and the grid's extent under ``ordering`` (raises when it gives no grid)."""
    coords = ORDERINGS[ordering](int(nprocs), params)
    if coords is None:
        raise ExtrapolationError(f"{ordering} ordering gives no process grid for {nprocs} ranks and {dict(params)}")
    g = tuple(int(x) for x in coords.max(axis=0) + 1)
    if int(np.prod(g)) != nprocs or np.unique(coords @ np.array([g[1] * g[2], g[2], 1])).size != nprocs:
        raise ExtrapolationError(f"{ordering} ordering of {nprocs} ranks ({dict(params)}) is not a full 3D grid")
    return coords, g  # type: ignore[return-value]


@dataclass
class Training:
    """One training trace, analysed (see the module docstring)."""

    trace: Trace
    name: str
    params: dict[str, float]
    program: str
    skeleton: np.ndarray  # (n_skel,) call codes of every rank's skeleton
    skel_nbytes: np.ndarray
    block: np.ndarray  # per event: number of skeleton events of its rank before it (p2p) or its own index
    is_p2p: np.ndarray
    coords: np.ndarray | None = None  # (nprocs, 3)
    grid: tuple[int, int, int] | None = None
    offset: np.ndarray | None = None  # (n_events, 3) peer - own coordinates (p2p), 0 elsewhere

    @property
    def nprocs(self) -> int:
        return self.trace.nprocs


def _load_one(item: Any, params: Mapping[str, float] | None) -> Training:
    from perfmod.trace import read_trace

    if isinstance(item, Trace):
        trace, name = item, item.source or f"trace of {item.nprocs} ranks"
    else:
        name = str(item)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trace = read_trace(Path(item))
    argv = list(trace.meta.get("argv", ()) or ())
    got = dict(params) if params is not None else command_params(argv)
    tr = Training(trace, name, {k: float(v) for k, v in got.items()}, program_name(argv),
                  np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool))
    _skeleton(tr)
    return tr


def _skeleton(tr: Training) -> None:
    """Fill the skeleton and blocks; raise when a rank is missing or the ranks' skeletons differ (not SPMD)."""
    t = tr.trace
    ptr = t.rank_ptr
    empty = np.flatnonzero(np.diff(ptr) == 0)
    if empty.size:
        raise ExtrapolationError(f"{tr.name}: rank {int(empty[0])} of {t.nprocs} has no events (rank file missing?)"
                                 + (f" and {empty.size - 1} more ranks" if empty.size > 1 else ""))
    p2p = np.isin(t.call, P2P)
    skel = ~p2p
    if np.any(t.call == Call.SENDRECV):
        raise ExtrapolationError(f"{tr.name}: MPI_Sendrecv is not extrapolated (only send, receive and waits)")
    n_skel = np.add.reduceat(skel.astype(np.int64), ptr[:-1])
    if np.any(n_skel != n_skel[0]):
        r = int(np.flatnonzero(n_skel != n_skel[0])[0])
        raise ExtrapolationError(f"{tr.name}: not SPMD: rank {r} makes {int(n_skel[r])} calls other than sends and "
                                 f"receives, rank 0 makes {int(n_skel[0])}")
    k = int(n_skel[0])
    sc = t.call[skel].reshape(t.nprocs, k)
    sb = t.nbytes[skel].reshape(t.nprocs, k)
    scomm = t.comm[skel].reshape(t.nprocs, k)
    for what, arr in (("call", sc), ("size", sb), ("communicator", scomm)):
        bad = np.flatnonzero(np.any(arr != arr[0], axis=1))
        if bad.size:
            r = int(bad[0])
            j = int(np.flatnonzero(arr[r] != arr[0])[0])
            raise ExtrapolationError(
                f"{tr.name}: not SPMD: rank {r}'s call {j} other than sends and receives differs from rank 0's in "
                f"its {what} ({CALL_NAMES[int(sc[r, j])]} vs {CALL_NAMES[int(sc[0, j])]})")
    if np.any(scomm != 0):
        raise ExtrapolationError(f"{tr.name}: collectives on communicators other than MPI_COMM_WORLD are not "
                                 "extrapolated")
    before = np.cumsum(skel) - skel
    start = np.repeat(before[ptr[:-1]], np.diff(ptr))
    tr.skeleton, tr.skel_nbytes = sc[0].copy(), sb[0].copy()
    tr.block, tr.is_p2p = (before - start).astype(np.int64), p2p
    _check_waits(tr)


def _check_waits(tr: Training) -> None:
    """Every wait must complete exactly the requests its rank created since its previous wait."""
    t = tr.trace
    nb = np.flatnonzero(np.isin(t.call, _NB))
    waits = np.flatnonzero(np.isin(t.call, _WAITS))
    if np.any(np.isin(t.call[waits], code_set({Call.WAITANY, Call.WAITSOME, Call.TEST, Call.TESTANY,
                                                Call.TESTSOME, Call.TESTALL}))):
        raise ExtrapolationError(f"{tr.name}: only MPI_Wait and MPI_Waitall are extrapolated")
    # requests created between consecutive waits of a rank = the wait's list (as multisets of counts)
    created = np.zeros(len(t), np.int64)
    created[nb] = 1
    ptr = t.rank_ptr
    csum = np.cumsum(created)
    alen = np.diff(t.aux_ptr)
    n_done = np.where(t.call == Call.WAIT, (t.request >= 0).astype(np.int64), alen)
    # per rank: requests created before each wait minus those completed by earlier waits
    wait_rank = t.rank[waits]
    prev_created = np.zeros(waits.size, np.int64)
    first = np.r_[True, wait_rank[1:] != wait_rank[:-1]] if waits.size else np.zeros(0, bool)
    c_at = csum[waits] - np.concatenate([[0], csum])[ptr[wait_rank]]
    prev_created[1:] = c_at[:-1]
    prev_created[first] = 0
    if np.any((c_at - prev_created) != n_done[waits]):
        i = int(waits[np.flatnonzero((c_at - prev_created) != n_done[waits])[0]])
        raise ExtrapolationError(f"{tr.name}: rank {int(t.rank[i])} event {int(t.seq[i])}: the wait does not "
                                 "complete exactly the requests created since the previous wait (pattern not "
                                 "extrapolated)")


def _offsets(tr: Training, coords: np.ndarray, grid: tuple[int, ...], periodic: bool) -> np.ndarray | None:
    """(n_events, 3) grid offsets of each p2p event's peer, or None when a peer is not a grid neighbour."""
    t = tr.trace
    ev = np.flatnonzero(tr.is_p2p)
    peer = t.peer[ev]
    if np.any(peer < 0):
        i = int(ev[np.flatnonzero(peer < 0)[0]])
        raise ExtrapolationError(f"{tr.name}: rank {int(t.rank[i])} event {int(t.seq[i])}: wildcard or null peer "
                                 "(not extrapolated)")
    g = np.asarray(grid)
    d = coords[peer] - coords[t.rank[ev]]
    if periodic:
        d = (d + g // 2) % g - g // 2  # into [-g/2, g/2)
        d = np.where((g == 2) & (d == -1), 1, d)  # extent 2: one neighbour, recorded as +1 (sign resolved later)
    if np.any(np.abs(d) > 1):
        return None
    out = np.zeros((len(t), 3), np.int64)
    out[ev] = d
    return out


def load_training(traces: Sequence[Any], train_params: Sequence[Mapping[str, float]] | None = None
                  ) -> tuple[list[Training], str, bool]:
    """Read and check the training traces; infer the rank ordering and periodicity.

    Returns
    -------
    (trainings sorted by nprocs, ordering name, periodic)

    Raises
    ------
    ExtrapolationError
        Fewer than two rank counts, two traces of one rank count, different
        programs or command-line shapes, a missing rank, a non-SPMD trace, no
        ordering under which every message goes to a grid neighbour.
    """
    items = list(traces)
    if train_params is not None and len(train_params) != len(items):
        raise ExtrapolationError(f"train_params has {len(train_params)} entries for {len(items)} traces")
    trs = [_load_one(it, None if train_params is None else train_params[k]) for k, it in enumerate(items)]
    trs.sort(key=lambda x: x.nprocs)
    scales = [x.nprocs for x in trs]
    if len(set(scales)) < 2:
        raise ExtrapolationError(f"{', '.join(x.name for x in trs)}: one training scale ({scales[0]} ranks); "
                                 "extrapolation needs traces at two or more rank counts")
    for a, b in zip(trs, trs[1:], strict=False):
        if a.nprocs == b.nprocs:
            raise ExtrapolationError(f"{a.name} and {b.name}: two training traces of {a.nprocs} ranks")
    ref = trs[-1]
    for x in trs:
        if x.program and ref.program and not (x.program.startswith(ref.program) or ref.program.startswith(x.program)):
            raise ExtrapolationError(f"{x.name}: program {x.program!r} differs from {ref.name}'s {ref.program!r}")
        if set(x.params) != set(ref.params):
            raise ExtrapolationError(f"{x.name}: command-line parameters {sorted(x.params)} differ in shape from "
                                     f"{ref.name}'s {sorted(ref.params)}")
        if not np.isin(np.unique(x.skeleton), np.unique(ref.skeleton)).all():
            extra = sorted(CALL_NAMES[int(c)] for c in set(x.skeleton.tolist()) - set(ref.skeleton.tolist()))
            raise ExtrapolationError(f"{x.name}: calls {extra} that {ref.name} does not make: a different program?")
    best = None  # (distinct offsets, candidate index, ordering, periodic, per-trace (coords, grid, offsets))
    passed: set[str] = set()
    for k, (ordering, periodic) in enumerate((o, per) for o in ORDERINGS for per in (False, True)):
        if ordering in passed:  # periodic only where the grid without wrap-around does not explain the messages
            continue
        found = []
        for x in trs:
            try:
                coords, grid = grid_of(ordering, x.nprocs, x.params)
            except ExtrapolationError:
                break
            off = _offsets(x, coords, grid, periodic)
            if off is None:
                break
            found.append((coords, grid, off))
        else:
            # the simplest explanation wins: the fewest distinct offsets (a 2D stencil read on a 3D grid has more)
            n_off = len(set().union(*(map(tuple, unique_rows(f[2][x.is_p2p])[0].tolist())
                                      for f, x in zip(found, trs, strict=True))))
            passed.add(ordering)
            if best is None or n_off < best[0]:
                best = (n_off, k, ordering, periodic, found)
    if best is not None:
        for x, (coords, grid, off) in zip(trs, best[4], strict=True):
            x.coords, x.grid, x.offset = coords, grid, off
        return trs, best[2], best[3]
    raise ExtrapolationError(f"{ref.name}: no rank ordering ({', '.join(ORDERINGS)}; periodic or not) makes every "
                             "message of the training traces go to a grid neighbour: not a nearest-neighbour SPMD "
                             "pattern this extrapolation knows")
