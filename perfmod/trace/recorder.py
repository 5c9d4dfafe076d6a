"""Record the MPI calls of an mpi4py program as a perfmod trace (paper 000 §2.2, §3.2).

Paper: Choi et al., ICS 2020 (paper 000) §2.2 (the source run is
traced, then replayed).  Instead of an MPI profiling library (DUMPI,
Score-P), the program talks to a :class:`RecordingComm`: a thin proxy of an
``mpi4py`` communicator whose buffer methods (``Send``, ``Recv``,
``Isend``, ``Irecv``, ``Sendrecv``, ``Barrier``, ``Bcast``, ``Reduce``,
``Allreduce``, ``Alltoall``, ``Allgather``, ``Gather``, ``Scatter``, and
``Waitall``/``Waitany``/``Wait``/``Test`` on the requests it returns) and
its blocking pickle-based calls (``send``, ``recv``, ``sendrecv``,
``barrier``, ``bcast``, ``reduce``, ``allreduce``, ``gather``,
``allgather``, ``scatter``; bytes = an array's ``nbytes``, else the size
of the object's pickle) record one event each and delegate; every other
attribute is the wrapped communicator's own, unrecorded (its time counts
as compute), the nonblocking pickle-based ``isend``/``irecv`` included.

Per event the recorder keeps the call, peer, tag, communicator, request,
the bytes of the buffer argument (``count x datatype size`` when the buffer
spec gives them, else the buffer's ``nbytes``) and the wall-clock entry and
exit in integer nanoseconds (``time.perf_counter_ns`` shifted once onto
``time.time_ns``, so ranks on one node share a clock and times never go
back).  An event costs two clock reads and a tuple append; the benchmark in
``tests/test_bench_trace.py`` measures it.

Communicators made by ``Split``/``Dup``/``Create_cart`` on the proxy are
proxies too; their world ranks come from ``MPI.Group.Translate_ranks`` and
their id is ``1 + index * P + lowest world rank`` (``index`` = how many
communicators the rank had made before), the same on every member without
any communication.

``c.recorder.iteration(i)`` marks where application iteration ``i`` starts
(the trace's ``iteration`` column; the replay then reports per iteration).

Output: :meth:`Recorder.save` writes the rank's events to ``.npz``;
:func:`load_recording` merges such files into a :class:`Trace`;
:meth:`Recorder.gather` sends all ranks' events to one rank and returns the
Trace there; keep it with :func:`perfmod.trace.formats.npz.write_npz` or export
it with :func:`perfmod.trace.formats.otf2.write_otf2` or
:func:`perfmod.trace.formats.tit.write_tit`.
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perfmod.core.io import atomic_path
from perfmod.trace.builder import TraceBuilder
from perfmod.trace.core import ANY_SOURCE, ANY_TAG, NO_PEER, NO_REQUEST, PROC_NULL, Call, Trace, TraceError

__all__ = ["Recorder", "RecordingComm", "RecordingRequest", "record", "load_recording"]

_clock = time.perf_counter_ns
_ISEND, _IRECV, _WAITALL = int(Call.ISEND), int(Call.IRECV), int(Call.WAITALL)
_FIELDS = ("call", "peer", "nbytes", "tag", "comm", "request", "t_entry", "t_exit")


def _nbytes(buf: Any) -> int:
    """Bytes described by an mpi4py buffer spec: ``array``, ``[array, type]``, ``[array, count, type]``..."""
    n = getattr(buf, "nbytes", None)
    if n is not None:
        return int(n)
    if buf is None:
        return 0
    if isinstance(buf, list | tuple):
        count, dtype = None, None
        for x in buf[1:]:
            if isinstance(x, int):
                count = x if count is None else count
            elif isinstance(x, list | tuple) and x and isinstance(x[0], int):
                count = x[0]
            elif hasattr(x, "Get_size"):
                dtype = x
        if count is not None and dtype is not None:
            return int(count) * int(dtype.Get_size())
        return _nbytes(buf[0])
    try:
        return memoryview(buf).nbytes
    except TypeError:
        return 0


def _obj_nbytes(obj: Any) -> int:
    """Bytes of a Python object sent by mpi4py's pickle-based calls: an array's ``nbytes``, else its pickle."""
    n = getattr(obj, "nbytes", None)
    if n is not None:
        return int(n)
    return len(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))


class Recorder:
    """The event log of one rank (shared by every :class:`RecordingComm` of that rank).

    Parameters
    ----------
    world : mpi4py communicator
        ``MPI.COMM_WORLD`` (or the communicator the ranks of the trace are numbered in).
    """

    def __init__(self, world: Any) -> None:
        self.world = world
        self.rank = int(world.Get_rank())
        self.size = int(world.Get_size())
        self.events: list[tuple] = []
        self.aux: dict[int, list[int]] = {}
        self.comms: dict[int, list[int]] = {}
        self._made = 0
        self._next_request = 0
        self._iterations: list[tuple[int, int]] = []  # (first event index, iteration; -1 = outside)
        self._offset = time.time_ns() - _clock()

    def now(self) -> int:
        """Wall-clock time in integer nanoseconds (events keep raw clock readings; :meth:`columns` adds the offset)."""
        return _clock() + self._offset

    def new_comm(self, comm: Any) -> int:
        """Id of a communicator just created on this rank (see the module docstring)."""
        from mpi4py import MPI

        n = int(comm.Get_size())
        members = MPI.Group.Translate_ranks(comm.Get_group(), list(range(n)), self.world.Get_group())
        cid = 1 + self._made * self.size + min(members)
        self._made += 1
        self.comms[cid] = [int(m) for m in members]
        return cid

    def iteration(self, index: int | None) -> None:
        """Events recorded from now on belong to application iteration ``index`` (None: to none).

        Costs nothing per event: only the boundary is stored; the replay then
        reports per-iteration times.
        """
        self._iterations.append((len(self.events), -1 if index is None else int(index)))

    # ------------------------------------------------------------------ output
    def columns(self) -> dict[str, np.ndarray]:
        """This rank's events as arrays (``aux_len``/``aux`` in CSR form)."""
        ev = self.events
        cols = {name: np.array([e[k] for e in ev], dtype=np.int64) for k, name in enumerate(_FIELDS)}
        cols["t_entry"] += self._offset
        cols["t_exit"] += self._offset
        it = np.full(len(ev), -1, dtype=np.int64)
        for k, (start, index) in enumerate(self._iterations):
            stop = self._iterations[k + 1][0] if k + 1 < len(self._iterations) else len(ev)
            it[start:stop] = index
        cols["iteration"] = it
        lens = np.array([len(self.aux.get(i, ())) for i in range(len(ev))], dtype=np.int64)
        cols["aux_len"] = lens
        cols["aux"] = np.array([x for i in range(len(ev)) for x in self.aux.get(i, ())], dtype=np.int64)
        return cols

    def _meta(self) -> dict[str, Any]:
        return {"rank": self.rank, "nprocs": self.size, "host": socket.gethostname(),
                "comms": {str(k): v for k, v in self.comms.items()}, "clock": "perf_counter_ns + time_ns offset"}

    def save(self, path: str | os.PathLike) -> Path:
        """Write this rank's events to ``path`` (``.npz``; atomically); returns the path."""
        dest = Path(path)
        with atomic_path(dest) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, meta=np.array(json.dumps(self._meta())), **self.columns())
        return dest

    def gather(self, root: int = 0, source: str = "recorded") -> Trace | None:
        """Collect every rank's events on ``root``; the :class:`Trace` there, None elsewhere."""
        parts = self.world.gather((self.columns(), self._meta()), root=root)
        if parts is None:
            return None
        return _build([p[0] for p in parts], [p[1] for p in parts], source)


