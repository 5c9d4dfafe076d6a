"""environment.yml mirrors pyproject.toml's dependencies (name and version range)."""

import re
import tomllib

import yaml

from perfmod.core.paths import repo_root

# conda splits a pip extra into its own package
EXTRAS = {"h5netcdf[h5py]": ("h5netcdf", ["h5py"])}


def _split(spec: str) -> tuple[str, str]:
    m = re.match(r"^\s*([A-Za-z0-9_.\-\[\]]+)\s*(.*)$", spec)
    assert m, spec
    return m.group(1).lower(), m.group(2).replace(" ", "")


def _pyproject() -> dict[str, str]:
    data = tomllib.loads((repo_root() / "pyproject.toml").read_text())
    extras = data["project"]["optional-dependencies"]
    # the conda environment is the full working set: the library, its MPI and notebook extras, dev tools
    specs = data["project"]["dependencies"] + extras["mpi"] + extras["notebooks"] + extras["dev"]
    out = {}
    for spec in specs:
        if spec.startswith("perfmod["):
            continue
        name, ver = _split(spec)
        if name in EXTRAS:
            base, extra = EXTRAS[name]
            out[base] = ver
            for e in extra:
                out[e] = ""
        else:
            out[name] = ver
    return out


def _conda() -> dict[str, str]:
    env = yaml.safe_load((repo_root() / "environment.yml").read_text())
    out = {}
    for dep in env["dependencies"]:
        if isinstance(dep, str):
            name, ver = _split(dep)
            if name not in ("python", "pip"):
                out[name] = ver
    return out


def test_environment_mirrors_pyproject():
    assert _conda() == _pyproject()


def test_environment_pins_python_311():
    env = yaml.safe_load((repo_root() / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]

