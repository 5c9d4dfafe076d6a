"""Device microbenchmarks: byte and operation counts, the device row, its CSV round trip (not timings)."""

import json

import numpy as np
import pytest

from perfmod.core.io import check_conventions
from perfmod.machine.devices import DEVICE_COLUMNS, read_devices
from perfmod.measure.bench import devicebench as db
from perfmod.measure.bench.xp import BackendUnavailable, array_module, cupy_available, synchronize, to_host
from perfmod.models.roofline.traffic import traffic_bytes

SMALL = {"dram": 4096, "dram_inner": 1, "l2": 1024, "l2_inner": 2, "fma": 256, "fma_iters": 4}


def test_traffic_rule_closed_form():
    # triad on a CPU: 3 reads, 2 writes, 1 write-allocate read per element
    assert traffic_bytes(1000, 8, 3, 2, 1, True) == 48_000
    assert traffic_bytes(1000, 8, 3, 2, 1, False) == 40_000
    with pytest.raises(ValueError, match="allocating <= writes"):
        traffic_bytes(10, 8, 1, 1, 2, True)
    with pytest.raises(ValueError, match="non-negative"):
        traffic_bytes(-1, 8, 1, 1, 0, True)


def test_triad_counts_and_result():
    t, nbytes = db.triad(np, 5000, reps=3, inner=2)
    assert t.shape == (3,) and np.all(t > 0)
    assert nbytes == 2 * 5000 * 8 * 6


@pytest.mark.parametrize(("dtype", "op", "ops_per_step", "mix"), [
    ("float64", "mad", 2, 0.5), ("float32", "mad", 2, 0.5), ("int64", "add", 1, 1.0)])
def test_fma_operation_counts(dtype, op, ops_per_step, mix):
    t, ops, opmix = db.fma(np, 100, 7, dtype, op, reps=2)
    assert ops == 100 * 7 * ops_per_step and opmix == mix and t.shape == (2,)
    with pytest.raises(ValueError, match="'mad' or 'add'"):
        db.fma(np, 10, 1, op="div")


def test_device_row_is_work_over_median_time():
    ds = db.measure_devices("numpy", reps=3, sizes=SMALL, write=False)
    check_conventions(ds)
    row = db.device_row(ds)
    assert list(row) == list(DEVICE_COLUMNS)
    t = ds.t.sel(bench="triad_dram").max("rank").median("rep")
    assert row["GBSEC - DRAM"] == pytest.approx(4096 * 48 / float(t) / 1e9)
    # a peak is the measured rate over the op-mix efficiency: NumPy's unfused multiply-add is half the peak
    t_fma = float(ds.t.sel(bench="fma_dp").max("rank").median("rep"))
    assert row["GFLOPS - DP"] == pytest.approx(256 * 4 * 2 / t_fma / 0.5 / 1e9)
    assert all(v > 0 for v in row.values())


def test_device_csv_round_trip_through_the_roofline_loader(tmp_path):
    ds = db.measure_devices("numpy", reps=2, sizes=SMALL, write=False)
    path = db.write_device_csv(ds, "local-cpu", tmp_path / "local.csv")
    table = read_devices(path, include_default=False)
    row = db.device_row(ds)
    for c in DEVICE_COLUMNS:
        assert table["local-cpu"][c] == pytest.approx(row[c], rel=1e-5)
    with pytest.raises(FileExistsError):
        db.write_device_csv(ds, "local-cpu", path)


def test_measurement_is_never_overwritten(tmp_path):
    out = tmp_path / "d.nc"
    ds = db.measure_devices("numpy", reps=2, sizes=SMALL, out=out)
    assert out.exists() and ds.attrs["path"] == str(out) and ds.attrs["ranks"] == 1
    with pytest.raises(FileExistsError):
        db.measure_devices("numpy", reps=2, sizes=SMALL, out=out)


def test_backends():
    xp = array_module("numpy")
    a = xp.arange(3.0)
    synchronize(xp)
    assert to_host(xp, a) is a
    with pytest.raises(ValueError, match="unknown array backend 'torch'"):
        array_module("torch")
    if not cupy_available():
        with pytest.raises(BackendUnavailable, match="cupy"):
            array_module("cupy")


@pytest.mark.mpi
def test_two_ranks_at_once():
    ds = db.measure_devices("numpy", ranks=2, reps=2, sizes=SMALL, write=False)
    assert ds.sizes["rank"] == 2 and "mpiexec" in ds.attrs["command"]
    assert np.all(ds.t.values > 0)


def test_command_line_writes_dataset_and_device_row(tmp_path, capsys):
    out = tmp_path / "cli.nc"
    assert db.main(["--reps", "2", "--sizes", json.dumps(SMALL), "--out", str(out)]) == 0
    assert out.exists()
    table = read_devices(out.with_suffix(".csv"), include_default=False)
    assert len(table.names) == 1 and "GBSEC - DRAM" in capsys.readouterr().out
