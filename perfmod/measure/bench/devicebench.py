"""Device microbenchmarks: memory bandwidth and arithmetic rates as a QRoof device row.

Paper 000 §3.3 step (1): "generate GPU parameter files for different types of
GPUs by executing a micro-benchmark" (flop/s, DRAM bandwidth, ...).  These are
perfmod's own microbenchmarks, written once against an array module ``xp``
(:mod:`perfmod.measure.bench.xp`), so the local CPU (NumPy) and a GPU (CuPy) become
devices in the layout of the quantitative-roofline toolkit
(ekondis/gpuroofperf-toolkit: ``GFLOPS - SP``, ``GFLOPS - DP``,
``GIOPS - MAD``, ``GBSEC - DRAM``, ``GBSEC - L2``, ``GOPS - SHMEM``,
``GIOPS - ADD``; 1e9 per second).

Benchmarks
----------
triad
    STREAM-like ``a = b + s * c``, as the proxies compute: two element-wise
    passes (``multiply(c, s, out=a)``, ``add(a, b, out=a)``).  Bytes are
    counted as the memory system moves them (:func:`traffic_bytes`): every
    array a pass reads, every array it writes, and on a CPU one more read per
    written array that the pass does not also read (write-allocate: the line
    is fetched before it is overwritten).  That is 6 streams per element on
    the CPU (3 reads, 2 writes, 1 allocation), 5 on a GPU.  The same rule
    counts the proxies' kernels (:mod:`perfmod.measure.proxies.jacobi2d`), so the
    bandwidth and the kernels' bytes agree by construction.  Run at a
    working set far beyond the last-level cache (``GBSEC - DRAM``) and at one
    that fits in L2 (``GBSEC - L2``).
fma
    ``x = a * x + b`` repeated ``m`` times over a cache-resident array: the
    arithmetic ceiling.  NumPy runs it as two element-wise passes (no fused
    multiply-add; op-mix efficiency 0.5 in the toolkit's terms), CuPy as one
    fused kernel with ``m`` FMAs per element (efficiency 1).  The device row
    holds the *peak* in the toolkit's convention (all operations fused):
    measured flop/s divided by the benchmark's op-mix efficiency, so that a
    kernel's unfused flops predicted at ``peak * 0.5`` take the measured
    rate.  Double and single precision, and integer multiply-add / add.
copy (CPU) / shared memory (GPU)
    ``GOPS - SHMEM``: on a GPU, loads from shared memory in a raw kernel; a
    CPU has no shared memory, so the analogue is an L1-resident copy counted
    as one load and one store per element (documented in the row's source).

With ``ranks > 1`` the benchmark runs on that many MPI ranks at once, each on
its own arrays, released together by a barrier: the row is then one rank's
share of the machine when all ranks stream (the CPU analogue of one GPU per
rank), the slowest rank's rate.

Measurements go to ``data/raw/<host>/devicebench-<backend>-r<ranks>-<UTC>.nc``
(never overwritten) with provenance; :func:`device_row` turns one into the
seven toolkit columns and :func:`write_device_csv` writes them as a CSV row
(the command line writes it beside the dataset, ``.csv``), which
:func:`perfmod.machine.devices.read_devices` reads as an extra device table.

Command line: ``python -m perfmod.measure.bench.devicebench --help``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform as pyplatform
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import xarray as xr

from perfmod.core.io import annotate, atomic_path, write_dataset
from perfmod.core.paths import host_name, raw_dir
from perfmod.machine.devices import DEVICE_COLUMNS
from perfmod.measure.bench.xp import array_module, backend_info, synchronize
from perfmod.measure.host import cpu_model
from perfmod.measure.interference import Probe, classify, gather_reports
from perfmod.models.roofline.traffic import traffic_bytes

__all__ = [
    "triad",
    "triad_bytes",
    "fma",
    "run_devicebench",
    "measure_devices",
    "device_row",
    "write_device_csv",
    "main",
]

#: Default sizes: array lengths (elements) beyond the caches (a 32 MiB L3: 64 MiB per array), in L2
#: (3 x 256 KiB < 1 MiB per core) and for the cache-resident arithmetic kernels, and the repetitions
#: inside one timed sample.  On the CPU a sample lasted 30-60 ms (measured on 2026-11-22, development
#: VM; see commit 0644d60), several scheduler time slices, like one iteration of the proxies: on a
#: shared machine the rates are then those a long-running rank gets, not those of a burst that fits
#: in one time slice.
DEFAULTS = {"numpy": {"dram": 1 << 23, "dram_inner": 6, "l2": 1 << 15, "l2_inner": 4096, "fma": 1 << 14,
                      "fma_iters": 4096},
            "cupy": {"dram": 1 << 27, "dram_inner": 1, "l2": 1 << 20, "l2_inner": 64, "fma": 1 << 24,
                     "fma_iters": 2048}}


def _timed(xp: ModuleType, fn: Any, reps: int, comm: Any = None) -> np.ndarray:
    """Seconds of each of ``reps`` calls of ``fn`` (one untimed first), device synchronized."""
    fn()
    synchronize(xp)
    out = np.empty(reps)
    for r in range(reps):
        if comm is not None:
            comm.Barrier()
        t0 = time.perf_counter()
        fn()
        synchronize(xp)
        out[r] = time.perf_counter() - t0
    return out


def triad(xp: ModuleType, n: int, reps: int = 10, inner: int = 1, comm: Any = None) -> tuple[np.ndarray, int]:
    """Time ``inner`` triads ``a = b + s * c`` of ``n`` doubles, ``reps`` times.

    Returns the seconds per repetition and the bytes one repetition moves
    (:func:`traffic_bytes`: 3 reads, 2 writes, 1 allocating write per triad).
    """
    a, b, c = (xp.full(n, v, dtype=xp.float64) for v in (0.0, 1.0, 2.0))
    s = 3.0

    def run() -> None:
        for _ in range(inner):
            xp.multiply(c, s, out=a)
            xp.add(a, b, out=a)

    t = _timed(xp, run, reps, comm)
    if not float(a[0]) == 7.0:  # 1 + 3 * 2: the passes computed what they claim
        raise RuntimeError(f"triad computed {float(a[0])}, expected 7.0")
    return t, inner * triad_bytes(xp, n)


def triad_bytes(xp: ModuleType, n: int) -> int:
    """Bytes one triad of ``n`` doubles moves (:func:`traffic_bytes`; write-allocate on the CPU)."""
    return traffic_bytes(n, 8, reads=3, writes=2, allocating=1, write_allocate=xp.__name__ == "numpy")


_FMA_SRC = "T y = x; for (int i = 0; i < m; ++i) { y = a * y + b; } x = y;"
# integer adds: the xor keeps the compiler from folding the loop into y + m * b (2 add-class ops per step)
_ADD_SRC = "T y = x; T c = b; for (int i = 0; i < m; ++i) { y = y + c; c = c ^ (T)i; } x = y;"


def fma(xp: ModuleType, n: int, iters: int, dtype: str = "float64", op: str = "mad", reps: int = 10,
        comm: Any = None) -> tuple[np.ndarray, float, float]:
    """Time ``iters`` updates ``x = a * x + b`` (``op="mad"``) or ``x = x + b`` (``op="add"``) of ``n`` elements.

    Returns the seconds per repetition, the operations per repetition
    (a multiply-add counts 2, an add 1; on a GPU the add loop also does an
    xor per step, counted as a second add-class operation) and the op-mix efficiency of the
    implementation (fraction of operations issued as fused multiply-adds,
    the toolkit's ``ops / (2 * (ops - fmas))``: 0.5 unfused, 1.0 fused).
    """
    if op not in ("mad", "add"):
        raise ValueError(f"fma: op must be 'mad' or 'add', got {op!r}")
    is_int = np.dtype(dtype).kind in "iu"
    a, b = (1, 1) if is_int else (0.999999, 1e-6)
    x = xp.ones(n, dtype=dtype)
    if xp.__name__ == "numpy":
        def run() -> None:
            for _ in range(iters):
                if op == "mad":
                    np.multiply(x, a, out=x)
                np.add(x, b, out=x)
        mix = 0.5 if op == "mad" else 1.0
    else:
        kern = xp.ElementwiseKernel("T a, T b, int32 m", "T x", _FMA_SRC if op == "mad" else _ADD_SRC,
                                    f"perfmod_{op}_loop")
        av, bv = xp.asarray(a, dtype=dtype), xp.asarray(b, dtype=dtype)

        def run() -> None:
            kern(av, bv, np.int32(iters), x)
        mix = 1.0
    t = _timed(xp, run, reps, comm)
    per_step = 2 if op == "mad" or xp.__name__ != "numpy" else 1
    ops = float(n) * iters * per_step
    return t, ops, mix


_SHMEM_SRC = r"""
extern "C" __global__ void perfmod_shmem(float* out, int m) {
    __shared__ float s[1024];
    int t = threadIdx.x;
    s[t] = (float)t;
    __syncthreads();
    float acc = 0.0f;
    for (int i = 0; i < m; ++i) {
        acc += s[(t + i) & 1023];
    }
    out[blockIdx.x * blockDim.x + t] = acc;
}
"""


def shared_ops(xp: ModuleType, n: int, iters: int, reps: int = 10, comm: Any = None) -> tuple[np.ndarray, float]:
    """On-chip memory operations: GPU shared-memory loads, or an L1-resident copy on the CPU.

    Returns the seconds per repetition and the memory operations per
    repetition (GPU: one shared-memory load per thread and iteration; CPU:
    one load and one store per element copied).
    """
    if xp.__name__ == "numpy":
        src, dst = np.ones(n), np.empty(n)

        def run() -> None:
            for _ in range(iters):
                np.copyto(dst, src)
        return _timed(xp, run, reps, comm), 2.0 * n * iters
    kern = xp.RawKernel(_SHMEM_SRC, "perfmod_shmem")
    block = 1024
    grid = max(n // block, 1)
    out = xp.empty(grid * block, dtype=xp.float32)

    def run_gpu() -> None:
        kern((grid,), (block,), (out, np.int32(iters)))
    return _timed(xp, run_gpu, reps, comm), float(grid) * block * iters


def run_devicebench(backend: str = "numpy", reps: int = 10, sizes: Mapping[str, int] | None = None,
                    comm: Any = None) -> dict[str, Any]:
    """Run every benchmark once on this process (and its MPI peers if ``comm`` is given).

    Returns a JSON-able dict: per benchmark the seconds of every repetition,
    the work per repetition (bytes or operations) and the op-mix efficiency.
    """
    xp = array_module(backend)
    sz = dict(DEFAULTS[backend]) | dict(sizes or {})
    res: dict[str, Any] = {"sizes": sz}
    for name, n, inner in (("triad_dram", sz["dram"], sz["dram_inner"]), ("triad_l2", sz["l2"], sz["l2_inner"])):
        t, nbytes = triad(xp, n, reps, inner, comm)
        res[name] = {"t": t.tolist(), "work": nbytes, "unit": "B", "opmix": 1.0, "n": n}
    for name, dtype, op in (("fma_dp", "float64", "mad"), ("fma_sp", "float32", "mad"),
                            ("int_mad", "int64" if backend == "numpy" else "int32", "mad"),
                            ("int_add", "int64" if backend == "numpy" else "int32", "add")):
        t, ops, mix = fma(xp, sz["fma"], sz["fma_iters"], dtype, op, reps, comm)
        res[name] = {"t": t.tolist(), "work": ops, "unit": "op", "opmix": mix, "n": sz["fma"], "dtype": dtype}
    t, ops = shared_ops(xp, 4096 if backend == "numpy" else sz["l2"], sz["fma_iters"], reps, comm)
    res["shmem"] = {"t": t.tolist(), "work": ops, "unit": "op", "opmix": 1.0}
    res["info"] = backend_info(xp)
    return res


BENCHES = ("triad_dram", "triad_l2", "fma_dp", "fma_sp", "int_mad", "int_add", "shmem")
LONG = {"triad_dram": "triad a = b + s*c, working set beyond the caches",
        "triad_l2": "triad a = b + s*c, working set in L2",
        "fma_dp": "x = a*x + b, float64, cache-resident", "fma_sp": "x = a*x + b, float32, cache-resident",
        "int_mad": "x = a*x + b, integer", "int_add": "x = x + b, integer",
        "shmem": "shared-memory loads (GPU) / L1-resident copy (CPU)"}


def _to_dataset(per_rank: Sequence[dict[str, Any]], backend: str, ranks: int, reps: int) -> xr.Dataset:
    t = np.array([[r[b]["t"] for b in BENCHES] for r in per_rank])  # (rank, bench, rep)
    first = per_rank[0]
    work = np.array([float(first[b]["work"]) for b in BENCHES])
    mix = np.array([float(first[b]["opmix"]) for b in BENCHES])
    unit = np.array([first[b]["unit"] for b in BENCHES])
    ds = xr.Dataset(
        {
            "t": (("rank", "bench", "rep"), t),
            "work": ("bench", work),
            "opmix_efficiency": ("bench", mix),
            "work_unit": ("bench", unit),
        },
        coords={"rank": np.arange(len(per_rank)), "bench": list(BENCHES), "rep": np.arange(t.shape[-1]),
                "description": ("bench", [LONG[b] for b in BENCHES])},
    )
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    ds = annotate(
        ds, study="devicebench",
        source=f"measurement: perfmod.measure.bench.devicebench ({backend}, {ranks} rank(s)) on {host_name()}, {now}",
        parameters={"backend": backend, "ranks": ranks, "reps": reps, "sizes": first["sizes"]},
        meta={"t": ("s", "time of one repetition"),
              "work": ("1", "work per repetition: bytes moved (triads) or operations (others)"),
              "opmix_efficiency": ("1", "fraction of operations issued fused (toolkit op-mix efficiency)"),
              "work_unit": ("1", "unit of work: B or op"),
              "rank": ("1", "MPI rank (all ranks run at once)"), "rep": ("1", "repetition"),
              "bench": ("1", "benchmark"), "description": ("1", "what the benchmark computes")})
    ds.attrs.update({k: str(v) for k, v in first["info"].items()})
    ds.attrs.update(host=host_name(), cpu=cpu_model(), cores=os.cpu_count() or 1, date_utc=now, ranks=ranks,
                    python=pyplatform.python_version(), numpy_version=np.__version__,
                    method="median over repetitions of the slowest rank; see perfmod.measure.bench.devicebench")
    return ds


def measure_devices(backend: str = "numpy", ranks: int = 1, reps: int = 10, sizes: Mapping[str, int] | None = None,
                    out: str | Path | None = None, write: bool = True, timeout: float = 600.0) -> xr.Dataset:
    """Measure one device (``ranks`` concurrent ranks) and write the dataset.

    Parameters
    ----------
    backend : {"numpy", "cupy"}
    ranks : int
        Concurrent MPI ranks (1 runs in this process; more launch ``mpiexec``).
    reps : int
        Timed repetitions of every benchmark.
    sizes : mapping, optional
        Overrides of :data:`DEFAULTS` (``dram``, ``dram_inner``, ``l2``, ``l2_inner``, ``fma``,
        ``fma_iters``).
    out : path, optional
        Output file (must not exist); default
        ``data/raw/<host>/devicebench-<backend>-r<ranks>-<UTC>.nc``.
    write : bool
        Write the dataset (False: only return it).
    timeout : float
        Seconds allowed for an MPI run.

    Returns
    -------
    xarray.Dataset
        ``t`` (s) over (``rank``, ``bench``, ``rep``), ``work`` and
        ``opmix_efficiency`` over ``bench``, provenance attributes and, when
        written, ``path``; attributes ``interfered`` (0/1), ``interference_reason`` and
        ``interfered_attempts_discarded`` (:mod:`perfmod.measure.interference`).
    """
    if ranks < 1 or reps < 1:
        raise ValueError(f"need ranks >= 1 and reps >= 1, got ranks={ranks}, reps={reps}")
    if write and out is not None and Path(out).exists():
        raise FileExistsError(f"{out} exists; refusing to overwrite a measurement (pass another out)")
    if ranks == 1:
        probe = Probe()
        per_rank = [run_devicebench(backend, reps, sizes)]
        verdict = classify(probe.stop())
        res = {"interfered": verdict.interfered, "interference_reason": verdict.reason,
               "n_interfered": int(verdict.interfered)}
        command = f"perfmod.measure.bench.devicebench.measure_devices(backend={backend!r}, reps={reps})"
    else:
        from perfmod.measure.runner import run_mpi

        args = ["--backend", backend, "--reps", reps, "--json", "--sizes", json.dumps(dict(sizes or {}))]
        res = run_mpi("perfmod.measure.bench.devicebench", ranks, args, timeout=timeout)
        per_rank, command = res["per_rank"], res["command"]
    ds = _to_dataset(per_rank, backend, ranks, reps)
    ds.attrs["command"] = command
    ds.attrs["interfered"] = int(res["interfered"])
    ds.attrs["interference_reason"] = res["interference_reason"]
    ds.attrs["interfered_attempts_discarded"] = int(res["n_interfered"]) - int(res["interfered"])
    ds.attrs["oversubscribed"] = int(ranks > (os.cpu_count() or 1) and backend == "numpy")
    if write:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        path = Path(out) if out is not None else raw_dir() / f"devicebench-{backend}-r{ranks}-{stamp}.nc"
        write_dataset(ds, path, overwrite=False)
        ds.attrs["path"] = str(path)
    return ds


def device_row(ds: xr.Dataset) -> dict[str, float]:
    """The seven toolkit columns (1e9 per second) from a :func:`measure_devices` dataset.

    Rates use the median over repetitions of the slowest rank.  Flop and
    integer multiply-add rates are peaks in the toolkit's convention
    (measured rate / op-mix efficiency of the benchmark, see the module
    docstring).
    """
    missing = [b for b in BENCHES if b not in ds.bench.values]
    if missing:
        raise KeyError(f"device_row: the dataset lacks the benchmarks {missing}")
    t = ds.t.max("rank").median("rep")
    rate = (ds.work / t / ds.opmix_efficiency) / 1e9
    r = {b: float(rate.sel(bench=b)) for b in BENCHES}
    return {"GFLOPS - SP": r["fma_sp"], "GFLOPS - DP": r["fma_dp"], "GIOPS - MAD": r["int_mad"],
            "GBSEC - DRAM": r["triad_dram"], "GBSEC - L2": r["triad_l2"], "GOPS - SHMEM": r["shmem"],
            "GIOPS - ADD": r["int_add"]}


def write_device_csv(ds: xr.Dataset, name: str, path: str | Path, overwrite: bool = False) -> Path:
    """Write ``device_row(ds)`` as a toolkit-layout CSV (header comment with provenance; never overwrites)."""
    row = device_row(ds)
    src = ds.attrs.get("source", "")
    lines = [f"# device parameters in the gpuroofperf-toolkit layout (1e9 per second); {src}",
             f"# {ds.attrs.get('path', '')} ; peaks = measured rate / op-mix efficiency of the benchmark; "
             "GOPS - SHMEM on a CPU: L1-resident copy (load + store per element)",
             "Device," + ",".join(DEVICE_COLUMNS),
             f"{name}," + ",".join(f"{row[c]:.6g}" for c in DEVICE_COLUMNS)]
    with atomic_path(path, overwrite=overwrite) as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    return Path(path)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: measure this device; under ``mpiexec`` with ``--json`` print every rank's result."""
    ap = argparse.ArgumentParser(prog="python -m perfmod.measure.bench.devicebench",
                                 description="Triad bandwidth and FMA rates as a QRoof device row (paper 000 §3.3).")
    ap.add_argument("--backend", default="numpy", choices=("numpy", "cupy"))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--ranks", type=int, default=1, help="concurrent ranks (launches mpiexec when > 1)")
    ap.add_argument("--sizes", default="{}", help='JSON overrides, e.g. \'{"dram": 4194304}\'')
    ap.add_argument("--out", help="output .nc (must not exist)")
    ap.add_argument("--json", action="store_true", help="worker mode: print all ranks' results as JSON (rank 0)")
    args = ap.parse_args(argv)
    sizes = json.loads(args.sizes)
    if args.json:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        probe = Probe()
        res = run_devicebench(args.backend, args.reps, sizes, comm if comm.Get_size() > 1 else None)
        probed = gather_reports(comm, probe.stop())
        allres = comm.gather(res, root=0)
        if comm.Get_rank() == 0:
            print(json.dumps({"per_rank": allres, "interference": probed}))
        return 0
    ds = measure_devices(args.backend, args.ranks, args.reps, sizes, args.out)
    csv = write_device_csv(ds, f"{args.backend} on {host_name()} ({args.ranks} rank(s) at once)",
                           Path(ds.attrs["path"]).with_suffix(".csv"))
    for col, v in device_row(ds).items():
        print(f"{col:>14s}: {v:10.3f}")
    print(f"written: {ds.attrs['path']} and the device row {csv}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
