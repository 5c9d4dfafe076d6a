"""BSP model of paper 003: equations on hand-computed cases, recovery, intervals, coarse-run K_w."""

import numpy as np
import pytest

from perfmod.models import bsp

TRUE = bsp.BSPParams(k_w=2e8, k_b=5e7, o_h=2e-9, o_w=3e-5, o_l=4e-5, o_i=1e-5, o_c=5e-9, o_s=0.2, k_r=6e-6)


def test_equations_hand_computed():
    # C = 1e8 cells, P = 4, I = 100, H = 2e4 halo cells
    t = bsp.bsp_times(1e8, 4, 100, 2e4, TRUE)
    tw = 100 * (1e8 / (4 * 2e8) + 2e4 * 2e-9 + 3e-5)
    tc = 100 * (2e4 / 5e7 + 4e-5 + 2 * 6e-6)
    to = 100 * 1e-5 + 1e8 * 5e-9 + 0.2
    assert t["t_w"] == pytest.approx(tw) and t["t_c"] == pytest.approx(tc) and t["t_o"] == pytest.approx(to)
    assert t["t_t"] == pytest.approx(tw + tc + to)


SD = {"t_w": 0.02, "t_c": 2e-6, "t_o": 0.01}  # noise of P T_w / I, T_c / I (s) and T_o (s)


def _noise(rng, n, key, noise):
    return noise * SD[key] * rng.standard_normal(n) if noise else 0.0


def _runs(rng, noise=0.0):
    C = np.repeat([4e6, 8.75e6, 2.5e7], 5)
    P = np.tile([1, 2, 4, 8, 16], 3).astype(float)
    I = np.repeat([500, 400, 300], 5).astype(float)  # noqa: E741
    H = 2 * np.sqrt(C) * (P > 1)  # row partition: two halo rows of sqrt(C) cells
    t = bsp.bsp_times(C, P, I, H, TRUE)
    n = C.size
    # homoscedastic noise on the forms that are fitted (Eq. 5, T_c per iteration, Eq. 3)
    return (C, P, I, H, t["t_w"] + I / P * _noise(rng, n, "t_w", noise),
            t["t_c"] + I * _noise(rng, n, "t_c", noise), t["t_o"] + _noise(rng, n, "t_o", noise))


def test_exact_recovery():
    fit = bsp.fit_bsp(*_runs(None), reduction=True)
    for name in ("k_w", "k_b", "o_h", "o_w", "o_l", "o_i", "o_c", "o_s", "k_r"):
        assert getattr(fit.params_for(), name) == pytest.approx(getattr(TRUE, name), rel=1e-6), name


def test_prediction_interval_coverage():
    rng = np.random.default_rng(3)
    hits, trials = 0, 200
    new = (1.5e7, 8.0, 350.0, 2 * np.sqrt(1.5e7))
    truth = bsp.bsp_times(*new, TRUE)["t_t"]
    for _ in range(trials):
        fit = bsp.fit_bsp(*_runs(rng, noise=1.0), reduction=True)
        p = fit.predict(dict(zip("CPIH", new, strict=True)), interval="prediction").sel(component="t_t")
        # a new run carries the same noise as the fitted ones
        t_new = truth + sum(np.ravel(x)[0] for x in (
            new[2] / new[1] * _noise(rng, 1, "t_w", 1.0), new[2] * _noise(rng, 1, "t_c", 1.0),
            _noise(rng, 1, "t_o", 1.0)))
        hits += bool(p["lower"][0] <= t_new <= p["upper"][0])
    assert 0.90 <= hits / trials <= 0.99


def test_nonneg_option_keeps_parameters_nonnegative():
    rng = np.random.default_rng(4)
    C, P, I, H, tw, tc, to = _runs(rng, noise=3.0)  # noqa: E741
    fit = bsp.fit_bsp(C, P, I, H, tw, tc, to, reduction=True, nonneg=True)
    assert all(v >= 0 for v in fit.compute.coef) and all(v >= 0 for v in fit.comm.coef)


def test_too_few_runs_and_unidentifiable():
    C, P, I, H, tw, tc, to = _runs(None)  # noqa: E741
    with pytest.raises(bsp.IdentifiabilityError, match="2 runs for 3 unknowns"):
        bsp.fit_bsp(C[:2], P[:2], I[:2], H[:2], tw[:2], tc[:2], to[:2])
    # one process count and one halo size: P H O_h and P O_w are proportional in Eq. 5
    same_p, same_h = np.full_like(P, 4.0), np.full_like(H, 2e4)
    t = bsp.bsp_times(C, same_p, I, same_h, TRUE)
    with pytest.raises(bsp.IdentifiabilityError, match="cannot separate O_h, O_w"):
        bsp.fit_bsp(C, same_p, I, same_h, t["t_w"], t["t_c"], t["t_o"])


