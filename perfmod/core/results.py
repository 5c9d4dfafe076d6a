"""One result protocol for every fitted model: params, stderr, predict, to_dataset, summary.

Every fit in perfmod (the communication-model :class:`~perfmod.models.comm.fitting.Fit`,
:class:`~perfmod.models.bsp.BSPFit`, :class:`~perfmod.models.regression.LinearModel`,
:class:`~perfmod.models.regression.GAMFit`, the compute models of
:mod:`perfmod.models.compute`) is a :class:`FitResult`:

- ``params`` and ``stderr``: :class:`pandas.Series` indexed by parameter name,
  with ``.attrs["units"]`` a dict name -> unit (SI; ``[y]/[x]`` brackets where
  the fit does not know its data's units, e.g. a formula on a plain table);
- ``predict(x, interval=None | "confidence" | "prediction", level=0.95)``: an
  :class:`xarray.Dataset` with ``predicted`` and, with an interval, ``lower``
  and ``upper`` (variable attrs ``interval`` and ``level``, and the same in the
  dataset's attrs);
- ``to_dataset()``: ``estimate`` and ``stderr`` over dimension ``parameter``
  (a ``units`` coordinate gives each parameter's unit) and the fit's
  diagnostics as 0-d variables with ``units``; :func:`read_params` reads the
  two Series back, also from a netCDF file;
- ``summary()``: a readable text naming every parameter.

Intervals come from the fit's covariance.  At a new point with design (or
gradient) row g, ``var_mean = g' Cov g``; a confidence interval (of the mean
response) is ``predicted -+ t(dof) sqrt(var_mean)``, a prediction interval (of
a new observation) ``predicted -+ t(dof) sqrt(var_mean + sigma^2)`` with
sigma^2 the residual variance of one observation, and ``t(dof)`` the
Student-t quantile of ``0.5 + level / 2`` with the fit's residual degrees of
freedom (:func:`interval_bounds`).  Linear fits give the textbook closed form;
nonlinear fits use g = the model's gradient in its parameters (delta method).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

__all__ = [
    "INTERVALS",
    "FitResult",
    "Table",
    "as_table",
    "check_interval",
    "interval_bounds",
    "param_series",
    "per_term_unit",
    "prediction_dataset",
    "read_params",
]

#: the interval kinds ``predict`` accepts besides ``None``
INTERVALS = ("confidence", "prediction")


def check_interval(interval: str | None, level: float) -> str | None:
    """Validate ``interval`` and ``level``; returns the interval kind (``None`` for no interval)."""
    if interval is not None and interval not in INTERVALS:
        raise ValueError(f"interval must be None, 'confidence' or 'prediction', not {interval!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    return interval


def interval_bounds(predicted: Any, var_mean: Any, sigma2: Any, dof: float, interval: str,
                    level: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of a t interval around ``predicted``.

    Parameters
    ----------
    predicted : array_like
        Point predictions (response units).
    var_mean : array_like
        Variance of the mean response at each point, ``g' Cov g`` (response units squared).
    sigma2 : float or array_like
        Variance of one new observation about the mean (added for ``"prediction"``).
    dof : float
        Residual degrees of freedom of the fit (> 0).
    interval : {"confidence", "prediction"}
    level : float
        Coverage in (0, 1).
    """
    check_interval(interval, level)
    if not dof > 0:
        raise ValueError(f"no residual degrees of freedom (dof = {dof}): intervals are unavailable")
    var = np.asarray(var_mean, dtype=float)
    if interval == "prediction":
        var = var + np.asarray(sigma2, dtype=float)
    half = stats.t.ppf(0.5 + level / 2.0, dof) * np.sqrt(np.clip(var, 0, None))
    y = np.asarray(predicted, dtype=float)
    return y - half, y + half


