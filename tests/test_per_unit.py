"""Tests of perfmod.models.compute.per_unit: a region's time as its work times a fitted cost per unit."""

import numpy as np
import pandas as pd
import pytest

from perfmod.models.compute import (
    MissingParameterError,
    PerUnitModel,
    fit_compute_model,
    fit_per_unit,
    with_memory_hierarchy,
)
from perfmod.models.compute.memory import BandwidthCurve, MemoryTraffic

A, B = 3e-6, 4e-4  # s per atom, s per call (overhead)


def _frame(p=(1, 2), noise=0.0, seed=0):
    """t = A n + B on p ranks sharing the machine, the per-rank cost A times (1 + 0.25 (p - 1))."""
    rng = np.random.default_rng(seed)
    n = np.tile([256.0, 500.0, 864.0, 2048.0, 2916.0], 3 * len(p))
    pp = np.repeat(np.asarray(p, dtype=float), 15)
    t = (A * (1 + 0.25 * (pp - 1)) * n + B) * (1 + rng.uniform(-noise, noise, len(n)))
    return pd.DataFrame({"natoms": n, "p": pp, "time": t})


def test_exact_overhead_plus_linear_extrapolates_exactly():
    f = _frame(p=(1,))
    m = fit_per_unit(f, "time", ["natoms"], "natoms")
    assert isinstance(m, PerUnitModel)
    for n in (6912.0, 50_000.0):
        assert m.predict_one(natoms=n) == pytest.approx(A * n + B, rel=1e-9)
    # the inner model is the cost per atom: A + B / n
    assert m.model.predict_one(natoms=1000.0) == pytest.approx(A + B / 1000.0, rel=1e-9)
    # predict() scales the point and both interval bounds by the work, row by row
    x = pd.DataFrame({"natoms": [1000.0, 4000.0]})
    inner = m.model.predict(x, interval="confidence")
    outer = m.predict(x, interval="confidence")
    for v in ("predicted", "lower", "upper"):
        assert outer[v].values == pytest.approx(inner[v].values * x.natoms.to_numpy(), rel=1e-12)
    assert outer.extrapolated.values.tolist() == [False, True]
    # everything else is the inner model's
    assert m.parameters == ["natoms"] and m.clusters is m.model.clusters


def test_noisy_contention_data_keep_the_proportional_shape_beyond_the_range():
    """5 % noise: the cost per atom is modeled, so the prediction at 2.4x the largest size stays near A n + B."""
    f = _frame(noise=0.05, seed=3)
    m = fit_per_unit(f, "time", ["natoms", "p"], "natoms")
    for p in (1.0, 2.0):
        truth = A * (1 + 0.25 * (p - 1)) * 6912 + B
        assert m.predict_one(natoms=6912.0, p=p) == pytest.approx(truth, rel=0.06)


def test_memory_hierarchy_wraps_a_per_unit_model():
    f = _frame(p=(1,))
    curve = BandwidthCurve(np.array([1e6, 2e6, 4e6, 8e6]), np.array([4e10, 4e10, 2e10, 2e10]))
    traffic = MemoryTraffic("natoms", traffic_per_unit=100.0, working_set_per_unit=1000.0)
    m = with_memory_hierarchy(fit_per_unit(f, "time", ["natoms"], "natoms"), f, traffic, curve)
    # W_ref = 2.916 MB; at 8e6 B (8,000 atoms) the 800 kB of traffic runs at 20 instead of ~29 GB/s
    extra = 8e5 * (1 / 2e10 - 1 / float(curve(2.916e6)))
    assert m.predict_one(natoms=8000.0) == pytest.approx(A * 8000 + B + extra, rel=1e-9)


def test_bad_work_parameter_is_named():
    f = _frame(p=(1,))
    with pytest.raises(MissingParameterError, match="'steps'"):
        fit_per_unit(f, "time", ["natoms"], "steps")
    bad = f.assign(natoms=f.natoms.where(f.index != 4, 0.0))
    with pytest.raises(ValueError, match="'natoms' has 1 value"):
        fit_per_unit(bad, "time", ["natoms"], "natoms")
    inner = fit_compute_model(f, "time", ["natoms"])
    with pytest.raises(MissingParameterError, match="'p'"):
        PerUnitModel(inner, "p")
    with pytest.raises(MissingParameterError, match="lacks the work parameter"):
        PerUnitModel(inner, "natoms").predict(pd.DataFrame({"p": [1.0]}))
