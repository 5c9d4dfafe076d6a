"""Fitting communication models (paper 000 §2.1): recovery, uncertainty, fallback, breakpoints."""

import numpy as np
import pytest
import xarray as xr

from perfmod.models.comm import fitting as F
from perfmod.models.comm.models import maxrate, maxrate2, postal

SIZES = np.geomspace(8, 4 << 20, 30)
# 000 Table 4, Summit inter-node eager: alpha 2.39e-6 s, R_Cb 6.68e9 B/s, R_Ci 1.27e9 B/s
SUMMIT_EAGER = {"alpha": 2.39e-6, "r_cb": 6.68e9, "r_ci": 1.27e9}
EAGER_N = np.geomspace(1024, 65536, 12)
NN, KK = (a.ravel() for a in np.meshgrid(EAGER_N, np.arange(1, 7)))  # k = 1..6 pairs


def test_postal_exact_recovery():
    # 000 Table 2, Summit inter-node eager: alpha 2.86e-6 s, beta 1.55e-10 s/B
    f = F.fit_postal(SIZES, postal(SIZES, 2.86e-6, 1.55e-10))
    assert f.params["alpha"] == pytest.approx(2.86e-6, rel=1e-8)
    assert f.params["beta"] == pytest.approx(1.55e-10, rel=1e-8)
    assert f.rss < 1e-20 and f.r2 == pytest.approx(1.0) and f.max_rel_err < 1e-8
    assert f.model == "postal" and f.fallback == "" and f.n == SIZES.size and f.weights == "relative"
    g = F.fit_postal(SIZES, postal(SIZES, 2.86e-6, 1.55e-10), relative=False)
    assert g.weights == "absolute" and g.params["beta"] == pytest.approx(1.55e-10, rel=1e-8)


def test_postal_noise_within_three_standard_errors():
    rng = np.random.default_rng(0)
    t = postal(SIZES, 1.24e-6, 1.01e-9) * (1 + 0.01 * rng.standard_normal(SIZES.size))
    f = F.fit_postal(SIZES, t)
    assert abs(f.params["alpha"] - 1.24e-6) <= 3 * f.stderr["alpha"]
    assert abs(f.params["beta"] - 1.01e-9) <= 3 * f.stderr["beta"]
    assert f.rel_rms == pytest.approx(0.01, rel=0.4)  # 1 % noise gives ~1 % residuals


def test_postal_standard_error_coverage():
    rng = np.random.default_rng(1)
    truth = {"alpha": 1.24e-6, "beta": 1.01e-9}
    covered = {"alpha": 0, "beta": 0}
    trials = 200
    for _ in range(trials):
        t = postal(SIZES, **truth) * (1 + 0.01 * rng.standard_normal(SIZES.size))
        f = F.fit_postal(SIZES, t)
        for k in truth:
            covered[k] += abs(f.params[k] - truth[k]) <= 1.96 * f.stderr[k]
    for k in truth:  # nominal 95 %; binomial sd at n = 200 is 1.5 %
        assert 0.90 <= covered[k] / trials <= 0.99, (k, covered[k])


def test_relative_weights_matter_over_four_decades():
    # a 3 % error on the 4 MiB point swamps alpha in an unweighted fit, not in a relative one
    t = postal(SIZES, 1e-6, 1e-10)
    t[-1] *= 1.03
    rel, ols = F.fit_postal(SIZES, t), F.fit_postal(SIZES, t, relative=False)
    assert rel.params["alpha"] == pytest.approx(1e-6, rel=0.01)
    assert abs(ols.params["alpha"] / 1e-6 - 1) > 0.2


def test_maxrate_recovers_table4_summit_internode_eager():
    t = maxrate(NN, KK, **SUMMIT_EAGER)
    f = F.fit_maxrate(NN, KK, t)
    assert f.model == "maxrate" and f.form == "3-parameter (Eq. 2)" and f.fallback == ""
    for k, v in SUMMIT_EAGER.items():
        assert f.params[k] == pytest.approx(v, rel=1e-8), k
    assert np.allclose(f.predict(NN, k=KK)["predicted"], t, rtol=1e-10)
    rng = np.random.default_rng(2)
    noisy = F.fit_maxrate(NN, KK, t * (1 + 0.01 * rng.standard_normal(t.size)))
    for k, v in SUMMIT_EAGER.items():
        assert abs(noisy.params[k] - v) <= 3 * noisy.stderr[k], k


