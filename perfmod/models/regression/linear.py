"""Linear models like R's ``lm``: coefficients, summary, intervals (paper 001 §3).

paper 001 (Sasidharan, thesis 2021/22) fits every model by
least squares in R and reports, per term, Estimate, Stand.Error, t-value and
Pr(>|t|) (Tables 1, 3, 5, 6, 8, 10, 11), the residual standard error (RSE)
and the overall F test's p-value (§5.1.2: "Model A had an RSE of 181.4 and
p-value of < 2.2e-16"), and 95 % intervals for predictions (Tables 4, 7,
12-14).  :func:`lm` does the same: Householder QR of the design (as R's
``lm.fit``), aliased (linearly dependent) terms refused by name, covariance
from the triangular factor (``chol2inv``), t and F tests with R's degrees of
freedom.

Log response: ``lm(formula, data, log_response=True)`` fits ``log(y)`` (the
paper, §6.5.1: negative lower bounds "can be avoided by taking logarithms");
:meth:`LinearModel.predict` then returns ``exp`` of the fit and the bounds,
i.e. the median and its interval on the original scale, always positive.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr
from scipy import linalg, stats

from perfmod.core.results import (
    FitResult,
    as_table,
    check_interval,
    interval_bounds,
    param_series,
    per_term_unit,
    prediction_dataset,
)
from perfmod.models.regression.formula import DataError, Design, FormulaError, build_design, design_matrix
from perfmod.models.regression.rformat import format_summary

__all__ = ["LinearModel", "lm", "ALIAS_TOL"]

#: a column is aliased when what is left of it after projecting out the earlier columns is below
#: this fraction of its norm (R's lm uses tol = 1e-7 in its pivoted QR)
ALIAS_TOL = 1e-7


@dataclass
class LinearModel(FitResult):
    """A fitted linear model (what :func:`lm` returns), with the result protocol of :mod:`perfmod.core.results`.

    ``params`` / ``stderr`` are :attr:`coef` and its standard errors with
    units in brackets (``[time]/[X1]``: the data carry no units);
    ``predict`` has R's closed-form intervals.

    Attributes
    ----------
    design : Design
        Response, design matrix (R-named columns) and formula.
    coef : pandas.Series
        Estimates, indexed by R's coefficient names.
    cov_unscaled : pandas.DataFrame
        (X'X)^-1, R's ``summary(m)$cov.unscaled``.
    fitted, residuals : numpy.ndarray
        Fitted values and residuals, response units.
    rss : float
        Residual sum of squares.
    df_resid : int
        Residual degrees of freedom, n - p.
    rse : float
        Residual standard error sqrt(RSS / df_resid), R's ``sigma``.
    r2, adj_r2 : float
        Multiple and adjusted R^2 (uncentred without an intercept, as R).
    fstat : float
        F statistic of the model against the intercept-only model (against zero
        without an intercept); ``f_df`` its (numerator, denominator) df.
    f_pvalue : float
        Its p-value.
    effects : numpy.ndarray
        The first p orthogonal effects Q'y (R's ``effects``, up to sign), from which the
        sequential (Type-I) ANOVA takes each term's sum of squares.
    log_response : bool
        The response is log(y) of the data's y (predictions back-transformed).
    """

    design: Design
    coef: pd.Series
    cov_unscaled: pd.DataFrame
    fitted: np.ndarray
    residuals: np.ndarray
    rss: float
    df_resid: int
    rse: float
    r2: float
    adj_r2: float
    fstat: float
    f_df: tuple[int, int]
    f_pvalue: float
    effects: np.ndarray
    log_response: bool = False
    call: str = ""
    _statsmodels: Any = field(default=None, repr=False)

    # ---- R-like accessors -------------------------------------------------------------------------
    @property
    def formula(self) -> str:
        return self.design.formula

    @property
    def nobs(self) -> int:
        return len(self.design.y)

    @property
    def has_intercept(self) -> bool:
        return "(Intercept)" in self.coef.index

    def _units(self) -> dict[str, str]:
        return {c: per_term_unit(f"[{self.design.response}]", c) for c in self.coef.index}

    @property
    def params(self) -> pd.Series:
        """The estimates (:attr:`coef`) with units ``[response]/[term]``."""
        return param_series(self.coef.to_numpy(), self.coef.index, self._units(), "estimate")

    @property
    def stderr(self) -> pd.Series:
        """Standard errors of the estimates."""
        return param_series(self.rse * np.sqrt(np.diag(self.cov_unscaled.to_numpy())), self.coef.index,
                            self._units(), "stderr")

    def _diagnostics(self) -> dict[str, tuple[float, str, str]]:
        y = f"[{self.design.response}]"
        return {"nobs": (self.nobs, "1", "observations"), "df_resid": (self.df_resid, "1", "residual df"),
                "rss": (self.rss, f"{y}^2", "residual sum of squares"),
                "rse": (self.rse, y, "residual standard error"), "r2": (self.r2, "1", "multiple R^2"),
                "adj_r2": (self.adj_r2, "1", "adjusted R^2"), "fstat": (self.fstat, "1", "F statistic"),
                "f_pvalue": (self.f_pvalue, "1", "p-value of the F test")}

    def to_dataset(self) -> xr.Dataset:
        """The protocol's dataset; attrs name the formula and whether the response is logged."""
        ds = super().to_dataset()
        ds.attrs.update(formula=self.formula, log_response=int(self.log_response))
        return ds

    @property
    def fvalue(self) -> float:
        """Alias of :attr:`fstat` (statsmodels' name)."""
        return self.fstat

    def coef_table(self) -> pd.DataFrame:
        """R's coefficient table: ``Estimate``, ``Std.Error``, ``t-value``, ``Pr(>|t|)`` per term."""
        se = self.stderr
        t = self.coef / se
        p = 2 * stats.t.sf(np.abs(t), self.df_resid)
        return pd.DataFrame({"Estimate": self.coef, "Std.Error": se, "t-value": t, "Pr(>|t|)": p})

    def vcov(self) -> pd.DataFrame:
        """Covariance of the estimates, RSE^2 (X'X)^-1 (R's ``vcov``)."""
        return self.cov_unscaled * self.rse**2

    def confint(self, level: float = 0.95) -> pd.DataFrame:
        """Confidence intervals of the coefficients (R's ``confint``), columns ``lower``, ``upper``."""
        q = stats.t.ppf(0.5 + level / 2, self.df_resid)
        se = self.stderr
        return pd.DataFrame({"lower": self.coef - q * se, "upper": self.coef + q * se})

    def summary(self) -> str:
        """The text R's ``print(summary(lm))`` shows (Call, Residuals, Coefficients, RSE, R^2, F)."""
        return format_summary(self)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return (f"LinearModel({self.formula!r}, n={self.nobs}, p={len(self.coef)}, rse={self.rse:.4g}, "
                f"r2={self.r2:.4f})")

    # ---- prediction ------------------------------------------------------------------------------
    def predict(
        self,
        x: Any = None,
        interval: Literal["confidence", "prediction"] | None = None,
        level: float = 0.95,
        scale: Literal["original", "model"] | None = None,
        se_fit: bool = False,
    ) -> xr.Dataset:
        """Predictions with ``level`` intervals, like R's ``predict(m, newdata, interval=)``.

        Parameters
        ----------
        x : DataFrame, xarray.Dataset or mapping, optional
            Values of the right-hand side's variables (R's ``newdata``); the training data
            when omitted.  A Dataset may hold them as data variables or coordinates (a
            sweep grid): the result is then over the same dimensions.
        interval : {None, "confidence", "prediction"}
            ``confidence``: interval of the mean response at x,
            fit +- t * s * sqrt(x'(X'X)^-1 x); ``prediction``: interval of a new
            observation, fit +- t * s * sqrt(1 + x'(X'X)^-1 x); t with the residual df.
        level : float
            Coverage, 0.95 by default.
        scale : {"original", "model"}, optional
            For a ``log_response`` model: ``original`` (default) returns exp of the
            fit and bounds (median and interval in response units), ``model`` the
            log scale.  Ignored otherwise.
        se_fit : bool
            Add the variable ``se_fit``, s * sqrt(x'(X'X)^-1 x) (model scale).

        Returns
        -------
        xarray.Dataset
            ``predicted`` (and ``lower``, ``upper`` with an interval) over dimension
            ``point`` (coordinate: the rows' index) or a Dataset input's dimensions.
        """
        check_interval(interval, level)
        table = as_table(self.design.X if x is None else x)
        X = self.design.X if x is None else design_matrix(self.design, table.frame)
        xm = X.to_numpy(dtype=float)
        fit = xm @ self.coef.to_numpy()
        se = self.rse * np.sqrt(np.einsum("ij,jk,ik->i", xm, self.cov_unscaled.to_numpy(), xm))
        lower = upper = None
        if interval is not None:
            lower, upper = interval_bounds(fit, se**2, self.rse**2, self.df_resid, interval, level)
        response = self.design.response
        if self.log_response and (scale or "original") == "original":
            fit, lower, upper = (None if v is None else np.exp(v) for v in (fit, lower, upper))
            response = response[len("log("):-1]
        extra = {"se_fit": (se, {"units": f"[{self.design.response}]",
                                 "long_name": "standard error of the fit (model scale)"})} if se_fit else None
        return prediction_dataset(table, fit, units=f"[{response}]", long_name=f"{response} ({self.formula})",
                                  lower=lower, upper=upper, interval=interval, level=level, extra=extra,
                                  attrs={"formula": self.formula})

    def statsmodels(self) -> Any:
        """The same fit as a statsmodels ``OLSResults`` (for its diagnostics), built once."""
        if self._statsmodels is None:
            import statsmodels.api as sm

            self._statsmodels = sm.OLS(self.design.y, self.design.X).fit(method="qr")
        return self._statsmodels


