"""How the replay scales: events per CPU-second and bytes per event, per model and rank count (issue 23).

:func:`scale_table` replays given traces (``make bench``: synthetic Jacobi2D)
under each model and measures, per replay, the CPU time of the process
(``time.process_time``: on a shared machine wall time counts other work)
and the peak of the NumPy memory it allocated (``tracemalloc``, a second
run).  With ``loggopsim`` (a directory holding LogGOPSim's ``txt2bin`` and
``LogGOPSim``, built from github.com/spcl/LogGOPSim) it also runs LogGOPSim
on GOAL schedules (:func:`~perfmod.trace.formats.goal_halo.write_halo_goal`:
a 2D halo with an allreduce per iteration; and traces the caller gives, written by
:func:`~perfmod.trace.formats.goal.write_goal`) next to perfmod's ``loggp``
replay of the same file, both as CPU time of reading and of simulating, and
checks that the finishing times are equal.  :func:`perfmod.viz.replay_scale.plot_scale` draws the table.
"""

from __future__ import annotations

import os
import re
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

__all__ = ["loggopsim_side_by_side", "loggopsim_markdown", "scale_table", "scale_markdown", "write_docs_table",
           "DOCS_MARKERS", "LOGGOPSIM_MARKERS"]

#: the lines around the scale table in docs/library.md, which :func:`write_docs_table` replaces
DOCS_MARKERS = ("<!-- replay scale table: written by `make bench` (replay.scale.write_docs_table); do not edit -->",
                "<!-- end of the replay scale table -->")
#: the lines around the LogGOPSim side-by-side in docs/library.md (:func:`loggopsim_markdown`)
LOGGOPSIM_MARKERS = ("<!-- LogGOPSim side by side: written by `make bench` (replay.scale.write_docs_table); do not "
                     "edit -->", "<!-- end of the LogGOPSim side by side -->")
#: rank counts above which a model is not measured (none by default: the LogGOPS replay of a 1,048,576-rank trace
#: peaks at about 1 kB per event, within the machine's 24 GiB; a smaller table may skip cells)
MAX_RANKS: dict[str, int] = {}


def _cpu(fn, *args, **kwargs):
    t0 = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - t0


def scale_table(traces: Mapping[int, Trace], models=("postal", "maxrate", "kmodel", "loggp"),
                platform: str = "summit", max_ranks: Mapping[str, int] = MAX_RANKS) -> xr.Dataset:
    """Events per CPU-second and peak bytes per event of ``replay`` per model and rank count.

    ``traces`` maps a rank count to its trace (the benchmark gives Jacobi2D traces of about the same number
    of events); each model replays the smallest trace once before timing, so compiled kernels are loaded.
    A model is measured up to ``max_ranks[model]`` ranks (NaN above).  Returns a dataset over (``model``,
    ``ranks``): ``events``, ``cpu_s``, ``events_per_cpu_s``, ``peak_bytes_per_event``, and ``operations`` and
    ``operations_per_cpu_s``: what the replay simulated, the events themselves but for ``loggp``, which
    simulates LogGOPSim's operation graph (a collective expanded into its rounds: log2 p of them for an
    allreduce, so its operations per event grow with the ranks while its cost per operation need not); with the
    load average of the machine while it measured.
    """
    from perfmod.replay import replay

    ranks = sorted(traces)
    shape = (len(models), len(ranks))
    out = {k: np.full(shape, np.nan) for k in ("events", "cpu_s", "events_per_cpu_s", "peak_bytes_per_event",
                                                "operations", "operations_per_cpu_s")}
    loads = []
    for j, p in enumerate(ranks):
        trace = traces[p]
        for i, model in enumerate(models):
            if p > max_ranks.get(model, p):
                continue
            if j == 0:
                replay(trace, platform, model)  # compiled code loaded before timing
            ds, cpu = _cpu(replay, trace, platform, model)
            ops = int(ds.attrs.get("operations", len(trace)))
            del ds
            tracemalloc.start()
            replay(trace, platform, model)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            out["events"][i, j] = len(trace)
            out["cpu_s"][i, j] = cpu
            out["events_per_cpu_s"][i, j] = len(trace) / cpu
            out["peak_bytes_per_event"][i, j] = peak / len(trace)
            out["operations"][i, j] = ops
            out["operations_per_cpu_s"][i, j] = ops / cpu
            loads.append(os.getloadavg()[0])
    units = {"events": "1", "cpu_s": "s", "events_per_cpu_s": "1/s", "peak_bytes_per_event": "B", "operations": "1",
             "operations_per_cpu_s": "1/s"}
    names = {"events": "replayed trace events", "cpu_s": "CPU time of the replay",
             "events_per_cpu_s": "events per CPU-second", "peak_bytes_per_event": "peak NumPy memory per event",
             "operations": "operations simulated (loggp: LogGOPSim graph nodes; else the events)",
             "operations_per_cpu_s": "operations per CPU-second"}
    ds = xr.Dataset({k: (("model", "ranks"), v, {"units": units[k], "long_name": names[k]}) for k, v in out.items()},
                    coords={"model": list(models), "ranks": list(ranks)})
    ds.attrs.update(provenance_attrs("replay_scale", "measurement: perfmod.replay.scale.scale_table on this machine",
                                     {"models": list(models), "ranks": list(ranks), "platform": platform,
                                      "traces": {p: repr(t) for p, t in traces.items()}}))
    stamp(ds, loads)
    return ds