def test_maxrate_standard_error_coverage():
    rng = np.random.default_rng(3)
    t = maxrate(NN, KK, **SUMMIT_EAGER)
    trials, covered = 100, dict.fromkeys(SUMMIT_EAGER, 0)
    for _ in range(trials):
        f = F.fit_maxrate(NN, KK, t * (1 + 0.01 * rng.standard_normal(t.size)))
        for k, v in SUMMIT_EAGER.items():
            covered[k] += abs(f.params[k] - v) <= 1.96 * f.stderr[k]
    for k in SUMMIT_EAGER:  # nominal 95 %; binomial sd at n = 100 is 2.2 %
        assert 0.87 <= covered[k] / trials <= 1.0, (k, covered[k])


def test_maxrate_falls_back_when_a_parameter_is_negative():
    # Eq. 2 data with R_Ci = -0.1 R_Cb (bandwidth shrinks with each extra pair): the 3-parameter
    # fit finds r_ci < 0, so Eq. 3 is fitted instead (000 §2.1)
    n = np.geomspace(1024, 65536, 10)
    nn, kk = (a.ravel() for a in np.meshgrid(n, np.arange(1, 5)))
    t = maxrate(nn, kk, 1e-6, 5e9, -0.5e9)
    f = F.fit_maxrate(nn, kk, t)
    assert f.model == "maxrate2" and f.form.startswith("2-parameter (Eq. 3)")
    assert "negative r_ci" in f.fallback and f.fallback in f.form
    assert set(f.params.index) == {"alpha", "beta"} and f.params["alpha"] > 0 and f.params["beta"] > 0


def test_maxrate2_exact_and_single_k():
    n = np.geomspace(8, 256, 6)
    nn, kk = (a.ravel() for a in np.meshgrid(n, np.arange(1, 5)))
    # 000 Table 3, Summit inter-node short: alpha 1.24e-6 s, beta 1.01e-9 s/B
    f = F.fit_maxrate2(nn, kk, maxrate2(nn, kk, 1.24e-6, 1.01e-9))
    assert f.params["alpha"] == pytest.approx(1.24e-6, rel=1e-8)
    assert f.params["beta"] == pytest.approx(1.01e-9, rel=1e-8)
    one = F.fit_maxrate(SIZES, 1, postal(SIZES, 1e-6, 1e-10))
    assert one.model == "maxrate2" and "one k only" in one.fallback
    assert one.params["beta"] == pytest.approx(1e-10, rel=1e-8)


def _three_segments():
    n = np.unique(np.geomspace(8, 4 << 20, 40).round())
    t = np.where(n <= 1024, postal(n, 1e-6, 1e-9), np.where(n <= 65536, postal(n, 3e-6, 2e-10), postal(n, 1e-5, 1e-10)))
    return n, t


def test_breakpoints_of_three_segments():
    n, t = _three_segments()
    bps = F.find_breakpoints(n, t)
    assert bps == [int(n[n <= 1024].max()), int(n[n <= 65536].max())]
    scan = F.segment_bic(n, t)
    assert set(scan) == {0, 1, 2} and scan[2][0] < scan[1][0] < scan[0][0]
    fits = F.fit_protocols(n, t, bps)
    assert list(fits) == ["short", "eager", "rendezvous"]
    for name, (a, b) in {"short": (1e-6, 1e-9), "eager": (3e-6, 2e-10), "rendezvous": (1e-5, 1e-10)}.items():
        assert fits[name].params["alpha"] == pytest.approx(a, rel=1e-6)
        assert fits[name].params["beta"] == pytest.approx(b, rel=1e-6)
    assert F.find_breakpoints(n, postal(n, 1e-6, 1e-10)) == []
    assert len(F.find_breakpoints(n, t, max_breaks=1)) == 1


def test_breakpoints_with_noise():
    n, t = _three_segments()
    t = t * (1 + 0.01 * np.random.default_rng(4).standard_normal(t.size))
    assert F.find_breakpoints(n, t) == [int(n[n <= 1024].max()), int(n[n <= 65536].max())]


