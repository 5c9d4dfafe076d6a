"""Region instrumentation for Python/mpi4py programs, lwperf-style (paper 004 §V).

lwperf marks a compute region with ``PERFLOG``/``PERFSTOP`` and the region's
parameters and records one row per call (paper 004 §V, Figure 4b).  Here::

    with Recorder("regions.sqlite", application="hpccg"):
        for it in range(n_iter):
            with region("waxpby", n=n):
                w[:] = a * x + b * y

or, for a function, ``@instrument("waxpby", params=("n",))``.  Each call
records its own parameters (lwperf's sites keep the last value of a parameter
that a later call omits; here nothing carries over), its start and wall time
in integer nanoseconds (``time.perf_counter_ns``), the rank, its parent call
(from which its exclusive time, inclusive time minus that of the regions
nested in it, is derived), and energy in joules when an energy reader is given.  Calls are buffered
and written in batches (:class:`~.store.RegionStore`).

With no active recorder, ``region()`` returns a shared no-op context, so an
instrumented program runs unchanged.  A recorder is not thread-safe: use one
per thread or process (per MPI rank).
"""

from __future__ import annotations

import functools
import inspect
import os
import socket
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from perfmod.measure.regions.store import RegionStore, exclusive_ns

__all__ = ["Recorder", "region", "instrument", "active_recorder", "detect_rank", "rapl_energy_reader", "exclusive_ns"]

_active: Recorder | None = None
_clock = time.perf_counter_ns


def active_recorder() -> Recorder | None:
    """The recorder that ``region()`` writes to, or ``None``."""
    return _active


def detect_rank() -> int:
    """MPI rank of this process: mpi4py's COMM_WORLD if already imported and initialized, else launcher variables."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:
        try:
            if mpi.Is_initialized() and not mpi.Is_finalized():
                return int(mpi.COMM_WORLD.Get_rank())
        except Exception:  # noqa: BLE001 - a broken MPI must not stop the measurement
            pass
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID"):
        if var in os.environ:
            try:
                return int(os.environ[var])
            except ValueError:
                continue
    return 0


def rapl_energy_reader(path: str = "/sys/class/powercap/intel-rapl:0/energy_uj") -> Callable[[], float] | None:
    """A reader of the package's cumulative RAPL energy in joules, or ``None`` where it is not readable."""
    p = Path(path)
    try:
        float(p.read_text())
    except (OSError, ValueError):
        return None

    def read() -> float:
        return float(p.read_text()) * 1e-6

    return read


class _NullRegion:
    __slots__ = ()

    def __enter__(self) -> _NullRegion:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False


_NULL = _NullRegion()


class _Region:
    """One open region call (context manager); see :func:`region`.

    The hot path does the least it can: link to the enclosing call, read the
    clock twice, append one tuple.  Exclusive times are derived from the
    parent links when the calls are read (:func:`exclusive_ns`).
    """

    __slots__ = ("rec", "name", "params", "t0", "seq", "parent")

    def __init__(self, rec: Recorder, name: str, params: dict[str, Any]) -> None:
        self.rec = rec
        self.name = name
        self.params = params

    def __enter__(self) -> _Region:
        rec = self.rec
        self.parent = rec._top
        rec._top = self
        self.seq = rec._seq
        rec._seq += 1
        self.t0 = _clock()
        return self

    def __exit__(self, et: object, ev: object, tb: object) -> bool:
        t1 = _clock()
        rec = self.rec
        parent = rec._top = self.parent
        buf = rec._buf
        buf.append((self.seq, -1 if parent is None else parent.seq, self.name, self.params, self.t0, t1 - self.t0,
                    None))
        if len(buf) >= rec.batch_size:
            rec.flush()
        return False


class _EnergyRegion(_Region):
    """A region call that also reads the recorder's energy counter (joules)."""

    __slots__ = ("e0",)

    def __enter__(self) -> _EnergyRegion:
        self.e0 = self.rec._energy()
        return super().__enter__()

    def __exit__(self, *exc: object) -> bool:
        t1 = _clock()
        rec = self.rec
        e1 = rec._energy()
        parent = rec._top = self.parent
        rec._buf.append((self.seq, -1 if parent is None else parent.seq, self.name, self.params, self.t0,
                         t1 - self.t0, e1 - self.e0))
        if len(rec._buf) >= rec.batch_size:
            rec.flush()
        return False


def region(name: str, **params: Any) -> _Region | _NullRegion:
    """Context manager marking one call of a compute region with its parameters.

    Parameters
    ----------
    name : str
        Region name (Eiger data collection, lwperf site).
    **params : number
        Parameters of this call (e.g. ``n=n``), recorded with the call; converted to float when written.
    """
    rec = _active
    if rec is None:
        return _NULL
    if rec._energy is None:
        return _Region(rec, name, params)
    return _EnergyRegion(rec, name, params)


