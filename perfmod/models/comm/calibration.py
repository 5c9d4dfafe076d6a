"""The local machine as a platform: ping-pong data -> fitted ``data/platforms/local.toml``.

Procedure (paper 000 §2.1 and §4.1, applied to this machine):

1. median one-way time per size over the repetitions, per number of pairs k
   (medians, because other processes on a shared machine perturb single
   samples);
2. protocol thresholds = breakpoints of a piecewise-linear fit of the k = 1
   curve (:func:`perfmod.models.comm.fitting.find_breakpoints`, up to two, chosen
   by BIC); segments are named short/eager/rendezvous from the bottom (one
   break: eager/rendezvous; none: one segment written as both eager and
   rendezvous).  A threshold is the largest measured size of the lower
   segment.  A breakpoint is where the time-vs-size line changes; on one
   shared-memory node it can be a cache effect rather than an MPI protocol
   switch: look at the plot;
3. postal parameters (Eq. 1) per segment from k = 1, with standard errors,
   by :func:`perfmod.models.comm.segments.fit_segments`: a segment too
   short, with a latency <= 0 or a per-byte cost not significantly > 0 is
   merged into its better-fitting neighbour (its breakpoint dropped), and
   the final fits are bounded least squares (alpha, beta >= 0), so noise
   cannot write a platform that fails validation.  Each decision goes into
   the platform file (``note`` of each postal entry and of
   ``[protocols]``), :attr:`Calibration.decisions` and
   :func:`calibration_dataset` (``fit_note``, attribute ``fit_decisions``);
   a measurement with no usable fit raises :class:`CalibrationError` saying
   what was measured and what to do;
4. max-rate parameters per segment from all k measured *without*
   oversubscription: Eq. 3 for short, Eq. 2 for eager and rendezvous (its
   fallback to Eq. 3 on a negative parameter, 000 §2.1, is written as N/A
   with the postal fallback, since Eq. 3 has no R_Cb/R_Ci).  When only
   k = 1 qualifies (2 cores: one pair) the max-rate cells are written as
   N/A with ``fallback = "postal"``: at k = 1 Eq. 2 and Eq. 3 *are* the
   postal model (R_Cb = 1/beta), and R_Ci cannot be measured.  Runs with
   more ranks than cores are not used: time slicing two ranks per core
   measures the scheduler, not bandwidth sharing (the paper's own N/A cells,
   000 Tables 3-4, mark modes where more pairs do not fit).

The mode comes from the cores the ranks ran on (dataset coordinate
``mode``); a machine with one socket is intra-socket.
"""

from __future__ import annotations

import datetime as dt
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from perfmod.core.io import read_dataset
from perfmod.core.paths import platforms_dir, repo_root
from perfmod.machine.platforms import MODES, Platform, from_dict, write
from perfmod.models.comm.fitting import Fit, segment_bic
from perfmod.models.comm.registry import comm_model
from perfmod.models.comm.segments import CalibrationError, fit_segments

