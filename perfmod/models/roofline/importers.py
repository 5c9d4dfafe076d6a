"""Profiler output -> kernel metric table (paper 000 §3.3, Figure 2 step 2).

nvprof
    ``nvprof --csv --metrics inst_fp_32,inst_fp_64,inst_integer,flop_count_sp_fma,flop_count_dp_fma,
    dram_read_transactions,dram_write_transactions,l2_read_transactions,l2_write_transactions,inst_executed,
    inst_compute_ld_st ./app`` (the metric profile; nvprof prints it on stderr after its ``==PID==`` lines):
    rows ``"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"``.  A
    metric's total is ``Avg x Invocations`` (as the reference toolkit computes it).  Kernel times come from
    the summary profile ``nvprof --csv -u ms ./app`` (:func:`read_nvprof_summary`; rows ``"Type",
    "Time(%)","Time","Calls","Avg","Min","Max","Name"`` after a units row), CUDA API calls and memory
    copies/sets excluded (000 §3.3).
Nsight Compute
    ``ncu --csv --metrics <the equivalents of NCU_METRICS> ./app``: one row per launch and metric with
    ``"ID"``, ``"Kernel Name"``, ``"Metric Name"``, ``"Metric Unit"``, ``"Metric Value"`` (values may carry
    thousands separators).  Launches of a kernel are summed; ``gpu__time_duration.sum`` gives its time.
    The metric equivalents are NVIDIA's nvprof-to-Nsight-Compute metric mapping (Nsight Compute CLI
    documentation, "Metric Comparison").

Both build the nvprof-named totals of each kernel and derive the parameters
with :func:`perfmod.models.roofline.metrics.from_instruction_counts`, as the
reference toolkit's ``kernel_inspector.py`` does: dominant operation = the
largest of ``inst_fp_16/32/64`` (``integer`` when all are 0), compute
operations = its instructions + its FMAs, DRAM/L2 bytes = (read + write
transactions) x 32, instruction total = ``inst_executed`` x 32.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from perfmod.models.roofline.metrics import from_instruction_counts, kernel_table, selective_profiling

__all__ = [
    "ProfileError",
    "NVPROF_METRICS",
    "NCU_METRICS",
    "read_nvprof_metrics",
    "read_nvprof_summary",
    "read_ncu",
    "params_from_nvprof_totals",
]

SECTOR_BYTES = 32  # bytes per DRAM/L2 transaction (sector)

NVPROF_METRICS: tuple[str, ...] = (
    "inst_fp_32", "inst_fp_64", "inst_integer", "flop_count_sp_fma", "flop_count_dp_fma",
    "dram_read_transactions", "dram_write_transactions", "l2_read_transactions", "l2_write_transactions",
    "inst_executed", "inst_compute_ld_st",
)
"""The nvprof metrics the model reads (``--metrics`` list for a profiling run)."""

NCU_METRICS: dict[str, tuple[str, ...]] = {
    "inst_fp_16": ("smsp__sass_thread_inst_executed_op_fp16_pred_on.sum",),
    "inst_fp_32": ("smsp__sass_thread_inst_executed_op_fp32_pred_on.sum",),
    "inst_fp_64": ("smsp__sass_thread_inst_executed_op_fp64_pred_on.sum",),
    "inst_integer": ("smsp__sass_thread_inst_executed_op_integer_pred_on.sum",),
    "flop_count_hp_fma": ("smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",),
    "flop_count_sp_fma": ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",),
    "flop_count_dp_fma": ("smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",),
    "dram_read_transactions": ("dram__sectors_read.sum",),
    "dram_write_transactions": ("dram__sectors_write.sum",),
    "l2_read_transactions": ("lts__t_sectors_op_read.sum",),
    "l2_write_transactions": ("lts__t_sectors_op_write.sum",),
    "inst_executed": ("smsp__inst_executed.sum",),
    "inst_compute_ld_st": ("smsp__sass_thread_inst_executed_op_memory_pred_on.sum",),
}
"""nvprof metric -> the Nsight Compute metric(s) summed for it."""

NCU_TIME_METRIC = "gpu__time_duration.sum"
_TIME_UNITS = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3,
               "second": 1.0, "s": 1.0}
_IGNORED_CALLS = ("", "[CUDA memcpy HtoD]", "[CUDA memcpy DtoH]", "[CUDA memcpy DtoD]", "[CUDA memcpy HtoH]",
                  "[CUDA memset]")


class ProfileError(ValueError):
    """A profiler file cannot give the kernel parameters (names file, line, kernel and metric)."""


def _text(src: str | os.PathLike) -> tuple[str, str]:
    """(text, label) of a path, or of a literal CSV string."""
    if isinstance(src, os.PathLike) or (isinstance(src, str) and "\n" not in src and Path(src).exists()):
        return Path(src).read_text(encoding="utf-8", errors="replace"), str(src)
    if isinstance(src, str) and "\n" in src:
        return src, "<text>"
    raise FileNotFoundError(f"profiler output {src} does not exist")


def _csv_rows(text: str, label: str, required: tuple[str, ...]) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header and (line number, row) pairs of the CSV block whose header has ``required`` columns."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("=="):
            continue
        row = next(csv.reader([line]), [])
        if all(r in row for r in required):
            rows = []
            for j in range(i + 1, len(lines)):
                if lines[j].startswith("==") or not lines[j].strip():
                    continue
                rows.append((j + 1, next(csv.reader([lines[j]]))))
            return row, rows
    raise ProfileError(f"{label}: no CSV header with columns {list(required)} (is it profiler --csv output?)")


def _number(cell: str, label: str, line: int, what: str) -> float:
    try:
        return float(cell.replace(",", "").strip())
    except ValueError:
        raise ProfileError(f"{label} line {line}: {what}: {cell!r} is not a number") from None


def params_from_nvprof_totals(
    totals: Mapping[str, float],
    kernel: str,
    label: str = "",
    reference_time: float = np.nan,
    count: int = 1,
    names: Mapping[str, str] | None = None,
) -> dict:
    """Kernel parameters from one kernel's nvprof-named metric totals (see the module docstring).

    ``names`` maps an nvprof metric to the name to show in errors (the
    Nsight Compute importer passes its metric names).

    Raises
    ------
    ProfileError
        A metric the model needs is missing (named, with the kernel).
    """
    names = names or {}

    def need(metric: str) -> float:
        if metric not in totals:
            shown = names.get(metric, metric)
            raise ProfileError(f"{label}: kernel {kernel!r} lacks metric {shown!r}, which the model needs")
        return float(totals[metric])

    fp = {op: need(f"inst_{op}") for op in ("fp_32", "fp_64")}
    if "inst_fp_16" in totals:
        fp["fp_16"] = float(totals["inst_fp_16"])
    dominant = "integer" if sum(fp.values()) == 0 else max(fp, key=lambda k: fp[k])
    if dominant == "fp_16":
        raise ProfileError(f"{label}: kernel {kernel!r} is dominated by half-precision instructions, which "
                           "the device table has no rate for")
    compute_inst = need(f"inst_{dominant}")
    fma = {"fp_32": "flop_count_sp_fma", "fp_64": "flop_count_dp_fma"}.get(dominant)
    fma_inst = need(fma) if fma else 0.0
    dram = (need("dram_read_transactions") + need("dram_write_transactions")) * SECTOR_BYTES
    l2 = np.nan
    if "l2_read_transactions" in totals and "l2_write_transactions" in totals:
        l2 = (totals["l2_read_transactions"] + totals["l2_write_transactions"]) * SECTOR_BYTES
    executed = need("inst_executed")
    ldst = need("inst_compute_ld_st")
    if executed <= 0:
        raise ProfileError(f"{label}: kernel {kernel!r} has inst_executed = {executed:g}; counts must be positive")
    if compute_inst <= 0:
        raise ProfileError(f"{label}: kernel {kernel!r} has inst_{dominant} = {compute_inst:g}; "
                           "counts must be positive")
    for metric in ("dram_read_transactions", "dram_write_transactions", "inst_compute_ld_st"):
        if totals[metric] < 0:
            raise ProfileError(f"{label}: kernel {kernel!r} has negative {metric} = {totals[metric]:g}")
    return from_instruction_counts(dominant, compute_inst, fma_inst, ldst, executed * 32, dram, l2,
                                   reference_time=reference_time, count=count, kernel=kernel)


def read_nvprof_summary(src: str | os.PathLike) -> pd.DataFrame:
    """Kernel times from an ``nvprof --csv`` summary profile.

    Returns
    -------
    pandas.DataFrame
        Index ``kernel``; ``time`` (s, all calls) and ``calls``.  CUDA API
        rows and memory copies/sets are left out (000 §3.3).
    """
    text, label = _text(src)
    header, rows = _csv_rows(text, label, ("Time", "Calls", "Name"))
    col = {name: i for i, name in enumerate(header)}
    scale = 1e-3  # nvprof -u ms; a units row (",%,ms,,ms,...") says otherwise
    out: dict[str, tuple[float, int]] = {}
    for line, row in rows:
        if len(row) < len(header):
            continue
        if not row[col["Name"]] and row[col["Time"]] in _TIME_UNITS:
            scale = _TIME_UNITS[row[col["Time"]]]
            continue
        name = row[col["Name"]]
        if "Type" in col and row[col["Type"]] == "API calls":
            continue
        if name in _IGNORED_CALLS or name.startswith("[CUDA"):
            continue
        t = _number(row[col["Time"]], label, line, f"kernel {name!r} Time") * scale
        calls = int(_number(row[col["Calls"]], label, line, f"kernel {name!r} Calls"))
        out[name] = (t, calls)
    if not out:
        raise ProfileError(f"{label}: no kernel rows in the summary profile")
    df = pd.DataFrame.from_dict(out, orient="index", columns=["time", "calls"])
    df.index.name = "kernel"
    return df


def read_nvprof_metrics(
    src: str | os.PathLike,
    summary: str | os.PathLike | pd.DataFrame | None = None,
    kernels: list[str] | None = None,
    threshold: float | None = None,
) -> pd.DataFrame:
    """Kernel table from ``nvprof --csv --metrics ...`` output.

    Parameters
    ----------
    src : path or CSV text
        The metric profile.
    summary : path, CSV text or DataFrame, optional
        The summary profile (:func:`read_nvprof_summary`), for the
        reference times.
    kernels : list of str, optional
        Only these kernels (e.g. from :func:`perfmod.models.roofline.selective_profiling`).
    threshold : float, optional
        Selective profiling (000 §3.3): with ``summary``, keep the longest
        kernels until their times reach this fraction of the total (0.99 in
        the paper); ignored without a summary.

    Raises
    ------
    ProfileError
        Missing metric (metric and kernel named), repeated metric rows,
        zero or negative counts, a requested kernel not in the file.
    """
    times = _times(summary)
    if threshold is not None and times:
        chosen = selective_profiling(times, threshold)
        kernels = chosen if kernels is None else [k for k in kernels if k in chosen]
    text, label = _text(src)
    header, rows = _csv_rows(text, label, ("Kernel", "Invocations", "Metric Name", "Avg"))
    col = {name: i for i, name in enumerate(header)}
    totals: dict[str, dict[str, float]] = {}
    calls: dict[str, int] = {}
    for line, row in rows:
        if len(row) < len(header):
            continue
        kernel, metric = row[col["Kernel"]], row[col["Metric Name"]]
        if kernels is not None and kernel not in kernels:
            continue
        inv = int(_number(row[col["Invocations"]], label, line, f"kernel {kernel!r} Invocations"))
        calls[kernel] = inv
        if metric not in NVPROF_METRICS and metric not in ("inst_fp_16", "flop_count_hp_fma"):
            continue
        if metric in totals.setdefault(kernel, {}):
            raise ProfileError(f"{label} line {line}: kernel {kernel!r} has metric {metric!r} twice "
                               "(several devices in one file? profile one device)")
        totals[kernel][metric] = _number(row[col["Avg"]], label, line, f"kernel {kernel!r} {metric}") * inv
    return _table(totals, calls, times, label, kernels)


def _times(summary: str | os.PathLike | pd.DataFrame | None) -> dict[str, float]:
    if summary is None:
        return {}
    df = summary if isinstance(summary, pd.DataFrame) else read_nvprof_summary(summary)
    return {str(k): float(v) for k, v in df["time"].items()}


def _table(totals: dict, calls: dict, times: Mapping[str, float], label: str, kernels: list[str] | None,
           names: Mapping[str, str] | None = None) -> pd.DataFrame:
    if kernels is not None:
        absent = [k for k in kernels if k not in totals]
        if absent:
            raise ProfileError(f"{label}: kernel(s) {absent} not in the profile; it has {sorted(totals)}")
    if not totals:
        raise ProfileError(f"{label}: no kernel metric rows")
    rows = {k: params_from_nvprof_totals(m, k, label, times.get(k, np.nan), calls.get(k, 1), names)
            for k, m in totals.items()}
    return kernel_table(rows, source=label)


def read_ncu(src: str | os.PathLike, kernels: list[str] | None = None) -> pd.DataFrame:
    """Kernel table from ``ncu --csv --metrics ...`` output (see the module docstring).

    Launches (``ID``) of the same kernel name are summed; ``count`` is their
    number; ``reference_time`` the sum of ``gpu__time_duration.sum`` when
    present.

    Raises
    ------
    ProfileError
        As :func:`read_nvprof_metrics`; the missing metric is named with its
        Nsight Compute equivalent.
    """
    text, label = _text(src)
    header, rows = _csv_rows(text, label, ("ID", "Kernel Name", "Metric Name", "Metric Value"))
    col = {name: i for i, name in enumerate(header)}
    unit_col = col.get("Metric Unit")
    reverse = {ncu: nv for nv, names in NCU_METRICS.items() for ncu in names}
    raw: dict[str, dict[str, float]] = {}
    launches: dict[str, set] = {}
    times: dict[str, float] = {}
    for line, row in rows:
        if len(row) < len(header):
            continue
        kernel, metric = row[col["Kernel Name"]], row[col["Metric Name"]]
        if kernels is not None and kernel not in kernels:
            continue
        launches.setdefault(kernel, set()).add(row[col["ID"]])
        if metric == NCU_TIME_METRIC:
            unit = row[unit_col] if unit_col is not None else "nsecond"
            if unit not in _TIME_UNITS:
                raise ProfileError(f"{label} line {line}: unknown time unit {unit!r}")
            value = _number(row[col["Metric Value"]], label, line, f"kernel {kernel!r} {metric}")
            times[kernel] = times.get(kernel, 0.0) + value * _TIME_UNITS[unit]
            continue
        if metric not in reverse:
            continue
        value = _number(row[col["Metric Value"]], label, line, f"kernel {kernel!r} {metric}")
        nv = reverse[metric]
        raw.setdefault(kernel, {})
        raw[kernel][nv] = raw[kernel].get(nv, 0.0) + value
    return _table(raw, {k: len(v) for k, v in launches.items()}, times, label, kernels,
                  names={nv: f"{ncu[0]} (nvprof {nv})" for nv, ncu in NCU_METRICS.items()})
