"""Paper 004's skeleton study on this machine: region models, skeleton accuracy and speed, replay at scale.

Paper: Anger et al. (paper 004) §V (instrument, learn,
skeletonize), §VI (Figures 6-9).  For each proxy (HPCCG-like CG, MiniMD-like
Lennard-Jones, and on request the LULESH-like hydro of the Sedov kernels):

1. the native program runs in measure mode on training and held-out sizes
   (held-out sizes inside and beyond the training range), on 1 and 2 ranks,
   recording its region calls (:func:`~.anger_skeleton_steps.measure_native`);
2. one model per region and method (``eiger``: Eiger mode; ``perfmod``:
   cross-validated perfmod mode; ``loop``: SST/macro's loop model; ``mean``:
   SMPI's constant) is fitted on the training sizes (Figure 6 counterpart);
3. the skeleton (model mode) of every size runs as 1 and 2 virtual ranks and
   is replayed on ``platform``: the predicted whole-application time beside
   the measured one (Figure 8), and the skeleton's speed (Figure 9);
4. Eiger's threshold is swept on HPCCG: terms and skeleton error per
   threshold, beside perfmod mode's cross-validated choice (Figure 7);
5. the perfmod-mode skeleton is replayed at 64-1,024 virtual ranks (weak
   scaling) with the models' 95 % confidence bounds.

The native runs go in one seeded interleaved order, and each carries the
interference probe's verdict (:mod:`perfmod.measure.interference`, through
:func:`perfmod.measure.runner.run_mpi`): ``interfered`` over (app, size,
nprocs, rep), kept for the record.  Measured times are the best of the clean
repetitions (load on a shared machine only adds time), NaN where no
repetition was clean (listed in ``clean_runs_missing``); the region models
are fitted on the calls of clean training runs only, and an application
whose regions have clean calls at fewer than
:data:`~.anger_skeleton_steps.MIN_CLEAN_SIZES` training sizes is not fitted
(``fit_status`` says so, its predictions are NaN).
"""

from __future__ import annotations

import contextlib
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from tqdm.auto import tqdm

import perfmod.campaign as campaign
from perfmod.core.paperdata import read_table
from perfmod.measure.bench.cachesize import MiB, cache_shared, effective_llc, probe_cache, probe_sizes
from perfmod.measure.regions.skeleton import Skeleton
from perfmod.measure.validity import clean_reduce
from perfmod.models.compute import BandwidthCurve, ComputeModelError, ExtrapolationWarning
from perfmod.models.compute.extrap_runner import ExtrapModeler, extrap_python
from perfmod.studies.anger_extrap import extrap_region_predictions, region_error_variables
from perfmod.studies.anger_skeleton_steps import (
    CONTENTION,
    METHODS,
    MIN_CLEAN_SIZES,
    REPETITION_SPREAD,
    app_spec,
    clean_runs,
    clean_training_frames,
    fit_region_models,
    measure_native,
    scale_out,
    skeleton_runtime,
    training_frame,
)

__all__ = ["CACHE_PROBE_BYTES", "run", "figures", "summary", "slow_repetitions_note", "training_range_masks",
           "headline", "native_runs", "measured_runtimes", "STUDY"]

STUDY = "anger_skeletons"

CACHE_PROBE_BYTES = probe_sizes(256 * MiB, 8 * MiB, steps_per_octave=3)
"""Working sets of the study's cache probe: 16 from 8 to 256 MiB, across the last-level cache this machine's
process gets (32-64 MiB measured on the development VM, whose /sys reports 300 MiB; the knee is sharp, so
the steps are a third of an octave)."""
_SOURCE = ("measurement: HPCCG-, MiniMD- and LULESH-like proxies (perfmod.measure.proxies) on this machine, their "
           "skeletons (perfmod.measure.regions.skeleton) replayed with perfmod.replay; method of paper 004 §V-§VI")