__all__ = ["Calibration", "CalibrationError", "MIN_CLEAN_SWEEPS", "clean_sweeps", "median_curve", "calibrate",
           "calibration_dataset", "default_out"]


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate`.

    Attributes
    ----------
    platform : Platform
        The fitted platform (as written to the TOML file).
    fits : dict
        Protocol -> postal :class:`~perfmod.models.comm.fitting.Fit` (k = 1).
    breakpoints : list of int
        Protocol thresholds in bytes (largest size of each lower segment).
    maxrate : dict
        Protocol -> max-rate Fit, only when several k were measured without
        oversubscription.
    bic : dict
        Number of breakpoints -> (BIC, thresholds), the model choice.
    mode : str
        Communication mode of the measurement.
    path : Path or None
        Where the platform file was written.
    decisions : list of str
        Every segment merged (with the numbers behind it); empty when the
        breakpoints found by BIC all gave usable fits.
    notes : dict
        Protocol -> how its postal fit was obtained (also the ``note`` of
        the platform entry).
    provisional : list of int
        The pair counts k fitted on every sweep, interfered ones included,
        because fewer than :data:`MIN_CLEAN_SWEEPS` were clean.
    """

    platform: Platform
    fits: dict[str, Fit]
    breakpoints: list[int]
    maxrate: dict[str, Fit] = field(default_factory=dict)
    bic: dict[int, tuple[float, list[int]]] = field(default_factory=dict)
    mode: str = "intra_socket"
    path: Path | None = None
    decisions: list[str] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    provisional: list[int] = field(default_factory=list)


MIN_CLEAN_SWEEPS = 3
"""Fewest clean sweeps (repetitions) of a ping-pong the fit uses on their own; with fewer, every sweep is fitted."""


def clean_sweeps(ds: xr.Dataset) -> xr.DataArray:
    """True where a repetition (timed sweep) of a ping-pong was clean, over (``pairs``, ``rep``).

    ``interfered`` over (``pairs``, ``rep``) flags each sweep; a file with one
    flag per run (``pairs``) flags all its sweeps alike; a file without flags
    (measured before runs were probed) counts as clean.
    """
    ok = xr.ones_like(ds.t_oneway.isel(msg_bytes=0, drop=True), dtype=bool)
    if "interfered" in ds:
        ok = ok & ~ds["interfered"].astype(bool)
    return ok


def median_curve(ds: xr.Dataset, pairs: int = 1, clean: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(sizes in bytes, median one-way time in s) for ``pairs`` concurrent pairs.

    ``clean``: the median of the clean sweeps only (:func:`clean_sweeps`),
    NaN at every size when none was clean.
    """
    t = ds.t_oneway.sel(pairs=pairs)
    if clean:
        t = t.where(clean_sweeps(ds).sel(pairs=pairs))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN sizes: NaN, said by the caller
        med = t.median("rep")
    return ds.msg_bytes.values.astype(float), med.values


def _fitted_times(ds: xr.Dataset) -> tuple[xr.DataArray, list[str], list[int]]:
    """``t_oneway`` as fitted: per ``pairs`` the clean sweeps when at least :data:`MIN_CLEAN_SWEEPS` (or all
    sweeps of a shorter run) were clean, else every sweep; a decision per run fitted on interfered sweeps, and
    their pair counts."""
    ok = clean_sweeps(ds)
    nrep = ds.sizes["rep"]
    use = ok.copy()
    decisions, provisional = [], []
    for k in ds.pairs.values:
        n_ok = int(ok.sel(pairs=k).sum())
        if n_ok < min(MIN_CLEAN_SWEEPS, nrep):
            use.loc[{"pairs": k}] = True
            provisional.append(int(k))
            decisions.append(f"k = {int(k)}: only {n_ok} of {nrep} timed sweeps were clean (the others were "
                             "disturbed by other processes); fitted on every sweep, interfered ones included, "
                             "as a provisional calibration: re-measure on a quieter machine")
    return ds.t_oneway.where(use), decisions, provisional


def _entry(fit: Fit, source: str, note: str = "") -> dict[str, Any]:
    out: dict[str, Any] = dict(fit.params)
    out |= {f"{k}_se": v for k, v in fit.stderr.items()}
    out["source"] = source
    if note:
        out["note"] = note
    return out


def default_out(name: str = "local") -> Path:
    """Where the studies keep the fitted platform: ``data/platforms/<name>.toml``."""
    return platforms_dir() / f"{name}.toml"


def _usable_curve(ds: xr.Dataset, where: str, times: xr.DataArray) -> tuple[np.ndarray, np.ndarray]:
    """The k = 1 median curve of ``times`` (the fitted sweeps of :func:`_fitted_times`), or
    :class:`CalibrationError` saying what was measured and what to do."""
    todo = ("re-measure with `make calibration` (or `python -m perfmod.measure.bench.pingpong --pairs 1 "
            "--reps 20`), on a quieter machine if other processes were running")
    if "t_oneway" not in ds or "msg_bytes" not in ds.dims:
        raise CalibrationError(f"{where}: not a ping-pong dataset (no t_oneway over msg_bytes); {todo}")
    n, t = ds.msg_bytes.values.astype(float), times.sel(pairs=1).median("rep").values
    ok = np.isfinite(t) & (t > 0) & np.isfinite(n) & (n > 0)
    if ok.sum() < 3:
        raise CalibrationError(
            f"{where}: {ok.sum()} of {n.size} message sizes have a positive finite median one-way time "
            f"(sizes {n.astype(np.int64).tolist()[:8]}...); at least 3 are needed to fit a latency and a "
            f"per-byte cost; {todo}")
    if not ok.all():
        bad = n[~ok].astype(np.int64).tolist()
        raise CalibrationError(f"{where}: sizes {bad} B have no positive finite median one-way time "
                               f"(failed or empty samples); {todo}")
    return n, t


