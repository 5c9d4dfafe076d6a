"""The study contract (issue 10 item 4) of the measuring studies; their interleaved run orders (issue 13 item 3).

The dataset ``perfmod.studies.<x>.run`` returns in the notebook's smoke run
(papermill, smoke parameters from the notebook's metadata, output paths
redirected to a temporary directory: the session's one run, ``conftest.py``),
read back from the file the notebook wrote, has units on every variable and
the provenance attributes, and ``figures(ds)`` draws from it alone.  The run
order of a design mixes training and held-out runs, never puts two
repetitions of a configuration back to back, and depends only on the seed.
"""

from __future__ import annotations

import importlib

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr

from perfmod.campaign.design import interleaved_order, position_of
from perfmod.core.io import REQUIRED_GLOBAL_ATTRS, check_conventions, read_dataset
from perfmod.measure.interference import usable_cores
from perfmod.workflow import notebooks as nbs
from perfmod.workflow.catalog import studies

#: measuring study -> launches MPI ranks with its smoke parameters (the notebooks' metadata: perfmod.workflow.catalog)
STUDIES = {s.name: s.smoke_mpi for s in studies() if s.measuring}


def _run(name: str, smoke_run_of) -> xr.Dataset:
    """The study's smoke dataset, as its notebook's smoke run wrote it (one run per session: conftest.py)."""
    return read_dataset(smoke_run_of(name).dataset)


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.mpi] if mpi else [])
                                  for n, mpi in STUDIES.items()])
def test_run_returns_a_documented_dataset_and_figures_come_from_it(name, smoke_run_of):
    ds = _run(name, smoke_run_of)
    assert isinstance(ds, xr.Dataset) and ds.data_vars
    check_conventions(ds)
    for var in ds.data_vars.values():
        assert var.attrs["units"] and "1e9" not in var.attrs["units"], var.name
    assert all(ds.attrs[a] for a in REQUIRED_GLOBAL_ATTRS)
    assert ds.attrs["study"] == name
    assert ds.attrs["raw_files"]
    # the validation pairs keep their names
    assert any(v.endswith("_measured") and v.replace("_measured", "_predicted") in ds for v in ds.data_vars)
    study = importlib.import_module(f"perfmod.studies.{name}")
    figs = study.figures(ds.copy(deep=True))
    assert figs and all(isinstance(f, plt.Figure) for f in figs.values())
    plt.close("all")


def _norm(v):
    return [_norm(x) for x in v] if isinstance(v, list | tuple) else v


def test_run_passes_every_notebook_parameter_it_declares():
    """Every parameter of run() is in the notebook's parameters cell with the same default (never re-typed)."""
    import ast
    import inspect

    for name in STUDIES:
        study = importlib.import_module(f"perfmod.studies.{name}")
        nb = nbs.notebooks_dir() / f"{name}.ipynb"
        _, cell = nbs.parameters_cell(nb)
        defaults = {s.target.id: ast.literal_eval(s.value) for s in ast.parse(cell.source).body}
        for pname, par in inspect.signature(study.run).parameters.items():
            assert pname in defaults, f"{name}: run({pname}) is not a notebook parameter"
            want = par.default
            got = defaults[pname]
            assert _norm(got) == _norm(want) or (want is None and got in ({}, "", [])), (name, pname, got, want)
        assert "seed" in defaults, f"{name}: no seed parameter"


def test_interleaved_order_mixes_sets_spreads_reps_and_is_seeded():
    reps = [3] * 6 + [1] * 4  # six training configurations x 3, four held out x 1
    order = interleaved_order(reps, seed=7)
    assert sorted(order) == sorted((i, r) for i, n in enumerate(reps) for r in range(n))
    assert interleaved_order(reps, seed=7) == order
    assert interleaved_order(reps, seed=8) != order
    held = [i >= 6 for i, _ in order]
    first, last = held.index(True), len(held) - 1 - held[::-1].index(True)
    assert any(not h for h in held[:last]) and any(not h for h in held[first:])  # training runs before and after
    assert all(a[0] != b[0] for a, b in zip(order, order[1:], strict=False))  # never back to back
    # stratified: a configuration's r-th of n repetitions falls in the r-th n-th of the run (before swaps: +-1)
    pos = {run: k for k, run in enumerate(order)}
    for i in range(6):
        p = [pos[(i, r)] for r in range(3)]
        assert p[0] < len(order) / 3 + 2 and p[2] > 2 * len(order) / 3 - 2


