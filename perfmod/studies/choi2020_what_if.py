"""Paper 000 §6 what-if studies of MiniFE (Figures 14 and 15, model side).

Figure 14 (§6.1): GPUs per node from 1 to 16 with the total fixed (256
GPUs, one rank each: 256 nodes down to 16), GPUs split evenly over two
sockets, Lassen's parameters; postal against max-rate, the max-rate k of
inter-node messages being the ranks (GPUs) per node.  Kernel time (Tesla
V100) and overhead (165 us, 000 §5.2) stay constant.

Figure 15 (§6.2): hypothetical devices A-D from the Tesla V100 parameter
file: A twice and B half the flop/s, C twice and D half the DRAM bandwidth;
MiniFE kernel and iteration times, communication from the K-model on 256
Lassen ranks (the configuration of §6).

Both sweeps are dimensions of the returned datasets (``gpus_per_node`` x
``model``; ``device``), built by broadcasting.

Study contract (notebook ``notebooks/choi2020_what_if.ipynb``): :func:`run`
returns both sweeps in one dataset, the Figure 14 variables prefixed ``fat_``
(model dimension ``fat_model``), the Figure 15 ones ``dev_``; :func:`split`
gives the two sweeps back and :func:`figures` draws from the dataset alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from perfmod.apps.registry import app_kernels, exchange, kmodel_counts
from perfmod.core.io import annotate
from perfmod.machine.devices import devices_dataset, get_device, scale_device
from perfmod.machine.platforms import load
from perfmod.models.comm.network import Network
from perfmod.models.comm.phase import phase_time
from perfmod.models.endtoend import end_to_end
from perfmod.models.roofline import predict
from perfmod.studies.papers.choi2020 import paper_overhead

__all__ = ["STUDY", "SOURCE", "DEVICE_VARIANTS", "run", "split", "figures", "gpus_per_node_sweep", "device_variants",
           "device_sweep", "plot_gpus_per_node", "plot_device_sweep"]

STUDY = "choi2020_what_if"
"""Study name: the notebook ``notebooks/choi2020_what_if.ipynb`` and the dataset's ``study`` attribute."""

SOURCE = "model: 000 §6 what-if studies (Tables 2-4 Lassen parameters, QRoof on algorithmic MiniFE counts)"
"""The dataset's ``source`` attribute."""

DEVICE_VARIANTS: dict[str, dict[str, float]] = {
    "A": {"flops": 2.0},
    "B": {"flops": 0.5},
    "C": {"bandwidth": 2.0},
    "D": {"bandwidth": 0.5},
}
"""000 §6.2: A/B twice/half the flop/s of Tesla V100, C/D twice/half its memory bandwidth."""


