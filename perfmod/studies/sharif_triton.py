"""Paper 003's TRITON study transposed to this machine (§III-B, §V-C/D/E, Figures 3-5).

Flood events are synthetic terrains with an inflow (:data:`perfmod.measure.proxies.swe.EVENTS`),
each at several resolutions made by averaging squares of cells of the finest
DEM, as the paper does.  For each target event (one "experiment"):

1. the BSP parameters with the reduction term (Eq. 6) are fitted on the runs
   of the *other* events, K_w per event (TRITON's K_w depends on the
   scenario: dry cells skip most of the work), O_h, O_w and the
   communication and other parameters shared;
2. the target's coarse runs give its K_w
   (:func:`perfmod.models.bsp.kw_from_coarse_run`) and its iteration count, scaled
   to the finer resolutions (:func:`perfmod.models.bsp.scaled_iterations`): by the
   cell-size ratio (the paper's) or by that ratio to a power fitted on the other
   events (:func:`perfmod.models.bsp.step_exponent`);
3. the model predicts the target's other runs; the finer ones, not
   oversubscribed, are the held-out cases.

The default design follows the paper's Stampede2 experiments (§V-D): the
coarse run has 4x fewer cells than the held-out resolution.

Study contract: :func:`run` measures every run in one seeded random order
(:func:`perfmod.campaign.design.interleaved_order`: the coarse runs, the
held-out finer runs and the other events' runs interleaved, repetitions
spread), runs the experiments and returns the dataset; :func:`figures`
draws it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr
from tqdm.auto import tqdm

import perfmod.campaign as campaign
from perfmod.measure.proxies.swe import EVENTS
from perfmod.measure.runner import run_mpi
from perfmod.measure.validity import clean_reduce
from perfmod.models.bsp import (
    BSPFit,
    BSPParams,
    bsp_times,
    coarse_run_work,
    fit_bsp,
    kw_from_coarse_run,
    scaled_iterations,
    step_exponent,
)
from perfmod.studies.papers.sharif import LONG, QUANTITIES
from perfmod.viz.plots import plot_error_by_experiment, plot_halo_by_rank
from perfmod.viz.validation import plot_validation

PARAM_NAMES = ("k_w", "k_b", "o_h", "o_w", "o_l", "o_i", "o_c", "o_s", "k_r")
STUDY = "sharif_triton"

__all__ = ["measure_events", "fit_events", "events_step_exponent", "predict_event", "run_experiments", "analyse",
           "KW_RUNS", "STEP_SCALINGS", "METHODS", "error_summary", "method_comparison", "cell_costs", "step_ratio",
           "repetition_spread", "run", "figures"]


def measure_events(events: Sequence[str], ny: int, nx: int, dx: float, factors: Sequence[int],
                   nprocs: Sequence[int], t_end: float, reps: int = 3, progress: bool = True,
                   seed: int = 0, coarse_reps: int = 0, coarse_factor: int | None = None) -> xr.Dataset:
    """Run the flood proxy for every (event, factor, nprocs, rep) in one seeded random order.

    ``factor`` coarsens the finest DEM of ``ny x nx`` cells of size ``dx`` (m);
    ``t_end`` is the simulated time (s).  Every run of every event is
    training data for some experiments and held out in another, so all of
    them go in one interleaved order (:func:`perfmod.campaign.design.interleaved_order`),
    repetitions spread over the whole measurement: a slow spell of the
    machine falls on all configurations alike.  ``run_index`` is each run's
    position in that order (-1: a repetition not run).

    ``coarse_reps`` (when larger than ``reps``) repeats the runs of ``coarse_factor``
    (default: the coarsest factor) that often: they are short, and their median gives K_w.
    """
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        raise ValueError(f"unknown flood events {unknown}; known: {', '.join(EVENTS)}")
    for f in factors:
        if f < 1 or ny % f or nx % f:
            raise ValueError(f"coarsening factor {f} must be >= 1 and divide the finest grid {ny} x {nx}")
    coarse_factor = max(factors) if coarse_factor is None else coarse_factor
    per_factor = [max(reps, coarse_reps) if f == coarse_factor else reps for f in factors]
    shape = (len(events), len(factors), len(nprocs), max(per_factor))
    extra = ("steps", "wet_fraction", "mass")
    data = {q: np.full(shape, np.nan) for q in (*QUANTITIES, *extra)}
    flags = campaign.new_flags(shape)
    halo = np.full((*shape, max(nprocs)), np.nan)
    order = campaign.interleaved_order([per_factor[f] for _ in events for f in range(len(factors)) for _ in nprocs],
                                       seed)
    for k, r in tqdm(order, desc="flood runs", disable=not progress):
        e, rest = divmod(k, len(factors) * len(nprocs))
        f, p = divmod(rest, len(nprocs))
        res = run_mpi("perfmod.measure.proxies.swe", int(nprocs[p]),
                      ["--event", events[e], "--ny", ny, "--nx", nx, "--dx", dx, "--coarsen", factors[f],
                       "--t-end", t_end])
        for q in data:
            data[q][e, f, p, r] = res[q]
        halo[e, f, p, r, :nprocs[p]] = res["t_halo_ranks"]
        campaign.record_flags(flags, (e, f, p, r), res)
    fac = np.asarray(factors)
    p = np.asarray(nprocs)
    dims = ("event", "factor", "nprocs", "rep")
    attrs = {"steps": ("1", "time steps (iterations I)"), "wet_fraction": ("1", "final wet fraction"),
             "mass": ("m3", "final water volume")}
    ds = xr.Dataset(
        {**{f"{q}_measured": (dims, data[q], {"units": "s", "long_name": f"measured {LONG[q]}"}) for q in QUANTITIES},
         **{q: (dims, data[q], {"units": u, "long_name": ln}) for q, (u, ln) in attrs.items()},
         "halo_time": ((*dims, "rank"), halo, {"units": "s", "long_name": "halo-exchange time of each rank"}),
         "run_index": (dims, campaign.position_of(order, shape),
                       {"units": "1", "long_name": "position of the run in the measurement order"})},
        coords={"event": list(events), "factor": fac, "nprocs": p, "rep": np.arange(shape[-1]),
                "rank": np.arange(max(nprocs)),
                "cells": ("factor", (ny // fac) * (nx // fac), {"units": "1", "long_name": "cells (C)"}),
                "nx_cells": ("factor", nx // fac, {"units": "1", "long_name": "grid columns"}),
                "cell_size": ("factor", dx * fac, {"units": "m", "long_name": "cell size"}),
                "oversubscribed": ("nprocs", p > (os.cpu_count() or 1),
                                   {"units": "1", "long_name": "more ranks than cores"})},
    )
    ds = ds.assign(campaign.flag_variables(flags, dims))
    ds.attrs.update(measured_utc=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), finest_grid=f"{ny} x {nx}",
                    finest_cell_size_m=float(dx), simulated_time_s=float(t_end))
    return ds


MEASURED = (*[f"{q}_measured" for q in QUANTITIES], "steps", "wet_fraction", "mass")
"""The per-run values that interfered runs make NaN (:func:`perfmod.campaign.records.mask_interfered`)."""


def _runs(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Median over the clean repetitions of each (event, factor, nprocs) run, flattened (event-major).

    Interfered runs are NaN already (:data:`MEASURED`); a configuration without
    a clean run is left out.
    """
    m = ds.median("rep")
    ref = m.t_w_measured
    out = {k: xr.broadcast(v, ref)[0].transpose(*ref.dims).values.ravel()
           for k, v in (("C", m.cells), ("P", m.nprocs), ("nx", m.nx_cells), ("I", m.steps), ("event", m.event),
                        ("dx", m.cell_size))}
    out["H"] = np.where(out["P"] > 1, 2 * out["nx"], 0)  # halo cells per process: two rows (sharif_gol.halo_cells)
    for q in ("t_w", "t_c", "t_o"):
        out[q] = m[f"{q}_measured"].values.ravel()
    ok = np.isfinite(np.stack([out[k].astype(float) for k in ("I", "t_w", "t_c", "t_o")])).all(axis=0)
    return {k: v[ok] for k, v in out.items()}


