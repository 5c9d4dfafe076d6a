"""LogGOPSim's headline case on this machine: one collective over millions of ranks (issue 23 item 4).

Hoefler, Schneider and Lumsdaine ("LogGOPSim - Simulating Large-Scale
Applications in the LogGOPS Model", HPDC 2010, §4) simulate a binomial
broadcast and collectives over 8 million processes on one machine.
:func:`collective_scale` replays :func:`perfmod.apps.traces.collective`
traces of that size with each model, each replay the whole job of its own
process (``python -m perfmod replay --synthetic bcast:N:1``: Python's start,
the trace's construction and the replay), and records its CPU time, its
peak resident memory and the slowest rank's finishing time; a replay that
would not fit the machine's memory is refused before it allocates (the
check the replay makes), and the dataset keeps the refusal.  ``make bench``
writes the table into the replay page of the docs
(:func:`collective_markdown`, between :data:`COLLECTIVE_MARKERS`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import numpy as np
import xarray as xr

from perfmod.core.io import provenance_attrs
from perfmod.replay.scale import _measured, stamp

__all__ = ["COLLECTIVE_MARKERS", "collective_markdown", "collective_scale"]

#: the lines around the table in docs/library.md (:func:`~perfmod.replay.scale.write_docs_table`)
COLLECTIVE_MARKERS = ("<!-- collective scale table: written by `make bench` (replay.collective_scale); do not edit "
                      "-->", "<!-- end of the collective scale table -->")
MODELS = ("postal", "maxrate", "kmodel", "loggp")


def collective_scale(nprocs: int = 8_388_608, collectives: Sequence[str] = ("bcast", "allreduce"),
                     models: Sequence[str] = MODELS, memory_budget: int | None = None) -> xr.Dataset:
    """Replay each collective alone over ``nprocs`` ranks with each model, one process per replay.

    Parameters
    ----------
    nprocs : int
        Ranks (LogGOPSim's headline: 8,388,608).
    collectives : sequence of str
        Among ``bcast``, ``reduce``, ``allreduce``, ``barrier`` (root 0, 8 B).
    models : sequence of str
        Replay models.
    memory_budget : int, optional
        Bytes the replays may use (``PERFMOD_MEMORY_BYTES`` of the child processes); default the machine's
        available memory.

    Returns
    -------
    xarray.Dataset
        Over (``collective``, ``model``): ``cpu_s`` (user + system of the whole job), ``peak_bytes`` (its peak
        resident memory), ``finish_s`` (the slowest rank's finishing time), ``refused`` (the replay's message
        where it would not fit; empty where it ran).
    """
    env = dict(os.environ)
    if memory_budget is not None:
        env["PERFMOD_MEMORY_BYTES"] = str(int(memory_budget))
    shape = (len(collectives), len(models))
    cpu, peak, finish = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
    refused = np.full(shape, "", dtype=object)
    loads = []
    for i, c in enumerate(collectives):
        for j, m in enumerate(models):
            cmd = [sys.executable, "-m", "perfmod", "replay", "--synthetic", f"{c}:{int(nprocs)}:1", "--model", m,
                   "--top", "1"]
            try:
                out, cpu[i, j], peak[i, j] = _measured(cmd, env)
            except RuntimeError as e:
                msg = str(e)
                if "MemoryShortError" not in msg:
                    raise
                refused[i, j] = msg[msg.index("MemoryShortError: ") + len("MemoryShortError: "):].splitlines()[0]
                continue
            finish[i, j] = _slowest_total(out)
            loads.append(os.getloadavg()[0])
    names = {"cpu_s": ("s", "CPU time of the whole job (Python's start, the trace, the replay)", cpu),
             "peak_bytes": ("B", "peak resident memory of the job", peak),
             "finish_s": ("s", "slowest rank's finishing time", finish)}
    ds = xr.Dataset({k: (("collective", "model"), v, {"units": u, "long_name": ln}) for k, (u, ln, v) in
                     names.items()}, coords={"collective": list(collectives), "model": list(models)})
    ds["refused"] = (("collective", "model"), refused.astype(str), {
        "units": "1", "long_name": "why the replay was refused before allocating (empty: it ran)"})
    ds.attrs.update(provenance_attrs("replay_scale", "measurement: perfmod replay --synthetic of one collective",
                                     {"nprocs": int(nprocs), "collectives": list(collectives),
                                      "models": list(models), "memory_budget": memory_budget}))
    ds.attrs["nprocs"] = int(nprocs)
    stamp(ds, loads)
    return ds


def _slowest_total(out: str) -> float:
    """The slowest rank's ``total_time`` from ``perfmod replay``'s table (its first row, last column)."""
    lines = out.splitlines()
    head = next(k for k, ln in enumerate(lines) if ln.startswith("rank "))
    return float(lines[head + 1].split()[-1])


def collective_markdown(ds: xr.Dataset) -> str:
    """:func:`collective_scale`'s dataset as a Markdown table, with the date, host and load in a last line."""
    p = int(ds.attrs["nprocs"])
    lines = [f"| {p:,} ranks | model | CPU time (whole job) | peak resident memory | slowest rank finishes |",
             "|---|---|---|---|---|"]
    for c in ds.collective.values.tolist():
        for m in ds.model.values.tolist():
            d = ds.sel(collective=c, model=m)
            if str(d.refused.values):
                lines.append(f"| `{c}` | `{m}` | refused before allocating: {d.refused.values} | | |")
                continue
            lines.append(f"| `{c}` | `{m}` | {float(d.cpu_s):.1f} s | {float(d.peak_bytes) / 2**30:.2f} GiB | "
                         f"{float(d.finish_s) * 1e6:.2f} us |")
    lines.append("")
    lines.append(f"One process per replay (`perfmod replay --synthetic {ds.collective.values[0]}:{p}:1 --model M`: "
                 f"root 0, 8 B); measured {ds.attrs.get('measured', '?')} on `{ds.attrs.get('host', '?')}`, load "
                 f"average {ds.attrs.get('load_average', '?')}.")
    return "\n".join(lines)
