"""Paper 002 (Choi et al., SC'19 poster): the MiniFE CG-loop model on Lassen and Bridges.

Per CG iteration (002 §2.1-2.2; the loop of 000 §4.2: dot -> waxpby -> matvec
-> dot -> waxpby -> waxpby):

- two allreduces of one double (the dot products), by recursive doubling
  (002 §1.2; :func:`perfmod.models.comm.collectives.allreduce_recursive_doubling`,
  node-aware postal steps);
- one halo exchange of the 27-point operator (000 §4.2 decomposition,
  :func:`perfmod.apps.registry.analytic_comm`; the poster's halo benchmark is not
  published, so the postal model of the platform stands in for it);
- the QRoof kernel times (DOT x2, WAXPBY x3, MATVEC; Tesla V100 on Lassen,
  Tesla P100 on Bridges; parameters from Lassen counts, as on the poster,
  where "the application parameters obtained from Lassen were used");
- the measured overheads of the poster: 820 us (Lassen, §3.1) and 1001 us
  (Bridges, §3.2).

The poster sweeps 1 to 4 nodes (4 ranks per node on Lassen, 2 on Bridges).
It publishes prediction errors (iteration time 6-7 % on Lassen, 1-2 % on
Bridges; allreduce 1-17 %, halo 9 % on Lassen; kernels 8-10 % / 2-6 %),
not the times themselves, so there are no absolute numbers to compare with.

Study contract (notebook ``notebooks/choi2019_minife.ipynb``): :func:`run`
returns the dataset the notebook writes, :func:`figures` draws its figures
from that dataset alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from perfmod.apps.exchange import DOUBLE
from perfmod.apps.registry import analytic_comm, app_kernels
from perfmod.core.io import annotate
from perfmod.machine.devices import read_devices
from perfmod.machine.platforms import load
from perfmod.models.comm.collectives import allreduce_recursive_doubling
from perfmod.models.endtoend import end_to_end
from perfmod.models.roofline import predict
from perfmod.studies.papers.choi2020 import ITERATIONS, paper_overhead

__all__ = ["STUDY", "SOURCE", "DOTS_PER_ITERATION", "run", "figures", "cg_iteration", "plot_cg_iteration"]

STUDY = "choi2019_minife"
"""Study name: the notebook ``notebooks/choi2019_minife.ipynb`` and the dataset's ``study`` attribute."""

SOURCE = "model: 002 §1-3 (recursive-doubling allreduce, halo exchange, QRoof, overheads 820/1001 us)"
"""The dataset's ``source`` attribute."""

DOTS_PER_ITERATION = 2  # dot -> waxpby -> matvec -> dot -> waxpby -> waxpby (000 §4.2)


