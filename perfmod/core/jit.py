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

__all__ = ["first_call"]

_seen: set[str] = set()


_listener: Any = None


def _notice_class() -> Any:
    """The numba event listener that announces the first compilation and adds up the top-level compile time
    (defined once, on first use: importing this module does not import numba)."""
    global _listener
    if _listener is not None:
        return _listener
    from numba.core import event

    class _CompileNotice(event.Listener):
        def __init__(self, what: str, out: Any) -> None:
            super().__init__()
            self.what, self.out = what, out
            self.depth, self.started, self.seconds = 0, None, 0.0

        def on_start(self, event: Any) -> None:
            if self.started is None:
                print(f"perfmod: compiling {self.what} with numba (first use on this install; cached afterwards) "
                      "...", file=self.out, flush=True)
            if self.depth == 0:
                self.started = time.perf_counter()
            self.depth += 1

        def on_end(self, event: Any) -> None:
            self.depth -= 1
            if self.depth == 0 and self.started is not None:
                self.seconds += time.perf_counter() - self.started

    _listener = _CompileNotice
    return _listener


@contextmanager
def first_call(what: str, stream: Any = None) -> Iterator[None]:
    """Announce on ``stream`` (stderr) the numba compilations that the first call of ``what`` in a process makes."""
    if what in _seen or "numba" not in sys.modules:  # without numba loaded nothing compiles (ahead-of-time kernels)
        yield
        return
    _seen.add(what)
    from numba.core import event

    notice = _notice_class()(what, stream if stream is not None else sys.stderr)
    with event.install_listener("numba:compile", notice):
        yield
    if notice.started is not None:
        print(f"perfmod: {what} compiled in {notice.seconds:.0f} s", file=notice.out, flush=True)