def param_series(values: Any, names: Sequence[str], units: Mapping[str, str] | str, name: str) -> pd.Series:
    """A parameter Series indexed by ``names`` with ``.attrs["units"]`` a dict name -> unit.

    ``units`` is a mapping (every name must be in it) or one unit for all.
    """
    names = [str(n) for n in names]
    if isinstance(units, str):
        umap = dict.fromkeys(names, units)
    else:
        missing = [n for n in names if n not in units]
        if missing:
            raise KeyError(f"no unit for parameter(s) {missing}")
        umap = {n: str(units[n]) for n in names}
    s = pd.Series(np.asarray(values, dtype=float), index=pd.Index(names, name="parameter"), name=name)
    s.attrs["units"] = umap
    return s


def per_term_unit(response_unit: str, term: str) -> str:
    """Unit of the weight of ``term`` in a linear predictor of a response in ``response_unit``.

    The intercept (``"1"``, ``"(Intercept)"``, ``"const"``) has the response's
    unit; any other term ``response_unit/[term]`` (the term's own unit is the
    data's, in brackets: e.g. ``s/[X1:X2]``).
    """
    if term in ("1", "(Intercept)", "const", "Intercept"):
        return response_unit
    return f"{response_unit}/[{term}]"


@dataclass(frozen=True)
class Table:
    """Input rows of a prediction and how to lay results out again (see :func:`as_table`)."""

    frame: pd.DataFrame
    dims: tuple[str, ...]
    shape: tuple[int, ...]
    coords: dict[str, Any]


def as_table(x: Any, dim: str = "point") -> Table:
    """Rows to predict at: a DataFrame, a mapping of columns, a Series (one row) or an xarray Dataset.

    A Dataset may hold its inputs as data variables or coordinates (a sweep
    grid): its rows are every combination of its dimensions, and
    :func:`prediction_dataset` lays the predictions out over the same
    dimensions.  Other inputs give dimension ``dim`` (coordinate: the
    DataFrame's index, else 0..n-1).
    """
    if isinstance(x, xr.Dataset):
        order = list(x.dims)
        frame = x.to_dataframe(dim_order=order).reset_index() if order else x.to_dataframe().reset_index()
        coords = {k: v.variable for k, v in x.coords.items()}
        return Table(frame, tuple(order), tuple(x.sizes[d] for d in order), coords)
    if isinstance(x, pd.DataFrame):
        frame = x
    elif isinstance(x, pd.Series):
        frame = x.to_frame().T
    elif isinstance(x, Mapping):
        frame = pd.DataFrame({k: np.atleast_1d(np.asarray(v)) for k, v in x.items()})
    else:
        raise TypeError(f"cannot predict from {type(x).__name__}; give a DataFrame, a mapping of columns or an "
                        "xarray Dataset")
    index = frame.index
    coord = index.to_numpy() if not isinstance(index, pd.MultiIndex) else np.arange(len(frame))
    return Table(frame, (dim,), (len(frame),), {dim: coord})


def prediction_dataset(table: Table, predicted: Any, *, units: str, long_name: str,
                       lower: Any = None, upper: Any = None, interval: str | None = None, level: float = 0.95,
                       extra: Mapping[str, tuple[Any, Mapping[str, Any]]] | None = None,
                       attrs: Mapping[str, Any] | None = None) -> xr.Dataset:
    """The protocol's prediction dataset over the layout of ``table``.

    Parameters
    ----------
    table : Table
        From :func:`as_table`.
    predicted, lower, upper : array_like
        One value per row of ``table.frame`` (``lower``/``upper`` with ``interval``).
    units, long_name : str
        Of the predicted quantity.
    interval : {None, "confidence", "prediction"}
    level : float
    extra : mapping name -> (values per row, attrs), optional
        More per-row variables (e.g. the cluster used).
    attrs : mapping, optional
        Dataset attributes.
    """
    def lay(v: Any) -> np.ndarray:
        return np.asarray(v).reshape(table.shape)

    ds = xr.Dataset(coords=table.coords, attrs=dict(attrs or {}))
    ds["predicted"] = (table.dims, lay(predicted), {"units": units, "long_name": f"predicted {long_name}"})
    if interval is not None:
        for name, arr in (("lower", lower), ("upper", upper)):
            ds[name] = (table.dims, lay(arr), {"units": units, "interval": interval, "level": level,
                                               "long_name": f"{name} bound of the {level:.0%} {interval} interval "
                                                            f"of {long_name}"})
        ds.attrs.update(interval=interval, level=level)
    for name, (arr, a) in (extra or {}).items():
        ds[name] = (table.dims, lay(arr), dict(a))
    return ds


