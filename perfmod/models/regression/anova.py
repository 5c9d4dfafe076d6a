"""Analysis of variance like R's ``anova``: nested models compared by F tests (paper 001 Tables 2, 9).

``anova(m1, m2, ...)`` (R's ``anova.lmlist``): one row per model with its
residual degrees of freedom and RSS; from the second row on, the change in
degrees of freedom and RSS from the previous model and the F test of that
change, every F scaled by the residual mean square of the model with the
fewest residual degrees of freedom (the biggest model), as R does.  Paper 001
Table 2 shows that convention: F(B vs A) = (8881181 - 5145468) / 1 /
(4898857 / 263) = 200.56, with Model C's scale, not B's.

``anova(m)`` of one model is R's sequential (Type-I) table: each term's sum
of squares given the terms before it, in R's term order.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import linalg, stats

from perfmod.models.regression.formula import RegressionError
from perfmod.models.regression.linear import LinearModel

__all__ = ["anova", "anova_table", "NotNestedError", "NotNestedWarning", "NESTED_TOL"]

#: relative residual of a smaller model's columns projected on the bigger model's column space
#: above which the models are not nested
NESTED_TOL = 1e-7


class NotNestedError(RegressionError):
    """Models given to :func:`anova` that are not nested or not fitted to the same observations."""


class NotNestedWarning(UserWarning):
    """:func:`anova` with ``strict=False`` went on with models that are not nested (as R does silently)."""


def _in_span(small: np.ndarray, big: np.ndarray) -> np.ndarray:
    """Relative residual norm of each column of ``small`` after projection on the columns of ``big``."""
    q, _ = linalg.qr(big / np.linalg.norm(big, axis=0), mode="economic")
    res = small - q @ (q.T @ small)
    return np.linalg.norm(res, axis=0) / np.linalg.norm(small, axis=0)


def _check_pair(a: LinearModel, b: LinearModel, ia: int, ib: int, strict: bool) -> None:
    if a.design.response != b.design.response:
        raise NotNestedError(f"models {ia} and {ib} have different responses ({a.design.response!r}, "
                             f"{b.design.response!r}); anova compares models of the same response")
    if a.nobs != b.nobs or not np.array_equal(a.design.y, b.design.y):
        raise NotNestedError(f"models {ia} ({a.nobs} observations) and {ib} ({b.nobs}) were not fitted to the "
                             f"same observations")
    small, big, i_s, i_b = (a, b, ia, ib) if len(a.coef) <= len(b.coef) else (b, a, ib, ia)
    rel = _in_span(small.design.X.to_numpy(float), big.design.X.to_numpy(float))
    outside = [c for c, r in zip(small.design.X.columns, rel, strict=True) if r > NESTED_TOL]
    if outside:
        msg = (f"model {i_s} ({small.formula!r}) is not nested in model {i_b} ({big.formula!r}): "
               f"{', '.join(outside)} not in the span of model {i_b}'s terms")
        if strict:
            raise NotNestedError(msg + "; the F test of their difference is not valid (strict=False computes it "
                                 "anyway, as R does)")
        warnings.warn(msg + "; F and Pr(>F) of this row are not a valid nested-model test", NotNestedWarning,
                      stacklevel=3)


def _type1(m: LinearModel) -> pd.DataFrame:
    cols = list(m.design.X.columns)
    rows, df, ss = [], [], []
    for term, tcols in m.design.term_columns.items():
        if term == "(Intercept)":
            continue
        idx = [cols.index(c) for c in tcols]
        rows.append(term)
        df.append(len(idx))
        ss.append(float(np.sum(m.effects[idx] ** 2)))
    rows.append("Residuals")
    df.append(m.df_resid)
    ss.append(m.rss)
    out = pd.DataFrame({"Df": df, "Sum Sq": ss}, index=rows)
    out["Mean Sq"] = out["Sum Sq"] / out["Df"]
    scale = m.rss / m.df_resid
    out["F value"] = out["Mean Sq"] / scale
    out["Pr(>F)"] = stats.f.sf(out["F value"], out["Df"], m.df_resid)
    out.loc["Residuals", ["F value", "Pr(>F)"]] = np.nan
    out.attrs["heading"] = f"Analysis of Variance Table\n\nResponse: {m.design.response}"
    return out


def anova(*models: LinearModel, names: Sequence[str] | None = None, strict: bool = True) -> pd.DataFrame:
    """R's ``anova(m1, m2, ...)`` for nested linear models, or the Type-I table of one model.

    Parameters
    ----------
    *models : LinearModel
        Fitted with :func:`~perfmod.models.regression.lm` on the same observations and
        response, each nested in the next or the next nested in it (R's order is
        kept: rows follow the arguments).
    names : sequence of str, optional
        Row labels (e.g. ``["A", "B", "C"]`` as paper 001 Table 2); ``1, 2, ...`` by default.
    strict : bool
        Refuse models that are not nested (default).  R's ``anova`` does not
        check; ``strict=False`` computes the table as R does, with a
        :class:`NotNestedWarning`.  Paper 001 Table 2 needs it: Model A
        (X1, X1^2, X2, X3) is not nested in Model B (X1, X1^2, X2, X1X2, X1^2X2),
        which drops X3.

    Returns
    -------
    pandas.DataFrame
        Several models: columns ``Res.Df``, ``RSS``, ``Df``, ``Sum of Sq``, ``F``,
        ``Pr(>F)`` (NaN in the first row), ``attrs["formulas"]`` the models.
        One model: columns ``Df``, ``Sum Sq``, ``Mean Sq``, ``F value``,
        ``Pr(>F)``, one row per term and ``Residuals``.

    Raises
    ------
    NotNestedError
        Different responses or observations, or (with ``strict``) consecutive models not nested.
    """
    if not models:
        raise TypeError("anova() needs at least one fitted model")
    for i, m in enumerate(models, 1):
        if not isinstance(m, LinearModel):
            raise TypeError(f"argument {i} is a {type(m).__name__}, not a LinearModel from lm()")
    if len(models) == 1:
        return _type1(models[0])
    for i in range(len(models) - 1):
        _check_pair(models[i], models[i + 1], i + 1, i + 2, strict)
    labels = [str(i + 1) for i in range(len(models))] if names is None else [str(n) for n in names]
    if len(labels) != len(models):
        raise ValueError(f"{len(labels)} names for {len(models)} models")
    out = anova_table([m.df_resid for m in models], [m.rss for m in models], labels)
    out.attrs["formulas"] = {lab: m.formula for lab, m in zip(labels, models, strict=True)}
    return out


def anova_table(res_df: Sequence[float], rss: Sequence[float], names: Sequence[str] | None = None) -> pd.DataFrame:
    """R's ``anova`` table of several models from their residual df and RSS alone.

    The F of row i is ((RSS_{i-1} - RSS_i) / (Res.Df_{i-1} - Res.Df_i)) / (RSS_b / Res.Df_b),
    b the model with the fewest residual degrees of freedom, with Pr(>F) from
    F(|Df|, Res.Df_b).  Used by :func:`anova`, and to recompute published ANOVA
    tables (paper 001 Tables 2 and 9) from their Res.Df and RSS columns.
    """
    resdf = np.asarray(res_df, dtype=float)
    rss_ = np.asarray(rss, dtype=float)
    if resdf.shape != rss_.shape or resdf.ndim != 1 or len(resdf) < 2:
        raise ValueError("anova_table needs two or more models, one Res.Df and one RSS each")
    labels = [str(i + 1) for i in range(len(resdf))] if names is None else [str(n) for n in names]
    if len(labels) != len(resdf):
        raise ValueError(f"{len(labels)} names for {len(resdf)} models")
    df = np.concatenate([[np.nan], -np.diff(resdf)])
    ssq = np.concatenate([[np.nan], -np.diff(rss_)])
    big = int(np.argmin(resdf))
    scale = rss_[big] / resdf[big]
    with np.errstate(invalid="ignore", divide="ignore"):
        f = (ssq / df) / scale
        f[df == 0] = np.nan
        p = stats.f.sf(f, np.abs(df), resdf[big])
    return pd.DataFrame({"Res.Df": resdf.astype(int), "RSS": rss_, "Df": df, "Sum of Sq": ssq, "F": f, "Pr(>F)": p},
                        index=pd.Index(labels, name="Model"))
