"""Analytic time of one communication phase (a halo exchange) on a platform.

A phase is a flat list of messages (an :class:`perfmod.apps.exchange.Exchange`:
``src``, ``dst``, ``nbytes``).  Each message gets its node-aware time from
:func:`perfmod.models.comm.message.message_time` (mode from the rank mapping,
protocol from the size).  A rank posts all its receives and sends and waits
for all (paper 000 Listing 1); the analytic estimate charges a rank the sum
of the times of the messages it sends (``overlap="serial"``: one injection
at a time, as a replay with a single NIC queue per rank would) or the longest
of them (``overlap="concurrent"``: a lower bound).  The phase takes as long
as its slowest rank, the paper's choice of the representative process
(000 §5).  Event-level replay with MPI matching semantics is the job of the
trace replay module; this is its closed-form counterpart.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from perfmod.machine.platforms import MODES, Platform
from perfmod.models.comm.network import Network, bind

__all__ = ["message_times", "phase_time"]


def message_times(exchange: Any, net: Network, counts: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Time (s) and mode code of every message of ``exchange`` on the bound network ``net``.

    The model's k rule gives the k of the phase (:meth:`perfmod.models.comm.krules.KRule.phase_kw`):
    under the K-model the K counts come from :func:`perfmod.models.comm.kmodel.phase_counts` on the
    same exchange unless ``counts`` (an object with ``k_inter`` and ``k_total``) is given.
    """
    src, dst = np.asarray(exchange.src), np.asarray(exchange.dst)
    nbytes = np.asarray(exchange.nbytes, dtype=float)
    modes = net.modes(src, dst)
    kw = net.rule.phase_kw(net, exchange, counts)
    times = np.zeros(len(nbytes))
    for code, mode in enumerate(MODES):
        sel = modes == code
        if np.any(sel):
            times[sel] = net.message_time(nbytes[sel], mode, **kw)
    return times, modes


def phase_time(
    exchange: Any,
    platform: Platform | str | Network,
    model: str = "postal",
    mapping: str = "block",
    counts: Any = None,
    overlap: str = "serial",
) -> xr.Dataset:
    """Per-rank and phase communication time of one exchange.

    Parameters
    ----------
    exchange : Exchange
        Messages of the phase (``nprocs``, ``src``, ``dst``, ``nbytes``).
    platform : Platform, str or Network
        A platform or its name, or a network bound to ``model`` and ``mapping`` already.
    model : str
        A communication model (:func:`perfmod.models.comm.registry.model_names`).
    mapping : {"block", "round_robin"}
    counts : KCounts, optional
        K-model counts to use instead of counting them from ``exchange``.
    overlap : {"serial", "concurrent"}
        How a rank's messages combine (see the module docstring).

    Returns
    -------
    xarray.Dataset
        ``t_rank`` (s) over ``rank``, ``messages`` over (``rank``, ``mode``)
        and the scalar ``t_phase`` (s) = max over ranks.
    """
    if overlap not in ("serial", "concurrent"):
        raise ValueError(f"overlap must be 'serial' or 'concurrent', got {overlap!r}")
    net = bind(platform, model, mapping)
    times, modes = message_times(exchange, net, counts)
    src = np.asarray(exchange.src)
    p = int(exchange.nprocs)
    if overlap == "serial":
        t_rank = np.bincount(src, weights=times, minlength=p)
    else:
        t_rank = np.zeros(p)
        np.maximum.at(t_rank, src, times)
    msgs = np.zeros((p, len(MODES)), dtype=np.int64)
    np.add.at(msgs, (src, modes.astype(int)), 1)
    ds = xr.Dataset(
        {
            "t_rank": ("rank", t_rank,
                       {"units": "s", "long_name": f"communication time per rank ({net.model.name}, {overlap})"}),
            "messages": (("rank", "mode"), msgs, {"units": "1", "long_name": "messages sent per rank and mode"}),
            "t_phase": ((), float(t_rank.max(initial=0.0)), {"units": "s", "long_name": "phase time (slowest rank)"}),
        },
        coords={"rank": np.arange(p), "mode": list(MODES)},
    )
    return ds