class FitResult(abc.ABC):
    """Base of every fitted model (see the module docstring for the protocol)."""

    @property
    @abc.abstractmethod
    def params(self) -> pd.Series:
        """Fitted parameters, indexed by name; ``.attrs["units"]`` a dict name -> unit."""

    @property
    @abc.abstractmethod
    def stderr(self) -> pd.Series:
        """Standard errors of :attr:`params` (same index and units; NaN where unknown)."""

    @abc.abstractmethod
    def predict(self, x: Any, interval: str | None = None, level: float = 0.95) -> xr.Dataset:
        """``predicted`` at ``x`` and, with an interval, ``lower`` / ``upper``."""

    def _diagnostics(self) -> dict[str, tuple[float, str, str]]:
        """Fit diagnostics: name -> (value, units, long name)."""
        return {}

    def to_dataset(self) -> xr.Dataset:
        """Parameters, standard errors and diagnostics as one dataset with units.

        ``estimate`` and ``stderr`` over dimension ``parameter`` (coordinate
        ``units`` names each parameter's unit, so the variables carry
        ``units = "see coordinate units"``), each diagnostic a 0-d variable.
        """
        p, se = self.params, self.stderr
        names = list(p.index)
        units = [p.attrs["units"][n] for n in names]
        ds = xr.Dataset(
            {"estimate": ("parameter", p.to_numpy(float), {"units": "see coordinate units",
                                                           "long_name": "fitted parameter"}),
             "stderr": ("parameter", se.reindex(names).to_numpy(float),
                        {"units": "see coordinate units", "long_name": "standard error of the parameter"})},
            coords={"parameter": names, "units": ("parameter", units, {"long_name": "unit of the parameter"})},
            attrs={"fit": type(self).__name__},
        )
        for name, (value, unit, long_name) in self._diagnostics().items():
            ds[name] = ((), value, {"units": unit, "long_name": long_name})
        return ds

    def summary(self) -> str:
        """Parameters, standard errors and units, then the diagnostics."""
        p, se = self.params, self.stderr
        lines = [f"{type(self).__name__}", f"{'parameter':<24s} {'estimate':>13s} {'stderr':>11s}  units"]
        for n in p.index:
            lines.append(f"{n!s:<24s} {p[n]: .6e} {se[n]:.4e}  {p.attrs['units'][n]}")
        for name, (value, unit, _long) in self._diagnostics().items():
            lines.append(f"{name} = {value:.6g} {unit if unit != '1' else ''}".rstrip())
        return "\n".join(lines)


def read_params(ds: xr.Dataset) -> tuple[pd.Series, pd.Series]:
    """``params`` and ``stderr`` back from :meth:`FitResult.to_dataset` (or its netCDF file)."""
    for v in ("estimate", "stderr", "units"):
        if v not in ds.variables:
            raise KeyError(f"not a fit dataset: no {v!r} (variables: {sorted(map(str, ds.variables))})")
    names = [str(n) for n in ds["parameter"].values]
    units = dict(zip(names, (str(u) for u in ds["units"].values), strict=True))
    return (param_series(ds["estimate"].values, names, units, "estimate"),
            param_series(ds["stderr"].values, names, units, "stderr"))
