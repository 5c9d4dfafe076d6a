"""Parameter sweeps of a study notebook on dask.distributed: one papermill process per point.

A grid file is papermill's parameter file plus two blocks::

    platform: lassen              # fixed for every point
    product:                      # every combination
      total_gpus: [16, 64]
      gpus_per_node: [[1, 4], [2, 6]]
    zip:                          # these vary together (equal lengths)
      models: [[postal], [maxrate]]
      base_device: [Tesla V100, Tesla P100]

Each point runs ``perfmod run NOTEBOOK -f <point>/parameters.yaml --out
<point>`` in its own process on a dask worker (papermill is not thread-safe
with a working directory, and kernels started side by side sometimes fail
with "Address already in use": such start failures are retried).  A point's
directory is named by a hash of the notebook's content, its parameters and
the perfmod sources, so ``resume=True`` skips exactly the points whose
result is still valid.  A notebook whose metadata has
``perfmod.exclusive: true`` measures the machine: its points take the
measuring lock exclusively (the one the Makefile's measuring studies take),
the others take it shared, so no two measuring points run at once and
nothing runs beside a measurement, whatever the number of workers.  The
executor is a ``LocalCluster`` (one single-threaded worker process per core
by default) or an existing cluster's scheduler.

The result is one :class:`xarray.Dataset`: the points' datasets combined
with the swept parameters as dimensions (a ``zip`` block is one dimension,
``zip``, with its parameters as coordinates), plus ``status`` (``ok`` or
``failed``), ``error``, ``elapsed`` (s) and ``point_dir`` over the same
dimensions.  A failed point is NaN in every result variable, never dropped.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
import yaml

from perfmod.core.io import annotate, write_dataset
from perfmod.measure.lock import measuring_lock
from perfmod.workflow.notebooks import declared_parameters
from perfmod.workflow.params import check_type, read_yaml_mapping

__all__ = ["SweepError", "Point", "read_grid", "grid_points", "sources_hash", "point_id", "host_lock", "run_point",
           "sweep"]

#: Substrings of a failed run's output that mean the kernel did not start (worth a retry).
START_FAILURES = ("Address already in use", "Kernel died before replying", "Kernel didn't respond",
                  "kernel_info_request", "Timeout waiting for IOPub")
ZIP_DIM = "zip"


class SweepError(ValueError):
    """A grid that cannot be swept (names the grid file and the key)."""


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its coordinates on the swept dimensions and its full parameter set."""

    index: dict[str, Any]
    params: dict[str, Any]


def read_grid(path: str | os.PathLike) -> dict[str, Any]:
    """Read a grid file (YAML): fixed parameters, ``product:`` and ``zip:`` blocks."""
    return read_yaml_mapping(path, "a mapping (parameters, product:, zip:)", SweepError)


def _key(value: Any) -> Any:
    """A coordinate value for a parameter value (lists and dicts become their JSON text)."""
    return value if isinstance(value, str | int | float | bool) else json.dumps(value)


def grid_points(grid: Mapping[str, Any], where: str = "grid") -> list[Point]:
    """Expand a grid into its points (product of ``product``, times the rows of ``zip``)."""
    fixed = {k: v for k, v in grid.items() if k not in ("product", "zip")}
    product = grid.get("product") or {}
    zipped = grid.get("zip") or {}
    for block, name in ((product, "product"), (zipped, "zip")):
        if not isinstance(block, dict):
            raise SweepError(f"{where}: {name}: expected a mapping of parameter -> list of values")
        for k, v in block.items():
            if not isinstance(v, list) or not v:
                raise SweepError(f"{where}: {name}.{k}: expected a non-empty list of values")
            if k in fixed:
                raise SweepError(f"{where}: {k} is both fixed and swept")
    if set(product) & set(zipped):
        raise SweepError(f"{where}: {sorted(set(product) & set(zipped))} in both product and zip")
    lengths = {len(v) for v in zipped.values()}
    if len(lengths) > 1:
        raise SweepError(f"{where}: zip: lists of different lengths {sorted(lengths)}")
    zip_rows = [dict(zip(zipped, row, strict=True)) for row in zip(*zipped.values(), strict=True)] if zipped else [{}]
    points = []
    for combo in itertools.product(*product.values()) if product else [()]:
        swept = dict(zip(product, combo, strict=True))
        for zi, zrow in enumerate(zip_rows):
            index = {k: _key(v) for k, v in swept.items()}
            if zipped:
                index[ZIP_DIM] = zi
            points.append(Point(index, fixed | swept | zrow))
    return points