def test_interleaved_order_two_configurations_alternate():
    order = interleaved_order([4, 4], seed=0)
    assert [i for i, _ in order] in ([0, 1] * 4, [1, 0] * 4)
    with pytest.raises(ValueError, match=">= 0"):
        interleaved_order([1, -1], seed=0)


def test_position_of_maps_the_order_onto_the_design():
    order = [(1, 0), (0, 0), (1, 1), (0, 1)]
    pos = position_of(order, (2, 2))
    np.testing.assert_array_equal(pos, [[1, 3], [0, 2]])


@pytest.mark.mpi
def test_gol_design_interleaves_training_and_held_out_runs(smoke_run_of):
    """The GOL study measured its training cases first (issue 13); now the dataset shows them mixed."""
    ds = _run("sharif_gol", smoke_run_of)
    train = ds.train_run_index.values.ravel()
    held = ds.run_index.values.ravel()
    assert sorted(np.concatenate([train, held]).tolist()) == list(range(train.size + held.size))
    assert held.min() < train.max() and train.min() < held.max()
    runs = 3 * 2 * 1 + 1 * 2 * 1  # smoke: 3 training and 1 held-out case, 2 rank counts, 1 repetition
    expect = position_of(interleaved_order([1] * 8, seed=0), (4, 2, 1))
    assert train.size + held.size == runs
    np.testing.assert_array_equal(ds.run_index.values[0], expect[3])  # deterministic for the seed


def test_sasidharan_order_is_the_shared_design():
    from perfmod.studies import sasidharan_sedov as sedov
    from perfmod.studies.papers import sasidharan as sc

    cfg = (sedov.design([(4, 4, 4), (5, 5, 5)], [1, 2], ["z"], label="train", reps=3)
           + sedov.design([(6, 6, 6)], [1, 2], ["z"], label="test", reps=1))
    order = sc.run_order(cfg, reps=3, seed=3)
    assert order == interleaved_order([3, 3, 3, 3, 1, 1], 3)
    sets = [cfg[i]["set"] for i, _ in order]
    assert sets[0] == "train" or sets[-1] == "train"
    assert "test" in sets[: len(sets) - 1] and sets.count("test") == 2


# --- issue 13 interface: measured values from clean runs only -------------------------------------------------

#: converted studies -> their run dimensions (the ``interfered`` flag is over them)
CLEAN_RUN_DIMS = {"sharif_gol": ("case", "nprocs", "rep"), "sharif_triton": ("event", "factor", "nprocs", "rep"),
                  "local_jacobi2d": ("block", "nprocs", "rep"), "sasidharan_sedov": ("run",),
                  "sasidharan_quicksilver": ("run",), "local_calibration": ("pairs", "rep"),
                  "anger_skeletons": ("app", "size", "nprocs", "rep")}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.mpi] if STUDIES[n] else [])
                                  for n in CLEAN_RUN_DIMS])
def test_measuring_study_flags_interfered_runs(name, smoke_run_of):
    ds = _run(name, smoke_run_of)
    assert "interfered" in ds and ds.interfered.dtype == bool
    assert set(ds.interfered.dims) == set(CLEAN_RUN_DIMS[name])
    assert "clean_runs_missing" in ds.attrs and isinstance(ds.attrs["clean_runs_missing"], str)
    for a in ("runs_interfered", "runs_dropped", "runs_dropped_reason"):
        assert a in ds.attrs, a
    from perfmod.campaign.records import FLAG_FIELDS, validity_note
    assert "clean" in validity_note(ds)
    for f in FLAG_FIELDS:
        assert ds[f].dims == ds.interfered.dims, f
    # every run counted (GOL keeps its training runs' flags apart, as train_interfered)
    assert ds.attrs["runs_total"] >= ds.interfered.size and ds.attrs["runs_interfered"] >= int(ds.interfered.sum())
    assert ds.attrs["fit_status"]  # fitted, or "not fitted" and why


