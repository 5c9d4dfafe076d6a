"""Generalized additive model of the same variables, for comparison with a linear model (paper 001 §3, §5).

Paper 001 checks its linear models against GAMs of the same variables (§5.1.3:
"it was compared against a similar model built using GAM. The models predicted
close values for test data"; §5.2.3 likewise).  :func:`gam` fits
y = b0 + sum_j f_j(x_j) + (linear terms), each f_j a penalized cubic B-spline,
with statsmodels' ``GLMGam`` (Gaussian, identity link).  The smoothing
penalty is chosen by generalized cross-validation over a grid (one factor for
all smooths, each smooth's penalty scaled to its basis, so the grid is free
of the variables' units).

Why statsmodels and not pygam: statsmodels is already a dependency, and pygam
(0.9/0.10) caps SciPy below 1.17 while this environment resolves SciPy 1.17;
adding it would pin the whole package to an older SciPy for one comparison.
GLMGam gives what the comparison needs: penalized splines, effective degrees
of freedom, fitted values and confidence intervals.  It does not extrapolate:
B-splines end at the outermost knots, so predicting outside the training range
of a smoothed variable raises :class:`~perfmod.models.regression.formula.DataError`
naming the variable, its range and the rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
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
from perfmod.models.regression.formula import DataError, FormulaError, as_frame, check_finite

__all__ = ["GAMFit", "gam", "compare_with_lm", "PENALTY_GRID"]

#: penalty factors tried (relative to each smooth's basis scale); GCV picks one
PENALTY_GRID = tuple(10.0 ** np.arange(-6, 4.5, 0.5))


@dataclass
class GAMFit(FitResult):
    """A fitted GAM (what :func:`gam` returns), with the result protocol of :mod:`perfmod.core.results`.

    Attributes
    ----------
    response : str
    smooth, linear : tuple of str
        Smoothed variables and variables entered linearly.
    results : statsmodels GLMGamResults
    alpha : numpy.ndarray
        Penalty weight per smooth.
    edf : float
        Effective degrees of freedom of the whole fit (intercept included).
    rss, rse : float
        Residual sum of squares and sqrt(RSS / (n - edf)), response units.
    gcv : float
        n RSS / (n - edf)^2 of the chosen penalty.
    ranges : dict
        Training (min, max) of each smoothed variable.
    """

    response: str
    smooth: tuple[str, ...]
    linear: tuple[str, ...]
    results: Any
    alpha: np.ndarray
    edf: float
    rss: float
    rse: float
    gcv: float
    ranges: dict[str, tuple[float, float]]

    def _exog(self, df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        missing = [v for v in (*self.smooth, *self.linear) if v not in df.columns]
        if missing:
            raise FormulaError(f"new data lacks {', '.join(map(repr, missing))}; columns: {', '.join(df.columns)}")
        check_finite(df, [*self.smooth, *self.linear], what="new data")
        for v in self.smooth:
            lo, hi = self.ranges[v]
            out = np.flatnonzero((df[v] < lo) | (df[v] > hi))
            if out.size:
                rows = ", ".join(map(str, df.index[out][:10]))
                raise DataError(f"the GAM cannot predict {v} outside its training range [{lo:g}, {hi:g}] "
                                f"(B-splines end at the boundary knots): rows {rows}")
        lin = np.column_stack([np.ones(len(df))] + [df[v].to_numpy(float) for v in self.linear])
        return lin, df[list(self.smooth)].to_numpy(float)

    def _names(self) -> list[str]:
        out = []
        for nm in self.results.model.exog_names:
            smooth = re.fullmatch(r"x(\d+)_s(\d+)", nm)
            lin = re.fullmatch(r"x(\d+)", nm)
            if nm == "const":
                out.append("(Intercept)")
            elif smooth:
                out.append(f"s({self.smooth[int(smooth[1])]}).{smooth[2]}")
            elif lin:
                out.append(self.linear[int(lin[1]) - 1])
            else:
                raise ValueError(f"unexpected GLMGam coefficient name {nm!r}")
        return out

    def _units(self) -> dict[str, str]:
        # B-spline basis functions are dimensionless: their weights carry the response's unit
        return {n: per_term_unit(f"[{self.response}]", n if n in self.linear else "1") for n in self._names()}

    @property
    def params(self) -> pd.Series:
        """Coefficients: intercept, linear terms, then each smooth's B-spline weights ``s(<x>).<j>``."""
        return param_series(np.asarray(self.results.params), self._names(), self._units(), "estimate")

    @property
    def stderr(self) -> pd.Series:
        """Standard errors of :attr:`params` (statsmodels' penalized covariance)."""
        return param_series(np.asarray(self.results.bse), self._names(), self._units(), "stderr")

    @property
    def df_resid(self) -> float:
        """Residual degrees of freedom, n - edf."""
        return float(self.results.df_resid)

    def predict(self, x: Any = None, interval: str | None = None, level: float = 0.95) -> xr.Dataset:
        """Fitted values at ``x`` (the training data when omitted), with a ``level`` interval.

        Intervals: the mean's standard error from the penalized covariance,
        ``se^2 = g' Cov g`` for the basis row g, plus ``rse^2`` for a prediction
        interval; t quantile with n - edf degrees of freedom.

        Returns
        -------
        xarray.Dataset
            ``predicted`` (and ``lower`` / ``upper``) over dimension ``point``
            (or a Dataset input's dimensions).
        """
        check_interval(interval, level)
        if x is None:
            f = self.results.get_prediction()
            table = as_table(pd.DataFrame(index=pd.RangeIndex(len(f.predicted_mean))))
        else:
            table = as_table(x)
            lin, sm = self._exog(table.frame)
            f = self.results.get_prediction(exog=lin, exog_smooth=sm)
        fit = np.asarray(f.predicted_mean, dtype=float)
        lower = upper = None
        if interval is not None:
            lower, upper = interval_bounds(fit, np.asarray(f.se_mean) ** 2, self.rse**2, self.df_resid, interval,
                                           level)
        return prediction_dataset(table, fit, units=f"[{self.response}]", long_name=f"{self.response} (GAM)",
                                  lower=lower, upper=upper, interval=interval, level=level)

    def _diagnostics(self) -> dict[str, tuple[float, str, str]]:
        y = f"[{self.response}]"
        return {"edf": (self.edf, "1", "effective degrees of freedom"),
                "rss": (self.rss, f"{y}^2", "residual sum of squares"),
                "rse": (self.rse, y, "residual standard error sqrt(RSS / (n - edf))"),
                "gcv": (self.gcv, f"{y}^2", "generalized cross-validation score")}

    def __repr__(self) -> str:
        return (f"GAMFit({self.response} ~ s({'), s('.join(self.smooth)})"
                f"{' + ' + ' + '.join(self.linear) if self.linear else ''}, edf={self.edf:.2f}, rse={self.rse:.4g})")


