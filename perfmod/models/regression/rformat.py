"""Text output in R's format (``print(summary(lm))``, ``format``, ``format.pval``, ``formatC``).

The rules follow R's ``formatReal`` (a vector shares one format: fixed with
the decimals its least precise-looking element needs for ``digits``
significant digits, or scientific when that is narrower), ``printCoefmat``
(estimates and standard errors rounded together, t values to 3 decimals,
p-values to 3 digits through ``format.pval``, below machine epsilon ``<2e-16``) and
``print.summary.lm`` (4 significant digits, ``< 2.2e-16``).  The test suite
compares the result with R 4.2's output line by line
(``tests/data/r_lm/summary_C.txt``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from perfmod.models.regression.linear import LinearModel

__all__ = ["format_vec", "r_format", "r_format_c", "format_pval", "signif_stars", "format_summary", "format_anova"]

EPS = float(np.finfo(float).eps)  # R's .Machine$double.eps, 2.220446e-16


def _sci_parts(x: float, digits: int) -> tuple[int, int]:
    """(exponent, significant digits needed) of |x| shown with ``digits`` significant digits."""
    mant, exp = f"{abs(x):.{digits - 1}e}".split("e")
    nsig = len(mant.replace(".", "").rstrip("0")) or 1
    return int(exp), nsig


def format_vec(values: Sequence[float], digits: int = 7) -> list[str]:
    """R's ``format(x, digits = digits)`` of a numeric vector: one common notation, unpadded strings."""
    vals = [float(v) for v in values]
    fin = [v for v in vals if math.isfinite(v)]
    if not fin:
        return ["NaN" if math.isnan(v) else ("Inf" if v > 0 else "-Inf") for v in vals]
    neg = int(any(v < 0 for v in fin))
    parts = [_sci_parts(v, digits) if v != 0 else (0, 1) for v in fin]
    left = max((e + 1 if e >= 0 else 1) for e, _ in parts)
    rgt = max(max(0, ns - e - 1) for e, ns in parts)
    w_fixed = neg + left + (rgt + 1 if rgt > 0 else 0)
    mxns = max(ns for _, ns in parts)
    w_sci = neg + (mxns + 1 if mxns > 1 else mxns) + (5 if max(abs(e) for e, _ in parts) >= 100 else 4)
    out = []
    for v in vals:
        if not math.isfinite(v):
            out.append("NaN" if math.isnan(v) else ("Inf" if v > 0 else "-Inf"))
        elif w_fixed <= w_sci:
            out.append(f"{v:.{rgt}f}")
        else:
            out.append(f"{v:.{mxns - 1}e}")
    return out


def r_format(x: float, digits: int = 4) -> str:
    """``format(signif(x, digits))`` of one number, as R prints it."""
    return format_vec([x], digits)[0]


def r_format_c(x: float, digits: int = 4) -> str:
    """R's ``formatC(x, digits = digits)``: C's ``%.{digits}g``, right-justified to ``digits + 1`` characters."""
    return f"{x:.{digits}g}".rjust(digits + 1)


def format_pval(p: float | Sequence[float], digits: int = 4, eps: float = EPS) -> str | list[str]:
    """R's ``format.pval`` (R 4.2): p-values from 1e-4 up (1e-3 with ``digits=1``) share one format, smaller
    ones another; those below ``eps`` print as ``< 2.2e-16`` (``<2e-16`` beside short p-values, as in
    coefficient tables)."""
    scalar = np.ndim(p) == 0
    pv = np.atleast_1d(np.asarray(p, dtype=float))
    out = ["NA"] * len(pv)
    ok = ~np.isnan(pv)
    is0 = ok & (pv < eps)
    rest = ok & ~is0
    expo = np.floor(np.log10(np.where(pv > 0, pv, 1e-50)))
    fix = (expo >= -3) | ((expo == -4) & (digits > 1))
    for group in (rest & fix, rest & ~fix):
        idx = np.flatnonzero(group)
        for i, s in zip(idx, format_vec(pv[idx], digits), strict=True):
            out[i] = s
    if is0.any():
        d = max(1, digits - 2)
        if rest.any():
            nc = max(len(out[i]) for i in np.flatnonzero(rest))
            if d > 1 and d + 6 > nc:
                d = max(1, nc - 7)
            sep = "" if d == 1 and nc <= 6 else " "
        else:
            sep = "" if d == 1 else " "
        for i in np.flatnonzero(is0):
            out[i] = f"<{sep}{r_format(eps, d)}"
    return out[0] if scalar else out


