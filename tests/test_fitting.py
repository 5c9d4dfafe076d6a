"""Fitting communication models (paper 000 §2.1): recovery, uncertainty, fallback, breakpoints."""

import numpy as np
import pytest

from perfmod.comm import fitting as F
from perfmod.comm.models import maxrate, maxrate2, postal

SIZES = np.geomspace(8, 4 << 20, 30)


def test_postal_exact_recovery():
    f = F.fit_postal(SIZES, postal(SIZES, 2.86e-6, 1.55e-10))
    assert f.params["alpha"] == pytest.approx(2.86e-6, rel=1e-8)
    assert f.params["beta"] == pytest.approx(1.55e-10, rel=1e-8)
    assert f.rss < 1e-20 and f.r2 == pytest.approx(1.0)


def test_postal_noise_within_standard_errors_and_coverage():
    rng = np.random.default_rng(1)
    truth = {"alpha": 1.24e-6, "beta": 1.01e-9}
    covered = {"alpha": 0, "beta": 0}
    trials = 200
    for _ in range(trials):
        t = postal(SIZES, **truth) * (1 + 0.01 * rng.standard_normal(SIZES.size))
        f = F.fit_postal(SIZES, t)
        for k in truth:
            covered[k] += abs(f.params[k] - truth[k]) <= 1.96 * f.stderr[k]
    for k in truth:  # nominal 95 %; binomial sd at n=200 is 1.5 %
        assert 0.90 <= covered[k] / trials <= 0.99, (k, covered[k])


def test_maxrate_recovers_table4_summit_internode_eager():
    # 000 Table 4: alpha 2.39e-6 s, R_Cb 6.68e9 B/s, R_Ci 1.27e9 B/s; k = 1..6 pairs
    n = np.geomspace(1024, 65536, 12)
    nn, kk = np.meshgrid(n, np.arange(1, 7))
    t = maxrate(nn, kk, 2.39e-6, 6.68e9, 1.27e9)
    f = F.fit_maxrate(nn.ravel(), kk.ravel(), t.ravel())
    assert f.model == "maxrate" and f.form.startswith("3-parameter")
    assert f.params["alpha"] == pytest.approx(2.39e-6, rel=1e-6)
    assert f.params["r_cb"] == pytest.approx(6.68e9, rel=1e-6)
    assert f.params["r_ci"] == pytest.approx(1.27e9, rel=1e-6)
    rng = np.random.default_rng(2)
    noisy = F.fit_maxrate(nn.ravel(), kk.ravel(), t.ravel() * (1 + 0.01 * rng.standard_normal(t.size)))
    for k, v in {"alpha": 2.39e-6, "r_cb": 6.68e9, "r_ci": 1.27e9}.items():
        assert abs(noisy.params[k] - v) <= 3 * noisy.stderr[k]


def test_maxrate_falls_back_when_a_parameter_is_negative():
    # time grows faster than linearly in k: Eq. 2 needs R_Ci < 0, so Eq. 3 is fitted (000 §2.1)
    n = np.geomspace(1024, 65536, 10)
    nn, kk = np.meshgrid(n, np.arange(1, 5))
    t = 1e-6 + nn * kk**1.6 * 1e-10
    f = F.fit_maxrate(nn.ravel(), kk.ravel(), t.ravel())
    assert f.model == "maxrate2" and "negative r_ci" in f.form
    exact = F.fit_maxrate(nn.ravel(), kk.ravel(), maxrate2(nn, kk, 1e-6, 2e-10).ravel() + 0 * nn.ravel())
    assert exact.model in ("maxrate", "maxrate2")


def test_maxrate_single_k_is_two_parameter():
    f = F.fit_maxrate(SIZES, 1, postal(SIZES, 1e-6, 1e-10))
    assert f.model == "maxrate2" and "one k only" in f.form
    assert f.params["beta"] == pytest.approx(1e-10, rel=1e-8)


def test_breakpoints_of_three_segments():
    n = np.unique(np.geomspace(8, 4 << 20, 40).round())
    t = np.where(n <= 1024, postal(n, 1e-6, 1e-9),
                 np.where(n <= 65536, postal(n, 3e-6, 2e-10), postal(n, 1e-5, 1e-10)))
    bps = F.find_breakpoints(n, t)
    assert bps == [int(n[n <= 1024].max()), int(n[n <= 65536].max())]
    fits = F.fit_protocols(n, t, bps)
    assert list(fits) == ["short", "eager", "rendezvous"]
    assert fits["eager"].params["alpha"] == pytest.approx(3e-6, rel=1e-6)
    assert F.find_breakpoints(n, postal(n, 1e-6, 1e-10)) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([8, 0, 16], [1e-6, 1e-6, 1e-6]), "nbytes must be positive"),
        (([8, 16], [1e-6]), "differ in length"),
        (([8, 16], [1e-6, 2e-6]), "more points than parameters"),
        (([8, 16, 32], [1e-6, -1, 1e-6]), "t must be positive"),
    ],
)
def test_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        F.fit_postal(*args)


def test_fit_table():
    f = F.fit_postal(SIZES, postal(SIZES, 1e-6, 1e-10))
    s = f.to_series()
    assert {"alpha", "beta", "alpha_se", "beta_se", "rel_rms"} <= set(s.index)
    assert np.allclose(f.predict(SIZES), postal(SIZES, 1e-6, 1e-10))
