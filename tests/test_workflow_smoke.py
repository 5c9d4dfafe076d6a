"""Smoke runs of a notebook never write into data/ (issue 13 item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from perfmod.core.paths import data_dir
from perfmod.workflow import notebooks as nbs

CODE = """import json, os
from pathlib import Path
from perfmod.core.paths import raw_dir
raw = Path(raw_out) if raw_out else raw_dir()
raw.mkdir(parents=True, exist_ok=True)
(raw / "run.json").write_text("{}")
Path(dataset_path).parent.mkdir(parents=True, exist_ok=True)
Path(dataset_path).write_text(json.dumps({"raw": str(raw), "data": os.environ.get("PERFMOD_DATA", "")}))
"""


def _toy(tmp_path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell(
        'raw_out: str = ""  # raw files\ndataset_path: str = "../data/processed/t.nc"  # out')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# toy"), params, nbformat.v4.new_code_cell(CODE)]
    nb.metadata["perfmod"] = {"smoke": {}}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "nb" / "toy.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    return path


def test_smoke_run_redirects_the_outputs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PERFMOD_DATA", raising=False)
    before = sorted((data_dir() / "raw").rglob("*")) if (data_dir() / "raw").exists() else []
    nb = _toy(tmp_path)
    nbs.run_notebook(nb, smoke=True, output=tmp_path / "out.ipynb", progress=False)
    assert not (tmp_path / "data").exists()  # the notebook's own default stayed unused
    after = sorted((data_dir() / "raw").rglob("*")) if (data_dir() / "raw").exists() else []
    assert after == before
    assert nbs.smoke_outputs({"raw_out": "str", "dataset_path": "str", "x": "int"}) == ["raw_out", "dataset_path"]


def test_smoke_run_keeps_explicit_outputs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PERFMOD_DATA", str(tmp_path / "mine"))
    nb = _toy(tmp_path)
    out = tmp_path / "o" / "t.nc"
    nbs.run_notebook(nb, {"dataset_path": str(out)}, smoke=True, output=tmp_path / "out.ipynb", progress=False)
    text = out.read_text()
    assert '"data": "' + str(tmp_path / "mine") + '"' in text  # the data dir is the caller's
    assert "perfmod-smoke-toy-" in text  # raw_out went to the temporary directory
    raw = Path(json.loads(text)["raw"])
    assert raw.name == "raw_out" and raw.parent.name.startswith("perfmod-smoke-toy-")
    assert not raw.parent.exists()  # removed when the run ended: nothing left behind in the temporary directory
