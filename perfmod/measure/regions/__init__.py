"""Region instrumentation, Eiger-schema SQLite store, exports and skeleton mode (paper 004 §III, §V)."""

from .export import callpaths, to_extrap_jsonl, to_lwperf_csv, to_xarray
from .recorder import Recorder, active_recorder, detect_rank, instrument, rapl_energy_reader, region
from .skeleton import MODES, Skeleton, SkeletonError, skeleton_function, skeleton_region, virtual_clock
from .store import EIGER_SCHEMA, MissingParameterError, RegionStore
from .virtual import NullComm, VirtualComm, run_virtual

__all__ = [
    "EIGER_SCHEMA",
    "MODES",
    "NullComm",
    "Skeleton",
    "SkeletonError",
    "VirtualComm",
    "run_virtual",
    "skeleton_function",
    "skeleton_region",
    "virtual_clock",
    "MissingParameterError",
    "Recorder",
    "RegionStore",
    "active_recorder",
    "callpaths",
    "detect_rank",
    "instrument",
    "rapl_energy_reader",
    "region",
    "to_extrap_jsonl",
    "to_lwperf_csv",
    "to_xarray",
]
