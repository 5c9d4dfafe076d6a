"""Reader for SST DUMPI's binary traces (``.meta`` + one ``.bin`` per rank), paper 000 §2.2, §3.2.

Paper: Choi et al., ICS 2020 (paper 000) §2.2 and §3.2: NACoM
replays the DUMPI traces of the source run.  libdumpi writes one binary
file per rank; this module reads them directly, without ``dumpi2ascii``,
and gives the same :class:`~perfmod.trace.core.Trace` as the text reader
(:func:`perfmod.trace.dumpi.read_dumpi`) gives for the ``dumpi2ascii -S -X``
text of the same files (every column; ``line`` is the record's byte offset
here, the text line there).

The format (sst-dumpi ``dumpi/common/io.c``, ``iodefs.h``, ``dumpiio.c``;
``libundumpi`` reads it), all integers big-endian:

- the file starts with the 64-bit magic ``0xffaadd44554d5049`` and ends
  with an index of eight 64-bit words: the magic again, then the offsets of
  the datatype-size table, function-address labels, PAPI labels, header,
  call stream, footer and key/value record;
- header: format version (3 bytes; perfmod reads 0.6.9 and later, which
  includes every sst-dumpi release since 2016), start time, host, user, mesh;
- datatype-size table: a 32-bit count, then ``MPI_Type_size`` of each
  datatype id (built-in and user types) on the traced machine;
- call stream: two 32-bit time offsets (CPU, wall seconds), then one record
  per call (:mod:`perfmod.trace.formats.dumpi_bin_scan`,
  :mod:`perfmod.trace.formats.dumpi_bin_layout`) up to the end label.

What is kept and how (times as exact integer nanoseconds from DUMPI's
seconds + nanoseconds; bytes as count x the size from the trace's own
table, then the derived types it defines; peers, tags, wildcards,
requests, calls perfmod does not model) follows :mod:`perfmod.trace.dumpi`;
communicators are rebuilt by :mod:`perfmod.trace.formats.dumpi_bin_comms`
(``MPI_Comm_dup``, ``MPI_Comm_split``, ``MPI_Cart_create`` and, which the
text reader does not follow, ``MPI_Comm_create`` with its group).

Decoding is compiled (numba) and runs over the memory-mapped bytes of each
file twice: once to count, once to write straight into the trace's
columns, so reading takes no memory beyond the trace itself
(``tests/test_bench_dumpi_bin.py``: about 3 M events/s decoding, 1.9 M
with :meth:`~perfmod.trace.core.Trace.validate`, 81 bytes per event).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ..core import Call, Trace, TraceError
from .dumpi import DUMPI_TYPE_SIZES, read_dumpi
from .dumpi_bin_comms import comm_table, rank_sides
from .dumpi_bin_files import find_files, rank_files
from .dumpi_bin_layout import LABEL, RECORDS
from .dumpi_bin_scan import ERR, H, layout_tokens, scan
from .registry import TraceFormat, first_line

__all__ = ["DumpiBinError", "read_dumpi_bin", "DUMPI_MAGIC", "MIN_VERSION", "TRACE_FORMAT"]

DUMPI_MAGIC = 0xFFAADD44554D5049  #: first and index-record magic of a DUMPI ``.bin`` file
MIN_VERSION = (0, 6, 9)  #: oldest DUMPI format version read (the record layouts of sst-dumpi since 2016)
_MAX_MAJOR = 49  #: a major version above this is taken as a corrupt header
_INDEX = 8 * 8

# label -> (handler, Call code) of the calls perfmod models, and the side effects it follows
_CALLS: dict[str, tuple[str, int]] = {
    **{f"MPI_{n}": ("p2p", Call.SEND) for n in ("Send", "Bsend", "Rsend")},
    "MPI_Ssend": ("p2p", Call.SSEND), "MPI_Recv": ("p2p", Call.RECV), "MPI_Irecv": ("p2p", Call.IRECV),
    **{f"MPI_{n}": ("p2p", Call.ISEND) for n in ("Isend", "Ibsend", "Irsend")},
    "MPI_Issend": ("p2p", Call.ISSEND), "MPI_Sendrecv": ("sendrecv", Call.SENDRECV),
    "MPI_Wait": ("wait", Call.WAIT), "MPI_Test": ("test", Call.TEST),
    "MPI_Waitany": ("waitany", Call.WAITANY), "MPI_Testany": ("testany", Call.TESTANY),
    "MPI_Waitall": ("waitall", Call.WAITALL), "MPI_Testall": ("testall", Call.TESTALL),
    "MPI_Waitsome": ("waitsome", Call.WAITSOME), "MPI_Testsome": ("waitsome", Call.TESTSOME),
    "MPI_Barrier": ("barrier", Call.BARRIER), "MPI_Bcast": ("bcast", Call.BCAST),
    "MPI_Reduce": ("reduce", Call.REDUCE), "MPI_Allreduce": ("allreduce", Call.ALLREDUCE),
    "MPI_Alltoall": ("alltoall", Call.ALLTOALL), "MPI_Allgather": ("alltoall", Call.ALLGATHER),
    "MPI_Gather": ("gather", Call.GATHER), "MPI_Scatter": ("scatter", Call.SCATTER),
    "MPI_Reduce_scatter": ("reduce_scatter", Call.REDUCE_SCATTER), "MPI_Alltoallv": ("alltoallv", Call.ALLTOALLV),
    "MPI_Init": ("noargs", Call.INIT), "MPI_Init_thread": ("noargs", Call.INIT),
    "MPI_Finalize": ("noargs", Call.FINALIZE),
    "MPI_Type_contiguous": ("type_contiguous", Call.OTHER),
    **{f"MPI_Type_{n}": ("type_vector", Call.OTHER) for n in ("vector", "hvector", "create_hvector")},
    "MPI_Comm_dup": ("comm_dup", Call.OTHER), "MPI_Comm_split": ("comm_split", Call.OTHER),
    "MPI_Cart_create": ("cart_create", Call.OTHER), "MPI_Comm_create": ("comm_create", Call.OTHER),
    "MPI_Comm_group": ("comm_group", Call.OTHER),
    **{f"MPI_Group_{n}": ("group_op", Call.OTHER) for n in ("incl", "excl", "range_incl", "range_excl", "union",
                                                           "intersection", "difference")},
}
_HANDLER = np.zeros(len(RECORDS), np.int8)
_CODE = np.full(len(RECORDS), int(Call.OTHER), np.uint8)
for _name, (_h, _c) in _CALLS.items():
    _HANDLER[LABEL[_name]], _CODE[LABEL[_name]] = H[_h], int(_c)
_TOK, _TOK_PTR, _HAS = layout_tokens([lay for _, lay in RECORDS])
_COLS = (("call", np.uint8), ("peer", np.int32), ("nbytes", np.int64), ("tag", np.int32), ("comm", np.int32),
         ("request", np.int64), ("t_entry", np.int64), ("t_exit", np.int64), ("line", np.int64),
         ("compute", np.float64))


class DumpiBinError(TraceError):
    """A DUMPI binary file perfmod cannot read; ``path`` and ``offset`` (bytes, or None) say where."""

    def __init__(self, path: str | os.PathLike, offset: int | None, message: str) -> None:
        self.path, self.offset = str(path), offset
        super().__init__(f"{path}: " + (f"byte {offset}: " if offset is not None else "") + message)


class _RankFile:
    """One memory-mapped ``.bin`` file with its index, version, time offset and datatype sizes."""

    def __init__(self, path: Path, rank: int) -> None:
        self.path, self.rank = str(path), rank
        try:
            size = path.stat().st_size
        except OSError as err:
            raise DumpiBinError(path, None, f"cannot open DUMPI file: {err.strerror or err}") from None
        if size < 8 + _INDEX:
            raise DumpiBinError(path, None, f"{size} bytes is too short for a DUMPI file (empty or truncated)")
        self.buf = np.memmap(path, dtype=np.uint8, mode="r")
        if self._u(0, 8) != DUMPI_MAGIC:
            raise DumpiBinError(path, 0, "bad magic: not a DUMPI binary trace")
        idx = [self._u(size - _INDEX + 8 * k, 8) for k in range(8)]
        if idx[0] != DUMPI_MAGIC:
            raise DumpiBinError(path, size - _INDEX, "no DUMPI index record at the end of the file (truncated?)")
        self.sizelbl, _, _, header, body, footer, _ = idx[1:]
        for name, off in (("header", header), ("call stream", body), ("footer", footer)):
            if not 8 <= off <= size - _INDEX:
                raise DumpiBinError(path, size - _INDEX, f"index gives the {name} at byte {off}, outside the file")
        if not body + 8 <= footer:
            raise DumpiBinError(path, size - _INDEX, f"index gives the call stream at byte {body}, after the "
                                f"footer at {footer}")
        self.version = tuple(int(x) for x in self.buf[header:header + 3])
        if self.version < MIN_VERSION or self.version[0] > _MAX_MAJOR:
            raise DumpiBinError(path, header, "DUMPI format version {}.{}.{}: perfmod reads {}.{}.{} and later"
                                .format(*self.version, *MIN_VERSION))
        self.wall_off = self._u(body + 4, 4, signed=True)
        self.start, self.end = body + 8, footer

    def _u(self, off: int, n: int, signed: bool = False) -> int:
        return int.from_bytes(bytes(self.buf[off:off + n]), "big", signed=signed)

    def argv(self, offset: int) -> list[str]:
        """The command line of the ``MPI_Init`` record at byte ``offset`` (sst-dumpi's ``argc``, ``argv``).

        The record's common prefix (label, config mask, thread, CPU and wall
        times, PAPI counters; :mod:`perfmod.trace.formats.dumpi_bin_scan`) is
        stepped over, then ``argc`` and the strings are read.
        """
        p = offset + 2
        mask = self._u(p, 1)
        p += 1 + (2 if mask & 64 else 0) + (12 if mask & 4 else 0) + (12 if mask & 8 else 0)
        if mask & 128:
            p += 1 + 16 * self._u(p, 1)
        argc = self._u(p, 4, signed=True)
        p += 4
        out = []
        for _ in range(max(argc, 0)):
            n = self._u(p, 4, signed=True)
            if not 0 <= n <= self.end - p - 4:
                raise DumpiBinError(self.path, p, f"MPI_Init: argument string of {n} bytes runs past the stream")
            out.append(bytes(self.buf[p + 4:p + 4 + n]).split(b"\0", 1)[0].decode("utf-8", "replace"))
            p += 4 + n
        return out

    def sizes(self, override: Mapping[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Bytes per datatype id (-1: unknown): defaults, then the trace's table, then ``override`` (locked)."""
        sizes = np.full(65536, -1, np.int64)
        for k, v in DUMPI_TYPE_SIZES.items():
            sizes[k] = v
        if self.sizelbl > 0:
            size = self.buf.size
            if not 8 <= self.sizelbl <= size - _INDEX - 4:
                raise DumpiBinError(self.path, size - _INDEX, f"datatype-size table at byte {self.sizelbl} is "
                                    "outside the file")
            n = self._u(self.sizelbl, 4, signed=True)
            if n < 0 or self.sizelbl + 4 + 4 * n > size - _INDEX:
                raise DumpiBinError(self.path, self.sizelbl, f"datatype-size table of {n} entries runs past the "
                                    "end of the file")
            table = self.buf[self.sizelbl + 4:self.sizelbl + 4 + 4 * min(n, 65536)].view(">i4").astype(np.int64)
            sizes[:table.size] = np.where(table >= 0, table, -1)
        locked = np.zeros(65536, np.bool_)
        for k, v in override.items():
            sizes[int(k)], locked[int(k)] = int(v), True
        return sizes, locked

    def run(self, fill: bool, unknown_mode: int, override: Mapping[int, int], out: Sequence[np.ndarray],
            aux: np.ndarray, n_side: int, unknown_counts: np.ndarray) -> tuple[int, int, int, int, tuple]:
        """One scanner pass (count or fill); returns events, aux entries, side records, ignored requests, sides."""
        sizes, locked = self.sizes(override)
        comm_map = np.full(65536, -1, np.int32)
        comm_map[2] = 0  # MPI_COMM_WORLD
        side = (np.zeros(n_side, np.int32), np.zeros(n_side, np.int64), np.zeros(n_side, np.int32),
                np.zeros(n_side, np.int32))
        status, off, label, value, n_ev, n_aux, n_sd, ignored = scan(
            self.buf, self.start, self.end, self.wall_off, _HANDLER, _CODE, _TOK, _TOK_PTR, _HAS, sizes, locked,
            comm_map, unknown_mode, fill, *out, aux, *side, unknown_counts)
        if status != ERR["ok"]:
            raise DumpiBinError(self.path, off, _message(status, label, value, self.end))
        return n_ev, n_aux, n_sd, ignored, side


