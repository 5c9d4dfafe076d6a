"""QRoof core: the reference toolkit's test vector, closed-form cases, device tables and bad input."""

import numpy as np
import pytest
import xarray as xr

from perfmod.machine.devices import (
    DEVICE_COLUMNS,
    DeviceError,
    default_devices_path,
    devices_dataset,
    get_device,
    read_devices,
    scale_device,
    write_devices,
)
from perfmod.models.roofline import KernelInputError, qroof, qroof_time

# ekondis/gpuroofperf-toolkit README ("Typical usage example"): matrixMul kernel parameters as printed
MATMUL = dict(compute_ops=1048576000, dram_bytes=72716160, dominant_op="fp_32", opmix_efficiency=1.0,
              mix_compute=0.3473, mix_ldst=0.4780)


def test_toolkit_matrixmul_gtx660_vector():
    # the README's prediction: 5.21397 ms, compute-bound (mix shares are printed rounded to 0.01 %)
    dev = get_device("GeForce GTX 660")
    r = qroof(**MATMUL, device=dev)
    assert r["time"] == pytest.approx(5.21397e-3, rel=5e-4)
    assert bool(r["compute_bound"])
    assert qroof_time(**MATMUL, device=dev) == r["time"]


def test_matrixmul_by_hand():
    # the same number from the formulas written out with the README's GTX 660 microbenchmark values
    sp, shm, add = 1863.569, 179.729, 414.935
    f_ls, f_o = (sp / 2) / shm, (sp / 2) / add
    e = 0.3473 / ((1 - 0.3473 - 0.4780) * f_o + 0.3473 + 0.4780 * f_ls)
    expected = 1048576000 / (sp * e * 1e9)
    assert qroof_time(**MATMUL, device=get_device("GeForce GTX 660")) == pytest.approx(expected, rel=1e-12)


def _flat_device(sp=1000.0, dram=100.0):
    # every instruction class runs at the SP instruction rate: factors 1, e_inst = mix_compute
    return {"GFLOPS - SP": sp, "GFLOPS - DP": sp, "GIOPS - MAD": sp, "GBSEC - DRAM": dram,
            "GBSEC - L2": np.nan, "GOPS - SHMEM": sp / 2, "GIOPS - ADD": sp / 2}


def test_memory_bound_closed_form():
    # 1 GB of traffic at 100 GB/s = 10 ms whatever the (small) compute
    r = qroof(1e6, 1e9, "fp_64", 0.5, 0.25, 0.5, _flat_device())
    assert r["time"] == pytest.approx(1e9 / 100e9)
    assert not bool(r["compute_bound"])


def test_compute_bound_closed_form():
    # e_inst = 0.5 (flat device), op-mix 0.5: 1e12 ops at 1000 Gop/s x 0.25 = 4 s
    r = qroof(1e12, 1e3, "fp_32", 0.5, 0.5, 0.3, _flat_device())
    assert r["inst_efficiency"] == pytest.approx(0.5)
    assert r["time"] == pytest.approx(1e12 / (1000e9 * 0.25))
    assert bool(r["compute_bound"])


def test_bound_switches_at_device_balance():
    dev = _flat_device()
    # balance = 1000 Gop/s * e / 100 GB/s; with e = 1 (mix_compute 1, opmix 1): 10 ops/B
    below = qroof(9.0e9, 1e9, "fp_32", 1.0, 1.0, 0.0, dev)
    above = qroof(11.0e9, 1e9, "fp_32", 1.0, 1.0, 0.0, dev)
    assert below["device_balance"] == pytest.approx(10.0)
    assert not bool(below["compute_bound"]) and bool(above["compute_bound"])
    assert below["time"] == pytest.approx(0.01) and above["time"] == pytest.approx(0.011)


def test_zero_dram_bytes_is_compute_bound():
    r = qroof(1e9, 0, "fp_32", 1.0, 1.0, 0.0, _flat_device())
    assert bool(r["compute_bound"]) and np.isinf(r["kernel_intensity"])
    assert r["time"] == pytest.approx(1e-3)


def test_double_precision_and_integer_factors():
    dev = dict(_flat_device(), **{"GFLOPS - DP": 500.0, "GIOPS - MAD": 250.0})
    # fp_64: f_op = 2, peak 500: e = 2*1/(2*1) = 1 with mix_compute 1
    assert qroof_time(5e11, 1.0, "fp_64", 1.0, 1.0, 0.0, dev) == pytest.approx(1.0)
    # integer: peak MAD 250 Gop/s, op-mix of integer code 0.5 (no FMA counterpart)
    assert qroof_time(2.5e11, 1.0, "integer", 0.5, 1.0, 0.0, dev) == pytest.approx(2.0)
    # optimistic mode: ADD rate (500) and efficiency 1
    assert qroof_time(2.5e11, 1.0, "integer", 0.5, 1.0, 0.0, dev, optimistic=True) == pytest.approx(0.5)


def test_what_if_scaling_identities():
    v100 = get_device("Tesla V100")
    mem = dict(compute_ops=1e8, dram_bytes=8e9, dominant_op="fp_64", opmix_efficiency=0.5,
               mix_compute=0.1, mix_ldst=0.3)
    t = qroof_time(**mem, device=v100)
    assert qroof_time(**mem, device=scale_device(v100, bandwidth=2)) == pytest.approx(t / 2)
    assert qroof_time(**mem, device=scale_device(v100, bandwidth=0.5)) == pytest.approx(2 * t)
    assert qroof_time(**mem, device=scale_device(v100, flops=2)) == pytest.approx(t)  # memory-bound
    # a compute-bound kernel doesn't care about bandwidth
    t_mm = qroof_time(**MATMUL, device=get_device("GeForce GTX 660"))
    assert qroof_time(**MATMUL, device=scale_device(get_device("GeForce GTX 660"), bandwidth=2)) == t_mm


