"""Building a :class:`~perfmod.trace.core.Trace` event by event or from arrays.

See the :mod:`perfmod.trace.core` docstring for the layout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from perfmod.trace.core import (
    COLUMN_DEFAULTS,
    COLUMNS,
    NO_PEER,
    NO_REQUEST,
    NO_TIME,
    OPTIONAL_COLUMNS,
    Call,
    Trace,
    TraceError,
    call_code,
)
from perfmod.trace.requests import validate_trace

__all__ = ["TraceBuilder"]


def _as_col(value: Any, n: int, name: str, dtype: np.dtype) -> np.ndarray:
    a = np.asarray(value)
    if a.ndim == 0:
        return np.full(n, a, dtype=dtype)
    if a.shape != (n,):
        raise TraceError(f"TraceBuilder.extend: {name} has shape {a.shape}, expected ({n},) or a scalar")
    if np.issubdtype(dtype, np.integer) and a.dtype.kind == "f" and np.any(a != np.round(a)):
        raise TraceError(f"TraceBuilder.extend: {name} must be integers")
    return a.astype(dtype, copy=False)


class TraceBuilder:
    """Collects events per rank and builds a sorted, validated :class:`Trace`.

    Parameters
    ----------
    nprocs : int
        Number of world ranks.
    comms : mapping, optional
        Communicator id -> world ranks of its members (id 0 is world).
    source : str
        File the events come from (used in error messages).
    other_names : sequence of str
        Names of calls recorded as ``Call.OTHER`` (``peer`` indexes them).

    Examples
    --------
    >>> b = TraceBuilder(2)
    >>> b.append(0, "send", peer=1, nbytes=8)
    >>> b.append(1, "recv", peer=0, nbytes=8)
    >>> len(b.build())
    2
    """

    def __init__(self, nprocs: int, comms: Mapping[int, Any] | None = None, source: str = "",
                 other_names: Sequence[str] = ()) -> None:
        if int(nprocs) != nprocs or nprocs < 1:
            raise TraceError(f"nprocs must be a positive integer, got {nprocs!r}")
        self.nprocs = int(nprocs)
        self.comms = {int(k): np.asarray(v, dtype=np.int64) for k, v in (comms or {}).items()}
        self.source = source
        self.other_names = list(other_names)
        self._chunks: list[dict[str, np.ndarray]] = []
        self._rows: list[tuple] = []
        self._row_aux: list[Sequence[int]] = []
        self._has: set[str] = set()

    def __len__(self) -> int:
        return sum(len(c["rank"]) for c in self._chunks) + len(self._rows)

    def other(self, name: str) -> int:
        """Index of an unknown call's name in ``other_names`` (added if new)."""
        if name not in self.other_names:
            self.other_names.append(name)
        return self.other_names.index(name)

    def append(self, rank: int, call: str | int | Call, peer: int = NO_PEER, nbytes: int = 0, tag: int = 0,
               comm: int = 0, request: int = NO_REQUEST, compute: float = 0.0, aux: Sequence[int] = (),
               t_entry: int | None = None, t_exit: int | None = None, iteration: int | None = None,
               line: int | None = None) -> None:
        """Append one event of ``rank`` (after its previously appended ones).

        ``call`` is a :class:`Call`, its code or name; ``aux`` the event's
        list (request ids of a Waitall, ``[source, recv_nbytes, recv_tag]``
        of a Sendrecv, ...); times in integer nanoseconds; ``compute`` in
        seconds.
        """
        opt = (t_entry, t_exit, iteration, line)
        for name, v in zip(OPTIONAL_COLUMNS, opt, strict=True):
            if v is not None:
                self._has.add(name)
        self._rows.append((rank, call_code(call), peer, nbytes, tag, comm, request, compute, *opt))
        self._row_aux.append(aux)
        if len(self._rows) >= 65536:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        cols = list(zip(*self._rows, strict=True))
        names = ["rank", "call", "peer", "nbytes", "tag", "comm", "request", "compute", *OPTIONAL_COLUMNS]
        chunk: dict[str, np.ndarray] = {}
        allcols = COLUMNS | OPTIONAL_COLUMNS
        for name, vals in zip(names, cols, strict=True):
            if name in OPTIONAL_COLUMNS:
                vals = [COLUMN_DEFAULTS[name] if v is None else v for v in vals]
            try:
                chunk[name] = np.asarray(vals, dtype=allcols[name])
            except (TypeError, ValueError, OverflowError) as err:
                raise TraceError(f"{self.source or 'TraceBuilder'}: column {name!r}: {err}") from None
        lens = np.fromiter((len(a) for a in self._row_aux), dtype=np.int64, count=len(self._row_aux))
        chunk["aux_len"] = lens
        chunk["aux"] = (np.fromiter((int(x) for a in self._row_aux for x in a), dtype=np.int64, count=int(lens.sum()))
                        if lens.sum() else np.zeros(0, np.int64))
        self._chunks.append(chunk)
        self._rows, self._row_aux = [], []

    def extend(self, rank: Any, call: Any, peer: Any = NO_PEER, nbytes: Any = 0, tag: Any = 0, comm: Any = 0,
               request: Any = NO_REQUEST, compute: Any = 0.0, aux_len: Any = 0, aux: Any = None,
               **optional: Any) -> None:
        """Append many events at once (arrays of equal length or scalars).

        Events keep their order within each rank: an event appended later
        (here or by :meth:`append`) comes later on its rank.  ``call`` may
        be codes or a single name; ``aux_len`` gives each event's number of
        ``aux`` entries and ``aux`` their concatenation.  Optional columns
        (``t_entry``, ``t_exit``, ``iteration``, ``line``) as keywords.
        """
        self._flush()
        r = np.asarray(rank)
        n = int(r.size) if r.ndim else 1
        if isinstance(call, str | Call):
            call = call_code(call)
        chunk = {"rank": _as_col(rank, n, "rank", COLUMNS["rank"])}
        for name, v in (("call", call), ("peer", peer), ("nbytes", nbytes), ("tag", tag), ("comm", comm),
                        ("request", request), ("compute", compute)):
            chunk[name] = _as_col(v, n, name, COLUMNS[name])
        for name, v in optional.items():
            if name not in OPTIONAL_COLUMNS:
                raise TraceError(f"TraceBuilder.extend: unknown column {name!r}")
            chunk[name] = _as_col(v, n, name, OPTIONAL_COLUMNS[name])
            self._has.add(name)
        chunk["aux_len"] = _as_col(aux_len, n, "aux_len", np.dtype(np.int64))
        total = int(chunk["aux_len"].sum())
        chunk["aux"] = np.zeros(0, np.int64) if aux is None else np.asarray(aux, dtype=np.int64).ravel()
        if chunk["aux"].size != total:
            raise TraceError(f"TraceBuilder.extend: aux has {chunk['aux'].size} entries, aux_len sums to {total}")
        self._chunks.append(chunk)

    def build(self, validate: bool = True, meta: Mapping[str, Any] | None = None) -> Trace:
        """The :class:`Trace` of everything appended, sorted by (rank, append order).

        ``compute`` is derived from entry/exit times (``t_entry[i] -
        t_exit[i - 1]`` on the same rank, in seconds) for events where
        both are recorded and no compute was given.
        """
        self._flush()
        chunks = self._chunks
        n = sum(len(c["rank"]) for c in chunks)

        def cat(name: str, dtype: np.dtype) -> np.ndarray:
            if not chunks:
                return np.zeros(0, dtype)
            return np.concatenate([c[name] if name in c else np.full(len(c["rank"]), COLUMN_DEFAULTS[name], dtype)
                                   for c in chunks]).astype(dtype, copy=False)

        rank = cat("rank", COLUMNS["rank"])
        if n and (rank.min() < 0 or rank.max() >= self.nprocs):
            bad = int(np.flatnonzero((rank < 0) | (rank >= self.nprocs))[0])
            raise TraceError(f"{self.source or 'TraceBuilder'}: event {bad} has rank {rank[bad]} outside "
                             f"0..{self.nprocs - 1}")
        order = np.argsort(rank, kind="stable")
        aux_len = cat("aux_len", np.dtype(np.int64))
        aux_all = np.concatenate([c["aux"] for c in chunks]) if chunks else np.zeros(0, np.int64)
        aux_start = np.concatenate([[0], np.cumsum(aux_len)])[:-1]
        new_len = aux_len[order]
        aux_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(new_len, out=aux_ptr[1:])
        if aux_all.size:
            # gather each event's aux run in the new order
            src_pos = np.repeat(aux_start[order] - aux_ptr[:-1], new_len) + np.arange(aux_ptr[-1])
            aux = aux_all[src_pos]
        else:
            aux = np.zeros(0, np.int64)
        cols = {name: cat(name, dt)[order] for name, dt in COLUMNS.items() if name not in ("rank", "seq")}
        rank = rank[order]
        ptr = np.searchsorted(rank, np.arange(self.nprocs + 1))
        seq = (np.arange(n, dtype=np.int64) - ptr[rank]).astype(np.int32)
        opt = {name: cat(name, dt)[order] if name in self._has else None for name, dt in OPTIONAL_COLUMNS.items()}
        if opt["t_entry"] is not None and opt["t_exit"] is not None:
            _derive_compute(cols["compute"], rank, opt["t_entry"], opt["t_exit"])
        trace = Trace(self.nprocs, rank, seq, aux_ptr=aux_ptr, aux=aux, comms=dict(self.comms),
                      other_names=tuple(self.other_names), source=self.source, meta=dict(meta or {}),
                      **cols, **opt)
        return validate_trace(trace) if validate else trace


def _derive_compute(compute: np.ndarray, rank: np.ndarray, t_entry: np.ndarray, t_exit: np.ndarray) -> None:
    """Fill ``compute`` (s) from the gap to the previous event's exit where both times exist and compute is 0."""
    if compute.size < 2:
        return
    same = rank[1:] == rank[:-1]
    ok = same & (t_entry[1:] != NO_TIME) & (t_exit[:-1] != NO_TIME) & (compute[1:] == 0)
    gap = (t_entry[1:] - t_exit[:-1]).astype(np.float64) * 1e-9
    idx = np.flatnonzero(ok) + 1
    compute[idx] = np.maximum(gap[ok], 0.0)
