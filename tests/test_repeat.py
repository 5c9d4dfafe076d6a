"""Headline figures of the measuring studies, and ``perfmod repeat`` (issue 15): N runs, their median and range."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from test_cli import _fingerprint

from perfmod.campaign.headline import abs_rel_errors, headline_figures, mean_max, run_counts, total_time_headline
from perfmod.core.paths import repo_root
from perfmod.studies import (
    anger_skeletons,
    local_calibration,
    local_jacobi2d,
    sasidharan_quicksilver,
    sasidharan_sedov,
    sharif_gol,
    sharif_triton,
)
from perfmod.workflow import catalog
from perfmod.workflow import repeat as rp
from perfmod.workflow.cli import main


def _values(head: dict[str, xr.DataArray]) -> dict[str, float]:
    for name, v in head.items():
        assert v.ndim == 0 and v.attrs["units"] and v.attrs["long_name"], name
    return {k: float(v) for k, v in head.items()}


# ---- the common parts ------------------------------------------------------------------------------------------

def test_abs_rel_errors_skip_nan_and_zero_and_respect_where():
    m = xr.DataArray([1.0, 2.0, np.nan, 0.0, 4.0], dims="x")
    p = xr.DataArray([1.1, 1.0, 3.0, 1.0, 5.0], dims="x")
    assert np.allclose(abs_rel_errors(m, p), [0.1, 0.5, 0.25])
    assert np.allclose(abs_rel_errors(m, p, where=xr.DataArray([True, False, True, True, True], dims="x")),
                       [0.1, 0.25])
    assert mean_max([0.1, np.nan, 0.4]) == pytest.approx((0.25, 0.4))
    assert all(np.isnan(mean_max([])))


def test_run_counts_from_the_record_attributes_else_from_the_flags():
    ds = xr.Dataset(attrs={"runs_total": 30, "runs_interfered": 4, "runs_dropped": 10})
    assert run_counts(ds) == {"runs_total": 30.0, "runs_interfered": 4.0, "runs_clean": 20.0}
    flags = xr.Dataset({"interfered": ("r", [True, False, False]), "train_interfered": ("t", [True, True]),
                        "interfered_attempts": ("r", [1.0, 0.0, 0.0])})
    assert run_counts(flags) == {"runs_total": 5.0, "runs_interfered": 3.0, "runs_clean": 2.0}
    assert all(np.isnan(v) for v in run_counts(xr.Dataset()).values())


def test_not_fitted_gives_nan_figures_but_keeps_the_counts():
    ds = xr.Dataset(attrs={"fit_status": "not fitted: 1 clean run", "runs_total": 6, "runs_interfered": 5,
                           "runs_dropped": 5})
    head = _values(headline_figures(ds, {"err": (0.1, "1", "an error")}))
    assert np.isnan(head["err"]) and head["runs_clean"] == 1.0
    with pytest.raises(ValueError, match="clash"):
        headline_figures(ds, {"runs_total": (1.0, "1", "x")})


def test_total_time_headline_reads_the_total_time_row_and_names_what_it_is_over():
    table = pd.DataFrame({"mean |error|": [0.5, 0.04], "max |error|": [0.9, 0.07]}, index=["t_w", "total_time"])
    head = total_time_headline(xr.Dataset(), lambda ds: table, "held-out widgets")
    assert list(head)[:2] == ["total_time_error_mean", "total_time_error_max"]
    assert _values(head)["total_time_error_mean"] == pytest.approx(0.04)
    assert _values(head)["total_time_error_max"] == pytest.approx(0.07)
    assert head["total_time_error_max"].attrs["long_name"] == ("largest |relative error| of the total time over the "
                                                               "held-out widgets")


# ---- each study's headline on a hand-built dataset --------------------------------------------------------------

def test_gol_headline_is_the_held_out_total_time_error_without_oversubscribed_runs():
    err = np.array([[0.02, -0.04, 0.9], [-0.06, 0.08, np.nan]])  # nprocs 4 is oversubscribed: left out
    ds = xr.Dataset({f"{q}_error": (("case", "nprocs"), err) for q in ("t_w", "t_c", "total_time")},
                    coords={"nprocs": [1, 2, 4], "oversubscribed": ("nprocs", [False, False, True])},
                    attrs={"fit_status": "fitted on the clean training runs", "runs_total": 40,
                           "runs_interfered": 2, "runs_dropped": 10})
    head = _values(sharif_gol.headline(ds))
    assert head["total_time_error_mean"] == pytest.approx(0.05)
    assert head["total_time_error_max"] == pytest.approx(0.08)
    assert (head["runs_total"], head["runs_interfered"], head["runs_clean"]) == (40, 2, 30)
    ds.attrs["fit_status"] = "not fitted: too few clean training runs"
    assert np.isnan(_values(sharif_gol.headline(ds))["total_time_error_mean"])


def test_triton_headline_is_the_held_out_total_time_error():
    err = np.array([[0.1, -0.3], [0.02, 0.05]])  # (event, factor); the coarse column is not held out
    held = np.array([[False, True], [False, True]])
    ds = xr.Dataset({**{f"{q}_error": (("event", "factor"), err) for q in ("t_w", "t_c", "total_time")},
                     "held_out": (("event", "factor"), held), "steps_measured": (("event", "factor"), np.ones((2, 2))),
                     "steps_predicted": (("event", "factor"), np.ones((2, 2)))})
    head = _values(sharif_triton.headline(ds))
    assert head["total_time_error_mean"] == pytest.approx(0.175)
    assert head["total_time_error_max"] == pytest.approx(0.3)
    assert np.isnan(head["runs_total"])  # no interference record in this dataset


def test_jacobi2d_headline_is_the_median_iteration_error_per_kernel_model():
    shape = (2, 2, 2)  # model, block, nprocs
    iter_err = np.array([[[0.1, -0.3], [0.2, 0.9]], [[0.01, -0.05], [0.03, 0.9]]])  # [qroof, qroof_profiled]
    data = {f"t_{q}_error": (("model", "block", "nprocs"), np.zeros(shape) if q != "iter" else iter_err)
            for q in local_jacobi2d.COMPARED}
    ds = xr.Dataset({**data, "headline": (("block", "nprocs"), [[True, True], [True, False]])},
                    coords={"model": ["qroof", "qroof_profiled"], "block": [2048, 2560], "nprocs": [1, 2]},
                    attrs={"headline_model": "qroof_profiled"})
    head = _values(local_jacobi2d.headline(ds))
    assert head["t_iter_error_median"] == pytest.approx(0.03)
    assert head["t_iter_error_median_qroof"] == pytest.approx(0.2)


def test_sedov_headline_is_the_validation_error_of_the_chosen_models():
    ds = xr.Dataset({"shared_measured": ("r", [10.0, 20.0, 40.0]), "shared_predicted": ("r", [11.0, 19.0, 40.0]),
                     "mpi_measured": ("m", [5.0, 10.0]), "mpi_predicted": ("m", [6.0, 10.0])},
                    attrs={"chosen_model": "C", "validation_rmse_over_training_rse": 1.3})
    head = _values(sasidharan_sedov.headline(ds))
    assert head["shared_error_mean"] == pytest.approx(0.05)
    assert head["shared_error_max"] == pytest.approx(0.1)
    assert head["shared_rmse_over_rse"] == pytest.approx(1.3)
    assert head["mpi_error_mean"] == pytest.approx(0.1)
    assert np.isnan(_values(sasidharan_sedov.headline(ds.drop_vars(["mpi_measured", "mpi_predicted"])))[
        "mpi_error_mean"])


def test_quicksilver_headline_is_the_validation_error_of_models_1_and_2():
    ds = xr.Dataset({"model1_measured": ("a", [1.0, 2.0]), "model1_predicted": ("a", [1.2, 2.0]),
                     "model2_measured": ("b", [1.0, 4.0]), "model2_predicted": ("b", [0.5, 5.0])})
    head = _values(sasidharan_quicksilver.headline(ds))
    assert head["model1_error_mean"] == pytest.approx(0.1) and head["model1_error_max"] == pytest.approx(0.2)
    assert head["model2_error_mean"] == pytest.approx(0.375) and head["model2_error_max"] == pytest.approx(0.5)


def test_calibration_headline_is_the_one_way_error_and_the_short_message_latency():
    ds = xr.Dataset({"t_oneway_measured": ("msg_bytes", [1e-6, 2e-6, 1e-5]),
                     "t_oneway_predicted": ("msg_bytes", [1.1e-6, 2e-6, 0.7e-5]),
                     "postal_estimate": (("fit_protocol", "parameter"), [[9e-7, 1e-10], [3e-6, 8e-11]])},
                    coords={"msg_bytes": [8, 64, 65536], "fit_protocol": ["short", "rendezvous"],
                            "parameter": ["alpha", "beta"]})
    head = _values(local_calibration.headline(ds))
    assert head["t_oneway_error_mean"] == pytest.approx(0.4 / 3)
    assert head["t_oneway_error_max"] == pytest.approx(0.3)
    assert head["latency"] == pytest.approx(9e-7)


def test_anger_headline_is_the_clean_held_out_skeleton_error_per_method_and_the_speedup():
    methods = list(anger_skeletons.METHODS)
    err = np.zeros((1, 3, 1, len(methods)))  # app, size, nprocs, method
    err[0, :, 0, 0] = [0.5, -0.1, 0.3]  # eiger: size 0 is a training size, size 2 has no clean run
    err[0, :, 0, 2] = [0.0, 0.2, -0.4]  # loop
    ds = xr.Dataset({"runtime_error": (("app", "size", "nprocs", "method"), err),
                     "runtime_cpu_error": (("app", "size", "nprocs", "method"), err),
                     "held_out": (("app", "size"), [[False, True, True]]),
                     "problem_size": (("app", "size"), [[8.0, 12.0, 16.0]]),
                     "measured_clean": (("app", "size", "nprocs"), [[[True], [True], [False]]]),
                     "skeleton_speedup": (("app", "size"), [[10.0, 14.0, np.nan]]),
                     "interfered": (("app", "size", "nprocs", "rep"), [[[[False, True]], [[False, False]],
                                                                        [[True, True]]]])},
                    coords={"app": ["hpccg"], "size": [0, 1, 2], "nprocs": [1], "method": methods, "rep": [0, 1]},
                    attrs={"speedup_method": "eiger"})
    head = _values(anger_skeletons.headline(ds))
    assert head["skeleton_error_eiger"] == pytest.approx(0.1)
    assert head["skeleton_error_loop"] == pytest.approx(0.2)
    assert head["skeleton_speedup_mean"] == pytest.approx(12.0)
    assert (head["runs_total"], head["runs_interfered"], head["runs_clean"]) == (6, 3, 3)


# ---- which studies, and the Makefile ---------------------------------------------------------------------------

def test_every_measuring_study_has_a_headline_and_a_make_repeat_target():
    studies = rp.measuring_studies()
    assert studies == [s.name for s in catalog.studies() if s.measuring] and len(studies) >= 7
    for s in studies:
        assert callable(rp._headline_function(s)), s
    database = subprocess.run(["make", "-pq", f"PYTHON_SYS={sys.executable}"], cwd=repo_root(), capture_output=True,
                              text=True, check=False).stdout  # -q: exit status 1, nothing is up to date
    assert re.search(r"^MEASURING := (.*)$", database, re.M).group(1).split() == studies
    make = (repo_root() / "Makefile").read_text()
    for s in studies:  # the target runs the repeat into build/repeat/<study>, resumable, and writes data/processed
        dry = subprocess.run(["make", "-n", f"repeat-{s}", "REPEAT=2"], cwd=repo_root(), capture_output=True,
                             text=True, check=True).stdout
        assert f"perfmod repeat {s} -n 2 --out build/repeat/{s} --resume --canonical" in dry, dry
    assert "repeat" not in re.search(r"^all:.*$", make, re.M).group(0)  # repeats are not part of make all
    with pytest.raises(LookupError, match="only measuring studies"):
        rp.headline_of("choi2020_what_if", xr.Dataset())


# ---- perfmod repeat --------------------------------------------------------------------------------------------

TOY = """import numpy as np, xarray as xr
from perfmod.core.io import annotate, write_dataset
rng = np.random.default_rng()
ds = xr.Dataset({"err": ((), float(rng.uniform(0.01, 0.2)), {"units": "1", "long_name": "an error"})},
                attrs={"runs_total": 5, "runs_interfered": int(rng.integers(0, 3)), "runs_dropped": 2})
