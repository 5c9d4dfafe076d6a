"""Paper 001 §6 (dynamic iterative programs) transposed to this machine with the Quicksilver-like proxy.

Experiment design (§6.2): runs of :func:`perfmod.measure.proxies.quicksilver.run_quicksilver`
over mesh sizes (mesh memory X1), target particle counts (particle memory
X2: the mean over iterations of the allocated particle arrays, a sample mean
as §6.3 prescribes) and worker threads (X3); each configuration repeated, each
repetition an observation; validation runs use mesh sizes and particle counts
not in the training set (§6.5).  An iteration is ``m`` tracking iterations;
population control every ``f`` iterations (the paper: m = 100, f = 20,
200 iterations).  Model units as the paper: memory in MB; the response is the
mean time per tracking iteration in s.

Models (R formulas):

- Model 1 (Table 8): ``(X2 + X2^2) * X3``: 6 coefficients.
- Model 2 (§6.4.1, "adding X1 and its interactions"):
  ``(X1 + X1^2) * (X2 + X2^2) * X3``: 18 coefficients, the count Table 9's
  residual degrees of freedom imply (456 - 444 = 12 more than Model 1's 6).
- Power (Table 10): ``X1 * X2 * X3``; energy (Table 11): ``(X2 + X2^2) * X3 * X4``
  with X4 the mean power.  They need a power sensor (:mod:`perfmod.measure.power`);
  without one only the paper's tables are shown.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr

import perfmod.campaign as campaign
from perfmod.measure import power
from perfmod.measure.interference import usable_cores
from perfmod.measure.proxies.quicksilver import run_quicksilver
from perfmod.models.regression import RegressionError, anova, compare_models
from perfmod.models.regression.gam import compare_with_lm
from perfmod.studies.papers import sasidharan as sc
from perfmod.studies.papers.sasidharan_published import MODELS

__all__ = ["FORMULAS", "POWER_FORMULA", "ENERGY_FORMULA", "design", "measure", "model_frame", "analyze", "run",
           "figures"]

#: Models 1 and 2 of §6.4.1, power (Table 10) and energy (Table 11): the paper's formulas
FORMULAS = {"1": MODELS["model1"].formula, "2": MODELS["model2"].formula}
POWER_FORMULA = MODELS["power"].formula
ENERGY_FORMULA = MODELS["energy"].formula

MB = 1e6

META = {
    "nx": ("1", "mesh elements along each axis"), "target_particles": ("1", "target particle count"),
    "rep": ("1", "repetition"), "set": ("1", "which set the run belongs to (train, test)"),
    "iterations": ("1", "iterations (K)"), "m": ("1", "tracking iterations per iteration"),
    "f": ("1", "iterations between population controls"),
    "x1_mesh_bytes": ("B", "X1: mesh memory"),
    "x2_particle_bytes": ("B", "X2: mean allocated particle memory over iterations"),
    "x3_threads": ("1", "X3: worker threads"),
    "mean_particles": ("1", "mean live particles over iterations"),
    "t_track": ("s", "mean time per tracking iteration (slowest worker)"),
    "t_track_median": ("s", "median over iterations of the time per tracking iteration"),
    "t_track_min": ("s", "fastest iteration's time per tracking iteration"),
    "t_iter": ("s", "mean time per iteration (m tracking iterations + population control share)"),
    "t_popctl": ("s", "mean time per population control"),
    "t_total_eq7": ("s", "total time by Eq. 7 from per-worker times"),
    "oversubscribed": ("1", "more threads than cores"),
}
POWER_META = {
    "max_power_w": ("W", "largest sampled power of the sensor's first zone"),
    "mean_power_w": ("W", "mean power of the sensor's first zone over the run"),
    "energy_per_track_j": ("J", "energy per tracking iteration (sensor's first zone)"),
}


def design(sizes: Sequence[int], particles: Sequence[int], threads: Sequence[int], label: str = "",
           reps: int | None = None) -> list[dict[str, Any]]:
    """All configurations: cubic meshes of ``n^3`` elements x target particle counts x threads.

    ``label`` and ``reps`` are stored in every configuration when given
    (see :func:`perfmod.studies.papers.sasidharan.run_order`).
    """
    out = []
    for n, p, t in itertools.product(sizes, particles, threads):
        if n < 1 or p < 1 or t < 1:
            raise ValueError(f"mesh size, particles and threads must be positive, got {n}, {p}, {t}")
        out.append({"nx": int(n), "particles": int(p), "threads": int(t), **({"set": label} if label else {}),
                    **({"reps": int(reps)} if reps is not None else {})})
    return out


def measure(configs: Sequence[dict[str, Any]], reps: int = 2, iterations: int = 10, m: int = 5, f: int = 5,
            seed: int = 0, with_power: bool = False, progress: bool = True) -> xr.Dataset:
    """Run the proxy for every configuration and repetition (seeded random order); one observation per run.

    Each run is probed in-process, flagged ``interfered`` when other processes
    took its cores and re-run a bounded number of times
    (:func:`perfmod.studies.papers.sasidharan.measure_runs`); the flags are in the dataset.

    With ``with_power`` each run is wrapped in :func:`perfmod.measure.power.measure`
    (raises if no sensor is readable) and the dataset gains ``max_power_w``,
    ``mean_power_w`` and ``energy_per_track_j``.
    """

    def one(c: dict[str, Any], r: int, i: int) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            return run_quicksilver(c["nx"], c["nx"], c["nx"], c["particles"], iterations, m, f, c["threads"],
                                   seed=seed + 1000 * r + i)
        if with_power:
            e = power.measure(run)
            res = e.value
            zone = next(iter(e.energy_j))
            res.update(max_power_w=e.max_power_w[zone], mean_power_w=e.mean_power_w[zone],
                       energy_per_track_j=e.energy_j[zone] / (iterations * m))
        else:
            res = run()
        res["oversubscribed"] = c["threads"] > usable_cores()
        return res

    return sc.measure_runs(configs, reps, seed, one, {**META, **(POWER_META if with_power else {})},
                           "Quicksilver runs", progress)


def model_frame(ds: xr.Dataset, response: str = "t_track_min") -> pd.DataFrame:
    """Regression frame in the paper's units: X1, X2 (MB), X3 (threads), ``time`` (s per tracking iteration).

    The fastest iteration of each run is the default response (robust to load
    from other processes on a shared machine); ``response="t_track"`` is the
    mean the paper used, ``"t_track_median"`` the median.
    Power columns, when measured: ``power`` (maximum power, mW), ``X4`` (mean power, mW),
    ``energy`` (mJ per tracking iteration), the paper's units (Tables 10, 11).
    """
    df = pd.DataFrame({"X1": ds.x1_mesh_bytes.values / MB, "X2": ds.x2_particle_bytes.values / MB,
                       "X3": ds.x3_threads.values.astype(float), "time": ds[response].values,
                       "nx": ds.nx.values, "particles": ds.target_particles.values, "rep": ds.rep.values})
    df["config"] = [f"{n}/{p}/{t:g}" for n, p, t in zip(df.nx, df.particles, df.X3, strict=True)]
    if "max_power_w" in ds:
        df["power"] = ds.max_power_w.values * 1e3
        df["X4"] = ds.mean_power_w.values * 1e3
        df["energy"] = ds.energy_per_track_j.values * 1e3
    return df


STUDY = "sasidharan_quicksilver"
MODEL_UNITS = {"RSE": "s", "rse_train": "s", "rmse_validation": "s"}
FRAME_UNITS = {"X1": "MB", "X2": "MB", "time": "s", "power": "mW", "X4": "mW", "energy": "mJ"}
COEF_UNITS = {c: "per unit of the term (model units: MB, s, mW, mJ)" for c in ("Estimate", "Std.Error")}


def run(train_sizes: Sequence[int] = (8, 12, 16, 20), train_particles: Sequence[int] = (10000, 25000, 60000),
        test_sizes: Sequence[int] = (10, 14, 18), test_particles: Sequence[int] = (15000, 40000),
        threads: Sequence[int] = (), reps: int = 2, test_reps: int = 1, iterations: int = 10, m: int = 5,
        f: int = 5, holdout_seed: int = 0, response: str = "t_track", measure_power: bool = True, seed: int = 0,
        raw_out: str = "", progress: bool = True) -> xr.Dataset:
    """Measure, fit, compare and validate paper 001 §6's models (Tables 8, 9, 12) on the Quicksilver-like proxy.

    Training and validation runs are measured in one seeded random order
    (:func:`perfmod.studies.papers.sasidharan.run_order`).  Parameters are the
    notebook's (see its parameters cell); ``response`` picks the time modelled
    (``t_track``: the mean, as the paper; ``t_track_median``; ``t_track_min``:
    the fastest iteration, for a loaded machine).  Power and energy (Tables 10,
    11, 13, 14) are measured and modelled only where a sensor is readable
    (:func:`perfmod.measure.power.probe`); the attribute ``power_sensors`` says.

    Returns
    -------
    xarray.Dataset
        Validation pairs ``model<k>_measured``/``_predicted``/``_lower``/``_upper`` (s, 95 %
        confidence interval) per model with the validation runs' X in ``model<k>_test_*``;
        the model table (``time_*`` over ``time_model``), ANOVA (``time_anova_*``),
        coefficients (``time_coef_<k>_*``), the GAM check (``time_gam_*``), training
        observations (``time_train_*``) and fitted values (``time_fitted_*``); with a power
        sensor also ``power_*`` and ``energy_*``; tables read back with
        :func:`perfmod.studies.papers.sasidharan.table`.  Every run's flags over ``run``
        (``interfered``, ...) and what was dropped: see :func:`analyze`.
    """
    threads = list(threads) or default_threads()
    sensors = power.probe()
    have_power = bool(measure_power and any(s.available for s in sensors))
    parameters = {k: v for k, v in locals().items() if k not in ("progress", "sensors")}
    configs = (design(train_sizes, train_particles, threads, label="train", reps=reps)
               + design(test_sizes, test_particles, threads, label="test", reps=test_reps))
    runs = measure(configs, reps, iterations, m, f, seed=seed, with_power=have_power, progress=progress)
    raw = campaign.save_raw(runs, STUDY, "runs", parameters,
                            "measurement: Quicksilver-like proxy (perfmod.measure.proxies.quicksilver.run_quicksilver)",
                            raw_out)
    ds = analyze(runs, response, holdout_seed, next((s.kind for s in sensors if s.available), ""))
    ds.attrs.update(power_sensors="; ".join(f"{s.kind}: {s.reason}" for s in sensors), power_measured=int(have_power))
    return campaign.provenance(ds, STUDY, "measurement: Quicksilver-like proxy on this machine; models of paper 001 §6 "
                               "(Tables 8, 9)", parameters, [raw])


def default_threads() -> list[int]:
    """Worker-thread counts of the default design: 1, 2, 4, ... up to the cores this process may use."""
    cores = usable_cores()
    return [1 << k for k in range(cores.bit_length()) if 1 << k <= cores]


def analyze(runs: xr.Dataset, response: str = "t_track", holdout_seed: int = 0, sensor: str = "") -> xr.Dataset:
    """Fit, compare and validate Models 1 and 2 (and power, energy) on the clean runs of a measurement (§6.4).

    Interfered and oversubscribed training runs are not fitted, and such
    validation runs not scored (their ``model<k>_measured`` is NaN): more
    worker threads than cores wait for cores (and for Python's GIL) in a way the
    paper's X3 terms cannot describe (measured on 2026-11-24 on the 2-core
    development VM, one study run with 4 threads fitted: both models' held-out
    errors 17 % mean, against 6 % and 3 % without them; commit 916e284).  When the clean training runs
    cannot fit the models, ``fit_status`` says "not fitted" and why, the
    predictions are NaN and no model table is stored.  The flags of every run
    are kept over ``run`` (:func:`perfmod.studies.papers.sasidharan.flag_record`),
    with :func:`perfmod.campaign.records.record_drops`'s attributes.
    """
    power_cols = [c for c in ("power", "energy") if "max_power_w" in runs]
    train, test, missing = sc.clean_sets(runs, lambda d: model_frame(d, response), ["time", *power_cols],
                                         drop_oversubscribed=True)
    n_train = int((runs.set.values == "train").sum())
    cols = ["X1", "X2", "X3", "time", "config"]
    ds = sc.add_table(xr.Dataset(), "time_train", train[cols], FRAME_UNITS, dim="time_obs")
    try:
        models = sc.fit_all(train, FORMULAS)
        cv = compare_models(FORMULAS, train, "holdout", test_size=40 / 490, groups="config", seed=holdout_seed)
        gam = compare_with_lm(FORMULAS["1"], train, smooth=["X2"], linear=["X1", "X3"], test_size=40 / 490,
                              groups="config", seed=holdout_seed)
        table = sc.model_table(models).join(cv[["rse_train", "rmse_validation", "ratio", "chosen"]])
        time_anova = anova(*models.values(), names=list(models))
    except RegressionError as err:  # too few clean runs: say so instead of fitting disturbed ones
        status = sc.unfit_reason(err, len(train), n_train)
        for key in FORMULAS:
            ds = ds.merge(sc.study_dataset({f"model{key}": (sc.unfitted_table(test, "time", status), "s",
                                            f"mean time per tracking iteration, Model {key}")}, {}))
            ds = sc.add_table(ds, f"model{key}_test", test[["X1", "X2", "X3"]].reset_index(drop=True), FRAME_UNITS,
                              dim=f"model{key}_run")
        ds.attrs.update(fit_status=status, chosen_model="", validation_rmse_over_training_rse=float("nan"))
    else:
        chosen = str(cv.index[cv.chosen][0])
        ds = sc.add_table(ds, "time", table, MODEL_UNITS, dim="time_model")
        ds = sc.add_table(ds, "time_anova", time_anova)
        for key, mdl in models.items():
            ds = sc.add_table(ds, f"time_coef_{key}", mdl.coef_table(), COEF_UNITS)
            ds = ds.merge(sc.study_dataset({f"model{key}": (sc.validation_table(mdl, test), "s",
                                                            f"mean time per tracking iteration, Model {key}")}, {}))
            ds = sc.add_table(ds, f"model{key}_test", test[["X1", "X2", "X3"]].reset_index(drop=True), FRAME_UNITS,
                              dim=f"model{key}_run")
        ds = sc.add_table(ds, "time_gam", gam)
        ds = sc.add_table(ds, "time_fitted", pd.DataFrame({k: mdl.fitted for k, mdl in models.items()}),
                          dict.fromkeys(models, "s"), dim="time_obs")
        if power_cols:
            try:
                ds = _power(ds, train, test, sensor)
            except RegressionError as err:
                ds.attrs["power_fit_status"] = sc.unfit_reason(err, len(train), n_train)
        stats = sc.validation_errors(ds, f"model{chosen}", n_coef=len(models[chosen].coef))
        ds.attrs.update(fit_status="fitted on the clean training runs", chosen_model=chosen,
                        validation_rmse_over_training_rse=float(stats["rmse"] / models[chosen].rse))
    ds.attrs.update(runs_training=int(len(train)), runs_validation=int(np.isfinite(test.time).sum()))
    ds = ds.merge(sc.flag_record({"runs": (runs, model_frame(runs, response).config.tolist())}))
    return campaign.record_drops(ds, ds.interfered, ds.oversubscribed, missing, "training and validation runs")


def _power(ds: xr.Dataset, train: pd.DataFrame, test: pd.DataFrame, sensor: str) -> xr.Dataset:
    """Power (Table 10) and energy (Table 11) models fitted and validated (Tables 13, 14) with a sensor's data."""
    pmodel = sc.fit_all(train, {"power": POWER_FORMULA, "energy": ENERGY_FORMULA})
    for key, unit in (("power", "mW"), ("energy", "mJ")):
        ds = sc.add_table(ds, f"{key}_coef", pmodel[key].coef_table(), COEF_UNITS)
        ds = ds.merge(sc.study_dataset({key: (sc.validation_table(pmodel[key], test), unit,
                                              f"{key} model (measured with {sensor})")}, {}))
    return ds


