"""Trace file formats behind one pair of verbs: :func:`read_trace` and :func:`write_trace`.

==========  ======================================  ==============================================
format      files                                   module
==========  ======================================  ==============================================
``npz``     perfmod's own ``.npz``                  :mod:`perfmod.trace.formats.npz`
``dumpi``   DUMPI ``.meta``, directory, .bin, text  :mod:`.dumpi_bin` (binary), :mod:`.dumpi` (text)
``otf2``    OTF2 anchor file (``.otf2``)            :mod:`perfmod.trace.formats.otf2`
``tit``     SimGrid time-independent trace/index    :mod:`perfmod.trace.formats.tit`
``goal``    GOAL schedule (LogGOPSim, Schedgen)     :mod:`.goal` (parse, write), :mod:`.goal_trace` (replay)
==========  ======================================  ==============================================

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
from perfmod.trace.formats.dumpi import read_dumpi
from perfmod.trace.formats.dumpi_bin import read_dumpi_bin
from perfmod.trace.formats.goal import write_goal
from perfmod.trace.formats.goal_trace import read_goal_trace
from perfmod.trace.formats.npz import read_npz, write_npz
from perfmod.trace.formats.otf2 import read_otf2, write_otf2
from perfmod.trace.formats.tit import read_tit, write_tit

__all__ = ["FORMATS", "detect_format", "read_trace", "write_trace"]

FORMATS = ("npz", "dumpi", "otf2", "tit", "goal")

_WRITERS = {"npz": write_npz, "otf2": write_otf2, "tit": write_tit, "goal": write_goal}
_EXTENSIONS = {".npz": "npz", ".meta": "dumpi", ".bin": "dumpi", ".otf2": "otf2", ".goal": "goal", ".tit": "tit"}


def _read_dumpi(path: str | os.PathLike, **options: Any) -> Trace:
    """DUMPI binary (``.bin`` files present) by the native reader, else the ``dumpi2ascii`` text reader."""
    p = Path(path)
    where = p if p.is_dir() else p.parent
    binary = p.suffix == ".bin" or (p.suffix in (".meta", "") and any(where.glob("*.bin")))
    return read_dumpi_bin(path, **options) if binary else read_dumpi(path, **options)


_READERS = {"npz": read_npz, "dumpi": _read_dumpi, "otf2": read_otf2, "tit": read_tit, "goal": read_goal_trace}


def _head(path: Path, n: int = 4096) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror or e}") from None


def detect_format(path: str | os.PathLike) -> str:
    """Name the format of a trace file or directory (one of :data:`FORMATS`).

    A directory is DUMPI when it holds ``.meta``, ``.bin`` or DUMPI text
    files.  A file is placed by its extension, else by its first bytes: a
    zip archive is ``npz``; ``num_ranks`` opens a GOAL schedule; DUMPI
    text lines start with ``MPI_``; an OTF2 anchor file names its version;
    TIT lines are ``<rank> <action> ...`` or an index of file names.

    Raises
    ------
    TraceError
        The path does not exist or its format is not recognised.
    """
    p = Path(path)
    if p.is_dir():
        if any(p.glob("*.meta")) or any(p.glob("*.bin")) or any(p.glob("*.txt")):
            return "dumpi"
        raise TraceError(f"{p}: directory holds no DUMPI .meta, .bin or text files")
    if not p.exists():
        raise TraceError(f"{p}: no such file")
    if p.suffix.lower() in _EXTENSIONS:
        return _EXTENSIONS[p.suffix.lower()]
    head = _head(p)
    if head.startswith(b"PK\x03\x04"):
        return "npz"
    text = head.decode("utf-8", errors="replace")
    first = next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")), "")
    if first.startswith("num_ranks"):
        return "goal"
    if first.startswith("MPI_") or "dumpi" in p.name:
        return "dumpi"
    if "OTF2" in text[:200] and "anchor" in text.lower():
        return "otf2"
    words = first.split()
    if len(words) >= 2 and (words[0].isdigit() or words[0].startswith("p")):
        return "tit"
    if len(words) == 1 and (p.parent / words[0]).exists():
        return "tit"  # an index: one per-rank file name per line
    raise TraceError(f"{p}: not a trace perfmod can read (expected one of {', '.join(FORMATS)})")


def read_trace(path: str | os.PathLike, format: str | None = None, **options: Any) -> Trace:
    """Read a trace in any format perfmod knows, detected from the file.

    Parameters
    ----------
    path : path
        A DUMPI ``.meta`` file, directory or text file; an OTF2 anchor file;
        a TIT trace or index; a GOAL schedule; a perfmod ``.npz``.
    format : str, optional
        One of :data:`FORMATS`; detected by :func:`detect_format` when not given.
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
    fmt = format or detect_format(path)
    if fmt not in _READERS:
        raise TraceError(f"{path}: unknown trace format {fmt!r}; known: {', '.join(FORMATS)}")
    return _READERS[fmt](path, **options)


def write_trace(trace: Trace, path: str | os.PathLike, format: str | None = None, **options: Any) -> Path:
    """Write ``trace`` as ``format`` (default: from the extension; ``.npz`` when there is none).

    Returns the file to read back with :func:`read_trace`: the trace file, a
    TIT index, or the OTF2 archive's anchor file.

    Raises
    ------
    TraceError
        A format perfmod cannot write (DUMPI is read-only).
    """
    p = Path(path)
    fmt = format or _EXTENSIONS.get(p.suffix.lower(), "npz")
    if fmt not in _WRITERS:
        raise TraceError(f"{p}: cannot write format {fmt!r}; writable: {', '.join(_WRITERS)}")
    return Path(_WRITERS[fmt](trace, p, **options))
