"""Tests of perfmod.measure.regions (paper 004 §V): instrumentation, Eiger-schema store, exports, crash safety."""

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from perfmod.measure.regions import (
    MissingParameterError,
    Recorder,
    RegionStore,
    active_recorder,
    instrument,
    region,
    to_extrap_jsonl,
    to_lwperf_csv,
    to_xarray,
)

EIGER_TABLES = {"datacollections", "applications", "datasets", "machines", "metric_types", "metrics",
                "machine_metrics", "trials", "nondeterministic_metrics", "deterministic_metrics", "models",
                "model_sources"}


def _busy(ns):
    t = time.perf_counter_ns()
    while time.perf_counter_ns() - t < ns:
        pass


def test_no_recorder_means_no_op():
    assert active_recorder() is None
    with region("x", n=1) as r1, region("y") as r2:
        assert r1 is r2  # the shared null context


def test_parameters_per_call_and_missing_parameter_error(tmp_path):
    with Recorder(tmp_path / "r.sqlite", rank=3) as rec:
        with region("waxpby", n=10):
            pass
        with region("waxpby"):  # lwperf would carry n=10 over; here the call has no n
            pass
        with region("waxpby", n=30):
            pass
    df = rec.store.calls("waxpby")
    assert df["n"].tolist()[0] == 10 and np.isnan(df["n"].tolist()[1]) and df["n"].tolist()[2] == 30
    assert (df["rank"] == 3).all() and df["time_ns"].dtype == np.int64
    with pytest.raises(MissingParameterError, match=r"region 'waxpby': parameter 'n' is missing in 1 of 3 calls"):
        rec.store.region_frame("waxpby")


def test_nesting_inclusive_and_exclusive_time_and_decorator():
    @instrument("inner", params=("k", "scale"))
    def inner(k, scale=2.0):
        _busy(200_000)
        return k * scale

    with Recorder(None, rank=0) as rec:
        with region("outer", n=5):
            _busy(300_000)
            assert inner(3) == 6.0
            inner(k=4, scale=1.0)
    df = rec.to_dataframe().set_index("region", append=True)
    outer = df.xs("outer", level="region").iloc[0]
    inners = df.xs("inner", level="region")
    assert inners["k"].tolist() == [3, 4] and inners["scale"].tolist() == [2.0, 1.0]
    assert (inners["parent_seq"] == outer["seq"]).all() and outer["parent_seq"] == -1
    assert outer["exclusive_ns"] == outer["time_ns"] - inners["time_ns"].sum()
    assert outer["time_ns"] >= 700_000 and outer["exclusive_ns"] >= 300_000
    assert (inners["exclusive_ns"] == inners["time_ns"]).all()


def test_store_uses_eiger_schema_and_batches(tmp_path):
    path = tmp_path / "r.sqlite"
    rec = Recorder(path, application="hpccg", batch_size=5, invariants={"nprocs": 4}).start()
    try:
        for i in range(12):
            with region("ddot", n=[100, 200, 300][i % 3]):
                pass
        other = sqlite3.connect(path)
        # two batches committed, two calls still buffered
        assert other.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 10
    finally:
        rec.stop()
    tables = {r[0] for r in other.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert EIGER_TABLES <= tables
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert other.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 12
    assert other.execute("SELECT COUNT(*) FROM datasets").fetchone()[0] == 3
    assert other.execute("SELECT name FROM datacollections").fetchall() == [("ddot",)]
    types = dict(other.execute("SELECT name, type FROM metrics").fetchall())
    assert types == {"n": "deterministic", "nprocs": "deterministic", "time": "nondeterministic"}
    prof = rec.store.eiger_profile("ddot")
    assert list(prof.columns) == ["n", "nprocs", "time"] and len(prof) == 12 and (prof["nprocs"] == 4).all()
    frame = rec.store.region_frame("ddot")
    np.testing.assert_allclose(frame["time"].to_numpy(), prof["time"].to_numpy())


def test_non_numeric_parameter_names_region_and_parameter(tmp_path):
    rec = Recorder(tmp_path / "r.sqlite").start()
    with region("spmv", n="big"):
        pass
    with pytest.raises(ValueError, match=r"region 'spmv': parameter 'n' = 'big' is not a number"):
        rec.stop()
    assert active_recorder() is None


WRITER = textwrap.dedent("""
    import sys, time
    from perfmod.measure.regions import Recorder, region
    rec = Recorder(sys.argv[1], batch_size=50).start()
    i = 0
    while True:
        with region("waxpby", n=100 + i % 7):
            time.sleep(0.0002)
        i += 1
""")


def test_store_survives_a_killed_writer(tmp_path):
    path = tmp_path / "crash.sqlite"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], env=env)
    try:
        deadline = time.time() + 60
        count = 0
        while time.time() < deadline and count < 200:
            time.sleep(0.2)
            if path.exists():
                try:
                    con = sqlite3.connect(path, timeout=5)
                    count = con.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
                    con.close()
                except sqlite3.OperationalError:
                    count = 0
        assert count >= 200, "the writer did not commit 200 calls in 60 s"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    store = RegionStore(path)
    con = store.conn
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    n_trials = con.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    assert n_trials >= 200 and n_trials % 50 == 0  # whole batches only
    assert con.execute("SELECT COUNT(*) FROM nondeterministic_metrics").fetchone()[0] == n_trials
    frame = store.region_frame("waxpby")
    assert len(frame) == n_trials and set(frame["n"]) == set(range(100, 107))
    assert (frame["time"] > 1.5e-4).all()


