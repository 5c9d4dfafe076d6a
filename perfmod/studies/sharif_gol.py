"""Paper 003's Game of Life study transposed to this machine (§V-A, V-B, Figure 2).

Runs of the GOL proxy (:mod:`perfmod.measure.proxies.gol`) on some case sizes and
rank counts fit the BSP parameters (:func:`perfmod.models.bsp.fit_bsp`); the fitted
model predicts held-out cases, and the dataset pairs measured and predicted
compute, communication, other and total time.

Halo cells per process: two rows of ``nx`` cells when P > 1, none on one
rank (nothing is exchanged).  Runs with more ranks than cores are marked
``oversubscribed``; runs another process disturbed are flagged ``interfered``
(:mod:`perfmod.measure.validity`), kept for the record and neither fitted
nor scored: the measured values are medians of the clean repetitions only.

Study contract: :func:`run` measures training and held-out cases in one
seeded random order (:func:`perfmod.campaign.design.interleaved_order`),
fits, predicts and returns the dataset; :func:`figures` draws it.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr
from tqdm.auto import tqdm

import perfmod.campaign as campaign
from perfmod.measure.runner import run_mpi
from perfmod.models.bsp import BSPFit, BSPParams, fit_bsp
from perfmod.studies.papers.sharif import LONG, QUANTITIES
from perfmod.viz.validation import plot_validation

__all__ = ["halo_cells", "measure_gol", "clean_medians", "fit_gol", "predict_gol", "run", "figures",
           "error_summary"]

STUDY = "sharif_gol"
PARAM_UNITS = {"k_w": "cells/s", "k_b": "cells/s", "o_h": "s/cell", "o_c": "s/cell"}



def halo_cells(nx: int, nprocs: int) -> int:
    """Halo cells a rank exchanges per generation: two rows of ``nx`` cells, none on one rank."""
    return 2 * nx if nprocs > 1 else 0


def measure_gol(cases: Sequence[Sequence[int]], nprocs: Sequence[int], reps: int = 3,
                progress: bool = True, seed: int = 0, held_out: Sequence[bool] | None = None) -> xr.Dataset:
    """Run the GOL proxy for every (case, nprocs, rep) in one seeded random order.

    ``cases`` are ``(ny, nx, generations)``; ``held_out`` flags the cases
    kept for validation (coordinate ``held_out``; default none), measured in
    the same interleaved order as the training cases so that load from other
    processes falls on both alike.  ``run_index`` is each run's position in
    that order; ``seed`` seeds the order and the proxy's initial grids.
    """
    cases = [tuple(int(v) for v in c) for c in cases]
    for c in cases:
        if len(c) != 3 or min(c) < 1:
            raise ValueError(f"a case is (ny, nx, generations) with positive entries, got {c}")
    held = np.zeros(len(cases), bool) if held_out is None else np.asarray(held_out, bool)
    if held.shape != (len(cases),):
        raise ValueError(f"held_out needs one flag per case ({len(cases)}), got {len(held)}")
    shape = (len(cases), len(nprocs), reps)
    data = {q: np.full(shape, np.nan) for q in QUANTITIES}
    flags = campaign.new_flags(shape)
    order = campaign.interleaved_order([reps] * (len(cases) * len(nprocs)), seed)
    for k, r in tqdm(order, desc="GOL runs", disable=not progress):
        i, j = divmod(k, len(nprocs))
        ny, nx, gens = cases[i]
        res = run_mpi("perfmod.measure.proxies.gol", int(nprocs[j]),
                      ["--ny", ny, "--nx", nx, "--generations", gens, "--seed", seed + r])
        for q in QUANTITIES:
            data[q][i, j, r] = res[q]
        campaign.record_flags(flags, (i, j, r), res)
    ny, nx, gens = (np.array([c[k] for c in cases]) for k in range(3))
    p = np.asarray(nprocs)
    ncores = os.cpu_count() or 1
    ds = xr.Dataset(
        {f"{q}_measured": (("case", "nprocs", "rep"), data[q], {"units": "s", "long_name": f"measured {LONG[q]}"})
         for q in QUANTITIES},
        coords={
            "case": np.arange(len(cases)), "nprocs": p, "rep": np.arange(reps),
            "ny": ("case", ny, {"units": "1", "long_name": "grid rows"}),
            "nx": ("case", nx, {"units": "1", "long_name": "grid columns"}),
            "generations": ("case", gens, {"units": "1", "long_name": "generations (I)"}),
            "cells": ("case", ny * nx, {"units": "1", "long_name": "cells (C)"}),
            "oversubscribed": ("nprocs", p > ncores, {"units": "1", "long_name": "more ranks than cores"}),
            "held_out": ("case", held, {"units": "1", "long_name": "held-out (validation) case"}),
        },
    )
    ds = ds.assign(campaign.flag_variables(flags, ("case", "nprocs", "rep")))
    ds["run_index"] = (("case", "nprocs", "rep"), campaign.position_of(order, shape),
                       {"units": "1", "long_name": "position of the run in the measurement order"})
    ds.attrs["measured_utc"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return ds


def clean_medians(ds: xr.Dataset) -> tuple[xr.Dataset, list[str]]:
    """Median over repetitions of the clean runs of each ``<q>_measured`` (NaN where none was clean).

    Returns the medians over (``case``, ``nprocs``) with the coordinates of
    ``ds`` and the configurations without a clean run.
    """
    return campaign.clean_medians(ds, [f"{q}_measured" for q in QUANTITIES])


def _flat(ds: xr.Dataset) -> dict[str, np.ndarray]:
    # the median over clean repetitions: a VM's occasional stalls should not move the fit
    m, _ = clean_medians(ds)
    c, p = xr.broadcast(m.cells, m.nprocs)
    gens, nx = xr.broadcast(m.generations, m.nprocs)[0], xr.broadcast(m.nx, m.nprocs)[0]
    h = xr.where(p > 1, 2 * nx, 0)
    return {"C": c.values.ravel(), "P": p.values.ravel(), "I": gens.values.ravel(), "H": h.values.ravel(),
            **{q: m[f"{q}_measured"].values.ravel() for q in ("t_w", "t_c", "t_o")}}


def fit_gol(train: xr.Dataset, nonneg: bool = False, include_oversubscribed: bool = False) -> BSPFit:
    """Fit the BSP model to the median over repetitions of each training run.

    Oversubscribed runs (more ranks than cores) are left out by default: time
    slicing puts the waiting of descheduled ranks into the communication time,
    which the model (dedicated processors, §II-A) does not describe.
    Runs flagged ``interfered`` are never fitted; a configuration without a
    clean run is left out, and too few clean configurations raise a
    ``ValueError`` saying so (instead of a fit on noise).
    """
    if not include_oversubscribed:
        train = train.sel(nprocs=~train.oversubscribed.values)
    f = _flat(train)
    ok = np.isfinite(f["t_w"]) & np.isfinite(f["t_c"]) & np.isfinite(f["t_o"])
    n_param = 4  # k_w, k_b, o_h, o_c (the smallest block needs two configurations)
    if ok.sum() < n_param:
        raise ValueError(f"fit_gol: only {int(ok.sum())} training configurations of {ok.size} have a clean "
                         f"(not interfered, not oversubscribed) run; need at least {n_param}. Another process "
                         "disturbed the runs: re-run on an idle machine (see the dataset's interfered flags).")
    f = {k: v[ok] for k, v in f.items()}
    return fit_bsp(f["C"], f["P"], f["I"], f["H"], f["t_w"], f["t_c"], f["t_o"], nonneg=nonneg)


def predict_gol(fit: BSPFit, test: xr.Dataset, level: float = 0.95) -> xr.Dataset:
    """Add ``<q>_predicted``, ``<q>_lower`` and ``<q>_upper`` (prediction interval) beside the measured times."""
    f = _flat(test)
    pred = fit.predict({k: f[k] for k in ("C", "P", "I", "H")}, interval="prediction", level=level)
    shape = (test.sizes["case"], test.sizes["nprocs"])
    out = test.copy()
    for q, key in (("t_w", "t_w"), ("t_c", "t_c"), ("t_o", "t_o"), ("total_time", "t_t")):
        part = pred.sel(component=key)
        for suffix in ("predicted", "lower", "upper"):
            attrs = {k: v for k, v in part[suffix].attrs.items() if k in ("interval", "level")}
            long_name = (f"predicted {LONG[q]}" if suffix == "predicted"
                         else f"{suffix} bound of the {level:.0%} prediction interval of {LONG[q]}")
            out[f"{q}_{suffix}"] = (("case", "nprocs"), part[suffix].values.reshape(shape),
                                    {"units": "s", "long_name": long_name, **attrs})
    med, _ = clean_medians(test)
    for q in ("t_w", "t_c", "total_time"):
        m = med[f"{q}_measured"]
        out[f"{q}_error"] = ((out[f"{q}_predicted"] - m) / m).assign_attrs(
            units="1", long_name=f"relative error of {LONG[q]}: (predicted - median of the clean measured runs) "
                                 "/ that median; NaN where no run was clean")
    return out


def error_summary(ds: xr.Dataset) -> pd.DataFrame:
    """Mean and largest absolute relative error over the held-out runs that are not oversubscribed, per quantity."""
    ok = ds.nprocs.values[~ds.oversubscribed.values]
    rows = {}  # NaN errors (no clean run) are not counted
    for q in ("t_w", "t_c", "total_time"):
        e = np.abs(ds[f"{q}_error"].sel(nprocs=ok).values.ravel())
        e = e[np.isfinite(e)]
        rows[q] = {"mean |error|": float(e.mean()) if e.size else np.nan,
                   "max |error|": float(e.max()) if e.size else np.nan, "cases": int(e.size)}
    return pd.DataFrame(rows).T


def _unfitted(test: xr.Dataset) -> xr.Dataset:
    """``test`` with NaN predictions, bounds and errors: what :func:`predict_gol` gives when nothing could be fitted."""
    out = test.copy()
    nan = np.full((test.sizes["case"], test.sizes["nprocs"]), np.nan)
    for q in QUANTITIES:
        for suffix in ("predicted", "lower", "upper"):
            out[f"{q}_{suffix}"] = (("case", "nprocs"), nan, {"units": "s", "long_name": f"{suffix} {LONG[q]} "
                                                               "(not fitted: too few clean training runs)"})
    for q in ("t_w", "t_c", "total_time"):
        out[f"{q}_error"] = (("case", "nprocs"), nan, {"units": "1", "long_name": f"relative error of {LONG[q]} "
                                                       "(not fitted: too few clean training runs)"})
    return out


def _stderr(fit: BSPFit) -> dict[str, float]:
    s = fit.stderr
    return {str(k): float(v) for k, v in dict(s() if callable(s) else s).items()}


def run(train_cases: Sequence[Sequence[int]] = ((800, 800, 1500), (800, 800, 3000), (1200, 1200, 1200)),
        test_cases: Sequence[Sequence[int]] = ((1000, 1000, 2000), (1400, 1400, 1000)),
        nprocs: Sequence[int] = (1, 2, 4), reps: int = 3, nonneg: bool = False, seed: int = 0,
        raw_out: str = "", progress: bool = True) -> xr.Dataset:
    """Measure, fit and validate the BSP model of the GOL proxy (paper 003 §V-A/B, Figure 2) on this machine.

    Parameters
    ----------
    train_cases, test_cases : sequence of (ny, nx, generations)
        Cases fitted, and cases predicted (held out).
    nprocs : sequence of int
        MPI rank counts; more than the cores are run oversubscribed, marked, and not fitted.
    reps : int
        Repetitions of every run (medians are fitted and compared).
    nonneg : bool
        Non-negative least squares.
    seed : int
        Seed of the run order (training and held-out runs interleaved) and of the initial grids.
    raw_out : str
        Directory of the raw measurement; empty: ``data/raw/<host>/``.
    progress : bool
        Progress bar.

    Returns
    -------
    xarray.Dataset
        The held-out cases over (``case``, ``nprocs``, ``rep``) with ``<q>_measured``,
        ``<q>_predicted``, ``<q>_lower``/``<q>_upper`` (95 % prediction interval) and
        ``<q>_error``; ``run_index``; the training runs as ``train_<q>_measured`` and
        ``train_run_index`` over ``train_case``; the fitted parameters ``param_<name>``
        and their standard errors ``stderr_<name>``; campaign.provenance and ``raw_files``.
    """
    parameters = {k: v for k, v in locals().items() if k != "progress"}
    cases = [*train_cases, *test_cases]
    held = [False] * len(train_cases) + [True] * len(test_cases)
    runs = measure_gol(cases, nprocs, reps, progress=progress, seed=seed, held_out=held)
    raw = campaign.save_raw(runs, STUDY, "runs", parameters,
                            "measurement: GOL proxy runs (perfmod.measure.proxies.gol)",
                            raw_out)
    measured = [f"{q}_measured" for q in QUANTITIES]
    runs = campaign.mask_interfered(runs, measured)
    train = runs.isel(case=~runs.held_out.values)
    test = runs.isel(case=runs.held_out.values)
    test = test.assign_coords(case=np.arange(test.sizes["case"]))
    try:
        fit, fit_status = fit_gol(train, nonneg=nonneg), "fitted on the clean training runs"
        out = predict_gol(fit, test).drop_vars("held_out")
    except ValueError as err:  # too few clean runs: say so instead of a fit on disturbed runs
        if "clean" not in str(err):
            raise
        fit, fit_status = None, f"not fitted: {err}"
        out = _unfitted(test).drop_vars("held_out")
    tr = train.drop_vars("held_out").rename(case="train_case", ny="train_ny", nx="train_nx",
                                            generations="train_generations", cells="train_cells")
    for name in [*measured, "run_index", *campaign.FLAG_FIELDS]:
        out[f"train_{name}"] = tr[name].assign_attrs(long_name=f"training runs: {tr[name].attrs['long_name']}")
    out = out.assign_coords({c: tr[c] for c in ("train_case", "train_ny", "train_nx", "train_generations",
                                                 "train_cells")})
    params = fit.params_for() if fit is not None else BSPParams(*[np.nan] * 8)
    for name, value in vars(params).items():
        out[f"param_{name}"] = ((), float(value), {"units": PARAM_UNITS.get(name, "s"),
                                                   "long_name": f"fitted {name} (paper 003 Table I)"})
    for name, value in (_stderr(fit) if fit is not None else {}).items():
        key = "".join(ch if ch.isalnum() else "_" for ch in name).strip("_")
        out[f"stderr_{key}"] = ((), value, {"units": "1", "long_name": f"standard error of the linear coefficient "
                                            f"{name} (in the units of its block's regression)"})
    out.attrs["fit_status"] = fit_status
    out.attrs["runs_training"] = int(train.sizes["case"] * train.sizes["nprocs"] * reps)
    out.attrs["runs_held_out"] = int(test.sizes["case"] * test.sizes["nprocs"] * reps)
    _, missing = clean_medians(runs)
    ncase = len(train_cases)
    missing = [("held-out " + m.replace(f"case={c}", f"case={c - ncase}") if c >= ncase else "training " + m)
               for m in missing for c in [int(m.split(",")[0].split("=")[1])]]
    campaign.record_drops(out, runs.interfered, runs.oversubscribed, missing, "training and held-out runs")
    return campaign.provenance(out, STUDY, "measurement: GOL proxy on this machine; model of paper 003 Eq. 1-5",
                               parameters, [raw])


def headline(ds: xr.Dataset) -> dict[str, xr.DataArray]:
    """The study's headline figures (:mod:`perfmod.campaign.headline`): held-out total-time error, mean and max.

    From :func:`error_summary` (held-out cases not oversubscribed, median of the clean
    runs); NaN when the model was not fitted; then the run counts.
    """
    return campaign.total_time_headline(ds, error_summary, "held-out cases (not oversubscribed)")


def figures(ds: xr.Dataset) -> dict[str, plt.Figure]:
    """The study's figures from its dataset: measured vs predicted per held-out case (Figure 2 counterpart)."""
    return {"measured_vs_predicted": plot_validation(ds, ["t_w", "t_c", "total_time"], x="nprocs", row="case",
                                                      shade="oversubscribed")}
