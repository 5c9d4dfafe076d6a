"""Each study's validation summary, read from the datasets alone.

``python -m perfmod.workflow.summary [data/processed]`` reads every
``*.nc`` there and prints, per dataset and per validation pair
``<q>_measured`` / ``<q>_predicted`` (docs/architecture.md, "Result protocol"), how
many measured values it holds (finite ones: a configuration without a clean
run is NaN) and the mean and largest absolute relative error
``|predicted - measured| / |measured|``; then the interference record
(docs/architecture.md, "Measurement validity"): runs flagged ``interfered`` and
``oversubscribed`` out of all runs, and the attribute
``clean_runs_missing``.  A measuring study's headline figures (its
``headline(ds)``: the errors it states as its result, over the scored runs
only) come first, since the pair means cover training and oversubscribed
runs too.  ``.ci/run`` prints it after ``make all``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from perfmod.core.paths import data_dir
from perfmod.workflow.repeat import format_value, headline_of

__all__ = ["PairSummary", "StudySummary", "summarize", "summarize_dir", "format_summary", "main"]


@dataclass(frozen=True)
class PairSummary:
    """One validation pair of a dataset.

    Attributes
    ----------
    quantity : str
        ``<q>`` of ``<q>_measured`` / ``<q>_predicted``.
    measured : int
        Finite measured values (with a finite prediction beside them).
    total : int
        All measured values, NaN included.
    mean_error, max_error : float
        Mean and largest absolute relative error (1); NaN without pairs.
    """

    quantity: str
    measured: int
    total: int
    mean_error: float
    max_error: float


@dataclass(frozen=True)
class StudySummary:
    """A dataset's validation pairs and interference record.

    Attributes
    ----------
    path : Path
        The dataset.
    study : str
        Its ``study`` attribute (the file stem if absent).
    pairs : list of PairSummary
        One per ``<q>_measured`` with a ``<q>_predicted``.
    runs, interfered, oversubscribed : int or None
        The attributes ``runs_total``, ``runs_interfered`` and
        ``runs_oversubscribed`` where the study recorded them
        (:func:`perfmod.campaign.records.record_drops`: every run, training
        runs included); else the size of the ``interfered`` variable, its
        True count, and the True count of ``oversubscribed`` (None where the
        dataset has no such variable).
    clean_runs_missing : str
        The dataset attribute, "" when absent.
    headline : list of (str, str)
        The study's headline figures (its ``headline(ds)``, formatted), the
        figures it states as its result; empty for a study without one.
    fit_status : str
        The dataset attribute, "" when absent.
    """

    path: Path
    study: str
    pairs: list[PairSummary]
    runs: int | None
    interfered: int | None
    oversubscribed: int | None
    clean_runs_missing: str
    headline: list[tuple[str, str]] = field(default_factory=list)
    fit_status: str = ""


def _pair(ds: xr.Dataset, q: str) -> PairSummary:
    m, p = xr.broadcast(ds[f"{q}_measured"], ds[f"{q}_predicted"])
    mv, pv = np.asarray(m.values, dtype=float), np.asarray(p.values, dtype=float)
    ok = np.isfinite(mv) & np.isfinite(pv) & (mv != 0)
    err = np.abs(pv[ok] - mv[ok]) / np.abs(mv[ok])
    return PairSummary(q, int(ok.sum()), int(mv.size), float(err.mean()) if err.size else float("nan"),
                       float(err.max()) if err.size else float("nan"))


def _count(ds: xr.Dataset, name: str) -> tuple[int | None, int | None]:
    for holder in (ds.data_vars, ds.coords):
        if name in holder:
            v = np.asarray(ds[name].values).astype(bool)
            return int(v.size), int(v.sum())
    return None, None


def summarize(path: str | Path) -> StudySummary:
    """The :class:`StudySummary` of one dataset (only reads it)."""
    path = Path(path)
    with xr.open_dataset(path) as ds:
        qs = sorted(str(v)[: -len("_measured")] for v in ds.data_vars
                    if str(v).endswith("_measured") and f"{str(v)[: -len('_measured')]}_predicted" in ds)
        pairs = [_pair(ds, q) for q in qs]
        runs, interfered = _count(ds, "interfered")
        _, over = _count(ds, "oversubscribed")
        if "runs_total" in ds.attrs:  # the study's own count (every run, over all its run dimensions and parts)
            runs, interfered, over = (int(ds.attrs[k]) for k in ("runs_total", "runs_interfered",
                                                                  "runs_oversubscribed"))
        missing = ds.attrs.get("clean_runs_missing", "")
        missing = ", ".join(map(str, missing)) if isinstance(missing, list | np.ndarray) else str(missing)
        study = str(ds.attrs.get("study", path.stem))
        try:
            figs = headline_of(study, ds)
        except LookupError:  # a study that does not measure has no headline
            figs = {}
        head = [(name, format_value(float(v), v.attrs.get("units", ""), name)) for name, v in figs.items()]
        return StudySummary(path, study, pairs, runs, interfered, over, missing, head,
                            str(ds.attrs.get("fit_status", "")))


def summarize_dir(directory: str | Path | None = None) -> list[StudySummary]:
    """Summaries of every study dataset in ``directory`` (default ``data/processed``), by file name.

    The repeat datasets ``repeat_<study>.nc`` (:mod:`perfmod.workflow.repeat`) hold no validation pairs and
    are left out.
    """
    d = Path(directory) if directory is not None else data_dir() / "processed"
    if not d.is_dir():
        raise FileNotFoundError(f"{d}: no such directory (run `make all` first)")
    return [summarize(p) for p in sorted(d.glob("*.nc")) if not p.name.startswith("repeat_")]


def format_summary(summaries: Sequence[StudySummary]) -> str:
    """A plain-text table: one block per study, one line per validation pair."""
    lines = []
    for s in summaries:
        head = f"{s.study} ({s.path.name})"
        if s.runs is not None:
            head += f": {s.interfered} of {s.runs} runs interfered"
            if s.oversubscribed is not None:
                head += f", {s.oversubscribed} oversubscribed"
        elif not s.pairs:
            head += ": no validation pairs (model side only)"
        else:
            head += ": no interference record"
        lines.append(head)
        if s.fit_status:
            lines.append(f"  fit: {s.fit_status}")
        if s.clean_runs_missing:
            lines.append(f"  no clean run for: {s.clean_runs_missing}")
        if s.headline:
            lines.append("  headline (what the study states as its result): "
                         + ", ".join(f"{name} {value}" for name, value in s.headline))
            lines.append("  every validation pair (training and oversubscribed runs included):")
        for p in s.pairs:
            err = (f"error mean {p.mean_error:6.1%}  max {p.max_error:6.1%}" if p.measured
                   else "no measured value to score")
            lines.append(f"  {p.quantity:<24s} {p.measured:4d} of {p.total:4d} measured  {err}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m perfmod.workflow.summary [DIR]``: print the validation summary of every dataset in DIR."""
    ap = argparse.ArgumentParser(prog="python -m perfmod.workflow.summary", description=__doc__.split("\n")[0])
    ap.add_argument("directory", nargs="?", help="datasets (default: data/processed)")
    args = ap.parse_args(argv)
    try:
        summaries = summarize_dir(args.directory)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(format_summary(summaries))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
