"""perfmod: performance models of parallel and GPU applications.

The library holds the models; the notebooks in ``notebooks/`` reproduce the
validation studies of the papers and run the same methods on the machine at
hand.  The package is layered (``docs/architecture.md``): :mod:`perfmod.core`,
:mod:`perfmod.machine`, :mod:`perfmod.trace`, :mod:`perfmod.models`,
:mod:`perfmod.apps`, :mod:`perfmod.replay`, :mod:`perfmod.measure`,
:mod:`perfmod.viz`, :mod:`perfmod.studies`, :mod:`perfmod.workflow`.

The names below are the curated public API, grouped as in :data:`API`: every
layer but :mod:`perfmod.studies`, whose modules are used whole
(``perfmod.studies.<study>``, one per study notebook or shared table).  They
are imported on first use, so ``import perfmod`` stays cheap (MPI ranks
started by the benchmarks import it too).
"""

from __future__ import annotations

from perfmod.core.lazy import lazy_exports
from perfmod.core.version import __version__

#: Group -> {public name: module that defines it}.
API: dict[str, dict[str, str]] = {
    "data": {
        "read_dataset": "perfmod.core.io",
        "write_dataset": "perfmod.core.io",
        "read_table": "perfmod.core.paperdata",
    },
    "machine": {
        "load_platform": "perfmod.machine.platforms:load",
        "Platform": "perfmod.machine.platforms",
        "read_devices": "perfmod.machine.devices",
    },
    "traces": {
        "Trace": "perfmod.trace.core",
        "TraceBuilder": "perfmod.trace.builder",
        "TraceError": "perfmod.trace.core",
        "read_trace": "perfmod.trace.formats",
        "write_trace": "perfmod.trace.formats",
        "trace_formats": "perfmod.trace.formats",
        "register_format": "perfmod.trace.formats",
        "record": "perfmod.trace.recorder",
    },
    "models": {
        "message_time": "perfmod.models.comm.message",
        "collective_time": "perfmod.models.comm.collectives",
        "phase_time": "perfmod.models.comm.phase",
        "fit_protocols": "perfmod.models.comm.fitting",
        "calibrate": "perfmod.models.comm.calibration",
        "qroof_time": "perfmod.models.roofline.qroof",
        "predict_kernels": "perfmod.models.roofline.predict:predict",
        "lm": "perfmod.models.regression.linear",
        "fit_bsp": "perfmod.models.bsp",
        "end_to_end": "perfmod.models.endtoend",
    },
    "apps": {
        "exchange": "perfmod.apps.registry",
        "kmodel_counts": "perfmod.apps.registry",
        "app_kernels": "perfmod.apps.registry",
        "register_application": "perfmod.apps.registry",
        "synthetic": "perfmod.apps.traces",
        "extrapolate_trace": "perfmod.apps.extrapolate.trust",
    },
    "replay": {
        "replay_trace": "perfmod.replay.engine:replay",
        "replay_sweep": "perfmod.replay.sweeps:sweep",
    },
    "measure": {
        "run_pingpong": "perfmod.measure.bench.pingpong",
        "run_mpi": "perfmod.measure.runner",
    },
    "viz": {
        "plot_validation": "perfmod.viz.validation",
    },
    "workflow": {
        "run_notebook": "perfmod.workflow.notebooks",
    },
}

_WHERE = {name: target for group in API.values() for name, target in group.items()}

__all__ = ["__version__", "API", *_WHERE]


__getattr__, __dir__ = lazy_exports(globals(), _WHERE)