def stamp(ds: xr.Dataset, loads: list[float] | None = None) -> None:
    """Set the attributes the docs' tables print: the date and host of the measurement, and the range of the
    load averages taken while it ran (``loads``: "?" where the list is empty; None leaves the attribute out, for a
    dataset that keeps its loads as a variable, as :func:`loggopsim_side_by_side` does)."""
    if loads is not None:
        ds.attrs["load_average"] = f"{min(loads):.2f}-{max(loads):.2f}" if loads else "?"
    ds.attrs["measured"] = time.strftime("%Y-%m-%d", time.gmtime())
    ds.attrs["host"] = host_name()


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
    for m in ds.model.values.tolist():  # models that simulate other operations than the events (loggp)
        if "operations" not in ds:
            break
        d = ds.sel(model=m)
        if bool((d.operations.fillna(0) == d.events.fillna(0)).all()):
            continue
        cells = ["-" if np.isnan(o) else f"{o / e:.2f} ops/event, {r / 1e6:.2f} M ops/s"
                 for o, e, r in zip(d.operations.values, d.events.values, d.operations_per_cpu_s.values, strict=True)]
        lines.append("")
        lines.append(f"`{m}` simulates graph operations (collectives expanded into rounds): " + "; ".join(
            f"{r:,} ranks {c}" for r, c in zip(ranks, cells, strict=True)) + ".")
    lines.append("")
    lines.append("Events per trace: " + ", ".join(f"{int(e):,}" for e in ev)
                 + f"; measured {ds.attrs.get('measured', '?')} on `{ds.attrs.get('host', '?')}`, CPU time, "
                 f"load average {ds.attrs.get('load_average', '?')}.")
    return "\n".join(lines)


def write_docs_table(ds: xr.Dataset, doc: str | os.PathLike, markers: tuple[str, str] = DOCS_MARKERS,
                     markdown=scale_markdown) -> Path:
    """Replace the table between ``markers`` in ``doc`` by ``markdown(ds)`` (:func:`scale_markdown`, or
    :func:`loggopsim_markdown` with :data:`LOGGOPSIM_MARKERS`)."""
    path = Path(doc)
    text = path.read_text()
    a, b = text.find(markers[0]), text.find(markers[1])
    if a < 0 or b < a:
        raise ValueError(f"{path}: the table's markers are missing: {markers}")
    a += len(markers[0])
    path.write_text(text[:a] + "\n" + markdown(ds) + "\n" + text[b:])
    return path


#: a small launcher that runs a command and reports its own rusage: a child's peak memory counts the image it was
#: spawned from (Linux keeps the larger), so a command is spawned from this, not from the measuring process
_LAUNCH = ("import os, sys\n"
           "pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ)\n"
           "_, st, ru = os.wait4(pid, 0)\n"
           "cpu, code = ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(st)\n"
           "sys.stderr.write(f'\\n@rusage {cpu!r} {ru.ru_maxrss} {code}\\n')\n")


def _measured(cmd: list[str], env: Mapping[str, str] | None = None) -> tuple[str, float, float]:
    """Run ``cmd`` (in ``env``, default this process's); its stdout, CPU seconds (user + system) and peak resident
    bytes (through :data:`_LAUNCH`, a Python started without site packages: a peak below its own, about 10 MB,
    reads as that).  A failing command raises RuntimeError with the end of its stderr."""
    import sys

    with tempfile.TemporaryFile() as errf:
        p = subprocess.run([sys.executable, "-S", "-c", _LAUNCH, *cmd], stdout=subprocess.PIPE, stderr=errf,
                           text=True, check=False, env=None if env is None else dict(env))
        errf.seek(0)
        err = errf.read().decode()
    tail = err.rstrip().rsplit("\n", 1)[-1].split()
    if p.returncode or len(tail) != 4 or tail[0] != "@rusage" or tail[3] != "0":
        raise RuntimeError(f"{' '.join(cmd)}: failed: {err.strip()[-500:]}")
    return p.stdout, float(tail[1]), float(tail[2]) * 1024.0


