"""A trace recorder whose event times are on a skeleton's virtual clock (paper 004 §V step 7)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from perfmod.trace.recorder import Recorder as TraceRecorder

if TYPE_CHECKING:
    from perfmod.measure.regions.skeleton import Skeleton

__all__ = ["SkeletonTraceRecorder"]


class SkeletonTraceRecorder(TraceRecorder):
    """A trace recorder whose event times are on a skeleton's virtual clock.

    :meth:`columns` (and so ``save``/``gather``) shifts every event by the
    modeled time of the regions skipped before it; ``columns("lower")`` and
    ``columns("upper")`` use the interval bounds of the modeled calls instead.

    Parameters
    ----------
    world : mpi4py communicator
        The communicator the trace's ranks are numbered in.
    skeleton : Skeleton
        The skeleton whose virtual clock stamps the events.
    """

    def __init__(self, world: Any, skeleton: Skeleton) -> None:
        super().__init__(world)
        self.skeleton = skeleton
        skeleton.attach(self)

    def columns(self, variant: str = "predicted") -> dict[str, np.ndarray]:
        """This rank's events as arrays, times shifted onto the virtual clock (ns)."""
        cols = super().columns()
        shift = self.skeleton.event_offsets(len(self.events), variant)
        if self.skeleton.clock == "modeled":
            cols["t_entry"] = shift.copy()
            cols["t_exit"] = shift
        else:
            cols["t_entry"] = cols["t_entry"] + shift
            cols["t_exit"] = cols["t_exit"] + shift
        return cols
