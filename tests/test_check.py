"""perfmod check: one table of every study's state; non-zero when a measuring study has no headline."""

from __future__ import annotations

import json
from pathlib import Path

import xarray as xr

from perfmod.core.io import annotate, write_dataset
from perfmod.workflow import check
from perfmod.workflow.cli import main
from perfmod.workflow.summary import StudySummary

FIXTURE = Path(__file__).parent / "data" / "notebooks" / "sweep_fixture.ipynb"


def _notebook(tmp_path: Path, stem: str) -> Path:
    nb = tmp_path / "notebooks" / f"{stem}.ipynb"
    nb.parent.mkdir(exist_ok=True)
    nb.write_text(FIXTURE.read_text().replace('\\"out.nc\\"', f'\\"../{stem}.nc\\"'))
    assert f"../{stem}.nc" in json.loads(nb.read_text())["cells"][1]["source"][0]
    return nb


def test_states_of_run_and_unrun_analytic_studies(tmp_path, capsys):
    done, never = _notebook(tmp_path, "done_study"), _notebook(tmp_path, "never_study")
    write_dataset(annotate(xr.Dataset({"y": ("x", [1.0])}), "done_study", "test", {}, {"y": ("s", "y")}),
                  tmp_path / "done_study.nc")
    states = check.study_states([done, never])
    assert [(s.study, s.state) for s in states] == [("done_study", "computed"), ("never_study", "not run")]
    assert not any(s.headline_missing for s in states)  # analytic studies state no headline
    assert main(["check", str(done), str(never)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["study", "state", "detail"] and out[2].startswith("never_study  not run")


def test_a_measuring_study_with_a_nan_headline_fails_the_check(tmp_path, monkeypatch, capsys):
    nb = _notebook(tmp_path, "sharif_gol")  # a measuring study: perfmod.studies.sharif_gol has headline(ds)
    (tmp_path / "sharif_gol.nc").write_text("")
    monkeypatch.setattr(check, "summarize", lambda p: StudySummary(
        Path(p), "sharif_gol", [], 45, 45, 0, "", [("t_step_error", "NaN")], "not fitted: every run flagged"))
    (state,) = check.study_states([nb])
    assert state.state == "not fitted" and state.headline_missing
    assert state.detail == "not fitted: every run flagged; 45 of 45 runs interfered; headline NaN: t_step_error"
    assert main(["check", str(nb)]) == 1
    assert "perfmod check: no headline for sharif_gol" in capsys.readouterr().err


def test_a_not_fitted_study_says_why_and_the_others_say_nothing(tmp_path, monkeypatch):
    """Issue 25 item 11: the docs' index table and the notice at the top of a page that was not fitted."""
    nb, done = _notebook(tmp_path, "sharif_gol"), _notebook(tmp_path, "done_study")
    (tmp_path / "sharif_gol.nc").write_text("")
    write_dataset(annotate(xr.Dataset({"y": ("x", [1.0])}), "done_study", "test", {}, {"y": ("s", "y")}),
                  tmp_path / "done_study.nc")
    real = check.summarize
    monkeypatch.setattr(check, "summarize", lambda p: real(p) if Path(p).stem == "done_study" else StudySummary(
        Path(p), "sharif_gol", [], 45, 45, 0, "", [("t_step_error", "NaN")], "not fitted: every run flagged"))
    gol, ok = check.study_states([nb, done])
    assert check.states_rows([gol, ok]) == [
        ["sharif_gol", "not fitted", "not fitted: every run flagged; 45 of 45 runs interfered; headline NaN: "
                                     "t_step_error"],
        ["done_study", "computed", "model side (no measured values)"]]
    notice = check.not_fitted_notice(gol)
    assert notice.startswith("sharif_gol is not fitted in this run: not fitted: every run flagged; 45 of 45")
    assert "--force" in notice
    assert check.not_fitted_notice(ok) is None