def gpus_per_node_sweep(
    gpus_per_node: Sequence[int] = (1, 2, 4, 8, 16),
    total_gpus: int = 256,
    platform: str = "lassen",
    models: Sequence[str] = ("postal", "maxrate"),
    app: str = "minife",
    device: str = "Tesla V100",
) -> xr.Dataset:
    """Figure 14: communication and iteration time over (``gpus_per_node``, ``model``)."""
    nets = [Network(load(platform), model) for model in models]  # bound once; the what-if changes the layout
    ex = exchange(app, total_gpus)
    t = np.zeros((len(gpus_per_node), len(models)))
    nodes = []
    for i, g in enumerate(gpus_per_node):
        if total_gpus % g:
            raise ValueError(f"total_gpus={total_gpus} is not a multiple of gpus_per_node={g}")
        nodes.append(total_gpus // g)
        for j, net in enumerate(nets):
            what_if = net.with_layout(ranks_per_node=g, sockets_per_node=2, gpus_per_socket=ceil(g / 2))
            t[i, j] = float(phase_time(ex, what_if, model=net.model.name)["t_phase"])
    coords = {"gpus_per_node": list(gpus_per_node), "model": list(models)}
    t_comm = xr.DataArray(t, dims=("gpus_per_node", "model"), coords=coords)
    pred = predict(app_kernels(app), {device: get_device(device)})
    kern = pred["t_predicted"].sel(device=device, drop=True).sum("kernel")
    ds = end_to_end(t_comm, kern, paper_overhead(app))
    ds["nodes"] = xr.DataArray(nodes, dims="gpus_per_node", attrs={"units": "1", "long_name": "nodes"})
    ds.attrs["device"] = device
    ds["gpus_per_node"].attrs.update(units="1", long_name="GPUs (ranks) per node, two sockets")
    ds["model"].attrs.update(units="1", long_name="communication model")
    return ds


def device_variants(base: str = "Tesla V100") -> dict:
    """The base device and the hypothetical devices A-D of :data:`DEVICE_VARIANTS`."""
    dev = get_device(base)
    out = {base: dev}
    for name, factors in DEVICE_VARIANTS.items():
        out[name] = scale_device(dev, name=name, **factors)
    return out


def device_sweep(base: str = "Tesla V100", app: str = "minife", platform: str = "lassen", nprocs: int = 256
                 ) -> xr.Dataset:
    """Figure 15: kernel times and iteration time over ``device`` (the base and A-D).

    Communication: the K-model halo exchange of ``nprocs`` ranks on
    ``platform``; overhead: the paper's.
    """
    devices = devices_dataset(device_variants(base))
    pred = predict(app_kernels(app), devices)
    ex = exchange(app, nprocs)
    net = Network(platform, "kmodel")
    counts = kmodel_counts(ex, None, nprocs, ranks_per_node=net.platform.ranks_per_node)
    t_comm = float(phase_time(ex, net, model="kmodel", counts=counts)["t_phase"])
    e2e = end_to_end(t_comm, pred, paper_overhead(app))
    out = pred[["t_predicted", "bound", "compute_bound", "flops_sp", "flops_dp", "dram_bandwidth"]].merge(e2e)
    out["device"].attrs.update(units="1", long_name="device (000 §6.2: A-D from Tesla V100)")
    out["kernel"].attrs.update(units="1", long_name="kernel")
    return out


def run(
    gpus_per_node: Sequence[int] = (1, 2, 4, 8, 16),
    total_gpus: int = 256,
    platform: str = "lassen",
    models: Sequence[str] = ("postal", "maxrate"),
    base_device: str = "Tesla V100",
) -> xr.Dataset:
    """The study's dataset: both what-if sweeps of MiniFE with their provenance.

    Parameters
    ----------
    gpus_per_node : sequence of int
        Figure 14 sweep; each must divide ``total_gpus``.
    total_gpus : int
        GPUs (one rank each) in total; also the rank count of the Figure 15
        communication (000 §6: traces at 256 processes).
    platform : str
        Network parameters (000 §6.1: Lassen).
    models : sequence of str
        Communication models of Figure 14.
    base_device : str
        Device the variants A-D are derived from, and the kernel device of
        Figure 14 (000 §6.2: Tesla V100).

    Returns
    -------
    xarray.Dataset
        :func:`gpus_per_node_sweep` with every variable prefixed ``fat_`` and
        ``model`` renamed ``fat_model``, :func:`device_sweep` with every
        variable prefixed ``dev_``; times in s; provenance attributes.
    """
    fat = gpus_per_node_sweep(gpus_per_node, total_gpus, platform, models, device=base_device)
    dev = device_sweep(base_device, nprocs=total_gpus, platform=platform)
    ds = xr.merge([
        fat.rename({v: f"fat_{v}" for v in fat.data_vars}).rename({"model": "fat_model"}),
        dev.rename({v: f"dev_{v}" for v in dev.data_vars}),
    ])
    return annotate(ds, study=STUDY, source=SOURCE,
                    parameters=dict(gpus_per_node=gpus_per_node, total_gpus=total_gpus, platform=platform,
                                    models=models, base_device=base_device))


def split(ds: xr.Dataset) -> tuple[xr.Dataset, xr.Dataset]:
    """The two sweeps of a :func:`run` dataset, with their original names.

    Returns
    -------
    (xarray.Dataset, xarray.Dataset)
        Figure 14 (:func:`gpus_per_node_sweep`: over ``gpus_per_node`` and
        ``model``) and Figure 15 (:func:`device_sweep`: over ``device`` and
        ``kernel``).
    """
    fat_vars = [v for v in ds.data_vars if str(v).startswith("fat_")]
    dev_vars = [v for v in ds.data_vars if str(v).startswith("dev_")]
    fat = ds[fat_vars].rename({v: str(v).removeprefix("fat_") for v in fat_vars}).rename({"fat_model": "model"})
    dev = ds[dev_vars].rename({v: str(v).removeprefix("dev_") for v in dev_vars})
    return fat.drop_attrs(deep=False), dev.drop_attrs(deep=False)


def figures(ds: xr.Dataset) -> dict[str, plt.Figure]:
    """The study's figures, drawn from the dataset of :func:`run` alone.

    Returns
    -------
    dict of str to matplotlib.figure.Figure
        ``gpus_per_node`` (Figure 14, :func:`plot_gpus_per_node`) and
        ``devices`` (Figure 15, :func:`plot_device_sweep`).
    """
    fat, dev = split(ds)
    return {"gpus_per_node": plot_gpus_per_node(fat), "devices": plot_device_sweep(dev)}


def plot_gpus_per_node(ds: xr.Dataset) -> plt.Figure:
    """Figure 14 counterpart: communication (left) and iteration time (right) against GPUs per node."""
    total = sorted({int(g * n) for g, n in zip(ds["gpus_per_node"].values, ds["nodes"].values, strict=True)})
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    for model in ds["model"].values:
        a.plot(ds["gpus_per_node"], ds["t_comm"].sel(model=model) * 1e6, marker="o", label=str(model))
        b.plot(ds["gpus_per_node"], ds["t_iter_predicted"].sel(model=model) * 1e3, marker="o", label=str(model))
    for ax, label in ((a, "communication per iteration (us)"), (b, "time per iteration (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"GPUs per node ({', '.join(map(str, total))} GPUs in total)")
        ax.set_ylabel(label)
        ax.legend()
    b.set_ylim(bottom=0)
    fig.tight_layout()
    return fig


def plot_device_sweep(ds: xr.Dataset) -> plt.Figure:
    """Figure 15 counterpart: kernel times per device (left) and iteration time (right)."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    devices = [str(d) for d in ds["device"].values]
    kernels = [str(k) for k in ds["kernel"].values]
    x = np.arange(len(devices))
    bottom = np.zeros(len(devices))
    for k in kernels:
        t = ds["t_predicted"].sel(kernel=k).values * 1e3
        a.bar(x, t, bottom=bottom, label=k)
        bottom += t
    a.set_xticks(x, devices)
    a.set_ylabel("kernel time per iteration (ms)")
    a.legend(fontsize=8)
    parts = [("t_kernels", "kernels"), ("t_comm", "communication"), ("t_overhead", "overhead")]
    bottom = np.zeros(len(devices))
    for var, label in parts:
        t = np.broadcast_to(ds[var].values * 1e3, (len(devices),))
        b.bar(x, t, bottom=bottom, label=label)
        bottom += t
    b.set_xticks(x, devices)
    b.set_ylabel("time per iteration (ms)")
    b.legend(fontsize=8)
    fig.tight_layout()
    return fig
