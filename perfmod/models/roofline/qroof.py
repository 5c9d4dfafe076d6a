"""The quantitative roofline (QRoof) time of one kernel on one device.

Paper 000 §2.3 and §3.3 adopt the quantitative roofline model of
Konstantinidis and Cotronis (J. Parallel Distrib. Comput. 107, 2017, ref.
[19] of paper 000); this module computes it as the reference toolkit does
(ekondis/gpuroofperf-toolkit, ``tool/performance_predictor.py``), read for
the formulas:

1. Instruction rates: the device's operation rates (``GFLOPS``, ``GIOPS -
   MAD``, an FMA/MAD being 2 operations) are halved to instruction rates;
   ``GIOPS - ADD`` and ``GOPS - SHMEM`` already are.
2. Throughput factors relative to single-precision instructions:
   f(fp_32) = 1, f(fp_64) = SP/DP, f(integer) = SP/MAD, f(ls) = SP/SHMEM,
   f(other) = SP/ADD (instruction rates).
3. Instruction efficiency from the kernel's instruction mix
   (m_c = compute share, m_ls = load/store share of the thread-level
   instructions)::

       e_inst = f_op m_c / ((1 - m_c - m_ls) f_other + m_c f_op + m_ls f_ls)

4. Adjusted peak = peak rate of the dominant operation x op-mix efficiency
   x e_inst (G operations/s).
5. The kernel is compute-bound when its operational intensity
   ``compute_ops / dram_bytes`` exceeds the device's adjusted balance
   ``adjusted peak / DRAM bandwidth``; the time is
   ``max(compute_ops / adjusted peak, dram_bytes / DRAM bandwidth)``.

The toolkit's *optimistic* mode for integer kernels (ADD instead of MAD
rates, op-mix efficiency 1) is available as ``optimistic=True``.
Half-precision kernels are not modelled: the toolkit's device file has no
half-precision rate.

Every argument may be a scalar, a NumPy array or an xarray object: they
broadcast, so a sweep over devices or hypothetical device parameters is a
dimension (paper 000 §6).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from perfmod.machine.devices import UNIT_SCALE, check_device

__all__ = ["DOMINANT_OPS", "KernelInputError", "qroof", "qroof_time"]

DOMINANT_OPS: tuple[str, ...] = ("fp_32", "fp_64", "integer")
"""Dominant operation types the model handles (the toolkit's names)."""


class KernelInputError(ValueError):
    """Kernel parameters outside the model's domain (names the parameter and, where known, the kernel)."""


def _check_range(name: str, value: Any, lo: float, hi: float, lo_open: bool, where: str) -> None:
    v = np.asarray(value, dtype=float)
    bad = ~np.isfinite(v) | (v > hi) | ((v <= lo) if lo_open else (v < lo))
    if np.any(bad):
        first = v[bad].flat[0] if v.ndim else float(v)
        bracket = "(" if lo_open else "["
        raise KernelInputError(f"{where}{name} must be in {bracket}{lo:g}, {hi:g}], got {first!r}")


def _check_kernel(compute_ops: Any, dram_bytes: Any, dominant_op: Any, opmix_efficiency: Any,
                  mix_compute: Any, mix_ldst: Any, where: str) -> None:
    ops = np.asarray(compute_ops, dtype=float)
    if np.any(~np.isfinite(ops) | (ops <= 0)):
        raise KernelInputError(f"{where}compute_ops must be positive (operations over all invocations), "
                               f"got {ops[~np.isfinite(ops) | (ops <= 0)].flat[0] if ops.ndim else float(ops)!r}")
    nbytes = np.asarray(dram_bytes, dtype=float)
    if np.any(~np.isfinite(nbytes) | (nbytes < 0)):
        raise KernelInputError(f"{where}dram_bytes must be >= 0, got {dram_bytes!r}")
    ops_types = set(np.unique(np.asarray(dominant_op, dtype=object)).tolist())
    unknown = ops_types - set(DOMINANT_OPS)
    if unknown:
        raise KernelInputError(f"{where}dominant_op {sorted(map(str, unknown))} not modelled; "
                               f"expected one of {list(DOMINANT_OPS)} (fp_16 has no device rate in the table)")
    _check_range("opmix_efficiency", opmix_efficiency, 0.0, 1.0, True, where)
    _check_range("mix_compute", mix_compute, 0.0, 1.0, True, where)
    _check_range("mix_ldst", mix_ldst, 0.0, 1.0, False, where)
    total = np.asarray(mix_compute, dtype=float) + np.asarray(mix_ldst, dtype=float)
    if np.any(total > 1.0 + 1e-9):
        raise KernelInputError(f"{where}mix_compute + mix_ldst must be <= 1 (shares of all instructions), "
                               f"got {np.max(total)!r}")


def qroof(
    compute_ops: Any,
    dram_bytes: Any,
    dominant_op: Any,
    opmix_efficiency: Any,
    mix_compute: Any,
    mix_ldst: Any,
    device: Mapping[str, Any],
    optimistic: bool = False,
    where: str = "",
) -> dict[str, Any]:
    """All terms of the QRoof prediction (see the module docstring).

    Parameters
    ----------
    compute_ops : array_like
        Operations of the dominant type over all invocations (an FMA counts 2).
    dram_bytes : array_like
        DRAM bytes read and written over all invocations (B).
    dominant_op : str or array of str
        ``"fp_32"``, ``"fp_64"`` or ``"integer"``.
    opmix_efficiency : array_like
        ``compute_ops / (2 x compute instructions)``: 1 for all-FMA code, 0.5
        for none (0 < e <= 1).
    mix_compute, mix_ldst : array_like
        Shares of dominant-type and load/store instructions among all
        thread-level instructions executed.
    device : mapping
        The columns of :data:`perfmod.machine.devices.TIME_COLUMNS` in the
        toolkit's G-units; values may be arrays or xarray objects.
    optimistic : bool
        The toolkit's optimistic mode for integer kernels.
    where : str
        Prefix for error messages (e.g. the kernel name).

    Returns
    -------
    dict
        ``time`` (s), ``compute_bound`` (bool), ``t_compute`` and ``t_dram``
        (s), ``adjusted_peak`` (operations/s), ``inst_efficiency``,
        ``overall_efficiency``, ``kernel_intensity`` and ``device_balance``
        (operations/B), ``throughput`` (operations/s) and ``bandwidth``
        (B/s) the kernel attains.

    Raises
    ------
    KernelInputError
        Non-positive operations, negative bytes, shares outside [0, 1], an
        unknown dominant operation.
    DeviceError
        A required device column is missing or not positive.
    """
    _check_kernel(compute_ops, dram_bytes, dominant_op, opmix_efficiency, mix_compute, mix_ldst, where)
    check_device(device, where=f"{where}device {device.get('name', '(unnamed)')!r}" if where else "")
    sp, dp = device["GFLOPS - SP"], device["GFLOPS - DP"]
    mad, add = device["GIOPS - MAD"], device["GIOPS - ADD"]
    shmem, dram = device["GOPS - SHMEM"], device["GBSEC - DRAM"]
    # 1. operation rates -> instruction rates (FMA and MAD count 2 operations)
    sp_i, dp_i, mad_i = sp / 2, dp / 2, mad / 2
    int_rate, int_rate_i = (add, add) if optimistic else (mad, mad_i)
    op = np.asarray(dominant_op, dtype=object) if not hasattr(dominant_op, "dims") else dominant_op
    is32 = op == "fp_32"
    is64 = op == "fp_64"
    isint = op == "integer"
    # 2. throughput factors relative to single-precision instructions
    peak = is32 * sp + is64 * dp + isint * int_rate
    f_op = is32 * 1.0 + is64 * (sp_i / dp_i) + isint * (sp_i / int_rate_i)
    f_ls = sp_i / shmem
    f_other = sp_i / add
    # 3. instruction efficiency from the instruction mix
    mc, ml = mix_compute, mix_ldst
    inst_eff = f_op * mc / ((1 - mc - ml) * f_other + mc * f_op + ml * f_ls)
    # 4. overall efficiency and adjusted peak
    opmix = (isint * 1.0 + (1 - isint) * opmix_efficiency) if optimistic else opmix_efficiency * 1.0
    overall = opmix * inst_eff
    adjusted = peak * overall * UNIT_SCALE  # operations/s
    bw = dram * UNIT_SCALE  # B/s
    # 5. roofline: the larger of the compute and the DRAM term
    t_compute = compute_ops / adjusted
    t_dram = dram_bytes / bw
    compute_bound = t_compute > t_dram
    time = np.maximum(t_compute, t_dram)
    with np.errstate(divide="ignore"):
        intensity = np.divide(compute_ops, dram_bytes)  # inf for a kernel without DRAM traffic
    return {
        "time": time,
        "compute_bound": compute_bound,
        "t_compute": t_compute,
        "t_dram": t_dram,
        "adjusted_peak": adjusted,
        "inst_efficiency": inst_eff,
        "overall_efficiency": overall,
        "kernel_intensity": intensity,
        "device_balance": adjusted / bw,
        "throughput": compute_ops / time,
        "bandwidth": dram_bytes / time,
    }


def qroof_time(
    compute_ops: Any,
    dram_bytes: Any,
    dominant_op: Any,
    opmix_efficiency: Any,
    mix_compute: Any,
    mix_ldst: Any,
    device: Mapping[str, Any],
    optimistic: bool = False,
) -> Any:
    """Predicted time (s) of a kernel (totals over its invocations) on ``device``.

    The reference toolkit's prediction (module docstring); arguments as in
    :func:`qroof`.  With the toolkit's matrixMul example (1,048,576,000 SP
    operations, 72,716,160 DRAM bytes, op-mix efficiency 1, 34.73 % compute
    and 47.80 % load/store instructions) on the GeForce GTX 660 of
    ``data/devices/gpus.csv`` this gives 5.21 ms, compute-bound, as the
    toolkit's README shows.

    Examples
    --------
    >>> from perfmod.machine.devices import get_device
    >>> from perfmod.models.roofline.qroof import qroof_time
    >>> t = qroof_time(1048576000, 72716160, "fp_32", 1.0, 0.3473, 0.4780, get_device("GeForce GTX 660"))
    >>> round(float(t) * 1e3, 2)
    5.21
    """
    return qroof(compute_ops, dram_bytes, dominant_op, opmix_efficiency, mix_compute, mix_ldst, device,
                 optimistic=optimistic)["time"]
