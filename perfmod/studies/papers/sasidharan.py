"""What the Sedov and Quicksilver studies of paper 001 share: run tables, hold-out checks, validation tables.

paper 001 (Sasidharan, thesis 2021/22) §3: models are fitted by
least squares on training experiments; competing models are compared with
ANOVA and by the error on a held-out part of the training set (§5.1.2: 232 of
275 observations to fit, 43 to score; :func:`perfmod.models.regression.compare_models`);
the chosen model is refitted on all training data and predicts separate
validation experiments, reported as measured value, fit and the 95 %
confidence interval (Tables 4, 7, 12; errors by
:func:`perfmod.models.regression.prediction_errors`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr
from tqdm.auto import tqdm

import perfmod.campaign as campaign
from perfmod.core.paths import host_name
from perfmod.measure.lock import measuring_lock
from perfmod.measure.runner import batch_order, rerun_while_interfered, run_mpi_jobs
from perfmod.measure.validity import FLAG_META, run_flags
from perfmod.models.regression import LinearModel, lm
from perfmod.viz.validation import plot_validation as viz_plot_validation

__all__ = ["FLAG_COLUMNS", "run_order", "measure_runs", "measure_mpi_runs",
           "split_sets", "clean_sets", "flag_record", "unfitted_table",
           "unfit_reason", "fitted", "runs_dataset", "fit_all", "model_table", "validation_table",
           "plot_fit_vs_measured", "plot_scatter", "plot_validation", "study_dataset", "add_table", "table",
           "validation_errors"]


FLAG_COLUMNS: dict[str, tuple[str, str]] = {
    **{f: FLAG_META[f] for f in campaign.FLAG_FIELDS},
    "interference_reason": ("1", "why the run is (not) flagged interfered (perfmod.measure.interference.classify)"),
    "oversubscribed": ("1", "more ranks x threads than cores"),
}
"""The validity columns every run keeps (:func:`perfmod.measure.validity.run_flags`), ``(units, long_name)``."""


def runs_dataset(rows: Sequence[Mapping[str, Any]], meta: Mapping[str, tuple[str, str]]) -> xr.Dataset:
    """One observation per run (dimension ``run``); ``meta`` gives ``(units, long_name)`` per column kept."""
    df = pd.DataFrame(list(rows))
    missing = [k for k in meta if k not in df.columns]
    if missing:
        raise KeyError(f"the runs have no column(s) {missing}")
    ds = xr.Dataset({k: ("run", df[k].to_numpy()) for k in meta}, coords={"run": np.arange(len(df))})
    for k, (units, long_name) in meta.items():
        ds[k].attrs.update(units=units, long_name=long_name)
    ds.attrs["host"] = host_name()
    ds.attrs["measured_utc"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return ds


def run_order(configs: Sequence[dict[str, Any]], reps: int, seed: int) -> list[tuple[int, int]]:
    """(configuration, repetition) pairs in one seeded random order (:func:`perfmod.campaign.design.interleaved_order`).

    A configuration's own ``"reps"`` overrides ``reps``.  Random order spreads
    the load of other processes over configurations; measuring training and
    validation configurations in one call (labelled by their ``"set"``)
    spreads it over both sets alike, so a busier half hour does not bias the
    validation against the training data.
    """
    return campaign.interleaved_order([int(c.get("reps", reps)) for c in configs], seed)


def measure_runs(configs: Sequence[dict[str, Any]], reps: int, seed: int,
                 one_run: Callable[[dict[str, Any], int, int], dict[str, Any]], meta: Mapping[str, tuple[str, str]],
                 desc: str, progress: bool = True, rerun: bool = True) -> xr.Dataset:
    """Every (configuration, repetition) of :func:`run_order`, one observation per run, with its validity flags.

    Parameters
    ----------
    configs, reps, seed
        The design (see :func:`run_order`).
    one_run : callable
        ``one_run(config, rep, index)``: the run's result, with the
        ``interfered`` verdict of its own probe (the in-process proxies and
        :func:`perfmod.measure.runner.run_mpi` give one).
    meta : mapping
        ``(units, long_name)`` of the columns kept; :data:`FLAG_COLUMNS` are added.
    desc : str
        Progress bar text.
    progress : bool
        Progress bar.
    rerun : bool
        Re-run an interfered run (:func:`perfmod.measure.runner.rerun_while_interfered`,
        holding the measuring lock); False where ``one_run`` re-runs itself
        (:func:`~perfmod.measure.runner.run_mpi`).

    Returns
    -------
    xarray.Dataset
        :func:`runs_dataset` of the runs with ``rep``, ``set`` (the configuration's
        label) and the flags of :func:`perfmod.measure.validity.run_flags`.
    """
    order, results = run_order(configs, reps, seed), []
    for i, r in tqdm(order, desc=desc, disable=not progress):
        c = configs[i]
        if rerun:
            def attempt(c: dict[str, Any] = c, r: int = r, i: int = i) -> dict[str, Any]:
                with measuring_lock():
                    return one_run(c, r, i)
            results.append(rerun_while_interfered(attempt))
        else:
            results.append(one_run(c, r, i))
    return _runs(configs, order, results, meta)


def measure_mpi_runs(configs: Sequence[dict[str, Any]], reps: int, seed: int, module: str,
                     args: Callable[[dict[str, Any]], list[Any]],
                     finish: Callable[[dict[str, Any], dict[str, Any]], None],
                     meta: Mapping[str, tuple[str, str]], desc: str, progress: bool = True,
                     batch_size: int = 16) -> xr.Dataset:
    """:func:`measure_runs` of an MPI proxy (``configs[i]["nprocs"]`` ranks, ``args(config)``), in batches.

    The seeded random order of :func:`run_order` is regrouped by
    :func:`perfmod.measure.runner.batch_order` (runs of one rank count in
    batches of at most ``batch_size``, the counts taking turns) and measured
    with :func:`perfmod.measure.runner.run_mpi_jobs`, which launches each batch
    once and re-runs the disturbed runs; ``finish(config, result)`` adds the
    study's own columns to each result.
    """
    order = run_order(configs, reps, seed)
    order = [order[q] for q in batch_order([configs[i]["nprocs"] for i, _ in order], batch_size)]
    results = run_mpi_jobs(module, [(configs[i]["nprocs"], args(configs[i])) for i, _ in order], batch_size,
                           progress, desc)
    for (i, _), res in zip(order, results, strict=True):
        finish(configs[i], res)
    return _runs(configs, order, results, meta)


def _runs(configs: Sequence[dict[str, Any]], order: Sequence[tuple[int, int]], results: Sequence[dict[str, Any]],
          meta: Mapping[str, tuple[str, str]]) -> xr.Dataset:
    """:func:`runs_dataset` of the results of the runs ``order`` (configuration, repetition), flags added."""
    rows = [{"oversubscribed": False, **res, **run_flags(res), "rep": r, "set": configs[i].get("set", "")}
            for (i, r), res in zip(order, results, strict=True)]
    return runs_dataset(rows, {**meta, **FLAG_COLUMNS})


def _interfered(runs: xr.Dataset) -> np.ndarray:
    """The runs' ``interfered`` flags (all False for a raw file measured before runs were flagged)."""
    return runs["interfered"].values.astype(bool) if "interfered" in runs else np.zeros(runs.sizes["run"], bool)


