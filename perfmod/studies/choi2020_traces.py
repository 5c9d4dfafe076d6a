"""Study ``choi2020_traces`` (notebook ``notebooks/choi2020_traces.ipynb``): paper 000's own Lassen traces.

Paper 000 (Choi et al., ICS 2020 (paper 000) §4.2, §5.2-5.3, Table 5,
Figures 7 and 10).  The MiniFE and MiniMD traces that the paper's authors
recorded with DUMPI on Lassen are public; perfmod does not ship them (they are
another project's data).  This study reads them from a directory the user
names, counts Table 5's K_inter, K_total and k from the recorded messages,
replays each trace under the postal, max-rate and K-models with Lassen's
parameters (``data/platforms/lassen.toml``), and sets the predicted
point-to-point communication time per rank and per iteration beside the time
the trace itself recorded on Lassen (the measured side of Figures 7 and 10).

Where the traces are
--------------------
``trace_dir`` (or, when it is empty, the environment variable
``PERFMOD_CHOI2020_TRACES``, else ``../shared/data/choi2020-traces`` beside
the checkout when it exists, :data:`DEFAULT_TRACE_DIR`) holds one folder per application,
``<trace_dir>/minife`` and ``<trace_dir>/minimd``, each with the DUMPI runs as
the authors' repositories store them: ``nP.meta`` beside ``nP-NNNN.bin``
(any ``*.meta`` is taken; its rank count is its ``numprocs`` line).  They come
from (:data:`GET_TRACES`)::

    git clone https://github.com/minitu/miniFE
    git clone https://github.com/minitu/miniMD
    git -C miniMD checkout bcfd595^     # the commit before "Remove perf modeling files"
    mkdir traces
    ln -s "$PWD/miniFE/cuda/src/dumpi/lassen" traces/minife   # n2 .. n256
    ln -s "$PWD/miniMD/kokkos/dumpi/lassen" traces/minimd     # n2 .. n512

Without them the study still runs: the paper half (Table 5 as printed, the
K counts of perfmod's decompositions at the trace rank counts, the analytic
model side) is filled in, the trace half is NaN and the dataset attribute
``traces_missing`` says what was not found and how to get it.

What is counted and compared
----------------------------
- An *exchange* is one halo exchange: MiniFE one per CG iteration (the 26
  neighbours of §4.2), MiniMD two per timestep (the forward and the reverse
  communication, 000 §4.2 phases 2 and 4), as in
  :data:`perfmod.studies.papers.choi2020.PHASES_PER_ITERATION`.  The runs hold
  200 MiniFE and 100 MiniMD iterations (000 §4.2), the ``iterations``
  parameter.  A send belongs to exchange ``c // w``: ``c`` the completion
  calls (waits) its rank made before it, ``w`` the most waits of any rank
  divided by the number of exchanges (MiniFE one Waitall per exchange,
  MiniMD one per swap, six per exchange at 8 ranks or more).
- K counts of every exchange from its messages
  (:func:`perfmod.models.comm.kmodel.kmodel_counts_from`, block mapping,
  Lassen's 4 ranks per node): K_inter the most over exchanges (and the least,
  to show they do not vary), K_total by Table 5's rule (k' x the
  application's neighbour count, 26 or 6) and as counted.
- Recorded point-to-point time (``t_comm_measured``): per rank, the summed
  durations (exit - entry, DUMPI wall clock) of its Isend, Irecv and wait
  calls, divided by the iterations.  It is what MPI reported on Lassen and it
  includes the time a wait spends before a late partner posted its send.
  That part is separated (``t_late_recorded``): for each wait, the time from
  its entry to the latest entry of a partner's matching send, capped at the
  wait's duration, with the ranks' clocks aligned on the ends of the
  collectives on ``MPI_COMM_WORLD`` (every rank leaves a barrier or allreduce
  at about the same moment; the median difference is the rank's offset).
  ``t_post_recorded`` is the time inside Isend and Irecv themselves.
- Predicted (``t_comm_predicted``): :func:`perfmod.replay.replay` of the
  trace (its recorded computation gaps kept) on Lassen, send + receive +
  wait time per rank, divided by the iterations, so simulated waiting for
  late partners is in it as the recorded one is in the measurement.  The
  replay's phases are cut by the collectives on world (MiniMD's barriers put
  every swap in a phase of its own), and its K-model counts K_total per phase.
- Collectives are recorded (``t_coll_recorded``) but not compared: the
  figures model the halo exchange.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from tqdm.auto import tqdm

from perfmod.apps.registry import exchange, kmodel_counts
from perfmod.core.io import annotate
from perfmod.machine.platforms import load
from perfmod.models.comm.network import Network
from perfmod.replay.matching import collective_instances, match_messages
from perfmod.studies.papers.choi2020 import PHASES_PER_ITERATION, TABLE5_CONFIGS, comm_per_iteration
from perfmod.studies.papers.choi2020_lassen import (
    GET_TRACES,
    TRACE_ENV,
    find_traces,
    predicted_comm,
    trace_k_counts,
    trace_root,
)
from perfmod.trace import TraceError, read_trace
from perfmod.trace.core import COLLECTIVES, NO_TIME, NONBLOCKING, WAITS, Call, Trace, code_set
from perfmod.trace.requests import resolve_requests
from perfmod.viz.validation import plot_validation

__all__ = ["STUDY", "SOURCE", "run", "figures", "clock_offsets", "recorded_comm"]

STUDY = "choi2020_traces"
"""Study name: the notebook ``notebooks/choi2020_traces.ipynb`` and the dataset's ``study`` attribute."""

