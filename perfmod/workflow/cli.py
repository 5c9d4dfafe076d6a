"""The ``perfmod`` command: run studies, replay traces, list what perfmod knows.

::

    perfmod run NOTEBOOK [-p NAME VALUE ...] [-f params.yaml] [--smoke] [--out DIR] [--canonical]
    perfmod replay TRACE [--platform NAME] [--model NAME] [-o out.nc]
    perfmod sweep NOTEBOOK --grid GRID.yaml --out DIR [--workers N | --scheduler ADDRESS] [--resume] [--smoke]
    perfmod repeat STUDY [-n 3] [--smoke] [--out DIR] [--resume] [--canonical]
    perfmod calibrate [PINGPONG.nc] [--out PLATFORM.toml] [--name NAME]
    perfmod list [studies | platforms | devices | tables | models]
    perfmod extrapolate TRACE... --nprocs N [-p NAME=VALUE ...] [--iterations K] [--seed S] [--start-sd SECONDS] -o OUT

``NOTEBOOK`` is a path or a study name (``sharif_gol``).  A run with other
parameters, or a smoke run, writes into a run directory of its own
(``runs/<study>-<time>/`` under the current directory, or ``--out``); only
``--canonical`` (what the Makefile uses) writes the study's canonical
outputs in ``data/processed``, ``figures`` and ``data/platforms``.  ``perfmod
repeat`` runs a measuring study N times, each in a run directory of its own,
and writes the headline figures of every run with their median and range
(:mod:`perfmod.workflow.repeat`; with ``--canonical`` to
``data/processed/repeat_<study>.nc``).  An error is its type and whole
message (a notebook's own exception, with the cell and line it came from:
:mod:`perfmod.workflow.errors`) and a non-zero exit status; ``--debug``
adds the traceback (the kernel's, for a notebook).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfmod.workflow.cli_model import add_model
from perfmod.workflow.notebooks import declared_parameters, notebooks_dir, run_notebook, study_notebooks
from perfmod.workflow.params import (
    ParameterError,
    check_type,
    coerce,
    default_run_dir,
    place_outputs,
    read_yaml_mapping,
    resolve_paths,
)

__all__ = ["CLIError", "resolve_notebook", "main"]

#: Modules of the ``notebooks`` extra (papermill, the kernel, dask, YAML); a missing one names the extra.
NOTEBOOK_EXTRA = frozenset({"yaml", "papermill", "nbformat", "nbclient", "jupyter_client", "ipykernel", "distributed",
                            "dask"})
RUN_TIMES = ("comm_time", "send_time", "recv_time", "wait_time", "collective_time", "compute_time", "total_time")


class CLIError(Exception):
    """A usage error reported as one line."""


def resolve_notebook(name: str) -> Path:
    """A notebook path, or the study notebook called ``name`` (with or without ``.ipynb``)."""
    p = Path(name)
    if p.suffix == ".ipynb" or p.exists():
        if not p.is_file():
            raise CLIError(f"no notebook {name}")
        return p.resolve()
    cand = notebooks_dir() / f"{name}.ipynb"
    if cand.is_file():
        return cand
    known = ", ".join(nb.stem for nb in study_notebooks())
    raise CLIError(f"no notebook or study named {name!r}; studies: {known}")


def _read_param_file(path: str, declared: dict[str, str]) -> dict[str, Any]:
    data = read_yaml_mapping(path, "a mapping of parameter names to values", CLIError)
    return {str(k): v for k, v in data.items()}


def _cmd_run(args: argparse.Namespace) -> int:
    nb = resolve_notebook(args.notebook)
    declared = declared_parameters(nb)
    given: dict[str, Any] = {}
    if args.file:
        given.update(_read_param_file(args.file, declared))
    for name, text in args.param:
        if name not in declared:
            raise CLIError(f"{nb.name} has no parameter {name!r}; parameters: {', '.join(declared)}")
        given[name] = coerce(name, text, declared[name])
    for name, value in given.items():
        if name not in declared:
            raise CLIError(f"{nb.name} has no parameter {name!r}; parameters: {', '.join(declared)}")
        given[name] = check_type(name, value, declared[name])
    given = resolve_paths(given)
    if not args.smoke:
        _quiet_machine(nb, args.force)
    if args.canonical:
        from perfmod.core.paths import in_checkout

        if not in_checkout():
            raise CLIError("--canonical writes a checkout's data/processed and figures, and perfmod runs from an "
                           "installed package; drop --canonical (the outputs go to a run directory)")
        if given or args.smoke or args.out:
            raise CLIError("--canonical runs a study with its defaults into data/processed and figures; "
                           "drop -p/-f/--smoke/--out, or drop --canonical to write a run directory")
        return _run_canonical(nb, args.quiet)
    else:
        run_dir = (Path(args.out).resolve() if args.out else default_run_dir(nb.stem))
        if run_dir.exists() and not run_dir.is_dir():
            raise CLIError(f"--out {args.out}: is a file, not a directory; give a directory for the run's outputs")
        params = place_outputs(declared, given, run_dir, args.smoke, nb.stem) | given
        run_dir.mkdir(parents=True, exist_ok=True)
        executed = run_dir / nb.name
    start = time.monotonic()
    out = run_notebook(nb, params, smoke=args.smoke, output=executed, progress=not args.quiet)
    print(f"executed notebook: {out} ({time.monotonic() - start:.0f} s)")  # the make all budget, per study
    for name in ("dataset_path", "figures_dir", "platform_out"):
        if name in params:
            print(f"{name}: {params[name]}")
    return 0


def _run_canonical(nb: Path, quiet: bool) -> int:
    """The study with its defaults, its outputs staged and swapped in together at the end
    (:mod:`perfmod.workflow.staging`): an interrupted or failed run leaves the previous complete set."""
    from perfmod.core.paths import repo_root
    from perfmod.workflow.staging import staged_outputs, swap_in

    final = repo_root() / "build" / "executed" / nb.name
    start = time.monotonic()
    with staged_outputs(nb, final) as (params, staged_nb, moves):
        run_notebook(nb, params, output=staged_nb, progress=not quiet)
        written = swap_in(moves)
    print(f"executed notebook: {final} ({time.monotonic() - start:.0f} s)")  # the make all budget, per study
    for path in written:
        if path != final:
            print(f"wrote {path}")
    return 0


def _measures(nb: Path) -> bool:
    """Whether the notebook measures this machine (metadata ``perfmod.exclusive``), read without nbformat."""
    import json

    try:
        meta = json.loads(nb.read_text(encoding="utf-8")).get("metadata", {})
    except (OSError, ValueError):
        return False
    return bool(meta.get("perfmod", {}).get("exclusive", False))


def _quiet_machine(nb: Path, force: bool) -> None:
    """Before a measuring study: wait (bounded) for other processes to leave the machine, or stop saying so."""
    if not _measures(nb):
        return
    from perfmod.measure.busy import MachineBusy, wait_until_quiet

    try:
        wait_until_quiet(nb.stem, force=force)
    except MachineBusy as err:
        raise CLIError(str(err)) from None


def _cmd_show(args: argparse.Namespace) -> int:
    from perfmod.workflow.show import describe_study

    print(describe_study(resolve_notebook(args.study)))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from perfmod.workflow.check import format_states, study_states

    notebooks = [resolve_notebook(s) for s in args.studies] if args.studies else study_notebooks()
    states = study_states(notebooks)
    print(format_states(states))
    missing = [s.study for s in states if s.headline_missing]
    if missing:
        print(f"perfmod check: no headline for {', '.join(missing)} (see the detail above; a busy machine flags "
              "every run: rerun the study on a quiet one)", file=sys.stderr)
    return 1 if missing else 0


def _cmd_replay(args: argparse.Namespace) -> int:
    if args.trace and not args.synthetic and not args.output and _goal_loggops(args.trace, args.model):
        return _replay_goal_loggops(args)
    # the replay stack is imported here: `perfmod run`, once per notebook in make all, starts without it

    from perfmod.models.comm.registry import model_names
    from perfmod.replay.engine import replay, replay_times
    from perfmod.trace import read_trace

    if args.model not in model_names():
        raise CLIError(f"--model {args.model!r}: not a communication model; choose from {', '.join(model_names())}")
    if args.synthetic:
        from perfmod.apps.traces import COLLECTIVE_CALLS, collective, synthetic  # only for a synthetic trace

        try:
            app, nprocs, iters = args.synthetic.split(":")
            if app in COLLECTIVE_CALLS:  # a collective alone (root 0, 8 B), LogGOPSim's scale test
                trace = collective(app, int(nprocs), iterations=int(iters))
            else:
                trace = synthetic(app, int(nprocs), int(iters))
        except ValueError as e:
            raise CLIError(f"--synthetic {args.synthetic}: {e}") from None
    elif args.trace:
        trace = read_trace(args.trace, **_reader_unknown(args.trace, args.unknown))
    else:
        raise CLIError("give a TRACE file or --synthetic APP:NPROCS:ITERATIONS")
    if args.output and Path(args.output).exists() and not args.force:
        raise CLIError(f"-o {args.output}: exists; give --force to overwrite it")
    if args.output:
        ds = replay(trace, args.platform, args.model, mapping=args.mapping, unknown=args.unknown or "skip")
        times = {v: ds[v].values for v in RUN_TIMES}
    else:  # the table alone: no dataset, so neither xarray nor pandas is imported
        times = replay_times(trace, args.platform, args.model, mapping=args.mapping, unknown=args.unknown or "skip")
    skipped = {str(k): int(v) for k, v in dict(trace.meta.get("unknown_calls") or {}).items()}
    if skipped:
        print(f"skipped {sum(skipped.values())} calls perfmod does not model: "
              + ", ".join(f"{k} x{v}" for k, v in sorted(skipped.items())), file=sys.stderr)
    _print_times(f"{trace!r} on {args.platform}, {args.model}", times, args.top, "comm_time")
    if args.output:
        from perfmod.core.io import write_dataset

        print(f"wrote {write_dataset(ds, args.output)}")
    return 0


def _print_times(title: str, times: dict, top: int, slowest_by: str) -> None:
    """The ``top`` slowest ranks by ``slowest_by`` and the means of :data:`RUN_TIMES` (arrays per rank)."""
    import numpy as np

    order = np.argsort(times[slowest_by], kind="stable")[::-1][:top]
    print(f"{title}: slowest rank {int(order[0])}")
    print("rank  " + "  ".join(f"{v:>16s}" for v in RUN_TIMES))
    for r in order:
        print(f"{int(r):4d}  " + "  ".join(f"{float(times[v][r]):16.6e}" for v in RUN_TIMES))
    print("mean  " + "  ".join(f"{float(np.mean(times[v])):16.6e}" for v in RUN_TIMES) + "   (seconds)")


def _goal_loggops(path: str, model: str) -> bool:
    """A GOAL schedule under a LogGOPS model: the replay LogGOPSim's users run, without the dataset stack."""
    from perfmod.models.comm.registry import comm_model, model_names

    if not (model in model_names() and comm_model(model).replay == "loggops" and Path(path).is_file()):
        return False
    if Path(path).suffix.lower() == ".goal":  # the GOAL format's own extension: no other format module is loaded
        return True
    from perfmod.trace.formats.goal_bin import is_loggopsim_bin

    with open(path, "rb") as f:
        if is_loggopsim_bin(f.read(8)):  # LogGOPSim's binary schedule (its .bin is DUMPI's extension too)
            return True
    from perfmod.trace.formats import detect_format

    return detect_format(path) == "goal"


