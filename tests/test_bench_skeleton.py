"""Benchmarks of skeleton mode (``make bench``); under ``make test`` each runs once.

Cost per modeled region call = (modeled - bare) / CALLS: a loop of CALLS calls
of a skippable region with one parameter taking 16 values, in model mode with
the prediction cache (a constant model, then a fitted perfmod-mode model: 16
evaluations, the rest cache hits), and one uncached evaluation of the fitted
model (through ``predict_one``), and the fitted model's ``predict_one`` beside
its ``predict`` on a one-row table (the dataset path a skeleton avoids).
Paper 004 §VI-D: the cost of polling the models bounds the skeleton's speedup
when regions are fine (HPCCG).
"""

import numpy as np
import pandas as pd
import pytest

from perfmod.measure.regions.skeleton import Skeleton, skeleton_region
from perfmod.models.compute import fit_perfmod

CALLS = 10_000


def _loop(n):
    for i in range(n):
        with skeleton_region("waxpby", n=i & 15) as run:
            if run:
                pass
    return n


def _model():
    n = np.repeat(np.arange(1.0, 17.0), 3)
    return fit_perfmod({"n": n, "time": 1e-6 * (2 + n) * (1 + 0.01 * np.sin(7 * n))}, "time", ["n"],
                       segments="none")


@pytest.mark.bench
def test_bench_skeleton_modeled_constant(benchmark):
    sk = Skeleton("model", {"waxpby": 1e-6}).start()
    try:
        assert benchmark(_loop, CALLS) == CALLS
    finally:
        sk.stop()
    assert sk.stats["waxpby"].evaluations == 16


@pytest.mark.bench
def test_bench_skeleton_modeled_fitted_cached(benchmark):
    sk = Skeleton("model", {"waxpby": _model()}, interval=None).start()
    try:
        assert benchmark(_loop, CALLS) == CALLS
    finally:
        sk.stop()
    st = sk.stats["waxpby"]
    assert st.evaluations == 16 and st.modeled % CALLS == 0
    # about 1e-6 * (2 + n) per call, n = 0..15 in turn
    assert st.modeled_s / st.modeled == pytest.approx(1e-6 * (2 + 7.5), rel=0.05)


@pytest.mark.bench
def test_bench_skeleton_uncached_evaluation(benchmark):
    sk = Skeleton("model", {"waxpby": _model()}, interval=None, cache=False)
    pred = benchmark(sk.predict, "waxpby", {"n": 8})
    assert pred[0] == pytest.approx(1e-5, rel=0.05)


@pytest.mark.bench
def test_bench_skeleton_predict_one(benchmark):
    model = _model()
    assert benchmark(model.predict_one, n=8.0) == pytest.approx(1e-5, rel=0.05)


@pytest.mark.bench
def test_bench_skeleton_predict_dataset(benchmark):
    model = _model()
    frame = pd.DataFrame({"n": [8.0]})
    ds = benchmark(model.predict, frame)
    assert float(ds.predicted.values[0]) == model.predict_one(n=8.0)
