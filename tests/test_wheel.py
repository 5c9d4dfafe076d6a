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
from pathlib import Path

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


def test_wheel_from_a_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(repo_root())],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = dist.glob("perfmod-*.whl")
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
    run = subprocess.run([str(py), "-c", CHECK], cwd=elsewhere, capture_output=True, text=True, timeout=300,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ok" in run.stdout
