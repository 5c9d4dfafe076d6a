"""Every study notebook has the study shape and runs with its smoke parameters.

Output parameters (``dataset_path``, ``figures_dir`` and any ``*_out``) are
redirected to a temporary directory, so the smoke runs never touch ``data/``
or ``figures/``.
"""

import json

import nbformat
import pytest

from perfmod.core.io import check_conventions, read_dataset
from perfmod.workflow import notebooks as nbs
from perfmod.workflow.catalog import studies

NOTEBOOKS = [s.notebook for s in studies()]  # the list of studies (perfmod.workflow.catalog)


def test_there_are_study_notebooks():
    assert NOTEBOOKS, "no notebooks in notebooks/"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_shape(nb):
    nbs.check_notebook(nb)


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_smoke_run(nb, smoke_run_of):
    run = smoke_run_of(nb.stem)  # papermill, every output in a temporary directory (conftest.py)
    assert run.executed.exists()
    ds = read_dataset(run.dataset)
    check_conventions(ds)
    assert ds.attrs["study"] == nb.stem
    if "figures_dir" in run.declared:
        assert list(run.figures.glob("*.png")), "the notebook wrote no figure"
    # nothing written next to the notebook
    assert not (nb.parent / "out.nc").exists()


def _toy(tmp_path, params_src="x: int = 1  # a number\ndataset_path: str = 'a.nc'"):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# paper 000: toy"),
        nbformat.v4.new_code_cell(params_src, metadata={"tags": ["parameters"]}),
    ]
    nb.metadata["perfmod"] = {"smoke": {"x": 2}}
    path = tmp_path / "toy.ipynb"
    nbformat.write(nb, path)
    return path


def test_checker_accepts_a_good_notebook(tmp_path):
    path = _toy(tmp_path)
    nbs.check_notebook(path)
    assert nbs.declared_parameters(path) == {"x": "int", "dataset_path": "str"}
    assert nbs.smoke_parameters(path) == {"x": 2}


def test_checker_names_untyped_parameter_line(tmp_path):
    path = _toy(tmp_path, "x: int = 1\ny = 2\ndataset_path: str = 'a'")
    with pytest.raises(nbs.NotebookShapeError, match=r"toy.ipynb: cell 1 \(parameters\), line 2: 'y'"):
        nbs.check_notebook(path)


def test_checker_names_a_parameter_line_papermill_cannot_read(tmp_path):
    path = _toy(tmp_path, "x: int = 1  # steps ~ size ** -b, b = 1 by default\ndataset_path: str = 'a'")
    with pytest.raises(nbs.NotebookShapeError, match=r"toy.ipynb: cell 1 \(parameters\): papermill cannot read .*'x'"):
        nbs.check_notebook(path)


def test_checker_names_repeated_cell_ids(tmp_path):
    """A copied cell keeps its id; nbformat renumbers it with a warning on every read, the checker refuses it."""
    path = _toy(tmp_path)
    node = nbformat.read(path, as_version=4)
    node.cells.append(nbformat.v4.new_code_cell("x + 1"))
    node.cells[2].id = node.cells[1].id
    path.write_text(json.dumps(node))
    with pytest.raises(nbs.NotebookShapeError, match=rf"toy.ipynb: cell ids \['{node.cells[1].id}'\] are used by more"):
        nbs.check_notebook(path)


def test_strip_outputs_round_trip(tmp_path):
    path = _toy(tmp_path)
    node = nbformat.read(path, as_version=4)
    node.cells[1].outputs = [nbformat.v4.new_output("stream", text="hi")]
    node.cells[1].execution_count = 3
    nbformat.write(node, path)
    with pytest.raises(nbs.NotebookShapeError, match="outputs"):
        nbs.check_notebook(path)
    assert nbs.strip_outputs(path) is True
    nbs.check_notebook(path)
    assert nbs.strip_outputs(path) is False


def test_study_parameters_pass_the_notebook_namespace_through():
    def run(nprocs: list[int], reps: int = 3, *, progress: bool = True, **extra):
        return nprocs, reps, progress

    ns = {"nprocs": [1, 2], "progress": False, "dataset_path": "x.nc", "np": object()}
    assert nbs.study_parameters(run, ns) == {"nprocs": [1, 2], "progress": False}
    with pytest.raises(nbs.NotebookShapeError, match="needs parameter 'nprocs'"):
        nbs.study_parameters(run, {"reps": 2})
