"""Kernel metric tables: nvprof and Nsight Compute importers, round trips, selective profiling, prediction."""

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from perfmod.machine.devices import get_device, read_devices
from perfmod.models.roofline import (
    KernelInputError,
    ProfileError,
    from_flops_bytes,
    from_instruction_counts,
    kernel_table,
    predict,
    qroof_time,
    read_kernel_table,
    read_ncu,
    read_nvprof_metrics,
    read_nvprof_summary,
    selective_profiling,
    write_kernel_table,
)
from perfmod.viz.roofline import plot_roofline

matplotlib.use("Agg")
DATA = Path(__file__).parent / "data"
NVPROF = DATA / "nvprof_metrics_sample.csv"
SUMMARY = DATA / "nvprof_summary_sample.csv"
NCU = DATA / "ncu_metrics_sample.csv"
MM = "matrixMul(float*, float*, float*, int, int)"
ST = "stencil5(double*, double const *, int, int)"


def test_nvprof_import_gives_the_toolkit_parameters():
    k = read_nvprof_metrics(NVPROF, summary=SUMMARY)
    mm = k.loc[MM]
    # the parameters the toolkit README prints for matrixMul
    assert mm["compute_ops"] == 1048576000
    assert mm["dram_bytes"] == 72716160
    assert mm["dominant_op"] == "fp_32" and mm["opmix_efficiency"] == 1.0
    assert mm["mix_compute"] == pytest.approx(0.3473, abs=5e-5)
    assert mm["mix_ldst"] == pytest.approx(0.4780, abs=5e-5)
    assert mm["reference_time"] == pytest.approx(5.302e-3) and mm["count"] == 1
    # and through the model the README's 5.21 ms on the GTX 660
    t = qroof_time(mm["compute_ops"], mm["dram_bytes"], mm["dominant_op"], mm["opmix_efficiency"],
                   mm["mix_compute"], mm["mix_ldst"], get_device("GeForce GTX 660"))
    assert t == pytest.approx(5.214e-3, rel=1e-3)


def test_nvprof_totals_are_avg_times_invocations():
    st = read_nvprof_metrics(NVPROF).loc[ST]
    n = 10_000 * 10  # cells per launch x launches
    assert st["count"] == 10
    assert st["compute_ops"] == 6 * n  # 5 FP64 instructions + 1 DFMA per cell
    assert st["dram_bytes"] == 16 * n
    assert st["opmix_efficiency"] == pytest.approx(6 / 10)
    assert st["mix_compute"] == pytest.approx(5 / 16) and st["mix_ldst"] == pytest.approx(6 / 16)
    assert np.isnan(st["reference_time"])  # no summary given


def test_nvprof_summary_skips_copies_and_api_calls():
    s = read_nvprof_summary(SUMMARY)
    assert list(s.index) == [MM, ST]
    assert s.loc[ST, "time"] == pytest.approx(0.189e-3) and s.loc[ST, "calls"] == 10


def test_ncu_and_nvprof_give_the_same_table():
    a = read_nvprof_metrics(NVPROF, summary=SUMMARY)
    b = read_ncu(NCU)
    b.index = b.index.map({"matrixMul": MM, "stencil5": ST})
    pd.testing.assert_frame_equal(a.sort_index(), b.sort_index(), check_exact=False, rtol=1e-9)


def test_kernel_table_csv_round_trip(tmp_path):
    a = read_ncu(NCU)
    path = write_kernel_table(a, tmp_path / "k.csv", header="synthetic fixture\nsecond line")
    b = read_kernel_table(path)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert b.attrs["header"] == "synthetic fixture\nsecond line"


def test_missing_metric_names_metric_and_kernel(tmp_path):
    text = NVPROF.read_text().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(line for line in text if not ("stencil5" in line and "dram_write" in line)))
    with pytest.raises(ProfileError, match=r"kernel 'stencil5\(.*lacks metric 'dram_write_transactions'"):
        read_nvprof_metrics(bad)
    ncu = NCU.read_text().splitlines()
    bad.write_text("\n".join(line for line in ncu if "smsp__inst_executed.sum" not in line))
    with pytest.raises(ProfileError, match=r"kernel 'matrixMul' lacks metric 'smsp__inst_executed.sum"):
        read_ncu(bad)


def test_zero_and_negative_counts_are_rejected(tmp_path):
    text = NVPROF.read_text()
    bad = tmp_path / "bad.csv"
    bad.write_text(text.replace('"inst_executed","Instructions Executed",5000,5000,5000',
                                '"inst_executed","Instructions Executed",0,0,0'))
    with pytest.raises(ProfileError, match=r"stencil5.*inst_executed = 0"):
        read_nvprof_metrics(bad)
    bad.write_text(text.replace('"dram_read_transactions","Device Memory Read Transactions",2500,2500,2500',
                                '"dram_read_transactions","Device Memory Read Transactions",-2500,-2500,-2500'))
    with pytest.raises(ProfileError, match=r"stencil5.*negative dram_read_transactions"):
        read_nvprof_metrics(bad)
    with pytest.raises(KernelInputError, match=r"kernel 'k1': compute_ops must be positive"):
        kernel_table({"k1": dict(compute_ops=0, dram_bytes=1, dominant_op="fp_64", opmix_efficiency=1,
                                 mix_compute=0.5, mix_ldst=0.1)})
    with pytest.raises(KernelInputError, match=r"kernel 'k2': dram_bytes must be >= 0"):
        kernel_table({"k2": dict(compute_ops=1, dram_bytes=-8, dominant_op="fp_64", opmix_efficiency=1,
                                 mix_compute=0.5, mix_ldst=0.1)})


