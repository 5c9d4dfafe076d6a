"""MPI ping-pong and multi-pair ping-pong on this machine (paper 000 §2.1, §4.1).

:func:`run_pingpong` launches :mod:`perfmod.bench._pingpong_worker` with the
virtual environment's own ``mpiexec`` (the ``mpich`` wheel), ``2k`` ranks for
k pairs, bound to cores, and returns an xarray Dataset over (``pairs``,
``msg_bytes``, ``rep``) with the one-way time ``t_oneway`` (s).  Runs with
more ranks than cores are marked ``oversubscribed`` (MPICH busy-polls, so
such runs measure time slicing as much as messaging) and are not bound.

Results go to ``data/raw/<host>/pingpong.nc``; an existing measurement is
never overwritten: the new one is written as ``pingpong-<UTC time>.nc`` next
to it.  An explicit ``out`` that exists raises :class:`FileExistsError`.

Command line: ``python -m perfmod.bench.pingpong --help``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform as pyplatform
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr
from tqdm.auto import tqdm

from ..io import annotate, write_dataset
from ..paths import host_name, raw_dir

__all__ = ["DEFAULT_SIZES", "cpu_model", "mpiexec_path", "run_pingpong", "default_output", "main"]

DEFAULT_SIZES = tuple(sorted({int(2**e) for e in np.arange(3, 22.5, 0.5)}))  # 8 B .. 4 MiB, two per octave


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (or the platform module)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return pyplatform.processor() or "unknown"


def mpiexec_path() -> Path:
    """The ``mpiexec`` of this Python's environment (installed by the ``mpich`` wheel)."""
    path = Path(sys.executable).parent / "mpiexec"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: install perfmod's dependencies (the mpich wheel) with make setup")
    return path


def default_output() -> Path:
    """``data/raw/<host>/pingpong.nc``, or a timestamped name beside it if that exists."""
    path = raw_dir() / "pingpong.nc"
    if path.exists():
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        path = path.with_name(f"pingpong-{stamp}.nc")
    return path


