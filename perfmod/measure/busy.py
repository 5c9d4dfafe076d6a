"""Is the machine quiet enough to measure?  Sample what other processes use before a measuring study starts.

A measuring study run beside other work does not fail: its runs are flagged
as disturbed (:mod:`perfmod.measure.validity`), the statistics over clean
runs come out NaN and its figures empty, and the reason is deep in the
executed notebook.  :func:`wait_until_quiet` looks first: it samples the CPU
time of every process on the host for a few seconds (``/proc`` through
psutil), takes out this process and its children, and compares the rest --
other processes' share of the machine's cores -- with a limit.  Above it, it
waits (bounded) for the machine to calm down, then stops with
:class:`MachineBusy`, whose message names the share, the busiest processes
and ``--force``.  Limits (environment): ``PERFMOD_BUSY_SHARE`` (default
0.25 of the cores), ``PERFMOD_BUSY_WAIT`` (seconds to wait, default 120),
``PERFMOD_BUSY_SAMPLE`` (seconds per sample, default 3).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Load", "MachineBusy", "sample_load", "wait_until_quiet"]


class MachineBusy(RuntimeError):
    """Other processes use more of the machine than a measurement tolerates (the message says how to go on)."""


@dataclass(frozen=True)
class Load:
    """What the machine did during one sample."""

    seconds: float  #: length of the sample
    cores: int  #: logical CPUs
    others: float  #: cores' worth of CPU time used by other processes (busy time minus ours), per second
    loadavg: float  #: 1-minute load average at the end
    busiest: list[tuple[int, str, float]] = field(default_factory=list)  #: (pid, name, cores) of other processes

    @property
    def share(self) -> float:
        """Other processes' share of the machine (0 to 1)."""
        return self.others / self.cores

    def text(self) -> str:
        """One line: the share, the load average and the busiest processes."""
        top = ", ".join(f"{name} (pid {pid}) {c:.0%}" for pid, name, c in self.busiest[:3])
        return (f"other processes used {self.others:.2f} of {self.cores} cores ({self.share:.0%}) over "
                f"{self.seconds:g} s, load average {self.loadavg:.2f}" + (f"; busiest: {top}" if top else ""))


def _busy(t: object) -> float:
    return sum(getattr(t, k, 0.0) for k in ("user", "nice", "system", "irq", "softirq", "steal"))


def _process_times() -> dict[int, tuple[str, float]]:
    import psutil

    out = {}
    for p in psutil.process_iter(["name", "cpu_times"]):
        ct = p.info["cpu_times"]
        if ct is not None:
            out[p.pid] = (p.info["name"] or "?", ct.user + ct.system)
    return out


def sample_load(seconds: float = 3.0) -> Load:
    """CPU time used by processes other than this one and its children over ``seconds``."""
    import psutil

    me = psutil.Process()
    t0, procs0 = psutil.cpu_times(), _process_times()
    time.sleep(seconds)
    t1, procs1 = psutil.cpu_times(), _process_times()
    mine = {me.pid} | {c.pid for c in me.children(recursive=True)}
    used = {pid: (name, cpu - procs0[pid][1]) for pid, (name, cpu) in procs1.items() if pid in procs0}
    ours = sum(d for pid, (_, d) in used.items() if pid in mine)
    cores = psutil.cpu_count() or 1
    others = min(max(_busy(t1) - _busy(t0) - ours, 0.0) / seconds, cores)  # sampling jitter: at most all
    busiest = sorted(((pid, name, d / seconds) for pid, (name, d) in used.items() if pid not in mine and d > 0),
                     key=lambda x: -x[2])
    return Load(seconds, cores, others, os.getloadavg()[0], busiest)


def wait_until_quiet(what: str, force: bool = False, max_share: float | None = None, wait: float | None = None,
                     seconds: float | None = None, say: Callable[[str], None] | None = None) -> Load:
    """Sample the machine; while other processes use more than ``max_share`` of it, wait (at most ``wait`` s).

    Returns the last sample once the machine is quiet, or at once with ``force`` (saying it measures beside
    the others).  Raises :class:`MachineBusy` when the machine stayed busy for ``wait`` seconds.
    """
    max_share = float(os.environ.get("PERFMOD_BUSY_SHARE", 0.25)) if max_share is None else max_share
    wait = float(os.environ.get("PERFMOD_BUSY_WAIT", 120)) if wait is None else wait
    seconds = float(os.environ.get("PERFMOD_BUSY_SAMPLE", 3)) if seconds is None else seconds
    say = say or (lambda m: print(m, file=sys.stderr, flush=True))
    start, said = time.monotonic(), False
    while True:
        load = sample_load(seconds)
        if load.share <= max_share:
            return load
        if force:
            say(f"{what}: measuring beside other work (--force): {load.text()}; its runs may be flagged")
            return load
        if time.monotonic() - start >= wait:
            raise MachineBusy(
                f"{what} measures this machine, but it is busy: {load.text()}, above {max_share:.0%} for "
                f"{time.monotonic() - start:.0f} s of waiting. Its runs would be flagged as disturbed and its "
                "results NaN. Stop that work and rerun, or give --force to measure anyway (the runs are flagged).")
        if not said:
            say(f"{what}: waiting up to {wait:.0f} s for the machine to calm down ({load.text()})")
            said = True
