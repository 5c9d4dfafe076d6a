"""MPI ping-pong and multi-pair ping-pong on this machine (paper 000 §2.1, §4.1).

:func:`run_pingpong` launches :mod:`perfmod.measure.bench._pingpong_worker` with the
virtual environment's own ``mpiexec`` (the ``mpich`` wheel's hydra), ``2k``
ranks for k pairs (rank i paired with rank i + k), and returns an xarray
Dataset over (``pairs``, ``msg_bytes``, ``rep``) with the one-way time
``t_oneway`` (s) of every repetition (the slowest of the k concurrent pairs).
The sizes are measured in interleaved sweeps, each in a seeded random order,
so that load from other processes spreads over all sizes as a few outlying
repetitions instead of shifting a run of consecutive sizes.

Binding: ranks are bound to cores (``-bind-to core``) when ``2k`` fits in the
cores; if the bound run fails, it is repeated unbound with a warning, and
the dataset's ``binding`` says which.  More ranks than cores are run unbound
and marked ``oversubscribed`` (coordinate over ``pairs`` and global attr).
They do not hang: MPICH's shared-memory progress loop busy-polls but yields
the core every ``MPIR_CVAR_POSIX_POLL_FREQUENCY`` (1000) polls, so such runs
finish, but what they measure is mostly the scheduler's time slicing.

Output: ``data/raw/<host>/pingpong.nc`` by default.  A measurement is never
overwritten: if that file exists the new one is written as
``pingpong-<UTC time>.nc`` beside it (and a line on stderr says so); an
explicit ``out`` that exists raises :class:`FileExistsError` before anything
is measured.

Other processes on the machine perturb the timings; medians over ``rep`` are
robust to that, and the 1-minute load average before and after each run is
kept in the dataset (``load_before``, ``load_after``), with the fraction
of CPU time the hypervisor took from this virtual machine (``cpu_steal``).

Command line: ``python -m perfmod.measure.bench.pingpong --help``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import os
import platform as pyplatform
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr
from tqdm.auto import tqdm

from perfmod.core.io import annotate, write_dataset
from perfmod.core.paths import host_name, raw_dir, repo_root
from perfmod.measure.host import cpu_model, mpiexec_path, socket_count
from perfmod.measure.interference import FIELDS, Verdict, classify
from perfmod.measure.lock import measuring_lock

__all__ = [
    "DEFAULT_SIZES",
    "default_output",
    "run_pingpong",
    "summarize",
    "main",
]

#: Powers of two from 8 B to 4 MiB, plus points around MPICH's shared-memory
#: thresholds (``mpivars`` of the mpich 5.0.2 wheel): the 8 KiB iqueue cell
#: (``MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE``, also the CMA single-copy
#: threshold), the 64 KiB XPMEM threshold and the 512 KiB the 64 cells hold.
DEFAULT_SIZES: tuple[int, ...] = tuple(sorted(
    {1 << e for e in range(3, 23)}
    | {6144, 7168, 7680, 7936, 10240, 12288}
    | {49152, 98304}
    | {393216, 786432}
))


def default_output() -> Path:
    """``data/raw/<host>/pingpong.nc``, or ``pingpong-<UTC time>.nc`` beside it if that exists."""
    path = raw_dir() / "pingpong.nc"
    if path.exists():
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        path = path.with_name(f"pingpong-{stamp}.nc")
    return path


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def _cpu_ticks() -> np.ndarray:
    """(steal, total) jiffies of all CPUs from /proc/stat (zeros if unavailable)."""
    try:
        f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return np.zeros(2)
    return np.array([f[7] if len(f) > 7 else 0, sum(f[:8])], dtype=float)


def _stop(proc: subprocess.Popen) -> None:
    """End mpiexec and the ranks it started (its own process group)."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _launch(nranks: int, sizes: Sequence[int], reps: int, warmup: int, seed: int, timeout: float, bind: bool,
            progress: tqdm | None) -> tuple[dict, list[str]]:
    """Run the worker on ``nranks`` ranks; return its arrays and the command."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "pp.npz"
        cmd = [str(mpiexec_path()), "-n", str(nranks)] + (["-bind-to", "core"] if bind else [])
        cmd += [sys.executable, "-m", "perfmod.measure.bench._pingpong_worker", "--sizes", ",".join(map(str, sizes)),
                "--reps", str(reps), "--warmup", str(warmup), "--seed", str(seed), "--out", str(out)]
        # own process group, so a timeout ends mpiexec, its proxy and every rank
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        log: list[str] = []
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(cmd, timeout)
                try:
                    line = lines.get(timeout=min(left, 0.5))
                except queue.Empty:
                    continue
                if line is None:
                    break
                log.append(line)
                if progress is not None and line.startswith("pingpong:"):
                    progress.update(1)
            proc.wait(timeout=max(deadline - time.monotonic(), 1.0))
        except subprocess.TimeoutExpired:
            _stop(proc)
            last = next((ln.strip() for ln in reversed(log) if ln.startswith("pingpong:")), "no sweep finished")
            raise TimeoutError(f"ping-pong on {nranks} ranks did not finish in {timeout:g} s (last: {last}); "
                               f"raise timeout= or use fewer sizes/reps: {' '.join(cmd)}") from None
        except BaseException:
            _stop(proc)
            raise
        finally:
            reader.join(timeout=5.0)
            if not reader.is_alive() and proc.stdout is not None:
                proc.stdout.close()
        if proc.returncode != 0 or not out.exists():
            err = "".join(ln for ln in log if not ln.startswith("pingpong:"))
            raise RuntimeError(f"ping-pong failed (exit {proc.returncode}): {' '.join(cmd)}\n{err[-2000:]}")
        with np.load(out) as z:
            data = {name: z[name] for name in z.files}
    return data, cmd


def _shown(cmd: Sequence[str]) -> str:
    """The command as recorded: paths inside the checkout relative to it, the temporary output elided."""
    root = str(repo_root()) + os.sep
    out = [c.replace(root, "") for c in cmd]
    if "--out" in out:
        out[out.index("--out") + 1] = "<tmp>/pp.npz"
    return " ".join(out)


def _mode(sockets: Sequence[str], k: int) -> str:
    """intra_socket / inter_socket from each pair's socket ids, else "unknown"."""
    pair = [(sockets[i], sockets[i + k]) for i in range(k)]
    if any("?" in a or "?" in b or "," in a or "," in b for a, b in pair):
        return "unknown"
    same = {a == b for a, b in pair}
    return "mixed" if len(same) > 1 else ("intra_socket" if same.pop() else "inter_socket")


