"""What the Sedov and Quicksilver studies of paper 001 share: run tables, hold-out checks, validation tables.

Paper 001 (shared/papers/001_10099451130f018d.txt) §3: models are fitted by
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
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr

from perfmod.core.paths import host_name
from perfmod.models.regression import LinearModel, lm
from perfmod.studies.design import interleaved_order
from perfmod.studies.records import save_raw
from perfmod.viz.validation import plot_validation as viz_plot_validation

__all__ = ["run_order", "split_sets", "runs_dataset", "save_raw", "fit_all", "model_table", "validation_table",
           "plot_fit_vs_measured", "plot_scatter", "plot_validation", "study_dataset", "add_table", "table",
           "validation_errors"]


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
    """(configuration, repetition) pairs in one seeded random order (:func:`perfmod.studies.design.interleaved_order`).

    A configuration's own ``"reps"`` overrides ``reps``.  Random order spreads
    the load of other processes over configurations; measuring training and
    validation configurations in one call (labelled by their ``"set"``)
    spreads it over both sets alike, so a busier half hour does not bias the
    validation against the training data.
    """
    return interleaved_order([int(c.get("reps", reps)) for c in configs], seed)


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
    """Error statistics (:func:`perfmod.models.regression.prediction_errors`) of the validation pair ``name``."""
    from perfmod.models.regression import prediction_errors

    return prediction_errors(ds[f"{name}_measured"].values, ds[f"{name}_predicted"].values,
                             ds[f"{name}_lower"].values, ds[f"{name}_upper"].values, n_coef=n_coef)
