"""The list of studies (issue 21 item 2): the notebooks' metadata, and everything derived from it.

A new study is three files, its module, its notebook and its note: the test
below writes two scratch studies (one analytic, one measuring) into a copy of
the tree and finds them in ``perfmod list``, the Makefile's targets, the
README's and docs' tables and the contract tests' parametrization.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfmod.core.paths import repo_root
from perfmod.workflow import catalog

ROOT = repo_root()


def _run(cmd: list[str], cwd: Path, check: bool = True) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False,
                          env=os.environ | {"PYTHONPATH": str(cwd)})
    if check:
        assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout


def _make_db(cwd: Path) -> str:
    """``make -pq``: the Makefile's variables and rules after its includes (exit status 1: nothing is up to date)."""
    return _run(["make", "-pq", f"PYTHON_SYS={sys.executable}"], cwd, check=False)


# ---- the committed tree ----------------------------------------------------------------------------------------

def test_the_catalogue_is_the_notebooks():
    ss = catalog.studies()
    assert [s.name for s in ss] == sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    gol = next(s for s in ss if s.name == "sharif_gol")
    assert (gol.paper, gol.measuring, gol.smoke_mpi, gol.aliases) == ("003", True, True, ("sharif-gol",))
    assert gol.title.startswith("Sharif et al. (paper 003)")
    assert gol.smoke["reps"] == 1
    what_if = next(s for s in ss if s.name == "choi2020_what_if")
    assert (what_if.measuring, what_if.smoke_mpi, what_if.aliases) == (False, False, ("what-if",))


def test_make_targets_measuring_and_aliases_come_from_the_catalogue():
    ss = catalog.studies()
    db = _make_db(ROOT)
    assert re.search(r"^STUDIES := (.*)$", db, re.M).group(1).split() == [s.name for s in ss]
    assert re.search(r"^MEASURING := (.*)$", db, re.M).group(1).split() == [s.name for s in ss if s.measuring]
    for s in ss:
        assert re.search(rf"^{s.name}: data/processed/{s.name}\.nc", db, re.M), s.name
        for a in s.aliases:
            assert re.search(rf"^{re.escape(a)}: {s.name}$", db, re.M), a
    # an old name runs the same recipe as the new one
    new, old = (_run(["make", "-n", t, f"PYTHON_SYS={sys.executable}"], ROOT) for t in ("sharif_gol", "sharif-gol"))
    assert new == old and "perfmod run notebooks/sharif_gol.ipynb --canonical" in new
    assert "--shared" not in new  # a measuring study holds the lock alone


def test_perfmod_list_studies_prints_the_catalogue(capsys):
    from perfmod.workflow.cli import main

    assert main(["list", "studies"]) == 0
    out = capsys.readouterr().out
    for s in catalog.studies():
        assert re.search(rf"^  {s.name} +paper {s.paper}  {'measuring' if s.measuring else 'analytic'}", out, re.M)


@pytest.mark.parametrize(("meta", "message"), [
    ({"shows": "x", "smoke": {}}, "has no field 'paper'"),
    ({"paper": "3", "shows": "x", "smoke": {}}, "perfmod.paper '3' is not three digits"),
    ({"paper": "003", "shows": "a | b", "smoke": {}}, "perfmod.shows must be one non-empty line"),
    ({"paper": "003", "shows": "x", "smoke": {}, "exclusive": "yes"}, "perfmod.exclusive is str, expected bool"),
    ({"paper": "003", "shows": "x", "smoke": {}, "smoke_mpi": True}, "smoke_mpi is for measuring studies only"),
    ({"paper": "003", "shows": "x", "smoke": {}, "aliases": ["Bad Name"]}, "not a make target name"),
    ({"paper": "003", "shows": "x"}, "has no field 'smoke'"),
])
def test_bad_metadata_names_the_file_and_the_field(tmp_path, meta, message):
    nb = tmp_path / "notebooks" / "toy.ipynb"
    nb.parent.mkdir()
    nb.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": "# Toy\n"}],
                              "metadata": {"perfmod": meta}}))
    with pytest.raises(catalog.StudyMetadataError, match=re.escape(message)) as err:
        catalog.studies(tmp_path)
    assert str(nb) in str(err.value)


