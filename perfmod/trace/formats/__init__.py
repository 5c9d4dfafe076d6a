"""Trace file formats behind one pair of verbs: :func:`read_trace` and :func:`write_trace`.

Each format module declares its format as ``TRACE_FORMAT``, a
:class:`~perfmod.trace.formats.registry.TraceFormat` (name, extensions,
content sniffer, reader, writer); the registry registers the built-in ones
in content-sniffing order when it is first asked (importing this package
imports no format module), and :func:`register_format` (or the entry-point
group ``perfmod.trace_formats``) adds others.  :func:`trace_formats` lists
them; :func:`~perfmod.trace.formats.registry.format_table` renders the table
that docs/usage.md shows.

:func:`detect_format` decides by extension first and then by content (the
first bytes of the file), so a renamed file is still read by the right
reader; anything it cannot place is a :class:`~perfmod.trace.core.TraceError`
naming the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from perfmod.trace.core import Trace, TraceError
from perfmod.trace.formats.registry import (
    TraceFormat,
    format_of_extension,
    register_format,
    trace_format,
    trace_formats,
    unregister_format,
)

__all__ = ["TraceFormat", "register_format", "unregister_format", "trace_formats", "detect_format", "read_trace",
           "write_trace"]


def _head(path: Path, n: int = 4096) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror or e}") from None


def _names() -> str:
    return ", ".join(f.name for f in trace_formats())


def detect_format(path: str | os.PathLike) -> str:
    """Name the format of a trace file or directory (the name of one of :func:`trace_formats`).

    A file that opens with a format's magic bytes is that format (LogGOPSim's
    binary ``.bin`` schedules are GOAL); else a file whose extension a format
    owns is that format; otherwise (and for
    a directory) the formats' sniffers are asked in registration order:
    the built-ins place a zip archive as ``npz``, ``num_ranks`` opening a
    file as GOAL, ``MPI_`` lines (or a directory of ``.meta``, ``.bin`` or
    text files) as DUMPI, an anchor file naming its OTF2 version as OTF2,
    and ``<rank> <action> ...`` lines or an index of file names as TIT.

    Raises
    ------
    TraceError
        The path does not exist or its format is not recognised.
    """
    p = Path(path)
    if p.is_dir():
        head = b""
    elif not p.exists():
        raise TraceError(f"{p}: no such file")
    else:
        head = _head(p)
        owner = next((f for f in trace_formats() if f.magic and head.startswith(f.magic)), None)
        owner = owner or format_of_extension(p.suffix)
        if owner is not None:
            return owner.name
    for fmt in trace_formats():
        if fmt.guess_can_open(p, head):
            return fmt.name
    what = "a directory of" if p.is_dir() else "a"
    raise TraceError(f"{p}: not {what} trace perfmod can read (expected one of {_names()})")


def read_trace(path: str | os.PathLike, format: str | None = None, **options: Any) -> Trace:
    """Read a trace in any registered format, detected from the file.

    Parameters
    ----------
    path : path
        A file or directory of one of :func:`trace_formats` (the built-ins:
        a DUMPI ``.meta`` file, directory or text file; an OTF2 anchor file;
        a TIT trace or index; a GOAL schedule; a perfmod ``.npz``).
    format : str, optional
        A format's name; detected by :func:`detect_format` when not given.
    **options
        Passed to the format's reader (e.g. ``nprocs``, ``unknown``).

    Returns
    -------
    Trace
        A :class:`~perfmod.trace.core.Trace`, which
        :func:`perfmod.replay.replay` takes; a GOAL schedule is put in the
        order a rank would post it (:mod:`perfmod.trace.formats.goal_trace`;
        :func:`~perfmod.trace.formats.goal.read_goal` gives the parsed graph).

    Raises
    ------
    TraceError
        Unknown format, or a file the reader cannot read (the message names
        the file and, for text formats, the line).
    """
    fmt = trace_format(format, path) if format else trace_format(detect_format(path), path)
    return fmt.read(path, **options)


def write_trace(trace: Trace, path: str | os.PathLike, format: str | None = None, **options: Any) -> Path:
    """Write ``trace`` as ``format`` (default: from the extension; ``.npz`` when no format owns it).

    Returns the file to read back with :func:`read_trace`: the trace file, a
    TIT index, or the OTF2 archive's anchor file.

    Raises
    ------
    TraceError
        A format perfmod cannot write (DUMPI is read-only).
    """
    p = Path(path)
    if format is None:
        owner = format_of_extension(p.suffix)
        format = owner.name if owner is not None else "npz"
    return Path(trace_format(format, p, writing=True).write(trace, p, **options))
