"""Replay one trace under several platforms and models (paper 000 Figures 5, 7, 10, simulated side)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import xarray as xr
from tqdm.auto import tqdm

from perfmod.machine.platforms import Platform, as_platform
from perfmod.models.comm.network import Network
from perfmod.replay.engine import replay
from perfmod.trace.core import Trace

__all__ = ["sweep"]

_VARS = ("comm_time", "send_time", "recv_time", "wait_time", "collective_time", "compute_time", "total_time",
         "comm_time_iteration")


def sweep(trace: Trace, platforms: Sequence[Platform | str], models: Sequence[str] = ("postal", "maxrate", "kmodel"),
          progress: bool = True, **options: Any) -> xr.Dataset:
    """:func:`perfmod.replay.replay` of ``trace`` for every platform and model (each pair bound once).

    Parameters
    ----------
    trace : Trace
    platforms : sequence of Platform or str
    models : sequence of str
    progress : bool
        Show a progress bar (tqdm).
    **options
        Passed to :func:`perfmod.replay.replay` (``mapping``, ``compute``, ...).

    Returns
    -------
    xarray.Dataset
        The per-rank times of :func:`replay` over (``platform``, ``model``,
        ``rank``[, ``iteration``]), with the attributes of the first replay.
    """
    plats = [as_platform(p) for p in platforms]
    mapping = options.pop("mapping", "block")
    rows = []
    bar = tqdm(total=len(plats) * len(models), disable=not progress, desc="replay")
    first: xr.Dataset | None = None
    for plat in plats:
        cols = []
        for model in models:
            ds = replay(trace, Network(plat, model, mapping, trace.nprocs), model, mapping=mapping, **options)
            first = first if first is not None else ds
            cols.append(ds[[v for v in _VARS if v in ds]])
            bar.update()
        rows.append(xr.concat(cols, dim=xr.DataArray(list(models), dims="model", name="model")))
    bar.close()
    out = xr.concat(rows, dim=xr.DataArray([p.name for p in plats], dims="platform", name="platform"))
    assert first is not None
    out.attrs.update({k: v for k, v in first.attrs.items() if k not in ("model", "platform")})
    out.attrs["models"] = ", ".join(models)
    out.attrs["platforms"] = ", ".join(p.name for p in plats)
    return out
