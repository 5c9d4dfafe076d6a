"""Figures of the skeleton study (paper 004 Figures 6-9 counterparts and the scale-out replay).

Each function takes the ``anger_skeletons`` dataset (and the paper's numbers,
``read_table("anger_results")``, where the paper states any) and returns a
matplotlib figure; nothing is fitted here.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import xarray as xr  # noqa: E402

__all__ = ["plot_region_fit", "plot_threshold", "plot_skeleton_error", "plot_speedup", "plot_scale_out"]

_STYLE = {"eiger": ("C0", "o-"), "perfmod": ("C2", "s-"), "loop": ("C1", "^--"), "mean": ("C7", "x:")}


def _paper(paper: pd.DataFrame, quantity: str, method: str, app: str = "all") -> float:
    rows = paper[(paper.quantity == quantity) & (paper.method == method) & (paper.app == app)]
    return float(rows.value.iloc[0]) if len(rows) else float("nan")


def plot_region_fit(ds: xr.Dataset, paper: pd.DataFrame, regions: list[str] | None = None) -> plt.Figure:
    """Figure 6: a region's time per call vs size, measured and each method's fit, with R^2 and mean error, and
    Extra-P's where it ran (``region_time_extrap``)."""
    regions = regions or [r for r in ("hpccg.waxpby", "minimd.force", "lulesh.volume_forces")
                          if r in ds.region.values] or [str(ds.region.values[0])]
    fig, axes = plt.subplots(1, len(regions), figsize=(5.2 * len(regions), 3.8), squeeze=False)
    for ax, reg in zip(axes[0], regions, strict=True):
        app = str(ds.region_app.sel(region=reg).values)
        x = ds.problem_size.sel(app=app).values
        held = ds.held_out.sel(app=app).values
        y = ds.region_time_measured.sel(region=reg).values
        ax.plot(x[~held], y[~held] * 1e6, "ko", label="measured (training)")
        ax.plot(x[held], y[held] * 1e6, "o", mfc="none", mec="k", label="measured (held out)")
        order = np.argsort(x)
        for m in ds.method.values:
            c, style = _STYLE.get(str(m), ("C3", "-"))
            r2 = float(ds.region_r2.sel({"region": reg, "method": m}))
            e = float(ds.region_error.sel({"region": reg, "method": m}))
            ax.plot(x[order], ds.region_time_predicted.sel({"region": reg, "method": m}).values[order] * 1e6, style,
                    color=c, ms=3, label=f"{m}: R^2 {r2:.3f}, error {e:.1%}")
        if "region_time_extrap" in ds and np.isfinite(ds.region_time_extrap.sel(region=reg).values).any():
            ax.plot(x[order], ds.region_time_extrap.sel(region=reg).values[order] * 1e6, "-.", color="C4", ms=3,
                    label="Extra-P (1-rank calls)")
        ax.set_xlabel("HPCCG: block edge n" if app == "hpccg" else "MiniMD: FCC cells per edge"
                      if app == "minimd" else "LULESH: elements per edge" if app == "lulesh" else "problem size")
        ax.set_ylabel("time per call [us]")
        ax.set_title(reg)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Region fits (paper Fig. 6: MiniFE Dirichlet region, Eiger R^2 "
                 f"{_paper(paper, 'region_r2', 'eiger', 'minife_dirichlet'):.3f} / "
                 f"{_paper(paper, 'region_error', 'eiger', 'minife_dirichlet'):.2f} %, loop R^2 "
                 f"{_paper(paper, 'region_r2', 'loop', 'minife_dirichlet'):.3f} / "
                 f"{_paper(paper, 'region_error', 'loop', 'minife_dirichlet'):.2f} %)", fontsize=9)
    fig.tight_layout()
    return fig


