"""Tests of perfmod.models.compute.memory: the in-cache fit carried past the cache by a measured bandwidth curve."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from perfmod.models.compute import (
    BandwidthCurve,
    MemoryHierarchyModel,
    MemoryTraffic,
    MissingParameterError,
    fit_compute_model,
    with_memory_hierarchy,
)
from perfmod.models.compute.memory import non_increasing

# 40 GB/s up to a 2 MB working set, 20 GB/s from 4 MB on (log-log between)
CURVE = BandwidthCurve(np.array([1e6, 2e6, 4e6, 8e6]), np.array([4e10, 4e10, 2e10, 2e10]))
C = 2e-9  # s per unit of work in cache
TRAFFIC = MemoryTraffic("n", traffic_per_unit=100.0, working_set_per_unit=1000.0, sharers="p")


def _fitted(p_values=(1,), scaling="added"):
    n = np.array([250, 500, 1000, 1500, 2000] * len(p_values), dtype=float)
    p = np.repeat(np.asarray(p_values, dtype=float), 5)
    train = pd.DataFrame({"n": n, "p": p, "time": C * n})
    model = fit_compute_model(train[["n", "time"]], "time", ["n"], method="loop", extents=["n"])
    return with_memory_hierarchy(model, train, TRAFFIC, CURVE, scaling=scaling)


def test_non_increasing_is_the_least_squares_monotone_fit():
    assert non_increasing([3, 1, 2, 0]).tolist() == [3.0, 1.5, 1.5, 0.0]
    assert non_increasing([5, 4, 4, 1]).tolist() == [5, 4, 4, 1]


def test_bandwidth_curve_interpolates_in_logarithms_and_is_flat_outside():
    assert CURVE(np.sqrt(2e6 * 4e6)) == pytest.approx(np.sqrt(4e10 * 2e10), rel=1e-12)
    assert CURVE([1e3, 1e9]).tolist() == pytest.approx([4e10, 2e10], rel=1e-12)
    # a slow sample at a small working set is averaged with its neighbours, not carried to every larger one
    noisy = BandwidthCurve([1e6, 2e6, 4e6, 8e6], [3e10, 5e10, 2e10, 2e10])
    assert noisy.bandwidth.tolist() == pytest.approx([np.sqrt(1.5e21), np.sqrt(1.5e21), 2e10, 2e10], rel=1e-12)
    probe = xr.Dataset({"cache_probe_bandwidth": ("cache_probe_bytes", [2e10, 4e10])},
                       coords={"cache_probe_bytes": [8_000_000, 1_000_000]})
    assert BandwidthCurve.from_probe(probe).working_set.tolist() == [1e6, 8e6]
    with pytest.raises(ValueError, match="two or more"):
        BandwidthCurve([1e6], [1e10])
    with pytest.raises(ValueError, match="positive"):
        BandwidthCurve([1e6, 2e6], [1e10, 0.0])


def test_memory_time_is_the_traffic_at_the_lower_bandwidth_beyond_the_training_working_sets():
    model = _fitted()
    assert isinstance(model, MemoryHierarchyModel)
    assert model.reference_working_set == 2e6  # 2,000 units of 1,000 B on one process
    slower = 1 / 2e10 - 1 / 4e10
    x = pd.DataFrame({"n": [1500.0, 4000.0, 8000.0]})
    ds = model.predict(x)
    expected_extra = [0.0, 100 * 4000 * slower, 100 * 8000 * slower]  # 0 inside; 1e-5 s and 2e-5 s beyond
    assert ds.memory_time.values.tolist() == pytest.approx(expected_extra, rel=1e-9, abs=1e-18)
    assert ds.predicted.values.tolist() == pytest.approx([C * 1500, C * 4000 + 1e-5, C * 8000 + 2e-5], rel=1e-9)
    assert bool(ds.extrapolated.values[1]) and not bool(ds.extrapolated.values[0])
    assert model.predict_one(n=8000.0) == pytest.approx(C * 8000 + 2e-5, rel=1e-9)
    # the wrapped model's attributes pass through
    assert model.parameters == ["n"] and model.method == "loop"


def test_processes_sharing_the_cache_multiply_the_working_set():
    n = np.array([250, 500, 1000, 1500, 2000, 125, 250, 500, 750, 1000], dtype=float)
    p = np.repeat([1.0, 2.0], 5)
    train = pd.DataFrame({"n": n, "p": p, "time": C * n * (1 + 0.1 * (p - 1))})
    base = fit_compute_model(train, "time", ["n", "p"], method="perfmod", bootstrap=0)
    model = with_memory_hierarchy(base, train, TRAFFIC, CURVE, scaling="added")
    assert model.reference_working_set == 2e6  # 2,000 units on 1 process, 1,000 on 2
    slower = 1 / 2e10 - 1 / 4e10
    extra = model.extra_time(pd.DataFrame({"n": [1000.0, 2000.0, 2000.0], "p": [2.0, 1.0, 2.0]}))
    # 2,000 units fit the cache on one process (2 MB) but not on two (4 MB: 20 GB/s instead of 40)
    assert extra.tolist() == pytest.approx([0.0, 0.0, 100 * 2000 * slower], rel=1e-12)
    # fitted on one process only, the sharers parameter (absent from the model) is dropped
    one = _fitted((1,))
    assert one.traffic.sharers is None
    assert one.extra_time(pd.DataFrame({"n": [4000.0]})).tolist() == pytest.approx([100 * 4000 * slower])


def test_proportional_scaling_slows_the_fit_by_the_bandwidth_ratio():
    model = _fitted(scaling="proportional")
    assert model.scaling == "proportional"
    # W_ref = 2 MB (40 GB/s); 4,000 units: 4 MB (20 GB/s, 2x); 2,828 units: 2.83 MB (log-log: sqrt(2) slower)
    n = np.array([1500.0, 4000.0, 2000 * np.sqrt(2)])
    ds = model.predict(pd.DataFrame({"n": n}), interval="prediction")
    factor = np.array([1.0, 2.0, np.sqrt(2)])
    assert model.slowdown(pd.DataFrame({"n": n})).tolist() == pytest.approx(factor.tolist(), rel=1e-9)
    assert ds.predicted.values.tolist() == pytest.approx((C * n * factor).tolist(), rel=1e-9)
    assert ds.memory_time.values.tolist() == pytest.approx((C * n * (factor - 1)).tolist(), rel=1e-9, abs=1e-18)
    # the interval is carried by the same factor, and predict_one and extra_time agree with predict
    bare = model.model.predict(pd.DataFrame({"n": n}), interval="prediction")
    assert ds.upper.values.tolist() == pytest.approx((bare.upper.values * factor).tolist(), rel=1e-9)
    assert model.predict_one(n=4000.0) == pytest.approx(2 * C * 4000, rel=1e-9)
    assert model.extra_time(pd.DataFrame({"n": n})).tolist() == pytest.approx(ds.memory_time.values.tolist(),
                                                                              rel=1e-9, abs=1e-18)
    with pytest.raises(ValueError, match="scaling"):
        with_memory_hierarchy(model.model, pd.DataFrame({"n": [1.0]}), TRAFFIC, CURVE, scaling="linear")


def test_bad_traffic_is_named():
    with pytest.raises(ValueError, match="working_set_per_unit"):
        MemoryTraffic("n", 10.0, 0.0)
    model = _fitted()
    with pytest.raises(MissingParameterError, match="'m'"):
        with_memory_hierarchy(model.model, pd.DataFrame({"n": [1.0]}), MemoryTraffic("m", 1.0, 1.0), CURVE)


def test_fit_past_the_cache_fits_the_in_cache_law_and_puts_the_memory_time_back():
    """Training points past the knee (2 processes sharing the cache at the largest sizes) carry memory time: the
    fit on them with it taken out is the in-cache law, and the wrapper adds it back where the working set is past
    the knee, at training and new points alike; wrapping a fit of the raw times instead learns the growth."""
    from perfmod.models.compute import fit_past_the_cache

    n = np.tile([250.0, 500.0, 1000.0, 1500.0, 2000.0], 2)
    p = np.repeat([1.0, 2.0], 5)
    ws = 1000.0 * n * p  # p = 2: 3 MB and 4 MB are past the 2 MB knee
    extra = np.where(ws > 2e6, 100.0 * n * (1 / CURVE(ws) - 1 / 4e10), 0.0)
    train = pd.DataFrame({"n": n, "p": p, "time": C * n + extra})
    model = fit_past_the_cache(train, "time", ["n", "p"], TRAFFIC, CURVE, 2e6, method="loop", extents=["n"])
    assert model.scaling == "added" and model.reference_working_set == 2e6
    np.testing.assert_allclose(model.model.predict_one(n=1500.0, p=2.0), C * 1500, rtol=1e-9)
    np.testing.assert_allclose(model.predict(train[["n", "p"]]).predicted.values, train["time"], rtol=1e-9)
    x = pd.DataFrame({"n": [4000.0, 3000.0], "p": [1.0, 2.0]})  # 4 MB and 6 MB: past the knee, at 20 GB/s
    want = C * x["n"] + 100 * x["n"] * (1 / 2e10 - 1 / 4e10)
    np.testing.assert_allclose(model.predict(x).predicted.values, want, rtol=1e-9)
    raw = fit_compute_model(train, "time", ["n", "p"], method="loop", extents=["n"])
    assert raw.predict_one(n=1500.0, p=1.0) > 1.05 * C * 1500  # the raw fit learned the 2-process growth
    with pytest.raises(ValueError, match="knee must be > 0"):
        fit_past_the_cache(train, "time", ["n", "p"], TRAFFIC, CURVE, 0.0, method="loop", extents=["n"])
