"""What every measuring study does with its records: raw files written once, provenance on the result.

A study's ``run`` measures, writes each raw measurement under ``raw_out``
(``data/raw/<host>/`` when empty) with :func:`save_raw` (never overwriting),
and returns its dataset with :func:`provenance` applied: the global
attributes of DESIGN.md plus ``raw_files``, the raw files the numbers were
computed from.  The notebook writes the dataset and figures at the end, so an
interrupted run leaves the previous set of outputs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import xarray as xr

from perfmod.core.io import annotate, write_dataset
from perfmod.core.paths import raw_dir

__all__ = ["save_raw", "provenance"]


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
    """``ds`` with the DESIGN.md provenance attributes and ``raw_files`` (``;``-separated paths)."""
    out = annotate(ds, study=study, source=source, parameters=parameters)
    out.attrs["raw_files"] = "; ".join(str(p) for p in raw_files)
    return out
