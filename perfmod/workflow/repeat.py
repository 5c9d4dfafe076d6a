"""Run a measuring study N times from scratch: each run's headline figures, their median and range.

::

    perfmod repeat STUDY [-n 3] [--smoke] [--out DIR] [--resume] [--canonical]

A study's result on a shared machine is a distribution, not one number.
:func:`repeat` executes the study's notebook ``n`` times, each a fresh
papermill kernel in a run directory of its own (``DIR/run<i>-<key>/``: the
executed notebook, the dataset, the figures; outputs placed as ``perfmod run``
places them, :func:`perfmod.workflow.params.place_outputs`, so a repeat never
writes ``data/processed``, ``figures`` or ``data/platforms/local.toml``).  The
whole repeat holds the measuring lock (:func:`perfmod.measure.lock.measuring_lock`),
exclusively for a measuring study (notebook metadata ``perfmod.exclusive``), so
nothing else measures in between.

After every run the dataset ``DIR/repeat_<study>.nc`` is rewritten from the
completed runs' datasets, so an interrupt loses at most the run in progress; it
holds, over the dimension ``run``:

- each headline figure of the study (the study module's ``headline(ds)``,
  :mod:`perfmod.campaign.headline`), with its units and long name, and the run
  counts (``runs_total``, ``runs_interfered``, ``runs_clean``);
- ``measured_utc``, ``elapsed`` (s), ``load_before`` and ``load_after`` (the
  1-minute load average around the run), ``run_dir``;

and, per figure, ``<figure>_median``, ``<figure>_min`` and ``<figure>_max`` over
the runs where it is finite (a run whose model could not be fitted is NaN there
and counts in none of them).  ``--canonical`` also writes it, once all ``n``
runs are done, to ``data/processed/repeat_<study>.nc``, the file the
documentation quotes (:func:`repeat_figures`).

``<key>`` hashes the notebook, the smoke flag and perfmod's sources
(:func:`perfmod.workflow.sweep.point_id`): ``resume=True`` keeps the completed
runs of ``DIR`` with the same key and runs only the missing ones; runs made with
other code are never mixed in.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import xarray as xr

from perfmod.campaign.headline import COUNTS
from perfmod.core.io import annotate, read_dataset, write_dataset
from perfmod.core.paths import data_dir
from perfmod.measure.lock import measuring_lock
from perfmod.workflow.catalog import studies
from perfmod.workflow.notebooks import declared_parameters, run_notebook
from perfmod.workflow.params import default_run_dir, place_outputs
from perfmod.workflow.sweep import point_id, sources_hash

__all__ = ["STATS", "RepeatFigure", "measuring_studies", "headline_of", "repeat_path", "combine_runs", "repeat",
           "figures_of", "repeat_figures", "format_value",
           "headline_summary"]

#: Statistics over the runs written beside each figure: suffix -> (function, long-name prefix).
STATS: dict[str, tuple[Callable[[np.ndarray], float], str]] = {
    "median": (np.median, "median over the runs of"),
    "min": (np.min, "smallest over the runs of"),
    "max": (np.max, "largest over the runs of"),
}
_PER_RUN = {
    "measured_utc": ("1", "when the run measured (UTC; the dataset's measured_utc, else the run's start)"),
    "elapsed": ("s", "wall time of the run (its notebook)"),
    "load_before": ("1", "1-minute load average of the machine when the run started"),
    "load_after": ("1", "1-minute load average of the machine when the run ended"),
    "run_dir": ("1", "directory of the run's executed notebook, dataset and figures"),
}


def _exclusive(nb: Path) -> bool:
    return bool(nbformat.read(str(nb), as_version=4).metadata.get("perfmod", {}).get("exclusive", False))


def measuring_studies() -> list[str]:
    """The studies that measure this machine (:func:`perfmod.workflow.catalog.studies`, metadata ``exclusive``)."""
    return [s.name for s in studies() if s.measuring]


def _headline_function(study: str) -> Callable[[xr.Dataset], dict[str, xr.DataArray]]:
    try:
        module = importlib.import_module(f"perfmod.studies.{study}")
    except ModuleNotFoundError:
        raise LookupError(f"no study module perfmod.studies.{study}") from None
    fn = getattr(module, "headline", None)
    if not callable(fn):
        raise LookupError(f"perfmod.studies.{study} has no headline(ds): only measuring studies are repeated "
                          f"({', '.join(measuring_studies())})")
    return fn


def headline_of(study: str, ds: xr.Dataset) -> dict[str, xr.DataArray]:
    """The headline figures of ``study``'s dataset ``ds``: ``perfmod.studies.<study>.headline(ds)``.

    Raises
    ------
    LookupError
        The study has no module or no ``headline`` function (it does not measure).
    """
    return _headline_function(study)(ds)


def repeat_path(study: str, directory: str | Path | None = None) -> Path:
    """``<directory or data/processed>/repeat_<study>.nc``: the canonical repeat dataset of a study."""
    return (Path(directory) if directory is not None else data_dir() / "processed") / f"repeat_{study}.nc"


def _stat(fn: Callable[[np.ndarray], float], values: np.ndarray) -> float:
    v = values[np.isfinite(values)]
    return float(fn(v)) if v.size else float("nan")


def combine_runs(study: str, runs: list[dict[str, Any]], parameters: dict[str, Any]) -> xr.Dataset:
    """The repeat dataset from completed runs: each a record with ``index``, ``dataset`` and the per-run fields.

    Parameters
    ----------
    study : str
        The study (its ``headline`` is applied to every run's dataset).
    runs : list of dict
        ``{"index": int, "dataset": xarray.Dataset, "measured_utc": str, "elapsed": float,
        "load_before": float, "load_after": float, "run_dir": str}`` per completed run.
    parameters : dict
        What was repeated (``study``, ``n``, ``smoke``, ``key``), stored as the ``parameters`` attribute.

    Returns
    -------
    xarray.Dataset
        The figures over ``run``, the per-run fields, and ``<figure>_median``, ``_min``, ``_max``.
    """
    if not runs:
        raise ValueError(f"{study}: no completed run to combine")
    heads = [headline_of(study, r["dataset"]) for r in runs]
    names = list(heads[0])
    for r, h in zip(runs, heads, strict=True):
        if list(h) != names:
            raise ValueError(f"{study}: run {r['index']} has headline figures {list(h)}, run "
                             f"{runs[0]['index']} has {names}")
    ds = xr.Dataset(coords={"run": ("run", [int(r["index"]) for r in runs],
                                    {"units": "1", "long_name": "run of the repeat (0 is the first)"})})
    for name in names:
        values = np.array([float(h[name]) for h in heads])
        attrs = dict(heads[0][name].attrs)
        ds[name] = ("run", values, attrs)
        for suffix, (fn, prefix) in STATS.items():
            ds[f"{name}_{suffix}"] = ((), _stat(fn, values),
                                      {"units": attrs["units"], "long_name": f"{prefix} {attrs['long_name']}"})
    for field, (units, long_name) in _PER_RUN.items():
        values = [r[field] for r in runs]
        ds[field] = ("run", np.array(values, dtype=str if isinstance(values[0], str) else float),
                     {"units": units, "long_name": long_name})
    ds = annotate(ds, f"repeat_{study}", f"perfmod repeat: headline figures of {len(runs)} runs of the {study} "
                  "study, each from scratch", parameters)
    ds.attrs.update(repeated_study=study, runs_requested=int(parameters.get("n", len(runs))),
                    runs_completed=len(runs))
    return ds


def _load() -> float:
    try:
        return float(os.getloadavg()[0])
    except OSError:
        return float("nan")


def _utc() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def format_value(value: float, units: str, name: str = "") -> str:
    """A figure as the repeat's output and the docs show it: errors in %, seconds with ``s``, counts as integers."""
    if not np.isfinite(value):
        return "NaN"
    if units == "1" and "error" in name:
        return f"{100 * value:.1f} %"
    if name in COUNTS:
        return f"{value:.0f}"
    return f"{value:.3g} s" if units == "s" else f"{value:.3g}"


def _record(run_dir: Path, stem: str, status: dict[str, Any]) -> dict[str, Any]:
    ds = read_dataset(run_dir / f"{stem}.nc")
    return {**status, "dataset": ds, "measured_utc": str(ds.attrs.get("measured_utc", status["started_utc"])),
            "run_dir": str(run_dir)}


def repeat(notebook: str | Path, n: int = 3, *, out: str | Path | None = None, smoke: bool = False,
           canonical: bool = False, resume: bool = False, progress: bool = True,
           echo: Callable[[str], None] = print) -> xr.Dataset:
    """Run a measuring study ``n`` times from scratch and write its repeat dataset (see the module docstring).

    Parameters
    ----------
    notebook : path
        The study notebook.
    n : int
        Runs (at least 1).
    out : path, optional
        Repeat directory (default ``runs/repeat_<study>-<time>`` under the current directory).
    smoke : bool
        Run the notebook's smoke parameters (seconds; for tests).
    canonical : bool
        Also write ``data/processed/repeat_<study>.nc`` when all ``n`` runs are done.
    resume : bool
        Keep the completed runs of ``out`` made with the same notebook, smoke flag and sources.
    progress : bool
        Papermill's progress bar within each run.
    echo : callable
        Where the per-run progress lines go.

    Returns
    -------
    xarray.Dataset
        The repeat dataset (also in ``out/repeat_<study>.nc``).
    """
    nb = Path(notebook).resolve()
    stem = nb.stem
    if n < 1:
        raise ValueError(f"repeat {stem}: n must be at least 1, not {n}")
    if canonical and smoke:
        raise ValueError("--canonical repeats the study with its defaults; drop --smoke")
    _headline_function(stem)  # a study that cannot be scored fails before it measures
    root = Path(out).resolve() if out else default_run_dir(f"repeat_{stem}")
    key = point_id(nb, {"smoke": smoke}, sources_hash())
    parameters = {"study": stem, "n": n, "smoke": smoke, "key": key}
    done: dict[int, dict[str, Any]] = {}
    for d in sorted(root.glob(f"run*-{key}")) if root.is_dir() else []:
        status = d / "status.json"
        if status.is_file() and json.loads(status.read_text()).get("status") == "ok":
            if not resume:
                raise FileExistsError(f"{root} holds completed runs of an earlier repeat ({d.name}); give --resume "
                                      "to keep them, or another --out")
            rec = json.loads(status.read_text())
            if rec["index"] < n:
                done[rec["index"]] = _record(d, stem, rec)
    if done:
        echo(f"repeat {stem}: keeping {len(done)} completed run(s) of {root}")
    declared = declared_parameters(nb)
    target = root / f"repeat_{stem}.nc"
    ds = combine_runs(stem, [done[i] for i in sorted(done)], parameters) if done else None
    if ds is not None:
        write_dataset(ds, target)
    with measuring_lock(shared=not _exclusive(nb), quiet=False):
        for i in range(n):
            if i in done:
                continue
            run_dir = root / f"run{i}-{key}"
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / "status.json").unlink(missing_ok=True)
            status = {"index": i, "status": "running", "started_utc": _utc(), "load_before": _load()}
            echo(f"repeat {stem}: run {i + 1} of {n} started {status['started_utc']} "
                 f"(load {status['load_before']:.2f}) in {run_dir}")
            params = place_outputs(declared, {}, run_dir, smoke, stem)
            t0 = time.perf_counter()
            try:
                run_notebook(nb, params, smoke=smoke, output=run_dir / nb.name, progress=progress)
            except BaseException as err:
                status.update(status="failed", error=f"{type(err).__name__}: {str(err).strip()[:500]}",
                              elapsed=time.perf_counter() - t0)
                (run_dir / "status.json").write_text(json.dumps(status, indent=1))
                echo(f"repeat {stem}: run {i + 1} of {n} did not finish ({type(err).__name__}); the "
                     f"{len(done)} completed run(s) are in {target}")
                raise
            status.update(status="ok", elapsed=time.perf_counter() - t0, load_after=_load())
            (run_dir / "status.json").write_text(json.dumps(status, indent=1))
            done[i] = _record(run_dir, stem, status)
            ds = combine_runs(stem, [done[j] for j in sorted(done)], parameters)
            write_dataset(ds, target)
            figs = ", ".join(f"{name} {format_value(float(ds[name].sel(run=i)), ds[name].attrs['units'], name)}"
                             for name in ds.data_vars if ds[name].dims == ("run",) and name not in _PER_RUN)
            echo(f"repeat {stem}: run {i + 1} of {n} done in {status['elapsed']:.0f} s: {figs}")
    assert ds is not None  # n >= 1 runs completed
    echo(f"repeat {stem}: {ds.sizes['run']} run(s) in {target}")
    if canonical:
        echo(f"repeat {stem}: wrote {write_dataset(ds, repeat_path(stem))}")
    return ds