def cg_iteration(
    platforms: Sequence[str] = ("lassen", "bridges"),
    nodes: Sequence[int] = (1, 2, 3, 4),
    halo_model: str = "postal",
    box: int = 200,
) -> xr.Dataset:
    """Predicted MiniFE CG iteration over (``platform``, ``nodes``).

    Returns
    -------
    xarray.Dataset
        ``t_allreduce`` (both dot products), ``t_halo``, ``t_comm`` (their
        sum), ``t_kernels``, ``t_overhead``, ``t_iter_predicted``,
        ``t_total_predicted`` (200 iterations), per-kernel times
        ``t_kernel`` over (``platform``, ``kernel``) and ``nprocs``.
    """
    table = read_devices()
    kernels = app_kernels("minife", box=box)
    shape = (len(platforms), len(nodes))
    t_allreduce, t_halo, nprocs = np.zeros(shape), np.zeros(shape), np.zeros(shape, dtype=int)
    t_kern = []
    for i, name in enumerate(platforms):
        plat = load(name)
        pred = predict(kernels, table, [plat.gpu])["t_predicted"].sel(device=plat.gpu, drop=True)
        t_kern.append(pred)
        for j, n in enumerate(nodes):
            p = int(n) * plat.ranks_per_node
            nprocs[i, j] = p
            t_allreduce[i, j] = DOTS_PER_ITERATION * float(allreduce_recursive_doubling(DOUBLE, p, plat))
            t_halo[i, j] = analytic_comm("minife", plat, p, model=halo_model, box=box) if p > 1 else 0.0
    dims = ("platform", "nodes")
    coords = {"platform": list(platforms), "nodes": list(nodes)}
    allreduce = xr.DataArray(t_allreduce, dims=dims, coords=coords)
    halo = xr.DataArray(t_halo, dims=dims, coords=coords)
    t_kernel = xr.concat(t_kern, dim=xr.DataArray(list(platforms), dims="platform"))
    overhead = xr.DataArray([paper_overhead("minife", p, paper="002") for p in platforms], dims="platform",
                            coords={"platform": list(platforms)})
    ds = end_to_end(allreduce + halo, t_kernel.sum("kernel"), overhead, ITERATIONS["minife"])
    ds["t_allreduce"] = allreduce.assign_attrs(units="s", long_name="two allreduces of one double (recursive "
                                                                    "doubling, postal steps)")
    ds["t_halo"] = halo.assign_attrs(units="s", long_name=f"halo exchange ({halo_model} model)")
    ds["t_kernel"] = t_kernel.assign_attrs(units="s", long_name="QRoof kernel time per iteration")
    ds["nprocs"] = xr.DataArray(nprocs, dims=dims, coords=coords, attrs={"units": "1", "long_name": "MPI ranks"})
    ds["platform"].attrs.update(units="1", long_name="platform")
    ds["nodes"].attrs.update(units="1", long_name="nodes")
    ds["kernel"].attrs.update(units="1", long_name="kernel")
    return ds


def run(
    platforms: Sequence[str] = ("lassen", "bridges"),
    nodes: Sequence[int] = (1, 2, 3, 4),
    halo_model: str = "postal",
    box: int = 200,
) -> xr.Dataset:
    """The study's dataset: :func:`cg_iteration` with its provenance.

    Parameters
    ----------
    platforms : sequence of str
        Platforms of the poster (``data/platforms``).
    nodes : sequence of int
        Node counts (poster Figures 2 and 3: 1 to 4).
    halo_model : str
        Point-to-point model of the halo exchange (002 §1.2: latency-bandwidth, ``"postal"``).
    box : int
        MiniFE elements per rank and dimension (000 §4.2: 200).

    Returns
    -------
    xarray.Dataset
        The variables of :func:`cg_iteration` (times in s) with the global
        attributes of :func:`perfmod.core.io.provenance_attrs`.
    """
    ds = cg_iteration(platforms, nodes, halo_model, box)
    return annotate(ds, study=STUDY, source=SOURCE,
                    parameters=dict(platforms=platforms, nodes=nodes, halo_model=halo_model, box=box))


def figures(ds: xr.Dataset) -> dict[str, plt.Figure]:
    """The study's figures, drawn from the dataset of :func:`run` alone.

    Returns
    -------
    dict of str to matplotlib.figure.Figure
        ``cg_iteration``: :func:`plot_cg_iteration`.
    """
    return {"cg_iteration": plot_cg_iteration(ds)}


def plot_cg_iteration(ds: xr.Dataset) -> plt.Figure:
    """Counterpart of the poster's Figures 2 and 3: MPI times (left) and iteration time (right)."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    for plat in ds["platform"].values:
        d = ds.sel(platform=plat)
        a.plot(d["nodes"], d["t_allreduce"] * 1e6, marker="o", label=f"{plat} allreduce")
        a.plot(d["nodes"], d["t_halo"] * 1e6, marker="s", label=f"{plat} halo")
        b.plot(d["nodes"], d["t_iter_predicted"] * 1e6, marker="o", label=f"{plat} iteration")
    a.set_ylabel("MPI time per iteration (us)")
    b.set_ylabel("iteration time (us)")
    for ax in (a, b):
        ax.set_xlabel("nodes")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
