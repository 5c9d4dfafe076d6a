"""The measuring lock (issue 13 item 4)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfmod.measure.lock import LOCK_ENV, lock_path, main, measuring_lock

HOLD = ("import sys, time\nfrom perfmod.measure.lock import measuring_lock\n"
        "with measuring_lock(shared=sys.argv[2] == 'shared', path=sys.argv[1]):\n"
        "    print('held', flush=True)\n    time.sleep(float(sys.argv[3]))\n")


def _holder(path: Path, mode: str, seconds: float) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(path), mode, str(seconds)], stdout=subprocess.PIPE,
                         text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


def test_exclusive_lock_waits_for_another_process(tmp_path: Path) -> None:
    path = tmp_path / ".measure.lock"
    p = _holder(path, "exclusive", 1.0)
    try:
        with pytest.raises(TimeoutError, match=r"held by another process \(pid \d+"):
            with measuring_lock(path=path, timeout=0.2, quiet=True):
                pass
        with pytest.raises(TimeoutError):
            with measuring_lock(path=path, shared=True, timeout=0.2, quiet=True):
                pass
        t0 = time.monotonic()
        with measuring_lock(path=path, timeout=10, quiet=True):
            assert time.monotonic() - t0 > 0.3  # got it once the holder exited
    finally:
        p.wait()


def test_shared_holders_coexist_but_exclude_a_measurement(tmp_path: Path) -> None:
    path = tmp_path / ".measure.lock"
    p = _holder(path, "shared", 1.0)
    try:
        with measuring_lock(path=path, shared=True, timeout=0.2, quiet=True):
            pass
        with pytest.raises(TimeoutError):
            with measuring_lock(path=path, timeout=0.2, quiet=True):
                pass
    finally:
        p.wait()


def test_lock_is_reentrant_and_inherited(tmp_path: Path) -> None:
    path = tmp_path / ".measure.lock"
    with measuring_lock(path=path) as held:
        assert os.environ[LOCK_ENV] == str(held.resolve())
        with measuring_lock(path=path, timeout=0.1):  # the same process again: no wait
            pass
        # a child that sees the variable does not lock again (it would wait for its parent)
        code = ("from perfmod.measure.lock import measuring_lock\n"
                f"with measuring_lock(path={str(path)!r}, timeout=0.5): print('ok')")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
        assert out.stdout.strip() == "ok"
    assert LOCK_ENV not in os.environ


def test_command_line_runs_the_command_holding_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFMOD_LOCK_FILE", str(tmp_path / ".measure.lock"))
    assert lock_path() == tmp_path / ".measure.lock"
    code = f"import os; assert os.environ[{LOCK_ENV!r}].endswith('.measure.lock')"
    assert main(["--", sys.executable, "-c", code]) == 0
    assert main(["--shared", "--", sys.executable, "-c", "raise SystemExit(3)"]) == 3
    with pytest.raises(SystemExit):
        main([])


def test_the_lock_is_one_per_host_outside_any_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two checkouts (two data directories) and a sweep take the same file; the variable overrides it."""
    monkeypatch.delenv("PERFMOD_LOCK_FILE", raising=False)
    monkeypatch.setenv("PERFMOD_DATA", str(tmp_path / "a"))
    first = lock_path()
    monkeypatch.setenv("PERFMOD_DATA", str(tmp_path / "b"))
    assert lock_path() == first and not first.is_relative_to(tmp_path)
    assert not first.is_relative_to(Path(__file__).parents[1])  # not in the checkout
    if Path("/run/lock").is_dir() and os.access("/run/lock", os.W_OK):
        assert first == Path("/run/lock/perfmod-measure.lock")
    monkeypatch.setenv("PERFMOD_LOCK_FILE", str(tmp_path / "mine.lock"))
    assert lock_path() == tmp_path / "mine.lock"