def run_pingpong(
    sizes: Sequence[int] | None = None,
    pairs: Sequence[int] = (1,),
    reps: int = 20,
    warmup: int = 5,
    out: str | Path | None = None,
    timeout: float = 600.0,
    write: bool = True,
    progress: bool = True,
    seed: int = 0,
) -> xr.Dataset:
    """Measure one-way message times with k = each of ``pairs`` pairs at once.

    Parameters
    ----------
    sizes : sequence of int, optional
        Message sizes in bytes (default :data:`DEFAULT_SIZES`, 8 B to 4 MiB).
    pairs : sequence of int
        Numbers of concurrent pairs k (one mpiexec run of 2k ranks each).
    reps : int
        Timed samples per size (all kept, dimension ``rep``), taken in
        interleaved sweeps over the sizes (see :mod:`._pingpong_worker`).
    warmup : int
        Untimed sweeps before the timed ones.
    out : path, optional
        Output file.  Default: :func:`default_output` (a timestamped name if
        ``pingpong.nc`` exists).  An explicit path that exists raises
        :class:`FileExistsError`.
    timeout : float
        Seconds allowed per mpiexec run; past it the run is ended and
        :class:`TimeoutError` raised.
    write : bool
        Write the dataset (False: only return it).
    progress : bool
        Progress bar over pairs x sweeps (one sweep measures every size once).
    seed : int
        Seed of the random size order of each sweep.

    Returns
    -------
    xarray.Dataset
        ``t_oneway`` (s) over (``pairs``, ``msg_bytes``, ``rep``); ``inner``
        (round trips per sample); coordinates ``oversubscribed`` and ``mode``
        over ``pairs``; ``load_before``/``load_after``; ``interfered`` and
        ``off_cpu`` over (``pairs``, ``rep``): each timed sweep (one sample of
        every size) classified on its own by
        :func:`perfmod.measure.interference.classify`, kept, not re-run (the
        calibration fits the medians of the clean sweeps), and
        ``interference_reason`` over ``pairs`` (how many sweeps were
        interfered, the worst, the whole run's verdict); provenance attributes
        (host, cpu, date, MPI library, mpi4py, command, binding, rank cores)
        and, when written, ``path``.
    """
    sizes = sorted({int(s) for s in (DEFAULT_SIZES if sizes is None else sizes)})
    if not sizes or sizes[0] <= 0:
        raise ValueError(f"sizes must be positive byte counts, got {sizes[:5]}")
    if reps < 1 or warmup < 0:
        raise ValueError(f"need reps >= 1 and warmup >= 0, got reps={reps}, warmup={warmup}")
    pairs = sorted({int(k) for k in pairs})
    if not pairs or pairs[0] < 1:
        raise ValueError(f"pairs must be >= 1, got {pairs}")
    if write and out is not None and Path(out).exists():
        raise FileExistsError(f"{out} exists; refusing to overwrite a measurement (pass another out)")
    ncores = os.cpu_count() or 1
    t = np.zeros((len(pairs), len(sizes), reps))
    inner = np.zeros((len(pairs), len(sizes)), dtype=np.int64)
    load = np.zeros((2, len(pairs)))
    steal = np.zeros(len(pairs))
    verdicts: list[Verdict] = []
    rep_flags = np.zeros((len(pairs), reps), bool)
    rep_off = np.full((len(pairs), reps), np.nan)
    cmds, binding, modes, placement = [], [], [], []
    mpi_version, tick = "", float("nan")
    sweeps = warmup + reps
    with tqdm(total=len(pairs) * sweeps, desc="ping-pong", unit="sweep", disable=not progress) as bar:
        for i, k in enumerate(pairs):
            bind = 2 * k <= ncores
            load[0, i] = _load()
            ticks = _cpu_ticks()
            try:
                with measuring_lock():
                    data, cmd = _launch(2 * k, sizes, reps, warmup, seed, timeout, bind, bar)
            except RuntimeError as exc:
                if not bind:
                    raise
                warnings.warn(f"mpiexec -bind-to core failed, measuring k={k} unbound:\n{str(exc)[-500:]}",
                              stacklevel=2)
                bind = False
                bar.reset()
                bar.update(i * sweeps)
                with measuring_lock():
                    data, cmd = _launch(2 * k, sizes, reps, warmup, seed, timeout, bind, bar)
            load[1, i] = _load()
            d = _cpu_ticks() - ticks
            steal[i] = d[0] / d[1] if d[1] > 0 else np.nan
            t[i], inner[i] = data["t_oneway"], data["inner"]
            report = {f: data[f"probe_{f}"].tolist() for f in FIELDS if f"probe_{f}" in data}
            whole = (classify(report, oversubscribed=2 * k > ncores, cores=ncores) if report
                     else Verdict(False, "not probed", float("nan")))
            per = [classify({f: data[f"sweep_{f}"][r].tolist() for f in FIELDS if f"sweep_{f}" in data},
                            oversubscribed=2 * k > ncores, cores=ncores) for r in range(reps)
                   if "sweep_wall_s" in data]
            if per:  # each timed sweep (one sample of every size) judged on its own
                rep_flags[i] = [v.interfered for v in per]
                rep_off[i] = [v.off_cpu for v in per]
                worst = max(range(reps), key=lambda r: rep_off[i, r])
                whole = Verdict(bool(rep_flags[i].any()), f"{int(rep_flags[i].sum())} of {reps} timed sweeps "
                                f"interfered (worst, sweep {worst}: {per[worst].reason}); whole run: {whole.reason}",
                                whole.off_cpu)
            else:
                rep_flags[i], rep_off[i] = whole.interfered, whole.off_cpu
            verdicts.append(whole)
            mpi_version, tick = str(data["mpi_version"]), float(data["wtime_resolution"])
            sockets = [str(s) for s in data["rank_sockets"]]
            modes.append(_mode(sockets, k))
            placement.append(f"k={k}: " + " ".join(f"r{r}:cpu{c}/socket{s}" for r, (c, s) in
                                                   enumerate(zip(data["rank_cpus"], sockets, strict=True))))
            cmds.append(_shown(cmd))
            binding.append("core" if bind else "none")
    oversub = np.array([2 * k > ncores for k in pairs])
    ds = xr.Dataset(
        {
            "t_oneway": (("pairs", "msg_bytes", "rep"), t),
            "inner": (("pairs", "msg_bytes"), inner),
            "load_before": ("pairs", load[0]),
            "load_after": ("pairs", load[1]),
            "cpu_steal": ("pairs", steal),
            "interfered": (("pairs", "rep"), rep_flags),
            "off_cpu": (("pairs", "rep"), rep_off),
            "interference_reason": ("pairs", np.array([v.reason for v in verdicts], dtype=str)),
        },
        coords={"pairs": pairs, "msg_bytes": sizes, "rep": np.arange(reps),
                "oversubscribed": ("pairs", oversub), "mode": ("pairs", np.array(modes, dtype=str))},
    )
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    try:
        wheel = importlib.metadata.version("mpich")
    except importlib.metadata.PackageNotFoundError:
        wheel = ""
    ds = annotate(
        ds, study="pingpong",
        source=f"measurement: MPI ping-pong by perfmod.measure.bench.pingpong on {host_name()}, {now}",
        parameters={"sizes": sizes, "pairs": pairs, "reps": reps, "warmup": warmup, "seed": seed, "timeout": timeout},
        meta={
            "t_oneway": ("s", "one-way message time (half a round trip; slowest of the concurrent pairs)"),
            "inner": ("1", "round trips averaged per sample"),
            "load_before": ("1", "1-minute load average before the run"),
            "load_after": ("1", "1-minute load average after the run"),
            "cpu_steal": ("1", "fraction of CPU time stolen by the hypervisor during the run (/proc/stat)"),
            "interfered": ("1", "another process took a rank's CPU for a material part of the timed sweep "
                                "(perfmod.measure.interference.classify)"),
            "off_cpu": ("1", "largest fraction of a rank's wall time in the sweep spent waiting for a CPU "
                             "(oversubscribed: share of the cores the ranks did not get)"),
            "interference_reason": ("1", "why the run is (not) flagged interfered"),
            "msg_bytes": ("B", "message size"),
            "pairs": ("1", "pairs communicating at once (k); 2k ranks, rank i paired with rank i + k"),
            "rep": ("1", "sample index"),
            "oversubscribed": ("1", "more MPI ranks than cores (unbound, time-sliced)"),
            "mode": ("1", "communication mode of the pairs (from the sockets of their cores)"),
        },
    )
    ds.attrs.update(
        host=host_name(), cpu=cpu_model(), cores=ncores, sockets=socket_count(), date_utc=now,
        mpi_library=mpi_version,
        mpich_wheel=wheel, mpi4py_version=importlib.metadata.version("mpi4py"),
        python=pyplatform.python_version(), wtime_resolution_s=tick,
        command=" | ".join(cmds), binding=",".join(binding), placement=" | ".join(placement),
        oversubscribed=int(oversub.any()),
        method=("interleaved sweeps over the sizes in a seeded random order (warmup untimed, reps timed); "
                "per sample a barrier, one untimed round trip, then the mean of `inner` timed round trips; "
                "one-way = half a round trip, slowest sender of the k pairs"),
        note=("shared machine: other processes may perturb timings (see load_before/load_after, cpu_steal); "
              "use medians over rep"),
    )
    if write:
        path = Path(out) if out is not None else default_output()
        if out is None and path.name != "pingpong.nc":
            print(f"{path.with_name('pingpong.nc')} exists; writing this measurement to {path}", file=sys.stderr)
        write_dataset(ds, path, overwrite=False)
        ds.attrs["path"] = str(path)
    return ds


