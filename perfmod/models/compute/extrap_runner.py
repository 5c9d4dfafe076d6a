"""Extra-P's default modeler beside perfmod's, run in an environment of its own.

Extra-P 4.2 (PyPI ``extrap``, Calotoiu et al., SC13; Ritter et al., IPDPS 2020) is the field's
reference for empirical performance models, and perfmod's compute models are measured against it
(the ``modeling_benchmark`` study).  It pins NumPy 1.x and Qt, so it is not installed beside perfmod:
``make extrap-env`` builds ``.venv-extrap`` in the checkout with Extra-P alone, and
:class:`ExtrapModeler` runs :mod:`perfmod.models.compute.extrap_bridge` with that Python, handing it
Extra-P text experiments (:func:`~perfmod.models.compute.extrap_io.write_extrap_text`) and reading
back JSON: Extra-P's model, its predictions and its lead-order terms.  Nothing but data crosses.

Which Python runs Extra-P (:func:`extrap_python`): ``$PERFMOD_EXTRAP_PYTHON`` when set (a Python
with ``extrap`` installed); else this Python if it has ``extrap``; else the checkout's
``.venv-extrap/bin/python`` where ``make extrap-env`` installed Extra-P (it leaves :data:`INSTALLED` there); else
none, and the study records that Extra-P was not run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from perfmod.core.paths import repo_root

from .errors import ComputeModelError
from .extrap_io import write_extrap_text

__all__ = ["ENV_VAR", "ExtrapError", "ExtrapFit", "ExtrapModeler", "extrap_python"]

#: the environment variable naming a Python that has ``extrap`` installed
ENV_VAR = "PERFMOD_EXTRAP_PYTHON"
#: the file ``make extrap-env`` leaves in ``.venv-extrap`` once Extra-P is installed there
INSTALLED = ".extrap-installed"
_BRIDGE = Path(__file__).with_name("extrap_bridge.py")


class ExtrapError(ComputeModelError, RuntimeError):
    """Extra-P could not be started, or could not fit an experiment (with what it said)."""


@dataclass(frozen=True)
class ExtrapFit:
    """Extra-P's model of one experiment: ``predicted`` at the query points, ``lead`` (per parameter, the
    largest polynomial exponent and log exponent of its terms), ``function`` (Extra-P's text of it) and the
    fit's wall time in ``seconds`` (in Extra-P's process, reading the file included)."""

    predicted: np.ndarray
    lead: tuple[tuple[float, int], ...]
    function: str
    seconds: float


def extrap_python() -> str | None:
    """The Python that runs Extra-P (the module docstring says which), or None where there is none."""
    env = os.environ.get(ENV_VAR)
    if env:
        if not Path(env).is_file():
            raise ExtrapError(f"${ENV_VAR}={env!r} is not a file (it names the Python of an environment with "
                              "extrap installed)")
        return env
    if importlib.util.find_spec("extrap") is not None:
        return sys.executable
    venv = repo_root() / ".venv-extrap"
    return str(venv / "bin" / "python") if (venv / INSTALLED).is_file() else None


def _environment() -> dict[str, str]:
    """Extra-P's process environment: this one, but for what belongs to this Python (its module path) or to a
    notebook kernel (Jupyter's inline matplotlib backend, which Extra-P's matplotlib does not have)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "MPLBACKEND")}
    env["MPLBACKEND"] = "Agg"
    env["QT_QPA_PLATFORM"] = "offscreen"
    return env


class ExtrapModeler:
    """One Extra-P process fitting experiments one after another (a context manager: the process ends with it).

    ``python``: the interpreter (default :func:`extrap_python`; :class:`ExtrapError` where there is none).
    """

    def __init__(self, python: str | None = None) -> None:
        python = python or extrap_python()
        if python is None:
            raise ExtrapError(f"no Python with Extra-P: run `make extrap-env`, or set ${ENV_VAR} to one with "
                              "`pip install extrap` done")
        self._tmp = tempfile.TemporaryDirectory(prefix="perfmod-extrap-")
        self._err = open(Path(self._tmp.name) / "stderr.txt", "w+")  # noqa: SIM115 (closed in close())
        self._proc = subprocess.Popen([python, str(_BRIDGE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._err, text=True, bufsize=1, env=_environment())
        hello = self._reply()
        if "extrap" not in hello:
            self.close()
            raise ExtrapError(f"{python} did not start Extra-P's bridge: {hello}")
        #: the Extra-P version that fits
        self.version = str(hello["extrap"])
        self._n = 0

    def _reply(self) -> dict[str, Any]:
        line = self._proc.stdout.readline()
        if not line:
            self._proc.wait()
            self._err.seek(0)
            said = self._err.read().strip().splitlines()
            raise ExtrapError(f"Extra-P's process ended (exit status {self._proc.returncode}): "
                              + (said[-1] if said else "it said nothing"))
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            raise ExtrapError(f"Extra-P's process answered something other than a reply: {line[:200]!r}") from None

    def fit(self, frame: pd.DataFrame, names: list[str], query: np.ndarray, value: str = "time") -> ExtrapFit:
        """Extra-P's default model of ``frame[value]`` over the parameters ``names`` (a tidy frame, repetitions
        as rows), evaluated at ``query`` (one row per point, columns in ``names`` order)."""
        self._n += 1
        path = write_extrap_text(frame.rename(columns={value: "value"}), Path(self._tmp.name) / f"e{self._n}.txt",
                                 names)
        q = np.asarray(query, dtype=float).reshape(-1, len(names))
        try:
            self._proc.stdin.write(json.dumps({"path": str(path), "names": list(names), "query": q.tolist()}) + "\n")
            self._proc.stdin.flush()
        except OSError:  # the process is gone: its exit status and last words say why
            pass
        out = self._reply()
        path.unlink()
        if "error" in out:
            raise ExtrapError(f"Extra-P could not model the experiment: {out['error']}")
        return ExtrapFit(np.asarray(out["predicted"], dtype=float), tuple((float(e), int(k)) for e, k in out["lead"]),
                         str(out["function"]), float(out["seconds"]))

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write("\n")
                self._proc.stdin.close()
            except OSError:
                pass
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._err.close()
        self._tmp.cleanup()

    def __enter__(self) -> ExtrapModeler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
