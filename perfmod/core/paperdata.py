"""Tables transcribed from the papers (``data/paper/*.csv``).

Each file starts with ``#`` lines naming the paper (its title and number, e.g.
``[paper 000]``), the table or section, and the columns with their units; the rows follow as
CSV with a header row.  Values are in SI units (seconds, bytes, bytes per
second), columns carry the unit in their name where it is not a count
(``alpha_s``, ``beta_s_per_byte``, ``r_cb_bytes_per_s``, ``overhead_s``).  A
cell the paper marks N/A is a row with empty values and the paper's words in
its ``note`` column.  These files are never written by code.

Tables: ``choi2020_table1_platforms`` ... ``choi2020_table5_kmodel`` (paper 000
Tables 1-5), ``overheads`` (paper 000 §5.1-5.3 and paper 002 §3.1-3.2),
``sasidharan_coefficients``, ``sasidharan_anova``, ``sasidharan_validation``
(paper 001 Tables 1-14; regression coefficients keep the paper's units, named
in the header and in a ``unit`` column, since a coefficient's unit is that of
the response per unit of its variable), and whatever else :func:`available` lists.
"""

from __future__ import annotations

import io

import pandas as pd

from perfmod.core.paths import paper_dir

__all__ = ["available", "read_table"]


def available() -> list[str]:
    """Names of the transcribed tables (file stems in ``data/paper``)."""
    return sorted(p.stem for p in paper_dir().glob("*.csv"))


def read_table(name: str) -> pd.DataFrame:
    """Read ``data/paper/<name>.csv``.

    Parameters
    ----------
    name : str
        Table name, with or without ``.csv`` (e.g. ``"choi2020_table2_postal"``).

    Returns
    -------
    pandas.DataFrame
        The rows; ``attrs["source"]`` holds the ``#`` header (paper file,
        table, columns and units, one line per header line, without the
        ``#``) and ``attrs["path"]`` the file.  Empty cells (the paper's N/A)
        are NaN, except in the ``note`` column, where they are ``""``.

    Raises
    ------
    FileNotFoundError
        No such table; the message lists the available ones.
    """
    stem = name[:-4] if name.endswith(".csv") else name
    path = paper_dir() / f"{stem}.csv"
    if not path.is_file():
        raise FileNotFoundError(
            f"no paper table {stem!r} in {paper_dir()}; available: {', '.join(available()) or 'none'}")
    lines = path.read_text(encoding="utf-8").splitlines()
    header = [line[1:].strip() for line in lines if line.startswith("#")]
    body = "\n".join(line for line in lines if not line.startswith("#"))
    df = pd.read_csv(io.StringIO(body), keep_default_na=False, na_values=[""])
    if "note" in df.columns:
        df["note"] = df["note"].fillna("").astype(str)
    df.attrs["source"] = "\n".join(header)
    df.attrs["path"] = str(path)
    return df
