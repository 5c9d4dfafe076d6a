"""Baseline compute models: SST/macro's loop model and SMPI's constant mean (paper 004 §VI).

*Loop model* (paper 004 §VI, Figure 5; SST/macro ``compute_loops``): the work
of a loop nest is its trip count, the product of the loop extents, times the
number of lines (loop factor) per iteration; SST/macro turns flops and bytes
proportional to ``trips x lines`` into time with a processor model.  With the
processor model's rates folded in, this is ``t = c * trips * lines`` with one
constant ``c`` (seconds per line-iteration) fitted per region.

*Constant mean* (SimGrid's ``SMPI_SAMPLE``): a region runs for real until the
relative standard error of its time is small, then its mean is injected for
every later call: one constant per code location, whatever the parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._protocol import ClusterFit, TermModel, as_frame, check_training_frame
from .errors import MissingParameterError, TooFewPointsError
from .pool import Term
from .selection import wls

__all__ = ["LoopModel", "ConstantMeanModel", "fit_loop_model", "fit_constant_mean"]


class LoopModel(TermModel):
    """``t = c * prod(extents) * lines`` with one fitted constant ``c`` (seconds per line-iteration)."""

    method = "loop"

    def __init__(self, parameters: Sequence[str], extents: Sequence[str], lines: float | str, fit: ClusterFit,
                 target: str, train_min: np.ndarray, train_max: np.ndarray, units: str = "s") -> None:
        self.parameters = list(parameters)
        self.extents = list(extents)
        self.lines = lines
        self.clusters = [fit]
        self.target = target
        self.train_min, self.train_max = train_min, train_max
        self.units = units

    def input_names(self) -> list[str]:
        """The single input is the trip count times the lines per iteration."""
        lines = self.lines if isinstance(self.lines, str) else f"{self.lines:g}"
        return ["*".join([*self.extents, lines])]

    def work(self, frame: pd.DataFrame) -> np.ndarray:
        """``trips * lines`` of each row (line-iterations)."""
        trips = np.prod(frame[self.extents].to_numpy(dtype=float), axis=1)
        lines = frame[self.lines].to_numpy(dtype=float) if isinstance(self.lines, str) else float(self.lines)
        return trips * lines

    def _inputs(self, frame: pd.DataFrame, strict: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        X = self._check_columns(frame, strict)
        extra = np.any((X < self.train_min) | (X > self.train_max), axis=1)
        return self.work(frame)[:, None], np.zeros(len(frame), dtype=int), extra

    def _inputs_array(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cols = [*self.extents, *([self.lines] if isinstance(self.lines, str) else [])]
        missing = [c for c in cols if c not in self.parameters]
        if missing:
            raise MissingParameterError(f"loop model of {self.target!r}: {missing} are not among its parameters "
                                        f"{self.parameters}; use predict() with a table that has them")
        work = np.prod(X[:, [self.parameters.index(c) for c in cols]], axis=1)
        if not isinstance(self.lines, str):
            work = work * float(self.lines)
        extra = np.any((X < self.train_min) | (X > self.train_max), axis=1)
        return work[:, None], np.zeros(len(X), dtype=int), extra


class ConstantMeanModel(TermModel):
    """SMPI-style constant: the mean time of the region, whatever its parameters."""

    method = "mean"

    def __init__(self, parameters: Sequence[str], fit: ClusterFit, target: str, rse: float,
                 train_min: np.ndarray, train_max: np.ndarray, units: str = "s") -> None:
        self.parameters = list(parameters)
        self.clusters = [fit]
        self.target = target
        self.relative_standard_error = rse
        self.train_min, self.train_max = train_min, train_max
        self.units = units

    def _inputs_array(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        extra = np.any((X < self.train_min) | (X > self.train_max), axis=1) if X.shape[1] else np.zeros(len(X), bool)
        return np.ones((len(X), 1)), np.zeros(len(X), dtype=int), extra


def _default_parameters(frame: pd.DataFrame, target: str) -> list[str]:
    return [c for c in frame.columns if c != target and pd.api.types.is_numeric_dtype(frame[c])]


def fit_loop_model(data: Any, target: str = "time", parameters: Sequence[str] | None = None, *,
                   extents: Sequence[str] | None = None, lines: float | str = 1.0, relative: bool = True,
                   units: str = "s") -> LoopModel:
    """Fit SST/macro's loop model with one constant per region (paper 004 §VI, Figure 5).

    Parameters
    ----------
    data : DataFrame or mapping
        Region calls with the loop-extent columns and ``target``.
    target : str
        Column to predict (seconds).
    parameters : sequence of str, optional
        Columns the model accepts at prediction (default: ``extents`` and a ``lines`` column).
    extents : sequence of str
        Columns whose product is the trip count (required).
    lines : float or str
        Lines (loop factor) per iteration, a constant or a column name.
    relative : bool
        Fit ``c`` minimizing relative rather than absolute squared error.
    """
    frame = as_frame(data)
    if not extents:
        raise ValueError("the loop model needs extents=[...]: the columns whose product is the trip count")
    extents = list(extents)
    if parameters is None:
        parameters = [*extents, *([lines] if isinstance(lines, str) else [])]
    parameters = list(parameters)
    missing = [e for e in extents if e not in parameters]
    if missing:
        raise MissingParameterError(f"loop extents {missing} are not among the parameters {parameters}")
    X, y = check_training_frame(frame, target, parameters)
    if len(np.unique(X, axis=0)) < 1 or len(y) < 2:
        raise TooFewPointsError(f"the loop model needs at least 2 rows, got {len(y)}")
    model = LoopModel(parameters, extents, lines, ClusterFit([], np.zeros(0)), target, X.min(0), X.max(0), units)
    work = model.work(frame)
    w = 1.0 / y**2 if relative else None
    fit = wls(work[:, None], y, w)
    yhat = work * fit.coef[0]
    r2 = 1.0 - float(np.sum((y - yhat) ** 2) / np.sum((y - y.mean()) ** 2)) if np.ptp(y) > 0 else float("nan")
    model.clusters = [ClusterFit([Term("power", 0, exponent=1.0)], fit.coef, fit.cov, fit.sigma2, fit.dof, len(y),
                                 r2, r2, relative=relative)]
    return model


def fit_constant_mean(data: Any, target: str = "time", parameters: Sequence[str] | None = None, *,
                      units: str = "s") -> ConstantMeanModel:
    """SMPI-style constant mean of ``target`` (seconds); ``parameters`` are accepted and ignored."""
    frame = as_frame(data)
    parameters = _default_parameters(frame, target) if parameters is None else list(parameters)
    X, y = check_training_frame(frame, target, parameters)
    n = len(y)
    if n < 2:
        raise TooFewPointsError(f"the constant mean needs at least 2 rows, got {n}")
    fit = wls(np.ones((n, 1)), y)
    rse = float(np.std(y, ddof=1) / np.sqrt(n) / abs(np.mean(y))) if np.mean(y) != 0 else float("inf")
    cf = ClusterFit([Term("identity")], fit.coef, fit.cov, fit.sigma2, fit.dof, n, 0.0, 0.0)
    lo = X.min(axis=0) if X.shape[1] else np.zeros(0)
    hi = X.max(axis=0) if X.shape[1] else np.zeros(0)
    return ConstantMeanModel(parameters, cf, target, rse, lo, hi, units)
