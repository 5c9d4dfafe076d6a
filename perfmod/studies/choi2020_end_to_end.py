"""Paper 000 end-to-end study: QRoof kernel predictions on V100/P100 and per-iteration predictions
of Jacobi2D, MiniFE and MiniMD on Summit, Lassen and Bridges under weak scaling (model side of
Figures 6, 8, 9, 11, 12, 13).

Kernel parameters come from the algorithmic counts of :mod:`perfmod.apps.kernels`
(the paper's nvprof profiles are not published), devices from
``data/devices/gpus.csv`` (the GPU of each platform is its Table 1 entry),
communication from :func:`perfmod.studies.papers.choi2020.weak_scaling_comm`
(postal, max-rate and K-model, 000 §3.1), overheads from 000 §5.1-5.3 (200,
165, 148 us, measured once and used on every platform, as the paper does).
:func:`replay_comm` gives the same communication by replaying each app's
synthetic trace (the NACoM side, 000 §3.2), allreduces included.

Study contract (notebook ``notebooks/choi2020_end_to_end.ipynb``): :func:`run`
returns the dataset the notebook writes (the kernel predictions over
``kernel`` x ``kernel_device``, the per-iteration model over ``app`` x
``platform`` x ``nodes`` x ``model``, the replayed communication), and
:func:`figures` draws from that dataset alone; the tables the notebook shows
come from :func:`kernel_table`, :func:`time_shares`, :func:`paper_statements`
and :func:`replay_comparison`, again from the dataset.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr
from tqdm.auto import tqdm

from perfmod.apps.registry import app_counts, app_kernels
from perfmod.apps.traces import synthetic
from perfmod.core.io import annotate
from perfmod.core.paperdata import read_table
from perfmod.machine.devices import read_devices
from perfmod.machine.platforms import load
from perfmod.models.comm.network import Network
from perfmod.models.endtoend import comm_from_replay, end_to_end
from perfmod.models.roofline import predict
from perfmod.replay import replay
from perfmod.studies.papers.choi2020 import ITERATIONS, nprocs_for, paper_overhead, weak_scaling_comm
from perfmod.viz.roofline import plot_roofline

__all__ = [
    "STUDY",
    "SOURCE",
    "run",
    "figures",
    "kernel_view",
    "device_table",
    "kernel_counts_table",
    "overheads_table",
    "kernel_table",
    "minife_memory_bound",
    "time_shares",
    "paper_statements",
    "replay_comparison",
    "kernel_predictions",
    "per_iteration",
    "replay_comm",
    "plot_kernels",
    "plot_per_iteration",
]

STUDY = "choi2020_end_to_end"
"""Study name: the notebook ``notebooks/choi2020_end_to_end.ipynb`` and the dataset's ``study`` attribute."""

