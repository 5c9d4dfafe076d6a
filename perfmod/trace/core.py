"""Columnar in-memory MPI trace (paper 000 §2.2, §3.2: the input of the replay).

Paper: Choi et al., ICS 2020 (paper 000).  NACoM replays DUMPI
traces, "all the MPI routines called by the program ... (with
dependencies)"; perfmod keeps such a trace as one set of NumPy columns, one
row per event (an MPI call or an explicit compute region), whatever format
it was read from.

Layout
------
Events are sorted by ``rank``, then ``seq``; ``rank_ptr`` (``nprocs + 1``
offsets) gives each rank's slice, so ``trace.rank_events(r)`` is a view.

=============  =======  ==========================================================
column         dtype    meaning
=============  =======  ==========================================================
``rank``       int32    world rank that made the call
``seq``        int32    position among the rank's events (0, 1, ...)
``call``       uint8    :class:`Call` code
``peer``       int32    destination (sends), source (receives), root (rooted
                        collectives), index into ``other_names`` (``Call.OTHER``),
                        :data:`NO_PEER` otherwise; ranks are ranks *in* ``comm``;
                        :data:`ANY_SOURCE`, :data:`PROC_NULL` allowed
``nbytes``     int64    bytes sent (sends), receive buffer size (receives),
                        vector size per rank (collectives; per destination for
                        ``ALLTOALL``), 0 otherwise
``tag``        int32    message tag (sends/receives; :data:`ANY_TAG` allowed), 0 otherwise
``comm``       int32    communicator id, 0 = ``MPI_COMM_WORLD``
``request``    int64    request created (``ISEND``, ``IRECV``) or completed
                        (``WAIT``; ``TEST`` that returned flag = true), else
                        :data:`NO_REQUEST`
``compute``    float64  seconds of computation on the rank between the end of
                        its previous event and the start of this one (for a
                        ``COMPUTE`` event: its duration)
``aux_ptr``    int64    ``len + 1`` offsets into ``aux`` (CSR)
``aux``        int64    per-event integer list (see below)
=============  =======  ==========================================================

Optional columns (``None`` when the source does not have them):

- ``t_entry``, ``t_exit`` (int64): wall-clock entry and exit of the call in
  integer nanoseconds (exact, no float rounding); :data:`NO_TIME` where an
  event has none.
- ``iteration`` (int32): application iteration the event belongs to (-1
  outside iterations); the replay reports per-iteration times when present.
- ``line`` (int64): line in the source file the event was read from, so
  errors can name ``file:line``.

The ``aux`` list of an event, by call:

- ``WAITALL``, ``WAITANY``, ``WAITSOME``, ``TESTALL``, ``TESTANY``,
  ``TESTSOME``: the requests the call completed in the recorded run (for
  ``WAITANY`` the one returned; for a test that returned false: none);
- ``SENDRECV``: ``[source, recv_nbytes, recv_tag]`` (the send side is in
  ``peer``, ``nbytes``, ``tag``);
- ``ALLTOALLV``: bytes sent to each rank of ``comm`` (``comm`` size entries);
- empty otherwise.

Communicators other than world are described by ``comms``: a mapping from
id to the array of world ranks of its members (index = rank in the
communicator).  ``other_names`` names the MPI calls the reader did not know
(``Call.OTHER`` events), so the replay can count and report them.

Building
--------
:class:`TraceBuilder` appends events one at a time (``append``) or as
arrays for many ranks at once (``extend``, the fast path used by
:mod:`perfmod.apps.traces`); ``build()`` sorts by (rank, seq), numbers
``seq`` per rank in append order unless given, derives ``compute`` from
entry/exit times where they are recorded and no compute was given, and
validates.  :meth:`Trace.validate` raises :class:`TraceError` naming the
rank, the sequence number, the call and the field (and ``file:line`` when
``line`` and ``source`` are known).
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

__all__ = [
    "Call",
    "CALL_NAMES",
    "P2P_SEND",
    "P2P_RECV",
    "NONBLOCKING",
    "WAITS",
    "COLLECTIVES",
    "ROOTED",
    "NO_PEER",
    "ANY_SOURCE",
    "PROC_NULL",
    "ANY_TAG",
    "NO_REQUEST",
    "NO_TIME",
    "COLUMNS",
    "OPTIONAL_COLUMNS",
    "TraceError",
    "TraceWarning",
    "Trace",
    "call_code",
]


class Call(enum.IntEnum):
    """MPI calls (and explicit compute) a trace event can record; values are the ``call`` codes."""

    COMPUTE = 0
    SEND = 1
    RECV = 2
    SENDRECV = 3
    ISEND = 4
    IRECV = 5
    WAIT = 6
    WAITALL = 7
    WAITANY = 8
    WAITSOME = 9
    TEST = 10
    TESTALL = 11
    TESTANY = 12
    TESTSOME = 13
    BARRIER = 14
    BCAST = 15
    REDUCE = 16
    ALLREDUCE = 17
    ALLTOALL = 18
    ALLTOALLV = 19
    ALLGATHER = 20
    GATHER = 21
    SCATTER = 22
    REDUCE_SCATTER = 23
    SSEND = 24
    ISSEND = 25
    INIT = 26
    FINALIZE = 27
    OTHER = 255


#: ``Call`` code -> MPI name (``"MPI_Isend"``; ``"compute"`` for COMPUTE).
CALL_NAMES: dict[int, str] = {
    int(c): ("compute" if c is Call.COMPUTE else "other" if c is Call.OTHER
             else "MPI_" + c.name.capitalize())
    for c in Call
}

P2P_SEND = frozenset({Call.SEND, Call.ISEND, Call.SSEND, Call.ISSEND, Call.SENDRECV})
P2P_RECV = frozenset({Call.RECV, Call.IRECV, Call.SENDRECV})
NONBLOCKING = frozenset({Call.ISEND, Call.IRECV, Call.ISSEND})
WAITS = frozenset({Call.WAIT, Call.WAITALL, Call.WAITANY, Call.WAITSOME,
                   Call.TEST, Call.TESTALL, Call.TESTANY, Call.TESTSOME})
COLLECTIVES = frozenset({Call.BARRIER, Call.BCAST, Call.REDUCE, Call.ALLREDUCE, Call.ALLTOALL,
                         Call.ALLTOALLV, Call.ALLGATHER, Call.GATHER, Call.SCATTER, Call.REDUCE_SCATTER})
ROOTED = frozenset({Call.BCAST, Call.REDUCE, Call.GATHER, Call.SCATTER})
LIST_CALLS = frozenset({Call.WAITALL, Call.WAITANY, Call.WAITSOME, Call.TESTALL, Call.TESTANY, Call.TESTSOME})

NO_PEER = -1  #: no peer (calls without one)
ANY_SOURCE = -2  #: ``MPI_ANY_SOURCE``
PROC_NULL = -3  #: ``MPI_PROC_NULL``: the call completes at once and moves nothing
ANY_TAG = -1  #: ``MPI_ANY_TAG``
NO_REQUEST = -1  #: no request
NO_TIME = np.iinfo(np.int64).min  #: entry/exit time not recorded

#: Required per-event columns and their dtypes.
COLUMNS: dict[str, np.dtype] = {
    "rank": np.dtype(np.int32),
    "seq": np.dtype(np.int32),
    "call": np.dtype(np.uint8),
    "peer": np.dtype(np.int32),
    "nbytes": np.dtype(np.int64),
    "tag": np.dtype(np.int32),
    "comm": np.dtype(np.int32),
    "request": np.dtype(np.int64),
    "compute": np.dtype(np.float64),
}
#: Optional per-event columns (``None`` when absent) and their dtypes.
OPTIONAL_COLUMNS: dict[str, np.dtype] = {
    "t_entry": np.dtype(np.int64),
    "t_exit": np.dtype(np.int64),
    "iteration": np.dtype(np.int32),
    "line": np.dtype(np.int64),
}
COLUMN_DEFAULTS = {"peer": NO_PEER, "nbytes": 0, "tag": 0, "comm": 0, "request": NO_REQUEST, "compute": 0.0,
             "t_entry": NO_TIME, "t_exit": NO_TIME, "iteration": -1, "line": -1}


class TraceError(ValueError):
    """A malformed trace; the message names rank, seq, call and field (and file:line when known)."""


class TraceWarning(UserWarning):
    """A trace read, but with something the replay will miss (skipped calls that move data, no MPI events)."""


def call_code(name: str | int | Call) -> int:
    """The :class:`Call` code of ``name`` (``"MPI_Isend"``, ``"isend"``, ``Call.ISEND`` or 4)."""
    if isinstance(name, int | np.integer):
        return int(Call(int(name)))
    key = str(name).upper()
    key = key[4:] if key.startswith("MPI_") else key
    try:
        return int(Call[key])
    except KeyError:
        raise ValueError(f"unknown call {name!r}; known: {', '.join(c.name.lower() for c in Call)}") from None


#: Trace -> its derived views (weak: dropped with the trace; outside the fields, so ``Trace(**vars(t))`` works).
_DERIVED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def code_set(calls: Iterable[Call]) -> np.ndarray:
    return np.array(sorted(int(c) for c in calls), dtype=np.uint8)


@dataclass(frozen=True, eq=False)
class Trace:
    """An MPI trace as NumPy columns (see the module docstring for every field).

    Use :class:`TraceBuilder` to make one; ``len(trace)`` is the number of
    events.  Arrays are not copied: treat them as read-only.
    """

    nprocs: int
    rank: np.ndarray
    seq: np.ndarray
    call: np.ndarray
    peer: np.ndarray
    nbytes: np.ndarray
    tag: np.ndarray
    comm: np.ndarray
    request: np.ndarray
    compute: np.ndarray
    aux_ptr: np.ndarray
    aux: np.ndarray
    t_entry: np.ndarray | None = None
    t_exit: np.ndarray | None = None
    iteration: np.ndarray | None = None
    line: np.ndarray | None = None
    comms: Mapping[int, np.ndarray] = field(default_factory=dict)
    other_names: tuple[str, ...] = ()
    source: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.rank.shape[0])

    @property
    def _cache(self) -> dict[str, Any]:
        """Views derived once per trace (rank offsets, world ranks), kept outside the fields."""
        try:
            return _DERIVED[self]
        except KeyError:
            _DERIVED[self] = cache = {}
            return cache

    def __repr__(self) -> str:
        src = f", source={self.source!r}" if self.source else ""
        return f"Trace(nprocs={self.nprocs}, events={len(self)}{src})"

    # ------------------------------------------------------------------ views
    @property
    def rank_ptr(self) -> np.ndarray:
        """Offsets (``nprocs + 1``) of each rank's events (computed once per trace; treat as read-only)."""
        if "rank_ptr" not in self._cache:
            ptr = np.searchsorted(self.rank, np.arange(self.nprocs + 1, dtype=np.int64)).astype(np.int64)
            self._cache["rank_ptr"], self._cache["bounds"] = ptr, ptr.tolist()
        return self._cache["rank_ptr"]

    def rank_events(self, rank: int) -> slice:
        """The slice of ``rank``'s events (O(1): the offsets are computed once per trace)."""
        if "bounds" not in self._cache:
            self.rank_ptr  # noqa: B018 - fills the cache
        b = self._cache["bounds"]
        return slice(b[rank], b[rank + 1])

    def aux_of(self, i: int) -> np.ndarray:
        """The ``aux`` list of event ``i``."""
        return self.aux[self.aux_ptr[i]:self.aux_ptr[i + 1]]

    def comm_ranks(self, comm: int) -> np.ndarray:
        """World ranks of communicator ``comm`` (index = rank in ``comm``); treat as read-only."""
        if comm == 0:
            if "world" not in self._cache:
                self._cache["world"] = np.arange(self.nprocs, dtype=np.int64)
            return self._cache["world"]
        try:
            return np.asarray(self.comms[comm], dtype=np.int64)
        except KeyError:
            raise TraceError(f"{self._where()}communicator {comm} is not described in trace.comms") from None


    def counts(self) -> dict[str, int]:
        """Number of events per call name (only calls that occur)."""
        codes, n = np.unique(self.call, return_counts=True)
        return {CALL_NAMES[int(c)]: int(k) for c, k in zip(codes, n, strict=True)}

    def has_times(self) -> bool:
        """True when entry/exit times are recorded."""
        return self.t_entry is not None and self.t_exit is not None

    def to_frame(self) -> Any:
        """The events as a pandas DataFrame (one row per event; ``aux`` as lists)."""
        import pandas as pd

        cols = {name: getattr(self, name) for name in COLUMNS}
        cols |= {name: getattr(self, name) for name in OPTIONAL_COLUMNS if getattr(self, name) is not None}
        df = pd.DataFrame(cols)
        df.insert(3, "name", np.array([CALL_NAMES.get(int(c), "?") for c in self.call], dtype=object))
        df["aux"] = [self.aux_of(i).tolist() for i in range(len(self))]
        return df

    def select_ranks(self, ranks: Sequence[int] | np.ndarray) -> np.ndarray:
        """Boolean mask of the events of ``ranks``."""
        return np.isin(self.rank, np.asarray(ranks))

    def with_compute(self, compute: np.ndarray) -> Trace:
        """A copy sharing all columns except ``compute`` (seconds per event)."""
        c = np.asarray(compute, dtype=np.float64)
        if c.shape != self.compute.shape:
            raise TraceError(f"compute has shape {c.shape}, trace has {len(self)} events")
        if not np.all(np.isfinite(c)) or np.any(c < 0):
            bad = int(np.flatnonzero(~(np.isfinite(c) & (c >= 0)))[0])
            raise TraceError(f"{self._at(bad)}: compute must be finite and >= 0 s, got {c[bad]!r}")
        return replace(self, compute=c)

    def with_iterations(self, iteration: np.ndarray) -> Trace:
        """A copy with the ``iteration`` column set (int, one per event, -1 outside iterations)."""
        it = np.asarray(iteration)
        if it.shape != self.rank.shape or it.dtype.kind not in "iu":
            raise TraceError(f"iteration must be {len(self)} integers, got {it.dtype} {it.shape}")
        return replace(self, iteration=it.astype(np.int32))

    def delimit_iterations(self, marker: str | int | Call = "MPI_Allreduce", every: int = 1, comm: int = 0) -> Trace:
        """Number iterations by a call every iteration makes (for traces that do not record them).

        Event ``i`` of a rank belongs to iteration ``floor(m / every)``, ``m``
        the number of ``marker`` calls on ``comm`` the rank made before it;
        the marker call ends its iteration.  E.g. Jacobi2D's residual
        allreduce (``"MPI_Allreduce"``), or ``every=2`` for MiniFE's two dot
        products per CG iteration.
        """
        code = call_code(marker)
        if int(every) != every or every < 1:
            raise TraceError(f"every must be a positive integer, got {every!r}")
        m = ((self.call == code) & (self.comm == comm)).astype(np.int64)
        c = np.cumsum(m) - m  # markers before each event, counted over the whole trace
        ptr = self.rank_ptr
        start = np.zeros(len(self), dtype=np.int64)
        if len(self):
            start = (np.cumsum(m) - m)[ptr[:-1][ptr[:-1] < len(self)]]
            start = np.repeat(start, np.diff(ptr)[ptr[:-1] < len(self)])
        return self.with_iterations((c - start) // int(every))

    # ------------------------------------------------------------- validation
    def _where(self) -> str:
        return f"{self.source}: " if self.source else ""

    def _at(self, i: int) -> str:
        loc = self.source or "trace"
        if self.line is not None and self.line[i] >= 0:
            loc += f":{int(self.line[i])}"
        name = CALL_NAMES.get(int(self.call[i]), f"call {int(self.call[i])}")
        return f"{loc}: rank {int(self.rank[i])} event {int(self.seq[i])} ({name})"

    def _fail(self, mask: np.ndarray, what: str, column: str | None = None) -> None:
        bad = np.flatnonzero(mask)
        if bad.size:
            self._fail_at(int(bad[0]), bad.size, what, column)

    def _fail_bad(self, bad: np.ndarray, what: str, column: str | None = None) -> None:
        """:meth:`_fail` for the (ascending) events ``bad``."""
        if bad.size:
            self._fail_at(int(bad[0]), bad.size, what, column)

    def _fail_at(self, i: int, count: int, what: str, column: str | None = None) -> None:
        """Raise :class:`TraceError` naming event ``i``, the first of ``count`` that fail a check."""
        val = f" = {getattr(self, column)[i].item()!r}" if column else ""
        more = f" (and {count - 1} more events)" if count > 1 else ""
        raise TraceError(f"{self._at(i)}: {column or 'event'}{val}: {what}{more}")

    def validate(self) -> Trace:
        """Check columns, codes, ranks and sizes; raise :class:`TraceError` or return self.

        Checks: column lengths and dtypes; events sorted by rank and
        ``seq`` = 0, 1, ... per rank; known call codes; ``0 <= rank <
        nprocs``; peers of point-to-point calls and roots inside their
        communicator (or a wildcard / ``PROC_NULL`` where MPI allows);
        ``nbytes >= 0``; ``compute`` finite and >= 0; entry <= exit;
        communicators described; ``aux`` offsets consistent.  The requests
        (every waited request created earlier on the same rank and not yet
        completed) are checked by :func:`perfmod.trace.requests.validate_trace`.
        """
        n = len(self)
        if self.nprocs < 1:
            raise TraceError(f"{self._where()}nprocs must be >= 1, got {self.nprocs}")
        for name, dt in COLUMNS.items():
            a = getattr(self, name)
            if not isinstance(a, np.ndarray) or a.shape != (n,) or a.dtype != dt:
                raise TraceError(f"{self._where()}column {name!r} must be a ({n},) {dt} array, "
                                 f"got {type(a).__name__} {getattr(a, 'shape', '')} {getattr(a, 'dtype', '')}")
        for name, dt in OPTIONAL_COLUMNS.items():
            a = getattr(self, name)
            if a is not None and (not isinstance(a, np.ndarray) or a.shape != (n,) or a.dtype != dt):
                raise TraceError(f"{self._where()}optional column {name!r} must be None or a ({n},) {dt} array")
        if self.aux_ptr.shape != (n + 1,) or self.aux_ptr.dtype != np.int64 or self.aux.dtype != np.int64:
            raise TraceError(f"{self._where()}aux_ptr must be ({n + 1},) int64 and aux int64")
        rises = f"{self._where()}aux_ptr must rise from 0 to len(aux) = {self.aux.size}"
        if n and (self.aux_ptr[0] != 0 or self.aux_ptr[-1] != self.aux.size):
            raise TraceError(rises)
        if n == 0:
            return self
        from perfmod.trace import column_checks as cc

        sizes = {int(c): np.asarray(r).size for c, r in self.comms.items() if int(c) != 0}
        first, count = cc.check_columns(self, code_set(Call), code_set(P2P_SEND),
                                        code_set(P2P_RECV - {Call.SENDRECV}), code_set(ROOTED), code_set(LIST_CALLS),
                                        sizes, int(Call.OTHER), int(Call.SENDRECV), int(Call.ALLTOALLV), ANY_SOURCE,
                                        PROC_NULL, ANY_TAG)
        if count[cc.AUX_RISE]:
            raise TraceError(rises)
        checks = (("rank", f"outside 0..{self.nprocs - 1}"), ("rank", "events not sorted by rank"),
                  ("seq", "seq must number each rank's events 0, 1, 2, ..."), ("call", "unknown call code"),
                  ("nbytes", "must be >= 0 bytes"), ("compute", "must be finite and >= 0 s"),
                  ("peer", "destination outside the communicator"), ("peer", "source outside the communicator"),
                  ("peer", "root outside the communicator"), ("tag", "negative tag"),
                  ("peer", f"OTHER events need peer = index into other_names ({len(self.other_names)} names)"))
        for k in range(6):  # columns, codes and order
            if count[k]:
                self._fail_at(int(first[k]), int(count[k]), checks[k][1], checks[k][0])
        if self.has_times():
            rec = (self.t_entry != NO_TIME) & (self.t_exit != NO_TIME)
            self._fail(rec & (self.t_exit < self.t_entry), "exit before entry", "t_exit")
        comm_ids = np.unique(self.comm).tolist() if self.comm.any() else [0]  # all on MPI_COMM_WORLD: no sort
        for c in comm_ids:
            if c != 0 and c not in self.comms:
                self._fail(self.comm == c, "communicator not described in trace.comms", "comm")
        for c in comm_ids:
            if c == 0:
                continue
            sel = np.flatnonzero(self.comm == c)
            self._fail_bad(sel[~np.isin(self.rank[sel], self.comm_ranks(c))],
                           "rank is not a member of the event's communicator", "comm")
        for k in range(6, len(checks)):  # peers, roots, tags
            if count[k]:
                self._fail_at(int(first[k]), int(count[k]), checks[k][1], checks[k][0])
        for k, what in ((cc.SR_AUX, "SENDRECV needs aux = [source, recv_nbytes, recv_tag]"),
                        (cc.A2AV_AUX, "ALLTOALLV needs one aux entry (bytes) per communicator rank"),
                        (cc.NO_AUX, "this call takes no aux list")):
            if count[k]:
                self._fail_at(int(first[k]), int(count[k]), what, "aux_ptr")
        if count[cc.SENDRECV] or count[cc.ALLTOALLV]:
            self._validate_aux(sizes)
        return self

    def _validate_aux(self, sizes: dict[int, int]) -> None:
        """The values in ``aux`` of Sendrecv and Alltoallv events (their lengths are checked by the compiled
        pass)."""
        def size_at(i: np.ndarray) -> np.ndarray:  # communicator sizes of events i
            out = np.full(i.size, self.nprocs, dtype=np.int64)
            for c, m in sizes.items():
                out[self.comm[i] == c] = m
            return out

        alen = np.diff(self.aux_ptr)
        sr = self.call == Call.SENDRECV
        a2av = self.call == Call.ALLTOALLV
        if sr.any():
            i = np.flatnonzero(sr)
            src, rb, rt = (self.aux[self.aux_ptr[i] + k] for k in range(3))
            bad = ~(((src >= 0) & (src < size_at(i))) | (src == ANY_SOURCE) | (src == PROC_NULL)) | (rb < 0) | (
                (rt < 0) & (rt != ANY_TAG))
            self._fail_bad(i[bad], "bad SENDRECV receive side (source, bytes, tag)", "aux_ptr")
        if a2av.any():
            idx = np.repeat(a2av, alen)
            if np.any(self.aux[idx] < 0):
                bad_ev = np.repeat(np.arange(len(self)), alen)[idx & (self.aux < 0)]
                self._fail(np.isin(np.arange(len(self)), bad_ev), "negative ALLTOALLV byte count", "aux_ptr")
