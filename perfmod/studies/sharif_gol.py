"""Paper 003's Game of Life study transposed to this machine (§V-A, V-B, Figure 2).

Runs of the GOL proxy (:mod:`perfmod.measure.proxies.gol`) on some case sizes and
rank counts fit the BSP parameters (:func:`perfmod.models.bsp.fit_bsp`); the fitted
model predicts held-out cases, and the dataset pairs measured and predicted
compute, communication, other and total time.

Halo cells per process: two rows of ``nx`` cells when P > 1, none on one
rank (nothing is exchanged).  Runs with more ranks than cores are marked
``oversubscribed``.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence

import numpy as np
import xarray as xr
from tqdm.auto import tqdm

from perfmod.measure.runner import run_mpi
from perfmod.models.bsp import BSPFit, fit_bsp

__all__ = ["halo_cells", "measure_gol", "fit_gol", "predict_gol"]

QUANTITIES = ("t_w", "t_c", "t_o", "total_time")
LONG = {"t_w": "compute time (T_w)", "t_c": "communication time (T_c)", "t_o": "other time (T_o)",
        "total_time": "total time (T_t)"}


def halo_cells(nx: int, nprocs: int) -> int:
    """Halo cells a rank exchanges per generation: two rows of ``nx`` cells, none on one rank."""
    return 2 * nx if nprocs > 1 else 0


def measure_gol(cases: Sequence[Sequence[int]], nprocs: Sequence[int], reps: int = 3,
                progress: bool = True, seed: int = 0) -> xr.Dataset:
    """Run the GOL proxy for every (case, nprocs, rep); ``cases`` are ``(ny, nx, generations)``."""
    cases = [tuple(int(v) for v in c) for c in cases]
    for c in cases:
        if len(c) != 3 or min(c) < 1:
            raise ValueError(f"a case is (ny, nx, generations) with positive entries, got {c}")
    shape = (len(cases), len(nprocs), reps)
    data = {q: np.full(shape, np.nan) for q in QUANTITIES}
    todo = [(i, j, r) for i in range(len(cases)) for j in range(len(nprocs)) for r in range(reps)]
    for i, j, r in tqdm(todo, desc="GOL runs", disable=not progress):
        ny, nx, gens = cases[i]
        res = run_mpi("perfmod.measure.proxies.gol", int(nprocs[j]),
                      ["--ny", ny, "--nx", nx, "--generations", gens, "--seed", seed + r])
        for q in QUANTITIES:
            data[q][i, j, r] = res[q]
    ny, nx, gens = (np.array([c[k] for c in cases]) for k in range(3))
    p = np.asarray(nprocs)
    ncores = os.cpu_count() or 1
    ds = xr.Dataset(
        {f"{q}_measured": (("case", "nprocs", "rep"), data[q], {"units": "s", "long_name": f"measured {LONG[q]}"})
         for q in QUANTITIES},
        coords={
            "case": np.arange(len(cases)), "nprocs": p, "rep": np.arange(reps),
            "ny": ("case", ny, {"units": "1", "long_name": "grid rows"}),
            "nx": ("case", nx, {"units": "1", "long_name": "grid columns"}),
            "generations": ("case", gens, {"units": "1", "long_name": "generations (I)"}),
            "cells": ("case", ny * nx, {"units": "1", "long_name": "cells (C)"}),
            "oversubscribed": ("nprocs", p > ncores, {"units": "1", "long_name": "more ranks than cores"}),
        },
    )
    ds.attrs["measured_utc"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return ds


def _flat(ds: xr.Dataset) -> dict[str, np.ndarray]:
    # the median over repetitions: a VM's occasional stalls should not move the fit
    m = ds.median("rep")
    c, p = xr.broadcast(m.cells, m.nprocs)
    gens, nx = xr.broadcast(m.generations, m.nprocs)[0], xr.broadcast(m.nx, m.nprocs)[0]
    h = xr.where(p > 1, 2 * nx, 0)
    return {"C": c.values.ravel(), "P": p.values.ravel(), "I": gens.values.ravel(), "H": h.values.ravel(),
            **{q: m[f"{q}_measured"].values.ravel() for q in ("t_w", "t_c", "t_o")}}


def fit_gol(train: xr.Dataset, nonneg: bool = False, include_oversubscribed: bool = False) -> BSPFit:
    """Fit the BSP model to the median over repetitions of each training run.

    Oversubscribed runs (more ranks than cores) are left out by default: time
    slicing puts the waiting of descheduled ranks into the communication time,
    which the model (dedicated processors, §II-A) does not describe.
    """
    if not include_oversubscribed:
        train = train.sel(nprocs=~train.oversubscribed.values)
    f = _flat(train)
    return fit_bsp(f["C"], f["P"], f["I"], f["H"], f["t_w"], f["t_c"], f["t_o"], nonneg=nonneg)


def predict_gol(fit: BSPFit, test: xr.Dataset, level: float = 0.95) -> xr.Dataset:
    """Add ``<q>_predicted``, ``<q>_lower`` and ``<q>_upper`` (prediction interval) beside the measured times."""
    f = _flat(test)
    pred = fit.predict({k: f[k] for k in ("C", "P", "I", "H")}, interval="prediction", level=level)
    shape = (test.sizes["case"], test.sizes["nprocs"])
    out = test.copy()
    for q, key in (("t_w", "t_w"), ("t_c", "t_c"), ("t_o", "t_o"), ("total_time", "t_t")):
        part = pred.sel(component=key)
        for suffix in ("predicted", "lower", "upper"):
            attrs = {k: v for k, v in part[suffix].attrs.items() if k in ("interval", "level")}
            long_name = (f"predicted {LONG[q]}" if suffix == "predicted"
                         else f"{suffix} bound of the {level:.0%} prediction interval of {LONG[q]}")
            out[f"{q}_{suffix}"] = (("case", "nprocs"), part[suffix].values.reshape(shape),
                                    {"units": "s", "long_name": long_name, **attrs})
    for q in ("t_w", "t_c", "total_time"):
        med = out[f"{q}_measured"].median("rep")
        out[f"{q}_error"] = ((out[f"{q}_predicted"] - med) / med).assign_attrs(
            units="1", long_name=f"relative error of {LONG[q]}: (predicted - median measured) / median measured")
    return out
