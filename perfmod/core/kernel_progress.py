"""The progress of a compiled kernel that runs without the GIL: a thread reads a counter the kernel writes.

A numba kernel compiled with ``nogil=True`` lets other Python threads run
while it works; it counts its progress in a one-element int64 array, and
:func:`polled` shows that count every ``every`` seconds (and once more at
the end) through a callback, e.g. a progress bar's postfix.  Reading the
counter while the kernel writes it is safe: one aligned 8-byte word.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

__all__ = ["polled"]


@contextmanager
def polled(counter: np.ndarray, show: Callable[[int], None], every: float = 0.5) -> Iterator[None]:
    """Call ``show(int(counter[0]))`` every ``every`` seconds while the block runs, and once when it ends."""
    if counter.shape != (1,) or counter.dtype != np.int64:
        raise ValueError(f"the counter is a one-element int64 array, not {counter.dtype} {counter.shape}")
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(every):
            show(int(counter[0]))

    thread = threading.Thread(target=poll, name="perfmod-kernel-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        show(int(counter[0]))
