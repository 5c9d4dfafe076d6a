"""Table-level QRoof prediction: kernels x devices as an xarray Dataset (paper 000 §3.3, Figure 2 step 3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from perfmod.machine.devices import DEVICE_COLUMNS, DEVICE_SI, UNIT_SCALE, DeviceTable, devices_dataset
from perfmod.models.roofline.metrics import kernel_table, validate_kernels
from perfmod.models.roofline.qroof import qroof

__all__ = ["predict", "kernels_dataset"]


_KERNEL_META = {
    "compute_ops": ("op", "operations of the dominant type, all invocations"),
    "dram_bytes": ("B", "DRAM bytes read and written, all invocations"),
    "l2_bytes": ("B", "L2 bytes read and written, all invocations"),
    "dominant_op": ("1", "dominant operation type"),
    "opmix_efficiency": ("1", "op-mix efficiency (compute_ops / 2 x compute instructions)"),
    "mix_compute": ("1", "dominant-type share of the instructions"),
    "mix_ldst": ("1", "load/store share of the instructions"),
    "reference_time": ("s", "measured time on the profiled device, all invocations"),
    "count": ("1", "invocations"),
}


def kernels_dataset(kernels: pd.DataFrame | Mapping[str, Mapping[str, Any]]) -> xr.Dataset:
    """A kernel table as a Dataset over ``kernel`` (units and long names set)."""
    df = kernels if isinstance(kernels, pd.DataFrame) else kernel_table(kernels)
    validate_kernels(df, df.attrs.get("source", ""))
    ds = xr.Dataset(coords={"kernel": list(df.index)})
    for c, (units, long_name) in _KERNEL_META.items():
        values = df[c].to_numpy()
        ds[c] = ("kernel", values.astype(str) if c == "dominant_op" else values,
                 {"units": units, "long_name": long_name})
    return ds


def _device_ds(devices: DeviceTable | Mapping[str, Mapping[str, Any]] | xr.Dataset,
               names: Iterable[str] | None) -> xr.Dataset:
    if isinstance(devices, xr.Dataset):
        return devices if names is None else devices.sel(device=list(names))
    return devices_dataset(devices, names)


def predict(
    kernels: pd.DataFrame | Mapping[str, Mapping[str, Any]] | xr.Dataset,
    devices: DeviceTable | Mapping[str, Mapping[str, Any]] | xr.Dataset,
    names: Iterable[str] | None = None,
    optimistic: bool = False,
) -> xr.Dataset:
    """Predicted time of every kernel on every device.

    Parameters
    ----------
    kernels : DataFrame, mapping or Dataset
        A kernel table (:mod:`perfmod.models.roofline.metrics`) or its Dataset
        (:func:`kernels_dataset`; extra dimensions, e.g. a problem-size
        sweep, broadcast).
    devices : DeviceTable, mapping name -> device, or Dataset
        Device parameters; a Dataset in the layout of
        :func:`perfmod.machine.devices.devices_dataset` may carry extra dimensions
        (what-if sweeps) that broadcast.
    names : iterable of str, optional
        Devices to use (default all).
    optimistic : bool
        The toolkit's optimistic mode for integer kernels.

    Returns
    -------
    xarray.Dataset
        Over (``kernel``, ``device``): ``t_predicted`` (s, all invocations),
        ``t_per_call_predicted`` (s), ``bound`` (``"compute"``/``"memory"``),
        ``compute_bound``, ``t_compute``, ``t_dram``, ``adjusted_peak``
        (op/s), ``device_balance`` (op/B), ``throughput`` (op/s),
        ``bandwidth`` (B/s); over ``kernel`` the kernel table (and
        ``kernel_intensity``, op/B); over ``device`` the device parameters
        in SI units (:data:`perfmod.machine.devices.DEVICE_SI`).
    """
    kds = kernels if isinstance(kernels, xr.Dataset) else kernels_dataset(kernels)
    dds = _device_ds(devices, names)
    dev = {c: dds[c] for c in DEVICE_COLUMNS if c in dds}
    r = qroof(kds["compute_ops"], kds["dram_bytes"], kds["dominant_op"], kds["opmix_efficiency"],
              kds["mix_compute"], kds["mix_ldst"], dev, optimistic=optimistic)
    out = kds.copy()
    meta = {
        "t_predicted": ("s", "QRoof predicted time, all invocations"),
        "t_compute": ("s", "compute term: compute_ops / adjusted peak"),
        "t_dram": ("s", "memory term: dram_bytes / DRAM bandwidth"),
        "adjusted_peak": ("op/s", "peak of the dominant operation x op-mix x instruction efficiency"),
        "inst_efficiency": ("1", "instruction efficiency from the instruction mix"),
        "device_balance": ("op/B", "adjusted peak / DRAM bandwidth"),
        "throughput": ("op/s", "attained operation rate"),
        "bandwidth": ("B/s", "attained DRAM bandwidth"),
    }
    key = {"t_predicted": "time"}
    for name, (units, long_name) in meta.items():
        out[name] = r[key.get(name, name)].assign_attrs(units=units, long_name=long_name)
    out["kernel_intensity"] = r["kernel_intensity"].assign_attrs(units="op/B",
                                                                 long_name="compute_ops / dram_bytes")
    out["compute_bound"] = r["compute_bound"].assign_attrs(units="1", long_name="kernel is compute-bound")
    out["bound"] = xr.where(r["compute_bound"], "compute", "memory").astype(str).assign_attrs(
        units="1", long_name="QRoof bound type")
    out["t_per_call_predicted"] = (out["t_predicted"] / kds["count"]).assign_attrs(
        units="s", long_name="QRoof predicted time per invocation")
    for c in DEVICE_COLUMNS:
        if c in dds:
            var, units, long_name = DEVICE_SI[c]
            out[var] = (dds[c] * UNIT_SCALE).assign_attrs(units=units, long_name=long_name)
    out = out.assign_coords(device=dds["device"].values)
    out["device"].attrs.update(long_name="device", units="1")
    out["kernel"].attrs.update(long_name="kernel", units="1")
    if "reference_time" in out and np.isfinite(out["reference_time"].values).any():
        err = (out["t_predicted"] - out["reference_time"]) / out["reference_time"]
        out["t_error_vs_reference"] = err.assign_attrs(
            units="1", long_name="(predicted - reference) / reference; meaningful on the profiled device only")
    return out
