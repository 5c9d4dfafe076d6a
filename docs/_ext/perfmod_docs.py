"""Sphinx extension of perfmod's documentation: study pages built from what ``make all`` wrote.

Nothing on a study page is typed by hand from a run: the page is the notebook
that ``make all`` executed (``build/executed/<study>.ipynb``) with the study's
notes (``docs/study_notes/<study>.md``) after its title, and the numbers in
the notes come from the study's dataset (``data/processed/<study>.nc``).

- ``builder-inited`` writes ``docs/studies/<study>.ipynb`` (the executed
  notebook with the notes inserted after its first cell), or
  ``docs/studies/<study>.md`` (the notes and a notice naming the make target)
  for a study that has not been run here.  ``docs/studies/`` is generated
  and not committed.
- ``{perfmod-study} <study>`` (directive): for a measuring study its headline
  figures, median and range over the runs of ``data/processed/repeat_<study>.nc``
  (``make repeat-<study>``), or, without that file, the one run's figures said
  to be one run; the dataset's provenance, the validation pairs (``<q>_measured`` / ``<q>_predicted``) with their errors
  computed from the file, and the study's figures from ``figures/<study>/``.
- ``{result}`\\`<study>: <expression> | <unit> | <format>\\``` (role): one number
  from the dataset; ``<expression>`` is evaluated with the dataset's variables
  as names (``t_iter_predicted.sel(app="minife").max()``), ``<unit>`` (optional)
  converts from SI (``ms``, ``us``, ``%``, ``GB/s``, ...), ``<format>`` (optional,
  default ``.3g``) is a format spec.  A study not run here renders as "(not run)".
- ``{perfmod-gallery}`` (directive): every figure under ``figures/``, by study.
- ``{perfmod-states}`` (directive): every study's state (fitted, not fitted and why, computed, not run), read
  from the datasets as ``perfmod check`` reads them; a study page whose study is not fitted opens with the
  reason and shows none of its figures.

A missing study output is a notice on the page, never a build error; a wrong
expression or variable in the notes is an error (the build runs with ``-W``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import nbformat
import numpy as np
import xarray as xr
from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective, SphinxRole

from perfmod.workflow import catalog
from perfmod.workflow.check import StudyState, not_fitted_notice, states_rows, study_states
from perfmod.workflow.repeat import headline_summary, measuring_studies, repeat_path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
NOTES = DOCS / "study_notes"
GENERATED = DOCS / "studies"
EXECUTED = ROOT / "build" / "executed"
PROCESSED = ROOT / "data" / "processed"
FIGURES = ROOT / "figures"

#: SI unit -> (display unit, factor)
UNITS = {
    "s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9,
    "%": 100.0, "1": 1.0,
    "B": 1.0, "KiB": 1 / 2**10, "MiB": 1 / 2**20, "GB/s": 1e-9, "MB/s": 1e-6,
    "Gflop/s": 1e-9, "Tflop/s": 1e-12, "ps/B": 1e12,
}


def studies() -> list[str]:
    """The study names, as the notebooks' metadata lists them (:mod:`perfmod.workflow.catalog`)."""
    return [s.name for s in catalog.studies(ROOT)]


def study_state(study: str) -> StudyState:
    """The study's state as ``perfmod check`` reads it from its dataset (fitted, not fitted and why, ...)."""
    return study_states([ROOT / "notebooks" / f"{study}.ipynb"])[0]


@cache
def _dataset(study: str) -> xr.Dataset | None:
    path = PROCESSED / f"{study}.nc"
    if not path.is_file():
        return None
    with xr.open_dataset(path) as ds:
        return ds.load()


def _not_run(study: str, code: str = "`") -> str:
    c = code
    return (f"This study has not been run in this checkout: {c}make {study}{c} (or {c}make all{c}) writes "
            f"{c}data/processed/{study}.nc{c}, {c}figures/{study}/{c} and {c}build/executed/{study}.ipynb{c}; "
            f"{c}make docs{c} then renders them here.")


# ---- generated pages --------------------------------------------------------------------------------------------

def _notes(study: str) -> str:
    path = NOTES / f"{study}.md"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: every study notebook needs its notes page (docs/study_notes/<study>.md)")
    return path.read_text()