def plot_threshold(ds: xr.Dataset) -> plt.Figure:
    """Figure 7: Eiger's threshold vs mean terms per model and held-out skeleton error, with the CV choice."""
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    th = np.where(ds.threshold.values > 0, ds.threshold.values, np.nan)
    lo = np.nanmin(th) / 10 if np.isfinite(np.nanmin(th)) else 1e-6
    x = np.where(ds.threshold.values > 0, ds.threshold.values, lo)
    ax.semilogx(x, ds.threshold_terms, "o-", color="C0", label="Eiger: terms per model")
    ax.axhline(float(ds.cv_terms), color="C0", ls=":", label="perfmod (CV): terms")
    ax.set_xlabel("Eiger threshold (adjusted R^2 gain; 0 plotted at the left)")
    ax.set_ylabel("mean terms per region model")
    ax2 = ax.twinx()
    ax2.semilogx(x, np.asarray(ds.threshold_error) * 100, "s-", color="C3", label="Eiger: skeleton error")
    ax2.axhline(float(ds.cv_error) * 100, color="C3", ls=":", label="perfmod (CV): skeleton error")
    ax2.set_ylabel("held-out skeleton error [%]")
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, loc="upper center")
    ax.set_title("HPCCG: threshold vs terms and error (paper Fig. 7)")
    fig.tight_layout()
    return fig


def plot_skeleton_error(ds: xr.Dataset, paper: pd.DataFrame) -> plt.Figure:
    """Figure 8: mean absolute error of the skeleton runtime per app and method (held-out, and all sizes)."""
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    apps = list(ds.app.values)
    methods = list(ds.method.values)
    err = np.abs(ds.runtime_error)
    w = 0.8 / len(methods)
    for k, m in enumerate(methods):
        held = err.sel({"method": m}).where(ds.held_out).mean(("size", "nprocs")).values
        every = err.sel({"method": m}).mean(("size", "nprocs")).values
        pos = np.arange(len(apps)) + (k - (len(methods) - 1) / 2) * w
        clean = err.sel({"method": m}).where(ds.held_out & ds.measured_clean).mean(("size", "nprocs")).values
        ax.bar(pos, held * 100, w, color=_STYLE.get(str(m), ("C3",))[0], label=f"{m} (held out)")
        ax.plot(pos, every * 100, "k_", ms=10)
        ax.plot(pos, clean * 100, "D", mfc="white", mec="k", ms=5,
                label="held out, clean runs only" if k == 0 else None)
    for m, ls in (("eiger", "--"), ("loop", ":")):
        v = _paper(paper, "skeleton_error", m)
        ax.axhline(v, color="k", ls=ls, lw=1, label=f"paper, {m}: {v:.2f} %")
    ax.set_xticks(np.arange(len(apps)), apps)
    ax.set_ylabel("mean |runtime error| [%]\n(bars: held-out sizes; ticks: all sizes)")
    ax.set_title("Skeleton runtime error, 1 and 2 ranks (paper Fig. 8)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_speedup(ds: xr.Dataset, paper: pd.DataFrame) -> plt.Figure:
    """Figure 9: native runtime / skeleton wall time per app and size (1 rank)."""
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    for i, app in enumerate(ds.app.values):
        x = ds.problem_size.sel(app=app).values
        y = ds.skeleton_speedup.sel(app=app).values
        ok = np.isfinite(x) & np.isfinite(y)
        order = np.argsort(x[ok])
        ax.semilogy(x[ok][order], y[ok][order], "o-", color=f"C{i}", label=str(app))
    for m, ls in (("eiger", "--"), ("loop", ":")):
        v = _paper(paper, "skeleton_speedup", m)
        ax.axhline(v, color="k", ls=ls, lw=1, label=f"paper mean, {m}: {v:g}x")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("problem size (HPCCG: block edge n; MiniMD: cells per edge)")
    ax.set_ylabel("skeleton speedup")
    ax.set_title(f"Skeleton speedup over native, 1 rank ({ds.attrs.get('speedup_method', '')} models; paper Fig. 9)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_scale_out(ds: xr.Dataset) -> plt.Figure:
    """Weak-scaling skeleton replays: predicted runtime with the confidence bounds vs virtual ranks."""
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    p = ds.scale_nprocs.values
    for i, app in enumerate(ds.app.values):
        pred = ds.scaled_runtime_predicted.sel(app=app).values
        lo, hi = ds.scaled_runtime_lower.sel(app=app).values, ds.scaled_runtime_upper.sel(app=app).values
        ax.plot(p, pred * 1e3, "o-", color=f"C{i}", label=str(app))
        ax.fill_between(p, lo * 1e3, hi * 1e3, color=f"C{i}", alpha=0.2)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("virtual ranks (weak scaling)")
    ax.set_ylabel("replayed runtime [ms]")
    ax.set_title(f"Skeletons replayed on {ds.attrs.get('platform', '')} (95 % confidence bands)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
