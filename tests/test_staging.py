"""A canonical run replaces the dataset, figures and executed notebook together; a failed one replaces nothing."""

from __future__ import annotations

import json
from pathlib import Path

from perfmod.core.io import read_dataset
from perfmod.core.paths import repo_root
from perfmod.workflow.cli import main
from perfmod.workflow.staging import swap_in

FIXTURE = Path(__file__).parent / "data" / "notebooks" / "sweep_fixture.ipynb"


def _study(path: Path, label: str, fail_with: str = "") -> None:
    nb = json.loads(FIXTURE.read_text())
    src = "".join(nb["cells"][1]["source"])
    src = src.replace('label: str = "ab"', f'label: str = "{label}"')
    src = src.replace('fail_with: str = ""', f'fail_with: str = "{fail_with}"')
    nb["cells"][1]["source"] = src
    path.write_text(json.dumps(nb))


def test_a_failed_canonical_run_leaves_the_previous_set(tmp_path, capsys):
    study = tmp_path / "notebooks" / "staged_study.ipynb"
    study.parent.mkdir()
    executed = repo_root() / "build" / "executed" / study.name
    _study(study, "first")
    assert main(["run", str(study), "--canonical", "-q"]) == 0
    assert f"wrote {tmp_path / 'notebooks' / 'out.nc'}" in capsys.readouterr().out
    assert read_dataset(tmp_path / "notebooks" / "out.nc")["name"].item() == "first"
    first_nb = executed.read_text()
    _study(study, "second", fail_with="boom")
    assert main(["run", str(study), "--canonical", "-q"]) == 1
    assert read_dataset(tmp_path / "notebooks" / "out.nc")["name"].item() == "first"  # nothing replaced
    assert executed.read_text() == first_nb
    assert not list((repo_root() / "build" / "staging").glob("staged_study-*"))  # the staging directory is gone
    _study(study, "third")
    assert main(["run", str(study), "--canonical", "-q"]) == 0
    assert read_dataset(tmp_path / "notebooks" / "out.nc")["name"].item() == "third"
    assert "third" in executed.read_text()
    executed.unlink()


def test_swap_in_replaces_a_directory_whole(tmp_path):
    final = tmp_path / "figures" / "study"
    final.mkdir(parents=True)
    (final / "old.png").write_text("old")
    staged = tmp_path / "stage" / "study"
    staged.mkdir(parents=True)
    (staged / "new.png").write_text("new")
    (tmp_path / "stage" / "d.nc").write_text("d")
    assert swap_in({staged: final, tmp_path / "stage" / "d.nc": tmp_path / "d.nc",
                    tmp_path / "stage" / "never.nc": tmp_path / "never.nc"}) == [final, tmp_path / "d.nc"]
    assert sorted(p.name for p in final.iterdir()) == ["new.png"]
    assert not list((tmp_path / "figures").glob(".study.old-*")) and not (tmp_path / "never.nc").exists()
