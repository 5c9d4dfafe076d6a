"""What every measuring study does with its records: raw files written once, provenance on the result.

A study's ``run`` measures, writes each raw measurement under ``raw_out``
(``data/raw/<host>/`` when empty) with :func:`save_raw` (never overwriting),
and returns its dataset with :func:`provenance` applied: the global
attributes of :func:`perfmod.core.io.provenance_attrs` plus ``raw_files``, the raw files the numbers were
computed from.  The notebook writes the dataset and figures at the end, so an
interrupted run leaves the previous set of outputs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from perfmod.core.io import annotate, read_dataset, write_dataset
from perfmod.core.paths import raw_dir
from perfmod.measure.validity import FLAG_META, clean_reduce, run_flags

__all__ = ["save_raw", "provenance", "FLAG_FIELDS", "new_flags", "record_flags", "flag_variables",
           "mask_interfered", "clean_medians", "record_drops", "validity_note", "read_raw"]

FLAG_FIELDS = ("interfered", "off_cpu", "attempts", "interfered_attempts", "load_before")
"""The per-run flags of :func:`perfmod.measure.validity.run_flags` a study keeps over its run dimensions."""


def save_raw(ds: xr.Dataset, study: str, name: str, parameters: Mapping[str, Any], source: str,
             directory: str | Path = "") -> Path:
    """Write a measurement to ``<directory or data/raw/<host>>/<study>-<name>-<UTC stamp>.nc``; never overwrites.

    Parameters
    ----------
    ds : xarray.Dataset
        The raw measurement (units on every variable).
    study, name : str
        Study and part of the measurement (file name).
    parameters : mapping
        The study's parameters (stored as JSON in the file).
    source : str
        What was measured.
    directory : str or Path
        Output directory; empty: :func:`perfmod.core.paths.raw_dir`.

    Returns
    -------
    Path
        The file written.
    """
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    out = Path(directory) if directory else raw_dir()
    path = out / f"{study}-{name}-{stamp}.nc"
    write_dataset(annotate(ds, study, source, parameters), path, overwrite=False)
    return path


def provenance(ds: xr.Dataset, study: str, source: str, parameters: Mapping[str, Any],
               raw_files: Sequence[str | Path] = ()) -> xr.Dataset:
    """``ds`` with the provenance attributes (:func:`perfmod.core.io.provenance_attrs`) and ``raw_files``."""
    out = annotate(ds, study=study, source=source, parameters=parameters)
    out.attrs["raw_files"] = "; ".join(str(p) for p in raw_files)
    return out


def read_raw(ds: xr.Dataset, index: int = 0) -> xr.Dataset:
    """The raw measurement ``ds`` was computed from: its ``index``-th file in ``raw_files`` (:func:`provenance`).

    Raises
    ------
    ValueError
        ``ds`` names no raw file, or fewer than ``index + 1``.
    """
    files = [f for f in str(ds.attrs.get("raw_files", "")).split("; ") if f]
    if len(files) <= index:
        raise ValueError(f"the dataset names {len(files)} raw file(s) in its raw_files attribute, so no file "
                         f"number {index} (study {ds.attrs.get('study', '?')!r})")
    return read_dataset(files[index])


def new_flags(shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Empty per-run flag arrays (``interfered`` False, the numbers NaN) of a design's ``shape``."""
    return {f: (np.zeros(shape, bool) if f == "interfered" else np.full(shape, np.nan)) for f in FLAG_FIELDS}


def record_flags(flags: dict[str, np.ndarray], index: tuple[int, ...], res: Mapping[str, Any]) -> None:
    """Store the flags of one :func:`~perfmod.measure.runner.run_mpi` result at ``index``."""
    rec = run_flags(res)
    for f in FLAG_FIELDS:
        flags[f][index] = rec[f]


def flag_variables(flags: Mapping[str, np.ndarray], dims: Sequence[str]) -> dict[str, tuple]:
    """The flag arrays as dataset variables over ``dims``, with units and long names from ``FLAG_META``."""
    return {f: (tuple(dims), np.asarray(flags[f], bool if f == "interfered" else float),
                {"units": FLAG_META[f][0], "long_name": FLAG_META[f][1]}) for f in FLAG_FIELDS}


def mask_interfered(ds: xr.Dataset, names: Sequence[str]) -> xr.Dataset:
    """``ds`` with the values of the interfered runs of ``names`` set to NaN (the flags themselves kept)."""
    out = ds.copy()
    bad = ds["interfered"].astype(bool)
    for n in names:
        out[n] = ds[n].where(~bad).assign_attrs(
            ds[n].attrs, long_name=f"{ds[n].attrs.get('long_name', n)} (clean runs only; interfered runs NaN)")
    return out


