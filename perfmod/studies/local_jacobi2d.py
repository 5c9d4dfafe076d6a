"""Paper 000's end-to-end method applied to the Jacobi2D proxy on this machine (§3.3, §3.4, §4.2, §5.1).

The method, step by step:

1. **Calibrate** the platform: the ping-pong fit of :mod:`perfmod.models.comm.calibration`
   (``data/platforms/local.toml``; :func:`local_platform` runs a short
   ping-pong when that file is missing) and the device rows of
   :mod:`perfmod.measure.bench.devicebench`, measured with P ranks streaming at once
   (the CPU's counterpart of one GPU per rank: ranks share the memory
   bandwidth).
2. **Profile** one small run per device (the paper's profiling run): the kernel
   metrics come from the proxy's own counts (:func:`perfmod.apps.jacobi2d.proxy_kernel_counts`);
   the run gives each kernel's measured time and the overhead, the part of
   the iteration the model does not describe (host-device copies, the sum's
   transfer, the loop itself): ``t_iter - (kernels + exchange + allreduce)``.
   On a GPU machine every rank has the same device whatever the rank count,
   and the paper profiles once.  On one CPU socket a rank's "device" is its
   share of the socket, which changes with the rank count, and NumPy's
   kernels do not follow the triad's share: on the development VM one rank's
   triad streams about twice the bytes of each of two ranks', while the
   STENCIL runs 13.1 ms per 2,048^2 block alone and 13.8 ms per rank on two
   (it is bound by the core, not the shared bandwidth).  So the default
   profiles each rank count at the profiling block (:func:`profile_each`)
   and holds out the other block sizes.
3. **Predict** every other block size and rank count:
   ``T_iter = T_exchange + T_allreduce + sum_k T_k + overhead``
   (§3.4) with the halo exchange from the postal model of the local platform
   (:func:`perfmod.models.comm.phase.phase_time`, messages of
   :func:`perfmod.apps.jacobi2d.decompose`), the allreduce by recursive
   doubling (:func:`perfmod.models.comm.collectives.collective_time`; the paper
   leaves this one-double phase out as negligible) and the kernels from
   QRoof (:func:`perfmod.models.roofline.qroof_time`) on the device row of that
   rank count.  Two kernel models:

   - ``qroof``: the roofline time alone (the paper's model);
   - ``qroof_profiled`` (the headline): the roofline time scaled by the
     kernel's efficiency in the profiling run (measured / roofline), the
     fraction of the roofline the NumPy kernel attains on this CPU.  The
     paper uses QRoof unscaled on GPUs, where kernels come close to the
     roofline (here: the STENCIL on an H100 within 1 % of it); NumPy's
     element-wise passes over strided 2D views and its pairwise sum do not.

4. **Run** the held-out configurations and **compare**: the dataset pairs
   ``<phase>_measured`` with ``<phase>_predicted``.

Configurations with more ranks than cores are marked ``oversubscribed``
(noisy: ranks time-slice) and those where the STENCIL's arrays of every
running rank fit in the last-level cache are marked ``cache_resident``
(:func:`working_set_bytes`): the STENCIL's passes then hand their
temporaries to each other through the cache, and QRoof with ``GBSEC - DRAM``
does not describe them.  Both are shown and left out of the headline error.
The cache is the one the run gets, measured (:mod:`perfmod.measure.bench.cachesize`),
not the size ``/sys`` reports: a VM may report its host's whole L3 (300 MiB
on the development VM, whose STENCIL already costs three times as much per
cell at 2,048 x 2,048 as at 1,536 x 1,536).  By default the blocks are chosen
beyond the measured cache (:func:`blocks_beyond`), so that every
configuration not oversubscribed counts in the headline.

On a shared machine the device rows and the runs must see the same share of
the cores: the microbenchmarks' samples last as long as an iteration
(:data:`perfmod.measure.bench.devicebench.DEFAULTS`), and :func:`run` measures the
rows before and after the runs and uses their mean (:func:`mean_rows`).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from tqdm.auto import tqdm

import perfmod.campaign as campaign
from perfmod.core.paths import host_name, platforms_dir, raw_dir
from perfmod.machine.devices import DEVICE_SI
from perfmod.machine.platforms import Platform
from perfmod.measure.bench.cachesize import effective_llc, probe_cache
from perfmod.measure.bench.devicebench import device_row, measure_devices, write_device_csv
from perfmod.measure.runner import run_mpi
from perfmod.studies import jacobi2d_gpu as gpu
from perfmod.studies.local_jacobi2d_model import (  # noqa: F401  (_comm, _qroof: used by the tests)
    COMPARED,
    KERNEL_MODELS,
    LONG,
    MODELED,
    PROFILE,
    Profile,
    _comm,
    _qroof,
    clean_phases,
    compare,
    error_table,
    headline_errors,
    predict_jacobi,
    profile_each,
    profile_jacobi,
    rank_counts,
)

__all__ = ["MODELED", "PROFILE", "working_set_bytes", "blocks_beyond", "mean_rows", "local_platform", "device_rows",
           "measure_jacobi", "rank_counts", "Profile", "profile_jacobi", "profile_each", "fit_status", "predict_jacobi",
           "compare", "clean_phases", "headline_errors", "error_table", "plot_local", "plot_cache_probe",
           "COMPARED", "KERNEL_MODELS", "run", "figures"]

def working_set_bytes(block: Any, nprocs: Any, cores: int | None = None) -> Any:
    """Bytes of the arrays the STENCIL cycles through, on every rank running at once.

    Each rank's STENCIL reads the padded grid ``a``, hands a temporary from one
    element-wise pass to the next and writes the other padded grid: two
    ``(block+2)^2`` arrays and one ``block^2`` (the triad's three arrays in
    :mod:`perfmod.measure.bench.cachesize`, whose working sets are counted the
    same way).  When those of every running rank fit in the last-level cache,
    the passes read each other's results from the cache and DRAM bandwidth no
    longer bounds the kernel.
    """
    b = np.asarray(block)
    running = np.minimum(np.asarray(nprocs), cores or os.cpu_count() or 1)
    return 8 * (2 * (b + 2) ** 2 + b ** 2) * running


def blocks_beyond(llc: int, nprocs: Sequence[int], smallest: int = 2048, step: int = 256,
                  cores: int | None = None) -> list[int]:
    """Three block sizes (``b``, ``1.25 b``, ``1.5 b``) whose working set exceeds ``llc`` by 25 % at every rank count.

    ``b`` is the smallest multiple of ``step`` at or above ``smallest`` with
    :func:`working_set_bytes` of the fewest ranks above ``1.25 * llc``, so that
    every configuration is a headline one on this machine.
    """
    fewest = min(int(p) for p in nprocs)
    b = max(int(smallest), step)
    while working_set_bytes(b, fewest, cores) <= 1.25 * llc:
        b += step
    return [b, int(round(1.25 * b / step)) * step, int(round(1.5 * b / step)) * step]


def local_platform(path: str | Path | None = None, raw_out: str | Path | None = None,
                   sizes: Sequence[int] | None = None, reps: int = 10) -> Platform:
    """The calibrated local platform: ``data/platforms/local.toml`` or, if missing, a short ping-pong fit.

    The fallback measures ``sizes`` (default 8 B to 64 KiB, the Jacobi2D
    halo and allreduce range) with one pair, writes the ping-pong under
    ``raw_out`` (nothing written without it) and fits it with
    :func:`perfmod.models.comm.calibration.calibrate` (one segment: too few sizes for breakpoints) without writing a
    platform file.
    """
    from perfmod.machine import platforms
    from perfmod.measure.bench.pingpong import run_pingpong
    from perfmod.models.comm.calibration import calibrate

    p = Path(path) if path is not None else platforms_dir() / "local.toml"
    if p.exists():
        return platforms.load(p)
    sizes = list(sizes or [8, 64, 512, 1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768, 65536])
    out = None
    if raw_out is not None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        out = Path(raw_out) / f"pingpong-jacobi2d-{stamp}.nc"
    ds = run_pingpong(sizes, pairs=[1], reps=reps, warmup=2, out=out, write=out is not None, progress=False)
    return calibrate(ds, out=None, max_breaks=0).platform


def device_rows(nprocs: Sequence[int], reps: int = 10, raw_out: str | Path | None = None,
                sizes: Mapping[str, int] | None = None) -> tuple[dict[int, dict[str, float]], xr.Dataset]:
    """Device row per rank count (devicebench with P ranks at once) and the rows as a dataset over ``nprocs``.

    The rows keep the toolkit's columns (1e9 per second, as QRoof takes them); the dataset holds them in SI
    units (:func:`perfmod.studies.jacobi2d_gpu.device_row_variables`).

    With ``raw_out`` each measurement is written there (``devicebench-numpy-r<P>-<UTC>.nc``) with its
    row in the toolkit's CSV layout beside it (same name, ``.csv``), readable by
    :func:`perfmod.machine.devices.read_devices`.
    """
    rows: dict[int, dict[str, float]] = {}
    for p in sorted({int(x) for x in nprocs}):
        out = None
        if raw_out is not None:
            stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
            out = Path(raw_out) / f"devicebench-numpy-r{p}-{stamp}.nc"
        ds = measure_devices("numpy", ranks=p, reps=reps, sizes=sizes, out=out, write=out is not None)
        rows[p] = device_row(ds)
        if out is not None:  # the row in the toolkit's layout: this CPU as a QRoof device
            write_device_csv(ds, f"local CPU ({host_name()}, {p} rank(s) at once)", out.with_suffix(".csv"))
    table = xr.Dataset(gpu.device_row_variables(rows, "nprocs", "local", "local device row per rank"),
                       coords={"nprocs": list(rows)})
    return rows, table


def mean_rows(*tables: Mapping[int, Mapping[str, float]]) -> dict[int, dict[str, float]]:
    """Column-wise mean of several device-row tables (e.g. measured before and after the runs)."""
    keys = set(tables[0])
    if any(set(t) != keys for t in tables):
        raise ValueError("mean_rows: the tables cover different rank counts")
    return {p: {c: float(np.mean([t[p][c] for t in tables])) for c in tables[0][p]} for p in keys}


def measure_jacobi(blocks: Sequence[int], nprocs: Sequence[int], iters: int = 10, reps: int = 3, warmup: int = 2,
                   progress: bool = True, seed: int = 0, timeout: float = 600.0, llc: int | None = None) -> xr.Dataset:
    """Run the proxy for every (block, nprocs) and repetition in one seeded random order.

    The profiled configurations and the held-out ones are interleaved and
    repetitions spread (:func:`perfmod.campaign.design.interleaved_order`).
    Returns ``t_<phase>_measured`` (s per iteration, mean over ranks) over
    (``block``, ``nprocs``, ``rep``) for the nine phases and ``iter``,
    ``run_index``, each run's position in the order, and the flags of
    :data:`perfmod.campaign.records.FLAG_FIELDS` (``interfered``: disturbed by
    another process, re-run and kept for the record by :func:`~perfmod.measure.runner.run_mpi`).
    ``cache_resident`` compares :func:`working_set_bytes` with ``llc``, the
    last-level cache in bytes (default: measured, :func:`~perfmod.measure.bench.cachesize.effective_llc`).
    """
    from perfmod.measure.proxies.jacobi2d import PHASES

    if llc is None:
        llc = effective_llc(probe_cache())

    blocks, nprocs = [int(b) for b in blocks], [int(p) for p in nprocs]
    names = (*PHASES, "iter")
    shape = (len(blocks), len(nprocs), reps)
    data = {q: np.full(shape, np.nan) for q in names}
    flags = campaign.new_flags(shape)
    order = campaign.interleaved_order([reps] * (len(blocks) * len(nprocs)), seed)
    command = ""
    for k, r in tqdm(order, desc="Jacobi2D runs", disable=not progress):
        i, j = divmod(k, len(nprocs))
        res = run_mpi("perfmod.measure.proxies.jacobi2d", nprocs[j],
                      ["--block", blocks[i], "--iters", iters, "--warmup", warmup], timeout=timeout)
        command = res["command"]
        for q in names:
            data[q][i, j, r] = res[f"t_{q}"]
        campaign.record_flags(flags, (i, j, r), res)
    ncores = os.cpu_count() or 1
    ws = working_set_bytes(np.array(blocks)[:, None], np.array(nprocs)[None, :], ncores)
    ds = xr.Dataset(
        {f"t_{q}_measured": (("block", "nprocs", "rep"), data[q],
                             {"units": "s", "long_name": f"measured time per iteration: {q} (mean over ranks)"})
         for q in names}
        | {"run_index": (("block", "nprocs", "rep"), campaign.position_of(order, (len(blocks), len(nprocs), reps)),
                         {"units": "1", "long_name": "position of the run in the measurement order"})},
        coords={"block": ("block", blocks, {"units": "1", "long_name": "cells per side of each rank's block"}),
                "nprocs": ("nprocs", nprocs, {"units": "1", "long_name": "MPI ranks"}),
                "rep": ("rep", np.arange(reps), {"units": "1", "long_name": "repetition"}),
                "oversubscribed": ("nprocs", np.array(nprocs) > ncores,
                                   {"units": "1", "long_name": "more ranks than cores (time-sliced, noisy)"}),
                "cache_resident": (("block", "nprocs"), ws <= llc, {
                    "units": "1", "long_name": "the STENCIL's arrays of every running rank fit in the measured LLC"})},
    )
    ds = ds.assign(campaign.flag_variables(flags, ("block", "nprocs", "rep")))
    ds.attrs.update(measured_utc=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), iters=iters, llc_bytes=int(llc),
                    warmup=warmup, command_example=command)
    return ds


def plot_local(result: xr.Dataset, quantities: Sequence[str] = ("stencil", "reduce", "exchange", "overhead", "iter")
               ) -> Any:
    """Predicted against measured time per iteration, a panel per quantity (log-log, y = x dashed).

    Filled markers: headline configurations; open: the profiled run, oversubscribed or cache-resident
    ones.  Colour: rank count.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(quantities), figsize=(3.4 * len(quantities), 3.4), squeeze=False)
    for ax, q in zip(axes[0], quantities, strict=True):
        m, p = result[f"t_{q}_measured"], result[f"t_{q}_predicted"]
        for j, n in enumerate(result.nprocs.values):
            for filled in (True, False):
                sel = (result.headline.sel(nprocs=n) == filled).values
                x, y = m.sel(nprocs=n).values[sel], p.sel(nprocs=n).values[sel]
                if x.size:
                    ax.plot(x, y, "o", mfc=f"C{j}" if filled else "none", mec=f"C{j}",
                            label=f"{n} rank(s)" + ("" if filled else " (not headline)"))
        vals = np.concatenate([m.values.ravel(), p.values.ravel()])
        vals = vals[np.isfinite(vals) & (vals > 0)]
        if vals.size:
            lo, hi = vals.min() / 1.5, vals.max() * 1.5
            ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_title(LONG[q], fontsize=9)
        ax.set_xlabel("measured [s]")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel(f"predicted [s] ({result.attrs.get('headline_model', '')})")
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    return fig