@dataclass(frozen=True)
class RepeatFigure:
    """One headline figure of a repeat dataset, as the documentation quotes it.

    Attributes
    ----------
    name, units, long_name : str
        The figure.
    median, low, high : float
        Median, smallest and largest over the runs where it is finite.
    runs, of : int
        Runs with a finite value, and all runs of the dataset.
    """

    name: str
    units: str
    long_name: str
    median: float
    low: float
    high: float
    runs: int
    of: int

    def text(self) -> str:
        """``median X (range A to B) over k runs`` (``of N`` when some runs have no value)."""
        f = [format_value(v, self.units, self.name) for v in (self.median, self.low, self.high)]
        count = f"{self.runs} runs" if self.runs == self.of else f"{self.runs} of {self.of} runs"
        return f"median {f[0]} (range {f[1]} to {f[2]}) over {count}"


def figures_of(ds: xr.Dataset) -> list[RepeatFigure]:
    """The headline figures of a repeat dataset (:func:`combine_runs`), in its order."""
    out = []
    for name, var in ds.data_vars.items():
        if var.dims != ("run",) or name in _PER_RUN:
            continue
        values = np.asarray(var.values, float)
        out.append(RepeatFigure(str(name), var.attrs["units"], var.attrs["long_name"], float(ds[f"{name}_median"]),
                                float(ds[f"{name}_min"]), float(ds[f"{name}_max"]), int(np.isfinite(values).sum()),
                                int(values.size)))
    return out


