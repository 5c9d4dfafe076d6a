"""perfmod.models.regression cross-validation, error statistics and the GAM comparison."""

import numpy as np
import pandas as pd
import pytest

from perfmod.models.regression import (
    DataError,
    FormulaError,
    compare_models,
    compare_with_lm,
    gam,
    holdout,
    holdout_split,
    kfold,
    kfold_splits,
    lm,
    prediction_errors,
)


@pytest.fixture(scope="module")
def runs():
    """275 runs as paper 001 §5.1.1 (55 configurations x 5 repetitions), with interactions in the truth."""
    rng = np.random.default_rng(3)
    cfg = pd.DataFrame({"X1": rng.uniform(1, 20, 55), "X2": rng.choice([512.0, 1024, 2048, 3584], 55),
                        "X3": rng.uniform(1e3, 1e5, 55)})
    d = cfg.loc[np.repeat(cfg.index, 5)].reset_index(names="config")
    d["time"] = (100 + 50 * d.X1 + 3 * d.X1**2 + 0.02 * d.X1 * d.X2 + 2e-3 * d.X3 + 1e-7 * d.X1 * d.X2 * d.X3
                 + rng.normal(0, 20, len(d)))
    return d


def test_holdout_split_as_the_paper(runs):
    tr, te = holdout_split(runs, 43, seed=1)
    assert (len(tr), len(te)) == (232, 43) and not set(tr) & set(te) and set(tr) | set(te) == set(runs.index)
    tr2, te2 = holdout_split(runs, 43, seed=1)
    assert te.equals(te2) and not te.equals(holdout_split(runs, 43, seed=2)[1])
    assert len(holdout_split(runs, 0.2)[1]) == 55
    trg, teg = holdout_split(runs, 43, groups="config")
    assert not set(runs.loc[trg, "config"]) & set(runs.loc[teg, "config"])
    assert len(teg) == 45  # whole configurations of 5 runs until at least 43 rows


def test_kfold_splits_cover_every_row_once(runs):
    splits = kfold_splits(runs, 5, seed=0)
    test_rows = np.concatenate([te for _, te in splits])
    assert sorted(test_rows) == list(runs.index) and {len(te) for _, te in splits} == {55}
    for tr, te in kfold_splits(runs, 4, groups="config"):
        assert not set(runs.loc[tr, "config"]) & set(runs.loc[te, "config"])


def test_holdout_scores_the_training_fit_on_held_out_rows(runs):
    cv = holdout("time ~ (X1 + I(X1^2)) * X2", runs, 43, seed=5)
    tr, te = holdout_split(runs, 43, seed=5)
    m = lm("time ~ (X1 + I(X1^2)) * X2", runs.loc[tr])
    err = runs.loc[te, "time"] - m.predict(runs.loc[te]).predicted.values
    assert cv.rmse_validation == pytest.approx(np.sqrt(np.mean(err**2)), rel=1e-12)
    assert cv.rse_train == pytest.approx(m.rse) and cv.model.coef.equals(m.coef)
    assert cv.predictions.index.equals(te)


def test_leave_one_out_equals_press(runs):
    """k = n: the held-out errors are e_i / (1 - h_ii), the PRESS residuals (closed form)."""
    d = runs.head(40)
    m = lm("time ~ X1 + I(X1^2) + X2", d)
    X = m.design.X.to_numpy()
    h = np.einsum("ij,jk,ik->i", X, m.cov_unscaled.to_numpy(), X)
    press = np.sum((m.residuals / (1 - h)) ** 2)
    cv = kfold("time ~ X1 + I(X1^2) + X2", d, k=40)
    assert cv.rmse_validation == pytest.approx(np.sqrt(press / 40), rel=1e-9)


def test_compare_models_chooses_by_validation_error(runs):
    forms = {"A": "time ~ X1 + I(X1^2) + X2 + X3", "B": "time ~ (X1 + I(X1^2)) * X2",
             "C": "time ~ (X1 + I(X1^2)) * X2 * X3"}
    for method in ("holdout", "kfold"):
        t = compare_models(forms, runs, method=method, test_size=43, k=5, groups="config")
        assert t.chosen.tolist() == [False, False, True], t  # the truth has the X1 X2 X3 interaction
        assert t.loc["C", "ratio"] < 1.5 and t.loc["A", "rmse_validation"] > 2 * t.loc["C", "rmse_validation"]
        assert t.n_coef.tolist() == [5, 6, 12]


def test_log_response_validation_on_the_original_scale(runs):
    cv = holdout("time ~ X1 + I(X1^2) + X2", runs, 43, log_response=True)
    m = lm("time ~ X1 + I(X1^2) + X2", runs.loc[holdout_split(runs, 43)[0]], log_response=True)
    logp = m.predict(runs.loc[cv.predictions.index], scale="model").predicted.values
    np.testing.assert_allclose(cv.predictions.fit, np.exp(logp))
    assert cv.predictions.measured.equals(runs.loc[cv.predictions.index, "time"])


