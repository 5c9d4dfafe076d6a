"""Every study's state in one table: fitted, not fitted (and why), computed, or not run (``perfmod check``).

A measuring study whose runs were all flagged still writes a dataset: its
headline figures are NaN and its figures empty, and nothing failed.
:func:`study_states` reads each study's canonical dataset (the path its
parameters cell names) and says what it holds: a measuring study (one with a
``headline(ds)``) is *fitted* when every headline figure is finite, else
*not fitted* with the dataset's own reason (``fit_status``,
``clean_runs_missing``, the flagged runs); an analytic study is *computed*;
a study without a dataset is *not run*.  ``perfmod check`` prints the table
(``make all`` ends with it) and exits non-zero when a measuring study's
headline is missing.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from pathlib import Path

from perfmod.workflow.staging import canonical_paths
from perfmod.workflow.summary import summarize

__all__ = ["StudyState", "study_states", "format_states", "states_rows", "not_fitted_notice"]


@dataclass(frozen=True)
class StudyState:
    """One study's line of the table."""

    study: str
    state: str  #: fitted, not fitted, computed, not run
    detail: str
    measuring: bool  #: it states headline figures (its module has ``headline(ds)``)

    @property
    def headline_missing(self) -> bool:
        """A measuring study without finite headline figures (what makes ``perfmod check`` fail)."""
        return self.measuring and self.state != "fitted"


def _measuring(nb: Path) -> bool:
    """Whether the study measures this machine, as its notebook's metadata says (:mod:`perfmod.workflow.catalog`):
    an analytic study with headline figures (``modeling_benchmark``) is judged as computed, not fitted."""
    from perfmod.workflow.catalog import StudyMetadataError, read_study

    try:
        if not read_study(nb).measuring:
            return False
    except StudyMetadataError:  # a notebook outside the catalogue: a measuring study states its headline
        pass
    try:
        module = importlib.import_module(f"perfmod.studies.{nb.stem}")
    except ModuleNotFoundError:
        return False
    return callable(getattr(module, "headline", None))


def study_states(notebooks: list[Path]) -> list[StudyState]:
    """The state of each study notebook's canonical dataset."""
    out = []
    for nb in notebooks:
        measuring = _measuring(nb)
        path = canonical_paths(nb).get("dataset_path")
        if path is None or not path.is_file():
            out.append(StudyState(nb.stem, "not run", f"no dataset {path}" if path else "no dataset_path",
                                  measuring))
            continue
        s = summarize(path)
        runs = f"{s.interfered} of {s.runs} runs interfered" if s.runs is not None else ""
        if measuring:
            values = dict(s.headline)
            nan = [name for name, v in values.items() if v.strip().lower().startswith("nan")]
            if values and not nan:
                detail = ", ".join(f"{k} {v}" for k, v in s.headline)
                out.append(StudyState(nb.stem, "fitted", detail + (f" ({runs})" if runs else ""), True))
            else:
                why = [w for w in (s.fit_status, f"no clean run for {s.clean_runs_missing}"
                                   if s.clean_runs_missing else "", runs, "headline NaN: " + ", ".join(nan)
                                   if nan else "" if values else "no headline figures") if w]
                out.append(StudyState(nb.stem, "not fitted", "; ".join(why), True))
        else:
            scored = [p for p in s.pairs if p.measured and not math.isnan(p.mean_error)]
            detail = (f"{len(scored)} validation pair(s), mean error "
                      + ", ".join(f"{p.quantity} {p.mean_error:.1%}" for p in scored[:3])) if scored else \
                "model side (no measured values)"
            out.append(StudyState(nb.stem, "computed", detail, False))
    return out


def format_states(states: list[StudyState]) -> str:
    """The table: study, state, detail."""
    w = max((len(s.study) for s in states), default=5)
    lines = [f"{'study':<{w}s}  {'state':<10s}  detail"]
    lines += [f"{s.study:<{w}s}  {s.state:<10s}  {s.detail}" for s in states]
    return "\n".join(lines)


def states_rows(states: list[StudyState]) -> list[list[str]]:
    """The table's rows for a page (the documentation's index): study, state, detail."""
    return [[s.study, s.state, s.detail] for s in states]


def not_fitted_notice(state: StudyState) -> str | None:
    """What a study's page says at its top when its headline is missing (None when there is nothing to say)."""
    if state.state != "not fitted":
        return None
    return (f"{state.study} is not fitted in this run: {state.detail}. Its headline figures are missing and its "
            "figures are not shown; rerun it on a quiet machine (`perfmod run` waits for one, `--force` runs "
            "anyway, flagged).")
