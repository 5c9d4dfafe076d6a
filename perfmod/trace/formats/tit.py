"""SimGrid time-independent traces (TIT): reader and writer (paper 000 §2.2, §3.2).

Paper: ``shared/papers/000_95042cffe07dd549.txt`` §2.2, §3.2 (trace-driven
replay).  SMPI replays these traces (``smpirun -replay``); the action syntax
is that of ``src/smpi/internals/smpi_replay.cpp`` (github.com/simgrid/simgrid):
one action per line, ``<rank> <action> <args...>``, ``#`` comments::

    0 init
    0 compute 5e8                 flops
    0 send 1 0 1e6                dst tag size [datatype]
    0 irecv 1 0 1e6               src tag size [datatype]
    0 wait 1 0 0                  src dst tag of the request
    0 waitall
    0 sendRecv 800 1 800 1        sendcount dst recvcount src [datatypes]
    0 bcast 8 0                   size [root [datatype]]
    0 reduce 8 0 0                size flops [root [datatype]]
    0 allreduce 5e4 5e8           size flops [datatype]
    0 alltoall 64 64              per-destination send and receive size
    0 alltoallv 12 4 8 12 8 4     send total, sendcounts (P), recv total, recvcounts (P)
    0 barrier
    0 finalize

Sizes count elements of the datatype: ``MPI_BYTE`` unless ``init`` had an
argument (then ``MPI_DOUBLE``, as SMPI does), or the trailing datatype id of
SMPI's table (:data:`TIT_TYPE_SIZES`).  The writer writes bytes with the
default ``MPI_BYTE``, so sizes are exact.

Time: TIT carries no timestamps.  Compute between calls is written as
``compute <flops>`` with ``flops = seconds x flop_rate`` and read back as
``flops / flop_rate`` (give SimGrid the same host speed); the reduction
flops of ``reduce``/``allreduce`` are read into ``meta["reduction_flops"]``
and written as 0.  Compute lines before an action become that action's
``compute``; compute at the end of a rank becomes a ``Call.COMPUTE`` event.

What the writer maps and what it cannot: only ``MPI_COMM_WORLD``; each
rank starts with ``init`` and ends with ``finalize`` (added when the trace
has no ``Init``/``Finalize`` there: SMPI needs them); per-rank files are
listed in the index by name, so run ``smpirun -replay index`` from the
index's directory (SMPI opens them relative to its working directory); a
``Waitall`` that completes every pending request becomes ``waitall``, any
other wait one ``wait src dst tag`` per completed request (SMPI pops the
oldest pending request with that key); tests that completed nothing, and
operations on ``MPI_PROC_NULL`` with their waits, are left out;
``sendRecv`` has no tags (read back as 0); wildcards are SMPI's
``MPI_ANY_SOURCE`` (-555) and ``MPI_ANY_TAG`` (-444).
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from perfmod.core.io import atomic_path
from perfmod.trace.builder import TraceBuilder
from perfmod.trace.core import ANY_SOURCE, ANY_TAG, PROC_NULL, Call, Trace, TraceError, TraceWarning
from perfmod.trace.formats.textio import FormatError, alltoallv_recv_bytes, numbered_lines
from perfmod.trace.requests import resolve_requests

__all__ = ["TIT_TYPE_SIZES", "DEFAULT_FLOP_RATE", "read_tit", "write_tit"]

#: Bytes per element of SMPI's datatype ids (``src/smpi/mpi/smpi_datatype.cpp``, CREATE_MPI_DATATYPE).
TIT_TYPE_SIZES: dict[int, int] = {0: 8, 1: 4, 2: 1, 3: 2, 4: 8, 5: 4, 6: 1, 7: 8, 8: 1, 9: 1, 10: 2, 11: 4, 12: 8,
                                  13: 8, 14: 16, 15: 4, 16: 1, 17: 1, 18: 2}
DEFAULT_FLOP_RATE = 1e9  #: flop/s used to turn compute seconds into TIT flops and back
_SMPI_ANY_SOURCE, _SMPI_ANY_TAG, _SMPI_PROC_NULL = -555, -444, -666
_BYTE, _DOUBLE = 6, 0


class _Rank:
    def __init__(self) -> None:
        self.pending: list[tuple[int, int, int, int]] = []  # (src, dst, tag, request id)
        self.tested: dict[int, dict] = {}  # request id -> the last test event that found it pending
        self.next_req = 0
        self.compute = 0.0
        self.default_type = _BYTE
        self.skipped_data: dict[str, int] = {}  # actions that move data, skipped (warned about)


class _Line:
    """One action line: typed access to its arguments with errors naming file:line."""

    def __init__(self, path: str, n: int, tokens: list[str]) -> None:
        self.path, self.n, self.tok = path, n, tokens
        self.action = tokens[1]

    def fail(self, msg: str) -> FormatError:
        return FormatError(self.path, self.n, f"{self.action}: {msg}")

    def need(self, k: int) -> None:
        if len(self.tok) - 2 < k:
            raise self.fail(f"needs {k} arguments, got {len(self.tok) - 2}")

    def num(self, i: int, what: str) -> float:
        self.need(i + 1)
        try:
            return float(self.tok[2 + i])
        except ValueError:
            raise self.fail(f"argument {i + 1} ({what}): {self.tok[2 + i]!r} is not a number") from None

    def int(self, i: int, what: str, default: int | None = None) -> int:
        if default is not None and len(self.tok) <= 2 + i:
            return default
        text = self.tok[2 + i] if len(self.tok) > 2 + i else ""
        try:
            return int(text)
        except ValueError:
            v = self.num(i, what)
            if not np.isfinite(v):
                raise self.fail(f"argument {i + 1} ({what}) must be finite") from None
            return int(v)  # SMPI truncates "1e6"-style sizes

    def size(self, i: int, what: str, dtype_at: int, st: _Rank) -> int:
        n = self.int(i, what)
        if n < 0:
            raise self.fail(f"argument {i + 1} ({what}) must be >= 0, got {n}")
        return n * self.type_size(dtype_at, st)

    def type_size(self, i: int, st: _Rank | int) -> int:
        """Bytes per element of the datatype id at argument ``i`` (the rank's default when absent)."""
        dt = self.int(i, "datatype", default=st if isinstance(st, int) else st.default_type)
        if dt not in TIT_TYPE_SIZES:
            raise self.fail(f"argument {i + 1} (datatype): unknown SMPI datatype id {dt}")
        return TIT_TYPE_SIZES[dt]


_VECTOR = {"alltoallv": Call.ALLTOALLV, "reducescatter": Call.REDUCE_SCATTER}
#: SMPI actions that move data and that perfmod does not model: skipping them warns.
_NOT_READ = frozenset({"allgatherv", "gatherv", "scatterv", "scan", "exscan"})


def _wait_or_test(ln: _Line, st: _Rank) -> dict:
    """A ``wait`` or ``test`` line, as SMPI's replay (``WaitAction``, ``TestAction``) treats it.

    SMPI keeps each rank's pending requests in one list per (src, dst,
    tag); ``wait`` and ``test`` take the first of their key's list.  A
    ``test`` that finds the request puts it back at the end of the list
    (still pending, or as a completed placeholder that a later ``wait``
    takes and returns at once), so perfmod keeps it pending: a later
    ``wait`` or ``waitall`` completes it, and only a request that no later
    wait completes is completed by the last test that found it (set when
    the rank's lines are read).  A ``test`` that finds nothing is ignored,
    as SMPI ignores it.
    """
    test = ln.action == "test"
    if not st.pending and not test:
        raise ln.fail("no isend/irecv of this rank is pending")
    if len(ln.tok) > 2:
        key = (_peer(ln.int(0, "src"), True), _peer(ln.int(1, "dst"), False), ln.int(2, "tag"))
        key = (key[0], key[1], ANY_TAG if key[2] == _SMPI_ANY_TAG else key[2])
        hit = [i for i, p in enumerate(st.pending) if p[:3] == key]
        if not hit and not test:
            raise ln.fail(f"no pending request with src {key[0]}, dst {key[1]}, tag {key[2]}")
    else:
        hit = [0] if st.pending else []
    if test:
        ev = dict(call=Call.TEST)
        if hit:
            entry = st.pending.pop(hit[0])
            st.pending.append(entry)
            st.tested[entry[3]] = ev
        return ev
    req = st.pending.pop(hit[0])[3]
    st.tested.pop(req, None)
    return dict(call=Call.WAIT, request=req)


def _finish_vector(ev: dict, size: int) -> float:
    """Fill an ``alltoallv`` / ``reducescatter`` event now that the world size is known; its reduction flops.

    SMPI reads ``P`` = the size of ``MPI_COMM_WORLD`` counts from these
    lines (``AllToAllVArgParser``, ``ReduceScatterArgParser``), then
    optional datatype ids:

    - ``alltoallv <send total> <P send counts> <recv total> <P recv counts> [<send type> [<recv type>]]``
    - ``reducescatter <P recv counts> <flops> [<type>]``
    """
    ln: _Line = ev.pop("vector")
    dt = ev.pop("default_type")
    args = len(ln.tok) - 2
    p = size
    if ev["call"] == Call.ALLTOALLV:
        if args not in (2 * p + 2, 2 * p + 3, 2 * p + 4):
            raise ln.fail(f"needs send total, {p} send counts, receive total, {p} receive counts [datatypes] "
                          f"for the {p} ranks of the trace (got {args} arguments; pass nprocs= if the world is "
                          "larger)")
        sz = ln.type_size(2 + 2 * p, dt)
        counts = [ln.int(1 + k, f"sendcount {k}") * sz for k in range(p)]
        if min(counts, default=0) < 0:
            raise ln.fail("send counts must be >= 0")
        ev.update(nbytes=sum(counts), aux=counts)
        return 0.0
    if args not in (p + 1, p + 2):
        raise ln.fail(f"needs {p} receive counts, flops [datatype] for the {p} ranks of the trace (got {args} "
                      "arguments; pass nprocs= if the world is larger)")
    counts = [ln.int(k, f"recvcount {k}") for k in range(p)]
    if min(counts, default=0) < 0:
        raise ln.fail("receive counts must be >= 0")
    ev["nbytes"] = sum(counts) * ln.type_size(p + 1, dt)
    return ln.num(p, "flops")


def _peer(v: int, recv: bool) -> int:
    if v == _SMPI_PROC_NULL:
        return PROC_NULL
    return ANY_SOURCE if recv and v == _SMPI_ANY_SOURCE else v


def _files(path: Path) -> list[Path]:
    """A trace file, or an index file listing one trace file per line (relative to the index)."""
    for _, text in numbered_lines(path):
        tok = text.split()
        if not tok or tok[0].startswith("#"):
            continue
        try:
            int(tok[0])
            return [path]
        except ValueError:
            pass
        if len(tok) == 1 and ((path.parent / tok[0]).is_file() or Path(tok[0]).is_file()):
            # SMPI opens the listed files relative to its working directory; perfmod writes them
            # relative to the index: try the index's directory first
            names = [t.strip() for _, t in numbered_lines(path) if t.strip() and not t.startswith("#")]
            return [path.parent / n if (path.parent / n).is_file() else Path(n) for n in names]
        return [path]
    return [path]


def read_tit(path: str | os.PathLike, nprocs: int | None = None, flop_rate: float = DEFAULT_FLOP_RATE,
             unknown: str = "skip") -> Trace:
    """Read a SimGrid time-independent trace (one file, or an index of per-rank files).

    Parameters
    ----------
    path : path
        The trace, or a file listing per-rank traces (one path per line).
    nprocs : int, optional
        World size (default: highest rank seen + 1).
    flop_rate : float
        flop/s that turns ``compute`` flops into seconds.
    unknown : {"skip", "keep", "error"}
        Actions perfmod does not model (``scan``, ``gatherv``, ``location``,
        ``comm_split``...): dropped, kept as ``Call.OTHER``, or an error;
        counted in ``meta["unknown_calls"]`` either way.

    Raises
    ------
    FormatError
        Naming file, line and argument.
    """
    if unknown not in ("skip", "keep", "error"):
        raise ValueError(f"unknown= must be 'skip', 'keep' or 'error', got {unknown!r}")
    if flop_rate <= 0:
        raise ValueError(f"flop_rate must be > 0 flop/s, got {flop_rate!r}")
    rows: list[tuple[int, dict]] = []
    states: dict[int, _Rank] = {}
    unknown_calls: Counter = Counter()
    red_flops = 0.0
    for f in _files(Path(path)):
        for n, text in numbered_lines(f, complete=True):
            tok = text.split()
            if not tok or tok[0].startswith("#"):
                continue
            if len(tok) < 2:
                raise FormatError(f, n, f"expected '<rank> <action> ...', got {text!r}")
            try:
                rank = int(tok[0])
            except ValueError:
                raise FormatError(f, n, f"rank: {tok[0]!r} is not an integer") from None
            if rank < 0:
                raise FormatError(f, n, f"rank: must be >= 0, got {rank}")
            st = states.setdefault(rank, _Rank())
            ln = _Line(str(f), n, tok)
            ev, flops = _action(ln, rank, st, unknown, flop_rate, nprocs)
            red_flops += flops
            if ev is None:
                continue
            if ev.get("call") in (Call.OTHER, None) and ev:
                unknown_calls[ln.action] += 1
            if ev.get("call") is not None:
                ev["compute"], st.compute = st.compute, 0.0
                ev["line"] = n
                rows.append((rank, ev))
    for rank, st in states.items():
        if st.compute > 0:
            rows.append((rank, dict(call=Call.COMPUTE, compute=st.compute)))
        for rid, test in st.tested.items():  # tested, and no later wait completed it: the test did
            test["request"] = rid
    size = nprocs if nprocs is not None else (max(states) + 1 if states else 1)
    if nprocs is None and len(states) < size:
        missing = next(k for k in range(len(states) + 1) if k not in states)
        raise TraceError(f"{path}: ranks 0..{size - 1} expected from the highest rank, but {size - len(states)} "
                         f"have no action (first: rank {missing}); pass nprocs= if that is intended")
    if states and max(states) >= size:
        raise TraceError(f"{path}: rank {max(states)} >= nprocs = {size}")
    for _, ev in rows:
        if "vector" in ev:
            red_flops += _finish_vector(ev, size)
    skipped: Counter = Counter()
    for st in states.values():
        skipped.update(st.skipped_data)
    if skipped:
        warnings.warn(f"{path}: skipped SMPI actions that move data, which perfmod does not model: "
                      + ", ".join(f"{k} x{v}" for k, v in sorted(skipped.items()))
                      + "; the replay leaves their communication out (read with unknown='keep' or 'error')",
                      TraceWarning, stacklevel=2)
    b = TraceBuilder(size, source=str(path))
    for rank, ev in rows:
        other = ev.pop("other", None)
        if other is not None:
            ev["peer"] = b.other(other)
        b.append(rank, **ev)
    meta = {"format": "simgrid-tit", "flop_rate": flop_rate, "unknown_calls": dict(unknown_calls),
            "reduction_flops": red_flops}
    return b.build(meta=meta)


def _action(ln: _Line, rank: int, st: _Rank, unknown: str, rate: float,
            nprocs: int | None) -> tuple[dict | None, float]:
    """The event of one action line (None for compute and ignored lines) and its reduction flops."""
    a = ln.action
    if a in ("compute", "sleep"):
        v = ln.num(0, "flops" if a == "compute" else "seconds")
        if not np.isfinite(v) or v < 0:
            raise ln.fail(f"argument 1 must be finite and >= 0, got {ln.tok[2]!r}")
        st.compute += v / rate if a == "compute" else v
        return None, 0.0
    if a == "init":
        st.default_type = _DOUBLE if len(ln.tok) > 2 else _BYTE
        return dict(call=Call.INIT), 0.0
    if a == "finalize":
        return dict(call=Call.FINALIZE), 0.0
    if a in ("send", "isend", "recv", "irecv"):
        ln.need(2)
        recv = a in ("recv", "irecv")
        old = len(ln.tok) == 4  # pre-3.2x form without a tag: <rank> send <dst> <size>
        peer = _peer(ln.int(0, "partner"), recv)
        tag = 0 if old else ln.int(1, "tag")
        tag = ANY_TAG if recv and tag == _SMPI_ANY_TAG else tag
        nbytes = ln.size(1 if old else 2, "size", 2 if old else 3, st)
        code = {"send": Call.SEND, "isend": Call.ISEND, "recv": Call.RECV, "irecv": Call.IRECV}[a]
        ev = dict(call=code, peer=peer, nbytes=nbytes, tag=tag)
        if a[0] == "i":
            ev["request"] = st.next_req
            st.pending.append((peer, rank, tag, st.next_req) if recv else (rank, peer, tag, st.next_req))
            st.next_req += 1
        return ev, 0.0
    if a in ("wait", "test"):
        return _wait_or_test(ln, st), 0.0
    if a == "waitall":
        ids = [p[3] for p in st.pending]
        st.pending.clear()
        for rid in ids:
            st.tested.pop(rid, None)
        return dict(call=Call.WAITALL, aux=ids), 0.0
    if a == "barrier":
        return dict(call=Call.BARRIER), 0.0
    if a == "bcast":
        return dict(call=Call.BCAST, nbytes=ln.size(0, "size", 2, st), peer=ln.int(1, "root", default=0)), 0.0
    if a in ("reduce", "allreduce"):
        flops = ln.num(1, "flops")
        if a == "reduce":
            return dict(call=Call.REDUCE, nbytes=ln.size(0, "size", 3, st), peer=ln.int(2, "root", default=0)), flops
        return dict(call=Call.ALLREDUCE, nbytes=ln.size(0, "size", 2, st)), flops
    if a in ("alltoall", "allgather"):
        ln.need(2)
        code = Call.ALLTOALL if a == "alltoall" else Call.ALLGATHER
        return dict(call=code, nbytes=ln.size(0, "send size", 2, st)), 0.0
    if a in ("gather", "scatter"):
        ln.need(2)
        i = 0 if a == "gather" else 1
        return dict(call=Call.GATHER if a == "gather" else Call.SCATTER, nbytes=ln.size(i, "size", 3 + i, st),
                    peer=ln.int(2, "root", default=0)), 0.0
    if a in _VECTOR:
        return dict(call=_VECTOR[a], vector=ln, default_type=st.default_type), 0.0
    if a == "sendRecv":
        ln.need(4)
        return dict(call=Call.SENDRECV, peer=_peer(ln.int(1, "dst"), False), nbytes=ln.size(0, "sendcount", 4, st),
                    aux=[_peer(ln.int(3, "src"), True), ln.size(2, "recvcount", 5, st), 0]), 0.0
    if a == "comm_size":
        return {}, 0.0
    if a in _NOT_READ and unknown == "skip":
        st.skipped_data[a] = st.skipped_data.get(a, 0) + 1
    if unknown == "error":
        raise ln.fail("action not modelled by perfmod (read with unknown='skip' or 'keep' to count it instead)")
    return (dict(call=Call.OTHER, other=a) if unknown == "keep" else {"call": None, "skipped": a}), 0.0




def _tit_peer(v: int) -> int:
    return _SMPI_ANY_SOURCE if v == ANY_SOURCE else v


def _tit_tag(v: int) -> int:
    return _SMPI_ANY_TAG if v == ANY_TAG else v


def _rank_lines(trace: Trace, r: int, reqs, a2av: dict[int, list[int]], rate: float) -> list[str]:
    """The TIT lines of rank ``r`` (one pass over its events as Python lists)."""
    lines: list[str] = []
    pending: dict[int, str] = {}  # creating event -> "src dst tag"
    sl = trace.rank_events(r)
    a, b = sl.start, sl.stop
    calls, cms, tags = trace.call[sl].tolist(), trace.comm[sl].tolist(), trace.tag[sl].tolist()
    nbs, peers, comp = trace.nbytes[sl].tolist(), trace.peer[sl].tolist(), trace.compute[sl].tolist()
    ref = reqs.ref_ptr[a:b + 1].tolist()
    created = reqs.created[ref[0]:ref[-1]].tolist() if b > a else []
    for j in range(b - a):
        i = a + j
        c, peer, nb, tag = calls[j], peers[j], nbs[j], tags[j]
        if comp[j] > 0:
            lines.append(f"{r} compute {comp[j] * rate!r}")
        if c in (Call.COMPUTE, Call.OTHER):
            continue
        if c != Call.INIT and c != Call.FINALIZE and cms[j] != 0:
            raise TraceError(f"{trace._at(i)}: TIT describes MPI_COMM_WORLD only; communicator {cms[j]}")
        if c == Call.INIT:
            lines.append(f"{r} init")
        elif c == Call.FINALIZE:
            lines.append(f"{r} finalize")
        elif c in (Call.SEND, Call.SSEND, Call.ISEND, Call.ISSEND, Call.RECV, Call.IRECV):
            if peer == PROC_NULL:
                continue
            recv = c in (Call.RECV, Call.IRECV)
            name = {Call.SEND: "send", Call.SSEND: "send", Call.ISEND: "isend", Call.ISSEND: "isend",
                    Call.RECV: "recv", Call.IRECV: "irecv"}[c]
            lines.append(f"{r} {name} {_tit_peer(peer)} {_tit_tag(tag)} {nb}")
            if name[0] == "i":
                key = (_tit_peer(peer), r) if recv else (r, peer)
                pending[i] = f"{key[0]} {key[1]} {_tit_tag(tag)}"
        elif c in (Call.WAIT, Call.TEST, Call.WAITALL, Call.WAITANY, Call.WAITSOME, Call.TESTALL, Call.TESTANY,
                   Call.TESTSOME):
            done = [x for x in created[ref[j] - ref[0]:ref[j + 1] - ref[0]] if x in pending]
            verb = "wait" if c in (Call.WAIT, Call.WAITALL, Call.WAITANY, Call.WAITSOME) else "test"
            if c == Call.WAITALL and done and set(done) == set(pending):
                lines.append(f"{r} waitall")
                pending.clear()
                continue
            for x in done:
                lines.append(f"{r} {verb} {pending.pop(x)}")
        elif c == Call.SENDRECV:
            src, rb = int(trace.aux_of(i)[0]), int(trace.aux_of(i)[1])
            lines.append(f"{r} sendRecv {nb} {peer} {rb} {_tit_peer(src)}")
        elif c == Call.BARRIER:
            lines.append(f"{r} barrier")
        elif c == Call.BCAST:
            lines.append(f"{r} bcast {nb} {peer}")
        elif c == Call.REDUCE:
            lines.append(f"{r} reduce {nb} 0 {peer}")
        elif c == Call.ALLREDUCE:
            lines.append(f"{r} allreduce {nb} 0")
        elif c in (Call.ALLTOALL, Call.ALLGATHER):
            lines.append(f"{r} {'alltoall' if c == Call.ALLTOALL else 'allgather'} {nb} {nb}")
        elif c == Call.GATHER:
            lines.append(f"{r} gather {nb} {nb if r == peer else 0} {peer}")
        elif c == Call.SCATTER:
            lines.append(f"{r} scatter {nb if r == peer else 0} {nb} {peer}")
        elif c == Call.ALLTOALLV:
            send, recv = [int(x) for x in trace.aux_of(i)], a2av[i]
            lines.append(f"{r} alltoallv {sum(send)} {' '.join(map(str, send))} {sum(recv)} {' '.join(map(str, recv))}")
        elif c == Call.REDUCE_SCATTER:
            p = trace.nprocs
            counts = [nb // p + (1 if k < nb % p else 0) for k in range(p)]
            lines.append(f"{r} reducescatter {' '.join(map(str, counts))} 0")
        else:  # pragma: no cover - every Call is handled above
            raise TraceError(f"{trace._at(i)}: no TIT action for this call")
    # SMPI's replay needs init first (it sets the default datatype) and ends ranks at finalize
    calls = trace.call[sl]
    if not (calls.size and calls[0] == Call.INIT):
        lines.insert(0, f"{r} init")
    if not (calls.size and calls[-1] == Call.FINALIZE):
        lines.append(f"{r} finalize")
    return lines


def write_tit(trace: Trace, path: str | os.PathLike, flop_rate: float = DEFAULT_FLOP_RATE,
              per_rank: bool = False, progress: bool = False) -> list[Path]:
    """Write ``trace`` as a SimGrid time-independent trace.

    Parameters
    ----------
    trace : Trace
        Communication on ``MPI_COMM_WORLD`` only.
    path : path
        The trace file; with ``per_rank=True`` the index file that lists the
        per-rank files ``<stem>-<rank>.txt`` written next to it (the form
        ``smpirun -replay`` takes).
    flop_rate : float
        flop/s: ``compute`` seconds are written as ``seconds x flop_rate`` flops.
    per_rank : bool
        One file per rank plus the index, instead of one file.
    progress : bool
        Show a progress bar over the ranks.

    Returns
    -------
    list of Path
        The files written (the index first when ``per_rank``).

    Notes
    -----
    Sizes are bytes (the default ``MPI_BYTE``); ``MPI_ANY_SOURCE`` and
    ``MPI_ANY_TAG`` are written as SMPI's -555 and -444.  See the module
    docstring for what TIT cannot carry.
    """
    if flop_rate <= 0:
        raise ValueError(f"flop_rate must be > 0 flop/s, got {flop_rate!r}")
    reqs = resolve_requests(trace)
    a2av = alltoallv_recv_bytes(trace)
    per = [_rank_lines(trace, r, reqs, a2av, flop_rate)
           for r in tqdm(range(trace.nprocs), desc="TIT ranks", disable=not progress)]
    dest = Path(path)
    header = [f"# SimGrid time-independent trace written by perfmod: {trace.nprocs} ranks, sizes in bytes, "
              f"compute in flops at {flop_rate!r} flop/s"]
    if not per_rank:
        with atomic_path(dest) as tmp:
            tmp.write_text("\n".join(header + [ln for lines in per for ln in lines]) + "\n")
        return [dest]
    files = [dest.with_name(f"{dest.stem}-{r}.txt") for r in range(trace.nprocs)]
    for f, lines in zip(files, per, strict=True):
        with atomic_path(f) as tmp:
            tmp.write_text("\n".join(header + lines) + "\n")
    with atomic_path(dest) as tmp:
        tmp.write_text("\n".join(f.name for f in files) + "\n")
    return [dest, *files]