def fit_events(ds: xr.Dataset, events: Sequence[str], nonneg: bool = False, weights: str = "relative") -> BSPFit:
    """Fit Eq. 1-3 and 6 on the medians of the runs of ``events``, K_w per event; oversubscribed runs left out.

    ``weights`` (:func:`perfmod.models.bsp.fit_bsp`): ``"relative"`` by default, because
    the repetitions of a run scatter by a constant fraction of its time, not a constant
    number of seconds (:func:`repetition_spread`), so ordinary least squares would let
    the longest runs set O_w and O_h alone.

    O_i (other time per iteration) is held at 0: the proxy times every part of
    a step as compute or communication, and the step count follows the cell
    count, so runs at a few resolutions could not separate O_i from O_c.
    """
    return _fit(_training(ds, events), nonneg, weights)


def events_step_exponent(ds: xr.Dataset, events: Sequence[str]) -> float:
    """:func:`perfmod.models.bsp.step_exponent` of the clean runs of ``events`` (medians, not oversubscribed)."""
    return _exponent(_training(ds, events))


def _training(ds: xr.Dataset, events: Sequence[str]) -> dict[str, np.ndarray]:
    """:func:`_runs` of ``events``, oversubscribed runs left out: what an experiment trains on."""
    return _runs(ds.sel(event=list(events), nprocs=~ds.oversubscribed.values))