STUDY = "local_jacobi2d"


def _profiles(prof: Mapping[int, Profile]) -> xr.Dataset:
    """Kernel metrics and measured kernel times of the profiling runs over (``profile_nprocs``, ``kernel``)."""
    ns = sorted(prof)
    kernels = list(next(iter(prof.values())).kernel_time)
    dims = ("profile_nprocs", "kernel")
    return xr.Dataset({
        "profile_kernel_time": (dims, [[prof[n].kernel_time[k] for k in kernels] for n in ns],
                                {"units": "s", "long_name": "measured kernel time per iteration in the profiling run"}),
        "profile_compute_ops": (dims, [[prof[n].counts[k]["compute_ops"] for k in kernels] for n in ns],
                                {"units": "1", "long_name": "operations of the kernel per iteration (mean rank)"}),
        "profile_dram_bytes": (dims, [[prof[n].counts[k]["dram_bytes"] for k in kernels] for n in ns],
                               {"units": "B", "long_name": "DRAM bytes of the kernel per iteration (mean rank)"}),
    }, coords={"profile_nprocs": ns, "kernel": kernels})


def run(platform_path: str = "", gpu_data: str = "", blocks: Sequence[int] = (),
        nprocs: Sequence[int] = (1, 2), profile_block: int = 0, profile_nprocs: Sequence[int] = (1, 2),
        iters: int = 8, warmup: int = 2, reps: int = 3, device_reps: int = 5,
        device_sizes: Mapping[str, int] | None = None, seed: int = 0, raw_out: str = "", llc_bytes: int = 0,
        progress: bool = True) -> xr.Dataset:
    """Calibrate, profile, predict and validate the end-to-end model of Jacobi2D on this machine (000 §3.3-3.4).

    Parameters are the notebook's (see its parameters cell): ``platform_path`` (empty:
    ``data/platforms/local.toml``, or a short ping-pong fit), ``gpu_data`` (empty: the newest
    committed H100 measurement), the configurations, the profiled ones, the repetitions,
    ``device_sizes`` (overrides of the device microbenchmarks' sizes), ``seed`` (the run order:
    profiled and held-out configurations interleaved), ``raw_out`` (raw measurements;
    empty: ``data/raw/<host>/``) and ``llc_bytes`` (the last-level cache; 0: measured by
    :mod:`perfmod.measure.bench.cachesize`, whose curve the dataset keeps).  Empty ``blocks``
    are chosen beyond that cache (:func:`blocks_beyond`), and ``profile_block`` 0 is the
    smallest of them.

    Returns
    -------
    xarray.Dataset
        :func:`compare`'s pairs ``t_<phase>_measured``/``t_<phase>_predicted`` over (``block``,
        ``nprocs``) with errors, masks and every repetition; ``run_index``; the profiling runs
        (``profile_*``, ``kernel_efficiency``); the device rows in SI units (``local_*``, mean of
        before and after the runs, and ``local_*_drift``: after / before - 1); the H100 kernel
        comparison (``t_kernel_*``, ``gpu_*``) and one-rank GPU iterations (``t_iter_gpu_*``);
        campaign.provenance and ``raw_files``.  The flags of every run over (``block``, ``nprocs``,
        ``rep``), ``interfered`` among them; ``cache_probe_bandwidth`` when the cache was measured
        and the ``llc_bytes`` attribute: interfered runs are neither profiled nor scored
        (their ``t_<q>_measured_reps`` are NaN), ``fit_status`` says which rank counts could
        be profiled ("not fitted" when none), and the attributes of
        :func:`perfmod.campaign.records.record_drops` say how many runs were dropped.
    """
    parameters = {k: v for k, v in locals().items() if k != "progress"}
    raw = Path(raw_out) if raw_out else raw_dir()
    platform = local_platform(platform_path or None, raw_out=raw)
    probe = None if llc_bytes else probe_cache()
    llc = int(llc_bytes) if llc_bytes else effective_llc(probe)
    blocks = [int(b) for b in blocks] or blocks_beyond(llc, nprocs)
    profile_block = int(profile_block) or min(blocks)
    rows_before, _ = device_rows(nprocs, device_reps, raw, device_sizes or None)
    measured = measure_jacobi(blocks, nprocs, iters, reps, warmup, progress=progress, seed=seed, llc=llc)
    path = campaign.save_raw(measured, STUDY, "runs", parameters,
                             "measurement: Jacobi2D proxy runs (perfmod.measure.proxies.jacobi2d)", raw)
    rows_after, _ = device_rows(nprocs, device_reps, raw, device_sizes or None)
    rows = mean_rows(rows_before, rows_after)
    drift = {p: {c: rows_after[p][c] / rows_before[p][c] - 1 for c in rows[p]} for p in rows}
    names = [v for v in measured.data_vars if str(v).startswith("t_") and str(v).endswith("_measured")]
    measured = campaign.mask_interfered(measured, names)  # fitted (profiled) and scored on clean runs only
    prof = profile_each(measured, rows, profile_block, profile_nprocs)
    result = compare(measured, predict_jacobi(blocks, nprocs, platform, rows, prof), prof)
    result["run_index"] = measured.run_index
    for f in campaign.FLAG_FIELDS:
        result[f] = measured[f]
    result.attrs["fit_status"] = fit_status(prof)
    campaign.record_drops(result, measured.interfered, measured.oversubscribed, clean_phases(measured)[1],
                          "Jacobi2D runs")
    rows_ds = xr.Dataset(gpu.device_row_variables({p: rows[p] for p in nprocs}, "nprocs", "local",
                                                  "local device row per rank (mean of before and after the runs)"))
    for col, (name, _, long_name) in DEVICE_SI.items():
        rows_ds[f"local_{name}_drift"] = ("nprocs", [drift[p][col] for p in nprocs], {
            "units": "1", "long_name": f"local device row, {long_name}: after / before the runs - 1"})
    rec = gpu.read_gpu(gpu_data or gpu.latest_gpu_file())
    cmp = gpu.gpu_comparison(rec)
    ds = xr.merge([result, _profiles(prof), rows_ds, cmp.drop_vars("t_iter_gpu_measured", errors="ignore"),
                   gpu.gpu_iterations(rec, profile_block=8192), *([probe] if probe is not None else [])],
                  combine_attrs="drop_conflicts")
    ds.attrs.update(platform_source=platform.source, gpu_data=str(gpu_data or gpu.latest_gpu_file()), llc_bytes=llc,
                    llc_source="set by the llc_bytes parameter" if probe is None else
                    "measured: the knee of the triad's bandwidth (perfmod.measure.bench.cachesize)")
    return campaign.provenance(ds, STUDY, "measurement: Jacobi2D proxy and device microbenchmarks on this machine; "
                               "H100 kernels from data/raw/gpu-h100; model of paper 000 §3.3-3.4", parameters, [path])


