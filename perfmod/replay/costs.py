"""Message and collective times of a trace on a platform (paper 000 §2.1, §3.1, §3.2).

Every point-to-point message gets its time from the bound network
(:class:`perfmod.models.comm.network.Network`, which the replay binds once
from the platform, the model and the mapping): the mode from the rank mapping
(:func:`perfmod.machine.mapping.pair_modes`), the protocol from its size, and the
model's k from the trace itself, per communication phase:

- a phase is what a rank does between two collectives on ``MPI_COMM_WORLD``
  (which every rank calls, so phases line up across ranks) or two iterations
  (the ``iteration`` column), e.g. one halo exchange, or MiniMD's six swaps
  of a timestep; phases are numbered per rank, so the k-th phase of every
  rank is the same phase (a synthetic MiniMD iteration holds the forward
  and the reverse exchange, which doubles K_inter and the counted K_total
  and leaves k unchanged);
- the model's k rule (:mod:`perfmod.models.comm.krules`) counts k per
  phase: rule ``"default"`` (``"maxrate"``): k = the most ranks of one node (inter-node messages) or
  of one socket (intra- and inter-socket messages) that send in the phase,
  the processes communicating at once of Eq. 2-3;
- k rule ``"kmodel"`` (``"kmodel"``): K_inter and K_total of the phase
  counted from its messages by :func:`perfmod.models.comm.kmodel.kmodel_counts_from`
  (Eq. 4; K_total as counted, or by another ``k_total_rule``), k' = ranks per node;
- k rule ``"none"`` (``"postal"``, ``"loggp"``): no k.

Every registered model can be replayed (:func:`perfmod.models.comm.registry.model_names`).

Zero-byte messages are costed as 1 byte (the models need n > 0; the
difference is one beta, about 1e-10 s).  Synchronous sends, and messages
above the platform's eager threshold, use the rendezvous protocol.

Collectives are costed by documented algorithms on the point-to-point model
(:mod:`perfmod.models.comm.collectives`): allreduce by recursive doubling, reduce
and broadcast by binomial trees (``collective_time``); in addition barrier
by dissemination (``ceil(lg P)`` rounds of 1-byte messages), alltoall and
alltoallv by pairwise exchange (P - 1 steps, rank r sends to r + s), gather
and scatter by binomial trees carrying the subtree's data (``d * n`` bytes
at distance d), allgather and reduce-scatter by a ring (P - 1 steps of n
bytes).  Each step costs its slowest message, the mode of every pair from
the mapping; under the max-rate and K-models one pair per node
communicates per step (k = 1, :attr:`perfmod.models.comm.krules.KRule.one_pair`),
as in :mod:`perfmod.models.comm.collectives`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from perfmod.core.kernel_cache import njit
from perfmod.machine.platforms import MODES
from perfmod.models.comm.collectives import ALGORITHMS, binomial_tree_steps, steps_time
from perfmod.models.comm.network import Network
from perfmod.replay.matching import Collectives, Matching, call_is
from perfmod.trace.core import COLLECTIVES, Call, Trace, code_set

__all__ = ["event_phases", "MessageCosts", "message_costs", "collective_costs", "per_mode"]


@njit(cache=True)
def _phases(rank, call, comm, iteration, coll_tab, every, at, out):
    """Phase of every event (``every``) or of the events ``at`` (ascending) into ``out``."""
    ph = 0
    k = 0
    for i in range(rank.size):
        if i == 0 or rank[i] != rank[i - 1]:
            ph = 0  # numbered per rank
        elif (coll_tab[call[i - 1]] and comm[i - 1] == 0) or (iteration.size and iteration[i] != iteration[i - 1]):
            ph += 1  # the event after a collective on MPI_COMM_WORLD, or a new iteration, starts a phase
        if every:
            out[i] = ph
        elif k < at.size and at[k] == i:
            out[k] = ph
            k += 1


#: messages per chunk of :func:`message_costs` (where it costs every message)
_CHUNK = 1 << 18
#: distinct (mode, bytes, phase) messages that :func:`message_costs` costs once each (and at most one per 16
#: messages); beyond, it costs every message
_MAX_DISTINCT = 1 << 16
_COLL_TAB = np.zeros(256, dtype=np.bool_)
_COLL_TAB[code_set(COLLECTIVES)] = True


def event_phases(trace: Trace, events: np.ndarray | None = None) -> np.ndarray:
    """Communication phase of every event (see the module docstring), numbered per rank from 0, or of
    ``events`` (ascending event indices; int64, without a per-event array) (one compiled pass)."""
    it = trace.iteration if trace.iteration is not None else np.zeros(0, dtype=np.int32)
    # allocated by NumPy: seen by tracemalloc, as the replay's others
    if events is None:
        out, at = np.empty(len(trace), dtype=np.int32), np.zeros(0, dtype=np.int64)
    else:
        out, at = np.empty(len(events), dtype=np.int64), np.asarray(events)
    _phases(trace.rank, trace.call, trace.comm, it, _COLL_TAB, events is None, at, out)
    return out


@dataclass(frozen=True)
class MessageCosts:
    """Per-message times and the counts behind them.

    Attributes
    ----------
    time : numpy.ndarray of float64
        Seconds of each message, in the order of the matching's ``send_events`` (per message, not per event:
        the replay writes them into its event rows).
    rndv : numpy.ndarray of bool, shape (len(trace),)
        The send waits for its receive to be posted (rendezvous or synchronous).
    mode : numpy.ndarray of int8
        Mode code of each matched message (:data:`perfmod.machine.platforms.MODES`).
    phase : numpy.ndarray of int64
        Phase of each message.
    phases : dict
        Per phase with messages: ``k_inter``, ``k_total``, ``k_prime``, ``k``
        (K-model) or ``k_node``, ``k_socket`` (max-rate), as arrays.
    """

    time: np.ndarray
    rndv: np.ndarray
    mode: np.ndarray
    phase: np.ndarray
    phases: dict[str, np.ndarray]


def message_costs(trace: Trace, match: Matching, net: Network, k_total_rule: str = "counted",
                  stencil: int | None = None) -> MessageCosts:
    """Times of every matched and unmatched message sent in ``trace`` on ``net`` (see the module docstring)."""
    n = len(trace)
    p = trace.nprocs
    ev, src, dst = match.send_events, match.src, match.dst
    modes = net.modes(src, dst, p)
    phase = event_phases(trace, ev)  # the send events are ascending
    nph = int(phase.max(initial=-1)) + 1
    info, kw_of = net.rule.trace_k(net, phase, src, dst, nph, p, k_total_rule, stencil)
    # a message's time depends on its mode, size and phase only (the k rules count per phase), and the formulas
    # are element-wise: each distinct (mode, size, phase) is costed once, at its first message, and the messages
    # take their times from it (a halo exchange has a few such per phase, for hundreds of thousands of messages)
    # at most one distinct per 16 messages (else costing every message costs about as much), so that the table
    # stays within 4 bytes per message
    most = min(_MAX_DISTINCT, max(64, ev.size // 16))
    ids = np.empty(ev.size, dtype=np.int32)
    first = np.empty(most, dtype=np.int64)
    table = np.full((1 << (2 * most - 1).bit_length(), 4), -1, dtype=np.int64)
    nd = _distinct_messages(modes, match.nbytes, phase, ids, first, table)
    del table
    if nd >= 0:
        first = first[:nd]
        times = np.empty(nd)
        _cost(net, times, first, modes[first], match.nbytes, kw_of)
        times = times[ids]
    else:  # too many distinct messages: every message costed, per mode in chunks (the temporaries stay small)
        times = np.empty(ev.size)
        for a in range(0, ev.size, _CHUNK):
            _cost(net, times[a:a + _CHUNK], np.arange(a, min(a + _CHUNK, ev.size)), modes[a:a + _CHUNK],
                  match.nbytes, kw_of)
    del ids
    rndv = np.zeros(n, dtype=bool)
    rndv[ev] = match.nbytes > net.platform.eager_max_bytes
    rndv |= call_is(trace.call, code_set({Call.SSEND, Call.ISSEND}))
    return MessageCosts(times, rndv, modes, phase, info)


def _cost(net: Network, out: np.ndarray, msgs: np.ndarray, modes: np.ndarray, nbytes: np.ndarray, kw_of: Any) -> None:
    """``out[j]``: the time of message ``msgs[j]`` (of mode code ``modes[j]``), per mode."""
    for code, mode in enumerate(MODES):
        j = np.flatnonzero(modes == code)
        if j.size:
            sel = msgs[j]
            out[j] = net.message_time(np.maximum(nbytes[sel], 1, dtype=np.float64), mode, **kw_of(mode, sel))


@njit(cache=True)
def _distinct_messages(modes, nbytes, phase, ids, first, table):
    """Number the distinct (mode, bytes, phase) of the messages in order of first appearance: ``ids`` per
    message, ``first``: the first message of each; returns how many, or -1 beyond ``first.size`` of them.
    ``table`` (rows of -1): open addressing on the key, rows (mode, bytes, phase, number)."""
    mask = table.shape[0] - 1
    nd = 0
    for m in range(modes.size):
        a, b, c = np.int64(modes[m]), np.int64(nbytes[m]), np.int64(phase[m])
        h = (np.uint64(a) * np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(b) * np.uint64(0xC2B2AE3D27D4EB4F)
             ^ np.uint64(c) * np.uint64(0x165667B19E3779F9))
        j = np.int64((h ^ (h >> np.uint64(29))) & np.uint64(mask))
        while table[j, 3] >= 0 and (table[j, 0] != a or table[j, 1] != b or table[j, 2] != c):
            j = (j + 1) & mask
        if table[j, 3] < 0:
            if nd == first.size:
                return -1
            table[j, 0], table[j, 1], table[j, 2], table[j, 3] = a, b, c, nd
            first[nd] = m
            nd += 1
        ids[m] = table[j, 3]
    return nd


def _step_cost(pairs: list[tuple[np.ndarray, np.ndarray, np.ndarray]], members: np.ndarray, net: Network,
               nprocs: int) -> float:
    """Sum over steps of the slowest message; ``pairs`` = (src, dst, nbytes) in communicator ranks."""
    total = 0.0
    for s, d, nb in pairs:
        if s.size == 0:
            continue
        modes = net.modes(members[s], members[d], nprocs)
        worst = 0.0
        for code in np.unique(modes).tolist():
            sel = modes == code
            t = net.one_pair_time(np.maximum(nb[sel], 1).astype(float), MODES[code])
            worst = max(worst, float(np.max(t)))
        total += worst
    return total


def _steps(op: int, size: int, nbytes: int, counts: np.ndarray | None) -> list:
    r = np.arange(size)
    full = lambda a: np.full(a.size, nbytes, dtype=np.int64)  # noqa: E731
    if op == Call.BARRIER:
        out, d = [], 1
        while d < size:
            out.append((r, (r + d) % size, np.ones(size, np.int64)))
            d <<= 1
        return out
    if op in (Call.ALLTOALL, Call.ALLTOALLV):
        out = []
        for s in range(1, size):
            dst = (r + s) % size
            nb = full(r) if counts is None else counts[r, dst]
            out.append((r, dst, nb))
        return out
    if op in (Call.ALLGATHER, Call.REDUCE_SCATTER):
        return [(r, (r + 1) % size, full(r))] * (size - 1)
    if op in (Call.GATHER, Call.SCATTER):
        out = []
        for a, b in binomial_tree_steps(size):
            dist = abs(int(b[0] - a[0])) if a.size else 1
            out.append((a, b, np.full(a.size, nbytes * dist, np.int64)))
        return out if op == Call.GATHER else [(b, a, nb) for a, b, nb in out[::-1]]
    steps = ALGORITHMS[{Call.ALLREDUCE: "allreduce", Call.REDUCE: "reduce", Call.BCAST: "bcast"}[Call(op)]](size)
    return [(a, b, full(a)) for a, b in steps]


def collective_costs(trace: Trace, coll: Collectives, net: Network) -> np.ndarray:
    """Seconds of each collective instance (see the module docstring for the algorithms)."""
    cost = np.zeros(coll.call.size)
    cache: dict[tuple[int, int, int], float] = {}
    names = {Call.ALLREDUCE: "allreduce", Call.REDUCE: "reduce", Call.BCAST: "bcast"}
    for k in range(coll.call.size):
        op, nb, comm, size = int(coll.call[k]), int(coll.nbytes[k]), int(coll.comm[k]), int(coll.size[k])
        if size == 1:
            continue
        if op == Call.ALLTOALLV:
            counts = _alltoallv_counts(trace, coll, k)
            cost[k] = _step_cost(_steps(op, size, nb, counts), trace.comm_ranks(comm), net, trace.nprocs)
            continue
        key = (op, nb, comm)
        if key not in cache:
            if comm == 0 and op in names and net.mapping == "block":  # collective_time maps ranks in blocks
                cache[key] = float(steps_time(ALGORITHMS[names[Call(op)]](size), float(max(nb, 1)), net))
            else:
                cache[key] = _step_cost(_steps(op, size, nb, None), trace.comm_ranks(comm), net, trace.nprocs)
        cost[k] = cache[key]
    return cost


def _alltoallv_counts(trace: Trace, coll: Collectives, k: int) -> np.ndarray:
    """Bytes matrix ``[from, to]`` (communicator ranks) of ALLTOALLV instance ``k``."""
    members = trace.comm_ranks(int(coll.comm[k]))
    evs = np.flatnonzero(coll.inst == k)
    pos = np.searchsorted(np.sort(members), trace.rank[evs])
    local = np.argsort(members)[pos]
    mat = np.zeros((members.size, members.size), dtype=np.int64)
    for li, e in zip(local.tolist(), evs.tolist(), strict=True):
        mat[li] = trace.aux[trace.aux_ptr[e]:trace.aux_ptr[e + 1]]
    return mat


@njit(cache=True)
def _add_per_mode(src, mode, nbytes, count, total):
    for m in range(src.size):
        count[src[m], mode[m]] += 1
        total[src[m], mode[m]] += nbytes[m]


def per_mode(p: int, src: np.ndarray, mode: np.ndarray, nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Messages and bytes sent per (rank, mode) (``p`` ranks; one compiled pass over the messages: the byte sums
    are integers, exact in float64)."""
    count, total = np.zeros((p, len(MODES)), dtype=np.int64), np.zeros((p, len(MODES)))
    _add_per_mode(src, mode, nbytes, count, total)
    return count, total
