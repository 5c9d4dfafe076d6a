"""Facts about the machine at hand that every measurement records or needs: CPU model, sockets, ``mpiexec``.

One home below both users: the runner (:mod:`perfmod.measure.runner`) and
the benchmarks (:mod:`perfmod.measure.bench`), which therefore need not
import each other's folder for them.  Standard library only, so a launched
MPI rank can import it cheaply.
"""

from __future__ import annotations

import platform as pyplatform
import sys
from pathlib import Path

__all__ = ["cpu_model", "socket_count", "mpiexec_path"]


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (or the platform module)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return pyplatform.processor() or "unknown"


def socket_count() -> int:
    """CPU sockets (physical packages) of this machine, from /sys (1 if unknown)."""
    ids = set()
    for f in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/topology/physical_package_id"):
        try:
            ids.add(f.read_text().strip())
        except OSError:
            continue
    return max(len(ids), 1)


def mpiexec_path() -> Path:
    """The ``mpiexec`` of this Python's environment (installed by the ``mpich`` wheel)."""
    path = Path(sys.executable).parent / "mpiexec"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: install perfmod's dependencies (the mpich wheel) with make setup")
    return path
