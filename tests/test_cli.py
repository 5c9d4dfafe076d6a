"""The ``perfmod`` command: typed parameters, run directories that never touch canonical outputs, replay, list."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from perfmod.core.paths import data_dir, repo_root
from perfmod.workflow.cli import main
from perfmod.workflow.params import ParameterError, check_type, coerce, place_outputs, resolve_paths

DUMPI = Path(__file__).parent / "data" / "dumpi-bin" / "p2p_coll"


def _fingerprint() -> dict[str, str]:
    """Hash of every canonical output: data/processed, figures, data/platforms/local.toml."""
    root = repo_root()
    files = [*(data_dir() / "processed").glob("*"), *(root / "figures").rglob("*"),
             data_dir() / "platforms" / "local.toml"]
    return {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.is_file()}


@pytest.mark.parametrize(("text", "annotation", "value"), [
    ("3", "int", 3), ("2.5", "float", 2.5), ("4", "float", 4.0), ("lassen", "str", "lassen"), ("1", "str", "1"),
    ("[1, 2]", "list[int]", [1, 2]), ("['a']", "list[str]", ["a"]), ("True", "bool", True),
    ("[[1, 2, 3]]", "list[list[int]]", [[1, 2, 3]]), ("None", "str | None", None),
])
def test_coerce_reads_the_declared_type(text, annotation, value):
    assert coerce("x", text, annotation) == value


@pytest.mark.parametrize(("text", "annotation", "message"), [
    ("sixteen", "int", "parameter x expects int, got 'sixteen'"),
    ("summit", "list[str]", "parameter x expects list[str], got 'summit' (write ['summit'])"),
    ("[1, 'a']", "list[int]", "parameter x expects list[int], got [1, 'a']"),
    ("True", "int", "parameter x expects int, got True"),
])
def test_coerce_rejects_with_one_line(text, annotation, message):
    with pytest.raises(ParameterError) as err:
        coerce("x", text, annotation)
    assert str(err.value) == message


def test_check_type_of_yaml_values():
    assert check_type("n", [1, 2], "list[int]") == [1, 2]
    with pytest.raises(ParameterError, match="expects dict"):
        check_type("d", [1], "dict[str, int]")


def test_relative_paths_resolve_against_the_callers_directory(tmp_path):
    out = resolve_paths({"pingpong_path": "pp.nc", "dataset_path": "/abs/x.nc", "reps": 3, "raw_out": ""}, tmp_path)
    assert out == {"pingpong_path": str(tmp_path / "pp.nc"), "dataset_path": "/abs/x.nc", "reps": 3, "raw_out": ""}


def test_outputs_of_a_non_canonical_run_go_to_the_run_directory(tmp_path):
    declared = {"dataset_path": "str", "figures_dir": "str", "raw_out": "str", "platform_out": "str", "reps": "int"}
    run_dir = tmp_path / "local_calibration-20260101T000000Z"
    placed = place_outputs(declared, {"reps": 2}, run_dir, smoke=True, study="local_calibration")
    assert placed == {"dataset_path": str(run_dir / "local_calibration.nc"), "figures_dir": str(run_dir / "figures"),
                      "platform_out": str(run_dir / "local.toml"), "raw_out": str(run_dir / "raw")}
    # a real run keeps raw data in data/raw; a user-given output path is kept
    assert "raw_out" not in place_outputs(declared, {}, run_dir, smoke=False, study="x")
    assert "dataset_path" not in place_outputs(declared, {"dataset_path": "/x.nc"}, run_dir, smoke=False,
                                              study="x")


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "choi2020_what_if", "-p", "total_gpus", "sixteen"], "perfmod run: parameter total_gpus expects int"),
    (["run", "choi2020_comm_models", "-p", "platforms", "summit"], "expects list[str], got 'summit'"),
    (["run", "no_such_study"], "no notebook or study named 'no_such_study'; studies: "),
    (["run", "choi2020_what_if", "-p", "nope", "1"], "has no parameter 'nope'"),
    (["run", "choi2020_what_if", "--canonical", "--smoke"], "--canonical runs a study with its defaults"),
    (["replay", "no/such/trace.npz"], "perfmod replay: "),
    (["replay", "--synthetic", "jacobi2d:4:1", "--model", "nope"], "--model 'nope': not a communication model; "
                                                                  "choose from "),
])
def test_errors_are_one_line_and_a_nonzero_status(argv, message, capsys):
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_smoke_and_parameter_runs_leave_canonical_outputs_byte_identical(tmp_path, monkeypatch, capsys):
    before = _fingerprint()
    monkeypatch.chdir(tmp_path)
    params = tmp_path / "p.yaml"
    params.write_text("models: [postal]\n")
    assert main(["run", "choi2020_what_if", "--smoke", "-f", str(params), "-q"]) == 0
    out = capsys.readouterr().out
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.name.startswith("choi2020_what_if-") and str(run_dir) in out
    assert re.search(rf"executed notebook: {re.escape(str(run_dir))}/choi2020_what_if.ipynb \(\d+ s\)", out)
    ds = xr.open_dataset(run_dir / "choi2020_what_if.nc")
    assert list(ds["fat_model"].values) == ["postal"]  # the YAML file's value reached the study
    assert any((run_dir / "figures").glob("*.png"))
    assert _fingerprint() == before


def test_list_names_studies_and_platforms(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "  sharif_gol" in out and "  summit" in out and "  choi2020_table2_postal" in out


def test_replay_a_dumpi_directory_prints_the_slowest_ranks(tmp_path, capsys):
    assert main(["replay", str(DUMPI), "--platform", "lassen", "--model", "postal", "--top", "2",
                 "-o", str(tmp_path / "r.nc")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "on lassen, postal: slowest rank" in out[0] and out[1].split()[:2] == ["rank", "comm_time"]
    assert len(out) == 2 + 2 + 1 + 1  # header, two ranks, mean, wrote
    assert xr.open_dataset(tmp_path / "r.nc").sizes["rank"] == 4


def test_replay_table_without_output_is_the_datasets_and_imports_no_dataset_library():
    """Without -o the table comes from replay_times (no dataset): the same numbers as replay()'s dataset, and
    the process imports neither xarray nor pandas (the start-up of a small replay, issue 23)."""
    import subprocess
    import sys

    from perfmod.replay import replay
    from perfmod.trace import read_trace
    from perfmod.workflow.cli import RUN_TIMES

    code = ("import sys; from perfmod.workflow.cli import main; rc = main(sys.argv[1:]); "
            "print('loaded', sorted(m for m in ('xarray', 'pandas') if m in sys.modules)); sys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", code, "replay", str(DUMPI), "--platform", "lassen", "--model",
                          "kmodel", "--top", "4"], check=True, capture_output=True, text=True).stdout.splitlines()
    assert out[-1] == "loaded []"
    ds = replay(read_trace(DUMPI), "lassen", "kmodel")
    rows = [ln.split() for ln in out if ln[:4].strip().isdigit()]
    assert sorted(int(r[0]) for r in rows) == [0, 1, 2, 3]
    assert int(rows[0][0]) == int(ds.comm_time.argmax())
    for r in rows:
        np.testing.assert_allclose([float(x) for x in r[1:]], [float(ds[v][int(r[0])]) for v in RUN_TIMES],
                                   rtol=1e-6, atol=1e-15)


def test_calibrate_refits_a_pingpong_file_into_a_valid_platform(tmp_path, capsys):
    from perfmod.machine.platforms import load

    src = Path(__file__).parent / "data" / "pingpong-negative-beta.nc"
    assert main(["calibrate", str(src), "--out", str(tmp_path / "p.toml")]) == 0
    out = capsys.readouterr().out
    assert "protocol thresholds [7936] B" in out and "decision: segment" in out
    plat = load(tmp_path / "p.toml")
    assert plat.name == "local"
    assert main(["calibrate", str(src)]) == 0  # nothing written without --out
    assert "not written" in capsys.readouterr().out


def _writable_names() -> list[str]:
    from perfmod.trace import trace_formats

    return [f"j{f.extensions[0]}" for f in trace_formats() if f.write is not None and f.extensions]


@pytest.mark.parametrize("name", _writable_names())  # every registered format perfmod writes
def test_replay_detects_each_format_and_prints_a_breakdown(name, tmp_path, capsys):
    from perfmod.apps.traces import synthetic
    from perfmod.trace import write_trace

    written = write_trace(synthetic("jacobi2d", 6, 1), tmp_path / name)
    assert main(["replay", str(written), "--platform", "lassen", "--model", "postal", "--top", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "on lassen, postal: slowest rank" in out[0]
    assert len(out) == 1 + 1 + 3 + 1  # title, header, three slowest ranks, mean
    assert all(float(v) >= 0 for v in out[2].split()[1:])


FIXTURE = Path(__file__).parent / "data" / "notebooks" / "sweep_fixture.ipynb"


@pytest.mark.parametrize("debug", [False, True])
def test_a_failing_notebook_reports_its_own_exception_cell_and_line(tmp_path, capsys, debug):
    argv = ["run", str(FIXTURE), "-p", "fail_with", "first line\nsecond line", "--out", str(tmp_path), "-q"]
    assert main((["--debug"] if debug else []) + argv) == 1
    err = capsys.readouterr().err
    report = err[err.index("perfmod run: "):].splitlines()
    assert report[:3] == ["perfmod run: ValueError: first line", "second line",
                          "  in the executed notebook's cell 3 (In [3]), line 14: raise ValueError(fail_with)"]
    assert "PapermillExecutionError" not in err and "-----" not in report[0] and "without encryption" not in err
    if debug:  # the kernel's traceback comes first, without its colour codes
        assert "---> 14" in err[: err.index("perfmod run: ")] and "\x1b[" not in err
    else:
        assert report[3:] == ["  (rerun with --debug for the traceback)"]


def test_a_multiline_message_is_printed_whole(capsys):
    from perfmod.workflow.cli import _report

    _report("replay", ValueError("replay deadlocks with 4 of 4 ranks blocked:\n  rank 0: recv from 1"), False)
    assert capsys.readouterr().err == ("perfmod replay: replay deadlocks with 4 of 4 ranks blocked:\n"
                                       "  rank 0: recv from 1\n")


def test_replay_stops_on_a_misspelt_action_and_skipping_prints_the_count(tmp_path, capsys):
    p = tmp_path / "m.tit"
    p.write_text("".join(f"{r} init\n{r} allreduse 8 0\n{r} finalize\n" for r in range(2)))
    assert main(["replay", str(p), "--model", "postal"]) == 1
    assert "m.tit:2: allreduse: not an action of SimGrid's replay (misspelt?)" in capsys.readouterr().err
    with pytest.warns(Warning, match="skipped 2 lines"):
        assert main(["replay", str(p), "--model", "postal", "--unknown", "skip"]) == 0
    assert "skipped 2 calls perfmod does not model: allreduse x2" in capsys.readouterr().err


def test_replay_output_refuses_an_existing_file_without_force(tmp_path, capsys):
    out = tmp_path / "r.nc"
    out.write_text("keep me")
    argv = ["replay", "--synthetic", "jacobi2d:4:1", "--model", "postal", "-o", str(out)]
    assert main(argv) == 2
    assert f"-o {out}: exists; give --force to overwrite it" in capsys.readouterr().err
    assert out.read_text() == "keep me"
    assert main([*argv, "--force"]) == 0 and xr.open_dataset(out).sizes["rank"] == 4


def test_replay_a_collective_alone(tmp_path, capsys):
    from perfmod.apps.traces import collective
    from perfmod.replay import replay

    out = tmp_path / "b.nc"
    assert main(["replay", "--synthetic", "bcast:37:2", "--model", "loggp", "-o", str(out)]) == 0
    assert "Trace(nprocs=37, events=74, source='synthetic:bcast') on summit, loggp" in capsys.readouterr().out
    got, want = xr.open_dataset(out), replay(collective("bcast", 37, iterations=2), "summit", "loggp")
    np.testing.assert_array_equal(got.total_time.values, want.total_time.values)
    assert main(["replay", "--synthetic", "bcast:0:1"]) == 2
    assert "--synthetic bcast:0:1: nprocs must be a positive integer" in capsys.readouterr().err


def test_list_models_names_every_registered_model(capsys):
    from perfmod.models.comm.registry import model_names

    assert main(["list", "models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "communication models:" and [ln.split()[0] for ln in lines[1:]] == list(model_names())


def test_run_out_onto_a_file_is_a_clear_error(tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("")
    assert main(["run", "choi2020_what_if", "--smoke", "--out", str(f)]) == 2
    assert capsys.readouterr().err.strip() == (f"perfmod run: --out {f}: is a file, not a directory; give a directory "
                                               "for the run's outputs")


def test_show_and_run_help_list_the_study_parameters_with_types_defaults_and_comments(capsys):
    from perfmod.workflow.notebooks import declared_parameters
    from perfmod.workflow.show import parameters

    params = parameters(FIXTURE)
    assert [p.name for p in params] == list(declared_parameters(FIXTURE))  # the same cell, read the same way
    assert params[2] == type(params[2])("a", "float", "1.0", "slope")
    assert main(["show", str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    assert "  label         str    = \"ab\"  # a string result (its length varies between points)" in out
    assert "smoke set (--smoke): n=2" in out and "no measurement" in out
    assert main(["run", "local_calibration", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--smoke" in out and "measures this machine" in out and "\n  max_breaks " in out


def test_a_missing_extra_is_one_line_naming_it(capsys):
    from perfmod.workflow.cli import _report

    _report("sweep", ModuleNotFoundError("No module named 'yaml'", name="yaml"), False)
    assert capsys.readouterr().err == ("perfmod sweep: needs the notebooks extra (no module 'yaml'): "
                                       "pip install 'perfmod[notebooks]'\n")


def test_version_and_python_dash_m(capsys):
    import subprocess
    import sys

    with pytest.raises(SystemExit):
        main(["--version"])
    version = capsys.readouterr().out.strip()
    assert re.fullmatch(r"perfmod \S+", version)
    out = subprocess.run([sys.executable, "-m", "perfmod", "--version"], capture_output=True, text=True, check=True,
                         cwd=repo_root())
    assert out.stdout.strip() == version
