"""A measuring study looks at the machine first: other processes' CPU share, a bounded wait, --force."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from perfmod.measure.busy import MachineBusy, sample_load, wait_until_quiet
from perfmod.workflow.cli import main

SPIN = "import time\nt = time.time()\nwhile time.time() - t < {s}:\n    pass\n"


def test_a_stranger_is_counted_and_our_own_children_are_not():
    stranger = subprocess.run(["sh", "-c", f"{sys.executable} -c '{SPIN.format(s=8)}' >/dev/null 2>&1 & echo $!"],
                              capture_output=True, text=True, check=True)
    stranger_pid = int(stranger.stdout.strip())  # its parent (sh) has exited: not our child
    child = subprocess.Popen([sys.executable, "-c", SPIN.format(s=8)])
    try:
        time.sleep(0.5)
        load = sample_load(2.0)
    finally:
        child.kill()
        child.wait()
    seen = {pid: cores for pid, _, cores in load.busiest}
    assert seen.get(stranger_pid, 0) > 0.05, load.text()
    assert child.pid not in seen
    assert 0 <= load.others <= load.cores and f"of {load.cores} cores" in load.text()


def test_a_busy_machine_stops_with_the_share_and_force_goes_on():
    with pytest.raises(MachineBusy, match=r"x measures this machine, but it is busy: other processes used .* of \d "
                                          r"cores .*give --force to measure anyway"):
        wait_until_quiet("x", max_share=-1.0, wait=0, seconds=0.2)
    said: list[str] = []
    load = wait_until_quiet("x", force=True, max_share=-1.0, wait=0, seconds=0.2, say=said.append)
    assert load.seconds == 0.2 and said and said[0].startswith("x: measuring beside other work (--force)")


def test_perfmod_run_of_a_measuring_study_stops_before_it_starts(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PERFMOD_BUSY_SHARE", "-1")
    monkeypatch.setenv("PERFMOD_BUSY_WAIT", "0")
    monkeypatch.setenv("PERFMOD_BUSY_SAMPLE", "0.2")
    assert main(["run", "local_calibration", "--out", str(tmp_path / "r"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfmod run: local_calibration measures this machine, but it is busy: other processes")
    assert "--force" in err
    assert not (tmp_path / "r").exists()  # nothing ran
