"""Tests of perfmod.models.compute (paper 004 §IV, §VI): pool, VARIMAX, Eiger pipeline and files, perfmod mode."""

import math
import os
import stat

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from perfmod.models.compute import (
    EigerModelFileError,
    EigerOptions,
    MissingParameterError,
    Term,
    TooFewPointsError,
    UnknownParameterError,
    eiger_pool,
    fit_compute_model,
    fit_constant_mean,
    fit_eiger,
    fit_loop_model,
    fit_perfmod,
    read_eiger_model,
    varimax,
    write_eiger_model,
)
from perfmod.models.compute.eiger import with_options
from perfmod.models.compute.selection import adjusted_r2
from perfmod.models.compute.varimax import varimax_criterion

# A model file written by Eiger itself: gtcasl/eiger examples/gold.model (one metric "size", one cluster).
EIGER_GOLD = """1
size
[1](255.0)
[1](145.773797371)
[1,1]((1.0))
Model 0
[1](1.7763568394e-17)
[4](1.0037181792658046e-05, -0.0088573713956641049, 0.18572017261061566, -0.15834192882186315)
1 0 2
1 0 1
1 0 0.5
4 0
"""

# Hand-written in Eiger's text format: 2 metrics, rotation swapping and negating them, 2 clusters.
TWO_CLUSTER = """2
n
m
[2](10.0,-5.0)
[2](2.0,4.0)
[2,2]((0.0,1.0),(-1.0,0.0))
Model 0
[2](-1.0,0.0)
[3](0.5, 2.0, 3.0)
0
2 0 1
4 1
Model 1
[2](1.0,0.0)
[2](1.0, -0.25)
1 0 -1
5 1 0
"""


def _gold_by_hand(s):
    w = [1.0037181792658046e-05, -0.0088573713956641049, 0.18572017261061566, -0.15834192882186315]
    return w[0] * s**2 + w[1] * s + w[2] * math.sqrt(s) + w[3] * math.log2(s)


# ----------------------------------------------------------------------------- pool
def test_pool_encodings_round_trip_and_eiger_zero_conventions():
    pool = eiger_pool(3)
    # identity + 3 x (6 powers + log + products j>=i) + quotients j>i (two each)
    assert len(pool) == 1 + 3 * 7 + 6 + 6
    for t in pool:
        assert Term.decode(t.encode()) == t
        assert Term.from_json(t.to_json()) == t
    X = np.array([[0.0, 2.0, 8.0]])
    assert Term("power", 0, exponent=-2).evaluate(X)[0] == 1.0  # Eiger: |0|^n -> 1
    assert Term("log", 0).evaluate(X)[0] == 1.0  # Eiger: log2|0| -> 1
    assert Term("log", 2).evaluate(X)[0] == 3.0
    assert Term("quotient", 2, 1).evaluate(X)[0] == 4.0
    assert Term.decode("1 0 -0.5").encode() == "1 0 -0.5"
    assert Term.decode("5 1") == Term("power", 1, exponent=-1.0)  # the documented 1/x_i form


def test_eiger_forward_selection_recovers_closed_form():
    n = np.geomspace(100, 1e5, 12).repeat(3)
    m = np.tile([2.0, 4.0, 8.0], 12)
    t = 2e-9 * n * m + 3e-6 * np.sqrt(n) + 1e-4
    model = fit_eiger(pd.DataFrame({"n": n, "m": m, "time": t}), "time", threshold=1e-6)
    assert len(model.clusters) == 1 and len(model.clusters[0].terms) == 3
    names = set(model.params.index)
    assert any("*" in s for s in names) and any("^0.5" in s for s in names)
    q = pd.DataFrame({"n": [333.0, 5e4], "m": [3.0, 5.0]})
    want = 2e-9 * q.n * q.m + 3e-6 * np.sqrt(q.n) + 1e-4
    np.testing.assert_allclose(model.predict(q)["predicted"].values, want, rtol=1e-8)


def test_perfmod_mode_recovers_normal_form_term():
    n = np.geomspace(1e3, 1e6, 14)
    t = 1e-6 + 5e-10 * n * np.log2(n)
    model = fit_perfmod({"n": n, "time": t}, segments="none")
    assert list(model.params.index) == ["1", "|n|^1*log2|n|"]
    np.testing.assert_allclose(model.params.values, [1e-6, 5e-10], rtol=1e-6)


