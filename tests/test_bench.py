"""Benchmarks (``make bench``); under ``make test`` each runs once as a test.

Throughput targets: message_time >= 10 M messages/s; kmodel_counts and a
phase of MiniFE at 4,096 ranks (about 100 k messages) well under a second.
"""

import numpy as np
import pytest

from perfmod.apps.registry import exchange, kmodel_counts
from perfmod.machine.platforms import load
from perfmod.models.comm.message import message_time
from perfmod.models.comm.phase import phase_time

SUMMIT = load("summit")


@pytest.mark.bench
def test_bench_message_time(benchmark):
    sizes = np.random.default_rng(0).integers(1, 1 << 22, 1_000_000).astype(float)
    t = benchmark(message_time, sizes, "inter_node", SUMMIT, "maxrate")
    assert t.shape == sizes.shape and np.all(t > 1e-6)


@pytest.mark.bench
def test_bench_kmodel_counts_jacobi2d_16k(benchmark):
    c = benchmark(kmodel_counts, "jacobi2d", SUMMIT, 16384)
    assert c.k_total == 24 and 12 <= c.k_inter <= 24


@pytest.mark.bench
def test_bench_phase_minife_4096(benchmark):
    ex = exchange("minife", 4096)
    ds = benchmark(phase_time, ex, SUMMIT, "kmodel")
    assert float(ds.t_phase) > 0