def _fit(r: dict[str, np.ndarray], nonneg: bool, weights: str) -> BSPFit:
    return fit_bsp(r["C"], r["P"], r["I"], r["H"], r["t_w"], r["t_c"], r["t_o"], reduction=True, nonneg=nonneg,
                   scenario=r["event"], fixed={"O_i": 0.0}, weights=weights)


def _exponent(r: dict[str, np.ndarray]) -> float:
    return step_exponent(r["I"], r["dx"], r["event"])


KW_RUNS = ("coarse", "single")
"""Which runs of the target give its K_w: every coarse-resolution run that is not oversubscribed, pooled
(``"coarse"``, the default), or the paper's one single-rank coarse run (``"single"``)."""

STEP_SCALINGS = ("fitted", "cell_size")
"""How the target's coarse iteration count is scaled to the finer resolutions: by the cell-size ratio to the power
fitted on the other events (``"fitted"``, :func:`events_step_exponent`, the default) or by the ratio itself
(``"cell_size"``, the paper's §III-B)."""


def predict_event(ds: xr.Dataset, target: str, coarse_factor: int | None = None, nonneg: bool = False,
                  kw_runs: str = "coarse", step_scaling: str = "fitted", weights: str = "relative") -> xr.Dataset:
    """One experiment: fit on the other events, K_w and I from the coarse runs of ``target``, predict the rest.

    ``coarse_factor`` picks the coarse runs' resolution (default: the second
    finest, so the held-out runs have 4x its cells).  The iteration count is
    the single-rank coarse run's.  K_w (``kw_runs``): ``"single"`` takes it
    from that one run, as the paper does; ``"coarse"`` pools every clean
    coarse run that is not oversubscribed (1 and 2 ranks here,
    :func:`perfmod.models.bsp.kw_from_coarse_run`).  A short coarse run
    varies by 3-15 % between clean repetitions on a shared VM, and that
    error goes into every prediction of its event; pooling the runs the
    design measures anyway at that resolution halves the variance.
    None of them is held out.  The iteration count is scaled from the coarse
    run's by ``step_scaling`` (:data:`STEP_SCALINGS`): the paper's 1 / cell size
    under-counts the steps of a finer grid where it resolves steeper fronts,
    which the other events, measured at both resolutions, show
    (:func:`step_ratio`).  ``weights``: :func:`fit_events`.  Returns the target's runs over (``factor``, ``nprocs``)
    with ``<q>_measured`` (median over repetitions) and ``<q>_predicted``,
    relative errors, measured and predicted step counts, and the flags
    ``used_for_kw`` and ``held_out`` (finer than the coarse run, not
    oversubscribed); the fitted parameters and the step exponent are attributes.
    """
    if target not in ds.event.values:
        raise ValueError(f"event {target!r} was not measured; measured: {', '.join(map(str, ds.event.values))}")
    others = [str(e) for e in ds.event.values if e != target]
    if step_scaling not in STEP_SCALINGS:
        raise ValueError(f"step_scaling must be one of {', '.join(STEP_SCALINGS)}, not {step_scaling!r}")
    try:
        train = _training(ds, others)  # the medians once, for the fit and the step exponent
        fit, status = _fit(train, nonneg, weights), "fitted on the clean runs of the other events"
        exponent = _exponent(train) if step_scaling == "fitted" else 1.0
    except ValueError as err:  # too few clean runs of the other events (IdentifiabilityError): no valid figure
        fit, exponent, status = None, np.nan, f"not fitted: too few clean runs of the other events ({err})"
    factors = np.sort(ds.factor.values)
    if coarse_factor is None:
        coarse_factor = int(factors[1] if factors.size > 1 else factors[0])
    if coarse_factor not in factors:
        raise ValueError(f"coarse_factor {coarse_factor} was not measured; factors: {factors.tolist()}")
    if kw_runs not in KW_RUNS:
        raise ValueError(f"kw_runs must be one of {', '.join(KW_RUNS)}, not {kw_runs!r}")
    tgt = ds.sel(event=target)
    p0 = int(tgt.nprocs.min())
    coarse = tgt.sel(factor=coarse_factor, nprocs=p0).median("rep")
    procs = [p0] if kw_runs == "single" else [int(q) for q in tgt.nprocs.values[~tgt.oversubscribed.values]]
    kw_set = tgt.sel(factor=coarse_factor, nprocs=procs).median("rep")
    kw_set = kw_set.isel(nprocs=np.isfinite(kw_set.t_w_measured.values))  # clean runs only
    if fit is None:
        params = BSPParams(*[np.nan] * len(PARAM_NAMES))
    else:
        base = fit.params_for(k_w=1.0)
        k_w = np.nan  # no clean coarse run: no K_w, the target's predictions are NaN
        if np.isfinite(float(coarse.steps)) and kw_set.sizes["nprocs"]:
            pk = kw_set.nprocs.values
            halo_cells = np.where(pk > 1, 2 * int(kw_set.nx_cells), 0)
            work = coarse_run_work(pk, kw_set.steps.values, halo_cells, kw_set.t_w_measured.values,
                                   base.o_h, base.o_w)
            ok = work > 0  # a run all overhead under the fitted O_h, O_w says nothing of K_w
            left_out = ("coarse runs at " + ", ".join(str(int(q)) for q in pk[~ok]) + " rank(s) left out of K_w: "
                        "their compute time is all overhead under the fitted O_h and O_w")
            kw_set = kw_set.isel(nprocs=ok)
            if ok.any():
                k_w = kw_from_coarse_run(np.full(int(ok.sum()), float(kw_set.cells)), pk[ok], kw_set.steps.values,
                                         halo_cells[ok], kw_set.t_w_measured.values, base.o_h, base.o_w)
                status += "" if ok.all() else "; " + left_out
            else:
                status = "no K_w: " + left_out
        else:
            status = "no K_w: the coarse run of the target had no clean repetition"
        params = fit.params_for(k_w=k_w)
    f, p = xr.broadcast(tgt.factor, tgt.nprocs)
    iters = scaled_iterations(float(coarse.steps), float(coarse.cell_size), tgt.cell_size * xr.ones_like(p),
                              exponent if np.isfinite(exponent) else 1.0)
    cells = tgt.cells * xr.ones_like(p)
    halo = xr.where(p > 1, 2 * tgt.nx_cells, 0)
    t = bsp_times(cells, p, iters, halo, params)
    med = tgt.median("rep")
    out = xr.Dataset(coords={k: tgt.coords[k] for k in ("factor", "nprocs", "cells", "nx_cells", "cell_size",
                                                         "oversubscribed")})
    for q, key in (("t_w", "t_w"), ("t_c", "t_c"), ("t_o", "t_o"), ("total_time", "t_t")):
        out[f"{q}_measured"] = med[f"{q}_measured"].assign_attrs(units="s", long_name=f"measured {LONG[q]} (median)")
        out[f"{q}_predicted"] = t[key].transpose("factor", "nprocs").assign_attrs(
            units="s", long_name=f"predicted {LONG[q]}")
        out[f"{q}_error"] = ((out[f"{q}_predicted"] - out[f"{q}_measured"]) / out[f"{q}_measured"]).assign_attrs(
            units="1", long_name=f"relative error of {LONG[q]}: (predicted - measured) / measured")
    out["steps_measured"] = med.steps.assign_attrs(units="1", long_name="measured time steps (median)")
    out["steps_predicted"] = iters.transpose("factor", "nprocs").assign_attrs(
        units="1", long_name="time steps scaled from the coarse run by the cell-size ratio"
        + (" to the fitted power" if step_scaling == "fitted" else ""))
    used = p.isin(kw_set.nprocs.values if fit is not None else [])
    out["used_for_kw"] = ((f == coarse_factor) & used).transpose("factor", "nprocs").assign_attrs(
        units="1", long_name=f"the coarse runs that give K_w ({kw_runs}); I from the single-rank one")
    out["held_out"] = ((f < coarse_factor) & ~tgt.oversubscribed).transpose("factor", "nprocs").assign_attrs(
        units="1", long_name="held-out case: finer than the coarse run, not oversubscribed")
    out.attrs.update({f"fit_{k}": float(v) for k, v in vars(params).items()})
    out.attrs["coarse_factor"] = int(coarse_factor)
    out.attrs["kw_runs"] = kw_runs
    out.attrs["fit_step_exponent"] = float(exponent)
    out.attrs["fit_status"] = status
    out.attrs["trained_on"] = ", ".join(others)
    return out


