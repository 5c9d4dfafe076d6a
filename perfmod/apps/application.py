"""What an application module declares: :class:`Application` (and its communication :class:`Phase`\\ s).

Each module of :mod:`perfmod.apps` ends with one ``APPLICATION = Application(...)``;
:mod:`perfmod.apps.registry` registers them and answers every lookup by name
(:func:`~perfmod.apps.registry.exchange`, :func:`~perfmod.apps.registry.kmodel_counts`,
:func:`~perfmod.apps.registry.app_kernels`, :func:`~perfmod.apps.registry.analytic_comm`,
:func:`perfmod.apps.traces.synthetic`); :func:`~perfmod.apps.registry.register_application` adds one
from outside perfmod.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Application", "Phase"]


@dataclass(frozen=True)
class Phase:
    """One modelled communication phase of an iteration.

    Parameters
    ----------
    name : str
        E.g. ``"halo"``, ``"forward"``.
    options : mapping
        Decomposition options that select this phase's messages (e.g. ``{"phase": "reverse"}``); they
        override the caller's options of the same name.
    sequential : bool
        The phase runs as rounds, one per swap (a message's round is its position among its sender's
        messages); otherwise every receive and send is posted and then all are waited for (paper 000
        Listing 1).
    optional : bool
        A synthetic trace leaves it out when asked to (``synthetic(..., reverse=False)``).
    """

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    sequential: bool = False
    optional: bool = False


@dataclass(frozen=True)
class Application:
    """An application by name: its decomposition, kernel counts, communication phases and synthetic iteration.

    Parameters
    ----------
    name : str
        The name every lookup takes (lower case).
    decompose : callable, optional
        ``decompose(nprocs, **options) -> Exchange``: the halo exchange; ``None`` for an application
        without one (its synthetic iteration is allreduces only).
    kernel_counts : callable, optional
        ``kernel_counts(**size) -> list[KernelCounts]``: one iteration's kernels; ``None`` when not modelled.
    phases : tuple of Phase
        The modelled communication phases of one iteration, in order (each an :class:`Exchange` of
        ``decompose``); the analytic communication time sums them and a synthetic trace posts them.
    allreduces : int
        Allreduces at the end of each iteration of a synthetic trace.
    module : str
        The declaring module.
    """

    name: str
    decompose: Callable[..., Any] | None
    kernel_counts: Callable[..., Any] | None
    phases: tuple[Phase, ...]
    allreduces: int
    module: str = ""

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.lower():
            raise ValueError(f"application name must be non-empty lower case, got {self.name!r}")
        if self.phases and self.decompose is None:
            raise ValueError(f"application {self.name!r}: phases need a decompose function")
        if int(self.allreduces) < 0:
            raise ValueError(f"application {self.name!r}: allreduces must be >= 0, got {self.allreduces}")
