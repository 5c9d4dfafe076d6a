"""Power and energy sensors: Intel RAPL through powercap sysfs, NVIDIA NVML (paper 001 §6.4.2).

Paper 001 models the maximum power (Table 10) and the energy per tracking
iteration (Table 11, Eq. 8-11) from sensor readings (nvprof's power samples).
This module reads a *real* sensor where one exists and says plainly when none
does; it never makes numbers up.

- RAPL: ``/sys/class/powercap/intel-rapl:*`` zones (package, core, dram, ...)
  expose a cumulative ``energy_uj`` counter (microjoules) that wraps at
  ``max_energy_range_uj``.  Many systems make ``energy_uj`` readable by root
  only; a virtual machine usually has no zone at all.
- NVML: ``nvidia-ml-py`` (module ``pynvml``, imported only when asked for; not
  a dependency of perfmod) gives the board power (mW) and, on Volta and
  later, a cumulative energy counter (mJ).

:func:`probe` tells which sensors are usable; :func:`measure` runs a callable
and returns the energy per zone, the elapsed time and the mean and maximum
power over sampling intervals (a background thread samples the counters).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

__all__ = ["POWERCAP", "RaplZone", "SensorStatus", "EnergyResult", "rapl_zones", "read_rapl", "rapl_delta",
           "nvml_status", "probe", "measure"]

POWERCAP = Path("/sys/class/powercap")


@dataclass(frozen=True)
class RaplZone:
    """One RAPL zone: its directory, name (``package-0``, ``dram``, ...) and counter range (J)."""

    path: Path
    name: str
    max_range_j: float

    @property
    def label(self) -> str:
        """``<directory>/<name>``, unique across zones."""
        return f"{self.path.name}/{self.name}"


@dataclass(frozen=True)
class SensorStatus:
    """Whether a kind of sensor can be read here, and why not if it cannot."""

    kind: str
    available: bool
    reason: str
    zones: tuple[str, ...] = ()


@dataclass
class EnergyResult:
    """Energy (J) per zone over a run, elapsed time (s), mean and maximum power (W) over samples."""

    sensor: str
    seconds: float
    energy_j: dict[str, float]
    mean_power_w: dict[str, float]
    max_power_w: dict[str, float]
    samples: int
    value: Any = None
    notes: list[str] = field(default_factory=list)


def _read_number(path: Path) -> float:
    try:
        text = path.read_text().strip()
    except PermissionError:
        raise PermissionError(f"{path} is not readable by this user (RAPL counters are often root-only)") from None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{path}: expected a number, got {text[:40]!r}") from None


def rapl_zones(root: str | Path = POWERCAP) -> list[RaplZone]:
    """RAPL zones under ``root`` (``intel-rapl:N`` and sub-zones ``intel-rapl:N:M``), sorted by directory."""
    root = Path(root)
    if not root.is_dir():
        return []
    zones = []
    for d in sorted(root.glob("intel-rapl:*")):
        if not (d / "energy_uj").exists():
            continue
        name = (d / "name").read_text().strip() if (d / "name").exists() else d.name
        rng = _read_number(d / "max_energy_range_uj") if (d / "max_energy_range_uj").exists() else float("inf")
        zones.append(RaplZone(d, name, rng * 1e-6))
    return zones


def read_rapl(zones: list[RaplZone]) -> dict[str, float]:
    """Current cumulative energy (J) of every zone."""
    return {z.label: _read_number(z.path / "energy_uj") * 1e-6 for z in zones}


def rapl_delta(before: float, after: float, max_range_j: float) -> float:
    """Energy (J) between two counter readings, allowing for one wrap-around at ``max_range_j``."""
    d = after - before
    return d + max_range_j if d < 0 else d


def nvml_status() -> SensorStatus:
    """Whether NVML (``pynvml`` from nvidia-ml-py) can read a GPU's power here."""
    try:
        import pynvml  # noqa: PLC0415  (optional, imported only when asked for)
    except ImportError:
        return SensorStatus("nvml", False, "pynvml (nvidia-ml-py) is not installed")
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return SensorStatus("nvml", False, f"NVML could not start: {exc}")
    try:
        n = pynvml.nvmlDeviceGetCount()
        names = tuple(f"gpu{i}" for i in range(n))
    finally:
        pynvml.nvmlShutdown()
    return SensorStatus("nvml", n > 0, f"{n} GPU(s)" if n else "NVML reports no GPU", names)


