"""Benchmarks of perfmod.models.regression (``make bench``); under ``make test`` each runs once as a test.

Targets: Model C (12 coefficients) on the paper's 500 observations in well under
0.1 s; 10-fold cross-validation of it (ten fits and predictions) under a second.
"""

import numpy as np
import pandas as pd
import pytest

from perfmod.models.regression import kfold, lm

MODEL_C = "time ~ (X1 + I(X1^2)) * X2 * X3"


def _runs(n):
    rng = np.random.default_rng(0)
    d = pd.DataFrame({"X1": rng.uniform(1, 20, n), "X2": rng.choice([512.0, 1024, 2048, 3584], n),
                      "X3": rng.uniform(1e3, 1e5, n)})
    d["time"] = 100 + 50 * d.X1 + 3 * d.X1**2 + 0.02 * d.X1 * d.X2 + rng.normal(0, 20, n)
    return d


@pytest.mark.bench
def test_bench_lm_model_c_500(benchmark):
    d = _runs(500)
    m = benchmark(lm, MODEL_C, d)
    assert m.df_resid == 488 and m.rse == pytest.approx(20, rel=0.15)


@pytest.mark.bench
def test_bench_kfold_model_c_275(benchmark):
    d = _runs(275)
    cv = benchmark(kfold, MODEL_C, d, 10)
    assert len(cv.folds) == 10 and cv.rmse_validation == pytest.approx(20, rel=0.2)
