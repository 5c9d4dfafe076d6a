"""Paper 001 (Sasidharan) published tables: transcription against the paper text, models, recomputed statistics."""

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from perfmod.core import paperdata
from perfmod.core.paths import repo_root
from perfmod.studies.papers import sasidharan_published as sp

# shared/papers sits beside the checkout, or further up (a worktree in a subfolder)
PAPER = next((d / "shared" / "papers" / "001_10099451130f018d.txt" for d in repo_root().parents
              if (d / "shared" / "papers" / "001_10099451130f018d.txt").is_file()), repo_root() / "missing")
needs_paper = pytest.mark.skipif(not PAPER.is_file(), reason="shared/papers not in this checkout")


def _paper_rows(caption: str, ncells: int) -> list[list[str]]:
    """Tab-separated rows of ``ncells`` cells in the block that ends at the caption line (header row included)."""
    text = PAPER.read_text(encoding="utf-8").split("\n")
    end = next(i for i, line in enumerate(text) if line.startswith(caption))
    rows = []
    for line in reversed(text[:end]):
        cells = line.split("\t")
        if len(cells) == ncells:
            rows.append(cells)
        elif rows and line.strip():
            break
    return rows[::-1]


def _number(cell: str) -> tuple[float, bool]:
    """Value and '<' flag of a printed cell: '$< 2e - 16$' -> (2e-16, True)."""
    c = cell.replace("$", "").replace(" ", "")
    return float(c.lstrip("<")), c.startswith("<")


def _term(cell: str) -> str:
    """R's name of a printed term: '<i>X1<sup>2</sup>X2</i>' or '$X_2^2X_3$' -> 'I(X1^2):X2' / 'I(X2^2):X3'."""
    c = re.sub(r"<[^>]+>(?=\d</sup>)|</sup>|</?i>|[$_\s]", "", cell.replace("<sup>", "^"))
    if c == "Intercept":
        return "(Intercept)"
    return ":".join(f"I({v})" if "^" in v else v for v in re.findall(r"X\d(?:\^2)?", c))


@needs_paper
@pytest.mark.parametrize("table", [1, 3, 5, 6, 8, 10, 11])
def test_coefficients_match_paper_text_cell_by_cell(table):
    rows = _paper_rows(f"Table {table}:", 5)
    assert "Estimate" in rows[0][1]
    csv = paperdata.read_table("sasidharan_coefficients").query("table == @table")
    assert len(csv) == len(rows) - 1
    for row, cells in zip(csv.itertuples(), rows[1:], strict=True):
        assert row.term == _term(cells[0]), cells
        assert (row.estimate, row.std_error, row.t_value) == tuple(_number(c)[0] for c in cells[1:4]), cells
        p, bound = _number(cells[4])
        assert row.p_value == p and (row.p_bound == "<") == bound, cells


@needs_paper
@pytest.mark.parametrize("table", [2, 9])
def test_anova_matches_paper_text(table):
    rows = _paper_rows(f"Table {table}:", 5)
    csv = paperdata.read_table("sasidharan_anova").query("table == @table")
    assert rows[0] == ["Model", "Res.Df", "RSS", "F", "Pr(> F)"] and len(csv) == len(rows) - 1
    for row, cells in zip(csv.itertuples(), rows[1:], strict=True):
        assert str(row.model) == re.sub(r"</?b>", "", cells[0])
        assert (row.res_df, row.rss) == (int(cells[1]), float(cells[2]))
        if cells[3].strip():
            assert row.f == float(cells[3])
            assert (row.p_value, row.p_bound == "<") == _number(cells[4])
        else:
            assert np.isnan(row.f) and np.isnan(row.p_value)


@needs_paper
@pytest.mark.parametrize(("table", "n"), [(4, 15), (7, 19), (12, 40), (13, 40), (14, 40)])
def test_validation_tables_match_paper_text(table, n):
    rows = _paper_rows(f"Table {table}:", 4)
    assert [re.sub(r"</?b>", "", c) for c in rows[0][1:]] == ["fit", "lower", "upper"]
    csv = paperdata.read_table("sasidharan_validation").query("table == @table")
    assert len(csv) == len(rows) - 1 == n  # §5.1.3: 15 experiments; §6.5: 40 experiments
    for row, cells in zip(csv.itertuples(), rows[1:], strict=True):
        assert (row.measured, row.fit, row.lower, row.upper) == tuple(float(c) for c in cells), cells
    assert csv.case.tolist() == list(range(1, n + 1))


