"""Collective operations costed on top of the point-to-point model.

- Allreduce by recursive doubling (paper 002 §1.2, after Thakur, Rabenseifner
  and Gropp 2005, as MPICH implements it): for ``P' = 2**floor(lg P)`` and
  ``r = P - P'`` there are ``lg P'`` exchange steps, plus one step before
  (the first ``2r`` ranks fold pairwise into ``r``) and one after (results
  sent back) when ``r > 0``.  Every step moves the whole ``n``-byte vector.
- Reduction and broadcast by a binomial tree: ``ceil(lg P)`` steps of one
  message each (paper 003 Eq. 6 charges the global reduction ``lg(P) K_r``).

Each step costs the slowest of its messages.  The mode (intra-socket,
inter-socket, inter-node) of every pair of a step comes from the rank
mapping, so the first steps of a recursive doubling with block mapping are
intra-node and only the last ones cross nodes.  An optional ``gamma``
(seconds per byte) charges the local reduction of each received vector.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from perfmod.core.checks import positive_int
from perfmod.machine.platforms import MODES, Platform
from perfmod.models.comm.network import Network, bind

__all__ = [
    "recursive_doubling_steps",
    "binomial_tree_steps",
    "step_modes",
    "steps_time",
    "ALGORITHMS",
    "collective_time",
    "allreduce_recursive_doubling",
    "reduce_binomial",
    "bcast_binomial",
]

Pairs = list[tuple[np.ndarray, np.ndarray]]


def recursive_doubling_steps(nprocs: int) -> Pairs:
    """Return, per step, the (sender, receiver) rank arrays of a recursive-doubling allreduce.

    Exchange steps list each pair in both directions.
    """
    return list(_recursive_doubling(nprocs))


def _recursive_doubling(nprocs: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """:func:`recursive_doubling_steps` one step at a time (:data:`ALGORITHMS`' ``"allreduce"``): a step's arrays
    are freed once the caller is done with it, rather than ``lg P`` of them held at once (168 MB, and as many
    fresh pages to fault in, at 1,048,576 ranks)."""
    p = positive_int("nprocs", nprocs)
    return _recursive_doubling_from(p)


def _recursive_doubling_from(p: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    if p == 1:
        return
    pof2 = 1 << (p.bit_length() - 1)
    rem = p - pof2
    if rem:
        # fold: ranks 2i+1 (i < rem) send to 2i, which carry on
        src = np.arange(rem) * 2 + 1
        yield src, src - 1
    newrank = np.arange(pof2)
    real = np.where(newrank < rem, newrank * 2, newrank + rem) if rem else newrank
    dist = 1
    while dist < pof2:
        yield real, (real[newrank ^ dist] if rem else newrank ^ dist)
        dist <<= 1
    if rem:
        dst = np.arange(rem) * 2 + 1
        yield dst - 1, dst


def binomial_tree_steps(nprocs: int) -> Pairs:
    """Return, per step, the (sender, receiver) arrays of a binomial-tree reduction to rank 0."""
    p = positive_int("nprocs", nprocs)
    steps: Pairs = []
    dist = 1
    while dist < p:
        recv = np.arange(0, p, 2 * dist)
        send = recv + dist
        keep = send < p
        steps.append((send[keep], recv[keep]))
        dist <<= 1
    return steps


#: pairs of a step whose modes :func:`step_modes` computes first; each further look doubles it
_FIRST_PAIRS = 1 << 12


def step_modes(steps: Iterable[tuple[np.ndarray, np.ndarray]], net: Network) -> list[str]:
    """The slowest mode of each step (inter-node > inter-socket > intra-socket) under ``net``'s mapping.

    A step's pairs are looked at in chunks that double in size, up to the first inter-node pair (the slowest
    mode there is): most steps of a large collective cross nodes within their first pairs, so they cost
    thousands of pairs rather than one pass over every rank (at 1,048,576 ranks a recursive doubling's 20 steps
    cost 0.6-0.8 s of mode look-ups over all their pairs)."""
    out = []
    slowest = len(MODES) - 1
    for src, dst in steps:
        worst, a, chunk = -1, 0, _FIRST_PAIRS
        while worst < slowest and (a < src.size or worst < 0):
            worst = max(worst, int(np.max(net.modes(src[a:a + chunk], dst[a:a + chunk]))))
            a, chunk = a + chunk, 2 * chunk
        out.append(MODES[worst])
    return out


def steps_time(steps: Iterable[tuple[np.ndarray, np.ndarray]], nbytes: Any, net: Network, gamma: float = 0.0,
               p2p: Callable[[Any, str], Any] | None = None) -> Any:
    """Sum over ``steps`` of one message of ``nbytes`` in the step's slowest mode, one pair per node
    communicating (:meth:`~perfmod.models.comm.network.Network.one_pair_time`), plus ``gamma * nbytes``;
    ``p2p(nbytes, mode)`` replaces the network's message model."""
    total: Any = 0.0 * nbytes
    for mode in step_modes(steps, net):
        t = p2p(nbytes, mode) if p2p is not None else net.one_pair_time(nbytes, mode)
        total = total + t + gamma * nbytes
    return total