def run_experiments(ds: xr.Dataset, targets: Sequence[str] | None = None, coarse_factor: int | None = None,
                    nonneg: bool = False, kw_runs: str = "coarse", step_scaling: str = "fitted",
                    weights: str = "relative") -> xr.Dataset:
    """:func:`predict_event` for every target event (the paper's experiments), stacked over ``event``."""
    targets = [str(e) for e in (ds.event.values if targets is None else targets)]
    units = {"k_w": "cells/s", "k_b": "cells/s", "o_h": "s/cell", "o_c": "s/cell"}
    parts = []
    for tgt in targets:
        res = predict_event(ds, tgt, coarse_factor, nonneg, kw_runs, step_scaling, weights)
        fitted = {f"fit_{k}": ("event", [res.attrs[f"fit_{k}"]],
                               {"units": units.get(k, "s"), "long_name": f"{k} of the experiment (paper 003 Table I)"
                                + (": from the target's coarse run" if k == "k_w" else ": fitted on the other events")})
                  for k in PARAM_NAMES}
        fitted["fit_step_exponent"] = ("event", [res.attrs["fit_step_exponent"]],
                                       {"units": "1", "long_name": "exponent b of steps ~ cell size ** -b: fitted on "
                                        "the other events (1: the paper's scaling)"})
        fitted["experiment_status"] = ("event", [res.attrs["fit_status"]],
                                       {"units": "1", "long_name": "how the experiment's model was obtained"})
        parts.append(res.drop_attrs(deep=False).expand_dims(event=[tgt]).assign(fitted))
    out = xr.concat(parts, dim="event")
    out["halo_time"] = ds.halo_time.sel(event=targets)
    for name in ("run_index", *campaign.FLAG_FIELDS):  # measured by measure_events (not in hand-built datasets)
        if name in ds:
            out[name] = ds[name].sel(event=targets)
    return out