def _fake_gol(reps_bad: float = 100.0) -> xr.Dataset:
    """GOL raw runs from an exact BSP-like law: 3 cases x 2 rank counts x 2 reps, rep 1 of case 0 at P=2 interfered."""
    cases = np.array([[400, 400, 100], [600, 600, 100], [800, 800, 200]])
    p = np.array([1, 2])
    cells = cases[:, 0] * cases[:, 1]
    gens = cases[:, 2]
    t_w = (cells[:, None] / p[None, :]) * gens[:, None] * 1e-8 * np.ones((1, 2))
    t_c = np.where(p[None, :] > 1, 2 * cases[:, 1:2] * gens[:, None] * 1e-7 + 1e-4, 0.0)
    t_o = 1e-3 + 1e-9 * cells[:, None] / p[None, :] * np.ones((1, 2))
    shape = (3, 2, 2)
    data = {"t_w": t_w, "t_c": t_c, "t_o": t_o}
    data["total_time"] = t_w + t_c + t_o
    arr = {q: np.repeat(v[:, :, None], 2, axis=2) * (1 + 0.001 * np.arange(2)) for q, v in data.items()}
    bad = np.zeros(shape, bool)
    bad[0, 1, 1] = True
    for q in arr:
        arr[q][0, 1, 1] *= reps_bad
    return xr.Dataset(
        {f"{q}_measured": (("case", "nprocs", "rep"), v, {"units": "s", "long_name": q}) for q, v in arr.items()}
        | {"interfered": (("case", "nprocs", "rep"), bad, {"units": "1", "long_name": "interfered"})},
        coords={"case": np.arange(3), "nprocs": p, "rep": np.arange(2),
                "ny": ("case", cases[:, 0]), "nx": ("case", cases[:, 1]), "generations": ("case", gens),
                "cells": ("case", cells), "oversubscribed": ("nprocs", np.array([False, False]))})


def test_gol_measured_median_ignores_the_interfered_repetition():
    from perfmod.studies import sharif_gol as gol

    raw = _fake_gol()
    med, missing = gol.clean_medians(raw)
    assert missing == []
    clean = raw.total_time_measured.values[0, 1, [0]]
    assert med.total_time_measured.values[0, 1] == pytest.approx(np.median(clean))
    assert raw.total_time_measured.median("rep").values[0, 1] > 1.5 * np.median(clean)  # the raw median is moved
    # the fit sees the clean median: the same fit as with the disturbed value replaced by a clean one
    fit = gol.fit_gol(raw)
    ref = gol.fit_gol(_fake_gol(reps_bad=1.0))
    for k, v in vars(ref.params_for()).items():
        assert getattr(fit.params_for(), k) == pytest.approx(v, rel=1e-3), k
    # a configuration with no clean run: NaN there and listed
    allbad = raw.assign(interfered=raw.interfered | (raw.case == 2) & (raw.nprocs == 1))
    med, missing = gol.clean_medians(allbad)
    assert np.isnan(med.t_w_measured.sel(case=2, nprocs=1)) and missing == ["case=2, nprocs=1"]
    out = gol.predict_gol(fit, allbad)
    assert np.isnan(out.total_time_error.sel(case=2, nprocs=1))
    assert bool(np.isfinite(out.total_time_error.sel(case=1)).all())


def test_gol_fit_refuses_too_few_clean_runs():
    from perfmod.studies import sharif_gol as gol

    raw = _fake_gol()
    raw["interfered"] = xr.ones_like(raw.interfered, bool)
    with pytest.raises(ValueError, match="clean"):
        gol.fit_gol(raw)


# --- Jacobi2D: profiles and medians from clean runs -------------------------------------------------------------

