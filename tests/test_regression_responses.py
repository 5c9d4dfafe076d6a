"""Paper 001 Eq. 4-7 (distributed and Monte Carlo responses) and Eq. 8-11 (energy) on hand-computed arrays."""

import numpy as np
import pytest
import xarray as xr

from perfmod.models.regression import (
    DataError,
    distributed_responses,
    energy,
    t_comm,
    t_comp,
    t_tot,
    t_tot_montecarlo,
)

# 2 hosts x 3 iterations x 2 devices
COMP = np.array([[[1.0, 2.0], [3.0, 1.0], [2.0, 2.0]],    # host 0: per-iteration max 2, 3, 2 -> 7
                 [[4.0, 1.0], [1.0, 1.0], [1.0, 5.0]]])   # host 1: 4, 1, 5 -> 10
COMM = np.array([[1.0, 1.0, 1.0], [0.5, 2.0, 0.5]])       # sums 3, 3
TOTAL = np.array([12.0, 14.0])


def test_eq4_to_6_by_hand():
    assert t_comp(COMP) == 10.0
    # Eq. 4 is not the max over hosts and devices of the per-device sums (that would be 7):
    assert COMP.sum(axis=1).max() == 7.0
    assert t_comm(COMM) == 3.0 and t_tot(TOTAL) == 14.0
    r = distributed_responses(COMP, COMM, TOTAL)
    assert r == pytest.approx({"t_comp": 10 / 3, "t_comm": 1.0, "t_tot": 14 / 3})
    assert distributed_responses(COMP, COMM, TOTAL, per_iteration=False)["t_comp"] == 10.0


def test_leading_axes_and_xarray_broadcast():
    runs = np.stack([COMP, 2 * COMP])  # a leading 'run' axis
    np.testing.assert_array_equal(t_comp(runs), [10.0, 20.0])
    da = xr.DataArray(runs, dims=("run", "host", "iteration", "device"))
    out = t_comp(da)
    assert out.dims == ("run",) and out.values.tolist() == [10.0, 20.0]
    # dimension order does not matter for xarray
    assert t_comp(da.transpose("device", "run", "iteration", "host")).values.tolist() == [10.0, 20.0]
    assert float(t_comm(xr.DataArray(COMM, dims=("host", "iteration")))) == 3.0


def test_eq7_montecarlo_by_hand():
    # K = 2 iterations of m = 2 tracking steps on d = 2 GPUs
    tracking = np.array([[[1.0, 2.0], [1.0, 2.0]],   # GPU sums 2, 4 -> 4
                         [[3.0, 1.0], [3.0, 1.0]]])  # 6, 2 -> 6
    population = np.array([[1.0, 3.0], [2.0, 2.0]])  # K/f = 2 control steps: 3 + 2
    assert t_tot_montecarlo(tracking, population) == 15.0


def test_eq8_to_11_by_hand():
    e = energy(np.array([1.0, 2.0]), np.array([10.0, 20.0]), np.array([5.0, 5.0]))
    assert e["t_s"] == 2.0
    np.testing.assert_array_equal(e["e_idle"], [10.0, 40.0])
    np.testing.assert_array_equal(e["e_dynamic"], [5.0, 10.0])
    assert e["e_s"] == 65.0
    da = energy(xr.DataArray([[1.0, 2.0], [2.0, 2.0]], dims=("run", "device")), 10.0, 5.0)
    assert da["e_s"].values.tolist() == [45.0, 60.0] and da["t_s"].values.tolist() == [2.0, 2.0]


def test_bad_timing_arrays():
    bad = COMP.copy()
    bad[1, 2, 0] = -1.0
    with pytest.raises(DataError, match=r"negative value\(s\), first at index \(1, 2, 0\)"):
        t_comp(bad)
    bad[1, 2, 0] = np.nan
    with pytest.raises(DataError, match="non-finite"):
        t_comp(bad)
    with pytest.raises(DataError, match="at least 3 axes"):
        t_comp(COMM)
    with pytest.raises(DataError, match="lacks dimension"):
        t_comp(xr.DataArray(COMP, dims=("host", "iteration", "gpu")))
    with pytest.raises(DataError, match="3 iterations, communication 2"):
        distributed_responses(COMP, COMM[:, :2], TOTAL)