def _clean(runs: xr.Dataset) -> xr.Dataset:
    """``runs`` with the interfered runs' :data:`MEASURED` values NaN (and an all-False ``interfered`` where none
    was recorded)."""
    if "interfered" not in runs:
        runs = runs.assign(interfered=xr.zeros_like(runs.t_w_measured, bool).assign_attrs(
            units="1", long_name="run disturbed by another process (none recorded)"))
    return campaign.mask_interfered(runs, [m for m in MEASURED if m in runs])


def analyse(runs: xr.Dataset, coarse_factor: int | None = None, nonneg: bool = False,
            kw_runs: str = "coarse", step_scaling: str = "fitted", weights: str = "relative") -> xr.Dataset:
    """The experiments on the clean runs of a :func:`measure_events` dataset (or its raw file, re-read).

    Interfered runs are made NaN (:data:`MEASURED`), so medians, fits and the
    coarse runs' K_w use clean repetitions only; an experiment whose other
    events leave too few clean runs is "not fitted", one whose coarse run had
    no clean repetition has no K_w: both predict NaN and say so in
    ``experiment_status``.  The dataset attribute ``fit_status`` sums them up,
    and :func:`perfmod.campaign.records.record_drops` records the dropped runs
    and ``clean_runs_missing``.
    """
    runs = _clean(runs)
    out = run_experiments(runs, coarse_factor=coarse_factor, nonneg=nonneg, kw_runs=kw_runs,
                          step_scaling=step_scaling, weights=weights)
    out.attrs.update({k: v for k, v in runs.attrs.items() if k != "measured_utc"})
    out.attrs.update(kw_runs=kw_runs, step_scaling=step_scaling, weights=weights)
    if "measured_utc" in runs.attrs:
        out.attrs["measured_utc"] = runs.attrs["measured_utc"]
    status = [str(v) for v in out.experiment_status.values]
    bad = [f"{e}: {st}" for e, st in zip(out.event.values, status, strict=True) if st.startswith(("not", "no "))]
    out.attrs["fit_status"] = ("not fitted: " + "; ".join(bad) if len(bad) == len(status) else
                               "fitted on the clean runs" + (f" (except {'; '.join(bad)})" if bad else ""))
    _, missing = clean_reduce(runs.t_w_measured, runs.interfered, "rep", "median")
    interfered, over = runs.interfered, runs.oversubscribed
    if "run_index" in runs and bool((runs.run_index < 0).any()):  # repetitions not run (coarse_reps) not counted
        ran = (runs.run_index >= 0).values
        over = over.broadcast_like(runs.interfered).transpose(*runs.interfered.dims)
        interfered, over = (xr.DataArray(v.values[ran], dims="run") for v in (interfered, over))
    return campaign.record_drops(out, interfered, over, missing, "flood runs")


