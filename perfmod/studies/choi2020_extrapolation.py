"""Study ``choi2020_extrapolation`` (notebook ``notebooks/choi2020_extrapolation.ipynb``): paper 000's runs at
scales nobody traced.

Paper 000 (Choi et al., ICS 2020 (paper 000) §4.2, §5.2-5.3, §6).  The
authors' DUMPI traces of MiniFE and MiniMD on Lassen (2-32 ranks here, read
from where :func:`perfmod.studies.papers.choi2020_lassen.trace_root` finds them) are
the training data of :func:`perfmod.apps.extrapolate.extrapolate_trace`:

1. *Check at 32 ranks*: extrapolate from 2-16 ranks to 32 and set the result
   beside the recorded 32-rank trace: point-to-point messages and bytes in
   total and per rank, the communication graph (sender-receiver pairs), the
   collectives per rank, the K counts of Table 5 (block mapping, Lassen's 4
   ranks per node), and the point-to-point time per rank and iteration that
   the replay gives on Lassen under the postal, max-rate and K-models, for
   both traces (the recorded trace replayed, not its recorded times).  The
   replay is run twice: with each trace's computation gaps (recorded, or
   extrapolated: each rank's level drawn from the per-rank imbalance and
   start-up skew fitted on the training traces,
   :mod:`perfmod.apps.extrapolate.imbalance`) and with none, the
   communication pattern alone; the K-model's slowest-rank error with the
   gaps kept is also recorded for ``seeds`` draws of the per-rank levels.
2. *Larger scales*: extrapolate from 2-32 ranks to ``targets`` (64-1,024),
   keeping ``target_iterations`` iterations, and replay; where ``trace_dir``
   holds a recorded trace of a target (the authors' repositories have MiniFE
   to 256 ranks and MiniMD to 512), extrapolate all of it and compare as in
   1 (``up_*_error``, K-model only); and to
   ``far_nprocs`` (100,000 ranks and more; MiniFE's bisection needs a power
   of two, 131,072) with one iteration, recording the time and the peak
   memory (the process's maximum resident set) of the extrapolation.
3. *What-if* (000 §6.1, Figure 14, the trace side): the extrapolated
   ``what_if_nprocs``-rank MiniFE trace replayed with 1-16 GPUs (ranks) per
   node, postal against max-rate.

The leave-one-scale-out estimate that the extrapolation stores with each
result (``loso_*``) is recorded beside the errors measured against the
recorded 32-rank traces.  Without the traces the dataset is NaN and its
attribute ``traces_missing`` says how to get them.
"""

from __future__ import annotations

import resource
import time
import warnings
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from perfmod.apps.extrapolate import ExtrapolationWarning, compare_traces, extrapolate_trace, message_stats
from perfmod.apps.registry import exchange
from perfmod.core.io import annotate
from perfmod.machine.platforms import load
from perfmod.studies.papers.choi2020 import PHASES_PER_ITERATION
from perfmod.studies.papers.choi2020_lassen import (
    GET_TRACES,
    find_traces,
    predicted_comm,
    trace_k_counts,
    trace_root,
)
from perfmod.trace import Trace, read_trace

__all__ = ["STUDY", "SOURCE", "run", "figures", "read_runs", "check_at", "scale_up", "what_if"]

STUDY = "choi2020_extrapolation"
"""Study name: the notebook and the dataset's ``study`` attribute."""

SOURCE = ("000 §4.2, §5.2-5.3, §6.1; DUMPI traces recorded on Lassen by the paper's authors (github minitu/miniFE "
          "cuda/src/dumpi/lassen, minitu/miniMD kokkos/dumpi/lassen), extrapolated by perfmod.apps.extrapolate")
"""The dataset's ``source`` attribute."""

_CHECK_VARS = {
    "messages_error": ("1", "extrapolated / recorded point-to-point messages - 1 (total)"),
    "bytes_error": ("1", "extrapolated / recorded point-to-point bytes - 1 (total)"),
    "max_rank_bytes_error": ("1", "extrapolated / recorded bytes of the busiest rank - 1"),
    "pairs_equal": ("1", "1 when the sender-receiver pairs are the same"),
    "collectives_equal": ("1", "1 when every rank makes the same collectives"),
    "compute_error": ("1", "extrapolated / recorded total computation time - 1"),
    "loso_messages_error": ("1", "leave-one-scale-out estimate of |messages error| (worst fold)"),
    "loso_bytes_error": ("1", "leave-one-scale-out estimate of |bytes error| (worst fold)"),
    "loso_max_rank_bytes_error": ("1", "leave-one-scale-out estimate of |busiest rank's bytes error| (worst fold)"),
    "loso_compute_error": ("1", "leave-one-scale-out estimate of |computation error| (worst fold)"),
}