def _jacobi_runs(bad_scale: float = 50.0) -> xr.Dataset:
    """Jacobi2D raw runs (2 blocks x 2 rank counts x 3 reps) with phase times of an exact law; rep 1 of
    (block 64, nprocs 2) interfered and ``bad_scale`` times slower."""
    from perfmod.measure.proxies.jacobi2d import PHASES

    blocks, nprocs, reps = [64, 128], [1, 2], 3
    shape = (2, 2, reps)
    b = np.array(blocks, float)[:, None, None]
    p = np.array(nprocs, float)[None, :, None]
    data = {q: np.broadcast_to(1e-9 * (k + 1) * b ** 2 * (1 + 0.1 * p), shape).copy() for k, q in enumerate(PHASES)}
    data["iter"] = sum(data[q] for q in PHASES)
    bad = np.zeros(shape, bool)
    bad[0, 1, 1] = True
    for v in data.values():
        v[0, 1, 1] *= bad_scale
    return xr.Dataset({f"t_{q}_measured": (("block", "nprocs", "rep"), v, {"units": "s"}) for q, v in data.items()}
                      | {"interfered": (("block", "nprocs", "rep"), bad, {"units": "1"})},
                      coords={"block": blocks, "nprocs": nprocs, "rep": np.arange(reps),
                              "oversubscribed": ("nprocs", [False, False]),
                              "cache_resident": (("block", "nprocs"), np.zeros((2, 2), bool))})


def test_jacobi2d_medians_and_profiles_leave_interfered_runs_out():
    from perfmod.studies import local_jacobi2d as st

    raw = _jacobi_runs()
    med, missing = st.clean_phases(raw)
    assert missing == []
    clean_iter = raw.t_iter_measured.values[0, 1, [0, 2]]
    assert float(med.t_iter_measured.sel(block=64, nprocs=2)) == pytest.approx(np.median(clean_iter))
    assert float(raw.t_iter_measured.sel(block=64, nprocs=2).mean("rep")) > 10 * np.median(clean_iter)
    rows = {1: {"GFLOPS - DP": 10.0, "GBSEC - DRAM": 40.0, "GIOPS - MAD": 8.0, "GFLOPS - SP": 20.0,
                "GBSEC - L2": 150.0, "GOPS - SHMEM": 12.0, "GIOPS - ADD": 5.0}}
    rows[2] = rows[1]
    # the profile of the disturbed configuration is that of the same runs undisturbed
    prof = st.profile_jacobi(raw, rows, 64, 2)
    ref = st.profile_jacobi(_jacobi_runs(bad_scale=1.0), rows, 64, 2)
    assert prof.overhead == pytest.approx(ref.overhead) and prof.efficiency == pytest.approx(ref.efficiency)
    # a configuration without a clean run: NaN there, listed, and its rank count cannot be profiled
    allbad = raw.assign(interfered=raw.interfered | ((raw.block == 64) & (raw.nprocs == 1)))
    med, missing = st.clean_phases(allbad)
    assert np.isnan(float(med.t_iter_measured.sel(block=64, nprocs=1))) and missing == ["block=64, nprocs=1"]
    with pytest.raises(ValueError, match="no clean run"):
        st.profile_jacobi(allbad, rows, 64, 1)
    each = st.profile_each(allbad, rows, 64, [1, 2])
    assert np.isnan(each[1].overhead) and np.isfinite(each[2].overhead)
    assert st.fit_status(each).startswith("fitted") and "nprocs=1" in st.fit_status(each)
    cmp = st.compare(allbad, st.predict_jacobi([64, 128], [1, 2], _toy_platform(), rows, each), each)
    assert np.isnan(cmp.t_iter_measured.sel(block=64, nprocs=1))
    assert np.isnan(cmp.t_iter_error.sel(block=128, nprocs=1)).all()  # nprocs=1 could not be profiled
    assert np.isfinite(cmp.t_iter_error.sel(block=128, nprocs=2)).all()
    # no clean profiling run at all: not fitted
    none = raw.assign(interfered=raw.interfered | (raw.block == 64))
    assert st.fit_status(st.profile_each(none, rows, 64, [1, 2])).startswith("not fitted")