def _replay_goal_loggops(args: argparse.Namespace) -> int:
    """``perfmod replay x.goal --model loggp``: :func:`perfmod.replay.loggops.goal_finish_times`, printed as
    the dataset of ``replay(read_trace(x.goal), ...)`` would be (a GOAL schedule's time is its calcs and the
    rest, which the replay counts as waiting; no -o: that writes the dataset)."""
    import numpy as np

    from perfmod.replay.loggops import goal_finish_times

    res = goal_finish_times(args.trace, args.platform, args.model, mapping=args.mapping)
    total, comp = res.total_time, res.compute_time
    wait = np.maximum(total - comp, 0.0)
    zero = np.zeros_like(total)
    cols = {"comm_time": wait, "send_time": zero, "recv_time": zero, "wait_time": wait, "collective_time": zero,
            "compute_time": comp, "total_time": total}
    _print_times(f"GOAL schedule {args.trace} ({total.size} ranks, {res.operations} operations) on {args.platform}, "
                 f"{args.model}", cols, args.top, "comm_time")
    print(f"finishing time {float(total.max()):.9f} s (rank {int(np.argmax(total))})")
    return 0


def _reader_unknown(path: str, unknown: str | None) -> dict[str, str]:
    """``unknown=`` for the trace reader: the user's choice where the format's reader takes one."""
    from perfmod.trace.formats import detect_format

    return {"unknown": unknown} if unknown and detect_format(path) in ("tit", "dumpi", "otf2") else {}


