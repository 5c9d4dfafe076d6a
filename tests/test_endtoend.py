"""End-to-end model (000 §3.4, 002 §2), paper kernel counts and the what-if studies (000 §6)."""

import numpy as np
import pytest
import xarray as xr

from perfmod.apps.kernels import APP_KERNELS
from perfmod.apps.minimd import minimd_border_atoms
from perfmod.apps.registry import analytic_comm, app_counts, app_kernels
from perfmod.machine.devices import DEVICE_COLUMNS, devices_dataset, read_devices
from perfmod.models.comm.collectives import allreduce_recursive_doubling
from perfmod.models.endtoend import comm_from_replay, end_to_end, kernel_time
from perfmod.models.roofline import predict
from perfmod.studies.choi2019_minife import cg_iteration
from perfmod.studies.choi2020_end_to_end import kernel_predictions, per_iteration
from perfmod.studies.choi2020_what_if import device_sweep, gpus_per_node_sweep
from perfmod.studies.papers.choi2020 import ITERATIONS, paper_overhead, weak_scaling_comm


def test_paper_overheads():
    assert paper_overhead("jacobi2d") == 200e-6
    assert paper_overhead("minife") == 165e-6
    assert paper_overhead("minimd") == 148e-6
    assert paper_overhead("minife", "lassen", paper="002") == 820e-6
    assert paper_overhead("minife", "bridges", paper="002") == 1001e-6
    with pytest.raises(KeyError, match="available"):
        paper_overhead("minimd", paper="002")
    assert ITERATIONS == {"jacobi2d": 100, "minife": 200, "minimd": 100}


def test_end_to_end_sum_and_broadcast():
    comm = xr.DataArray([1e-4, 2e-4, 4e-4], dims="nodes", coords={"nodes": [1, 2, 4]})
    kern = xr.DataArray([3e-3, 5e-3], dims="device", coords={"device": ["a", "b"]})
    ds = end_to_end(comm, kern, 2e-4, iterations=100)
    assert ds.t_iter_predicted.dims == ("nodes", "device")
    assert float(ds.t_iter_predicted.sel(nodes=4, device="b")) == pytest.approx(4e-4 + 5e-3 + 2e-4)
    np.testing.assert_allclose(ds.t_total_predicted, 100 * ds.t_iter_predicted)
    np.testing.assert_allclose(ds.t_iter_predicted, ds.t_comm + ds.t_kernels + ds.t_overhead)
    with pytest.raises(ValueError, match="t_comm"):
        end_to_end(-1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="iterations"):
        end_to_end(1.0, 1.0, 0.0, iterations=0)


def test_end_to_end_takes_a_prediction_dataset():
    pred = predict(app_kernels("minife"), read_devices(), ["Tesla V100"])
    ds = end_to_end(1e-4, pred, 165e-6, ITERATIONS["minife"])
    assert float(ds.t_kernels.sel(device="Tesla V100")) == pytest.approx(float(pred.t_predicted.sum()))
    assert float(kernel_time(pred).sel(device="Tesla V100")) == float(ds.t_kernels.sel(device="Tesla V100"))


def test_comm_from_replay_slowest_rank_per_iteration():
    replay = xr.Dataset({"comm_time": (("model", "rank"), [[1.0, 3.0, 2.0], [0.5, 0.2, 0.1]])},
                        coords={"model": ["postal", "kmodel"], "rank": [0, 1, 2]})
    t = comm_from_replay(replay, iterations=100)
    assert t.dims == ("model",)
    np.testing.assert_allclose(t.values, [0.03, 0.005])
    ds = end_to_end(t, 4e-3, 2e-4, 100)  # a replay result flows into the end-to-end model
    assert float(ds.t_iter_predicted.sel(model="postal")) == pytest.approx(0.03 + 4e-3 + 2e-4)
    with pytest.raises(KeyError, match="comm_time"):
        comm_from_replay(xr.Dataset({"x": ("rank", [1.0])}))
    with pytest.raises(KeyError, match="rank"):
        comm_from_replay(xr.Dataset({"comm_time": ("proc", [1.0])}))