SOURCE = "model: QRoof (000 §3.3) on algorithmic kernel counts, 000 Tables 1-5, overheads 000 §5.1-5.3"
"""The dataset's ``source`` attribute."""


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
    ``allreduces=0`` it is the analytic halo-exchange time computed the other way: equal on one node,
    higher where ranks wait for each other's messages (with the notebook's defaults, never lower:
    Jacobi2D up to 10 % and MiniFE up to 91 % at 4 to 64 nodes, equal at 256; MiniMD, whose six swaps
    wait for each other, up to 14 % from 16 nodes on).
    """
    t = np.full((len(apps), len(platforms), len(nodes)), np.nan)
    todo = [(a, p, n) for a in range(len(apps)) for p in range(len(platforms)) for n in range(len(nodes))]
    nets = [Network(load(name), model) for name in platforms]  # bound once each
    for a, p, n in tqdm(todo, desc=f"replay ({model})", disable=not progress):
        procs = nprocs_for(apps[a], nodes[n], nets[p].platform.ranks_per_node)
        trace = synthetic(apps[a], procs, iterations, allreduces=allreduces)
        t[a, p, n] = float(comm_from_replay(replay(trace, nets[p], model), iterations))
    what = "halo exchange" if allreduces == 0 else "halo exchange and allreduce"
    return xr.DataArray(t, dims=("app", "platform", "nodes"),
                        coords={"app": list(apps), "platform": list(platforms), "nodes": list(nodes)},
                        attrs={"units": "s", "long_name": f"replayed communication per iteration ({what}, {model})"})


def run(
    apps: Sequence[str] = ("jacobi2d", "minife", "minimd"),
    platforms: Sequence[str] = ("summit", "lassen", "bridges"),
    devices: Sequence[str] = ("Tesla V100", "Tesla P100"),
    extra_devices: Sequence[str] = (),
    nodes: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256),
    models: Sequence[str] = ("postal", "maxrate", "kmodel"),
    replay_nodes: Sequence[int] = (1, 4, 16, 64, 256),
    progress: bool = True,
) -> xr.Dataset:
    """The study's dataset: kernel predictions, per-iteration model and replayed communication.

    Parameters
    ----------
    apps : sequence of str
        Proxy applications.
    platforms : sequence of str
        Platforms (``data/platforms``); the GPU of each is its 000 Table 1 entry.
    devices : sequence of str
        Devices of the kernel predictions (``data/devices/gpus.csv``).
    extra_devices : sequence of str
        Extra device CSV files in the toolkit layout (e.g. a measured local device).
    nodes : sequence of int
        Weak-scaling node counts.
    models : sequence of str
        Communication models.
    replay_nodes : sequence of int
        Node counts whose synthetic traces are also replayed (000 §3.2); a subset of ``nodes``.
    progress : bool
        Show progress bars (not recorded in the ``parameters`` attribute).

    Returns
    -------
    xarray.Dataset
        :func:`kernel_predictions` (without ``dominant_op``, its ``device``
        renamed ``kernel_device``) merged with :func:`per_iteration`, plus
        ``t_comm_replay`` and ``t_comm_replay_halo`` (:func:`replay_comm`
        with and without allreduces, NaN off ``replay_nodes``) and
        ``t_iter_predicted_replay``; times in s; provenance attributes.

    Raises
    ------
    ValueError
        ``replay_nodes`` holds a node count that ``nodes`` does not.
    """
    missing = sorted(set(replay_nodes) - set(nodes))
    if missing:
        raise ValueError(f"replay_nodes {missing} are not in nodes {list(nodes)}; the replay is compared "
                         "with the analytic model at the same node counts")
    kern = kernel_predictions(apps, devices, extra_devices)
    e2e = per_iteration(apps, platforms, nodes, models, progress=progress)
    rep_full = replay_comm(apps, platforms, replay_nodes, progress=progress)
    rep_halo = replay_comm(apps, platforms, replay_nodes, allreduces=0, progress=progress)
    ds = xr.merge([kern.drop_vars(["dominant_op"]).rename({"device": "kernel_device"}), e2e], compat="override")
    ds["t_comm_replay"] = rep_full.reindex(nodes=ds.nodes)
    ds["t_comm_replay_halo"] = rep_halo.reindex(nodes=ds.nodes)
    ds["t_iter_predicted_replay"] = (ds.t_comm_replay + ds.t_kernels + ds.t_overhead).assign_attrs(
        units="s", long_name="predicted per-iteration time with the replayed communication (K-model)")
    return annotate(ds, study=STUDY, source=SOURCE,
                    parameters=dict(apps=apps, platforms=platforms, devices=devices, extra_devices=extra_devices,
                                    nodes=nodes, models=models, replay_nodes=replay_nodes))


def kernel_view(ds: xr.Dataset) -> xr.Dataset:
    """The kernel predictions of a :func:`run` dataset as :func:`kernel_predictions` returns them.

    The variables over ``kernel`` and ``kernel_device`` only, ``kernel_device``
    renamed ``device`` (``dominant_op`` is not in the dataset).
    """
    names = [v for v in ds.data_vars if ds[v].dims and set(ds[v].dims) <= {"kernel", "kernel_device"}]
    return ds[names].rename({"kernel_device": "device"}).drop_attrs(deep=False)


def figures(ds: xr.Dataset) -> dict[str, plt.Figure]:
    """The study's figures, drawn from the dataset of :func:`run` alone.

    Returns
    -------
    dict of str to matplotlib.figure.Figure
        ``kernel_times`` (:func:`plot_kernels`, Figures 6, 9, 12), ``roofline``
        (:func:`perfmod.viz.roofline.plot_roofline`) and ``per_iteration``
        (:func:`plot_per_iteration`, Figures 8, 11, 13).
    """
    kern = kernel_view(ds)
    return {"kernel_times": plot_kernels(kern), "roofline": plot_roofline(kern),
            "per_iteration": plot_per_iteration(ds)}


def device_table(extra_devices: Sequence[str] = ()) -> pd.DataFrame:
    """The QRoof device parameters (toolkit layout) with the source of each value, one row per device."""
    table = read_devices(*extra_devices)
    return pd.concat({"value": table.values, "source": table.sources}, axis=1).swaplevel(axis=1).sort_index(axis=1)


def kernel_counts_table(apps: Sequence[str]) -> pd.DataFrame:
    """The kernel counts per work item of each app (:func:`perfmod.apps.registry.app_counts`), indexed by app."""
    return pd.concat({app: app_counts(app) for app in apps}, names=["app"])


def overheads_table() -> pd.DataFrame:
    """The measured per-iteration overheads transcribed from the papers (``overhead_s`` in s)."""
    return read_table("overheads")[["paper", "section", "app", "platform", "overhead_s"]]


def kernel_table(ds: xr.Dataset) -> pd.DataFrame:
    """Predicted kernel time (ms), bound and intensity per kernel, a column group per device."""
    kern = kernel_view(ds)
    df = kern[["t_predicted", "bound", "kernel_intensity"]].reset_coords(drop=True).to_dataframe()
    return df.assign(t_predicted_ms=df.t_predicted * 1e3).drop(columns="t_predicted").unstack("device")


def minife_memory_bound(ds: xr.Dataset, device: str = "Tesla V100") -> bool | None:
    """Whether every MiniFE kernel is memory-bound on ``device`` (000 §6.2 says so for the V100).

    None when the dataset holds no MiniFE kernel or not that device.
    """
    kern = kernel_view(ds)
    mask = (kern.kernel_app == "minife").values
    if not mask.any() or device not in kern.device.values:
        return None
    return bool((kern.isel(kernel=mask).sel(device=device).bound == "memory").all())


def _last(ds: xr.Dataset) -> xr.Dataset:
    """The per-iteration model at the largest node count and the last model of the dataset."""
    return ds[["t_comm", "t_kernels", "t_overhead", "t_iter_predicted"]].sel(
        nodes=ds.nodes.max(), model=ds.model.values[-1])


def time_shares(ds: xr.Dataset) -> pd.DataFrame:
    """Share of communication, kernels and overhead in the predicted iteration, and its time (ms).

    At the largest node count, under the last model of the dataset (the
    K-model with the default parameters), per app and platform.
    """
    last = _last(ds)
    share = (last[["t_comm", "t_kernels", "t_overhead"]] / last.t_iter_predicted).to_dataframe()
    return share.drop(columns=["nodes", "model"]).assign(t_iter_ms=last.t_iter_predicted.to_series() * 1e3)


def paper_statements(ds: xr.Dataset) -> pd.DataFrame:
    """Per app, what 000 §5.1-5.3 compare: kernel, communication and overhead time per iteration.

    At the largest node count under the last model: ``t_kernels_ms`` (mean
    over platforms), ``t_comm_ms`` (max over platforms), ``t_overhead_us``.
    Kernel time should dominate Jacobi2D and MiniFE; communication matters
    most in MiniMD.
    """
    last = _last(ds)
    return pd.DataFrame({
        "t_kernels_ms": last.t_kernels.mean("platform").to_series() * 1e3,
        "t_comm_ms": last.t_comm.max("platform").to_series() * 1e3,
        "t_overhead_us": last.t_overhead.max("platform").to_series() * 1e6,
    })


def replay_comparison(ds: xr.Dataset) -> tuple[pd.DataFrame, pd.Series]:
    """The replayed communication against the analytic K-model, at the replayed node counts.

    Returns
    -------
    pandas.DataFrame
        Per app, platform and replayed node count (us): the analytic K-model
        halo exchange (when ``kmodel`` is among the models), the replayed halo
        exchange and the replayed halo exchange with allreduces.
    pandas.Series
        Per app, the largest relative deviation of the replayed halo exchange
        from the analytic K-model (empty without ``kmodel``).
    """
    replayed = ds.t_comm_replay.notnull().any(("app", "platform")).values
    nodes = ds.nodes.values[replayed]
    halo = ds.t_comm_replay_halo.sel(nodes=nodes)
    cols = {"replay (halo)": halo, "replay (halo + allreduce)": ds.t_comm_replay.sel(nodes=nodes)}
    deviation = pd.Series(dtype=float, name="max |replay / analytic - 1|")
    if "kmodel" in ds.model.values:
        analytic = ds.t_comm.sel(model="kmodel", nodes=nodes, drop=True)
        cols = {"analytic K-model (halo)": analytic, **cols}
        dev = abs(halo / analytic - 1).max(("platform", "nodes")).to_series()
        deviation = dev.rename(deviation.name)
    table = (xr.Dataset(cols) * 1e6).to_dataframe().rename(columns=lambda c: c + " [us]")
    return table, deviation


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
