"""Benchmarks of the Jacobi2D model (``make bench``); under ``make test`` each runs once as a test.

Throughput target: predicting a sweep of 40 configurations (block x ranks, two kernel models) in well
under a second, so papermill sweeps are dominated by the runs, not the model.
"""

import numpy as np
import pytest

from perfmod.machine.platforms import from_dict
from perfmod.studies import local_jacobi2d as st

ROW = {"GFLOPS - SP": 20.0, "GFLOPS - DP": 10.0, "GIOPS - MAD": 8.0, "GBSEC - DRAM": 40.0, "GBSEC - L2": 150.0,
       "GOPS - SHMEM": 12.0, "GIOPS - ADD": 5.0}


@pytest.mark.bench
def test_bench_predict_sweep(benchmark):
    cell = {"alpha": 2e-6, "beta": 1e-10, "source": "bench"}
    plat = from_dict({"name": "toy", "sockets_per_node": 1, "gpus_per_socket": 0, "ranks_per_node": 2,
                      "protocols": {"short_max_bytes": 0, "eager_max_bytes": 1 << 30, "source": "bench"},
                      "comm": {"postal": {"intra_socket": {p: cell for p in ("short", "eager", "rendezvous")}}}})
    nprocs = [1, 2, 4, 8]
    rows = dict.fromkeys(nprocs, ROW)
    prof = st.Profile(2048, 2, 1e-4, {}, {"pack": 10.0, "unpack": 4.0, "stencil": 1.5, "reduce": 3.0})
    blocks = list(range(1024, 6144, 512))
    ds = benchmark(st.predict_jacobi, blocks, nprocs, plat, rows, prof)
    assert ds.sizes == {"model": 2, "block": 10, "nprocs": 4}
    assert np.all(np.diff(ds.t_iter_predicted.sel(model="qroof", nprocs=1).values) > 0)
