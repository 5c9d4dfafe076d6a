"""Roofline plot of a QRoof prediction (log-log, ceilings per device, kernels as labelled points)."""

from __future__ import annotations

from collections.abc import Iterable

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

__all__ = ["plot_roofline"]


def plot_roofline(pred: xr.Dataset, devices: Iterable[str] | None = None, ax: plt.Axes | None = None
                  ) -> plt.Figure:
    """Roofline of the kernels of ``pred`` (:func:`perfmod.models.roofline.predict`) on each device.

    Per device: the DRAM ceiling (bandwidth x intensity) and the
    single- and double-precision peaks (dashed, dotted), in one colour.  Per
    kernel and device: a point at (kernel intensity, attained operation
    rate), a circle when memory-bound, a triangle when compute-bound; each
    kernel is named once (at the first device's point).  Axes: operations per DRAM byte and operations per
    second, both logarithmic.
    """
    names = list(devices) if devices is not None else [str(d) for d in pred["device"].values]
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7, 5))
    ai = np.asarray(pred["kernel_intensity"].values, dtype=float)
    finite = ai[np.isfinite(ai) & (ai > 0)]
    lo = 10 ** np.floor(np.log10(finite.min() / 4)) if finite.size else 1e-2
    hi = 10 ** np.ceil(np.log10(finite.max() * 4)) if finite.size else 1e3
    x = np.logspace(np.log10(lo), np.log10(hi), 200)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, dev in enumerate(names):
        d = pred.sel(device=dev)
        c = colours[i % len(colours)]
        bw = float(d["dram_bandwidth"])
        for var, style in (("flops_sp", "--"), ("flops_dp", ":")):
            peak = float(d[var])
            ax.plot(x, np.minimum(bw * x, peak), style, color=c, lw=1,
                    label=f"{dev}: {var[-2:].upper()} {peak / 1e12:.3g} Tflop/s, {bw / 1e9:.0f} GB/s")
        order = np.argsort(np.nan_to_num(pred["kernel_intensity"].values, posinf=hi))
        for j, k in enumerate(pred["kernel"].values[order]):
            dk = d.sel(kernel=k)
            xi, yi = float(dk["kernel_intensity"]), float(dk["throughput"])
            if not np.isfinite(xi):
                xi = hi
            bound = "C" if bool(dk["compute_bound"]) else "M"
            ax.plot([xi], [yi], "^" if bound == "C" else "o", color=c, ms=7)
            if i == 0:  # one label per kernel, staggered so that clustered kernels stay readable
                ax.annotate(f"{str(k).split('(')[0]}", (xi, yi), fontsize=7, xytext=(-6, 8 + 10 * (j % 8)),
                            textcoords="offset points", ha="right",
                            arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.5"})
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("operational intensity (operations per DRAM byte)")
    ax.set_ylabel("operations per second")
    ax.set_title("QRoof: kernels on each device (o memory-bound, ^ compute-bound)")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig
