"""Skeleton mode (paper 004 §III, §V): measure / model / hybrid, virtual ranks, traces that replay."""

import json
import subprocess
import sys
import time

import numpy as np
import pytest

from perfmod.measure.host import mpiexec_path
from perfmod.measure.proxies.hpccg import generate_matrix, run_hpccg
from perfmod.measure.proxies.lulesh import run_lulesh
from perfmod.measure.proxies.minimd_lj import run_minimd
from perfmod.measure.regions import Recorder
from perfmod.measure.regions.skeleton import (
    Skeleton,
    SkeletonError,
    active_skeleton,
    skeleton_function,
    skeleton_region,
)
from perfmod.measure.regions.virtual import run_virtual
from perfmod.replay import replay
from perfmod.trace.core import Call
from perfmod.trace.formats.npz import read_npz

HPCCG_MODELS = {"sparsemv": 1e-3, "ddot": 1e-5, "waxpby": 2e-5, "generate": 0.0}
MINIMD_MODELS = {"force": 1e-3, "neighbor": 2e-3, "integrate": 1e-5, "migrate": 1e-5, "borders": 1e-5}
LULESH_MODELS = {"init_nodes": 1e-5, "volume_forces": 3e-4, "gather_forces": 5e-5, "integrate": 2e-5,
                 "update_elements": 2e-4, "constraints": 1e-4}


def _busy(ns):
    t = time.perf_counter_ns()
    while time.perf_counter_ns() - t < ns:
        pass


def _sequence(trace, with_bytes=True):
    cols = [trace.rank, trace.call, trace.peer, trace.tag, trace.comm] + ([trace.nbytes] if with_bytes else [])
    return np.stack(cols)


def _record(mode, program, models):
    from mpi4py import MPI

    sk = Skeleton(mode, models, min_samples=2, rse_threshold=0.5)
    comm = sk.record(MPI.COMM_WORLD)
    with sk:
        res = program(comm)
    return comm.recorder.gather(0), sk, res


@pytest.mark.parametrize("app", ["hpccg", "minimd", "lulesh"])
def test_model_and_hybrid_make_the_same_mpi_calls_as_measure(app):
    if app == "hpccg":
        program, models, same_bytes = (lambda c: run_hpccg(c, 8, iterations=4)), HPCCG_MODELS, True
    elif app == "lulesh":  # the time step's stand-in keeps the Allreduce; message sizes follow the mesh
        program, models, same_bytes = (lambda c: run_lulesh(c, 4, iterations=12)), LULESH_MODELS, True
    else:
        program, models, same_bytes = (lambda c: run_minimd(c, 4, steps=12, rebuild_every=5)), MINIMD_MODELS, False
    measured, sk_m, _ = _record("measure", program, models)
    modeled, sk_p, _ = _record("model", program, models)
    hybrid, sk_h, _ = _record("hybrid", program, models)
    assert len(measured) > 10
    ref = _sequence(measured, same_bytes)
    np.testing.assert_array_equal(ref, _sequence(modeled, same_bytes))
    np.testing.assert_array_equal(ref, _sequence(hybrid, same_bytes))
    assert all(st.modeled == 0 for st in sk_m.stats.values())
    assert all(st.run == 0 for st in sk_p.stats.values())
    assert sum(st.modeled for st in sk_h.stats.values()) > 0 and sum(st.run for st in sk_h.stats.values()) > 0


