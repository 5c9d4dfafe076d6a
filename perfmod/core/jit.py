"""Say so when a first call compiles numba code (issue 23: a fresh install compiled for half a minute silently).

perfmod's kernels are ``@njit(cache=True)``: compiled once per install and
Python version, then loaded from numba's cache in well under a second.
:func:`first_call` wraps the first call of a kernel in a process: if it has
not returned after :data:`NOTICE_AFTER_S` seconds (compiling, not loading
the cache), a line on stderr says what is being compiled and that it
happens once, and a second line how long it took.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["NOTICE_AFTER_S", "first_call"]

NOTICE_AFTER_S = 5.0  #: seconds a first call may take before it is announced as compiling (loading the cache: ~1-3 s)
_seen: set[str] = set()


@contextmanager
def first_call(what: str, stream=None) -> Iterator[None]:
    """Announce on ``stream`` (stderr) a first call of ``what`` that takes longer than :data:`NOTICE_AFTER_S`."""
    if what in _seen:
        yield
        return
    _seen.add(what)
    out = stream if stream is not None else sys.stderr
    said = threading.Event()

    def notice() -> None:
        said.set()
        print(f"perfmod: compiling {what} with numba (first use on this install; cached afterwards) ...",
              file=out, flush=True)

    timer = threading.Timer(NOTICE_AFTER_S, notice)
    timer.daemon = True
    t0 = time.perf_counter()
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if said.is_set():
            print(f"perfmod: {what} compiled in {time.perf_counter() - t0:.0f} s", file=out, flush=True)
