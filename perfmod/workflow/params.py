"""Notebook parameters from the command line: typed by the parameters cell, paths resolved, outputs placed.

A study notebook declares its parameters with annotations
(``nprocs: list[int] = [1, 2, 4]``).  :func:`coerce` turns a command-line
string into a value of the declared type (``-p nprocs "[1, 2]"``,
``-p platform lassen``) and rejects anything else with one line naming the
parameter, the type and the value.  :func:`place_outputs` decides where a
run writes: the canonical paths (``data/processed``, ``figures``,
``data/platforms/local.toml``) only when asked for, else a run directory.
"""

from __future__ import annotations

import ast
import datetime as dt
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "OUTPUT_PARAMETERS",
    "ParameterError",
    "coerce",
    "check_type",
    "resolve_paths",
    "place_outputs",
    "default_run_dir",
    "read_yaml_mapping",
]

#: Parameters through which a study writes (every notebook names its outputs with these).
OUTPUT_PARAMETERS = ("dataset_path", "figures_dir", "platform_out", "raw_out")
#: Suffixes of parameters that hold a file or directory (resolved against the caller's directory).
_PATH_SUFFIXES = ("_path", "_dir", "_out", "_data")


def read_yaml_mapping(path: str | os.PathLike, expected: str, error: type[Exception] = ValueError) -> dict:
    """The mapping a YAML file holds (parameter files, sweep grids): the one YAML reader of the workflow.

    Raises ``error`` naming ``path`` when the file cannot be read, is not
    YAML, or holds something else than a mapping (``expected`` says what).
    """
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise error(f"{path}: not valid YAML: {e}".replace("\n", " ")) from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected {expected}")
    return data


class ParameterError(ValueError):
    """A parameter value does not fit its declaration (one line: name, expected type, value)."""


def _check(value: Any, ann: ast.expr) -> bool:
    if isinstance(ann, ast.Name):
        kinds = {"int": int, "float": (int, float), "str": str, "bool": bool, "dict": dict, "list": list}
        if ann.id not in kinds:
            return True  # an annotation perfmod does not check (a user type)
        if ann.id in ("int", "float") and isinstance(value, bool):
            return False
        return isinstance(value, kinds[ann.id])
    if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name):
        outer = ann.value.id
        if outer == "list":
            return isinstance(value, list | tuple) and all(_check(v, ann.slice) for v in value)
        if outer == "dict":
            k, v = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else (None, None)
            return isinstance(value, dict) and (k is None or all(_check(a, k) and _check(b, v)
                                                                 for a, b in value.items()))
        if outer == "tuple":
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            return isinstance(value, list | tuple) and len(value) == len(elts) and all(
                _check(v, a) for v, a in zip(value, elts, strict=True))
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):  # X | Y
        return _check(value, ann.left) or _check(value, ann.right)
    if isinstance(ann, ast.Constant) and ann.value is None:
        return value is None
    return True


def check_type(name: str, value: Any, annotation: str) -> Any:
    """Return ``value`` if it fits ``annotation`` (``"list[int]"``, ``"float"``, ...), else raise.

    Raises
    ------
    ParameterError
        ``parameter NAME expects TYPE, got VALUE``.
    """
    ann = ast.parse(annotation, mode="eval").body
    if isinstance(value, int) and not isinstance(value, bool) and annotation == "float":
        return float(value)
    if not _check(value, ann):
        hint = f" (write ['{value}'])" if annotation.startswith("list[str") and isinstance(value, str) else ""
        raise ParameterError(f"parameter {name} expects {annotation}, got {value!r}{hint}")
    return value


def coerce(name: str, text: str, annotation: str) -> Any:
    """Turn the command-line string ``text`` into a value of the declared ``annotation``.

    A ``str`` parameter takes the text as it is; anything else is read as a
    Python literal (``3``, ``2.5``, ``True``, ``[1, 2]``, ``{"a": 1}``) and
    checked against the annotation.
    """
    if annotation == "str":
        return text
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = text
    return check_type(name, value, annotation)


def resolve_paths(params: Mapping[str, Any], cwd: Path | None = None) -> dict[str, Any]:
    """Make relative path parameters absolute against the caller's directory ``cwd``.

    The notebook runs in ``notebooks/``; a user who types ``-p pingpong_path
    runs/pp.nc`` in the repository root means the file under the root.
    """
    base = Path(cwd or Path.cwd())
    out = dict(params)
    for name, value in params.items():
        if name.endswith(_PATH_SUFFIXES) and isinstance(value, str) and value and not Path(value).is_absolute():
            out[name] = str((base / value).resolve())
    return out


def default_run_dir(study: str, root: Path | None = None) -> Path:
    """``runs/<study>-<UTC timestamp>`` under ``root`` (the caller's directory)."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return Path(root or Path.cwd()) / "runs" / f"{study}-{stamp}"


def place_outputs(declared: Mapping[str, str], given: Mapping[str, Any], run_dir: Path, smoke: bool,
                  study: str) -> dict[str, Any]:
    """Output parameters of a non-canonical run: under ``run_dir`` unless the user gave them.

    The dataset goes to ``run_dir/<study>.nc``, figures to ``run_dir/figures``,
    a fitted platform to ``run_dir/local.toml``; raw measurements of a smoke
    run to ``run_dir/raw`` (a real run keeps its raw data in ``data/raw``,
    where every file has its own timestamped name).
    """
    places = {
        "dataset_path": str(run_dir / f"{study}.nc"),
        "figures_dir": str(run_dir / "figures"),
        "platform_out": str(run_dir / "local.toml"),
        "raw_out": str(run_dir / "raw"),
    }
    out: dict[str, Any] = {}
    for name in OUTPUT_PARAMETERS:
        if name in declared and name not in given and (name != "raw_out" or smoke):
            out[name] = places[name]
    return out