def summarize(ds: xr.Dataset) -> xr.Dataset:
    """Median, minimum and quartiles of ``t_oneway`` over ``rep`` (s)."""
    t = ds.t_oneway
    q = t.quantile([0.25, 0.75], dim="rep").drop_vars("quantile")
    out = xr.Dataset({
        "t_median": t.median("rep").assign_attrs(units="s", long_name="one-way time, median over reps"),
        "t_min": t.min("rep").assign_attrs(units="s", long_name="one-way time, minimum over reps"),
        "t_q25": q.isel(quantile=0).assign_attrs(units="s", long_name="one-way time, 25th percentile"),
        "t_q75": q.isel(quantile=1).assign_attrs(units="s", long_name="one-way time, 75th percentile"),
    })
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: measure and write ``data/raw/<host>/pingpong*.nc``."""
    ap = argparse.ArgumentParser(prog="python -m perfmod.measure.bench.pingpong",
                                 description="MPI ping-pong / multi-pair ping-pong on this machine "
                                             "(paper 000 §2.1, §4.1). Never overwrites a measurement.")
    ap.add_argument("--sizes", help="comma-separated sizes in bytes (default: powers of two 8 B .. 4 MiB "
                                    "plus points around MPICH's shared-memory thresholds)")
    ap.add_argument("--pairs", default="1", help="comma-separated numbers of concurrent pairs k (default 1); "
                                                 "2k ranks, more than the cores is marked oversubscribed")
    ap.add_argument("--reps", type=int, default=20, help="timed samples per size, one per sweep (default 20)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed sweeps over all sizes first (default 5)")
    ap.add_argument("--out", help="output .nc (must not exist; default data/raw/<host>/pingpong.nc or a "
                                  "timestamped name beside it)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per mpiexec run (default 600)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random size order per sweep (default 0)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    ds = run_pingpong(sizes, [int(k) for k in args.pairs.split(",")], args.reps, args.warmup, args.out,
                      args.timeout, progress=not args.no_progress, seed=args.seed)
    s = summarize(ds)
    for k in ds.pairs.values:
        over = " (oversubscribed)" if bool(ds.oversubscribed.sel(pairs=k)) else ""
        print(f"k = {k}{over}: size [B], one-way time median / min / q25-q75 [us]")
        for n in ds.msg_bytes.values:
            v = s.sel(pairs=k, msg_bytes=n) * 1e6
            print(f"  {n:>9d}  {float(v.t_median):10.3f} {float(v.t_min):10.3f}  "
                  f"{float(v.t_q25):.3f}-{float(v.t_q75):.3f}")
    print(f"written: {ds.attrs['path']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