def fit_status(prof: Mapping[int, Profile]) -> str:
    """The ``fit_status`` attribute: which rank counts were profiled on clean runs ("not fitted" when none was)."""
    bad = sorted(p for p, pr in prof.items() if not np.isfinite(pr.overhead))
    if not bad:
        return "fitted (profiled) on the clean runs"
    block = next(iter(prof.values())).block
    why = (f"no clean run of the profiling configuration (block {block}) at nprocs={', '.join(map(str, bad))}: "
           "another process disturbed every repetition")
    if len(bad) == len(prof):
        return f"not fitted: {why}. Re-run on an idle machine."
    return f"fitted (profiled) on the clean runs except nprocs={', '.join(map(str, bad))} ({why}; predicted NaN there)"


def headline(ds: xr.Dataset) -> dict[str, xr.DataArray]:
    """The study's headline figures (:mod:`perfmod.campaign.headline`): median per-iteration error per kernel model.

    :func:`headline_errors` of ``iter`` over the headline configurations (held out,
    not oversubscribed, beyond the last-level cache) for the headline model
    (``qroof_profiled``) and the paper's unscaled QRoof; NaN when the model was not
    fitted; then the run counts.
    """
    name = ds.attrs.get("headline_model", "qroof_profiled")
    figs = {"t_iter_error_median": (headline_errors(ds, name)["iter"], "1", "median |relative error| of the time "
                                    f"per iteration over the headline configurations ({name} kernels)")}
    if "qroof" in ds.model.values and name != "qroof":
        figs["t_iter_error_median_qroof"] = (headline_errors(ds, "qroof")["iter"], "1", "median |relative error| of "
                                             "the time per iteration over the headline configurations (plain QRoof "
                                             "kernels, the paper's model)")
    return campaign.headline_figures(ds, figs)


