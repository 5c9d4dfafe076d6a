"""Benchmark: a 1,000-point sweep of choi2020_what_if on 2 workers, each point the study's run() in the worker.

Run with ``make bench`` (or ``pytest -s tests/test_bench_sweep.py``); it prints the wall time, the
time per point, the points' own time (the study's run() and the dataset write) and the load average.

Measured 2026-11-26 on the 2-CPU development machine, shared with other work (load average 4.5 before, 5.4
after): 463 s wall for the 1,000 points, 0.46 s per point; the points' own time 0.89 s each (run() and the
write, slowed by the load), so the overhead around them is 0.03 worker-seconds per point.  The same sweep
as one papermill process per point cost about 35 s a point (the issue's measurement).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from perfmod.workflow.sweep import sweep

NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "choi2020_what_if.ipynb"
GPUS_PER_NODE = [[1, 2], [1, 4], [2, 4], [1, 8], [2, 8], [4, 8], [1, 16], [2, 16]]  # each divides 16 k


@pytest.mark.bench
@pytest.mark.slow  # about 10 minutes: not in make test
def test_bench_a_thousand_point_what_if_sweep(tmp_path, benchmark):
    grid = {"models": ["postal", "maxrate"],
            "product": {"total_gpus": [16 * k for k in range(1, 126)], "gpus_per_node": GPUS_PER_NODE}}
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    ds = benchmark.pedantic(sweep, args=(NOTEBOOK, grid), kwargs={"out": tmp_path / "sw", "workers": 2,
                            "progress": False, "notebooks": "none"}, rounds=1, iterations=1)
    wall = time.perf_counter() - t0
    points = ds.status.size
    assert points == 1000 and (ds.status == "ok").all()
    own = float(ds.elapsed.sum())
    print(f"\n1000-point choi2020_what_if sweep on 2 workers: {wall:.0f} s wall, {wall / points:.3f} s per point, "
          f"points' own time {own / points:.3f} s per point (run() and the dataset write), overhead per point "
          f"{(2 * wall - own) / points:.3f} worker-s; load average {load0[0]:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after, {os.cpu_count()} CPUs")
