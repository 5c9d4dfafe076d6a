"""The local machine as a platform: ping-pong data -> fitted ``data/platforms/local.toml``.

Procedure (paper 000 §2.1 and §4.1, applied to this machine):

1. median one-way time per size over the repetitions, per number of pairs k;
2. protocol thresholds = breakpoints of a piecewise-linear fit of the k = 1
   curve (:func:`perfmod.comm.fitting.find_breakpoints`, up to two, chosen
   by BIC); segments are named short/eager/rendezvous from the bottom
   (one break: eager/rendezvous).  A breakpoint is where the time-vs-size
   slope changes; on a single shared-memory node the upper one can be a
   cache-size effect rather than an MPI protocol switch: look at the plot;
3. postal parameters per segment from k = 1;
4. max-rate parameters per segment from all k measured *without*
   oversubscription; when only k = 1 qualifies (2 cores: one pair) the
   max-rate cells are written as N/A with ``fallback = "postal"``, the
   paper's own rule for a mode where only one pair fits (000 Tables 3-4).

All ranks of this machine share one socket, so the mode is intra-socket.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .comm.fitting import Fit, find_breakpoints, fit_maxrate, fit_protocols
from .io import read_dataset
from .paths import repo_root
from .platforms import Platform, from_dict, save

__all__ = ["median_curve", "calibrate", "calibration_dataset"]

MODE = "intra_socket"


def median_curve(ds: xr.Dataset, pairs: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(sizes in bytes, median one-way time in s) for ``pairs`` concurrent pairs."""
    med = ds.t_oneway.sel(pairs=pairs).median("rep")
    return ds.msg_bytes.values.astype(float), med.values


def _entry(fit: Fit, source: str) -> dict[str, Any]:
    out: dict[str, Any] = dict(fit.params)
    out |= {f"{k}_se": v for k, v in fit.stderr.items()}
    out["source"] = source
    return out


def calibrate(
    ds_or_path: xr.Dataset | str | Path,
    name: str = "local",
    out: str | Path | None = None,
    max_breaks: int = 2,
) -> tuple[Platform, dict[str, Fit], list[int]]:
    """Fit the local platform from a ping-pong dataset.

    Parameters
    ----------
    ds_or_path : Dataset or path
        A dataset written by :func:`perfmod.bench.pingpong.run_pingpong`.
    name : str
        Platform name.
    out : path, optional
        Write the platform TOML there (atomically).
    max_breaks : int
        Largest number of protocol breakpoints considered.

    Returns
    -------
    (Platform, dict of protocol -> postal Fit, breakpoints in bytes)
    """
    ds = ds_or_path if isinstance(ds_or_path, xr.Dataset) else read_dataset(ds_or_path)
    where = str(ds_or_path) if not isinstance(ds_or_path, xr.Dataset) else ds.attrs.get("path", "<dataset>")
    try:  # record paths relative to the checkout, not this machine's layout
        where = str(Path(where).resolve().relative_to(repo_root()))
    except ValueError:
        pass
    if 1 not in ds.pairs.values:
        raise ValueError(f"{where}: no k = 1 (single pair) measurement to fit the postal model")
    n, t = median_curve(ds, 1)
    breaks = find_breakpoints(n, t, max_breaks=max_breaks)
    fits = fit_protocols(n, t, breaks)
    src = f"fit of {where} (median over reps, relative weights)"
    comm: dict[str, Any] = {"postal": {MODE: {}}, "maxrate": {MODE: {}}}
    edges = [0.0, *breaks, np.inf]
    ok_k = [int(k) for k, o in zip(ds.pairs.values, ds.oversubscribed.values, strict=True) if not o]
    for i, (proto, fit) in enumerate(fits.items()):
        comm["postal"][MODE][proto] = _entry(fit, src)
        if len(ok_k) < 2:
            comm["maxrate"][MODE][proto] = {
                "na": f"N/A (only k = {ok_k or [1]} measurable without oversubscription on {os.cpu_count()} cores)",
                "fallback": "postal", "source": src}
            continue
        lo, hi = edges[i], edges[i + 1]
        sel = ds.sel(pairs=ok_k)
        med = sel.t_oneway.median("rep")
        mask = (sel.msg_bytes > lo) & (sel.msg_bytes <= hi)
        nn, kk = np.meshgrid(sel.msg_bytes.values[mask.values], ok_k, indexing="xy")
        mr = fit_maxrate(nn.ravel(), kk.ravel(), med.sel(msg_bytes=mask).values.ravel())
        if proto == "short" or mr.model == "maxrate2":
            comm["maxrate"][MODE][proto] = _entry(mr, src + "; " + mr.form) if proto == "short" else {
                "na": f"N/A ({mr.form})", "fallback": "postal", "source": src}
        else:
            comm["maxrate"][MODE][proto] = _entry(mr, src + "; " + mr.form)
    short_max = breaks[0] if len(breaks) == 2 else 0
    eager_max = breaks[-1] if breaks else int(n.max())
    d = {
        "name": name,
        "sockets_per_node": 1,
        "gpus_per_socket": 0,
        "ranks_per_node": int(os.cpu_count() or 1),
        "cpu": ds.attrs.get("cpu", ""),
        "network": "shared memory (one node)",
        "mpi": ds.attrs.get("mpi_library", ""),
        "source": (f"measured by perfmod.bench.pingpong on {ds.attrs.get('host', '?')} "
                   f"{ds.attrs.get('date_utc', '')}; {where}; calibrated "
                   f"{dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}"),
        "protocols": {"short_max_bytes": int(short_max), "eager_max_bytes": int(eager_max),
                      "source": f"breakpoints {breaks} B found by perfmod.comm.fitting.find_breakpoints in {where}"},
        "comm": comm,
    }
    plat = from_dict(d)
    if out is not None:
        save(plat, out)
    return plat, fits, breaks


