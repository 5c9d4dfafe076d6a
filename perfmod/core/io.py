"""Dataset conventions and I/O helpers: the one home of the conventions below.

Every dataset perfmod writes carries ``units`` and ``long_name`` on each
variable and the global attributes ``perfmod_version``, ``git_commit``,
``study``, ``source`` and ``parameters`` (JSON).  Files are written to a
temporary name in the destination directory and renamed, so a reader never
sees half a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from perfmod.core.paths import repo_root
from perfmod.core.version import __version__

if TYPE_CHECKING:  # imported where a dataset is read: provenance_attrs and the file helpers start without it
    import xarray as xr

__all__ = [
    "DatasetConventionError",
    "git_commit",
    "provenance_attrs",
    "annotate",
    "check_conventions",
    "atomic_path",
    "write_text_atomic",
    "write_dataset",
    "read_dataset",
]

REQUIRED_GLOBAL_ATTRS = ("perfmod_version", "git_commit", "study", "source", "parameters")


class DatasetConventionError(ValueError):
    """A dataset misses a unit, a long name or a provenance attribute."""


def git_commit(path: Path | None = None) -> str:
    """Return the commit of the perfmod checkout (``+dirty`` if modified), or ``"unknown"``."""
    root = path or repo_root()
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return sha + ("+dirty" if dirty else "")


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    return value


def provenance_attrs(study: str, source: str, parameters: Mapping[str, Any] | None = None) -> dict:
    """Return the global attributes every dataset carries (this module's docstring).

    Parameters
    ----------
    study : str
        Study name (usually the notebook's name).
    source : str
        Where the numbers come from: a paper table ("000 Table 2") or
        "measurement" with what was measured.
    parameters : mapping, optional
        The parameters of the run; stored as JSON.
    """
    return {
        "perfmod_version": __version__,
        "git_commit": git_commit(),
        "study": study,
        "source": source,
        "parameters": json.dumps(_jsonable(dict(parameters or {})), sort_keys=True),
    }


def annotate(
    ds: xr.Dataset,
    study: str,
    source: str,
    parameters: Mapping[str, Any] | None = None,
    meta: Mapping[str, tuple[str, str]] | None = None,
) -> xr.Dataset:
    """Attach provenance and, optionally, ``(units, long_name)`` per variable.

    Parameters
    ----------
    ds : xarray.Dataset
    study, source, parameters
        See :func:`provenance_attrs`.
    meta : mapping of name -> (units, long_name), optional
        Units and long names to set on data variables or coordinates.

    Returns
    -------
    xarray.Dataset
        A copy of ``ds`` with the attributes set.
    """
    out = ds.copy()
    for name, (units, long_name) in (meta or {}).items():
        if name not in out.variables:
            raise KeyError(f"annotate: no variable or coordinate named {name!r} in the dataset")
        out[name].attrs.update(units=units, long_name=long_name)
    out.attrs.update(provenance_attrs(study, source, parameters))
    return out


def check_conventions(ds: xr.Dataset) -> None:
    """Raise :class:`DatasetConventionError` naming every missing unit, long name or attr."""
    problems = [f"global attribute {a!r} missing" for a in REQUIRED_GLOBAL_ATTRS if a not in ds.attrs]
    for name, var in ds.data_vars.items():
        for key in ("units", "long_name"):
            if key not in var.attrs:
                problems.append(f"variable {name!r} has no {key!r}")
    if problems:
        raise DatasetConventionError("dataset breaks the conventions: " + "; ".join(problems))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    With ``overwrite=False`` an existing ``path`` raises :class:`FileExistsError`
    (used for measurements, which are never overwritten silently).
    """
    dest = Path(path)
    if dest.exists() and not overwrite:
        raise FileExistsError(f"{dest} exists; refusing to overwrite a measurement")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp makes 0600; give the usual file mode
        if dest.exists() and not overwrite:
            raise FileExistsError(f"{dest} appeared while writing; refusing to overwrite")
        os.replace(tmp_path, dest)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text_atomic(path: str | os.PathLike, text: str, overwrite: bool = True) -> Path:
    """Write ``text`` to ``path`` through :func:`atomic_path` (the one atomic file writer); returns the path.

    The file gets the usual mode (``0666`` less the umask), as ``open`` gives.
    """
    with atomic_path(path, overwrite=overwrite) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_dataset(ds: xr.Dataset, path: str | os.PathLike, overwrite: bool = True) -> Path:
    """Check conventions, then write ``ds`` as netCDF (h5netcdf engine) atomically.

    Returns the destination path.
    """
    check_conventions(ds)
    with atomic_path(path, overwrite=overwrite) as tmp:
        ds.to_netcdf(tmp, engine="h5netcdf")
    return Path(path)


def read_dataset(path: str | os.PathLike) -> xr.Dataset:
    """Read a dataset written by :func:`write_dataset` into memory."""
    import xarray as xr

    with xr.open_dataset(path, engine="h5netcdf") as ds:
        return ds.load()