def probe(root: str | Path = POWERCAP) -> list[SensorStatus]:
    """Status of the RAPL and NVML sensors on this machine."""
    out = []
    try:
        zones = rapl_zones(root)
        if not zones:
            out.append(SensorStatus("rapl", False, f"no intel-rapl zone under {root}"))
        else:
            read_rapl(zones)
            out.append(SensorStatus("rapl", True, f"{len(zones)} zone(s)", tuple(z.label for z in zones)))
    except (PermissionError, ValueError, OSError) as exc:
        out.append(SensorStatus("rapl", False, str(exc)))
    out.append(nvml_status())
    return out


def _nvml_reader() -> tuple[Callable[[], dict[str, float]], Callable[[], None]]:
    import pynvml  # noqa: PLC0415

    pynvml.nvmlInit()
    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]

    def read() -> dict[str, float]:  # power (W) per GPU
        return {f"gpu{i}": pynvml.nvmlDeviceGetPowerUsage(h) * 1e-3 for i, h in enumerate(handles)}
    return read, pynvml.nvmlShutdown


def measure(fn: Callable[[], Any], interval: float = 0.05, sensor: str = "auto",
            root: str | Path = POWERCAP) -> EnergyResult:
    """Run ``fn()`` while sampling a power sensor every ``interval`` seconds.

    Parameters
    ----------
    fn : callable
        The work to measure; its return value is kept in ``EnergyResult.value``.
    interval : float
        Sampling interval (s) for the mean and maximum power.
    sensor : {"auto", "rapl", "nvml"}
        Which sensor; "auto" takes RAPL if readable, else NVML.
    root : path
        The powercap directory (a fake tree in tests).

    Raises
    ------
    RuntimeError
        No usable sensor: the message gives the reason of every kind tried.
    """
    status = {s.kind: s for s in probe(root)} if sensor == "auto" else None
    kind = sensor
    if sensor == "auto":
        kind = next((k for k in ("rapl", "nvml") if status[k].available), "")
        if not kind:
            raise RuntimeError("no power sensor: " + "; ".join(f"{s.kind}: {s.reason}" for s in status.values()))
    if kind == "rapl":
        zones = rapl_zones(root)
        if not zones:
            raise RuntimeError(f"no power sensor: no intel-rapl zone under {root}")
        ranges = {z.label: z.max_range_j for z in zones}
        read = lambda: read_rapl(zones)  # noqa: E731
        close: Callable[[], None] = lambda: None  # noqa: E731
    elif kind == "nvml":
        read, close = _nvml_reader()
    else:
        raise ValueError(f"sensor must be 'auto', 'rapl' or 'nvml', got {sensor!r}")
    samples: list[tuple[float, dict[str, float]]] = []
    stop = threading.Event()

    def sampler() -> None:
        while not stop.wait(interval):
            samples.append((time.perf_counter(), read()))
    samples.append((time.perf_counter(), read()))
    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    try:
        value = fn()
    finally:
        stop.set()
        th.join()
        samples.append((time.perf_counter(), read()))
        close()
    seconds = samples[-1][0] - samples[0][0]
    keys = samples[0][1].keys()
    if kind == "rapl":
        energy = {k: sum(rapl_delta(a[1][k], b[1][k], ranges[k]) for a, b in pairwise(samples))
                  for k in keys}
        peaks = {k: max((rapl_delta(a[1][k], b[1][k], ranges[k]) / (b[0] - a[0])
                         for a, b in pairwise(samples) if b[0] > a[0]), default=0.0) for k in keys}
    else:  # power samples (W): trapezoidal energy
        energy = {k: sum((a[1][k] + b[1][k]) / 2 * (b[0] - a[0]) for a, b in pairwise(samples))
                  for k in keys}
        peaks = {k: max(s[1][k] for s in samples) for k in keys}
    mean = {k: energy[k] / seconds if seconds > 0 else 0.0 for k in keys}
    return EnergyResult(kind, seconds, energy, mean, peaks, len(samples), value)