def error_summary(res: xr.Dataset) -> pd.DataFrame:
    """Mean and largest absolute relative error over the held-out cases, per quantity (the Figure 5a numbers)."""
    rows = {}
    mask = res.held_out.astype(bool)
    for q in ("t_w", "t_c", "total_time", "steps"):
        err = res[f"{q}_error"] if q != "steps" else (res.steps_predicted - res.steps_measured) / res.steps_measured
        e = np.abs(err.where(mask)).values
        e = e[np.isfinite(e)]
        rows[q] = {"mean |error|": float(e.mean()) if e.size else np.nan,
                   "max |error|": float(e.max()) if e.size else np.nan, "cases": int(e.size)}
    return pd.DataFrame(rows).T


METHODS = {
    "paper": {"kw_runs": "single", "step_scaling": "cell_size", "weights": "absolute"},
    "pooled K_w": {"kw_runs": "coarse", "step_scaling": "cell_size", "weights": "absolute"},
    "pooled K_w, fitted steps": {"kw_runs": "coarse", "step_scaling": "fitted", "weights": "absolute"},
    "pooled K_w, fitted steps, relative fit": {"kw_runs": "coarse", "step_scaling": "fitted", "weights": "relative"},
}
"""The method choices :func:`method_comparison` sets side by side: the paper's (K_w from the one single-rank
coarse run, steps scaled by 1 / cell size, ordinary least squares), then each of perfmod's changes added in
turn; the last is :func:`run`'s default."""


def method_comparison(ds: xr.Dataset, runs: xr.Dataset | None = None) -> pd.DataFrame:
    """:func:`error_summary` of every method in :data:`METHODS` on the runs ``ds`` was analysed from, by ``method``.

    ``ds`` is an :func:`analyse` (or :func:`run`) result; the method it used (its
    attributes ``kw_runs``, ``step_scaling``, ``weights``) is summarised as it is,
    the others are analysed again with ``ds``'s ``coarse_factor`` and ``nonneg``
    (from its ``parameters`` attribute; :func:`analyse`'s defaults where it has none).

    Parameters
    ----------
    ds : xarray.Dataset
        The study's dataset.
    runs : xarray.Dataset, optional
        The :func:`measure_events` runs ``ds`` was analysed from; default: ``ds``'s
        first raw file (:func:`perfmod.campaign.records.read_raw`).

    Returns
    -------
    pandas.DataFrame
        :func:`error_summary`'s rows for each method in :data:`METHODS` order (index ``method``, quantity).
    """
    if ds.attrs.get("kw_runs") not in KW_RUNS:
        raise ValueError(f"dataset attribute kw_runs must be one of {', '.join(KW_RUNS)}, not "
                         f"{ds.attrs.get('kw_runs')!r} (not an analyse() result?)")
    own = {k: ds.attrs.get(k, old) for k, old in (("kw_runs", None), ("step_scaling", "cell_size"),
                                                  ("weights", "absolute"))}  # analysed before both choices existed
    params = json.loads(ds.attrs.get("parameters", "{}"))
    runs = campaign.read_raw(ds) if runs is None else runs
    return pd.concat({name: error_summary(ds if m == own else analyse(runs, params.get("coarse_factor"),
                                                                      bool(params.get("nonneg", False)), **m))
                      for name, m in METHODS.items()}, names=["method"])