# ----------------------------------------------------------------------------- VARIMAX
def _match_columns(A, B):
    """Max abs difference of A and B after the best column permutation and signs."""
    from itertools import permutations

    best = np.inf
    for perm in permutations(range(B.shape[1])):
        P = B[:, perm]
        signs = np.sign(np.sum(A * P, axis=0))
        best = min(best, np.abs(A - P * signs).max())
    return best


def test_varimax_recovers_rotated_simple_structure():
    # Perfect simple structure maximizes the varimax criterion; rotate it by 30 degrees and back.
    L0 = np.array([[0.9, 0], [0.8, 0], [0.7, 0], [0, 0.9], [0, 0.8], [0, 0.6]])
    th = np.deg2rad(30)
    rot = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    A = L0 @ rot
    L, R = varimax(A)
    assert _match_columns(L0, L) < 1e-10
    np.testing.assert_allclose(R.T @ R, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(A @ R, L, atol=1e-12)
    # with two columns a single (Eiger) sweep already solves it: the pair angle is exact
    assert _match_columns(L0, varimax(A, sweeps=1)[0]) < 1e-10


def test_varimax_matches_statsmodels_gpa():
    from statsmodels.multivariate.factor_rotation import rotate_factors

    rng = np.random.default_rng(3)
    A = rng.normal(size=(8, 3))
    L, _ = varimax(A)
    L_sm, _ = rotate_factors(A, "varimax")
    assert varimax_criterion(L) == pytest.approx(varimax_criterion(L_sm), rel=1e-8)
    assert _match_columns(L_sm, L) < 1e-6
    # Eiger's single sweep stops short of the optimum on three columns
    assert varimax_criterion(varimax(A, sweeps=1)[0]) <= varimax_criterion(L) + 1e-12


# ----------------------------------------------------------------------------- Eiger files
def test_file_written_by_eiger_evaluates_to_its_expression(tmp_path):
    path = tmp_path / "gold.model"
    path.write_text(EIGER_GOLD)
    model = read_eiger_model(path)
    sizes = np.array([16.0, 64.0, 255.0, 1000.0])
    got = model.predict(pd.DataFrame({"size": sizes}))["predicted"].values
    np.testing.assert_allclose(got, [_gold_by_hand(s) for s in sizes], rtol=1e-14)
    # at size 64 by hand: 0.0411121 - 0.5668718 + 1.4857614 - 0.9500516 = 0.0099501
    assert got[1] == pytest.approx(0.0099503, abs=3e-7)
    assert got[0] < 0  # Eiger would print abs(); the fixed default keeps the sign
    absolute = with_options(model, abs_predictions=True).predict({"size": [16.0]})["predicted"].item()
    assert absolute == pytest.approx(-got[0])


def test_hand_written_two_cluster_file(tmp_path):
    path = tmp_path / "two.model"
    path.write_text(TWO_CLUSTER)
    model = read_eiger_model(path)
    q = pd.DataFrame({"n": [3.0, 4.0], "m": [4.0, 20.0]})
    # rotated x = (-m, n); standardized z = ((-m - 10)/2, (n + 5)/4)
    # row 0: x = (-4, 3), z = (-7, 2) -> nearest centre (-1, 0): 0.5 + 2*(-4*3) + 3*log2(3)
    # row 1: x = (-20, 4), z = (-15, 2.25) -> centre (-1, 0): 0.5 + 2*(-80) + 3*log2(4)
    want = [0.5 + 2 * (-12) + 3 * math.log2(3), 0.5 - 160 + 6]
    np.testing.assert_allclose(model.predict(q)["predicted"].values, want, rtol=1e-14)
    q2 = pd.DataFrame({"n": [1.0], "m": [-30.0]})  # x = (30, 1), z = (10, 1.5) -> centre (1, 0)
    assert model.predict(q2)["predicted"].item() == pytest.approx(1.0 / 30 - 0.25 * (1 / 30))
    assert model.input_names() == ["-m", "n"]


def test_eiger_model_round_trips_text_and_json(tmp_path):
    rng = np.random.default_rng(0)
    n = np.geomspace(1e3, 1e6, 16).repeat(2)
    t = np.where(n < 3e4, 2e-9 * n, 5e-9 * n) * (1 + 0.01 * rng.standard_normal(n.size)) + 1e-5
    df = pd.DataFrame({"n": n, "nb": np.sqrt(n), "time": t})
    model = fit_eiger(df, "time", k=2, threshold=1e-4)
    q = df[["n", "nb"]].iloc[::3]
    ref = model.predict(q)["predicted"].values
    for name in ("m.model", "m.json"):
        p = write_eiger_model(model, tmp_path / name)
        back = read_eiger_model(p)
        np.testing.assert_array_equal(back.predict(q)["predicted"].values, ref)
        np.testing.assert_array_equal(back.predict(q)["cluster"].values, model.predict(q)["cluster"].values)
    text = (tmp_path / "m.model").read_text()
    assert text.splitlines()[:3] == ["2", "n", "nb"] and "Model 1" in text
    write_eiger_model(read_eiger_model(tmp_path / "m.model"), tmp_path / "again.model")
    assert (tmp_path / "again.model").read_text() == text
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "again.model").stat().st_mode) == 0o666 & ~umask  # not mkstemp's 0600


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (EIGER_GOLD.replace("[4](1.0037", "[5](1.0037"), 8, r"header says \[5\] but 4 values"),
        (EIGER_GOLD.replace("4 0\n", "9 0\n"), 12, "unknown function code"),
        ("\n".join(EIGER_GOLD.splitlines()[:10]) + "\n", 11, "file ends"),
        (EIGER_GOLD.replace("[1,1]((1.0))", "[2,1]((1.0),(0.0))"), 5, "2 rows"),
        ("x\n", 1, "number of metrics"),
        ('{"metric_names": ["n"],\n "means": [1.0,\n}', 3, "invalid JSON"),
    ],
)
def test_unparsable_model_file_names_file_and_line(tmp_path, text, line, words):
    path = tmp_path / "bad.model"
    path.write_text(text)
    with pytest.raises(EigerModelFileError, match=words) as info:
        read_eiger_model(path)
    assert info.value.line == line and str(info.value).startswith(f"{path}:{line}:")


