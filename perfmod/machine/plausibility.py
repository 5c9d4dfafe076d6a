"""Plausibility of a platform's communication parameters: values outside physical ranges and their likely unit.

A platform file holds SI units (s, s/B, B/s).  A value typed in the unit a
paper or a vendor sheet uses is still a positive number, so validation
accepts it, and a model then predicts nonsense without a word (``beta =
12.5`` is 12.5 s per byte; ``alpha = 7.59`` is 7.59 s per message).
:func:`implausible` names each value outside the range any interconnect
has had -- latencies (``alpha``, LogGP ``L``, ``o``, ``g``) from 1 ns to
10 ms, inverse bandwidths (``beta``, ``G``) from 1e-13 s/B (10 TB/s) to
1e-5 s/B (100 kB/s), bandwidths (``r_cb``, ``r_ci``) from 100 kB/s to 10 TB/s
-- with the unit mistake it looks like; :func:`perfmod.machine.platforms.load`
warns with each (:class:`PlatformWarning`).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["PlatformWarning", "RANGES", "implausible"]

#: kind -> (low, high, SI unit)
RANGES: dict[str, tuple[float, float, str]] = {
    "latency": (1e-9, 1e-2, "s"),
    "inverse_bandwidth": (1e-13, 1e-5, "s/B"),
    "bandwidth": (1e5, 1e13, "B/s"),
}
_KIND = {"alpha": "latency", "L": "latency", "o": "latency", "g": "latency", "beta": "inverse_bandwidth",
         "G": "inverse_bandwidth", "r_cb": "bandwidth", "r_ci": "bandwidth"}


class PlatformWarning(UserWarning):
    """A platform parameter outside its physical range (names the file, the field and the likely unit)."""


def _latency_hint(v: float) -> str:
    if 1e-2 < v <= 1e4:
        return f"it looks like microseconds ({v:g} us is {v * 1e-6:.3g} s)"
    if v > 1e4:
        return f"it looks like nanoseconds ({v:g} ns is {v * 1e-9:.3g} s)"
    return "it is below any interconnect's latency"


def _inverse_bandwidth_hint(v: float) -> str:
    if 1e-2 <= v <= 1e4:
        return f"it looks like a bandwidth in GB/s ({v:g} GB/s is beta = {1 / (v * 1e9):.3g} s/B)"
    if 1e5 <= v:
        return f"it looks like a bandwidth in B/s ({v:g} B/s is beta = {1 / v:.3g} s/B)"
    if 1e-5 < v < 1e-2:
        return f"it looks like seconds per kilobyte or more ({v:g} s/kB is {v / 1e3:.3g} s/B)"
    return "it is faster than any interconnect"


def _bandwidth_hint(v: float) -> str:
    if 1e-2 <= v <= 1e4:
        return f"it looks like GB/s ({v:g} GB/s is {v * 1e9:.3g} B/s)"
    if v < 1e-2:
        return f"it looks like an inverse bandwidth in s/B ({v:g} s/B is {1 / v:.3g} B/s)" if v > 0 else \
            "zero bandwidth"
    if 1e4 < v < 1e5:
        return f"it looks like MB/s ({v:g} MB/s is {v * 1e6:.3g} B/s)"
    return "it is faster than any interconnect"


_HINTS = {"latency": _latency_hint, "inverse_bandwidth": _inverse_bandwidth_hint, "bandwidth": _bandwidth_hint}


def implausible(comm: Mapping[tuple[str, str, str], object], where: str) -> list[str]:
    """One message per parameter of ``comm`` (a platform's ``comm``) outside its physical range.

    Zero is left alone where the model allows it (LogGP's ``o``, ``g``, ``G``
    may be 0); standard errors (``*_se``) and N/A entries are not checked.
    """
    out = []
    for (model, mode, proto), entry in comm.items():
        if not isinstance(entry, Mapping):
            continue
        for name, value in entry.items():
            kind = _KIND.get(name)
            if kind is None or value == 0:
                continue
            low, high, unit = RANGES[kind]
            if not low <= value <= high:
                out.append(f"{where}: comm.{model}.{mode}.{proto}.{name} = {value:g} {unit} is outside "
                           f"[{low:g}, {high:g}] {unit}: {_HINTS[kind](float(value))}")
    return out