def calibration_dataset(ds: xr.Dataset, fits: dict[str, Fit], breaks: list[int]) -> xr.Dataset:
    """Measured vs fitted one-way times (k = 1) over ``msg_bytes`` and the fitted parameters.

    Holds ``t_oneway_measured`` (median over reps), its quartiles,
    ``t_oneway_predicted`` (the postal fit of the size's protocol) and
    ``protocol``; parameters with SEs over (``protocol``, ``parameter``).
    """
    n, t = median_curve(ds, 1)
    q = ds.t_oneway.sel(pairs=1).quantile([0.25, 0.75], dim="rep").values
    edges = [0.0, *breaks, np.inf]
    names = list(fits)
    proto = np.empty(n.size, dtype=object)
    pred = np.empty(n.size)
    for name, lo, hi in zip(names, edges[:-1], edges[1:], strict=True):
        sel = (n > lo) & (n <= hi)
        proto[sel] = name
        pred[sel] = fits[name].predict(n[sel])
    params = ["alpha", "beta"]
    est = np.array([[fits[p].params[k] for k in params] for p in names])
    se = np.array([[fits[p].stderr[k] for k in params] for p in names])
    out = xr.Dataset(
        {
            "t_oneway_measured": ("msg_bytes", t, {"units": "s", "long_name": "measured one-way time (median)"}),
            "t_oneway_q25": ("msg_bytes", q[0], {"units": "s", "long_name": "measured one-way time, 25th percentile"}),
            "t_oneway_q75": ("msg_bytes", q[1], {"units": "s", "long_name": "measured one-way time, 75th percentile"}),
            "t_oneway_predicted": ("msg_bytes", pred, {"units": "s", "long_name": "postal fit of the protocol"}),
            "protocol": ("msg_bytes", proto.astype(str), {"units": "1", "long_name": "protocol segment"}),
            "postal_estimate": (("fit_protocol", "parameter"), est,
                                {"units": "s | s/B", "long_name": "fitted postal parameters (alpha s, beta s/B)"}),
            "postal_stderr": (("fit_protocol", "parameter"), se,
                              {"units": "s | s/B", "long_name": "standard errors of the postal parameters"}),
        },
        coords={"msg_bytes": ("msg_bytes", n.astype(np.int64), {"units": "B", "long_name": "message size"}),
                "fit_protocol": names, "parameter": params},
    )
    out.attrs["breakpoints"] = np.asarray(breaks, dtype=np.int64)
    return out
