"""End-to-end model: per-iteration time = communication + GPU kernels + overhead (paper 000 §3.4; 002 §2.1).

Paper 000 §3.4: "predictions for communication times from NACoM and
computation times from QRoof are added together with the overhead, which is
measured from the trace generation run at the smallest scale ... For weak
scaling, the modeled performance of GPU kernels and measured overhead can be
assumed constant, whereas communication performance is estimated from the
simulation results."  The end-to-end runtime is the number of iterations
times the iteration time (000 §5.1-5.3).

The pieces:

- kernel time per iteration (:func:`kernel_time`): the sum over kernels of
  the QRoof predictions (:func:`perfmod.models.roofline.predict.predict` on a
  per-iteration kernel table such as :func:`perfmod.apps.registry.app_kernels`);
- communication time per iteration, given by the caller: analytic
  (:func:`perfmod.apps.registry.analytic_comm`, the applications' halo
  exchanges costed by :func:`perfmod.models.comm.phase.phase_time` with the
  postal, max-rate or K-model; ``apps`` is the floor above, so this module
  does not call it) or from a replay (:func:`comm_from_replay`: any Dataset
  with a ``comm_time`` variable over ``rank``; the slowest rank is the
  representative process of 000 §5);
- the measured overhead, a number the caller gives (the papers' values are
  ``perfmod/data/paper/overheads.csv``, read by the Choi et al. studies).

All three are xarray objects or numbers and broadcast: a sweep (nodes,
platform, device, model) is a dimension of the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

__all__ = [
    "comm_from_replay",
    "kernel_time",
    "end_to_end",
]


def comm_from_replay(replay: xr.Dataset, iterations: int = 1, var: str = "comm_time") -> xr.DataArray:
    """Communication time per iteration from a replay result (the slowest rank).

    Parameters
    ----------
    replay : xarray.Dataset
        Output of a trace replay with ``var`` (s) over ``rank`` (other
        dimensions, e.g. ``model`` or ``nodes``, are kept).
    iterations : int
        Iterations the replayed trace covers; the time is divided by it.
    var : str
        Name of the per-rank communication time.

    Raises
    ------
    KeyError
        ``var`` missing or without a ``rank`` dimension.
    """
    if var not in replay:
        raise KeyError(f"replay dataset has no {var!r} variable; it has {sorted(replay.data_vars)}")
    da = replay[var]
    if "rank" not in da.dims:
        raise KeyError(f"replay variable {var!r} has no 'rank' dimension (dims {da.dims})")
    if int(iterations) < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    out = da.max("rank") / int(iterations)
    return out.assign_attrs(units="s", long_name="communication time per iteration (slowest rank, replay)")


def kernel_time(pred: xr.Dataset | xr.DataArray) -> xr.DataArray:
    """Sum over ``kernel`` of the predicted kernel times (s per iteration)."""
    t = pred["t_predicted"] if isinstance(pred, xr.Dataset) else pred
    return t.sum("kernel").assign_attrs(units="s", long_name="GPU kernel time per iteration (QRoof)")


def _da(x: Any, name: str) -> xr.DataArray:
    da = x if isinstance(x, xr.DataArray) else xr.DataArray(float(x))
    if np.any(np.asarray(da) < 0) or not np.all(np.isfinite(np.asarray(da, dtype=float))):
        raise ValueError(f"{name} must be finite and >= 0 seconds")
    return da


def end_to_end(t_comm: Any, t_kernels: Any, overhead: Any, iterations: int = 1) -> xr.Dataset:
    """Per-iteration and total predicted time (000 §3.4).

    Parameters
    ----------
    t_comm : float or DataArray
        Communication time per iteration (s).
    t_kernels : float, DataArray or the Dataset of :func:`perfmod.models.roofline.predict`
        Kernel time per iteration (s); a prediction Dataset is summed over
        ``kernel``.
    overhead : float or DataArray
        Measured overhead per iteration (s).
    iterations : int or DataArray
        Iterations of the run (a DataArray, e.g. over ``app``, broadcasts).

    Returns
    -------
    xarray.Dataset
        ``t_comm``, ``t_kernels``, ``t_overhead``, ``t_iter_predicted``
        (their sum) and ``t_total_predicted`` (= iterations x
        ``t_iter_predicted``), broadcast over the inputs' dimensions.
    """
    if isinstance(t_kernels, xr.Dataset):
        t_kernels = kernel_time(t_kernels)
    iters = iterations if isinstance(iterations, xr.DataArray) else xr.DataArray(int(iterations))
    if np.any(np.asarray(iters) < 1):
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    comm, kern, over = _da(t_comm, "t_comm"), _da(t_kernels, "t_kernels"), _da(overhead, "overhead")
    t_iter = comm + kern + over
    return xr.Dataset({
        "t_comm": comm.assign_attrs(units="s", long_name="communication time per iteration"),
        "t_kernels": kern.assign_attrs(units="s", long_name="GPU kernel time per iteration (QRoof)"),
        "t_overhead": (over * xr.ones_like(t_iter)).assign_attrs(units="s",
                                                                 long_name="measured overhead per iteration"),
        "t_iter_predicted": t_iter.assign_attrs(units="s", long_name="predicted time per iteration"),
        "t_total_predicted": (t_iter * iters).assign_attrs(
            units="s", long_name="predicted end-to-end time (iterations x t_iter_predicted)"),
    })
