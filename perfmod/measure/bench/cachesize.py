"""The last-level cache a process actually gets, measured: where the triad's bandwidth falls to DRAM's.

The size in ``/sys/devices/system/cpu/cpu0/cache`` is what the hardware (or a
hypervisor) reports, not what a process gets: on the development VM it says
300 MiB for a two-core guest whose triad falls to DRAM bandwidth between 32
and 64 MiB of working set, because the host's other tenants share that cache.
Whether a model's working set "fits in the cache" is a property of the machine
as it runs, so perfmod measures it the way cache sizes are usually measured
from user space: the bandwidth of one streaming kernel (the triad of
:func:`perfmod.measure.bench.devicebench.triad`) over working sets growing
geometrically, and the knee where it drops to the DRAM plateau.

:func:`probe_cache` returns the curve as a dataset; :func:`effective_llc`
reads the knee from it: the last working set before the step down to the
DRAM plateau.  With ``processes=2`` the probe runs in two processes at once,
each on its own core with its own working set: :func:`cache_shared` compares
the two knees to say whether ranks on one node compete for the cache (the knee
per process halves) or each has its own (it stays: the development VM, whose
triad falls at 32-64 MiB per process, alone and beside a second one alike).
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import xarray as xr

from perfmod.measure.bench.devicebench import triad, triad_bytes

__all__ = ["sysfs_llc_bytes", "probe_sizes", "probe_cache", "effective_llc", "cache_shared"]

MiB = 1 << 20
#: Bytes each timed sample moves at least (several scheduler slices at DRAM speed on a CPU).
SAMPLE_BYTES = 256 * MiB


def _sysfs_sizes(root: str | Path = "/sys/devices/system/cpu/cpu0/cache") -> list[int]:
    """Every cache size ``/sys`` reports for CPU 0 (B)."""
    out = []
    for f in Path(root).glob("index*/size"):
        try:
            txt = f.read_text().strip().upper()
            mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(txt[-1:], 1)
            out.append(int(txt.rstrip("KMG")) * mult)
        except (OSError, ValueError):
            continue
    return out


def sysfs_llc_bytes(root: str | Path = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """The largest cache size ``/sys`` reports for CPU 0 (B), 0 when it reports none."""
    return max(_sysfs_sizes(root), default=0)


def probe_sizes(max_bytes: int | None = None, min_bytes: int = MiB, steps_per_octave: int = 2) -> np.ndarray:
    """Working sets (B) from ``min_bytes`` to ``max_bytes`` in ``2**(1/steps_per_octave)`` steps.

    The default top is twice the size ``/sys`` reports (at least 256 MiB), at
    most 1 GiB and a quarter of the machine's memory.
    """
    if max_bytes is None:
        try:
            mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            mem = 4 << 30
        max_bytes = int(min(max(2 * sysfs_llc_bytes(), 256 * MiB), 1 << 30, mem // 4))
    if not 0 < min_bytes < max_bytes:
        raise ValueError(f"probe_sizes: need 0 < min_bytes < max_bytes, got {min_bytes} and {max_bytes}")
    n = int(np.floor(np.log2(max_bytes / min_bytes) * steps_per_octave)) + 1
    return np.unique(np.round(min_bytes * 2.0 ** (np.arange(n) / steps_per_octave)).astype(np.int64))


def probe_cache(sizes: Sequence[int] | None = None, reps: int = 3, sweeps: int = 1, processes: int = 1) -> xr.Dataset:
    """Best triad bandwidth (B/s) at each working set (B: the triad's three arrays together).

    Each of ``sweeps`` passes over the working sets times ``reps`` samples of each; the best of all is
    kept.  Several sweeps spread a working set's samples over the whole probe, so that a burst of
    another process's memory traffic cannot spoil every sample of one size (a shared machine).
    ``processes`` > 1 runs that many probes at once (new processes, each pinned to its own core where
    the machine has enough, starting each working set together), each with the working set of the
    row; the bandwidth is then their mean, what one process gets beside the others.
    """
    sizes = probe_sizes() if sizes is None else np.asarray(sizes, dtype=np.int64)
    if reps < 1 or sweeps < 1 or processes < 1:
        raise ValueError(f"probe_cache: reps, sweeps and processes must be >= 1, got {reps}, {sweeps} and "
                         f"{processes}")
    if processes == 1:
        bw = _probe(sizes, reps, sweeps)
    else:
        ctx = multiprocessing.get_context("spawn")
        barrier, out = ctx.Barrier(processes), ctx.Queue()
        procs = [ctx.Process(target=_probe_worker, args=(k, sizes, reps, sweeps, barrier, out), daemon=True)
                 for k in range(processes)]
        for pr in procs:
            pr.start()
        got: list[_Probed] = []
        try:
            while len(got) < processes:
                try:
                    got.append(out.get(timeout=2.0))
                except queue.Empty:
                    dead = [pr.exitcode for pr in procs if pr.exitcode not in (None, 0)]
                    if dead:
                        raise RuntimeError(f"probe_cache: a probing process failed (exit code {dead[0]})") from None
        finally:
            for pr in procs:
                pr.join(timeout=10)
                if pr.is_alive():
                    pr.terminate()
        got.sort(key=lambda g: g.index)
        per = np.array([g.bandwidth for g in got])
        bw = per.mean(axis=0)
    ds = xr.Dataset(
        {"cache_probe_bandwidth": ("cache_probe_bytes", bw, {
            "units": "B/s", "long_name": "triad bandwidth, best of the repetitions (memory traffic counted as "
                                         "perfmod.models.roofline.traffic counts it)"
                                         + (f", mean of {processes} processes probing at once" if processes > 1
                                            else "")})},
        coords={"cache_probe_bytes": ("cache_probe_bytes", sizes, {
            "units": "B", "long_name": "working set of the triad (its three arrays), per process"})},
        attrs={"sysfs_llc_bytes": sysfs_llc_bytes(), "reps": reps, "sweeps": sweeps, "processes": processes},
    )
    if processes > 1:  # what each process got, where it ran and when: the probes ran at once, on their own cores
        ds["cache_probe_bandwidth_per_process"] = (("process", "cache_probe_bytes"), per, {
            "units": "B/s", "long_name": "triad bandwidth of each probing process, best of the repetitions"})
        ds["cache_probe_core"] = ("process", np.array([g.core for g in got]), {
            "units": "1", "long_name": "core the process was pinned to (-1: not pinned, fewer cores than processes)"})
        for field in ("started", "finished"):
            ds[f"cache_probe_{field}"] = ("process", np.array([getattr(g, field) for g in got]), {
                "units": "s", "long_name": f"wall-clock time (Unix epoch) the process {field} probing"})
    return ds


def _probe(sizes: np.ndarray, reps: int, sweeps: int, barrier: object | None = None) -> np.ndarray:
    bw = np.zeros(len(sizes))
    for _ in range(sweeps):
        for i, ws in enumerate(sizes):
            n = max(int(ws) // 24, 1)  # three arrays of doubles
            inner = max(1, int(SAMPLE_BYTES // triad_bytes(np, n)))
            if barrier is not None:
                barrier.wait()  # every process starts this working set together
            t, moved = triad(np, n, reps=reps, inner=inner)
            bw[i] = max(bw[i], moved / float(t.min()))
    return bw


class _Probed(NamedTuple):
    """What one probing process of :func:`probe_cache` sends back."""

    index: int
    core: int  # -1: not pinned
    started: float  # s, Unix epoch
    finished: float
    bandwidth: np.ndarray  # B/s per working set


def _probe_worker(k: int, sizes: np.ndarray, reps: int, sweeps: int, barrier: object, out: object) -> None:
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    core = -1
    if len(cores) > k:
        core = cores[k]
        os.sched_setaffinity(0, {core})
    started = time.time()
    bw = _probe(sizes, reps, sweeps, barrier)
    out.put(_Probed(k, core, started, time.time(), bw))


def cache_shared(alone: xr.Dataset, together: xr.Dataset, ratio: float = 0.75) -> bool:
    """Whether processes probing at once share the last-level cache: the knee of ``together`` (from
    :func:`probe_cache` with ``processes`` > 1) below ``ratio`` times the knee of ``alone`` (one process).
    Two processes sharing a cache each keep about half of it; two with caches of their own keep the knee."""
    a, b = effective_llc(alone), effective_llc(together)
    return bool(a > 0 and b < ratio * a)


def effective_llc(probe: xr.Dataset, above: int | None = None, min_contrast: float = 1.25) -> int:
    """The largest working set (B) still served faster than DRAM; 0 when no cache level shows above ``above``.

    A step is fitted to log bandwidth over the working sets larger than
    ``above`` (default: twice the second-largest cache ``/sys`` reports, the
    private L2, or 4 MiB): the split with the least squared error puts the
    working sets served by the last-level cache on its left and the DRAM
    plateau (at least two points) on its right.  A step of less than
    ``min_contrast`` between the two means is no cache: 0.  Fitting the step
    rather than thresholding each point keeps one noisy sample on a shared
    machine from moving the knee.
    """
    ws = probe.cache_probe_bytes.values.astype(np.int64)
    bw = probe.cache_probe_bandwidth.values.astype(float)
    order = np.argsort(ws)
    ws, bw = ws[order], bw[order]
    if above is None:
        levels = sorted({int(v) for v in _sysfs_sizes()})
        above = 2 * levels[-2] if len(levels) >= 2 else 4 * MiB
    keep = ws > above
    ws, y = ws[keep], np.log(bw[keep])
    if len(ws) < 3:
        raise ValueError(f"effective_llc: need 3 or more working sets above {above} B, got {len(ws)}")
    best, split = np.inf, 0
    for k in range(1, len(ws) - 1):
        sse = float(((y[:k] - y[:k].mean()) ** 2).sum() + ((y[k:] - y[k:].mean()) ** 2).sum())
        if sse < best:
            best, split = sse, k
    if y[:split].mean() - y[split:].mean() < np.log(min_contrast):
        return 0
    return int(ws[split - 1])
