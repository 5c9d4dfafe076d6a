"""Command line shared by the skeleton proxies (HPCCG-, MiniMD-, LULESH-like): one program, four ways to run it.

``--mode native``
    plain run: no region recording, no skeleton.
``--mode measure``
    every region runs; with ``--regions FILE`` its calls go to an Eiger-schema
    SQLite store (one writer per rank, WAL), application = the proxy's name,
    invariants ``nprocs`` and those given with ``--invariant NAME=VALUE``.
``--mode model``
    skippable regions are replaced by the models in ``--models DIR`` on a
    virtual clock.
``--mode hybrid``
    regions run until their relative standard error is below ``--rse``, then
    the model (or the sample mean) takes over.

``--models DIR`` is a directory of Eiger model files, one per region, named
after the region (``sparsemv.json``; JSON or Eiger's text form, told apart
by their content), read with :func:`perfmod.models.compute.read_eiger_model`
(write them with :func:`~perfmod.models.compute.write_eiger_model`).  Model files are data:
nothing on the command line is unpickled or executed.  Models of the other
kinds (perfmod mode, loop, mean) are given in-process, to
:class:`perfmod.measure.regions.skeleton.Skeleton` (the ``anger_skeletons``
study runs its skeletons that way).

``--trace-out FILE`` records the MPI calls (``perfmod.trace.recorder``;
stamped on the virtual clock in model and hybrid mode) and writes the
merged trace (``.npz``) on rank 0.  BLAS runs single-threaded (one rank
per core).  Rank 0 prints one JSON line:
``time``, ``virtual_time`` and ``cpu_time`` (s, maximum over ranks of the timed
section: real, virtual and CPU time),
``cpu_fraction`` (minimum over ranks of CPU time / wall time of the whole
run: below about 0.9 the rank was descheduled), the program's other
results from rank 0, and per region the calls run and modeled and the
model evaluation cost; and ``interference``, every rank's probe report over
the run (:mod:`perfmod.measure.interference`), which
:func:`perfmod.measure.runner.run_mpi` classifies.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perfmod.measure.proxies.ranks import or_abort, print_on_root, probed

__all__ = ["proxy_main", "read_models"]


def _parser(app: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"python -m perfmod.measure.proxies.{app}")
    ap.add_argument("--mode", choices=("native", "measure", "model", "hybrid"), default="native")
    ap.add_argument("--regions", default="", help="SQLite region store (measure, hybrid)")
    ap.add_argument("--models", default="",
                    help="directory of Eiger model files, one per region: <region>.json (model, hybrid)")
    ap.add_argument("--trace-out", default="", help="write the MPI trace (.npz) here")
    ap.add_argument("--rse", type=float, default=0.02, help="hybrid: relative standard error threshold")
    ap.add_argument("--min-samples", type=int, default=5, help="hybrid: fewest samples per parameter point")
    ap.add_argument("--invariant", action="append", default=[], metavar="NAME=VALUE",
                    help="a number stored with every region call (lwperf invariant), e.g. size=32; repeatable")
    return ap


def _invariants(items: Sequence[str]) -> dict[str, float]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name] = float(value)
        except ValueError:
            raise SystemExit(f"--invariant wants NAME=NUMBER, got {item!r}") from None
    return out


def read_models(directory: str | Path) -> dict[str, Any]:
    """The region models of ``--models DIR``: ``{region: EigerModel}`` from each file ``<region>.<ext>`` in it.

    Parameters
    ----------
    directory : path-like
        A directory of Eiger model files (JSON or text), one per region,
        each named after its region.

    Returns
    -------
    dict
        Region name (the file name without its suffix) -> model.

    Raises
    ------
    FileNotFoundError
        When ``directory`` is not a directory or holds no model file.
    ValueError
        When two files name the same region.
    perfmod.models.compute.EigerModelFileError
        When a file does not parse (the message starts with ``path:line:``).
    """
    from perfmod.models.compute import read_eiger_model

    d = Path(directory)
    if not d.is_dir():
        raise FileNotFoundError(f"--models {d}: not a directory (give a directory of <region>.json Eiger model files)")
    files = sorted(f for f in d.iterdir() if f.is_file() and not f.name.startswith("."))
    if not files:
        raise FileNotFoundError(f"--models {d}: no model files (expected <region>.json Eiger model files)")
    models: dict[str, Any] = {}
    for f in files:
        if f.stem in models:
            raise ValueError(f"--models {d}: two files for region {f.stem!r}")
        models[f.stem] = read_eiger_model(f)
    return models


def proxy_main(app: str, add_arguments: Callable[[argparse.ArgumentParser], None],
               program: Callable[[Any, argparse.Namespace], dict[str, Any]], argv: Sequence[str] | None = None
               ) -> None:
    """Parse the shared and the proxy's arguments, run ``program(comm, args)`` in the chosen mode, print JSON.

    Parameters
    ----------
    app : str
        Proxy name (region store application, module name).
    add_arguments : callable
        Adds the proxy's own arguments to the parser.
    program : callable
        One rank's run; returns a dict with at least ``time`` and ``virtual_time`` (s).
    argv : sequence of str, optional
        Arguments (default: ``sys.argv``).
    """
    from mpi4py import MPI
    from threadpoolctl import threadpool_limits

    from perfmod.measure.regions.recorder import Recorder
    from perfmod.measure.regions.skeleton import Skeleton

    ap = _parser(app)
    add_arguments(ap)
    args = ap.parse_args(argv)
    world = MPI.COMM_WORLD
    rank = world.Get_rank()

    def setup() -> tuple[Any, Any]:  # a rank that fails here must abort the others, not leave them waiting
        rec = None
        models = read_models(args.models) if args.models else {}
        sk = None if args.mode == "native" else Skeleton(args.mode, models, rse_threshold=args.rse,
                                                         min_samples=args.min_samples)
        if args.regions and args.mode in ("measure", "hybrid"):
            # rank 0 creates the store's schema first: SQLite may refuse two connections that create it at once
            # ("database is locked" without waiting for the busy timeout)
            for turn in (0, 1):
                if (rank == 0) == (turn == 0):
                    rec = Recorder(args.regions, application=app, rank=rank,
                                   invariants={"nprocs": world.Get_size(), **_invariants(args.invariant)})
                if turn == 0:
                    world.Barrier()
        return sk, rec

    sk, rec = or_abort(world, setup)
    comm: Any = world
    if args.trace_out:  # the trace layer is imported only here: a measuring rank starts without it
        from perfmod.trace.recorder import record

        comm = sk.record(world) if sk is not None else record(world)

    def work() -> tuple[dict, float]:
        w0, c0 = time.perf_counter(), time.process_time()
        if rec is not None:
            rec.start()
        if sk is not None:
            sk.start()
        try:
            with threadpool_limits(1):  # one rank per core: BLAS threads would compete with the other ranks
                res = program(comm, args)
        finally:
            if sk is not None:
                sk.stop()
            if rec is not None:
                rec.stop()
        return res, (time.process_time() - c0) / max(time.perf_counter() - w0, 1e-9)

    (res, cpu_frac), _, reports = probed(world, work)
    times = world.gather((res["time"], res["virtual_time"], cpu_frac, res.get("cpu_time", float("nan"))), root=0)
    trace = comm.recorder.gather(0, source=f"{app} {args.mode}") if args.trace_out else None
    if rank == 0:
        if trace is not None:
            from perfmod.trace.formats.npz import write_npz

            write_npz(trace, args.trace_out)
        out = {k: v for k, v in res.items() if isinstance(v, int | float | str)}
        out.update(app=app, mode=args.mode, nprocs=world.Get_size(), time=max(t[0] for t in times),
                   virtual_time=max(t[1] for t in times), cpu_fraction=min(t[2] for t in times),
                   cpu_time=max(t[3] for t in times), interference=reports)
        if sk is not None:
            out["regions"] = sk.summary().reset_index().to_dict(orient="records")
        print_on_root(world, out, default=float)