def test_units_per_table():
    v = paperdata.read_table("sasidharan_validation")
    assert v.groupby("table").unit.agg(set).to_dict() == {4: {"ms"}, 7: {"ms"}, 12: {"s"}, 13: {"mW"}, 14: {"mJ"}}


@pytest.mark.parametrize("table", [1, 3, 5, 6, 8, 10, 11])
def test_formulas_give_the_tables_terms_in_rs_order(table):
    m = sp.published_model(table)
    assert m.terms() == list(sp.coefficient_table(table).index)


def test_printed_t_is_estimate_over_std_error():
    for table in (1, 3, 5, 6, 8, 10, 11):
        c = sp.coefficient_checks(table)
        assert (c.t_rel_diff.abs() < 5e-3).all(), (table, c.t_rel_diff.abs().max())  # 4-digit mantissas


def test_degrees_of_freedom_implied_by_p_values():
    """Printed p-values follow from printed t with the df the text implies, except the full model's."""
    for table in (1, 3, 5, 8, 10, 11):
        assert sp.MODELS[sp._model_by_table(table)].df_resid in sp.consistent_df(table), table
    assert sp.consistent_df(1) == [263, 264]  # 275 observations, 12 coefficients
    full = sp.consistent_df(6)
    assert 484 not in full and (min(full), max(full)) == (489, 496)  # 500 - 16 = 484 is not
    c = sp.coefficient_checks(6)
    assert abs(c.loc["X2", "p_rel_diff"]) > 0.01  # p 2.01e-11 at t -6.865 needs df ~490


def test_anova_recomputed_from_res_df_and_rss():
    a = sp.anova_checks().set_index(["table", "model"])
    assert a.loc[(2, "B"), "f_recomputed"].round(4) == 200.5555 and a.loc[(2, "B"), "p_recomputed"] < 2e-16
    assert a.loc[(2, "C"), "f_recomputed"].round(4) == 2.2066
    assert a.loc[(2, "C"), "p_recomputed"].round(4) == 0.0428
    assert a.loc[(9, "2"), "f_recomputed"] == pytest.approx(1.7655, abs=2e-4)
    # the training RSEs the text states: Model A 181.4, B 138.3, C 136.5, Model 1 0.035
    assert a.rse.round(1).tolist()[:3] == [181.4, 138.3, 136.5] and round(a.loc[(9, "1"), "rse"], 3) == 0.035


def test_stated_test_error_of_table4_is_the_training_rse():
    rse_c = np.sqrt(4898857 / 263)  # Table 2, Model C
    assert round(rse_c, 4) == 136.4802
    v = sp.validation_table(4)
    rmse = np.sqrt(np.mean((v.measured - v.fit) ** 2))
    assert rmse == pytest.approx(82.8258, abs=1e-4)  # what Table 4 gives: not 136.4802
    s = sp.validation_statistics().loc[4]
    assert s.rmse == pytest.approx(rmse) and s.stated_matches_training
    assert s.coverage_ci == pytest.approx(9 / 15)  # 6 of 15 measured values outside the printed interval


def test_validation_statistics_against_stated_errors():
    s = sp.validation_statistics()
    assert s.index.tolist() == [4, 7, 12, 13, 14]
    assert s.stated.tolist() == [136.4802, 116.5921, 0.035, 5788.197, 1316.058]
    expected_rmse = {4: 82.8258, 7: 130.7388, 12: 0.0046, 13: 7886.5989, 14: 314.8158}
    for t, r in expected_rmse.items():
        assert s.loc[t, "rmse"] == pytest.approx(r, abs=1e-4)
    # no stated test error is the RMSE (nor sqrt(RSS/(n-p))) of its table
    assert (abs(s.rmse_over_stated - 1) > 0.1).all()
    assert (abs(s.rse_df / s.stated - 1) > 0.1).all()
    assert (s.interval == "confidence").all()
    np.testing.assert_allclose(s.coverage_ci, [9 / 15, 3 / 19, 38 / 40, 1 / 40, 36 / 40])
    np.testing.assert_allclose(s.coverage_pi, [1, 17 / 19, 1, 36 / 40, 1])  # rebuilt prediction intervals
    np.testing.assert_allclose(s.mape, [16.34, 68.13, 28.90, 7.37, 50.44], atol=0.01)
    assert s.loc[7, "bias"] > 0 and s.loc[13, "bias"] > 0  # both over-predict on average