def write_study_pages() -> list[Path]:
    """Write ``docs/studies/<study>.ipynb`` (or ``.md`` when not run); return the pages written."""
    GENERATED.mkdir(exist_ok=True)
    pages = []
    for study in studies():
        notes = _notes(study)
        executed = EXECUTED / f"{study}.ipynb"
        if executed.is_file():
            nb = nbformat.read(executed, as_version=4)
            inserted = [nbformat.v4.new_markdown_cell(notes),
                        nbformat.v4.new_markdown_cell("## The executed notebook\n\nAs `make all` ran it "
                                                      f"(`build/executed/{study}.ipynb`).")]
            nb.cells[1:1] = inserted
            page, text = GENERATED / f"{study}.ipynb", nbformat.writes(nb)
        else:
            source = ROOT / "notebooks" / f"{study}.ipynb"
            title = nbformat.read(source, as_version=4).cells[0].source.splitlines()[0]
            page = GENERATED / f"{study}.md"
            text = f"{title}\n\n```{{note}}\n{_not_run(study)}\n```\n\n{notes}"
        if not page.is_file() or page.read_text() != text:  # unchanged pages are not read again
            page.write_text(text)
        pages.append(page)
    for old in set(GENERATED.glob("*")) - set(pages):
        old.unlink()
    return pages


# ---- the study directive ----------------------------------------------------------------------------------------

def _para(text: str) -> nodes.paragraph:
    return nodes.paragraph(text=text)


def _table(header: list[str], rows: list[list[str]]) -> nodes.table:
    table = nodes.table()
    group = nodes.tgroup(cols=len(header))
    table += group
    for _ in header:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    body = nodes.tbody()
    group += body
    for target, cells in ((head, [header]), (body, rows)):
        for cells_row in cells:
            row = nodes.row()
            for cell in cells_row:
                entry = nodes.entry()
                entry += nodes.paragraph(text=cell)
                row += entry
            target += row
    return table


def validation_rows(ds: xr.Dataset) -> list[list[str]]:
    """One row per ``<q>_measured`` / ``<q>_predicted`` pair: points, median and max absolute relative error."""
    rows = []
    for name in sorted(ds.data_vars):
        if not name.endswith("_measured") or f"{name[:-9]}_predicted" not in ds:
            continue
        q = name[:-9]
        measured, predicted = xr.broadcast(ds[name], ds[f"{q}_predicted"])
        err = np.abs(predicted.values / measured.values - 1.0).ravel()
        err = err[np.isfinite(err)]
        if err.size == 0:
            continue
        rows.append([q, str(err.size), f"{100 * np.median(err):.1f} %", f"{100 * err.max():.1f} %"])
    return rows


def figure_paths(study: str) -> list[Path]:
    """The PNG figures a study wrote, sorted by name."""
    return sorted((FIGURES / study).glob("*.png"))


def _image(path: Path, docname: str, alt: str) -> nodes.image:
    # Sphinx resolves an image URI starting with "/" against the source directory (docs/)
    return nodes.image(uri="/" + str(Path("..") / path.relative_to(ROOT)), alt=alt)


def headline_nodes(study: str, ds: xr.Dataset | None) -> list[nodes.Node]:
    """A measuring study's headline figures: median and range from its repeat dataset, else one run, said so.

    Nothing for a study that does not measure, or that has neither a repeat dataset nor a run.
    """
    if study not in measuring_studies():
        return []
    sentence, header, rows = headline_summary(study, ds, PROCESSED)
    return [_para(sentence), _table(header, rows)] if rows else []


class StudyDirective(SphinxDirective):
    """``{perfmod-study} <study>``: provenance, validation errors and figures read from the study's outputs."""

    required_arguments = 1
    option_spec = {"no-figures": directives.flag}

    def run(self) -> list[nodes.Node]:
        study = self.arguments[0]
        if study not in studies():
            raise self.error(f"unknown study {study!r}; studies: {', '.join(studies())}")
        ds = _dataset(study)
        notice = not_fitted_notice(study_state(study)) if ds is not None else None
        out: list[nodes.Node] = []
        if notice:  # said first, and no figures of a fit that did not happen
            warning = nodes.warning()
            warning += _para(notice)
            out.append(warning)
        out += headline_nodes(study, ds)
        if out:
            self.env.note_dependency(str(repeat_path(study, PROCESSED)))
        if ds is None:  # the generated page opens with the notice (write_study_pages)
            return out
        path = PROCESSED / f"{study}.nc"
        self.env.note_dependency(str(path))
        params = ds.attrs.get("parameters", "{}")
        try:
            params = ", ".join(f"{k}={v}" for k, v in json.loads(params).items()) or "defaults"
        except ValueError:
            pass
        out.append(_para(f"Dataset data/processed/{study}.nc: perfmod {ds.attrs.get('perfmod_version', '?')}, "
                         f"commit {str(ds.attrs.get('git_commit', '?'))[:12]}; source: {ds.attrs.get('source', '?')}; "
                         f"parameters: {params}."))
        rows = validation_rows(ds)
        if rows:
            out.append(_para("Measured against predicted, from the dataset (|predicted / measured - 1| "
                             "over every point where both are finite):"))
            out.append(_table(["quantity", "points", "median error", "max error"], rows))
        if "no-figures" not in self.options and not notice:
            for fig in figure_paths(study):
                out.append(_image(fig, self.env.docname, alt=f"{study}: {fig.stem}"))
                out.append(_para(f"figures/{study}/{fig.name}"))
        return out


