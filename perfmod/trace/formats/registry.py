"""The trace format registry: each format module declares one :class:`TraceFormat`; this module keeps them.

A format is what xarray's ``BackendEntrypoint`` and Extra-P's ``FileReader``
make of a file type: a name, the file extensions it owns, a content sniffer
(xarray's ``guess_can_open``), a reader and, when perfmod can write it, a
writer.  :mod:`perfmod.trace.formats` registers the built-in formats (one
declaration per module, ``TRACE_FORMAT``) and then any object published by an
installed package under the entry-point group ``perfmod.trace_formats``; a
session registers its own with :func:`register_format`.  :func:`read_trace`,
:func:`write_trace`, :func:`detect_format`, ``perfmod replay --help`` and the
format table of the docs (:func:`format_table`) all read this registry.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "TraceFormat",
    "register_format",
    "unregister_format",
    "trace_formats",
    "trace_format",
    "format_of_extension",
    "format_table",
    "first_line",
    "ENTRY_POINT_GROUP",
]

ENTRY_POINT_GROUP = "perfmod.trace_formats"  #: entry-point group whose objects are :class:`TraceFormat` declarations


@dataclass(frozen=True)
class TraceFormat:
    """One trace file format.

    Parameters
    ----------
    name : str
        The ``format=`` of :func:`read_trace` and :func:`write_trace`.
    files : str
        What a user hands to :func:`read_trace` (a short phrase for the CLI help and the docs).
    extensions : tuple of str
        Lower-case suffixes (with the dot) that name this format without reading the file; one
        extension belongs to one format.
    guess_can_open : callable
        ``guess_can_open(path, head) -> bool``: whether a file (or directory) whose extension names no
        format is this format; ``head`` is the file's first 4 KiB (``b""`` for a directory).
    read : callable
        ``read(path, **options) -> Trace``.
    write : callable, optional
        ``write(trace, path, **options) -> path`` of the file to read back; ``None`` when read-only.
    module : str
        The module that declares the format (the docs table names it).
    magic : bytes, optional
        Bytes that open every file of this format: a file opening with them is this format whatever its
        extension (LogGOPSim's binary schedules are ``.bin`` files, as DUMPI's are).
    """

    name: str
    files: str
    extensions: tuple[str, ...]
    guess_can_open: Callable[[Path, bytes], bool]
    read: Callable[..., Any]
    write: Callable[..., Any] | None = None
    module: str = ""
    magic: bytes = b""

    def __post_init__(self) -> None:
        if not self.name or not self.name.isidentifier():
            raise ValueError(f"trace format name must be an identifier, got {self.name!r}")
        bad = [e for e in self.extensions if not (e.startswith(".") and e == e.lower())]
        if bad:
            raise ValueError(f"trace format {self.name!r}: extensions must be lower-case and start with '.', "
                             f"got {bad}")


def first_line(head: bytes, comments: tuple[str, ...] = ("#",)) -> str:
    """The first line of ``head`` that is neither blank nor a comment (starts with one of ``comments``),
    stripped (for sniffers)."""
    text = head.decode("utf-8", errors="replace")
    return next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith(comments)), "")


_FORMATS: dict[str, TraceFormat] = {}
_plugins_loaded = False
#: the built-in formats' modules, in the order content sniffing tries them; each declares ``TRACE_FORMAT``.  They
#: are imported when the registry is first used, not with the package: reading a GOAL schedule for the LogGOPS
#: replay (:mod:`perfmod.trace.formats.goal_scan`) imports none of them (nor numba, which some compile with)
BUILTINS = ("npz", "goal_trace", "dumpi_bin", "otf2", "tit")
_builtins_loaded = False


def _load_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    import importlib

    for name in BUILTINS:
        fmt = importlib.import_module(f"perfmod.trace.formats.{name}").TRACE_FORMAT
        if fmt.name not in _FORMATS:
            register_format(fmt)


def register_format(fmt: TraceFormat, replace: bool = False) -> TraceFormat:
    """Add ``fmt`` to the registry (after those registered before it: content sniffing tries them in order).

    Raises
    ------
    ValueError
        ``fmt`` is not a :class:`TraceFormat`, or its name or one of its extensions is taken by another
        format (unless ``replace`` and the name is the same).
    """
    _load_builtins()
    if not isinstance(fmt, TraceFormat):
        raise ValueError(f"register_format takes a TraceFormat, got {type(fmt).__name__}")
    if fmt.name in _FORMATS and not replace:
        raise ValueError(f"trace format {fmt.name!r} is already registered (by {_FORMATS[fmt.name].module})")
    for other in _FORMATS.values():
        taken = set(other.extensions) & set(fmt.extensions)
        if other.name != fmt.name and taken:
            raise ValueError(f"trace format {fmt.name!r}: extension {sorted(taken)[0]} belongs to {other.name!r}")
    _FORMATS[fmt.name] = fmt
    return fmt


def unregister_format(name: str) -> TraceFormat:
    """Remove the format called ``name`` from the registry and return it (KeyError, naming it, if unknown)."""
    _load_builtins()
    if name not in _FORMATS:
        raise KeyError(f"trace format {name!r} is not registered")
    return _FORMATS.pop(name)


def _load_plugins() -> None:
    """Register the formats that installed packages publish under :data:`ENTRY_POINT_GROUP` (once)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        fmt = ep.load()
        if fmt.name not in _FORMATS:  # a built-in or an explicit registration keeps its name
            register_format(fmt)


def trace_formats() -> tuple[TraceFormat, ...]:
    """Every registered format, in the order content sniffing tries them."""
    _load_builtins()
    _load_plugins()
    return tuple(_FORMATS.values())


def trace_format(name: str, path: str | os.PathLike = "", writing: bool = False) -> TraceFormat:
    """The format called ``name``; ``writing`` also requires a writer.

    Raises
    ------
    TraceError
        No such format (or it cannot be written); the message names ``path`` and the known formats.
    """
    from perfmod.trace.core import TraceError

    fmt = {f.name: f for f in trace_formats()}.get(name)
    if fmt is None:
        raise TraceError(f"{path}: unknown trace format {name!r}; known: {', '.join(f.name for f in trace_formats())}")
    if writing and fmt.write is None:
        writable = ", ".join(f.name for f in trace_formats() if f.write is not None)
        raise TraceError(f"{path}: cannot write format {name!r}; writable: {writable}")
    return fmt


def format_of_extension(suffix: str) -> TraceFormat | None:
    """The format that owns the extension ``suffix`` (e.g. ``".otf2"``), or None."""
    return next((f for f in trace_formats() if suffix.lower() in f.extensions), None)


def format_table() -> str:
    """The registered formats as a Markdown table (docs/usage.md holds it; a test checks it is current)."""
    rows = ["| format | files | extensions | writes | module |", "| --- | --- | --- | --- | --- |"]
    for f in trace_formats():
        ext = ", ".join(f"`{e}`" for e in f.extensions) or "(by content)"
        rows.append(f"| `{f.name}` | {f.files} | {ext} | {'yes' if f.write else 'no'} | `{f.module}` |")
    return "\n".join(rows)