def test_not_a_profile(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(ProfileError, match="no CSV header"):
        read_nvprof_metrics(p)


def test_requested_kernel_not_in_profile():
    with pytest.raises(ProfileError, match="not in the profile"):
        read_ncu(NCU, kernels=["matrixMul", "nosuch"])


def test_selective_profiling_99_percent():
    times = {"a": 50.0, "b": 30.0, "c": 15.0, "d": 4.5, "e": 0.4, "f": 0.1}
    # cumulative 50, 80, 95, 99.5 >= 99: a-d
    assert selective_profiling(times) == ["a", "b", "c", "d"]
    assert selective_profiling(times, threshold=0.95) == ["a", "b", "c"]
    assert selective_profiling(times, threshold=1.0) == ["a", "b", "c", "d", "e", "f"]
    # exactly at the threshold stops there
    assert selective_profiling({"x": 99.0, "y": 1.0}) == ["x"]
    # from a real summary profile (copies and API calls already excluded)
    assert selective_profiling(read_nvprof_summary(SUMMARY)["time"]) == [MM, ST]
    assert selective_profiling(read_nvprof_summary(SUMMARY)["time"], threshold=0.9) == [MM]
    with pytest.raises(ValueError, match="threshold"):
        selective_profiling(times, threshold=0)


def test_selective_profiling_in_the_importer():
    # matrixMul holds 96.6 % of the kernel time: at 90 % only it is kept, at 99 % both
    k90 = read_nvprof_metrics(NVPROF, summary=SUMMARY, threshold=0.9)
    assert list(k90.index) == [MM]
    k99 = read_nvprof_metrics(NVPROF, summary=SUMMARY, threshold=0.99)
    assert sorted(k99.index) == sorted([MM, ST])


def test_from_instruction_counts_matches_importer():
    row = from_instruction_counts("fp_64", 5e5, 1e5, 6e5, 16e5, 1.6e6, count=10)
    st = read_nvprof_metrics(NVPROF).loc[ST]
    for c in ("compute_ops", "dram_bytes", "opmix_efficiency", "mix_compute", "mix_ldst", "count"):
        assert row[c] == pytest.approx(st[c])
    with pytest.raises(KernelInputError, match="fma_inst"):
        from_instruction_counts("fp_64", 1, 2, 0, 10, 0)


def test_predict_dataset_and_plot():
    k = read_nvprof_metrics(NVPROF, summary=SUMMARY)
    pred = predict(k, read_devices(), ["GeForce GTX 660", "Tesla V100", "H200"])
    assert pred["t_predicted"].dims == ("kernel", "device")
    assert float(pred["t_predicted"].sel(kernel=MM, device="GeForce GTX 660")) == pytest.approx(5.2132e-3, rel=1e-4)
    assert str(pred["bound"].sel(kernel=MM, device="GeForce GTX 660").values) == "compute"
    # the memory-bound stencil on the H200: bytes / 4.8 TB/s
    assert str(pred["bound"].sel(kernel=ST, device="H200").values) == "memory"
    assert float(pred["t_predicted"].sel(kernel=ST, device="H200")) == pytest.approx(1.6e6 / 4.8e12)
    assert float(pred["t_per_call_predicted"].sel(kernel=ST, device="H200")) == pytest.approx(1.6e5 / 4.8e12)
    assert float(pred["dram_bandwidth"].sel(device="Tesla V100")) == 900e9
    for v in pred.data_vars:
        assert {"units", "long_name"} <= set(pred[v].attrs), v
    fig = plot_roofline(pred)
    assert len(fig.axes[0].lines) == 3 * 2 + 3 * 2  # two ceilings and two kernels per device


def test_flops_bytes_row_is_the_plain_roofline():
    dev = get_device("Tesla V100")
    k = kernel_table({"stream": from_flops_bytes(2e9, 24e9), "dgemm": from_flops_bytes(2e12, 24e9)})
    pred = predict(k, {"Tesla V100": dev})
    assert float(pred.t_predicted.sel(kernel="stream", device="Tesla V100")) == pytest.approx(24e9 / 900e9)
    assert float(pred.t_predicted.sel(kernel="dgemm", device="Tesla V100")) == pytest.approx(2e12 / 7800e9)
    with pytest.raises(KernelInputError, match="kernel 'z': compute_ops"):
        from_flops_bytes(0, 1, kernel="z")