def clean_sets(runs: xr.Dataset, frame: Callable[[xr.Dataset], pd.DataFrame],
               responses: Sequence[str], drop_oversubscribed: bool = False
               ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Training observations of the clean runs only, validation observations scored on clean runs only.

    Parameters
    ----------
    runs : xarray.Dataset
        A measurement with ``set`` labels ``train`` and ``test`` and ``interfered`` flags.
    frame : callable
        The study's regression frame of a set of runs (with a ``config`` column).
    responses : sequence of str
        Measured columns of the frame (set to NaN for interfered validation runs).
    drop_oversubscribed : bool
        Treat the runs flagged ``oversubscribed`` as the interfered ones (kept in the
        record, neither fitted nor scored): for a model whose thread count cannot describe
        threads waiting for cores.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame, list of str)
        The clean training rows (renumbered), every validation row (the
        interfered ones with NaN responses: no measured value to score), and
        the configurations none of whose runs was clean, as ``"train <config>"``
        or ``"test <config>"`` (the ``clean_runs_missing`` attribute).
    """
    sets = split_sets(runs)
    for name in ("train", "test"):
        if name not in sets:
            raise KeyError(f"the runs have no {name!r} set; sets: {sorted(sets)}")
    train, test = frame(sets["train"]), frame(sets["test"])
    bad = {k: _interfered(sets[k]) | (sets[k]["oversubscribed"].values.astype(bool)
                                      if drop_oversubscribed and "oversubscribed" in sets[k] else False)
           for k in ("train", "test")}
    missing = [f"{name} {cfg}" for name, df in (("train", train), ("test", test))
               for cfg, none in pd.Series(bad[name]).groupby(df["config"].to_numpy()).all().items()
               if none]
    train = train[~bad["train"]].reset_index(drop=True)
    test = test.copy()
    test.loc[bad["test"], list(responses)] = np.nan
    return train, test, missing


def flag_record(parts: Mapping[str, tuple[xr.Dataset, Sequence[str]]]) -> xr.Dataset:
    """Every run of a study with its flags, over one dimension ``run`` (the parts' runs one after another).

    ``parts`` maps a part name (``shared``, ``mpi``) to its runs and their
    configuration labels.  The result holds the flags of
    :data:`perfmod.campaign.records.FLAG_FIELDS` and ``oversubscribed`` over
    ``run``, with coordinates ``run_part``, ``run_set``, ``run_config`` and ``run_rep``.
    """
    fields = (*campaign.FLAG_FIELDS, "oversubscribed", "part", "set", "config", "rep")
    cols: dict[str, list[Any]] = {f: [] for f in fields}
    for part, (runs, labels) in parts.items():
        n = runs.sizes["run"]
        if len(labels) != n:
            raise ValueError(f"flag_record: {part}: {len(labels)} configuration labels for {n} runs")
        for f in campaign.FLAG_FIELDS:
            default = np.zeros(n, bool) if f == "interfered" else np.full(n, np.nan)
            cols[f].extend(runs[f].values if f in runs else default)
        cols["oversubscribed"].extend(runs["oversubscribed"].values.astype(bool) if "oversubscribed" in runs
                                      else np.zeros(n, bool))
        cols["part"].extend([part] * n)
        cols["set"].extend(runs["set"].values.astype(str))
        cols["config"].extend(labels)
        cols["rep"].extend(runs["rep"].values.astype(int))
    ds = xr.Dataset(campaign.flag_variables({f: np.asarray(cols[f]) for f in campaign.FLAG_FIELDS}, ("run",)))
    ds["oversubscribed"] = ("run", np.asarray(cols["oversubscribed"], bool),
                            {"units": "1", "long_name": "more ranks x threads than cores"})
    return ds.assign_coords(
        run_part=("run", np.asarray(cols["part"], str), {"units": "1", "long_name": "part of the study"}),
        run_set=("run", np.asarray(cols["set"], str), {"units": "1", "long_name": "train or test"}),
        run_config=("run", np.asarray(cols["config"], str), {"units": "1", "long_name": "configuration"}),
        run_rep=("run", np.asarray(cols["rep"], int), {"units": "1", "long_name": "repetition"}))


def unfitted_table(test: pd.DataFrame, response: str, why: str) -> pd.DataFrame:
    """A :func:`validation_table` without a model: the measured values, NaN fit and bounds (``why`` in its attrs)."""
    nan = np.full(len(test), np.nan)
    out = pd.DataFrame({"measured": test[response].to_numpy(float), "fit": nan, "lower": nan, "upper": nan},
                       index=test.index)
    out.attrs.update(interval="confidence", level=0.95, not_fitted=why)
    return out


def unfit_reason(err: Exception, clean: int, total: int) -> str:
    """The ``fit_status`` of a fit that failed on the clean training runs.

    Re-raises ``err`` when no training run was dropped: then the failure is
    not for want of clean runs.
    """
    if clean >= total:
        raise err
    return (f"not fitted: only {clean} of {total} training runs were clean (the others were disturbed by other "
            f"processes) and the models cannot be fitted on them ({err}). Re-run on an idle machine.")


def fitted(ds: xr.Dataset, part: str = "") -> bool:
    """Whether the models of ``part`` (attribute ``<part>_fit_status``, or ``fit_status``) were fitted."""
    return not str(ds.attrs.get(f"{part}_fit_status" if part else "fit_status", "")).startswith("not fitted")


def split_sets(ds: xr.Dataset) -> dict[str, xr.Dataset]:
    """The runs of each ``set`` label (e.g. ``train``, ``test``) of a measurement, renumbered."""
    return {str(s): ds.isel(run=np.flatnonzero(ds.set.values == s)).assign_coords(
        run=np.arange(int((ds.set.values == s).sum()))) for s in np.unique(ds.set.values)}


def fit_all(frame: pd.DataFrame, formulas: Mapping[str, str]) -> dict[str, LinearModel]:
    """``lm`` of every formula on ``frame``."""
    return {name: lm(f, frame) for name, f in formulas.items()}


def model_table(models: Mapping[str, LinearModel]) -> pd.DataFrame:
    """RSE, residual df, R^2, adjusted R^2, F p-value and coefficient count per model."""
    return pd.DataFrame({name: {"terms": len(m.coef), "Res.Df": m.df_resid, "RSE": m.rse, "R2": m.r2,
                                "adj_R2": m.adj_r2, "F p-value": m.f_pvalue} for name, m in models.items()}).T


def validation_table(model: LinearModel, test: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Measured response, fit and the ``level`` confidence interval per validation run (Tables 4, 7, 12)."""
    pred = model.predict(test, interval="confidence", level=level)
    out = pd.DataFrame({"measured": test[model.design.response].to_numpy(), "fit": pred["predicted"].values,
                        "lower": pred["lower"].values, "upper": pred["upper"].values}, index=test.index)
    out.attrs.update(interval="confidence", level=level)
    return out



def _finish(fig: plt.Figure, ax: plt.Axes, xlabel: str, ylabel: str, title: str, legend_size: int = 8) -> plt.Figure:
    """Labels, title, grid and legend of a one-panel figure, laid out."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # nothing drawn when no run was clean
        ax.legend(fontsize=legend_size)
    fig.tight_layout()
    return fig

def plot_fit_vs_measured(frame: pd.DataFrame, y: str, fitted: Mapping[str, Any], x: str, xlabel: str,
                         ylabel: str, title: str = "") -> plt.Figure:
    """Measured ``y`` and each model's fitted values (name -> values over the rows) against ``x`` (Figures 4, 7-10)."""
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(frame[x], frame[y], "k.", ms=4, label="measured")
    for i, (name, values) in enumerate(fitted.items()):
        ax.plot(frame[x], np.asarray(values), "o", mfc="none", color=f"C{i}", ms=5, label=f"model {name} fit")
    return _finish(fig, ax, xlabel, ylabel, title, legend_size=8)


def plot_scatter(frame: pd.DataFrame, x: str, y: str, by: Sequence[str], xlabel: str, ylabel: str,
                 title: str = "") -> plt.Figure:
    """Measured ``y`` against ``x``, one colour per combination of the ``by`` columns (Figures 3, 10)."""
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for i, (key, g) in enumerate(frame.groupby(list(by))):
        key = key if isinstance(key, tuple) else (key,)
        ax.plot(g[x], g[y], "o", ms=4, color=f"C{i % 10}",
                label=", ".join(f"{b}={k:g}" if isinstance(k, float) else f"{b}={k}" for b, k in zip(by, key,
                                                                                                   strict=True)))
    return _finish(fig, ax, xlabel, ylabel, title, legend_size=7)


def plot_validation(table: pd.DataFrame, xvals: np.ndarray, xlabel: str, ylabel: str, title: str = "") -> plt.Figure:
    """Validation runs: measured, fit and its interval against one variable (Figures 5, 9, 13).

    A :func:`validation_table` drawn by :func:`perfmod.viz.validation.plot_validation`.
    """
    kind, level = table.attrs.get("interval", "confidence"), table.attrs.get("level", 0.95)
    ds = xr.Dataset({"y_measured": ("x", table["measured"].to_numpy(float)),
                     "y_predicted": ("x", table["fit"].to_numpy(float)),
                     **{f"y_{b}": ("x", table[b].to_numpy(float), {"interval": kind, "level": level})
                        for b in ("lower", "upper")}},
                    coords={"x": np.asarray(xvals, dtype=float)}).sortby("x")
    fig = viz_plot_validation(ds, x="x")
    ax = fig.axes[0]
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return fig


def study_dataset(validations: Mapping[str, tuple[pd.DataFrame, str, str]],
                  tables: Mapping[str, tuple[pd.DataFrame, Mapping[str, str]]]) -> xr.Dataset:
    """Validation pairs and model statistics as one dataset.

    Parameters
    ----------
    validations : mapping name -> (validation table, units, long name of the response)
        Each becomes ``<name>_measured``, ``<name>_predicted``, ``<name>_lower``,
        ``<name>_upper`` over dimension ``<name>_run`` (the bounds' attrs give the
        interval kind and level of :func:`validation_table`).
    tables : mapping name -> (DataFrame, units per column)
        Numeric columns become ``<name>_<column>`` over dimension ``<name>_model``
        (index: model names); columns without units get "1".
    """
    ds = xr.Dataset()
    for name, (tab, units, long_name) in validations.items():
        tab = tab.reset_index(drop=True)
        dim = f"{name}_run"
        kind, level = tab.attrs.get("interval", "confidence"), tab.attrs.get("level", 0.95)
        for col, suffix in (("measured", "measured"), ("fit", "predicted"), ("lower", "lower"), ("upper", "upper")):
            what = {"measured": "measured", "predicted": "predicted (model fit)",
                    "lower": f"lower bound of the {level:.0%} {kind} interval of",
                    "upper": f"upper bound of the {level:.0%} {kind} interval of"}[suffix]
            bound = {"interval": kind, "level": level} if suffix in ("lower", "upper") else {}
            ds[f"{name}_{suffix}"] = xr.DataArray(tab[col].to_numpy(float), dims=dim,
                                                  attrs={"units": units, "long_name": f"{what} {long_name}", **bound})
    for name, (tab, units) in tables.items():
        ds = add_table(ds, name, tab, units, dim=f"{name}_model")
    return ds


def _key(col: Any) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in str(col)).strip("_")


