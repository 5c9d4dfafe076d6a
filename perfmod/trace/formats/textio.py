"""Helpers shared by the text trace readers and writers (DUMPI, TIT, GOAL).

Errors name ``file:line`` and the field; numbers are parsed exactly where
the format allows (decimal seconds to integer nanoseconds without a float).
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from perfmod.trace.core import Call, Trace, TraceError

__all__ = ["FormatError", "alltoallv_recv_bytes", "decimal_ns", "gc_paused", "numbered_lines", "rank_of_path"]


class FormatError(TraceError):
    """Malformed trace text; the message starts with ``file:line:`` (``file:`` where ``line`` < 0: a file without
    lines, such as LogGOPSim's binary schedules) and names the field."""

    def __init__(self, path: str | os.PathLike, line: int, message: str) -> None:
        self.path, self.line = str(path), int(line)
        super().__init__(f"{path}:{line}: {message}" if self.line >= 0 else f"{path}: {message}")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (the exporters make millions of strings and small lists, no cycles).

    With it running, each full collection rescans every line made so far:
    ``write_goal`` of 1.5 M events took 38 s instead of 22 s on a loaded VM.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_DECIMAL = re.compile(r"^(\d+)(?:\.(\d*))?$")


def decimal_ns(text: str, path: str | os.PathLike, line: int, field: str) -> int:
    """Integer nanoseconds of a non-negative decimal number of seconds (``"12.000000345"``).

    The digits are split at the point and combined as integers, so no value
    is rounded through a float; more than 9 decimals is an error.
    """
    m = _DECIMAL.match(text)
    if not m:
        raise FormatError(path, line, f"{field}: {text!r} is not a decimal number of seconds")
    frac = m.group(2) or ""
    if len(frac) > 9:
        raise FormatError(path, line, f"{field}: {text!r} has more than 9 decimals (finer than 1 ns)")
    return int(m.group(1)) * 1_000_000_000 + int(frac.ljust(9, "0"))


def numbered_lines(path: str | os.PathLike, complete: bool = False) -> Iterator[tuple[int, str]]:
    """``(line number, text without the newline)`` of a text file; a missing file names itself.

    With ``complete=True`` a last line without its newline is an error: a
    file cut in the middle of a line (an interrupted copy or trace run) would
    otherwise read as a shorter, valid-looking line (``... 1000`` as ``... 1``).
    """
    p = Path(path)
    try:
        fh = p.open("r", encoding="utf-8", errors="strict", newline="")
    except OSError as err:
        raise TraceError(f"{path}: cannot open trace file: {err.strerror or err}") from None
    with fh:
        try:
            for n, text in enumerate(fh, start=1):
                if complete and not text.endswith(("\n", "\r")) and text.strip():
                    raise FormatError(path, n, f"the last line {text[:60]!r} has no newline: the file is cut in "
                                      "the middle of a line (truncated copy or run?); add the newline if the line "
                                      "is complete")
                yield n, text.rstrip("\r\n")
        except UnicodeDecodeError as err:
            raise TraceError(f"{path}: not a text trace (byte {err.start} is not UTF-8); binary traces need "
                             "converting first (e.g. dumpi2ascii)") from None


_RANK_SUFFIX = re.compile(r"[-_.](\d+)$")


def rank_of_path(path: str | os.PathLike) -> int | None:
    """The rank a per-rank file name ends with (``dumpi-2020.04.03-0007.txt`` -> 7), or None."""
    m = _RANK_SUFFIX.search(Path(path).stem)
    return int(m.group(1)) if m else None


def alltoallv_recv_bytes(trace: Trace) -> dict[int, list[int]]:
    """Receive counts (bytes from each rank of the communicator) of every ALLTOALLV event.

    The k-th ALLTOALLV of every member of a communicator is one call; the
    bytes member ``v`` receives from member ``j`` are what ``j`` sends to
    ``v`` (its ``aux[v]``).  Linear in events: one pass per communicator
    and call number.
    """
    ev = np.flatnonzero(trace.call == Call.ALLTOALLV)
    out: dict[int, list[int]] = {}
    if not ev.size:
        return out
    comm = trace.comm[ev]
    for c in np.unique(comm).tolist():
        mine = ev[comm == c]
        members = trace.comm_ranks(c)
        size = members.size
        by_rank = np.searchsorted(mine, trace.rank_ptr[members])  # first event of each member
        n_of = np.searchsorted(mine, trace.rank_ptr[members + 1]) - by_rank
        if np.any(n_of != n_of[0]):
            j = int(np.flatnonzero(n_of != n_of[0])[0])
            few, many = (j, 0) if n_of[j] < n_of[0] else (0, j)
            i = int(mine[by_rank[many]])
            raise TraceError(f"{trace._at(i)}: rank {int(members[few])} makes fewer MPI_Alltoallv calls on "
                             f"communicator {c} than rank {int(members[many])}")
        cols = np.arange(size)
        for k in range(int(n_of[0])):
            e = mine[by_rank + k]  # the k-th call of each member, in member order
            sent = trace.aux[trace.aux_ptr[e][:, None] + cols[None, :]]  # sent[j, v]: member j to member v
            for v, i in enumerate(e.tolist()):
                out[i] = sent[:, v].tolist()
    return out
