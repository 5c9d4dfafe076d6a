"""Launch a proxy under the environment's ``mpiexec``, check it was not disturbed, collect its result.

:func:`run_mpi` runs ``python -m <module>`` on P ranks holding the
measuring lock (:mod:`perfmod.measure.lock`), reads rank 0's last JSON
line and classifies the run with the per-rank probe report the proxy
prints under ``"interference"`` (:mod:`perfmod.measure.interference`).
An interfered run is re-run, up to ``retries`` times; every attempt is
kept in the result with its flag.  :func:`run_mpi_batch` runs several
configurations in one launch (the proxies' ``--batch``), and
:func:`run_mpi_jobs` a whole campaign in such batches, so that the launch
(about 0.3 s of ``mpiexec`` and Python start-up per run on the development
VM) is paid once per batch.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perfmod.measure.host import mpiexec_path
from perfmod.measure.interference import classify, usable_cores
from perfmod.measure.lock import measuring_lock

__all__ = ["RETRIES_ENV", "BUDGET_ENV", "default_retries", "rerun_budget", "run_mpi", "run_mpi_once",
           "rerun_while_interfered", "run_mpi_batch", "run_mpi_jobs", "batch_order"]

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
    lines, over, cores = _launch(module, nprocs, list(map(str, args)), timeout)
    return _classified(json.loads(lines[-1]), module, nprocs, args, over, cores)


def _launch(module: str, nprocs: int, args: list[str], timeout: float) -> tuple[list[str], bool, int]:
    """``mpiexec`` of ``python -m module args``: rank 0's JSON lines (at least one), oversubscribed, usable cores."""
    cores = usable_cores()
    over = nprocs > cores
    cmd = [str(mpiexec_path()), "-n", str(nprocs)] + ([] if over else ["-bind-to", "core"])
    cmd += [sys.executable, "-m", module, *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"{module} on {nprocs} ranks did not finish in {timeout} s") from None
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"{module} printed no result line:\n{proc.stdout[-1000:]}")
    return lines, over, cores


def _classified(out: dict[str, Any], module: str, nprocs: int, args: Sequence[Any], over: bool,
                cores: int) -> dict[str, Any]:
    """A run's result line with ``oversubscribed``, ``command`` and the verdict on its probe report."""
    out["oversubscribed"] = over
    shown = ["mpiexec", "-n", str(nprocs), *([] if over else ["-bind-to", "core"]), "python -m", module,
             *map(str, args)]
    out["command"] = " ".join(shown)
    report = out.get("interference")
    if report:
        v = classify(report, oversubscribed=over, cores=cores)
        out.update(interfered=v.interfered, interference_reason=v.reason, off_cpu=v.off_cpu)
    else:
        out.update(interfered=False, interference_reason=f"not probed: {module} prints no interference report",
                   off_cpu=float("nan"))
    return out


def _ranks(nprocs: Any) -> int:
    """``nprocs`` as an int, or ValueError: a launch's rank count is a positive integer (not a bool)."""
    if isinstance(nprocs, bool) or int(nprocs) != nprocs or nprocs < 1:
        raise ValueError(f"nprocs must be a positive integer, got {nprocs!r}")
    return int(nprocs)


def _held(lock: bool) -> contextlib.AbstractContextManager:
    """The measuring lock held exclusively (``lock``), else nothing."""
    return measuring_lock() if lock else contextlib.nullcontext()


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
    nprocs = _ranks(nprocs)

    def attempt() -> dict[str, Any]:
        with _held(lock):
            return run_mpi_once(module, nprocs, args, timeout)

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

    def launch(todo: list[int]) -> list[dict[str, Any]]:
        res = attempt()
        if "interfered" not in res:
            raise KeyError(f"rerun_while_interfered: the run's result has no 'interfered' verdict; "
                           f"keys: {sorted(res)[:12]}")
        return [res]

    return _rerun_policy(1, launch, retries, retry_wait)[0]


def _rerun_policy(n: int, launch: Callable[[list[int]], list[dict[str, Any]]], retries: int | None,
                  retry_wait: float) -> list[dict[str, Any]]:
    """Runs ``0 .. n - 1``: ``launch(todo)`` measures the runs ``todo`` (their results in order); the
    interfered ones are measured again, at most ``retries`` more times and within :func:`rerun_budget`
    (the results of :func:`rerun_while_interfered`, one per run)."""
    retries = default_retries() if retries is None else retries
    if retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    attempts: list[list[dict[str, Any]]] = [[] for _ in range(n)]
    todo = list(range(n))
    exhausted = False
    for i in range(retries + 1):
        if not todo:
            break
        if i:
            if _spent[0] >= rerun_budget():
                exhausted = True
                break
            time.sleep(retry_wait)
        t0 = time.monotonic()
        results = launch(todo)
        if i:
            _spent[0] += time.monotonic() - t0 + retry_wait
        for k, res in zip(todo, results, strict=True):
            res["attempt"] = i
            attempts[k].append(res)
        todo = [k for k in todo if attempts[k][-1]["interfered"]]
    out = []
    for k, runs in enumerate(attempts):
        res = dict(runs[-1])
        res.update(attempts=runs, n_interfered=sum(bool(a["interfered"]) for a in runs),
                   rerun_budget_exhausted=exhausted and k in todo)
        out.append(res)
    return out