def test_an_alias_cannot_shadow_a_study(tmp_path):
    (tmp_path / "notebooks").mkdir()
    for name, aliases in (("one", ["two"]), ("two", [])):
        (tmp_path / "notebooks" / f"{name}.ipynb").write_text(json.dumps(
            {"cells": [{"cell_type": "markdown", "source": "# T\n"}],
             "metadata": {"perfmod": {"paper": "000", "shows": "x", "smoke": {}, "aliases": aliases}}}))
    with pytest.raises(catalog.StudyMetadataError, match="alias 'two' is already a study's name"):
        catalog.studies(tmp_path)


def test_a_stale_table_is_found_and_rewritten(tmp_path):
    (tmp_path / "docs").mkdir()
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    for page in catalog.TABLE_PAGES:
        text = (ROOT / page).read_text().replace("| 003 | yes |", "| 003 | no |")
        (tmp_path / page).write_text(text)
    assert catalog.stale_tables(tmp_path) == list(catalog.TABLE_PAGES)
    assert catalog.stale_tables(tmp_path, write=True) == list(catalog.TABLE_PAGES)
    assert catalog.stale_tables(tmp_path) == []
    assert all((tmp_path / p).read_text() == (ROOT / p).read_text() for p in catalog.TABLE_PAGES)
    (tmp_path / "README.md").write_text("no markers\n")
    with pytest.raises(ValueError, match="README.md: needs one line"):
        catalog.stale_tables(tmp_path)


# ---- a new study: its module, its notebook, its note -----------------------------------------------------------

MODULE = '''"""A scratch study written by tests/test_catalog.py."""

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from perfmod.core.io import annotate

STUDY = "{name}"


def run(n: int = 3) -> xr.Dataset:
    ds = xr.Dataset({{"y": ("x", np.arange(n, dtype=float), {{"units": "s", "long_name": "a time"}})}},
                    coords={{"x": np.arange(n)}})
    return annotate(ds, study=STUDY, source="model: none", parameters={{"n": n}})


def figures(ds: xr.Dataset) -> dict:
    fig, ax = plt.subplots()
    ax.plot(ds.x, ds.y)
    return {{"y": fig}}
'''