def run(apps: Sequence[str] = ("hpccg", "minimd"),
        hpccg_train: Sequence[int] = (12, 16, 20, 24, 32, 40), hpccg_test: Sequence[int] = (18, 28, 48, 56),
        minimd_train: Sequence[int] = (4, 5, 6, 8, 9), minimd_test: Sequence[int] = (7, 11, 12),
        lulesh_train: Sequence[int] = (8, 10, 12, 16, 20), lulesh_test: Sequence[int] = (14, 24, 28),
        lulesh_iterations: int = 20, lulesh_scale_size: int = 8,
        hpccg_iterations: int = 20, minimd_steps: int = 20, nprocs: Sequence[int] = (1, 2), reps: int = 2,
        skeleton_reps: int = 2, eiger_threshold: float = 1e-3,
        thresholds: Sequence[float] = (0.0, 1e-5, 1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.3),
        scale_nprocs: Sequence[int] = (64, 256, 1024), hpccg_scale_size: int = 32, minimd_scale_size: int = 6,
        platform: str = "summit", comm_model: str = "kmodel", speedup_method: str = "eiger", seed: int = 0,
        cache_probe: bool = True, raw_out: str = "", progress: bool = True) -> xr.Dataset:
    """Run the study and return its dataset (see the module docstring).

    Parameters
    ----------
    apps : sequence of str
        Proxies: ``hpccg``, ``minimd``, ``lulesh`` (the LULESH-like proxy is not in the default: the
        ``make all`` time budget).
    hpccg_train, hpccg_test : sequence of int
        HPCCG local block edges (``n^3`` rows per rank) to fit on and to hold out.
    minimd_train, minimd_test : sequence of int
        MiniMD box edges in FCC cells (``4 size^3`` atoms) to fit on and to hold out.
    lulesh_train, lulesh_test : sequence of int
        LULESH-like mesh edges in elements (``size^3`` elements, split over the ranks) to fit on and to hold out.
    lulesh_iterations : int
        LULESH-like time steps per run.
    hpccg_iterations, minimd_steps : int
        CG iterations and MD time steps per run.
    nprocs : sequence of int
        Rank counts of the measured runs and of the validated skeletons.
    reps : int
        Repetitions of each native run (the best clean one is kept).
    skeleton_reps : int
        Repetitions of each skeleton run.
    eiger_threshold : float
        Eiger's adjusted-R^2 threshold for the ``eiger`` method.
    thresholds : sequence of float
        Eiger thresholds swept on HPCCG (Figure 7).
    scale_nprocs : sequence of int
        Virtual rank counts of the weak-scaling replays.
    hpccg_scale_size, minimd_scale_size, lulesh_scale_size : int
        Per-rank problem of the weak-scaling replays.
    platform : str
        Platform the skeletons are replayed on (:func:`perfmod.machine.platforms.load`).
    comm_model : str
        Communication model of the replay (the published platforms other than Summit lack some modes, paper
        000 Tables 2-3; Summit places 6 ranks per node, one per GPU).
    speedup_method : str
        Method whose skeleton gives ``skeleton_speedup``.
    seed : int
        Seed of the native runs' interleaved order.
    cache_probe : bool
        Measure the machine's bandwidth over working sets (:func:`perfmod.measure.bench.cachesize.probe_cache`
        over :data:`CACHE_PROBE_BYTES`, best of 4 sweeps, about 5 s; then again in as many processes at once
        as the largest rank count, :func:`perfmod.measure.bench.cachesize.cache_shared`, recorded)
        before the native runs; perfmod mode fits the HPCCG regions on their calls with the memory time past
        the curve's knee taken out and puts it back when it predicts
        (:func:`perfmod.models.compute.fit_past_the_cache`, the ranks of a run sharing the cache).
        False: no probe, and perfmod mode keeps its plain fits.
    raw_out : str
        Directory for the raw files: the native runs (netCDF) and the region stores (SQLite); empty: the native
        runs go to ``data/raw/<host>/`` and the region stores to a temporary directory.
    progress : bool
        Progress bars.
    """
    train = {"hpccg": list(hpccg_train), "minimd": list(minimd_train), "lulesh": list(lulesh_train)}
    test = {"hpccg": list(hpccg_test), "minimd": list(minimd_test), "lulesh": list(lulesh_test)}
    iters = {"hpccg": hpccg_iterations, "minimd": minimd_steps, "lulesh": lulesh_iterations}
    scale_size = {"hpccg": hpccg_scale_size, "minimd": minimd_scale_size, "lulesh": lulesh_scale_size}
    apps = list(apps)
    for a in apps:
        overlap = set(train[a]) & set(test[a])
        if overlap:
            raise ValueError(f"{a}: sizes {sorted(overlap)} are both training and held-out")
        if not train[a] or not test[a]:
            raise ValueError(f"{a}: give training and held-out sizes")
        if len(set(train[a])) < MIN_CLEAN_SIZES:
            raise ValueError(f"{a}: give at least {MIN_CLEAN_SIZES} training sizes, got {sorted(set(train[a]))}")
    if speedup_method not in METHODS:
        raise ValueError(f"speedup_method must be one of {METHODS}, not {speedup_method!r}")
    params = dict(apps=apps, train=train, test=test, iterations=iters, nprocs=list(nprocs), reps=reps,
                  skeleton_reps=skeleton_reps, eiger_threshold=eiger_threshold, thresholds=list(thresholds),
                  scale_nprocs=list(scale_nprocs), scale_size=scale_size, platform=platform, comm_model=comm_model,
                  speedup_method=speedup_method, seed=seed, cache_probe=cache_probe)
    nsize = max(len(train[a]) + len(test[a]) for a in apps)
    tmp = tempfile.TemporaryDirectory(prefix="anger_skeletons-") if not raw_out else None
    raw = Path(raw_out) if raw_out else Path(tmp.name)
    raw.mkdir(parents=True, exist_ok=True)
    bar = tqdm(total=len(apps) * 5, desc="anger_skeletons", disable=not progress)
    probe = probe_cache(CACHE_PROBE_BYTES, reps=1, sweeps=4) if cache_probe else None
    curve = BandwidthCurve.from_probe(probe) if probe is not None else None
    together, shared = None, True
    if probe is not None and max(nprocs) > 1:  # do the ranks of a run share the cache? (the knee per process)
        together = probe_cache(CACHE_PROBE_BYTES, reps=1, sweeps=4, processes=max(nprocs))
        try:
            shared = cache_shared(probe, together)
        except ValueError:  # too few working sets above the private caches to find a knee: assume shared
            shared = True
    # with the cache's knee, perfmod mode's fit takes out the memory time of the calls past it, and a run's
    # ranks share the cache (what the 2-rank calls show: study note); without, the probe's verdict decides
    knee = 0
    if probe is not None:
        try:
            knee = effective_llc(probe)
        except ValueError:
            knee = 0
    per_app = []
    try:
        for a in apps:
            per_app.append(_one_app(a, sorted(train[a] + test[a]), set(test[a]), train[a], iters[a], list(nprocs),
                                    reps, skeleton_reps, eiger_threshold, list(thresholds), list(scale_nprocs),
                                    scale_size[a], platform, comm_model, speedup_method, seed, nsize, raw, bar,
                                    params, raw_out, curve, shared or knee > 0, knee))
    finally:
        bar.close()
        if tmp is not None:
            tmp.cleanup()
    ds = xr.concat([p.app for p in per_app], dim="app", data_vars="all", coords="minimal", compat="override",
                   join="outer")
    ds["interfered"] = ds["interfered"].fillna(False).astype(bool).assign_attrs(ds["interfered"].attrs)
    regions = xr.concat([p.regions for p in per_app], dim="region")
    ds = xr.merge([ds, regions])
    ds = ds.assign(region_error_variables(ds, *training_range_masks(ds)))
    if "hpccg" in apps:
        ds = xr.merge([ds, per_app[apps.index("hpccg")].sweep])
    if probe is not None:
        ds = xr.merge([ds, probe.drop_attrs(deep=False)])
        ds.attrs["effective_llc_bytes"] = knee
        ds.attrs["sysfs_llc_bytes"] = int(probe.attrs.get("sysfs_llc_bytes", 0))
        if together is not None:
            ds["cache_probe_bandwidth_together"] = together.cache_probe_bandwidth.assign_attrs(
                units="B/s", long_name=f"triad bandwidth per process, {max(nprocs)} processes probing at once")
            ds.attrs["cache_shared_by_ranks"] = int(shared)
    failed = [p.fit_status for p in per_app if p.fit_status.startswith("not fitted")]
    if failed:
        fitted = [a for a, p in zip(apps, per_app, strict=True) if not p.fit_status.startswith("not fitted")]
        status = "not fitted: " + "; ".join(f.removeprefix("not fitted: ") for f in failed) + (
            f" ({', '.join(fitted)} fitted: its predictions are in the dataset, left out of the headline)"
            if fitted else "")
    else:
        status = f"fitted on the clean training runs ({', '.join(apps)})"
    runs = pd.concat([p.runs for p in per_app], ignore_index=True)
    campaign.record_drops(ds, xr.DataArray(runs["interfered"].to_numpy(bool), dims="run"),
                          xr.DataArray(runs["oversubscribed"].to_numpy(bool), dims="run"),
                          [m for p in per_app for m in p.missing], "native runs")
    ds.attrs.update(speedup_method=speedup_method, platform=platform, comm_model=comm_model, fit_status=status)
    return campaign.provenance(ds, STUDY, _SOURCE, params, [f for p in per_app for f in p.raw_files])


