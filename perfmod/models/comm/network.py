"""A platform bound to a communication model and a rank mapping, once (paper 000 §2.1, §3.1, §3.2).

:class:`Network` is what every pricing function below the public entry
points takes: :func:`~perfmod.models.comm.message.message_time`,
:func:`~perfmod.models.comm.phase.phase_time`, the collectives, the apps'
analytic communication and the replay (costs, LogGOPS, sweeps) each bind
one from "a platform or its name" and "a model name" at their entry, and
hand it down.  When it is built it

- resolves the platform (:func:`perfmod.machine.platforms.as_platform`) and
  the model's registry entry (:func:`perfmod.models.comm.registry.comm_model`);
- resolves, for every mode and protocol, the formula and its parameters:
  the model's table, or its ``derive`` where the platform has no numbers
  (LogGP from the postal parameters), or the postal model where the
  paper's table says "N/A (Apply postal model)" (``NotAvailable.fallback``);
  a cell that has none (N/A for another reason, or absent) keeps the
  :class:`~perfmod.machine.platforms.ParameterNotAvailable` error and
  raises it when a message of that cell is priced;
- takes the model's k rule (:mod:`perfmod.models.comm.krules`) as behaviour.

Pricing is vectorized over message sizes (NumPy arrays and xarray objects
broadcast, as in :mod:`perfmod.models.comm.models`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from perfmod.core.lazy import is_xarray
from perfmod.machine.mapping import MAPPINGS, pair_modes
from perfmod.machine.platforms import (
    MODES,
    PROTOCOLS,
    NotAvailable,
    ParameterNotAvailable,
    Platform,
    as_platform,
)
from perfmod.models.comm.krules import KRule, k_rule
from perfmod.models.comm.models import check_sizes, evaluate
from perfmod.models.comm.registry import CommModel, comm_model

__all__ = ["Network", "bind", "Cell"]

#: Node layout fields a bound network may change without resolving its cells again (what-if studies).
LAYOUT_FIELDS = ("ranks_per_node", "sockets_per_node", "gpus_per_socket", "nodes")


@dataclasses.dataclass(frozen=True)
class Cell:
    """One mode and protocol of a bound model: its formula and parameters, or why it has none."""

    formula: Any = None
    params: dict[str, float] = dataclasses.field(default_factory=dict)
    model: str = ""  # the model whose formula it is (the fallback's name where the paper says so)
    error: str = ""  # ParameterNotAvailable message where there is no formula


def _resolve(platform: Platform, spec: CommModel, mode: str, protocol: str) -> Cell:
    """The cell of ``spec`` at (mode, protocol), applying the derivation and the paper's postal fallback."""
    try:
        if spec.derive is not None and not platform.has(spec.table, mode, protocol):
            return Cell(spec.forms[protocol], dict(spec.derive(platform, mode, protocol)), spec.name)
        entry = platform.entry(spec.table, mode, protocol)
    except ParameterNotAvailable as exc:
        return Cell(error=str(exc))
    if isinstance(entry, NotAvailable):
        if entry.fallback is not None:
            return _resolve(platform, comm_model(entry.fallback), mode, protocol)
        return Cell(error=f"platform {platform.name!r}: no {spec.table} parameters for mode {mode!r}, protocol "
                          f"{protocol!r}: {entry.reason} ({entry.source})")
    return Cell(spec.forms[protocol], {n: entry[n] for n in spec.param_names(protocol)}, spec.name)


