"""Parameter sweeps of a study notebook on dask.distributed: the study's ``run()`` in the worker, or a papermill
process per point.

A grid file is papermill's parameter file plus two blocks::

    platform: lassen              # fixed for every point
    product:                      # every combination
      total_gpus: [16, 64]
      gpus_per_node: [[1, 4], [2, 6]]
    zip:                          # these vary together (equal lengths)
      models: [[postal], [maxrate]]
      base_device: [Tesla V100, Tesla P100]

An analytic study of the standard shape runs each point's ``run()`` in the
dask worker's process (:mod:`perfmod.workflow.inprocess`: about a second a
point; executed notebooks only for the points asked for, ``notebooks=``).
Any other point runs ``perfmod run NOTEBOOK -f <point>/parameters.yaml --out
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
``zip``, with its parameters as coordinates; a parameter whose name the
points' datasets use themselves, such as a dimension ``gpus_per_node``, is
the dimension ``swept_<name>``), plus ``status`` (``ok``,
``failed``, or ``missing`` after an interrupt), ``error`` (the exception,
whole, and the cell or line it came from), ``elapsed`` (s) and
``point_dir`` over the same dimensions.  A failed point is NaN in every
numeric result and the empty string in every text result, never dropped, and
``out/sweep.nc`` equals the returned Dataset (no point's on-disk encoding is
kept: :func:`plain`).  SIGINT or SIGTERM stops every running point's
processes (:func:`stop_points`) and writes what completed; a point runs under
a lock of its own (:func:`point_lock`), so a resumed sweep never runs a point
twice at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
import yaml

from perfmod.core.io import annotate, read_dataset, write_dataset
from perfmod.measure.lock import measuring_lock
from perfmod.workflow.notebooks import declared_parameters
from perfmod.workflow.params import check_type, read_yaml_mapping
from perfmod.workflow.pointlock import point_lock

__all__ = ["SweepError", "Point", "read_grid", "grid_points", "sources_hash", "point_id", "host_lock", "point_lock",
           "run_point", "stop_points", "plain", "swept_name", "writable_dir", "sweep"]

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


def _describe_failure(proc: subprocess.CompletedProcess | subprocess.Popen, stderr: str) -> str:
    """The point's error as ``perfmod run`` reported it (whole, several lines), or how its process ended."""
    at = stderr.find("perfmod run: ")
    if at >= 0:
        text = stderr[at + len("perfmod run: "):]
        return "\n".join(ln for ln in text.strip().splitlines() if "rerun with --debug" not in ln)
    if proc.returncode is not None and proc.returncode < 0:
        return f"perfmod run was killed by {signal.Signals(-proc.returncode).name}"
    return stderr.strip()[-2000:] or f"perfmod run exited with status {proc.returncode}"


def run_point(notebook: str, params: dict[str, Any], point_dir: str, smoke: bool, exclusive: bool,
              retries: int = 2) -> dict[str, Any]:
    """Run one point in its own ``perfmod run`` process; return its status record (also in status.json).

    While it runs, ``point_dir/running.json`` names the process (pid, start time, host): an interrupted
    sweep stops it and its kernel (:func:`stop_points`).  A point another process is running is not started
    again: its record says so (status ``failed``, error ``already running ...``)."""
    d = Path(point_dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / "parameters.yaml").write_text(yaml.safe_dump(params, sort_keys=True))
    cmd = [sys.executable, "-m", "perfmod.workflow.cli", "run", notebook, "-f", str(d / "parameters.yaml"),
           "--out", str(d), "-q"] + (["--smoke"] if smoke else [])
    t0 = time.perf_counter()
    attempts = 0
    with point_lock(d) as fd:
        if fd is None:
            return {"status": "failed", "elapsed": 0.0, "attempts": 0, "params": params,
                    "error": f"already running in another process ({_read_json(d / 'running.json')})",
                    "host": os.uname().nodename}
        with host_lock(exclusive):
            while True:
                attempts += 1
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=d,
                                        pass_fds=(fd,))
                running = {"pid": proc.pid, "host": os.uname().nodename,
                           "create_time": _create_time(proc.pid)}
                (d / "running.json").write_text(json.dumps(running))
                try:
                    stdout, stderr = proc.communicate()
                finally:
                    (d / "running.json").unlink(missing_ok=True)
                text = stdout + stderr
                if proc.returncode == 0 or attempts > retries or not any(s in text for s in START_FAILURES):
                    break
        elapsed = time.perf_counter() - t0
        record = {"status": "ok" if proc.returncode == 0 else "failed", "elapsed": elapsed, "attempts": attempts,
                  "error": "" if proc.returncode == 0 else _describe_failure(proc, stderr),
                  "params": params, "host": os.uname().nodename}
        (d / "status.json").write_text(json.dumps(record, indent=1, default=str))
    return record


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _create_time(pid: int) -> float | None:
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def stop_points(dirs: list[Path], grace: float = 3.0) -> list[int]:
    """Stop the processes of the points still running in ``dirs`` (their ``perfmod run`` and its kernel).

    Reads each ``running.json`` written by :func:`run_point` on this host; a process whose start time
    differs (its pid was reused) is left alone.  SIGTERM, then SIGKILL after ``grace`` seconds.
    Returns the pids stopped."""
    import psutil

    procs = []
    for d in dirs:
        info = _read_json(d / "running.json")
        if not isinstance(info, dict) or info.get("host") != os.uname().nodename:
            continue
        try:
            top = psutil.Process(int(info["pid"]))
            if info.get("create_time") is not None and abs(top.create_time() - info["create_time"]) > 0.01:
                continue
            procs += [*top.children(recursive=True), top]
        except psutil.Error:
            continue
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=grace)
    return [p.pid for p in procs]