def _launch(nranks: int, sizes: Sequence[int], reps: int, warmup: int, timeout: float, bind: bool,
            progress: tqdm | None) -> tuple[dict, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "pp.npz"
        cmd = [str(mpiexec_path()), "-n", str(nranks)]
        if bind:
            cmd += ["-bind-to", "core"]
        cmd += [sys.executable, "-m", "perfmod.bench._pingpong_worker", "--sizes", ",".join(map(str, sizes)),
                "--reps", str(reps), "--warmup", str(warmup), "--out", str(out)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        stderr_lines = []
        try:
            assert proc.stderr is not None
            deadline = dt.datetime.now() + dt.timedelta(seconds=timeout)
            for line in proc.stderr:
                stderr_lines.append(line)
                if progress is not None and line.startswith("pingpong:"):
                    progress.update(1)
                if dt.datetime.now() > deadline:
                    raise subprocess.TimeoutExpired(cmd, timeout)
            proc.wait(timeout=max(1.0, (deadline - dt.datetime.now()).total_seconds()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            msg = f"ping-pong with {nranks} ranks did not finish in {timeout} s: {' '.join(cmd)}"
            raise TimeoutError(msg) from None
        if proc.returncode != 0 or not out.exists():
            err = "".join(line for line in stderr_lines if not line.startswith("pingpong:"))
            raise RuntimeError(f"ping-pong failed (exit {proc.returncode}): {' '.join(cmd)}\n{err[-2000:]}")
        data = dict(np.load(out))
    return data, cmd


def run_pingpong(
    sizes: Sequence[int] | None = None,
    pairs: Sequence[int] = (1,),
    reps: int = 20,
    warmup: int = 5,
    out: str | Path | None = None,
    timeout: float = 600.0,
    write: bool = True,
    progress: bool = True,
) -> xr.Dataset:
    """Measure one-way message times with k = each of ``pairs`` pairs at once.

    Parameters
    ----------
    sizes : sequence of int, optional
        Message sizes in bytes (default :data:`DEFAULT_SIZES`, 8 B to 4 MiB).
    pairs : sequence of int
        Numbers of concurrent pairs k (2k ranks each run).
    reps, warmup : int
        Timed samples and untimed warm-up round trips per size.
    out : path, optional
        Output file; default :func:`default_output`.  An existing explicit
        path raises :class:`FileExistsError`.
    timeout : float
        Seconds allowed per mpiexec run.
    write : bool
        Write the dataset (False: only return it).
    progress : bool
        Progress bar over sizes.

    Returns
    -------
    xarray.Dataset
        ``t_oneway`` (s) over (``pairs``, ``msg_bytes``, ``rep``), with
        ``inner`` (round trips per sample) and provenance attributes.
    """
    sizes = sorted(int(s) for s in (sizes or DEFAULT_SIZES))
    if not sizes or sizes[0] <= 0:
        raise ValueError(f"sizes must be positive byte counts, got {sizes[:5]}")
    if reps < 1 or warmup < 0:
        raise ValueError(f"need reps >= 1 and warmup >= 0, got reps={reps}, warmup={warmup}")
    pairs = sorted(int(k) for k in pairs)
    if pairs[0] < 1:
        raise ValueError(f"pairs must be >= 1, got {pairs}")
    if out is not None and Path(out).exists() and write:
        raise FileExistsError(f"{out} exists; refusing to overwrite a measurement")
    ncores = os.cpu_count() or 1
    t = np.zeros((len(pairs), len(sizes), reps))
    inner = np.zeros((len(pairs), len(sizes)), dtype=np.int64)
    cmds, binding = [], []
    bar = tqdm(total=len(pairs) * len(sizes), desc="ping-pong", unit="size", disable=not progress)
    mpi_version = ""
    for i, k in enumerate(pairs):
        bind = 2 * k <= ncores
        try:
            data, cmd = _launch(2 * k, sizes, reps, warmup, timeout, bind, bar)
        except RuntimeError:
            if not bind:
                raise
            warnings.warn("mpiexec -bind-to core failed; measuring without binding", stacklevel=2)
            bind = False
            data, cmd = _launch(2 * k, sizes, reps, warmup, timeout, bind, bar)
        t[i], inner[i] = data["t_oneway"], data["inner"]
        mpi_version = str(data["mpi_version"])
        cmds.append(" ".join(Path(c).name if j < 1 else c for j, c in enumerate(cmd)))
        binding.append("core" if bind else "none")
    bar.close()
    oversub = np.array([2 * k > ncores for k in pairs])
    ds = xr.Dataset(
        {"t_oneway": (("pairs", "msg_bytes", "rep"), t), "inner": (("pairs", "msg_bytes"), inner)},
        coords={"pairs": pairs, "msg_bytes": sizes, "rep": np.arange(reps),
                "oversubscribed": ("pairs", oversub)},
    )
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    ds = annotate(
        ds, study="pingpong",
        source=f"measurement: MPI ping-pong by perfmod.bench.pingpong on {host_name()}, {now}",
        parameters={"sizes": sizes, "pairs": pairs, "reps": reps, "warmup": warmup},
        meta={
            "t_oneway": ("s", "one-way message time (half a round trip; slowest of the concurrent pairs)"),
            "inner": ("1", "round trips averaged per sample"),
            "msg_bytes": ("B", "message size"),
            "pairs": ("1", "pairs communicating at once (k)"),
            "rep": ("1", "sample index"),
            "oversubscribed": ("1", "more MPI ranks than cores"),
        },
    )
    ds.attrs.update(
        host=host_name(), cpu=cpu_model(), cores=ncores, date_utc=now, mpi_library=mpi_version,
        mpi4py_version=__import__("mpi4py").__version__, command=" | ".join(cmds), binding=",".join(binding),
        oversubscribed=int(oversub.any()),
        note="other processes on the machine may perturb timings; medians over reps are robust to that",
    )
    if write:
        path = Path(out) if out is not None else default_output()
        write_dataset(ds, path, overwrite=False)
        ds.attrs["path"] = str(path)
    return ds


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: measure and write ``data/raw/<host>/pingpong*.nc``."""
    ap = argparse.ArgumentParser(prog="python -m perfmod.bench.pingpong", description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", help="comma-separated sizes in bytes (default 8 B .. 4 MiB)")
    ap.add_argument("--pairs", default="1", help="comma-separated numbers of concurrent pairs (default 1)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--out", help="output .nc (must not exist)")
    ap.add_argument("--timeout", type=float, default=600.0)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    ds = run_pingpong(sizes, [int(k) for k in args.pairs.split(",")], args.reps, args.warmup, args.out, args.timeout)
    med = ds.t_oneway.median("rep")
    for k in ds.pairs.values:
        for n in ds.msg_bytes.values:
            print(f"k={k} {n:>9d} B  {float(med.sel(pairs=k, msg_bytes=n)) * 1e6:10.3f} us")
    print(f"written: {ds.attrs['path']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
