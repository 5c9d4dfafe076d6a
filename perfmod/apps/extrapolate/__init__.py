"""Extrapolating MPI traces of SPMD stencil programs from small runs to larger rank counts.

- :mod:`.training`: reading and checking the training traces, their
  parameters, skeleton and process grid;
- :mod:`.generate`: building the trace at the target rank count from the
  largest training trace (rank classes, peers as grid offsets, computation
  gaps per call site);
- :mod:`.imbalance`: each target rank's own computation level per call site
  and its start-up skew, fitted on the training traces;
- :mod:`.trust`: :func:`extrapolate_trace` with its leave-one-scale-out
  validation.
"""

from perfmod.apps.extrapolate.training import ExtrapolationError, command_params
from perfmod.apps.extrapolate.trust import (
    FAR_FACTOR,
    ExtrapolationWarning,
    compare_traces,
    extrapolate_trace,
    message_stats,
)

__all__ = ["extrapolate_trace", "compare_traces", "message_stats", "command_params", "ExtrapolationError",
           "ExtrapolationWarning", "FAR_FACTOR"]
