"""perfmod.models.regression core: lm and anova against closed forms, R's naming and the paper's conventions."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from perfmod.models.regression import (
    DataError,
    FormulaError,
    NotNestedError,
    NotNestedWarning,
    anova,
    anova_table,
    lm,
)


@pytest.fixture(scope="module")
def sedov_like():
    """Synthetic data shaped like paper 001 §5.1 (X1 memory GB, X2 threads, X3 peer accesses)."""
    rng = np.random.default_rng(7)
    n = 80
    d = pd.DataFrame({"X1": rng.uniform(1, 20, n), "X2": rng.choice([512.0, 1024, 2048, 3584], n),
                      "X3": rng.uniform(1e3, 1e5, n)})
    d["time"] = 100 + 50 * d.X1 + 3 * d.X1**2 + 0.01 * d.X1 * d.X2 + 1e-3 * d.X3 + rng.normal(0, 10, n)
    return d


def test_simple_regression_closed_form():
    x = np.arange(1.0, 11.0)
    y = np.array([2.1, 3.9, 6.2, 7.8, 10.1, 12.2, 13.8, 16.1, 18.0, 20.2])
    m = lm("y ~ x", pd.DataFrame({"x": x, "y": y}))
    sxx = np.sum((x - x.mean()) ** 2)
    b1 = np.sum((x - x.mean()) * (y - y.mean())) / sxx
    b0 = y.mean() - b1 * x.mean()
    rss = np.sum((y - b0 - b1 * x) ** 2)
    s = np.sqrt(rss / 8)
    tab = m.coef_table()
    assert list(tab.index) == ["(Intercept)", "x"]
    assert list(tab.columns) == ["Estimate", "Std.Error", "t-value", "Pr(>|t|)"]
    assert tab.loc["x", "Estimate"] == pytest.approx(b1, rel=1e-12)
    assert tab.loc["(Intercept)", "Estimate"] == pytest.approx(b0, rel=1e-12)
    assert tab.loc["x", "Std.Error"] == pytest.approx(s / np.sqrt(sxx), rel=1e-12)
    assert tab.loc["(Intercept)", "Std.Error"] == pytest.approx(s * np.sqrt(1 / 10 + x.mean() ** 2 / sxx), rel=1e-12)
    t = b1 / (s / np.sqrt(sxx))
    assert tab.loc["x", "Pr(>|t|)"] == pytest.approx(2 * stats.t.sf(t, 8), rel=1e-10)
    assert (m.rse, m.df_resid, m.rss) == (pytest.approx(s, rel=1e-12), 8, pytest.approx(rss, rel=1e-12))
    r2 = 1 - rss / np.sum((y - y.mean()) ** 2)
    assert m.r2 == pytest.approx(r2, rel=1e-12)
    assert m.adj_r2 == pytest.approx(1 - (1 - r2) * 9 / 8, rel=1e-12)
    assert m.fstat == pytest.approx(t**2, rel=1e-10) and m.f_df == (1, 8)
    assert m.f_pvalue == pytest.approx(tab.loc["x", "Pr(>|t|)"], rel=1e-8)
    # intervals at x0 = 4.5: closed form with leverage 1/n + (x0 - xbar)^2 / Sxx
    p = m.predict({"x": [4.5]}, interval="confidence")
    q = stats.t.ppf(0.975, 8)
    h = 1 / 10 + (4.5 - x.mean()) ** 2 / sxx
    assert p.predicted.item() == pytest.approx(b0 + 4.5 * b1, rel=1e-12)
    assert (p.upper - p.predicted).item() == pytest.approx(q * s * np.sqrt(h), rel=1e-10)
    pi = m.predict({"x": [4.5]}, interval="prediction", level=0.9)
    assert (pi.upper - pi.predicted).item() == pytest.approx(stats.t.ppf(0.95, 8) * s * np.sqrt(1 + h), rel=1e-10)


def test_r_term_names_and_order_for_the_papers_models(sedov_like):
    d = sedov_like.assign(X4=sedov_like.X3 / 7 + np.cos(sedov_like.X1), X5=np.tile([2.0, 4, 6, 8], 20))
    model_c = lm("time ~ (X1 + I(X1^2)) * X2 * X3", d)  # paper 001 Table 1, Table 3
    assert list(model_c.coef.index) == [
        "(Intercept)", "X1", "I(X1^2)", "X2", "X3", "X1:X2", "I(X1^2):X2", "X1:X3", "I(X1^2):X3", "X2:X3",
        "X1:X2:X3", "I(X1^2):X2:X3"]
    full = lm("time ~ (X1 + I(X1^2)) * X2 * X3 + (X1 + I(X1^2)) * X4 + X5", d)  # Table 6
    assert list(full.coef.index) == [
        "(Intercept)", "X1", "I(X1^2)", "X2", "X3", "X4", "X5", "X1:X2", "I(X1^2):X2", "X1:X3", "I(X1^2):X3",
        "X2:X3", "X1:X4", "I(X1^2):X4", "X1:X2:X3", "I(X1^2):X2:X3"]
    power = lm("time ~ X1 * X2 * X3", d)  # Table 10
    assert list(power.coef.index) == ["(Intercept)", "X1", "X2", "X3", "X1:X2", "X1:X3", "X2:X3", "X1:X2:X3"]
    # factors named in first-appearance order, R's crossing operator, I() with division
    m = lm("time ~ X2 + X3:X2 + (X1 + X2)^2 + I(1/X1)", d)
    assert list(m.coef.index) == ["(Intercept)", "X2", "X1", "I(1/X1)", "X2:X3", "X2:X1"]
    assert m.design.terms == tuple(m.coef.index)


def test_design_columns_are_the_products(sedov_like):
    m = lm("time ~ (X1 + I(X1^2)) * X2 * X3", sedov_like)
    X = m.design.X
    d = sedov_like
    np.testing.assert_allclose(X["I(X1^2):X2:X3"], d.X1**2 * d.X2 * d.X3)
    np.testing.assert_allclose(X["X1:X3"], d.X1 * d.X3)


def test_agrees_with_statsmodels_ols(sedov_like):
    import statsmodels.formula.api as smf

    m = lm("time ~ (X1 + I(X1^2)) * X2", sedov_like)
    r = smf.ols("time ~ X1 + I(X1**2) + X2 + X1:X2 + I(X1**2):X2", sedov_like).fit()
    np.testing.assert_allclose(m.coef.to_numpy(), r.params.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(m.stderr.to_numpy(), r.bse.to_numpy(), rtol=1e-6)
    assert m.rse == pytest.approx(np.sqrt(r.scale), rel=1e-10)
    assert m.fstat == pytest.approx(r.fvalue, rel=1e-8)
    assert m.adj_r2 == pytest.approx(r.rsquared_adj, rel=1e-10)
    np.testing.assert_allclose(m.statsmodels().params.to_numpy(), r.params.to_numpy(), rtol=1e-6)


def test_anova_nested_by_hand(sedov_like):
    a = lm("time ~ X1 + I(X1^2)", sedov_like)
    b = lm("time ~ X1 + I(X1^2) + X2 + X3", sedov_like)
    c = lm("time ~ (X1 + I(X1^2)) * X2 + X3", sedov_like)
    t = anova(a, b, c, names=["a", "b", "c"])
    assert list(t.columns) == ["Res.Df", "RSS", "Df", "Sum of Sq", "F", "Pr(>F)"]
    assert list(t["Res.Df"]) == [77, 75, 73] and np.isnan(t.loc["a", "F"])
    scale = c.rss / 73  # the biggest model's residual mean square, for every row (R's anova.lmlist)
    f_ab = (a.rss - b.rss) / 2 / scale
    assert t.loc["b", "F"] == pytest.approx(f_ab, rel=1e-10)
    assert t.loc["b", "Pr(>F)"] == pytest.approx(stats.f.sf(f_ab, 2, 73), rel=1e-8)
    assert t.loc["c", "Sum of Sq"] == pytest.approx(b.rss - c.rss, rel=1e-10)
    two = anova(b, c)  # with two models the scale is the bigger one's: the classical partial F test
    assert two.loc["2", "F"] == pytest.approx(((b.rss - c.rss) / 2) / (c.rss / 73), rel=1e-10)


def test_anova_type1_sums_to_model_ss(sedov_like):
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    m = lm("time ~ (X1 + I(X1^2)) * X2", sedov_like)
    t = anova(m)
    assert list(t.index) == ["X1", "I(X1^2)", "X2", "X1:X2", "I(X1^2):X2", "Residuals"]
    y = sedov_like.time
    assert t["Sum Sq"].sum() == pytest.approx(np.sum((y - y.mean()) ** 2), rel=1e-10)
    ref = sm.stats.anova_lm(smf.ols("time ~ X1 + I(X1**2) + X2 + X1:X2 + I(X1**2):X2", sedov_like).fit(), typ=1)
    np.testing.assert_allclose(t["Sum Sq"].to_numpy(), ref["sum_sq"].to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(t["F value"].to_numpy()[:-1], ref["F"].to_numpy()[:-1], rtol=1e-6)


def test_anova_table_reproduces_paper_tables_2_and_9():
    """Paper 001 Table 2: F 200.5555, 2.2066, Pr 0.0428; Table 9: F 1.7655, Pr 0.05145 (RSS rounded to 5 digits)."""
    t2 = anova_table([270, 269, 263], [8881181, 5145468, 4898857], ["A", "B", "C"])
    assert round(t2.loc["B", "F"], 4) == 200.5555 and round(t2.loc["C", "F"], 4) == 2.2066
    assert round(t2.loc["C", "Pr(>F)"], 4) == 0.0428 and t2.loc["B", "Pr(>F)"] < 2e-16
    t9 = anova_table([456, 444], [0.56192, 0.53633])
    assert t9.loc["2", "F"] == pytest.approx(1.7655, abs=2e-4)
    assert t9.loc["2", "Pr(>F)"] == pytest.approx(0.05145, abs=5e-5)


def test_errors_name_what_is_wrong(sedov_like):
    with pytest.raises(FormulaError, match=r"'X9'.*columns: X1, X2, X3, time"):
        lm("time ~ X1 + X9", sedov_like)
    with pytest.raises(FormulaError, match="'walltime'"):
        lm("walltime ~ X1", sedov_like)
    with pytest.raises(FormulaError, match="response ~ terms"):
        lm("time", sedov_like)
    with pytest.raises(DataError, match="5 observations for 12 coefficients"):
        lm("time ~ (X1 + I(X1^2)) * X2 * X3", sedov_like.head(5))
    bad = sedov_like.copy()
    bad.loc[[3, 17], "X2"] = np.nan
    bad.loc[40, "time"] = np.inf
    with pytest.raises(DataError, match=r"column 'time' at rows 40; column 'X2' at rows 3, 17$"):
        lm("time ~ X1 + X2", bad)
    lm("time ~ X1", bad.drop(index=40))  # NaN in a column the formula does not read is fine
    with pytest.raises(DataError, match=r"non-finite values at rows 0"):
        lm("time ~ log(X3)", sedov_like.assign(X3=np.r_[0.0, sedov_like.X3[1:]]))
    with pytest.raises(DataError, match=r"aliased coefficients.*Z"):
        lm("time ~ X1 + X2 + Z", sedov_like.assign(Z=2 * sedov_like.X1 - sedov_like.X2))
    a = lm("time ~ X1 + I(X1^2) + X2 + X3", sedov_like)  # paper 001 Model A
    b = lm("time ~ (X1 + I(X1^2)) * X2", sedov_like)  # Model B drops X3: not nested
    with pytest.raises(NotNestedError, match="X3 not in the span"):
        anova(a, b)
    with pytest.warns(NotNestedWarning):
        t = anova(a, b, strict=False)
    assert t.loc["2", "Df"] == 1
    with pytest.raises(NotNestedError, match="same observations"):
        anova(lm("time ~ X1", sedov_like.head(60)), lm("time ~ X1 + X2", sedov_like))
    with pytest.raises(NotNestedError, match="different responses"):
        anova(lm("time ~ X1", sedov_like), lm("X3 ~ X1 + X2", sedov_like))
    with pytest.raises(FormulaError, match="new data lacks 'X2'"):
        a.predict({"X1": [1.0], "X3": [2.0]})


def test_log_response_back_transforms(sedov_like):
    d = sedov_like.assign(time=np.exp(0.1 * sedov_like.X1 + 1) * np.exp(np.random.default_rng(0).normal(0, .05, 80)))
    m = lm("time ~ X1", d, log_response=True)
    assert m.design.response == "log(time)"
    assert m.coef["X1"] == pytest.approx(0.1, abs=0.01)
    p = m.predict({"X1": [5.0]}, interval="prediction")
    logp = m.predict({"X1": [5.0]}, interval="prediction", scale="model")
    for v in ("predicted", "lower", "upper"):
        np.testing.assert_allclose(p[v].values, np.exp(logp[v].values))
    assert (p.lower > 0).all() and p.predicted.item() == pytest.approx(np.exp(1.5), rel=0.05)
    assert p.predicted.attrs["units"] == "[time]" and logp.predicted.attrs["units"] == "[log(time)]"
    assert lm("log(time) ~ X1", d).coef.equals(m.coef)


def test_summary_text(sedov_like):
    m = lm("time ~ X1 + X2", sedov_like)
    s = m.summary()
    assert s.startswith("\nCall:\nlm(formula = time ~ X1 + X2)")
    assert f"Residual standard error: {float(f'{m.rse:.4g}'):g} on 77 degrees of freedom" in s
    assert "Multiple R-squared:" in s and "F-statistic:" in s and "p-value: < 2.2e-16" in s
    assert "(Intercept)" in s and "Signif. codes" in s


def test_predict_on_an_xarray_grid(sedov_like):
    import xarray as xr

    m = lm("time ~ (X1 + I(X1^2)) * X2", sedov_like)
    grid = xr.Dataset(coords={"X1": [1.0, 5.0, 20.0], "X2": [512.0, 3584.0]})
    out = m.predict(grid, interval="prediction")
    assert out.predicted.dims == ("X1", "X2") and set(out.data_vars) == {"predicted", "lower", "upper"}
    flat = m.predict(pd.DataFrame({"X1": [5.0], "X2": [3584.0]}), interval="prediction")
    assert float(out.upper.sel(X1=5.0, X2=3584.0)) == pytest.approx(flat.upper.item(), rel=1e-12)


def test_dot_formula_and_numpy_in_formulas(sedov_like):
    m = lm("time ~ .", sedov_like)
    assert list(m.coef.index) == ["(Intercept)", "X1", "X2", "X3"] and m.formula == "time ~ ."
    assert list(lm("time ~ . - X3", sedov_like).coef.index) == ["(Intercept)", "X1", "X2"]
    np.testing.assert_allclose(lm("time ~ np.log(X1)", sedov_like).coef, lm("time ~ log(X1)", sedov_like).coef)
    assert list(lm("time ~ I(X1*0.5)", sedov_like).coef.index) == ["(Intercept)", "I(X1 * 0.5)"]