def _notebook(name: str, measuring: bool) -> dict:
    def cell(kind: str, source: str, i: int, **extra) -> dict:
        out = {"cell_type": kind, "id": f"c{i}", "metadata": extra.pop("metadata", {}), "source": source}
        return out | ({"execution_count": None, "outputs": []} if kind == "code" else {})

    params = (f'dataset_path: str = "../data/processed/{name}.nc"  # output dataset\n'
              f'figures_dir: str = "../figures/{name}"  # output figures\nn: int = 3  # points\n')
    meta = {"paper": "000", "shows": f"a scratch study ({name})", "smoke": {"n": 2}, "aliases": [f"{name}-old"]}
    if measuring:
        meta |= {"exclusive": True, "smoke_mpi": False}
    return {"cells": [cell("markdown", f"# Scratch (paper 000): {name}\n", 0),
                      cell("code", params, 1, metadata={"tags": ["parameters"]}),
                      cell("code", f"from perfmod.studies import {name} as study\nds = study.run(n=n)\n", 2)],
            "metadata": {"perfmod": meta}, "nbformat": 4, "nbformat_minor": 5}


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A copy of what the catalogue, the Makefile, the tables and the study tests read, with two scratch studies."""
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(ROOT / "perfmod", root / "perfmod", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns("executed"))
    (root / "docs").mkdir()
    shutil.copy2(ROOT / "docs" / "studies.md", root / "docs" / "studies.md")
    shutil.copytree(ROOT / "docs" / "study_notes", root / "docs" / "study_notes")
    (root / "tests").mkdir()
    for f in ("Makefile", "README.md", "pyproject.toml"):
        shutil.copy2(ROOT / f, root / f)
    for t in ("test_study_contract.py", "test_study_contract_measured.py", "test_docs.py", "test_repeat.py",
              "test_cli.py"):
        shutil.copy2(ROOT / "tests" / t, root / "tests" / t)
    for name, measuring in (("scratch_analytic", False), ("scratch_measuring", True)):
        (root / "perfmod" / "studies" / f"{name}.py").write_text(MODULE.format(name=name))
        (root / "notebooks" / f"{name}.ipynb").write_text(json.dumps(_notebook(name, measuring), indent=1))
        (root / "docs" / "study_notes" / f"{name}.md").write_text(
            f"## What it shows\n\nA scratch study.\n\n```{{perfmod-study}} {name}\n```\n")
    return root


def test_a_new_study_is_its_module_notebook_and_note(tree):
    # the tables: stale until rendered, then holding both studies
    check = subprocess.run([sys.executable, "-m", "perfmod.workflow.catalog", "tables"], cwd=tree, capture_output=True,
                           text=True, check=False, env=os.environ | {"PYTHONPATH": str(tree)})
    assert check.returncode == 1 and "stale study tables in README.md, docs/studies.md" in check.stderr
    _run([sys.executable, "-m", "perfmod.workflow.catalog", "tables", "--write"], tree)
    for name, measures in (("scratch_analytic", "no"), ("scratch_measuring", "yes")):
        row = f"| 000 | {measures} | a scratch study ({name}) |"
        assert f"| [`{name}`](docs/study_notes/{name}.md) {row}" in (tree / "README.md").read_text()
        assert f"| [`{name}`](studies/{name}) {row}" in (tree / "docs" / "studies.md").read_text()
    # perfmod list
    listed = _run([sys.executable, "-m", "perfmod.workflow.cli", "list", "studies"], tree)
    assert re.search(r"^  scratch_analytic +paper 000  analytic +Scratch \(paper 000\): scratch_analytic$", listed,
                     re.M)
    assert re.search(r"^  scratch_measuring +paper 000  measuring", listed, re.M)
    # the Makefile: targets, MEASURING, aliases, repeat-<study>
    db = _make_db(tree)
    assert "scratch_analytic" in re.search(r"^STUDIES := (.*)$", db, re.M).group(1).split()
    measuring = re.search(r"^MEASURING := (.*)$", db, re.M).group(1).split()
    assert "scratch_measuring" in measuring and "scratch_analytic" not in measuring
    dry = _run(["make", "-n", "scratch_analytic-old", f"PYTHON_SYS={sys.executable}"], tree)
    assert "--shared -- .venv/bin/perfmod run notebooks/scratch_analytic.ipynb --canonical" in dry
    dry = _run(["make", "-n", "scratch_measuring", f"PYTHON_SYS={sys.executable}"], tree)
    assert re.search(r"perfmod\.measure\.lock +-- \.venv/bin/perfmod run notebooks/scratch_measuring\.ipynb", dry)
    dry = _run(["make", "-n", "repeat-scratch_measuring", "REPEAT=2", f"PYTHON_SYS={sys.executable}"], tree)
    assert "perfmod repeat scratch_measuring -n 2" in dry
    # the contract and docs tests parametrize over it
    ids = _run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                "tests/test_study_contract.py", "tests/test_study_contract_measured.py", "tests/test_docs.py"], tree)
    assert "tests/test_study_contract.py::test_run_defaults_are_the_notebook_defaults[scratch_analytic]" in ids
    assert "test_run_returns_a_documented_dataset_and_figures_come_from_it[scratch_measuring]" in ids
    assert "tests/test_docs.py::test_every_study_has_its_note_and_its_rows[scratch_measuring]" in ids
    assert "[scratch_measuring]" not in ids.split("test_study_contract_measured.py")[0]  # analytic tests: not it
    # ... and they pass for the analytic one (its run and figures, its defaults, its note and rows)
    _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "scratch_analytic",
          "tests/test_study_contract.py", "tests/test_docs.py"], tree)