def signif_stars(p: float) -> str:
    """R's significance codes: ``***`` below 0.001, ``**`` below 0.01, ``*`` below 0.05, ``'.'`` below 0.1."""
    if np.isnan(p):
        return ""
    for cut, star in ((0.001, "***"), (0.01, "**"), (0.05, "*"), (0.1, ".")):
        if p < cut:
            return star
    return " "


def _coef_block(tab, digits: int = 4) -> list[str]:
    est, se = tab["Estimate"].to_numpy(float), tab["Std.Error"].to_numpy(float)
    acs = np.abs(np.r_[est, se])
    acs = acs[np.isfinite(acs) & (acs != 0)]
    digmin = 1 + np.floor(np.log10(acs.min())) if len(acs) else 0
    dec = int(max(1, digits - digmin))
    cs = format_vec(np.round(np.r_[est, se], dec), digits)
    n = len(est)
    dig_tst = max(1, min(5, digits - 1))
    cols = {
        "Estimate": cs[:n],
        "Std. Error": cs[n:],
        "t value": format_vec(np.round(tab["t-value"].to_numpy(float), dig_tst), digits),
        "Pr(>|t|)": format_pval(tab["Pr(>|t|)"].to_numpy(float), dig_tst),
    }
    stars = [signif_stars(p) for p in tab["Pr(>|t|)"]]
    sw = max(len(s) for s in stars)
    nw = max(len(str(n)) for n in tab.index)
    widths = {k: max(len(k), *(len(v) for v in vs)) for k, vs in cols.items()}
    lines = [" " * nw + " " + " ".join(k.rjust(widths[k]) for k in cols) + " " + " " * sw]
    for i, name in enumerate(tab.index):
        lines.append(str(name).ljust(nw) + " " + " ".join(cols[k][i].rjust(widths[k]) for k in cols)
                     + " " + stars[i].ljust(sw))
    return lines


def format_summary(m: LinearModel, digits: int = 4) -> str:
    """The text of R's ``print(summary(m))`` for a fitted :class:`~perfmod.models.regression.linear.LinearModel`."""
    lines = ["", "Call:", m.call or f"lm(formula = {m.formula})", ""]
    r = m.residuals
    if len(r) > 5:
        labels = ["Min", "1Q", "Median", "3Q", "Max"]
        q = np.quantile(r, [0, 0.25, 0.5, 0.75, 1.0])
        mx = np.max(np.abs(q))
        # R 4.2's zapsmall(q, digits + 1): round to digits + 1 - log10(max) decimals (R rounds that count)
        q = np.round(q, max(0, int(np.rint(digits + 1 - np.log10(mx))))) if mx > 0 else q
        vals = format_vec(q, digits)
    else:
        labels = [str(i + 1) for i in range(len(r))]
        vals = format_vec(r, digits)
    w = max(max(map(len, labels)), max(map(len, vals)))
    lines += ["Residuals:", " ".join(s.rjust(w) for s in labels) + " ", " ".join(s.rjust(w) for s in vals) + " ", ""]
    lines.append("Coefficients:")
    lines += _coef_block(m.coef_table(), digits)
    lines += ["---", "Signif. codes:  0 \u2018***\u2019 0.001 \u2018**\u2019 0.01 \u2018*\u2019 0.05 \u2018.\u2019 "
              "0.1 \u2018 \u2019 1", ""]
    lines.append(f"Residual standard error: {r_format(m.rse, digits)} on {m.df_resid} degrees of freedom")
    if m.f_df[0] > 0:  # R prints R^2 and F only when the model has terms beyond the intercept
        lines.append(f"Multiple R-squared:  {r_format_c(m.r2, digits)},\tAdjusted R-squared:  "
                     f"{r_format_c(m.adj_r2, digits)} ")
        lines.append(f"F-statistic: {r_format_c(m.fstat, digits)} on {m.f_df[0]} and {m.f_df[1]} DF,  "
                     f"p-value: {format_pval(m.f_pvalue, digits)}")
    return "\n".join(lines) + "\n"


