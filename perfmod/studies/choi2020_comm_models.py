"""Study ``choi2020_comm_models`` (notebook ``notebooks/choi2020_comm_models.ipynb``): the study contract.

Paper 000 (Choi et al., ICS 2020 (paper 000) §2.1, §3.1, §3.2, §4.1,
Tables 1-5): the postal and max-rate parameters of Tables 2-4 as model
curves, Table 5 (K-model counts) reproduced from the decompositions, and the
per-iteration communication time of Jacobi2D, MiniFE and MiniMD under the
postal, max-rate and K-models across weak-scaling sizes (the model side of
Figures 5, 7 and 10).

The notebook is named after the study, this module after the notebook; the
computations it assembles live in :mod:`perfmod.studies.papers.choi2020`
(shared with the end-to-end study).  :func:`run` returns the dataset the
notebook writes, :func:`figures` draws from that dataset alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr

from perfmod.core.io import annotate
from perfmod.studies.papers.choi2020 import model_curves, table5_reproduction, weak_scaling_comm
from perfmod.viz.plots import plot_model_curves, plot_weak_scaling

__all__ = ["STUDY", "SOURCE", "MODEL_ORDER", "run", "figures", "message_sizes", "table5_dataset"]

STUDY = "choi2020_comm_models"
"""Study name: the notebook ``notebooks/choi2020_comm_models.ipynb`` and the dataset's ``study`` attribute."""

SOURCE = "000 Tables 2-5 (parameters and K counts); predictions computed by perfmod"
"""The dataset's ``source`` attribute."""

MODEL_ORDER = ("postal", "maxrate", "kmodel")
"""Order (and so colour) of the models in the figures; the dataset's ``model`` coordinate is sorted by name."""

_TABLE5_COLUMNS = ["k_inter_paper", "k_total_paper", "k_paper", "k_inter", "k_total", "k"]


def message_sizes(n_sizes: int, max_bytes: float) -> np.ndarray:
    """Message sizes of the model curves (B): ``n_sizes`` points from 1 B to ``max_bytes``, log-spaced.

    Rounded to whole bytes; duplicates among the small sizes are dropped, so
    fewer than ``n_sizes`` may come back (61 of 64 up to 4 MiB).
    """
    return np.unique(np.geomspace(1, max_bytes, n_sizes).round())


def table5_dataset(table5: pd.DataFrame) -> xr.Dataset:
    """Table 5 (paper and reproduced K counts) as variables ``table5_<column>`` over ``t5_app`` x ``t5_platform``.

    Parameters
    ----------
    table5 : pandas.DataFrame
        :func:`perfmod.studies.papers.choi2020.table5_reproduction`.
    """
    t5 = table5.set_index(["app", "platform"])
    out = xr.Dataset.from_dataframe(t5[_TABLE5_COLUMNS])
    out = out.rename({n: f"table5_{n}" for n in out.data_vars}).rename({"app": "t5_app", "platform": "t5_platform"})
    for name in out.data_vars:
        out[name].attrs = {"units": "1",
                           "long_name": str(name).replace("table5_", "Table 5 ").replace("_paper", " (paper)")}
    return out


def run(
    platforms: Sequence[str] = ("summit", "lassen", "bridges"),
    apps: Sequence[str] = ("jacobi2d", "minife", "minimd"),
    nodes: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256),
    models: Sequence[str] = ("postal", "maxrate", "kmodel"),
    n_sizes: int = 64,
    max_bytes: float = 4 * 2**20,
    progress: bool = True,
) -> xr.Dataset:
    """The study's dataset: model curves, Table 5 and the weak-scaling communication time.

    Parameters
    ----------
    platforms : sequence of str
        Platform names (``data/platforms``).
    apps : sequence of str
        Proxies whose halo exchange is modelled.
    nodes : sequence of int
        Weak-scaling node counts.
    models : sequence of str
        Communication models compared under weak scaling.
    n_sizes : int
        Points of the message-size grid of the model curves (:func:`message_sizes`).
    max_bytes : float
        Largest message of the model curves (B).
    progress : bool
        Show progress bars (not recorded in the ``parameters`` attribute).

    Returns
    -------
    xarray.Dataset
        ``t_msg`` over (``platform``, ``model``, ``mode``, ``msg_bytes``)
        (:func:`~perfmod.studies.papers.choi2020.model_curves`, postal and
        max-rate), ``t_comm_predicted`` with the K counts and ``nprocs`` over
        (``app``, ``platform``, ``nodes``[, ``model``])
        (:func:`~perfmod.studies.papers.choi2020.weak_scaling_comm`) and the
        ``table5_*`` variables (:func:`table5_dataset`), merged (the
        ``model`` coordinate is their union, sorted); times in s;
        provenance attributes.
    """
    curves = model_curves(platforms, message_sizes(n_sizes, max_bytes))
    scaling = weak_scaling_comm(apps, platforms, nodes, models, progress=progress)
    # outer join: the curves have postal and max-rate, the scaling every model of `models`
    ds = xr.merge([curves, scaling, table5_dataset(table5_reproduction())], join="outer")
    return annotate(ds, study=STUDY, source=SOURCE,
                    parameters=dict(platforms=platforms, apps=apps, nodes=nodes, models=models, n_sizes=n_sizes,
                                    max_bytes=max_bytes))


def _scaling_models(ds: xr.Dataset) -> list[str]:
    """The models with a weak-scaling prediction, in :data:`MODEL_ORDER` (others after, by name)."""
    have = [str(m) for m in ds["model"].values if bool(ds["t_comm_predicted"].sel(model=m).notnull().any())]
    rank = {m: i for i, m in enumerate(MODEL_ORDER)}
    return sorted(have, key=lambda m: (rank.get(m, len(rank)), m))


def figures(ds: xr.Dataset) -> dict[str, plt.Figure]:
    """The study's figures, drawn from the dataset of :func:`run` alone.

    Returns
    -------
    dict of str to matplotlib.figure.Figure
        ``model_curves`` (:func:`perfmod.viz.plots.plot_model_curves`: Tables 2-4
        as curves) and ``comm_per_iteration_<app>`` per app
        (:func:`perfmod.viz.plots.plot_weak_scaling`: Figures 5, 7, 10, model side).
    """
    figs = {"model_curves": plot_model_curves(ds[["t_msg"]])}
    scaling = ds[["t_comm_predicted"]].sel(model=_scaling_models(ds))
    for app in ds["app"].values:
        figs[f"comm_per_iteration_{app}"] = plot_weak_scaling(scaling, str(app))
    return figs
