"""Jacobi2D's kernels on a GPU (CuPy) against QRoof predictions (paper 000 §3.3, §5.1 Figure 6).

:func:`measure_gpu` runs on a machine with a GPU: the device microbenchmarks
(:func:`perfmod.measure.bench.devicebench.run_devicebench`, CuPy) and the proxy's four
kernels (:func:`perfmod.measure.proxies.jacobi2d.kernel_times`, an interior rank with
four halos) at a few block sizes, plus whole one-rank iterations, and writes
everything with provenance as one JSON file (plain JSON: the GPU machine need
not have perfmod's netCDF stack).  The file is small and committed
(``data/raw/<gpu-host>/jacobi2d_gpu-<UTC>.json``), so :func:`gpu_dataset`
rebuilds the comparison anywhere: measured kernel times next to the kernel
metrics of :func:`perfmod.apps.jacobi2d.proxy_kernel_counts` (no write-allocate,
32 B sectors on a GPU) for the QRoof predictions.

Command line (on the GPU machine):
``python -m perfmod.studies.jacobi2d_gpu --out DIR [--blocks 4096,8192,16384]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform as pyplatform
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from perfmod.apps.jacobi2d import proxy_kernel_counts
from perfmod.core.paths import data_dir
from perfmod.machine.devices import DEVICE_COLUMNS, DEVICE_SI, UNIT_SCALE, get_device
from perfmod.measure.bench.devicebench import BENCHES
from perfmod.measure.proxies.jacobi2d import KERNELS, PHASES, SerialComm, kernel_times, run_jacobi
from perfmod.models.roofline import qroof

__all__ = ["device_row_variables", "measure_gpu", "read_gpu", "latest_gpu_file", "gpu_device_row",
           "gpu_dataset", "gpu_comparison",
           "gpu_iterations", "plot_gpu_kernels", "main"]

#: Name of the table row the comparison takes the datasheet parameters from (data/devices/gpus.csv).
H100_SPEC = "H100 SXM 80GB"


def measure_gpu(out_dir: str | Path, blocks: Sequence[int] = (2048, 4096, 8192, 16384), reps: int = 20,
                iters: int = 20, command: str = "") -> Path:
    """Measure the GPU (CuPy) and Jacobi2D's kernels; write ``jacobi2d_gpu-<UTC>.json`` in ``out_dir``."""
    from perfmod.measure.bench.devicebench import run_devicebench

    now = dt.datetime.now(dt.UTC)
    rec: dict[str, Any] = {"date_utc": now.isoformat(timespec="seconds"), "host": socket.gethostname(),
                           "python": pyplatform.python_version(), "command": command or " ".join(sys.argv),
                           "blocks": list(map(int, blocks)), "reps": reps, "iters": iters, "errors": {}}
    try:
        rec["devicebench"] = run_devicebench("cupy", reps=reps)
        rec["info"] = rec["devicebench"].pop("info")
    except Exception as exc:  # keep whatever else can be measured
        rec["errors"]["devicebench"] = repr(exc)
    rec["kernels"], rec["iterations"] = {}, {}
    for b in blocks:
        try:
            t = kernel_times(int(b), "cupy", reps)
            rec["kernels"][str(b)] = {k: v.tolist() for k, v in t.items()}
            res = run_jacobi(SerialComm(), int(b), iters, warmup=3, backend="cupy")
            rec.setdefault("info", res["info"])
            rec["iterations"][str(b)] = {k: res[k] for k in (*(f"t_{p}" for p in PHASES), "t_iter")}
        except Exception as exc:
            rec["errors"][f"block {b}"] = repr(exc)
    path = Path(out_dir) / f"jacobi2d_gpu-{now.strftime('%Y%m%dT%H%M%SZ')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        raise FileExistsError(f"{path} exists; refusing to overwrite a measurement")
    path.write_text(json.dumps(rec, indent=1))
    return path


def read_gpu(path: str | Path) -> dict[str, Any]:
    """Read a :func:`measure_gpu` file; ``ValueError`` naming the file if a part is missing."""
    rec = json.loads(Path(path).read_text())
    for key in ("devicebench", "kernels", "info"):
        if key not in rec or not rec[key]:
            raise ValueError(f"{path}: no {key!r} in the GPU measurement (errors: {rec.get('errors')})")
    return rec


def gpu_device_row(rec: dict[str, Any]) -> dict[str, float]:
    """The seven toolkit columns (1e9 per second) of the measured GPU (median over repetitions)."""
    db = rec["devicebench"]
    rate = {b: db[b]["work"] / float(np.median(db[b]["t"])) / db[b]["opmix"] / 1e9 for b in BENCHES}
    cols = dict(zip(DEVICE_COLUMNS, ("fma_sp", "fma_dp", "int_mad", "triad_dram", "triad_l2", "shmem", "int_add"),
                    strict=True))
    return {c: rate[b] for c, b in cols.items()}


