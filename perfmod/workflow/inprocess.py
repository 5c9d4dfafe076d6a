"""A sweep point of an analytic study in about a second: the study's ``run`` in the worker's own process.

Every study notebook computes its dataset with one line and writes it with
another::

    ds = study.run(**study_parameters(study.run, globals()))
    write_dataset(ds, dataset_path)

where ``study`` is ``perfmod.studies.<name>``.  For a sweep point, starting a
kernel, executing every cell and drawing every figure costs tens of seconds
around well under a second of work.  :func:`run_point_inprocess` does only
the two lines: it builds the notebook's namespace (the parameters cell's
defaults, the smoke set when asked, the point's parameters), calls the
study's ``run`` in the dask worker's process (its imports stay warm from one
point to the next) and writes the point's dataset where the papermill path
writes it.  :func:`study_module` says whether a notebook has that shape.
Measuring studies never run this way (they keep one point per host, under
the measuring lock, in their own process).
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import time
import traceback
from pathlib import Path
from typing import Any

import yaml

from perfmod.core.io import write_dataset
from perfmod.measure.lock import measuring_lock
from perfmod.workflow.errors import describe
from perfmod.workflow.params import resolve_paths
from perfmod.workflow.pointlock import point_lock
from perfmod.workflow.show import parameters

__all__ = ["study_module", "notebook_namespace", "run_point_inprocess"]

_IMPORT = re.compile(r"from perfmod\.studies import (\w+) as study\b")
_LINES = ("study.run(**study_parameters(study.run, globals()))", "write_dataset(ds, dataset_path)")


def study_module(nb: str | Path) -> str | None:
    """``perfmod.studies.<name>`` when the notebook computes its dataset with the study's ``run`` and writes it
    as it comes back (the two lines above); None for any other notebook (it runs under papermill)."""
    text = Path(nb).read_text(encoding="utf-8")
    m = _IMPORT.search(text)
    if m is None or not all(line in text for line in _LINES):
        return None
    return f"perfmod.studies.{m.group(1)}"


def notebook_namespace(nb: str | Path, params: dict[str, Any], smoke: bool) -> dict[str, Any]:
    """The parameters cell's namespace for ``params``: its defaults (paths resolved against the notebook's
    directory, where papermill runs it), then the smoke set, then ``params``.

    Raises
    ------
    ValueError
        A default that is not a literal (the point must run under papermill).
    """
    path = Path(nb).resolve()
    defaults = {}
    for p in parameters(path):
        try:
            defaults[p.name] = ast.literal_eval(p.default)
        except (ValueError, SyntaxError):
            raise ValueError(f"{path}: parameter {p.name} = {p.default} is not a literal") from None
    ns = resolve_paths(defaults, path.parent)
    if smoke:
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        ns.update(resolve_paths(dict(meta.get("perfmod", {}).get("smoke", {})), path.parent))
    ns.update(params)
    return ns


def _where(err: BaseException) -> str:
    """``file:line in function`` of the innermost frame under perfmod/ (where the study failed)."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f"{os.sep}perfmod{os.sep}" in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    return f"\n  in {f.filename.rsplit(os.sep + 'perfmod' + os.sep, 1)[-1]}:{f.lineno} ({f.name}): {f.line}"


def run_point_inprocess(module: str, notebook: str, params: dict[str, Any], point_dir: str, smoke: bool
                        ) -> dict[str, Any]:
    """Run one point in this process: the study's ``run``, the point's dataset, its ``status.json``.

    Returns the status record, with the point's Dataset under ``"dataset"`` when it finished ok."""
    from perfmod.workflow.notebooks import study_parameters

    d = Path(point_dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / "parameters.yaml").write_text(yaml.safe_dump(params, sort_keys=True))
    t0 = time.perf_counter()
    with point_lock(d) as fd:
        if fd is None:
            return {"status": "failed", "elapsed": 0.0, "attempts": 0, "params": params, "mode": "in-process",
                    "error": "already running in another process", "host": os.uname().nodename}
        error = ""
        try:
            with measuring_lock(shared=True, quiet=True):  # never beside a measurement on this host
                ns = notebook_namespace(notebook, params, smoke)
                study = importlib.import_module(module)
                ds = study.run(**study_parameters(study.run, ns))
                write_dataset(ds, d / f"{Path(notebook).stem}.nc")
        except Exception as err:  # noqa: BLE001 - the point failed: recorded, the sweep goes on
            error = describe(err) + _where(err)
        record = {"status": "failed" if error else "ok", "elapsed": time.perf_counter() - t0, "attempts": 1,
                  "error": error, "params": params, "host": os.uname().nodename, "mode": "in-process"}
        (d / "status.json").write_text(json.dumps(record, indent=1, default=str))
    if not error:  # the client combines it as it comes back: reading 1,000 small files again costs minutes
        record["dataset"] = ds
    return record
