"""The local Jacobi2D study: model assembly, profile round trip, masks; the committed H100 measurement."""

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from perfmod.machine.platforms import from_dict
from perfmod.measure.proxies.jacobi2d import KERNELS, PHASES
from perfmod.models.comm.message import message_time
from perfmod.models.comm.network import Network
from perfmod.models.roofline import qroof_time
from perfmod.studies import jacobi2d_gpu as gpu
from perfmod.studies import local_jacobi2d as st

ROW = {"GFLOPS - SP": 20.0, "GFLOPS - DP": 10.0, "GIOPS - MAD": 8.0, "GBSEC - DRAM": 40.0, "GBSEC - L2": 150.0,
       "GOPS - SHMEM": 12.0, "GIOPS - ADD": 5.0}
ROWS = {1: ROW, 2: {**ROW, "GBSEC - DRAM": 25.0}}
GPU_FILES = sorted(Path(__file__).resolve().parents[1].glob("data/raw/gpu-h100/jacobi2d_gpu-*.json"))


def _platform():
    cell = {"alpha": 2e-6, "beta": 1e-10, "source": "test"}
    return from_dict({"name": "toy", "sockets_per_node": 1, "gpus_per_socket": 0, "ranks_per_node": 2,
                      "protocols": {"short_max_bytes": 0, "eager_max_bytes": 1 << 30, "source": "test"},
                      "comm": {"postal": {"intra_socket": {p: cell for p in ("short", "eager", "rendezvous")}}}})


def test_working_set_and_blocks_beyond_the_cache():
    one = 8 * (2 * 100 * 100 + 98 * 98)  # two padded grids and the interior temporary
    assert st.working_set_bytes(98, 1, cores=2) == one
    assert st.working_set_bytes(98, 4, cores=2) == 2 * one  # only the running ranks share the cache
    llc = 48 * 2 ** 20
    blocks = st.blocks_beyond(llc, [1, 2], cores=2)
    assert blocks == [2048, 2560, 3072]  # 2,048 already exceeds 1.25 x 48 MiB on one rank (8 * 3 * 2050^2 B)
    big = st.blocks_beyond(300 * 2 ** 20, [1, 2], cores=2)
    assert st.working_set_bytes(big[0], 1, 2) > 1.25 * 300 * 2 ** 20 >= st.working_set_bytes(big[0] - 256, 1, 2)
    assert big[0] < big[1] < big[2] and all(b % 256 == 0 for b in big)


def test_rank_counts_average_over_the_grid():
    c3 = st.rank_counts(10, 3)  # 3 x 1 grid: two edge ranks with one neighbour, the middle one with two
    c1 = st.rank_counts(10, 1)
    assert c3["pack"]["dram_bytes"] == pytest.approx(4 / 3 * 3 * 8 * 10)
    assert c1["pack"]["compute_ops"] == 0 and c3["stencil"] == c1["stencil"]


def test_comm_terms_are_the_postal_model():
    plat = _platform()
    t_ex, t_ar = st._comm(1000, 2, Network(plat))
    assert t_ex == pytest.approx(float(message_time(8000, "intra_socket", plat)))  # one message per rank
    assert t_ar == pytest.approx(float(message_time(8, "intra_socket", plat)))  # one recursive-doubling step
    assert st._comm(1000, 1, Network(plat)) == (0.0, 0.0)
    # four ranks on a two-core platform still share one node: no inter-node mode appears
    t4, _ = st._comm(1000, 4, Network(plat))
    assert t4 == pytest.approx(2 * float(message_time(8000, "intra_socket", plat)))


def _synthetic(blocks, nprocs, eff, overhead):
    """Measurements made from the model itself: each kernel at ``eff`` x QRoof, postal communication."""
    plat = _platform()
    shape = (len(blocks), len(nprocs), 2)
    data = {q: np.zeros(shape) for q in (*PHASES, "iter")}
    for i, b in enumerate(blocks):
        for k, p in enumerate(nprocs):
            counts = st.rank_counts(b, p)
            for kern in KERNELS:
                data[kern][i, k] = st._qroof(counts[kern], ROWS[p]) * eff[kern]
            data["exchange"][i, k], data["allreduce"][i, k] = st._comm(b, p, Network(plat))
            data["d2h"][i, k] = overhead
            data["iter"][i, k] = sum(data[q][i, k] for q in PHASES)
    ds = xr.Dataset({f"t_{q}_measured": (("block", "nprocs", "rep"), v) for q, v in data.items()},
                    coords={"block": blocks, "nprocs": nprocs, "rep": [0, 1],
                            "oversubscribed": ("nprocs", [False] * len(nprocs)),
                            "cache_resident": (("block", "nprocs"), np.zeros((len(blocks), len(nprocs)), bool))})
    return ds, plat


def test_profile_predict_round_trip():
    eff = {"pack": 30.0, "unpack": 12.0, "stencil": 1.3, "reduce": 2.5}
    ds, plat = _synthetic([64, 128, 256], [1, 2], eff, overhead=1e-5)
    prof = st.profile_jacobi(ds, ROWS, block=128, nprocs=2)
    assert prof.overhead == pytest.approx(1e-5)
    for k in ("pack", "unpack", "stencil", "reduce"):
        assert prof.efficiency[k] == pytest.approx(eff[k])
    pred = st.predict_jacobi([64, 128, 256], [1, 2], plat, ROWS, prof)
    res = st.compare(ds, pred, prof)
    # the profiled model reproduces measurements made from it; plain QRoof misses by the efficiencies
    assert np.allclose(res.t_iter_error.sel(model="qroof_profiled"), 0, atol=1e-12)
    assert np.all(res.t_stencil_error.sel(model="qroof").values == pytest.approx(1 / 1.3 - 1))
    assert res.held_out.sum() == 5 and not bool(res.held_out.sel(block=128, nprocs=2))
    assert st.headline_errors(res)["iter"] == pytest.approx(0, abs=1e-12)
    # one rank has no halo: PACK has nothing to do and no relative error; its share of the iteration is still there
    assert np.isnan(res.t_pack_error.sel(nprocs=1)).all() and np.isfinite(res.t_pack_error_of_iter).all()
    assert np.allclose(res.t_iter_noise, 0) and np.allclose(res.t_overhead_measured, 1e-5)
    assert st.headline_errors(res, "qroof")["stencil"] == pytest.approx(1 - 1 / 1.3)
    with pytest.raises(KeyError, match="was not measured"):
        st.profile_jacobi(ds, ROWS, block=100, nprocs=2)


