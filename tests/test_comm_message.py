"""Node-aware message times on the paper's platforms (paper 000 §2.1, §3.1, Tables 2-5)."""

import numpy as np
import pytest
import xarray as xr

from perfmod.machine.platforms import ParameterNotAvailable, load
from perfmod.models.comm.message import message_time

SUMMIT = load("summit")
LASSEN = load("lassen")
BRIDGES = load("bridges")
HALO = 131072  # one Jacobi2D face: 16384 doubles, rendezvous on every platform


def test_postal_uses_table2_by_protocol():
    sizes = np.array([8, 4096, HALO])
    t = message_time(sizes, "inter_node", SUMMIT, "postal")
    expected = [1.24e-6 + 8 * 1.01e-9, 2.86e-6 + 4096 * 1.55e-10, 7.59e-6 + HALO * 8.70e-11]
    assert np.allclose(t, expected, rtol=1e-14)


def test_maxrate_defaults_to_k_prime_internode():
    t = message_time(HALO, "inter_node", SUMMIT, "maxrate")
    assert float(t) == pytest.approx(9.33e-6 + 6 * HALO / (1.23e10 + 5 * 2.58e7))


def test_maxrate_short_is_two_parameter():
    t = message_time(8, "inter_socket", LASSEN, "maxrate", k=2)
    assert float(t) == pytest.approx(1.08e-6 + 2 * 8 * 1.45e-9)


def test_kmodel_table5_k_internode():
    # Jacobi2D on Summit, Table 5: K_inter 14, K_total 24 -> k = 3.5
    t = message_time(HALO, "inter_node", SUMMIT, "kmodel", k_inter=14, k_total=24)
    assert float(t) == pytest.approx(9.33e-6 + 3.5 * HALO / (1.23e10 + 2.5 * 2.58e7))
    # with K_inter == K_total the K-model is the max-rate model
    same = message_time(HALO, "inter_node", SUMMIT, "kmodel", k_inter=24, k_total=24)
    assert float(same) == pytest.approx(float(message_time(HALO, "inter_node", SUMMIT, "maxrate")))


def test_kmodel_ordering_postal_le_kmodel_le_maxrate():
    sizes = np.geomspace(8, 4 << 20, 30)
    post = message_time(sizes, "inter_node", LASSEN, "postal")
    km = message_time(sizes, "inter_node", LASSEN, "kmodel", k_inter=10, k_total=16)
    mr = message_time(sizes, "inter_node", LASSEN, "maxrate")
    big = sizes > 1e5
    assert np.all(km[big] <= mr[big]) and np.all(km[big] > post[big])


def test_apply_postal_fallback_exactly():
    # Lassen intra-socket max-rate: "N/A (Apply postal model)" (Tables 3 and 4)
    sizes = np.array([8, 4096, HALO])
    mr = message_time(sizes, "intra_socket", LASSEN, "maxrate", k=2)
    assert np.array_equal(mr, message_time(sizes, "intra_socket", LASSEN, "postal"))


def test_mode_that_cannot_occur_raises():
    with pytest.raises(ParameterNotAvailable, match=r"bridges.*intra_socket.*1 process/socket"):
        message_time(HALO, "intra_socket", BRIDGES, "maxrate", k=1)


def test_bad_inputs():
    with pytest.raises(ValueError, match="nbytes must be positive"):
        message_time([8, -1], "inter_node", SUMMIT)
    with pytest.raises(ValueError, match="k must be <= k'"):
        message_time(8, "inter_node", SUMMIT, "maxrate", k=7)
    with pytest.raises(ValueError, match="needs k_inter and k_total"):
        message_time(8, "inter_node", SUMMIT, "kmodel")
    with pytest.raises(ValueError, match="unknown model"):
        message_time(8, "inter_node", SUMMIT, "logp")


def test_xarray_sweep_broadcasts():
    n = xr.DataArray(np.geomspace(8, 1 << 22, 12), dims="msg_bytes")
    k = xr.DataArray(np.arange(1, 7), dims="k")
    t = message_time(n, "inter_node", SUMMIT, "maxrate", k=k)
    assert set(t.dims) == {"msg_bytes", "k"} and t.shape == (12, 6) or t.shape == (6, 12)
    assert bool((t.diff("k") >= 0).all())


def test_loggp_derived_from_postal():
    t = message_time(4097, "inter_node", SUMMIT, "loggp")
    assert float(t) == pytest.approx(2.86e-6 + 4096 * 1.55e-10)


def test_platform_by_name():
    assert float(message_time(8, "inter_node", "summit")) == pytest.approx(1.24e-6 + 8 * 1.01e-9)