def repeat_figures(study: str, directory: str | Path | None = None) -> list[RepeatFigure] | None:
    """The headline figures of ``study``'s repeat dataset (:func:`repeat_path`), or None when it has none."""
    path = repeat_path(study, directory)
    return figures_of(read_dataset(path)) if path.is_file() else None


def headline_summary(study: str, single: xr.Dataset | None = None,
                     directory: str | Path | None = None) -> tuple[str, list[str], list[list[str]]]:
    """What the documentation says about a measuring study's headline: a sentence, a table header and rows.

    From the repeat dataset (:func:`repeat_figures`) when ``directory`` (default
    ``data/processed``) has one: each figure's median, range and number of runs.
    Otherwise it says plainly that there is one run only, and gives the figures
    of ``single`` (the study's dataset; no rows without it).
    """
    figs = repeat_figures(study, directory)
    if figs is not None:
        n = figs[0].of if figs else 0
        sentence = (f"Headline figures: median and range over {n} runs of the whole study, each from scratch "
                    f"(data/processed/repeat_{study}.nc, written by make repeat-{study}).")
        rows = [[f.long_name, format_value(f.median, f.units, f.name),
                 f"{format_value(f.low, f.units, f.name)} to {format_value(f.high, f.units, f.name)}",
                 str(f.runs) if f.runs == f.of else f"{f.runs} of {f.of}"] for f in figs]
        return sentence, ["figure", "median", "range", "runs"], rows
    sentence = (f"Headline figures: one run (no repeat dataset yet: run make repeat-{study}); a single run "
                "on a shared machine is not a result on its own.")
    rows = [] if single is None else [[str(v.attrs["long_name"]), format_value(float(v), v.attrs["units"], name)]
                                      for name, v in headline_of(study, single).items()]
    return sentence, ["figure", "this run"], rows