# ----------------------------------------------------------------------------- Eiger defects
def _two_regime_frame():
    n = np.concatenate([np.linspace(100, 1000, 10), np.linspace(1e5, 2e5, 10)])
    t = np.where(n < 1e4, 1e-6 * n, 1e-4 + 1e-8 * n)
    return pd.DataFrame({"n": n, "time": t})


def test_single_query_point_lands_in_its_cluster_unless_restandardized():
    df = _two_regime_frame()
    fixed = fit_eiger(df, "time", k=2)
    orig = with_options(fixed, restandardize_at_predict=True)
    far = {"n": [1.5e5]}
    c_fixed = fixed.predict(far)["cluster"].item()
    assert c_fixed == fixed.predict({"n": [1.9e5]})["cluster"].item() != fixed.predict({"n": [500.0]})["cluster"].item()
    assert fixed.predict(far)["predicted"].item() == pytest.approx(1e-4 + 1.5e-3, rel=1e-6)
    # Eiger's test step standardizes the one point by itself: z = 0, nearest the centre closest to the origin
    z_centres = np.linalg.norm(fixed.centers, axis=1)
    assert orig.predict(far)["cluster"].item() == int(np.argmin(z_centres))


def test_adjusted_r2_undefined_without_degrees_of_freedom():
    assert np.isnan(adjusted_r2(0.9, n=3, k=2))
    assert adjusted_r2(0.9, n=3, k=2, original=True) == -np.inf
    assert adjusted_r2(0.9, n=3, k=3, original=True) == pytest.approx(1.2)  # Eiger's value above 1
    assert adjusted_r2(0.9, n=10, k=2) == pytest.approx(1 - 0.1 * 9 / 7)


def test_kfold_mean_refits_on_all_rows_and_best_fold_does_not():
    rng = np.random.default_rng(5)
    n = np.geomspace(1e3, 1e5, 20)
    t = 1e-6 + 1e-9 * n * (1 + 0.05 * rng.standard_normal(20))
    df = pd.DataFrame({"n": n, "time": t})
    fixed = fit_eiger(df, "time", nfolds=4, threshold=1e-3)
    best = fit_eiger(df, "time", nfolds=4, threshold=1e-3, options=EigerOptions(kfold="best"))
    F = np.column_stack([t_.evaluate(df[["n"]].to_numpy() @ fixed.rotation) for t_ in fixed.clusters[0].terms])
    coef, *_ = np.linalg.lstsq(F, t, rcond=None)
    np.testing.assert_allclose(fixed.clusters[0].coef, coef, rtol=1e-8)
    assert best.clusters[0].extra["kfold"] == "best" and len(best.clusters[0].terms) >= 1


