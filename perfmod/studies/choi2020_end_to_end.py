"""Paper 000 end-to-end study: QRoof kernel predictions on V100/P100 and per-iteration predictions
of Jacobi2D, MiniFE and MiniMD on Summit, Lassen and Bridges under weak scaling (model side of
Figures 6, 8, 9, 11, 12, 13).

Kernel parameters come from the algorithmic counts of :mod:`perfmod.apps.kernels`
(the paper's nvprof profiles are not published), devices from
``data/devices/gpus.csv`` (the GPU of each platform is its Table 1 entry),
communication from :func:`perfmod.studies.choi2020_comm.weak_scaling_comm`
(postal, max-rate and K-model, 000 §3.1), overheads from 000 §5.1-5.3 (200,
165, 148 us, measured once and used on every platform, as the paper does).
:func:`replay_comm` gives the same communication by replaying each app's
synthetic trace (the NACoM side, 000 §3.2), allreduces included.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from tqdm.auto import tqdm

from perfmod.apps.registry import app_kernels
from perfmod.apps.traces import synthetic
from perfmod.core.paperdata import read_table
from perfmod.machine.platforms import load
from perfmod.models.endtoend import comm_from_replay, end_to_end
from perfmod.models.roofline import predict, read_devices
from perfmod.replay import replay
from perfmod.studies.choi2020_comm import nprocs_for, weak_scaling_comm

__all__ = [
    "kernel_predictions",
    "per_iteration",
    "replay_comm",
    "plot_kernels",
    "plot_per_iteration",
    "paper_overhead",
    "ITERATIONS",
]


def kernel_predictions(apps: Sequence[str], devices: Sequence[str] = ("Tesla V100", "Tesla P100"),
                       extra_devices: Sequence[str] = ()) -> xr.Dataset:
    """QRoof predictions of every app's kernels per iteration (Figures 6, 9, 12, model side).

    Returns
    -------
    xarray.Dataset
        Over (``kernel``, ``device``), ``kernel`` labelled ``"<app>.<KERNEL>"``
        with the coordinates ``kernel_app`` and ``kernel_name`` along it.
    """
    table = read_devices(*extra_devices)
    parts = []
    for app in apps:
        pred = predict(app_kernels(app), table, devices)
        names = [str(k) for k in pred["kernel"].values]
        pred = pred.assign_coords(kernel=[f"{app}.{k}" for k in names])
        pred = pred.assign_coords(kernel_app=("kernel", [app] * len(names)), kernel_name=("kernel", names))
        parts.append(pred)
    out = xr.concat(parts, dim="kernel", data_vars="minimal", coords="different", compat="equals",
                    join="outer")
    for c, long_name in (("kernel", "app.kernel"), ("kernel_app", "proxy application"), ("kernel_name", "kernel")):
        out[c].attrs.update(units="1", long_name=long_name)
    return out


def per_iteration(
    apps: Sequence[str],
    platforms: Sequence[str],
    nodes: Sequence[int],
    models: Sequence[str] = ("postal", "maxrate", "kmodel"),
    progress: bool = True,
) -> xr.Dataset:
    """Predicted per-iteration time over (app, platform, nodes, model) (Figures 8, 11, 13, model side).

    ``t_iter_predicted = t_comm + t_kernels + t_overhead`` with the kernel
    times of the platform's GPU and the paper's overhead of the app,
    constant under weak scaling; ``t_total_predicted`` multiplies by the
    iterations of :data:`perfmod.models.endtoend.ITERATIONS`.
    """
    comm = weak_scaling_comm(apps, platforms, nodes, models, progress=progress)
    gpus = {p: load(p).gpu for p in platforms}
    table = read_devices()
    kern = np.zeros((len(apps), len(platforms)))
    for a, app in enumerate(apps):
        pred = predict(app_kernels(app), table, sorted(set(gpus.values())))
        for p, plat in enumerate(platforms):
            kern[a, p] = float(pred["t_predicted"].sel(device=gpus[plat]).sum("kernel"))
    t_kernels = xr.DataArray(kern, dims=("app", "platform"), coords={"app": list(apps), "platform": list(platforms)})
    overhead = xr.DataArray([paper_overhead(a) for a in apps], dims="app", coords={"app": list(apps)})
    iters = xr.DataArray([ITERATIONS[a] for a in apps], dims="app", coords={"app": list(apps)})
    ds = end_to_end(comm["t_comm_predicted"], t_kernels, overhead, iters)
    for v in ("k_inter", "k_total", "k", "nprocs"):
        ds[v] = comm[v]
    ds["gpu"] = xr.DataArray([gpus[p] for p in platforms], dims="platform",
                             attrs={"units": "1", "long_name": "GPU of the platform (000 Table 1)"})
    ds["iterations"] = iters.assign_attrs(units="1", long_name="iterations of an end-to-end run (000 §4.2)")
    for c in ("app", "platform", "model"):
        ds[c].attrs.update(units="1", long_name=c)
    ds["nodes"].attrs.update(units="1", long_name="nodes")
    return ds


def replay_comm(apps: Sequence[str], platforms: Sequence[str], nodes: Sequence[int], model: str = "kmodel",
                iterations: int = 2, allreduces: int | None = None, progress: bool = True) -> xr.DataArray:
    """Communication time per iteration (s) from replaying each app's trace, over (app, platform, nodes).

    The synthetic trace of ``iterations`` iterations (:func:`perfmod.apps.traces`: the halo
    exchanges of the app's decomposition and ``allreduces`` allreduces per iteration, the app's own
    count when None) on the rank counts of :func:`weak_scaling_comm`, replayed message by message with
    ``model`` (:func:`perfmod.replay.replay`); the slowest rank's time divided by ``iterations``.  With
    ``allreduces=0`` it is the analytic halo-exchange time computed the other way: equal for Jacobi2D
    and MiniFE, higher for MiniMD, whose six swaps wait for each other in the replay.
    """
    t = np.full((len(apps), len(platforms), len(nodes)), np.nan)
    todo = [(a, p, n) for a in range(len(apps)) for p in range(len(platforms)) for n in range(len(nodes))]
    for a, p, n in tqdm(todo, desc=f"replay ({model})", disable=not progress):
        plat = load(platforms[p])
        procs = nprocs_for(apps[a], nodes[n], plat.ranks_per_node)
        trace = synthetic(apps[a], procs, iterations, allreduces=allreduces)
        t[a, p, n] = float(comm_from_replay(replay(trace, plat, model), iterations))
    what = "halo exchange" if allreduces == 0 else "halo exchange and allreduce"
    return xr.DataArray(t, dims=("app", "platform", "nodes"),
                        coords={"app": list(apps), "platform": list(platforms), "nodes": list(nodes)},
                        attrs={"units": "s", "long_name": f"replayed communication per iteration ({what}, {model})"})


def plot_kernels(pred: xr.Dataset) -> plt.Figure:
    """Bar chart of predicted kernel times per device, one panel per app (Figures 6, 9, 12)."""
    apps = list(dict.fromkeys(str(a) for a in pred["kernel_app"].values))
    fig, axes = plt.subplots(1, len(apps), figsize=(4 * len(apps), 3.5), squeeze=False)
    devices = [str(d) for d in pred["device"].values]
    for ax, app in zip(axes[0], apps, strict=True):
        sub = pred.isel(kernel=np.flatnonzero(pred["kernel_app"].values == app))
        names = [str(k) for k in sub["kernel_name"].values]
        x = np.arange(len(names))
        w = 0.8 / len(devices)
        for i, dev in enumerate(devices):
            t = sub["t_predicted"].sel(device=dev).values * 1e3
            bars = ax.bar(x + i * w, t, w, label=dev)
            for b, bound in zip(bars, sub["bound"].sel(device=dev).values, strict=True):
                ax.annotate(str(bound)[0].upper(), (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=7)
        ax.set_xticks(x + w * (len(devices) - 1) / 2, names, fontsize=8)
        ax.set_yscale("log")
        ax.set_title(f"{app}: kernel time per iteration")
        ax.set_ylabel("predicted time (ms)")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_per_iteration(ds: xr.Dataset) -> plt.Figure:
    """Predicted iteration time against nodes, per app and platform (Figures 8, 11, 13)."""
    apps = [str(a) for a in ds["app"].values]
    fig, axes = plt.subplots(1, len(apps), figsize=(4.5 * len(apps), 3.5), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, app in zip(axes[0], apps, strict=True):
        for i, plat in enumerate(ds["platform"].values):
            for model, style in zip(ds["model"].values, ("-", "--", ":", "-."), strict=False):
                t = ds["t_iter_predicted"].sel(app=app, platform=plat, model=model) * 1e3
                ax.plot(ds["nodes"], t, style, color=colours[i % len(colours)], marker="o", ms=3,
                        label=f"{plat} {model}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("nodes")
        ax.set_ylabel("predicted time per iteration (ms)")
        ax.set_title(f"{app} (weak scaling)")
    axes[0][0].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig


ITERATIONS: dict[str, int] = {"jacobi2d": 100, "minife": 200, "minimd": 100}
"""Iterations of an end-to-end run (000 §4.2: Jacobi2D 100, MiniFE's CG loop 200, MiniMD 100 steps)."""

def paper_overhead(app: str, platform: str | None = None, paper: str = "000") -> float:
    """Measured per-iteration overhead (s) transcribed from the papers.

    Parameters
    ----------
    app : {"jacobi2d", "minife", "minimd"}
    platform : str, optional
        Platform of the measurement; required where the paper has several
        (002: MiniFE on ``"lassen"`` 820 us, ``"bridges"`` 1001 us).
    paper : {"000", "002"}
        Paper 000 (used for every platform: 200, 165, 148 us) or 002.

    Raises
    ------
    KeyError
        No such overhead; the message lists those available.
    """
    df = read_table("overheads")
    sel = df[df["paper"].str.startswith(paper) & (df["app"] == app)]
    if platform is not None and len(sel) > 1:
        sel = sel[sel["platform"] == platform]
    if len(sel) != 1:
        have = ", ".join(f"{r.paper[:3]}/{r.app}/{r.platform}" for r in df.itertuples())
        raise KeyError(f"no unique overhead for paper {paper}, app {app!r}, platform {platform!r}; "
                       f"available: {have}")
    return float(sel["overhead_s"].iloc[0])