SOURCE = ("000 Table 5 and §4.2; DUMPI traces recorded on Lassen by the paper's authors (github minitu/miniFE "
          "cuda/src/dumpi/lassen, minitu/miniMD kokkos/dumpi/lassen at bcfd595^), read from the user's copy")
"""The dataset's ``source`` attribute."""

_P2P_CALLS = code_set(NONBLOCKING | {Call.SEND, Call.RECV, Call.SSEND, Call.SENDRECV} | (WAITS - {Call.TEST}))
_WAIT_CALLS = code_set(WAITS)
_POST_CALLS = code_set(NONBLOCKING)


def clock_offsets(trace: Trace) -> np.ndarray:
    """Each rank's clock offset (ns): the median over collectives on world of its exit minus their median exit.

    Zeros when the trace has no collective on ``MPI_COMM_WORLD`` or no times.
    """
    p = trace.nprocs
    if trace.t_exit is None:
        return np.zeros(p)
    coll = collective_instances(trace)
    ev = np.flatnonzero((coll.inst >= 0) & (trace.comm == 0) & (trace.t_exit != NO_TIME))
    if not ev.size:
        return np.zeros(p)
    inst = coll.inst[ev]
    t = trace.t_exit[ev].astype(np.float64)
    order = np.lexsort((t, inst))
    inst, t, rank = inst[order], t[order], trace.rank[ev][order]
    bounds = np.flatnonzero(np.r_[True, inst[1:] != inst[:-1], True])
    med = np.empty(bounds.size - 1)
    for k in range(bounds.size - 1):  # one median per collective instance (a few thousand)
        med[k] = np.median(t[bounds[k]:bounds[k + 1]])
    dev = t - np.repeat(med, np.diff(bounds))
    out = np.zeros(p)
    o = np.lexsort((dev, rank))
    rank, dev = rank[o], dev[o]
    rb = np.flatnonzero(np.r_[True, rank[1:] != rank[:-1], True])
    for k in range(rb.size - 1):
        out[rank[rb[k]]] = np.median(dev[rb[k]:rb[k + 1]])
    return out


def recorded_comm(trace: Trace, iterations: int) -> dict[str, np.ndarray]:
    """What the trace recorded, per rank and iteration (s): see the module docstring.

    Returns
    -------
    dict of str to numpy.ndarray, shape (nprocs,)
        ``p2p`` (point-to-point calls), ``post`` (inside Isend/Irecv),
        ``wait`` (inside waits), ``late`` (the part of ``wait`` before the
        latest partner's send was posted), ``coll`` (collectives).

    Raises
    ------
    TraceError
        The trace has no entry and exit times.
    """
    if trace.t_entry is None or trace.t_exit is None:
        raise TraceError(f"{trace.source}: the trace has no call times; nothing was recorded to compare with")
    p = trace.nprocs
    has = (trace.t_entry != NO_TIME) & (trace.t_exit != NO_TIME)
    dur = np.where(has, trace.t_exit - trace.t_entry, 0).astype(np.float64) * 1e-9

    def per_rank(mask: np.ndarray, values: np.ndarray = dur) -> np.ndarray:
        return np.bincount(trace.rank[mask], weights=values[mask], minlength=p) / iterations

    # late partners: wait entry -> latest (clock-aligned) entry of a matching send of a receive it completes
    match = match_messages(trace)
    reqs = resolve_requests(trace)
    offset = clock_offsets(trace)
    aligned = trace.t_entry.astype(np.float64) - offset[trace.rank]
    refs = np.diff(reqs.ref_ptr)
    waiter = np.repeat(np.arange(len(trace)), refs)
    created = reqs.created
    send = match.psrc[created]
    ok = (trace.call[created] == Call.IRECV) & (send >= 0) & has[waiter]
    ok[ok] &= has[send[ok]]
    late = np.zeros(len(trace))
    np.maximum.at(late, waiter[ok], (aligned[send[ok]] - aligned[waiter[ok]]) * 1e-9)
    late = np.minimum(late, dur)
    return {
        "p2p": per_rank(np.isin(trace.call, _P2P_CALLS)),
        "post": per_rank(np.isin(trace.call, _POST_CALLS)),
        "wait": per_rank(np.isin(trace.call, _WAIT_CALLS)),
        "late": per_rank(np.isin(trace.call, _WAIT_CALLS), late),
        "coll": per_rank(np.isin(trace.call, code_set(COLLECTIVES))),
    }