def _upper_inverse(r: np.ndarray) -> np.ndarray:
    """Inverse of an upper-triangular matrix (LAPACK dtrtri; scipy's solve_triangular has a large per-call cost)."""
    inv, info = linalg.lapack.dtrtri(np.asfortranarray(r), lower=0)
    if info != 0:
        raise DataError(f"singular design (LAPACK dtrtri info {info})")
    return inv


def _log_formula(formula: str) -> str:
    lhs, rhs = formula.split("~", 1)
    return f"log({lhs.strip()}) ~{rhs}"


def lm(formula: str, data: Any, log_response: bool = False, env: Mapping[str, Any] | None = None) -> LinearModel:
    """Fit a linear model by least squares, as R's ``lm(formula, data)``.

    Parameters
    ----------
    formula : str
        R formula with R's operators, written as the paper writes its models, e.g.
        ``"time ~ (X1 + I(X1^2)) * X2 * X3"`` (Model C, paper 001 §5.1.2, Table 1).
    data : pandas.DataFrame, xarray.Dataset or mapping of columns
        One row per observation.
    log_response : bool
        Fit ``log(response)``; predictions are back-transformed (see :meth:`LinearModel.predict`).
    env : mapping, optional
        Extra names for the formula.

    Returns
    -------
    LinearModel

    Raises
    ------
    FormulaError
        A variable not in the data, a malformed formula.
    DataError
        Non-finite values (column and rows named), no more observations than
        coefficients, aliased terms (named), a non-positive response with
        ``log_response``.
    """
    if log_response:
        if not isinstance(formula, str) or "~" not in formula:
            raise FormulaError(f"a formula is a string 'response ~ terms', got {formula!r}")
        formula = _log_formula(formula)
    d = build_design(formula, data, env)
    n, p = d.X.shape
    if n <= p:
        raise DataError(f"{n} observations for {p} coefficients in {formula!r}: a fit needs more observations "
                        f"than coefficients (residual degrees of freedom > 0)")
    x = d.X.to_numpy(dtype=float)
    norms = np.linalg.norm(x, axis=0)
    if np.any(norms == 0):
        zero = [c for c, nn in zip(d.X.columns, norms, strict=True) if nn == 0]
        raise DataError(f"column(s) {', '.join(zero)} of {formula!r} are all zero: the term cannot be estimated")
    xs = x / norms  # equilibrated columns: same fit, better-conditioned QR
    q, r = linalg.qr(xs, mode="economic")
    rel = np.abs(np.diag(r))  # columns have unit norm: |R_jj| is the part of column j not in the earlier ones
    aliased = [c for c, v in zip(d.X.columns, rel, strict=True) if v < ALIAS_TOL]
    if aliased:
        raise DataError(f"aliased coefficients in {formula!r}: {', '.join(aliased)} are linear combinations of "
                        f"earlier terms in these data (R would report NA); drop them or vary the data")
    effects = q.T @ d.y
    rinv = _upper_inverse(r) / norms[:, None]  # R^-1 of the unscaled design
    beta = rinv @ effects
    cov = rinv @ rinv.T
    fitted = x @ beta
    resid = d.y - fitted
    rss = float(resid @ resid)
    df_resid = n - p
    rse = float(np.sqrt(rss / df_resid))
    intercept = "(Intercept)" in d.X.columns
    tss = float(np.sum((d.y - d.y.mean()) ** 2)) if intercept else float(d.y @ d.y)
    df_model = p - 1 if intercept else p
    r2 = 1 - rss / tss if tss > 0 else float("nan")
    adj = 1 - (1 - r2) * (n - int(intercept)) / df_resid
    if df_model > 0:
        fstat = ((tss - rss) / df_model) / (rss / df_resid) if rss > 0 else float("inf")
        f_p = float(stats.f.sf(fstat, df_model, df_resid))
    else:
        fstat, f_p = float("nan"), float("nan")
    names = list(d.X.columns)
    return LinearModel(
        design=d, coef=pd.Series(beta, index=names), cov_unscaled=pd.DataFrame(cov, index=names, columns=names),
        fitted=fitted, residuals=resid, rss=rss, df_resid=df_resid, rse=rse, r2=float(r2), adj_r2=float(adj),
        fstat=float(fstat), f_df=(df_model, df_resid), f_pvalue=f_p, effects=effects,
        log_response=log_response, call=f"lm(formula = {formula})")
