"""Where perfmod finds its data.

The data tree (``data/paper``, ``data/platforms``, ``data/raw``, ...) lives at
the repository root, next to the package.  ``PERFMOD_DATA`` overrides it (for
example to point an installed copy at a checkout).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

__all__ = ["repo_root", "data_dir", "paper_dir", "platforms_dir", "raw_dir", "host_name"]


def repo_root() -> Path:
    """Return the repository root (the directory that holds ``perfmod/``)."""
    return Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """Return the data directory (``$PERFMOD_DATA`` or ``<repo>/data``)."""
    env = os.environ.get("PERFMOD_DATA")
    return Path(env) if env else repo_root() / "data"


def paper_dir() -> Path:
    """Return ``data/paper``: tables transcribed from the papers."""
    return data_dir() / "paper"


def platforms_dir() -> Path:
    """Return ``data/platforms``: platform descriptions (TOML)."""
    return data_dir() / "platforms"


def raw_dir(host: str | None = None) -> Path:
    """Return ``data/raw/<host>``: measurements taken on ``host`` (default: this one)."""
    return data_dir() / "raw" / (host or host_name())


def host_name() -> str:
    """Return a short, filesystem-safe name of this host (``PERFMOD_HOST`` overrides)."""
    name = os.environ.get("PERFMOD_HOST") or socket.gethostname().split(".")[0] or "localhost"
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
