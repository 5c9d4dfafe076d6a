"""Starting light: type tests that do not import the dataset libraries, and a package's names imported on first use.

The GOAL -> ``loggp`` replay (:func:`perfmod.replay.loggops.goal_finish_times`)
starts in the time LogGOPSim's own tools take, which leaves no room for
xarray and pandas; code on that path that accepts their objects as well as
arrays asks :func:`is_xarray`, which is False without importing xarray when
nothing has imported it (then no object can be one).

:func:`lazy_exports` gives a package the module ``__getattr__`` and ``__dir__``
(PEP 562) that import each exported name from its module when first asked for.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["is_xarray", "lazy_exports"]


def is_xarray(*objs: Any) -> bool:
    """True if any of ``objs`` is an xarray ``DataArray`` or ``Dataset`` (xarray is not imported for this)."""
    xr = sys.modules.get("xarray")
    return xr is not None and any(isinstance(x, xr.DataArray | xr.Dataset) for x in objs)


def lazy_exports(namespace: dict[str, Any], where: Mapping[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``.

    ``where`` maps each exported name to ``"module"`` (the name is that module's attribute of the same
    name) or ``"module:attribute"``.  A name is imported when first asked for and then bound in the
    package, so later look-ups do not come back here.
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        target = where.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = target.partition(":")
        value = getattr(importlib.import_module(module), attr or name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__