def _message(status: int, label: int, value: int, end: int) -> str:
    name = RECORDS[label][0] if 0 <= label < len(RECORDS) else "record"
    return {
        ERR["truncated"]: f"{name} record runs past the end of the call stream (byte {end}): truncated or corrupt",
        ERR["bad_label"]: f"{value} is not a DUMPI function label (0..293): corrupt call stream",
        ERR["no_record"]: f"label {label} ({name}) has no record in the DUMPI format: corrupt call stream",
        ERR["datatype"]: f"{name}: datatype {value} has no known size (not in the trace's datatype-size table "
                         "nor defined by the trace); pass datatype_sizes={id: bytes}",
        ERR["comm"]: f"{name}: communicator {value} was not created by a call perfmod follows (Comm_dup, "
                     "Comm_split, Comm_create, Cart_create)" + (" (MPI_COMM_SELF is not supported)" if value == 3
                                                                 else ""),
        ERR["time"]: f"{name}: time stamp out of range (nanoseconds >= 10^9 or negative seconds)",
        ERR["exit_before_entry"]: f"{name}: wall time at return is before the entry",
        ERR["alltoallv"]: f"{name}: field 'sendcounts' must list commsize = {value} counts",
        ERR["unknown_call"]: f"{name}: MPI call not modelled by perfmod (read with unknown='skip' or 'keep' to "
                             "count it instead)",
    }.get(status, f"{name}: unreadable record (scanner status {status})")


