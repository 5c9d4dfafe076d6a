"""``extrapolate_trace``: the trace at a rank count nobody traced, with how far to trust it.

Trust comes from leave-one-scale-out validation: every training trace (of
those that leave at least two others) is extrapolated from the others and
compared with itself (:func:`compare_traces`).  The folds' worst errors are
stored in the result's ``meta["extrapolation"]`` with the ranks whose messages
did not come out right and the call sites whose computation did not; a target
more than :data:`FAR_FACTOR` times the largest training rank count is flagged
(an :class:`ExtrapolationWarning` and ``far_beyond_training``), and so is a
start-up skew whose spread the training scales do not predict
(:func:`~.imbalance.start_spread_check`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from perfmod.apps.extrapolate.generate import build_template, generate, sharing, site_models
from perfmod.apps.extrapolate.imbalance import START_TOLERANCE, check_start_sd, fit_imbalance, start_spread_check
from perfmod.apps.extrapolate.training import P2P, ExtrapolationError, Training, load_training
from perfmod.core.extrapolation import ExtrapolationWarning  # the one class (re-exported here)
from perfmod.trace.core import CALL_NAMES, COLLECTIVES, Call, Trace, code_set

__all__ = ["extrapolate_trace", "compare_traces", "ExtrapolationWarning", "FAR_FACTOR", "message_stats"]

FAR_FACTOR = 8
"""A target more than this many times the largest training rank count is flagged as far beyond the training."""

_SENDS = code_set({Call.SEND, Call.ISEND, Call.SSEND, Call.ISSEND})
_COLL = code_set(COLLECTIVES)


def message_stats(trace: Trace) -> dict[str, Any]:
    """Point-to-point sends per rank (messages, bytes), the sender-receiver pairs, collectives per rank."""
    s = np.isin(trace.call, _SENDS)
    p = trace.nprocs
    msgs = np.bincount(trace.rank[s], minlength=p)
    byts = np.bincount(trace.rank[s], weights=trace.nbytes[s].astype(np.float64), minlength=p)
    pairs = np.unique(trace.rank[s].astype(np.int64) * p + trace.peer[s])
    coll = np.bincount(trace.rank[np.isin(trace.call, _COLL)], minlength=p)
    return {"messages": msgs, "bytes": byts, "pairs": pairs, "collectives": coll}


def compare_traces(predicted: Trace, recorded: Trace, max_named: int = 10) -> dict[str, Any]:
    """Relative errors of a predicted trace against a recorded one of the same rank count.

    Returns
    -------
    dict
        ``messages_error``, ``bytes_error`` (totals), ``max_rank_bytes_error``
        (busiest rank), ``rank_bytes_error`` (worst rank), ``pairs_equal``,
        ``collectives_equal``, ``compute_error`` (total computation),
        ``ranks_off`` (ranks whose messages or bytes differ, at most
        ``max_named``), ``sites_off`` (calls whose total computation differs
        by more than 10 %).
    """
    if predicted.nprocs != recorded.nprocs:
        raise ValueError(f"compare_traces: {predicted.nprocs} predicted ranks against {recorded.nprocs} recorded")
    a, b = message_stats(predicted), message_stats(recorded)

    def rel(x: float, y: float) -> float:
        return float(x / y - 1) if y else (0.0 if x == 0 else float("inf"))

    off = np.flatnonzero((a["messages"] != b["messages"]) | (np.abs(a["bytes"] - b["bytes"]) > 1e-9 * b["bytes"]))
    rank_err = np.abs(a["bytes"] / np.where(b["bytes"] > 0, b["bytes"], 1) - 1)
    sites = []
    for c in np.union1d(np.unique(predicted.call), np.unique(recorded.call)).tolist():
        if c in P2P:
            continue
        x = float(predicted.compute[predicted.call == c].sum())
        y = float(recorded.compute[recorded.call == c].sum())
        if y > 0 and abs(x / y - 1) > 0.1:
            sites.append(f"{CALL_NAMES[int(c)]} ({x / y - 1:+.0%})")
    return {
        "messages_error": rel(a["messages"].sum(), b["messages"].sum()),
        "bytes_error": rel(a["bytes"].sum(), b["bytes"].sum()),
        "max_rank_bytes_error": rel(a["bytes"].max(initial=0), b["bytes"].max(initial=0)),
        "rank_bytes_error": float(rank_err.max(initial=0)),
        "pairs_equal": bool(np.array_equal(a["pairs"], b["pairs"])),
        "collectives_equal": bool(np.array_equal(a["collectives"], b["collectives"])),
        "compute_error": rel(float(predicted.compute.sum()), float(recorded.compute.sum())),
        "ranks_off": off[:max_named].tolist(),
        "ranks_off_count": int(off.size),
        "sites_off": sites,
    }


def _extrapolate(trs: list[Training], ordering: str, periodic: bool, nprocs: int, params: Mapping[str, float],
                 iterations: int | None, compute_method: str, source: str, gaps: str = "model",
                 seed: int = 0, start_sd: float | None = None) -> tuple[Trace, Any]:
    tpl = build_template(trs[-1], ordering, periodic)
    site_models(tpl, trs, nprocs, compute_method)
    imb = fit_imbalance(tpl.tr, sharing(tpl, trs), trs, start_sd=start_sd) if gaps == "model" else None
    return generate(tpl, nprocs, params, iterations=iterations, source=source, gaps=gaps, imbalance=imb,
                    seed=seed), tpl


def _weak(ref: Training, nprocs: int) -> dict[str, float]:
    """Parameters that keep every rank's share of ``nx``, ``ny``, ``nz`` as in ``ref`` (weak scaling)."""
    from perfmod.machine.cart import dims_create

    out = dict(ref.params)
    if not all(k in out for k in ("nx", "ny", "nz")):
        raise ExtrapolationError(f"{ref.name}: no nx, ny, nz on the command line; give params= for the target")
    per = np.array([out["nx"], out["ny"], out["nz"]]) / np.asarray(ref.grid)
    g = np.array(dims_create(int(nprocs), 3))
    # the bisection cycles x, y, z: its grid is MPI_Dims_create's sorted by the training grid's axis order
    order = np.argsort(-np.asarray(ref.grid), kind="stable")
    gg = np.empty(3, np.int64)
    gg[order] = np.sort(g)[::-1]
    for k, name in enumerate(("nx", "ny", "nz")):
        out[name] = float(per[k] * gg[k])
    return out


