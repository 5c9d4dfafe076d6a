"""Benchmarks of the paper 001 proxies (``make bench``); under ``make test`` each runs once as a test.

Throughput: Sedov proxy element-iterations per second (five kernels, 2 workers) and Quicksilver proxy
particle-tracking steps per second (one census step of every particle, 1 worker).
"""

import pytest

from perfmod.measure.proxies.quicksilver import QSMesh, QuicksilverSim
from perfmod.measure.proxies.sedov import run_shared


@pytest.mark.bench
def test_bench_sedov_shared_24cubed_10_iterations(benchmark):
    res = benchmark(run_shared, 24, 24, 24, 10, 2)
    assert res["x3_peer_edges"] > 0 and res["e_internal"] > 0


@pytest.mark.bench
def test_bench_quicksilver_tracking_20k_particles(benchmark):
    sim = QuicksilverSim(QSMesh(16, 16, 16), 20000, workers=1, seed=0)
    benchmark(sim.track, 0)
    assert sim.alive() > 0
    sim.close()