def plot_cache_probe(ds: xr.Dataset) -> Any:
    """The triad's bandwidth against its working set, the measured cache's edge and the runs' working sets."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ws, bw = ds.cache_probe_bytes.values / 2 ** 20, ds.cache_probe_bandwidth.values / 1e9
    ax.plot(ws, bw, "o-", color="0.3", label="triad")
    ax.axvline(ds.attrs["llc_bytes"] / 2 ** 20, color="C3", ls="--", label="measured last-level cache")
    cores = os.cpu_count() or 1
    for j, n in enumerate(ds.nprocs.values):
        w = working_set_bytes(ds.block.values, n, cores) / 2 ** 20
        ax.plot(w, np.full(len(w), bw.min() * 0.8), "v", color=f"C{j}", label=f"STENCIL working sets, {n} rank(s)")
    ax.set(xscale="log", yscale="log", xlabel="working set (MiB)", ylabel="bandwidth (GB/s)",
           title="Where the cache ends on this machine")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def figures(ds: xr.Dataset) -> dict[str, plt.Figure]:
    """The study's figures from its dataset: predicted vs measured per phase, the H100 kernels against QRoof,
    and the cache probe (when the cache was measured)."""
    figs = {"measured_vs_predicted": plot_local(ds), "gpu_kernels": gpu.plot_gpu_kernels(ds)}
    if "cache_probe_bandwidth" in ds:
        figs["cache_probe"] = plot_cache_probe(ds)
    return figs