def _table5(apps: Sequence[str]) -> xr.Dataset:
    """Table 5's Lassen cells of ``apps`` (paper) and the rank count each was counted at."""
    from perfmod.core.paperdata import read_table

    t5 = read_table("choi2020_table5_kmodel").set_index(["app", "platform"])
    rows = [t5.loc[(a, "lassen")] for a in apps]
    meta = {"k_inter": ("1", "Table 5 K_inter, Lassen (paper)"), "k_total": ("1", "Table 5 K_total, Lassen (paper)"),
            "k": ("1", "Table 5 k, Lassen (paper)")}
    data = {f"table5_{c}_paper": ("app", [float(r[c]) for r in rows], {"units": u, "long_name": n})
            for c, (u, n) in meta.items()}
    data["table5_nprocs"] = ("app", [TABLE5_CONFIGS[(a, "lassen")]["nprocs"] for a in apps],
                             {"units": "1", "long_name": "ranks of the run Table 5 counts (000 §4.2)"})
    return xr.Dataset(data, coords={"app": list(apps)})


_TRACE_VARS = {
    "events": ("1", "events read from the trace (MPI calls perfmod models)"),
    "k_inter_trace": ("1", "K_inter counted from the trace's messages (most over exchanges)"),
    "k_inter_min_trace": ("1", "K_inter of the exchange with the fewest (equal to k_inter_trace when constant)"),
    "k_total_trace": ("1", "K_total, Table 5's rule (k' x neighbours)"),
    "k_total_counted_trace": ("1", "K_total as counted from the trace (most messages sent by a node)"),
    "k_trace": ("1", "k = K_inter / K_total * k' from the trace (Eq. 4)"),
    "t_comm_measured": ("s", "recorded point-to-point MPI time per rank and iteration, mean over ranks"),
    "t_comm_max_measured": ("s", "recorded point-to-point MPI time per iteration, slowest rank"),
    "t_post_recorded": ("s", "recorded time inside Isend/Irecv per rank and iteration, mean over ranks"),
    "t_wait_recorded": ("s", "recorded time inside waits per rank and iteration, mean over ranks"),
    "t_late_recorded": ("s", "part of the recorded waits before the latest partner posted its send, "
                             "per rank and iteration, mean over ranks"),
    "t_coll_recorded": ("s", "recorded collective time per rank and iteration, mean over ranks (not compared)"),
}