def test_one_profile_per_rank_count():
    # a shared CPU: the kernels reach a different fraction of each rank count's device row
    eff1 = {"pack": 30.0, "unpack": 12.0, "stencil": 2.6, "reduce": 5.0}
    eff2 = {"pack": 30.0, "unpack": 12.0, "stencil": 1.3, "reduce": 2.5}
    d1, plat = _synthetic([64, 128, 256], [1], eff1, overhead=1e-5)
    d2, _ = _synthetic([64, 128, 256], [2], eff2, overhead=2e-5)
    ds = xr.concat([d1, d2], dim="nprocs")
    one = st.profile_jacobi(ds, ROWS, block=64, nprocs=2)
    each = st.profile_each(ds, ROWS, 64, [1, 2])
    assert each[1].efficiency["stencil"] == pytest.approx(2.6) and each[2].overhead == pytest.approx(2e-5)
    res = st.compare(ds, st.predict_jacobi([64, 128, 256], [1, 2], plat, ROWS, each), each)
    assert np.allclose(res.t_iter_error.sel(model="qroof_profiled"), 0, atol=1e-12)
    assert res.held_out.sel(block=64).sum() == 0 and res.held_out.sum() == 4
    assert res.kernel_efficiency.sel(profile_nprocs=1, kernel="stencil") == pytest.approx(2.6)
    # one profile for both rank counts misses the one-rank runs by the ratio of the efficiencies
    res1 = st.compare(ds, st.predict_jacobi([64, 128, 256], [1, 2], plat, ROWS, one), one)
    assert float(res1.t_stencil_error.sel(model="qroof_profiled", nprocs=1, block=256)) == pytest.approx(1.3 / 2.6 - 1)
    with pytest.raises(KeyError, match="no profile for nprocs=4"):
        st.predict_jacobi([64], [4], plat, {**ROWS, 4: ROW}, each)


def test_mean_rows():
    m = st.mean_rows(ROWS, {1: {c: 2 * v for c, v in ROW.items()}, 2: ROWS[2]})
    assert m[1]["GBSEC - DRAM"] == 60.0 and m[2] == ROWS[2]
    with pytest.raises(ValueError, match="different rank counts"):
        st.mean_rows(ROWS, {1: ROW})


@pytest.mark.skipif(not GPU_FILES, reason="no committed GPU measurement")
def test_committed_h100_measurement():
    rec = gpu.read_gpu(GPU_FILES[-1])
    assert "H100" in rec["info"]["gpu"] and rec["info"]["cupy_version"]
    row = gpu.gpu_device_row(rec)
    # the triad and the STENCIL move bytes the same way: at 16,384^2 the STENCIL runs within 5 % of the
    # measured DRAM roofline (two measurements of one device agreeing, not a fit)
    ds = gpu.gpu_dataset(rec)
    s = ds.sel(block=16384, kernel="stencil")
    t_q = qroof_time(float(s.compute_ops), float(s.dram_bytes), "fp_64", 0.5, 1.0, 0.0, row)
    assert float(s.t_kernel_measured) == pytest.approx(t_q, rel=0.05)
    assert 2000 < row["GBSEC - DRAM"] < 3350  # below the datasheet's 3.35 TB/s
    # end to end on one rank: QRoof kernels + the overhead profiled at 8,192^2 predict the 16,384^2 iteration
    it = gpu.gpu_iterations(rec, profile_block=8192)
    assert abs(float(it.t_iter_gpu_error.sel(gpu_block=16384))) < 0.05
    with pytest.raises(KeyError, match="no one-rank iteration measured at block 3"):
        gpu.gpu_iterations(rec, profile_block=3)


MPI_FILES = sorted(Path(__file__).resolve().parents[1].glob("data/raw/gpu-h100/jacobi2d_mpi-*.jsonl"))


@pytest.mark.skipif(not MPI_FILES, reason="no committed GPU MPI runs")
def test_committed_cupy_mpi_runs_equal_the_serial_reference():
    import json

    from perfmod.machine.cart import dims_create
    from perfmod.measure.proxies import jacobi2d as j

    runs = [json.loads(line) for line in MPI_FILES[-1].read_text().splitlines() if line.strip()]
    checked = 0
    for r in runs:
        if "sum_squares" not in r:
            continue
        dims, n = dims_create(r["nprocs"], 2), r["block"]
        gy, gx = np.arange(-1, dims[0] * n + 1)[:, None], np.arange(-1, dims[1] * n + 1)[None, :]
        ref = j.jacobi_serial(j.initial_field(gy, gx), r["iters"] + r["warmup"])[1:-1, 1:-1]
        assert r["sum_squares"] == pytest.approx(float(np.sum(ref * ref)), rel=1e-12)
        checked += r["backend"] == "cupy"
    assert checked == 2  # CuPy on 2 and 4 ranks
