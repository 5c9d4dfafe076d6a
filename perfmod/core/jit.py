"""Say so when a first call compiles numba code (issue 23: a fresh install compiled for half a minute silently);
name numba's compiled code for ``perf`` (:func:`perf_map`).

perfmod's kernels are ``@njit(cache=True)``: compiled once per install and
Python version, then loaded from numba's cache in well under a second.
:func:`first_call` wraps the first call of a kernel in a process and listens
to numba's own ``numba:compile`` event, which numba fires only when a
function is not in its cache (a cache hit loads without it): when the first
compilation starts, a line on stderr says what is being compiled and that it
happens once; when the block ends, a second line says how long compiling
took.  A first call that only loads the cache, however long its work, says
nothing.

Linux ``perf`` names the code it samples from the ELF files it was loaded
from; numba's JIT (compiling, or loading its cache) puts perfmod's kernels
in anonymous memory, so a profile of a replay shows bare addresses.
:func:`perf_map` writes the map ``perf`` reads for such code
(``/tmp/perf-<pid>.map``): call it once the kernels have run, and
``perf report`` names them.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["first_call", "perf_map"]

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
                print(f"perfmod: compiling {self.what} with numba (first use on this install, or since its sources "
                      "changed; cached afterwards) ...", file=self.out, flush=True)
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


def _symbol(mangled: str) -> str:
    """A numba function's dotted name from its mangled one: ``_ZN7perfmod6replay3_runB4v153...`` ->
    ``perfmod.replay._run`` (``cpython.`` for its Python wrapper); the name as it is where it is not numba's."""
    prefix, rest = "", mangled
    for wrapper in ("cpython.", "cfunc."):
        if rest.startswith(wrapper):
            prefix, rest = wrapper, rest[len(wrapper):]
    if not rest.startswith("_ZN"):
        return mangled
    rest = rest[3:]
    parts = []
    while (m := re.match(r"(\d+)", rest)) is not None:
        n = int(m.group(1))
        parts.append(rest[m.end():m.end() + n])
        rest = rest[m.end() + n:]
    return prefix + ".".join(parts) if parts else mangled


def _dispatchers() -> list:
    """The module-level numba functions (``@njit`` dispatchers) of every loaded module, each once."""
    from numba.core.registry import CPUDispatcher

    out, seen = [], set()
    for module in list(sys.modules.values()):
        for obj in list(getattr(module, "__dict__", {}).values()):
            if isinstance(obj, CPUDispatcher) and id(obj) not in seen:
                seen.add(id(obj))
                out.append(obj)
    return out


def perf_map(path: str | Path | None = None) -> Path:
    """Write the perf map of the numba functions compiled or loaded in this process; returns its path.

    ``path`` defaults to ``/tmp/perf-<pid>.map``, where ``perf report`` looks for the names of code it found in
    no file (one line per function: start address and size in hex, name).  Every function of each compiled
    specialization of a module-level ``@njit`` function is listed (the kernels it calls are compiled into it,
    so they are named too), by its dotted name (``perfmod.replay.loggops_kernel._run``), each one's size the
    distance to the next function.  Use: run the work once, call ``perf_map()``, keep the process alive or
    run the profiled work after it in the same process, then ``perf record -p <pid>`` or
    ``perf record python script.py`` and ``perf report``.  It reads numba's code libraries (numba 0.60 and
    later); nothing is written where numba is not loaded.
    """
    if "numba" not in sys.modules:
        raise RuntimeError("numba is not loaded in this process: no compiled code to name")
    found: dict[int, str] = {}
    dispatchers = _dispatchers()
    for obj in dispatchers:
        for cres in list(obj.overloads.values()):
            lib = cres.library
            for ll_module in (getattr(lib, "_final_module", None), getattr(lib, "_shared_module", None)):
                for fn in getattr(ll_module, "functions", ()):
                    if fn.is_declaration:
                        continue
                    address = lib.get_pointer_to_function(fn.name)
                    if address:
                        found.setdefault(int(address), _symbol(fn.name))
    if not found and any(obj.overloads for obj in dispatchers):
        import numba

        raise RuntimeError(f"numba {numba.__version__} compiled functions here, but perf_map found no code in their "
                           "libraries: this numba keeps them where perf_map does not look")
    out = Path(path) if path is not None else Path(f"/tmp/perf-{os.getpid()}.map")
    starts = sorted(found)
    with open(out, "w") as fh:
        for a, b in zip(starts, [*starts[1:], None], strict=True):
            size = min(b - a, 1 << 20) if b is not None else 4096
            fh.write(f"{a:x} {size:x} {found[a]}\n")
    return out