def gpu_dataset(rec: dict[str, Any]) -> xr.Dataset:
    """Measured kernel times (median over repetitions) and kernel metrics over (``block``, ``kernel``)."""
    blocks = sorted(int(b) for b in rec["kernels"])
    t = np.array([[np.median(rec["kernels"][str(b)][k]) for k in KERNELS] for b in blocks])
    tmin = np.array([[np.min(rec["kernels"][str(b)][k]) for k in KERNELS] for b in blocks])
    counts = [proxy_kernel_counts(b, write_allocate=False, line_bytes=32) for b in blocks]
    ops = np.array([[c[k]["compute_ops"] for k in KERNELS] for c in counts])
    dram = np.array([[c[k]["dram_bytes"] for k in KERNELS] for c in counts])
    it = rec.get("iterations", {})
    t_iter = np.array([it.get(str(b), {}).get("t_iter", np.nan) for b in blocks])
    return xr.Dataset(
        {
            "t_kernel_measured": (("block", "kernel"), t, {"units": "s", "long_name": "measured kernel time (median)"}),
            "t_kernel_min": (("block", "kernel"), tmin, {"units": "s", "long_name": "measured kernel time (minimum)"}),
            "compute_ops": (("block", "kernel"), ops, {"units": "1", "long_name": "floating-point operations"}),
            "dram_bytes": (("block", "kernel"), dram, {"units": "B", "long_name": "DRAM bytes (counted)"}),
            "t_iter_gpu_measured": ("block", t_iter,
                                    {"units": "s", "long_name": "measured one-rank iteration time on the GPU"}),
        },
        coords={"block": ("block", blocks, {"units": "1", "long_name": "cells per side of the block"}),
                "kernel": ("kernel", list(KERNELS), {"units": "1", "long_name": "kernel"})},
        attrs={"gpu": str(rec["info"].get("gpu", "")), "gpu_source": f"measured on {rec.get('host', '?')} "
               f"{rec.get('date_utc', '')}, {rec['info']}"},
    )


def latest_gpu_file(directory: str | Path | None = None) -> Path:
    """The newest committed GPU measurement (``data/raw/gpu-h100/jacobi2d_gpu-*.json`` by default)."""
    d = Path(directory) if directory else data_dir() / "raw" / "gpu-h100"
    files = sorted(d.glob("jacobi2d_gpu-*.json"))
    if not files:
        raise FileNotFoundError(f"no jacobi2d_gpu-*.json in {d}")
    return files[-1]


def gpu_comparison(rec: dict[str, Any]) -> xr.Dataset:
    """Measured kernel times against QRoof on the H100's datasheet row and on its measured row.

    Returns ``t_kernel_measured`` over (``gpu_block``, ``kernel``) and
    ``t_kernel_predicted``, ``t_kernel_error`` and ``compute_bound`` over
    (``gpu_device``, ``gpu_block``, ``kernel``), with the two device rows.
    """
    ds = gpu_dataset(rec).rename(block="gpu_block")
    rows = {f"{H100_SPEC} (datasheet)": dict(get_device(H100_SPEC)),
            "H100 (measured by devicebench)": gpu_device_row(rec)}
    counts = proxy_kernel_counts(int(ds.gpu_block[0]), write_allocate=False, line_bytes=32)
    dom = xr.DataArray([counts[k]["dominant_op"] for k in KERNELS], dims="kernel")
    mix = xr.DataArray([counts[k]["opmix_efficiency"] for k in KERNELS], dims="kernel")
    preds, bound = [], []
    for row in rows.values():
        r = qroof(ds.compute_ops, ds.dram_bytes, dom, mix, 1.0, 0.0, {c: row[c] for c in DEVICE_COLUMNS})
        preds.append(r["time"])
        bound.append(r["compute_bound"])
    dev = xr.DataArray(list(rows), dims="gpu_device")
    pred = xr.concat(preds, dim=dev)
    out = ds.assign(
        t_kernel_predicted=pred.assign_attrs(units="s", long_name="QRoof kernel time"),
        compute_bound=xr.concat(bound, dim=dev).assign_attrs(units="1", long_name="QRoof: compute-bound"),
        t_kernel_error=((pred - ds.t_kernel_measured) / ds.t_kernel_measured).assign_attrs(
            units="1", long_name="relative error of QRoof: (predicted - measured) / measured"))
    out = out.assign(device_row_variables(rows, "gpu_device", "gpu", "GPU row"))
    return out.assign_coords(gpu_device=list(rows))