# ----------------------------------------------------------------------------- perfmod mode
def test_cross_validated_stopping_beats_too_low_threshold_on_noisy_data():
    rng = np.random.default_rng(11)
    n = np.geomspace(1e3, 1e6, 15).repeat(3)
    true = lambda x: 2e-5 + 1e-9 * x  # noqa: E731
    df = pd.DataFrame({"n": n, "time": true(n) * (1 + 0.05 * rng.standard_normal(n.size))})
    test_n = np.concatenate([np.geomspace(1.3e3, 0.9e6, 20), [2e6, 4e6]])
    low = fit_eiger(df, "time", threshold=1e-9)
    cv = fit_perfmod(df, segments="none")

    def err(m):
        return np.mean(np.abs(m.predict({"n": test_n})["predicted"].values / true(test_n) - 1))

    assert len(cv.clusters[0].terms) < len(low.clusters[0].terms)
    assert err(cv) < 0.5 * err(low)
    assert err(cv) < 0.03


def test_segment_chosen_by_cv_at_the_regime_change():
    n = np.geomspace(1e3, 1e7, 21).repeat(2)
    t = np.where(n <= 1e5, 1e-9 * n, 3e-9 * n) + 1e-6
    t = t * (1 + 0.02 * np.random.default_rng(2).standard_normal(n.size))
    model = fit_perfmod({"n": n, "time": t})
    below, above = n[n <= 1e5].max(), n[n > 1e5].min()
    assert model.split_parameter == "n" and below < model.breakpoints[0] < above
    pred = model.predict({"n": [5e4, 5e6]})["predicted"].values
    np.testing.assert_allclose(pred, [5e-5 + 1e-6, 1.5e-2 + 1e-6], rtol=0.05)


def test_prediction_interval_coverage_and_extrapolation_flag():
    rng = np.random.default_rng(4)
    n = np.geomspace(1e3, 1e5, 12).repeat(4)
    f = lambda x: 1e-5 + 1e-9 * x  # noqa: E731
    model = fit_perfmod({"n": n, "time": f(n) + 2e-6 * rng.standard_normal(n.size)}, relative=False,
                        segments="none")
    q = np.geomspace(1e3, 1e5, 400)
    ds = model.predict({"n": q}, interval="prediction", level=0.9)
    y_new = f(q) + 2e-6 * rng.standard_normal(q.size)
    cover = np.mean((ds["lower"].values <= y_new) & (y_new <= ds["upper"].values))
    assert 0.8 < cover < 0.97
    assert ds.attrs["interval"] == "prediction" and ds.attrs["level"] == 0.9
    conf = model.predict({"n": q}, interval="confidence")
    assert np.all(conf["upper"] - conf["lower"] < ds["upper"] - ds["lower"])
    flags = model.predict({"n": [500.0, 5e4, 2e5]})["extrapolated"].values
    assert flags.tolist() == [True, False, True]


# ----------------------------------------------------------------------------- baselines, protocol, errors
def test_loop_model_fits_one_constant_and_mean_baseline():
    n = np.array([10.0, 20, 40, 80])
    m = np.array([5.0, 5, 10, 10])
    df = pd.DataFrame({"n": n, "m": m, "time": 2e-9 * n * m * 3})
    loop = fit_loop_model(df, extents=["n", "m"], lines=3.0)
    assert loop.params.iloc[0] == pytest.approx(2e-9, rel=1e-12)
    assert loop.predict({"n": [100.0], "m": [7.0]})["predicted"].item() == pytest.approx(2e-9 * 2100)
    mean = fit_constant_mean(df)
    assert mean.predict({"n": [1e6], "m": [1.0]})["predicted"].item() == pytest.approx(df.time.mean())
    assert mean.relative_standard_error == pytest.approx(df.time.std() / 2 / df.time.mean())
    assert isinstance(fit_compute_model(df, method="loop", extents=["n"]).summary(), str)