def _toy_platform():
    from perfmod.machine.platforms import from_dict

    cell = {"alpha": 2e-6, "beta": 1e-10, "source": "test"}
    return from_dict({"name": "toy", "sockets_per_node": 1, "gpus_per_socket": 0, "ranks_per_node": 2,
                      "protocols": {"short_max_bytes": 0, "eager_max_bytes": 1 << 30, "source": "test"},
                      "comm": {"postal": {"intra_socket": {p: cell for p in ("short", "eager", "rendezvous")}}}})


# --- Sasidharan: per-run observations, clean runs only ---------------------------------------------------------

def _sedov_runs(interfered=()) -> xr.Dataset:
    """Shared-memory Sedov runs of an exact Model-A law (ms, MB) plus a little noise; training: 5 sizes x 3 chunk
    counts x 2 axes x 2 reps; validation: 2 sizes x 1 chunk count x 2 axes x 1 rep.  ``interfered``: run indices
    flagged (their time x 20)."""
    from perfmod.studies import sasidharan_sedov as sedov
    from perfmod.studies.papers import sasidharan as sc

    rng = np.random.default_rng(1)
    rows = []
    for label, sizes, chunks, reps in (("train", (10, 14, 18, 22, 26), (1, 4, 16), 2), ("test", (12, 20), (2,), 1)):
        for n in sizes:
            for c in chunks:
                for ax in ("z", "x"):
                    for r in range(reps):
                        x1 = n ** 3 * 2000.0  # bytes
                        x3 = n * n * (1 if ax == "z" else 2)
                        ms = 1.0 + 0.5 * x1 / 1e6 + 0.002 * (x1 / 1e6) ** 2 + 0.05 * c + 0.001 * x3
                        rows.append({"nx": n, "ny": n, "nz": n, "node_axis": ax, "rep": r, "set": label,
                                     "workers": 2, "x1_bytes": x1, "x2_chunks": c, "x3_peer_edges": x3,
                                     "t_iter": ms / 1e3 * (1 + 1e-3 * rng.standard_normal()), "t_iter_median": 0.0,
                                     "t_iter_min": 0.0, "e_total_error": 1e-12})
    bad = np.zeros(len(rows), bool)
    bad[list(interfered)] = True
    for i in np.flatnonzero(bad):
        rows[i]["t_iter"] *= 20
    meta = {k: v for k, v in sedov.SHARED_META.items() if k in rows[0]}
    ds = sc.runs_dataset(rows, meta)
    ds["interfered"] = ("run", bad, {"units": "1", "long_name": "interfered"})
    return ds


def test_sedov_fits_and_scores_clean_runs_only():
    from perfmod.studies import sasidharan_sedov as sedov
    from perfmod.studies.papers import sasidharan as sc

    raw = _sedov_runs()
    n_train = int((raw.set == "train").sum())
    first_test = n_train  # validation runs follow the training runs
    bad = [0, 1, first_test]  # both repetitions of the first training configuration, one validation run
    ds, missing = sedov.analyze_shared(_sedov_runs(bad))
    ref, _ = sedov.analyze_shared(_sedov_runs([0, 1]))
    assert ds.attrs["fit_status"].startswith("fitted") and ds.attrs["runs_training"] == n_train - 2
    cfg = sedov.model_frame(raw).config
    assert missing == [f"train {cfg[0]}", f"test {cfg[first_test]}"]
    assert np.isnan(ds.shared_measured.values[0]) and np.isfinite(ds.shared_measured.values[1:]).all()
    # the 20x slower runs moved nothing: the fit is the one without them; the validation is scored on clean runs
    np.testing.assert_allclose(ds.shared_predicted, ref.shared_predicted, rtol=1e-12)
    stats = sc.validation_errors(ds, "shared")
    assert stats["n"] == len(ds.shared_measured) - 1 and stats["mape"] < 1.0
    # too few clean training runs: not fitted, said plainly, no prediction, figures from the measured runs alone
    few = sedov.analyze_shared(_sedov_runs(range(n_train - 4)))[0]
    assert few.attrs["fit_status"].startswith("not fitted") and "clean" in few.attrs["fit_status"]
    assert np.isnan(few.shared_predicted).all() and np.isfinite(few.shared_measured).all()
    assert "shared_anova_Res_Df" not in few and list(sedov.figures(few)) == ["fig3_memory_vs_time"]
    plt.close("all")


