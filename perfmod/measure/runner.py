"""Launch a proxy under the environment's ``mpiexec``, check it was not disturbed, collect its result.

:func:`run_mpi` runs ``python -m <module>`` on P ranks holding the
measuring lock (:mod:`perfmod.measure.lock`), reads rank 0's last JSON
line and classifies the run with the per-rank probe report the proxy
prints under ``"interference"`` (:mod:`perfmod.measure.interference`).
An interfered run is re-run, up to ``retries`` times; every attempt is
kept in the result with its flag.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from perfmod.measure.host import mpiexec_path
from perfmod.measure.interference import classify, usable_cores
from perfmod.measure.lock import measuring_lock

__all__ = ["RETRIES_ENV", "BUDGET_ENV", "default_retries", "rerun_budget", "run_mpi", "run_mpi_once",
           "rerun_while_interfered"]

RETRIES_ENV = "PERFMOD_MEASURE_RETRIES"
"""Environment variable overriding the default number of re-runs of an interfered run."""

BUDGET_ENV = "PERFMOD_MEASURE_RERUN_BUDGET"
"""Environment variable overriding the seconds of re-runs one process may spend (default 90)."""

_spent = [0.0]  # seconds of re-runs spent by this process


def rerun_budget() -> float:
    """Seconds of re-runs this process may spend in all: ``$PERFMOD_MEASURE_RERUN_BUDGET``, else 90.

    It bounds what a busy machine adds to a study (``make all`` has six
    measuring studies, about 8 minutes on an idle 2-core machine); past it
    interfered runs are kept with their flag and not re-run.
    """
    env = os.environ.get(BUDGET_ENV, "").strip()
    try:
        b = float(env) if env else 90.0
    except ValueError:
        raise ValueError(f"{BUDGET_ENV} must be a number of seconds, got {env!r}") from None
    if not b >= 0:
        raise ValueError(f"{BUDGET_ENV} must be >= 0 s, got {b}")
    return b


def default_retries() -> int:
    """Re-runs of an interfered run: ``$PERFMOD_MEASURE_RETRIES``, else 2."""
    env = os.environ.get(RETRIES_ENV, "").strip()
    if not env:
        return 2
    try:
        n = int(env)
    except ValueError:
        raise ValueError(f"{RETRIES_ENV} must be an integer >= 0, got {env!r}") from None
    if n < 0:
        raise ValueError(f"{RETRIES_ENV} must be an integer >= 0, got {n}")
    return n


def run_mpi_once(module: str, nprocs: int, args: Sequence[str], timeout: float = 600.0) -> dict[str, Any]:
    """One run of ``python -m module args`` on ``nprocs`` ranks; rank 0's last JSON line, classified.

    Ranks are bound to cores when they fit; with more ranks than cores the
    run is not bound and the result says ``oversubscribed: true``.  Adds
    ``interfered`` (bool), ``interference_reason`` (str) and ``off_cpu``
    (the criterion's value, 1) from the proxy's ``interference`` report;
    a module that prints none gets ``interfered = False`` and a reason
    saying it was not probed.
    """
    cores = usable_cores()
    over = nprocs > cores
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
    report = out.get("interference")
    if report:
        v = classify(report, oversubscribed=over, cores=cores)
        out.update(interfered=v.interfered, interference_reason=v.reason, off_cpu=v.off_cpu)
    else:
        out.update(interfered=False, interference_reason=f"not probed: {module} prints no interference report",
                   off_cpu=float("nan"))
    return out


def run_mpi(module: str, nprocs: int, args: Sequence[str], timeout: float = 600.0, retries: int | None = None,
            retry_wait: float = 1.0, lock: bool = True) -> dict[str, Any]:
    """Run ``python -m module args`` on ``nprocs`` ranks; re-run while the run was disturbed.

    Parameters
    ----------
    module : str
        A module with an MPI ``main`` that prints one JSON line on rank 0
        (and its probe report under ``"interference"``).
    nprocs : int
        MPI ranks.
    args : sequence
        Command-line arguments of the module.
    timeout : float
        Seconds allowed per attempt.
    retries : int, optional
        Re-runs of an interfered attempt (default :func:`default_retries`).
        Oversubscription alone is not interference (see
        :func:`perfmod.measure.interference.classify`).
    retry_wait : float
        Seconds to wait before a re-run (a short burst of load may pass).
        Re-runs also stop once this process has spent :func:`rerun_budget`
        seconds on them.
    lock : bool
        Hold the measuring lock exclusively during each attempt.

    Returns
    -------
    dict
        The last attempt's result (the first clean one, or the last
        interfered one when none was clean), with ``interfered``,
        ``interference_reason``, ``off_cpu``, ``oversubscribed`` and
        ``command`` (see :func:`run_mpi_once`), plus ``attempts``: every
        attempt's result in order (each without ``attempts``),
        ``n_interfered``: how many of them were flagged, and
        ``rerun_budget_exhausted``: True when an interfered run was not
        re-run for lack of budget.
    """
    if isinstance(nprocs, bool) or int(nprocs) != nprocs or nprocs < 1:
        raise ValueError(f"nprocs must be a positive integer, got {nprocs!r}")

    def attempt() -> dict[str, Any]:
        if lock:
            with measuring_lock():
                return run_mpi_once(module, int(nprocs), args, timeout)
        return run_mpi_once(module, int(nprocs), args, timeout)

    return rerun_while_interfered(attempt, retries, retry_wait)


def rerun_while_interfered(attempt: Callable[[], dict[str, Any]], retries: int | None = None,
                           retry_wait: float = 1.0) -> dict[str, Any]:
    """Call ``attempt`` until its result is not ``interfered``, at most ``retries`` more times.

    The re-run policy of :func:`run_mpi`, for any timed run whose result
    carries an ``interfered`` verdict (the in-process proxies'
    ``run_shared`` and ``run_quicksilver`` do, from their own probe).
    Re-runs stop once this process has spent :func:`rerun_budget` seconds
    on them.

    Returns
    -------
    dict
        The last attempt's result with ``attempt`` (its index),
        ``attempts`` (every attempt's result in order), ``n_interfered``
        and ``rerun_budget_exhausted``, as :func:`run_mpi` documents.
    """
    retries = default_retries() if retries is None else retries
    if retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    attempts: list[dict[str, Any]] = []
    exhausted = False
    for i in range(retries + 1):
        if i:
            if _spent[0] >= rerun_budget():
                exhausted = True
                break
            time.sleep(retry_wait)
        t0 = time.monotonic()
        res = attempt()
        if "interfered" not in res:
            raise KeyError(f"rerun_while_interfered: the run's result has no 'interfered' verdict; "
                           f"keys: {sorted(res)[:12]}")
        if i:
            _spent[0] += time.monotonic() - t0 + retry_wait
        res["attempt"] = i
        attempts.append(res)
        if not res["interfered"]:
            break
    out = dict(attempts[-1])
    out["attempts"] = attempts
    out["n_interfered"] = sum(bool(a["interfered"]) for a in attempts)
    out["rerun_budget_exhausted"] = exhausted
    return out