def _zapsmall(x: np.ndarray, digits: int) -> np.ndarray:
    """R 4.2's ``zapsmall``: round to ``digits - log10(max |x|)`` decimals (that count rounded, at least 0)."""
    fin = np.abs(x[np.isfinite(x)])
    mx = fin.max() if fin.size else 0.0
    return np.round(x, max(0, int(np.rint(digits - np.log10(mx)))) if mx > 0 else digits)


def format_anova(table, digits: int = 5) -> str:
    """The text of R's ``print(anova(...))`` for a table from :func:`~perfmod.models.regression.anova`.

    R's ``print.anova``: sums of squares zapped and shown with ``digits``
    significant digits, F rounded to ``digits - 1`` decimals, p-values by
    ``format.pval`` with ``digits - 1``, empty cells blank, significance stars.
    """
    cols = list(table.columns)
    pcol = cols[-1] if cols[-1].startswith("Pr(") else None
    tst = [c for c in cols if c in ("F", "F value")]
    out: dict[str, list[str]] = {}
    dig_tst = max(1, min(5, digits - 1))
    for c in cols:
        x = table[c].to_numpy(dtype=float)
        ok = ~np.isnan(x)
        cells = [""] * len(x)
        if c == pcol:
            vals = format_pval(x[ok], dig_tst)
        elif c in tst:
            vals = format_vec(np.round(x[ok], dig_tst), digits)
        else:
            xz = x[ok] if c.endswith("Df") else _zapsmall(x[ok], digits)
            vals = format_vec(xz, digits)
            vals = [format_vec([v], max(1, digits - 1))[0] if v != 0 and float(s) == 0 else s
                    for v, s in zip(x[ok], vals, strict=True)]  # R's fix for non-zero values shown as 0
        for i, v in zip(np.flatnonzero(ok), vals, strict=True):
            cells[i] = v
        out[c] = cells
    stars = [signif_stars(p) if pcol and not np.isnan(p) else "" for p in
             (table[pcol].to_numpy(float) if pcol else np.full(len(table), np.nan))]
    sw = max((len(s) for s in stars), default=0)
    names = [str(i) for i in table.index]
    nw = max(len(n) for n in names)
    widths = {c: max(len(c), *(len(v) for v in out[c])) for c in cols}
    if "formulas" in table.attrs:
        head = ["Analysis of Variance Table", ""] + [f"Model {k}: {f}" for k, f in table.attrs["formulas"].items()]
    else:
        head = table.attrs.get("heading", "Analysis of Variance Table").split("\n")
    lines = head + [" " * nw + " " + " ".join(c.rjust(widths[c]) for c in cols) + (" " + " " * sw if sw else "")]
    for i, n in enumerate(names):
        lines.append(n.ljust(nw) + " " + " ".join(out[c][i].rjust(widths[c]) for c in cols)
                     + (" " + stars[i].ljust(sw) if sw else ""))
    if sw:
        lines += ["---", "Signif. codes:  0 \u2018***\u2019 0.001 \u2018**\u2019 0.01 \u2018*\u2019 0.05 "
                  "\u2018.\u2019 0.1 \u2018 \u2019 1"]
    return "\n".join(lines) + "\n"