def cell_costs(ds: xr.Dataset) -> pd.DataFrame:
    """Measured compute time per cell and step, ``P t_w / (C I)`` (ns), per event and rank count at every resolution.

    This is 1 / K_w as each run saw it (dry cells included in C, so a mostly
    dry event is cheaper per cell).  The study's method assumes it is the
    same at the coarse and the fine resolution: the column ``fine / coarse``
    (finest over coarsest, 1 = the K_w transfers) shows where it does not.
    Medians of the clean repetitions; NaN where a run had none.
    """
    cost = ds.t_w_measured * ds.nprocs / (ds.cells * ds.steps_measured) * 1e9
    fmin, fmax = ds.factor.min().item(), ds.factor.max().item()
    ok = ~ds.oversubscribed
    table = cost.sel(nprocs=ok).to_series().unstack("factor")
    table.columns = [f"{float(ds.cell_size.sel(factor=f)):g} m (ns)" for f in table.columns]
    ratio = (cost.sel(factor=fmin) / cost.sel(factor=fmax)).sel(nprocs=ok).to_series()
    table["fine / coarse"] = ratio
    return table


def step_ratio(ds: xr.Dataset) -> pd.DataFrame:
    """Step count of the finest over the coarsest resolution per event (fewest ranks), beside the cell-size ratio.

    §III-B: the iteration count scales with 1 / cell size (the CFL condition), an
    exponent of 1; ``step exponent`` is each event's own, ``log(step ratio) /
    log(cell-size ratio)``, and ``fitted exponent`` the one its experiment used,
    fitted on the other events (where the dataset has it).
    """
    st = ds.steps_measured.isel(nprocs=0)
    fmin, fmax = int(ds.factor.min()), int(ds.factor.max())
    ratio = st.sel(factor=fmin) / st.sel(factor=fmax)
    out = pd.DataFrame({"step ratio": ratio.to_series(), "cell-size ratio": fmax / fmin,
                        "step exponent": np.log(ratio.to_series()) / np.log(fmax / fmin)})
    if "fit_step_exponent" in ds:
        out["fitted exponent"] = ds.fit_step_exponent.to_series()
    return out


def repetition_spread(runs: xr.Dataset) -> pd.DataFrame:
    """How the clean repetitions of a run scatter, by resolution and rank count: in seconds and as a fraction.

    From a :func:`measure_events` dataset (interfered runs left out): the median over
    events of the repetitions' standard deviation of compute time ``t_w`` (s), of their
    coefficient of variation, and of ``t_w`` itself.  A spread in seconds that grows
    with the run while the fraction stays put is noise proportional to the time: the
    case for :func:`fit_events`'s relative weighting.
    """
    if "rep" not in runs.t_w_measured.dims:
        raise ValueError("repetition_spread needs the measured runs (measure_events, dimension rep), not the "
                         "analysed dataset; perfmod.campaign.records.read_raw(ds) reads them")
    runs = _clean(runs)
    tw = runs.t_w_measured
    sd = tw.std("rep", ddof=1)
    table = pd.DataFrame({"t_w (s)": tw.median("rep").median("event").to_series(),
                          "sd (s)": sd.median("event").to_series(),
                          "sd / mean": (sd / tw.mean("rep")).median("event").to_series(),
                          "repetitions": tw.notnull().sum("rep").min("event").to_series()})
    over = runs.oversubscribed.to_series()
    return table[~over.reindex(table.index.get_level_values("nprocs")).to_numpy()]