def test_broadcasts_over_xarray_devices():
    table = read_devices()
    ds = devices_dataset(table, ["Tesla V100", "Tesla P100"])
    ops = xr.DataArray([1e8, 2e8], dims="kernel")
    nbytes = xr.DataArray([8e9, 16e9], dims="kernel")
    t = qroof_time(ops, nbytes, "fp_64", 0.5, 0.1, 0.3, {c: ds[c] for c in DEVICE_COLUMNS})
    assert t.dims == ("kernel", "device") or set(t.dims) == {"kernel", "device"}
    assert float(t.sel(kernel=0, device="Tesla V100")) == pytest.approx(8e9 / 900e9)
    assert float(t.sel(kernel=1, device="Tesla P100")) == pytest.approx(16e9 / 732e9)


def test_device_table_has_sources_and_paper_gpus():
    table = read_devices()
    for name in ("Tesla V100", "Tesla P100", "H100 SXM 80GB", "H200", "GeForce GTX 660"):
        assert name in table
    assert table.sources.notna().all().all()
    assert table.sources.at["Tesla V100", "GBSEC - DRAM"].startswith("spec:")
    assert table.values.at["Tesla V100", "GBSEC - DRAM"] == 900.0
    assert table.values.at["H200", "GBSEC - DRAM"] == 4800.0
    # every source key used is defined in the file's header
    header = default_devices_path().read_text()
    for key in set(table.sources.values.ravel()):
        assert key in header, key


def test_extra_device_file_in_toolkit_layout(tmp_path):
    # the toolkit's own output format: quoted header with spaces, no source columns
    extra = tmp_path / "local.csv"
    extra.write_text('"GPU", "GFLOPS - SP", "GFLOPS - DP", "GIOPS - MAD", "GBSEC - DRAM", "GBSEC - L2", '
                     '"GOPS - SHMEM", "GIOPS - ADD"\n"local-cpu", 100.5, 50.25, 40, 12.5, 30, 20, 20\n')
    table = read_devices(extra)
    dev = table["local-cpu"]
    assert dev["GBSEC - DRAM"] == 12.5 and dev["GFLOPS - DP"] == 50.25
    assert table.sources.at["local-cpu", "GFLOPS - SP"].endswith("local.csv")
    assert "Tesla V100" in table  # the default table is still there


def test_unknown_device_lists_known_ones():
    with pytest.raises(KeyError, match="known devices: .*Tesla V100.*Tesla P100"):
        get_device("Tesla K80")


def test_device_missing_column_is_named(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("GPU,GFLOPS - SP,GFLOPS - DP,GIOPS - MAD,GBSEC - L2,GOPS - SHMEM,GIOPS - ADD\nx,1,1,1,1,1,1\n")
    with pytest.raises(DeviceError, match=r"bad\.csv.*GBSEC - DRAM"):
        read_devices(bad, include_default=False)
    dev = dict(get_device("Tesla V100"))
    del dev["GOPS - SHMEM"]
    with pytest.raises(DeviceError, match="GOPS - SHMEM"):
        qroof_time(**MATMUL, device=dev)


def test_device_bad_value_names_line_and_column(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("# comment\nGPU," + ",".join(DEVICE_COLUMNS) + "\nok,1,1,1,1,1,1,1\nx,1,1,1,-5,1,1,1\n")
    with pytest.raises(DeviceError, match=r"line 4: device 'x', column 'GBSEC - DRAM'"):
        read_devices(bad, include_default=False)


@pytest.mark.parametrize("field,value,match", [
    ("compute_ops", 0, "compute_ops must be positive"),
    ("compute_ops", -5, "compute_ops must be positive"),
    ("dram_bytes", -1, "dram_bytes must be >= 0"),
    ("mix_compute", 0.0, "mix_compute"),
    ("mix_ldst", 0.9, r"mix_compute \+ mix_ldst"),
    ("opmix_efficiency", 1.5, "opmix_efficiency"),
    ("dominant_op", "fp_16", "fp_16"),
])
def test_bad_kernel_parameters(field, value, match):
    args = dict(MATMUL, **{field: value})
    with pytest.raises(KernelInputError, match=match):
        qroof_time(**args, device=get_device("Tesla V100"))


def test_write_devices_round_trip(tmp_path):
    row = {"GFLOPS - SP": 101.25, "GFLOPS - DP": 50.5, "GIOPS - MAD": 40.0, "GBSEC - DRAM": 12.345678901234567,
           "GBSEC - L2": float("nan"), "GOPS - SHMEM": 20.0, "GIOPS - ADD": 20.0}
    path = write_devices(tmp_path / "local.csv", {"local-cpu": row}, "measured: perfmod triad and FMA kernels",
                         header="host x, 2026-11-22")
    table = read_devices(path, include_default=False)
    dev = table["local-cpu"]
    for c, v in row.items():
        assert (np.isnan(dev[c]) and np.isnan(v)) or dev[c] == v
    assert table.sources.at["local-cpu", "GBSEC - DRAM"] == "measured: perfmod triad and FMA kernels"
    with pytest.raises(FileExistsError):
        write_devices(path, {"local-cpu": row}, "x")
    bad = dict(row)
    del bad["GIOPS - ADD"]
    with pytest.raises(DeviceError, match="GIOPS - ADD"):
        write_devices(tmp_path / "b.csv", {"x": bad}, "x")