def _bcast_steps(nprocs: int) -> Pairs:
    return [(d, s) for s, d in binomial_tree_steps(nprocs)][::-1]


#: each collective's steps: (sender, receiver) arrays per step, in order (an iterable: a step at a time)
ALGORITHMS: dict[str, Callable[[int], Iterable[tuple[np.ndarray, np.ndarray]]]] = {
    "allreduce": _recursive_doubling,
    "reduce": binomial_tree_steps,
    "bcast": _bcast_steps,
}


def collective_time(
    op: str,
    nbytes: Any,
    nprocs: int,
    platform: Platform | str | Network,
    model: str = "postal",
    mapping: str = "block",
    gamma: float = 0.0,
    p2p: Callable[[Any, str], Any] | None = None,
) -> Any:
    """Time of a collective, node-aware.

    Parameters
    ----------
    op : {"allreduce", "reduce", "bcast"}
        Recursive-doubling allreduce, binomial-tree reduce or broadcast.
    nbytes : array_like
        Vector size in bytes (8 for one double).
    nprocs : int
        Number of ranks P.
    platform : Platform, str or Network
        Gives ranks per node and socket (for the modes) and the parameters;
        a network bound to ``model`` and ``mapping`` already is used as it is.
    model : str
        Point-to-point model (see :func:`perfmod.models.comm.message.message_time`);
        under ``"maxrate"`` one pair per node communicates per step (k = 1).
    mapping : {"block", "round_robin"}
        Rank-to-node mapping.
    gamma : float
        Local reduction cost in seconds per byte, charged once per step
        (ignored for a broadcast).
    p2p : callable(nbytes, mode) -> seconds, optional
        Replaces the platform's message model (e.g. a fitted local model).

    Returns
    -------
    array_like
        Time in seconds; 0 for one rank.
    """
    try:
        steps = ALGORITHMS[op](nprocs)
    except KeyError:
        raise ValueError(f"unknown collective {op!r}; known: {sorted(ALGORITHMS)}") from None
    return steps_time(steps, nbytes, bind(platform, model, mapping), 0.0 if op == "bcast" else gamma, p2p)


def allreduce_recursive_doubling(nbytes: Any, nprocs: int, platform: Platform | str, **options: Any) -> Any:
    """Allreduce by recursive doubling (paper 002 §1.2); options as :func:`collective_time`."""
    return collective_time("allreduce", nbytes, nprocs, platform, **options)


def reduce_binomial(nbytes: Any, nprocs: int, platform: Platform | str, **options: Any) -> Any:
    """Reduction to one rank by a binomial tree: ``ceil(lg P)`` steps (paper 003 Eq. 6)."""
    return collective_time("reduce", nbytes, nprocs, platform, **options)


def bcast_binomial(nbytes: Any, nprocs: int, platform: Platform | str, **options: Any) -> Any:
    """Broadcast from one rank by a binomial tree: ``ceil(lg P)`` steps."""
    return collective_time("bcast", nbytes, nprocs, platform, **options)