def test_fit_protocols_from_dataset():
    n, t = _three_segments()
    reps = t[:, None] * np.array([0.99, 1.0, 1.02])  # median over rep is t
    ds = xr.Dataset({"t_oneway": (("pairs", "msg_bytes", "rep"), reps[None])},
                    coords={"pairs": [1], "msg_bytes": n.astype(int), "rep": [0, 1, 2]})
    fits = F.fit_protocols(ds)
    assert fits["eager"].params["alpha"] == pytest.approx(3e-6, rel=1e-6)
    with pytest.raises(ValueError, match="pairs = 1"):
        F.fit_protocols(ds.assign_coords(pairs=[2]))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([8, 0, 16], [1e-6, 1e-6, 1e-6]), "nbytes must be positive"),
        (([8, -4, 16], [1e-6, 1e-6, 1e-6]), r"nbytes .*\[-4.0\]"),
        (([8, 16], [1e-6]), "nbytes and t differ in length"),
        (([8, 16], [1e-6, 2e-6]), "more points than parameters"),
        (([8, 16, 32], [1e-6, -1, 1e-6]), "t must be positive"),
        (([8, 16, 32], [1e-6, np.nan, 1e-6]), "t must be positive"),
    ],
)
def test_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        F.fit_postal(*args)


def test_bad_input_maxrate():
    with pytest.raises(ValueError, match="k must be >= 1"):
        F.fit_maxrate([8, 16, 32, 64], [1, 0, 1, 2], [1e-6] * 4)
    with pytest.raises(ValueError, match="k and nbytes differ"):
        F.fit_maxrate([8, 16, 32, 64], [1, 2], [1e-6] * 4)
    with pytest.raises(ValueError, match="3 parameters"):
        F.fit_maxrate([8, 16, 32], [1, 2, 1], [1e-6] * 3)
    with pytest.raises(ValueError, match=r"protocol 'short' \(0 < n <= 8 B\) has 1 sizes"):
        F.fit_protocols(SIZES, postal(SIZES, 1e-6, 1e-10), [SIZES[0], SIZES[2]])


def test_fit_tables():
    f = F.fit_postal(SIZES, postal(SIZES, 1e-6, 1e-10))
    s = f.to_series()
    assert {"alpha", "beta", "alpha_se", "beta_se", "rel_rms", "r2", "form"} <= set(s.index)
    df = f.to_frame()
    assert list(df.index) == ["alpha", "beta"] and df.loc["beta", "units"] == "s/B"
    assert df.loc["alpha", "estimate"] == pytest.approx(1e-6)
    assert np.allclose(f.predict(SIZES)["predicted"], postal(SIZES, 1e-6, 1e-10))
    with pytest.raises(AttributeError):
        f.model = "maxrate"  # frozen


def test_maxrate_delta_method_intervals_cover():
    """Eq. 2 is nonlinear in R_Cb, R_Ci: its intervals (delta method) still cover at their level."""
    rng = np.random.default_rng(5)
    n0, k0, trials = np.array([3000.0, 40000.0]), np.array([2.0, 5.0]), 150
    truth = maxrate(n0, k0, **SUMMIT_EAGER)
    hits = {"confidence": 0, "prediction": 0}
    for _ in range(trials):
        f = F.fit_maxrate(NN, KK, maxrate(NN, KK, **SUMMIT_EAGER) * (1 + 0.03 * rng.standard_normal(NN.size)))
        assert f.model == "maxrate"
        conf = f.predict(n0, interval="confidence", level=0.9, k=k0)
        hits["confidence"] += int(np.all((conf.lower <= truth) & (truth <= conf.upper)))
        new = truth * (1 + 0.03 * rng.standard_normal(2))
        pred = f.predict(n0, interval="prediction", level=0.9, k=k0)
        hits["prediction"] += int(((pred.lower <= new) & (new <= pred.upper)).sum())
        assert np.all(pred.upper - pred.lower > conf.upper - conf.lower)
    # both points inside: ~0.9^2 (correlated, so a little more); each new observation: ~0.9
    assert 0.72 <= hits["confidence"] / trials <= 0.92
    assert 0.84 <= hits["prediction"] / (2 * trials) <= 0.95