def _quicksilver_runs(interfered=(), threads=(1, 2), over=()) -> xr.Dataset:
    """Quicksilver runs of an exact Model-1 law (s, MB): training 4 meshes x 3 particle counts x 2 thread counts x
    2 reps, validation 2 x 1 x 2 x 1."""
    from perfmod.studies import sasidharan_quicksilver as qs
    from perfmod.studies.papers import sasidharan as sc

    rng = np.random.default_rng(2)
    rows = []
    for label, sizes, parts, reps in (("train", (6, 8, 10, 12), (1000, 3000, 8000), 2), ("test", (7, 11), (2000,), 1)):
        for n in sizes:
            for p in parts:
                for t in threads:
                    for r in range(reps):
                        x2 = p * 100.0 * (1 + 0.05 * n)  # bytes
                        s = 1e-3 + 2e-3 * x2 / 1e6 + 1e-4 * (x2 / 1e6) ** 2 - 3e-4 * t * x2 / 1e6 + 1e-4 * t
                        rows.append({"nx": n, "target_particles": p, "rep": r, "set": label, "iterations": 2, "m": 1,
                                     "f": 1, "x1_mesh_bytes": n ** 3 * 500.0, "x2_particle_bytes": x2,
                                     "x3_threads": t, "mean_particles": p, "t_track": s * (1 + 1e-3 *
                                                                                          rng.standard_normal()),
                                     "t_track_median": s, "t_track_min": s, "t_iter": s, "t_popctl": 0.0,
                                     "t_total_eq7": 2 * s, "oversubscribed": t in over})
                    if t in over:  # threads waiting for cores: off the law
                        rows[-1]["t_track"] *= 3
    bad = np.zeros(len(rows), bool)
    bad[list(interfered)] = True
    for i in np.flatnonzero(bad):
        rows[i]["t_track"] *= 20
    ds = sc.runs_dataset(rows, qs.META)
    ds["interfered"] = ("run", bad, {"units": "1", "long_name": "interfered"})
    return ds


def test_quicksilver_fits_and_scores_clean_runs_only():
    from perfmod.campaign.records import validity_note
    from perfmod.studies import sasidharan_quicksilver as qs
    from perfmod.studies.papers import sasidharan as sc

    raw = _quicksilver_runs()
    n_train = int((raw.set == "train").sum())
    ds = qs.analyze(_quicksilver_runs([3, n_train + 1]))  # one training repetition, one validation run
    ref = qs.analyze(_quicksilver_runs([3]))
    assert ds.attrs["fit_status"].startswith("fitted") and ds.attrs["runs_training"] == n_train - 1
    assert ds.interfered.dims == ("run",) and int(ds.interfered.sum()) == 2 and ds.attrs["runs_dropped"] == 2
    assert ds.attrs["clean_runs_missing"] == f"test {qs.model_frame(raw).config[n_train + 1]}"
    assert np.isnan(ds.model1_measured.values[1]) and np.isfinite(ds.model1_measured.values[[0, 2, 3]]).all()
    np.testing.assert_allclose(ds.model1_predicted, ref.model1_predicted, rtol=1e-12)
    assert sc.validation_errors(ds, "model1")["n"] == 3
    assert "No clean run could be had for: test" in validity_note(ds)
    few = qs.analyze(_quicksilver_runs(range(n_train - 5)))
    assert few.attrs["fit_status"].startswith("not fitted") and np.isnan(few.model1_predicted).all()
    assert "not fitted" in validity_note(few) and list(qs.figures(few)) == ["fig10_particle_memory_vs_time"]
    plt.close("all")


