"""The study contract (issue 10 item 4) for the analytic studies (those of the catalogue that measure nothing).

Each ``perfmod.studies.<notebook>`` exposes ``run(**params)`` returning a
dataset with units on every variable and the provenance attributes, and
``figures(ds)`` returning non-empty figures drawn from that dataset; the
defaults of ``run`` are those of the notebook's parameters cell.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr

from perfmod.core.io import REQUIRED_GLOBAL_ATTRS, check_conventions
from perfmod.workflow import notebooks as nbs
from perfmod.workflow.catalog import studies

ANALYTIC = [s.name for s in studies() if not s.measuring]  # the notebooks' metadata (perfmod.workflow.catalog)
OUTPUTS = {"dataset_path", "figures_dir"}


def _study(name):
    return importlib.import_module(f"perfmod.studies.{name}")


def _notebook(name):
    return nbs.notebooks_dir() / f"{name}.ipynb"


def _cell_defaults(name) -> dict:
    """``{name: value}`` of the notebook's parameters cell, evaluated."""
    _, cell = nbs.parameters_cell(_notebook(name))
    out = {}
    for stmt in ast.parse(cell.source).body:
        if isinstance(stmt, ast.AnnAssign):
            out[stmt.target.id] = eval(compile(ast.Expression(stmt.value), "<parameters>", "eval"), {})
    return out


@pytest.fixture(scope="module", params=ANALYTIC)
def smoke_run(request):
    name = request.param
    study = _study(name)
    params = nbs.study_parameters(study.run, nbs.smoke_parameters(_notebook(name)))
    return name, study, study.run(**params)


def test_run_returns_a_dataset_with_units_and_provenance(smoke_run):
    name, _, ds = smoke_run
    assert isinstance(ds, xr.Dataset)
    assert ds.data_vars
    check_conventions(ds)
    for var in ds.data_vars.values():
        assert var.attrs["units"], var.name
    for attr in REQUIRED_GLOBAL_ATTRS:
        assert ds.attrs[attr], attr
    assert ds.attrs["study"] == name
    # the parameters attribute records the smoke parameters that reached run (progress is not recorded)
    recorded = json.loads(ds.attrs["parameters"])
    smoke = nbs.smoke_parameters(_notebook(name))
    assert {k: v for k, v in smoke.items() if k != "progress"}.items() <= recorded.items()


def test_figures_are_drawn_from_the_dataset(smoke_run):
    _, study, ds = smoke_run
    figs = study.figures(ds)
    assert figs
    for key, fig in figs.items():
        assert isinstance(fig, plt.Figure), key
        assert fig.axes, key
        assert any(ax.lines or ax.patches or ax.collections for ax in fig.axes), f"{key} draws nothing"
    plt.close("all")


@pytest.mark.parametrize("name", ANALYTIC)
def test_run_defaults_are_the_notebook_defaults(name):
    """Parameters are typed once: run's defaults equal the parameters cell, and run takes every parameter."""
    sig = inspect.signature(_study(name).run)
    cell = {k: v for k, v in _cell_defaults(name).items() if k not in OUTPUTS}
    assert set(cell) == set(sig.parameters)
    for key, value in cell.items():
        default = sig.parameters[key].default
        assert (list(default) if isinstance(default, tuple) else default) == value, key


def test_choi2019_minife_values():
    """Closed-form pieces of the CG iteration: nprocs, the sum of its parts, the poster's overheads."""
    from perfmod.studies import choi2019_minife as study

    ds = study.run(nodes=[1, 2], box=40)
    assert ds.nprocs.sel(platform="lassen").values.tolist() == [4, 8]
    assert ds.nprocs.sel(platform="bridges").values.tolist() == [2, 4]
    np.testing.assert_allclose(ds.t_overhead.sel(nodes=1).values, [820e-6, 1001e-6])
    np.testing.assert_allclose(ds.t_iter_predicted,
                               ds.t_allreduce + ds.t_halo + ds.t_kernels + ds.t_overhead, rtol=1e-12)
    np.testing.assert_allclose(ds.t_kernels, ds.t_kernel.sum("kernel"), rtol=1e-12)
    assert study.figures(ds).keys() == {"cg_iteration"}