def _rel(path: str) -> str:
    """A path relative to the checkout when it lies inside it (provenance must not name this machine)."""
    try:
        return str(Path(path).resolve().relative_to(repo_root()))
    except (ValueError, OSError):
        return path


def _mpi_name(ds: xr.Dataset) -> str:
    lib = re.sub(r"\s*Version:\s*", " ", str(ds.attrs.get("mpi_library", ""))).strip()
    wheel = ds.attrs.get("mpich_wheel", "")
    return f"{lib} (mpich wheel {wheel})" if wheel else lib


def _mode(ds: xr.Dataset, mode: str | None) -> str:
    if mode is not None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        return mode
    if "mode" in ds.coords:
        m = str(ds["mode"].sel(pairs=1).item())
        if m in MODES:
            return m
        raise ValueError(f"the single-pair run has mode {m!r}; pass mode= (one of {MODES})")
    if int(ds.attrs.get("sockets", 1)) == 1:
        return "intra_socket"
    raise ValueError("the dataset does not say which sockets the ranks ran on; pass mode=")


def _maxrate(ds: xr.Dataset, times: xr.DataArray, ks: list[int], edges: list[float],
             fits: dict[str, Fit]) -> dict[str, Fit]:
    med = times.sel(pairs=ks).median("rep")
    n = ds.msg_bytes.values.astype(float)
    out = {}
    for i, proto in enumerate(fits):
        sel = (n > edges[i]) & (n <= edges[i + 1])
        nn, kk = np.meshgrid(n[sel], ks)
        tt = med.isel(msg_bytes=np.flatnonzero(sel)).values
        fitter = comm_model("maxrate").fitters[proto]
        out[proto] = fitter(nn.ravel(), kk.ravel(), tt.ravel())
    return out