def add_table(ds: xr.Dataset, name: str, tab: pd.DataFrame, units: Mapping[str, str] | None = None,
              dim: str | None = None, long_names: Mapping[str, str] | None = None) -> xr.Dataset:
    """``ds`` with each column of ``tab`` as variable ``<name>_<column>`` over ``dim`` (default ``<name>_row``).

    Characters other than letters and digits in ``name`` and the columns
    become ``_`` in variable names; the attributes keep them as given.

    The index becomes the coordinate ``dim`` (as strings); numeric and boolean
    columns are stored as floats, others as strings.  Every variable records
    its table and column (attributes ``table``, ``column``), so that
    :func:`table` gives the table back from the dataset alone.  Columns
    without units get ``"1"``.
    """
    prefix = _key(name)
    dim = dim or f"{prefix}_row"
    units, long_names = dict(units or {}), dict(long_names or {})
    out = ds.assign_coords({dim: [str(i) for i in tab.index]})
    for col in tab.columns:
        raw = tab[col]
        num = pd.to_numeric(raw.astype(float) if raw.dtype == bool else raw, errors="coerce")
        vals = num.to_numpy(float) if num.notna().sum() >= raw.notna().sum() else raw.astype(str).to_numpy()
        out[f"{prefix}_{_key(col)}"] = xr.DataArray(vals, dims=dim, attrs={
            "units": units.get(str(col), "1"), "long_name": long_names.get(str(col), f"{name}: {col}"),
            "table": name, "column": str(col)})
    return out