def test_choi2020_what_if_split_round_trips_the_sweeps():
    from perfmod.studies import choi2020_what_if as study

    ds = study.run(gpus_per_node=[1, 4], total_gpus=16)
    fat, dev = study.split(ds)
    assert fat.model.values.tolist() == ["postal", "maxrate"]
    assert fat.nodes.values.tolist() == [16, 4]
    np.testing.assert_array_equal(fat.t_comm.values, ds.fat_t_comm.values)
    # 000 §6.2: the twice-the-bandwidth device C halves every (memory-bound) MiniFE kernel
    assert set(dev.bound.values.ravel()) == {"memory"}
    np.testing.assert_allclose(dev.t_predicted.sel(device="C"), dev.t_predicted.sel(device="Tesla V100") / 2,
                               rtol=1e-12)
    assert study.figures(ds).keys() == {"gpus_per_node", "devices"}
    assert "16 GPUs in total" in study.figures(ds)["gpus_per_node"].axes[0].get_xlabel()
    plt.close("all")


def test_choi2020_comm_models_figures_and_table5():
    from perfmod.studies import choi2020_comm_models as study

    ds = study.run(platforms=["lassen"], apps=["minife"], nodes=[1, 2], models=["kmodel", "postal"], n_sizes=8,
                   progress=False)
    # the curves hold postal and max-rate, the scaling kmodel and postal: the merged model axis is their union
    assert ds.model.values.tolist() == ["kmodel", "maxrate", "postal"]
    assert bool(ds.t_comm_predicted.sel(model="maxrate").isnull().all())
    assert ds.msg_bytes.values.tolist() == study.message_sizes(8, 4 * 2**20).tolist()
    # Table 5: 8 of 9 cells reproduced, MiniFE on Summit is not (K_inter 118 for 135)
    assert int(ds.table5_k_inter_paper.sel(t5_app="minife", t5_platform="summit")) == 135
    assert int(ds.table5_k_inter.sel(t5_app="minife", t5_platform="summit")) == 118
    same = (ds.table5_k_inter == ds.table5_k_inter_paper) & (ds.table5_k_total == ds.table5_k_total_paper)
    assert int(same.sum()) == 8
    figs = study.figures(ds)
    assert figs.keys() == {"model_curves", "comm_per_iteration_minife"}
    # one line per model with a prediction, in the canonical order (no empty max-rate line)
    labels = [line.get_label() for line in figs["comm_per_iteration_minife"].axes[0].lines]
    assert labels == ["postal", "kmodel"]
    plt.close("all")


def test_choi2020_end_to_end_tables_and_checks():
    from perfmod.studies import choi2020_end_to_end as study

    with pytest.raises(ValueError, match=r"replay_nodes \[4\] are not in nodes"):
        study.run(nodes=[1, 2], replay_nodes=[4])
    ds = study.run(apps=["minife"], platforms=["lassen"], nodes=[1, 2], replay_nodes=[1], progress=False)
    kern = study.kernel_view(ds)
    assert kern.device.values.tolist() == ["Tesla V100", "Tesla P100"]
    assert study.minife_memory_bound(ds) is True  # 000 §6.2
    shares = study.time_shares(ds)
    np.testing.assert_allclose(shares[["t_comm", "t_kernels", "t_overhead"]].sum(axis=1), 1.0, rtol=1e-12)
    statements = study.paper_statements(ds)
    assert statements.loc["minife", "t_overhead_us"] == pytest.approx(165.0)  # 000 §5.2
    table, deviation = study.replay_comparison(ds)
    assert table.index.get_level_values("nodes").unique().tolist() == [1]
    # on one node the replayed halo exchange is the analytic K-model
    assert deviation["minife"] == pytest.approx(0.0, abs=1e-12)
    assert study.figures(ds).keys() == {"kernel_times", "roofline", "per_iteration"}
    plt.close("all")