def test_analytic_comm_matches_the_comm_study():
    # the same K-model halo time computed two ways: endtoend.analytic_comm and the comm study's sweep
    ws = weak_scaling_comm(["jacobi2d", "minife"], ["summit", "bridges"], [2, 4], ["postal", "kmodel"],
                           progress=False)
    for app in ("jacobi2d", "minife"):
        for plat in ("summit", "bridges"):
            for n in (2, 4):
                p = int(ws.nprocs.sel(app=app, platform=plat, nodes=n))
                for model in ("postal", "kmodel"):
                    t = float(ws.t_comm_predicted.sel(app=app, platform=plat, nodes=n, model=model))
                    assert analytic_comm(app, plat, p, model=model) == pytest.approx(t, rel=1e-12)
    assert analytic_comm("jacobi2d", "summit", 1) == 0.0


def test_paper_kernel_counts_closed_form():
    assert {a: tuple(app_kernels(a).index) for a in APP_KERNELS} == APP_KERNELS
    n = 16384 ** 2
    j = app_kernels("jacobi2d")
    assert j.loc["STENCIL", "compute_ops"] == 6 * n  # 3 DADD + 1 DFMA + 1 DMUL per cell (Eq. 6)
    assert j.loc["STENCIL", "dram_bytes"] == 16 * n
    assert j.loc["STENCIL", "opmix_efficiency"] == pytest.approx(0.6)
    m = app_kernels("minife")
    rows = 200 ** 3
    assert m.loc["MATVEC", "compute_ops"] == 54 * rows and m.loc["MATVEC", "count"] == 1
    assert m.loc["DOT", "count"] == 2 and m.loc["WAXPBY", "count"] == 3
    md = app_kernels("minimd")
    assert md.loc["PACK", "count"] == 12
    assert app_counts("minimd").loc["PACK", "items"] * 6 == minimd_border_atoms(64).sum()
    assert md.loc["PACK", "dominant_op"] == "fp_64" and md.loc["UNPACK", "dominant_op"] == "integer"
    with pytest.raises(KeyError, match="known"):
        app_kernels("lulesh")


def test_memory_bound_kernels_take_bytes_over_bandwidth():
    pred = predict(app_kernels("jacobi2d"), read_devices(), ["Tesla V100", "Tesla P100"])
    assert float(pred.t_predicted.sel(kernel="STENCIL", device="Tesla V100")) == pytest.approx(16 * 16384 ** 2 / 900e9)
    assert float(pred.t_predicted.sel(kernel="STENCIL", device="Tesla P100")) == pytest.approx(16 * 16384 ** 2 / 732e9)


def test_minife_kernels_memory_bound_on_v100():
    # 000 §6.2: "QRoof classifies all kernels as memory-bound"
    pred = kernel_predictions(["minife"], ["Tesla V100"])
    assert set(pred.bound.values.ravel()) == {"memory"}


def test_what_if_devices_figure15():
    ds = device_sweep()
    base = ds.t_predicted.sel(device="Tesla V100")
    np.testing.assert_allclose(ds.t_predicted.sel(device="A"), base)  # 2x flop/s: memory-bound, unchanged
    np.testing.assert_allclose(ds.t_predicted.sel(device="B"), base)
    np.testing.assert_allclose(ds.t_predicted.sel(device="C"), base / 2)  # 2x bandwidth halves
    np.testing.assert_allclose(ds.t_predicted.sel(device="D"), base * 2)
    it = ds.t_iter_predicted
    assert float(it.sel(device="C")) == pytest.approx(float(ds.t_comm + base.sum() / 2 + ds.t_overhead.sel(device="C")))
    # MATVEC moves the iteration time most (000 §6.2)
    change = (ds.t_predicted.sel(device="D") - base)
    assert str(change.idxmax("kernel").values) == "MATVEC"


def test_what_if_broadcasts_over_a_sweep_dimension():
    devs = devices_dataset(read_devices(), ["Tesla V100"])
    factor = xr.DataArray([0.5, 1.0, 2.0, 4.0], dims="bw_factor", coords={"bw_factor": [0.5, 1.0, 2.0, 4.0]})
    devs["GBSEC - DRAM"] = devs["GBSEC - DRAM"] * factor
    pred = predict(app_kernels("minife"), devs)
    assert set(pred.t_predicted.dims) == {"kernel", "device", "bw_factor"}
    t = pred.t_predicted.sel(kernel="MATVEC", device="Tesla V100")
    np.testing.assert_allclose(t * factor, t.sel(bw_factor=1.0))
    assert set(DEVICE_COLUMNS) <= set(devs.data_vars)


