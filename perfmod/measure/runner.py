"""Launch a proxy under the environment's ``mpiexec`` and collect its JSON result line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from perfmod.measure.bench.pingpong import mpiexec_path

__all__ = ["run_mpi"]


def run_mpi(module: str, nprocs: int, args: Sequence[str], timeout: float = 600.0) -> dict[str, Any]:
    """Run ``python -m module args`` on ``nprocs`` ranks; return rank 0's last JSON line.

    Ranks are bound to cores when they fit; with more ranks than cores the
    run is not bound and the result says ``oversubscribed: true``.
    """
    ncores = os.cpu_count() or 1
    over = nprocs > ncores
    cmd = [str(mpiexec_path()), "-n", str(nprocs)] + ([] if over else ["-bind-to", "core"])
    cmd += [sys.executable, "-m", module, *map(str, args)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"{module} on {nprocs} ranks did not finish in {timeout} s") from None
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"{module} printed no result line:\n{proc.stdout[-1000:]}")
    out = json.loads(lines[-1])
    out["oversubscribed"] = over
    shown = ["mpiexec", *cmd[1:3], *(cmd[3:5] if not over else []), "python -m", module, *map(str, args)]
    out["command"] = " ".join(shown)
    return out
