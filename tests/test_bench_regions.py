"""Benchmarks of region instrumentation (``make bench``); under ``make test`` each runs once.

Overhead per region call when recording = (recorded - bare) / CALLS, from the
``regions_*`` benchmarks: a loop of CALLS calls of an empty region with one
parameter taking 16 values, with no recorder (the no-op context), with an in-memory recorder,
and with the SQLite store (batches of 10,000 calls, the flush included).
"""

import pytest

from perfmod.measure.regions import Recorder, RegionStore, region

CALLS = 10_000


def _loop(n):
    for i in range(n):
        with region("waxpby", n=i & 15):  # 16 problem sizes, as a real sweep would have
            pass
    return n


def _bare(n):
    for i in range(n):
        i & 15  # noqa: B018 - the same work as the loop without the region
    return n


@pytest.mark.bench
def test_bench_regions_bare_loop(benchmark):
    assert benchmark(_bare, CALLS) == CALLS


@pytest.mark.bench
def test_bench_regions_no_recorder(benchmark):
    assert benchmark(_loop, CALLS) == CALLS


@pytest.mark.bench
def test_bench_regions_recorded_in_memory(benchmark):
    rec = Recorder(None, batch_size=CALLS).start()
    try:
        assert benchmark(_loop, CALLS) == CALLS
    finally:
        rec.stop()
    df = rec.to_dataframe()
    assert len(df) % CALLS == 0 and df["n"].iloc[:CALLS].tolist() == [i & 15 for i in range(CALLS)]


@pytest.mark.bench
def test_bench_regions_recorded_sqlite(benchmark, tmp_path):
    store = RegionStore(tmp_path / "bench.sqlite")
    rec = Recorder(store, batch_size=CALLS).start()
    try:
        assert benchmark(_loop, CALLS) == CALLS
    finally:
        rec.stop()
    assert store.conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0] % CALLS == 0
