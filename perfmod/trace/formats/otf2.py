"""OTF2 traces (Score-P's format, read by TraceR): reader and writer (paper 000 §2.2, §3.2).

Paper: Choi et al., ICS 2020 (paper 000) §2.2, §3.2.  Uses the
``otf2`` package from PyPI (the OTF2 library's own Python bindings,
manylinux wheels), imported when a function is called.

Event model (the one Score-P writes, OTF2 documentation "MPI events"):
each MPI call is an ``Enter``/``Leave`` pair of a region named after the
call, with the MPI records between them: ``MpiSend``/``MpiRecv`` for
blocking point-to-point, ``MpiIsend`` and ``MpiIrecvRequest`` when a
nonblocking call starts, ``MpiIsendComplete``/``MpiIrecv`` inside the wait
or test that completes it (``MpiRequestTest`` when a test found nothing),
``MpiCollectiveBegin``/``MpiCollectiveEnd`` around collectives.  Ranks are
the positions of the locations in the MPI ``COMM_LOCATIONS`` group; peers
and roots are ranks in the record's communicator.  Score-P stores
``MPI_COMM_SELF`` (and other one-rank communicators) as a communicator whose
group has type ``COMM_SELF`` and no members: the reader gives each rank
that uses one its own one-member communicator.  An archive without MPI
events (a GPU-only Score-P trace) reads as a trace without events and a
:class:`~perfmod.trace.core.TraceWarning`; a damaged event file is named
(``traces/<location>.evt``) in the error, with what the OTF2 library said;
a file that reads without an error but gives fewer events than its
location's definition declares (cut at a record boundary, or records this
OTF2 library skips) is named in a ``TraceWarning``.

Bytes of collectives follow Score-P's accounting (its ``scorep_mpi_coll_bytes``
tests): with ``P`` ranks and ``N`` = perfmod's per-rank vector size,
broadcast and scatter send ``P N`` at the root and receive ``N`` everywhere;
reduce and gather send ``N`` and receive ``P N`` at the root; allreduce and
allgather send and receive ``P N``; alltoall ``(P - 1) N``; alltoallv the
sums.  The reader inverts this; OTF2 does not keep alltoallv's
per-destination counts, so they come back split evenly over the other ranks.

Times: ``t_entry``/``t_exit`` are the Enter/Leave timestamps in integer
nanoseconds (``ticks * 1e9 // timer_resolution``); the writer uses a 1 ns
timer.  A trace without times is written on a synthetic clock: each call
starts ``compute`` seconds (rounded to 1 ns) after the previous one and
takes no time.  Regions that are not MPI calls (user functions) are not
events: their time is compute between calls; the first call's compute is
the time from the rank's first record (Score-P's ``main`` entry; the
writer opens a ``main`` region that long before the first call).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from perfmod.trace.builder import TraceBuilder
from perfmod.trace.core import (
    ANY_SOURCE,
    ANY_TAG,
    CALL_NAMES,
    NO_TIME,
    PROC_NULL,
    Call,
    Trace,
    TraceError,
    TraceWarning,
)
from perfmod.trace.formats.registry import TraceFormat
from perfmod.trace.requests import resolve_requests

__all__ = ["OTF2_AVAILABLE", "TRACE_FORMAT", "read_otf2", "write_otf2", "require_otf2"]

_UNDEF32 = 0xFFFFFFFF  # OTF2_UNDEFINED_UINT32: wildcard source/tag, no root
_NS = 1_000_000_000


def require_otf2() -> Any:
    """Import the ``otf2`` package or raise an ImportError that says how to get it."""
    try:
        import otf2
    except ImportError as err:  # pragma: no cover - otf2 is a dependency; kept for minimal installs
        raise ImportError("OTF2 support needs the 'otf2' package (pip install otf2; manylinux wheels "
                          f"include the OTF2 library): {err}") from None
    return otf2


#: whether the ``otf2`` package is installed (imported where used: importing it costs every trace reader's start)
OTF2_AVAILABLE: bool = importlib.util.find_spec("otf2") is not None

_COLL = {Call.BARRIER: "BARRIER", Call.BCAST: "BCAST", Call.REDUCE: "REDUCE", Call.ALLREDUCE: "ALLREDUCE",
         Call.ALLTOALL: "ALLTOALL", Call.ALLTOALLV: "ALLTOALLV", Call.ALLGATHER: "ALLGATHER",
         Call.GATHER: "GATHER", Call.SCATTER: "SCATTER", Call.REDUCE_SCATTER: "REDUCE_SCATTER"}
_ROLE = {Call.BARRIER: "BARRIER", Call.BCAST: "COLL_ONE2ALL", Call.SCATTER: "COLL_ONE2ALL",
         Call.REDUCE: "COLL_ALL2ONE", Call.GATHER: "COLL_ALL2ONE"}
_NAME_CALL = {"MPI_Bsend": Call.SEND, "MPI_Rsend": Call.SEND, "MPI_Ibsend": Call.ISEND, "MPI_Irsend": Call.ISEND,
              "MPI_Init_thread": Call.INIT, **{v: Call(k) for k, v in CALL_NAMES.items()
                                                if k not in (Call.COMPUTE, Call.OTHER)}}


def _coll_bytes(c: int, nb: int, p: int, is_root: bool, aux: np.ndarray | None) -> tuple[int, int]:
    """(size_sent, size_received) of a collective under Score-P's accounting."""
    if c == Call.BARRIER:
        return 0, 0
    if c in (Call.BCAST, Call.SCATTER):
        return (p * nb if is_root else 0), nb
    if c in (Call.REDUCE, Call.GATHER):
        return nb, (p * nb if is_root else 0)
    if c in (Call.ALLREDUCE, Call.ALLGATHER):
        return p * nb, p * nb
    if c == Call.ALLTOALL:
        return (p - 1) * nb, (p - 1) * nb
    if c == Call.ALLTOALLV:
        return int(aux.sum()) if aux is not None else nb, nb
    return nb, nb // max(p, 1)