def read_dumpi_bin(path: str | os.PathLike | Sequence[str | os.PathLike], nprocs: int | None = None,
                   datatype_sizes: Mapping[int, int] | None = None, unknown: str = "skip",
                   progress: bool = False, validate: bool = True) -> Trace:
    """Read a DUMPI binary trace into a :class:`~perfmod.trace.core.Trace`.

    Parameters
    ----------
    path : path or sequence of paths
        DUMPI's ``.meta`` file (the rank files are ``<fileprefix>-NNNN.bin``
        next to it; when no file has that prefix, as in traces renamed after
        the run, the ``.bin`` files beside it with one prefix, preferring the
        ``.meta`` file's own name, are read and ``meta["notes"]`` says so), a
        directory holding one trace, or the ``.bin`` files themselves.  A
        file's rank is the number its name ends with.
    nprocs : int, optional
        Number of world ranks (default: ``numprocs`` of the ``.meta`` file,
        else the highest file rank + 1).  When given, rank files may be
        missing (their ranks have no events).
    datatype_sizes : mapping of int to int, optional
        Bytes per element of DUMPI datatype ids, overriding the trace's
        datatype-size table and the types it defines.
    unknown : {"skip", "keep", "error"}
        Calls perfmod does not model: dropped (their time joins the next
        compute gap), kept as ``Call.OTHER`` events, or an error; counted
        in ``meta["unknown_calls"]`` either way.
    progress : bool
        Show a progress bar over the rank files.
    validate : bool
        Check the trace (:meth:`~perfmod.trace.core.Trace.validate`: peers,
        communicators, which call each wait completes) as every reader
        does; its temporary arrays take more memory than the reading.

    Returns
    -------
    Trace
        Equal, column by column, to :func:`perfmod.trace.dumpi.read_dumpi`
        of the ``dumpi2ascii -S -X`` text of the same files, except that
        ``line`` holds each call record's byte offset in its file.
        ``meta``: ``format`` (``"dumpi-bin"``), ``files``, ``version``,
        ``unknown_calls``, ``ignored_requests``, ``notes``, and ``argv`` (the
        command line the first rank file's ``MPI_Init`` recorded) when there
        is one.

    Raises
    ------
    DumpiBinError
        (a :class:`~perfmod.trace.core.TraceError`) naming the file and byte
        offset: bad magic, missing index (truncated file), unsupported format
        version, a record running past the stream, a corrupt label, a count
        larger than the file, a datatype of unknown size, a communicator
        perfmod does not follow.
    TraceError
        Missing rank files, an unreadable ``.meta`` file, no trace found.
    """
    if unknown not in ("skip", "keep", "error"):
        raise ValueError(f"unknown= must be 'skip', 'keep' or 'error', got {unknown!r}")
    notes: list[str] = []
    if isinstance(path, str | os.PathLike):
        files, meta_n, notes = find_files(Path(path))
    else:
        files, meta_n = [Path(p) for p in path], None
        if not files:
            raise TraceError("read_dumpi_bin: no files given")
    ranks, n = rank_files(files, nprocs if nprocs is not None else meta_n, explicit=nprocs is not None)
    order = np.argsort(ranks, kind="stable")
    rfs = [_RankFile(files[i], ranks[i]) for i in order.tolist()]
    mode = ("skip", "keep", "error").index(unknown)
    override = {int(k): int(v) for k, v in (datatype_sizes or {}).items()}
    counts = np.zeros(len(RECORDS), np.int64)
    empty = [np.zeros(0, dt) for _, dt in _COLS] + [np.zeros(0, np.int64)]
    sized = []
    for rf in tqdm(rfs, desc="DUMPI .bin (count)", disable=not progress):
        sized.append(rf.run(False, mode, override, empty, np.zeros(0, np.int64), 0, np.zeros_like(counts))[:3])
    n_ev = np.array([s[0] for s in sized], np.int64)
    n_aux = np.array([s[1] for s in sized], np.int64)
    ev_ptr = np.concatenate([[0], np.cumsum(n_ev)])
    ax_ptr = np.concatenate([[0], np.cumsum(n_aux)])
    total = int(ev_ptr[-1])
    cols = {name: np.empty(total, dt) for name, dt in _COLS}
    aux_ptr = np.zeros(total + 1, np.int64)  # each event's aux length first, summed up below
    aux = np.empty(int(ax_ptr[-1]), np.int64)
    rank = np.empty(total, np.int32)
    seq = np.empty(total, np.int32)
    ignored = 0
    states = []
    for k, rf in enumerate(tqdm(rfs, desc="DUMPI .bin", disable=not progress)):
        a, b = int(ev_ptr[k]), int(ev_ptr[k + 1])
        out = [cols[name][a:b] for name, _ in _COLS] + [aux_ptr[1 + a:1 + b]]
        _, _, _, ign, side = rf.run(True, mode, override, out, aux[int(ax_ptr[k]):int(ax_ptr[k + 1])],
                                    sized[k][2], counts)
        ignored += ign
        rank[a:b] = rf.rank
        seq[a:b] = np.arange(b - a, dtype=np.int32)
        states.append(rank_sides(rf.rank, rf.path, rf.buf, rf.end, *side))
    np.cumsum(aux_ptr, out=aux_ptr)
    ids, comms = comm_table(states, n)
    _global_comms(cols["comm"], ev_ptr, states, ids, rfs)
    other_names = _other_names(cols)
    unknown_calls = {RECORDS[i][0]: int(c) for i, c in enumerate(counts.tolist()) if c}
    meta = {"format": "dumpi-bin", "files": [rf.path for rf in rfs], "version": ".".join(map(str, rfs[0].version)),
            "unknown_calls": unknown_calls, "ignored_requests": int(ignored), "notes": notes}
    init = np.flatnonzero(cols["call"][:int(ev_ptr[1])] == Call.INIT) if rfs else np.zeros(0, np.int64)
    if init.size:
        meta["argv"] = rfs[0].argv(int(cols["line"][int(init[0])]))
    source = str(path) if isinstance(path, str | os.PathLike) and len(rfs) > 1 else rfs[0].path
    trace = Trace(n, rank, seq, cols["call"], cols["peer"], cols["nbytes"], cols["tag"], cols["comm"],
                  cols["request"], cols["compute"], aux_ptr, aux, t_entry=cols["t_entry"], t_exit=cols["t_exit"],
                  line=cols["line"], comms=comms, other_names=other_names, source=source, meta=meta)
    return trace.validate() if validate else trace


