"""GPU (and local device) parameter tables for the quantitative roofline model.

Paper 000 §3.3 (Figure 2, step 1): "Generate GPU parameter files for
different types of GPUs by executing a micro-benchmark", or specify them
"manually ... from the hardware specifications".  The file layout is the one
of the reference toolkit (ekondis/gpuroofperf-toolkit, ``gpuroofperf-bench
-o gpus.csv``): a first column naming the device, then the seven columns of
:data:`DEVICE_COLUMNS` in the toolkit's units (GFLOPS, GIOPS, GBSEC = 1e9
per second, GOPS).  perfmod's own file, ``data/devices/gpus.csv``, adds a
``"<column> source"`` column per value and ``#`` header lines defining the
source keys; files without source columns (the toolkit's output, or a row a
local microbenchmark wrote) are read too, their source being the file.

Empty cells are allowed only in ``GBSEC - L2``, which the time prediction
does not use (the toolkit only reports an L2 bandwidth from it).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from perfmod.core.paths import devices_dir, repo_root

__all__ = [
    "DEVICE_COLUMNS",
    "TIME_COLUMNS",
    "UNIT_SCALE",
    "DEVICE_SI",
    "DeviceError",
    "DeviceTable",
    "default_devices_path",
    "read_devices",
    "write_devices",
    "get_device",
    "check_device",
    "scale_device",
    "devices_dataset",
    "FLOP_COLUMNS",
]

DEVICE_COLUMNS: tuple[str, ...] = (
    "GFLOPS - SP",
    "GFLOPS - DP",
    "GIOPS - MAD",
    "GBSEC - DRAM",
    "GBSEC - L2",
    "GOPS - SHMEM",
    "GIOPS - ADD",
)
"""The toolkit's device columns, in its order."""

TIME_COLUMNS: tuple[str, ...] = tuple(c for c in DEVICE_COLUMNS if c != "GBSEC - L2")
"""Columns the time prediction needs (positive numbers)."""

UNIT_SCALE = 1e9
"""Toolkit units (G.../s) to SI (.../s)."""

DEVICE_SI: dict[str, tuple[str, str, str]] = {
    "GFLOPS - SP": ("flops_sp", "flop/s", "single-precision peak"),
    "GFLOPS - DP": ("flops_dp", "flop/s", "double-precision peak"),
    "GIOPS - MAD": ("iops_mad", "op/s", "integer multiply-add rate (a MAD counts 2)"),
    "GBSEC - DRAM": ("dram_bandwidth", "B/s", "DRAM bandwidth"),
    "GBSEC - L2": ("l2_bandwidth", "B/s", "L2 bandwidth"),
    "GOPS - SHMEM": ("shmem_ops", "op/s", "shared-memory load/store rate"),
    "GIOPS - ADD": ("iops_add", "op/s", "integer add rate"),
}
"""Toolkit column -> (dataset variable, SI unit, long name): how every dataset names a device column."""


class DeviceError(ValueError):
    """A device table or device mapping is unusable (names the file, row or column)."""


