"""One sweep point at a time: a lock file in the point's directory (:func:`point_lock`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["point_lock"]


@contextlib.contextmanager
def point_lock(point_dir: Path) -> Iterator[int | None]:
    """Hold ``point_dir/.lock`` (``flock``, not waiting): yields its descriptor, or None when another process
    runs this point (a sweep resumed beside an earlier one that still runs).  The descriptor is passed to the
    point's ``perfmod run`` process, so the lock lasts as long as that process, even if the worker dies."""
    fd = os.open(point_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        yield fd
    finally:
        os.close(fd)
