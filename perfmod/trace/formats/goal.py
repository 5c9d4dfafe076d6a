"""GOAL schedules for LogGOPSim / ATLAHS: writer, and a reader to check them (paper 000 §2.2, §3.2).

Paper: ``shared/papers/000_95042cffe07dd549.txt`` §2.2, §3.2.  GOAL
("Group Operation Assembly Language", Hoefler et al.) describes each rank's
operations and their dependencies; LogGOPSim (github.com/spcl/LogGOPSim,
``src/LogGOPSim/txt2bin.re``) and ATLAHS simulate it at message or packet
level.  The text form::

    num_ranks 2

    rank 0 {
    l1: calc 1500
    l2: send 8b to 1 tag 0
    l2 requires l1
    l3: recv 8b from 1 tag 0
    l3 requires l1
    }

``calc`` takes integer time units (nanoseconds by default), sizes are bytes
(``8b``), a recv from ``-1`` is any source, tag ``-1`` any tag; ``A requires
B`` starts A after B completed, ``A irequires B`` after B started; ``//``
starts a comment.

How a :class:`~perfmod.trace.core.Trace` becomes a schedule
------------------------------------------------------------
Per rank, the writer keeps the *frontier*: the operations the next blocking
step must wait for.  Compute between calls is a ``calc``; blocking sends
and receives chain (each requires the frontier and becomes it); ``Isend``
and ``Irecv`` require the frontier but do not join it, and the wait that
completes them (``Wait``, ``Waitall``, ``Waitany``, ``Waitsome``, a
``Test`` that succeeded) adds them to it; several frontier operations are
joined by a ``calc 0`` before the next step, so no operation has more than
one dependency besides the joins.  ``Sendrecv`` posts its send and receive
together.  Collectives are expanded into point-to-point messages by the
algorithms MPICH documents: dissemination barrier, binomial-tree broadcast
and reduce, recursive-doubling allreduce (with the non-power-of-two fold),
ring allgather, linear gather/scatter, pairwise-exchange alltoall(v), and
reduce-scatter as reduce then scatter; each round requires the previous
one.  Messages on communicator ``c != 0`` carry tag ``tag * 1000 + c`` (the
convention of LogGOPSim's Schedgen2) and collective messages the tag
:data:`COLLECTIVE_TAG` ``+ c``; ``MPI_PROC_NULL`` operations are left out.
GOAL has no communicator contexts: a receive with ``MPI_ANY_TAG`` can match a
collective's message in a simulator if one from the same source is already
there, where MPI would not.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from perfmod.core.io import atomic_path
from perfmod.trace.core import ANY_SOURCE, ANY_TAG, PROC_NULL, Call, Trace, TraceError
from perfmod.trace.formats.textio import FormatError, alltoallv_recv_bytes, gc_paused, numbered_lines
from perfmod.trace.requests import resolve_requests

__all__ = ["COLLECTIVE_TAG", "GoalOp", "GoalSchedule", "collective_rounds", "read_goal", "write_goal"]

COLLECTIVE_TAG = 1_000_000_000  #: tag base of the messages a collective is expanded into

_P2P = {Call.SEND: "send", Call.SSEND: "send", Call.RECV: "recv"}
_NONBLOCKING = {Call.ISEND: "send", Call.ISSEND: "send", Call.IRECV: "recv"}
_WAITS = (Call.WAIT, Call.WAITALL, Call.WAITANY, Call.WAITSOME, Call.TEST, Call.TESTALL, Call.TESTANY,
          Call.TESTSOME)


def _binomial_bcast(v: int, p: int) -> list[list[tuple[str, int]]]:
    rounds: list[list[tuple[str, int]]] = []
    mask = 1
    while mask < p:
        if v & mask:
            rounds.append([("recv", v - mask)])
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if v + mask < p:
            rounds.append([("send", v + mask)])
        mask >>= 1
    return rounds


def _binomial_reduce(v: int, p: int) -> list[list[tuple[str, int]]]:
    rounds: list[list[tuple[str, int]]] = []
    mask = 1
    while mask < p:
        if v & mask:
            rounds.append([("send", v - mask)])
            break
        if v + mask < p:
            rounds.append([("recv", v + mask)])
        mask <<= 1
    return rounds


def _recursive_doubling(v: int, p: int) -> list[list[tuple[str, int]]]:
    pof2 = 1 << (p.bit_length() - 1)
    rem = p - pof2
    rounds: list[list[tuple[str, int]]] = []
    if v < 2 * rem:
        if v % 2 == 0:
            return [[("send", v + 1)], [("recv", v + 1)]]
        rounds.append([("recv", v - 1)])
        new = v // 2
    else:
        new = v - rem
    mask = 1
    while mask < pof2:
        nd = new ^ mask
        dst = nd * 2 + 1 if nd < rem else nd + rem
        rounds.append([("send", dst), ("recv", dst)])
        mask <<= 1
    if v < 2 * rem:
        rounds.append([("send", v - 1)])
    return rounds


def collective_rounds(call: int, v: int, p: int, root: int = 0) -> list[list[tuple[str, int]]]:
    """Rounds of point-to-point operations of rank ``v`` (of ``p``) in a collective.

    Each round is a list of ``("send" | "recv", peer)`` posted together;
    a round requires the previous one.  Peers are ranks in the
    communicator.  Message sizes are the caller's (see :func:`write_goal`).
    """
    c = Call(call)
    rel = (v - root) % p
    unrel = lambda rounds: [[(k, (x + root) % p) for k, x in rnd] for rnd in rounds]  # noqa: E731
    if p == 1:
        return []
    if c == Call.BARRIER:
        return [[("send", (v + (1 << k)) % p), ("recv", (v - (1 << k)) % p)] for k in range((p - 1).bit_length())]
    if c == Call.BCAST:
        return unrel(_binomial_bcast(rel, p))
    if c == Call.REDUCE:
        return unrel(_binomial_reduce(rel, p))
    if c == Call.ALLREDUCE:
        return _recursive_doubling(v, p)
    if c == Call.ALLGATHER:
        return [[("send", (v + 1) % p), ("recv", (v - 1) % p)] for _ in range(p - 1)]
    if c in (Call.ALLTOALL, Call.ALLTOALLV):
        return [[op for k in range(1, p) for op in (("send", (v + k) % p), ("recv", (v - k) % p))]]
    if c == Call.GATHER:
        return [[("recv", r) for r in range(p) if r != v]] if v == root else [[("send", root)]]
    if c == Call.SCATTER:
        return [[("send", r) for r in range(p) if r != v]] if v == root else [[("recv", root)]]
    raise ValueError(f"no GOAL expansion for {c.name}")


class _WorldRanks:
    """Rank in a communicator -> world rank (negative wildcards pass through), and back."""

    def __init__(self, members: np.ndarray) -> None:
        self.members = members
        self._world = members.tolist()
        self._pos: dict[int, int] | None = None

    def __call__(self, x: int) -> int:
        return x if x < 0 else self._world[x]

    def position(self, world_rank: int) -> int:
        """Rank in the communicator of ``world_rank``."""
        if self._pos is None:
            self._pos = {w: k for k, w in enumerate(self._world)}
        return self._pos[world_rank]


class _Comms(dict):
    """Communicator id -> :class:`_WorldRanks`, made once per communicator."""

    def __init__(self, trace: Trace) -> None:
        super().__init__()
        self.trace = trace

    def __missing__(self, comm: int) -> _WorldRanks:
        self[comm] = value = _WorldRanks(self.trace.comm_ranks(comm))
        return value


class _RankWriter:
    def __init__(self, rank: int, unit: float) -> None:
        self.rank, self.unit = rank, unit
        self.lines: list[str] = []
        self.n = 0
        self.frontier: list[str] = []

    def op(self, text: str, deps: list[str]) -> str:
        self.n += 1
        label = f"l{self.n}"
        self.lines.append(f"{label}: {text}")
        if deps:
            self.lines += [f"{label} requires {d}" for d in deps]
        return label

    def join(self) -> list[str]:
        if len(self.frontier) > 1:
            self.frontier = [self.op("calc 0", self.frontier)]
        return self.frontier

    def calc(self, seconds: float) -> None:
        units = int(round(seconds / self.unit))
        if units > 0:
            self.frontier = [self.op(f"calc {units}", self.join())]

    def round(self, texts: list[str]) -> None:
        deps = self.join()
        if texts:
            self.frontier = [self.op(t, deps) for t in texts]


def _msg(kind: str, nbytes: int, peer: int, tag: int) -> str:
    if kind == "send":
        return f"send {nbytes}b to {peer} tag {tag}"
    return f"recv {nbytes}b from {-1 if peer == ANY_SOURCE else peer} tag {-1 if tag == ANY_TAG else tag}"


_KIND = {int(k): v for k, v in (_P2P | _NONBLOCKING).items()}
_BLOCKING = frozenset(int(k) for k in _P2P)
_WAIT_CODES = frozenset(int(k) for k in _WAITS)
_ROOTED = frozenset(int(k) for k in (Call.BCAST, Call.REDUCE, Call.GATHER, Call.SCATTER))
_EXPANDED = frozenset(int(k) for k in (Call.BARRIER, Call.BCAST, Call.REDUCE, Call.ALLREDUCE, Call.ALLGATHER,
                                       Call.ALLTOALL, Call.ALLTOALLV, Call.GATHER, Call.SCATTER))


@lru_cache(maxsize=65536)
def _rounds(call: int, v: int, p: int, root: int) -> tuple[tuple[tuple[str, int], ...], ...]:
    """:func:`collective_rounds`, cached (every iteration of a rank repeats the same collectives)."""
    return tuple(tuple(rnd) for rnd in collective_rounds(call, v, p, root))


def _rank_schedule(trace: Trace, r: int, reqs, a2av: dict[int, list[int]], unit: float,
                   comms: _Comms) -> list[str]:
    """The GOAL lines of rank ``r``'s block (one pass over its events, Python lists, no per-event NumPy)."""
    w = _RankWriter(r, unit)
    pending: dict[int, str] = {}
    sl = trace.rank_events(r)
    a, b = sl.start, sl.stop
    calls, cms, tags = trace.call[sl].tolist(), trace.comm[sl].tolist(), trace.tag[sl].tolist()
    nbs, peers, comp = trace.nbytes[sl].tolist(), trace.peer[sl].tolist(), trace.compute[sl].tolist()
    ref = reqs.ref_ptr[a:b + 1].tolist()
    created = reqs.created[ref[0]:ref[-1]].tolist() if b > a else []
    for j in range(b - a):
        i = a + j
        c, comm = calls[j], cms[j]
        if comp[j] > 0:
            w.calc(comp[j])
        world = comms[comm]
        tag = tags[j]
        tag = tag if comm == 0 or tag == ANY_TAG else tag * 1000 + comm
        nb, peer = nbs[j], peers[j]
        kind = _KIND.get(c)
        if kind is not None:
            if peer == PROC_NULL:
                continue
            if kind == "send":
                text = f"send {nb}b to {world(peer)} tag {tag}"
            else:
                src = -1 if peer == ANY_SOURCE else world(peer)
                text = f"recv {nb}b from {src} tag {-1 if tag == ANY_TAG else tag}"
            if c in _BLOCKING:
                w.round([text])
            else:
                pending[i] = w.op(text, w.join())
        elif c in _WAIT_CODES:
            done = [pending.pop(x) for x in created[ref[j] - ref[0]:ref[j + 1] - ref[0]] if x in pending]
            w.frontier = w.frontier + done
        elif c == Call.SENDRECV:
            src, rb, rt = (int(x) for x in trace.aux_of(i))
            rt = rt if comm == 0 or rt == ANY_TAG else rt * 1000 + comm
            texts = ([_msg("send", nb, world(peer), tag)] if peer != PROC_NULL else []) + (
                [_msg("recv", rb, world(src), rt)] if src != PROC_NULL else [])
            w.round(texts)
        elif c == Call.REDUCE_SCATTER:
            v, p = world.position(r), len(world.members)
            ctag = COLLECTIVE_TAG + comm
            for call, size in ((Call.REDUCE, nb), (Call.SCATTER, -(-nb // p))):
                for rnd in _rounds(int(call), v, p, 0):
                    w.round([_msg(k, size, world(x), ctag) for k, x in rnd])
        elif c in _EXPANDED:
            v, p = world.position(r), len(world.members)
            ctag = COLLECTIVE_TAG + comm
            root = peer if c in _ROOTED else 0
            sizes = trace.aux_of(i).tolist() if c == Call.ALLTOALLV else None
            for rnd in _rounds(c, v, p, root):
                texts = []
                for k, x in rnd:
                    if sizes is not None:
                        size = sizes[x] if k == "send" else a2av[i][x]
                    else:
                        size = 0 if c == Call.BARRIER else nb
                    texts.append(_msg(k, size, world(x), ctag))
                w.round(texts)
    return w.lines


def write_goal(trace: Trace, path: str | os.PathLike, time_unit: float = 1e-9, progress: bool = False) -> Path:
    """Write ``trace`` as a GOAL text schedule (``txt2bin`` input of LogGOPSim, ATLAHS).

    Parameters
    ----------
    trace : Trace
        Any trace; communicators are translated to world ranks.
    path : path
        Destination (written atomically).
    time_unit : float
        Seconds per ``calc`` unit (1e-9: nanoseconds, LogGOPSim's usual unit).
    progress : bool
        Show a progress bar over the ranks.

    Returns
    -------
    Path
        ``path``.
    """
    if time_unit <= 0:
        raise ValueError(f"time_unit must be > 0 s, got {time_unit!r}")
    reqs = resolve_requests(trace)
    a2av = alltoallv_recv_bytes(trace)
    comms = _Comms(trace)
    out = [f"// GOAL schedule written by perfmod from {trace.source or 'a trace'}: calc in units of "
           f"{time_unit!r} s, sizes in bytes", f"num_ranks {trace.nprocs}", ""]
    with gc_paused():
        for r in tqdm(range(trace.nprocs), desc="GOAL ranks", disable=not progress):
            out += [f"rank {r} {{", *_rank_schedule(trace, r, reqs, a2av, time_unit, comms), "}", ""]
    dest = Path(path)
    with atomic_path(dest) as tmp:
        tmp.write_text("\n".join(out))
    return dest


class _Lazy(dict):
    """Per-rank containers made on first use (a schedule may declare far more ranks than it lists)."""

    def __init__(self, factory: type) -> None:
        super().__init__()
        self.factory = factory

    def __missing__(self, rank: int) -> Any:
        self[rank] = value = self.factory()
        return value


@dataclass(frozen=True)
class GoalOp:
    """One GOAL operation: ``kind`` is ``"send"``, ``"recv"`` or ``"calc"``; ``peer``/``tag`` -1 = any.

    ``cpu`` and ``nic`` are LogGOPSim's extensions (``... cpu 1 nic 0``):
    the CPU and network interface of the rank the operation runs on.
    """

    label: str
    kind: str
    size: int
    peer: int = -1
    tag: int = 0
    line: int = 0
    cpu: int = 0
    nic: int = 0


@dataclass
class GoalSchedule:
    """A parsed GOAL schedule: operations and dependencies per rank.

    ``ops[r]`` maps labels to operations and ``requires[r]`` lists ``(a, b, start)`` (ranks
    without operations read as empty): op ``a`` of rank ``r`` waits for
    ``b`` to complete (``start=False``, ``requires``) or to start (``irequires``).
    """

    num_ranks: int
    ops: Mapping[int, dict[str, GoalOp]] = field(default_factory=dict)
    requires: Mapping[int, list[tuple[str, str, bool]]] = field(default_factory=dict)
    source: str = ""

    def messages(self, kind: str) -> list[tuple[int, int, int, int]]:
        """``(src, dst, tag, bytes)`` of every send (``kind="send"``) or receive, sorted."""
        out = []
        for r, ops in sorted(self.ops.items()):
            for op in ops.values():
                if op.kind == kind:
                    out.append((r, op.peer, op.tag, op.size) if kind == "send" else (op.peer, r, op.tag, op.size))
        return sorted(out)

    def total_calc(self, rank: int) -> int:
        """Sum of the ``calc`` units of ``rank``."""
        return sum(op.size for op in self.ops[rank].values() if op.kind == "calc")


_OP = re.compile(r"^(?:([A-Za-z]\w*)\s*:\s*)?(send|recv|calc)\s+(\d+)\s*(b?)\s*(?:(to|from)\s+(-1|\d+))?"
                 r"(?:\s+tag\s+(-1|\d+))?(?:\s+cpu\s+(\d+))?(?:\s+nic\s+(\d+))?$")
_DEP = re.compile(r"^([A-Za-z]\w*)\s+(requires|irequires)\s+([A-Za-z]\w*)$")


def read_goal(path: str | os.PathLike) -> GoalSchedule:
    """Parse a GOAL text schedule; errors name file, line and what is wrong.

    Checks what ``txt2bin`` checks: ``num_ranks`` first, balanced rank
    blocks, operation syntax (``b`` after send/recv sizes, ``to``/``from``),
    dependencies on labels defined earlier in the same rank block.
    """
    sched: GoalSchedule | None = None
    rank: int | None = None
    for n, raw in numbered_lines(path):
        text = raw.split("//", 1)[0].strip()
        if not text:
            continue
        if sched is None:
            m = re.match(r"^num_ranks\s+(\d+)$", text)
            if not m:
                raise FormatError(path, n, f"expected 'num_ranks N' first, got {text!r}")
            k = int(m.group(1))
            sched = GoalSchedule(k, _Lazy(dict), _Lazy(list), str(path))
            continue
        if rank is None:
            m = re.match(r"^rank\s+(\d+)\s*\{$", text)
            if not m:
                raise FormatError(path, n, f"expected 'rank R {{', got {text!r}")
            rank = int(m.group(1))
            if rank >= sched.num_ranks:
                raise FormatError(path, n, f"rank {rank} >= num_ranks {sched.num_ranks}")
            continue
        if text == "}":
            rank = None
            continue
        ops = sched.ops[rank]
        d = _DEP.match(text)
        if d:
            for lab in (d.group(1), d.group(3)):
                if lab not in ops:
                    raise FormatError(path, n, f"rank {rank}: dependency on undefined label {lab!r}")
            sched.requires[rank].append((d.group(1), d.group(3), d.group(2) == "irequires"))
            continue
        m = _OP.match(text)
        if not m or (m.group(2) != "calc") != bool(m.group(5)) or (m.group(2) != "calc") != (m.group(4) == "b"):
            raise FormatError(path, n, f"rank {rank}: not a GOAL operation: {text!r}")
        kind = m.group(2)
        if (kind, m.group(5)) in (("send", "from"), ("recv", "to")):
            raise FormatError(path, n, f"rank {rank}: {kind} takes '{'to' if kind == 'send' else 'from'}'")
        label = m.group(1) or f"_anon{n}"
        if label in ops:
            raise FormatError(path, n, f"rank {rank}: label {label!r} defined twice")
        ops[label] = GoalOp(label, kind, int(m.group(3)), int(m.group(6) or -1), int(m.group(7) or 0), n,
                            int(m.group(8) or 0), int(m.group(9) or 0))
    if sched is None:
        raise TraceError(f"{path}: empty GOAL file (no num_ranks)")
    if rank is not None:
        raise TraceError(f"{path}: rank {rank} block is not closed with '}}'")
    return sched