def read_runs(root: Any, app: str, nprocs: Sequence[int]) -> dict[int, Trace]:
    """The recorded traces of ``app`` at ``nprocs`` found under ``root`` (missing ones left out)."""
    runs = find_traces(root / app) if root is not None and (root / app).is_dir() else {}
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p in nprocs:
            if p in runs:
                out[int(p)] = read_trace(runs[p])
    return out


def _rank_comm(trace: Trace, plat: Any, model: str, iterations: int, gaps: bool) -> np.ndarray:
    t = trace if gaps else trace.with_compute(np.zeros(len(trace)))
    return predicted_comm(t, plat, model, iterations)


def check_at(train: Sequence[Trace], recorded: Trace, app: str, iterations: int, models: Sequence[str],
             plat: Any, seeds: int = 1) -> dict[str, Any]:
    """Part 1 for one app: the trace extrapolated from ``train`` against ``recorded`` (see the module docstring);
    ``seed_error``: the slowest rank's K-model time with the gaps kept, extrapolated / recorded - 1, for the
    draws of the per-rank levels seeded 0 to ``seeds - 1``."""
    out = extrapolate_trace(train, recorded.nprocs)
    ex = out.meta["extrapolation"]
    cmp = compare_traces(out, recorded)
    res: dict[str, Any] = {k: float(cmp[k]) for k in ("messages_error", "bytes_error", "max_rank_bytes_error",
                                                       "compute_error")}
    res |= {"pairs_equal": float(cmp["pairs_equal"]), "collectives_equal": float(cmp["collectives_equal"])}
    res |= {f"loso_{k}": float(ex["loso_max"][k]) for k in ("messages_error", "bytes_error", "max_rank_bytes_error",
                                                            "compute_error")}
    a, b = message_stats(out), message_stats(recorded)
    res["bytes_rank"] = np.stack([a["bytes"], b["bytes"]])
    res["messages_rank"] = np.stack([a["messages"], b["messages"]])
    n_ex = iterations * PHASES_PER_ITERATION[app]
    stencil = exchange(app, recorded.nprocs).stencil
    kk = [trace_k_counts(x, n_ex, plat.ranks_per_node, stencil) for x in (out, recorded)]
    res["k"] = np.array([[k["k_inter"], k["k_total_counted"], k["k"]] for k in kk])
    res["t_rank"] = np.array([[[_rank_comm(x, plat, m, iterations, g) for x in (out, recorded)] for m in models]
                              for g in (True, False)])  # (gaps, model, source, rank)
    rec_max = _rank_comm(recorded, plat, "kmodel", iterations, True).max()
    res["seed_error"] = np.array([
        _rank_comm(out if s == 0 else extrapolate_trace(train, recorded.nprocs, validate=False, seed=s), plat,
                   "kmodel", iterations, True).max() / rec_max - 1 for s in range(int(seeds))])
    res["ranks_not_generalizing"] = ex["ranks_not_generalizing"]
    res["sites_not_generalizing"] = ex["sites_not_generalizing"]
    return res