def test_hpccg_model_mode_time_is_the_sum_of_the_region_models():
    # timed section: sparsemv 1 + 4, ddot 1 + 3 + 4 + 1, waxpby 1 + 4 + 2 * 4 (paper-free closed form)
    vr = run_virtual(lambda c: run_hpccg(c, 8, iterations=4), 1,
                     lambda r: Skeleton("model", HPCCG_MODELS, clock="modeled"))
    expected = 5 * 1e-3 + 9 * 1e-5 + 13 * 2e-5
    assert vr.results[0]["virtual_time"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert vr.stats.loc["sparsemv", "modeled"] == 5 and vr.stats.loc["ddot", "modeled"] == 9
    ds = replay(vr.traces["predicted"], "summit")
    assert float(ds.compute_time.max()) == pytest.approx(expected, rel=1e-6)


def test_invariants_reach_every_modeled_call_and_a_call_s_own_value_wins():
    def per_rank(p):  # seconds: 1 ms per rank sharing the node, times the call's n
        return 1e-3 * p["ranks_per_node"] * p["n"]

    sk = Skeleton("model", {"r": per_rank}, invariants={"ranks_per_node": 2}, interval=None)
    assert sk.predict("r", {"n": 3}) == pytest.approx((6e-3,) * 3)
    assert sk.predict("r", {"n": 3, "ranks_per_node": 1}) == pytest.approx((3e-3,) * 3)
    with pytest.raises(KeyError):
        Skeleton("model", {"r": per_rank}, interval=None).predict("r", {"n": 3})


def test_virtual_ranks_replay_at_scale_with_interval_bounds():
    from perfmod.models.compute import fit_perfmod

    rng = np.random.default_rng(1)
    n = np.repeat([512.0, 1000, 1728, 2744, 4096, 5832], 4)
    frame = {"n": n, "time": 2e-7 * n * (1 + 0.05 * rng.standard_normal(len(n)))}
    model = fit_perfmod(frame, "time", ["n"], segments="none")
    models = {**HPCCG_MODELS, "sparsemv": model}
    shared = {}
    vr = run_virtual(lambda c: run_hpccg(c, 10, iterations=3), 64,
                     lambda r: Skeleton("model", models, clock="modeled", cache=shared),
                     variants=("predicted", "lower", "upper"))
    tr = vr.traces["predicted"]
    assert tr.nprocs == 64
    assert set(tr.peer[(tr.call == Call.ISEND) & (tr.rank == 0)]) == {1}  # the bottom block: one neighbour
    assert set(tr.peer[(tr.call == Call.ISEND) & (tr.rank == 5)]) == {4, 6}
    out = {v: float(replay(t, "summit").total_time.max()) for v, t in vr.traces.items()}
    assert out["lower"] < out["predicted"] < out["upper"]
    assert vr.stats.loc["sparsemv", "evaluations"] == 1  # one parameter point, cache shared by the ranks


def test_hybrid_switches_to_the_model_once_the_relative_standard_error_is_small():
    # a threshold any timing meets: the model takes over right after min_samples
    with Skeleton("hybrid", {"steady": 7e-3}, rse_threshold=10.0, min_samples=4) as sk:
        for _ in range(20):
            with skeleton_region("steady", n=1) as run:
                if run:
                    _busy(200_000)
    st = sk.stats["steady"]
    assert st.run == 4 and st.modeled == 16 and st.switched_after == 4
    assert st.modeled_s == pytest.approx(16 * 7e-3)  # the region's model took over, not the sample mean
    # a realistic threshold: it switches once the samples' relative standard error is below it
    with Skeleton("hybrid", {"steady": 7e-3}, rse_threshold=0.2, min_samples=3, max_samples=40) as sk1:
        for _ in range(60):
            with skeleton_region("steady", n=1) as run:
                if run:
                    _busy(200_000)
    st1 = sk1.stats["steady"]
    s = sk1._samplers[("steady", (("n", 1),))]
    assert s.done and 3 <= st1.run == s.n <= 40 and st1.run + st1.modeled == 60
    assert s.rse() < 0.2 or s.n == 40
    # no model: SMPI_SAMPLE injects the sample mean of that parameter point
    with Skeleton("hybrid", rse_threshold=10.0, min_samples=4) as sk2:
        for _ in range(10):
            with skeleton_region("steady", n=1) as run:
                if run:
                    _busy(200_000)
    st2 = sk2.stats["steady"]
    assert st2.run == 4 and st2.modeled == 6
    assert st2.modeled_s / 6 == pytest.approx(st2.run_s / 4, rel=1e-9)
    # a threshold never reached: the region runs until max_samples
    with Skeleton("hybrid", rse_threshold=1e-9, min_samples=2, max_samples=5) as sk3:
        for _ in range(8):
            with skeleton_region("noisy", n=1) as run:
                if run:
                    _busy(int(np.random.default_rng().integers(50_000, 300_000)))
    assert sk3.stats["noisy"].run == 5 and sk3.stats["noisy"].modeled == 3


def test_control_flow_regions_stand_ins_and_clear_errors():
    calls = []

    @skeleton_function("count", params=("n",), skippable=False)
    def count(n):
        calls.append(n)
        return n + 1

    @skeleton_function("dot", params=lambda x: {"n": len(x)}, stand_in=lambda x: 1.0)
    def dot(x):
        return float(x @ x)

    with Skeleton("model", {"dot": 1e-3}) as sk:
        assert count(3) == 4 and calls == [3]  # steers control flow: always runs
        assert dot(np.arange(3.0)) == 1.0  # skipped: the stand-in's value
        assert sk.modeled_time == pytest.approx(1e-3, abs=5e-5)
        with pytest.raises(SkeletonError, match="region 'other' has no model; models are given for \\['dot'\\]"):
            with skeleton_region("other", n=1):
                pass
    assert active_skeleton() is None
    assert dot(np.arange(3.0)) == 5.0  # no skeleton: the body runs


def test_model_parameter_missing_is_named():
    from perfmod.models.compute import fit_constant_mean

    model = fit_constant_mean({"n": [1.0, 2.0, 3.0], "time": [1.0, 1.1, 0.9]}, "time", ["n"])
    with Skeleton("model", {"r": model}), pytest.raises(SkeletonError, match="region 'r': the model needs "
                                                                            "parameter 'n'"):
        with skeleton_region("r", m=1):
            pass


def test_measure_mode_records_region_calls(tmp_path):
    with Recorder(None, application="hpccg") as rec, Skeleton("measure"):
        run_hpccg(_null_world(), 6, iterations=2)
    df = rec.to_dataframe()
    assert set(df.region) == {"generate", "sparsemv", "ddot", "waxpby"}
    assert (df.loc[df.region == "waxpby", "n"] == 216).all()


def _null_world():
    from perfmod.measure.regions.virtual import NullComm

    class World(NullComm):
        def Waitall(self, reqs):  # noqa: N802
            pass

    return World(0, 1)


def test_hpccg_matrix_is_the_27_point_stencil():
    A, b = generate_matrix(4, 4, 4, rank=0, nprocs=1)
    nnz = np.diff(A.indptr)
    assert nnz.max() == 27 and nnz.min() == 8  # interior row, corner row
    assert A.diagonal(k=16).tolist() == [27.0] * 64  # column offset = one ghost plane
    assert np.allclose(A @ np.ones(A.shape[1]), b)
    A2, _ = generate_matrix(4, 4, 2, rank=0, nprocs=2)
    assert np.diff(A2.indptr).max() == 27 and A2.shape == (32, 64)


@pytest.mark.parametrize("nx,ny,nz,rank,nprocs", [(3, 4, 2, 0, 1), (3, 2, 3, 0, 3), (2, 3, 2, 1, 3), (4, 1, 2, 2, 3)])
def test_hpccg_matrix_equals_its_definition_row_by_row(nx, ny, nz, rank, nprocs):
    """Every row as HPCCG's generate_matrix defines it: 27 on the diagonal, -1 for each neighbour inside the
    global domain, columns in the extended vector [ghost plane below | local rows | ghost plane above]."""
    A, b = generate_matrix(nx, ny, nz, rank=rank, nprocs=nprocs)
    g = nx * ny
    dense = np.zeros((nx * ny * nz, nx * ny * (nz + 2)))
    for iz, iy, ix in np.ndindex(nz, ny, nx):
        row = ix + nx * (iy + ny * iz)
        for dz, dy, dx in np.ndindex(3, 3, 3):
            jx, jy, jz = ix + dx - 1, iy + dy - 1, iz + dz - 1
            if 0 <= jx < nx and 0 <= jy < ny and 0 <= rank * nz + jz < nprocs * nz:
                dense[row, g + jx + nx * (jy + ny * jz)] = 27.0 if (dx, dy, dz) == (1, 1, 1) else -1.0
    assert A.indices.dtype == np.int32 and np.all(np.diff(A.indices[A.indptr[0]:A.indptr[1]]) > 0)
    assert np.array_equal(A.toarray(), dense)
    assert np.array_equal(b, dense.sum(axis=1))


def _two_ranks_measured(tmp_path, module, args):
    """Run ``module`` on 2 MPI ranks in measure mode with its trace; rank 0's JSON result and the trace."""
    out = tmp_path / "measured.npz"
    cmd = [str(mpiexec_path()), "-n", "2", sys.executable, "-m", module, *args, "--mode", "measure",
           "--trace-out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    assert res["nprocs"] == 2 and res["mode"] == "measure" and res["time"] > 0
    return res, read_npz(out)


@pytest.mark.mpi
def test_two_ranks_measured_trace_matches_the_virtual_skeleton(tmp_path):
    _, measured = _two_ranks_measured(tmp_path, "perfmod.measure.proxies.hpccg", ["--n", "6", "--iterations", "3"])
    vr = run_virtual(lambda c: run_hpccg(c, 6, iterations=3), 2, lambda r: Skeleton("model", HPCCG_MODELS))
    np.testing.assert_array_equal(_sequence(measured), _sequence(vr.traces["predicted"]))
    ds = replay(vr.traces["predicted"], "summit")
    assert float(ds.total_time.max()) > 4 * 1e-3  # four sparsemv calls after the setup exchange


@pytest.mark.mpi
def test_lulesh_two_ranks_keep_the_sedov_physics_and_match_the_virtual_skeleton(tmp_path):
    from perfmod.measure.proxies.sedov import run_shared

    res, measured = _two_ranks_measured(tmp_path, "perfmod.measure.proxies.lulesh",
                                        ["--size", "4", "--iterations", "10"])
    assert res["app"] == "lulesh"
    # the halo exchange gives what the one-process Sedov kernels give (same sums, other order)
    ref = run_shared(4, 4, 4, 10, workers=1)
    keys = ["e_internal", "e_kinetic", "x_moment", "dt"]
    np.testing.assert_allclose([res[k] for k in keys], [ref[k] for k in keys], rtol=1e-10)
    vr = run_virtual(lambda c: run_lulesh(c, 4, iterations=10), 2, lambda r: Skeleton("model", LULESH_MODELS))
    seq = _sequence(measured)
    np.testing.assert_array_equal(seq, _sequence(vr.traces["predicted"]))
    assert int(np.sum(seq[1] == Call.ISEND)) == 2 * 2 * (10 + 1)  # two ranks, reverse and forward, setup + steps


def _eiger_region_models(directory):
    """Eiger models of the four HPCCG regions on an exact law (time = c n), written as ``<region>.json``."""
    import pandas as pd

    from perfmod.models.compute import fit_compute_model, write_eiger_model

    n = np.repeat([216.0, 512, 1000, 1728, 2744, 4096], 3)
    models = {}
    for region, c in {"sparsemv": 3e-8, "ddot": 2e-9, "waxpby": 4e-9, "generate": 5e-8}.items():
        frame = {"n": n, "time": c * n * (1 + 1e-3 * np.tile([-1.0, 0.0, 1.0], 6))}
        models[region] = fit_compute_model(pd.DataFrame(frame), "time", ["n"], method="eiger")
        write_eiger_model(models[region], directory / f"{region}.json")
    return models


def test_models_directory_reads_back_the_eiger_models(tmp_path):
    import pandas as pd

    from perfmod.measure.proxies.skeleton_cli import read_models
    from perfmod.models.compute import EigerModelFileError

    written = _eiger_region_models(tmp_path)
    models = read_models(tmp_path)
    assert sorted(models) == sorted(written)
    pts = pd.DataFrame({"n": [343.0, 1331.0, 5000.0]})
    for region, model in written.items():
        np.testing.assert_allclose(models[region].predict(pts).predicted, model.predict(pts).predicted, rtol=1e-12)
    assert models["sparsemv"].predict(pd.DataFrame({"n": [1331.0]})).predicted[0] == pytest.approx(3e-8 * 1331,
                                                                                                     rel=1e-2)
    with pytest.raises(FileNotFoundError, match="not a directory"):
        read_models(tmp_path / "sparsemv.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no model files"):
        read_models(tmp_path / "empty")
    (tmp_path / "ddot.txt").write_text("{ not json\n")
    with pytest.raises(ValueError, match="two files for region 'ddot'"):
        read_models(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "ddot.json").write_text('{"metric_names": ["n"]}\n')
    with pytest.raises(EigerModelFileError, match="ddot.json"):
        read_models(bad)


def test_cli_model_mode_uses_the_model_files_and_prints_a_probe_report(tmp_path, capsys):
    """``--mode model --models DIR`` (one rank, in-process): every sparsemv call costs the model's time; the
    result line carries the interference report that run_mpi classifies."""
    import pandas as pd

    from perfmod.measure.interference import FIELDS, classify
    from perfmod.measure.proxies.hpccg import main

    models = _eiger_region_models(tmp_path)
    main(["--n", "6", "--iterations", "3", "--mode", "model", "--models", str(tmp_path)])
    out = json.loads([ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("{")][-1])
    regions = {r["region"]: r for r in out["regions"]}
    per_call = float(models["sparsemv"].predict(pd.DataFrame({"n": [216.0]})).predicted[0])
    assert regions["sparsemv"]["run"] == 0 and regions["sparsemv"]["modeled"] == 4  # 1 + 3 iterations
    assert regions["sparsemv"]["modeled_s"] == pytest.approx(4 * per_call, rel=1e-9)
    rep = out["interference"]
    assert set(rep) == set(FIELDS) and len(rep["wall_s"]) == 1 and rep["wall_s"][0] >= out["time"] > 0
    assert classify(rep, cores=1).reason  # a report the runner can classify


def test_a_negative_prediction_is_clipped_counted_and_warned():
    from perfmod.models.compute import ExtrapolationWarning

    sk = Skeleton("model", {"r": lambda p: 1e-3 - 1e-4 * p["n"]}, interval=None)
    assert sk.predict("r", {"n": 5}) == pytest.approx((5e-4,) * 3) and sk.stats["r"].clipped == 0
    with pytest.warns(ExtrapolationWarning, match=r"region 'r': the model predicts -0.001 s .* clipped to 0"):
        assert sk.predict("r", {"n": 20}) == (0.0, 0.0, 0.0)
    assert sk.stats["r"].clipped == 1 and "clipped" in sk.summary().columns
