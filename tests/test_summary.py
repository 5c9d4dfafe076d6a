"""The validation summary that .ci/run prints after make all (issue 13 item 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from perfmod.workflow.summary import format_summary, main, summarize, summarize_dir


def _study(path: Path) -> Path:
    meas = np.array([[1.0, 1.1], [2.0, np.nan]])  # (case, rep); case 1 rep 1: no clean run
    ds = xr.Dataset(
        {"t_measured": (("case", "rep"), meas), "t_predicted": ("case", [1.05, 1.8]),
         "u_measured": ("case", [np.nan, np.nan]), "u_predicted": ("case", [1.0, 1.0]),
         "interfered": (("case", "rep"), [[False, True], [False, True]]),
         "oversubscribed": ("case", [False, True]),
         "other": ("case", [0.0, 0.0])},
        attrs={"study": "toy", "clean_runs_missing": "case=1 rep=1"})
    ds.to_netcdf(path)
    return path


def test_summary_reads_pairs_and_interference(tmp_path: Path) -> None:
    s = summarize(_study(tmp_path / "toy.nc"))
    assert s.study == "toy" and (s.runs, s.interfered, s.oversubscribed) == (4, 2, 1)
    t, u = s.pairs
    assert (t.quantity, t.measured, t.total) == ("t", 3, 4)
    errs = [0.05 / 1.0, 0.05 / 1.1, 0.2 / 2.0]
    assert t.mean_error == pytest.approx(np.mean(errs)) and t.max_error == pytest.approx(0.1)
    assert u.measured == 0 and np.isnan(u.mean_error)
    text = format_summary([s])
    assert "toy (toy.nc): 2 of 4 runs interfered, 1 oversubscribed" in text
    assert "no clean run for: case=1 rep=1" in text
    assert "u                           0 of    2 measured  no measured value to score" in text


def test_summary_of_a_directory_and_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _study(tmp_path / "b.nc")
    xr.Dataset({"x": ("i", [1.0])}, attrs={"study": "model_only"}).to_netcdf(tmp_path / "a.nc")
    assert [s.study for s in summarize_dir(tmp_path)] == ["model_only", "toy"]
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("model_only (a.nc): no validation pairs (model side only)\ntoy (b.nc)")
    assert main([str(tmp_path / "missing")]) == 1
    assert "run `make all` first" in capsys.readouterr().err


def test_the_studys_own_run_counts_win(tmp_path):
    """A study that recorded its runs (training runs too, record_drops) is summarized with those counts."""
    import xarray as xr

    from perfmod.workflow.summary import summarize

    ds = xr.Dataset({"q_measured": ("case", [1.0, 2.0]), "q_predicted": ("case", [1.1, 2.0]),
                     "interfered": ("case", [False, True]), "oversubscribed": ("case", [False, False])},
                    attrs={"runs_total": 12, "runs_interfered": 3, "runs_oversubscribed": 4})
    ds.to_netcdf(tmp_path / "s.nc")
    s = summarize(tmp_path / "s.nc")
    assert (s.runs, s.interfered, s.oversubscribed) == (12, 3, 4)


def test_a_measuring_studys_headline_comes_first(tmp_path, monkeypatch):
    """The headline figures (the study's own ``headline(ds)``) and ``fit_status`` head the study's block."""
    import perfmod.workflow.summary as summary

    seen = []

    def fake(study, ds):
        if study != "toy":
            raise LookupError(study)
        seen.append((study, float(ds.t_predicted[0])))
        return {"error_mean": xr.DataArray(0.031, attrs={"units": "1"}), "runs_total": xr.DataArray(4.0)}

    monkeypatch.setattr(summary, "headline_of", fake)
    path = _study(tmp_path / "toy.nc")
    with xr.open_dataset(path) as ds:
        ds.load().assign_attrs(fit_status="fitted on the clean runs").to_netcdf(tmp_path / "fitted.nc")
    s = summary.summarize(tmp_path / "fitted.nc")
    assert seen == [("toy", 1.05)] and s.headline == [("error_mean", "3.1 %"), ("runs_total", "4")]
    lines = summary.format_summary([s]).splitlines()
    assert lines[1:4] == ["  fit: fitted on the clean runs", "  no clean run for: case=1 rep=1",
                          "  headline (what the study states as its result): error_mean 3.1 %, runs_total 4"]
    xr.Dataset({"x": ("i", [1.0])}, attrs={"study": "model_only"}).to_netcdf(tmp_path / "a.nc")
    assert summary.summarize(tmp_path / "a.nc").headline == []  # LookupError: no headline, no line