def _cmd_extrapolate(args: argparse.Namespace) -> int:
    """Extrapolate traces of one program at small rank counts to ``--nprocs`` and write the result."""
    import warnings

    from perfmod.apps.extrapolate import ExtrapolationWarning, extrapolate_trace
    from perfmod.trace import write_trace

    params: dict[str, float] = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        try:
            params[name.strip().lstrip("-")] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise CLIError(f"-p {item!r}: give NAME=VALUE with a number, e.g. -p nx=1600")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ExtrapolationWarning)
        out = extrapolate_trace(args.traces, args.nprocs, params=params or None, iterations=args.iterations,
                                validate=not args.no_validate, seed=args.seed, start_sd=args.start_sd)
    for w in caught:
        if issubclass(w.category, ExtrapolationWarning):
            print(f"perfmod extrapolate: warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    ex = out.meta["extrapolation"]
    print(f"{out!r}: {ex['ordering']} grid {'(periodic) ' if ex['periodic'] else ''}from "
          f"{', '.join(map(str, ex['training_nprocs']))} ranks, parameters {ex['params']}")
    if ex["loso"]:
        worst = ex["loso_max"]
        print(f"leave-one-scale-out worst errors: messages {worst['messages_error']:.2%}, bytes "
              f"{worst['bytes_error']:.2%}, busiest rank {worst['max_rank_bytes_error']:.2%}, computation "
              f"{worst['compute_error']:.2%}; not generalizing: ranks {ex['ranks_not_generalizing'] or 'none'}, "
              f"calls {ex['sites_not_generalizing'] or 'none'}")
    print(f"wrote {write_trace(out, args.output)}")
    return 0


def _add_extrapolate(sub: Any) -> None:
    ext = sub.add_parser("extrapolate", help="extrapolate traces of small runs to a larger rank count",
                         description="Build the trace of an SPMD stencil program at --nprocs ranks from its traces "
                                     "at two or more smaller rank counts (perfmod.apps.extrapolate).")
    ext.add_argument("traces", nargs="+", metavar="TRACE", help="training traces (any format read_trace reads)")
    ext.add_argument("--nprocs", type=int, required=True, help="target rank count")
    ext.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                     help="a command-line parameter of the target run (default: weak scaling of nx, ny, nz)")
    ext.add_argument("--iterations", type=int, help="keep this many periods of the program (large targets)")
    ext.add_argument("--no-validate", action="store_true", help="skip the leave-one-scale-out validation")
    ext.add_argument("--seed", type=int, default=0,
                     help="seed of the draws of each rank's computation level (default 0)")
    ext.add_argument("--start-sd", type=float, metavar="SECONDS",
                     help="standard deviation of the ranks' start-up gap at the target (a what-if for a known "
                          "launcher skew; default: the power law fitted on the training traces)")
    ext.add_argument("-o", "--output", required=True, help="trace file to write (any format write_trace knows)")
    ext.set_defaults(func=_cmd_extrapolate)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from perfmod.workflow.sweep import sweep

    nb = resolve_notebook(args.notebook)
    ds = sweep(nb, args.grid, out=args.out, scheduler=args.scheduler, workers=args.workers, resume=args.resume,
               smoke=args.smoke, progress=not args.quiet, notebooks=args.notebooks,
               inprocess=False if args.papermill else None)
    status = ds["status"].values.ravel()
    ok = int((status == "ok").sum())
    print(f"{ok} of {status.size} points ok; combined dataset: {Path(args.out) / 'sweep.nc'}")
    for err in sorted({str(e) for e, s in zip(ds["error"].values.ravel(), status, strict=True) if s != "ok"}):
        print("  failed: " + err.replace("\n", "\n          "))
    return 0 if ok == status.size else 1