@dataclass
class _AppResult:
    app: xr.Dataset
    regions: xr.Dataset
    sweep: xr.Dataset | None
    runs: pd.DataFrame
    missing: list[str]
    fit_status: str
    raw_files: list[str]


def _one_app(app: str, sizes: list[int], held: set[int], train_sizes: list[int], iterations: int,
             nprocs: list[int], reps: int, skeleton_reps: int, eiger_threshold: float, thresholds: list[float],
             scale_nprocs: list[int], scale_size: int, platform: str, comm_model: str, speedup_method: str,
             seed: int, nsize: int, raw: Path, bar: Any, params: dict, raw_out: str,
             curve: BandwidthCurve | None = None, shared: bool = True, knee: int = 0) -> _AppResult:
    spec = app_spec(app, iterations)
    store = raw / f"{app}-regions.sqlite"
    runs = measure_native(spec, sizes, nprocs, reps, store, progress=lambda s: bar.set_postfix_str(s), seed=seed)
    native = native_runs(runs, app, sizes, nprocs, nsize, reps)
    raw_files = [str(campaign.save_raw(native, STUDY, f"{app}-native", params, _SOURCE, raw_out))]
    if raw_out:
        raw_files.append(str(store))
    bar.update()
    frames, fit_status = clean_training_frames(store, spec, train_sizes, runs)
    models: dict[str, dict] | None = None
    if not fit_status.startswith("not fitted"):
        try:
            models = {m: fit_region_models(frames, spec, m, eiger_threshold, curve, shared, knee) for m in METHODS}
        except ComputeModelError as err:  # too few clean points for a method: say so, report no figure
            fit_status = f"not fitted: {app}: {err}"
    bar.update()
    shape = (nsize, len(nprocs), len(METHODS))
    pred = np.full(shape, np.nan)
    wall = np.full((nsize, len(METHODS)), np.nan)
    replay_wall = np.full((nsize, len(METHODS)), np.nan)
    clipped = np.full(shape, np.nan)
    if models is not None:
        for i, s in enumerate(sizes):
            for j, p in enumerate(nprocs):
                for k, m in enumerate(METHODS):
                    res = skeleton_runtime(spec, s, p, models[m], platform, skeleton_reps, comm_model)
                    pred[i, j, k] = res.runtime
                    clipped[i, j, k] = float(res.stats["clipped"].sum()) if "clipped" in res.stats else 0.0
                    if p == 1:
                        wall[i, k], replay_wall[i, k] = res.wall, res.replay_wall
    bar.update()
    app_ds, missing = _app_dataset(app, spec, native, sizes, held, nprocs, pred, wall, replay_wall, nsize, models,
                                   frames, speedup_method)
    dims = app_ds["runtime_predicted"].dims
    app_ds["skeleton_clipped"] = (dims, clipped.reshape(app_ds["runtime_predicted"].shape), {
        "units": "1", "long_name": "model evaluations of the skeleton run whose negative prediction was clipped to 0 "
                                   "(each warned; 0: none)"})
    if models is not None:
        scaled = scale_out(spec, scale_size, scale_nprocs, models["perfmod"], platform, comm_model=comm_model,
                           ranks_per_node=max(nprocs))
    else:
        scaled = pd.DataFrame({c: np.full(len(scale_nprocs), np.nan) for c in
                               ("predicted", "lower", "upper", "skeleton_wall", "replay_wall", "events")})
    for q in ("predicted", "lower", "upper"):
        app_ds[f"scaled_runtime_{q}"] = (("app", "scale_nprocs"), scaled[q].to_numpy()[None], {
            "units": "s", "long_name": f"{q} runtime of the weak-scaling skeleton replayed on {platform}"
            + (" (95 % confidence bounds of the perfmod-mode models)" if q != "predicted" else ""),
            "interval": "confidence", "level": 0.95})
    app_ds["scaled_skeleton_wall"] = (("app", "scale_nprocs"), scaled["skeleton_wall"].to_numpy()[None],
                                      {"units": "s", "long_name": "real time running every virtual rank"})
    app_ds["scaled_replay_wall"] = (("app", "scale_nprocs"), scaled["replay_wall"].to_numpy()[None],
                                    {"units": "s", "long_name": "real time of the three replays"})
    app_ds["scaled_events"] = (("app", "scale_nprocs"), scaled["events"].to_numpy(float)[None],
                               {"units": "1", "long_name": "events in the trace"})
    app_ds = app_ds.assign_coords(scale_nprocs=np.asarray(scale_nprocs))
    app_ds["scale_size_per_rank"] = ("app", [scale_size], {"units": "1",
                                                            "long_name": f"per-rank size: {spec.size_meaning}"})
    bar.update()
    with ExtrapModeler() if models is not None and extrap_python() else contextlib.nullcontext() as extrap:
        regions = _region_dataset(app, spec, store, sizes, nsize, models, frames, clean_runs(runs), extrap)
    sweep = _threshold_sweep(spec, frames, models, app_ds, sizes, held, eiger_threshold, thresholds,
                             platform, comm_model) if app == "hpccg" else None
    bar.update()
    return _AppResult(app_ds, regions, sweep, runs, missing, fit_status, raw_files)


