"""How a communication model chooses k, the processes communicating at once (paper 000 §3.1, Eq. 2-5).

A :class:`KRule` is the behaviour a model's registry entry names with
``k=`` (:mod:`perfmod.models.comm.registry`); a
:class:`~perfmod.models.comm.network.Network` calls it wherever k is needed:

- :meth:`KRule.message_k`: the k of one call of ``message_time`` (from the
  caller's ``k``, ``k_inter``, ``k_total``, ``k_prime``);
- :attr:`KRule.one_pair`: the keywords for one communicating pair per node
  (a collective's step);
- :meth:`KRule.phase_kw`: the keywords for the messages of one analytic
  phase (an :class:`~perfmod.apps.exchange.Exchange`);
- :meth:`KRule.trace_k`: k per phase of a replayed trace.

The shipped rules: ``"none"`` (the formula has no k), ``"default"`` (k
given, else the processes of the socket or node; the replay counts the
ranks sending in each phase) and ``"kmodel"`` (``K_inter / K_total * k'``
from K-model counts, Eq. 4-5).  A new rule is one file: a subclass of
:class:`KRule` and a :func:`register_k_rule` call; a model then names it in
``CommModel(k=...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from perfmod.core.lazy import is_xarray
from perfmod.machine.mapping import node_of, socket_of
from perfmod.models.comm.kmodel import kmodel_counts_per_phase, phase_counts
from perfmod.models.comm.models import check_k, kmodel_k

if TYPE_CHECKING:
    from perfmod.models.comm.network import Network

__all__ = ["KRule", "NoK", "DefaultK", "KModelK", "register_k_rule", "k_rule", "k_rule_names"]

#: Per mode name and message selection, the ``message_time`` keywords of those messages.
TraceKw = Callable[[str, np.ndarray], dict[str, Any]]


class KRule:
    """How a model chooses k (see the module docstring); the base is the rule for formulas without k."""

    #: The name a model's registry entry gives in ``k=``.
    name = "none"
    #: Whether the formulas of a model with this rule may take k.
    takes_k = False
    #: ``message_time`` keywords for one communicating pair per node (k = 1), as in a collective's step.
    one_pair: dict[str, float] = {}

    def message_k(self, net: Network, mode: str, k: Any, k_inter: Any, k_total: Any, k_prime: Any) -> Any:
        """The k passed to the formula of a message in ``mode`` (None: the formula takes none)."""
        return None

    def phase_kw(self, net: Network, exchange: Any, counts: Any) -> dict[str, Any]:
        """``message_time`` keywords shared by every message of an analytic phase."""
        return {}

    def trace_k(self, net: Network, phase: np.ndarray, src: np.ndarray, dst: np.ndarray, nph: int, nprocs: int,
                k_total_rule: str, stencil: int | None) -> tuple[dict[str, np.ndarray], TraceKw]:
        """Per phase of a trace: the counts behind k (``info``) and the keywords of a mode's messages.

        The keywords of a message may depend on its mode and its phase only: the replay's message costs
        (:func:`perfmod.replay.costs.message_costs`) cost each distinct (mode, bytes, phase) once."""
        return {}, lambda mode, sel: {}


class NoK(KRule):
    """The formula has no k (``postal``, ``loggp``)."""


class DefaultK(KRule):
    """k given, else every process of the socket (intra-/inter-socket) or node (inter-node) (``maxrate``).

    The replay counts, per phase, the most ranks of one node (inter-node
    messages) or socket (intra- and inter-socket) that send (Eq. 2-3).
    """

    name = "default"
    takes_k = True
    one_pair = {"k": 1}

    def message_k(self, net: Network, mode: str, k: Any, k_inter: Any, k_total: Any, k_prime: Any) -> Any:
        if k is None:
            k = net.default_k(mode)
        check_k(k, net.platform.ranks_per_node)
        return k

    def trace_k(self, net: Network, phase: np.ndarray, src: np.ndarray, dst: np.ndarray, nph: int, nprocs: int,
                k_total_rule: str, stencil: int | None) -> tuple[dict[str, np.ndarray], TraceKw]:
        if not src.size:
            return {}, lambda mode, sel: {}
        from perfmod.models.comm.kmodel_kernels import senders_per_group_in_order  # numba only here

        plat, kw = net.platform, net.nnodes_kw(nprocs)
        nodes = node_of(np.arange(nprocs), plat.ranks_per_node, net.mapping, **kw)
        sockets = socket_of(np.arange(nprocs), plat.ranks_per_node, plat.sockets_per_node, net.mapping, **kw)
        k_node, k_sock = np.zeros(nph, dtype=np.int64), np.zeros(nph, dtype=np.int64)
        if not senders_per_group_in_order(phase, src, nodes, sockets, k_node, k_sock, np.zeros(nph, np.int64),
                                          np.zeros(nph, np.int64), np.empty(nph, np.int64), np.empty(nph, np.int64)):
            pairs = _distinct_pairs(phase, src)  # once for both groupings
            k_node = _senders_per_group(phase, src, nodes, nph, pairs)
            k_sock = _senders_per_group(phase, src, sockets, nph, pairs)
        k_node, k_sock = np.maximum(k_node, 1), np.maximum(k_sock, 1)
        return ({"k_node": k_node, "k_socket": k_sock},
                lambda mode, sel: {"k": (k_node if mode == "inter_node" else k_sock)[phase[sel]].astype(float)})


class KModelK(KRule):
    """The K-model: max-rate at ``k = K_inter / K_total * k'`` for inter-node messages (000 Eq. 4-5).

    Intra-node messages keep the max-rate k of their mode: the K-model
    corrects the number of processes sharing the *network*.
    """

    name = "kmodel"
    takes_k = True
    one_pair = {"k": 1, "k_inter": 1, "k_total": 1, "k_prime": 1}

    def message_k(self, net: Network, mode: str, k: Any, k_inter: Any, k_total: Any, k_prime: Any) -> Any:
        if k_inter is None or k_total is None:
            raise ValueError(f"model {net.model.name!r} needs k_inter and k_total "
                             "(see perfmod.apps.registry.kmodel_counts)")
        kp = net.platform.ranks_per_node if k_prime is None else k_prime
        k = kmodel_k(k_inter, k_total, kp) if mode == "inter_node" else (k or net.default_k(mode))
        # K_inter may be 0 (no inter-node message): the max-rate k then has no meaning,
        # and 1 is the smallest meaningful number of processes sharing the network.
        return k.clip(min=1) if is_xarray(k) else np.maximum(k, 1)

    def phase_kw(self, net: Network, exchange: Any, counts: Any) -> dict[str, Any]:
        c = counts if counts is not None else phase_counts(exchange, net.platform.ranks_per_node,
                                                           mapping=net.mapping)
        return {"k_inter": c.k_inter, "k_total": c.k_total}

    def trace_k(self, net: Network, phase: np.ndarray, src: np.ndarray, dst: np.ndarray, nph: int, nprocs: int,
                k_total_rule: str, stencil: int | None) -> tuple[dict[str, np.ndarray], TraceKw]:
        if not src.size:
            return {}, lambda mode, sel: {}
        ki, kt, kp = kmodel_counts_per_phase(phase, src, dst, nph, nprocs, net.platform.ranks_per_node,
                                             mapping=net.mapping, stencil=stencil, k_total_rule=k_total_rule)
        per_phase = {"k_inter": ki, "k_total": kt, "k_prime": kp}
        # looked up for the selected messages only (no per-message copy of each count)
        return ({**per_phase, "k": ki / kt * kp},
                lambda mode, sel: _per_message(per_phase, phase[sel]))


def _per_message(per_phase: dict[str, np.ndarray], phase: np.ndarray) -> dict[str, np.ndarray]:
    return {k: v[phase] for k, v in per_phase.items()}


def _senders_per_group(phase: np.ndarray, src: np.ndarray, group: np.ndarray, nph: int,
                       pairs: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Max over groups (nodes or sockets) of the distinct ranks sending in each phase (``pairs``:
    :func:`_distinct_pairs` of ``phase`` and ``src``, if known)."""
    ph, s = _distinct_pairs(phase, src) if pairs is None else pairs
    gmax = int(group.max(initial=0)) + 1
    gk, cnt = np.unique(ph * gmax + group[s], return_counts=True)
    out = np.zeros(nph, dtype=np.int64)
    np.maximum.at(out, gk // gmax, cnt)
    return out


def _distinct_pairs(phase: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (phase, sender) pairs of the messages, as two int64 arrays.  Messages listed in trace order
    (senders ascending, each sender's phases ascending, as the replay gives them) are compared with their
    neighbour in one pass; others are sorted."""
    phase, src = phase.astype(np.int64, copy=False), src.astype(np.int64, copy=False)
    if src.size < 2:
        return phase, src
    same_src = src[1:] == src[:-1]
    if np.all(src[1:] >= src[:-1]) and np.all(~same_src | (phase[1:] >= phase[:-1])):
        new = np.empty(src.size, dtype=bool)
        new[0] = True
        np.logical_not(same_src & (phase[1:] == phase[:-1]), out=new[1:])
        return phase[new], src[new]
    smax = int(src.max(initial=0)) + 1
    key = np.unique(phase * smax + src)
    return key // smax, key % smax


_RULES: dict[str, KRule] = {}


def register_k_rule(rule: KRule) -> KRule:
    """Add a k rule; a model names it in ``CommModel(k=rule.name)``."""
    if not rule.name or not isinstance(rule.name, str):
        raise ValueError(f"a k rule needs a name, got {rule.name!r}")
    _RULES[rule.name] = rule
    return rule


def k_rule(name: str) -> KRule:
    """The k rule ``name``; a ``ValueError`` lists the known ones."""
    try:
        return _RULES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown k rule {name!r}; expected one of {k_rule_names()}") from None


def k_rule_names() -> tuple[str, ...]:
    """Names of the registered k rules."""
    return tuple(_RULES)


for _r in (NoK(), DefaultK(), KModelK()):
    register_k_rule(_r)
