"""Paper 001 §5 (static iterative programs) transposed to this machine with the Sedov proxy.

Experiment design (§5.1.1, §5.2.1): runs of :mod:`perfmod.measure.proxies.sedov`
over mesh sizes (memory X1 spanning more than 10x), chunk counts (X2, the
counterpart of the GPU thread count) and node decompositions (X3, the
maximum peer edge-cut, varies with the node split axis); every run is
repeated and every repetition is an observation, as in the paper (275 = 55
configurations x 5).  Training and validation use disjoint mesh sizes.
The distributed version adds processes (X5) and inter-process edges (X4).

Model units are the paper's scale adapted to this machine: memory in MB
(paper: GB), time per iteration in ms; X2, X3, X4, X5 are counts.  The
measured datasets keep SI units (bytes, seconds).

Models (R formulas; the coefficient lists of Tables 1, 3, 5 and 6):

- A: ``X1 + X1^2 + X2 + X3`` (no interactions)
- B: ``(X1 + X1^2) * X2`` (drops X3, adds X1X2 and X1^2X2)
- C: ``(X1 + X1^2) * X2 * X3`` (all interactions, 12 coefficients as Table 1)
- communication (Table 5): ``X1 + X1^2 + X4 + X5``
- full (Table 6): the 16 coefficients of Table 6 (C's terms plus X4, X5, X1X4, X1^2X4)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pandas as pd
import xarray as xr
from tqdm.auto import tqdm

from perfmod.measure.proxies.sedov import run_shared
from perfmod.measure.runner import run_mpi
from perfmod.studies.sasidharan_common import run_order, runs_dataset
from perfmod.studies.sasidharan_published import MODELS

__all__ = ["FORMULAS", "COMM_FORMULAS", "FULL_FORMULAS", "design", "measure_shared", "measure_distributed",
           "model_frame"]

#: Models A, B, C of §5.1.2, the paper's formulas (perfmod.studies.sasidharan_published.MODELS)
FORMULAS = {"A": MODELS["A"].formula, "B": MODELS["B"].formula, "C": MODELS["C_P100"].formula}
#: communication models of §5.2.2: X4 only, X4 and X5, and Table 5's (response: communication time)
COMM_FORMULAS = {
    "X4": "t_comm ~ X4",
    "X4+X5": "t_comm ~ X4 + X5",
    "comm (Table 5)": MODELS["comm"].formula.replace("time ~", "t_comm ~", 1),
}
#: the full model of Table 6 against Model C without X4 and X5 (§5.2.2)
FULL_FORMULAS = {"C (no X4, X5)": MODELS["C_P100"].formula, "full (Table 6)": MODELS["full"].formula}

MB, MS = 1e6, 1e3

SHARED_META = {
    "nx": ("1", "mesh elements along x"), "ny": ("1", "mesh elements along y"), "nz": ("1", "mesh elements along z"),
    "node_axis": ("1", "axis of the node decomposition"), "rep": ("1", "repetition"),
    "set": ("1", "which set the run belongs to (train, test)"),
    "workers": ("1", "worker threads (partitions, the paper's GPUs)"),
    "x1_bytes": ("B", "X1: persistent memory of the proxy's arrays"),
    "x2_chunks": ("1", "X2: vectorized chunks per worker (counterpart of GPU threads)"),
    "x3_peer_edges": ("1", "X3: largest edge-cut between workers (peer accesses)"),
    "t_iter": ("s", "measured time per iteration (loop time / iterations)"),
    "t_iter_median": ("s", "median over iterations of the time per iteration"),
    "t_iter_min": ("s", "fastest iteration of the run"),
    "iterations": ("1", "iterations timed"),
    "e_total_error": ("1", "relative change of total energy over the run (physics check)"),
}
DIST_META = {
    **SHARED_META,
    "x1_bytes": ("B", "X1: largest persistent memory of a process"),
    "x4_interprocess_edges": ("1", "X4: largest count of element-node references to other processes' nodes"),
    "x5_processes": ("1", "X5: MPI processes"),
    "t_comp": ("s", "computation time per iteration (Eq. 4 / iterations)"),
    "t_comm": ("s", "communication time per iteration (Eq. 5 / iterations)"),
    "oversubscribed": ("1", "more ranks x workers than cores"),
}


def design(sizes: Sequence[Sequence[int]], chunks: Sequence[int], axes: Sequence[str],
           nprocs: Sequence[int] = (1,), label: str = "", reps: int | None = None) -> list[dict[str, Any]]:
    """All configurations (mesh ``(nx, ny, nz)`` x chunks x node axis x processes) as dictionaries.

    ``label`` (``"train"``, ``"test"``) and ``reps`` are stored in every
    configuration when given (see :func:`perfmod.studies.sasidharan_common.run_order`).
    """
    out = []
    for size, c, ax, p in itertools.product(sizes, chunks, axes, nprocs):
        if len(size) != 3 or min(size) < 1:
            raise ValueError(f"a mesh size is (nx, ny, nz) with positive entries, got {size}")
        if ax not in ("x", "y", "z"):
            raise ValueError(f"node axis must be x, y or z, got {ax!r}")
        out.append({"nx": int(size[0]), "ny": int(size[1]), "nz": int(size[2]), "chunks": int(c),
                    "node_axis": ax, "nprocs": int(p), **({"set": label} if label else {}),
                    **({"reps": int(reps)} if reps is not None else {})})
    return out


def measure_shared(configs: Sequence[dict[str, Any]], reps: int = 3, iterations: int = 20, workers: int = 2,
                   seed: int = 0, progress: bool = True) -> xr.Dataset:
    """Run the shared-memory proxy for every configuration and repetition; one observation per run."""
    rows = []
    for i, r in tqdm(run_order(configs, reps, seed), desc="Sedov shared-memory runs", disable=not progress):
        c = configs[i]
        res = run_shared(c["nx"], c["ny"], c["nz"], iterations, workers, c["chunks"], c["node_axis"])
        res["e_total_error"] = (res["e_internal"] + res["e_kinetic"] - res["e_initial"]) / res["e_initial"]
        rows.append({**res, "rep": r, "set": c.get("set", "")})
    return runs_dataset(rows, SHARED_META)


def measure_distributed(configs: Sequence[dict[str, Any]], reps: int = 2, iterations: int = 20, workers: int = 2,
                        seed: int = 0, progress: bool = True) -> xr.Dataset:
    """Run the MPI proxy (``configs[i]["nprocs"]`` ranks of ``workers`` threads) for every configuration."""
    import os

    rows = []
    for i, r in tqdm(run_order(configs, reps, seed), desc="Sedov MPI runs", disable=not progress):
        c = configs[i]
        res = run_mpi("perfmod.measure.proxies.sedov_mpi", c["nprocs"],
                      ["--nx", c["nx"], "--ny", c["ny"], "--nz", c["nz"], "--iterations", iterations,
                       "--workers", workers, "--chunks", c["chunks"], "--node-axis", c["node_axis"]])
        res["e_total_error"] = (res["e_internal"] + res["e_kinetic"] - res["e_initial"]) / res["e_initial"]
        res["oversubscribed"] = c["nprocs"] * workers > (os.cpu_count() or 1)
        rows.append({**res, "rep": r, "set": c.get("set", "")})
    return runs_dataset(rows, DIST_META)


def model_frame(ds: xr.Dataset, response: str = "t_iter_min") -> pd.DataFrame:
    """Regression frame in the model units: X1 (MB), X2-X5 (counts), ``time`` and ``t_comm`` (ms).

    ``time`` is by default the fastest iteration of each run: on a machine
    shared with other work the mean and the median of a run carry that load
    (on the development VM, refitting the same runs, Model C's training RSE
    was 10.5 ms on the mean, 11.6 on the median and 4.9 on the fastest
    iteration); ``response="t_iter"`` takes the mean as the paper did,
    ``"t_iter_median"`` the median.  ``config`` labels the configuration
    (repetitions share it), for cross-validation splits that keep
    repetitions together.
    """
    df = pd.DataFrame({"X1": ds.x1_bytes.values / MB, "X2": ds.x2_chunks.values.astype(float),
                       "X3": ds.x3_peer_edges.values.astype(float), "time": ds[response].values * MS,
                       "nx": ds.nx.values, "ny": ds.ny.values, "nz": ds.nz.values,
                       "node_axis": ds.node_axis.values, "rep": ds.rep.values})
    df["config"] = [f"{a}x{b}x{c}/{x2:g}/{ax}" for a, b, c, x2, ax in
                    zip(df.nx, df.ny, df.nz, df.X2, df.node_axis, strict=True)]
    if "x4_interprocess_edges" in ds:
        df["X4"] = ds.x4_interprocess_edges.values.astype(float)
        df["X5"] = ds.x5_processes.values.astype(float)
        df["t_comm"] = ds.t_comm.values * MS
        df["t_comp"] = ds.t_comp.values * MS
        df["config"] = df.config + [f"/P{p:g}" for p in df.X5]
    return df
