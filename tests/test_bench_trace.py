"""Benchmarks of the trace formats and the recorder (``make bench``); under ``make test`` each runs once.

Recorder overhead per call = (recorded - raw) / calls, from the two
``recorder_*`` benchmarks (COMM_SELF Irecv + Isend + Waitall of 8-byte
messages, 300 rounds = 900 calls); the README gives the numbers.

Exporters (issue 14 item 12), the 1,536-rank x 100-iteration synthetic
Jacobi2D trace (1,504,000 events) on the project's shared 2-core VM:
``write_goal`` 123 s and ``write_tit`` 44 s before (per-rank offsets
recomputed per call, ``arange(P)`` per event, a scan of the trace per rank
for alltoallv counts: superlinear in ranks; load average 1.3 to 4.3);
after, linear in events (the same events/s at 1,536 x 10 as at 96 x 160):
``write_goal`` 27 s and ``write_tit`` 6.9 s at load average 2.5, when a
reference loop of 10^7 integer additions took 2.7 s (several times its
time on an idle core).  GOAL is the slower because it writes more: each
allreduce becomes rounds of point-to-point operations with their
dependencies, 1,137,090 GOAL lines for the 1,536 x 10 trace (so about 11 M
here) against 153,473 TIT lines.  Then ``write_goal`` went compiled (the
graph from ``goal_graph.op_graph``, numba, formatted to bytes by numba too;
same bytes): 2.65 s in this benchmark at load average 2.1, and in one
session at load average 2.5-2.9, 4.2 s against 24.5 s for the previous
Python loop (280,698,843 bytes either way; 1.0 s of it building the graph
of 4.6 M operations, 0.7 s formatting).
"""

import numpy as np
import pytest
from mpi4py import MPI

from perfmod.apps.traces import synthetic
from perfmod.trace.formats.dumpi import read_dumpi
from perfmod.trace.formats.goal import write_goal
from perfmod.trace.formats.otf2 import read_otf2, write_otf2
from perfmod.trace.formats.tit import read_tit, write_tit
from perfmod.trace.recorder import record

ROUNDS = 300


def _exchange(c, waitall, a, b):
    for _ in range(ROUNDS):
        waitall([c.Irecv(b, 0, 1), c.Isend(a, 0, 1)])
    return ROUNDS * 3


@pytest.mark.bench
def test_bench_recorder_raw_comm_self(benchmark):
    a, b = np.ones(1), np.empty(1)
    assert benchmark(_exchange, MPI.COMM_SELF, MPI.Request.Waitall, a, b) == 900


@pytest.mark.bench
def test_bench_recorder_recorded_comm_self(benchmark):
    a, b = np.ones(1), np.empty(1)
    c = record(MPI.COMM_SELF)
    assert benchmark(_exchange, c, c.Waitall, a, b) == 900
    assert len(c.recorder.events) % 900 == 0


def _dumpi_file(path, calls):
    lines = []
    for k in range(calls):
        t = 1_000_000 + 2 * k
        lines += [f"MPI_Send entering at walltime 10.{t:09d}, cputime 0.000000000 seconds in thread 0.",
                  "int count=8", "MPI_Datatype datatype=14 (MPI_DOUBLE)", "int dest=0", "int tag=0",
                  "MPI_Comm comm=2 (MPI_COMM_WORLD)",
                  f"MPI_Send returning at walltime 10.{t + 1:09d}, cputime 0.000000000 seconds in thread 0."]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.bench
def test_bench_read_dumpi_20k_calls(benchmark, tmp_path):
    f = _dumpi_file(tmp_path / "b-0000.txt", 20_000)
    t = benchmark(read_dumpi, f)
    assert len(t) == 20_000 and int(t.nbytes.sum()) == 20_000 * 64


@pytest.fixture(scope="module")
def jacobi():
    return synthetic("jacobi2d", 64, 20)  # 64 ranks x 20 iterations: 11,520 events


@pytest.mark.bench
def test_bench_tit_write_read(benchmark, jacobi, tmp_path):
    def run():
        write_tit(jacobi, tmp_path / "j.tit")
        return read_tit(tmp_path / "j.tit")
    assert len(benchmark(run)) == len(jacobi) + 2 * jacobi.nprocs  # init and finalize added for SMPI


@pytest.mark.bench
def test_bench_goal_write(benchmark, jacobi, tmp_path):
    assert benchmark(write_goal, jacobi, tmp_path / "j.goal").stat().st_size > 0


@pytest.mark.bench
def test_bench_otf2_write_read(benchmark, jacobi, tmp_path):
    def run():
        return read_otf2(write_otf2(jacobi, tmp_path / "j"))
    assert len(benchmark(run)) == len(jacobi)


@pytest.fixture(scope="module")
def jacobi_1536():
    return synthetic("jacobi2d", 1536, 100)  # issue 14 item 12: 1,504,000 events


@pytest.mark.bench
@pytest.mark.slow
def test_bench_goal_write_1536x100(benchmark, jacobi_1536, tmp_path):
    path = benchmark.pedantic(write_goal, args=(jacobi_1536, tmp_path / "j.goal"), rounds=1, iterations=1)
    assert path.stat().st_size > 0
    benchmark.extra_info["events"] = len(jacobi_1536)


@pytest.mark.bench
@pytest.mark.slow
def test_bench_tit_write_1536x100(benchmark, jacobi_1536, tmp_path):
    path = benchmark.pedantic(write_tit, args=(jacobi_1536, tmp_path / "j.tit"), rounds=1, iterations=1)
    assert path.stat().st_size > 0
    benchmark.extra_info["events"] = len(jacobi_1536)
