"""Paper 000's calibration procedure (§2.1, §4.1) on this machine: ping-pong, protocol breakpoints, postal fits.

Study ``local_calibration``.  :func:`run` measures a ping-pong with the
package's own benchmark (:func:`perfmod.measure.bench.pingpong.run_pingpong`:
sizes in interleaved sweeps, each in a seeded random order) or reads one,
fits it (:func:`perfmod.models.comm.calibration.calibrate`: protocol
breakpoints by BIC, the postal model per protocol, max-rate where several
pairs ran without oversubscription) and returns the measured and fitted
one-way times with the fitted platform inside the dataset (attribute
``platform_toml``).  Nothing is written but the raw ping-pong: the notebook
writes the dataset, the figures and the platform file
(:func:`write_platform`) together at the end, so an interrupted run leaves
the previous ``local.toml`` with its dataset.
"""

from __future__ import annotations

import datetime as dt
import json
import tomllib
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import tomli_w
import xarray as xr

import perfmod.campaign as campaign
from perfmod.core.io import read_dataset
from perfmod.machine import platforms
from perfmod.measure.bench.pingpong import run_pingpong, summarize
from perfmod.models.comm.calibration import (
    MIN_CLEAN_SWEEPS,
    Calibration,
    calibrate,
    calibration_dataset,
    clean_sweeps,
)
from perfmod.viz.plots import plot_calibration

__all__ = ["run", "sweep_flags", "figures", "write_platform", "platform_of", "plot_pairs"]

STUDY = "local_calibration"


def run(pingpong_path: str = "", sizes: Sequence[int] = (), pairs: Sequence[int] = (1,), reps: int = 20,
        warmup: int = 5, max_breaks: int = 2, seed: int = 0, raw_out: str = "", progress: bool = True) -> xr.Dataset:
    """Measure (or read) a ping-pong and fit the local platform.

    Parameters
    ----------
    pingpong_path : str
        Ping-pong dataset to fit; empty: measure now.
    sizes : sequence of int
        Message sizes (B); empty: :data:`perfmod.measure.bench.pingpong.DEFAULT_SIZES`.
    pairs : sequence of int
        Concurrent pairs k (2k ranks; more ranks than cores are marked oversubscribed).
    reps, warmup : int
        Timed and untimed sweeps over all sizes.
    max_breaks : int
        Most protocol breakpoints considered.
    seed : int
        Seed of the random size order of every sweep.
    raw_out : str
        Directory of the measured ping-pong; empty: ``data/raw/<host>/pingpong*.nc``.
    progress : bool
        Progress bar.

    Returns
    -------
    xarray.Dataset
        :func:`perfmod.models.comm.calibration.calibration_dataset` (measured and predicted
        one-way times over ``msg_bytes``, postal parameters with standard errors, BIC), with
        ``t_oneway_median_pairs`` over (``pairs``, ``msg_bytes``) when several pairs ran; the
        fitted platform as TOML text (``platform_toml``), the max-rate fits (``maxrate_fits``,
        JSON), the measurement's host, CPU, MPI library, date and binding; campaign.provenance and
        ``raw_files`` (the ping-pong file); every timed sweep's flags over (``pairs``, ``rep``),
        ``interfered`` among them, and what was dropped (:func:`sweep_flags`): the measured
        one-way times are medians of the clean sweeps.
    """
    parameters = {k: v for k, v in locals().items() if k != "progress"}
    if pingpong_path:
        pp = read_dataset(pingpong_path)
        source_file = pingpong_path
    else:
        out = None
        if raw_out:
            out = Path(raw_out) / f"pingpong-{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%S%fZ')}.nc"
        pp = run_pingpong(list(sizes) or None, pairs, reps, warmup, out=out, progress=progress, seed=seed)
        source_file = pp.attrs["path"]
    cal = calibrate(pingpong_path or pp, out=None, max_breaks=max_breaks)
    ds = calibration_dataset(pp, cal)
    if pp.pairs.size > 1:
        ds = ds.assign_coords(pairs=pp.pairs, oversubscribed=pp.oversubscribed)
        ds["t_oneway_median_pairs"] = summarize(pp).t_median.transpose("pairs", "msg_bytes").assign_attrs(
            units="s", long_name="measured one-way time (median) with k pairs at once")
    ds.attrs.update({k: str(pp.attrs.get(k, "")) for k in ("host", "cpu", "mpi_library", "date_utc", "binding")})
    ds.attrs["bic"] = json.dumps({int(b): [float(v[0]), [int(x) for x in v[1]]] for b, v in cal.bic.items()})
    ds.attrs["maxrate_fits"] = json.dumps({p: {"model": f.model, "form": f.form, "params": dict(f.params)}
                                           for p, f in cal.maxrate.items()})
    if not cal.maxrate:
        ds.attrs["maxrate_reason"] = str(cal.platform.entry("maxrate", cal.mode, next(iter(cal.fits))).reason)
    ds.attrs["platform_toml"] = tomli_w.dumps(platforms.to_dict(cal.platform))
    ds = sweep_flags(ds, pp, cal)
    return campaign.provenance(ds, STUDY, f"measurement: {cal.platform.source}", parameters, [source_file])