def scale_up(train: Sequence[Trace], app: str, targets: Sequence[int], iterations: int, app_iterations: int,
             models: Sequence[str], plat: Any) -> dict[str, np.ndarray]:
    """Part 2: extrapolations to ``targets`` with ``iterations`` application iterations, replayed."""
    n = len(targets)
    out = {k: np.full(n, np.nan) for k in ("messages", "bytes", "max_rank_bytes", "events", "seconds", "k_inter",
                                           "k_total")}
    out["t_mean"] = np.full((n, len(models)), np.nan)
    out["t_max"] = np.full((n, len(models)), np.nan)
    for i, p in enumerate(targets):
        periods = _periods_per_iteration(train, app_iterations)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtrapolationWarning)
            tr = extrapolate_trace(train, int(p), iterations=periods * iterations, validate=False)
        out["seconds"][i] = time.perf_counter() - t0
        st = message_stats(tr)
        out["messages"][i], out["bytes"][i] = st["messages"].sum(), st["bytes"].sum()
        out["max_rank_bytes"][i], out["events"][i] = st["bytes"].max(), len(tr)
        k = trace_k_counts(tr, iterations * PHASES_PER_ITERATION[app], plat.ranks_per_node, exchange(app, 8).stencil)
        out["k_inter"][i], out["k_total"][i] = k["k_inter"], k["k_total_counted"]
        for m, model in enumerate(models):
            t = predicted_comm(tr, plat, model, iterations)
            out["t_mean"][i, m], out["t_max"][i, m] = t.mean(), t.max()
    return out