_NATIVE_META = {
    "native_time": ("s", "native runtime of each repetition (timed section, slowest rank; interfered runs kept "
                         "for the record)"),
    "native_cpu_time": ("s", "CPU time of each repetition's timed section (largest over ranks)"),
    "cpu_fraction": ("1", "lowest rank's CPU time / wall time of the run (recorded; the probe decides interfered)"),
    "run_index": ("1", "position of the run in the interleaved run order (-1: not run)"),
}


def native_runs(runs: pd.DataFrame, app: str, sizes: Sequence[int], nprocs: Sequence[int], nsize: int,
                reps: int) -> xr.Dataset:
    """The native runs of one app over (size, nprocs, rep), with their probe flags.

    Parameters
    ----------
    runs : DataFrame
        Rows of :func:`~.anger_skeleton_steps.measure_native` (``size``,
        ``nprocs``, ``rep``, ``order``, ``time``, ``cpu_time``,
        ``cpu_fraction``, ``oversubscribed`` and the flag fields).
    app : str
        The proxy.
    sizes, nprocs : sequence of int
        The design (``sizes`` sorted; index ``i`` of the ``size`` dimension is ``sizes[i]``).
    nsize : int
        Length of the ``size`` dimension (the largest design of the study's apps; the rest is padding).
    reps : int
        Repetitions.

    Returns
    -------
    xarray.Dataset
        ``native_time``, ``native_cpu_time``, ``cpu_fraction``, ``run_index`` and the flags of
        :data:`perfmod.campaign.records.FLAG_FIELDS` over ``(size, nprocs, rep)``, the
        coordinates ``problem_size`` (size) and ``oversubscribed`` (nprocs), attribute ``app``.
    """
    sizes, nprocs = [int(s) for s in sizes], [int(p) for p in nprocs]
    shape = (nsize, len(nprocs), reps)
    vals = {k: np.full(shape, np.nan) for k in _NATIVE_META}
    vals["run_index"] = np.full(shape, -1.0)
    flags = campaign.new_flags(shape)
    over = np.zeros(len(nprocs), bool)
    for row in runs.itertuples(index=False):
        idx = (sizes.index(int(row.size)), nprocs.index(int(row.nprocs)), int(row.rep))
        vals["native_time"][idx], vals["native_cpu_time"][idx] = row.time, row.cpu_time
        vals["cpu_fraction"][idx] = row.cpu_fraction
        vals["run_index"][idx] = getattr(row, "order", -1)
        for f in campaign.FLAG_FIELDS:
            flags[f][idx] = getattr(row, f)
        over[idx[1]] |= bool(getattr(row, "oversubscribed", False))
    size_vals = np.full(nsize, np.nan)
    size_vals[:len(sizes)] = sizes
    dims = ("size", "nprocs", "rep")
    data = {k: (dims, vals[k], {"units": u, "long_name": ln}) for k, (u, ln) in _NATIVE_META.items()}
    return xr.Dataset(data | campaign.flag_variables(flags, dims),
                      coords={"size": np.arange(nsize), "nprocs": np.asarray(nprocs), "rep": np.arange(reps),
                              "problem_size": ("size", size_vals, {"units": "1", "long_name": "problem size"}),
                              "oversubscribed": ("nprocs", over, {"units": "1", "long_name": "more ranks than "
                                                                  "cores"})},
                      attrs={"app": app})


