"""How the replay scales: events per CPU-second and bytes per event, per model and rank count (issue 23).

:func:`scale_table` replays given traces (``make bench``: synthetic Jacobi2D)
under each model and measures, per replay, the CPU time of the process
(``time.process_time``: on a shared machine wall time counts other work)
and the peak of the NumPy memory it allocated (``tracemalloc``, a second
run).  With ``loggopsim`` (a directory holding LogGOPSim's ``txt2bin`` and
``LogGOPSim``, built from github.com/spcl/LogGOPSim) it also runs LogGOPSim
on a GOAL schedule of the same size (:func:`~perfmod.trace.formats.goal_halo.write_halo_goal`:
a 2D halo with an allreduce per iteration) next to perfmod's ``loggp``
replay of the same file, both as CPU time of reading and of simulating, and
checks that the finishing times are equal.  :func:`perfmod.viz.replay_scale.plot_scale` draws the table.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import tempfile
import time
import tracemalloc
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import xarray as xr

from perfmod.core.io import provenance_attrs
from perfmod.core.paths import host_name
from perfmod.trace.core import Trace

__all__ = ["loggopsim_side_by_side", "scale_table", "scale_markdown", "write_docs_table", "DOCS_MARKERS"]

#: the lines around the scale table in docs/library.md, which :func:`write_docs_table` replaces
DOCS_MARKERS = ("<!-- replay scale table: written by `make bench` (replay.scale.write_docs_table); do not edit -->",
                "<!-- end of the replay scale table -->")
#: rank counts above which a model is not measured (the LogGOPS replay of a trace needs about 1.2 kB per event)
MAX_RANKS = {"loggp": 65_536}


def _cpu(fn, *args, **kwargs):
    t0 = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - t0


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def scale_table(traces: Mapping[int, Trace], models=("postal", "maxrate", "kmodel", "loggp"),
                platform: str = "summit", max_ranks: Mapping[str, int] = MAX_RANKS) -> xr.Dataset:
    """Events per CPU-second and peak bytes per event of ``replay`` per model and rank count.

    ``traces`` maps a rank count to its trace (the benchmark gives Jacobi2D traces of about the same number
    of events); each model replays the smallest trace once before timing, so compiled kernels are loaded.
    A model is measured up to ``max_ranks[model]`` ranks (NaN above).  Returns a dataset over (``model``,
    ``ranks``): ``events``, ``cpu_s``, ``events_per_cpu_s``, ``peak_bytes_per_event``, with the load average of
    the machine while it measured.
    """
    from perfmod.replay import replay

    ranks = sorted(traces)
    shape = (len(models), len(ranks))
    out = {k: np.full(shape, np.nan) for k in ("events", "cpu_s", "events_per_cpu_s", "peak_bytes_per_event")}
    loads = []
    for j, p in enumerate(ranks):
        trace = traces[p]
        for i, model in enumerate(models):
            if p > max_ranks.get(model, p):
                continue
            if j == 0:
                replay(trace, platform, model)  # compiled code loaded before timing
            _, cpu = _cpu(replay, trace, platform, model)
            tracemalloc.start()
            replay(trace, platform, model)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            out["events"][i, j] = len(trace)
            out["cpu_s"][i, j] = cpu
            out["events_per_cpu_s"][i, j] = len(trace) / cpu
            out["peak_bytes_per_event"][i, j] = peak / len(trace)
            loads.append(os.getloadavg()[0])
    units = {"events": "1", "cpu_s": "s", "events_per_cpu_s": "1/s", "peak_bytes_per_event": "B"}
    names = {"events": "replayed trace events", "cpu_s": "CPU time of the replay",
             "events_per_cpu_s": "events per CPU-second", "peak_bytes_per_event": "peak NumPy memory per event"}
    ds = xr.Dataset({k: (("model", "ranks"), v, {"units": units[k], "long_name": names[k]}) for k, v in out.items()},
                    coords={"model": list(models), "ranks": list(ranks)})
    ds.attrs.update(provenance_attrs("replay_scale", "measurement: perfmod.replay.scale.scale_table on this machine",
                                     {"models": list(models), "ranks": list(ranks), "platform": platform,
                                      "traces": {p: repr(t) for p, t in traces.items()}}))
    ds.attrs["load_average"] = f"{min(loads):.2f}-{max(loads):.2f}"
    ds.attrs["measured"] = time.strftime("%Y-%m-%d", time.gmtime())
    ds.attrs["host"] = host_name()
    return ds


def scale_markdown(ds: xr.Dataset) -> str:
    """:func:`scale_table`'s dataset as a Markdown table: M events per CPU-second per model and rank count, and
    the range of peak bytes per event; a last line says the events per trace, the date and the load."""
    ranks = [int(r) for r in ds.ranks.values]
    lines = ["| model (synthetic Jacobi2D) | " + " | ".join(f"{r:,} ranks" for r in ranks) + " | peak bytes/event |",
             "|---" * (len(ranks) + 2) + "|"]
    for m in ds.model.values.tolist():
        eps = ds.events_per_cpu_s.sel(model=m).values
        bpe = ds.peak_bytes_per_event.sel(model=m).values
        cells = ["-" if np.isnan(v) else f"{v / 1e6:.2f} M/s" for v in eps]
        lo, hi = np.nanmin(bpe), np.nanmax(bpe)
        lines.append(f"| `{m}` | " + " | ".join(cells) + f" | {lo:,.0f}" + ("" if round(lo) == round(hi) else
                                                                             f"-{hi:,.0f}") + " |")
    ev = ds.events.max("model").values
    lines.append("")
    lines.append("Events per trace: " + ", ".join(f"{int(e):,}" for e in ev)
                 + f"; measured {ds.attrs.get('measured', '?')} on `{ds.attrs.get('host', '?')}`, CPU time, "
                 f"load average {ds.attrs.get('load_average', '?')}.")
    return "\n".join(lines)


def write_docs_table(ds: xr.Dataset, doc: str | os.PathLike) -> Path:
    """Replace the table between :data:`DOCS_MARKERS` in ``doc`` by :func:`scale_markdown` of ``ds``."""
    path = Path(doc)
    text = path.read_text()
    a, b = text.find(DOCS_MARKERS[0]), text.find(DOCS_MARKERS[1])
    if a < 0 or b < a:
        raise ValueError(f"{path}: the replay scale table's markers are missing: {DOCS_MARKERS}")
    a += len(DOCS_MARKERS[0])
    path.write_text(text[:a] + "\n" + scale_markdown(ds) + "\n" + text[b:])
    return path


def loggopsim_side_by_side(loggopsim: str | os.PathLike, grids=((32, 48, 20), (128, 128, 3)),
                           params=(2500, 1500, 1000, 6, 65535), workdir: str | os.PathLike | None = None) -> xr.Dataset:
    """LogGOPSim and perfmod's ``loggp`` on the same GOAL schedules, CPU seconds (see the module docstring).

    ``grids`` are ``(px, py, iterations)`` of :func:`~perfmod.trace.formats.goal_halo.write_halo_goal`
    (128 KiB halo messages, an 8-byte allreduce per iteration); ``params`` LogGOPSim's ``-L -o -g -G -S`` in ns.
    Returns over ``schedule``: operations, the CPU seconds of ``txt2bin`` and of ``LogGOPSim``, of perfmod's
    reader and of its simulation, both finishing times (ns), and the load average.
    """
    from perfmod.machine.platforms import MODES, PROTOCOLS, load
    from perfmod.models.comm.network import Network
    from perfmod.replay.loggops import run_goal_graph
    from perfmod.trace.formats.goal_halo import write_halo_goal
    from perfmod.trace.formats.goal_scan import read_goal_graph

    txt2bin, sim = Path(loggopsim) / "txt2bin", Path(loggopsim) / "LogGOPSim"
    L, o, g, G, S = params
    base = load("summit")
    comm = dict(base.comm)
    for m in MODES:
        for pr in PROTOCOLS:
            comm[("loggp", m, pr)] = {"L": L * 1e-9, "o": o * 1e-9, "g": g * 1e-9, "G": G * 1e-9}
    plat = base.replace(comm=comm, eager_max_bytes=S, short_max_bytes=min(base.short_max_bytes, S))
    rows = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        small = write_halo_goal(Path(tmp) / "warm.goal", 2, 2, 1)
        net = Network(plat, "loggp", "block")
        run_goal_graph(read_goal_graph(small), 1e-9, net, 4)  # load the compiled code
        for px, py, it in grids:
            goal = write_halo_goal(Path(tmp) / f"halo_{px}x{py}x{it}.goal", px, py, it)
            binf = goal.with_suffix(".bin")
            c0 = _children_cpu()
            subprocess.run([str(txt2bin), "-i", str(goal), "-o", str(binf)], check=True, capture_output=True)
            c1 = _children_cpu()
            out = subprocess.run([str(sim), "-f", str(binf), "-b", "-L", str(L), "-o", str(o), "-g", str(g),
                                  "-G", str(G), "-S", str(S)], check=True, capture_output=True, text=True).stdout
            c2 = _children_cpu()
            graph, read_s = _cpu(read_goal_graph, goal)
            res, sim_s = _cpu(run_goal_graph, graph, 1e-9, net, graph.num_ranks, detail=False)
            theirs = int(re.search(r"Maximum finishing time at host \d+: (\d+)", out).group(1))
            rows.append((f"{px}x{py}x{it}", len(graph), c1 - c0, c2 - c1, read_s, sim_s, theirs,
                         int(round(res[4].max() / 1000)), os.getloadavg()[0]))
    cols = list(zip(*rows, strict=True))
    names = {"operations": ("1", "GOAL operations"),
             "loggopsim_txt2bin_cpu_s": ("s", "CPU time of LogGOPSim's txt2bin (text to binary schedule)"),
             "loggopsim_sim_cpu_s": ("s", "CPU time of LogGOPSim's simulation"),
             "perfmod_read_cpu_s": ("s", "CPU time of perfmod's GOAL reader"),
             "perfmod_sim_cpu_s": ("s", "CPU time of perfmod's loggp simulation"),
             "loggopsim_finish_ns": ("ns", "LogGOPSim's maximum finishing time"),
             "perfmod_finish_ns": ("ns", "perfmod's maximum finishing time"),
             "load_average": ("1", "1-minute load average after the run")}
    ds = xr.Dataset({n: ("schedule", np.asarray(c), {"units": u, "long_name": ln})
                     for (n, (u, ln)), c in zip(names.items(), cols[1:], strict=True)},
                    coords={"schedule": list(cols[0])})
    ds.attrs.update(provenance_attrs("replay_scale", "measurement: LogGOPSim and perfmod loggp on the same GOAL files",
                                     {"grids": [list(x) for x in grids], "params": list(params),
                                      "loggopsim": str(loggopsim)}))
    return ds
