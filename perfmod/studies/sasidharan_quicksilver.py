"""Paper 001 §6 (dynamic iterative programs) transposed to this machine with the Quicksilver-like proxy.

Experiment design (§6.2): runs of :func:`perfmod.measure.proxies.quicksilver.run_quicksilver`
over mesh sizes (mesh memory X1), target particle counts (particle memory
X2: the mean over iterations of the allocated particle arrays, a sample mean
as §6.3 prescribes) and worker threads (X3); each configuration repeated, each
repetition an observation; validation runs use mesh sizes and particle counts
not in the training set (§6.5).  An iteration is ``m`` tracking iterations;
population control every ``f`` iterations (the paper: m = 100, f = 20,
200 iterations).  Model units as the paper: memory in MB; the response is the
mean time per tracking iteration in s.

Models (R formulas):

- Model 1 (Table 8): ``(X2 + X2^2) * X3``: 6 coefficients.
- Model 2 (§6.4.1, "adding X1 and its interactions"):
  ``(X1 + X1^2) * (X2 + X2^2) * X3``: 18 coefficients, the count Table 9's
  residual degrees of freedom imply (456 - 444 = 12 more than Model 1's 6).
- Power (Table 10): ``X1 * X2 * X3``; energy (Table 11): ``(X2 + X2^2) * X3 * X4``
  with X4 the mean power.  They need a power sensor (:mod:`perfmod.measure.power`);
  without one only the paper's tables are shown.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pandas as pd
import xarray as xr
from tqdm.auto import tqdm

from perfmod.measure import power
from perfmod.measure.proxies.quicksilver import run_quicksilver
from perfmod.studies.sasidharan_common import run_order, runs_dataset
from perfmod.studies.sasidharan_published import MODELS

__all__ = ["FORMULAS", "POWER_FORMULA", "ENERGY_FORMULA", "design", "measure", "model_frame"]

#: Models 1 and 2 of §6.4.1, power (Table 10) and energy (Table 11): the paper's formulas
FORMULAS = {"1": MODELS["model1"].formula, "2": MODELS["model2"].formula}
POWER_FORMULA = MODELS["power"].formula
ENERGY_FORMULA = MODELS["energy"].formula

MB = 1e6

META = {
    "nx": ("1", "mesh elements along each axis"), "target_particles": ("1", "target particle count"),
    "rep": ("1", "repetition"), "set": ("1", "which set the run belongs to (train, test)"),
    "iterations": ("1", "iterations (K)"), "m": ("1", "tracking iterations per iteration"),
    "f": ("1", "iterations between population controls"),
    "x1_mesh_bytes": ("B", "X1: mesh memory"),
    "x2_particle_bytes": ("B", "X2: mean allocated particle memory over iterations"),
    "x3_threads": ("1", "X3: worker threads"),
    "mean_particles": ("1", "mean live particles over iterations"),
    "t_track": ("s", "mean time per tracking iteration (slowest worker)"),
    "t_track_median": ("s", "median over iterations of the time per tracking iteration"),
    "t_track_min": ("s", "fastest iteration's time per tracking iteration"),
    "t_iter": ("s", "mean time per iteration (m tracking iterations + population control share)"),
    "t_popctl": ("s", "mean time per population control"),
    "t_total_eq7": ("s", "total time by Eq. 7 from per-worker times"),
    "oversubscribed": ("1", "more threads than cores"),
}
POWER_META = {
    "max_power_w": ("W", "largest sampled power of the sensor's first zone"),
    "mean_power_w": ("W", "mean power of the sensor's first zone over the run"),
    "energy_per_track_j": ("J", "energy per tracking iteration (sensor's first zone)"),
}


def design(sizes: Sequence[int], particles: Sequence[int], threads: Sequence[int], label: str = "",
           reps: int | None = None) -> list[dict[str, Any]]:
    """All configurations: cubic meshes of ``n^3`` elements x target particle counts x threads.

    ``label`` and ``reps`` are stored in every configuration when given
    (see :func:`perfmod.studies.sasidharan_common.run_order`).
    """
    out = []
    for n, p, t in itertools.product(sizes, particles, threads):
        if n < 1 or p < 1 or t < 1:
            raise ValueError(f"mesh size, particles and threads must be positive, got {n}, {p}, {t}")
        out.append({"nx": int(n), "particles": int(p), "threads": int(t), **({"set": label} if label else {}),
                    **({"reps": int(reps)} if reps is not None else {})})
    return out


def measure(configs: Sequence[dict[str, Any]], reps: int = 2, iterations: int = 10, m: int = 5, f: int = 5,
            seed: int = 0, with_power: bool = False, progress: bool = True) -> xr.Dataset:
    """Run the proxy for every configuration and repetition (seeded random order); one observation per run.

    With ``with_power`` each run is wrapped in :func:`perfmod.measure.power.measure`
    (raises if no sensor is readable) and the dataset gains ``max_power_w``,
    ``mean_power_w`` and ``energy_per_track_j``.
    """
    import os

    rows = []
    for i, r in tqdm(run_order(configs, reps, seed), desc="Quicksilver runs", disable=not progress):
        c = configs[i]

        def run(c=c, s=seed + 1000 * r + i) -> dict[str, Any]:
            return run_quicksilver(c["nx"], c["nx"], c["nx"], c["particles"], iterations, m, f, c["threads"], seed=s)
        if with_power:
            e = power.measure(run)
            res = e.value
            zone = next(iter(e.energy_j))
            res.update(max_power_w=e.max_power_w[zone], mean_power_w=e.mean_power_w[zone],
                       energy_per_track_j=e.energy_j[zone] / (iterations * m))
        else:
            res = run()
        res["rep"] = r
        res["set"] = c.get("set", "")
        res["oversubscribed"] = c["threads"] > (os.cpu_count() or 1)
        rows.append(res)
    return runs_dataset(rows, {**META, **(POWER_META if with_power else {})})


def model_frame(ds: xr.Dataset, response: str = "t_track_min") -> pd.DataFrame:
    """Regression frame in the paper's units: X1, X2 (MB), X3 (threads), ``time`` (s per tracking iteration).

    The fastest iteration of each run is the default response (robust to load
    from other processes on a shared machine); ``response="t_track"`` is the
    mean the paper used, ``"t_track_median"`` the median.
    Power columns, when measured: ``power`` (maximum power, mW), ``X4`` (mean power, mW),
    ``energy`` (mJ per tracking iteration), the paper's units (Tables 10, 11).
    """
    df = pd.DataFrame({"X1": ds.x1_mesh_bytes.values / MB, "X2": ds.x2_particle_bytes.values / MB,
                       "X3": ds.x3_threads.values.astype(float), "time": ds[response].values,
                       "nx": ds.nx.values, "particles": ds.target_particles.values, "rep": ds.rep.values})
    df["config"] = [f"{n}/{p}/{t:g}" for n, p, t in zip(df.nx, df.particles, df.X3, strict=True)]
    if "max_power_w" in ds:
        df["power"] = ds.max_power_w.values * 1e3
        df["X4"] = ds.mean_power_w.values * 1e3
        df["energy"] = ds.energy_per_track_j.values * 1e3
    return df
