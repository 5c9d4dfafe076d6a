"""SimGrid time-independent traces (TIT): reader and writer (paper 000 §2.2, §3.2).

Paper: Choi et al., ICS 2020 (paper 000) §2.2, §3.2 (trace-driven
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

from tqdm.auto import tqdm

from perfmod.trace.builder import TraceBuilder
from perfmod.trace.core import ANY_SOURCE, ANY_TAG, PROC_NULL, Call, Trace, TraceError, TraceWarning
from perfmod.trace.formats.registry import TraceFormat, first_line
from perfmod.trace.formats.textio import FormatError, alltoallv_recv_bytes, gc_paused, numbered_lines
from perfmod.trace.formats.tit_actions import (
    DEFAULT_FLOP_RATE,
    SMPI_ACTIONS,
    SMPI_ANY_SOURCE,
    SMPI_ANY_TAG,
    TIT_TYPE_SIZES,
    Line,
    RankState,
    action,
    finish_vector,
)
from perfmod.trace.requests import resolve_requests

__all__ = ["TIT_TYPE_SIZES", "DEFAULT_FLOP_RATE", "TRACE_FORMAT", "read_tit", "write_tit"]

def _files(path: Path) -> list[Path]:
    """A trace file, or an index file listing one trace file per line.

    SMPI opens the listed names relative to the directory the replay runs in
    (SimGrid's own ``examples/smpi/replay/split_traces``); perfmod writes them
    relative to the index.  Each name is looked up beside the index first,
    then in the working directory; an index whose first name is found in
    neither is a :class:`FormatError` naming both.
    """
    for n, text in numbered_lines(path):
        tok = text.split()
        if not tok or tok[0].startswith("#"):
            continue
        try:
            int(tok[0])
            return [path]
        except ValueError:
            pass
        if len(tok) == 1 and ((path.parent / tok[0]).is_file() or Path(tok[0]).is_file()):
            names = [t.strip() for _, t in numbered_lines(path) if t.strip() and not t.startswith("#")]
            return [path.parent / n if (path.parent / n).is_file() else Path(n) for n in names]
        if len(tok) == 1:
            raise FormatError(path, n, f"an index of per-rank traces whose first file {tok[0]!r} is neither beside "
                              f"the index ({path.parent}) nor in the working directory ({Path.cwd()}); run from the "
                              "directory the names are relative to (SMPI's replay directory), or fix the names")
        return [path]
    return [path]


def read_tit(path: str | os.PathLike, nprocs: int | None = None, flop_rate: float = DEFAULT_FLOP_RATE,
             unknown: str = "strict") -> Trace:
    """Read a SimGrid time-independent trace (one file, or an index of per-rank files).

    Parameters
    ----------
    path : path
        The trace, or a file listing per-rank traces (one path per line).
    nprocs : int, optional
        World size (default: highest rank seen + 1).
    flop_rate : float
        flop/s that turns ``compute`` flops into seconds.
    unknown : {"strict", "skip", "keep", "error"}
        Actions perfmod does not model (``scan``, ``gatherv``, ``location``,
        ``comm_split``...): dropped, kept as ``Call.OTHER``, or an error;
        counted in ``meta["unknown_calls"]`` either way.  ``strict`` (the
        default) drops SMPI's actions perfmod does not model but stops on a
        name SMPI's replay does not define either (a misspelt action would
        otherwise vanish, and its time with it); ``skip`` drops those too and
        warns how many lines it dropped.

    Raises
    ------
    FormatError
        Naming file, line and argument.
    """
    if unknown not in ("strict", "skip", "keep", "error"):
        raise ValueError(f"unknown= must be 'strict', 'skip', 'keep' or 'error', got {unknown!r}")
    if flop_rate <= 0:
        raise ValueError(f"flop_rate must be > 0 flop/s, got {flop_rate!r}")
    rows: list[tuple[int, dict]] = []
    states: dict[int, RankState] = {}
    unknown_calls: Counter = Counter()
    red_flops = 0.0
    for f in _files(Path(path)):
        for n, text in numbered_lines(f):  # SimGrid writes files whose last line has no newline
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
            st = states.setdefault(rank, RankState())
            ln = Line(str(f), n, tok)
            ev, flops = action(ln, rank, st, unknown, flop_rate, nprocs)
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
            red_flops += finish_vector(ev, size)
    skipped: Counter = Counter()
    for st in states.values():
        skipped.update(st.skipped_data)
    if skipped:
        warnings.warn(f"{path}: skipped SMPI actions that move data, which perfmod does not model: "
                      + ", ".join(f"{k} x{v}" for k, v in sorted(skipped.items()))
                      + "; the replay leaves their communication out (read with unknown='keep' or 'error')",
                      TraceWarning, stacklevel=2)
    foreign = {k: v for k, v in unknown_calls.items() if k not in SMPI_ACTIONS}
    if foreign and unknown == "skip":
        warnings.warn(f"{path}: skipped {sum(foreign.values())} lines whose action SimGrid's replay does not define: "
                      + ", ".join(f"{k} x{v}" for k, v in sorted(foreign.items())), TraceWarning, stacklevel=2)
    b = TraceBuilder(size, source=str(path))
    for rank, ev in rows:
        other = ev.pop("other", None)
        if other is not None:
            ev["peer"] = b.other(other)
        b.append(rank, **ev)
    meta = {"format": "simgrid-tit", "flop_rate": flop_rate, "unknown_calls": dict(unknown_calls),
            "reduction_flops": red_flops}
    return b.build(meta=meta)


def _tit_peer(v: int) -> int:
    return SMPI_ANY_SOURCE if v == ANY_SOURCE else v


def _tit_tag(v: int) -> int:
    return SMPI_ANY_TAG if v == ANY_TAG else v


#: Call code -> how the writer handles it (plain ints: enum lookups per event cost more than the rest)
_KIND: dict[int, str] = {
    int(Call.COMPUTE): "skip", int(Call.OTHER): "skip", int(Call.INIT): "init", int(Call.FINALIZE): "finalize",
    **{int(c): "p2p" for c in (Call.SEND, Call.SSEND, Call.ISEND, Call.ISSEND, Call.RECV, Call.IRECV)},
    **{int(c): "wait" for c in (Call.WAIT, Call.WAITALL, Call.WAITANY, Call.WAITSOME)},
    **{int(c): "test" for c in (Call.TEST, Call.TESTALL, Call.TESTANY, Call.TESTSOME)},
    int(Call.SENDRECV): "sendrecv", int(Call.BARRIER): "barrier", int(Call.BCAST): "bcast",
    int(Call.REDUCE): "reduce", int(Call.ALLREDUCE): "allreduce", int(Call.ALLTOALL): "alltoall",
    int(Call.ALLGATHER): "allgather", int(Call.GATHER): "gather", int(Call.SCATTER): "scatter",
    int(Call.ALLTOALLV): "alltoallv", int(Call.REDUCE_SCATTER): "reducescatter",
}
_P2P_NAME = {int(Call.SEND): "send", int(Call.SSEND): "send", int(Call.ISEND): "isend", int(Call.ISSEND): "isend",
             int(Call.RECV): "recv", int(Call.IRECV): "irecv"}
_WAITALL = int(Call.WAITALL)


def _rank_lines(trace: Trace, r: int, reqs, a2av: dict[int, list[int]], rate: float) -> list[str]:
    """The TIT lines of rank ``r`` (one pass over its events as Python lists)."""
    lines: list[str] = []
    add = lines.append
    pending: dict[int, str] = {}  # creating event -> "src dst tag"
    sl = trace.rank_events(r)
    a, b = sl.start, sl.stop
    calls, cms, tags = trace.call[sl].tolist(), trace.comm[sl].tolist(), trace.tag[sl].tolist()
    nbs, peers, comp = trace.nbytes[sl].tolist(), trace.peer[sl].tolist(), trace.compute[sl].tolist()
    ref = reqs.ref_ptr[a:b + 1].tolist()
    created = reqs.created[ref[0]:ref[-1]].tolist() if b > a else []
    r0 = ref[0] if ref else 0
    for j in range(b - a):
        c, peer, nb, tag = calls[j], peers[j], nbs[j], tags[j]
        if comp[j] > 0:
            add(f"{r} compute {comp[j] * rate!r}")
        kind = _KIND.get(c)
        if kind == "skip":
            continue
        if kind is None:  # pragma: no cover - every Call has a kind
            raise TraceError(f"{trace._at(a + j)}: no TIT action for this call")
        if cms[j] != 0 and kind != "init" and kind != "finalize":
            raise TraceError(f"{trace._at(a + j)}: TIT describes MPI_COMM_WORLD only; communicator {cms[j]}")
        if kind == "init" or kind == "finalize":
            add(f"{r} {kind}")
        elif kind == "p2p":
            if peer == PROC_NULL:
                continue
            name = _P2P_NAME[c]
            ttag = SMPI_ANY_TAG if tag == ANY_TAG else tag
            tpeer = SMPI_ANY_SOURCE if peer == ANY_SOURCE else peer
            add(f"{r} {name} {tpeer} {ttag} {nb}")
            if name[0] == "i":
                pending[a + j] = f"{tpeer} {r} {ttag}" if name == "irecv" else f"{r} {peer} {ttag}"
        elif kind == "wait" or kind == "test":
            done = [x for x in created[ref[j] - r0:ref[j + 1] - r0] if x in pending]
            if c == _WAITALL and done and len(done) == len(pending):
                add(f"{r} waitall")
                pending.clear()
                continue
            for x in done:
                add(f"{r} {kind} {pending.pop(x)}")
        elif kind == "sendrecv":
            src, rb = (int(x) for x in trace.aux_of(a + j)[:2])
            add(f"{r} sendRecv {nb} {peer} {rb} {_tit_peer(src)}")
        elif kind == "barrier":
            add(f"{r} barrier")
        elif kind == "bcast":
            add(f"{r} bcast {nb} {peer}")
        elif kind == "reduce":
            add(f"{r} reduce {nb} 0 {peer}")
        elif kind == "allreduce":
            add(f"{r} allreduce {nb} 0")
        elif kind == "alltoall" or kind == "allgather":
            add(f"{r} {kind} {nb} {nb}")
        elif kind == "gather":
            add(f"{r} gather {nb} {nb if r == peer else 0} {peer}")
        elif kind == "scatter":
            add(f"{r} scatter {nb if r == peer else 0} {nb} {peer}")
        elif kind == "alltoallv":
            send, recv = trace.aux_of(a + j).tolist(), a2av[a + j]
            add(f"{r} alltoallv {sum(send)} {' '.join(map(str, send))} {sum(recv)} {' '.join(map(str, recv))}")
        elif kind == "reducescatter":
            p = trace.nprocs
            counts = [nb // p + (1 if k < nb % p else 0) for k in range(p)]
            add(f"{r} reducescatter {' '.join(map(str, counts))} 0")
    # SMPI's replay needs init first (it sets the default datatype) and ends ranks at finalize
    calls = trace.call[sl]
    if not (calls.size and calls[0] == Call.INIT):
        lines.insert(0, f"{r} init")
    if not (calls.size and calls[-1] == Call.FINALIZE):
        lines.append(f"{r} finalize")
    return lines


def write_tit(trace: Trace, path: str | os.PathLike, flop_rate: float = DEFAULT_FLOP_RATE,
              per_rank: bool = False, progress: bool = False) -> Path:
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
    Path
        The file to read back with :func:`read_tit`: the trace file, or with
        ``per_rank`` the index (the per-rank files are ``<stem>-<rank>.txt``
        next to it).

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
    with gc_paused():
        per = [_rank_lines(trace, r, reqs, a2av, flop_rate)
               for r in tqdm(range(trace.nprocs), desc="TIT ranks", disable=not progress)]
    from perfmod.core.io import atomic_path  # here: reading traces starts without xarray

    dest = Path(path)
    header = [f"# SimGrid time-independent trace written by perfmod: {trace.nprocs} ranks, sizes in bytes, "
              f"compute in flops at {flop_rate!r} flop/s"]
    if not per_rank:
        with atomic_path(dest) as tmp:
            tmp.write_text("\n".join(header + [ln for lines in per for ln in lines]) + "\n")
        return dest
    files = [dest.with_name(f"{dest.stem}-{r}.txt") for r in range(trace.nprocs)]
    for f, lines in zip(files, per, strict=True):
        with atomic_path(f) as tmp:
            tmp.write_text("\n".join(header + lines) + "\n")
    with atomic_path(dest) as tmp:
        tmp.write_text("\n".join(f.name for f in files) + "\n")
    return dest


def _is_tit(path: Path, head: bytes) -> bool:
    words = first_line(head).split()
    if len(words) >= 2 and (words[0].isdigit() or words[0].startswith("p")):
        return True  # <rank> <action> ...
    # an index: one per-rank file name per line, relative to the directory SMPI's replay runs in (its
    # examples' split_traces) or, as perfmod writes them, to the index
    return len(words) == 1 and ((path.parent / words[0]).is_file() or Path(words[0]).is_file())


TRACE_FORMAT = TraceFormat(
    name="tit", files="SimGrid time-independent trace or its index", extensions=(".tit",),
    guess_can_open=_is_tit, read=read_tit, write=write_tit, module=__name__)