def _coll_nbytes(c: Call, sent: int, recv: int, p: int) -> int:
    if c in (Call.BCAST, Call.SCATTER):
        return recv
    if c in (Call.ALLREDUCE, Call.ALLGATHER):
        return sent // p
    if c == Call.ALLTOALL:
        return sent // max(p - 1, 1)
    return 0 if c == Call.BARRIER else sent


def _timeline(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    if trace.has_times() and not np.any(trace.t_entry == NO_TIME):
        return trace.t_entry, trace.t_exit
    t = np.rint(trace.compute * 1e9).astype(np.int64)
    start = np.empty(len(trace), np.int64)
    for r in range(trace.nprocs):
        sl = trace.rank_events(r)
        start[sl] = np.cumsum(t[sl])
    return start, start.copy()


def write_otf2(trace: Trace, path: str | os.PathLike) -> Path:
    """Write ``trace`` as an OTF2 archive; return its anchor file (what :func:`read_otf2` reads).

    A ``path`` ending in ``.otf2`` names the anchor itself: ``run.otf2``
    writes the archive beside it as OTF2 lays one out (``run.otf2``,
    ``run.def`` and the event files in ``run/``).  Any other ``path`` is the
    archive directory, with the anchor ``traces.otf2`` inside.

    One location per rank; communicators other than world become OTF2
    communicators with the world ranks of :attr:`Trace.comms`.  The archive
    is written to a temporary directory and moved into place.
    """
    otf2 = require_otf2()
    from otf2.enums import CollectiveOp, GroupType, Paradigm, RegionRole

    reqs = resolve_requests(trace)
    t0, t1 = _timeline(trace)
    first = np.rint(trace.compute * 1e9).astype(np.int64)
    base = int(min((t0 - first).min(), 0)) if len(trace) else 0
    dest = Path(path)
    anchor_named = dest.suffix == ".otf2"
    name = dest.stem if anchor_named else "traces"
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    shutil.rmtree(tmp)
    try:
        with otf2.writer.open(str(tmp), archive_name=name, timer_resolution=_NS) as w:
            d = w.definitions
            node = d.system_tree_node("perfmod")
            locs = [d.location("Master thread", group=d.location_group(f"MPI Rank {r}", system_tree_parent=node))
                    for r in range(trace.nprocs)]
            d.group("MPI_COMM_WORLD locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI,
                    members=locs)
            world = d.comm("MPI_COMM_WORLD", group=d.group("MPI_COMM_WORLD", group_type=GroupType.COMM_GROUP,
                                                            paradigm=Paradigm.MPI, members=list(range(trace.nprocs))))
            comms = {0: world}
            for cid, members in sorted(trace.comms.items()):
                g = d.group(f"comm {cid}", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                            members=[int(m) for m in members])
                comms[cid] = d.comm(f"comm {cid}", group=g, parent=world)
            regions: dict[str, Any] = {}

            def region(c: int, i: int) -> Any:
                name = trace.other_names[int(trace.peer[i])] if c == Call.OTHER else CALL_NAMES[c]
                if name not in regions:
                    role = _ROLE.get(Call(c), "COLL_ALL2ALL" if c in _COLL else "POINT2POINT" if c != Call.OTHER
                                     else "FUNCTION")
                    regions[name] = d.region(name, paradigm=Paradigm.MPI, region_role=getattr(RegionRole, role))
                return regions[name]

            main = d.region("main", region_role=RegionRole.FUNCTION)
            for r in range(trace.nprocs):
                ew = w.event_writer_from_location(locs[r])
                sl = trace.rank_events(r)
                if sl.stop == sl.start:
                    continue
                # the rank's program region opens before the first call by that call's compute
                ew.enter(int(t0[sl.start]) - base - int(round(float(trace.compute[sl.start]) * 1e9)), main)
                for i in range(sl.start, sl.stop):
                    c = int(trace.call[i])
                    if c == Call.COMPUTE:
                        continue
                    a, b = int(t0[i]) - base, int(t1[i]) - base
                    reg = region(c, i)
                    ew.enter(a, reg)
                    _records(ew, trace, i, c, a, b, comms, reqs, CollectiveOp)
                    ew.leave(b, reg)
                ew.leave(int(t1[sl.stop - 1]) - base, main)
        parts = [(tmp / p, dest.parent / p) for p in (name, f"{name}.def", f"{name}.otf2")] if anchor_named else \
            [(tmp, dest)]
        for src, target in parts:  # the anchor last: a reader never finds it before the files it names
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
            os.replace(src, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return dest if anchor_named else dest / "traces.otf2"


def _u32(v: int, wildcard: int) -> int:
    return _UNDEF32 if v == wildcard else v


def _records(ew: Any, trace: Trace, i: int, c: int, a: int, b: int, comms: dict, reqs: Any, coll_op: Any) -> None:
    """The MPI records of event ``i`` between its Enter (time a) and Leave (time b)."""
    comm = comms[int(trace.comm[i])]
    peer, tag, nb, req = int(trace.peer[i]), int(trace.tag[i]), int(trace.nbytes[i]), int(trace.request[i])
    if c in (Call.SEND, Call.SSEND) and peer != PROC_NULL:
        ew.mpi_send(a, peer, comm, tag, nb)
    elif c == Call.RECV and peer != PROC_NULL:
        ew.mpi_recv(b, _u32(peer, ANY_SOURCE), comm, _u32(tag, ANY_TAG), nb)
    elif c in (Call.ISEND, Call.ISSEND):
        ew.mpi_isend(a, max(peer, 0) if peer != PROC_NULL else _UNDEF32, comm, tag, nb, req)
    elif c == Call.IRECV:
        ew.mpi_irecv_request(a, req)
    elif c == Call.SENDRECV:
        src, rb, rt = (int(x) for x in trace.aux_of(i))
        if peer != PROC_NULL:
            ew.mpi_send(a, peer, comm, tag, nb)
        if src != PROC_NULL:
            ew.mpi_recv(b, _u32(src, ANY_SOURCE), comm, _u32(rt, ANY_TAG), rb)
    elif c in (Call.WAIT, Call.WAITALL, Call.WAITANY, Call.WAITSOME, Call.TEST, Call.TESTALL, Call.TESTANY,
               Call.TESTSOME):
        done = reqs.created[reqs.ref_ptr[i]:reqs.ref_ptr[i + 1]]
        for j in (int(x) for x in done):
            if trace.call[j] == Call.IRECV:
                ew.mpi_irecv(b, _u32(int(trace.peer[j]), ANY_SOURCE), comms[int(trace.comm[j])],
                             _u32(int(trace.tag[j]), ANY_TAG), int(trace.nbytes[j]), int(trace.request[j]))
            else:
                ew.mpi_isend_complete(b, int(trace.request[j]))
        if not len(done) and c in (Call.TEST, Call.TESTALL, Call.TESTANY, Call.TESTSOME) and req >= 0:
            ew.mpi_request_test(b, req)
    elif c in _COLL:
        members = trace.comm_ranks(int(trace.comm[i]))
        p = len(members)
        rooted = c in (Call.BCAST, Call.REDUCE, Call.GATHER, Call.SCATTER)
        is_root = rooted and int(members[peer]) == int(trace.rank[i])
        sent, recv = _coll_bytes(c, nb, p, is_root, trace.aux_of(i) if c == Call.ALLTOALLV else None)
        ew.mpi_collective_begin(a)
        ew.mpi_collective_end(b, getattr(coll_op, _COLL[Call(c)]), comm, peer if rooted else _UNDEF32, sent, recv)


def read_otf2(path: str | os.PathLike, unknown: str = "skip") -> Trace:
    """Read the MPI events of an OTF2 archive (``traces.otf2`` or its directory).

    Parameters
    ----------
    path : path
        The anchor file or the archive directory.
    unknown : {"skip", "keep", "error"}
        MPI regions perfmod does not model: dropped (time joins compute),
        kept as ``Call.OTHER``, or an error; counted in ``meta["unknown_calls"]``.
    """
    otf2 = require_otf2()
    from otf2.enums import GroupType

    if unknown not in ("skip", "keep", "error"):
        raise ValueError(f"unknown= must be 'skip', 'keep' or 'error', got {unknown!r}")
    anchor = Path(path)
    anchor = anchor / "traces.otf2" if anchor.is_dir() else anchor
    if not anchor.is_file():
        raise TraceError(f"{anchor}: no OTF2 anchor file")
    with _c_stderr() as said:
        try:
            reader = otf2.reader.open(str(anchor))
        except Exception as err:  # the C library reports its own error types
            raise TraceError(f"{anchor}: not a readable OTF2 archive: {err}{said()}") from None
    with reader as tr:
        res = int(tr.timer_resolution)
        locs_group = [g for g in tr.definitions.groups if g.group_type == GroupType.COMM_LOCATIONS]
        if not locs_group:
            raise TraceError(f"{anchor}: no MPI COMM_LOCATIONS group: not an MPI trace")
        rank_of = {id(loc): r for r, loc in enumerate(locs_group[0].members)}
        comm_ids, comms = {}, {}
        for c in tr.definitions.comms:
            if c.group.group_type == GroupType.COMM_SELF or not len(c.group.members):
                comm_ids[id(c)] = _SELF  # Score-P's MPI_COMM_SELF (and one-rank communicators): no members
                continue
            members = [rank_of[id(m)] for m in c.group.members]
            if c.parent is None and members == list(range(len(rank_of))):
                comm_ids[id(c)] = 0
            else:
                comm_ids[id(c)] = len(comms) + 1
                comms[len(comms) + 1] = np.array(members, dtype=np.int64)
        state = _ReadState(len(rank_of), comm_ids, comms, res, unknown, str(anchor))
        declared = {loc._ref: int(loc.number_of_events) for loc in tr.definitions.locations}
        read = dict.fromkeys(declared, 0)
        failed = ""
        with _c_stderr() as said:
            try:
                for loc, ev in tr.events:
                    read[loc._ref] += 1
                    r = rank_of.get(id(loc))
                    if r is not None:
                        state.event(r, ev)
            except TraceError:
                raise
            except Exception as err:  # the OTF2 library's own errors on damaged event files
                failed = f"{type(err).__name__}: {err}{said()}"
    if failed:  # the reader is closed now: find the file by reading each location alone
        where = _damaged_event_file(anchor, declared)
        raise TraceError(f"{where or anchor}: OTF2 event data unreadable (truncated or corrupt): {failed}")
    short = _short_location(declared, read)
    if short is not None:  # a file cut at a record boundary, or records this OTF2 library does not know
        warnings.warn(f"{anchor.with_suffix('')}/{short}.evt: {read[short]} events read, {declared[short]} declared "
                      "in the archive's definitions: the file is truncated, or holds records this version of the "
                      "OTF2 library skips; the trace is what could be read", TraceWarning, stacklevel=2)
    trace = state.build()
    if not state.mpi_calls:
        warnings.warn(f"{anchor}: no MPI events in this OTF2 archive ({len(trace)} events on {trace.nprocs} "
                      "ranks; a GPU-only or non-MPI Score-P trace?): the replay has nothing to replay",
                      TraceWarning, stacklevel=2)
    return trace


_SELF = -100  #: marker id of a COMM_SELF communicator (one per rank, numbered when first used)


@contextlib.contextmanager
def _c_stderr() -> Iterator[Callable[[], str]]:
    """Capture what the OTF2 C library prints on file descriptor 2, for the error message instead of the terminal."""
    try:
        saved = os.dup(2)
    except OSError:  # pragma: no cover - no stderr descriptor
        yield lambda: ""
        return
    with tempfile.TemporaryFile(mode="w+b") as buf:
        sys.stderr.flush()
        os.dup2(buf.fileno(), 2)
        try:
            def said() -> str:
                buf.flush()
                buf.seek(0)
                text = buf.read().decode("utf-8", errors="replace").strip()
                return f" (the OTF2 library said: {' | '.join(text.splitlines()[-4:])})" if text else ""
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _short_location(declared: dict[int, int], read: dict[int, int]) -> int | None:
    """The first location whose events read differ from the count its definition declares (0: not declared)."""
    return next((ref for ref, n in declared.items() if n and read[ref] != n), None)


def _damaged_event_file(anchor: Path, declared: dict[int, int]) -> Path | None:
    """The first ``<archive>/traces/<location>.evt`` that the OTF2 library cannot read alone, or None.

    Called after the library failed on the whole archive.  A file that fails
    alone is blamed first; else the first whose events read alone differ from
    the count its location's definition declares: whether the library reports
    an error past a truncated end when it reads one file alone is not certain
    (a CI machine read a half-truncated file alone without one, with the same
    wheel as here).
    """
    otf2 = require_otf2()
    short = None
    with _c_stderr():
        for ref in declared:
            n = 0
            try:
                with otf2.reader.open(str(anchor)) as tr:
                    mine = [x for x in tr.definitions.locations if x._ref == ref]
                    if not mine:  # the definitions changed under us: no file to blame
                        return None
                    for _ in tr.events(mine):
                        n += 1
            except Exception:  # noqa: BLE001 - any library error marks this location's file
                return anchor.with_suffix("") / f"{ref}.evt"
            if short is None and declared[ref] and n != declared[ref]:
                short = anchor.with_suffix("") / f"{ref}.evt"
    return short


class _ReadState:
    """Turns the OTF2 event stream of each rank into perfmod events."""

    def __init__(self, nprocs: int, comm_ids: dict, comms: dict, res: int, unknown: str, source: str) -> None:
        self.nprocs, self.comm_ids, self.comms, self.res = nprocs, comm_ids, comms, res
        self.unknown, self.source = unknown, source
        self.rows: list[list[dict]] = [[] for _ in range(nprocs)]
        self.open: list[dict | None] = [None] * nprocs
        self.irecv: list[dict[int, dict]] = [{} for _ in range(nprocs)]
        self.unknown_calls: Counter = Counter()
        self.first_ts: list[int | None] = [None] * nprocs
        self.self_ids: dict[int, int] = {}  # rank -> id of its COMM_SELF communicator
        self.mpi_calls = 0

    def ns(self, t: int) -> int:
        return int(t) * _NS // self.res

    def size(self, cid: int) -> int:
        return self.nprocs if cid == 0 else len(self.comms[cid])

    def event(self, r: int, ev: Any) -> None:
        kind = type(ev).__name__
        cur = self.open[r]
        if self.first_ts[r] is None:
            self.first_ts[r] = self.ns(ev.time)
        if kind == "Enter":
            name = ev.region.name
            if cur is None and (name.startswith("MPI_") or name.startswith("mpi_")):
                self.open[r] = {"name": name, "region": ev.region, "t_entry": self.ns(ev.time), "recs": []}
            elif cur is not None:
                cur.setdefault("depth", 0)
                cur["depth"] += 1
        elif kind == "Leave":
            if cur is None:
                return
            if cur.get("depth"):
                cur["depth"] -= 1
                return
            self.open[r] = None
            self.finish(r, cur, self.ns(ev.time))
        elif cur is not None:
            cur["recs"].append((kind, ev))

    def finish(self, r: int, cur: dict, t_exit: int) -> None:
        self.mpi_calls += 1
        self.rank = r
        name = cur["name"]
        code = _NAME_CALL.get("MPI_" + name[4:].capitalize())
        row: dict[str, Any] = {"t_entry": cur["t_entry"], "t_exit": t_exit}
        recs = cur["recs"]
        by = {k: e for k, e in recs}
        if code is None:
            self.unknown_calls[name] += 1
            if self.unknown == "error":
                raise TraceError(f"{self.source}: rank {r}: MPI call {name} not modelled by perfmod (read with "
                                 "unknown='skip' or 'keep' to count it instead)")
            if self.unknown == "keep":
                self.rows[r].append(row | {"call": Call.OTHER, "other": name})
            return
        row["call"] = code
        if code in (Call.SEND, Call.SSEND, Call.SENDRECV) and "MpiSend" in by:
            e = by["MpiSend"]
            row.update(peer=int(e.receiver), tag=int(e.msg_tag), nbytes=int(e.msg_length), comm=self.cid(e))
        if code in (Call.RECV, Call.SENDRECV) and "MpiRecv" in by:
            e = by["MpiRecv"]
            src, tag = self.wild(int(e.sender), ANY_SOURCE), self.wild(int(e.msg_tag), ANY_TAG)
            if code == Call.RECV:
                row.update(peer=src, tag=tag, nbytes=int(e.msg_length), comm=self.cid(e))
            else:
                row["aux"] = [src, int(e.msg_length), tag]
        if code in (Call.SEND, Call.SSEND, Call.RECV) and "peer" not in row:
            row["peer"] = PROC_NULL
        if code in (Call.ISEND, Call.ISSEND):
            e = by.get("MpiIsend")
            if e is None:
                row.update(peer=PROC_NULL, request=-1)
            else:
                peer = PROC_NULL if int(e.receiver) == _UNDEF32 else int(e.receiver)
                row.update(peer=peer, tag=int(e.msg_tag), nbytes=int(e.msg_length), comm=self.cid(e),
                           request=int(e.request_id))
        if code == Call.IRECV:
            e = by.get("MpiIrecvRequest")
            row.update(peer=PROC_NULL, request=int(e.request_id) if e is not None else -1)
            if e is not None:
                self.irecv[r][int(e.request_id)] = row
        if code in (Call.WAIT, Call.WAITALL, Call.WAITANY, Call.WAITSOME, Call.TEST, Call.TESTALL, Call.TESTANY,
                    Call.TESTSOME):
            done = []
            for k, e in recs:
                if k == "MpiIsendComplete":
                    done.append(int(e.request_id))
                elif k == "MpiIrecv":
                    rid = int(e.request_id)
                    done.append(rid)
                    posted = self.irecv[r].pop(rid, None)
                    if posted is not None:
                        posted.update(peer=self.wild(int(e.sender), ANY_SOURCE), tag=self.wild(int(e.msg_tag), ANY_TAG),
                                      nbytes=int(e.msg_length), comm=self.cid(e))
            if code in (Call.WAIT, Call.TEST):
                row["request"] = done[0] if done else -1
                if len(done) > 1:
                    row["call"] = Call.WAITALL if code == Call.WAIT else Call.TESTALL
                    row.update(request=-1, aux=done)
            else:
                row["aux"] = done
        if code in _COLL and "MpiCollectiveEnd" in by:
            e = by["MpiCollectiveEnd"]
            cid = self.cid(e)
            p = self.size(cid)
            row.update(comm=cid, nbytes=_coll_nbytes(code, int(e.size_sent), int(e.size_received), p))
            if code in (Call.BCAST, Call.REDUCE, Call.GATHER, Call.SCATTER):
                row["peer"] = int(e.root)
            if code == Call.ALLTOALLV:
                per = int(e.size_sent) // max(p - 1, 1)
                me = int(np.flatnonzero(self.comm_members(cid) == r)[0])
                row["aux"] = [0 if k == me else per for k in range(p)]
        self.rows[r].append(row)

    def comm_members(self, cid: int) -> np.ndarray:
        return np.arange(self.nprocs) if cid == 0 else self.comms[cid]

    def cid(self, e: Any) -> int:
        """Communicator id of a record (of the rank being read); COMM_SELF is one communicator per rank."""
        c = self.comm_ids[id(e.communicator)]
        if c != _SELF:
            return c
        r = self.rank
        if r not in self.self_ids:
            self.self_ids[r] = len(self.comms) + 1
            self.comms[self.self_ids[r]] = np.array([r], dtype=np.int64)
        return self.self_ids[r]

    @staticmethod
    def wild(v: int, wildcard: int) -> int:
        return wildcard if v == _UNDEF32 else v

    def build(self) -> Trace:
        b = TraceBuilder(self.nprocs, comms=self.comms, source=self.source)
        for r, rows in enumerate(self.rows):
            if rows and self.first_ts[r] is not None and rows[0]["t_entry"] > self.first_ts[r]:
                rows[0]["compute"] = (rows[0]["t_entry"] - self.first_ts[r]) * 1e-9  # from the rank's first record
            for row in rows:
                other = row.pop("other", None)
                if other is not None:
                    row["peer"] = b.other(other)
                b.append(r, **row)
        meta = {"format": "otf2", "timer_resolution": self.res, "unknown_calls": dict(self.unknown_calls)}
        return b.build(meta=meta)


def _is_otf2_anchor(path: Path, head: bytes) -> bool:
    """An OTF2 file as the otf2 library writes it (a chunk header, then ``OTF2\\0``), or text naming an anchor."""
    if b"OTF2\x00" in head[:8]:
        return True
    text = head.decode("utf-8", errors="replace")
    return "OTF2" in text[:200] and "anchor" in text.lower()


TRACE_FORMAT = TraceFormat(
    name="otf2", files="OTF2 anchor file (`.otf2`)", extensions=(".otf2",),
    guess_can_open=_is_otf2_anchor, read=read_otf2, write=write_otf2, module=__name__)