def test_cross_validation_errors(runs):
    with pytest.raises(ValueError, match="test_size"):
        holdout_split(runs, 275)
    with pytest.raises(ValueError, match="k must be"):
        kfold_splits(runs, 1)
    with pytest.raises(DataError, match="groups column 'run'"):
        kfold_splits(runs, 5, groups="run")
    with pytest.raises(DataError, match=r"fold 0: 4 observations for 12 coefficients"):
        holdout("time ~ (X1 + I(X1^2)) * X2 * X3", runs.head(8), 4)
    with pytest.raises(DataError, match=r"row labels must be unique to split the data \(duplicated: 0, 1, 2"):
        kfold("time ~ X1", pd.concat([runs.head(5), runs.head(5)]), k=2)
    with pytest.raises(DataError, match="response 'log_t'"):
        holdout("log_t ~ X1", runs, 43)


def test_prediction_errors_by_hand():
    e = prediction_errors([1.0, 2.0, 4.0], [1.5, 2.0, 3.0], lower=[1.2, 1.0, 3.5], upper=[2.0, 3.0, 4.5], n_coef=1)
    assert e.rmse == pytest.approx(np.sqrt(1.25 / 3)) and e.rse_df == pytest.approx(np.sqrt(1.25 / 2))
    assert e.mape == pytest.approx(100 * (0.5 + 0 + 0.25) / 3) and e.max_ape == pytest.approx(50)
    assert e.bias == pytest.approx(-1 / 6) and e.mae == pytest.approx(0.5)
    assert e.coverage == pytest.approx(2 / 3) and e.n == 3
    assert np.isnan(prediction_errors([1.0], [1.0]).coverage)
    with pytest.raises(DataError, match="positions 1"):
        prediction_errors([1.0, np.nan], [1.0, 2.0])


def test_gam_recovers_a_smooth_curve():
    rng = np.random.default_rng(0)
    x = np.linspace(0, 1, 200)
    d = pd.DataFrame({"x": x, "y": np.sin(6 * x) + rng.normal(0, 0.1, 200)})
    g = gam("y", d, ["x"])
    assert g.rse == pytest.approx(0.1, rel=0.2) and 4 < g.edf < 10
    p = g.predict(pd.DataFrame({"x": [0.25, 0.5]}), interval="confidence")
    np.testing.assert_allclose(p.predicted, np.sin([1.5, 3.0]), atol=0.06)
    assert ((p.lower < p.predicted) & (p.predicted < p.upper)).all()


def test_gam_on_linear_data_shrinks_to_the_line(runs):
    g = gam("time", runs.assign(time=3 + 2 * runs.X1 + np.random.default_rng(1).normal(0, .1, 275)), ["X1"])
    assert g.edf < 3  # intercept + slope, the penalty removes the curvature
    m = lm("time ~ X1", runs.assign(time=3 + 2 * runs.X1 + np.random.default_rng(1).normal(0, .1, 275)))
    np.testing.assert_allclose(g.predict(runs.head(5)).predicted, m.predict(runs.head(5)).predicted, atol=0.02)


def test_gam_beside_lm_and_its_errors(runs):
    g = gam("time", runs, ["X1", "X3"], linear=["X2"])
    m = lm("time ~ X1 + I(X1^2) + X2 + X3", runs)  # paper 001 Model A: no interactions, like an additive GAM
    assert g.rse == pytest.approx(m.rse, rel=0.25)
    with pytest.raises(DataError, match=r"X1 outside its training range"):
        g.predict(pd.DataFrame({"X1": [50.0], "X2": [512.0], "X3": [5e3]}))
    with pytest.raises(FormulaError, match="'X9'"):
        gam("time", runs, ["X9"])
    with pytest.raises(DataError, match="X2 take too few distinct values"):
        gam("time", runs, ["X2"])


def test_compare_with_lm_on_additive_truth():
    rng = np.random.default_rng(4)
    d = pd.DataFrame({"X1": rng.uniform(1, 20, 200), "X3": rng.uniform(1e3, 1e5, 200)})
    d["time"] = 100 + 50 * d.X1 + 3 * d.X1**2 + 2e-3 * d.X3 + rng.normal(0, 10, 200)
    t = compare_with_lm("time ~ X1 + I(X1^2) + X3", d, ["X1", "X3"], test_size=40, seed=2)
    assert list(t.index) == ["lm", "gam"] and t.n_validation.iloc[0] + t.n_outside.iloc[0] == 40
    assert t.loc["lm", "rmse_validation"] == pytest.approx(10, rel=0.3)
    assert t.loc["gam", "rmse_validation"] == pytest.approx(t.loc["lm", "rmse_validation"], rel=0.2)
    assert t.median_rel_diff.iloc[0] < 0.01  # the two models predict close values, as the paper found