def _global_comms(comm: np.ndarray, ev_ptr: np.ndarray, states: Sequence, ids: Mapping[tuple, int],
                  rfs: Sequence[_RankFile]) -> None:
    """Replace each rank's local communicator indices by the global ids, in place."""
    for k, st in enumerate(states):
        sl = slice(int(ev_ptr[k]), int(ev_ptr[k + 1]))
        table = np.full(max(st.keys) + 1, -1, np.int32)
        for local, key in st.keys.items():
            table[local] = ids.get(key, -1)
        comm[sl] = table[comm[sl]]
        bad = np.flatnonzero(comm[sl] < 0)
        if bad.size:
            raise DumpiBinError(rfs[k].path, None, f"event {int(bad[0])}: communicator created on this rank only; "
                                "its other members are missing from the trace files")


def _other_names(cols: Mapping[str, np.ndarray]) -> tuple[str, ...]:
    """Names of the ``OTHER`` events' labels, numbered by first appearance; their peers become the indices."""
    other = np.flatnonzero(cols["call"] == Call.OTHER)
    if not other.size:
        return ()
    labels = cols["peer"][other]
    uniq, first = np.unique(labels, return_index=True)
    uniq = uniq[np.argsort(first, kind="stable")]
    index = np.zeros(len(RECORDS), np.int32)
    index[uniq] = np.arange(uniq.size, dtype=np.int32)
    cols["peer"][other] = index[labels]
    return tuple(RECORDS[int(u)][0] for u in uniq)