def headline(ds: xr.Dataset) -> dict[str, xr.DataArray]:
    """The study's headline figures (:mod:`perfmod.campaign.headline`): validation errors of Models 1 and 2.

    Mean and largest absolute relative error of each model on the validation runs (the
    Table 12 counterpart); NaN when the model was not fitted; then the run counts.
    """
    figs = {}
    for k in FORMULAS:
        mean, top = campaign.mean_max(campaign.abs_rel_errors(ds[f"model{k}_measured"], ds[f"model{k}_predicted"]))
        figs[f"model{k}_error_mean"] = (mean, "1", f"mean |relative error| of Model {k} on the validation runs")
        figs[f"model{k}_error_max"] = (top, "1", f"largest |relative error| of Model {k} on the validation runs")
    return campaign.headline_figures(ds, figs)


def figures(ds: xr.Dataset) -> dict[str, plt.Figure]:
    """The study's figures from its dataset (Figure 10 and 13 counterparts)."""
    tr = sc.table(ds, "time_train")
    scatter = sc.plot_scatter(tr, "X2", "time", ["X3"], "mean particle memory X2 [MB]",
                              "mean time per tracking iteration [s]", "Figure 10 counterpart (measured)")
    if not sc.fitted(ds):  # too few clean runs: the measured runs only
        return {"fig10_particle_memory_vs_time": scatter}
    chosen = ds.attrs["chosen_model"]
    name = f"model{chosen}"
    val = pd.DataFrame({"measured": ds[f"{name}_measured"].values, "fit": ds[f"{name}_predicted"].values,
                        "lower": ds[f"{name}_lower"].values, "upper": ds[f"{name}_upper"].values})
    return {
        "fig10_particle_memory_vs_time": scatter,
        "fig10_model_fit": sc.plot_fit_vs_measured(
            tr, "time", sc.table(ds, "time_fitted").to_dict("series"), "X2", "mean particle memory X2 [MB]",
            "mean time per tracking iteration [s]", "Figure 10 counterpart: Models 1 and 2"),
        "fig13_validation": sc.plot_validation(
            val, ds[f"{name}_test_X2"].values, "mean particle memory X2 [MB]", "mean time per tracking iteration [s]",
            f"Figure 13 counterpart: model {chosen}"),
    }
