"""Fixtures shared by test files: each study notebook's smoke run, executed once per test session.

A study's smoke run (papermill, the notebook's smoke parameters, every output in a temporary directory) is what
``test_notebooks`` checks as a notebook and what the study-contract tests check as a dataset; the measuring
studies take 20-45 s each, so they run once and every test reads the same outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from perfmod.workflow import notebooks as nbs


@dataclass(frozen=True)
class SmokeRun:
    """A study notebook run with its smoke parameters: the executed notebook and where its outputs went."""

    executed: Path
    dataset: Path  # the dataset_path it was given
    figures: Path  # the figures_dir it was given
    outputs: Path  # the directory of every output (``*_out`` parameters: ``outputs / name``)
    declared: dict  # the notebook's declared parameters


@pytest.fixture(scope="session")
def smoke_run_of(tmp_path_factory):
    """``smoke_run_of(name) -> SmokeRun``: notebook ``name``'s smoke run, made on first use (a failed run fails
    every test that asks for it with its own error, without running again)."""
    done: dict[str, SmokeRun | BaseException] = {}

    def get(name: str) -> SmokeRun:
        if name not in done:
            nb = nbs.notebooks_dir() / f"{name}.ipynb"
            tmp = tmp_path_factory.mktemp(f"smoke-{name}")
            declared = nbs.declared_parameters(nb)
            outputs = {"dataset_path": str(tmp / "out.nc"), "figures_dir": str(tmp / "figures")}
            outputs.update({k: str(tmp / k) for k in declared if k.endswith("_out")})
            outputs = {k: v for k, v in outputs.items() if k in declared}
            try:
                executed = nbs.run_notebook(nb, outputs, smoke=True, output=tmp / nb.name, progress=False)
                done[name] = SmokeRun(executed, tmp / "out.nc", tmp / "figures", tmp, declared)
            except Exception as exc:  # noqa: BLE001 - kept, and raised again for every test that asks
                done[name] = exc
        got = done[name]
        if isinstance(got, BaseException):
            raise got
        return got

    return get
