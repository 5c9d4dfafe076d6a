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

from __future__ import annotations

from perfmod.core.lazy import lazy_exports

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

# imported on first use, so that a submodule (perfmod.trace.core; the GOAL reader perfmod.trace.formats.goal_scan)
# starts without the builder, the request resolution and every format's reader (and numba, which they compile with)
_WHERE = {name: "perfmod.trace.core" for name in __all__}
_WHERE.update(TraceBuilder="perfmod.trace.builder", **dict.fromkeys(("Requests", "resolve_requests", "validate_trace"),
                                                                 "perfmod.trace.requests"),
              **dict.fromkeys(("TraceFormat", "register_format", "unregister_format", "trace_formats",
                               "detect_format", "read_trace", "write_trace"), "perfmod.trace.formats"))


__getattr__, __dir__ = lazy_exports(globals(), _WHERE)
