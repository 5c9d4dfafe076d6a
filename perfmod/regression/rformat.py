"""Text output in R's format (``print(summary(lm))``, ``format.pval``, ``format(signif())``).

R prints numbers with 4 significant digits in summaries (``digits =
max(3, getOption("digits") - 3)``) and chooses fixed or scientific notation,
whichever is shorter; p-values below machine epsilon print as ``< 2.2e-16``
(``< 2e-16`` in coefficient tables, as paper 001's tables show them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .linear import LinearModel

__all__ = ["r_format", "format_pval", "signif_stars", "format_summary"]

EPS = float(np.finfo(float).eps)  # R's .Machine$double.eps, 2.220446e-16


def r_format(x: float, digits: int = 4) -> str:
    """``format(signif(x, digits))`` as R prints it: fixed or scientific, whichever is shorter."""
    if not np.isfinite(x):
        return {True: "Inf", False: "-Inf"}[x > 0] if np.isinf(x) else "NaN"
    if x == 0:
        return "0"
    sig = float(f"{x:.{digits}g}")
    fixed = np.format_float_positional(sig, trim="-")
    mant, exp = f"{sig:.{digits - 1}e}".split("e")
    mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
    e = int(exp)
    sci = f"{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"
    return fixed if len(fixed) <= len(sci) else sci


def format_pval(p: float, digits: int = 4, eps: float = EPS, compact: bool = False) -> str:
    """R's ``format.pval``: ``< 2.2e-16`` below ``eps`` (``<2e-16`` with ``compact``, as in coefficient tables)."""
    if np.isnan(p):
        return "NA"
    if p < eps:
        return "<2e-16" if compact else f"< {r_format(eps, 2)}"
    return r_format(p, digits)


def signif_stars(p: float) -> str:
    """R's significance codes: *** < 0.001 < ** < 0.01 < * < 0.05 < . < 0.1."""
    if np.isnan(p):
        return ""
    for cut, star in ((0.001, "***"), (0.01, "**"), (0.05, "*"), (0.1, ".")):
        if p < cut:
            return star
    return " "


def _column(values, digits: int = 4) -> list[str]:
    return [r_format(float(v), digits) for v in values]


def format_summary(m: LinearModel) -> str:
    """The text of R's ``print(summary(m))`` for a fitted :class:`~perfmod.regression.linear.LinearModel`."""
    lines = ["", "Call:", m.call or f"lm(formula = {m.formula})", "", "Residuals:"]
    r = m.residuals
    if len(r) > 5:
        labels = ["Min", "1Q", "Median", "3Q", "Max"]
        vals = _column(np.quantile(r, [0, 0.25, 0.5, 0.75, 1.0]))
    else:
        labels = [str(i + 1) for i in range(len(r))]
        vals = _column(r)
    w = max(max(map(len, labels)), max(map(len, vals)))
    lines += [" ".join(s.rjust(w) for s in labels), " ".join(s.rjust(w) for s in vals), "", "Coefficients:"]
    tab = m.coef_table()
    cols = {
        "Estimate": _column(tab["Estimate"]),
        "Std. Error": _column(tab["Std.Error"]),
        "t value": [f"{v:.3f}" for v in tab["t-value"]],
        "Pr(>|t|)": [format_pval(p, 3, compact=True) for p in tab["Pr(>|t|)"]],
    }
    stars = [signif_stars(p) for p in tab["Pr(>|t|)"]]
    nw = max(len(n) for n in tab.index)
    widths = {k: max(len(k), *(len(v) for v in vs)) for k, vs in cols.items()}
    lines.append(" " * nw + " " + " ".join(k.rjust(widths[k]) for k in cols))
    for i, name in enumerate(tab.index):
        lines.append(name.ljust(nw) + " " + " ".join(cols[k][i].rjust(widths[k]) for k in cols) + " " + stars[i])
    lines += ["---", "Signif. codes:  0 '***' 0.001 '**' 0.01 '*' 0.05 '.' 0.1 ' ' 1", ""]
    lines.append(f"Residual standard error: {r_format(m.rse)} on {m.df_resid} degrees of freedom")
    lines.append(f"Multiple R-squared:  {r_format_c(m.r2)},\tAdjusted R-squared:  {r_format_c(m.adj_r2)} ")
    if np.isfinite(m.fstat):
        lines.append(f"F-statistic: {r_format_c(m.fstat)} on {m.f_df[0]} and {m.f_df[1]} DF,  "
                     f"p-value: {format_pval(m.f_pvalue)}")
    return "\n".join(lines) + "\n"


def r_format_c(x: float, digits: int = 4) -> str:
    """R's ``formatC(x, digits = digits)`` (C's ``%.{digits}g``), used for R^2 and F in summaries."""
    return f"{x:.{digits}g}"
