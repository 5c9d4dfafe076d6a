"""Kernel metric tables: the kernel parameter file of QRoof (paper 000 §3.3, Figure 2 step 2).

One row per kernel (index ``kernel``) with the columns of
:data:`KERNEL_COLUMNS`, totals over the kernel's invocations:

``compute_ops``
    operations of the dominant type (an FMA counts 2).
``dram_bytes``, ``l2_bytes``
    DRAM and L2 bytes read and written (B; 32-byte transactions/sectors x 32).
``dominant_op``
    ``fp_32``, ``fp_64`` or ``integer``.
``opmix_efficiency``
    ``compute_ops / (2 x compute instructions)``.
``mix_compute``, ``mix_ldst``
    dominant-type and load/store shares of the thread-level instructions.
``reference_time``
    measured time on the profiled device (s, all invocations; NaN if unknown).
``count``
    invocations.

The derivation from instruction counts, :func:`from_instruction_counts`, is
the reference toolkit's (``tool/kernel_inspector.py`` of
ekondis/gpuroofperf-toolkit); the profiler importers
(:mod:`perfmod.models.roofline.importers`) and the hand-written algorithmic counts
(:mod:`perfmod.apps.kernels`) both go through it.  Selective profiling (000
§3.3) is :func:`selective_profiling`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from perfmod.core.io import atomic_path
from perfmod.models.roofline.qroof import DOMINANT_OPS, KernelInputError

__all__ = [
    "KERNEL_COLUMNS",
    "from_instruction_counts",
    "from_flops_bytes",
    "kernel_table",
    "validate_kernels",
    "selective_profiling",
    "write_kernel_table",
    "read_kernel_table",
]

KERNEL_COLUMNS: tuple[str, ...] = (
    "compute_ops",
    "dram_bytes",
    "l2_bytes",
    "dominant_op",
    "opmix_efficiency",
    "mix_compute",
    "mix_ldst",
    "reference_time",
    "count",
)

_NUMERIC = tuple(c for c in KERNEL_COLUMNS if c != "dominant_op")


def from_instruction_counts(
    dominant_op: str,
    compute_inst: float,
    fma_inst: float,
    ldst_inst: float,
    total_inst: float,
    dram_bytes: float,
    l2_bytes: float = np.nan,
    reference_time: float = np.nan,
    count: int = 1,
    kernel: str = "",
) -> dict[str, Any]:
    """Kernel parameters from thread-level instruction counts (totals over invocations).

    Parameters
    ----------
    dominant_op : {"fp_32", "fp_64", "integer"}
    compute_inst : float
        Instructions of the dominant type (nvprof ``inst_fp_32``,
        ``inst_fp_64`` or ``inst_integer``); an FMA is one instruction.
    fma_inst : float
        Of those, fused multiply-adds (``flop_count_sp_fma`` /
        ``flop_count_dp_fma``; 0 for integer kernels, as in the toolkit).
    ldst_inst : float
        Load/store instructions (``inst_compute_ld_st``).
    total_inst : float
        All thread-level instructions (``inst_executed`` x 32).
    dram_bytes, l2_bytes : float
        Bytes (B).
    reference_time : float
        Measured time on the profiled device (s).
    count : int
        Invocations.
    kernel : str
        Name, for error messages.

    Returns
    -------
    dict
        One row of a kernel table: ``compute_ops = compute_inst + fma_inst``,
        ``opmix_efficiency = compute_ops / (2 compute_inst)``, ``mix_compute
        = compute_inst / total_inst``, ``mix_ldst = ldst_inst / total_inst``.
    """
    where = f"kernel {kernel!r}: " if kernel else ""
    for name, v in (("compute_inst", compute_inst), ("total_inst", total_inst)):
        if not np.isfinite(v) or v <= 0:
            raise KernelInputError(f"{where}{name} must be positive, got {v!r}")
    for name, v in (("fma_inst", fma_inst), ("ldst_inst", ldst_inst), ("dram_bytes", dram_bytes)):
        if not np.isfinite(v) or v < 0:
            raise KernelInputError(f"{where}{name} must be >= 0, got {v!r}")
    if fma_inst > compute_inst:
        raise KernelInputError(f"{where}fma_inst ({fma_inst:g}) exceeds compute_inst ({compute_inst:g})")
    if compute_inst + ldst_inst > total_inst * (1 + 1e-12):
        raise KernelInputError(f"{where}compute_inst + ldst_inst ({compute_inst + ldst_inst:g}) exceed "
                               f"total_inst ({total_inst:g})")
    ops = float(compute_inst) + float(fma_inst)
    return {
        "compute_ops": ops,
        "dram_bytes": float(dram_bytes),
        "l2_bytes": float(l2_bytes),
        "dominant_op": dominant_op,
        "opmix_efficiency": ops / (2.0 * compute_inst),
        "mix_compute": compute_inst / total_inst,
        "mix_ldst": ldst_inst / total_inst,
        "reference_time": float(reference_time),
        "count": int(count),
    }


def from_flops_bytes(
    compute_ops: float,
    dram_bytes: float,
    dominant_op: str = "fp_64",
    count: int = 1,
    reference_time: float = np.nan,
    kernel: str = "",
) -> dict[str, Any]:
    """Kernel row from operation and byte counts alone (a proxy's flops and bytes per cell x cells).

    Without an instruction mix the row takes the neutral values
    ``opmix_efficiency = 1``, ``mix_compute = 1``, ``mix_ldst = 0``, for
    which QRoof reduces to the plain roofline ``max(ops / peak, bytes /
    bandwidth)`` of the dominant operation's peak.
    """
    where = f"kernel {kernel!r}: " if kernel else ""
    if not np.isfinite(compute_ops) or compute_ops <= 0:
        raise KernelInputError(f"{where}compute_ops must be positive, got {compute_ops!r}")
    if not np.isfinite(dram_bytes) or dram_bytes < 0:
        raise KernelInputError(f"{where}dram_bytes must be >= 0, got {dram_bytes!r}")
    return {"compute_ops": float(compute_ops), "dram_bytes": float(dram_bytes), "l2_bytes": np.nan,
            "dominant_op": dominant_op, "opmix_efficiency": 1.0, "mix_compute": 1.0, "mix_ldst": 0.0,
            "reference_time": float(reference_time), "count": int(count)}


def validate_kernels(df: pd.DataFrame, source: str = "") -> None:
    """Raise :class:`KernelInputError` naming the kernel and field of the first bad value.

    Checks the columns exist, ``compute_ops > 0``, ``dram_bytes >= 0``,
    ``count >= 1``, shares and op-mix efficiency in range and a known
    dominant operation.
    """
    pre = f"{source}: " if source else ""
    missing = [c for c in KERNEL_COLUMNS if c not in df.columns]
    if missing:
        raise KernelInputError(f"{pre}kernel table lacks column(s) {missing}")
    if df.index.has_duplicates:
        raise KernelInputError(f"{pre}repeated kernel name(s) {sorted(set(df.index[df.index.duplicated()]))}")
    for name, row in df.iterrows():
        w = f"{pre}kernel {name!r}: "
        if row["dominant_op"] not in DOMINANT_OPS:
            raise KernelInputError(f"{w}dominant_op {row['dominant_op']!r} not one of {list(DOMINANT_OPS)}")
        checks = (
            ("compute_ops", row["compute_ops"] > 0, "must be positive"),
            ("dram_bytes", row["dram_bytes"] >= 0, "must be >= 0"),
            ("count", row["count"] >= 1, "must be >= 1"),
            ("opmix_efficiency", 0 < row["opmix_efficiency"] <= 1, "must be in (0, 1]"),
            ("mix_compute", 0 < row["mix_compute"] <= 1, "must be in (0, 1]"),
            ("mix_ldst", 0 <= row["mix_ldst"] <= 1, "must be in [0, 1]"),
            ("mix_compute + mix_ldst", row["mix_compute"] + row["mix_ldst"] <= 1 + 1e-9, "must be <= 1"),
        )
        for field, ok, what in checks:
            if not bool(ok):
                value = row[field] if field in row else row["mix_compute"] + row["mix_ldst"]
                raise KernelInputError(f"{w}{field} {what}, got {value!r}")
        if not np.isnan(row["l2_bytes"]) and row["l2_bytes"] < 0:
            raise KernelInputError(f"{w}l2_bytes must be >= 0, got {row['l2_bytes']!r}")


def kernel_table(rows: Mapping[str, Mapping[str, Any]] | pd.DataFrame, source: str = "") -> pd.DataFrame:
    """A validated kernel table from ``{kernel: row}`` or a DataFrame.

    Missing ``l2_bytes`` / ``reference_time`` become NaN, a missing
    ``count`` 1.  ``attrs["source"]`` records ``source``.
    """
    df = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame.from_dict(dict(rows), orient="index")
    for col, default in (("l2_bytes", np.nan), ("reference_time", np.nan), ("count", 1)):
        if col not in df.columns:
            df[col] = default
    df.index = pd.Index([str(i) for i in df.index], name="kernel")
    missing = [c for c in KERNEL_COLUMNS if c not in df.columns]
    if missing:
        raise KernelInputError(f"{source + ': ' if source else ''}kernel table lacks column(s) {missing}")
    df = df[list(KERNEL_COLUMNS)].copy()
    for c in _NUMERIC:
        df[c] = pd.to_numeric(df[c], errors="raise").astype(float if c != "count" else int)
    df["dominant_op"] = df["dominant_op"].astype(str)
    validate_kernels(df, source)
    df.attrs["source"] = source
    return df


def selective_profiling(times: Mapping[str, float] | pd.Series, threshold: float = 0.99) -> list[str]:
    """Kernels to profile: the longest first, until their times reach ``threshold`` of the total.

    Paper 000 §3.3: "We start with the kernel with the longest execution
    time and add more kernels until the sum of the kernel execution times
    reaches some threshold, which is currently set to 99% of the total
    time."  Ties keep the given order.

    Parameters
    ----------
    times : mapping or Series kernel -> time (s)
        Total time of each kernel (CUDA API calls and copies excluded).
    threshold : float
        Fraction of the total time, in (0, 1].

    Returns
    -------
    list of str
        Selected kernels, longest first.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    s = pd.Series(times, dtype=float)
    if s.empty:
        raise ValueError("selective_profiling: no kernel times")
    if (s < 0).any() or not np.isfinite(s).all():
        bad = s[(s < 0) | ~np.isfinite(s)]
        raise ValueError(f"selective_profiling: kernel {bad.index[0]!r} has time {bad.iloc[0]!r}")
    total = float(s.sum())
    order = s.sort_values(ascending=False, kind="stable")
    cum = order.cumsum().to_numpy()
    n = int(np.searchsorted(cum, threshold * total * (1 - 1e-12), side="left")) + 1
    return [str(k) for k in order.index[:min(n, len(order))]]


def write_kernel_table(df: pd.DataFrame, path: str | os.PathLike, header: str = "") -> Path:
    """Write a kernel table as CSV (``#`` header lines, then the columns), atomically."""
    validate_kernels(df)
    text = "".join(f"# {line}\n" for line in header.splitlines())
    text += df[list(KERNEL_COLUMNS)].to_csv()
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def read_kernel_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a kernel table written by :func:`write_kernel_table` (or by hand in that layout)."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    body = "\n".join(line for line in lines if not line.startswith("#"))
    df = pd.read_csv(io.StringIO(body), index_col=0, float_precision="round_trip")
    header = "\n".join(line[1:].strip() for line in lines if line.startswith("#"))
    out = kernel_table(df, source=str(path))
    out.attrs["header"] = header
    return out