def test_kw_from_coarse_run_and_iteration_scaling():
    C, P, I, H = 2.7e6, 2, 1000, 3300  # noqa: E741
    tw = bsp.bsp_times(C, P, I, H, TRUE)["t_w"]
    assert bsp.kw_from_coarse_run(C, P, I, H, tw, TRUE.o_h, TRUE.o_w) == pytest.approx(TRUE.k_w)
    # Allatoona 40 m -> 5 m: 8x the iterations
    assert bsp.scaled_iterations(1000, 40, 5) == 8000
    with pytest.raises(ValueError, match="overhead"):
        bsp.kw_from_coarse_run(C, P, I, H, 1e-9, TRUE.o_h, TRUE.o_w)


def test_table2_cases_and_resolution_scaling():
    from perfmod.core.paperdata import read_table

    t2 = read_table("sharif_table2_cases")
    assert len(t2) == 20 and t2[t2.app == "gol"].generations.sum() == 7_450_000
    tri = t2[t2.app == "triton"].set_index("case")
    # "The Allatoona (5m) test case is 64x larger than Allatoona (40m)" and Harvey 5m "144x larger"
    # than Harvey 60m (003 §V-C): the published cell counts agree to within 0.2 %
    assert tri.loc[11, "cells"] / tri.loc[8, "cells"] == pytest.approx(64, rel=2e-3)
    assert tri.loc[7, "cells"] / tri.loc[4, "cells"] == pytest.approx(144, rel=2e-3)


def test_per_scenario_kw_recovery_and_prediction():
    # three scenarios that differ only in K_w (TRITON: dry cells skip work), other parameters shared
    C, P, I, H, *_ = _runs(None)  # noqa: E741
    scen = np.array(["a", "b", "c"] * 5)
    kw = {"a": 1e8, "b": 2e8, "c": 4e8}
    t = {k: np.empty(C.size) for k in ("t_w", "t_c", "t_o")}
    for s, k in kw.items():
        sel = scen == s
        tt = bsp.bsp_times(C[sel], P[sel], I[sel], H[sel], bsp.BSPParams(**{**vars(TRUE), "k_w": k}))
        for q in t:
            t[q][sel] = tt[q]
    fit = bsp.fit_bsp(C, P, I, H, t["t_w"], t["t_c"], t["t_o"], reduction=True, scenario=scen)
    assert fit.scenarios == ("a", "b", "c")
    assert fit.k_w_by_scenario == pytest.approx(kw, rel=1e-6)
    assert fit.params_for("b").o_w == pytest.approx(TRUE.o_w, rel=1e-6)
    assert fit.params_for(k_w=3e8).k_w == 3e8
    pred = fit.predict({"C": 2e7, "P": 4, "I": 100, "H": 2 * np.sqrt(2e7), "scenario": "c"})
    want = bsp.bsp_times(2e7, 4, 100, 2 * np.sqrt(2e7), bsp.BSPParams(**{**vars(TRUE), "k_w": 4e8}))
    assert pred.predicted.sel(component="t_t").item() == pytest.approx(want["t_t"], rel=1e-6)
    with pytest.raises(KeyError, match="not in the fit"):
        fit.params_for()
    assert list(fit.params.index[:3]) == ["1/K_w[a]", "1/K_w[b]", "1/K_w[c]"]
    assert fit.params["1/K_w[b]"] == pytest.approx(1 / kw["b"], rel=1e-6)
    assert fit.params.attrs["units"]["1/K_w[b]"] == "s/cell"
    with pytest.raises(ValueError, match="give a scenario column"):
        fit.predict({"C": 2e7, "P": 4, "I": 100, "H": 0.0})
    with pytest.raises(KeyError, match="not in the fit"):
        fit.params_for("z")


def test_scaled_iterations_broadcasts():
    assert bsp.scaled_iterations(100, 20.0, np.array([20.0, 10.0, 5.0])).tolist() == [100, 200, 400]
    with pytest.raises(ValueError, match="positive"):
        bsp.scaled_iterations(100, 20.0, np.array([10.0, 0.0]))


def test_fixed_parameters_are_held():
    C, P, I, H, tw, tc, to = _runs(None)  # noqa: E741
    fit = bsp.fit_bsp(C, P, I, H, tw, tc, to, reduction=True, fixed={"O_i": TRUE.o_i, "K_r": TRUE.k_r})
    p = fit.params_for()
    assert p.o_i == TRUE.o_i and p.k_r == TRUE.k_r
    assert p.o_c == pytest.approx(TRUE.o_c, rel=1e-6) and p.k_b == pytest.approx(TRUE.k_b, rel=1e-6)
    assert fit.params["O_i"] == TRUE.o_i and fit.stderr["O_i"] == 0
    # T_o of runs with one iteration count cannot separate O_i from O_s, unless O_i is fixed
    same_i = I * 0 + 100
    with pytest.raises(bsp.IdentifiabilityError, match="O_i, O_s"):
        bsp.fit_bsp(C, P, same_i, H, tw, tc, to)
    ok = bsp.fit_bsp(C, P, same_i, H, tw, tc, to - (I - same_i) * TRUE.o_i, fixed={"O_i": TRUE.o_i})
    assert ok.params["O_s"] == pytest.approx(TRUE.o_s, rel=1e-6) and ok.params["O_c"] == pytest.approx(TRUE.o_c,
                                                                                                  rel=1e-6)
    with pytest.raises(ValueError, match="cannot fix"):
        bsp.fit_bsp(C, P, I, H, tw, tc, to, fixed={"O_x": 0.0})