def test_reconstructed_intervals():
    v = sp.validation_table(4)
    q = stats.t.ppf(0.975, 263)
    np.testing.assert_allclose(v.fit - v.lower, q * v.se_fit, rtol=1e-5)
    rse = np.sqrt(4898857 / 263)
    np.testing.assert_allclose(v.pi_upper - v.fit, q * np.sqrt(rse**2 + v.se_fit**2))
    for t in (4, 7, 12, 13, 14):
        e = sp.interval_evidence(t)
        assert e.max_half_over_t_rse < 1 and e.max_asymmetry < 1e-5, t


def test_published_models_evaluate_closed_form():
    m = sp.published_model(1)  # Model C, Table 1
    c = m.coef
    x = pd.DataFrame({"X1": [0.0, 2.0, 2.0], "X2": [0.0, 0.0, 1024.0], "X3": [0.0, 0.0, 1e4]})
    got = m.evaluate(x)
    assert got[0] == c["(Intercept)"]
    assert got[1] == pytest.approx(c["(Intercept)"] + 2 * c["X1"] + 4 * c["I(X1^2)"])
    by_hand = sum(c[t] * np.prod([{"X1": 2.0, "X2": 1024.0, "X3": 1e4, "I(X1^2)": 4.0}[f] for f in t.split(":")])
                  for t in c.index[1:]) + c["(Intercept)"]
    assert got[2] == pytest.approx(by_hand, rel=1e-12)
    power = sp.published_model("power")
    assert power.evaluate({"X1": [1.0], "X2": [1.0], "X3": [1.0]})[0] == pytest.approx(power.coef.sum())
    assert power.units["response"] == "mW" and sp.published_model("full").variables == ["X1", "X2", "X3", "X4", "X5"]
    with pytest.raises(KeyError, match="publishes no coefficients"):
        sp.published_model("A")
    with pytest.raises(Exception, match="needs X4"):
        sp.published_model("energy").evaluate({"X2": [1.0], "X3": [1.0]})


def test_validation_dataset_in_si_units():
    from perfmod.core.io import check_conventions

    ds = sp.validation_dataset(4)
    check_conventions(ds)
    assert ds.t_iter_measured.attrs["units"] == "s" and ds.sizes["case"] == 15
    assert float(ds.t_iter_measured[0]) == pytest.approx(99.35773e-3)
    assert float(ds.t_iter_predicted[0]) == pytest.approx(101.9065e-3)
    p = sp.validation_dataset(13)
    assert p.power_max_measured.attrs["units"] == "W" and float(p.power_max_measured[0]) == pytest.approx(81.829)
    up = p.power_max_upper
    assert up.dims == ("case", "interval") and up.attrs["level"] == 0.95
    assert (up.sel(interval="prediction") > up.sel(interval="confidence")).all()
    # the printed (confidence) interval, in SI units, and the rebuilt prediction interval
    v = sp.validation_table(13)
    np.testing.assert_array_equal(p.power_max_lower.sel(interval="confidence").values, v.lower.to_numpy() * 1e-3)
    np.testing.assert_array_equal(p.power_max_upper.sel(interval="prediction").values, v.pi_upper.to_numpy() * 1e-3)


def test_compare_coefficients_aligns_terms():
    from perfmod.models.regression import lm

    rng = np.random.default_rng(0)
    d = pd.DataFrame({"X1": rng.uniform(1, 20, 60), "X2": rng.uniform(512, 3584, 60), "X3": rng.uniform(0, 1e5, 60)})
    d["time"] = 1000 + 100 * d.X1 + rng.normal(0, 10, 60)
    t = sp.compare_coefficients(lm("time ~ (X1 + I(X1^2)) * X2 * X3", d), 1)
    assert list(t.index) == list(sp.coefficient_table(1).index)
    assert t.loc["X1", "paper_Estimate"] == 1.636e04 and t.loc["X1", "Estimate"] == pytest.approx(100, rel=0.3)
    t2 = sp.compare_coefficients(lm("time ~ X1 + X2 + X4", d.assign(X4=d.X3)), 5)
    assert list(t2.index) == ["(Intercept)", "X1", "I(X1^2)", "X4", "X5", "X2"]
    assert np.isnan(t2.loc["X5", "Estimate"]) and np.isnan(t2.loc["X2", "paper_Estimate"])


def test_validation_figure(tmp_path):
    from perfmod.viz.plots import save
    from perfmod.viz.validation import plot_validation

    fig = plot_validation(sp.validation_dataset(4))
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("confidence interval (9/15 contain the measurement)" in t for t in legend)
    assert any("prediction interval (" in t for t in legend)
    assert save(fig, tmp_path, "validation").stat().st_size > 10_000
