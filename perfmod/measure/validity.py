"""What a study needs to keep measurements honest: raw-file provenance, flags per run, clean-run statistics.

docs/architecture.md, "Measurement validity": every timed run records what could have
disturbed it, is flagged ``interfered`` or ``oversubscribed`` where it was,
and studies fit and score clean runs only.  The helpers here turn
:func:`perfmod.measure.runner.run_mpi` results into those records:

- :func:`host_provenance`: the attributes every raw file carries (host,
  CPU, cores, date, Python, MPI library, the measuring lock's state);
- :func:`run_flags`: the scalar record of one run (``interfered``,
  ``off_cpu``, ``attempts``, ``interfered_attempts``, ``interference_reason``,
  ``load_before``) for a dataset's run dimensions;
- :func:`clean_reduce`: a statistic over repetitions of clean runs only,
  NaN where none was clean, and the list of those configurations (the
  ``clean_runs_missing`` attribute).
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import math
import os
import platform as pyplatform
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from perfmod.core.paths import host_name
from perfmod.measure.host import cpu_model, socket_count
from perfmod.measure.interference import OFF_CPU_THRESHOLD, usable_cores
from perfmod.measure.lock import LOCK_ENV

__all__ = ["host_provenance", "run_flags", "clean_reduce", "FLAG_META"]

FLAG_META: dict[str, tuple[str, str]] = {
    "interfered": ("1", "another process took a material share of the run's CPUs "
                        f"(run-queue delay > {OFF_CPU_THRESHOLD:.0%} of a rank's wall time; kept for the record)"),
    "off_cpu": ("1", "largest fraction of a rank's wall time spent waiting for a CPU "
                     "(oversubscribed: share of the cores the ranks did not get)"),
    "attempts": ("1", "runs made for this observation (an interfered run is re-run)"),
    "interfered_attempts": ("1", "of them flagged interfered"),
    "load_before": ("1", "1-minute load average before the kept run (largest over ranks)"),
}
"""``(units, long_name)`` of the numeric fields of :func:`run_flags`."""


def host_provenance() -> dict[str, Any]:
    """Attributes naming where and how a raw measurement was taken (strings and numbers only)."""
    def version(pkg: str) -> str:
        try:
            return importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            return ""

    return {
        "host": host_name(), "cpu": cpu_model(), "cores": usable_cores(), "sockets": socket_count(),
        "measured_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": pyplatform.python_version(), "mpich_wheel": version("mpich"), "mpi4py_version": version("mpi4py"),
        "measuring_lock": "held" if os.environ.get(LOCK_ENV) else "not held",
    }


def run_flags(res: Mapping[str, Any]) -> dict[str, Any]:
    """The scalar validity record of one :func:`~perfmod.measure.runner.run_mpi` result.

    Also of an in-process run whose result carries its own verdict
    (``run_shared``, ``run_quicksilver``, re-run by
    :func:`~perfmod.measure.runner.rerun_while_interfered`).

    Returns
    -------
    dict
        ``interfered`` (bool), ``off_cpu`` (1), ``attempts`` and
        ``interfered_attempts`` (counts), ``interference_reason`` (str) and
        ``load_before`` (largest over ranks, NaN without a probe).
    """
    if "interfered" not in res:
        raise KeyError("run_flags: the result has no 'interfered' (not from perfmod.measure.runner.run_mpi?); "
                       f"keys: {sorted(res)[:12]}")
    rep = res.get("interference") or {}
    lb = rep.get("load_before", [])
    lb = lb if isinstance(lb, list | tuple) else [lb]  # a per-rank list (MPI) or one number (in-process probe)
    loads = [x for x in lb if isinstance(x, int | float) and math.isfinite(x)]
    return {"interfered": bool(res["interfered"]), "off_cpu": float(res.get("off_cpu", float("nan"))),
            "attempts": len(res.get("attempts", [res])), "interfered_attempts": int(res.get("n_interfered",
                                                                                          int(res["interfered"]))),
            "interference_reason": str(res.get("interference_reason", "")),
            "load_before": max(loads) if loads else float("nan")}


def clean_reduce(measured: xr.DataArray, interfered: xr.DataArray, dim: str = "rep",
                 how: str = "median") -> tuple[xr.DataArray, list[str]]:
    """A statistic over ``dim`` of the clean runs only.

    Parameters
    ----------
    measured : xarray.DataArray
        One value per run (e.g. over ``case``, ``nprocs``, ``rep``).
    interfered : xarray.DataArray
        True where a run was disturbed; broadcast against ``measured``.
    dim : str
        The repetition dimension reduced.
    how : {"median", "mean", "min"}
        The statistic.

    Returns
    -------
    (xarray.DataArray, list of str)
        The statistic (NaN where no run of a configuration was clean) and
        those configurations as ``"case=1, nprocs=2"`` strings, for the
        dataset attribute ``clean_runs_missing``.
    """
    if dim not in measured.dims:
        raise ValueError(f"clean_reduce: {measured.name!r} has no dimension {dim!r}; dims {measured.dims}")
    if how not in ("median", "mean", "min"):
        raise ValueError(f"clean_reduce: how must be median, mean or min, got {how!r}")
    clean = measured.where(~interfered.astype(bool))
    out = getattr(clean, how)(dim, skipna=True)
    none = clean.notnull().sum(dim) == 0
    missing = []
    if bool(none.any()):
        for idx in zip(*np.nonzero(np.asarray(none.values)), strict=True):
            sel = {d: none[d].values[i] if d in none.coords else i for d, i in zip(none.dims, idx, strict=True)}
            missing.append(", ".join(f"{d}={v}" for d, v in sel.items()))
    return out.assign_attrs(measured.attrs), missing
