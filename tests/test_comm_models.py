"""Closed-form checks of the point-to-point formulas (paper 000 Eq. 1-5)."""

import numpy as np
import pytest
import xarray as xr

from perfmod.models.comm import models as m


def test_postal_closed_form():
    # Summit inter-node eager, 000 Table 2: alpha 2.86e-6 s, beta 1.55e-10 s/B; 64 KiB message
    assert m.postal(65536, 2.86e-6, 1.55e-10) == pytest.approx(2.86e-6 + 65536 * 1.55e-10, rel=1e-15)


def test_maxrate_k1_is_single_process_bandwidth():
    # With k = 1, Eq. 2 is a postal model with beta = 1 / R_Cb
    n = np.array([1e3, 1e5, 1e7])
    assert np.allclose(m.maxrate(n, 1, 2.39e-6, 6.68e9, 1.27e9), m.postal(n, 2.39e-6, 1 / 6.68e9), rtol=1e-14)


def test_maxrate_hand_computed():
    # Summit inter-node rendezvous (Table 4), k = 6, n = 1 MB:
    # 9.33e-6 + 6e6 / (1.23e10 + 5 * 2.58e7) = 9.33e-6 + 6e6 / 1.2429e10
    expected = 9.33e-6 + 6e6 / 1.2429e10
    assert m.maxrate(1e6, 6, 9.33e-6, 1.23e10, 2.58e7) == pytest.approx(expected, rel=1e-12)


def test_maxrate_equal_rates_reduces_to_postal():
    # R_Cb == R_Ci: k processes share k times the bandwidth, so time = alpha + n / R
    assert m.maxrate(4096.0, 5, 1e-6, 2e9, 2e9) == pytest.approx(1e-6 + 4096 / 2e9)


def test_maxrate2_is_k_times_beta():
    assert m.maxrate2(100, 3, 1.51e-6, 6.32e-10) == pytest.approx(1.51e-6 + 300 * 6.32e-10)


@pytest.mark.parametrize(
    ("k_inter", "k_total", "k_prime", "k"),
    [(12, 24, 6, 3.0), (14, 24, 6, 3.5), (10, 16, 4, 2.5), (92, 104, 4, 3.5384615)],
)
def test_kmodel_k(k_inter, k_total, k_prime, k):
    # §3.1 example (48 ranks) and Table 5 cells
    assert m.kmodel_k(k_inter, k_total, k_prime) == pytest.approx(k)


def test_kmodel_rejects_inconsistent_counts():
    with pytest.raises(ValueError, match="K_inter"):
        m.kmodel_k(30, 24, 6)
    with pytest.raises(ValueError, match="K_total"):
        m.kmodel_k(0, 0, 6)


def test_loggp_single_message():
    assert m.loggp(1001, L=1e-6, o=2e-7, g=5e-7, G=1e-10) == pytest.approx(1.4e-6 + 1000 * 1e-10)


def test_broadcasting_over_xarray_dims():
    n = xr.DataArray([8.0, 1024.0, 1 << 20], dims="msg_bytes")
    k = xr.DataArray([1, 2, 4, 6], dims="k")
    t = m.maxrate(n, k, 2.39e-6, 6.68e9, 1.27e9).transpose("msg_bytes", "k")
    assert t.shape == (3, 4)
    # time grows with k at fixed size (R_Ci < R_Cb)
    assert bool((t.diff("k") > 0).all())
    assert float(t.isel(k=0, msg_bytes=2)) == pytest.approx(2.39e-6 + 2**20 / 6.68e9)


@pytest.mark.parametrize("bad", [0, -8, np.nan, [8, 0]])
def test_check_sizes(bad):
    with pytest.raises(ValueError, match="nbytes"):
        m.check_sizes(bad)


def test_check_k_range():
    m.check_k([1, 3, 6], 6)
    with pytest.raises(ValueError, match="k must be >= 1"):
        m.check_k(0)
    with pytest.raises(ValueError, match="k must be <= k'"):
        m.check_k(7, 6)