def measured_runtimes(native: xr.Dataset) -> tuple[xr.Dataset, list[str]]:
    """Best clean repetition of each (size, nprocs): runtime and CPU time, NaN where no repetition was clean.

    Parameters
    ----------
    native : xarray.Dataset
        :func:`native_runs` of one app.

    Returns
    -------
    (xarray.Dataset, list of str)
        ``runtime`` and ``cpu_time`` (s) and ``clean`` (a repetition ran clean)
        over (size, nprocs); oversubscribed rank counts are NaN (not scored:
        the skeleton runs one rank per core); and the configurations of the
        design with no clean run, as ``"app=hpccg, size=48, nprocs=2"``.
    """
    real = native.problem_size.notnull().values
    bad = native.interfered | native.oversubscribed
    sub = native.isel(size=np.flatnonzero(real)).assign_coords(size=native.problem_size.values[real].astype(int))
    _, missing = clean_reduce(sub.native_time, sub.interfered, "rep", "min")
    out = xr.Dataset({"runtime": clean_reduce(native.native_time, bad, "rep", "min")[0],
                      "cpu_time": clean_reduce(native.native_cpu_time, bad, "rep", "min")[0]})
    out["clean"] = out.runtime.notnull()
    return out, [f"app={native.attrs.get('app', '')}, {m}" for m in missing]