def test_gpus_per_node_figure14():
    ds = gpus_per_node_sweep()
    np.testing.assert_array_equal(ds.nodes * ds.gpus_per_node, 256)
    mr = ds.t_comm.sel(model="maxrate").values
    assert np.all(np.diff(mr) > 0)  # 000 §6.1: max-rate communication grows with GPUs per node
    po = ds.t_comm.sel(model="postal")
    assert float(po.sel(gpus_per_node=16)) < float(po.sel(gpus_per_node=2))  # postal: fatter nodes, less
    # iteration time barely affected: kernels dominate
    assert float((ds.t_comm / ds.t_iter_predicted).max()) < 0.15


def test_per_iteration_shares_match_the_paper():
    ds = per_iteration(["jacobi2d", "minife", "minimd"], ["summit", "lassen", "bridges"], [1, 64], ["kmodel"],
                       progress=False)
    last = ds.sel(nodes=64, model="kmodel")
    # 000 §5.1, §5.2: kernels dominate Jacobi2D and MiniFE; §5.3: communication matters most for MiniMD
    for app in ("jacobi2d", "minife"):
        assert bool((last.t_kernels.sel(app=app) > 2 * last.t_comm.sel(app=app)).all())
    assert bool((last.t_comm.sel(app="minimd") > last.t_kernels.sel(app="minimd")).all())
    # weak scaling: kernels and overhead constant, only communication changes
    np.testing.assert_allclose(ds.t_kernels.sel(app="minife", platform="lassen"),
                               float(ds.t_kernels.sel(app="minife", platform="lassen").mean()))
    assert float(ds.t_overhead.sel(app="jacobi2d").max()) == 200e-6
    np.testing.assert_allclose(ds.t_total_predicted, ds.iterations * ds.t_iter_predicted)


def test_cg_iteration_002():
    ds = cg_iteration(nodes=[1, 2])
    p = int(ds.nprocs.sel(platform="lassen", nodes=2))
    assert p == 8
    assert float(ds.t_allreduce.sel(platform="lassen", nodes=2)) == pytest.approx(
        2 * float(allreduce_recursive_doubling(8, 8, "lassen")))
    assert float(ds.t_overhead.sel(platform="bridges", nodes=1)) == 1001e-6
    np.testing.assert_allclose(ds.t_iter_predicted, ds.t_allreduce + ds.t_halo + ds.t_kernels + ds.t_overhead)
    assert float(ds.t_kernels.sel(platform="bridges")) > float(ds.t_kernels.sel(platform="lassen"))  # P100 slower


def test_replayed_communication_against_the_analytic_model():
    from perfmod.studies.choi2020_end_to_end import replay_comm

    apps, plats, nodes = ["jacobi2d", "minife", "minimd"], ["summit"], [2, 256]
    halo = replay_comm(apps, plats, nodes, allreduces=0, progress=False)
    full = replay_comm(apps, plats, nodes, progress=False)
    analytic = weak_scaling_comm(apps, plats, nodes, ["kmodel"], progress=False).t_comm_predicted.sel(model="kmodel")
    # the analytic model charges a rank its own sends; the replay also waits for late incoming messages,
    # so it is never below; at the paper's scale (256 nodes) the slowest rank never waits and the two agree
    assert np.all(halo >= analytic * (1 - 1e-12))
    two = ["jacobi2d", "minife"]
    np.testing.assert_allclose(halo.sel(app=two, nodes=256), analytic.sel(app=two, nodes=256), rtol=1e-9)
    assert np.all(halo.sel(app="minimd") > analytic.sel(app="minimd"))  # its six swaps wait for each other
    assert np.all(halo.sel(app="minimd", nodes=256) / analytic.sel(app="minimd", nodes=256) > 1.05)
    assert np.all(full.sel(app=two) > halo.sel(app=two))  # plus the allreduces of each iteration
    np.testing.assert_allclose(full.sel(app="minimd"), halo.sel(app="minimd"))  # MiniMD has no allreduce
