"""Region instrumentation, Eiger-schema SQLite store, exports and skeleton mode (paper 004 §III, §V).

The names below are imported on first use (PEP 562): an instrumented MPI
program that only records regions loads the recorder and the SQLite store,
not the exports (xarray) or the virtual-rank replay (the trace layer, numba),
so each launched rank starts in a fraction of the time.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    **dict.fromkeys(("callpaths", "to_extrap_jsonl", "to_lwperf_csv", "to_xarray"), "export"),
    **dict.fromkeys(("Recorder", "active_recorder", "detect_rank", "instrument", "rapl_energy_reader", "region"),
                    "recorder"),
    **dict.fromkeys(("MODES", "Skeleton", "skeleton_function", "skeleton_region", "virtual_clock"), "skeleton"),
    "SkeletonError": "modelcall",
    **dict.fromkeys(("EIGER_SCHEMA", "MissingParameterError", "RegionStore"), "store"),
    **dict.fromkeys(("NullComm", "VirtualComm", "run_virtual"), "virtual"),
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