class StatesDirective(SphinxDirective):
    """``{perfmod-states}``: every study's state in one table, as ``perfmod check`` reads it from the datasets."""

    def run(self) -> list[nodes.Node]:
        states = study_states([ROOT / "notebooks" / f"{name}.ipynb" for name in studies()])
        for st in states:
            self.env.note_dependency(str(PROCESSED / f"{st.study}.nc"))
        return [_table(["study", "state", "detail"], states_rows(states))]


class GalleryDirective(SphinxDirective):
    """``{perfmod-gallery}``: every study's figures, one section per study."""

    def run(self) -> list[nodes.Node]:
        out: list[nodes.Node] = []
        for study in studies():
            section = nodes.section(ids=[f"gallery-{study}"])
            title = nodes.title()
            title += nodes.literal(text=study)
            section += title
            figs = figure_paths(study)
            if not figs:
                section += _para(_not_run(study, code=""))
            for fig in figs:
                section += _image(fig, self.env.docname, alt=f"{study}: {fig.stem}")
                section += _para(f"figures/{study}/{fig.name}")
            section += _para("")
            out.append(section)
        return out


# ---- the result role --------------------------------------------------------------------------------------------

def result_text(spec: str) -> str:
    """Evaluate ``"<study>: <expression> [| <unit> [| <format>]]"`` against the study's dataset."""
    study, sep, rest = spec.partition(":")
    if not sep:
        raise ValueError(f"{spec!r}: expected '<study>: <expression> [| unit [| format]]'")
    study = study.strip()
    if study not in studies():
        raise ValueError(f"{spec!r}: unknown study {study!r}")
    parts = [p.strip() for p in rest.split("|")]
    expr, unit, fmt = (parts + ["", ""])[:3]
    if unit and unit not in UNITS:
        raise ValueError(f"{spec!r}: unknown unit {unit!r}; known: {', '.join(UNITS)}")
    ds = _dataset(study)
    if ds is None:
        return "(not run)"
    names = {str(k): ds[k] for k in ds.variables} | {"ds": ds, "np": np}
    value = eval(expr, {"__builtins__": {}}, names)  # noqa: S307 - the docs' own expressions
    value = np.asarray(getattr(value, "values", value))
    if value.size != 1:
        raise ValueError(f"{spec!r}: the expression gives {value.size} values, not one")
    number = value.item()
    if isinstance(number, str):
        return number
    if unit and UNITS[unit] != 1.0:
        number = number * UNITS[unit]
    text = format(number, fmt or ".3g")
    return f"{text} {unit}" if unit and unit not in ("1", "%") else (f"{text} %" if unit == "%" else text)


class ResultRole(SphinxRole):
    """``{result}`<study>: <expression> | <unit> | <format>```: a number read from ``data/processed``."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        try:
            text = result_text(self.text)
        except Exception as err:  # noqa: BLE001 - reported as a build error with the page and line
            msg = self.inliner.reporter.error(f"result: {err}", line=self.lineno)
            return [self.inliner.problematic(self.rawtext, self.rawtext, msg)], [msg]
        return [nodes.inline(text=text, classes=["perfmod-result"])], []


def _builder_inited(app) -> None:
    write_study_pages()


def setup(app):
    app.add_directive("perfmod-study", StudyDirective)
    app.add_directive("perfmod-gallery", GalleryDirective)
    app.add_directive("perfmod-states", StatesDirective)
    app.add_role("result", ResultRole())
    app.connect("builder-inited", _builder_inited)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