def _build(columns: Sequence[dict[str, np.ndarray]], metas: Sequence[dict], source: str) -> Trace:
    nprocs = int(metas[0]["nprocs"])
    comms: dict[int, list[int]] = {}
    for m in metas:
        comms.update({int(k): v for k, v in m["comms"].items()})
    b = TraceBuilder(nprocs, comms=comms, source=source)
    marked = any(np.any(c["iteration"] >= 0) for c in columns)
    for cols, m in zip(columns, metas, strict=True):
        n = len(cols["call"])
        if n:
            extra = {"iteration": cols["iteration"]} if marked else {}
            b.extend(np.full(n, int(m["rank"])), cols["call"], cols["peer"], cols["nbytes"], cols["tag"], cols["comm"],
                     cols["request"], aux_len=cols["aux_len"], aux=cols["aux"], t_entry=cols["t_entry"],
                     t_exit=cols["t_exit"], **extra)
    return b.build(meta={"format": "perfmod-recorder", "hosts": sorted({m["host"] for m in metas})})


def load_recording(paths: Iterable[str | os.PathLike]) -> Trace:
    """Merge the ``.npz`` files that :meth:`Recorder.save` wrote (one per rank) into a Trace."""
    columns, metas = [], []
    paths = [Path(p) for p in paths]
    for p in paths:
        try:
            with np.load(p, allow_pickle=False) as z:
                metas.append(json.loads(str(z["meta"])))
                columns.append({k: z[k] for k in (*_FIELDS, "aux_len", "aux", "iteration")})
        except (OSError, KeyError, ValueError) as err:
            raise TraceError(f"{p}: not a perfmod recording: {err}") from None
    if not paths:
        raise TraceError("load_recording: no files given")
    ranks = sorted(int(m["rank"]) for m in metas)
    if ranks != list(range(int(metas[0]["nprocs"]))):
        raise TraceError(f"{paths[0].parent}: recordings of ranks {ranks}, expected 0..{int(metas[0]['nprocs']) - 1}")
    return _build(columns, metas, str(paths[0].parent))


