"""Shared result protocol of the compute models: params, stderr, predict, to_dataset, summary.

Every fitted compute model is a set of clusters (segments), each with a
linear combination of pool terms (paper 004 §IV-B, §IV-C).  This module holds
the per-cluster fit and the base class that turns it into the result protocol:
``params`` / ``stderr`` as pandas Series indexed by term name, ``predict(data,
interval=None | "confidence" | "prediction", level=0.95)`` returning an
``xarray.Dataset`` (``predicted``, and ``lower`` / ``upper`` with an interval),
``to_dataset()`` and ``summary()``, built on the shared pieces of
:mod:`perfmod.core.results`.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from perfmod.core.results import (
    FitResult,
    as_table,
    check_interval,
    interval_bounds,
    param_series,
    per_term_unit,
    prediction_dataset,
)

from .errors import ExtrapolationWarning, MissingParameterError, UnknownParameterError
from .pool import Term, evaluate_terms

__all__ = ["ClusterFit", "TermModel", "as_frame", "check_training_frame"]


@dataclass
class ClusterFit:
    """The expression fitted in one cluster or segment.

    Attributes
    ----------
    terms : list of Term
        Selected regressors, in the order selected.
    coef : ndarray
        Their weights (target units per unit of the term).
    cov : ndarray or None
        Covariance of ``coef``; ``None`` when unknown (e.g. read from an Eiger file).
    sigma2 : float
        Residual variance of unit weight (NaN when unknown).
    dof : int
        Residual degrees of freedom.
    n : int
        Training rows in the cluster.
    r2, r2_adj : float
        Training R^2 and adjusted R^2.
    relative : bool
        Whether the fit weighted rows by ``1/y^2`` (relative errors).
    extra : dict
        Diagnostics of the selection (stopping rule, CV curve, ...).
    """

    terms: list[Term]
    coef: np.ndarray
    cov: np.ndarray | None = None
    sigma2: float = float("nan")
    dof: int = 0
    n: int = 0
    r2: float = float("nan")
    r2_adj: float = float("nan")
    relative: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def evaluate(self, X: np.ndarray) -> np.ndarray:
        """Expression value on the input rows ``X``."""
        return evaluate_terms(self.terms, X) @ np.asarray(self.coef, dtype=float) if self.terms else np.zeros(len(X))


def as_frame(data: Any) -> pd.DataFrame:
    """Accept a DataFrame, a mapping of arrays/scalars, a Series (one row) or an xarray Dataset."""
    return as_table(data).frame


class TermModel(FitResult):
    """Base of the fitted compute models (subclasses set the inputs and clusters).

    Subclasses define ``parameters`` (input column names the user gives),
    ``target``, ``clusters`` and ``_inputs_array(X) -> (inputs, cluster, extrapolated)``
    on the raw parameter values ``X`` (rows, columns in ``parameters`` order).

    Two ways to predict: :meth:`predict` on a table (the result protocol's
    dataset, with intervals), and :meth:`predict_one` for one point as a float
    (no table, no dataset: what a skeleton calls once per modeled region call).
    """

    parameters: list[str]
    target: str
    clusters: list[ClusterFit]
    method: str = "compute"
    units: str = "s"

    # ----------------------------------------------------------------- inputs
    def _check_columns(self, frame: pd.DataFrame, strict: bool = True) -> np.ndarray:
        missing = [p for p in self.parameters if p not in frame.columns]
        if missing:
            raise MissingParameterError(
                f"{self.method} model of {self.target!r} needs parameter(s) {missing}; "
                f"the data has {list(frame.columns)}")
        if strict:
            unknown = [c for c in frame.columns if c not in self.parameters and c != self.target]
            if unknown:
                raise UnknownParameterError(
                    f"{self.method} model of {self.target!r} does not know parameter(s) {unknown}; "
                    f"it was trained on {self.parameters}")
        X = frame[self.parameters].to_numpy(dtype=float)
        bad = ~np.isfinite(X)
        if bad.any():
            col = int(np.nonzero(bad.any(axis=0))[0][0])
            raise MissingParameterError(
                f"parameter {self.parameters[col]!r} is missing (NaN/inf) in {int(bad[:, col].sum())} "
                f"of {len(X)} rows")
        return X

    def _inputs(self, frame: pd.DataFrame, strict: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Term inputs, cluster index and extrapolation flag of each row of ``frame``."""
        return self._inputs_array(self._check_columns(frame, strict))

    def _inputs_array(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Term inputs, cluster index and extrapolation flag of each row of raw parameters ``X`` (subclasses)."""
        raise NotImplementedError

    def predict_one(self, /, **params: float) -> float:
        """Predicted target at one parameter point, as a float.

        The value :meth:`predict` gives for a one-row table (``predicted``), without
        building the table or the result dataset; no interval, no ``extrapolated``
        flag (use :meth:`predict` for those).

        Parameters
        ----------
        **params : float
            One value per name in ``parameters`` (e.g. ``model.predict_one(n=4096)``).

        Returns
        -------
        float
            Predicted target (target units).

        Raises
        ------
        MissingParameterError
            A parameter of the model is not given, or is NaN/inf.
        UnknownParameterError
            A parameter the model was not trained on is given.
        """
        try:
            x = [float(params[p]) for p in self.parameters]
        except KeyError:
            missing = [p for p in self.parameters if p not in params]
            raise MissingParameterError(f"{self.method} model of {self.target!r} needs parameter(s) {missing}; "
                                        f"given {sorted(params)}") from None
        if len(params) > len(x):
            unknown = sorted(set(params) - set(self.parameters))
            raise UnknownParameterError(f"{self.method} model of {self.target!r} does not know parameter(s) "
                                        f"{unknown}; it was trained on {self.parameters}")
        bad = [p for p, v in zip(self.parameters, x, strict=True) if not np.isfinite(v)]
        if bad:
            raise MissingParameterError(f"parameter {bad[0]!r} is missing (NaN/inf): {params[bad[0]]!r}")
        X, cl, _ = self._inputs_array(np.array([x]))
        value = float(self._postprocess(self.clusters[int(cl[0])].evaluate(X))[0])
        if value <= 0.0:
            warnings.warn(f"{self.method} model of {self.target!r} predicts {value:.4g} (<= 0) at {params}: the data "
                          "do not support this point", ExtrapolationWarning, stacklevel=2)
        return value

    def input_names(self) -> list[str]:
        """Names of the columns the terms read (parameters, or rotated components)."""
        return list(self.parameters)

    # ----------------------------------------------------------------- protocol
    def term_names(self) -> list[str]:
        """Term names, prefixed ``c<k>:`` when the model has several clusters."""
        names = self.input_names()
        multi = len(self.clusters) > 1
        out = []
        for k, c in enumerate(self.clusters):
            for t in c.terms:
                out.append(f"c{k}:{t.name(names)}" if multi else t.name(names))
        return out

    def _units(self) -> dict[str, str]:
        names = self.input_names()
        multi = len(self.clusters) > 1
        return {(f"c{k}:{t.name(names)}" if multi else t.name(names)): per_term_unit(self.units, t.name(names))
                for k, c in enumerate(self.clusters) for t in c.terms}

    @property
    def params(self) -> pd.Series:
        """Fitted weights, indexed by term name (units: target units per unit of the term)."""
        vals = np.concatenate([np.asarray(c.coef, dtype=float) for c in self.clusters]) if self.clusters else []
        return param_series(vals, self.term_names(), self._units(), "estimate")

    @property
    def stderr(self) -> pd.Series:
        """Standard errors of :attr:`params` (NaN where unknown)."""
        vals: list[float] = []
        for c in self.clusters:
            if c.cov is None:
                vals.extend([np.nan] * len(c.terms))
            else:
                vals.extend(np.sqrt(np.clip(np.diag(np.asarray(c.cov, dtype=float)), 0, None)))
        return param_series(vals, self.term_names(), self._units(), "stderr")

    def predict(self, x: Any, interval: str | None = None, level: float = 0.95,
                strict: bool = True) -> xr.Dataset:
        """Predicted target for each row of ``x``.

        Parameters
        ----------
        x : DataFrame, mapping or xarray Dataset
            Columns named like the model's parameters (the target column is ignored).
        interval : {None, "confidence", "prediction"}
            Interval of the mean response, or of a new observation (:mod:`perfmod.core.results`;
            a relative fit's new observation has variance ``sigma^2 predicted^2``).
        level : float
            Coverage of the interval.
        strict : bool
            Raise :class:`UnknownParameterError` for columns the model does not know.

        Returns
        -------
        xarray.Dataset
            Over dimension ``point`` (or a Dataset input's dimensions): ``predicted``
            (target units), ``cluster``, ``extrapolated`` (a parameter outside the
            training range), and with an interval ``lower`` / ``upper``.
        """
        check_interval(interval, level)
        table = as_table(x)
        frame = table.frame
        X, cl, extra = self._inputs(frame, strict=strict)
        n = len(frame)
        pred = np.full(n, np.nan)
        lower = np.full(n, np.nan)
        upper = np.full(n, np.nan)
        for k, c in enumerate(self.clusters):
            rows = cl == k
            if not rows.any():
                continue
            D = evaluate_terms(c.terms, X[rows])
            yhat = D @ np.asarray(c.coef, dtype=float) if c.terms else np.zeros(rows.sum())
            pred[rows] = yhat
            if interval is not None:
                if c.cov is None or not np.isfinite(c.sigma2) or c.dof < 1:
                    raise ValueError(
                        f"cluster {k} of the {self.method} model has no residual variance (read from a file, or no "
                        "degrees of freedom left); intervals are unavailable")
                var_mean = np.einsum("ij,jk,ik->i", D, np.asarray(c.cov), D)
                lower[rows], upper[rows] = interval_bounds(
                    yhat, var_mean, c.sigma2 * (yhat**2 if c.relative else 1.0), c.dof, interval, level)
        pred = self._postprocess(pred)
        unsupported = (pred <= 0) | self._sign_changes(X, cl)
        if unsupported.any():
            warnings.warn(f"{self.method} model of {self.target!r}: {int(unsupported.sum())} of {n} prediction(s) the "
                          "data do not support (at or below 0, or a term of another sign than on the training range);"
                          " see the dataset's 'unsupported'", ExtrapolationWarning, stacklevel=2)
        ds = prediction_dataset(
            table, pred, units=self.units, long_name=self.target, lower=lower, upper=upper, interval=interval,
            level=level,
            extra={"cluster": (cl.astype(int), {"units": "1", "long_name": "cluster or segment used"}),
                   "extrapolated": (extra.astype(bool),
                                    {"units": "1", "long_name": "a parameter lies outside the training range"}),
                   "unsupported": (unsupported.astype(bool),
                                   {"units": "1", "long_name": "prediction at or below 0, or a term of another sign "
                                                               "than on the training range"})},
            attrs={"method": self.method, "target": self.target,
                   "n_extrapolated": int(extra.sum()), "n_negative": int(np.sum(pred < 0)),
                   "n_unsupported": int(unsupported.sum())})
        if table.dims == ("point",):
            ds = ds.assign_coords({p: ("point", frame[p].to_numpy()) for p in self.parameters if p in frame.columns})
        return ds

    def _postprocess(self, pred: np.ndarray) -> np.ndarray:
        return pred

    def _sign_changes(self, X: np.ndarray, cl: np.ndarray) -> np.ndarray:
        """Rows where a term's sign differs from its (one) sign at the corners of the training box."""
        lo, hi = getattr(self, "train_min", None), getattr(self, "train_max", None)
        out = np.zeros(len(X), dtype=bool)
        if lo is None or hi is None or len(lo) != X.shape[1] or X.shape[1] > 8:
            return out
        corners = np.array(list(itertools.product(*zip(lo, hi, strict=True))), dtype=float)
        try:
            Xc, clc, _ = self._inputs_array(corners)
        except (MissingParameterError, ValueError):
            return out
        for k, c in enumerate(self.clusters):
            rows = cl == k
            if not rows.any() or not c.terms or not np.any(clc == k):
                continue
            at_corners = evaluate_terms(c.terms, Xc[clc == k]) * np.asarray(c.coef, dtype=float)
            here = evaluate_terms(c.terms, X[rows]) * np.asarray(c.coef, dtype=float)
            for t in range(len(c.terms)):
                s = np.sign(at_corners[:, t])
                if np.all(s == s[0]) and s[0] != 0:
                    out[np.nonzero(rows)[0][np.sign(here[:, t]) == -s[0]]] = True
        return out

    def to_dataset(self) -> xr.Dataset:
        """The protocol's dataset, plus each term's ``cluster`` and per-cluster fit quality."""
        ds = super().to_dataset()
        clus = [k for k, c in enumerate(self.clusters) for _ in c.terms]
        ds["cluster"] = ("parameter", np.asarray(clus, dtype=int), {"units": "1", "long_name": "cluster of the term"})
        for name, vals, long_name in (("r2", [c.r2 for c in self.clusters], "training R^2"),
                                      ("r2_adj", [c.r2_adj for c in self.clusters], "training adjusted R^2"),
                                      ("n_train", [c.n for c in self.clusters], "training rows")):
            ds[name] = ("cluster_index", np.asarray(vals), {"units": "1", "long_name": f"{long_name} of the cluster"})
        ds.attrs.update(method=self.method, target=self.target, parameters=",".join(self.parameters),
                        n_clusters=len(self.clusters))
        return ds

    def summary(self) -> str:
        """Readable table of the clusters, their terms, weights and fit quality."""
        lines = [f"{self.method} model of {self.target!r} on {self.parameters} ({len(self.clusters)} cluster(s))"]
        names = iter(self.term_names())
        for k, c in enumerate(self.clusters):
            lines.append(f"cluster {k}: n={c.n}, R^2={c.r2:.4g}, adj. R^2={c.r2_adj:.4g}"
                         + (f", {self._cluster_label(k)}" if self._cluster_label(k) else ""))
            se = (np.sqrt(np.clip(np.diag(c.cov), 0, None)) if c.cov is not None
                  else np.full(len(c.terms), np.nan))
            for b, s in zip(c.coef, se, strict=True):
                lines.append(f"  {next(names):<28s} {b: .6e}  (se {s:.2e})")
        return "\n".join(lines)

    def _cluster_label(self, k: int) -> str:
        return ""

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.method} {self.target!r} ~ {self.parameters}, "
                f"{len(self.clusters)} cluster(s)>")


def check_training_frame(frame: pd.DataFrame, target: str, parameters: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Training inputs and target as float arrays; clear errors for missing columns and values."""
    cols = [*parameters, target]
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise MissingParameterError(f"training data lacks column(s) {missing}; it has {list(frame.columns)}")
    X = frame[list(parameters)].to_numpy(dtype=float)
    y = frame[target].to_numpy(dtype=float)
    for j, p in enumerate(parameters):
        bad = ~np.isfinite(X[:, j])
        if bad.any():
            raise MissingParameterError(f"parameter {p!r} is missing (NaN/inf) in {int(bad.sum())} of {len(X)} rows")
    bad = ~np.isfinite(y)
    if bad.any():
        raise MissingParameterError(f"target {target!r} is missing (NaN/inf) in {int(bad.sum())} of {len(y)} rows")
    return X, y
