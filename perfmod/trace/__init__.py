"""MPI traces: the columnar in-memory :class:`Trace`, its builder and generators.

- :mod:`perfmod.trace.core`: :class:`Trace` (NumPy columns, one row per
  event; the layout is documented there), :class:`Call`, :class:`TraceError`;
  :class:`TraceBuilder` (:mod:`perfmod.trace.builder`, also importable from core).
- :mod:`perfmod.trace.requests`: which nonblocking call each wait completes.
- :func:`save_trace`, :func:`load_trace`: perfmod's own trace file (``.npz``,
  :mod:`perfmod.trace.store`).
- :func:`synthetic`: traces of the Jacobi2D, MiniFE and MiniMD communication
  at any rank count (:mod:`perfmod.trace.synthetic`).
- Files: :mod:`perfmod.trace.dumpi` (DUMPI ``dumpi2ascii`` reader),
  :mod:`perfmod.trace.tit` (SimGrid time-independent traces),
  :mod:`perfmod.trace.goal` (GOAL schedules for LogGOPSim/ATLAHS),
  :mod:`perfmod.trace.otf2io` (OTF2), :mod:`perfmod.trace.recorder`
  (recording mpi4py programs).

Replay them with :func:`perfmod.replay.replay`.
"""

from .core import (
    ANY_SOURCE,
    ANY_TAG,
    CALL_NAMES,
    COLLECTIVES,
    NO_PEER,
    NO_REQUEST,
    NO_TIME,
    PROC_NULL,
    Call,
    Trace,
    TraceBuilder,
    TraceError,
    call_code,
)
from .requests import Requests, resolve_requests
from .store import load_trace, save_trace

__all__ = [
    "ANY_SOURCE",
    "ANY_TAG",
    "CALL_NAMES",
    "COLLECTIVES",
    "NO_PEER",
    "NO_REQUEST",
    "NO_TIME",
    "PROC_NULL",
    "Call",
    "Trace",
    "TraceBuilder",
    "TraceError",
    "call_code",
    "Requests",
    "resolve_requests",
    "save_trace",
    "load_trace",
]

from .synthetic import SYNTHETIC_APPS, synthetic  # noqa: E402  (after the core it builds on)

__all__ += ["SYNTHETIC_APPS", "synthetic"]