def test_exports_lwperf_csv_extrap_jsonl_and_xarray(tmp_path):
    store = RegionStore(tmp_path / "r.sqlite")
    with Recorder(store, invariants={"nprocs": 2}):
        for n in (8, 16):
            with region("solve", n=n):
                with region("spmv", n=n, nnz=27 * n):
                    pass
    paths = to_lwperf_csv(store, tmp_path / "csv", invariants=["nprocs"])
    assert sorted(p.name for p in paths) == ["solve.csv", "spmv.csv"]
    lines = (tmp_path / "csv" / "spmv.csv").read_text().splitlines()
    assert lines[0] == "nprocs,n,nnz,time" and len(lines) == 3
    row = [float(v) for v in lines[2].split(",")]
    assert row[:3] == [2.0, 16.0, 432.0] and row[3] == pytest.approx(store.calls("spmv")["time"].iloc[1])
    out = to_extrap_jsonl(store, tmp_path / "x.jsonl")
    umask = os.umask(0)
    os.umask(umask)
    for p in [*paths, out]:  # the shared atomic writer: the usual file mode, not mkstemp's 0600
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~umask, p
    recs = [json.loads(s) for s in out.read_text().splitlines()]
    spmv = [r for r in recs if r["callpath"] == "solve->spmv"]
    assert len(recs) == 4 and len(spmv) == 2
    assert spmv[0]["params"] == {"n": 8.0, "nnz": 216.0, "nprocs": 2.0} and spmv[0]["metric"] == "time"
    ds = to_xarray(store, "spmv")
    assert ds["time"].attrs["units"] == "s" and ds["nnz"].values.tolist() == [216.0, 432.0]


@pytest.mark.parametrize("proxy", ["hpccg", "minimd_lj", "lulesh", "jacobi2d", "gol", "swe", "sedov_mpi"])
def test_a_launched_rank_starts_without_the_dataset_and_trace_layers(proxy: str) -> None:
    # every measured run launches fresh ranks, and a study launches dozens: pandas, xarray and the trace layer
    # (numba) are the slowest imports, and a rank that only measures needs none of them (commit c99cf2f)
    code = (f"import sys, perfmod.measure.proxies.{proxy}, perfmod.measure.proxies.skeleton_cli; "
            "print(sorted(m for m in ('pandas', 'xarray', 'numba', 'perfmod.trace') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", f"{proxy} imports {out.stdout.strip()}"


def test_region_store_errors_name_the_path_and_a_missing_table_is_an_error(tmp_path):
    from perfmod.measure.regions.store import RegionStore, RegionStoreError

    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all, just some bytes " * 40)
    with pytest.raises(RegionStoreError, match=rf"{junk}: not a region store: file is not a database"):
        RegionStore(junk)
    good = tmp_path / "good.sqlite"
    RegionStore(good).close()
    RegionStore(good).close()  # a complete store opens again
    conn = sqlite3.connect(good)
    conn.execute("DROP TABLE perfmod_calls")
    conn.commit()
    conn.close()
    with pytest.raises(RegionStoreError, match=rf"{good}: the region store has no table perfmod_calls"):
        RegionStore(good)
