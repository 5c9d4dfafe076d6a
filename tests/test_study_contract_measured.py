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
