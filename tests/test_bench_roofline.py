"""Benchmark (``make bench``) of the table-level QRoof prediction over a what-if sweep.

Target: 12 kernels x 5 devices x 1,000 bandwidth factors (60 k predictions) well under a second.
"""

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from perfmod.apps.registry import app_kernels
from perfmod.machine.devices import devices_dataset, read_devices
from perfmod.models.roofline import predict, qroof_time


@pytest.mark.bench
def test_bench_predict_sweep(benchmark):
    kernels = pd.concat({a: app_kernels(a) for a in ("jacobi2d", "minife", "minimd")})
    kernels.index = [f"{a}.{k}" for a, k in kernels.index]
    kernels.index.name = "kernel"
    devs = devices_dataset(read_devices())
    factor = xr.DataArray(np.geomspace(0.25, 4, 1000), dims="bw_factor")
    devs["GBSEC - DRAM"] = devs["GBSEC - DRAM"] * factor
    pred = benchmark(predict, kernels, devs)
    assert pred.t_predicted.size == 12 * 5 * 1000
    assert np.all(pred.t_predicted.values > 0)


@pytest.mark.bench
def test_bench_qroof_time_arrays(benchmark):
    rng = np.random.default_rng(0)
    n = 1_000_000
    dev = dict(read_devices()["Tesla V100"])
    t = benchmark(qroof_time, rng.uniform(1e6, 1e9, n), rng.uniform(1e6, 1e9, n), "fp_64", 0.75,
                  rng.uniform(0.1, 0.5, n), rng.uniform(0.0, 0.4, n), dev)
    assert t.shape == (n,) and np.all(t > 0)