def calibrate(
    ds_or_path: xr.Dataset | str | Path,
    name: str = "local",
    out: str | Path | None = None,
    max_breaks: int = 2,
    mode: str | None = None,
) -> Calibration:
    """Fit a platform from a ping-pong dataset or file, without measuring; optionally write it as TOML.

    Also ``perfmod.models.comm.calibrate``.

    Parameters
    ----------
    ds_or_path : Dataset or path
        A dataset written by :func:`perfmod.measure.bench.pingpong.run_pingpong`
        (it must hold pairs = 1).
    name : str
        Platform name.
    out : path or None
        Where to write the platform (atomically); None (default) writes
        nothing.  The studies write :func:`default_out` (``data/platforms/<name>.toml``).
    max_breaks : int
        Largest number of protocol breakpoints considered.
    mode : str, optional
        Override the communication mode (default: from the dataset).

    Returns
    -------
    Calibration

    Raises
    ------
    CalibrationError
        When the measurement cannot give a valid platform (too few usable
        sizes, or times that do not grow with the size); the message names
        the file, what it holds and what to do.
    """
    ds = ds_or_path if isinstance(ds_or_path, xr.Dataset) else read_dataset(ds_or_path)
    where = _rel(str(ds_or_path) if not isinstance(ds_or_path, xr.Dataset) else ds.attrs.get("path", "<dataset>"))
    if "pairs" not in ds.dims or 1 not in ds.pairs.values:
        raise ValueError(f"{where}: no pairs = 1 (single pair) measurement to fit the postal model")
    mode = _mode(ds, mode)
    times, sweep_decisions, provisional = _fitted_times(ds)
    n, t = _usable_curve(ds, where, times)
    bic = segment_bic(n, t, max_breaks=max_breaks) if n.size >= 3 else {}
    found = min(bic.values(), key=lambda v: v[0])[1] if bic else []
    seg = fit_segments(n, t, found, where=where)
    n_bad = int((~clean_sweeps(ds).sel(pairs=1)).sum())
    if n_bad and not any(d.startswith("k = 1:") for d in sweep_decisions):
        seg.decisions.append(f"k = 1: {n_bad} of {ds.sizes['rep']} timed sweeps were flagged interfered and left "
                             "out of the medians")
    seg.decisions.extend(sweep_decisions)
    fits, breaks = seg.fits, seg.breakpoints
    src = f"fit of {where} (k = 1, median over the clean reps, relative weights)"
    edges = [0.0, *breaks, np.inf]
    over = ds.oversubscribed.values if "oversubscribed" in ds.coords else np.zeros(ds.pairs.size, bool)
    ok_k = [int(k) for k, o in zip(ds.pairs.values, over, strict=True) if not o]
    maxrate = _maxrate(ds, times, ok_k, edges, fits) if len(ok_k) >= 2 else {}
    postal_cells: dict[str, Any] = {}
    maxrate_cells: dict[str, Any] = {}
    for proto, fit in fits.items():
        postal_cells[proto] = _entry(fit, src, seg.notes[proto])
        mr = maxrate.get(proto)
        if mr is None:
            ncores = ds.attrs.get("cores", "?")
            maxrate_cells[proto] = {
                "na": f"N/A (only k = {ok_k} measurable without oversubscription on {ncores} cores; "
                      "at k = 1 max-rate is the postal model)",
                "fallback": "postal", "source": src}
        elif proto != "short" and mr.model != "maxrate":
            maxrate_cells[proto] = {"na": f"N/A ({mr.form})", "fallback": "postal",
                                    "source": f"fit of {where}, k = {ok_k}"}
        else:
            maxrate_cells[proto] = _entry(mr, f"fit of {where}, k = {ok_k}, medians; {mr.form}")
    if not breaks:  # one segment: it serves every size
        postal_cells["rendezvous"] = {**postal_cells["eager"], "source": src + "; no breakpoint, same as eager"}
        maxrate_cells["rendezvous"] = {**maxrate_cells["eager"]}
    short_max = breaks[0] if len(breaks) == 2 else 0
    eager_max = breaks[-1] if breaks else int(n.max())
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    d = {
        "name": name,
        "sockets_per_node": int(ds.attrs.get("sockets", 1)),
        "gpus_per_socket": 0,
        "ranks_per_node": int(ds.attrs.get("cores", 1)),
        "cpu": str(ds.attrs.get("cpu", "")),
        "network": "shared memory (one node)",
        "mpi": _mpi_name(ds),
        "source": (f"measured by perfmod.measure.bench.pingpong on {ds.attrs.get('host', '?')} "
                   f"{ds.attrs.get('date_utc', '')}; {where}; calibrated by perfmod.models.comm.calibration {now}"),
        "protocols": {"short_max_bytes": int(short_max), "eager_max_bytes": int(eager_max),
                      "source": f"breakpoints {breaks} B found in {where} by "
                                "perfmod.models.comm.fitting.segment_bic (piecewise-linear, BIC)",
                      "note": (f"BIC chose breakpoints {found} B; " + "; ".join(seg.decisions)) if seg.decisions
                      else f"BIC chose breakpoints {found} B; every segment gave a usable fit"},
        "comm": {"postal": {mode: postal_cells}, "maxrate": {mode: maxrate_cells}},
    }
    plat = from_dict(d)
    path = write(plat, out) if out is not None else None
    return Calibration(plat, fits, breaks, maxrate, bic, mode, path, list(seg.decisions), dict(seg.notes),
                       provisional)


