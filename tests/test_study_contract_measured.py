"""The study contract (issue 10 item 4) of the six measuring studies; their interleaved run orders (issue 13 item 3).

Each ``perfmod.studies.<x>.run(**smoke)`` (smoke parameters from the notebook's
metadata, output paths redirected to a temporary directory, run from
``notebooks/`` as papermill does) returns a dataset with units on every
variable and the provenance attributes, and ``figures(ds)`` draws from it
alone.  The run order of a design mixes training and held-out runs, never
puts two repetitions of a configuration back to back, and depends only on
the seed.
"""

from __future__ import annotations

import importlib

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr

from perfmod.core.io import REQUIRED_GLOBAL_ATTRS, check_conventions
from perfmod.studies.design import interleaved_order, position_of
from perfmod.workflow import notebooks as nbs

#: study -> launches MPI ranks with its smoke parameters
STUDIES = {"local_calibration": False, "sharif_gol": True, "sharif_triton": True, "local_jacobi2d": True,
           "sasidharan_sedov": False, "sasidharan_quicksilver": False}


def _params(name: str, tmp_path) -> dict:
    study = importlib.import_module(f"perfmod.studies.{name}")
    nb = nbs.notebooks_dir() / f"{name}.ipynb"
    params = nbs.smoke_parameters(nb)
    params.update({k: str(tmp_path / k) for k in nbs.declared_parameters(nb) if k.endswith("_out")})
    params["progress"] = False
    return nbs.study_parameters(study.run, params)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    """Cache: each study's smoke dataset, computed once per module."""
    return {}


def _run(name: str, results: dict, tmp_path_factory, monkeypatch) -> xr.Dataset:
    if name not in results:
        tmp = tmp_path_factory.mktemp(name)
        study = importlib.import_module(f"perfmod.studies.{name}")
        monkeypatch.chdir(nbs.notebooks_dir())  # the notebooks' relative paths
        results[name] = study.run(**_params(name, tmp))
    return results[name]


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.mpi] if mpi else [])
                                  for n, mpi in STUDIES.items()])
def test_run_returns_a_documented_dataset_and_figures_come_from_it(name, results, tmp_path_factory, monkeypatch):
    ds = _run(name, results, tmp_path_factory, monkeypatch)
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
def test_gol_design_interleaves_training_and_held_out_runs(results, tmp_path_factory, monkeypatch):
    """The GOL study measured its training cases first (issue 13); now the dataset shows them mixed."""
    ds = _run("sharif_gol", results, tmp_path_factory, monkeypatch)
    train = ds.train_run_index.values.ravel()
    held = ds.run_index.values.ravel()
    assert sorted(np.concatenate([train, held]).tolist()) == list(range(train.size + held.size))
    assert held.min() < train.max() and train.min() < held.max()
    runs = 3 * 2 * 1 + 1 * 2 * 1  # smoke: 3 training and 1 held-out case, 2 rank counts, 1 repetition
    expect = position_of(interleaved_order([1] * 8, seed=0), (4, 2, 1))
    assert train.size + held.size == runs
    np.testing.assert_array_equal(ds.run_index.values[0], expect[3])  # deterministic for the seed


def test_sasidharan_order_is_the_shared_design():
    from perfmod.studies import sasidharan_common as sc
    from perfmod.studies import sasidharan_sedov as sedov

    cfg = (sedov.design([(4, 4, 4), (5, 5, 5)], [1, 2], ["z"], label="train", reps=3)
           + sedov.design([(6, 6, 6)], [1, 2], ["z"], label="test", reps=1))
    order = sc.run_order(cfg, reps=3, seed=3)
    assert order == interleaved_order([3, 3, 3, 3, 1, 1], 3)
    sets = [cfg[i]["set"] for i, _ in order]
    assert sets[0] == "train" or sets[-1] == "train"
    assert "test" in sets[: len(sets) - 1] and sets.count("test") == 2


# --- issue 13 interface: measured values from clean runs only -------------------------------------------------

#: converted studies -> their run dimensions (the ``interfered`` flag is over them)
CLEAN_RUN_DIMS = {"sharif_gol": ("case", "nprocs", "rep"), "sharif_triton": ("event", "factor", "nprocs", "rep")}


@pytest.mark.mpi
@pytest.mark.parametrize("name", list(CLEAN_RUN_DIMS))
def test_measuring_study_flags_interfered_runs(name, results, tmp_path_factory, monkeypatch):
    ds = _run(name, results, tmp_path_factory, monkeypatch)
    assert "interfered" in ds and ds.interfered.dtype == bool
    assert set(ds.interfered.dims) == set(CLEAN_RUN_DIMS[name])
    assert "clean_runs_missing" in ds.attrs and isinstance(ds.attrs["clean_runs_missing"], str)
    for a in ("runs_interfered", "runs_dropped", "runs_dropped_reason"):
        assert a in ds.attrs, a
    from perfmod.studies.records import validity_note
    assert "clean" in validity_note(ds)


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