def sources_hash() -> str:
    """SHA-256 of perfmod's own sources and shipped data (``*.py``, ``*.csv``, ``*.toml`` under the package)."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for f in sorted(root.rglob("*")):
        if f.suffix in (".py", ".csv", ".toml") and f.is_file():
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def point_id(notebook: Path, params: Mapping[str, Any], sources: str) -> str:
    """Hash of the notebook's content, the point's parameters and perfmod's sources (12 hex digits)."""
    h = hashlib.sha256(notebook.read_bytes())
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    h.update(sources.encode())
    return h.hexdigest()[:12]


@contextlib.contextmanager
def host_lock(exclusive: bool) -> Iterator[None]:
    """The measuring lock (:func:`perfmod.measure.lock.measuring_lock`): exclusive for a measuring point,
    shared for the others, so no point ever runs beside a measurement on the same data directory."""
    with measuring_lock(shared=not exclusive, quiet=True):
        yield


def run_point(notebook: str, params: dict[str, Any], point_dir: str, smoke: bool, exclusive: bool,
              retries: int = 2) -> dict[str, Any]:
    """Run one point in its own ``perfmod run`` process; return its status record (also in status.json)."""
    d = Path(point_dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / "parameters.yaml").write_text(yaml.safe_dump(params, sort_keys=True))
    cmd = [sys.executable, "-m", "perfmod.workflow.cli", "run", notebook, "-f", str(d / "parameters.yaml"),
           "--out", str(d), "-q"] + (["--smoke"] if smoke else [])
    t0 = time.perf_counter()
    attempts = 0
    with host_lock(exclusive):
        while True:
            attempts += 1
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=d)
            text = proc.stdout + proc.stderr
            if proc.returncode == 0 or attempts > retries or not any(s in text for s in START_FAILURES):
                break
    elapsed = time.perf_counter() - t0
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.startswith("perfmod run:")]
    record = {"status": "ok" if proc.returncode == 0 else "failed", "elapsed": elapsed, "attempts": attempts,
              "error": "" if proc.returncode == 0 else (lines[-1] if lines else proc.stderr.strip()[-500:]),
              "params": params, "host": os.uname().nodename}
    (d / "status.json").write_text(json.dumps(record, indent=1, default=str))
    return record