def run(
    trace_dir: str = "",
    apps: Sequence[str] = ("minife", "minimd"),
    iterations: Sequence[int] = (200, 100),
    nprocs: Sequence[int] = (2, 4, 8, 16, 32, 64, 128, 256, 512),
    models: Sequence[str] = ("postal", "maxrate", "kmodel"),
    platform: str = "lassen",
    ranks_per_node: int = 0,
    progress: bool = True,
) -> xr.Dataset:
    """The study's dataset: K counts and predicted-vs-recorded communication from the Lassen traces.

    Parameters
    ----------
    trace_dir : str
        Directory with ``minife/`` and ``minimd/`` (module docstring); empty:
        ``$PERFMOD_CHOI2020_TRACES``; neither: the trace half is NaN.
    apps : sequence of str
        Applications, each a folder of ``trace_dir``.
    iterations : sequence of int
        Iterations each app's runs hold, paired with ``apps`` (000 §4.2: 200 CG
        iterations of MiniFE, 100 timesteps of MiniMD).
    nprocs : sequence of int
        Rank counts to read (those a folder lacks stay NaN, named in the
        ``nprocs_missing`` attribute).
    models : sequence of str
        Replay models.
    platform : str
        Platform of the replay and the counts.
    ranks_per_node : int
        Ranks per node of counts and replay; 0: the platform's (Lassen 4).
    progress : bool
        Show progress bars (not recorded in the ``parameters`` attribute).

    Returns
    -------
    xarray.Dataset
        Over (``app``, ``nprocs``): the trace's K counts, ``t_comm_measured``
        and its parts (``t_post_recorded``, ``t_wait_recorded``,
        ``t_late_recorded``; ``t_coll_recorded``), the decomposition's K
        counts (``k_*_decomposition``); over (``app``, ``nprocs``, ``model``):
        ``t_comm_predicted``, ``t_comm_max_predicted``, ``t_comm_error``
        (predicted / measured - 1) and the analytic per-iteration time of the
        decomposition (``t_comm_analytic``); over ``app``: Table 5's Lassen
        cells.  Attributes ``traces_missing``, ``nprocs_missing`` and
        ``read_events_per_s`` (reader speed of this run).
    """
    if len(iterations) != len(apps):
        raise ValueError(f"iterations {list(iterations)} must pair with apps {list(apps)}")
    plat = load(platform)
    if ranks_per_node:
        plat = plat.replace(ranks_per_node=int(ranks_per_node))
    rpn = plat.ranks_per_node
    nets = [Network(plat, model) for model in models]  # bound once each
    root = trace_root(trace_dir)
    shape = (len(apps), len(nprocs))
    tr_vars = {k: np.full(shape, np.nan) for k in _TRACE_VARS}
    dec = {k: np.full(shape, np.nan) for k in ("k_inter", "k_total", "k")}
    pred = np.full((*shape, len(models)), np.nan)
    pred_max = np.full_like(pred, np.nan)
    analytic = np.full_like(pred, np.nan)
    missing: list[str] = []
    found: dict[tuple[int, int], Path] = {}
    for a, app in enumerate(apps):
        runs = find_traces(root / app) if root is not None and (root / app).is_dir() else {}
        if root is not None and not runs:
            missing.append(f"{app}: no DUMPI .meta in {root / app}")
        for n, p in enumerate(nprocs):
            ex = exchange(app, int(p))
            c = kmodel_counts(ex, None, int(p), ranks_per_node=plat.ranks_per_node)
            dec["k_inter"][a, n], dec["k_total"][a, n], dec["k"][a, n] = c.k_inter, c.k_total, c.k
            for m, net in enumerate(nets):
                analytic[a, n, m] = comm_per_iteration(app, ex, net, c)
            if p in runs:
                found[(a, n)] = runs[p]
            elif runs:
                missing.append(f"{app} n{p}")
    read_s, read_events = 0.0, 0
    for (a, n), meta in tqdm(sorted(found.items()), desc="traces", disable=not progress):
        app, iters = apps[a], int(iterations[a])
        t0 = time.perf_counter()
        trace = read_trace(meta)
        read_s += time.perf_counter() - t0
        read_events += len(trace)
        n_ex = iters * PHASES_PER_ITERATION[app]
        k = trace_k_counts(trace, n_ex, rpn, exchange(app, trace.nprocs).stencil)
        rec = recorded_comm(trace, iters)
        values = {"events": len(trace), "k_inter_trace": k["k_inter"], "k_inter_min_trace": k["k_inter_min"],
                  "k_total_trace": k["k_total"], "k_total_counted_trace": k["k_total_counted"], "k_trace": k["k"],
                  "t_comm_measured": rec["p2p"].mean(), "t_comm_max_measured": rec["p2p"].max(),
                  "t_post_recorded": rec["post"].mean(), "t_wait_recorded": rec["wait"].mean(),
                  "t_late_recorded": rec["late"].mean(), "t_coll_recorded": rec["coll"].mean()}
        for name, v in values.items():
            tr_vars[name][a, n] = v
        for m, net in enumerate(nets):
            t = predicted_comm(trace, net, net.model.name, iters)
            pred[a, n, m], pred_max[a, n, m] = t.mean(), t.max()
    dims, dims_m = ("app", "nprocs"), ("app", "nprocs", "model")
    data: dict[str, Any] = {name: (dims, tr_vars[name], {"units": u, "long_name": ln})
                            for name, (u, ln) in _TRACE_VARS.items()}
    data |= {
        "k_inter_decomposition": (dims, dec["k_inter"], {"units": "1", "long_name":
                                  "K_inter of perfmod's decomposition at this rank count"}),
        "k_total_decomposition": (dims, dec["k_total"], {"units": "1", "long_name":
                                  "K_total of perfmod's decomposition (k' x neighbours)"}),
        "k_decomposition": (dims, dec["k"], {"units": "1", "long_name": "k of perfmod's decomposition (Eq. 4)"}),
        "t_comm_predicted": (dims_m, pred, {"units": "s", "long_name":
                             "replayed point-to-point time per rank and iteration, mean over ranks"}),
        "t_comm_max_predicted": (dims_m, pred_max, {"units": "s", "long_name":
                                 "replayed point-to-point time per iteration, slowest rank"}),
        "t_comm_error": (dims_m, pred / tr_vars["t_comm_measured"][..., None] - 1, {"units": "1", "long_name":
                         "t_comm_predicted / t_comm_measured - 1"}),
        "t_comm_analytic": (dims_m, analytic, {"units": "s", "long_name":
                            "analytic communication per iteration of the decomposition (model side of "
                            "Figures 7, 10; choi2020_comm_models)"}),
    }
    ds = xr.Dataset(data, coords={"app": list(apps), "nprocs": ("nprocs", np.asarray(nprocs), {
        "units": "1", "long_name": "MPI ranks"}), "model": list(models)})
    ds = xr.merge([ds, _table5(apps)])
    if root is None:
        why = f"no trace directory (trace_dir empty and {TRACE_ENV} unset); get them: {GET_TRACES}"
    elif not found:
        why = f"no trace found under {root} ({'; '.join(missing)}); get them: {GET_TRACES}"
    else:
        why = ""
    ds = annotate(ds, study=STUDY, source=SOURCE,
                  parameters=dict(trace_dir=trace_dir, apps=apps, iterations=iterations, nprocs=nprocs,
                                  models=models, platform=platform, ranks_per_node=ranks_per_node))
    ds.attrs.update(traces_missing=why, nprocs_missing=", ".join(m for m in missing if " n" in m) if found else "",
                    ranks_per_node=rpn,
                    read_events_per_s=read_events / read_s if read_s > 0 else float("nan"),
                    recorded_time=("t_comm_measured: Isend + Irecv + wait durations as DUMPI recorded them on "
                                   "Lassen, including waiting for late partners (t_late_recorded, clocks aligned on "
                                   "the collectives on world) and the time inside Isend/Irecv (t_post_recorded)"))
    return ds