def gam(response: str, data: Any, smooth: Sequence[str], linear: Sequence[str] = (), df: int = 8,
        degree: int = 3, penalty: float | None = None) -> GAMFit:
    """Fit ``response ~ s(x1) + s(x2) + linear terms`` with penalized B-splines (statsmodels GLMGam).

    Parameters
    ----------
    response : str
        Response column.
    data : DataFrame, xarray.Dataset or mapping
    smooth : sequence of str
        Variables given a smooth function each (paper 001: X1, X2, X3).
    linear : sequence of str
        Variables entered linearly (e.g. a variable with few distinct values).
    df : int
        B-spline basis size per smooth (before the penalty shrinks it).
    degree : int
        Spline degree (3: cubic).
    penalty : float, optional
        Penalty factor (relative to each basis' scale); chosen by GCV over
        :data:`PENALTY_GRID` when omitted.
    """
    from statsmodels.gam.api import BSplines, GLMGam

    d = as_frame(data)
    smooth, linear = tuple(smooth), tuple(linear)
    if not smooth:
        raise FormulaError("a GAM needs at least one smoothed variable")
    cols = [response, *smooth, *linear]
    missing = [c for c in cols if c not in d.columns]
    if missing:
        raise FormulaError(f"{', '.join(map(repr, missing))} not in the data; "
                           f"columns: {', '.join(map(str, d.columns))}")
    check_finite(d, cols)
    few = [v for v in smooth if d[v].nunique() <= degree + 1]
    if few:
        raise DataError(f"{', '.join(few)} take too few distinct values for a smooth of degree {degree}; "
                        f"enter them with linear=")
    y = d[response].to_numpy(float)
    x = d[list(smooth)].to_numpy(float)
    n = len(y)
    lin = np.column_stack([np.ones(n)] + [d[v].to_numpy(float) for v in linear])
    if n <= lin.shape[1] + len(smooth) * (df - 1):
        raise DataError(f"{n} observations for a GAM with {lin.shape[1] + len(smooth) * (df - 1)} basis functions")
    bs = BSplines(x, df=[df] * len(smooth), degree=[degree] * len(smooth))
    scale = np.array([np.trace(s.basis.T @ s.basis) / max(np.trace(s.cov_der2), 1e-300) for s in bs.smoothers])
    best = None
    for lam in [penalty] if penalty is not None else PENALTY_GRID:
        res = GLMGam(y, exog=lin, smoother=bs, alpha=lam * scale).fit()
        edf = float(np.sum(res.edf))
        rss = float(np.sum(res.resid_response**2))
        gcv = n * rss / (n - edf) ** 2
        if best is None or gcv < best[0]:
            best = (gcv, lam, res, edf, rss)
    gcv, lam, res, edf, rss = best
    return GAMFit(response=response, smooth=smooth, linear=linear, results=res, alpha=lam * scale, edf=edf, rss=rss,
                  rse=float(np.sqrt(rss / (n - edf))), gcv=gcv,
                  ranges={v: (float(d[v].min()), float(d[v].max())) for v in smooth})


