"""The README and the documentation site (issue 12 item 4).

- Every ```python block of README.md and docs/*.md runs as written, in an empty directory, with only what
  the repository ships (bash blocks are not run).
- Every study notebook has its notes page; the README stays short and self-contained.
- The Sphinx extension reads numbers and validation errors from a dataset (needs the ``docs`` extra).
- ``make docs`` builds with warnings as errors (slow; needs the ``docs`` extra).
- Where Chromium is installed and the site is built, the index and a study page load in headless
  Chromium with no broken image, and screenshots go to build/docs-check/.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import xarray as xr

from perfmod.core.paths import repo_root
from perfmod.workflow import catalog
from perfmod.workflow.notebooks import study_notebooks

ROOT = repo_root()
DOCS = ROOT / "docs"
EXT = DOCS / "_ext"
# hand-written pages: the generated study pages (docs/studies) and API stubs (docs/api) are left out
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *sorted((DOCS / "study_notes").glob("*.md"))]
STUDIES = catalog.studies()
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks() -> list[tuple[str, int, str]]:
    return [(str(p.relative_to(ROOT)), i, m.group(1))
            for p in PAGES for i, m in enumerate(BLOCK.finditer(p.read_text()))]


@pytest.mark.parametrize(("page", "index", "code"), _blocks(), ids=[f"{p}:{i}" for p, i, _ in _blocks()])
def test_python_block_runs(page, index, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{page} (python block {index})", "exec"), {"__name__": "__main__"})  # noqa: S102


def test_readme_is_short_and_self_contained():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 160
    assert "../shared" not in text, "a clone has no ../shared/"
    code = "\n".join(m.group(1) for m in BLOCK.finditer(text))
    assert "..." not in code and not re.search(r"\b(df|new)\b", code), "placeholders in the README's code"


def test_study_tables_are_rendered_from_the_notebooks():
    """README's and docs/studies.md's study tables are the catalogue's (python -m perfmod.workflow.catalog tables)."""
    assert catalog.stale_tables() == [], "run: python -m perfmod.workflow.catalog tables --write"


@pytest.mark.parametrize("study", STUDIES, ids=lambda s: s.name)
def test_every_study_has_its_note_and_its_rows(study):
    notes = DOCS / "study_notes" / f"{study.name}.md"
    assert notes.is_file(), f"{notes} missing: every study notebook needs its notes"
    assert f"{{perfmod-study}} {study.name}" in notes.read_text()
    assert f"[`{study.name}`](docs/study_notes/{study.name}.md)" in (ROOT / "README.md").read_text()
    assert f"[`{study.name}`](studies/{study.name})" in (DOCS / "studies.md").read_text()


def test_architecture_lists_the_docs():
    assert "docs/" in (DOCS / "architecture.md").read_text()


@pytest.fixture
def docs_ext(tmp_path, monkeypatch):
    pytest.importorskip("sphinx", reason="the docs extension needs the docs extra: pip install -e '.[docs]'")
    monkeypatch.syspath_prepend(str(EXT))
    import perfmod_docs

    monkeypatch.setattr(perfmod_docs, "PROCESSED", tmp_path)
    perfmod_docs._dataset.cache_clear()
    yield perfmod_docs
    perfmod_docs._dataset.cache_clear()


def test_result_role_reads_the_dataset(docs_ext):
    study = study_notebooks()[0].stem
    ds = xr.Dataset({"t_iter_predicted": ("nodes", [4.0e-3, 5.0e-3]), "t_iter_measured": ("nodes", [4.0e-3, 4.0e-3])},
                    coords={"nodes": [1, 2]})
    ds.to_netcdf(docs_ext.PROCESSED / f"{study}.nc", engine="h5netcdf")
    assert docs_ext.result_text(f"{study}: t_iter_predicted.sel(nodes=2) | ms | .1f") == "5.0 ms"
    assert docs_ext.result_text(f"{study}: t_iter_predicted.size") == "2"
    assert docs_ext.result_text(f"{study}: (t_iter_predicted / t_iter_measured - 1).max() | % | .0f") == "25 %"
    with pytest.raises(ValueError, match="2 values"):
        docs_ext.result_text(f"{study}: t_iter_predicted")
    with pytest.raises(ValueError, match="unknown study"):
        docs_ext.result_text("no_such_study: x")
    rows = docs_ext.validation_rows(ds)
    assert rows == [["t_iter", "2", "12.5 %", "25.0 %"]]


def test_result_role_without_the_dataset(docs_ext):
    study = study_notebooks()[0].stem
    assert docs_ext.result_text(f"{study}: t_iter_predicted.max() | ms") == "(not run)"


@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip("myst_nb", reason="building the docs needs the docs extra: pip install -e '.[docs]'")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           str(DOCS), str(tmp_path / "html")], capture_output=True, text=True, cwd=ROOT,
                          env=os.environ | {"PYTHONPATH": str(ROOT)}, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "html" / "index.html").is_file()


def test_browser_check():
    sys.path.insert(0, str(EXT))
    try:
        import browsercheck
    finally:
        sys.path.remove(str(EXT))
    if browsercheck.chromium() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium); the browser check needs it")
    site = ROOT / "build" / "docs" / "html"
    if not (site / "index.html").is_file():
        pytest.skip("the documentation is not built: make docs (after make all)")
    pages = browsercheck.pages_to_check(site)
    if len(pages) < 2:
        pytest.skip("no study page shows a figure yet: make all, then make docs")
    out = ROOT / "build" / "docs-check"
    results = {page: browsercheck.check_page(page, out / f"{page.stem}.png") for page in pages}
    for page, result in results.items():
        broken = [img["src"] for img in result["images"] if not img["width"]]
        assert not broken, f"{page}: images that did not load: {broken}"
        assert (out / f"{page.stem}.png").stat().st_size > 0
    assert results[pages[1]]["images"], "the study page shows no figure"
