"""Helpers shared by the text trace readers and writers (DUMPI, TIT, GOAL).

Errors name ``file:line`` and the field; numbers are parsed exactly where
the format allows (decimal seconds to integer nanoseconds without a float).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from perfmod.trace.core import Call, Trace, TraceError

__all__ = ["FormatError", "alltoallv_recv_bytes", "decimal_ns", "numbered_lines", "rank_of_path"]


class FormatError(TraceError):
    """Malformed trace text; the message starts with ``file:line:`` and names the field."""

    def __init__(self, path: str | os.PathLike, line: int, message: str) -> None:
        self.path, self.line = str(path), int(line)
        super().__init__(f"{path}:{line}: {message}")


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


def numbered_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """``(line number, text without the newline)`` of a text file; a missing file names itself."""
    p = Path(path)
    try:
        fh = p.open("r", encoding="utf-8", errors="strict")
    except OSError as err:
        raise TraceError(f"{path}: cannot open trace file: {err.strerror or err}") from None
    with fh:
        try:
            for n, text in enumerate(fh, start=1):
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
    """Receive counts (bytes from each rank) of every ALLTOALLV event: the k-th call of all ranks together."""
    idx = [np.flatnonzero((trace.rank == r) & (trace.call == Call.ALLTOALLV)) for r in range(trace.nprocs)]
    out: dict[int, list[int]] = {}
    for r in range(trace.nprocs):
        for k, i in enumerate(idx[r]):
            row = []
            for j in range(trace.nprocs):
                if k >= len(idx[j]):
                    raise TraceError(f"{trace._at(int(i))}: rank {j} makes fewer MPI_Alltoallv calls than rank {r}")
                row.append(int(trace.aux_of(int(idx[j][k]))[r]))
            out[int(i)] = row
    return out