def test_result_protocol():
    n = np.geomspace(1e3, 1e5, 10).repeat(2)
    model = fit_perfmod({"n": n, "time": 1e-6 + 1e-9 * n * (1 + 0.01 * np.sin(n))}, segments="none")
    assert isinstance(model.params, pd.Series) and isinstance(model.stderr, pd.Series)
    assert list(model.params.index) == list(model.stderr.index) and (model.stderr > 0).all()
    ds = model.to_dataset()
    assert isinstance(ds, xr.Dataset) and list(ds["parameter"].values) == list(model.params.index)
    assert "|n|^1" in model.summary()
    pred = model.predict(pd.DataFrame({"n": [2e3, 2e4]}))
    assert pred["predicted"].attrs["units"] == "s" and "lower" not in pred


def test_clear_errors():
    df = pd.DataFrame({"n": [1.0, 2.0, np.nan, 4.0], "time": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(MissingParameterError, match=r"'n' is missing .* in 1 of 4 rows"):
        fit_perfmod(df)
    with pytest.raises(TooFewPointsError, match="2 distinct parameter point"):
        fit_eiger(pd.DataFrame({"n": [1.0, 1.0, 2.0, 2.0], "time": [1.0, 1.1, 2.0, 2.1]}))
    good = fit_perfmod(pd.DataFrame({"n": [1.0, 2.0, 3.0, 4.0, 5.0], "time": [1.0, 2.0, 3.0, 4.0, 5.1]}),
                       segments="none")
    with pytest.raises(UnknownParameterError, match="does not know parameter.*'m'"):
        good.predict({"n": [1.0], "m": [2.0]})
    with pytest.raises(MissingParameterError, match="needs parameter"):
        good.predict({"m": [2.0]})


def test_predict_one_equals_predict_for_every_model_kind(tmp_path):
    two = _two_regime_frame()
    eiger2 = fit_eiger(two, "time", k=2)
    n = np.geomspace(1e3, 1e7, 21).repeat(2)
    seg = fit_perfmod({"n": n, "time": np.where(n <= 1e5, 1e-9 * n, 3e-9 * n) + 1e-6})
    df = pd.DataFrame({"n": [10.0, 20, 40, 80], "m": [5.0, 5, 10, 10]})
    df["time"] = 2e-9 * df.n * df.m * 3
    loop = fit_loop_model(df, extents=["n", "m"], lines=3.0)
    mean = fit_constant_mean(df)
    path = tmp_path / "m.txt"
    write_eiger_model(eiger2, path)
    cases = [(eiger2, {"n": [500.0, 1.5e5]}), (read_eiger_model(path), {"n": [500.0, 1.5e5]}),
             (seg, {"n": [5e4, 5e6]}), (loop, {"n": [100.0, 3.0], "m": [7.0, 2.0]}),
             (mean, {"n": [1e6, 1.0], "m": [1.0, 2.0]})]
    for model, points in cases:
        want = model.predict(points)["predicted"].values
        got = [model.predict_one(**{k: v[i] for k, v in points.items()}) for i in range(2)]
        assert all(isinstance(g, float) for g in got)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # the two segments and the two Eiger clusters give their own closed forms
    assert seg.predict_one(n=5e6) == pytest.approx(1.5e-2 + 1e-6, rel=1e-3)
    assert eiger2.predict_one(n=1.5e5) == pytest.approx(1e-4 + 1.5e-3, rel=1e-6)
    assert loop.predict_one(n=100.0, m=7.0) == pytest.approx(2e-9 * 2100)


def test_predict_one_errors_name_the_parameter():
    model = fit_perfmod({"n": np.arange(1.0, 9.0), "time": 1e-6 * np.arange(1.0, 9.0)}, segments="none")
    with pytest.raises(MissingParameterError, match=r"needs parameter\(s\) \['n'\]"):
        model.predict_one(m=3.0)
    with pytest.raises(UnknownParameterError, match=r"does not know parameter\(s\) \['m'\]"):
        model.predict_one(n=3.0, m=1.0)
    with pytest.raises(MissingParameterError, match=r"parameter 'n' is missing \(NaN/inf\)"):
        model.predict_one(n=float("nan"))