def _app_dataset(app: str, spec: Any, native: xr.Dataset, sizes: list[int], held: set[int], nprocs: list[int],
                 pred: np.ndarray, wall: np.ndarray, replay_wall: np.ndarray, nsize: int, models: dict | None,
                 frames: dict, speedup_method: str) -> tuple[xr.Dataset, list[str]]:
    best_ds, missing = measured_runtimes(native)
    best, best_cpu = best_ds.runtime.values, best_ds.cpu_time.values
    held_out = np.zeros(nsize, bool)
    held_out[:len(sizes)] = [s in held for s in sizes]
    meas = np.broadcast_to(best[:, :, None], pred.shape)
    meas_cpu = np.broadcast_to(best_cpu[:, :, None], pred.shape)
    k = METHODS.index(speedup_method)
    eval_cost = {m: _eval_cost(models[m], frames) if models else np.nan for m in METHODS}
    dims3 = ("size", "nprocs", "method")
    ds = xr.Dataset(
        {
            "runtime_measured": (dims3, meas.copy(), {"units": "s", "long_name": "native runtime (timed section, "
                                 "slowest rank; best clean repetition, NaN where none was clean)"}),
            "runtime_predicted": (dims3, pred, {"units": "s", "long_name": "skeleton runtime: model-mode run "
                                  "replayed (timed section); NaN where not fitted"}),
            "runtime_error": (dims3, (pred - meas) / meas, {"units": "1", "long_name": "relative error of the "
                              "skeleton runtime: (predicted - measured) / measured"}),
            "runtime_cpu_measured": (dims3, meas_cpu.copy(), {"units": "s", "long_name": "CPU time of the native "
                                     "timed section (largest over ranks; best clean repetition): a load-robust "
                                     "stand-in for the undisturbed runtime, not a wall time"}),
            "runtime_cpu_error": (dims3, (pred - meas_cpu) / meas_cpu, {"units": "1", "long_name": "relative error "
                                  "of the skeleton runtime against the native CPU time"}),
            "measured_clean": (("size", "nprocs"), best_ds.clean.values, {"units": "1", "long_name": "a "
                               "repetition ran without interference"}),
            "held_out": ("size", held_out, {"units": "1", "long_name": "size not used for training"}),
            "skeleton_wall": (("size", "method"), wall, {"units": "s", "long_name": "real time of the skeleton's "
                              "timed section on 1 rank (model evaluation included)"}),
            "replay_wall": (("size", "method"), replay_wall, {"units": "s", "long_name": "real time of replaying "
                            "the 1-rank skeleton trace"}),
            "skeleton_speedup": ("size", best[:, nprocs.index(1)] / wall[:, k] if 1 in nprocs
                                 else np.full(nsize, np.nan),
                                 {"units": "1", "long_name": f"native runtime (best clean repetition) / skeleton "
                                  f"wall time on 1 rank ({speedup_method} models)"}),
            "model_eval_time": ("method", np.array([eval_cost[m] for m in METHODS]),
                                {"units": "s", "long_name": "real time of one uncached model evaluation "
                                 "(mean over the regions' training points)"}),
            "model_terms": ("method", np.array([_terms(models[m]) if models else np.nan for m in METHODS]),
                            {"units": "1", "long_name": "mean number of terms per region model"}),
        },
        coords={"method": list(METHODS)},
    )
    ds = xr.merge([native.drop_vars("problem_size").reset_coords("oversubscribed"), ds])
    ds["oversubscribed"] = ds["oversubscribed"].assign_attrs(units="1", long_name="more ranks than cores")
    ds["problem_size"] = ("size", native.problem_size.values, {
        "units": "1", "long_name": "problem size (HPCCG: local block edge n, n^3 rows per rank; MiniMD: FCC "
                                   "cells per box edge, 4 size^3 atoms; LULESH: elements per mesh edge, size^3 "
                                   "elements)"})
    ds.attrs = {}
    return ds.expand_dims(app=[app]), missing


def _terms(models: dict) -> float:
    return float(np.mean([sum(len(c.terms) for c in m.clusters) for m in models.values()]))


def _eval_cost(models: dict, frames: dict) -> float:
    import time

    sk = Skeleton("model", models, cache=False, interval=None)
    n, t0 = 0, time.perf_counter()
    for region, frame in frames.items():
        for _, row in frame.drop_duplicates(subset=[c for c in frame.columns if c not in ("time", "size", "rep")]
                                            ).head(5).iterrows():
            sk.predict(region, row.to_dict())
            n += 1
    return (time.perf_counter() - t0) / max(n, 1)


def slow_repetitions_note(ds: xr.Dataset) -> str:
    """What the training left out as disturbed repetitions (``region_slow_repetitions``), as a Markdown sentence."""
    if "region_slow_repetitions" not in ds:
        return "No count of slow repetitions in this dataset."
    n = ds.region_slow_repetitions.fillna(0).astype(int)
    left = [f"{r} {k}" for r, k in zip(ds.region.values.tolist(), n.values.tolist(), strict=True) if k]
    head = (f"Training repetitions left out as disturbed (median call time of a region at a point more than "
            f"{REPETITION_SPREAD:g} x the fastest repetition's there): ")
    return head + (", ".join(left) + f"; {int(n.sum())} in all." if left else "none.")


