"""The one measured-vs-predicted plot, for datasets that follow the validation convention.

A validation dataset holds, for a quantity ``q``, ``<q>_measured`` and
``<q>_predicted`` over the same dimensions and optionally ``<q>_lower`` /
``<q>_upper`` (attrs ``interval`` and ``level``; bounds of several kinds carry
a dimension ``interval``).  :func:`plot_validation` draws every such quantity,
a column each:

- with ``x`` (a dimension, e.g. ``nprocs``): measured and predicted against
  it, the interval as a band; repetitions (``rep``) as the median with a
  min-max bar (seaborn); ``row`` and ``hue`` spread other dimensions over rows
  and colours; ``shade`` greys the x range where a boolean variable is true
  (e.g. ``oversubscribed``), ``mark`` circles the points where one is true;
- without ``x``: predicted against measured with the line predicted =
  measured, each interval as a bar, and how many intervals contain the
  measurement (paper 001 Figures 5, 9, 13-15).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
import xarray as xr

__all__ = ["plot_validation", "validation_quantities"]

#: bar/band style per interval kind: (alpha, line width of a bar)
_STYLE = {"prediction": (0.25, 4.0), "confidence": (0.55, 1.5)}


def validation_quantities(ds: xr.Dataset) -> list[str]:
    """Every ``q`` with both ``<q>_measured`` and ``<q>_predicted`` in ``ds``, in variable order."""
    return [str(v)[: -len("_measured")] for v in ds.data_vars
            if str(v).endswith("_measured") and f"{str(v)[: -len('_measured')]}_predicted" in ds]


def _bounds(ds: xr.Dataset, q: str) -> list[tuple[str, xr.DataArray, xr.DataArray]]:
    """(label, lower, upper) per interval kind of ``q``, the widest first."""
    if f"{q}_lower" not in ds or f"{q}_upper" not in ds:
        return []
    lo, hi = ds[f"{q}_lower"], ds[f"{q}_upper"]
    level = lo.attrs.get("level")
    pct = f"{level:.0%} " if level is not None else ""
    if "interval" in lo.dims:
        kinds = sorted(map(str, lo["interval"].values), key=lambda k: k != "prediction")
        return [(f"{pct}{k} interval", lo.sel(interval=k, drop=True), hi.sel(interval=k, drop=True)) for k in kinds]
    return [(f"{pct}{lo.attrs.get('interval', '')} interval".replace("  ", " "), lo, hi)]


def _kind(label: str) -> str:
    return "confidence" if "confidence" in label else "prediction"


def _scatter(ax: plt.Axes, ds: xr.Dataset, q: str, rep: str) -> None:
    meas = ds[f"{q}_measured"]
    if rep in meas.dims:
        meas = meas.median(rep)
    y = meas.values.ravel()
    f = ds[f"{q}_predicted"].broadcast_like(meas).values.ravel()
    for label, lo, hi in _bounds(ds, q):
        lo_v, hi_v = lo.broadcast_like(meas).values.ravel(), hi.broadcast_like(meas).values.ravel()
        alpha, width = _STYLE[_kind(label)]
        inside = int(np.sum((lo_v <= y) & (y <= hi_v)))
        ax.errorbar(y, f, yerr=[f - lo_v, hi_v - f], fmt="none", ecolor="C0", alpha=alpha, elinewidth=width,
                    capsize=2, label=f"{label} ({inside}/{y.size} contain the measurement)")
    sns.scatterplot(x=y, y=f, ax=ax, color="C0", s=18, label="predicted")
    span = [np.nanmin([y.min(), f.min()]), np.nanmax([y.max(), f.max()])]
    ax.plot(span, span, "k--", lw=0.8, label="predicted = measured")
    unit = meas.attrs.get("units", "")
    ax.set_xlabel(f"measured {q} [{unit}]")
    ax.set_ylabel(f"predicted {q} [{unit}]")


def _against(ax: plt.Axes, ds: xr.Dataset, q: str, x: str, hue: str | None, rep: str, mark: str | None) -> None:
    hues = [None] if hue is None else list(ds[hue].values)
    for k, h in enumerate(hues):
        sub = ds if h is None else ds.sel({hue: h})
        tag = "" if h is None else f", {hue} {h}"
        colour = f"C{k}"
        meas = sub[f"{q}_measured"]
        if rep in meas.dims:
            frame = meas.to_dataframe(name="value").reset_index()
            sns.lineplot(data=frame, x=x, y="value", ax=ax, estimator="median", errorbar=("pi", 100),
                         err_style="bars", marker="o", linestyle="", color=colour, label=f"measured{tag}")
            meas = meas.median(rep)
        else:
            ax.plot(sub[x], meas, "o", color=colour, label=f"measured{tag}")
        ax.plot(sub[x], sub[f"{q}_predicted"], "s--", color=colour, mfc="none", label=f"predicted{tag}")
        for label, lo, hi in _bounds(sub, q):
            ax.fill_between(sub[x].values, lo.values, hi.values, color=colour, alpha=_STYLE[_kind(label)][0] / 2,
                            label=label if k == 0 else None)
        if mark is not None and mark in sub:
            sel = sub[mark].broadcast_like(meas).values.astype(bool)
            ax.plot(sub[x].values[sel], meas.values[sel], "o", ms=13, mfc="none", color="k",
                    label=sub[mark].attrs.get("long_name", mark) if k == 0 else None)
    ax.set_xlabel(x)
    ax.set_ylabel(f"{q} [{ds[f'{q}_measured'].attrs.get('units', '')}]")


def _any_positive(ds: xr.Dataset, q: str) -> bool:
    vals = np.concatenate([np.ravel(ds[f"{q}_{s}"].values).astype(float) for s in ("measured", "predicted")])
    return bool(np.any(np.isfinite(vals) & (vals > 0)))


def plot_validation(ds: xr.Dataset, quantities: Sequence[str] | None = None, *, x: str | None = None,
                    row: str | None = None, hue: str | None = None, rep: str = "rep", shade: str | None = None,
                    mark: str | None = None, logy: bool = False, titles: Mapping[Any, str] | None = None
                    ) -> plt.Figure:
    """Measured against predicted, with intervals, a panel per quantity (columns) and ``row`` value (rows).

    Parameters
    ----------
    ds : xarray.Dataset
        A validation dataset (see the module docstring).
    quantities : sequence of str, optional
        The ``q`` to draw (default :func:`validation_quantities`).
    x : str, optional
        Dimension on the x axis; without it, predicted against measured.
    row, hue : str, optional
        Dimensions spread over panel rows and colours.
    rep : str
        Dimension of repeated measurements (median and min-max bar).
    shade, mark : str, optional
        Boolean variables: grey the x range from the first true ``x`` on (over ``x``),
        circle the measured points where true.
    logy : bool
        Logarithmic y axis.
    titles : mapping, optional
        Panel title per ``row`` value (default ``"<row> <value>"``).
    """
    quantities = list(quantities) if quantities is not None else validation_quantities(ds)
    if not quantities:
        raise ValueError(f"no <q>_measured / <q>_predicted pair in the dataset; variables: {list(ds.data_vars)}")
    missing = [q for q in quantities if f"{q}_measured" not in ds or f"{q}_predicted" not in ds]
    if missing:
        raise KeyError(f"no <q>_measured / <q>_predicted for {missing}; have {validation_quantities(ds)}")
    for name in (x, row, hue):
        if name is not None and name not in ds.dims:
            raise KeyError(f"{name!r} is not a dimension of the dataset; dimensions: {list(ds.dims)}")
    rows = [None] if row is None else list(ds[row].values)
    fig, axes = plt.subplots(len(rows), len(quantities), figsize=(4.2 * len(quantities), 3.3 * len(rows)),
                             squeeze=False)
    for i, r in enumerate(rows):
        sub = ds if r is None else ds.sel({row: r})
        for j, q in enumerate(quantities):
            ax = axes[i][j]
            if x is None:
                _scatter(ax, sub, q, rep)
            else:
                _against(ax, sub, q, x, hue, rep, mark)
                xs = sub[x].values
                if shade is not None and shade in sub.variables:
                    flag = sub[shade].astype(bool)
                    flag = flag.any([d for d in flag.dims if d != x]) if flag.ndim > 1 else flag
                    if flag.values.any():
                        on = flag[x].values[flag.values]
                        ax.axvspan(on.min() - 0.3, xs.max() + 0.3, color="grey", alpha=0.12, label=shade)
                if xs.size <= 12 and np.issubdtype(xs.dtype, np.number):
                    ax.set_xticks(xs)
            if logy and _any_positive(sub, q):
                ax.set_yscale("log")
            elif logy:  # all NaN (not fitted, no clean run) or non-positive: matplotlib refuses a log axis
                ax.text(0.5, 0.5, "no positive value to draw\n(no clean run or not fitted)", transform=ax.transAxes,
                        ha="center", va="center", fontsize=8, color="grey")
            if r is not None:
                ax.set_title(titles[r] if titles and r in titles else f"{row} {r}", fontsize=9)
            ax.grid(True, alpha=0.3)
            if ax.get_legend() is not None:
                ax.get_legend().remove()
    axes[0][-1].legend(fontsize=6)
    if x is None:
        for ax in axes.ravel():
            ax.legend(fontsize=6)
    fig.tight_layout()
    return fig