def run_mpi_batch(module: str, nprocs: int, arg_lists: Sequence[Sequence[Any]], timeout: float = 600.0,
                  retries: int | None = None, retry_wait: float = 1.0, lock: bool = True) -> list[dict[str, Any]]:
    """Run each argument list of ``arg_lists`` on ``nprocs`` ranks, all in one launch; re-run the disturbed ones.

    The module's ``main`` must be :func:`perfmod.measure.proxies.ranks.serve`
    (every MPI proxy's): it runs the batch's configurations one after
    another, each probed and printed on its own, so the launch (``mpiexec``
    and Python's start) is paid once per batch.  Each result is what
    :func:`run_mpi` gives for that argument list: classified, ``command``
    the single run's command line, plus ``batch_position`` (its place in the
    launch that measured it).  The interfered runs are launched again
    together, up to ``retries`` times and within :func:`rerun_budget`;
    ``attempts``, ``n_interfered`` and ``rerun_budget_exhausted`` are
    :func:`rerun_while_interfered`'s.  ``timeout`` is per run.
    """
    nprocs = _ranks(nprocs)
    lists = [[str(a) for a in args] for args in arg_lists]

    def launch(todo: list[int]) -> list[dict[str, Any]]:
        with _held(lock):
            return _batch_once(module, nprocs, [lists[k] for k in todo], timeout)

    return _rerun_policy(len(lists), launch, retries, retry_wait)


def _batch_once(module: str, nprocs: int, lists: list[list[str]], timeout: float) -> list[dict[str, Any]]:
    """One launch of ``module --batch FILE`` over ``lists``: each run's classified result, in order."""
    from perfmod.measure.proxies.ranks import BATCH_FLAG

    with tempfile.TemporaryDirectory(prefix="perfmod-batch-") as tmp:
        path = Path(tmp) / "batch.json"
        path.write_text(json.dumps({"runs": lists}), encoding="utf-8")
        lines, over, cores = _launch(module, nprocs, [BATCH_FLAG, str(path)], timeout * len(lists))
    got: dict[int, dict[str, Any]] = {}
    for ln in lines:
        rec = json.loads(ln)
        k = rec.pop("batch_index", None)
        if isinstance(k, int) and 0 <= k < len(lists):
            got[k] = rec
    missing = [k for k in range(len(lists)) if k not in got]
    if missing:
        raise RuntimeError(f"{module} --batch printed no result for run(s) {missing[:5]} of {len(lists)} "
                           f"(first missing: {' '.join(lists[missing[0]])})")
    out = []
    for k, args in enumerate(lists):
        res = _classified(got[k], module, nprocs, args, over, cores)
        res["batch_position"] = k
        out.append(res)
    return out


def batch_order(nprocs: Sequence[int], batch_size: int = 16) -> list[int]:
    """A measurement order in batches: the positions of ``nprocs`` (each job's rank count, in a study's seeded
    random order) regrouped so that the jobs of one rank count come in batches of at most ``batch_size``, in
    their own order, the rank counts' batches taking turns (neither count is measured all in one stretch of the
    session); :func:`run_mpi_jobs` of the jobs in this order launches each batch once."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    groups: dict[int, list[int]] = {}
    for j, p in enumerate(nprocs):
        groups.setdefault(int(p), []).append(j)
    queues = [[idx[s:s + batch_size] for s in range(0, len(idx), batch_size)] for idx in groups.values()]
    return [j for turn in range(max(map(len, queues), default=0)) for q in queues if turn < len(q) for j in q[turn]]


def run_mpi_jobs(module: str, jobs: Sequence[tuple[int, Sequence[Any]]], batch_size: int = 16,
                 progress: bool = True, desc: str = "", **kwargs: Any) -> list[dict[str, Any]]:
    """Every ``(nprocs, args)`` job of a campaign, in the order given, consecutive jobs of one rank count
    sharing a launch (at most ``batch_size`` per launch; :func:`batch_order` makes such an order).

    Returns the results in the jobs' order (:func:`run_mpi_batch`'s; ``kwargs`` are its own).  Batch
    what the proxy times inside its loop: the first run of a launch pays first-touch costs (page faults,
    first calls) that its successors do not, which a whole-run time or overhead includes.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    from tqdm.auto import tqdm

    out: list[dict[str, Any]] = []
    with tqdm(total=len(jobs), desc=desc or module, disable=not progress) as bar:
        j = 0
        while j < len(jobs):
            p = int(jobs[j][0])
            end = j + 1
            while end < len(jobs) and end - j < batch_size and int(jobs[end][0]) == p:
                end += 1
            out += run_mpi_batch(module, p, [args for _, args in jobs[j:end]], **kwargs)
            bar.update(end - j)
            j = end
    return out
