"""The anger_skeletons study (paper 004 §VI): interface variables, paper table, figures."""

import numpy as np
import pytest

from perfmod.core.io import check_conventions
from perfmod.core.paperdata import read_table
from perfmod.studies import anger_skeletons as study
from perfmod.studies.anger_skeleton_steps import app_spec, timed_section
from perfmod.workflow import notebooks as nbs


def test_paper_numbers_are_transcribed():
    t = read_table("anger_results").set_index(["quantity", "app", "method"])["value"]
    assert t[("skeleton_error", "all", "eiger")] == 6.08 and t[("skeleton_error", "all", "loop")] == 9.17
    assert t[("skeleton_speedup", "all", "eiger")] == 12.5 and t[("skeleton_speedup", "all", "loop")] == 12.1
    assert t[("region_r2", "minife_dirichlet", "eiger")] == 0.983
    assert t[("region_error", "minife_dirichlet", "loop")] == 6.73
    # the abstract's "33.7 % more accurate" is 1 - 6.08 / 9.17
    assert 1 - 6.08 / 9.17 == pytest.approx(t[("accuracy_gain_over_baseline", "all", "eiger")] / 100, abs=5e-4)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="hpccg: sizes \\[8\\] are both training and held-out"):
        study.run(apps=["hpccg"], hpccg_train=[6, 8], hpccg_test=[8])
    with pytest.raises(ValueError, match="unknown app 'minife'"):
        app_spec("minife", 3)


def test_timed_section_drops_the_setup_compute():
    from perfmod.measure.proxies.minimd_lj import run_minimd
    from perfmod.measure.regions.skeleton import Skeleton
    from perfmod.measure.regions.virtual import run_virtual

    models = {"migrate": 1000.0, "borders": 100.0, "neighbor": 10.0, "force": 1.0, "integrate": 0.001}
    vr = run_virtual(lambda c: run_minimd(c, 4, steps=2, weak=True), 2,
                     lambda r: Skeleton("model", models, clock="modeled"))
    tr = vr.traces["predicted"]
    # setup: migrate before the first MPI call (never in the trace), then borders, neighbor, force before the barrier
    assert tr.compute.sum() == pytest.approx(2 * (100 + 10 + 1 + 2 * (2 * 0.001 + 1)))
    assert timed_section(tr).compute.sum() == pytest.approx(2 * 2 * (2 * 0.001 + 1))
    assert vr.results[0]["virtual_time"] == pytest.approx(2 * (2 * 0.001 + 1))


@pytest.mark.mpi
def test_run_with_the_smoke_parameters_gives_the_interface_variables():
    nb = nbs.notebooks_dir() / "anger_skeletons.ipynb"
    ds = study.run(**nbs.smoke_parameters(nb))
    check_conventions(ds)
    for name in ("runtime_measured", "runtime_predicted"):
        assert {"app", "size", "method"} <= set(ds[name].dims)
        assert ds[name].dims == ds.runtime_measured.dims
    assert set(ds.method.values) >= {"eiger", "perfmod", "loop", "mean"}
    assert ds.held_out.dims == ("app", "size") and ds.held_out.dtype == bool
    assert ds.skeleton_speedup.dims == ("app", "size")
    assert set(ds.app.values) == {"hpccg", "minimd"} and list(ds.nprocs.values) == [1, 2]
    # the held-out sizes are those of the smoke set, one beyond the training range per app
    assert ds.problem_size.where(ds.held_out).max("size").values.tolist() == [12.0, 7.0]
    ok = np.isfinite(ds.runtime_measured) & (ds.problem_size > 0)
    assert bool(ok.any()) and bool((ds.runtime_predicted.where(ok) > 0).all())
    err = (ds.runtime_predicted - ds.runtime_measured) / ds.runtime_measured
    np.testing.assert_allclose(err.values, ds.runtime_error.values, equal_nan=True)
    assert bool((ds.scaled_runtime_lower <= ds.scaled_runtime_predicted).all())
    assert bool((ds.scaled_runtime_predicted <= ds.scaled_runtime_upper).all())
    assert set(study.figures(ds)) == {"fig6_region_fit", "fig7_threshold", "fig8_skeleton_error", "fig9_speedup",
                                      "scale_out"}
    table = study.summary(ds)
    assert table.loc[("paper", "all"), "eiger"] == pytest.approx(0.0608)


def test_lulesh_spec_runs_its_skeleton_and_replays():
    from perfmod.measure.proxies.lulesh import REGIONS
    from perfmod.studies.anger_skeleton_steps import skeleton_runtime

    spec = app_spec("lulesh", 3)
    assert spec.module == "perfmod.measure.proxies.lulesh" and dict(spec.regions) == REGIONS
    assert spec.args(12) == ["--size", 12, "--iterations", 3] and spec.extent == "n"
    models = dict.fromkeys(REGIONS, 1e-3)  # 6 regions x 3 steps of modeled compute in the timed section
    res = skeleton_runtime(spec, 4, 2, models, "summit", reps=1)
    assert res.runtime > 6 * 3 * 1e-3
    assert res.stats["modeled"].sum() == 2 * 6 * 3 and res.wall > 0


@pytest.mark.mpi
def test_run_with_lulesh_measures_fits_and_replays_it():
    ds = study.run(apps=["lulesh"], lulesh_train=[4, 5, 6], lulesh_test=[7], lulesh_iterations=3, reps=1,
                   skeleton_reps=1, scale_nprocs=[4], lulesh_scale_size=3, progress=False)
    check_conventions(ds)
    assert ds.app.values.tolist() == ["lulesh"] and ds.held_out.sel(app="lulesh").values.sum() == 1
    assert {f"lulesh.{r}" for r in ("volume_forces", "constraints")} <= set(ds.region.values)
    ok = np.isfinite(ds.runtime_measured)
    assert bool(ok.any()) and bool((ds.runtime_predicted.where(ok) > 0).all())
    assert "threshold" not in ds.dims and "fig6_region_fit" in study.figures(ds)
