"""The three paper applications by name: halo exchanges, K counts, kernel tables, analytic communication.

Paper: Choi et al., ICS 2020 (paper 000) (Choi et al., ICS 2020).

Each application is one module (:mod:`perfmod.apps.jacobi2d`, :mod:`perfmod.apps.minife`,
:mod:`perfmod.apps.minimd`, :mod:`perfmod.apps.allreduce`) that declares an
:class:`~perfmod.apps.application.Application` (decomposition, kernel counts, communication phases,
synthetic iteration); this module registers them in a loop and looks them up by name, and
:func:`register_application` adds one from outside perfmod.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd

from perfmod.apps import allreduce, jacobi2d, minife, minimd
from perfmod.apps.application import Application
from perfmod.apps.exchange import Exchange
from perfmod.core.checks import positive_int
from perfmod.machine.platforms import Platform, as_platform
from perfmod.models.comm.kmodel import KCounts, phase_counts
from perfmod.models.comm.network import Network, bind
from perfmod.models.comm.phase import phase_time
from perfmod.models.roofline.metrics import kernel_table

__all__ = [
    "UnknownApplication",
    "register_application",
    "application",
    "applications",
    "exchange",
    "kmodel_counts",
    "app_counts",
    "app_kernels",
    "analytic_comm",
]


class UnknownApplication(ValueError, KeyError):
    """No registered application of that name has what the lookup needs (a ValueError and a KeyError)."""

    __str__ = ValueError.__str__


_APPS: dict[str, Application] = {}


def register_application(app: Application, replace: bool = False) -> Application:
    """Add ``app`` to the registry; its name is then known to every lookup of this module and to
    :func:`perfmod.apps.traces.synthetic`.

    Raises
    ------
    ValueError
        Not an :class:`Application`, or its name is taken (unless ``replace``).
    """
    if not isinstance(app, Application):
        raise ValueError(f"register_application takes an Application, got {type(app).__name__}")
    if app.name in _APPS and not replace:
        raise ValueError(f"application {app.name!r} is already registered (by {_APPS[app.name].module})")
    _APPS[app.name] = app
    return app


for _module in (jacobi2d, minife, minimd, allreduce):
    register_application(_module.APPLICATION)


def applications(needs: str | None = None) -> tuple[str, ...]:
    """Names of the registered applications, sorted; ``needs`` keeps those whose attribute of that name
    (``"decompose"``, ``"kernel_counts"``) is given."""
    return tuple(sorted(n for n, a in _APPS.items() if needs is None or getattr(a, needs) is not None))


def application(app: str, needs: str | None = None) -> Application:
    """The registered :class:`Application` called ``app`` (case-insensitive) that has ``needs``.

    Raises
    ------
    UnknownApplication
        A ValueError and a KeyError naming the known applications (those with ``needs``).
    """
    found = _APPS.get(str(app).lower())
    if found is None or (needs is not None and getattr(found, needs) is None):
        raise UnknownApplication(f"unknown app {app!r}; known apps: {', '.join(applications(needs))}")
    return found


def exchange(app: str, nprocs: int, **options: Any) -> Exchange:
    """The halo exchange of ``app`` (a registered application with a decomposition) at ``nprocs`` ranks.

    Raises
    ------
    ValueError
        Unknown app (the message lists the known ones) or bad ``nprocs``.
    """
    return application(app, "decompose").decompose(nprocs, **options)


def _rpn_of(platform: Any, ranks_per_node: int | None) -> int:
    if ranks_per_node is not None:
        return positive_int("ranks_per_node", ranks_per_node)
    if platform is None:
        raise ValueError("give a platform (name or object with ranks_per_node) or ranks_per_node")
    platform = as_platform(platform)
    if not hasattr(platform, "ranks_per_node"):
        raise ValueError(f"platform {platform!r} has no ranks_per_node")
    return positive_int("ranks_per_node", platform.ranks_per_node)

def kmodel_counts(
    app: Any,
    platform: Any = None,
    nprocs: int | None = None,
    mapping: str = "block",
    ranks_per_node: int | None = None,
    k_total_rule: str = "kprime_x_stencil",
    **options: Any,
) -> KCounts:
    """K_inter, K_total, k' and k of an application's halo exchange (paper 000 §3.1, Table 5).

    Parameters
    ----------
    app : str or Exchange
        ``"jacobi2d"``, ``"minife"``, ``"minimd"`` (see
        :mod:`perfmod.apps`) or a prepared
        :class:`perfmod.apps.exchange.Exchange`.
    platform : str, Platform-like or None
        A platform name (loaded with :func:`perfmod.machine.platforms.load`) or any
        object with ``ranks_per_node``; it supplies k' unless
        ``ranks_per_node`` is given.
    nprocs : int
        Number of ranks (must match an Exchange's, when given with one).
    mapping : {"block", "round_robin"}
        Rank placement (:func:`node_of`).
    ranks_per_node : int, optional
        Overrides the platform's ranks per node (what-if).
    k_total_rule : {"kprime_x_stencil", "counted", "kprime_x_maxneighbours"}
        Default ``"kprime_x_stencil"``: K_total = k' x the application's
        maximum neighbour count (Jacobi2D 4, MiniFE 26, MiniMD 6).  This is
        how §3.1 computes its example ("K_total = 4 x 6 = 24") and the only
        rule that gives all nine K_total values of Table 5: ``"counted"``
        gives 6 instead of 8 for Jacobi2D on Bridges (a 3 x 2 non-periodic
        grid: at most 3 neighbours per rank) and 138 instead of 156 for
        MiniFE on Summit (no node of the 256-rank run sends 156 messages);
        ``"kprime_x_maxneighbours"`` (k' x the largest neighbour count of
        any rank in the configuration) gives 6 instead of 8 for Jacobi2D on
        Bridges.  The counted maximum is always kept as ``k_total_counted``.
    **options
        Passed to the decomposition (e.g. ``periodic=True``, ``block=...``).

    Returns
    -------
    KCounts

    Raises
    ------
    ValueError
        ``nprocs`` or ``ranks_per_node`` not a positive integer, unknown app
        (the message lists the known ones), unknown mapping or rule.
    """
    from perfmod.apps.exchange import Exchange
    if isinstance(app, Exchange):
        if options:
            raise ValueError(f"options {sorted(options)} apply to an app name, not to a prepared Exchange")
        if nprocs is not None and positive_int("nprocs", nprocs) != app.nprocs:
            raise ValueError(f"nprocs={nprocs} differs from the Exchange's {app.nprocs}")
        ex = app
    else:
        if nprocs is None:
            raise ValueError("nprocs must be a positive integer, got None")
        ex = exchange(app, positive_int("nprocs", nprocs), **options)
    rpn = _rpn_of(platform, ranks_per_node)
    return phase_counts(ex, rpn, mapping=mapping, k_total_rule=k_total_rule)


def app_counts(app: str, **size: int) -> pd.DataFrame:
    """The counts of :class:`KernelCounts` for ``app`` as a table (one row per kernel)."""
    counts = application(app, "kernel_counts").kernel_counts(**size)
    return pd.DataFrame([asdict(c) for c in counts]).set_index("kernel")

def app_kernels(app: str, **size: int) -> pd.DataFrame:
    """Kernel metric table of ``app`` per iteration (totals over the iteration's invocations).

    Parameters
    ----------
    app : str
        A registered application with kernel counts (``"jacobi2d"``, ``"minife"``, ``"minimd"``).
    **size
        ``block`` (Jacobi2D), ``box`` (MiniFE) or ``cells`` (MiniMD); the
        paper's sizes by default.

    Returns
    -------
    pandas.DataFrame
        A kernel table (:mod:`perfmod.models.roofline.metrics`); ``count`` is the
        invocations per iteration; ``attrs["source"]`` names the counts.
    """
    rows = {c.kernel: c.row() for c in application(app, "kernel_counts").kernel_counts(**size)}
    out = kernel_table(rows, source=f"perfmod.apps.kernels algorithmic counts ({app}, {size or 'paper sizes'})")
    out["reference_time"] = np.nan
    return out


def analytic_comm(
    app: str,
    platform: Platform | str | Network,
    nprocs: int,
    model: str = "kmodel",
    overlap: str = "serial",
    **options: Any,
) -> float:
    """Analytic communication time per iteration (s) of ``app`` on ``nprocs`` ranks.

    The sum over the app's communication phases (:attr:`Application.phases
    <perfmod.apps.application.Application.phases>`) of the slowest rank's phase
    time (:func:`perfmod.models.comm.phase.phase_time` on the network bound
    once here; the model's k rule counts k from each phase's own message list).
    ``options`` go to :func:`perfmod.apps.registry.exchange` (problem sizes).
    """
    net = bind(platform, model)
    total = 0.0
    for phase in application(app, "decompose").phases:
        ex = exchange(app, nprocs, **{**options, **phase.options})
        total += float(phase_time(ex, net, model=net.model.name, overlap=overlap)["t_phase"])
    return total
