"""Starting without the dataset libraries: type tests that do not import them.

The GOAL -> ``loggp`` replay (:func:`perfmod.replay.loggops.goal_finish_times`)
starts in the time LogGOPSim's own tools take, which leaves no room for
xarray and pandas; code on that path that accepts their objects as well as
arrays asks :func:`is_xarray`, which is False without importing xarray when
nothing has imported it (then no object can be one).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["is_xarray"]


def is_xarray(*objs: Any) -> bool:
    """True if any of ``objs`` is an xarray ``DataArray`` or ``Dataset`` (xarray is not imported for this)."""
    xr = sys.modules.get("xarray")
    return xr is not None and any(isinstance(x, xr.DataArray | xr.Dataset) for x in objs)
