"""Activation of the one object a module's hot path consults (region recorder, skeleton).

:func:`~perfmod.measure.regions.recorder.region` and
:func:`~perfmod.measure.regions.skeleton.skeleton_region` look up "the active
recorder" / "the active skeleton" on every call, so that an instrumented
program runs unchanged with none.  Each such module keeps its active object
in a module-level variable (a global read is the cheapest lookup) and owns an
:class:`ActiveSlot` that writes it; classes that can be active derive from
:class:`Activatable`, which gives them ``start``/``stop`` and the context
manager protocol.  Activations nest: ``stop`` restores the object that was
active before ``start``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

__all__ = ["ActiveSlot", "Activatable"]


class ActiveSlot:
    """The active object of one module.

    Parameters
    ----------
    publish : callable
        Called with the new active object (or ``None``) on every change; it
        stores it where the module's hot path reads it (a module global).
    """

    __slots__ = ("current", "_publish")

    def __init__(self, publish: Callable[[Any], None]) -> None:
        self.current: Any = None
        self._publish = publish

    def activate(self, obj: Any) -> Any:
        """Make ``obj`` active; returns the object it replaces (``None`` if none)."""
        previous, self.current = self.current, obj
        self._publish(obj)
        return previous

    def deactivate(self, obj: Any, previous: Any) -> None:
        """Restore ``previous`` if ``obj`` is still the active object (else leave the slot as it is)."""
        if self.current is obj:
            self.current = previous
            self._publish(previous)


class Activatable:
    """Base of objects that become a module's active one: ``start``/``stop`` and ``with obj:``.

    Subclasses set the class attribute ``_slot`` (an :class:`ActiveSlot`) and may
    override :meth:`_before_stop` (e.g. to flush buffered data).
    """

    _slot: ClassVar[ActiveSlot]
    _previous: Any = None

    def start(self) -> Any:
        """Make this the active object (the previous one is restored by :meth:`stop`)."""
        self._previous = self._slot.activate(self)
        return self

    def stop(self) -> None:
        """Run :meth:`_before_stop`, then deactivate (even if it raised)."""
        try:
            self._before_stop()
        finally:
            self._slot.deactivate(self, self._previous)

    def _before_stop(self) -> None:
        """Work done by :meth:`stop` before deactivating (subclasses)."""

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> bool:
        self.stop()
        return False
