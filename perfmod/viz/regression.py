"""Figures for regression validation: measured against predicted with their intervals (paper 001 Figures 5, 9, 13-15).

The paper plots measured and predicted values per validation case; here each
case is a point at (measured, fit) with its confidence interval as a bar and,
where given, the wider prediction interval as a lighter bar, against the line
fit = measured.  A bar that crosses the line contains the measurement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

__all__ = ["plot_measured_vs_fit", "plot_validation_datasets"]


def plot_measured_vs_fit(measured: Any, fit: Any, lower: Any = None, upper: Any = None, pi_lower: Any = None,
                         pi_upper: Any = None, ax: plt.Axes | None = None, unit: str = "",
                         title: str = "") -> plt.Axes:
    """One validation set: fit against measured, interval bars, the identity line.

    Parameters
    ----------
    measured, fit : array_like
        One value per case (same unit).
    lower, upper : array_like, optional
        Confidence interval (dark bars).
    pi_lower, pi_upper : array_like, optional
        Prediction interval (light bars).
    ax : matplotlib Axes, optional
    unit, title : str
        Axis unit and panel title.
    """
    ax = ax or plt.subplots(figsize=(4.2, 4))[1]
    y = np.asarray(measured, float)
    f = np.asarray(fit, float)
    if pi_lower is not None and pi_upper is not None:
        ax.errorbar(y, f, yerr=[f - np.asarray(pi_lower, float), np.asarray(pi_upper, float) - f], fmt="none",
                    ecolor="C1", alpha=0.35, elinewidth=4, label="95 % prediction interval")
    if lower is not None and upper is not None:
        lo, hi = np.asarray(lower, float), np.asarray(upper, float)
        inside = (lo <= y) & (y <= hi)
        ax.errorbar(y, f, yerr=[f - lo, hi - f], fmt="none", ecolor="C0", elinewidth=1.5, capsize=2,
                    label=f"95 % confidence interval ({inside.sum()}/{len(y)} contain the measurement)")
    ax.plot(y, f, "o", color="C0", ms=4, label="fit")
    span = [min(y.min(), f.min()), max(y.max(), f.max())]
    ax.plot(span, span, "k--", lw=0.8, label="fit = measured")
    u = f" [{unit}]" if unit else ""
    ax.set_xlabel(f"measured{u}")
    ax.set_ylabel(f"predicted{u}")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6)
    return ax


def plot_validation_datasets(datasets: Sequence[xr.Dataset], titles: Sequence[str] | None = None) -> plt.Figure:
    """A panel per dataset holding ``<q>_measured``, ``<q>_predicted`` and optional ``<q>_ci_*``/``<q>_pi_*``."""
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 4), squeeze=False)
    for i, ds in enumerate(datasets):
        q = next(str(v)[: -len("_measured")] for v in ds.data_vars if str(v).endswith("_measured"))

        def get(name: str, _ds: xr.Dataset = ds, _q: str = q) -> Any:
            return _ds[f"{_q}_{name}"].values if f"{_q}_{name}" in _ds else None

        plot_measured_vs_fit(get("measured"), get("predicted"), get("ci_lower"), get("ci_upper"), get("pi_lower"),
                             get("pi_upper"), ax=axes[0][i], unit=ds[f"{q}_measured"].attrs.get("units", ""),
                             title=titles[i] if titles else q)
    fig.tight_layout()
    return fig
