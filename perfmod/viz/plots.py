"""Figures shared by the notebooks (matplotlib; saved as PNG by :func:`save`).

Measured against predicted: :func:`perfmod.viz.validation.plot_validation`.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

__all__ = ["save", "plot_model_curves", "plot_weak_scaling", "plot_calibration", "plot_error_by_experiment",
           "plot_halo_by_rank"]

MODE_LABELS = {"intra_socket": "intra-socket", "inter_socket": "inter-socket", "inter_node": "inter-node"}


def save(fig: plt.Figure, figures_dir: str | Path, name: str) -> Path:
    """Save ``fig`` as ``<figures_dir>/<name>.png`` (directory created) and return the path."""
    out = Path(figures_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.png"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def plot_model_curves(curves: xr.Dataset) -> plt.Figure:
    """Message time vs size per platform (columns) and mode (colours), postal solid, max-rate dashed."""
    plats = list(curves.platform.values)
    fig, axes = plt.subplots(1, len(plats), figsize=(4.2 * len(plats), 3.6), sharey=True, squeeze=False)
    for ax, plat in zip(axes[0], plats, strict=True):
        for c, mode in enumerate(curves.mode.values):
            for model, ls in (("postal", "-"), ("maxrate", "--")):
                y = curves.t_msg.sel(platform=plat, model=model, mode=mode)
                if np.all(np.isnan(y)):
                    continue
                ax.loglog(curves.msg_bytes, y * 1e6, ls, color=f"C{c}",
                          label=f"{MODE_LABELS.get(str(mode), mode)}, {model}")
        ax.set_title(str(plat))
        ax.set_xlabel("message size [B]")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("time per message [us]")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_weak_scaling(ds: xr.Dataset, app: str) -> plt.Figure:
    """Predicted communication time per iteration vs nodes, one panel per platform, a line per model."""
    plats = list(ds.platform.values)
    fig, axes = plt.subplots(1, len(plats), figsize=(4.2 * len(plats), 3.4), squeeze=False)
    sub = ds.sel(app=app)
    for ax, plat in zip(axes[0], plats, strict=True):
        for i, model in enumerate(ds.model.values):
            y = sub.t_comm_predicted.sel(platform=plat, model=model)
            ax.plot(ds.nodes, y * 1e3, "o-", color=f"C{i}", label=str(model), ms=3)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{app} on {plat}")
        ax.set_xlabel("nodes")
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("communication per iteration [ms]")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_calibration(curve: xr.Dataset) -> plt.Figure:
    """Measured (median, interquartile bar) vs fitted one-way time, and relative residuals, per protocol.

    ``curve`` holds ``t_oneway_measured``, ``t_oneway_q25``, ``t_oneway_q75``,
    ``t_oneway_predicted`` and ``protocol`` over ``msg_bytes``, and the
    attribute ``breakpoints`` (bytes).
    """
    fig, (ax, axr) = plt.subplots(2, 1, figsize=(6.5, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    n = curve.msg_bytes.values
    meas = curve.t_oneway_measured.values
    for i, proto in enumerate(dict.fromkeys(curve.protocol.values.tolist())):
        sel = curve.protocol.values == proto
        err = np.stack([meas[sel] - curve.t_oneway_q25.values[sel], curve.t_oneway_q75.values[sel] - meas[sel]])
        ax.errorbar(n[sel], meas[sel] * 1e6, yerr=err * 1e6, fmt="o", ms=3, color=f"C{i}", label=f"{proto}: measured")
        ax.plot(n[sel], curve.t_oneway_predicted.values[sel] * 1e6, "-", color=f"C{i}", label=f"{proto}: postal fit")
        res = (meas[sel] - curve.t_oneway_predicted.values[sel]) / meas[sel]
        axr.plot(n[sel], res * 100, "o", ms=3, color=f"C{i}")
    for b in np.atleast_1d(curve.attrs.get("breakpoints", [])):
        for a in (ax, axr):
            a.axvline(b, color="grey", ls=":", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylabel("one-way time [us]")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    axr.axhline(0, color="k", lw=0.8)
    axr.set_ylabel("residual [%]")
    axr.set_xlabel("message size [B]")
    axr.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def plot_error_by_experiment(res: xr.Dataset) -> plt.Figure:
    """Percentage error of total time of every predicted run, grouped by experiment (Figure 5a counterpart).

    Held-out runs are filled, the others (the coarse resolution, oversubscribed runs) hollow.
    """
    fig, ax = plt.subplots(figsize=(max(5, 1.6 * res.sizes["event"]), 3.4))
    width = 0.8 / (res.sizes["factor"] * res.sizes["nprocs"])
    k = 0
    for f in res.factor.values:
        for p in res.nprocs.values:
            s = res.sel(factor=f, nprocs=p)
            x = np.arange(res.sizes["event"]) - 0.4 + (k + 0.5) * width
            held = s.held_out.values.astype(bool)
            err = 100 * s.total_time_error.values
            ax.bar(x[held], err[held], width, color=f"C{k}", label=f"{float(s.cell_size):g} m, {p} ranks")
            ax.bar(x[~held], err[~held], width, color="none", edgecolor=f"C{k}",
                   hatch="//" if bool(s.oversubscribed) else None)
            k += 1
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xticks(np.arange(res.sizes["event"]), [f"target {e}" for e in res.event.values])
    ax.set_ylabel("error of total time [%]")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def plot_halo_by_rank(halo: xr.DataArray) -> plt.Figure:
    """Halo-exchange time per rank in repeated runs of one configuration (Figure 5b counterpart)."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    h = halo.dropna("rank", how="all")
    for r in h.rep.values:
        ax.plot(h["rank"].values, h.sel(rep=r).values, "o-", label=f"run {int(r) + 1}")
    ax.set_xticks(h["rank"].values)
    ax.set_xlabel("MPI rank")
    ax.set_ylabel("halo-exchange time [s]")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
