"""perfmod.models.regression against R 4.2's lm, anova, predict and print(summary(lm)).

The reference values were computed once by ``tests/data/r_lm/make_reference.R``
(R version in each file's header) on ``tests/data/r_lm/data.csv``; CI has no R,
so the committed files are the reference.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from perfmod.core.paths import repo_root
from perfmod.models.regression import NotNestedWarning, anova, format_anova, lm

REF = repo_root() / "tests" / "data" / "r_lm"
RTOL = 1e-8  # R and perfmod both use Householder QR; the designs span 1e0..1e11


def _read(name):
    return pd.read_csv(REF / name, comment="#", na_values=["NA"])


@pytest.fixture(scope="module")
def data():
    return pd.read_csv(REF / "data.csv", comment="#")


@pytest.fixture(scope="module")
def models(data):
    coefs = _read("reference_coefficients.csv")
    forms = coefs.drop_duplicates("model").set_index("model").formula
    return {k: lm(f, data) for k, f in forms.items()}


def test_reference_files_name_r_version():
    for f in REF.glob("reference_*.csv"):
        head = f.read_text().splitlines()[:2]
        assert head[1].startswith("# Made by tests/data/r_lm/make_reference.R with R version 4."), f


def test_coefficients_names_order_and_values(models):
    coefs = _read("reference_coefficients.csv")
    assert set(coefs.model) == set("ABCDEFGHIJ")
    for name, ref in coefs.groupby("model", sort=False):
        tab = models[name].coef_table()
        assert list(tab.index) == list(ref.term), name  # R's names and R's order
        for mine, theirs in (("Estimate", "estimate"), ("Std.Error", "std_error"), ("t-value", "t_value"),
                             ("Pr(>|t|)", "p_value")):
            np.testing.assert_allclose(tab[mine].to_numpy(), ref[theirs].to_numpy(), rtol=RTOL, err_msg=name)


def test_fit_statistics(models):
    for row in _read("reference_fit.csv").itertuples():
        m = models[row.model]
        assert m.df_resid == row.df_resid and m.f_df == (row.f_df1, row.f_df2), row.model
        assert m.rse == pytest.approx(row.sigma, rel=RTOL)
        assert m.rss == pytest.approx(row.rss, rel=RTOL)
        assert m.r2 == pytest.approx(row.r_squared, rel=RTOL)
        assert m.adj_r2 == pytest.approx(row.adj_r_squared, rel=RTOL)
        assert m.fstat == pytest.approx(row.fstat, rel=RTOL)
        assert m.f_pvalue == pytest.approx(row.f_pvalue, rel=1e-6, abs=1e-300)


def test_anova_of_several_models(models):
    ref = _read("reference_anova.csv")
    for comp, r in ref.groupby("comparison", sort=False):
        ms = [models[k] for k in comp.split(",")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotNestedWarning)  # A is not nested in B; R does not check
            t = anova(*ms, strict=False)
        np.testing.assert_array_equal(t["Res.Df"].to_numpy(), r.res_df.to_numpy())
        for mine, theirs in (("RSS", "rss"), ("Df", "df"), ("Sum of Sq", "sum_sq"), ("F", "f"), ("Pr(>F)", "p")):
            np.testing.assert_allclose(t[mine].to_numpy(), r[theirs].to_numpy(), rtol=1e-7, err_msg=comp)


def test_anova_type1(models):
    for name, r in _read("reference_anova_type1.csv").groupby("model", sort=False):
        t = anova(models[name])
        assert list(t.index) == list(r.term), name
        np.testing.assert_array_equal(t["Df"].to_numpy(), r.df.to_numpy())
        for mine, theirs in (("Sum Sq", "sum_sq"), ("Mean Sq", "mean_sq"), ("F value", "f"), ("Pr(>F)", "p")):
            np.testing.assert_allclose(t[mine].to_numpy(), r[theirs].to_numpy(), rtol=1e-7, err_msg=name)


def test_predict_intervals(models):
    nd = pd.read_csv(REF / "newdata.csv", comment="#")
    for (name, interval, level), r in _read("reference_predict.csv").groupby(["model", "interval", "level"]):
        p = models[name].predict(nd, interval=interval, level=level, se_fit=True)
        for mine, theirs in (("predicted", "fit"), ("lower", "lwr"), ("upper", "upr"), ("se_fit", "se_fit")):
            np.testing.assert_allclose(p[mine].to_numpy(), r[theirs].to_numpy(), rtol=RTOL,
                                       err_msg=f"{name} {interval} {mine}")


def test_log_response_matches_r_on_the_log_scale(models, data):
    """Model G is R's log(y) ~ ...; lm(..., log_response=True) fits the same and back-transforms."""
    m = lm("y ~ X1 + I(1/X1) + X2", data, log_response=True)
    pd.testing.assert_series_equal(m.coef, models["G"].coef, rtol=1e-12)
    nd = pd.read_csv(REF / "newdata.csv", comment="#")
    r = _read("reference_predict.csv").query("model == 'G' and interval == 'prediction'")
    np.testing.assert_allclose(m.predict(nd, interval="prediction", level=0.9).upper, np.exp(r.upr), rtol=RTOL)


@pytest.mark.parametrize(("formula", "file"), [("y ~ (X1 + I(X1^2)) * X2 * X3", "summary_C.txt"),
                                               ("y ~ 1", "summary_null.txt")])
def test_summary_text_is_rs(data, formula, file):
    m = lm(formula, data)
    m.call = f"lm(formula = {formula}, data = d)"
    ref = [line for line in (REF / file).read_text().splitlines() if not line.startswith("#")]
    mine = m.summary().splitlines()
    assert mine == ref[: len(mine)]
    assert all(not line for line in ref[len(mine):])


def test_anova_printed_as_r(models):
    """Model labels in R's printout are the formulas as R deparses them: ours are the formulas as written."""
    m = {k: models[k] for k in "ABCH"}
    for k, f in {"A": "y ~ X1 + I(X1^2) + X2 + X3", "B": "y ~ (X1 + I(X1^2)) * X2",
                 "C": "y ~ (X1 + I(X1^2)) * X2 * X3", "H": "y ~ X1 + I(X1^2)"}.items():
        assert m[k].formula == f
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotNestedWarning)
        text = "".join(format_anova(t) for t in (anova(m["H"], m["B"], m["C"]), anova(m["A"], m["B"], m["C"],
                                                                                         strict=False),
                                                  anova(m["C"]), anova(m["C"], m["H"])))
    ref = [line for line in (REF / "anova_print.txt").read_text().splitlines() if not line.startswith("#")]
    assert text.splitlines() == ref
