"""One SimGrid TIT action line as SMPI's replay reads it (``src/smpi/internals/smpi_replay.cpp``).

Used by :func:`perfmod.trace.formats.tit.read_tit`: the typed arguments of
a line (:class:`Line`, errors naming ``file:line`` and the argument), each
rank's pending requests (:class:`RankState`), and the event each action gives
(:func:`action`), with SMPI's parsers as the reference for every field.
"""

from __future__ import annotations

import numpy as np

from perfmod.trace.core import ANY_SOURCE, ANY_TAG, PROC_NULL, Call
from perfmod.trace.formats.textio import FormatError

__all__ = ["TIT_TYPE_SIZES", "DEFAULT_FLOP_RATE", "SMPI_ANY_SOURCE", "SMPI_ANY_TAG", "SMPI_PROC_NULL", "RankState",
           "Line", "SMPI_ACTIONS", "action", "finish_vector"]

#: Bytes per element of SMPI's datatype ids (``src/smpi/mpi/smpi_datatype.cpp``, CREATE_MPI_DATATYPE).
TIT_TYPE_SIZES: dict[int, int] = {0: 8, 1: 4, 2: 1, 3: 2, 4: 8, 5: 4, 6: 1, 7: 8, 8: 1, 9: 1, 10: 2, 11: 4, 12: 8,
                                  13: 8, 14: 16, 15: 4, 16: 1, 17: 1, 18: 2}
DEFAULT_FLOP_RATE = 1e9  #: flop/s used to turn compute seconds into TIT flops and back
SMPI_ANY_SOURCE, SMPI_ANY_TAG, SMPI_PROC_NULL = -555, -444, -666
_BYTE, _DOUBLE = 6, 0


class RankState:
    """What SMPI keeps per rank while replaying: pending requests, default datatype, compute so far."""

    def __init__(self) -> None:
        self.pending: list[tuple[int, int, int, int]] = []  # (src, dst, tag, request id)
        self.tested: dict[int, dict] = {}  # request id -> the last test event that found it pending
        self.next_req = 0
        self.compute = 0.0
        self.default_type = _BYTE
        self.skipped_data: dict[str, int] = {}  # actions that move data, skipped (warned about)


class Line:
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

    def size(self, i: int, what: str, dtype_at: int, st: RankState) -> int:
        n = self.int(i, what)
        if n < 0:
            raise self.fail(f"argument {i + 1} ({what}) must be >= 0, got {n}")
        return n * self.type_size(dtype_at, st)

    def type_size(self, i: int, st: RankState | int) -> int:
        """Bytes per element of the datatype id at argument ``i`` (the rank's default when absent)."""
        dt = self.int(i, "datatype", default=st if isinstance(st, int) else st.default_type)
        if dt not in TIT_TYPE_SIZES:
            raise self.fail(f"argument {i + 1} (datatype): unknown SMPI datatype id {dt}")
        return TIT_TYPE_SIZES[dt]


_VECTOR = {"alltoallv": Call.ALLTOALLV, "reducescatter": Call.REDUCE_SCATTER}
#: SMPI actions that move data and that perfmod does not model: skipping them warns.
_NOT_READ = frozenset({"allgatherv", "gatherv", "scatterv", "scan", "exscan"})
#: The actions SMPI's replay registers (``smpi_replay_init`` in ``smpi_replay.cpp``), plus the older
#: ``sendRecv``, ``scan`` and ``exscan``; SMPI stops on any other name ("action ... is unknown").
SMPI_ACTIONS = frozenset({
    "init", "finalize", "comm_size", "comm_split", "comm_dup", "send", "isend", "recv", "irecv", "test", "wait",
    "waitall", "barrier", "bcast", "reduce", "allreduce", "alltoall", "alltoallv", "gather", "scatter", "gatherv",
    "scatterv", "allgather", "allgatherv", "reducescatter", "compute", "sleep", "location", "sendRecv", "scan",
    "exscan"})


def _wait_or_test(ln: Line, st: RankState) -> dict:
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
        key = (key[0], key[1], ANY_TAG if key[2] == SMPI_ANY_TAG else key[2])
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


def finish_vector(ev: dict, size: int) -> float:
    """Fill an ``alltoallv`` / ``reducescatter`` event now that the world size is known; its reduction flops.

    SMPI reads ``P`` = the size of ``MPI_COMM_WORLD`` counts from these
    lines (``AllToAllVArgParser``, ``ReduceScatterArgParser``), then
    optional datatype ids:

    - ``alltoallv <send total> <P send counts> <recv total> <P recv counts> [<send type> [<recv type>]]``
    - ``reducescatter <P recv counts> <flops> [<type>]``
    """
    ln: Line = ev.pop("vector")
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
    if v == SMPI_PROC_NULL:
        return PROC_NULL
    return ANY_SOURCE if recv and v == SMPI_ANY_SOURCE else v


def action(ln: Line, rank: int, st: RankState, unknown: str, rate: float,
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
        tag = ANY_TAG if recv and tag == SMPI_ANY_TAG else tag
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
    if a not in SMPI_ACTIONS and unknown == "strict":
        raise ln.fail("not an action of SimGrid's replay (misspelt?); read with unknown='skip' to drop such lines "
                      "(counted and reported) or unknown='keep'")
    if a in _NOT_READ and unknown in ("skip", "strict"):
        st.skipped_data[a] = st.skipped_data.get(a, 0) + 1
    if unknown == "error":
        raise ln.fail("action not modelled by perfmod (read with unknown='skip' or 'keep' to count it instead)")
    return (dict(call=Call.OTHER, other=a) if unknown == "keep" else {"call": None, "skipped": a}), 0.0
