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
import itertools
import os
import socket
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfmod.measure.regions.activation import Activatable, ActiveSlot
from perfmod.measure.regions.store import RegionStore, exclusive_ns

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Recorder", "region", "instrument", "param_getter", "active_recorder", "detect_rank",
           "rapl_energy_reader", "exclusive_ns"]

_calls: _Calls | None = None  # the active recorder's calls, read by region() on every call
_clock = time.perf_counter_ns


def _publish(rec: Recorder | None) -> None:
    global _calls
    _calls = None if rec is None else rec._calls


_SLOT = ActiveSlot(_publish)


def active_recorder() -> Recorder | None:
    """The recorder that ``region()`` writes to, or ``None``."""
    return _SLOT.current


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


class _Calls:
    """A recorder's buffer of region events; the context manager that :func:`region` returns.

    The hot path does the least it can: it appends one event per call end.
    :func:`region` appends ``(name, params, t0_ns)`` (with the energy reading
    as a fourth item when the recorder reads energy), its clock read last;
    ``__enter__`` is a C callable (nothing to do, no Python frame) and
    ``__exit__`` appends the end time ``t1_ns`` (an ``int``; ``[t1_ns, energy]``
    with energy).  The events are in program order, so :meth:`drain` pairs each
    end with the innermost open call and derives the sequence numbers and
    parents there, off the hot path.  Wall and exclusive times are derived when
    the calls are written or read.
    """

    __slots__ = ("rec", "buf", "push", "batch", "energy", "stack", "count")

    __enter__ = staticmethod(type(None))  # with region(...): enters by calling NoneType() -> None

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.buf: list = []
        self.push = self.buf.append
        self.batch = 2 * rec.batch_size  # two events per call
        self.energy = rec._energy
        self.stack: list[list] = [[-1]]  # calls still open across drains; bottom: the parent_seq of top-level calls
        self.count = itertools.count()

    def __exit__(self, et: object, ev: object, tb: object) -> bool:
        self.push(_clock())
        return False

    def drain(self) -> list[list]:
        """The calls closed since the last drain, ``[seq, parent_seq, name, params, t0_ns, t1_ns, energy]``.

        Calls still open stay on the nesting stack for a later drain.
        """
        events = self.buf[:]
        self.buf.clear()
        stack, count, done = self.stack, self.count, []
        for ev in events:
            kind = type(ev)
            if kind is int:
                call = stack.pop()
                call[5] = ev
                done.append(call)
            elif kind is tuple:
                stack.append([next(count), stack[-1][0], ev[0], ev[1], ev[2], None, ev[3] if len(ev) > 3 else None])
            else:  # [t1_ns, energy at the end]
                call = stack.pop()
                call[5], call[6] = ev[0], ev[1] - call[6]
                done.append(call)
        return done


class _EnergyCalls(_Calls):
    """Calls of a recorder that also reads an energy counter (joules) at both ends."""

    __slots__ = ()

    def __exit__(self, et: object, ev: object, tb: object) -> bool:
        t1 = _clock()
        self.push([t1, self.energy()])
        return False


def region(name: str, **params: Any) -> _Calls | _NullRegion:
    """Context manager marking one call of a compute region with its parameters.

    Use it directly in a ``with`` statement: the call opens (and its clock
    starts) when ``region()`` is called, and closes on leaving the block.

    Parameters
    ----------
    name : str
        Region name (Eiger data collection, lwperf site).
    **params : number
        Parameters of this call (e.g. ``n=n``), recorded with the call (this
        call's own mapping: nothing carries over); converted to float when written.
    """
    cx = _calls
    if cx is None:
        return _NULL
    if len(cx.buf) >= cx.batch:  # batch_size calls ended: write them (open ones wait on the stack)
        cx.rec.flush()
    if cx.energy is None:
        cx.push((name, params, _clock()))
    else:
        e0 = cx.energy()
        cx.push((name, params, _clock(), e0))
    return cx


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
        getter = param_getter(fn, rname, params)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if _calls is None:
                return fn(*args, **kwargs)
            with region(rname, **getter(*args, **kwargs)):
                return fn(*args, **kwargs)

        return wrapper

    return deco


def param_getter(fn: Callable[..., Any], rname: str, params: Sequence[str] | Callable[..., Mapping[str, Any]]
                 ) -> Callable[..., Mapping[str, Any]]:
    """The function mapping a call's arguments to the region parameters named in ``params``.

    Parameters
    ----------
    fn : callable
        The decorated function (its signature locates each parameter).
    rname : str
        Region name, for the error message.
    params : sequence of str or callable
        Argument names, or a callable already doing the mapping (returned as is).

    Raises
    ------
    ValueError
        If ``fn`` has no argument of one of the names.
    """
    if callable(params):
        return params
    sig = inspect.signature(fn)
    names = list(sig.parameters)
    spec = []
    for p in params:
        if p not in sig.parameters:
            raise ValueError(f"region {rname!r}: {fn.__qualname__} has no argument {p!r}")
        spec.append((p, names.index(p), sig.parameters[p].default))

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

    return getter


class Recorder(Activatable):
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
        self._batch_size = int(batch_size)
        self.run_id = uuid.uuid4().hex
        self.epoch_offset_ns = time.time_ns() - _clock()
        self._energy = energy
        self._calls = (_Calls if energy is None else _EnergyCalls)(self)
        self._kept: list[list] = []

    _slot = _SLOT

    @property
    def batch_size(self) -> int:
        """Closed calls buffered before a write."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self._batch_size = int(value)
        self._calls.batch = 2 * self._batch_size

    def _before_stop(self) -> None:
        self.flush()

    # ----------------------------------------------------------------- data
    def flush(self) -> int:
        """Write the buffered closed calls (one transaction); returns how many were written.

        Calls still open are written by a later flush.
        """
        done = self._calls.drain()
        if not done:
            return 0
        if self.store is None:
            self._kept.extend(map(tuple, done))  # tuples of numbers leave the garbage collector's lists
        else:
            self.store.write_calls(done, application=self.application, machine=self.machine, rank=self.rank,
                                   run_id=self.run_id, invariants=self.invariants,
                                   epoch_offset_ns=self.epoch_offset_ns)
        return len(done)

    def to_dataframe(self) -> pd.DataFrame:
        """The calls of this recorder (memory store) or of its whole store, one row per call."""
        if self.store is not None:
            self.flush()
            return self.store.calls()
        self.flush()  # in memory: the closed calls move to the kept ones
        rows = []
        for seq, pseq, name, params, t0, t1, energy in self._kept:
            rows.append({"region": name, "rank": self.rank, "seq": seq, "parent_seq": pseq,
                         "start_ns": t0 + self.epoch_offset_ns, "time_ns": t1 - t0,
                         "energy_j": energy, **self.invariants, **params})
        import pandas as pd

        df = pd.DataFrame(rows)
        if len(df):
            df.insert(0, "run_id", self.run_id)
            df["exclusive_ns"] = exclusive_ns(df)
        return df
