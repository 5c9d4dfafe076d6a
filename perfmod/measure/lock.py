"""One measurement at a time on a host: an ``fcntl.flock`` lock every checkout and sweep shares.

Two measuring studies on one machine disturb each other's timings, whichever
checkout or sweep they come from, so measuring work holds an exclusive lock
on one file per host (:func:`lock_path`: ``$PERFMOD_LOCK_FILE``, else
``/run/lock/perfmod-measure.lock``, else ``$XDG_RUNTIME_DIR/perfmod/measure.lock``,
else ``<tmp>/perfmod-<uid>/measure.lock``) and work that only computes may
hold it shared:

- :func:`perfmod.measure.runner.run_mpi` takes it exclusively around every
  run (unless the process or an ancestor already holds it);
- the Makefile runs each measuring study under
  ``python -m perfmod.measure.lock -- <command>`` (exclusive for the whole
  study) and each paper-only study with ``--shared``, so ``make -j all``
  runs paper-only studies beside each other but never beside a
  measurement, and measuring studies one after another.

A process that holds the lock exports ``PERFMOD_MEASURE_LOCK=<path>``;
its children (the notebook kernel, ``mpiexec``) see it and do not try to
lock again (a second ``flock`` on a new file description would wait for
their own parent).  The lock file records who holds it; the lock itself
goes with the process (the kernel releases it when the holder exits, even
on a crash).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["LOCK_ENV", "LOCK_FILE_ENV", "lock_path", "measuring_lock", "main"]

LOCK_ENV = "PERFMOD_MEASURE_LOCK"
"""Environment variable naming the lock file while this process or an ancestor holds it."""
LOCK_FILE_ENV = "PERFMOD_LOCK_FILE"
"""Environment variable that chooses the lock file (default: one per host, :func:`lock_path`)."""

_held: dict[str, int] = {}


def lock_path() -> Path:
    """The host's measuring lock: ``$PERFMOD_LOCK_FILE``, else the first writable of
    ``/run/lock/perfmod-measure.lock`` (every user), ``$XDG_RUNTIME_DIR/perfmod/measure.lock`` and
    ``<tmp>/perfmod-<uid>/measure.lock``: outside any checkout, so two checkouts and a sweep share it."""
    env = os.environ.get(LOCK_FILE_ENV)
    if env:
        return Path(env)
    run_lock = Path("/run/lock")
    if run_lock.is_dir() and os.access(run_lock, os.W_OK | os.X_OK):
        return run_lock / "perfmod-measure.lock"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir() and os.access(runtime, os.W_OK | os.X_OK):
        return Path(runtime) / "perfmod" / "measure.lock"
    return Path(tempfile.gettempdir()) / f"perfmod-{os.getuid()}" / "measure.lock"


@contextlib.contextmanager
def measuring_lock(shared: bool = False, timeout: float | None = None, path: str | Path | None = None,
                   quiet: bool = False) -> Iterator[Path]:
    """Hold the measuring lock for the ``with`` block.

    Parameters
    ----------
    shared : bool
        Take it shared (work that computes but does not measure) instead of
        exclusive (measuring work).
    timeout : float, optional
        Seconds to wait for it; past them :class:`TimeoutError`.  Default:
        wait as long as it takes.
    path : path, optional
        The lock file (default :func:`lock_path`).
    quiet : bool
        Do not say on stderr that we are waiting.

    Yields
    ------
    Path
        The lock file.
    """
    p = Path(path) if path is not None else lock_path()
    key = str(p.resolve())
    if os.environ.get(LOCK_ENV) == key or key in _held:
        _held[key] = _held.get(key, 0) + 1
        try:
            yield p
        finally:
            _held[key] -= 1
            if not _held[key]:
                del _held[key]
        return
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o666)
        with contextlib.suppress(OSError):  # another user's measurement takes the same host-wide file
            os.fchmod(fd, 0o666)
        writable = True
    except PermissionError:  # made by another user: flock needs no write access
        fd, writable = os.open(p, os.O_RDONLY), False
    try:
        op = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        start, said = time.monotonic(), False
        while True:
            try:
                fcntl.flock(fd, op | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if timeout is not None and time.monotonic() - start > timeout:
                    raise TimeoutError(f"the measuring lock {p} is held by another process "
                                       f"({_holder(p)}) for more than {timeout:g} s") from None
                if not said and not quiet:
                    print(f"waiting for the measuring lock {p} (held by {_holder(p)})", file=sys.stderr, flush=True)
                    said = True
                time.sleep(0.2)
        if not shared and writable:
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()}: {' '.join(sys.argv)[:200]}\n".encode())
        _held[key] = 1
        old = os.environ.get(LOCK_ENV)
        os.environ[LOCK_ENV] = key
        try:
            yield p
        finally:
            _held.pop(key, None)
            if old is None:
                os.environ.pop(LOCK_ENV, None)
            else:
                os.environ[LOCK_ENV] = old
    finally:
        os.close(fd)  # releases the lock


def _holder(p: Path) -> str:
    try:
        return p.read_text().strip() or "a shared holder"
    except OSError:
        return "?"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m perfmod.measure.lock [--shared] -- command ...``: run a command holding the lock."""
    ap = argparse.ArgumentParser(description="run a command holding perfmod's measuring lock")
    ap.add_argument("--shared", action="store_true", help="shared (computing, not measuring) instead of exclusive")
    ap.add_argument("--timeout", type=float, default=None, help="seconds to wait for the lock")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="the command (after --)")
    args = ap.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command given")
    with measuring_lock(shared=args.shared, timeout=args.timeout):
        return subprocess.call(cmd)


if __name__ == "__main__":
    raise SystemExit(main())