def compare_with_lm(formula: str, data: Any, smooth: Sequence[str], linear: Sequence[str] = (),
                    test_size: float | int = 0.2, groups: str | None = None, seed: int = 0,
                    df: int = 8) -> pd.DataFrame:
    """The paper's check (001 §5.1.3, §5.2.3): a linear model and a GAM of the same variables, same split.

    Both are fitted on the training part of one hold-out split
    (:func:`~perfmod.models.regression.crossval.holdout_split`) and predict the held-out
    rows; held-out rows outside the GAM's training range of a smoothed variable
    are left out of both scores (counted in ``n_outside``).

    Returns
    -------
    pandas.DataFrame
        Rows ``lm`` and ``gam``: ``rse_train`` (RSE; for the GAM with its effective
        df), ``rmse_validation``, ``n_validation``, ``n_outside``, and
        ``max_rel_diff`` / ``median_rel_diff``: |lm - gam| / |gam| over the scored
        held-out rows (same value on both rows).
    """
    from perfmod.models.regression.crossval import holdout_split
    from perfmod.models.regression.linear import lm

    d = as_frame(data)
    tr, te = holdout_split(d, test_size, groups, seed)
    m = lm(formula, d.loc[tr])
    g = gam(formula.split("~", 1)[0].strip(), d.loc[tr], smooth, linear, df=df)
    test = d.loc[te]
    inside = np.ones(len(test), dtype=bool)
    for v in g.smooth:
        lo, hi = g.ranges[v]
        inside &= ((test[v] >= lo) & (test[v] <= hi)).to_numpy()
    test = test[inside]
    if test.empty:
        raise DataError("no held-out row lies inside the GAM's training range; use a larger or grouped split")
    y = test[g.response].to_numpy(float)
    p_lm = m.predict(test)["predicted"].to_numpy()
    p_gam = g.predict(test)["predicted"].to_numpy()
    rel = np.abs(p_lm - p_gam) / np.abs(p_gam)
    common = {"n_validation": len(test), "n_outside": int((~inside).sum()), "max_rel_diff": float(rel.max()),
              "median_rel_diff": float(np.median(rel))}
    return pd.DataFrame({
        "lm": {"rse_train": m.rse, "rmse_validation": float(np.sqrt(np.mean((y - p_lm) ** 2))), **common},
        "gam": {"rse_train": g.rse, "rmse_validation": float(np.sqrt(np.mean((y - p_gam) ** 2))), **common},
    }).T