def _region_dataset(app: str, spec: Any, store: Path, sizes: list[int], nsize: int, models: dict | None,
                    frames: dict, clean: pd.DataFrame, extrap: ExtrapModeler | None = None) -> xr.Dataset:
    """Figure 6 data: per region, median call time per size (1 rank, clean runs) and each method's fit; with
    ``extrap``, Extra-P's beside them (:mod:`perfmod.studies.anger_extrap`).

    ``models`` None (not fitted): the predictions and fit statistics are NaN.
    """
    names = [f"{app}.{r}" for r in spec.regions]
    meas = np.full((len(names), nsize), np.nan)
    predicted = np.full((len(names), nsize, len(METHODS)), np.nan)
    extrapolated = np.zeros((len(names), nsize, len(METHODS)), bool)
    unsupported = np.zeros((len(names), nsize, len(METHODS)), bool)
    r2 = np.full((len(names), len(METHODS)), np.nan)
    err = np.full_like(r2, np.nan)
    slow = np.array([frames[r].attrs.get("slow_repetitions", 0) for r in spec.regions], dtype=float)
    by_extrap = np.full((len(names), nsize), np.nan)
    functions = [""] * len(names)
    for i, region in enumerate(spec.regions):
        allf = training_frame(store, region, spec.regions[region], runs=clean)
        one = allf[allf["nprocs"] == 1]
        points = {}
        for j, s in enumerate(sizes):
            rows = one[one["size"] == s]
            if len(rows):
                meas[i, j] = rows["time"].median()
                if models is None:
                    continue
                point = rows[[*spec.regions[region], CONTENTION]].median().to_frame().T
                points[j] = point.iloc[0]
                for k, m in enumerate(METHODS):
                    model = models[m][region]
                    with warnings.catch_warnings():  # recorded in region_unsupported instead
                        warnings.simplefilter("ignore", ExtrapolationWarning)
                        out = model.predict(point[model.parameters])
                    predicted[i, j, k] = float(out.predicted[0])
                    extrapolated[i, j, k] = bool(out.extrapolated[0])
                    unsupported[i, j, k] = bool(out.unsupported[0])
        fr = frames[region]
        if models is None or fr.empty:
            continue
        if extrap is not None:
            got, functions[i] = extrap_region_predictions(extrap, fr, spec.regions[region], CONTENTION, points)
            for j, v in got.items():
                by_extrap[i, j] = v
        y = fr["time"].to_numpy()
        for k, m in enumerate(METHODS):
            model = models[m][region]
            yhat = model.predict(fr[model.parameters]).predicted.to_numpy()
            r2[i, k] = 1 - np.sum((y - yhat) ** 2) / np.sum((y - y.mean()) ** 2) if np.ptp(y) > 0 else np.nan
            err[i, k] = float(np.mean(np.abs(yhat - y) / y))
    return xr.Dataset(
        {
            "region_time_measured": (("region", "size"), meas, {"units": "s", "long_name": "median time per "
                                     "region call on 1 rank (clean runs only; NaN where none was clean)"}),
            "region_time_predicted": (("region", "size", "method"), predicted, {"units": "s", "long_name":
                                      "model's time per call at the median parameters of that size"}),
            "region_extrapolated": (("region", "size", "method"), extrapolated, {"units": "1", "long_name":
                                    "the size's parameters lie outside the model's training range"}),
            "region_unsupported": (("region", "size", "method"), unsupported, {"units": "1", "long_name":
                                   "prediction the data do not support (at or below 0, or a term of another sign "
                                   "than on the training range)"}),
            "region_r2": (("region", "method"), r2, {"units": "1", "long_name": "R^2 of the fit on the training "
                          "points (median call time per run and parameter point)"}),
            "region_error": (("region", "method"), err, {"units": "1", "long_name": "mean |relative error| of "
                             "the fit on the training points"}),
            "region_time_extrap": (("region", "size"), by_extrap, {"units": "s", "long_name": "Extra-P's time "
                                   "per call (its default modeler on the region's 1-rank training calls; NaN where "
                                   "it did not run)"}),
            "region_extrap_function": ("region", np.array(functions, dtype=str), {"units": "1", "long_name":
                                       "Extra-P's model of the region (empty where it did not run)"}),
            "region_slow_repetitions": ("region", slow, {"units": "1", "long_name": "training points' repetitions "
                                        "left out as disturbed: their median call time more than "
                                        f"{REPETITION_SPREAD:g} x the fastest repetition's"}),
        },
        coords={"region": names, "region_app": ("region", [app] * len(names)), "method": list(METHODS),
                "size": np.arange(nsize)},
    )


def _threshold_sweep(spec: Any, frames: dict, models: dict | None, app_ds: xr.Dataset, sizes: list[int],
                     held: set[int], eiger_threshold: float, thresholds: list[float], platform: str, comm_model: str
                     ) -> xr.Dataset:
    """Figure 7 data: Eiger's threshold vs mean terms and held-out 1-rank skeleton error (HPCCG); NaN if not fitted.

    The error is over the held-out sizes with a clean measurement (NaN when none has one).
    """
    meas = app_ds.runtime_measured.isel(app=0).sel({"nprocs": 1, "method": "eiger"}).values
    idx = [i for i, s in enumerate(sizes) if s in held and np.isfinite(meas[i])]
    terms, error = [], []
    for th in thresholds if models is not None else ():
        mods = fit_region_models(frames, spec, "eiger", th)
        terms.append(_terms(mods))
        errs = [abs(skeleton_runtime(spec, sizes[i], 1, mods, platform, 1, comm_model).runtime / meas[i] - 1)
                for i in idx]
        error.append(float(np.mean(errs)) if errs else np.nan)
    if models is None:
        terms, error = [np.nan] * len(thresholds), [np.nan] * len(thresholds)
    cv_err = app_ds.runtime_error.isel(app=0).sel({"nprocs": 1, "method": "perfmod"}).values[idx]
    return xr.Dataset(
        {
            "threshold_terms": ("threshold", np.asarray(terms), {"units": "1", "long_name": "mean terms per HPCCG "
                                "region model (Eiger mode)"}),
            "threshold_error": ("threshold", np.asarray(error), {"units": "1", "long_name": "mean |relative error| "
                                "of the 1-rank HPCCG skeleton on the held-out sizes with a clean measurement (Eiger "
                                "mode)"}),
            "cv_terms": ((), _terms(models["perfmod"]) if models else np.nan, {"units": "1", "long_name": "mean "
                         "terms per HPCCG region model, perfmod mode (cross-validated stopping)"}),
            "cv_error": ((), float(np.mean(np.abs(cv_err))) if len(cv_err) else np.nan, {
                "units": "1", "long_name": "mean |relative error| of the perfmod-mode 1-rank HPCCG skeleton on the "
                                           "held-out sizes with a clean measurement"}),
        },
        coords={"threshold": np.asarray(thresholds, dtype=float)},
        attrs={"eiger_threshold": eiger_threshold},
    )


