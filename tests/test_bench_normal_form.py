"""Benchmarks of the multi-parameter normal-form search (``make bench``; once as a test under ``make test``).

Targets (issue 22): 2 parameters x 25 points x 5 repetitions in under 1 s; 3 parameters x 125 points
(x 5 repetitions) in under 10 s, on the 2-core development machine.
"""

import time

import numpy as np
import pandas as pd
import pytest

from perfmod.models.compute import fit_compute_model

V = np.array([4.0, 8, 16, 32, 64])


def _frame(m, f, reps=5, noise=0.05):
    rng = np.random.default_rng(0)
    X = np.column_stack([a.ravel() for a in np.meshgrid(*([V] * m), indexing="ij")]).repeat(reps, axis=0)
    names = ["p", "n", "s"][:m]
    return pd.DataFrame(X, columns=names).assign(time=f(*X.T) * (1 + rng.uniform(-noise, noise, len(X)))), names


def _timed(benchmark, fn):
    t0 = time.perf_counter()
    out = benchmark(fn)
    return out, (benchmark.stats.stats.min if benchmark.stats else time.perf_counter() - t0)


@pytest.mark.bench
def test_bench_normal_form_two_parameters(benchmark):
    df, names = _frame(2, lambda p, n: 3 + 2 * p**1.75 * np.log2(p) * n**2.75)
    model, seconds = _timed(benchmark, lambda: fit_compute_model(df, "time", names))
    assert len(df) == 125 and seconds < 1.0
    assert model.clusters[0].terms[-1].orders(names) == {"p": (1.75, 1), "n": (2.75, 0)}


@pytest.mark.bench
def test_bench_normal_form_three_parameters(benchmark):
    df, names = _frame(3, lambda p, n, s: 1 + p * n**0.5 + s**2 * np.log2(s), noise=0.01)
    model, seconds = _timed(benchmark, lambda: fit_compute_model(df, "time", names))
    assert len(df) == 625 and seconds < 10.0
    assert max(t.order(2) for t in model.clusters[0].terms) == (2.0, 1)
