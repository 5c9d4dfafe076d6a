"""The model half of the local Jacobi2D study: kernel counts, profiles, predictions and their comparison.

Paper 000 §3.3-§3.4 applied to the Jacobi2D proxy (:mod:`perfmod.studies.local_jacobi2d` runs it and
describes the method): the profiling run gives each kernel's QRoof efficiency and the overhead; the
prediction of every configuration is ``T_exchange + T_allreduce + sum_k T_k + overhead`` with the
postal model of the local platform and QRoof on the device row of its rank count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

import perfmod.campaign as campaign
from perfmod.apps.jacobi2d import KERNELS, proxy_kernel_counts
from perfmod.apps.jacobi2d import decompose as jacobi2d_exchange
from perfmod.machine.cart import COMPASS, compass_neighbours, dims_create
from perfmod.machine.platforms import Platform
from perfmod.models.comm.collectives import collective_time
from perfmod.models.comm.network import Network
from perfmod.models.comm.phase import phase_time
from perfmod.models.roofline.qroof import qroof_time

__all__ = ["MODELED", "COMPARED", "KERNEL_MODELS", "PROFILE", "LONG", "rank_counts", "Profile", "profile_jacobi",
           "profile_each", "unprofiled", "clean_phases", "predict_jacobi", "compare", "headline_errors", "error_table"]

#: Phases compared one by one (the kernels, the two communication phases, and the overhead).
MODELED = ("pack", "exchange", "unpack", "stencil", "reduce", "allreduce")
COMPARED = (*MODELED, "overhead", "iter")
KERNEL_MODELS = ("qroof", "qroof_profiled")
#: Default profiling run: two ranks (the paper profiles its two-process run), a block beyond the L3.
PROFILE = {"block": 2048, "nprocs": 2}
LONG = {"pack": "PACK kernel", "exchange": "halo exchange (Irecv/Isend/Waitall)", "unpack": "UNPACK kernel",
        "stencil": "STENCIL kernel (Eq. 6)", "reduce": "REDUCE kernel", "allreduce": "allreduce of the sum",
        "overhead": "overhead (host-device copies, sum transfer, loop)", "iter": "iteration"}



def rank_counts(block: int, nprocs: int) -> dict[str, dict[str, Any]]:
    """Kernel metrics of the mean rank (operations and bytes averaged over the ranks of the grid).

    The proxy reports phase times averaged over ranks, so the model
    predicts the mean rank too (on the grids used here every rank has the
    same number of neighbours, so mean and busiest rank coincide).
    """
    dims = dims_create(int(nprocs), 2)
    per = [proxy_kernel_counts(block, [d for d in COMPASS if nb[d] >= 0])
           for nb in (compass_neighbours(r, dims) for r in range(int(nprocs)))]
    out = {k: dict(per[0][k]) for k in KERNELS}
    for k in KERNELS:
        for key in ("compute_ops", "dram_bytes"):
            out[k][key] = float(np.mean([c[k][key] for c in per]))
    return out


def _qroof(counts: Mapping[str, Any], row: Mapping[str, float]) -> float:
    if counts["compute_ops"] <= 0:  # nothing to move (one rank: no halos)
        return 0.0
    return float(qroof_time(counts["compute_ops"], counts["dram_bytes"], counts["dominant_op"],
                            counts["opmix_efficiency"], counts["mix_compute"], counts["mix_ldst"], row))


def _comm(block: int, nprocs: int, net: Network) -> tuple[float, float]:
    """(halo exchange of the mean rank, allreduce) seconds on ``net`` (the postal model), all ranks on this node."""
    net = net.with_layout(ranks_per_node=max(net.platform.ranks_per_node, int(nprocs)))
    t_ex = float(phase_time(jacobi2d_exchange(int(nprocs), int(block)), net, "postal").t_rank.mean())
    t_ar = float(collective_time("allreduce", 8, int(nprocs), net, "postal"))
    return t_ex, t_ar


@dataclass(frozen=True)
class Profile:
    """What the profiling run gives the model.

    Attributes
    ----------
    block, nprocs : int
        The profiled configuration.
    overhead : float
        Measured ``t_iter`` minus the modelled phases (s per iteration).
    kernel_time : dict
        Kernel -> measured time per iteration (s) in the profiling run.
    efficiency : dict
        Kernel -> measured time / QRoof time on the profile's device row.
    counts : dict
        Kernel -> QRoof metrics of the representative rank.
    """

    block: int
    nprocs: int
    overhead: float
    kernel_time: dict[str, float]
    efficiency: dict[str, float]
    counts: dict[str, dict[str, Any]] = field(default_factory=dict)


def _overhead_reps(measured: xr.Dataset) -> xr.DataArray:
    """Per repetition: the iteration minus the modelled phases (the median of a difference, not a difference of
    medians, so that it stays the non-negative sum of the unmodelled phases)."""
    return measured["t_iter_measured"] - sum(measured[f"t_{x}_measured"] for x in MODELED)


def clean_phases(measured: xr.Dataset) -> tuple[xr.Dataset, list[str]]:
    """Medians over the clean repetitions of every measured phase, the iteration and the overhead (NaN where no
    run was clean; :func:`perfmod.campaign.records.clean_medians`), and the configurations without a clean run."""
    names = [f"t_{q}_measured" for q in (*MODELED, "iter")]
    keep = [*names, *(["interfered"] if "interfered" in measured else [])]
    return campaign.clean_medians(measured[keep].assign(t_overhead_measured=_overhead_reps(measured)),
                                  [*names, "t_overhead_measured"])


def profile_jacobi(measured: xr.Dataset, rows: Mapping[int, Mapping[str, float]], block: int = PROFILE["block"],
                   nprocs: int = PROFILE["nprocs"]) -> Profile:
    """Profile from the run at (``block``, ``nprocs``) of ``measured`` (median over the clean repetitions).

    Runs flagged ``interfered`` are not used; a ``ValueError`` says so when
    none of the profiling configuration's runs was clean.
    """
    if block not in measured.block.values or nprocs not in measured.nprocs.values:
        raise KeyError(f"profile configuration block={block}, nprocs={nprocs} was not measured "
                       f"(blocks {measured.block.values.tolist()}, nprocs {measured.nprocs.values.tolist()})")
    run = measured.sel(block=[block], nprocs=[nprocs])
    m = clean_phases(run)[0].isel(block=0, nprocs=0)
    if not np.isfinite(float(m["t_iter_measured"])):
        raise ValueError(f"no clean run of the profiling configuration block={block}, nprocs={nprocs} (every "
                         f"repetition was interfered): it cannot be profiled")
    t = {q: float(m[f"t_{q}_measured"]) for q in (*MODELED, "iter")}
    counts = rank_counts(block, nprocs)
    eff = {}
    for k in KERNELS:
        q = _qroof(counts[k], rows[nprocs])
        eff[k] = t[k] / q if q > 0 else 1.0
    overhead = float(m["t_overhead_measured"])
    return Profile(int(block), int(nprocs), overhead, {k: t[k] for k in KERNELS}, eff, counts)


def profile_each(measured: xr.Dataset, rows: Mapping[int, Mapping[str, float]], block: int,
                 nprocs: Sequence[int]) -> dict[int, Profile]:
    """One :func:`profile_jacobi` per rank count (each rank count is its own device on a shared CPU).

    A rank count whose profiling configuration has no clean run gets a
    profile of NaN (:func:`unprofiled`): what depends on it is predicted NaN.
    """
    out = {}
    for p in nprocs:
        try:
            out[int(p)] = profile_jacobi(measured, rows, block, int(p))
        except ValueError:
            out[int(p)] = unprofiled(block, int(p))
    return out


def unprofiled(block: int, nprocs: int) -> Profile:
    """The profile of a configuration without a clean run: NaN overhead, kernel times and efficiencies."""
    nan = float("nan")
    return Profile(int(block), int(nprocs), nan, dict.fromkeys(KERNELS, nan), dict.fromkeys(KERNELS, nan),
                   rank_counts(block, nprocs))


def _profile_for(profile: Profile | Mapping[int, Profile], nprocs: int) -> Profile:
    if isinstance(profile, Profile):
        return profile
    if nprocs not in profile:
        raise KeyError(f"no profile for nprocs={nprocs} (profiled: {sorted(profile)})")
    return profile[nprocs]


def predict_jacobi(blocks: Sequence[int], nprocs: Sequence[int], platform: Platform,
                   rows: Mapping[int, Mapping[str, float]], profile: Profile | Mapping[int, Profile]) -> xr.Dataset:
    """Predicted time per iteration and per phase over (``model``, ``block``, ``nprocs``).

    ``profile`` is one profile for every rank count, or one per rank count (:func:`profile_each`).
    """
    blocks, nprocs = [int(b) for b in blocks], [int(p) for p in nprocs]
    net = Network(platform, "postal")  # bound once: the rank counts change the layout only
    shape = (len(KERNEL_MODELS), len(blocks), len(nprocs))
    out = {q: np.zeros(shape) for q in COMPARED}
    for i, b in enumerate(blocks):
        for j, p in enumerate(nprocs):
            if p not in rows:
                raise KeyError(f"no device row for nprocs={p} (have {sorted(rows)})")
            counts = rank_counts(b, p)
            t_ex, t_ar = _comm(b, p, net)
            prof = _profile_for(profile, p)
            for m, model in enumerate(KERNEL_MODELS):
                for k in KERNELS:
                    q = _qroof(counts[k], rows[p])
                    out[k][m, i, j] = q * (prof.efficiency[k] if model == "qroof_profiled" else 1.0)
                out["exchange"][m, i, j], out["allreduce"][m, i, j] = t_ex, t_ar
                out["overhead"][m, i, j] = prof.overhead
                out["iter"][m, i, j] = sum(out[q][m, i, j] for q in (*MODELED, "overhead"))
    return xr.Dataset(
        {f"t_{q}_predicted": (("model", "block", "nprocs"), out[q],
                              {"units": "s", "long_name": f"predicted time per iteration: {LONG[q]}"})
         for q in COMPARED},
        coords={"model": list(KERNEL_MODELS), "block": blocks, "nprocs": nprocs},
    )


def compare(measured: xr.Dataset, predicted: xr.Dataset, profile: Profile | Mapping[int, Profile],
            model: str = "qroof_profiled") -> xr.Dataset:
    """Measured (median over the clean repetitions) and predicted pairs per phase, with relative errors and masks.

    Runs flagged ``interfered`` in ``measured`` are left out of the medians; a
    configuration without a clean run is NaN (no error figure there).

    ``t_<q>_predicted`` is the headline ``model``; every model stays in
    ``t_<q>_predicted_by_model``.  ``held_out`` is False at the profiled
    configuration; ``headline`` also drops oversubscribed and cache-resident
    configurations.
    """
    med, _ = clean_phases(measured)
    out = xr.Dataset(coords={c: measured.coords[c] for c in ("block", "nprocs", "oversubscribed", "cache_resident")})
    t_iter = med["t_iter_measured"]
    for q in COMPARED:
        meas = med[f"t_{q}_measured"].assign_attrs(
            units="s", long_name=f"measured time per iteration: {LONG[q]} (median over the clean reps; NaN where "
                                 "none was clean)")
        pred = predicted[f"t_{q}_predicted"].sel(block=measured.block, nprocs=measured.nprocs)
        out[f"t_{q}_measured"] = meas
        out[f"t_{q}_predicted"] = pred.sel(model=model, drop=True).assign_attrs(
            units="s", long_name=f"predicted time per iteration: {LONG[q]} ({model})")
        out[f"t_{q}_predicted_by_model"] = pred.assign_attrs(units="s", long_name=f"predicted: {LONG[q]}, per model")
        with np.errstate(divide="ignore", invalid="ignore"):
            # a phase with nothing to do (no halo on one rank) has no relative error
            err = xr.where(pred > 0, (pred - meas) / meas, np.nan) if q in MODELED else (pred - meas) / meas
        out[f"t_{q}_error"] = err.assign_attrs(units="1", long_name=f"relative error, {LONG[q]}: "
                                               "(predicted - measured) / measured")
        out[f"t_{q}_error_of_iter"] = ((pred - meas) / t_iter).assign_attrs(
            units="1", long_name=f"{LONG[q]}: (predicted - measured) / measured iteration time")
    for q in (*MODELED, "iter"):
        out[f"t_{q}_measured_reps"] = measured[f"t_{q}_measured"].assign_attrs(
            units="s", long_name=f"measured time per iteration: {LONG[q]}, every repetition")
    dev = np.abs(measured["t_iter_measured"] / med["t_iter_measured"] - 1)
    flags = {"interfered": measured.interfered} if "interfered" in measured else {}
    dev = campaign.clean_medians(xr.Dataset({"dev": dev, **flags}), ["dev"])[0]["dev"]
    out["t_iter_noise"] = dev.assign_attrs(units="1", long_name="run-to-run noise of the iteration time: median over "
                                           "the clean reps of |rep / median - 1|")
    profiles = {profile.nprocs: profile} if isinstance(profile, Profile) else dict(profile)
    b, p = xr.broadcast(out.block, out.nprocs)
    held = xr.ones_like(b, dtype=bool)
    for n, prof in profiles.items():
        held = held & ~((b == prof.block) & (p == n))
    out["held_out"] = held.assign_attrs(units="1", long_name="not a profiled configuration")
    out["headline"] = (held & ~out.oversubscribed & ~out.cache_resident).assign_attrs(
        units="1", long_name="in the headline error: held out, not oversubscribed, beyond the LLC")
    ns = sorted(profiles)
    out = out.assign_coords(kernel=list(KERNELS), profile_nprocs=("profile_nprocs", ns, {
        "units": "1", "long_name": "rank count of a profiling run"}))
    out["profile_overhead"] = ("profile_nprocs", [profiles[n].overhead for n in ns],
                               {"units": "s", "long_name": "overhead from the profiling run"})
    eff = [[profiles[n].efficiency[k] for k in KERNELS] for n in ns]
    out["kernel_efficiency"] = (("profile_nprocs", "kernel"), eff,
                                {"units": "1", "long_name": "measured / QRoof kernel time in the profiling run"})
    out.attrs.update(profile_block=profiles[ns[0]].block, headline_model=model)
    return out


def headline_errors(result: xr.Dataset, model: str | None = None, of_iter: bool = False) -> dict[str, float]:
    """Median absolute relative error per compared quantity over the headline configurations (NaN if none).

    With ``of_iter`` each phase's error is relative to the measured iteration time (its share of the
    iteration's error) instead of to the phase itself.
    """
    sel = result.headline.values
    out = {}
    for q in COMPARED:
        err = result[f"t_{q}_error_of_iter" if of_iter else f"t_{q}_error"]
        if model is not None:
            err = err.sel(model=model)
        elif "model" in err.dims:
            err = err.sel(model=result.attrs.get("headline_model", "qroof_profiled"))
        v = np.abs(err.values[sel])
        v = v[np.isfinite(v)]
        out[q] = float(np.median(v)) if v.size else float("nan")
    return out


def error_table(result: xr.Dataset) -> Any:
    """Median absolute error per quantity over the headline configurations, per kernel model (pandas).

    Columns: relative to the phase itself and relative to the iteration (the phase's share of the
    iteration's error; for ``iter`` both are the same).
    """
    import pandas as pd

    cols = {f"{m}: of the phase": headline_errors(result, m) for m in result.model.values}
    cols |= {f"{m}: of the iteration": headline_errors(result, m, of_iter=True) for m in result.model.values}
    return pd.DataFrame(cols)