def against_recorded(train: Sequence[Trace], recorded: Trace, plat: Any) -> dict[str, float]:
    """A target the user has a recorded trace of: the full extrapolation against it, and the slowest rank's
    K-model time of both, with the computation gaps kept and with none."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        out = extrapolate_trace(train, recorded.nprocs, validate=False)
    c = compare_traces(out, recorded)
    res = {k: float(c[k]) for k in ("messages_error", "bytes_error", "max_rank_bytes_error")}
    res |= {"pairs_equal": float(c["pairs_equal"]), "collectives_equal": float(c["collectives_equal"])}
    for gaps in (True, False):
        t = [_rank_comm(x, plat, "kmodel", 1, gaps).max() for x in (out, recorded)]
        res[f"kmodel_max_error_{'kept' if gaps else 'zero'}"] = float(t[0] / t[1] - 1)
    return res


_AGAINST_VARS = {
    "messages_error": "point-to-point messages, extrapolated / recorded - 1",
    "bytes_error": "point-to-point bytes, extrapolated / recorded - 1",
    "max_rank_bytes_error": "busiest rank's bytes, extrapolated / recorded - 1",
    "pairs_equal": "1 when the sender-receiver pairs are the same",
    "collectives_equal": "1 when every rank makes the same collectives",
    "kmodel_max_error_kept": "slowest rank's K-model time, extrapolated / recorded - 1, computation gaps kept",
    "kmodel_max_error_zero": "slowest rank's K-model time, extrapolated / recorded - 1, no computation gaps",
}


def _periods_per_iteration(train: Sequence[Trace], app_iterations: int) -> int:
    """Skeleton periods per application iteration, from a quick extrapolation's metadata."""
    probe = extrapolate_trace(train, max(t.nprocs for t in train), iterations=1, validate=False)
    return max(int(probe.meta["extrapolation"]["n_periods"]) // int(app_iterations), 1)


def far(train: Sequence[Trace], app: str, nprocs: int, app_iterations: int) -> dict[str, float]:
    """Part 2, far target: time and peak memory of one iteration at ``nprocs`` ranks."""
    periods = _periods_per_iteration(train, app_iterations)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        tr = extrapolate_trace(train, int(nprocs), iterations=periods, validate=False)
    dt = time.perf_counter() - t0
    st = message_stats(tr)
    return {"seconds": dt, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0,
            "events": float(len(tr)), "messages": float(st["messages"].sum()), "bytes": float(st["bytes"].sum()),
            "factor": float(tr.meta["extrapolation"]["far_factor"])}


def what_if(train: Sequence[Trace], nprocs: int, gpus_per_node: Sequence[int], models: Sequence[str],
            platform: str, iterations: int, app_iterations: int) -> np.ndarray:
    """Part 3: mean point-to-point time per iteration of the extrapolated MiniFE trace, (gpus_per_node, model)."""
    periods = _periods_per_iteration(train, app_iterations)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        tr = extrapolate_trace(train, int(nprocs), iterations=periods * iterations, validate=False)
    base = load(platform)
    out = np.full((len(gpus_per_node), len(models)), np.nan)
    for i, g in enumerate(gpus_per_node):
        plat = base.replace(ranks_per_node=int(g), sockets_per_node=2, gpus_per_socket=max(int(g) // 2, 1))
        for m, model in enumerate(models):
            out[i, m] = predicted_comm(tr, plat, model, iterations).mean()
    return out


def run(
    trace_dir: str = "",
    apps: Sequence[str] = ("minife", "minimd"),
    iterations: Sequence[int] = (200, 100),
    train: Sequence[int] = (2, 4, 8, 16),
    check: int = 32,
    targets: Sequence[int] = (64, 256, 1024),
    target_iterations: int = 5,
    far_nprocs: Sequence[int] = (131072, 100000),
    models: Sequence[str] = ("postal", "maxrate", "kmodel"),
    platform: str = "lassen",
    what_if_nprocs: int = 256,
    gpus_per_node: Sequence[int] = (1, 2, 4, 8, 16),
    what_if_models: Sequence[str] = ("postal", "maxrate"),
    seeds: int = 8,
) -> xr.Dataset:
    """The study's dataset (module docstring).

    Parameters
    ----------
    trace_dir : str
        Directory with ``minife/`` and ``minimd/`` DUMPI runs (empty:
        ``$PERFMOD_CHOI2020_TRACES``, else ``../shared/data/choi2020-traces``).
    apps, iterations : sequences
        Applications and the iterations their runs hold (000 §4.2: 200, 100).
    train : sequence of int
        Training rank counts of the check; ``check`` the rank count checked.
    targets : sequence of int
        Rank counts of the scale-up, trained on ``train`` and ``check``.
    target_iterations : int
        Application iterations kept at ``targets`` and ``what_if_nprocs``.
    far_nprocs : sequence of int
        The far target per app (paired with ``apps``), one iteration.
    models : sequence of str
        Replay models; ``platform`` their parameters.
    what_if_nprocs, gpus_per_node, what_if_models
        000 §6.1 on the extrapolated MiniFE trace.
    seeds : int
        Draws of the per-rank computation levels (seeds 0 to ``seeds - 1``)
        whose slowest-rank K-model error at ``check`` is recorded
        (``t_comm_max_error_seed``): how much the error depends on where the
        late ranks happen to sit.

    Returns
    -------
    xarray.Dataset
        Over ``app``: the check's errors and leave-one-scale-out estimates;
        over (``app``, ``source``, ``rank``): bytes and messages per rank
        (``source`` extrapolated / recorded); over (``app``, ``gaps``,
        ``model``, ``source``, ``rank``): replayed time per rank and
        iteration; over (``app``, ``source``, ``kcount``): K counts; over
        (``app``, ``target``[, ``model``]): the scale-up; over ``app``: the
        far target's time, peak memory and size; over (``gpus_per_node``,
        ``what_if_model``): the what-if.
    """
    if len(iterations) != len(apps) or len(far_nprocs) != len(apps):
        raise ValueError(f"iterations {list(iterations)} and far_nprocs {list(far_nprocs)} must pair with apps "
                         f"{list(apps)}")
    plat = load(platform)
    root = trace_root(trace_dir)
    na, nm, nt = len(apps), len(models), len(targets)
    rank_n = int(check)
    scal = {k: np.full(na, np.nan) for k in _CHECK_VARS}
    bytes_rank = np.full((na, 2, rank_n), np.nan)
    msgs_rank = np.full((na, 2, rank_n), np.nan)
    t_rank = np.full((na, 2, nm, 2, rank_n), np.nan)
    kcounts = np.full((na, 2, 3), np.nan)
    up = {k: np.full((na, nt), np.nan) for k in ("messages", "bytes", "max_rank_bytes", "events", "seconds",
                                                  "k_inter", "k_total")}
    up_t = {k: np.full((na, nt, nm), np.nan) for k in ("t_mean", "t_max")}
    far_v = {k: np.full(na, np.nan) for k in ("seconds", "peak_rss", "events", "messages", "bytes", "factor")}
    wi = np.full((len(gpus_per_node), len(what_if_models)), np.nan)
    vs = {k: np.full((na, nt), np.nan) for k in _AGAINST_VARS}
    seed_err = np.full((na, int(seeds)), np.nan)
    missing, not_gen = [], {}
    for a, app in enumerate(apps):
        runs = read_runs(root, app, sorted({*train, check}))
        lack = [p for p in (*train, check) if p not in runs]
        if lack:
            missing.append(f"{app}: n{', n'.join(map(str, lack))} not found under {root}")
            continue
        res = check_at([runs[p] for p in train], runs[check], app, int(iterations[a]), models, plat, seeds)
        seed_err[a] = res["seed_error"]
        for k in _CHECK_VARS:
            scal[k][a] = res[k]
        bytes_rank[a], msgs_rank[a], kcounts[a] = res["bytes_rank"], res["messages_rank"], res["k"]
        t_rank[a] = res["t_rank"]
        not_gen[app] = {"ranks": res["ranks_not_generalizing"], "calls": res["sites_not_generalizing"]}
        full = [runs[p] for p in (*train, check)]
        s = scale_up(full, app, targets, target_iterations, int(iterations[a]), models, plat)
        for k in up:
            up[k][a] = s[k]
        for k in up_t:
            up_t[k][a] = s[k]
        recorded = read_runs(root, app, targets)
        for i, p in enumerate(targets):
            if p in recorded:
                for k, v in against_recorded(full, recorded.pop(p), plat).items():
                    vs[k][a, i] = v
        for k, v in far(full, app, int(far_nprocs[a]), int(iterations[a])).items():
            far_v[k][a] = v
        if app == "minife":
            wi = what_if(full, what_if_nprocs, gpus_per_node, what_if_models, platform, target_iterations,
                         int(iterations[a]))
    src = ["extrapolated", "recorded"]
    data: dict[str, Any] = {k: ("app", scal[k], {"units": u, "long_name": ln}) for k, (u, ln) in _CHECK_VARS.items()}
    data |= {
        "bytes_rank": (("app", "source", "rank"), bytes_rank, {"units": "B", "long_name":
                       "point-to-point bytes sent per rank at the check's rank count"}),
        "messages_rank": (("app", "source", "rank"), msgs_rank, {"units": "1", "long_name":
                          "point-to-point messages sent per rank"}),
        "t_comm_rank": (("app", "gaps", "model", "source", "rank"), t_rank, {"units": "s", "long_name":
                        "replayed point-to-point time (send + receive + wait) per rank and iteration"}),
        "k_counts": (("app", "source", "kcount"), kcounts, {"units": "1", "long_name":
                     "Table 5 counts from the trace's messages (most over exchanges)"}),
        "t_comm_max_error": (("app", "gaps", "model"), t_rank[:, :, :, 0].max(-1) / t_rank[:, :, :, 1].max(-1) - 1,
                             {"units": "1", "long_name": "slowest rank's replayed time, extrapolated / recorded - 1"}),
        "t_comm_max_error_seed": (("app", "seed"), seed_err, {"units": "1", "long_name":
                                  "slowest rank's K-model time with the computation gaps kept, extrapolated / "
                                  "recorded - 1, per seed of the per-rank levels' draws"}),
    }
    for k, (u, ln) in {"messages": ("1", "point-to-point messages"), "bytes": ("B", "point-to-point bytes"),
                       "max_rank_bytes": ("B", "bytes of the busiest rank"), "events": ("1", "events"),
                       "seconds": ("s", "time of the extrapolation"), "k_inter": ("1", "K_inter"),
                       "k_total": ("1", "K_total as counted")}.items():
        data[f"up_{k}"] = (("app", "target"), up[k], {"units": u, "long_name": f"{ln} of the extrapolated trace "
                                                      f"({target_iterations} iterations)"})
    for k, ln in _AGAINST_VARS.items():
        data[f"up_{k}"] = (("app", "target"), vs[k], {"units": "1", "long_name": f"{ln} (targets whose recorded "
                                                       "trace trace_dir holds; NaN elsewhere)"})
    data["up_t_comm"] = (("app", "target", "model"), up_t["t_mean"], {"units": "s", "long_name":
                         "replayed point-to-point time per rank and iteration, mean over ranks"})
    data["up_t_comm_max"] = (("app", "target", "model"), up_t["t_max"], {"units": "s", "long_name":
                             "replayed point-to-point time per iteration, slowest rank"})
    for k, (u, ln) in {"seconds": ("s", "time to extrapolate one iteration"),
                       "peak_rss": ("B", "peak resident memory of the process after it (maximum so far)"),
                       "events": ("1", "events of one iteration"), "messages": ("1", "messages of one iteration"),
                       "bytes": ("B", "bytes of one iteration"),
                       "factor": ("1", "target / largest training rank count")}.items():
        data[f"far_{k}"] = ("app", far_v[k], {"units": u, "long_name": ln})
    data["what_if_t_comm"] = (("gpus_per_node", "what_if_model"), wi, {"units": "s", "long_name":
                              f"replayed point-to-point time per iteration of the extrapolated {what_if_nprocs}-rank "
                              "MiniFE trace, mean over ranks (000 §6.1, Figure 14)"})
    ds = xr.Dataset(data, coords={"app": list(apps), "source": src, "rank": np.arange(rank_n),
                                  "gaps": ["kept", "zero"], "model": list(models), "seed": np.arange(int(seeds)),
                                  "kcount": ["k_inter", "k_total_counted", "k"],
                                  "target": ("target", np.asarray(targets), {"units": "1", "long_name": "ranks"}),
                                  "far_nprocs": ("app", np.asarray(far_nprocs)),
                                  "gpus_per_node": list(gpus_per_node), "what_if_model": list(what_if_models)})
    ds = annotate(ds, study=STUDY, source=SOURCE,
                  parameters=dict(trace_dir=trace_dir, apps=apps, iterations=iterations, train=train, check=check,
                                  targets=targets, target_iterations=target_iterations, far_nprocs=far_nprocs,
                                  models=models, platform=platform, what_if_nprocs=what_if_nprocs,
                                  gpus_per_node=gpus_per_node, what_if_models=what_if_models, seeds=seeds))
    why = "" if not missing else f"{'; '.join(missing)}; get them: {GET_TRACES}"
    if root is None:
        why = f"no trace directory; get them: {GET_TRACES}"
    ds.attrs.update(traces_missing=why, not_generalizing=str(not_gen))
    return ds


def figures(ds: xr.Dataset) -> dict[str, plt.Figure]:
    """``per_rank``: extrapolated against recorded per rank (bytes; K-model time with gaps kept and zero);
    ``scale_up``: replayed time per iteration against ranks; ``what_if``: 000 §6.1 on the extrapolated trace."""
    figs: dict[str, plt.Figure] = {}
    apps = [str(a) for a in ds.app.values]
    fig, axes = plt.subplots(len(apps), 3, figsize=(12, 3.2 * len(apps)), squeeze=False)
    model = "kmodel" if "kmodel" in ds.model.values else str(ds.model.values[-1])
    for row, app in zip(axes, apps, strict=True):
        sub = ds.sel(app=app)
        panels = [(sub.bytes_rank / 1e6, "MB sent per rank"),
                  (sub.t_comm_rank.sel(gaps="kept", model=model) * 1e3, f"{model}, gaps kept [ms/iter]"),
                  (sub.t_comm_rank.sel(gaps="zero", model=model) * 1e3, f"{model}, no gaps [ms/iter]")]
        for ax, (v, label) in zip(row, panels, strict=True):
            ax.plot(v.sel(source="recorded"), v.sel(source="extrapolated"), "o", ms=4)
            lim = [float(v.min()) * 0.95, float(v.max()) * 1.05] if bool(v.notnull().any()) else [0, 1]
            ax.plot(lim, lim, "k:", lw=0.8)
            ax.set_xlabel(f"recorded: {label}")
            ax.set_ylabel("extrapolated")
            ax.set_title(f"{app}, {int(ds.sizes['rank'])} ranks", fontsize=9)
    fig.tight_layout()
    figs["per_rank"] = fig
    fig, axes = plt.subplots(1, len(apps), figsize=(4.6 * len(apps), 3.4), squeeze=False)
    for ax, app in zip(axes[0], apps, strict=True):
        for m in ds.model.values:
            ax.plot(ds.target, ds.up_t_comm_max.sel(app=app, model=m) * 1e3, "o-", label=f"{m} (slowest rank)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ranks (extrapolated)")
        ax.set_ylabel("point-to-point time per iteration [ms]")
        ax.set_title(app)
        ax.legend(fontsize=7)
    fig.tight_layout()
    figs["scale_up"] = fig
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    for m in ds.what_if_model.values:
        ax.plot(ds.gpus_per_node, ds.what_if_t_comm.sel(what_if_model=m) * 1e6, "o-", label=str(m))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs (ranks) per node")
    ax.set_ylabel("communication per iteration [us]")
    ax.set_title("MiniFE, extrapolated trace (000 §6.1)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    figs["what_if"] = fig
    return figs
