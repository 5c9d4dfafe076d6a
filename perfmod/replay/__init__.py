"""Trace-driven, node-aware replay of MPI communication (paper 000 §2.2, §3.2).

:func:`replay` takes a :class:`perfmod.trace.Trace` and a platform and
returns the per-rank communication time with send, receive, wait,
collective and compute time broken out.

- :mod:`perfmod.replay.engine`: :func:`replay`, errors, the dataset;
- :mod:`perfmod.replay.sweeps`: :func:`sweep` over platforms and models;
- :mod:`perfmod.replay.matching`: MPI matching and collective instances;
- :mod:`perfmod.replay.costs`: message and collective times, k per phase;
- :mod:`perfmod.replay.kernel`: the compiled event loop and its timing rules;
- :mod:`perfmod.replay.loggops`: the ``loggp`` replay, LogGOPS as LogGOPSim
  computes it (:mod:`perfmod.replay.graph`: the trace as LogGOPSim's
  operation graph; :mod:`perfmod.replay.loggops_kernel`: its event loop).
"""

from __future__ import annotations

from perfmod.core.lazy import lazy_exports

__all__ = ["replay", "sweep", "ReplayError", "DeadlockError", "ReplayWarning"]

# imported on first use, so that a submodule (the GOAL -> loggp path: perfmod.replay.loggops) starts without the
# engine and its dataset libraries.  No submodule is named like a name exported here: importing it would bind the
# package attribute to the module and shadow the function (hence sweeps.py for sweep)
_WHERE = {"replay": "perfmod.replay.engine", "ReplayError": "perfmod.replay.engine",
          "DeadlockError": "perfmod.replay.engine", "ReplayWarning": "perfmod.replay.diagnostics",
          "sweep": "perfmod.replay.sweeps"}


__getattr__, __dir__ = lazy_exports(globals(), _WHERE)