def _relative_noise_runs(rng, cv=0.05):
    """The runs of :func:`_runs` with noise proportional to each fitted form's value (constant CV)."""
    C, P, I, H, *_ = _runs(None)  # noqa: E741
    t = bsp.bsp_times(C, P, I, H, TRUE)
    n = C.size
    tw = t["t_w"] * (1 + cv * rng.standard_normal(n))
    tc = t["t_c"] * (1 + cv * rng.standard_normal(n))
    to = t["t_o"] * (1 + cv * rng.standard_normal(n))
    return C, P, I, H, tw, tc, to


def test_relative_weights_are_weighted_least_squares():
    import statsmodels.api as sm

    C, P, I, H, tw, tc, to = _relative_noise_runs(np.random.default_rng(5))  # noqa: E741
    fit = bsp.fit_bsp(C, P, I, H, tw, tc, to, reduction=True, weights="relative")
    # cross-check: statsmodels' WLS of Eq. 5 with weights 1 / y**2
    y = P * tw / I
    ref = sm.WLS(y, np.stack([C, P * H, P], axis=1), weights=1 / y**2).fit()
    assert fit.compute.coef == pytest.approx(ref.params, rel=1e-8)
    assert fit.compute.stderr == pytest.approx(ref.bse, rel=1e-6)
    assert fit.compute.relative and fit.compute.sigma2 == pytest.approx(ref.scale, rel=1e-8)
    # exact runs: both weightings recover the truth
    exact = bsp.fit_bsp(*_runs(None), reduction=True, weights="relative").params_for()
    assert exact.o_w == pytest.approx(TRUE.o_w, rel=1e-6) and exact.k_w == pytest.approx(TRUE.k_w, rel=1e-6)
    assert fit.to_dataset()["sigma2_compute"].attrs["units"] == "1"
    with pytest.raises(ValueError, match="weights must be one of absolute, relative, not 'log'"):
        bsp.fit_bsp(C, P, I, H, tw, tc, to, weights="log")
    with pytest.raises(ValueError, match=r"compute time \(Eq. 5\): relative weighting needs a positive"):
        bsp.fit_bsp(C, P, I, H, np.where(C == C[0], 0.0, tw), tc, to, weights="relative")


def test_relative_prediction_interval_covers_a_new_run_with_the_same_relative_noise():
    rng = np.random.default_rng(6)
    hits, trials = 0, 200
    new = (2.5e7, 16.0, 300.0, 2 * np.sqrt(2.5e7))
    truth = bsp.bsp_times(*new, TRUE)
    for _ in range(trials):
        fit = bsp.fit_bsp(*_relative_noise_runs(rng), reduction=True, weights="relative")
        p = fit.predict(dict(zip("CPIH", new, strict=True)), interval="prediction").sel(component="t_w")
        t_new = truth["t_w"] * (1 + 0.05 * rng.standard_normal())  # a new run with the same 5 % noise
        hits += bool(p["lower"][0] <= t_new <= p["upper"][0])
    assert 0.90 <= hits / trials <= 0.99


def test_step_exponent_recovers_the_power_law_with_one_level_per_scenario():
    sizes = np.array([40.0, 20.0, 10.0, 5.0] * 2)
    scen = np.repeat(["harvey", "allatoona"], 4)
    steps = np.where(scen == "harvey", 300.0, 1200.0) * (40.0 / sizes) ** 1.08
    assert bsp.step_exponent(steps, sizes, scen) == pytest.approx(1.08, rel=1e-12)
    # repeated runs of one (scenario, size), e.g. two rank counts, count alike; a one-size scenario adds nothing
    more = bsp.step_exponent(np.concatenate([steps, steps[:1], [77.0]]), np.concatenate([sizes, sizes[:1], [7.0]]),
                             np.concatenate([scen, scen[:1], ["x"]]))
    assert more == pytest.approx(1.08, rel=1e-12)
    assert bsp.scaled_iterations(1000, 40, 5, exponent=1.08) == pytest.approx(1000 * 8**1.08)
    with pytest.raises(ValueError, match="two cell sizes"):
        bsp.step_exponent([100, 200], [10.0, 5.0], ["a", "b"])
    with pytest.raises(ValueError, match="positive"):
        bsp.step_exponent([100, 0], [10.0, 5.0], ["a", "a"])
    with pytest.raises(ValueError, match="one entry per run"):
        bsp.step_exponent([100, 200], [10.0], ["a", "a"])
