"""Where perfmod finds its data.

Two places:

- **Shipped data** inside the package (:func:`package_data_dir`, read with
  :mod:`importlib.resources`): the papers' transcribed tables
  (``perfmod/data/paper``), the published platforms
  (``perfmod/data/platforms``) and the GPU device table
  (``perfmod/data/devices``).  An installed wheel finds them from any
  working directory.  ``data/paper``, ``data/platforms`` and ``data/devices``
  of a checkout name the same files.
- **The project data directory** (:func:`data_dir`): measurements
  (``data/raw/<host>``), datasets the studies write (``data/processed``) and
  platforms fitted on this machine (``data/platforms/local.toml``).  It is
  ``$PERFMOD_DATA`` when set, else ``data/`` of the source checkout perfmod
  runs from, else (an installed wheel) the user's data directory
  (``platformdirs.user_data_dir("perfmod")``, e.g. ``~/.local/share/perfmod``),
  never the directory a command happens to run in.
"""

from __future__ import annotations

import os
import socket
from importlib.resources import files
from pathlib import Path

__all__ = [
    "repo_root",
    "package_data_dir",
    "data_dir",
    "in_checkout",
    "paper_dir",
    "platforms_dir",
    "shipped_platforms_dir",
    "devices_dir",
    "raw_dir",
    "host_name",
]


def repo_root() -> Path:
    """Return the directory that holds the ``perfmod`` package (the checkout root in a source tree)."""
    return Path(__file__).resolve().parents[2]


def package_data_dir() -> Path:
    """Return the data shipped inside the package (``perfmod/data``)."""
    return Path(str(files("perfmod").joinpath("data")))


def data_dir() -> Path:
    """Return the project data directory (``$PERFMOD_DATA``, the checkout's ``data/``, or the user's)."""
    env = os.environ.get("PERFMOD_DATA")
    if env:
        return Path(env)
    root = repo_root()
    if in_checkout():
        return root / "data"
    import platformdirs

    return Path(platformdirs.user_data_dir("perfmod", appauthor=False))


def in_checkout() -> bool:
    """Whether perfmod runs from a source checkout (``pyproject.toml`` and ``data/`` beside the package)."""
    root = repo_root()
    return (root / "pyproject.toml").is_file() and (root / "data").is_dir()


def paper_dir() -> Path:
    """Return the tables transcribed from the papers (shipped: ``perfmod/data/paper``)."""
    return package_data_dir() / "paper"


def shipped_platforms_dir() -> Path:
    """Return the published platforms (shipped: ``perfmod/data/platforms``)."""
    return package_data_dir() / "platforms"


def platforms_dir() -> Path:
    """Return ``data/platforms`` of the project: platforms fitted on this machine (``local.toml``)."""
    return data_dir() / "platforms"


def devices_dir() -> Path:
    """Return the GPU device tables (shipped: ``perfmod/data/devices``)."""
    return package_data_dir() / "devices"


def raw_dir(host: str | None = None) -> Path:
    """Return ``data/raw/<host>``: measurements taken on ``host`` (default: this one)."""
    return data_dir() / "raw" / (host or host_name())


def host_name() -> str:
    """Return a short, filesystem-safe name of this host (``PERFMOD_HOST`` overrides)."""
    name = os.environ.get("PERFMOD_HOST") or socket.gethostname().split(".")[0] or "localhost"
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
