"""An iteration of allreduces only: the synthetic trace of collectives without a halo exchange.

:func:`perfmod.apps.traces.synthetic` gives ``allreduces`` (default 1) allreduces of
``allreduce_bytes`` per iteration; there is no decomposition and no kernel table.
"""

from __future__ import annotations

from perfmod.apps.application import Application

__all__ = ["APPLICATION"]

APPLICATION = Application(name="allreduce", decompose=None, kernel_counts=None, phases=(), allreduces=1,
                          module=__name__)