def training_range_masks(ds: xr.Dataset) -> tuple[xr.DataArray, xr.DataArray]:
    """Held-out sizes inside and beyond each app's training range, as two boolean masks over (app, size).

    A held-out size between the app's smallest and largest training size is inside (the models
    interpolate); one below or above is beyond (they extrapolate).
    """
    real = ds.problem_size.notnull()
    train = ds.problem_size.where(real & ~ds.held_out)
    lo, hi = train.min("size"), train.max("size")
    beyond = ds.held_out & real & ((ds.problem_size < lo) | (ds.problem_size > hi))
    return ds.held_out & real & ~beyond, beyond


def summary(ds: xr.Dataset) -> pd.DataFrame:
    """Mean absolute runtime error on held-out sizes per app and method, beside the paper's means.

    Rows ``(points, app)``: ``points`` is ``clean`` (the best clean repetition's runtime;
    sizes without a clean repetition are left out), ``clean, inside the training range`` and
    ``clean, beyond the training range`` (the same points split by whether the size lies between
    the app's smallest and largest training size: interpolation or extrapolation), or
    ``clean, vs CPU time`` (against that run's CPU time, which load on the machine inflates much
    less than its wall time); the count of points is in the ``n`` column.  Errors are NaN where
    the models were not fitted.
    """
    inside, beyond = training_range_masks(ds)
    rows = {}
    for label, var, where in (("clean", "runtime_error", ds.held_out),
                              ("clean, inside the training range", "runtime_error", inside),
                              ("clean, beyond the training range", "runtime_error", beyond),
                              ("clean, vs CPU time", "runtime_cpu_error", ds.held_out)):
        mask = where & ds.measured_clean
        sub = np.abs(ds[var]).where(mask)
        for app in [*map(str, ds.app.values), "all"]:
            s = sub if app == "all" else sub.sel(app=app)
            n = int(np.isfinite(s.isel(method=0)).sum())
            rows[(label, app)] = {**{str(m): float(s.sel({"method": m}).mean()) for m in ds.method.values}, "n": n}
    paper = read_table("anger_results")
    sel = paper[paper.quantity == "skeleton_error"].set_index("method")["value"] / 100
    rows[("paper", "all")] = {**{str(m): float(sel.get(m, np.nan)) for m in ds.method.values}, "n": np.nan}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.names = ["points", "app"]
    return table


def headline(ds: xr.Dataset) -> dict[str, xr.DataArray]:
    """The study's headline figures (:mod:`perfmod.campaign.headline`): skeleton error per method, and the speedup.

    The mean absolute relative error of the whole-application skeleton runtime on the
    held-out sizes with a clean measurement, every proxy run, per method (the
    ``("clean", "all")`` row of :func:`summary`; Figure 8: the paper's 6.08 % for
    eiger, 9.17 % for loop), and the mean skeleton speedup over every measured size
    (Figure 9: 12.5); NaN when nothing was fitted; then the run counts.
    """
    row = summary(ds).loc[("clean", "all")]
    figs = {f"skeleton_error_{m}": (row[str(m)], "1", f"mean |relative error| of the skeleton runtime on the "
                                    f"held-out sizes, clean runs, {m} models") for m in ds.method.values}
    speed = ds.skeleton_speedup.values[np.isfinite(ds.skeleton_speedup.values)]
    figs["skeleton_speedup_mean"] = (float(speed.mean()) if speed.size else float("nan"), "1",
                                     f"mean skeleton speedup over the native run, 1 rank "
                                     f"({ds.attrs.get('speedup_method', '')} models)")
    return campaign.headline_figures(ds, figs)


def figures(ds: xr.Dataset) -> dict[str, Any]:
    """Figures 6-9 counterparts and the scale-out replay, with the paper's numbers beside them.

    Figures 7, 9 and the scale-out replay draw model results only: they are left out when nothing was
    fitted (``fit_status``), and Figures 6 and 8 then show the measured half alone.
    """
    from perfmod.viz import skeletons as viz

    paper = read_table("anger_results")
    figs = {"fig6_region_fit": viz.plot_region_fit(ds, paper),
            "fig8_skeleton_error": viz.plot_skeleton_error(ds, paper)}
    if bool(np.isfinite(ds.skeleton_speedup).any()):
        figs["fig9_speedup"] = viz.plot_speedup(ds, paper)
    if bool(np.isfinite(ds.scaled_runtime_predicted).any()):
        figs["scale_out"] = viz.plot_scale_out(ds)
    if "threshold" in ds.dims and bool(np.isfinite(ds.threshold_terms).any()):
        figs["fig7_threshold"] = viz.plot_threshold(ds)
    return figs
