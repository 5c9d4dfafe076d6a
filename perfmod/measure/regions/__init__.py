"""Region instrumentation, Eiger-schema SQLite store and exports (paper 004 §V)."""

from .export import callpaths, to_extrap_jsonl, to_lwperf_csv, to_xarray
from .recorder import Recorder, active_recorder, detect_rank, instrument, rapl_energy_reader, region
from .store import EIGER_SCHEMA, MissingParameterError, RegionStore

__all__ = [
    "EIGER_SCHEMA",
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