def table(ds: xr.Dataset, name: str) -> pd.DataFrame:
    """The table stored by :func:`add_table` (or :func:`study_dataset`) under ``name``, from the dataset alone."""
    cols = {v.attrs["column"]: v for v in ds.data_vars.values() if v.attrs.get("table") == name}
    if not cols:
        raise KeyError(f"the dataset holds no table {name!r}; tables: "
                       f"{sorted({v.attrs['table'] for v in ds.data_vars.values() if 'table' in v.attrs})}")
    dim = next(iter(cols.values())).dims[0]
    return pd.DataFrame({c: v.values for c, v in cols.items()}, index=pd.Index(ds[dim].values, name=dim))


def validation_errors(ds: xr.Dataset, name: str, n_coef: int | None = None) -> pd.Series:
    """Error statistics (:func:`perfmod.models.regression.prediction_errors`) of the validation pair ``name``.

    Only runs with a measured and a predicted value are scored (an
    interfered run has no measured value; a model that was not fitted, no
    prediction); without any, every statistic is NaN and ``n`` is 0.
    """
    from perfmod.models.regression import prediction_errors

    m, p = ds[f"{name}_measured"].values, ds[f"{name}_predicted"].values
    ok = np.isfinite(m) & np.isfinite(p)
    if not ok.any():
        return pd.Series({"n": 0, **dict.fromkeys(("rmse", "rse_df", "mae", "mape", "max_ape", "bias", "coverage"),
                                                  float("nan"))})
    return prediction_errors(m[ok], p[ok], ds[f"{name}_lower"].values[ok], ds[f"{name}_upper"].values[ok],
                             n_coef=n_coef)