class RecordingRequest:
    """An mpi4py request with the recorder's id; ``Wait``/``Test`` record themselves."""

    __slots__ = ("req", "id", "rec", "done")

    def __init__(self, req: Any, rid: int, rec: Recorder) -> None:
        self.req, self.id, self.rec, self.done = req, rid, rec, False

    def Wait(self, status: Any = None) -> Any:  # noqa: N802 - mpi4py's name
        t0 = _clock()
        out = self.req.Wait(status)
        t1 = _clock()
        rid = self.id if not self.done else NO_REQUEST
        self.done = True
        self.rec.events.append((Call.WAIT, NO_PEER, 0, 0, 0, rid, t0, t1))
        return out

    def Test(self, status: Any = None) -> bool:  # noqa: N802
        t0 = _clock()
        flag = self.req.Test(status)
        t1 = _clock()
        rid = self.id if flag and not self.done else NO_REQUEST
        self.done = self.done or bool(flag)
        self.rec.events.append((Call.TEST, NO_PEER, 0, 0, 0, rid, t0, t1))
        return flag

    def __getattr__(self, name: str) -> Any:
        return getattr(self.req, name)


def _peer(v: int, any_source: int, proc_null: int) -> int:
    return ANY_SOURCE if v == any_source else PROC_NULL if v == proc_null else v