def instrument(name: str | None = None, params: Sequence[str] | Callable[..., Mapping[str, Any]] = ()
               ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator recording each call of a function as a region.

    Parameters
    ----------
    name : str, optional
        Region name (default: the function's qualified name).
    params : sequence of str or callable
        Names of the function's arguments to record, or a callable taking the
        call's arguments and returning the parameter mapping.
    """
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        rname = name or fn.__qualname__
        sig = inspect.signature(fn)
        names = list(sig.parameters)
        if callable(params):
            getter = params
        else:
            spec = []
            for p in params:
                if p not in sig.parameters:
                    raise ValueError(f"region {rname!r}: {fn.__qualname__} has no argument {p!r}")
                default = sig.parameters[p].default
                spec.append((p, names.index(p), default))

            def getter(*args: Any, **kwargs: Any) -> dict[str, Any]:
                out = {}
                for p, i, default in spec:
                    if p in kwargs:
                        out[p] = kwargs[p]
                    elif i < len(args):
                        out[p] = args[i]
                    elif default is not inspect.Parameter.empty:
                        out[p] = default
                return out

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            rec = _active
            if rec is None:
                return fn(*args, **kwargs)
            cls = _Region if rec._energy is None else _EnergyRegion
            with cls(rec, rname, dict(getter(*args, **kwargs))):
                return fn(*args, **kwargs)

        return wrapper

    return deco


class Recorder:
    """Collects region calls of one process and writes them to a store in batches.

    Parameters
    ----------
    store : path, RegionStore or None
        SQLite file in Eiger's schema (created if needed), an open store, or
        ``None`` to keep the calls in memory only.
    application : str
        Eiger application name.
    machine : str, optional
        Eiger machine name (default: host name).
    rank : int, optional
        MPI rank (default: :func:`detect_rank`).
    invariants : mapping, optional
        lwperf invariants: numbers constant over the run (e.g. ``nprocs``),
        stored as deterministic metrics of every call.
    batch_size : int
        Calls buffered before a write (one transaction per batch); a crash loses at most this many.
    energy : callable, optional
        Returns cumulative energy in joules (e.g. :func:`rapl_energy_reader`).
    """

    def __init__(self, store: Any = "regions.sqlite", *, application: str = "app", machine: str | None = None,
                 rank: int | None = None, invariants: Mapping[str, float] | None = None, batch_size: int = 10_000,
                 energy: Callable[[], float] | None = None) -> None:
        if store is None or isinstance(store, RegionStore):
            self.store = store
        else:
            self.store = RegionStore(store)
        self.application = application
        self.machine = machine or socket.gethostname()
        self.rank = detect_rank() if rank is None else int(rank)
        self.invariants = dict(invariants or {})
        self.batch_size = int(batch_size)
        self.run_id = uuid.uuid4().hex
        self.epoch_offset_ns = time.time_ns() - _clock()
        self._energy = energy
        self._seq = 0
        self._top: _Region | None = None
        self._buf: list[tuple] = []
        self._kept: list[tuple] = []
        self._previous: Recorder | None = None

    # ----------------------------------------------------------------- activation
    def start(self) -> Recorder:
        """Make this the active recorder (the previous one is restored by :meth:`stop`)."""
        global _active
        self._previous, _active = _active, self
        return self

    def stop(self) -> None:
        """Flush and deactivate."""
        global _active
        try:
            self.flush()
        finally:
            if _active is self:
                _active = self._previous

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, *exc: object) -> bool:
        self.stop()
        return False

    # ----------------------------------------------------------------- data
    def flush(self) -> int:
        """Write the buffered calls (one transaction); returns how many were written."""
        buf, self._buf = self._buf, []
        if not buf:
            return 0
        if self.store is None:
            self._kept.extend(buf)
        else:
            self.store.write_calls(buf, application=self.application, machine=self.machine, rank=self.rank,
                                   run_id=self.run_id, invariants=self.invariants,
                                   epoch_offset_ns=self.epoch_offset_ns)
        return len(buf)

    def to_dataframe(self) -> pd.DataFrame:
        """The calls of this recorder (memory store) or of its whole store, one row per call."""
        if self.store is not None:
            self.flush()
            return self.store.calls()
        rows = []
        for seq, pseq, name, params, t0, incl, energy in [*self._kept, *self._buf]:
            rows.append({"region": name, "rank": self.rank, "seq": seq, "parent_seq": pseq,
                         "start_ns": t0 + self.epoch_offset_ns, "time_ns": incl,
                         "energy_j": energy, **self.invariants, **params})
        df = pd.DataFrame(rows)
        if len(df):
            df.insert(0, "run_id", self.run_id)
            df["exclusive_ns"] = exclusive_ns(df)
        return df