def loggopsim_markdown(ds: xr.Dataset) -> str:
    """:func:`loggopsim_side_by_side`'s dataset as a Markdown table (CPU seconds, the fastest and slowest of
    its rounds; peak resident memory), with the date, host and load in a last line."""
    lines = ["| GOAL schedule (128 KiB halos, an allreduce each iteration) | operations | LogGOPSim simulation "
             "| perfmod `loggp` simulation | LogGOPSim `txt2bin` + run | `perfmod replay x.goal` "
             "| peak memory LogGOPSim / perfmod | finishing time (both) |", "|---" * 8 + "|"]
    for s in ds.schedule.values.tolist():
        d = ds.sel(schedule=s)
        mb = d[["loggopsim_peak_bytes", "perfmod_peak_bytes"]] / 2**20
        cells = [f"{int(d.operations.max()):,}"] + [_range_text(d, v) + " s" for v in (
            "loggopsim_sim_cpu_s", "perfmod_sim_cpu_s", "loggopsim_job_cpu_s", "perfmod_job_cpu_s")]
        cells.append(f"{_range_text(mb, 'loggopsim_peak_bytes', '{:.0f}')} / "
                     f"{_range_text(mb, 'perfmod_peak_bytes', '{:.0f}')} MiB")
        cells.append(f"{int(d.loggopsim_finish_ns.max()):,} ns")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"CPU seconds, {ds.sizes['round']} rounds; measured {ds.attrs.get('measured', '?')} on "
                 f"`{ds.attrs.get('host', '?')}`, load average {float(ds.load_average.min()):.2f}-"
                 f"{float(ds.load_average.max()):.2f}; the whole job includes starting Python.")
    return "\n".join(lines)


def _range_text(d: xr.Dataset, v: str, fmt: str = "{:.2f}") -> str:
    """The range of ``d[v]`` over its rounds as text (one number where both ends print the same)."""
    lo, hi = fmt.format(float(d[v].min())), fmt.format(float(d[v].max()))
    return lo if lo == hi else f"{lo}-{hi}"