def extrapolate_trace(traces: Sequence[Any], nprocs: int, params: Mapping[str, float] | None = None,
                      train_params: Sequence[Mapping[str, float]] | None = None, *, iterations: int | None = None,
                      compute_method: str = "mean", validate: bool = True, gaps: str = "model",
                      seed: int = 0, start_sd: float | None = None) -> Trace:
    """The trace of the traced program at ``nprocs`` ranks, from traces at smaller rank counts.

    Parameters
    ----------
    traces : sequence of path or Trace
        Traces of one SPMD program at two or more rank counts (any format
        :func:`perfmod.trace.read_trace` reads).
    nprocs : int
        Target rank count.
    params : mapping, optional
        The target's command-line parameters (e.g. ``{"nx": 1600, "ny":
        1600, "nz": 800}``); default: weak scaling of the largest training
        trace's ``nx``, ``ny``, ``nz`` (each rank keeps its share).
    train_params : sequence of mapping, optional
        Each training trace's parameters; default: read from the command
        line the trace recorded (DUMPI's ``MPI_Init`` arguments).
    iterations : int, optional
        Keep only this many repetitions of the program's period (the rest of
        the run is dropped); for targets whose full trace does not fit in
        memory.
    compute_method : str
        :func:`perfmod.models.compute.fit_compute_model` method of the
        per-call-site computation models (``"mean"``: constant in the rank
        count, as weak scaling has it; ``"perfmod"``: selected terms).
    validate : bool
        Run the leave-one-scale-out validation (:mod:`.trust`).
    gaps : str
        The computation gaps of each target rank: ``"model"``, its class's
        template rank's with the per-rank imbalance and start-up skew fitted
        on the training traces (:mod:`.imbalance`); ``"ranks"`` or
        ``"class"``, a template rank's as recorded
        (:func:`~perfmod.apps.extrapolate.generate.generate`).
    seed : int
        Seed of the per-rank levels' draws (``gaps="model"``): the slowest
        rank's waiting depends on where the late ranks sit, which the model
        leaves to chance; other seeds show how much.
    start_sd : float, optional
        Standard deviation (s) of the start-up gap (``MPI_Init`` to the
        first traced call) at the target, for ``gaps="model"``: a what-if
        for a launcher whose skew at scale is known, instead of the power
        law fitted on the training traces (which small runs may not pin
        down: ``start_spread_check``).

    Returns
    -------
    Trace
        ``meta["extrapolation"]``: the training scales, the inferred rank
        ordering, periodicity and template, the target's parameters, the
        computation model of each call site (``compute_models``: method,
        training points, the ratio applied, the spread of the training
        means),
        ``far_beyond_training``, the leave-one-scale-out folds and their
        worst errors (``loso_max``), the ranks and call sites that did not
        generalize (``"start-up gap"`` among them when the start-up skew's
        spread at the largest training scale, predicted from the others,
        is more than :data:`~.imbalance.START_TOLERANCE` off:
        ``start_spread_check``), the time taken.

    Raises
    ------
    ExtrapolationError
        The training traces cannot be extrapolated (the message names the
        trace and the reason: different programs or command-line shapes, a
        single training scale, missing ranks, not SPMD, not a nearest-neighbour
        pattern on a process grid), or the target's grid needs what the
        training never showed.
    """
    t0 = time.perf_counter()
    nprocs = int(nprocs)
    if nprocs < 1:
        raise ExtrapolationError(f"nprocs must be a positive rank count, got {nprocs}")
    if start_sd is not None:  # before the training traces are read
        check_start_sd(start_sd)
    trs, ordering, periodic = load_training(traces, train_params)
    target = dict(params) if params is not None else _weak(trs[-1], nprocs)
    if trs[0].params and set(target) - set(trs[0].params):
        raise ExtrapolationError(f"params {sorted(set(target) - set(trs[0].params))} are not parameters of the "
                                 f"training traces' command lines ({sorted(trs[0].params)})")
    target = {**trs[-1].params, **target}
    largest = trs[-1].nprocs
    far = nprocs > FAR_FACTOR * largest
    if far:
        warnings.warn(f"extrapolating to {nprocs} ranks, {nprocs / largest:.0f} times the largest training trace "
                      f"({largest} ranks): the leave-one-scale-out error estimate covers factors of 2 only",
                      ExtrapolationWarning, stacklevel=2)
    out, tpl = _extrapolate(trs, ordering, periodic, nprocs, target, iterations, compute_method,
                            f"extrapolated from {', '.join(str(x.nprocs) for x in trs)} ranks", gaps, seed,
                            start_sd)
    imb_meta = out.meta.get("imbalance") or {}
    start_check = (start_spread_check({int(p): v for p, v in imb_meta.get("start_sd_training_s", {}).items()})
                   if validate and gaps == "model" and start_sd is None else None)
    start_off = start_check is not None and abs(start_check["error"]) > START_TOLERANCE
    if start_off:
        warnings.warn(f"the start-up gap's spread at {start_check['nprocs']} ranks, predicted from "
                      f"{', '.join(map(str, start_check['from']))} ranks, is {start_check['error']:+.0%} off the "
                      f"recorded one: the slowest rank's waiting at {nprocs} ranks depends on a start-up skew the "
                      "training scales do not pin down", ExtrapolationWarning, stacklevel=2)
    folds = loso(trs, ordering, periodic, compute_method) if validate else []
    ok = [f for f in folds if "error" not in f]
    worst = {k: max((abs(f[k]) for f in ok), default=float("nan"))
             for k in ("messages_error", "bytes_error", "max_rank_bytes_error", "rank_bytes_error", "compute_error")}
    worst |= {"pairs_equal": all(f["pairs_equal"] for f in ok) if ok else None,
              "collectives_equal": all(f["collectives_equal"] for f in ok) if ok else None}
    meta = {
        "training_nprocs": [x.nprocs for x in trs], "training_sources": [x.name for x in trs],
        "training_params": [x.params for x in trs], "params": target, "nprocs": nprocs,
        "ordering": ordering, "periodic": periodic, "template_nprocs": largest,
        "template_grid": list(trs[-1].grid), "period": [tpl.start, tpl.period],
        "n_periods": (trs[-1].skeleton.size - tpl.start) // tpl.period if tpl.period else 0, "iterations": iterations,
        "compute_method": compute_method,
        "compute_models": {str(k): v for k, v in tpl.site_fits.items()},
        "gaps": gaps, "imbalance": out.meta.get("imbalance"), "start_sd_given": start_sd,
        "far_beyond_training": far, "far_factor": nprocs / largest,
        "loso": folds, "loso_max": worst,
        "ranks_not_generalizing": sorted({r for f in ok for r in f["ranks_off"]}),
        "sites_not_generalizing": sorted({s.split(" (")[0] for f in ok for s in f["sites_off"]}
                                         | ({"start-up gap"} if start_off else set())),
        "start_spread_check": start_check,
        "seconds": time.perf_counter() - t0,
    }
    return Trace(**{**vars(out), "meta": {"format": "extrapolated", "extrapolation": meta}})


def loso(trs: list[Training], ordering: str, periodic: bool, compute_method: str) -> list[dict[str, Any]]:
    """Leave-one-scale-out folds: each training trace predicted from the others (those leaving two or more)."""
    folds = []
    for k, x in enumerate(trs):
        rest = trs[:k] + trs[k + 1:]
        if len(rest) < 2:
            continue
        fold: dict[str, Any] = {"nprocs": x.nprocs, "from": [r.nprocs for r in rest]}
        try:
            pred, _ = _extrapolate(rest, ordering, periodic, x.nprocs, x.params, None, compute_method, "")
            fold |= compare_traces(pred, x.trace)
        except ExtrapolationError as err:
            fold["error"] = str(err)
        folds.append(fold)
    return folds