def test_quicksilver_neither_fits_nor_scores_oversubscribed_runs():
    from perfmod.studies import sasidharan_quicksilver as qs

    raw = _quicksilver_runs(threads=(1, 2, 4), over=(4,))  # 4 threads on 2 cores
    ds = qs.analyze(raw)
    ref = qs.analyze(raw.isel(run=~raw.oversubscribed.values))  # the same runs without the oversubscribed ones
    assert ds.attrs["runs_oversubscribed"] == 26 and ds.attrs["runs_dropped"] == 26
    assert "neither fitted nor scored" in ds.attrs["runs_dropped_reason"]
    assert ds.attrs["runs_training"] == ref.attrs["runs_training"]
    over = ds.model1_test_X3.values == 4
    assert np.isnan(ds.model1_measured.values[over]).all() and np.isfinite(ds.model1_measured.values[~over]).all()
    np.testing.assert_allclose(ds.model1_predicted.values[~over], ref.model1_predicted.values, rtol=1e-9)
    threads, cores = qs.default_threads(), usable_cores()
    assert threads[0] == 1 and all(b == 2 * a for a, b in zip(threads, threads[1:], strict=False))
    assert threads[-1] <= cores < 2 * threads[-1]  # the largest power of two that fits the cores
    plt.close("all")


# --- calibration: clean ping-pong sweeps -----------------------------------------------------------------------

def _pingpong(bad_reps=(), reps: int = 5) -> xr.Dataset:
    """A single-pair ping-pong of an exact postal law (2 us + n / 5 GB/s), ``bad_reps`` interfered and 10x slower."""
    n = np.array([8, 64, 512, 4096, 32768, 262144], dtype=np.int64)
    t = np.broadcast_to((2e-6 + n / 5e9)[None, :, None], (1, n.size, reps)).copy()
    bad = np.zeros((1, reps), bool)
    bad[0, list(bad_reps)] = True
    t[:, :, list(bad_reps)] *= 10
    return xr.Dataset({"t_oneway": (("pairs", "msg_bytes", "rep"), t, {"units": "s"}),
                       "interfered": (("pairs", "rep"), bad, {"units": "1"})},
                      coords={"pairs": [1], "msg_bytes": n, "rep": np.arange(reps),
                              "oversubscribed": ("pairs", [False]), "mode": ("pairs", ["intra_socket"])},
                      attrs={"cores": 2, "sockets": 1})


def test_calibration_fits_clean_sweeps_and_says_when_it_cannot(tmp_path):
    from perfmod.campaign.records import validity_note
    from perfmod.studies import local_calibration as lc

    path = tmp_path / "pp.nc"
    _pingpong([1, 3]).to_netcdf(path)
    ds = lc.run(pingpong_path=str(path), max_breaks=0, progress=False)
    np.testing.assert_allclose(ds.t_oneway_measured, 2e-6 + ds.msg_bytes.values / 5e9, rtol=1e-9)
    plat = lc.platform_of(ds)
    cell = plat.entry("postal", "intra_socket", "eager")
    assert cell["alpha"] == pytest.approx(2e-6, rel=1e-6) and cell["beta"] == pytest.approx(2e-10, rel=1e-6)
    assert ds.interfered.dims == ("pairs", "rep") and ds.attrs["runs_interfered"] == 2
    assert ds.attrs["fit_status"] == "fitted on the clean sweeps" and ds.attrs["clean_runs_missing"] == ""
    # no clean sweep: measured NaN, listed; the platform is a provisional fit of every sweep, said so
    path2 = tmp_path / "pp2.nc"
    _pingpong(range(5)).to_netcdf(path2)
    bad = lc.run(pingpong_path=str(path2), max_breaks=0, progress=False)
    assert np.isnan(bad.t_oneway_measured).all() and bad.attrs["clean_runs_missing"] == "pairs=1"
    assert bad.attrs["fit_status"].startswith("not fitted on clean runs")
    assert "provisional" in bad.attrs["fit_decisions"] and "not fitted" in validity_note(bad)
    assert lc.platform_of(bad).entry("postal", "intra_socket", "eager")["alpha"] == pytest.approx(2e-5, rel=1e-6)
