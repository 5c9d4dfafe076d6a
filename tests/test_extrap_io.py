"""Extra-P experiment files (samples of Extra-P 4.2.5's own test inputs, tests/data/extrap/README.md)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmod.models.compute import fit_compute_model, model_expression, prediction_table, read_extrap
from perfmod.models.compute.extrap_io import ExtrapFormatError, write_extrap_text

DATA = Path(__file__).parent / "data" / "extrap"


def test_text_one_parameter_values_repetitions_and_order():
    f = read_extrap(DATA / "text_one_parameter_1.txt")
    assert list(f.columns) == ["x", "callpath", "metric", "value", "repetition"]
    assert len(f) == 5 * 6 and set(f.callpath) == {"compute"} and set(f.metric) == {"time"}
    first = f[f.x == 20.0].sort_values("repetition")
    assert first.value.iloc[0] == 82.00848518948744 and first.repetition.tolist() == list(range(6))
    assert f[(f.x == 60.0) & (f.repetition == 5)].value.item() == 721.0616186790007


def test_text_two_parameters_points_in_order():
    f = read_extrap(DATA / "text_two_parameter_1.txt")
    assert len(f) == 25 * 5
    assert f[(f.x == 20) & (f.y == 1) & (f.repetition == 0)].value.item() == 1.007912824061828
    assert f[(f.x == 20) & (f.y == 2) & (f.repetition == 4)].value.item() == 80.69133265056031


def test_json_layouts_and_jsonl():
    legacy = read_extrap(DATA / "json_input_1.json")
    assert list(legacy.columns[:1]) == ["x"] and set(legacy.metric) == {"time"} and len(legacy) == 25
    assert sorted(legacy.x.unique()) == [4.0, 8.0, 16.0, 32.0, 64.0]
    new = read_extrap(DATA / "json_new_input2.json")
    sweep = new[(new.callpath == "sweep") & (new.metric == "time")]
    assert sweep[(sweep.x == 8) & (sweep.y == 20)].value.tolist() == [5.5] * 5
    jl = read_extrap(DATA / "jsonlines_matrix_3p.jsonl")
    assert list(jl.columns[:3]) == ["x", "y", "z"] and set(jl.metric) == {"metr"} and set(jl.callpath) == {"<root>"}


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*") if p.suffix != ".md"))
def test_reader_agrees_with_extrap_itself(name):
    """Every (point, callpath, metric) has the repetitions Extra-P's own reader finds (when it is installed)."""
    pytest.importorskip("extrap")
    from extrap.fileio.file_reader.json_file_reader import JsonFileReader
    from extrap.fileio.file_reader.text_file_reader import TextFileReader

    path = DATA / name
    reader = TextFileReader() if path.suffix == ".txt" else JsonFileReader()
    reader.keep_values = True
    exp = reader.read_experiment(str(path))
    ours = read_extrap(path)
    params = [p.name for p in exp.parameters]
    assert list(ours.columns[:len(params)]) == params
    n = 0
    for (cp, mt), ms in exp.measurements.items():
        for m in ms:
            sel = ours[(ours.callpath == cp.name) & (ours.metric == mt.name)]
            for k, p in enumerate(params):
                sel = sel[sel[p] == m.coordinate[k]]
            if m.values is not None:
                np.testing.assert_allclose(np.sort(sel.value.to_numpy()), np.sort(np.asarray(m.values, dtype=float)))
            else:  # Extra-P's JSON Lines reader keeps only the statistics
                assert sel.value.mean() == pytest.approx(m.mean, rel=1e-12) and len(sel) > 0
            n += len(sel)
    assert n == len(ours)


def test_text_round_trip_and_model_of_a_sample(tmp_path):
    f = read_extrap(DATA / "text_two_parameter_1.txt")
    out = write_extrap_text(f, tmp_path / "t.txt", ["x", "y"])
    back = read_extrap(out)
    pd.testing.assert_frame_equal(back.sort_values(["x", "y", "repetition"]).reset_index(drop=True),
                                  f.sort_values(["x", "y", "repetition"]).reset_index(drop=True))
    model = fit_compute_model(f[["x", "y", "value"]], "value", ["x", "y"])
    pts = f.groupby(["x", "y"]).value.mean()
    pred = np.array([model.predict_one(x=x, y=y) for x, y in pts.index])
    assert np.max(np.abs(pred / pts.to_numpy() - 1)) < 0.05


def test_expression_strings_evaluate_to_the_model():
    rng = np.random.default_rng(0)
    v = np.array([4.0, 8, 16, 32, 64])
    P, N = (a.ravel().repeat(3) for a in np.meshgrid(v, v, indexing="ij"))
    t = (5 + 0.5 * P * np.log2(P) * N**2) * (1 + 0.01 * rng.uniform(-1, 1, P.size))
    model = fit_compute_model(pd.DataFrame({"p": P, "n": N, "time": t}), "time", ["p", "n"])
    py = model_expression(model)
    assert "p**1 * log2(p) * n**2" in py
    value = eval(py, {"log2": np.log2, "p": 100.0, "n": 200.0})  # the test's own string, not user input
    assert value == pytest.approx(model.predict_one(p=100.0, n=200.0), rel=1e-5)
    assert r"p^1 \cdot \log_2(p) \cdot n^2" in model_expression(model, "latex")
    ds = prediction_table(model, {"p": [64.0, 512.0], "n": [64.0, 512.0]})
    assert {"time_predicted", "time_lower", "time_upper", "time_extrapolated"} <= set(ds.data_vars)
    assert ds["time_extrapolated"].values.tolist() == [False, True]


def test_unreadable_files_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("PARAMETER x\nPOINTS 1 2 3\nREGION r\nDATA 1 2\nDATA 1 zwei\n")
    with pytest.raises(ExtrapFormatError, match=r"bad.txt:5: not a number"):
        read_extrap(bad)
    bad.write_text("PARAMETER x\nPOINTS 1\nDATA 1\nDATA 2\n")
    with pytest.raises(ExtrapFormatError, match=r"bad.txt:4: DATA line 2 .* only 1 POINTS"):
        read_extrap(bad)
    jl = tmp_path / "bad.jsonl"
    jl.write_text('{"params": {"x": 1}, "value": 1}\n{"params": {"x": 2}}\n')
    with pytest.raises(ExtrapFormatError, match=r"bad.jsonl:2: missing field 'value'"):
        read_extrap(jl)
