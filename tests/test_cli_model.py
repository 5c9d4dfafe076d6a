"""``perfmod model``: an Extra-P experiment fitted and predicted beyond its points, Extra-P beside it."""

import numpy as np
import pandas as pd
import pytest

from perfmod.models.compute import write_extrap_text
from perfmod.models.compute.extrap_runner import extrap_python
from perfmod.workflow.cli import main

VALUES = [4.0, 8.0, 16.0, 32.0, 64.0]


@pytest.fixture
def experiment(tmp_path):
    """Two callpaths of exact closed forms in one parameter, 3 repetitions each, as an Extra-P text file."""
    x = np.repeat(VALUES, 3)
    frame = pd.concat([pd.DataFrame({"x": x, "value": 2.0 + 0.5 * x**2, "callpath": "square", "metric": "time"}),
                       pd.DataFrame({"x": x, "value": 1.0 + 3.0 * x, "callpath": "line", "metric": "time"})])
    return write_extrap_text(frame, tmp_path / "exp.txt", ["x"])


def test_predicts_each_callpath_beyond_the_data(experiment, tmp_path, capsys):
    out = tmp_path / "p.csv"
    assert main(["model", str(experiment), "--at", "x=128", "--at", "x=1024", "-o", str(out)]) == 0
    table = pd.read_csv(out).set_index(["callpath", "x"])
    np.testing.assert_allclose(table.loc[("square", 128.0), "predicted"], 2 + 0.5 * 128**2, rtol=1e-6)
    np.testing.assert_allclose(table.loc[("square", 1024.0), "predicted"], 2 + 0.5 * 1024**2, rtol=1e-6)
    np.testing.assert_allclose(table.loc[("line", 1024.0), "predicted"], 1 + 3 * 1024, rtol=1e-6)
    assert table.extrapolated.all()
    assert (table.lower <= table.predicted * (1 + 1e-9)).all() and (table.predicted <= table.upper * (1 + 1e-9)).all()
    said = capsys.readouterr().out
    assert "square / time: 15 values at 5 points" in said and "x**2" in said and "beyond the measured range" in said


def test_default_points_are_2_4_8_times_the_largest_value(experiment, tmp_path):
    out = tmp_path / "p.csv"
    assert main(["model", str(experiment), "--callpath", "line", "-o", str(out)]) == 0
    table = pd.read_csv(out)
    assert table.callpath.unique().tolist() == ["line"] and table.x.tolist() == [128.0, 256.0, 512.0]


@pytest.mark.skipif(extrap_python() is None, reason="no Python with Extra-P (make extrap-env)")
def test_extrap_beside_it(experiment, tmp_path, capsys):
    out = tmp_path / "p.csv"
    assert main(["model", str(experiment), "--extrap", "--at", "x=512", "-o", str(out)]) == 0
    table = pd.read_csv(out).set_index("callpath")
    np.testing.assert_allclose(table.loc["square", "extrap"], 2 + 0.5 * 512**2, rtol=1e-9)
    np.testing.assert_allclose(table.loc["line", "extrap"], 1 + 3 * 512, rtol=1e-9)
    assert "Extra-P 4." in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--at", "y=2"], "no parameter 'y' in the experiment; its parameters: x"),
    (["--at", "x"], "give NAME=VALUE pairs"),
    (["--at", "x=big"], "give NAME=VALUE pairs"),
    (["--callpath", "cube"], "no callpath 'cube'; it has: line, square"),
])
def test_bad_input_is_one_line_naming_what(experiment, argv, message, capsys):
    assert main(["model", str(experiment), *argv]) == 1
    assert message in capsys.readouterr().err


def test_a_point_lacking_a_parameter_names_it(tmp_path, capsys):
    p, n = (a.ravel() for a in np.meshgrid(VALUES, VALUES, indexing="ij"))
    path = write_extrap_text(pd.DataFrame({"p": p, "n": n, "value": 1.0 + p * n}), tmp_path / "e.txt", ["p", "n"])
    assert main(["model", str(path), "--at", "p=128"]) == 1
    assert "give every parameter a value; missing: n" in capsys.readouterr().err


def test_default_points_keep_a_parameter_the_data_hold_fixed(tmp_path):
    x = np.repeat(VALUES, 2)
    path = write_extrap_text(pd.DataFrame({"p": x, "n": 16.0, "value": 5.0 + 2.0 * x}), tmp_path / "e.txt", ["p", "n"])
    out = tmp_path / "p.csv"
    assert main(["model", str(path), "-o", str(out)]) == 0
    table = pd.read_csv(out)
    assert table.p.tolist() == [128.0, 256.0, 512.0] and table.n.tolist() == [16.0] * 3
    np.testing.assert_allclose(table.predicted, 5.0 + 2.0 * table.p, rtol=1e-6)


@pytest.mark.skipif(extrap_python() is None, reason="no Python with Extra-P (make extrap-env)")
def test_extrap_gets_the_parameters_the_data_vary(tmp_path):
    x = np.repeat(VALUES, 2)
    path = write_extrap_text(pd.DataFrame({"p": x, "n": 16.0, "value": 5.0 + 2.0 * x}), tmp_path / "e.txt", ["p", "n"])
    out = tmp_path / "p.csv"
    assert main(["model", str(path), "--extrap", "--at", "p=1000,n=16", "-o", str(out)]) == 0
    np.testing.assert_allclose(pd.read_csv(out).extrap, [2005.0], rtol=1e-9)