def _client(scheduler: str | None, workers: int | None) -> Any:
    from distributed import Client, LocalCluster

    if scheduler:
        return Client(scheduler)
    n = workers or os.cpu_count() or 1
    return Client(LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0"))


def _combine(points: list[Point], records: list[dict[str, Any]], dirs: list[Path], stem: str) -> xr.Dataset:
    dims = list(points[0].index)
    parts = []
    for p, rec, d in zip(points, records, dirs, strict=True):
        nc = d / f"{stem}.nc"
        ds = xr.open_dataset(nc).load() if rec["status"] == "ok" and nc.is_file() else xr.Dataset()
        ds = ds.drop_attrs(deep=False)
        extra = {"status": rec["status"], "error": rec["error"], "elapsed": rec["elapsed"], "point_dir": str(d)}
        ds = ds.assign({k: ((), v) for k, v in extra.items()})
        parts.append(ds.expand_dims({"point": [len(parts)]}).assign_coords(
            {k: ("point", [v]) for k, v in p.index.items()}))
    combined = xr.concat(parts, dim="point", join="outer", data_vars="all", coords="minimal",
                         compat="equals", fill_value={"status": "missing", "error": "", "point_dir": ""})
    if dims:  # the swept parameters become the dimensions, sorted (one level is a MultiIndex too)
        index = pd.MultiIndex.from_arrays([combined[k].values for k in dims], names=dims)
        combined = combined.drop_vars(["point", *dims]).assign_coords(
            xr.Coordinates.from_pandas_multiindex(index, "point")).unstack("point").transpose(*dims, ...)
    else:
        combined = combined.isel(point=0, drop=True)
    meta = {"elapsed": ("s", "wall time of the point (its perfmod run process)"),
            "status": ("", "ok, failed, or missing (not run)"), "error": ("", "the point's error, one line"),
            "point_dir": ("", "directory of the point's executed notebook, dataset and figures")}
    for name, (units, long_name) in meta.items():
        combined[name].attrs.update(units=units, long_name=long_name)
    return combined


def sweep(notebook: str | os.PathLike, grid: Mapping[str, Any] | str | os.PathLike, *, out: str | os.PathLike,
          scheduler: str | None = None, workers: int | None = None, resume: bool = False, smoke: bool = False,
          progress: bool = True) -> xr.Dataset:
    """Sweep ``notebook`` over ``grid``; write ``out/<point>/`` per point and ``out/sweep.nc``.

    Parameters
    ----------
    notebook : path
        The study notebook.
    grid : mapping or path
        The grid (see the module docstring) or its YAML file.
    out : path
        Sweep directory.
    scheduler : str, optional
        Address of a running dask scheduler; default a ``LocalCluster``.
    workers : int, optional
        LocalCluster workers (default: the cores).
    resume : bool
        Skip points that already finished ``ok`` with the same key.
    smoke : bool
        Start every point from the notebook's smoke parameters.

    Returns
    -------
    xarray.Dataset
        The combined results (also written to ``out/sweep.nc``).
    """
    import nbformat
    from distributed import as_completed
    from tqdm.auto import tqdm

    nb = Path(notebook).resolve()
    where = str(grid) if not isinstance(grid, Mapping) else "grid"
    g = dict(grid) if isinstance(grid, Mapping) else read_grid(grid)
    points = grid_points(g, where)
    declared = declared_parameters(nb)
    for p in points:
        for k, v in p.params.items():
            if k not in declared:
                raise SweepError(f"{where}: {nb.name} has no parameter {k!r}; parameters: {', '.join(declared)}")
            check_type(k, v, declared[k])
    exclusive = bool(nbformat.read(str(nb), as_version=4).metadata.get("perfmod", {}).get("exclusive", False))
    sources = sources_hash()
    root = Path(out).resolve()
    dirs = [root / point_id(nb, p.params, sources) for p in points]
    records: list[dict[str, Any] | None] = [None] * len(points)
    todo = []
    for i, d in enumerate(dirs):
        status = d / "status.json"
        if resume and status.is_file() and json.loads(status.read_text()).get("status") == "ok":
            records[i] = json.loads(status.read_text())
        else:
            todo.append(i)
    if todo:
        with _client(scheduler, workers) as client:
            futs = {client.submit(run_point, str(nb), points[i].params, str(dirs[i]), smoke, exclusive,
                                  pure=False, key=f"point-{dirs[i].name}"): i for i in todo}
            bar = tqdm(total=len(todo), desc=f"sweep {nb.stem}", disable=not progress)
            for fut in as_completed(futs):
                i = futs[fut]
                try:
                    records[i] = fut.result()
                except Exception as err:  # a worker lost mid-point: recorded, the others go on
                    records[i] = {"status": "failed", "error": f"{type(err).__name__}: {err}", "elapsed": np.nan}
                bar.update()
            bar.close()
    ds = _combine(points, [r for r in records if r is not None], dirs, nb.stem)
    ds = annotate(ds, f"{nb.stem}_sweep", f"perfmod sweep of {nb.name}", g)
    ds.attrs["executor"] = scheduler or f"LocalCluster({workers or os.cpu_count()} workers)"
    write_dataset(ds, root / "sweep.nc")
    return ds