def clean_medians(ds: xr.Dataset, names: Sequence[str], dim: str = "rep") -> tuple[xr.Dataset, list[str]]:
    """Median over ``dim`` of the clean runs of each of ``names`` (NaN where none was clean).

    Parameters
    ----------
    ds : xarray.Dataset
        Runs over ``dim`` and the configuration dimensions, with ``interfered``
        (absent: every run is clean; a NaN value counts as not clean).
    names : sequence of str
        The measured variables.
    dim : str
        The repetition dimension.

    Returns
    -------
    (xarray.Dataset, list of str)
        The medians with the coordinates of ``ds`` not over ``dim``, and the
        configurations without a clean run of any of ``names``
        (:func:`perfmod.measure.validity.clean_reduce`), for ``clean_runs_missing``.
    """
    bad = ds["interfered"] if "interfered" in ds else xr.zeros_like(ds[names[0]], bool)
    out, missing = {}, []
    for n in names:
        out[n], miss = clean_reduce(ds[n], bad, dim, "median")
        missing += [m for m in miss if m not in missing]
    coords = {k: v for k, v in ds.coords.items() if dim not in v.dims}
    return xr.Dataset(out, coords=coords), missing


def record_drops(ds: xr.Dataset, interfered: xr.DataArray, oversubscribed: xr.DataArray | None,
                 missing: Sequence[str], what: str = "runs", oversubscribed_dropped: bool = True) -> xr.Dataset:
    """Set ``runs_total``, ``runs_interfered``, ``runs_oversubscribed``, ``runs_dropped``, ``runs_dropped_reason``
    and ``clean_runs_missing`` (comma-and-semicolon text, empty when none) on ``ds``.

    ``interfered`` and ``oversubscribed`` are over all runs considered
    (``oversubscribed`` broadcast against ``interfered``; None: none).
    ``oversubscribed_dropped`` False: the oversubscribed runs are fitted and
    scored (a model whose variables include the thread or process count),
    only the interfered ones are dropped.
    """
    bad = interfered.astype(bool)
    over = xr.zeros_like(bad) if oversubscribed is None else xr.broadcast(oversubscribed.astype(bool), bad)[0]
    n_int, n_over = int(bad.sum()), int(over.sum())
    n_drop = int((bad | over).sum()) if oversubscribed_dropped else n_int
    over_text = ("neither fitted nor scored" if oversubscribed_dropped
                 else "interfered ones neither fitted nor scored; oversubscribed ones fitted and scored, the model's "
                      "thread or process count describes them")
    ds.attrs.update({
        "runs_total": int(bad.size), "runs_interfered": n_int, "runs_oversubscribed": n_over,
        "runs_dropped": n_drop,
        "runs_dropped_reason": (f"{what}: {n_int} interfered (another process took a material share of the CPUs), "
                                f"{n_over} oversubscribed (more ranks or threads than cores); {over_text}"),
        "clean_runs_missing": "; ".join(missing),
    })
    return ds


def validity_note(ds: xr.Dataset) -> str:
    """One markdown paragraph, from the dataset's attributes, saying which runs were dropped and why.

    Every attribute ``fit_status`` or ``<part>_fit_status`` that starts with
    "not fitted" is stated, with its part (e.g. ``mpi``).
    """
    a = ds.attrs
    over_fitted = "oversubscribed ones fitted" in str(a.get("runs_dropped_reason", ""))
    text = (f"**Runs used**: {a.get('runs_total', 0) - a.get('runs_dropped', 0)} of {a.get('runs_total', 0)} "
            "(the clean ones); "
            f"{a.get('runs_interfered', 0)} interfered "
            + ("runs kept for the record but neither fitted nor scored"
               + (f" ({a.get('runs_oversubscribed', 0)} oversubscribed runs fitted and scored: the model describes "
                  "them)." if a.get("runs_oversubscribed", 0) else ".") if over_fitted else
               f"and {a.get('runs_oversubscribed', 0)} oversubscribed runs kept for the record but neither fitted "
               "nor scored."))
    for key in sorted(k for k in a if k == "fit_status" or k.endswith("_fit_status")):
        if str(a[key]).startswith("not fitted"):
            part = key[: -len("fit_status")].rstrip("_")
            text += (f" **The {part + ' ' if part else ''}model was {a[key]}** No prediction or error figure "
                     "is reported for it.")
    missing = a.get("clean_runs_missing", "")
    if missing:
        text += (f" **No clean run could be had for: {missing}.** Their measured values are NaN and the error "
                 "figures there are not valid; re-run on an idle machine.")
    return text
