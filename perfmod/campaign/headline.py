"""What a measuring study's headline figures are made of: scalars with units, NaN where nothing was fitted.

Every measuring study module has a ``headline(ds) -> dict[str, xarray.DataArray]``
that reads the study's headline figures from its dataset alone: the numbers
its notebook presents as its result (a held-out error, a speedup), each a
0-d :class:`xarray.DataArray` with ``units`` and ``long_name``.  The study
decides which numbers; this module gives the common parts:

- :func:`headline_figures`: the figures as DataArrays, NaN when the dataset
  says the model was not fitted (attribute ``fit_status`` starting
  "not fitted"), plus the run counts of :func:`run_counts`;
- :func:`run_counts`: runs, interfered runs and clean runs, from the
  attributes :func:`perfmod.campaign.records.record_drops` sets, else from
  the boolean ``interfered`` variables, else NaN (no interference record);
- :func:`abs_rel_errors`: finite ``|predicted / measured - 1|`` values, and
  :func:`mean_max` of such values;
- :func:`total_time_headline`: the mean and largest held-out total-time
  error from a study's ``error_summary`` (the Sharif studies' headline).

``perfmod repeat`` (:mod:`perfmod.workflow.repeat`) runs a study several
times and keeps each run's headline figures with their median and range.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["COUNTS", "abs_rel_errors", "mean_max", "not_fitted", "run_counts", "headline_figures",
           "total_time_headline"]

#: The run counts every headline carries: name -> long name (units "1").
COUNTS = {
    "runs_total": "measured runs (every repetition of every configuration)",
    "runs_interfered": "runs flagged interfered (another process took a material share of the CPUs)",
    "runs_clean": "runs neither interfered nor oversubscribed",
}


def abs_rel_errors(measured: Any, predicted: Any, where: Any = None) -> np.ndarray:
    """The finite values of ``|predicted / measured - 1|`` (flattened), optionally only where ``where`` is True.

    ``measured`` and ``predicted`` (and ``where``) broadcast against each other
    (DataArrays by name, arrays by shape); a zero or NaN measurement gives no value.
    """
    items = [measured, predicted] + ([] if where is None else [where])
    if all(isinstance(a, xr.DataArray) for a in items):
        items = [a.values for a in xr.broadcast(*items)]
    arrs = np.broadcast_arrays(*[np.asarray(a) for a in items])
    m, p = arrs[0].astype(float), arrs[1].astype(float)
    keep = np.isfinite(m) & np.isfinite(p) & (m != 0)
    if where is not None:
        keep &= arrs[2].astype(bool)
    return np.abs(p[keep] / m[keep] - 1.0)


def mean_max(values: Any) -> tuple[float, float]:
    """Mean and largest of the finite ``values``; NaN, NaN when there is none."""
    v = np.asarray(values, float).ravel()
    v = v[np.isfinite(v)]
    return (float(v.mean()), float(v.max())) if v.size else (float("nan"), float("nan"))


def not_fitted(ds: xr.Dataset) -> bool:
    """True when the dataset's ``fit_status`` says the model could not be fitted."""
    return str(ds.attrs.get("fit_status", "")).startswith("not fitted")


def run_counts(ds: xr.Dataset) -> dict[str, float]:
    """Runs, interfered runs and clean runs of a study's dataset (NaN where it keeps no interference record).

    From the attributes ``runs_total``, ``runs_interfered`` and ``runs_dropped``
    (:func:`perfmod.campaign.records.record_drops`) when present; else from the
    boolean variables ``interfered`` and ``<part>_interfered`` (every run of the
    dataset, clean = not interfered).
    """
    a = ds.attrs
    if "runs_total" in a and "runs_interfered" in a:
        total, bad = float(a["runs_total"]), float(a["runs_interfered"])
        dropped = float(a.get("runs_dropped", bad))
        return {"runs_total": total, "runs_interfered": bad, "runs_clean": total - dropped}
    flags = [ds[v] for v in ds.variables
             if (str(v) == "interfered" or str(v).endswith("_interfered")) and ds[v].dtype == bool]
    if not flags:
        return dict.fromkeys(COUNTS, float("nan"))
    total = float(sum(f.size for f in flags))
    bad = float(sum(int(f.values.sum()) for f in flags))
    return {"runs_total": total, "runs_interfered": bad, "runs_clean": total - bad}


def headline_figures(ds: xr.Dataset, figures: Mapping[str, tuple[float, str, str]]) -> dict[str, xr.DataArray]:
    """The headline of a study's dataset: ``figures`` as 0-d DataArrays, then the run counts.

    Parameters
    ----------
    ds : xarray.Dataset
        The study's dataset (its attributes ``fit_status`` and run counts are read).
    figures : mapping of name -> (value, units, long_name)
        The study's headline figures, computed from ``ds``.

    Returns
    -------
    dict of str -> xarray.DataArray
        One 0-d float DataArray per figure (NaN when :func:`not_fitted`), then
        ``runs_total``, ``runs_interfered``, ``runs_clean`` (:func:`run_counts`).
    """
    clash = sorted(set(figures) & set(COUNTS))
    if clash:
        raise ValueError(f"headline figures {clash} clash with the run counts {sorted(COUNTS)}")
    skip = not_fitted(ds)
    out = {name: xr.DataArray(np.nan if skip else float(value), attrs={"units": units, "long_name": long_name})
           for name, (value, units, long_name) in figures.items()}
    for name, value in run_counts(ds).items():
        out[name] = xr.DataArray(value, attrs={"units": "1", "long_name": COUNTS[name]})
    return out


def total_time_headline(ds: xr.Dataset, error_summary: Callable[[xr.Dataset], Any],
                        cases_word: str) -> dict[str, xr.DataArray]:
    """Headline of held-out total-time errors: ``total_time_error_mean`` and ``total_time_error_max``, then run counts.

    Parameters
    ----------
    ds : xarray.Dataset
        The study's dataset.
    error_summary : callable
        The study's ``error_summary(ds)``: a table with a ``total_time`` row and
        the columns ``mean |error|`` and ``max |error|``.
    cases_word : str
        What the errors are taken over, for the long names ("held-out runs").

    Returns
    -------
    dict of str -> xarray.DataArray
        As :func:`headline_figures` (units "1"; NaN when :func:`not_fitted`).
    """
    tot = error_summary(ds).loc["total_time"]
    return headline_figures(ds, {
        "total_time_error_mean": (tot["mean |error|"], "1", f"mean |relative error| of the total time over the "
                                  f"{cases_word}"),
        "total_time_error_max": (tot["max |error|"], "1", f"largest |relative error| of the total time over the "
                                 f"{cases_word}"),
    })