def _read_any_dumpi(path: str | os.PathLike, **options: Any) -> Trace:
    """DUMPI binary (``.bin`` files present) by the native reader, else the ``dumpi2ascii`` text reader."""
    p = Path(path)
    where = p if p.is_dir() else p.parent
    binary = p.suffix == ".bin" or (p.suffix in (".meta", "") and any(where.glob("*.bin")))
    return read_dumpi_bin(path, **options) if binary else read_dumpi(path, **options)


_TEXT_CALL = re.compile(rb"^MPI_\w+ (?:entering|returning) at walltime ", re.MULTILINE)


def _is_dumpi(path: Path, head: bytes) -> bool:
    if path.is_dir():
        return any(path.glob("*.meta")) or any(path.glob("*.bin")) or any(path.glob("*.txt"))
    # a dumpi2ascii file may open with its header (version=, hostname=, ...): look for a call line anywhere
    return first_line(head).startswith("MPI_") or "dumpi" in path.name or bool(_TEXT_CALL.search(head))


TRACE_FORMAT = TraceFormat(
    name="dumpi", files="DUMPI `.meta`, directory, `.bin` or `dumpi2ascii` text", extensions=(".meta", ".bin"),
    guess_can_open=_is_dumpi, read=_read_any_dumpi, module=__name__)