def _client(scheduler: str | None, workers: int | None) -> Any:
    from distributed import Client, LocalCluster

    if scheduler:
        return Client(scheduler)
    n = workers or os.cpu_count() or 1
    return Client(LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0"))


def plain(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` as it reads back from netCDF: no on-disk encoding kept from a point's file (which would cut
    strings to that point's width and write the NaN of a missing integer as a sentinel), and a missing
    string (a failed point) as the empty string, the declared fill value of text results."""
    ds = ds.drop_encoding()
    for name in list(ds.variables):
        var = ds[name]
        if var.dtype != object:
            continue
        values = var.values
        missing = pd.isna(values)
        if missing.any() and all(isinstance(v, str) for v in values[~missing]):
            filled = np.where(missing, "", values).astype(object)
            ds[name] = var.copy(data=filled)
            ds[name].attrs["fill_value_meaning"] = "the empty string: no value (the point did not finish ok)"
    return ds


def swept_name(name: str, taken: set[str]) -> str:
    """The sweep dimension of parameter ``name``: its own name, or ``swept_<name>`` where the points' datasets
    already use that name for a dimension or variable (``gpus_per_node`` in choi2020_what_if)."""
    return f"swept_{name}" if name in taken else name


def _combine(points: list[Point], records: list[dict[str, Any]], dirs: list[Path], stem: str) -> xr.Dataset:
    loaded = []
    for rec, d in zip(records, dirs, strict=True):
        nc = d / f"{stem}.nc"
        ds = rec.get("dataset")  # an in-process point's, as it came back
        if ds is None:
            ds = read_dataset(nc) if rec["status"] == "ok" and nc.is_file() else xr.Dataset()
        loaded.append(ds.drop_attrs(deep=False).drop_encoding())
    taken = {str(n) for ds in loaded for n in (*ds.dims, *ds.variables)}
    rename = {k: swept_name(k, taken) for k in points[0].index}
    dims = list(rename.values())
    parts = []
    for p, rec, d, ds in zip(points, records, dirs, loaded, strict=True):
        extra = {"status": rec["status"], "error": rec["error"], "elapsed": rec["elapsed"], "point_dir": str(d)}
        ds = ds.assign({k: ((), v) for k, v in extra.items()})
        parts.append(ds.expand_dims({"point": [len(parts)]}).assign_coords(
            {rename[k]: ("point", [v]) for k, v in p.index.items()}))
    combined = xr.concat(parts, dim="point", join="outer", data_vars="all", coords="minimal",
                         compat="equals", fill_value={"status": "missing", "error": "", "point_dir": ""})
    if dims:  # the swept parameters become the dimensions, sorted (one level is a MultiIndex too)
        index = pd.MultiIndex.from_arrays([combined[k].values for k in dims], names=dims)
        combined = combined.drop_vars(["point", *dims]).assign_coords(
            xr.Coordinates.from_pandas_multiindex(index, "point")).unstack("point").transpose(*dims, ...)
    else:
        combined = combined.isel(point=0, drop=True)
    meta = {"elapsed": ("s", "wall time of the point (its perfmod run process)"),
            "status": ("", "ok, failed, or missing (not run)"),
            "error": ("", "the point's error: the exception, the cell and line it came from"),
            "point_dir": ("", "directory of the point's executed notebook, dataset and figures")}
    for name, (units, long_name) in meta.items():
        combined[name].attrs.update(units=units, long_name=long_name)
    return plain(combined)


def sweep(notebook: str | os.PathLike, grid: Mapping[str, Any] | str | os.PathLike, *, out: str | os.PathLike,
          scheduler: str | None = None, workers: int | None = None, resume: bool = False, smoke: bool = False,
          progress: bool = True, notebooks: str = "failed", inprocess: bool | None = None) -> xr.Dataset:
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
    notebooks : {"failed", "all", "none"}
        Which points get an executed notebook (``point_dir/<notebook>``):
        the failed ones (default), all (every point runs under papermill),
        none.
    inprocess : bool, optional
        Run the study's ``run`` in the worker's process
        (:mod:`perfmod.workflow.inprocess`; about a second a point) instead
        of a papermill process per point.  Default: in-process for an
        analytic study of the standard shape unless ``notebooks="all"``;
        never for a measuring study.

    Returns
    -------
    xarray.Dataset
        The combined results (also written to ``out/sweep.nc``).
    """
    import nbformat

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
    if notebooks not in ("failed", "all", "none"):
        raise SweepError(f"--notebooks {notebooks!r}: choose failed, all or none")
    from perfmod.workflow.inprocess import study_module

    module = study_module(nb) if not exclusive and notebooks != "all" else None
    if inprocess and module is None:
        raise SweepError(f"{nb.name}: cannot run in-process (a measuring study, notebooks='all', or not the shape "
                         "'ds = study.run(**study_parameters(study.run, globals())); write_dataset(ds, dataset_path)')")
    if inprocess is False:
        module = None
    if workers is not None and workers < 1:
        raise SweepError(f"--workers {workers}: give at least 1 worker process (or leave it out for one per core)")
    root = writable_dir(out)
    sources = sources_hash()
    dirs = [root / point_id(nb, p.params, sources) for p in points]
    records: list[dict[str, Any] | None] = [None] * len(points)
    todo = []
    for i, d in enumerate(dirs):
        records[i] = _finished(d) if resume else None
        if records[i] is None:
            todo.append(i)
    try:
        with _terminate_as_interrupt():
            if todo:
                _run_points(nb, points, dirs, records, todo, smoke, exclusive, scheduler, workers, progress, module,
                            notebooks)
    except KeyboardInterrupt:
        for i in todo:  # a point its worker finished before the interrupt, whose record had not come back yet
            if records[i] is None:
                records[i] = _finished(dirs[i])
        stop_points([dirs[i] for i in todo if records[i] is None])
        _write(nb, g, points, records, dirs, root, scheduler, workers)  # the completed points and their status
        raise
    return _write(nb, g, points, records, dirs, root, scheduler, workers)


def _run_points(nb: Path, points: list[Point], dirs: list[Path], records: list[dict[str, Any] | None],
                todo: list[int], smoke: bool, exclusive: bool, scheduler: str | None, workers: int | None,
                progress: bool, module: str | None = None, notebooks: str = "failed") -> None:
    from distributed import as_completed
    from tqdm.auto import tqdm

    from perfmod.workflow.inprocess import run_point_inprocess

    def submit(i: int, papermill: bool) -> Any:
        if papermill:
            return client.submit(run_point, str(nb), points[i].params, str(dirs[i]), smoke, exclusive,
                                 pure=False, key=f"point-{dirs[i].name}-papermill")
        return client.submit(run_point_inprocess, module, str(nb), points[i].params, str(dirs[i]), smoke,
                             pure=False, key=f"point-{dirs[i].name}")

    with _client(scheduler, workers) as client:
        futs = {submit(i, module is None): i for i in todo}
        bar = tqdm(total=len(todo), desc=f"sweep {nb.stem}", disable=not progress)
        try:
            ac = as_completed(futs)
            for fut in ac:
                i = futs[fut]
                try:
                    rec = fut.result()
                except Exception as err:  # a worker lost mid-point: recorded, the others go on
                    rec = {"status": "failed", "error": f"{type(err).__name__}: {err}", "elapsed": np.nan}
                if module is not None and rec.get("mode") == "in-process" and rec["status"] != "ok" \
                        and notebooks == "failed":  # its executed notebook shows where it failed
                    again = submit(i, True)
                    futs[again] = i
                    ac.add(again)
                    records[i] = rec
                    continue
                records[i] = rec
                bar.update()
        except KeyboardInterrupt:  # stop the points' processes before the cluster goes (it would orphan them)
            stop_points([dirs[i] for i in todo])
            raise
        finally:
            bar.close()


def _finished(d: Path) -> dict[str, Any] | None:
    """The status record of point directory ``d`` where its run finished ok (``status.json``, written after its
    dataset), else None (not run, failed, or the record being written)."""
    try:
        record = json.loads((d / "status.json").read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("status") == "ok" else None


def _write(nb: Path, grid: dict[str, Any], points: list[Point], records: list[dict[str, Any] | None],
           dirs: list[Path], root: Path, scheduler: str | None, workers: int | None) -> xr.Dataset:
    missing = {"status": "missing", "error": "not run (the sweep was interrupted)", "elapsed": np.nan}
    ds = _combine(points, [r if r is not None else missing for r in records], dirs, nb.stem)
    ds = annotate(ds, f"{nb.stem}_sweep", f"perfmod sweep of {nb.name}", grid)
    ds.attrs["executor"] = scheduler or f"LocalCluster({workers or os.cpu_count()} workers)"
    write_dataset(ds, root / "sweep.nc")
    return ds


def writable_dir(out: str | os.PathLike) -> Path:
    """``out`` as a directory this process can write into (made if missing); else :class:`SweepError`."""
    root = Path(out).resolve()
    if root.exists() and not root.is_dir():
        raise SweepError(f"--out {out}: is a file, not a directory; give a directory for the sweep")
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=root):
            pass
    except OSError as e:
        raise SweepError(f"--out {out}: cannot write there ({e.strerror})") from None
    return root


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt in the main thread for the block, so it stops the points as SIGINT does."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    old = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
