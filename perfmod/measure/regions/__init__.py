"""Region instrumentation, Eiger-schema SQLite store, exports and skeleton mode (paper 004 §III, §V).

The names below are imported on first use (PEP 562): an instrumented MPI
program that only records regions loads the recorder and the SQLite store,
not the exports (xarray) or the virtual-rank replay (the trace layer, numba),
so each launched rank starts in a fraction of the time.
"""

from __future__ import annotations

from perfmod.core.lazy import lazy_exports

_WHERE = {
    **dict.fromkeys(("callpaths", "to_extrap_jsonl", "to_lwperf_csv", "to_xarray"), "export"),
    **dict.fromkeys(("Recorder", "active_recorder", "detect_rank", "instrument", "rapl_energy_reader", "region"),
                    "recorder"),
    **dict.fromkeys(("MODES", "Skeleton", "skeleton_function", "skeleton_region", "virtual_clock"), "skeleton"),
    "SkeletonError": "modelcall",
    **dict.fromkeys(("EIGER_SCHEMA", "MissingParameterError", "RegionStore"), "store"),
    **dict.fromkeys(("NullComm", "VirtualComm", "run_virtual"), "virtual"),
}

_WHERE = {name: f"{__name__}.{module}" for name, module in _WHERE.items()}
__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_exports(globals(), _WHERE)
