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



# import name of each library dependency, where it differs from the distribution name
IMPORT_NAMES = {"scikit-learn": "sklearn", "tomli-w": "tomli_w", "h5netcdf[h5py]": "h5netcdf"}


def test_every_library_dependency_is_used():
    data = tomllib.loads((repo_root() / "pyproject.toml").read_text())
    source = "\n".join(p.read_text() for p in (repo_root() / "perfmod").rglob("*.py"))
    unused = []
    for spec in data["project"]["dependencies"]:
        name, _ = _split(spec)
        mod = IMPORT_NAMES.get(name, name.replace("-", "_"))
        if mod == "h5netcdf":
            used = '"h5netcdf"' in source  # used as xarray's netCDF engine
        else:
            used = re.search(rf"^\s*(import|from) {re.escape(mod)}\b", source, re.M) is not None
        if not used:
            unused.append(name)
    assert not unused, f"declared in pyproject.toml but never imported by perfmod: {unused}"