def _cmd_repeat(args: argparse.Namespace) -> int:
    from perfmod.workflow.repeat import figures_of, repeat

    nb = resolve_notebook(args.study)
    if not args.smoke:
        _quiet_machine(nb, args.force)
    ds = repeat(nb, args.n, out=args.out, smoke=args.smoke, canonical=args.canonical, resume=args.resume,
                progress=not args.quiet)
    print(f"{nb.stem}: headline figures over {ds.sizes['run']} run(s)")
    for fig in figures_of(ds):
        print(f"  {fig.name:<28s} {fig.text()}")
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    if args.pingpong is None:  # measure: the calibration study, in a run directory unless --canonical
        argv = ["run", "local_calibration"] + (["--canonical"] if args.canonical else []) + (
            ["-p", "platform_out", args.out] if args.out and not args.canonical else [])
        return _cmd_run(_parser().parse_args(argv))
    if args.canonical:
        raise CLIError("--canonical measures; to refit a ping-pong file give --out")
    from perfmod.models.comm.calibration import calibrate

    cal = calibrate(args.pingpong, name=args.name, out=args.out)
    print(f"fitted platform {cal.platform.name!r} from {args.pingpong}: protocol thresholds {cal.breakpoints} B")
    for proto, fit in cal.fits.items():
        a, b = fit.params["alpha"], fit.params["beta"]
        print(f"  {proto:10s} alpha {a:.4g} s  beta {b:.4g} s/B  (rel. RMS {fit.rel_rms:.1%})")
    for decision in cal.decisions:
        print(f"  decision: {decision}")
    print(f"wrote {cal.path}" if cal.path else "not written (give --out PLATFORM.toml)")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from perfmod.core.paperdata import available as paper_tables
    from perfmod.machine.devices import read_devices
    from perfmod.machine.platforms import available as platform_names

    what = args.what
    if what in ("studies", "all"):
        print("studies:\n" + _studies_table())
    if what in ("platforms", "all"):
        print("platforms:\n" + "\n".join(f"  {p}" for p in platform_names()))
    if what in ("devices", "all"):
        print("devices:\n" + "\n".join(f"  {d}" for d in read_devices().names))
    if what in ("tables", "all"):
        print("paper tables:\n" + "\n".join(f"  {t}" for t in paper_tables()))
    if what in ("models", "all"):
        _list_models()
    return 0