def default_devices_path() -> Path:
    """The device table shipped with perfmod (``perfmod/data/devices/gpus.csv``)."""
    return devices_dir() / "gpus.csv"


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(repo_root()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class DeviceTable:
    """Device parameters (toolkit units) and the source of each value.

    Attributes
    ----------
    values : pandas.DataFrame
        Index: device name; columns :data:`DEVICE_COLUMNS` (float, NaN where
        the file has no value).
    sources : pandas.DataFrame
        Same shape, the source key or file of each value.
    files : tuple of str
        Files read, in order (a later file's row replaces an earlier one of
        the same name).
    """

    values: pd.DataFrame
    sources: pd.DataFrame
    files: tuple[str, ...]

    @property
    def names(self) -> list[str]:
        """Device names, in file order."""
        return list(self.values.index)

    def __contains__(self, name: object) -> bool:
        return name in self.values.index

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        return get_device(name, self)


def _read_one(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    if not path.is_file():
        raise FileNotFoundError(f"device table {_rel(path)} does not exist")
    lines = path.read_text(encoding="utf-8").splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")), None)
    if first is None:
        raise DeviceError(f"{_rel(path)}: no header row")
    body = "\n".join(line for line in lines if not line.startswith("#"))
    df = pd.read_csv(io.StringIO(body), skipinitialspace=True, dtype=str, keep_default_na=False)
    df.columns = [str(c).strip().strip('"').strip() for c in df.columns]
    missing = [c for c in DEVICE_COLUMNS if c not in df.columns]
    if missing:
        raise DeviceError(f"{_rel(path)} (line {first + 1}): missing device column(s) {missing}; "
                          f"the layout is a device-name column followed by {list(DEVICE_COLUMNS)}")
    name_col = df.columns[0]
    names = df[name_col].str.strip().str.strip('"')
    values = pd.DataFrame(index=pd.Index(names, name="device"), columns=list(DEVICE_COLUMNS), dtype=float)
    sources = pd.DataFrame(index=values.index, columns=list(DEVICE_COLUMNS), dtype=object)
    data_lines = [i + 1 for i, line in enumerate(lines) if line.strip() and not line.startswith("#")][1:]
    for r, (name, line_no) in enumerate(zip(names, data_lines, strict=False)):
        if not name:
            raise DeviceError(f"{_rel(path)} line {line_no}: empty device name")
        for col in DEVICE_COLUMNS:
            cell = df[col].iloc[r].strip()
            if cell == "":
                if col in TIME_COLUMNS:
                    raise DeviceError(f"{_rel(path)} line {line_no}: device {name!r} has no value for "
                                      f"required column {col!r}")
                val = np.nan
            else:
                try:
                    val = float(cell)
                except ValueError:
                    raise DeviceError(f"{_rel(path)} line {line_no}: device {name!r}, column {col!r}: "
                                      f"{cell!r} is not a number") from None
                if not np.isfinite(val) or val <= 0:
                    raise DeviceError(f"{_rel(path)} line {line_no}: device {name!r}, column {col!r}: "
                                      f"{cell} must be a positive number")
            values.iloc[r, values.columns.get_loc(col)] = val
            src_col = f"{col} source"
            src = df[src_col].iloc[r].strip() if src_col in df.columns else ""
            sources.iloc[r, sources.columns.get_loc(col)] = src or _rel(path)
    return values, sources


def read_devices(*paths: str | Path, include_default: bool = True) -> DeviceTable:
    """Read device tables.

    Parameters
    ----------
    *paths : str or Path
        Extra CSV files in the toolkit's layout (e.g. a row for the local
        CPU written by perfmod's microbenchmarks).  Their rows are added
        after the default table's; a repeated name replaces the earlier row.
    include_default : bool
        Read ``data/devices/gpus.csv`` first.

    Returns
    -------
    DeviceTable

    Raises
    ------
    DeviceError
        A file lacks a device column (named), a required value is empty or
        not a positive number (file, line, device and column named).
    """
    files = ([default_devices_path()] if include_default else []) + [Path(p) for p in paths]
    if not files:
        raise DeviceError("read_devices: no device table given")
    vals, srcs = [], []
    for f in files:
        v, s = _read_one(f)
        vals.append(v)
        srcs.append(s)
    values = pd.concat(vals)
    sources = pd.concat(srcs)
    keep = ~values.index.duplicated(keep="last")
    return DeviceTable(values[keep], sources[keep], tuple(_rel(f) for f in files))


def write_devices(
    path: str | Path,
    rows: Mapping[str, Mapping[str, float]],
    sources: Mapping[str, Mapping[str, str]] | str,
    header: str = "",
    overwrite: bool = False,
) -> Path:
    """Write device rows in the toolkit's layout with a source column per value (atomically).

    Parameters
    ----------
    path : str or Path
        Destination CSV (readable by :func:`read_devices`).
    rows : mapping name -> mapping column -> value
        Values in the toolkit's G-units for every column of
        :data:`DEVICE_COLUMNS` (NaN allowed for ``GBSEC - L2`` only).
    sources : mapping name -> mapping column -> str, or str
        The source of each value (one string for all).
    header : str
        ``#`` lines written first (what was measured, how, when).
    overwrite : bool
        Replace an existing file (measurements are never overwritten
        silently, so the default is False).
    """
    from perfmod.core.io import atomic_path

    cols = list(DEVICE_COLUMNS) + [f"{c} source" for c in DEVICE_COLUMNS]
    out = pd.DataFrame(index=pd.Index(list(rows), name="GPU"), columns=cols, dtype=object)
    for name, row in rows.items():
        missing = [c for c in DEVICE_COLUMNS if c not in row]
        if missing:
            raise DeviceError(f"write_devices: device {name!r} lacks column(s) {missing}")
        check_device(row, where=f"write_devices: device {name!r}")
        for c in DEVICE_COLUMNS:
            out.at[name, c] = "" if np.isnan(float(row[c])) else repr(float(row[c]))
            out.at[name, f"{c} source"] = sources if isinstance(sources, str) else sources[name][c]
    text = "".join(f"# {line}\n" for line in header.splitlines()) + out.to_csv()
    with atomic_path(path, overwrite=overwrite) as tmp:
        tmp.write_text(text, encoding="utf-8")
    read_devices(path, include_default=False)  # what was written must read back
    return Path(path)


def get_device(name: str, table: DeviceTable | None = None) -> Mapping[str, Any]:
    """Parameters of one device as a read-only mapping (toolkit units, plus ``"name"``).

    Raises
    ------
    KeyError
        Unknown device; the message lists the known ones.
    """
    table = table if table is not None else read_devices()
    if name not in table.values.index:
        raise KeyError(f"unknown device {name!r}; known devices: {', '.join(table.names)} "
                       f"(from {', '.join(table.files)})")
    row = {c: float(table.values.at[name, c]) for c in DEVICE_COLUMNS}
    row["name"] = name
    return MappingProxyType(row)


def check_device(device: Mapping[str, Any], where: str = "") -> None:
    """Raise :class:`DeviceError` naming a required column missing from, or not positive in, ``device``.

    Values may be numbers, arrays or xarray objects (sweeps); every element
    must be positive.
    """
    if not isinstance(device, Mapping):
        raise DeviceError(f"{where or 'device'}: expected a mapping of device columns, got {type(device).__name__}")
    label = where or f"device {device.get('name', '(unnamed)')!r}"
    missing = [c for c in TIME_COLUMNS if c not in device]
    if missing:
        raise DeviceError(f"{label}: missing required device column(s) {missing} "
                          f"(needed: {list(TIME_COLUMNS)})")
    for c in TIME_COLUMNS:
        v = np.asarray(device[c], dtype=float)
        if not np.all(np.isfinite(v) & (v > 0)):
            raise DeviceError(f"{label}: device column {c!r} must be positive and finite, got {device[c]!r}")


FLOP_COLUMNS = ("GFLOPS - SP", "GFLOPS - DP")


def scale_device(
    device: Mapping[str, Any],
    flops: float = 1.0,
    bandwidth: float = 1.0,
    name: str | None = None,
    flop_columns: Iterable[str] = FLOP_COLUMNS,
) -> Mapping[str, Any]:
    """A hypothetical device: ``device`` with its flop/s and DRAM bandwidth scaled.

    Paper 000 §6.2 (Figure 15): devices A-D are a Tesla V100 with twice/half
    the flop/s (``flops=2``/``0.5``: the ``GFLOPS`` columns) or twice/half
    the memory bandwidth (``bandwidth=2``/``0.5``: ``GBSEC - DRAM``).
    """
    if flops <= 0 or bandwidth <= 0:
        raise ValueError(f"scale factors must be positive, got flops={flops}, bandwidth={bandwidth}")
    out = dict(device)
    for c in flop_columns:
        out[c] = out[c] * flops
    out["GBSEC - DRAM"] = out["GBSEC - DRAM"] * bandwidth
    if name is not None:
        out["name"] = name
    return MappingProxyType(out)


def devices_dataset(devices: Mapping[str, Mapping[str, Any]] | DeviceTable, names: Iterable[str] | None = None
                    ) -> xr.Dataset:
    """Device parameters as an xarray Dataset over ``device`` (toolkit units).

    Parameters
    ----------
    devices : DeviceTable or mapping name -> device mapping
    names : iterable of str, optional
        Devices to take (default: all), in this order.

    Returns
    -------
    xarray.Dataset
        One variable per column of :data:`DEVICE_COLUMNS` (the toolkit's
        names, G-units as in the files), dimension ``device``; the variables
        broadcast against a kernel table in :func:`perfmod.models.roofline.predict`.
    """
    if isinstance(devices, DeviceTable):
        names = list(names) if names is not None else devices.names
        rows = {n: get_device(n, devices) for n in names}
    else:
        names = list(names) if names is not None else list(devices)
        unknown = [n for n in names if n not in devices]
        if unknown:
            raise KeyError(f"unknown device(s) {unknown}; known devices: {', '.join(devices)}")
        rows = {n: devices[n] for n in names}
    for n, row in rows.items():
        check_device(row, where=f"device {n!r}")
    units = {"GFLOPS": "Gflop/s", "GIOPS": "Gop/s", "GBSEC": "GB/s", "GOPS": "Gop/s"}
    data = {}
    for c in DEVICE_COLUMNS:
        vals = [float(rows[n].get(c, np.nan)) for n in names]
        data[c] = ("device", np.asarray(vals), {"units": units[c.split(" ")[0]], "long_name": f"device {c}"})
    return xr.Dataset(data, coords={"device": list(names)})
