"""A clear error before a large allocation that cannot fit (issue 23: a replay too large for the machine
should say so up front, not be killed halfway or swap)."""

from __future__ import annotations

import os

import numpy as np

__all__ = ["MemoryShortError", "available_bytes", "check_fits", "index_dtype"]


class MemoryShortError(MemoryError):
    """The work would need more memory than the machine has available."""


def available_bytes() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` (Linux), or free physical pages elsewhere; None if unknown.

    ``PERFMOD_MEMORY_BYTES`` overrides it (a budget smaller than the machine, or tests).
    """
    env = os.environ.get("PERFMOD_MEMORY_BYTES")
    if env:
        return int(env)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(nbytes: float, what: str) -> None:
    """Raise :class:`MemoryShortError` if ``nbytes`` (an estimate) exceed the available memory."""
    have = available_bytes()
    if have is not None and nbytes > have:
        raise MemoryShortError(f"{what} needs about {_size(nbytes)}, {_size(have)} are available "
                               "(PERFMOD_MEMORY_BYTES sets a budget)")


def _size(n: float) -> str:
    """Bytes as GiB (one decimal) from 1 GiB, MiB from 1 MiB, else bytes."""
    if n >= 2**30:
        return f"{n / 2**30:.1f} GiB"
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{int(n):,} B"


def index_dtype(n: int) -> np.dtype:
    """int32 if every index from -2 to ``n`` fits (event indices and their -1, -2 flags), else int64.

    Half the memory of int64 for traces of fewer than 2,147,483,647 events.
    """
    return np.dtype(np.int32) if n < 2**31 - 1 else np.dtype(np.int64)
