"""MPI traces: the columnar in-memory :class:`Trace`, its builder, and the trace file formats.

- :mod:`perfmod.trace.core`: :class:`Trace` (NumPy columns, one row per
  event; the layout is documented there), :class:`Call`, :class:`TraceError`, :class:`TraceWarning`.
- :mod:`perfmod.trace.builder`: :class:`TraceBuilder`, event by event or from arrays.
- :mod:`perfmod.trace.requests`: which nonblocking call each wait completes;
  :func:`validate_trace` checks a trace completely.
- :func:`read_trace`, :func:`write_trace`: every registered file format,
  detected from the file (:mod:`perfmod.trace.formats`; :func:`trace_formats`
  lists them, :func:`register_format` adds one).
- :mod:`perfmod.trace.recorder`: recording mpi4py programs.

Synthetic traces of the paper applications are in :mod:`perfmod.apps.traces`;
replay any trace with :func:`perfmod.replay.replay`.
"""

from perfmod.trace.builder import TraceBuilder
from perfmod.trace.core import (
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
    TraceError,
    TraceWarning,
    call_code,
)
from perfmod.trace.formats import (
    TraceFormat,
    detect_format,
    read_trace,
    register_format,
    trace_formats,
    unregister_format,
    write_trace,
)
from perfmod.trace.requests import Requests, resolve_requests, validate_trace

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
    "TraceWarning",
    "call_code",
    "Requests",
    "resolve_requests",
    "validate_trace",
    "TraceFormat",
    "register_format",
    "unregister_format",
    "trace_formats",
    "detect_format",
    "read_trace",
    "write_trace",
]