def figures(ds: xr.Dataset) -> dict[str, plt.Figure]:
    """The study's figures, drawn from the dataset of :func:`run` alone.

    Returns
    -------
    dict of str to matplotlib.figure.Figure
        ``k_counts``: K_inter from the traces, from the decomposition, and
        Table 5's Lassen cell, against ranks, per app; ``comm_per_iteration``
        (when a trace was read): recorded and replayed point-to-point time
        per iteration (:func:`perfmod.viz.validation.plot_validation`, the
        measured side of Figures 7 and 10 against each model).
    """
    apps = [str(a) for a in ds["app"].values]
    fig, axes = plt.subplots(1, len(apps), figsize=(4.4 * len(apps), 3.4), squeeze=False)
    for ax, app in zip(axes[0], apps, strict=True):
        sub = ds.sel(app=app)
        ax.plot(sub.nprocs, sub.k_inter_decomposition, "s--", mfc="none", label="decomposition")
        if bool(sub.k_inter_trace.notnull().any()):
            ax.plot(sub.nprocs, sub.k_inter_trace, "o", label="trace")
        ax.axhline(float(sub.table5_k_inter_paper), color="k", lw=0.8, ls=":",
                   label=f"Table 5 ({int(sub.table5_nprocs)} ranks)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("nprocs")
        ax.set_ylabel("K_inter [messages]")
        ax.set_title(f"{app}, {int(ds.attrs.get('ranks_per_node', 4))} ranks per node")
        ax.legend(fontsize=7)
    fig.tight_layout()
    figs = {"k_counts": fig}
    if bool(ds.t_comm_measured.notnull().any()):
        have = ds.sel(nprocs=ds.t_comm_measured.notnull().any("app"))
        figs["comm_per_iteration"] = plot_validation(have[["t_comm_measured", "t_comm_predicted"]], ["t_comm"],
                                                     x="nprocs", row="app", hue="model", logy=True)
    return figs