def device_row_variables(rows: dict[Any, dict[str, float]], dim: str, prefix: str, what: str) -> dict[str, Any]:
    """Device rows (toolkit columns, 1e9 per second) as SI variables ``<prefix>_<name>`` over ``dim``.

    ``rows`` maps each value of ``dim`` to a row; the variables hold the rates
    in per-second SI units and names of :data:`perfmod.machine.devices.DEVICE_SI` (the one table
    of device columns) and name the toolkit column in ``long_name``.
    """
    keys = list(rows)
    return {f"{prefix}_{name}": xr.DataArray([UNIT_SCALE * rows[k][col] for k in keys], dims=dim,
                                             attrs={"units": unit, "long_name": f"{what}: {long} ({col})"})
            for col, (name, unit, long) in DEVICE_SI.items() if col in rows[keys[0]]}


def gpu_iterations(rec: dict[str, Any], profile_block: int = 8192) -> xr.Dataset:
    """The end-to-end model of one rank's iteration on the GPU (000 §3.4), profiled at one block size.

    ``T_iter = STENCIL + REDUCE (QRoof on the measured device row) + overhead``, the overhead being
    the profiled run's iteration minus its modelled phases (the sum's transfer to the host, the
    launches of the untimed glue); one rank has no halo to pack, exchange or unpack, and its
    allreduce is a local copy, counted in the overhead.  Returns ``t_iter_gpu_measured`` and
    ``t_iter_gpu_predicted`` over ``gpu_block`` (from the one-rank runs of :func:`measure_gpu`).
    """
    it = rec.get("iterations", {})
    if str(profile_block) not in it:
        raise KeyError(f"no one-rank iteration measured at block {profile_block} (have {sorted(it, key=int)})")
    modelled = ("t_pack", "t_exchange", "t_unpack", "t_stencil", "t_reduce")
    prof = it[str(profile_block)]
    overhead = prof["t_iter"] - sum(prof[k] for k in modelled)
    row = gpu_device_row(rec)
    blocks = sorted(int(b) for b in it)
    meas, pred = [], []
    for b in blocks:
        c = proxy_kernel_counts(b, [], write_allocate=False, line_bytes=32)
        t_k = sum(float(qroof(c[k]["compute_ops"], c[k]["dram_bytes"], c[k]["dominant_op"], c[k]["opmix_efficiency"],
                              1.0, 0.0, {col: row[col] for col in DEVICE_COLUMNS})["time"])
                  for k in ("stencil", "reduce"))
        meas.append(it[str(b)]["t_iter"])
        pred.append(t_k + overhead)
    m, p = np.array(meas), np.array(pred)
    return xr.Dataset(
        {"t_iter_gpu_measured": ("gpu_block", m, {"units": "s", "long_name": "measured one-rank iteration on the GPU"}),
         "t_iter_gpu_predicted": ("gpu_block", p, {"units": "s", "long_name": "QRoof kernels + profiled overhead"}),
         "t_iter_gpu_error": ("gpu_block", (p - m) / m, {"units": "1", "long_name": "relative error of the GPU "
                                                          "iteration: (predicted - measured) / measured"}),
         "gpu_overhead": ((), overhead, {"units": "s", "long_name": f"overhead of the profiled run (block "
                                                                      f"{profile_block})"})},
        coords={"gpu_block": blocks})


def plot_gpu_kernels(cmp: xr.Dataset) -> Any:
    """Measured (points) and QRoof (lines) kernel time vs block size, one panel per kernel, log-log."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(KERNELS), figsize=(4 * len(KERNELS), 3.3))
    b = cmp.gpu_block.values
    for ax, k in zip(axes, KERNELS, strict=True):
        ax.loglog(b, cmp.t_kernel_measured.sel(kernel=k), "o", color="k", label="measured (median)")
        for i, d in enumerate(cmp.gpu_device.values):
            ax.loglog(b, cmp.t_kernel_predicted.sel(kernel=k, gpu_device=d), "--", color=f"C{i}",
                      label=f"QRoof, {d}")
        ax.set_title(k.upper())
        ax.set_xlabel("block (cells per side)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("time per call [s]")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Jacobi2D kernels on {cmp.attrs.get('gpu', 'the GPU')} (CuPy)", fontsize=10)
    fig.tight_layout()
    return fig


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: measure this GPU and Jacobi2D's kernels, print a summary."""
    ap = argparse.ArgumentParser(prog="python -m perfmod.studies.jacobi2d_gpu", description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--blocks", default="2048,4096,8192,16384")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args(argv)
    path = measure_gpu(args.out, [int(b) for b in args.blocks.split(",")], args.reps, args.iters,
                       command="python -m perfmod.studies.jacobi2d_gpu " + " ".join(argv or sys.argv[1:]))
    rec = json.loads(path.read_text())
    print(json.dumps({"errors": rec["errors"], "info": rec.get("info")}))
    if "devicebench" in rec:
        print(json.dumps(gpu_device_row(rec)))
    for b, ks in rec["kernels"].items():
        print(b, {k: f"{np.median(v) * 1e3:.4f} ms" for k, v in ks.items()}, rec["iterations"].get(b))
    print(f"written: {path} ({os.path.getsize(path)} B)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
