"""Tables transcribed from the papers (``data/paper/*.csv``).

Each file starts with ``#`` lines naming the paper file, the table and the
columns with their units; :func:`read_table` returns the table as a
DataFrame with that header in ``df.attrs["source"]``.  These files are
never edited by code.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from .paths import paper_dir

__all__ = ["available", "read_table"]


def available() -> list[str]:
    """Names of the transcribed tables (file stems in ``data/paper``)."""
    return sorted(p.stem for p in paper_dir().glob("*.csv"))


def read_table(name: str) -> pd.DataFrame:
    """Read ``data/paper/<name>.csv``.

    Parameters
    ----------
    name : str
        Table name, with or without ``.csv``.

    Returns
    -------
    pandas.DataFrame
        The table; ``attrs["source"]`` holds the header comment and
        ``attrs["path"]`` the file.  Empty cells (the paper's N/A) are NaN.
    """
    stem = name[:-4] if name.endswith(".csv") else name
    path = paper_dir() / f"{stem}.csv"
    if not path.exists():
        raise FileNotFoundError(f"no paper table {stem!r} in {paper_dir()}; available: {', '.join(available())}")
    text = Path(path).read_text(encoding="utf-8")
    header = [line[1:].strip() for line in text.splitlines() if line.startswith("#")]
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    df = pd.read_csv(io.StringIO(body), keep_default_na=True)
    df.attrs["source"] = "\n".join(header)
    df.attrs["path"] = str(path)
    return df