write_dataset(annotate(ds, "toy", "test"), dataset_path)
"""


def _toy(tmp_path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('dataset_path: str = "../data/processed/toy.nc"  # out')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# toy"), params, nbformat.v4.new_code_cell(TOY)]
    nb.metadata["perfmod"] = {"smoke": {}, "exclusive": True}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "nb" / "toy.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    return path


@pytest.fixture
def toy_headline(monkeypatch):
    def headline(ds):
        return headline_figures(ds, {"err_mean": (float(ds.err), "1", "mean |relative error| of the toy")})

    real = rp._headline_function
    monkeypatch.setattr(rp, "_headline_function", lambda study: headline if study == "toy" else real(study))


def test_repeat_writes_each_run_and_numpys_median_and_range_and_resumes(tmp_path, toy_headline):
    before = _fingerprint()
    nb = _toy(tmp_path)
    lines: list[str] = []
    ds = rp.repeat(nb, 2, out=tmp_path / "rep", smoke=True, progress=False, echo=lines.append)
    assert list(ds.run.values) == [0, 1]
    on_disk = xr.open_dataset(tmp_path / "rep" / "repeat_toy.nc").load()
    for name in ("err_mean", "runs_interfered", "runs_clean"):
        v = on_disk[name].values
        assert float(on_disk[f"{name}_median"]) == pytest.approx(np.median(v))
        assert float(on_disk[f"{name}_min"]) == np.min(v) and float(on_disk[f"{name}_max"]) == np.max(v)
    # each run's figure is its own dataset's value: two runs from scratch, not one copied
    runs = sorted((tmp_path / "rep").glob("run*-*"))
    assert len(runs) == 2 and all((r / "toy.ipynb").is_file() for r in runs)
    own = [float(xr.open_dataset(r / "toy.nc").err) for r in runs]
    assert list(on_disk.err_mean.values) == own
    assert on_disk.runs_total.values.tolist() == [5.0, 5.0]
    assert on_disk.attrs["runs_completed"] == 2 and on_disk.measured_utc.dims == ("run",)
    assert sum("done in" in s for s in lines) == 2 and "err_mean" in lines[-2]
    # resume: the completed runs are kept, only the missing third runs; without --resume the directory is refused
    with pytest.raises(FileExistsError, match="--resume"):
        rp.repeat(nb, 3, out=tmp_path / "rep", smoke=True, progress=False, echo=lines.append)
    lines.clear()
    ds3 = rp.repeat(nb, 3, out=tmp_path / "rep", smoke=True, progress=False, resume=True, echo=lines.append)
    assert list(ds3.err_mean.values[:2]) == own and ds3.sizes["run"] == 3
    assert sum("started" in s for s in lines) == 1
    assert float(ds3.err_mean_median) == pytest.approx(np.median(ds3.err_mean.values))
    figs = rp.repeat_figures("toy", tmp_path / "rep")
    assert figs[0].name == "err_mean" and figs[0].runs == figs[0].of == 3
    assert figs[0].text().startswith("median ") and "over 3 runs" in figs[0].text()
    assert _fingerprint() == before


def test_an_interrupted_run_keeps_the_completed_ones(tmp_path, toy_headline, monkeypatch):
    nb = _toy(tmp_path)
    real = rp.run_notebook
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(rp, "run_notebook", flaky)
    with pytest.raises(KeyboardInterrupt):
        rp.repeat(nb, 3, out=tmp_path / "rep", smoke=True, progress=False, echo=lambda s: None)
    kept = xr.open_dataset(tmp_path / "rep" / "repeat_toy.nc")
    assert kept.sizes["run"] == 1
    failed = [json.loads(p.read_text()) for p in (tmp_path / "rep").glob("run1-*/status.json")]
    assert failed[0]["status"] == "failed" and "KeyboardInterrupt" in failed[0]["error"]


def test_repeat_refuses_canonical_smoke_and_a_study_without_headline(tmp_path, capsys):
    assert main(["repeat", "local_calibration", "--smoke", "--canonical", "-n", "1"]) == 1
    assert "drop --smoke" in capsys.readouterr().err
    assert main(["repeat", "choi2020_what_if", "--smoke", "--out", str(tmp_path)]) == 1
    assert "only measuring studies" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_perfmod_repeat_of_the_calibration_smoke_run(tmp_path, capsys):
    before = _fingerprint()
    assert main(["repeat", "local_calibration", "-n", "2", "--smoke", "--out", str(tmp_path / "r"), "-q"]) == 0
    out = capsys.readouterr().out
    ds = xr.open_dataset(tmp_path / "r" / "repeat_local_calibration.nc")
    assert list(ds.run.values) == [0, 1]
    for name in ("t_oneway_error_mean", "t_oneway_error_max", "latency"):
        v = ds[name].values
        assert np.all(np.isfinite(v)) and float(ds[f"{name}_median"]) == pytest.approx(np.median(v))
        assert float(ds[f"{name}_min"]) == v.min() and float(ds[f"{name}_max"]) == v.max()
    # the smoke run fits the committed sample ping-pong: both runs score the same fit
    assert ds.t_oneway_error_mean.values[0] == ds.t_oneway_error_mean.values[1]
    assert "t_oneway_error_mean" in out and "over 2 runs" in out
    assert _fingerprint() == before


# ---- what the documentation quotes ------------------------------------------------------------------------------

def _gol(scale: float, interfered: int) -> xr.Dataset:
    err = scale * np.array([[0.02, -0.04], [-0.06, 0.08]])
    return xr.Dataset({f"{q}_error": (("case", "nprocs"), err) for q in ("t_w", "t_c", "total_time")},
                      coords={"nprocs": [1, 2], "oversubscribed": ("nprocs", [False, False])},
                      attrs={"fit_status": "fitted", "runs_total": 40, "runs_interfered": interfered,
                             "runs_dropped": interfered, "measured_utc": f"2026-01-0{interfered + 1}T00:00:00+00:00"})


def test_docs_quote_the_median_and_range_of_the_repeat_dataset_else_say_one_run(tmp_path):
    sentence, header, rows = rp.headline_summary("sharif_gol", _gol(1.0, 0), tmp_path)
    assert "one run (no repeat dataset yet: run make repeat-sharif_gol)" in sentence
    assert header == ["figure", "this run"] and rows[0][1] == "5.0 %" and rows[1][1] == "8.0 %"
    runs = [{"index": i, "dataset": _gol(s, k), "measured_utc": _gol(s, k).attrs["measured_utc"], "elapsed": 10.0,
             "load_before": 0.1, "load_after": 0.2, "run_dir": f"run{i}"}
            for i, (s, k) in enumerate([(1.0, 0), (2.0, 3), (1.5, 1)])]
    ds = rp.combine_runs("sharif_gol", runs, {"study": "sharif_gol", "n": 3})
    assert ds.total_time_error_mean.values.tolist() == pytest.approx([0.05, 0.10, 0.075])
    assert float(ds.total_time_error_mean_median) == pytest.approx(0.075)
    assert float(ds.runs_interfered_max) == 3 and float(ds.runs_clean_min) == 37
    assert ds.measured_utc.values.tolist()[1] == "2026-01-04T00:00:00+00:00"
    ds.to_netcdf(rp.repeat_path("sharif_gol", tmp_path), engine="h5netcdf")
    sentence, header, rows = rp.headline_summary("sharif_gol", _gol(1.0, 0), tmp_path)
    assert "median and range over 3 runs" in sentence and header == ["figure", "median", "range", "runs"]
    assert rows[0][1:] == ["7.5 %", "5.0 % to 10.0 %", "3"]
    assert rows[1][1:] == ["12.0 %", "8.0 % to 16.0 %", "3"]
    assert rows[3][0] == "runs flagged interfered (another process took a material share of the CPUs)"
    assert rows[3][1:] == ["1", "0 to 3", "3"]


def test_the_study_page_shows_the_repeat_table_or_says_one_run(tmp_path, monkeypatch):
    pytest.importorskip("sphinx", reason="the docs extension needs the docs extra: pip install -e '.[docs]'")
    monkeypatch.syspath_prepend(str(repo_root() / "docs" / "_ext"))
    import perfmod_docs

    monkeypatch.setattr(perfmod_docs, "PROCESSED", tmp_path)
    assert perfmod_docs.headline_nodes("sharif_gol", None) == []  # neither run nor repeated: the page says not run
    assert perfmod_docs.headline_nodes("choi2020_what_if", xr.Dataset()) == []  # does not measure
    one = perfmod_docs.headline_nodes("sharif_gol", _gol(1.0, 0))
    assert "one run (no repeat dataset yet: run make repeat-sharif_gol)" in one[0].astext()
    assert "5.0 %" in one[1].astext()
    runs = [{"index": i, "dataset": _gol(s, 0), "measured_utc": "", "elapsed": 1.0, "load_before": 0.0,
             "load_after": 0.0, "run_dir": ""} for i, s in enumerate([1.0, 3.0])]
    rp.combine_runs("sharif_gol", runs, {"n": 2}).to_netcdf(tmp_path / "repeat_sharif_gol.nc", engine="h5netcdf")
    two = perfmod_docs.headline_nodes("sharif_gol", None)
    assert "median and range over 2 runs" in two[0].astext()
    assert "10.0 %" in two[1].astext() and "5.0 % to 15.0 %" in two[1].astext()
