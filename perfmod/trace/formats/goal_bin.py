"""LogGOPSim's binary schedules (``txt2bin``'s output) read into the operation graph the GOAL text gives.

LogGOPSim (github.com/spcl/LogGOPSim) simulates a schedule from a binary
file that its ``txt2bin`` writes from GOAL text (``src/LogGOPSim/Parser.hpp``,
``Graph::serialize_mmap``; read there by ``SerializedGraph``).  A user who has
such files can replay them in perfmod as they are:
:func:`~perfmod.trace.formats.goal_scan.read_goal_graph`, ``read_trace``,
``perfmod replay x.bin`` and :func:`~perfmod.replay.loggops.goal_finish_times`
recognise the file by its first eight bytes and read it here, into the same
:class:`~perfmod.trace.formats.goal_scan.GoalGraph` as the text it was made
from (a test checks this array for array on schedules ``txt2bin`` wrote).

The layout, little-endian and packed (what LogGOPSim's x86 build writes):

- the magic cookie 4223 (``uint64``), the number of ranks (``uint32``), the
  most CPUs and NICs any operation names (``uint8`` each), then per rank the
  start and end of its data (``uint64`` each, counted from just after the
  cookie);
- per rank: its number of operations and of those that depend on nothing
  (``uint32`` each), the latter's offsets (``uint32``), one 39-byte record per
  operation in the order of the text's lines (dependency count ``uint32``,
  type ``char``: 1 send, 2 receive, 3 calc; peer ``uint32``; size ``uint64``;
  tag ``uint32``; CPU and NIC ``uint8``; the number and first index of the
  operations that require it and of those that ``irequire`` it, ``uint32``
  each), then those indices (``uint32``, the rank's own operation offsets).

Any source and any tag are ``2**32 - 1`` there, :data:`~perfmod.trace.formats.goal_scan.WILD` here.  The file
has no lines: an operation is named by its rank and its offset among the rank's operations (LogGOPSim's), and
its ``line`` is -1.  Every count, offset and index is checked against the file before it is used: a truncated or
inconsistent file gets a :class:`~perfmod.trace.core.TraceError` naming the file, the rank, the operation and
the field, never an index error.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from perfmod.core.memory import check_fits
from perfmod.trace.core import TraceError

__all__ = ["MAGIC", "MAGIC_BYTES", "NODE", "is_loggopsim_bin", "read_goal_bin"]

MAGIC = 4223  #: LogGOPSim's ``MAGIC_COOKIE``, the first ``uint64`` of a binary schedule
MAGIC_BYTES = MAGIC.to_bytes(8, "little")  #: the cookie as the file stores it
_ANY32 = 0xFFFFFFFF
#: one operation's record in the file (packed: 39 bytes)
NODE = np.dtype([("ndeps", "<u4"), ("type", "u1"), ("peer", "<u4"), ("size", "<u8"), ("tag", "<u4"), ("cpu", "u1"),
                 ("nic", "u1"), ("nsucc", "<u4"), ("succ0", "<u4"), ("nssucc", "<u4"), ("ssucc0", "<u4")])
assert NODE.itemsize == 39
_HEAD = 8 + 4 + 1 + 1  # cookie, num_ranks, max_cpu, max_nic


def is_loggopsim_bin(head: bytes) -> bool:
    """Whether a file opening with ``head`` is a LogGOPSim binary schedule (its magic cookie)."""
    return head[:8] == MAGIC_BYTES


def _u32(buf: np.ndarray, at: int) -> int:
    return int.from_bytes(buf[at:at + 4].tobytes(), "little")


def read_goal_bin(path: str | os.PathLike, labels: bool, kern: Any) -> dict[str, Any]:
    """Read a LogGOPSim binary schedule (module docstring): the fields of its
    :class:`~perfmod.trace.formats.goal_scan.GoalGraph` (which
    :func:`~perfmod.trace.formats.goal_scan.read_goal_graph`, the one entry point, makes of them).

    ``labels``: name each operation ``op<offset>`` (its offset among its rank's) and keep the predecessor lists,
    as :func:`~perfmod.trace.formats.goal_scan.read_goal_graph` does for text.  ``kern``: the GOAL reader's
    compiled kernels (:mod:`perfmod.trace.formats.goal_scan_kernels`): ``_spans`` gathers every rank's bytes,
    ``_csr`` makes the predecessor lists.

    Raises
    ------
    TraceError
        Not a LogGOPSim schedule, or a count, offset or index that the file cannot hold (named with the rank,
        the operation and the field).
    """
    src = str(path)
    size = os.path.getsize(path)
    if size < _HEAD:
        raise TraceError(f"{src}: {size} bytes: too short for a LogGOPSim binary schedule (at least {_HEAD})")
    check_fits(4 * size, f"reading {src} ({size / 2**20:.0f} MiB of LogGOPSim schedule)")
    with open(path, "rb") as f:
        buf = np.frombuffer(f.read(), dtype=np.uint8)
    return _parse(src, buf, labels, kern)


def dependency_counts(succ: np.ndarray, ssucc: np.ndarray, n: int) -> np.ndarray:
    """Each of ``n`` nodes' ``requires`` plus ``irequires``: how often it appears in the successor lists (int64; the
    GOAL text reader counts them the same way)."""
    ndeps = np.bincount(succ, minlength=n).astype(np.int64, copy=False)
    if ssucc.size:
        ndeps += np.bincount(ssucc, minlength=n)
    return ndeps


def _parse(src: str, buf: np.ndarray, labels: bool, kern: Any) -> dict[str, Any]:
    spans = kern._spans
    size = buf.size
    if buf[:8].tobytes() != MAGIC_BYTES:
        raise TraceError(f"{src}: not a LogGOPSim binary schedule (its first 8 bytes are not the cookie {MAGIC})")
    p = _u32(buf, 8)
    if p == 0 or _HEAD + 16 * p > size:
        raise TraceError(f"{src}: num_ranks {p}: the file's {size} bytes cannot hold its table of "
                         f"{p} ranks' data ({16 * p} bytes)")
    jump = np.frombuffer(buf, dtype="<u8", count=2 * p, offset=_HEAD).reshape(p, 2)
    lo, hi = jump[:, 0].astype(np.int64) + 8, jump[:, 1].astype(np.int64) + 8  # counted from after the cookie
    table_end = _HEAD + 16 * p
    bad = np.flatnonzero((jump[:, 0] > size) | (jump[:, 1] > size) | (lo < table_end) | (hi > size) | (hi < lo + 8))
    if bad.size:
        r = int(bad[0])
        raise TraceError(f"{src}: rank {r}: its data at bytes {int(jump[r, 0]) + 8}..{int(jump[r, 1]) + 8} lies "
                         f"outside the schedule ({table_end}..{size} after the rank table)")
    head = spans(buf, lo, lo + 8).view("<u4").reshape(p, 2).astype(np.int64)
    n, nroot = head[:, 0], head[:, 1]  # each rank's operations and those that depend on nothing
    rec = lo + 8 + 4 * nroot
    app = rec + NODE.itemsize * n
    bad = np.flatnonzero((nroot > n) | (app > hi))
    if bad.size:
        r = int(bad[0])
        raise TraceError(f"{src}: rank {r}: {int(n[r])} operations, {int(nroot[r])} of them independent, do not fit "
                         f"in its {int(hi[r] - lo[r])} bytes of data")
    base = np.concatenate(([0], np.cumsum(n)))
    nn = int(base[-1])
    rank = np.repeat(np.arange(p, dtype=np.int64), n)
    offset = np.arange(nn, dtype=np.int64) - base[rank]
    node = spans(buf, rec, app).view(NODE)  # every record, ranks in order
    m = (hi - app) // 4  # each rank's dependency indices
    app_base = np.concatenate(([0], np.cumsum(m)))
    app = spans(buf, app, app + 4 * m).view("<u4").astype(np.int64)
    root_of = np.repeat(np.arange(p, dtype=np.int64), nroot)
    roots = spans(buf, lo + 8, rec).view("<u4").astype(np.int64)
    bad = np.flatnonzero(roots >= n[root_of])
    if bad.size:
        r = int(root_of[bad[0]])
        raise TraceError(f"{src}: rank {r}: independent operation {int(roots[bad[0]])} >= its {int(n[r])} "
                         "operations")

    def fail(v: int, what: str) -> TraceError:
        return TraceError(f"{src}: rank {int(rank[v])} operation {int(offset[v])}: {what}")

    kind = node["type"].astype(np.int8)
    bad = np.flatnonzero((kind < 1) | (kind > 3))
    if bad.size:
        raise fail(int(bad[0]), f"type {int(kind[bad[0]])} (1 send, 2 recv, 3 calc)")
    sz = node["size"]
    bad = np.flatnonzero(sz >= np.uint64(1 << 63))
    if bad.size:
        raise fail(int(bad[0]), f"size {int(sz[bad[0]])} beyond 2**63 - 1")
    size_ = sz.astype(np.int64)
    peer = node["peer"].astype(np.int64)
    tag = node["tag"].astype(np.int64)
    peer[peer == _ANY32] = -1
    tag[tag == _ANY32] = -1
    calc = kind == 3
    peer[calc], tag[calc] = 0, 0

    def successors(count: str, first: str) -> tuple[np.ndarray, np.ndarray]:
        cnt = node[count].astype(np.int64)
        start = node[first].astype(np.int64)
        mine = app_base[rank]  # each rank's index array within ``app``
        room = app_base[rank + 1] - mine
        bad = np.flatnonzero((cnt > 0) & (start + cnt > room))
        if bad.size:
            v = int(bad[0])
            raise fail(v, f"{count} {int(cnt[v])} from index {int(start[v])}: beyond its rank's {int(room[v])} "
                          "dependency indices")
        ptr = np.concatenate(([0], np.cumsum(cnt)))
        within = np.arange(int(ptr[-1]), dtype=np.int64) - np.repeat(ptr[:-1], cnt)
        owner = np.repeat(np.arange(nn, dtype=np.int64), cnt)
        local = app[mine[owner] + start[owner] + within]
        bad = np.flatnonzero(local >= n[rank[owner]])
        if bad.size:
            v = int(owner[bad[0]])
            raise fail(v, f"{count}: operation {int(local[bad[0]])} is not one of its rank's {int(n[rank[v]])}")
        return ptr, local + base[rank[owner]]

    succ_ptr, succ = successors("nsucc", "succ0")
    ssucc_ptr, ssucc = successors("nssucc", "ssucc0")
    ndeps = dependency_counts(succ, ssucc, nn)
    bad = np.flatnonzero(ndeps != node["ndeps"])
    if bad.size:
        v = int(bad[0])
        raise fail(v, f"dependency count {int(node['ndeps'][v])}, but {int(ndeps[v])} operations name it as theirs")
    # LogGOPSim starts the operations the rank lists as independent: they must be those that depend on nothing
    listed = np.zeros(nn, dtype=bool)
    listed[roots + base[root_of]] = True
    bad = np.flatnonzero(listed != (ndeps == 0))
    if bad.size:
        v = int(bad[0])
        raise fail(v, "listed among the rank's independent operations, but it depends on others" if listed[v] else
                   "depends on nothing, but is not listed among the rank's independent operations")
    extra = {}
    if labels:
        done_of = np.repeat(np.arange(nn, dtype=np.int64), np.diff(succ_ptr))
        start_of = np.repeat(np.arange(nn, dtype=np.int64), np.diff(ssucc_ptr))
        ea = np.concatenate((succ, ssucc))  # "a requires b": a waits for b
        eb = np.concatenate((done_of, start_of))
        is_start = np.concatenate((np.zeros(succ.size, dtype=np.int64), np.ones(ssucc.size, dtype=np.int64)))
        pred_ptr, pred = kern._csr(ea, eb, nn)
        _, pstart = kern._csr(ea, is_start, nn)
        extra = {"labels": [f"op{k}" for k in offset.tolist()], "pred_ptr": pred_ptr, "pred": pred,
                 "pred_start": pstart.astype(bool)}
    return dict(num_ranks=p, rank=rank, kind=kind, size=size_, peer=peer, tag=tag, cpu=node["cpu"].copy(),
                nic=node["nic"].copy(), line=np.full(nn, -1, dtype=np.int64), ndeps=ndeps, succ_ptr=succ_ptr,
                succ=succ, ssucc_ptr=ssucc_ptr, ssucc=ssucc, source=src, **extra)