def _list_models() -> None:
    """The communication models ``--model`` and the studies' ``models`` take, with their one-line description."""
    from perfmod.models.comm.registry import comm_model, model_names

    print("communication models:")
    for name in model_names():
        print(f"  {name:<12s} {comm_model(name).description}")


def _studies_table() -> str:
    """``perfmod list studies``: name (the make target), paper, measuring or not, title (perfmod.workflow.catalog)."""
    from perfmod.workflow.catalog import studies

    return "\n".join(f"  {s.name:<24s} paper {s.paper}  {'measuring' if s.measuring else 'analytic ':9s}  {s.title}"
                     for s in studies())


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose description can be computed when its help is shown (``describe``).

    The replay help lists the registered trace formats; building it needs the trace package, which
    ``perfmod run`` (once per notebook in make all) does not import.
    """

    def __init__(self, *args: Any, describe: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._describe = describe

    def format_help(self) -> str:
        if self._describe is not None:
            self.description = self._describe()
        return super().format_help()


def _replay_description() -> str:
    from perfmod.trace.formats import trace_formats

    names = "; ".join(f"{f.name}: {f.files}".replace("`", "") for f in trace_formats())
    return f"Replay a trace in any registered format, detected from the file ({names})."


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("perfmod")
    except PackageNotFoundError:
        return "(not installed: a source tree)"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="perfmod", description=__doc__.splitlines()[0])
    ap.add_argument("--debug", action="store_true", help="show the traceback of an error")
    ap.add_argument("--version", action="version", version=f"perfmod {_version()}")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND", parser_class=_Parser)
    run = sub.add_parser("run", help="run a study notebook (papermill)",
                         description="Run a study notebook. Without --canonical, outputs go to a run directory.")
    run.add_argument("notebook", help="notebook path or study name (perfmod list studies)")
    run.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="set a parameter; VALUE is read as its declared type (e.g. -p nprocs '[1, 2]')")
    run.add_argument("-f", "--file", help="YAML file of parameters (papermill's format)")
    run.add_argument("--smoke", action="store_true", help="start from the notebook's smoke parameters (seconds)")
    run.add_argument("--out", help="run directory (default runs/<study>-<time> under the current directory)")
    run.add_argument("--canonical", action="store_true",
                     help="write the canonical outputs (data/processed, figures, data/platforms); used by make")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    run.add_argument("--force", action="store_true",
                     help="measure even when other processes keep the machine busy (the runs are flagged)")
    run.set_defaults(func=_cmd_run)
    chk = sub.add_parser("check", help="every study's state: fitted, not fitted (why), computed, not run",
                         description="Read each study's canonical dataset and print one table of their states; "
                                     "exit 1 when a measuring study has no headline figures (not run, or not "
                                     "fitted).")
    chk.add_argument("studies", nargs="*", help="studies to check (default: all)")
    chk.set_defaults(func=_cmd_check)
    shw = sub.add_parser("show", help="a study's parameters: types, defaults, comments; its smoke set",
                         description="Print a study's parameters (types, defaults and their comments) and smoke set.")
    shw.add_argument("study", help="study name or notebook path (perfmod list studies)")
    shw.set_defaults(func=_cmd_show)
    rep = sub.add_parser("replay", help="replay an MPI trace (any format read_trace reads)",
                         describe=_replay_description)
    rep.add_argument("trace", nargs="?", help="trace file or directory")
    rep.add_argument("--synthetic", metavar="APP:NPROCS:ITERATIONS",
                     help="a synthetic trace, e.g. jacobi2d:1536:100; APP may also be bcast, reduce, allreduce or "
                          "barrier: that collective alone over every rank (root 0, 8 B), e.g. bcast:8388608:1")
    rep.add_argument("--platform", default="summit", help="platform name or TOML file (default summit)")
    rep.add_argument("--model", default="kmodel",
                     help="communication model (the names: perfmod list models; default kmodel)")
    rep.add_argument("--mapping", default="block", choices=("block", "round_robin"), help="rank placement")
    rep.add_argument("--unknown", choices=("skip", "error"),
                     help="MPI calls perfmod does not model: skip them (counted and printed) or stop; default: the "
                          "reader's (a TIT action SimGrid does not define stops), then skip and print the count")
    rep.add_argument("--force", action="store_true", help="overwrite an existing -o file")
    rep.add_argument("--top", type=int, default=5, help="slowest ranks to print (default 5)")
    rep.add_argument("-o", "--output", help="write the per-rank dataset here (netCDF)")
    rep.set_defaults(func=_cmd_replay)
    swp = sub.add_parser("sweep", help="sweep a study notebook over a parameter grid (dask.distributed)",
                         description="Run every grid point on dask workers (an analytic study's run() in the "
                                     "worker, a measuring one in its own papermill process under the measuring "
                                     "lock); combine the points' datasets into DIR/sweep.nc with the swept "
                                     "parameters as dimensions, status and error per point.")
    swp.add_argument("notebook", help="notebook path or study name")
    swp.add_argument("--grid", required=True, help="YAML grid: fixed parameters, product: and zip: blocks")
    swp.add_argument("--out", required=True, help="sweep directory (one subdirectory per point, sweep.nc)")
    where = swp.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, help="LocalCluster worker processes (default: the cores)")
    where.add_argument("--scheduler", metavar="ADDRESS", help="address of a running dask scheduler")
    swp.add_argument("--resume", action="store_true", help="skip points already done with the same key")
    swp.add_argument("--smoke", action="store_true", help="start every point from the smoke parameters")
    swp.add_argument("--notebooks", choices=("failed", "all", "none"), default="failed",
                     help="points that get an executed notebook (default failed; all runs every point under "
                          "papermill)")
    swp.add_argument("--papermill", action="store_true",
                     help="one papermill process per point even for an analytic study (default: its run() "
                          "in the dask worker, about a second a point)")
    swp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    swp.set_defaults(func=_cmd_sweep)
    rpt = sub.add_parser("repeat", help="run a measuring study N times from scratch: headline median and range",
                         description="Run a measuring study's notebook N times, each in its own run directory, "
                                     "holding the measuring lock; write each run's headline figures with their "
                                     "median, min and max to DIR/repeat_<study>.nc after every run.")
    rpt.add_argument("study", help="measuring study name or notebook path (perfmod list studies)")
    rpt.add_argument("-n", type=int, default=3, help="runs (default 3)")
    rpt.add_argument("--smoke", action="store_true", help="every run with the notebook's smoke parameters (seconds)")
    rpt.add_argument("--out", help="repeat directory (default runs/repeat_<study>-<time> under the current directory)")
    rpt.add_argument("--resume", action="store_true",
                     help="keep the completed runs in --out made with the same notebook and sources")
    rpt.add_argument("--canonical", action="store_true",
                     help="also write data/processed/repeat_<study>.nc once all runs are done; used by make")
    rpt.add_argument("-q", "--quiet", action="store_true", help="no progress bar within a run")
    rpt.add_argument("--force", action="store_true",
                     help="measure even when other processes keep the machine busy (the runs are flagged)")
    rpt.set_defaults(func=_cmd_repeat)
    cal = sub.add_parser("calibrate", help="fit a platform from a ping-pong file, or measure one (local_calibration)",
                         description="With PINGPONG.nc: fit the postal (and max-rate) parameters per protocol from "
                                     "that file without measuring. Without it: run the local_calibration study.")
    cal.add_argument("pingpong", nargs="?", help="ping-pong dataset written by perfmod.measure.bench.pingpong")
    cal.add_argument("--out", help="platform TOML to write (a refit writes nothing without it)")
    cal.add_argument("--name", default="local", help="platform name (default local)")
    cal.add_argument("--canonical", action="store_true",
                     help="measure and write data/platforms/local.toml (what make calibration does)")
    cal.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    cal.set_defaults(func=_cmd_calibrate)
    add_model(sub)
    lst = sub.add_parser("list", help="list studies, platforms, devices, paper tables or communication models")
    lst.add_argument("what", nargs="?", default="all", choices=("all", "studies", "platforms", "devices", "tables",
                                                                 "models"))
    lst.set_defaults(func=_cmd_list)
    _add_extrapolate(sub)
    return ap


def _report(cmd: str, err: BaseException, debug: bool) -> None:
    """Print what failed, whole: a usage or input error as its message; a notebook's failure as its own
    exception, cell and line; anything else as its type and message.  ``--debug`` adds the traceback."""
    from perfmod.workflow.errors import describe, notebook_traceback

    if debug:
        print(notebook_traceback(err), file=sys.stderr)
    if isinstance(err, ModuleNotFoundError) and (err.name or "").split(".")[0] in NOTEBOOK_EXTRA:
        print(f"perfmod {cmd}: needs the notebooks extra (no module {err.name!r}): pip install 'perfmod[notebooks]'",
              file=sys.stderr)
        return
    expected = isinstance(err, CLIError | ValueError | OSError | LookupError) and not hasattr(err, "ename")
    text = (str(err).strip() or type(err).__name__) if expected else describe(err)
    print(f"perfmod {cmd}: {text}", file=sys.stderr)
    if not debug and not expected:
        print("  (rerun with --debug for the traceback)", file=sys.stderr)


def _run_help_study(argv: list[str]) -> str | None:
    """The study of ``perfmod run STUDY ... --help`` (None for any other command line)."""
    at = argv.index("run") if "run" in argv else -1
    if at < 0 or at + 1 >= len(argv) or argv[at + 1].startswith("-") or not {"-h", "--help"} & set(argv):
        return None
    return argv[at + 1]


def _subparser(name: str) -> argparse.ArgumentParser:
    ap = _parser()
    action = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``perfmod`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    study = _run_help_study(argv)
    if study is not None:  # perfmod run STUDY --help: the command's options, then the study's parameters
        from perfmod.workflow.show import describe_study

        print(_subparser("run").format_help())
        try:
            print(describe_study(resolve_notebook(study)))
        except (CLIError, ValueError, OSError) as err:
            print(f"perfmod run: {err}", file=sys.stderr)
            return 2
        return 0
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("perfmod: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - every error is reported, none as a bare traceback
        _report(args.cmd, err, args.debug)
        return 2 if isinstance(err, CLIError | ParameterError) else 1


if __name__ == "__main__":
    raise SystemExit(main())