class Network:
    """A platform, a communication model and a rank mapping, resolved once (see the module docstring).

    Parameters
    ----------
    platform : Platform or str
        A platform or its name (:func:`perfmod.machine.platforms.load`).
    model : str or CommModel
        A registered model name (:func:`perfmod.models.comm.registry.model_names`) or its entry.
    mapping : {"block", "round_robin"}
        Rank placement on nodes.
    nprocs : int, optional
        Ranks in the job; gives the node count a round-robin mapping needs.

    Attributes
    ----------
    platform : Platform
    model : CommModel
    rule : KRule
        The model's k rule.
    cells : dict
        ``(mode, protocol) -> Cell``.
    """

    __slots__ = ("platform", "model", "rule", "mapping", "nprocs", "cells")

    def __init__(self, platform: Platform | str, model: str | CommModel = "postal", mapping: str = "block",
                 nprocs: int | None = None) -> None:
        if mapping not in MAPPINGS:
            raise ValueError(f"unknown mapping {mapping!r}; expected one of {MAPPINGS}")
        self.platform: Platform = as_platform(platform)
        self.model: CommModel = model if isinstance(model, CommModel) else comm_model(model)
        self.rule: KRule = k_rule(self.model.k)
        self.mapping = mapping
        self.nprocs = nprocs
        self.cells = {(m, p): _resolve(self.platform, self.model, m, p) for m in MODES for p in PROTOCOLS}

    def __repr__(self) -> str:
        return (f"Network({self.platform.name!r}, {self.model.name!r}, mapping={self.mapping!r}"
                + (f", nprocs={self.nprocs}" if self.nprocs is not None else "") + ")")

    def _copy(self, **changes: Any) -> Network:
        new = object.__new__(Network)
        for name in Network.__slots__:
            object.__setattr__(new, name, changes.get(name, getattr(self, name)))
        return new

    def with_layout(self, **changes: Any) -> Network:
        """The same model and parameters on a node layout changed by ``changes`` (:data:`LAYOUT_FIELDS`).

        The cells depend on the parameter tables only, so they are kept
        (a what-if over ranks or sockets per node binds once).
        """
        bad = sorted(set(changes) - set(LAYOUT_FIELDS))
        if bad:
            raise ValueError(f"with_layout changes only {LAYOUT_FIELDS}, got {bad}; bind a new Network instead")
        return self._copy(platform=self.platform.replace(**changes))

    def with_nprocs(self, nprocs: int | None) -> Network:
        """The same network for a job of ``nprocs`` ranks (the node count of a round-robin mapping)."""
        return self._copy(nprocs=nprocs)

    @property
    def ranks_per_node(self) -> int:
        """The platform's ranks per node (k'), so a network stands where a platform-like object is taken
        (:func:`perfmod.apps.registry.kmodel_counts`)."""
        return self.platform.ranks_per_node

    # -- the rank mapping -------------------------------------------------------------------------------
    def nnodes_kw(self, nprocs: int | None = None) -> dict[str, int]:
        """``nnodes=`` for :mod:`perfmod.machine.mapping` under a round-robin mapping (empty for block)."""
        p = self.nprocs if nprocs is None else nprocs
        if self.mapping != "round_robin" or p is None:
            return {}
        return {"nnodes": math.ceil(p / self.platform.ranks_per_node)}

    def modes(self, src: Any, dst: Any, nprocs: int | None = None) -> np.ndarray:
        """Mode code of each (src, dst) pair (:func:`perfmod.machine.mapping.pair_modes`)."""
        plat = self.platform
        return pair_modes(src, dst, plat.ranks_per_node, plat.sockets_per_node, mapping=self.mapping,
                          **self.nnodes_kw(nprocs))

    def default_k(self, mode: str) -> int:
        """Processes per socket (intra-/inter-socket) or per node (inter-node) communicating at once."""
        return self.platform.ranks_per_node if mode == "inter_node" else self.platform.ranks_per_socket

    # -- pricing ------------------------------------------------------------------------------------------
    def cell(self, mode: str, protocol: str) -> Cell:
        """The resolved cell; raises :class:`ParameterNotAvailable` where the platform has no formula."""
        c = self.cells[(mode, protocol)]
        if c.formula is None:
            raise ParameterNotAvailable(c.error)
        return c

    def protocol_masks(self, nbytes: Any) -> dict[str, Any]:
        """Boolean masks (same type and shape as ``nbytes``) selecting each protocol."""
        plat = self.platform
        short = nbytes <= plat.short_max_bytes
        eager = (nbytes > plat.short_max_bytes) & (nbytes <= plat.eager_max_bytes)
        rndv = nbytes > plat.eager_max_bytes
        return {"short": short, "eager": eager, "rendezvous": rndv}

    def message_time(self, nbytes: Any, mode: str, k: Any = None, k_inter: Any = None, k_total: Any = None,
                     k_prime: Any = None) -> Any:
        """Time (s) of messages of ``nbytes`` bytes in ``mode``; arguments as
        :func:`perfmod.models.comm.message.message_time` (which binds a network and calls this)."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        check_sizes(nbytes)
        k = self.rule.message_k(self, mode, k, k_inter, k_total, k_prime)
        masks = self.protocol_masks(nbytes)
        result: Any = None
        for protocol in PROTOCOLS:
            mask = masks[protocol]
            if not np.any(np.asarray(mask)):
                continue
            c = self.cell(mode, protocol)
            t = evaluate(c.formula, nbytes, k, c.params)
            result = t if result is None else _where(mask, t, result)
        return result

    def one_pair_time(self, nbytes: Any, mode: str) -> Any:
        """Time of a message when one pair per node communicates (k = 1 under the k rules), a collective's step."""
        return self.message_time(nbytes, mode, **self.rule.one_pair)

    def loggp_params(self, mode: str, protocol: str) -> dict[str, float]:
        """``L``, ``o``, ``g``, ``G`` (s, s/B) of a cell, for the LogGOPS replay."""
        c = self.cell(mode, protocol)
        missing = [n for n in ("L", "o", "g", "G") if n not in c.params]
        if missing:
            raise ParameterNotAvailable(f"platform {self.platform.name!r}: model {self.model.name!r} at mode "
                                        f"{mode!r}, protocol {protocol!r} has no LogGP parameters "
                                        f"({', '.join(missing)}; the cell uses {c.model!r})")
        return c.params


def _where(cond: Any, a: Any, b: Any) -> Any:
    if is_xarray(cond, a, b):
        import xarray as xr

        return xr.where(cond, a, b)
    return np.where(cond, a, b)


def bind(platform: Platform | str | Network, model: str | CommModel = "postal", mapping: str = "block",
         nprocs: int | None = None) -> Network:
    """A :class:`Network` for a public entry point: ``platform`` itself when it is one (``model`` and
    ``mapping`` must then agree with it), else a new one."""
    if isinstance(platform, Network):
        name = model.name if isinstance(model, CommModel) else model
        if name != platform.model.name or mapping != platform.mapping:
            raise ValueError(f"{platform!r} is bound to model {platform.model.name!r}, mapping "
                             f"{platform.mapping!r}; got model={name!r}, mapping={mapping!r}")
        return platform if nprocs is None or nprocs == platform.nprocs else platform.with_nprocs(nprocs)
    return Network(platform, model, mapping, nprocs)
