"""Reader for SST DUMPI traces in their ``dumpi2ascii`` text form (paper 000 §2.2, §3.2).

Paper: Choi et al., ICS 2020 (paper 000) §2.2 and §3.2: NACoM
replays the DUMPI traces of the source run.  DUMPI writes one binary file
per rank; sst-dumpi's ``dumpi2ascii`` prints it as text, which is what this
module reads (one text file per rank).  The format, as printed by
``dumpi/bin/dumpi2ascii-defs.h`` and ``dumpi2ascii-callbacks.c``
(github.com/sstsimulator/sst-dumpi), is one block per call::

    MPI_Isend entering at walltime 1296777956.739674000, cputime 0.008347000 seconds in thread 0.
    int count=1
    MPI_Datatype datatype=9 (MPI_INT)
    int dest=1
    int tag=1337
    MPI_Comm comm=2 (MPI_COMM_WORLD)
    MPI_Request request=[2]
    MPI_Isend returning at walltime 1296777956.739681000, cputime 0.008354000 seconds in thread 0.

What perfmod keeps of each call:

- times: ``walltime`` seconds and nanoseconds are combined as integers into
  ``t_entry``/``t_exit`` (int64 ns, exact); the compute time between calls
  is the gap from one call's return to the next call's entry;
- bytes: DUMPI records counts and datatypes, not bytes, so ``nbytes`` is
  ``count x size(datatype)``.  Sizes come, in order of precedence, from the
  ``datatype_sizes`` argument, the ``Datatype 9 (MPI_INT) has size 4``
  lines that ``dumpi2ascii -X`` prints (the sizes DUMPI stored in the
  trace), the derived types the trace builds (``MPI_Type_contiguous``,
  ``MPI_Type_vector``, ``MPI_Type_(create_)hvector``) and finally
  :data:`DUMPI_TYPE_SIZES` (``MPI_Type_size`` of the predefined types on an
  LP64 machine);
- ranks: ``dest``/``source``/``root`` are ranks in ``comm``; a source of -1
  (printed ``(MPI_ANY_SOURCE)``) is :data:`~perfmod.trace.core.ANY_SOURCE`,
  any other negative peer is taken as ``MPI_PROC_NULL`` (DUMPI stores the
  MPI library's own value for it); a tag of -1 on a receive is ``MPI_ANY_TAG``;
- communicators: id 2 (``MPI_COMM_WORLD``) becomes 0; communicators made
  by ``MPI_Comm_dup``, ``MPI_Cart_create`` (ranks not reordered),
  ``MPI_Comm_split`` and ``MPI_Comm_create`` (with its group from
  ``MPI_Comm_group`` and ``MPI_Group_incl`` / ``_excl`` / ``_range_incl`` /
  ``_range_excl``) are rebuilt across the rank files (members of a split
  ordered by key, then old rank) and numbered 1, 2, ..., by the same code as
  the binary reader's (:mod:`perfmod.trace.formats.dumpi_bin_comms`);
- files and ranks: a ``.meta`` file or directory is resolved as the binary
  reader does (:mod:`perfmod.trace.formats.dumpi_bin_files`: a renamed
  trace whose ``fileprefix`` matches no file is read from the files beside
  it, with a warning); a rank file that is missing, by ``numprocs``, by
  the size ``MPI_Comm_size(MPI_COMM_WORLD)`` returned, or by the file
  names, is an error naming it; one rank's file given alone is read with
  the world size it recorded; a rank file without any call is an error;
- wildcards: kept as posted, or (``resolve_wildcards=True``) replaced by
  the source and tag of the receive's ``MPI_Status`` where DUMPI recorded it;
- requests: the handle DUMPI printed; handles that a wait lists but no
  pending ``Isend``/``Irecv`` created (``MPI_REQUEST_NULL``, persistent
  requests) are dropped and counted in ``meta["ignored_requests"]``.

Calls without communication meaning for the replay (``MPI_Comm_rank``,
``MPI_Wtime``, ``MPI_Type_*``, ...) and calls perfmod does not model are
counted in ``meta["unknown_calls"]`` and, by ``unknown=``, skipped (their
time joins the next compute gap), kept as ``Call.OTHER`` events, or
rejected with an error.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from perfmod.trace.builder import TraceBuilder
from perfmod.trace.core import ANY_SOURCE, ANY_TAG, NO_REQUEST, PROC_NULL, Call, Trace, TraceError
from perfmod.trace.formats.dumpi_bin_comms import comm_table, group_expression
from perfmod.trace.formats.dumpi_bin_files import text_files, world_size
from perfmod.trace.formats.textio import FormatError, decimal_ns, numbered_lines, rank_of_path

__all__ = ["DUMPI_TYPE_SIZES", "DUMPI_COMM_WORLD", "read_dumpi"]

#: ``MPI_Type_size`` in bytes of DUMPI's predefined datatype ids (``dumpi/common/constants.h``,
#: ``dumpi_native_datatypes``) on an LP64 machine; pair types count their data bytes only.
DUMPI_TYPE_SIZES: dict[int, int] = {
    2: 1, 3: 1, 4: 1, 5: 1,  # CHAR, SIGNED_CHAR, UNSIGNED_CHAR, BYTE
    6: 4, 7: 2, 8: 2, 9: 4, 10: 4,  # WCHAR, SHORT, UNSIGNED_SHORT, INT, UNSIGNED
    11: 8, 12: 8, 13: 4, 14: 8, 15: 16,  # LONG, UNSIGNED_LONG, FLOAT, DOUBLE, LONG_DOUBLE
    16: 8, 17: 8, 18: 8, 19: 1,  # LONG_LONG_INT, UNSIGNED_LONG_LONG, LONG_LONG, PACKED
    20: 0, 21: 0,  # LB, UB
    22: 8, 23: 12, 24: 12, 25: 6, 26: 8, 27: 20,  # FLOAT_INT, DOUBLE_INT, LONG_INT, SHORT_INT, 2INT, LONG_DOUBLE_INT
}
DUMPI_COMM_WORLD = 2  #: DUMPI's id of ``MPI_COMM_WORLD`` (``dumpi_native_comms``)
_DUMPI_COMM_SELF = 3
_DUMPI_ANY_SOURCE = -1
_DUMPI_ANY_TAG = -1

_CALL_LINE = re.compile(r"^(\w+) (entering|returning) at walltime (\S+), cputime (\S+) seconds in thread (\d+)\.$")
_PARAM = re.compile(r"^(?:[A-Za-z_][\w ]*?) (\w+)((?:\[-?\d+\])*)=(.*)$")
_SIZE_LINE = re.compile(r"^Datatype (\d+) \((.*)\) has size (-?\d+)$")
# what dumpi2ascii -H/-K/-F/-P/-A print around the stream (and PAPI counters after a 'returning' line)
_HEADER = re.compile(r"^(version|starttime|hostname|username|meshdim|meshsize|meshcrd|Total keyvals|"
                     r"Performance counters|Function address|Perfcounters:)|^\S+ called \d+ times and ignored "
                     r"\d+ times$|^\s*$|^\s+\S+$|^[^\s=]+=")

_SIMPLE = {
    "MPI_Send": Call.SEND, "MPI_Bsend": Call.SEND, "MPI_Rsend": Call.SEND, "MPI_Ssend": Call.SSEND,
    "MPI_Isend": Call.ISEND, "MPI_Ibsend": Call.ISEND, "MPI_Irsend": Call.ISEND, "MPI_Issend": Call.ISSEND,
    "MPI_Recv": Call.RECV, "MPI_Irecv": Call.IRECV,
}
_NO_ARGS = {"MPI_Init": Call.INIT, "MPI_Init_thread": Call.INIT, "MPI_Finalize": Call.FINALIZE}
_COMM_CREATORS = ("MPI_Comm_dup", "MPI_Cart_create", "MPI_Comm_split", "MPI_Comm_create")
_GROUP_OPS = {f"MPI_Group_{op}": op for op in ("incl", "excl", "range_incl", "range_excl")}
_GROUP_OTHER = ("MPI_Group_union", "MPI_Group_intersection", "MPI_Group_difference")
_DUMPI_COMM_NULL = 1
_TYPE_CREATORS = ("MPI_Type_contiguous", "MPI_Type_vector", "MPI_Type_hvector", "MPI_Type_create_hvector")


@dataclass
class _Block:
    name: str
    line: int
    t_entry: int
    params: dict[str, tuple[str, int]] = field(default_factory=dict)
    last: str = ""


@dataclass
class _RankState:
    """What one rank file defines: datatype sizes, communicator handles, pending requests."""

    rank: int
    path: str
    sizes: dict[int, int]
    comm_key: dict[int, tuple] = field(default_factory=lambda: {DUMPI_COMM_WORLD: ("world",)})
    created: Counter = field(default_factory=Counter)
    pending: set[int] = field(default_factory=set)
    creations: list[tuple] = field(default_factory=list)
    resolve: bool = False
    wild: dict[int, dict] = field(default_factory=dict)  # request -> its Irecv event, while it has a wildcard
    resolved: int = 0
    groups: dict[int, tuple | None] = field(default_factory=dict)  # group handle -> expression (dumpi_bin_comms)
    world_size: int | None = None  # what MPI_Comm_size(MPI_COMM_WORLD) returned, where recorded
    calls: int = 0


def _ints(text: str, path: str, line: int, name: str) -> list[int] | None:
    """An ``[1, 2, 3]`` list (``<IGNORED>`` -> None)."""
    t = text.strip()
    if t == "<IGNORED>":
        return None
    if not (t.startswith("[") and t.endswith("]")):
        raise FormatError(path, line, f"field {name!r}: expected a [..] list, got {text!r}")
    body = t[1:-1].strip()
    try:
        return [int(x) for x in body.split(",")] if body else []
    except ValueError:
        raise FormatError(path, line, f"field {name!r}: not a list of integers: {text!r}") from None


_STATUS = re.compile(r"\{bytes=(-?\d+), cancelled=(-?\d+), source=(-?\d+), tag=(-?\d+), error=(-?\d+)\}")


class _Call:
    """Field access for one parsed call block, with errors naming file:line and field."""

    def __init__(self, block: _Block, st: _RankState) -> None:
        self.b, self.st = block, st

    def raw(self, name: str) -> tuple[str, int]:
        try:
            return self.b.params[name]
        except KeyError:
            raise FormatError(self.st.path, self.b.line, f"{self.b.name}: field {name!r} is missing") from None

    def int(self, name: str) -> int:
        text, line = self.raw(name)
        try:
            return int(text.split(" ", 1)[0])
        except ValueError:
            raise FormatError(self.st.path, line,
                              f"{self.b.name}: field {name!r}: {text!r} is not an integer") from None

    def list(self, name: str) -> list[int]:
        text, line = self.raw(name)
        out = _ints(text, self.st.path, line, name)
        return [] if out is None else out

    def statuses(self, name: str) -> list[tuple[int, int]] | None:
        """``(source, tag)`` of each status printed in field ``name`` (None: absent or ``<IGNORED>``)."""
        if name not in self.b.params:
            return None
        found = _STATUS.findall(self.b.params[name][0])
        return [(int(m[2]), int(m[3])) for m in found] or None

    def size(self, name: str) -> int:
        dt = self.int(name)
        try:
            return self.st.sizes[dt]
        except KeyError:
            text, line = self.raw(name)
            raise FormatError(self.st.path, line, f"{self.b.name}: field {name!r}: datatype {text} has no known "
                              "size; pass datatype_sizes={id: bytes} or include dumpi2ascii -X output") from None

    def comm(self, name: str = "comm") -> tuple:
        h = self.int(name)
        try:
            return self.st.comm_key[h]
        except KeyError:
            text, line = self.raw(name)
            hint = " (MPI_COMM_SELF is not supported)" if h == _DUMPI_COMM_SELF else ""
            raise FormatError(self.st.path, line, f"{self.b.name}: field {name!r}: communicator {text} was not "
                              f"created by a call perfmod follows (Comm_dup, Comm_split, Cart_create){hint}") from None


def _take_requests(c: _Call, ids: Sequence[int], ignored: Counter,
                   statuses: Sequence[tuple[int, int]] | None = None) -> list[int]:
    """The pending requests among ``ids`` (now completed); wildcard Irecvs resolved from ``statuses``."""
    out = []
    st = c.st
    for k, r in enumerate(ids):
        if r in st.pending:
            st.pending.discard(r)
            out.append(r)
            ev = st.wild.pop(r, None)
            if ev is not None and statuses is not None and k < len(statuses):
                _resolve(ev, "peer", "tag", statuses[k], st)
        else:
            ignored[r] += 1
    return out


def _resolve(ev: dict, peer: str | int, tag: str | int, status: tuple[int, int], st: _RankState) -> None:
    """Replace MPI_ANY_SOURCE / MPI_ANY_TAG of a receive by the source and tag its status reported."""
    src, tg = status
    box = ev if isinstance(peer, str) else ev["aux"]
    changed = False
    if box[peer] == ANY_SOURCE and src >= 0:
        box[peer], changed = src, True
    if box[tag] == ANY_TAG and tg >= 0:
        box[tag], changed = tg, True
    st.resolved += changed


def _event(c: _Call, unknown: str, ignored: Counter) -> dict[str, Any] | None:
    """The TraceBuilder fields of one call (comm as a key, resolved later), or None to skip."""
    name, st = c.b.name, c.st
    if name in _SIMPLE:
        code = _SIMPLE[name]
        recv = code in (Call.RECV, Call.IRECV)
        peer = c.int("source" if recv else "dest")
        tag = c.int("tag")
        if recv:
            peer = ANY_SOURCE if peer == _DUMPI_ANY_SOURCE else (PROC_NULL if peer < 0 else peer)
            tag = ANY_TAG if tag == _DUMPI_ANY_TAG else tag
        elif peer < 0:
            peer = PROC_NULL
        ev = dict(call=code, peer=peer, nbytes=c.int("count") * c.size("datatype"), tag=tag, comm=c.comm())
        if code in (Call.ISEND, Call.IRECV, Call.ISSEND):
            req = c.list("request")
            if len(req) != 1:
                raise FormatError(st.path, c.raw("request")[1], f"{name}: field 'request' needs one handle")
            ev["request"] = req[0]
            st.pending.add(req[0])
            if st.resolve and code == Call.IRECV and (ev["peer"] == ANY_SOURCE or ev["tag"] == ANY_TAG):
                st.wild[req[0]] = ev
        elif recv and st.resolve and (ev["peer"] == ANY_SOURCE or ev["tag"] == ANY_TAG):
            status = c.statuses("status")
            if status:
                _resolve(ev, "peer", "tag", status[0], st)
        return ev
    if name in _NO_ARGS:
        return dict(call=_NO_ARGS[name])
    if name == "MPI_Sendrecv":
        src, rtag = c.int("source"), c.int("recvtag")
        src = ANY_SOURCE if src == _DUMPI_ANY_SOURCE else (PROC_NULL if src < 0 else src)
        dest = c.int("dest")
        ev = dict(call=Call.SENDRECV, peer=PROC_NULL if dest < 0 else dest,
                  nbytes=c.int("sendcount") * c.size("sendtype"), tag=c.int("sendtag"), comm=c.comm(),
                  aux=[src, c.int("recvcount") * c.size("recvtype"), ANY_TAG if rtag == _DUMPI_ANY_TAG else rtag])
        status = c.statuses("status") if st.resolve else None
        if status:
            _resolve(ev, 0, 2, status[0], st)
        return ev
    if name in ("MPI_Wait", "MPI_Test"):
        if name == "MPI_Test" and not c.int("flag"):
            return dict(call=Call.TEST)
        got = _take_requests(c, c.list("request"), ignored, c.statuses("status"))
        return dict(call=Call.WAIT if name == "MPI_Wait" else Call.TEST, request=got[0] if got else NO_REQUEST)
    if name in ("MPI_Waitall", "MPI_Testall"):
        done = name == "MPI_Waitall" or bool(c.int("flag"))
        return dict(call=Call.WAITALL if name == "MPI_Waitall" else Call.TESTALL,
                    aux=_take_requests(c, c.list("requests"), ignored, c.statuses("statuses")) if done else [])
    if name in ("MPI_Waitany", "MPI_Testany"):
        reqs, idx = c.list("requests"), c.int("index")
        done = (name == "MPI_Waitany" or bool(c.int("flag"))) and 0 <= idx < len(reqs)
        return dict(call=Call.WAITANY if name == "MPI_Waitany" else Call.TESTANY,
                    aux=_take_requests(c, [reqs[idx]], ignored, c.statuses("status")) if done else [])
    if name in ("MPI_Waitsome", "MPI_Testsome"):
        reqs = c.list("requests")
        picked = [reqs[i] for i in c.list("indices") if 0 <= i < len(reqs)]
        return dict(call=Call.WAITSOME if name == "MPI_Waitsome" else Call.TESTSOME,
                    aux=_take_requests(c, picked, ignored, c.statuses("statuses")))
    if name == "MPI_Barrier":
        return dict(call=Call.BARRIER, comm=c.comm())
    if name in ("MPI_Bcast", "MPI_Reduce"):
        return dict(call=Call.BCAST if name == "MPI_Bcast" else Call.REDUCE, peer=c.int("root"),
                    nbytes=c.int("count") * c.size("datatype"), comm=c.comm())
    if name == "MPI_Allreduce":
        return dict(call=Call.ALLREDUCE, nbytes=c.int("count") * c.size("datatype"), comm=c.comm())
    if name in ("MPI_Alltoall", "MPI_Allgather"):
        return dict(call=Call.ALLTOALL if name == "MPI_Alltoall" else Call.ALLGATHER,
                    nbytes=c.int("sendcount") * c.size("sendtype"), comm=c.comm())
    if name == "MPI_Gather":
        return dict(call=Call.GATHER, peer=c.int("root"), nbytes=c.int("sendcount") * c.size("sendtype"),
                    comm=c.comm())
    if name == "MPI_Scatter":
        return dict(call=Call.SCATTER, peer=c.int("root"), nbytes=c.int("recvcount") * c.size("recvtype"),
                    comm=c.comm())
    if name == "MPI_Reduce_scatter":
        return dict(call=Call.REDUCE_SCATTER, nbytes=sum(c.list("recvcounts")) * c.size("datatype"), comm=c.comm())
    if name == "MPI_Alltoallv":
        counts, size = c.list("sendcounts"), c.size("sendtype")
        if len(counts) != c.int("commsize"):
            raise FormatError(st.path, c.raw("sendcounts")[1], "MPI_Alltoallv: field 'sendcounts' must list "
                              "commsize counts")
        return dict(call=Call.ALLTOALLV, nbytes=sum(counts) * size, comm=c.comm(), aux=[n * size for n in counts])
    _side_effects(c)
    if unknown == "error":
        raise FormatError(st.path, c.b.line, f"{name}: MPI call not modelled by perfmod (read with unknown='skip' "
                          "or 'keep' to count it instead)")
    return None if unknown == "skip" else dict(call=Call.OTHER, other=name)


def _side_effects(c: _Call) -> None:
    """Follow the calls that define datatypes and communicators used later."""
    name, st = c.b.name, c.st
    if name in _TYPE_CREATORS:
        n = c.int("count") * (1 if name == "MPI_Type_contiguous" else c.int("blocklength"))
        st.sizes[c.int("newtype")] = n * c.size("oldtype")
    elif name in _COMM_CREATORS:
        parent = c.comm("oldcomm")
        k = st.created[parent]
        st.created[parent] += 1
        color = c.int("color") if name == "MPI_Comm_split" else 0
        key = (parent, k, color)
        new = c.int("newcomm")
        if color >= 0 and new != _DUMPI_COMM_NULL:  # MPI_UNDEFINED colour, or not in the group: MPI_COMM_NULL
            expr = None
            if name == "MPI_Comm_create":
                expr = st.groups.get(c.int("group"))
                if expr is None:
                    raise FormatError(st.path, c.raw("group")[1], f"{name}: field 'group': group {c.int('group')} "
                                      "was not made by MPI_Comm_group / MPI_Group_incl / _excl / _range_incl / "
                                      "_range_excl")
            st.comm_key[new] = key
            order = c.int("key") if name == "MPI_Comm_split" else 0
            st.creations.append((key, order, expr, f"{st.path}:{c.b.line}"))
    elif name == "MPI_Comm_group":
        h = c.int("comm")
        st.groups[c.int("group")] = ("comm", st.comm_key[h]) if h in st.comm_key else None
    elif name in _GROUP_OPS:
        op = _GROUP_OPS[name]
        ranks = _ranges(c) if op.startswith("range") else c.list("ranks")
        st.groups[c.int("newgroup")] = group_expression(op, st.groups.get(c.int("group")), ranks)
    elif name in _GROUP_OTHER:
        st.groups[c.int("newgroup")] = None  # not followed; a communicator made from it is reported when created
    elif name == "MPI_Comm_size" and c.int("comm") == DUMPI_COMM_WORLD:
        st.world_size = c.int("size")


def _ranges(c: _Call) -> list[list[int]]:
    """The ``int ranges[n][3]=[[first, last, stride], ...]`` field of MPI_Group_range_incl / _excl."""
    text, line = c.raw("ranges")
    rows = re.findall(r"\[([^\[\]]*)\]", text)
    try:
        out = [[int(x) for x in row.split(",")] for row in rows]
    except ValueError:
        out = []
    if not out or any(len(r) != 3 for r in out):
        raise FormatError(c.st.path, line, f"{c.b.name}: field 'ranges': expected [[first, last, stride], ...], "
                          f"got {text!r}")
    return out


def _parse_file(path: str, st: _RankState, unknown: str, ignored: Counter, unknown_calls: Counter) -> list[dict]:
    events: list[dict] = []
    block: _Block | None = None
    for n, text in numbered_lines(path):
        m = _CALL_LINE.match(text)
        if m:
            name, what, wall = m.group(1), m.group(2), m.group(3)
            t = decimal_ns(wall, path, n, "walltime")
            decimal_ns(m.group(4), path, n, "cputime")
            if what == "entering":
                if block is not None:
                    raise FormatError(path, n, f"{name} entering before {block.name} (line {block.line}) returned")
                block = _Block(name, n, t)
                continue
            if block is None or block.name != name:
                open_ = f"{block.name} (line {block.line})" if block else "no call"
                raise FormatError(path, n, f"{name} returning, but {open_} is open")
            if t < block.t_entry:
                raise FormatError(path, n, f"{name}: walltime at return is before the entry (line {block.line})")
            c = _Call(block, st)
            st.calls += 1
            ev = _event(c, unknown, ignored)
            if ev is None or ev["call"] == Call.OTHER:
                unknown_calls[name] += 1
            if ev is not None:
                ev.update(t_entry=block.t_entry, t_exit=t, line=block.line)
                events.append(ev)
            block = None
            continue
        if block is not None:
            if text.startswith("Perfcounters:"):
                continue
            p = _PARAM.match(text)
            if p:
                block.params[p.group(1)] = (p.group(3), n)
                block.last = p.group(1)
                continue
            if block.last and text.lstrip()[:1] in ("[", ",", "]"):  # rows of a 2-D array, one per line
                value, first = block.params[block.last]
                row = text.strip()
                rest = ""
                if row.startswith("]"):  # the array's end, then (dumpi2ascii) the next parameter on this line
                    rest = row.lstrip("]")
                    row = row[:len(row) - len(rest)]
                block.params[block.last] = (value + row, first)
                p = _PARAM.match(rest) if rest else None
                if p:
                    block.params[p.group(1)] = (p.group(3), n)
                    block.last = p.group(1)
                elif rest:
                    raise FormatError(path, n, f"{block.name}: cannot read parameter line {text!r}")
                continue
            raise FormatError(path, n, f"{block.name}: cannot read parameter line {text!r}")
        if not (_HEADER.match(text) or _SIZE_LINE.match(text)):
            raise FormatError(path, n, f"expected 'MPI_<call> entering at walltime ...', got {text[:80]!r}")
    if block is not None:
        raise FormatError(path, block.line, f"{block.name} entering without a matching 'returning' line")
    return events


def _printed_sizes(path: str) -> dict[int, int]:
    """The ``Datatype N (name) has size S`` lines of ``dumpi2ascii -X`` anywhere in the file."""
    out = {}
    for _, text in numbered_lines(path):
        if text.startswith("Datatype "):
            m = _SIZE_LINE.match(text)
            if m:
                out[int(m.group(1))] = int(m.group(3))
    return out


def read_dumpi(paths: str | os.PathLike | Sequence[str | os.PathLike], nprocs: int | None = None,
               datatype_sizes: Mapping[int, int] | None = None, unknown: str = "skip",
               resolve_wildcards: bool = False, progress: bool = False) -> Trace:
    """Read ``dumpi2ascii`` text files (one per rank) into a :class:`~perfmod.trace.core.Trace`.

    Parameters
    ----------
    paths : path, glob pattern, directory, ``.meta`` file or sequence of paths
        The per-rank text files (``.bin`` and ``.meta`` files in a directory
        are passed over).  A file's rank is the number its name ends with
        (``...-0003.txt`` is rank 3) when every file has one, else its
        position in the sorted list.  Given DUMPI's ``.meta`` file, the
        files are ``<fileprefix>-*`` next to it.
    nprocs : int, optional
        Number of world ranks (default: ``numprocs`` of the ``.meta`` file,
        else the highest file rank + 1).
    datatype_sizes : mapping of int to int, optional
        Bytes per element of DUMPI datatype ids, overriding the sizes found
        in the files and :data:`DUMPI_TYPE_SIZES`.
    unknown : {"skip", "keep", "error"}
        What to do with calls perfmod does not model: drop them (their time
        joins the next compute gap), keep them as ``Call.OTHER`` events, or
        raise :class:`~perfmod.trace.formats.textio.FormatError`.  Either way they
        are counted in ``trace.meta["unknown_calls"]``.
    resolve_wildcards : bool
        Replace ``MPI_ANY_SOURCE``/``MPI_ANY_TAG`` of receives by the source
        and tag their ``MPI_Status`` reported (of the ``Recv``/``Sendrecv``,
        or of the wait that completed an ``Irecv``) where DUMPI recorded it;
        counted in ``meta["resolved_wildcards"]``.  Default: keep the
        wildcards the program posted.
    progress : bool
        Show a progress bar over the rank files.

    Returns
    -------
    Trace
        With ``t_entry``/``t_exit`` (int64 ns), ``line`` (the entering
        line) and ``meta`` holding ``files``, ``unknown_calls`` and
        ``ignored_requests``; ``trace.source`` is the first file (or the
        directory), and errors name the file and line.

    Raises
    ------
    FormatError
        A line that is not part of the format, a call without its return,
        a missing or unreadable field, a datatype of unknown size.
    """
    if unknown not in ("skip", "keep", "error"):
        raise ValueError(f"unknown= must be 'skip', 'keep' or 'error', got {unknown!r}")
    files, meta_nprocs, notes, alone = text_files(paths)
    ranks = [rank_of_path(f) for f in files]
    if any(r is None for r in ranks) or len(set(ranks)) != len(ranks):
        ranks = list(range(len(files)))
    world_size(files, ranks, nprocs, meta_nprocs, None, alone)  # missing files named before reading any
    ignored: Counter = Counter()
    unknown_calls: Counter = Counter()
    states, per_rank = [], []
    for f, r in tqdm(list(zip(files, ranks, strict=True)), desc="DUMPI files", disable=not progress):
        st = _RankState(r, f, _LayeredSizes(_printed_sizes(f), DUMPI_TYPE_SIZES, datatype_sizes or {}),
                        resolve=resolve_wildcards)
        per_rank.append(_parse_file(f, st, unknown, ignored, unknown_calls))
        if st.calls == 0:
            raise TraceError(f"{f}: no MPI call in this DUMPI rank file (empty, or not dumpi2ascii output); "
                             "libdumpi records every call from MPI_Init to MPI_Finalize")
        states.append(st)
    recorded = max((st.world_size for st in states if st.world_size is not None), default=None)
    n = world_size(files, ranks, nprocs, meta_nprocs, recorded, alone)
    if alone and n > 1:
        notes.append(f"{files[0]}: one rank's file read alone (world of {n} ranks); the other ranks have no events")
        derived = next((ev for ev in per_rank[0] if ev.get("comm", ("world",)) != ("world",)), None)
        if derived is not None:
            raise FormatError(files[0], derived["line"], "a rank file read alone: this call uses a communicator "
                              "made with other ranks, whose members are in their files; read the whole trace (its "
                              ".meta file or directory)")
    ids, comms = comm_table(states, n)
    b = TraceBuilder(n, comms=comms, source=str(paths) if len(files) > 1 else files[0])
    for st, events in zip(states, per_rank, strict=True):
        for ev in events:
            key = ev.pop("comm", ("world",))
            if key not in ids:
                raise FormatError(st.path, ev["line"], "communicator created on this rank only; its other members "
                                  "are missing from the trace files")
            other = ev.pop("other", None)
            if other is not None:
                ev["peer"] = b.other(other)
            b.append(st.rank, comm=ids[key], **ev)
    meta = {"format": "dumpi-ascii", "files": files, "unknown_calls": dict(unknown_calls),
            "ignored_requests": int(sum(ignored.values())), "resolved_wildcards": sum(st.resolved for st in states),
            "notes": notes}
    return b.build(meta=meta)


class _LayeredSizes(dict):
    """Datatype sizes: the user's overrides win over types the trace defines, the printed sizes, the defaults."""

    def __init__(self, printed: Mapping[int, int], defaults: Mapping[int, int], override: Mapping[int, int]) -> None:
        self._override = {int(k): int(v) for k, v in override.items()}
        super().__init__({**defaults, **printed, **self._override})

    def __setitem__(self, key: int, value: int) -> None:
        if key not in self._override:
            super().__setitem__(key, value)
