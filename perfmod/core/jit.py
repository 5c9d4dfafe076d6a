"""Say so when a first call compiles numba code (issue 23: a fresh install compiled for half a minute silently).

perfmod's kernels are ``@njit(cache=True)``: compiled once per install and
Python version, then loaded from numba's cache in well under a second.
:func:`first_call` wraps the first call of a kernel in a process and listens
to numba's own ``numba:compile`` event, which numba fires only when a
function is not in its cache (a cache hit loads without it): when the first
compilation starts, a line on stderr says what is being compiled and that it
happens once; when the block ends, a second line says how long compiling
took.  A first call that only loads the cache, however long its work, says
nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from numba.core import event

__all__ = ["first_call"]

_seen: set[str] = set()


class _CompileNotice(event.Listener):
    """A numba event listener: announces the first compilation, adds up the top-level compile time."""

    def __init__(self, what: str, out: Any) -> None:
        super().__init__()
        self.what, self.out = what, out
        self.depth, self.started, self.seconds = 0, None, 0.0

    def on_start(self, event: Any) -> None:
        if self.started is None:
            print(f"perfmod: compiling {self.what} with numba (first use on this install; cached afterwards) ...",
                  file=self.out, flush=True)
        if self.depth == 0:
            self.started = time.perf_counter()
        self.depth += 1

    def on_end(self, event: Any) -> None:
        self.depth -= 1
        if self.depth == 0 and self.started is not None:
            self.seconds += time.perf_counter() - self.started


@contextmanager
def first_call(what: str, stream: Any = None) -> Iterator[None]:
    """Announce on ``stream`` (stderr) the numba compilations that the first call of ``what`` in a process makes."""
    if what in _seen:
        yield
        return
    _seen.add(what)
    notice = _CompileNotice(what, stream if stream is not None else sys.stderr)
    with event.install_listener("numba:compile", notice):
        yield
    if notice.started is not None:
        print(f"perfmod: {what} compiled in {notice.seconds:.0f} s", file=notice.out, flush=True)