def calibration_dataset(ds: xr.Dataset, cal: Calibration) -> xr.Dataset:
    """Measured vs fitted one-way times (k = 1) over ``msg_bytes`` and the fitted parameters.

    Holds ``t_oneway_measured`` (median over the clean reps, :func:`clean_sweeps`;
    NaN when no sweep was clean, even where :func:`calibrate` fitted every
    sweep for want of clean ones), its minimum and quartiles, ``t_oneway_predicted`` (the postal fit of the size's
    protocol) and ``protocol``; the postal parameters with SEs over
    (``fit_protocol``, ``parameter``) and ``fit_note`` (how each segment
    was fitted); the BIC of 0..max breakpoints; attribute
    ``fit_decisions`` (every merge, one per line).  Only
    units, long names and the ``breakpoints`` attribute are set: the caller
    adds provenance (:func:`perfmod.core.io.annotate`).
    """
    n, t = median_curve(ds, 1, clean=True)
    one = ds.t_oneway.sel(pairs=1).where(clean_sweeps(ds).sel(pairs=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no clean sweep: NaN
        q = one.quantile([0.25, 0.75], dim="rep").values
        t_min = one.min("rep").values
    edges = [0.0, *cal.breakpoints, np.inf]
    names = list(cal.fits)
    proto = np.empty(n.size, dtype=object)
    pred = np.empty(n.size)
    for name, lo, hi in zip(names, edges[:-1], edges[1:], strict=True):
        sel = (n > lo) & (n <= hi)
        proto[sel] = name
        pred[sel] = cal.fits[name].predict(n[sel])["predicted"].values
    params = ["alpha", "beta"]
    est = np.array([[cal.fits[p].params[k] for k in params] for p in names])
    se = np.array([[cal.fits[p].stderr[k] for k in params] for p in names])
    nb = sorted(cal.bic)
    s_per_b = "s (alpha) | s/B (beta)"
    out = xr.Dataset(
        {
            "t_oneway_measured": ("msg_bytes", t, {"units": "s", "long_name": "measured one-way time (median of the "
                                                   "clean sweeps; NaN when none was clean)"}),
            "t_oneway_min": ("msg_bytes", t_min,
                             {"units": "s", "long_name": "measured one-way time, minimum"}),
            "t_oneway_q25": ("msg_bytes", q[0], {"units": "s", "long_name": "measured one-way time, 25th percentile"}),
            "t_oneway_q75": ("msg_bytes", q[1], {"units": "s", "long_name": "measured one-way time, 75th percentile"}),
            "t_oneway_predicted": ("msg_bytes", pred,
                                   {"units": "s", "long_name": "postal model (Eq. 1) fitted to the size's protocol"}),
            "protocol": ("msg_bytes", proto.astype(str), {"units": "1", "long_name": "protocol segment"}),
            "postal_estimate": (("fit_protocol", "parameter"), est,
                                {"units": s_per_b, "long_name": "fitted postal parameters"}),
            "postal_stderr": (("fit_protocol", "parameter"), se,
                              {"units": s_per_b, "long_name": "standard errors of the postal parameters"}),
            "postal_rel_rms": ("fit_protocol", [cal.fits[p].rel_rms for p in names],
                               {"units": "1", "long_name": "RMS relative residual of the postal fit"}),
            "fit_note": ("fit_protocol", [cal.notes.get(p, "") for p in names],
                         {"units": "1", "long_name": "how the segment's fit was obtained (bounds, merges)"}),
            "bic": ("n_breaks", [cal.bic[b][0] for b in nb],
                    {"units": "1", "long_name": "BIC of the best piecewise-linear fit (lowest chosen)"}),
        },
        coords={"msg_bytes": ("msg_bytes", n.astype(np.int64), {"units": "B", "long_name": "message size"}),
                "fit_protocol": ("fit_protocol", names, {"units": "1", "long_name": "protocol"}),
                "parameter": ("parameter", params, {"units": "1", "long_name": "postal parameter"}),
                "n_breaks": ("n_breaks", nb, {"units": "1", "long_name": "number of breakpoints"})},
    )
    out.attrs["breakpoints"] = np.asarray(cal.breakpoints, dtype=np.int64)
    out.attrs["mode"] = cal.mode
    out.attrs["fit_decisions"] = "\n".join(cal.decisions) or "none: every segment BIC found gave a usable fit"
    return out
