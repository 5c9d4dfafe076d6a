"""Trace-driven, node-aware replay of MPI communication (paper 000 §2.2, §3.2).

Paper: Choi et al., ICS 2020 (paper 000).  NACoM replays DUMPI
traces in TraceR-CODES with an analytical model computing "how long a
message takes to traverse the network" (§2.2), node-aware: separate
parameters for intra-socket, inter-socket and inter-node messages and the
max-rate / K-model for processes sharing the network (§3.2).
:func:`replay` is the Python counterpart on one process: matching
(:mod:`perfmod.replay.matching`), message and collective times
(:mod:`perfmod.replay.costs`) and the compiled event loop
(:mod:`perfmod.replay.kernel`, whose docstring states the timing rules).
Models whose registry entry says ``replay="loggops"`` (``loggp``) run
instead as LogGOPSim runs them: a CPU and a NIC per rank, the receiver
charged for every message (:mod:`perfmod.replay.loggops`); ``loggp_nic``
is the same formula under the message kernel's rules.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from perfmod.core.io import provenance_attrs
from perfmod.core.jit import first_call
from perfmod.core.memory import check_fits, index_dtype
from perfmod.machine.platforms import MODES, Platform
from perfmod.models.comm.network import Network, bind
from perfmod.replay.costs import collective_costs, message_costs, per_mode
from perfmod.replay.diagnostics import ReplayWarning
from perfmod.replay.kernel import (
    ACC_COLL,
    ACC_COMPUTE,
    ACC_RECV,
    ACC_SEND,
    ACC_WAIT,
    STATUS_OK,
    pack_events,
    pack_times,
    replay_events,
    unpack_matching,
)
from perfmod.replay.loggops import replay_loggops
from perfmod.replay.matching import (
    SEND_CODES,
    ReplayError,
    call_is,
    collective_instances,
    has_wildcards,
    match_messages,
)
from perfmod.trace.core import CALL_NAMES, NO_PEER, Call, Trace
from perfmod.trace.requests import resolve_requests

if TYPE_CHECKING:  # xarray is imported where a dataset is built: replay_times starts without it
    import xarray as xr

__all__ = ["replay", "ReplayError", "DeadlockError", "ReplayWarning"]


#: peak bytes per trace event the message-kernel replay (every model but ``loggp``) allocates beyond the trace:
#: matching, costs, collectives, requests and the kernel's event rows, for the check before allocating.  Measured
#: (issue 23) on synthetic Jacobi2D: peak RSS above the trace's 39.6-40.7 B/event at 131,072 ranks x 10 iterations
#: (13.1 M events; postal, maxrate, kmodel), tracemalloc peak 37-38 B/event at 16,384 x 10; rounded up to 48.
_BYTES_PER_EVENT = 48
#: more per event when some receive is a wildcard: the run-time matching's five int64 envelope columns and the
#: kernel's two int64 queue links (counted from the array sizes)
_WILDCARD_BYTES_PER_EVENT = 56
#: fixed part: the matching and request tables' first sizes, numba's and the allocator's own
_FIXED_BYTES = 1 << 16
#: traces of at least this many events show a progress bar over the replay's stages unless ``progress=False``
PROGRESS_EVENTS = 10_000_000
_STAGES = ("checks", "matching", "costs", "collectives and requests", "event loop", "dataset")


class DeadlockError(ReplayError):
    """The replay cannot go on: ranks wait for something no rank will do (``details``: one dict per rank)."""


def _compute_times(trace: Trace, compute: Any) -> np.ndarray:
    if compute is None:
        return trace.compute
    if callable(compute):
        return trace.with_compute(np.asarray(compute(trace), dtype=np.float64)).compute
    return trace.with_compute(np.broadcast_to(np.asarray(compute, dtype=np.float64), trace.compute.shape)).compute


def _dynamic_args(d: Any, n: int) -> tuple:
    """Kernel arguments for run-time matching (empty when every message was matched beforehand)."""
    if d is None:
        e = np.zeros(0, dtype=np.int64)
        return e, e, e, e, e, 0, e, e
    return (d.sgrp, d.rgrp, d.stag, d.rsrc, d.rtag, d.ngroups, np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int64))


def _check_truncation(trace: Trace, dynamic: Any, pdst: np.ndarray) -> None:
    """MPI_ERR_TRUNCATE among the messages the kernel matched to wildcard receivers."""
    send = np.flatnonzero((dynamic.sgrp >= 0) & (pdst >= 0))
    recv = pdst[send]
    rbytes = trace.nbytes[recv].copy()
    sr = trace.call[recv] == Call.SENDRECV
    rbytes[sr] = trace.aux[trace.aux_ptr[recv[sr]] + 1]
    bad = np.flatnonzero(rbytes < trace.nbytes[send])
    if bad.size:
        i, j = int(send[bad[0]]), int(recv[bad[0]])
        raise ReplayError(f"{trace._at(j)}: receive buffer of {int(rbytes[bad[0]])} B is smaller than the "
                          f"{int(trace.nbytes[i])} B message from rank {int(trace.rank[i])} (tag "
                          f"{int(trace.tag[i])}) it matched: MPI_ERR_TRUNCATE in {bad.size} receives")


def _unmatched_sends(trace: Trace, pdst: np.ndarray) -> int:
    """The send events that matched no receive (``pdst`` -1)."""
    return int(np.count_nonzero((pdst == -1) & call_is(trace.call, SEND_CODES)))


def _describe(trace: Trace, i: int) -> dict[str, Any]:
    c = int(trace.call[i])
    d = {"rank": int(trace.rank[i]), "event": int(trace.seq[i]), "call": CALL_NAMES.get(c, str(c)),
         "comm": int(trace.comm[i])}
    if int(trace.peer[i]) != NO_PEER:
        d["peer"] = int(trace.peer[i])
    if c in (Call.SEND, Call.RECV, Call.ISEND, Call.IRECV, Call.SSEND, Call.ISSEND, Call.SENDRECV):
        d["tag"], d["nbytes"] = int(trace.tag[i]), int(trace.nbytes[i])
    if trace.line is not None and trace.line[i] >= 0:
        d["line"] = int(trace.line[i])
    return d


def _deadlock(trace: Trace, pc: np.ndarray, end: np.ndarray, pdst: np.ndarray, psrc: np.ndarray, coll: Any,
              reqs: Any, sdone: np.ndarray) -> DeadlockError:
    blocked = np.flatnonzero(pc < end)
    details = []
    for r in blocked.tolist():
        i = int(pc[r])
        d = _describe(trace, i)
        c = int(trace.call[i])
        why = []
        if c in (Call.RECV, Call.SENDRECV):
            k = int(psrc[i])
            why.append("no matching send in the trace" if k == -1 else
                       f"its message (rank {int(trace.rank[k])} event {int(trace.seq[k])}) is not sent")
        if c in (Call.SEND, Call.SSEND, Call.SENDRECV) and not sdone[i]:
            j = int(pdst[i])
            why.append("no matching receive in the trace" if j == -1 else
                       f"rendezvous: rank {int(trace.rank[j])} has not posted the receive (event {int(trace.seq[j])})")
        if Call.WAIT <= c <= Call.TESTSOME:
            for q in range(int(reqs.ref_ptr[i]), int(reqs.ref_ptr[i + 1])):
                e = int(reqs.created[q])
                if trace.call[e] == Call.IRECV:
                    k = int(psrc[e])
                    if k == -1:
                        why.append(f"request of Irecv event {int(trace.seq[e])} (source {int(trace.peer[e])}, "
                                   f"tag {int(trace.tag[e])}): no matching send in the trace")
                    elif k >= 0 and not sdone[k]:
                        why.append(f"request of Irecv event {int(trace.seq[e])} (source {int(trace.peer[e])}, "
                                   f"tag {int(trace.tag[e])}): not yet sent")
                elif not sdone[e]:
                    j = int(pdst[e])
                    why.append(f"request of {CALL_NAMES[int(trace.call[e])]} event {int(trace.seq[e])} (dest "
                               f"{int(trace.peer[e])}, tag {int(trace.tag[e])}): "
                               + ("no matching receive in the trace" if j == -1 else "receive not posted"))
        if coll.inst[i] >= 0:
            k = int(coll.inst[i])
            why.append(f"collective #{k} on communicator {int(coll.comm[k])}: not every member reaches it")
        d["waiting_for"] = "; ".join(why)
        details.append(d)
    lines = [f"rank {d['rank']} event {d['event']} {d['call']}"
             + (f" peer {d['peer']}" if "peer" in d else "") + (f" tag {d['tag']}" if "tag" in d else "")
             + (f" (line {d['line']})" if "line" in d else "") + f": {d['waiting_for']}" for d in details[:8]]
    more = f"\n  ... and {len(details) - 8} more ranks" if len(details) > 8 else ""
    return DeadlockError(f"{trace.source or 'trace'}: replay deadlocks with {len(details)} of {trace.nprocs} "
                         "ranks blocked:\n  " + "\n  ".join(lines) + more, details)


def _unknown_calls(trace: Trace) -> dict[str, int]:
    """Calls perfmod does not model: ``Call.OTHER`` events and what the reader skipped (``meta["unknown_calls"]``).

    Readers count every unknown call in ``meta`` whether they skipped it or
    kept it as an ``OTHER`` event, so a name's count is the larger of the two.
    """
    out: dict[str, int] = {str(k): int(v) for k, v in dict(trace.meta.get("unknown_calls") or {}).items()}
    other = trace.call == Call.OTHER
    if other.any():
        idx, cnt = np.unique(trace.peer[other], return_counts=True)
        for i, c in zip(idx.tolist(), cnt.tolist(), strict=True):
            name = trace.other_names[int(i)]
            out[name] = max(out.get(name, 0), int(c))
    return dict(sorted(out.items()))


def replay(trace: Trace, platform: Platform | str | Network, model: str = "kmodel", *, mapping: str = "block",
           compute: Callable[[Trace], np.ndarray] | float | np.ndarray | None = None, unknown: str = "skip",
           k_total_rule: str = "counted", stencil: int | None = None, validate: bool = True,
           progress: bool | None = None) -> xr.Dataset:
    """Replay ``trace`` on ``platform`` with a node-aware communication model.

    Parameters
    ----------
    trace : Trace
        The events (:mod:`perfmod.trace`).
    platform : Platform, str or Network
        A platform or its name (:func:`perfmod.machine.platforms.load`): ranks per
        node and socket, protocol thresholds, model parameters; or a
        :class:`~perfmod.models.comm.network.Network` bound to ``model`` and
        ``mapping`` already (the replay binds one otherwise, once).
    model : str
        Point-to-point model, any of :func:`perfmod.models.comm.registry.model_names`
        ("kmodel", "postal", "maxrate", "loggp", "loggp_nic", ...; :mod:`perfmod.replay.costs` says how
        k is counted).  ``"loggp"`` is LogGOPS as LogGOPSim computes it (:mod:`perfmod.replay.loggops`);
        the others follow :mod:`perfmod.replay.kernel`.
    mapping : {"block", "round_robin"}
        Rank placement on nodes.
    compute : callable, float, array or None
        Computation between calls: None keeps the trace's ``compute``; a
        callable ``f(trace) -> seconds per event`` is a compute model (e.g.
        a skeleton's region models); a float or array replaces the values.
    unknown : {"skip", "error"}
        What to do with MPI calls perfmod does not model: those the reader
        kept (``Call.OTHER`` events) and those it skipped and counted in
        ``trace.meta["unknown_calls"]`` (including calls that move nothing,
        such as DUMPI's ``MPI_Comm_rank``): count and skip them (reported in
        the ``unknown_calls`` attribute), or raise :class:`ReplayError`
        listing them.
    k_total_rule : str
        K_total rule for the K-model (:func:`perfmod.models.comm.kmodel.kmodel_counts_from`);
        ``"counted"`` takes it from the trace.
    stencil : int, optional
        Neighbour count for ``k_total_rule="kprime_x_stencil"``.
    validate : bool
        Validate the trace first (:meth:`Trace.validate`).
    progress : bool, optional
        Show a progress bar on stderr over the replay's stages (checks,
        matching, costs, collectives and requests, event loop, dataset); by default for
        traces of :data:`PROGRESS_EVENTS` events or more.

    Returns
    -------
    xarray.Dataset
        Over ``rank``: ``comm_time`` (send + recv + wait + collective),
        ``send_time``, ``recv_time`` (Recv and Sendrecv), ``wait_time``
        (waits and tests), ``collective_time``, ``compute_time``,
        ``total_time`` (the rank's clock at its last event); over (``rank``,
        ``mode``): ``messages`` and ``bytes_sent``; over (``rank``,
        ``iteration``) when the trace numbers iterations:
        ``comm_time_iteration``; per phase the counts behind k.  Times in
        seconds.

    Raises
    ------
    DeadlockError
        Ranks block forever; the message names the ranks, calls, peers and
        tags and what each waits for.
    ReplayError
        Truncated messages, mismatched collectives, or unknown calls with
        ``unknown="error"``.
    """
    with _stage_bar(trace, progress) as bar:
        return _replay(trace, platform, model, mapping, compute, unknown, k_total_rule, stencil, validate, bar)


def replay_times(trace: Trace, platform: Platform | str | Network, model: str = "kmodel", *,
                 mapping: str = "block", unknown: str = "skip", progress: bool | None = None) -> dict[str, np.ndarray]:
    """:func:`replay`'s per-rank times (:func:`run_times`; same arguments, checks and warnings) without its dataset:
    what the command line prints, which so starts without importing xarray and pandas."""
    with _stage_bar(trace, progress) as bar:
        return _replay(trace, platform, model, mapping, None, unknown, "counted", None, True, bar, times_only=True)


def _stage_bar(trace: Trace, progress: bool | None) -> Any:
    """The progress bar over the replay's stages: shown for traces of :data:`PROGRESS_EVENTS` events or more unless
    ``progress`` says otherwise."""
    show = len(trace) >= PROGRESS_EVENTS if progress is None else bool(progress)
    return tqdm(total=len(_STAGES), desc=f"replay of {len(trace):,} events", unit="stage", disable=not show,
                mininterval=0)


def _loop_shown(bar: Any) -> Any:
    """What shows the ``loggp`` event loop's progress on the stage bar (its generator's events made)."""
    def show(made: int, events: int) -> None:
        bar.set_postfix_str(f"{_STAGES[4]}: {made:,} of {events:,} events made ({made / max(events, 1):.0%})")

    return show


def run_times(acc: np.ndarray, clock: np.ndarray) -> dict[str, np.ndarray]:
    """``comm_time``, ``send_time``, ``recv_time``, ``wait_time``, ``collective_time``, ``compute_time`` and
    ``total_time`` per rank (s), as in :func:`replay`'s dataset, from the kernel's accumulators and clocks."""
    return {"comm_time": acc[:, ACC_SEND] + acc[:, ACC_RECV] + acc[:, ACC_WAIT] + acc[:, ACC_COLL],
            "send_time": acc[:, ACC_SEND], "recv_time": acc[:, ACC_RECV], "wait_time": acc[:, ACC_WAIT],
            "collective_time": acc[:, ACC_COLL], "compute_time": acc[:, ACC_COMPUTE], "total_time": clock}


def _replay(trace: Trace, platform: Platform | str | Network, model: str, mapping: str, compute: Any, unknown: str,
            k_total_rule: str, stencil: int | None, validate: bool, bar: Any, times_only: bool = False) -> Any:
    def stage(k: int) -> None:  # stage k begins
        if k:
            bar.update()
        bar.set_postfix_str(_STAGES[k])

    stage(0)
    net = bind(platform, model, mapping, trace.nprocs)  # an unknown model fails here, before any work
    if unknown not in ("skip", "error"):
        raise ValueError(f"unknown must be 'skip' or 'error', got {unknown!r}")
    if validate:
        trace.validate()  # resolve_requests below checks the requests
    unknown_calls = _unknown_calls(trace)
    if unknown == "error" and unknown_calls:
        other = np.flatnonzero(trace.call == Call.OTHER)
        where = trace._at(int(other[0])) if other.size else (trace.source or "trace")
        raise ReplayError(f"{where}: unknown MPI calls in the trace: "
                          + ", ".join(f"{k} x{v}" for k, v in unknown_calls.items())
                          + " (kept as events, or skipped by the reader and counted in trace.meta)",
                          [{"call": k, "count": v} for k, v in unknown_calls.items()])
    wildcards = has_wildcards(trace)
    if net.model.replay != "loggops":  # the LogGOPS replay checks its own (larger) need
        per_event = _BYTES_PER_EVENT + (_WILDCARD_BYTES_PER_EVENT if wildcards else 0)
        check_fits(_FIXED_BYTES + per_event * len(trace), f"the {net.model.name} replay of {len(trace):,} events")
    comp = _compute_times(trace, compute)
    stage(1)
    # the stages in the order that keeps the fewest arrays alive at each one's peak: the matching's per-message
    # lists are needed until the costs, the collectives and the requests by the event loop
    n = len(trace)
    # the message kernel's event rows (kernel.replay_events) take the matching in place
    evi = np.empty((n, 3), dtype=index_dtype(n)) if net.model.replay != "loggops" else None
    match = match_messages(trace, evi, wildcards)
    stage(2)
    costs = message_costs(trace, match, net, k_total_rule, stencil)
    # what the dataset needs of the per-message lists (sender, bytes, mode), so that they are freed before the
    # event loop
    msgs, bytes_sent = per_mode(trace.nprocs, match.src, costs.mode, match.nbytes)
    pdst, psrc, dynamic, phases = match.pdst, match.psrc, match.dynamic, costs.phases
    msg_time, rndv = costs.time, costs.rndv  # msg_time: per message, in the order of the send events
    del match, costs
    stage(3)
    coll = collective_instances(trace)
    reqs = resolve_requests(trace)
    n_iter = int(trace.iteration.max(initial=-1)) + 1 if trace.iteration is not None else 0
    iteration = trace.iteration if trace.iteration is not None else np.zeros(0, np.int32)
    rank_ptr = trace.rank_ptr
    if net.model.replay == "loggops":
        stage(4)
        # what the event loop does not read is let go before it runs (a deadlock's report matches again): the
        # message costs, the collective instances (checked above) and, without wildcard receives, the matching
        del msg_time, rndv, coll, psrc
        unmatched = None
        if dynamic is None:
            unmatched = _unmatched_sends(trace, pdst)
            del pdst
        res = replay_loggops(trace, net, comp, reqs, n_iter, iteration, matches=dynamic is not None,
                             show=None if bar.disable else _loop_shown(bar))
        clock, acc, iter_comm = res.clock, res.acc, res.iter_comm
        loggops_attrs = {"operations": res.operations}  # the graph operations the replay simulated
        if not res.ok:
            pc = rank_ptr[1:].copy()
            pc[list(res.blocked)] = list(res.blocked.values())
            again = match_messages(trace, None, wildcards)
            raise _deadlock(trace, pc, rank_ptr[1:], again.pdst, again.psrc, collective_instances(trace), reqs,
                            res.sdone)
        if dynamic is not None:  # the kernel matched the messages to wildcard receives
            dyn = dynamic.sgrp >= 0
            pdst[dyn] = res.pdst[dyn]
        never_completed = reqs.never_completed
    else:
        loggops_attrs = {}
        unmatched = None
        inst_cost = collective_costs(trace, coll, net)
        stage(4)
        # each event's state in two rows the loop reads together (kernel.replay_events): indices, then times
        pack_events(trace.call, coll.inst, reqs.ref_ptr, reqs.created, evi)  # pdst and psrc are its columns already
        created, never_completed = reqs.created, reqs.never_completed
        inst = (coll.size, inst_cost, coll.members_ptr, coll.members)
        del pdst, psrc, coll, reqs  # kept in evi; rebuilt from the trace should it deadlock
        evf = np.empty((n, 2))
        pack_times(trace.call, evi, np.negative(msg_time, out=msg_time), evf)
        del msg_time
        flag = rndv.view(np.uint8)  # F_RNDV where True
        with first_call("the replay's event loop"):
            status, clock, acc, iter_comm, pc = replay_events(
                rank_ptr, trace.rank, trace.call, comp, evi, evf, flag, created, *inst, iteration, n_iter,
                *_dynamic_args(dynamic, n))
        del flag, rndv
        if status != STATUS_OK:
            sdone = ~np.signbit(evf[:, 1])
            del evf
            reqs, coll = resolve_requests(trace), collective_instances(trace)
            pdst, psrc = np.full(n, -1, dtype=evi.dtype), np.full(n, -1, dtype=evi.dtype)
            unpack_matching(trace.call, evi, pdst, psrc)
            raise _deadlock(trace, pc, rank_ptr[1:], pdst, psrc, coll, reqs, sdone)
        del evf
        pdst = evi[:, 0]  # the send events' receives, the kernel's wildcard matches included
    if dynamic is not None:
        _check_truncation(trace, dynamic, pdst)
    if unmatched is None:
        unmatched = _unmatched_sends(trace, pdst)
    if unmatched:
        warnings.warn(f"{trace.source or 'trace'}: {unmatched} eager sends have no matching receive "
                      "(replayed as sent)", ReplayWarning, stacklevel=3)
    if never_completed.size:
        warnings.warn(f"{trace.source or 'trace'}: {never_completed.size} requests are never waited for "
                      f"(first: {trace._at(int(never_completed[0]))})", ReplayWarning, stacklevel=3)
    stage(5)
    if times_only:
        bar.update()
        return run_times(acc, clock)
    ds = _dataset(trace, net.platform, net.model.name, mapping, acc, clock, iter_comm if n_iter else None, msgs,
                  bytes_sent, phases, unknown_calls, k_total_rule, unmatched, int(never_completed.size))
    ds.attrs.update(loggops_attrs)
    bar.update()
    return ds


def _dataset(trace: Trace, plat: Platform, model: str, mapping: str, acc: np.ndarray, clock: np.ndarray,
             iter_comm: np.ndarray | None, msgs: np.ndarray, nbytes: np.ndarray, phases: dict[str, np.ndarray],
             unknown_calls: dict[str, int], k_total_rule: str, unmatched: int, never_completed: int) -> xr.Dataset:
    import xarray as xr

    p = trace.nprocs
    times = run_times(acc, clock)

    def var(values: np.ndarray, long_name: str, dims: Any = "rank", units: str = "s") -> tuple:
        return (dims, values, {"units": units, "long_name": long_name})

    data = {
        "comm_time": var(times["comm_time"], f"communication time per rank ({model})"),
        "send_time": var(times["send_time"], "time in blocking sends"),
        "recv_time": var(times["recv_time"], "time in blocking receives and sendrecvs"),
        "wait_time": var(times["wait_time"], "time in waits and tests"),
        "collective_time": var(times["collective_time"], "time in collectives"),
        "compute_time": var(times["compute_time"], "computation between calls"),
        "total_time": var(times["total_time"], "replayed run time per rank (clock at the last event)"),
        "messages": var(msgs, "point-to-point messages sent per mode", ("rank", "mode"), "1"),
        "bytes_sent": var(nbytes, "point-to-point bytes sent per mode", ("rank", "mode"), "B"),
    }
    coords: dict[str, Any] = {"rank": np.arange(p), "mode": list(MODES)}
    if iter_comm is not None:
        data["comm_time_iteration"] = var(iter_comm, "communication time per rank and iteration",
                                          ("rank", "iteration"))
        coords["iteration"] = np.arange(iter_comm.shape[1])
    labels = {"k_inter": ("1", "K_inter: max over nodes of inter-node messages sent in the phase"),
              "k_total": ("1", f"K_total ({k_total_rule})"), "k_prime": ("1", "k': ranks per node"),
              "k": ("1", "K-model k = K_inter / K_total * k' (Eq. 4)"),
              "k_node": ("1", "max-rate k: most ranks of a node sending in the phase"),
              "k_socket": ("1", "max-rate k: most ranks of a socket sending in the phase")}
    for name, values in phases.items():
        data[f"phase_{name}"] = var(np.asarray(values, dtype=float), labels[name][1], "phase", labels[name][0])
    if phases:
        coords["phase"] = np.arange(len(next(iter(phases.values()))))
    ds = xr.Dataset(data, coords=coords)
    ds.attrs.update(provenance_attrs(
        "replay", f"trace replay of {trace.source or 'an in-memory trace'}",
        {"model": model, "platform": plat.name, "mapping": mapping, "k_total_rule": k_total_rule,
         "nprocs": p, "events": len(trace), "trace_meta": dict(trace.meta)}))
    ds.attrs.update(model=model, platform=plat.name, events=len(trace),
                    unknown_calls=", ".join(f"{k}={v}" for k, v in unknown_calls.items()) or "none",
                    unmatched_sends=unmatched, requests_never_completed=never_completed)
    return ds
