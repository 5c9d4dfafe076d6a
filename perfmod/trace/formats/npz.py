"""perfmod's own trace file: the columns of a :class:`~perfmod.trace.core.Trace` in one ``.npz``.

The file holds every column of the layout (:mod:`perfmod.trace.core`) as a
NumPy array under its own name (optional columns only when present),
``comm_<id>`` arrays for the communicators, and a JSON header
(``format``, ``version``, ``nprocs``, ``other_names``, ``source``, ``meta``).
Integer nanosecond times stay integers.  Files are written to a temporary
name and renamed (:func:`perfmod.core.io.atomic_path`); reading validates the
trace and names the file in every error (the loaded trace's ``source`` is
the file; the source it was saved from is kept as ``meta["saved_from"]``).
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from perfmod.trace.core import COLUMNS, OPTIONAL_COLUMNS, Trace, TraceError
from perfmod.trace.formats.registry import TraceFormat
from perfmod.trace.requests import validate_trace

__all__ = ["FORMAT", "VERSION", "TRACE_FORMAT", "write_npz", "read_npz"]

FORMAT = "perfmod-trace"
VERSION = 1


def write_npz(trace: Trace, path: str | os.PathLike, overwrite: bool = True) -> Path:
    """Write ``trace`` to ``path`` (``.npz``, uncompressed: fast for millions of events).

    Returns the path written.
    """
    header = {"format": FORMAT, "version": VERSION, "nprocs": trace.nprocs, "other_names": list(trace.other_names),
              "source": trace.source, "meta": dict(trace.meta)}
    arrays = {name: getattr(trace, name) for name in COLUMNS}
    arrays |= {name: getattr(trace, name) for name in OPTIONAL_COLUMNS if getattr(trace, name) is not None}
    arrays |= {"aux_ptr": trace.aux_ptr, "aux": trace.aux}
    arrays |= {f"comm_{int(k)}": np.asarray(v, dtype=np.int64) for k, v in trace.comms.items()}
    text = json.dumps(header, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
    arrays["header"] = np.frombuffer(text.encode(), dtype=np.uint8)
    dest = Path(path)
    from perfmod.core.io import atomic_path  # here: reading traces starts without xarray

    with atomic_path(dest, overwrite=overwrite) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
    return dest


def read_npz(path: str | os.PathLike, validate: bool = True) -> Trace:
    """Read a trace written by :func:`write_npz`.

    Raises
    ------
    TraceError
        Not a perfmod trace file, an unknown version, a missing or
        mistyped column, or a trace that fails validation; the message
        names the file.
    """
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(4)
    except OSError as err:
        raise TraceError(f"{p}: cannot read: {err.strerror or err}") from None
    if not head:
        raise TraceError(f"{p}: empty file (0 bytes): not a perfmod trace file (an interrupted write?)")
    if head != b"PK\x03\x04":  # np.load would try a pickle or a .npy here, with messages about neither
        raise TraceError(f"{p}: not a perfmod trace file: an .npz is a zip archive, this file starts with "
                         f"{head!r}")
    try:
        with np.load(p, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, KeyError, NotImplementedError, zipfile.BadZipFile, zlib.error) as err:
        raise TraceError(f"{p}: not a perfmod trace file (damaged zip archive: {type(err).__name__}: "
                         f"{err})") from None
    if "header" not in data:
        raise TraceError(f"{p}: not a perfmod trace file (no header)")
    try:
        header = json.loads(data.pop("header").tobytes().decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TraceError(f"{p}: header: {err}") from None
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        raise TraceError(f"{p}: header: format {header.get('format')!r} version {header.get('version')!r}; "
                         f"expected {FORMAT!r} version {VERSION}")
    missing = [k for k in (*COLUMNS, "aux_ptr", "aux") if k not in data]
    if missing:
        raise TraceError(f"{p}: missing columns {missing}")
    comms = {int(k[5:]): v for k, v in data.items() if k.startswith("comm_")}
    cols = {k: data[k] for k in (*COLUMNS, "aux_ptr", "aux")}
    opt = {k: data.get(k) for k in OPTIONAL_COLUMNS}
    meta = dict(header.get("meta") or {})
    if header.get("source"):
        meta.setdefault("saved_from", header["source"])
    trace = Trace(int(header["nprocs"]), **cols, **opt, comms=comms, other_names=tuple(header["other_names"]),
                  source=str(p), meta=meta)
    if validate:
        validate_trace(trace)  # errors start with the file name (the trace's source)
    return trace


TRACE_FORMAT = TraceFormat(
    name="npz", files="perfmod's own `.npz`", extensions=(".npz",),
    guess_can_open=lambda path, head: head.startswith(b"PK\x03\x04"),  # a zip archive
    read=read_npz, write=write_npz, module=__name__)
