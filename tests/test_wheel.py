"""A wheel built from the repository works from a fresh virtual environment outside the checkout.

The wheel is built with pip (build isolation, as a user would), installed
without dependencies into a new venv that sees the test environment's
third-party packages through a path file (not its editable perfmod), and
used from a temporary directory: the shipped platforms, device table and
paper tables must all be found through the installed package.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from perfmod.core.paths import repo_root

CHECK = r"""
import sys, pathlib
import perfmod
from perfmod.machine import platforms, devices
from perfmod.core import paperdata
where = pathlib.Path(perfmod.__file__).resolve()
assert "site-packages" in where.parts, where
assert sorted(platforms.available()) == ["bridges", "lassen", "stampede2", "summit"], platforms.available()
assert platforms.load("summit").ranks_per_node == 6
assert "V100" in " ".join(devices.read_devices().names)
tables = paperdata.available()
assert "choi2020_table2_postal" in tables and "sharif_table2_cases" in tables, tables
assert float(paperdata.read_table("overheads")["overhead_s"].max()) > 0
print("ok", where)
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The wheel built from the checkout, installed in a fresh venv; (its python, a directory outside the
    checkout to run in)."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(repo_root())],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = dist.glob("perfmod-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "perfmod/py.typed" in names and "perfmod/notebooks/choi2020_comm_models.ipynb" in names
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    py = env / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # third-party packages of the test environment, but not its editable perfmod (path entries, not a site dir)
    (Path(site) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    inst = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--ignore-installed", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert inst.returncode == 0, inst.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return py, elsewhere


def _env(home: Path, py: Path) -> dict[str, str]:
    return {"PATH": f"{py.parent}:/usr/bin:/bin", "HOME": str(home), "XDG_DATA_HOME": str(home / "share")}


def test_wheel_from_a_fresh_venv(installed: tuple[Path, Path]) -> None:
    py, elsewhere = installed
    run = subprocess.run([str(py), "-c", CHECK], cwd=elsewhere, capture_output=True, text=True, timeout=300,
                         env=_env(elsewhere.parent, py))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ok" in run.stdout
    data = subprocess.run([str(py), "-c", "from perfmod.core.paths import data_dir; print(data_dir())"], cwd=elsewhere,
                          capture_output=True, text=True, env=_env(elsewhere.parent, py), check=True).stdout.strip()
    assert data == str(elsewhere.parent / "share" / "perfmod")  # the user's data directory, not ./data


@pytest.mark.slow
def test_the_perfmod_command_from_the_wheel(installed: tuple[Path, Path]) -> None:
    """perfmod list finds the shipped studies; a smoke run of one and a synthetic replay work outside the
    checkout; --version and python -m perfmod answer."""
    py, elsewhere = installed
    perfmod = str(py.parent / "perfmod")

    def cli(*args: str, timeout: int = 600) -> str:
        r = subprocess.run(list(args), cwd=elsewhere, capture_output=True, text=True, timeout=timeout,
                           env=_env(elsewhere.parent, py))
        assert r.returncode == 0, f"{args}: {r.stdout[-2000:]}{r.stderr[-3000:]}"
        return r.stdout

    assert cli(perfmod, "--version").strip() == "perfmod 0.1.0"
    assert cli(str(py), "-m", "perfmod", "--version").strip() == "perfmod 0.1.0"
    listed = cli(perfmod, "list", "studies")
    assert "  choi2020_comm_models" in listed and "  sharif_gol" in listed
    out = cli(perfmod, "run", "choi2020_comm_models", "--smoke", "-q")
    assert "executed notebook: " + str(elsewhere / "runs") in out
    (run_dir,) = (elsewhere / "runs").iterdir()
    assert (run_dir / "choi2020_comm_models.nc").is_file()
    replayed = cli(perfmod, "replay", "--synthetic", "jacobi2d:64:10", "--model", "postal")
    assert "synthetic" in replayed and "slowest rank" in replayed