def run(events: Sequence[str] = ("valley", "bowl", "plain", "hills"), ny: int = 320, nx: int = 320, dx: float = 5.0,
        factors: Sequence[int] = (2, 1), nprocs: Sequence[int] = (1, 2), t_end: float = 200.0, reps: int = 3,
        coarse_reps: int = 5, coarse_factor: int = 2, kw_runs: str = "coarse", step_scaling: str = "fitted",
        weights: str = "relative", nonneg: bool = False, seed: int = 0, raw_out: str = "",
        progress: bool = True) -> xr.Dataset:
    """Measure every flood event and run the paper's experiments (003 §V-C/D/E, Figures 3-5) on this machine.

    Parameters
    ----------
    events : sequence of str
        Flood events (:data:`perfmod.measure.proxies.swe.EVENTS`); each is a target in turn.
    ny, nx : int
        Rows and columns of the finest DEM.
    dx : float
        Cell size of the finest DEM (m).
    factors : sequence of int
        Resolutions: squares of ``factor x factor`` finest cells averaged.
    nprocs : sequence of int
        MPI ranks; more than the cores are run oversubscribed, marked, not fitted or scored.
    t_end : float
        Simulated time of every run (s).
    reps : int
        Repetitions of every run (medians are fitted and compared).
    coarse_reps : int
        Repetitions of the ``coarse_factor`` runs, when more than ``reps``: they give K_w and are short,
        so a slow spell moves their median most (measured on 2026-11-24, development VM, commit 046b981: one
        target's three coarse 2-rank runs took 0.36, 0.45 and 0.47 s with nothing flagged, and its held-out
        error reached 14.7 %); cheap to repeat.
    coarse_factor : int
        Resolution of the target's coarse runs (K_w and iteration count).
    kw_runs : {"coarse", "single"}
        The target's runs that give K_w (:data:`KW_RUNS`, :func:`predict_event`).
    step_scaling : {"fitted", "cell_size"}
        How the coarse iteration count scales to the finer resolution (:data:`STEP_SCALINGS`).
    weights : {"relative", "absolute"}
        Least-squares weighting of the fit on the other events (:func:`fit_events`).
    nonneg : bool
        Non-negative least squares.
    seed : int
        Seed of the run order.
    raw_out : str
        Directory of the raw measurement; empty: ``data/raw/<host>/``.
    progress : bool
        Progress bar.

    Returns
    -------
    xarray.Dataset
        :func:`run_experiments` over (``event``, ``factor``, ``nprocs``): measured (median) and
        predicted times, errors, step counts, ``held_out`` and ``used_for_kw``, the fitted
        parameters per experiment, ``halo_time`` and ``run_index`` of every repetition;
        campaign.provenance and ``raw_files``.
    """
    parameters = {k: v for k, v in locals().items() if k != "progress"}
    runs = measure_events(events, ny, nx, dx, factors, nprocs, t_end, reps, progress=progress, seed=seed,
                          coarse_reps=coarse_reps, coarse_factor=coarse_factor)
    raw = campaign.save_raw(runs, STUDY, "runs", parameters,
                            "measurement: TRITON-like proxy runs (perfmod.measure.proxies.swe)", raw_out)
    out = analyse(runs, coarse_factor, nonneg, kw_runs, step_scaling, weights)
    return campaign.provenance(out, STUDY, "measurement: TRITON-like proxy on this machine; model of paper 003 "
                               "Eq. 1-3, 5, 6 and §III-B", parameters, [raw])


def headline(ds: xr.Dataset) -> dict[str, xr.DataArray]:
    """The study's headline figures (:mod:`perfmod.campaign.headline`): held-out total-time error, mean and max.

    From :func:`error_summary` (the paper's Figure 5a numbers: 4.2 % mean, 13 % max);
    NaN when the model was not fitted; then the run counts.
    """
    return campaign.total_time_headline(ds, error_summary, "held-out runs")


def figures(ds: xr.Dataset) -> dict[str, plt.Figure]:
    """The study's figures from its dataset (Figures 3-4, 5a and 5b counterparts).

    The halo exchange per rank is shown for the first event at the finest resolution and the largest
    rank count that is not oversubscribed (every repetition).
    """
    fit = plot_validation(ds, ["t_w", "t_c", "total_time"], x="nprocs", row="event", hue="factor",
                          shade="oversubscribed", mark="used_for_kw", logy=True)
    figs = {"measured_vs_predicted": fit, "error_by_experiment": plot_error_by_experiment(ds)}
    ok = ds.nprocs.values[~ds.oversubscribed.values]
    if ok.size:
        halo = ds.halo_time.sel(event=ds.event.values[0], factor=ds.factor.min(), nprocs=ok.max())
        figs["halo_by_rank"] = plot_halo_by_rank(halo)
    return figs