class RecordingComm:
    """Proxy of an mpi4py communicator that records its buffer-based calls (see the module docstring)."""

    def __init__(self, comm: Any, recorder: Recorder | None = None, comm_id: int = 0) -> None:
        from mpi4py import MPI

        self._comm = comm
        self._rec = recorder if recorder is not None else Recorder(comm)
        self._cid = comm_id
        self._any_source, self._any_tag, self._null = MPI.ANY_SOURCE, MPI.ANY_TAG, MPI.PROC_NULL
        self._waitall, self._sum = MPI.Request.Waitall, MPI.SUM

    @property
    def recorder(self) -> Recorder:
        """The rank's event log."""
        return self._rec

    def __getattr__(self, name: str) -> Any:
        return getattr(self._comm, name)

    def _log(self, call: int, peer: int, nbytes: int, tag: int, t0: int, t1: int, req: int = NO_REQUEST,
             aux: list[int] | None = None) -> None:
        ev = self._rec.events
        if aux is not None:
            self._rec.aux[len(ev)] = aux
        ev.append((call, peer, nbytes, tag, self._cid, req, t0, t1))

    # ------------------------------------------------------------ point to point
    def Send(self, buf: Any, dest: int, tag: int = 0) -> None:  # noqa: N802
        t0 = _clock()
        self._comm.Send(buf, dest, tag)
        t1 = _clock()
        self._log(Call.SEND, PROC_NULL if dest == self._null else dest, _nbytes(buf), tag, t0, t1)

    def Ssend(self, buf: Any, dest: int, tag: int = 0) -> None:  # noqa: N802
        t0 = _clock()
        self._comm.Ssend(buf, dest, tag)
        t1 = _clock()
        self._log(Call.SSEND, PROC_NULL if dest == self._null else dest, _nbytes(buf), tag, t0, t1)

    def Recv(self, buf: Any, source: int | None = None, tag: int | None = None,  # noqa: N802
             status: Any = None) -> None:
        source = self._any_source if source is None else source
        tag = self._any_tag if tag is None else tag
        t0 = _clock()
        self._comm.Recv(buf, source, tag, status)
        t1 = _clock()
        self._log(Call.RECV, _peer(source, self._any_source, self._null), _nbytes(buf),
                  ANY_TAG if tag == self._any_tag else tag, t0, t1)

    def Isend(self, buf: Any, dest: int, tag: int = 0) -> RecordingRequest:  # noqa: N802
        t0 = _clock()
        req = self._comm.Isend(buf, dest, tag)
        rec = self._rec
        rid = rec._next_request
        rec._next_request = rid + 1
        nb = buf.nbytes if type(buf) is np.ndarray else _nbytes(buf)
        rec.events.append((_ISEND, PROC_NULL if dest == self._null else dest, nb, tag, self._cid, rid, t0, _clock()))
        return RecordingRequest(req, rid, rec)

    def Irecv(self, buf: Any, source: int | None = None, tag: int | None = None) -> RecordingRequest:  # noqa: N802
        source = self._any_source if source is None else source
        tag = self._any_tag if tag is None else tag
        t0 = _clock()
        req = self._comm.Irecv(buf, source, tag)
        rec = self._rec
        rid = rec._next_request
        rec._next_request = rid + 1
        nb = buf.nbytes if type(buf) is np.ndarray else _nbytes(buf)
        peer = source if source >= 0 else _peer(source, self._any_source, self._null)
        rec.events.append((_IRECV, peer, nb, ANY_TAG if tag == self._any_tag else tag, self._cid, rid, t0, _clock()))
        return RecordingRequest(req, rid, rec)

    def Sendrecv(self, sendbuf: Any, dest: int, sendtag: int = 0, recvbuf: Any = None,  # noqa: N802
                 source: int | None = None, recvtag: int | None = None, status: Any = None) -> None:
        source = self._any_source if source is None else source
        recvtag = self._any_tag if recvtag is None else recvtag
        t0 = _clock()
        self._comm.Sendrecv(sendbuf, dest, sendtag, recvbuf, source, recvtag, status)
        t1 = _clock()
        aux = [_peer(source, self._any_source, self._null), _nbytes(recvbuf),
               ANY_TAG if recvtag == self._any_tag else recvtag]
        self._log(Call.SENDRECV, PROC_NULL if dest == self._null else dest, _nbytes(sendbuf), sendtag, t0, t1, aux=aux)

    def Waitall(self, requests: Sequence[RecordingRequest], statuses: Any = None) -> None:  # noqa: N802
        """``MPI.Request.Waitall`` of requests this proxy returned, recorded as one ``Waitall``."""
        t0 = _clock()
        self._waitall([r.req for r in requests], statuses)
        t1 = _clock()
        done = []
        for r in requests:
            if not r.done:
                r.done = True
                done.append(r.id)
        ev = self._rec.events
        self._rec.aux[len(ev)] = done
        ev.append((_WAITALL, NO_PEER, 0, 0, self._cid, NO_REQUEST, t0, t1))

    def Waitany(self, requests: Sequence[RecordingRequest], status: Any = None) -> int:  # noqa: N802
        """``MPI.Request.Waitany``; records the request it completed."""
        from mpi4py import MPI

        t0 = _clock()
        idx = MPI.Request.Waitany([r.req for r in requests], status)
        t1 = _clock()
        done = []
        if 0 <= idx < len(requests) and not requests[idx].done:
            requests[idx].done = True
            done = [requests[idx].id]
        self._log(Call.WAITANY, NO_PEER, 0, 0, t0, t1, aux=done)
        return idx

    # ---------------------------------------------------------------- collectives
    def Barrier(self) -> None:  # noqa: N802
        t0 = _clock()
        self._comm.Barrier()
        t1 = _clock()
        self._log(Call.BARRIER, NO_PEER, 0, 0, t0, t1)

    def Bcast(self, buf: Any, root: int = 0) -> None:  # noqa: N802
        t0 = _clock()
        self._comm.Bcast(buf, root)
        t1 = _clock()
        self._log(Call.BCAST, root, _nbytes(buf), 0, t0, t1)

    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Any = None, root: int = 0) -> None:  # noqa: N802
        from mpi4py import MPI

        t0 = _clock()
        self._comm.Reduce(sendbuf, recvbuf, MPI.SUM if op is None else op, root)
        t1 = _clock()
        self._log(Call.REDUCE, root, _nbytes(recvbuf if sendbuf is MPI.IN_PLACE else sendbuf), 0, t0, t1)

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Any = None) -> None:  # noqa: N802
        t0 = _clock()
        self._comm.Allreduce(sendbuf, recvbuf, self._sum if op is None else op)
        t1 = _clock()
        self._log(Call.ALLREDUCE, NO_PEER, _nbytes(recvbuf), 0, t0, t1)

    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        t0 = _clock()
        self._comm.Alltoall(sendbuf, recvbuf)
        t1 = _clock()
        self._log(Call.ALLTOALL, NO_PEER, _nbytes(sendbuf) // int(self._comm.Get_size()), 0, t0, t1)

    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        t0 = _clock()
        self._comm.Allgather(sendbuf, recvbuf)
        t1 = _clock()
        self._log(Call.ALLGATHER, NO_PEER, _nbytes(sendbuf), 0, t0, t1)

    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:  # noqa: N802
        t0 = _clock()
        self._comm.Gather(sendbuf, recvbuf, root)
        t1 = _clock()
        self._log(Call.GATHER, root, _nbytes(sendbuf), 0, t0, t1)

    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:  # noqa: N802
        t0 = _clock()
        self._comm.Scatter(sendbuf, recvbuf, root)
        t1 = _clock()
        self._log(Call.SCATTER, root, _nbytes(recvbuf), 0, t0, t1)

    # ------------------------------------------- pickle-based (lowercase) calls
    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        t0 = _clock()
        self._comm.send(obj, dest, tag)
        t1 = _clock()
        self._log(Call.SEND, PROC_NULL if dest == self._null else dest, _obj_nbytes(obj), tag, t0, t1)

    def recv(self, buf: Any = None, source: int | None = None, tag: int | None = None, status: Any = None) -> Any:
        source = self._any_source if source is None else source
        tag = self._any_tag if tag is None else tag
        t0 = _clock()
        obj = self._comm.recv(buf, source, tag, status)
        t1 = _clock()
        self._log(Call.RECV, _peer(source, self._any_source, self._null), _obj_nbytes(obj),
                  ANY_TAG if tag == self._any_tag else tag, t0, t1)
        return obj

    def sendrecv(self, sendobj: Any, dest: int, sendtag: int = 0, recvbuf: Any = None, source: int | None = None,
                 recvtag: int | None = None, status: Any = None) -> Any:
        source = self._any_source if source is None else source
        recvtag = self._any_tag if recvtag is None else recvtag
        t0 = _clock()
        obj = self._comm.sendrecv(sendobj, dest, sendtag, recvbuf, source, recvtag, status)
        t1 = _clock()
        aux = [_peer(source, self._any_source, self._null), _obj_nbytes(obj),
               ANY_TAG if recvtag == self._any_tag else recvtag]
        self._log(Call.SENDRECV, PROC_NULL if dest == self._null else dest, _obj_nbytes(sendobj), sendtag, t0, t1,
                  aux=aux)
        return obj

    def barrier(self) -> None:
        t0 = _clock()
        self._comm.barrier()
        self._log(Call.BARRIER, NO_PEER, 0, 0, t0, _clock())

    def bcast(self, obj: Any, root: int = 0) -> Any:
        t0 = _clock()
        out = self._comm.bcast(obj, root)
        t1 = _clock()
        self._log(Call.BCAST, root, _obj_nbytes(out), 0, t0, t1)
        return out

    def reduce(self, sendobj: Any, op: Any = None, root: int = 0) -> Any:
        t0 = _clock()
        out = self._comm.reduce(sendobj, self._sum if op is None else op, root)
        t1 = _clock()
        self._log(Call.REDUCE, root, _obj_nbytes(sendobj), 0, t0, t1)
        return out

    def allreduce(self, sendobj: Any, op: Any = None) -> Any:
        t0 = _clock()
        out = self._comm.allreduce(sendobj, self._sum if op is None else op)
        t1 = _clock()
        self._log(Call.ALLREDUCE, NO_PEER, _obj_nbytes(sendobj), 0, t0, t1)
        return out

    def gather(self, sendobj: Any, root: int = 0) -> Any:
        t0 = _clock()
        out = self._comm.gather(sendobj, root)
        t1 = _clock()
        self._log(Call.GATHER, root, _obj_nbytes(sendobj), 0, t0, t1)
        return out

    def allgather(self, sendobj: Any) -> Any:
        t0 = _clock()
        out = self._comm.allgather(sendobj)
        t1 = _clock()
        self._log(Call.ALLGATHER, NO_PEER, _obj_nbytes(sendobj), 0, t0, t1)
        return out

    def scatter(self, sendobj: Any, root: int = 0) -> Any:
        t0 = _clock()
        out = self._comm.scatter(sendobj, root)
        t1 = _clock()
        self._log(Call.SCATTER, root, _obj_nbytes(out), 0, t0, t1)
        return out

    # ------------------------------------------------------------ communicators
    def _wrap(self, comm: Any) -> RecordingComm | Any:
        from mpi4py import MPI

        if comm == MPI.COMM_NULL:
            return comm
        return RecordingComm(comm, self._rec, self._rec.new_comm(comm))

    def Split(self, color: int = 0, key: int = 0) -> RecordingComm | Any:  # noqa: N802
        return self._wrap(self._comm.Split(color, key))

    def Dup(self) -> RecordingComm:  # noqa: N802
        return self._wrap(self._comm.Dup())

    def Create_cart(self, dims: Sequence[int], periods: Sequence[bool] | None = None,  # noqa: N802
                    reorder: bool = False) -> RecordingComm | Any:
        return self._wrap(self._comm.Create_cart(dims, periods, reorder))


def record(comm: Any | None = None) -> RecordingComm:
    """A :class:`RecordingComm` around ``comm`` (default ``MPI.COMM_WORLD``), with a fresh :class:`Recorder`."""
    if comm is None:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    return RecordingComm(comm)