def sweep_flags(ds: xr.Dataset, pp: xr.Dataset, cal: Calibration) -> xr.Dataset:
    """``ds`` with the ping-pong's flags per timed sweep over (``pairs``, ``rep``) and what was dropped.

    The flags of :data:`perfmod.campaign.records.FLAG_FIELDS` (a sweep is not
    re-run: ``attempts`` 1; ``load_before`` the run's), ``oversubscribed``;
    ``fit_status`` ("not fitted on clean runs" when the single pair had fewer
    than :data:`perfmod.models.comm.calibration.MIN_CLEAN_SWEEPS` clean sweeps and
    the platform was fitted on every sweep, provisionally) and the attributes of
    :func:`perfmod.campaign.records.record_drops`; ``clean_runs_missing`` names
    the pair counts with no clean sweep.  A ping-pong file without flags
    (measured before sweeps were probed) counts as clean.
    """
    ok = clean_sweeps(pp)
    shape = (pp.sizes["pairs"], pp.sizes["rep"])
    flags = campaign.new_flags(shape)
    flags["interfered"] = ~ok.transpose("pairs", "rep").values
    flags["attempts"] = np.ones(shape)
    flags["interfered_attempts"] = flags["interfered"].astype(float)
    if "off_cpu" in pp:
        flags["off_cpu"] = np.broadcast_to(pp.off_cpu.broadcast_like(ok).transpose("pairs", "rep").values, shape)
    if "load_before" in pp:
        flags["load_before"] = np.broadcast_to(pp.load_before.values[:, None], shape)
    out = ds.drop_vars([v for v in ("interfered", "off_cpu") if v in ds]).assign_coords(
        pairs=pp.pairs, rep=pp.rep,
        oversubscribed=pp.oversubscribed if "oversubscribed" in pp.coords else ("pairs", np.zeros(shape[0], bool)))
    out = out.assign(campaign.flag_variables(flags, ("pairs", "rep")))
    missing = [f"pairs={int(k)}" for k in pp.pairs.values if not bool(ok.sel(pairs=k).any())]
    out.attrs["fit_status"] = ("fitted on the clean sweeps" if 1 not in cal.provisional else
                               "not fitted on clean runs: fewer than "
                               f"{MIN_CLEAN_SWEEPS} timed sweeps of the single pair were clean, so the platform is "
                               "fitted on every sweep, interfered ones included (provisional; re-measure on a "
                               "quieter machine)")
    return campaign.record_drops(out, out.interfered, out.oversubscribed, missing, "timed ping-pong sweeps")


def platform_of(ds: xr.Dataset) -> platforms.Platform:
    """The fitted platform held by a calibration dataset."""
    return platforms.from_dict(tomllib.loads(ds.attrs["platform_toml"]))


def write_platform(ds: xr.Dataset, path: str | Path) -> Path:
    """Write the fitted platform of a calibration dataset as TOML (atomically); return the path."""
    return platforms.write(platform_of(ds), path)


def plot_pairs(ds: xr.Dataset) -> plt.Figure:
    """Median one-way time per number of concurrent pairs k (oversubscribed k dashed)."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for k in ds.pairs.values:
        over = bool(ds.oversubscribed.sel(pairs=k))
        ax.loglog(ds.msg_bytes, ds.t_oneway_median_pairs.sel(pairs=k) * 1e6, "--" if over else "-", marker="o", ms=3,
                  label=f"k = {k}" + (" (oversubscribed)" if over else ""))
    ax.set(xlabel="message size [B]", ylabel="one-way time [us]", title="multi-pair ping-pong")
    ax.legend(fontsize=8)
    return fig


def headline(ds: xr.Dataset) -> dict[str, xr.DataArray]:
    """The study's headline figures (:mod:`perfmod.campaign.headline`): one-way time error of the fit, and the latency.

    Mean and largest absolute relative error of the postal fit against the measured
    one-way times (median per size, every size), and the fitted latency alpha of
    the smallest messages' protocol; NaN when nothing was fitted; then the run counts.
    """
    mean, top = campaign.mean_max(campaign.abs_rel_errors(ds.t_oneway_measured, ds.t_oneway_predicted))
    first = str(ds.fit_protocol.values[0])
    return campaign.headline_figures(ds, {
        "t_oneway_error_mean": (mean, "1", "mean |relative error| of the postal fit over the message sizes"),
        "t_oneway_error_max": (top, "1", "largest |relative error| of the postal fit over the message sizes"),
        "latency": (ds.postal_estimate.sel(fit_protocol=first, parameter="alpha"), "s",
                    f"fitted postal latency alpha of the {first} protocol (smallest messages)"),
    })


def figures(ds: xr.Dataset) -> dict[str, plt.Figure]:
    """The study's figures from its dataset: the fit per protocol with residuals, and the multi-pair curves."""
    figs = {"pingpong_fit": plot_calibration(ds)}
    if "t_oneway_median_pairs" in ds:
        figs["pingpong_pairs"] = plot_pairs(ds)
    return figs