def loggopsim_side_by_side(loggopsim: str | os.PathLike, grids=((32, 48, 20), (128, 128, 3)),
                           params=(2500, 1500, 1000, 6, 65535), workdir: str | os.PathLike | None = None,
                           rounds: int = 2, traces: Mapping[str, Trace] | None = None) -> xr.Dataset:
    """LogGOPSim and perfmod's ``loggp`` on the same GOAL schedules, CPU seconds (see the module docstring).

    ``grids`` are ``(px, py, iterations)`` of :func:`~perfmod.trace.formats.goal_halo.write_halo_goal`
    (128 KiB halo messages, an 8-byte allreduce per iteration); ``traces`` more schedules by label, traces written
    as GOAL by :func:`~perfmod.trace.formats.goal.write_goal` (``make bench``: a synthetic Jacobi2D trace, the
    schedule a trace replay hands LogGOPSim); ``params`` LogGOPSim's ``-L -o -g -G -S`` in ns.
    Each round measures, side by side: the simulation alone (LogGOPSim's run of the ``txt2bin`` output;
    perfmod's kernel rows and event loop, :func:`~perfmod.replay.loggops.run_goal_graph`, in this process) and
    the whole job, each its own process (``txt2bin`` then ``LogGOPSim``; ``python -m perfmod replay x.goal
    --model loggp`` on the same parameters written as a platform file), with its peak resident memory.
    Returns over (``schedule``, ``round``): operations, the CPU seconds of each, perfmod's reader, both
    finishing times (ns) and the load average.
    """
    import sys

    from perfmod.machine.platforms import MODES, PROTOCOLS, load, write
    from perfmod.models.comm.network import Network
    from perfmod.replay.loggops import run_goal_graph
    from perfmod.trace.formats.goal import write_goal
    from perfmod.trace.formats.goal_halo import write_halo_goal
    from perfmod.trace.formats.goal_scan import read_goal_graph

    txt2bin, sim = Path(loggopsim) / "txt2bin", Path(loggopsim) / "LogGOPSim"
    L, o, g, G, S = params
    base = load("summit")
    comm = dict(base.comm)
    for m in MODES:
        for pr in PROTOCOLS:
            comm[("loggp", m, pr)] = {"L": L * 1e-9, "o": o * 1e-9, "g": g * 1e-9, "G": G * 1e-9}
    plat = base.replace(name="loggopsim_side_by_side", comm=comm, eager_max_bytes=S,
                        short_max_bytes=min(base.short_max_bytes, S))
    names = {"operations": ("1", "GOAL operations"),
             "loggopsim_txt2bin_cpu_s": ("s", "CPU time of LogGOPSim's txt2bin (text to binary schedule)"),
             "loggopsim_sim_cpu_s": ("s", "CPU time of LogGOPSim's simulation"),
             "loggopsim_job_cpu_s": ("s", "CPU time of txt2bin and LogGOPSim (the whole job)"),
             "loggopsim_peak_bytes": ("B", "peak resident memory of txt2bin or LogGOPSim, the larger"),
             "perfmod_read_cpu_s": ("s", "CPU time of perfmod's GOAL reader"),
             "perfmod_sim_cpu_s": ("s", "CPU time of perfmod's loggp simulation (kernel rows and event loop)"),
             "perfmod_job_cpu_s": ("s", "CPU time of `python -m perfmod replay x.goal --model loggp` (the whole "
                                        "job, Python's start included)"),
             "perfmod_peak_bytes": ("B", "peak resident memory of that process"),
             "loggopsim_finish_ns": ("ns", "LogGOPSim's maximum finishing time"),
             "perfmod_finish_ns": ("ns", "perfmod's maximum finishing time"),
             "load_average": ("1", "1-minute load average after the round")}
    rows: dict[str, list[list[float]]] = {n: [] for n in names}
    labels = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        toml = write(plat, Path(tmp) / "loggopsim.toml")
        small = write_halo_goal(Path(tmp) / "warm.goal", 2, 2, 1)
        net = Network(plat, "loggp", "block")
        run_goal_graph(read_goal_graph(small), 1e-9, net, 4)  # load the compiled code
        _measured([sys.executable, "-m", "perfmod", "replay", str(small), "--platform", str(toml), "--model",
                   "loggp"])  # and its cache for the whole job's process
        schedules = [(f"halo {px}x{py}x{it}", write_halo_goal(Path(tmp) / f"halo_{px}x{py}x{it}.goal", px, py, it))
                     for px, py, it in grids]
        schedules += [(label, write_goal(t, Path(tmp) / f"trace_{k}.goal"))
                      for k, (label, t) in enumerate((traces or {}).items())]
        for label, goal in schedules:
            binf = goal.with_suffix(".bin")
            labels.append(label)
            per = {n: [] for n in names}
            for _ in range(rounds):
                _, t2b_s, t2b_rss = _measured([str(txt2bin), "-i", str(goal), "-o", str(binf)])
                out, sim_s, sim_rss = _measured([str(sim), "-f", str(binf), "-b", "-L", str(L), "-o", str(o), "-g",
                                                 str(g), "-G", str(G), "-S", str(S)])
                graph, read_s = _cpu(read_goal_graph, goal)
                res, psim_s = _cpu(run_goal_graph, graph, 1e-9, net, graph.num_ranks, detail=False)
                nops = len(graph)
                del graph
                job, job_s, job_rss = _measured([sys.executable, "-m", "perfmod", "replay", str(goal), "--platform",
                                                 str(toml), "--model", "loggp"])
                theirs = int(re.search(r"Maximum finishing time at host \d+: (\d+)", out).group(1))
                ours = int(round(res[4].max() / 1000))
                job_ns = int(round(float(re.search(r"finishing time ([0-9.]+) s", job).group(1)) * 1e9))
                if job_ns != ours:
                    raise RuntimeError(f"{goal}: perfmod replay printed {job_ns} ns, the simulation gave {ours}")
                vals = (nops, t2b_s, sim_s, t2b_s + sim_s, max(t2b_rss, sim_rss), read_s, psim_s, job_s, job_rss,
                        theirs, ours, os.getloadavg()[0])
                for n, v in zip(names, vals, strict=True):
                    per[n].append(v)
            for n in names:
                rows[n].append(per[n])
    ds = xr.Dataset({n: (("schedule", "round"), np.asarray(rows[n]), {"units": u, "long_name": ln})
                     for n, (u, ln) in names.items()}, coords={"schedule": labels, "round": np.arange(rounds)})
    ds.attrs.update(provenance_attrs("replay_scale", "measurement: LogGOPSim and perfmod loggp on the same GOAL files",
                                     {"grids": [list(x) for x in grids], "params": list(params),
                                      "loggopsim": str(loggopsim), "rounds": rounds}))
    stamp(ds)
    return ds
