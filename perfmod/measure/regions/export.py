"""Exports of recorded region calls: lwperf CSV, Extra-P JSON Lines, xarray (paper 004 §V).

* lwperf's CSV backend writes one file per region, ``<region>.csv``, whose
  header lists the invariant names, then the region's parameter names, then
  the result names (energy counters, then ``time``, seconds), one row per call
  (gtcasl/lwperf ``src/csvbackend.cpp``, ``src/logger.h``).
* Extra-P reads JSON Lines (``*.jsonl``), one measurement per line:
  ``{"params": {...}, "callpath": ..., "metric": ..., "value": ...}``; the
  call path here is the chain of enclosing regions joined by ``->``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from perfmod.core.io import write_text_atomic

from .store import RegionStore

__all__ = ["to_lwperf_csv", "to_extrap_jsonl", "to_xarray", "callpaths"]

_CALL_COLUMNS = ("trialID", "run_id", "region", "rank", "seq", "parent_seq", "start_ns", "time_ns", "exclusive_ns",
                 "energy_j", "time", "exclusive_time")


def _param_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if c not in _CALL_COLUMNS]


def to_lwperf_csv(store: RegionStore, directory: str | Path, invariants: Sequence[str] = ()) -> list[Path]:
    """Write ``<region>.csv`` per region in lwperf's layout: invariants, parameters, results (``time`` in s).

    Parameters
    ----------
    store : RegionStore
        The recorded calls.
    directory : path-like
        Destination folder (created).
    invariants : sequence of str
        Columns that are lwperf invariants (listed first).
    """
    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for reg in store.regions():
        df = store.calls(reg)
        params = [p for p in store.parameter_names(reg) if p not in invariants]
        inv = [i for i in invariants if i in df.columns]
        results = (["energy"] if df["energy_j"].notna().any() else []) + ["time"]
        table = df[inv + params].copy()
        if "energy" in results:
            table["energy"] = df["energy_j"]
        table["time"] = df["time"]
        lines = [",".join(inv + params + results)]
        lines += [",".join(repr(float(v)) for v in row) for row in table.to_numpy(dtype=float)]
        path = out_dir / f"{reg}.csv"
        write_text_atomic(path, "\n".join(lines) + "\n")
        written.append(path)
    return written


def callpaths(df: pd.DataFrame) -> pd.Series:
    """Call path of each call (``outer->inner``), following ``parent_seq`` within a run and rank."""
    names = {(r, k, s): n for r, k, s, n in zip(df["run_id"], df["rank"], df["seq"], df["region"], strict=True)}
    parents = {(r, k, s): p for r, k, s, p in zip(df["run_id"], df["rank"], df["seq"], df["parent_seq"], strict=True)}
    out = []
    for key in zip(df["run_id"], df["rank"], df["seq"], strict=True):
        chain = []
        cur = key
        while cur in names:
            chain.append(names[cur])
            p = parents[cur]
            if p < 0:
                break
            cur = (cur[0], cur[1], p)
        out.append("->".join(reversed(chain)))
    return pd.Series(out, index=df.index, name="callpath")


def to_extrap_jsonl(store: RegionStore, path: str | Path, metric: str = "time", exclusive: bool = False) -> Path:
    """Write every call as one Extra-P JSON Lines measurement (``value`` in seconds, or joules for energy)."""
    df = store.calls()
    paths = callpaths(df)
    col = {"time": "exclusive_time" if exclusive else "time", "energy": "energy_j"}[metric]
    lines = []
    for reg, sub in df.groupby("region", sort=True):
        params = store.parameter_names(str(reg))
        for idx, row in sub.iterrows():
            if pd.isna(row[col]):
                continue
            lines.append(json.dumps({"params": {p: float(row[p]) for p in params if pd.notna(row[p])},
                                     "callpath": paths[idx], "metric": metric, "value": float(row[col])}))
    out = Path(path)
    write_text_atomic(out, "\n".join(lines) + ("\n" if lines else ""))
    return out


def to_xarray(store: RegionStore, region: str) -> xr.Dataset:
    """One region's calls as a Dataset over ``call``: times (s), rank, parameters as coordinates."""
    df = store.calls(region)
    params = store.parameter_names(region)
    ds = xr.Dataset(
        {
            "time": ("call", df["time"].to_numpy(), {"units": "s", "long_name": "inclusive wall time"}),
            "exclusive_time": ("call", df["exclusive_time"].to_numpy(),
                               {"units": "s", "long_name": "wall time minus nested regions"}),
            "energy": ("call", df["energy_j"].to_numpy(dtype=float), {"units": "J", "long_name": "energy"}),
            "start": ("call", df["start_ns"].to_numpy(dtype=np.int64),
                      {"units": "ns since the Unix epoch", "long_name": "call start"}),
        },
        coords={"call": np.arange(len(df)), "rank": ("call", df["rank"].to_numpy()),
                **{p: ("call", df[p].to_numpy(dtype=float)) for p in params}},
        attrs={"region": region, "source": str(store.path)},
    )
    return ds
