"""Paper 001 §5 (static iterative programs) transposed to this machine with the Sedov proxy.

Experiment design (§5.1.1, §5.2.1): runs of :mod:`perfmod.measure.proxies.sedov`
over mesh sizes (memory X1 spanning more than 10x), chunk counts (X2, the
counterpart of the GPU thread count) and node decompositions (X3, the
maximum peer edge-cut, varies with the node split axis); every run is
repeated and every repetition is an observation, as in the paper (275 = 55
configurations x 5).  Training and validation use disjoint mesh sizes.
The distributed version adds processes (X5) and inter-process edges (X4).

Model units are the paper's scale adapted to this machine: memory in MB
(paper: GB), time per iteration in ms; X2, X3, X4, X5 are counts.  The
measured datasets keep SI units (bytes, seconds).

Models (R formulas; the coefficient lists of Tables 1, 3, 5 and 6):

- A: ``X1 + X1^2 + X2 + X3`` (no interactions)
- B: ``(X1 + X1^2) * X2`` (drops X3, adds X1X2 and X1^2X2)
- C: ``(X1 + X1^2) * X2 * X3`` (all interactions, 12 coefficients as Table 1)
- communication (Table 5): ``X1 + X1^2 + X4 + X5``
- full (Table 6): the 16 coefficients of Table 6 (C's terms plus X4, X5, X1X4, X1^2X4)
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr

import perfmod.campaign as campaign
from perfmod.measure.proxies.sedov import run_shared
from perfmod.models.regression import NotNestedWarning, RegressionError, anova, compare_models
from perfmod.models.regression.gam import compare_with_lm
from perfmod.studies.papers import sasidharan as sc
from perfmod.studies.papers.sasidharan_published import MODELS

__all__ = ["FORMULAS", "COMM_FORMULAS", "FULL_FORMULAS", "design", "measure_shared", "measure_distributed",
           "model_frame", "run", "figures"]

#: Models A, B, C of §5.1.2, the paper's formulas (perfmod.studies.papers.sasidharan_published.MODELS)
FORMULAS = {"A": MODELS["A"].formula, "B": MODELS["B"].formula, "C": MODELS["C_P100"].formula}
#: communication models of §5.2.2: X4 only, X4 and X5, and Table 5's (response: communication time)
COMM_FORMULAS = {
    "X4": "t_comm ~ X4",
    "X4+X5": "t_comm ~ X4 + X5",
    "comm (Table 5)": MODELS["comm"].formula.replace("time ~", "t_comm ~", 1),
}
#: the full model of Table 6 against Model C without X4 and X5 (§5.2.2)
FULL_FORMULAS = {"C (no X4, X5)": MODELS["C_P100"].formula, "full (Table 6)": MODELS["full"].formula}

MB, MS = 1e6, 1e3

SHARED_META = {
    "nx": ("1", "mesh elements along x"), "ny": ("1", "mesh elements along y"), "nz": ("1", "mesh elements along z"),
    "node_axis": ("1", "axis of the node decomposition"), "rep": ("1", "repetition"),
    "set": ("1", "which set the run belongs to (train, test)"),
    "workers": ("1", "worker threads (partitions, the paper's GPUs)"),
    "x1_bytes": ("B", "X1: persistent memory of the proxy's arrays"),
    "x2_chunks": ("1", "X2: vectorized chunks per worker (counterpart of GPU threads)"),
    "x3_peer_edges": ("1", "X3: largest edge-cut between workers (peer accesses)"),
    "t_iter": ("s", "measured time per iteration (loop time / iterations)"),
    "t_iter_median": ("s", "median over iterations of the time per iteration"),
    "t_iter_min": ("s", "fastest iteration of the run"),
    "iterations": ("1", "iterations timed"),
    "e_total_error": ("1", "relative change of total energy over the run (physics check)"),
}
DIST_META = {
    **SHARED_META,
    "x1_bytes": ("B", "X1: largest persistent memory of a process"),
    "x4_interprocess_edges": ("1", "X4: largest count of element-node references to other processes' nodes"),
    "x5_processes": ("1", "X5: MPI processes"),
    "t_comp": ("s", "computation time per iteration (Eq. 4 / iterations)"),
    "t_comm": ("s", "communication time per iteration (Eq. 5 / iterations)"),
    "oversubscribed": ("1", "more ranks x workers than cores"),
}


def design(sizes: Sequence[Sequence[int]], chunks: Sequence[int], axes: Sequence[str],
           nprocs: Sequence[int] = (1,), label: str = "", reps: int | None = None) -> list[dict[str, Any]]:
    """All configurations (mesh ``(nx, ny, nz)`` x chunks x node axis x processes) as dictionaries.

    ``label`` (``"train"``, ``"test"``) and ``reps`` are stored in every
    configuration when given (see :func:`perfmod.studies.papers.sasidharan.run_order`).
    """
    out = []
    for size, c, ax, p in itertools.product(sizes, chunks, axes, nprocs):
        if len(size) != 3 or min(size) < 1:
            raise ValueError(f"a mesh size is (nx, ny, nz) with positive entries, got {size}")
        if ax not in ("x", "y", "z"):
            raise ValueError(f"node axis must be x, y or z, got {ax!r}")
        out.append({"nx": int(size[0]), "ny": int(size[1]), "nz": int(size[2]), "chunks": int(c),
                    "node_axis": ax, "nprocs": int(p), **({"set": label} if label else {}),
                    **({"reps": int(reps)} if reps is not None else {})})
    return out


def measure_shared(configs: Sequence[dict[str, Any]], reps: int = 3, iterations: int = 20, workers: int = 2,
                   seed: int = 0, progress: bool = True) -> xr.Dataset:
    """Run the shared-memory proxy for every configuration and repetition; one observation per run.

    Each run is probed in-process and flagged ``interfered`` when other
    processes took its cores (re-run up to the bounded number of times of
    :func:`perfmod.measure.runner.rerun_while_interfered`; the flags are in the
    dataset, :data:`perfmod.studies.papers.sasidharan.FLAG_COLUMNS`).
    """
    import os

    def one(c: dict[str, Any], r: int, i: int) -> dict[str, Any]:
        res = run_shared(c["nx"], c["ny"], c["nz"], iterations, workers, c["chunks"], c["node_axis"])
        res["e_total_error"] = (res["e_internal"] + res["e_kinetic"] - res["e_initial"]) / res["e_initial"]
        res["oversubscribed"] = workers > (os.cpu_count() or 1)
        return res

    return sc.measure_runs(configs, reps, seed, one, SHARED_META, "Sedov shared-memory runs", progress)


def measure_distributed(configs: Sequence[dict[str, Any]], reps: int = 2, iterations: int = 20, workers: int = 2,
                        seed: int = 0, progress: bool = True) -> xr.Dataset:
    """Run the MPI proxy (``configs[i]["nprocs"]`` ranks of ``workers`` threads) for every configuration.

    Runs of one process count share a launch, in batches
    (:func:`perfmod.studies.papers.sasidharan.measure_mpi_runs`); disturbed runs are
    flagged and re-run; the flags are in the dataset.
    """
    import os

    def args(c: dict[str, Any]) -> list[Any]:
        return ["--nx", c["nx"], "--ny", c["ny"], "--nz", c["nz"], "--iterations", iterations,
                "--workers", workers, "--chunks", c["chunks"], "--node-axis", c["node_axis"]]

    def finish(c: dict[str, Any], res: dict[str, Any]) -> None:
        res["e_total_error"] = (res["e_internal"] + res["e_kinetic"] - res["e_initial"]) / res["e_initial"]
        res["oversubscribed"] = c["nprocs"] * workers > (os.cpu_count() or 1)

    return sc.measure_mpi_runs(configs, reps, seed, "perfmod.measure.proxies.sedov_mpi", args, finish, DIST_META,
                               "Sedov MPI runs", progress)


def model_frame(ds: xr.Dataset, response: str = "t_iter_min") -> pd.DataFrame:
    """Regression frame in the model units: X1 (MB), X2-X5 (counts), ``time`` and ``t_comm`` (ms).

    ``time`` is by default the fastest iteration of each run: on a machine
    shared with other work the mean and the median of a run carry that load
    (on the development VM, refitting the same runs, Model C's training RSE
    was 10.5 ms on the mean, 11.6 on the median and 4.9 on the fastest
    iteration); ``response="t_iter"`` takes the mean as the paper did,
    ``"t_iter_median"`` the median.  ``config`` labels the configuration
    (repetitions share it), for cross-validation splits that keep
    repetitions together.
    """
    df = pd.DataFrame({"X1": ds.x1_bytes.values / MB, "X2": ds.x2_chunks.values.astype(float),
                       "X3": ds.x3_peer_edges.values.astype(float), "time": ds[response].values * MS,
                       "nx": ds.nx.values, "ny": ds.ny.values, "nz": ds.nz.values,
                       "node_axis": ds.node_axis.values, "rep": ds.rep.values})
    df["config"] = [f"{a}x{b}x{c}/{x2:g}/{ax}" for a, b, c, x2, ax in
                    zip(df.nx, df.ny, df.nz, df.X2, df.node_axis, strict=True)]
    if "x4_interprocess_edges" in ds:
        df["X4"] = ds.x4_interprocess_edges.values.astype(float)
        df["X5"] = ds.x5_processes.values.astype(float)
        df["t_comm"] = ds.t_comm.values * MS
        df["t_comp"] = ds.t_comp.values * MS
        df["config"] = df.config + [f"/P{p:g}" for p in df.X5]
    return df


STUDY = "sasidharan_sedov"
CV_COLUMNS = ["rse_train", "rmse_validation", "ratio", "chosen"]
MODEL_UNITS = {"RSE": "ms", "rse_train": "ms", "rmse_validation": "ms"}
COEF_UNITS = {c: "ms per unit of the term (model units: MB, ms)" for c in ("Estimate", "Std.Error")}
FRAME_UNITS = {"X1": "MB", "time": "ms", "t_comm": "ms", "t_comp": "ms"}


def _anova(models: dict[str, Any]) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotNestedWarning)  # A is not nested in B (B drops X3), as in the paper
        return anova(*models.values(), names=list(models), strict=False)


def _fits(ds: xr.Dataset, name: str, frame: pd.DataFrame, formulas: dict[str, str], holdout_seed: int,
          test_size: float, columns: list[str]) -> tuple[xr.Dataset, dict[str, Any], str]:
    """Fit ``formulas`` on ``frame``; store the model table with hold-out errors, ANOVA, coefficients, fitted values."""
    models = sc.fit_all(frame, formulas)
    cv = compare_models(formulas, frame, "holdout", test_size, groups="config", seed=holdout_seed)
    ds = sc.add_table(ds, name, sc.model_table(models).join(cv[CV_COLUMNS]), MODEL_UNITS, dim=f"{name}_model")
    ds = sc.add_table(ds, f"{name}_anova", _anova(models))
    for key, m in models.items():
        ds = sc.add_table(ds, f"{name}_coef_{key}", m.coef_table(), COEF_UNITS)
    ds = sc.add_table(ds, f"{name}_train", frame[columns], FRAME_UNITS, dim=f"{name}_obs")
    ds = sc.add_table(ds, f"{name}_fitted", pd.DataFrame({k: m.fitted for k, m in models.items()}),
                      dict.fromkeys(models, "ms"), dim=f"{name}_obs")
    return ds, models, str(cv.index[cv.chosen][0])


def _validate(ds: xr.Dataset, name: str, model: Any, test: pd.DataFrame, columns: list[str], what: str) -> xr.Dataset:
    val = sc.validation_table(model, test)
    ds = ds.merge(sc.study_dataset({name: (val, "ms", what)}, {}))
    return sc.add_table(ds, f"{name}_test", test[columns].reset_index(drop=True), FRAME_UNITS, dim=f"{name}_run")


def run(train_sizes: Sequence[Sequence[int]] = ((12, 12, 12), (17, 17, 17), (22, 22, 22), (27, 27, 27), (32, 32, 32)),
        test_sizes: Sequence[Sequence[int]] = ((15, 15, 15), (20, 20, 20), (25, 25, 25), (30, 30, 30)),
        train_chunks: Sequence[int] = (1, 4, 16), test_chunks: Sequence[int] = (2, 8),
        node_axes: Sequence[str] = ("z", "x"), workers: int = 2, reps: int = 2, test_reps: int = 1,
        iterations: int = 20, holdout_seed: int = 0, response: str = "t_iter", distributed: bool = True,
        mpi_train_sizes: Sequence[Sequence[int]] = ((12, 12, 12), (16, 16, 16), (20, 20, 20), (24, 24, 24)),
        mpi_test_sizes: Sequence[Sequence[int]] = ((14, 14, 14), (22, 22, 22)), mpi_nprocs: Sequence[int] = (1, 2),
        mpi_chunks: Sequence[int] = (1, 4), mpi_workers: int = 2, mpi_reps: int = 2, mpi_test_reps: int = 2,
        seed: int = 0, raw_out: str = "", progress: bool = True) -> xr.Dataset:
    """Measure, fit, compare and validate paper 001 §5's models on the Sedov proxy (shared memory, and MPI).

    Training and validation runs are measured in one seeded random order
    (:func:`perfmod.studies.papers.sasidharan.run_order`).  Parameters are the
    notebook's (see its parameters cell); ``response`` picks the time per
    iteration modelled (``t_iter``: the mean, as the paper; ``t_iter_median``;
    ``t_iter_min``: the fastest iteration, for a loaded machine).

    Returns
    -------
    xarray.Dataset
        Validation pairs ``shared_measured``/``_predicted``/``_lower``/``_upper`` (ms, 95 %
        confidence interval) with the validation runs' X in ``shared_test_*``; the model
        table (``shared_*`` over ``shared_model``), ANOVA (``shared_anova_*``), coefficients
        of every model (``shared_coef_<model>_*``), the training observations
        (``shared_train_*``) and fitted values (``shared_fitted_*``); the same with prefix
        ``mpi`` (communication models ``mpi_comm*``, full models ``mpi_full*``) when
        ``distributed``; read tables back with :func:`perfmod.studies.papers.sasidharan.table`.
        Every run measured, over ``run`` (coordinates ``run_part``, ``run_set``,
        ``run_config``, ``run_rep``): ``interfered`` and the other flags of
        :data:`perfmod.campaign.records.FLAG_FIELDS`, ``oversubscribed``.  Only clean
        runs are fitted and scored (an interfered validation run's measured value is
        NaN); ``fit_status``/``mpi_fit_status`` say "not fitted" and why when the
        clean training runs cannot fit the models (predictions NaN, no model
        tables); :func:`perfmod.campaign.records.record_drops` attributes.
    """
    parameters = {k: v for k, v in locals().items() if k != "progress"}
    configs = (design(train_sizes, train_chunks, node_axes, label="train", reps=reps)
               + design(test_sizes, test_chunks, node_axes, label="test", reps=test_reps))
    runs = measure_shared(configs, reps, iterations, workers, seed=seed, progress=progress)
    raw = [campaign.save_raw(runs, STUDY, "shared", parameters,
                             "measurement: Sedov proxy, shared-memory version "
                             "(perfmod.measure.proxies.sedov.run_shared)",
                             raw_out)]
    ds, missing = analyze_shared(runs, response, holdout_seed)
    parts = {"shared": (runs, model_frame(runs, response).config.tolist())}
    if distributed:
        ds, path, mpi_runs, mpi_missing = _distributed(ds, parameters, progress)
        raw.append(path)
        parts["mpi"] = (mpi_runs, model_frame(mpi_runs, response).config.tolist())
        missing += [f"mpi {m}" for m in mpi_missing]
    ds = ds.merge(sc.flag_record(parts))
    ds = campaign.record_drops(ds, ds.interfered, ds.oversubscribed, missing,
                               "shared-memory" + (" and MPI" if distributed else "") + " runs",
                               oversubscribed_dropped=False)
    return campaign.provenance(ds, STUDY, "measurement: Sedov proxy on this machine; models of paper 001 §5 "
                               "(Models A, B, C; Tables 5, 6)", parameters, raw)


def analyze_shared(runs: xr.Dataset, response: str = "t_iter", holdout_seed: int = 0) -> tuple[xr.Dataset, list[str]]:
    """Fit, compare and validate Models A, B, C on the clean runs of a shared-memory measurement (§5.1).

    Interfered training runs are not fitted and interfered validation runs not
    scored (their ``shared_measured`` is NaN).  When the clean training runs
    cannot fit the models the attribute ``fit_status`` says "not fitted" and
    why, the predictions are NaN and no model table is stored.

    Returns
    -------
    (xarray.Dataset, list of str)
        The shared-memory part of :func:`run`'s dataset, and the configurations without a clean run.
    """
    train, test, missing = sc.clean_sets(runs, lambda d: model_frame(d, response), ["time"])
    n_train = int((runs.set.values == "train").sum())
    cols = ["X1", "X2", "X3", "time", "node_axis", "config"]
    what = "time per iteration, shared-memory Sedov proxy"
    try:
        ds, models, chosen = _fits(xr.Dataset(), "shared", train, FORMULAS, holdout_seed, 43 / 275, cols)
        ds = _validate(ds, "shared", models[chosen], test, ["X1", "X2", "X3"], what)
        ds = sc.add_table(ds, "shared_gam", compare_with_lm(FORMULAS[chosen], train, smooth=["X1", "X3"],
                                                           linear=["X2"], test_size=43 / 275, groups="config",
                                                           seed=holdout_seed))
    except RegressionError as err:  # too few clean runs: say so instead of fitting disturbed ones
        status = sc.unfit_reason(err, len(train), n_train)
        ds = _unfitted(xr.Dataset(), "shared", train, test, cols, ["X1", "X2", "X3"], what, status)
        ds.attrs.update(fit_status=status, chosen_model="", validation_rmse_over_training_rse=float("nan"))
    else:
        stats = sc.validation_errors(ds, "shared", n_coef=len(models[chosen].coef))
        ds.attrs.update(fit_status="fitted on the clean training runs", chosen_model=chosen,
                        validation_rmse_over_training_rse=float(stats["rmse"] / models[chosen].rse))
    sets = sc.split_sets(runs)
    ds.attrs.update(max_energy_error=float(np.abs(sets["train"].e_total_error).max()),
                    runs_training=int(len(train)), runs_validation=int(np.isfinite(test.time).sum()))
    return ds, missing


def _unfitted(ds: xr.Dataset, name: str, train: pd.DataFrame, test: pd.DataFrame, columns: list[str],
              xcols: list[str], what: str, why: str) -> xr.Dataset:
    """What :func:`_fits` and :func:`_validate` store when nothing could be fitted: measured values, NaN fits."""
    ds = sc.add_table(ds, f"{name}_train", train[columns], FRAME_UNITS, dim=f"{name}_obs")
    ds = ds.merge(sc.study_dataset({name: (sc.unfitted_table(test, "time", why), "ms", what)}, {}))
    return sc.add_table(ds, f"{name}_test", test[xcols].reset_index(drop=True), FRAME_UNITS, dim=f"{name}_run")


def _distributed(ds: xr.Dataset, p: dict[str, Any], progress: bool) -> tuple[xr.Dataset, Path, xr.Dataset, list[str]]:
    """The MPI part of :func:`run` (§5.2): communication models (Table 5), full models (Table 6), validation.

    Returns the dataset, the raw file, the runs and the configurations without a clean run.
    """
    configs = (design(p["mpi_train_sizes"], p["mpi_chunks"], p["node_axes"], p["mpi_nprocs"], label="train",
                      reps=p["mpi_reps"])
               + design(p["mpi_test_sizes"], p["mpi_chunks"], ["x"], p["mpi_nprocs"], label="test",
                        reps=p["mpi_test_reps"]))
    runs = measure_distributed(configs, p["mpi_reps"], p["iterations"], p["mpi_workers"], seed=p["seed"],
                               progress=progress)
    path = campaign.save_raw(runs, STUDY, "mpi", p,
                             "measurement: Sedov proxy, MPI version (perfmod.measure.proxies.sedov_mpi)", p["raw_out"])
    train, test, missing = sc.clean_sets(runs, lambda d: model_frame(d, p["response"]), ["time", "t_comm", "t_comp"])
    n_train = int((runs.set.values == "train").sum())
    cols = ["X1", "X2", "X3", "X4", "X5", "time", "t_comm", "config"]
    what = "time per iteration, MPI Sedov proxy"
    try:
        part, _, _ = _fits(xr.Dataset(), "mpi_comm", train, COMM_FORMULAS, p["holdout_seed"], 0.2, cols)  # §5.2.2
        part, full, _ = _fits(part, "mpi_full", train, FULL_FORMULAS, p["holdout_seed"], 0.2, cols)
        fmodel = full["full (Table 6)"]
        part = _validate(part, "mpi", fmodel, test, ["X1", "X2", "X3", "X4", "X5"], what)
    except RegressionError as err:
        status = sc.unfit_reason(err, len(train), n_train)
        ds = ds.merge(_unfitted(xr.Dataset(), "mpi", train, test, cols, ["X1", "X2", "X3", "X4", "X5"], what, status))
        ds.attrs.update(mpi_fit_status=status, mpi_validation_rmse_over_training_rse=float("nan"))
    else:
        ds = ds.merge(part)
        stats = sc.validation_errors(ds, "mpi", n_coef=len(fmodel.coef))
        ds.attrs.update(mpi_fit_status="fitted on the clean training runs",
                        mpi_validation_rmse_over_training_rse=float(stats["rmse"] / fmodel.rse))
    ds.attrs.update(mpi_runs_training=int(len(train)), mpi_runs_validation=int(np.isfinite(test.time).sum()))
    return ds, path, runs, missing


def headline(ds: xr.Dataset) -> dict[str, xr.DataArray]:
    """The study's headline figures (:mod:`perfmod.campaign.headline`): validation errors of the chosen models.

    Mean and largest absolute relative error of the chosen shared-memory model on the
    validation runs (the Table 4 counterpart), its validation RMSE over training RSE,
    and the mean error of the MPI full model (Table 7; NaN without the MPI part);
    NaN when the model was not fitted; then the run counts.
    """
    chosen = ds.attrs.get("chosen_model", "?")
    mean, top = campaign.mean_max(campaign.abs_rel_errors(ds.shared_measured, ds.shared_predicted))
    mpi = (campaign.mean_max(campaign.abs_rel_errors(ds.mpi_measured, ds.mpi_predicted))[0]
           if "mpi_measured" in ds else float("nan"))
    return campaign.headline_figures(ds, {
        "shared_error_mean": (mean, "1", f"mean |relative error| of model {chosen} (shared memory) on the "
                              "validation runs"),
        "shared_error_max": (top, "1", f"largest |relative error| of model {chosen} (shared memory) on the "
                             "validation runs"),
        "shared_rmse_over_rse": (ds.attrs.get("validation_rmse_over_training_rse", float("nan")), "1",
                                 f"validation RMSE / training RSE of model {chosen} (shared memory)"),
        "mpi_error_mean": (mpi, "1", "mean |relative error| of the full MPI model (Table 6) on the validation runs"),
    })


def figures(ds: xr.Dataset) -> dict[str, plt.Figure]:
    """The study's figures from its dataset (Figures 3, 4, 5 and, with the MPI part, 6, 8, 9 counterparts)."""
    figs = {}
    tr = sc.table(ds, "shared_train")
    figs["fig3_memory_vs_time"] = sc.plot_scatter(tr, "X1", "time", ["X2", "node_axis"], "memory usage X1 [MB]",
                                                  "time/iteration [ms]",
                                                  "Figure 3 counterpart: memory usage vs time/iteration")
    if not sc.fitted(ds):  # too few clean runs: the measured runs only
        return figs
    fitted = sc.table(ds, "shared_fitted")
    chosen = ds.attrs["chosen_model"]
    figs["fig4_model_fit"] = sc.plot_fit_vs_measured(tr, "time", {k: fitted[k] for k in ("A", "C")}, "X1",
                                                     "memory usage X1 [MB]", "time/iteration [ms]",
                                                     "Figure 4 counterpart: Model C (and A) fit vs measured")
    figs["fig5_validation"] = sc.plot_validation(_pairs(ds, "shared"), ds.shared_test_X1.values, "memory usage X1 [MB]",
                                                 "time/iteration [ms]",
                                                 f"Figure 5 counterpart: model {chosen} on validation runs")
    if "mpi_measured" in ds and sc.fitted(ds, "mpi"):
        ctr, ftr = sc.table(ds, "mpi_comm_train"), sc.table(ds, "mpi_full_train")
        figs["fig6_comm_model"] = sc.plot_fit_vs_measured(
            ctr, "t_comm", {"comm (Table 5)": sc.table(ds, "mpi_comm_fitted")["comm (Table 5)"]}, "X4",
            "max inter-process edges X4", "communication time/iteration [ms]", "Figure 6 counterpart")
        figs["fig8_full_model"] = sc.plot_fit_vs_measured(
            ftr, "time", {"full": sc.table(ds, "mpi_full_fitted")["full (Table 6)"]}, "X1",
            "memory per process X1 [MB]", "time/iteration [ms]", "Figure 8 counterpart: full model")
        figs["fig9_full_validation"] = sc.plot_validation(
            _pairs(ds, "mpi"), ds.mpi_test_X1.values, "memory per process X1 [MB]", "time/iteration [ms]",
            "Figure 9 counterpart: full model on validation runs")
    return figs


def _pairs(ds: xr.Dataset, name: str) -> pd.DataFrame:
    """The validation table (measured, fit, lower, upper) of pair ``name`` from the dataset."""
    return pd.DataFrame({"measured": ds[f"{name}_measured"].values, "fit": ds[f"{name}_predicted"].values,
                         "lower": ds[f"{name}_lower"].values, "upper": ds[f"{name}_upper"].values})
