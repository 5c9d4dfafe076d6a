"""GOAL text read straight into LogGOPSim's operation graph, as written: compiled, streaming, millions of lines/s.

The syntax is LogGOPSim's ``txt2bin`` input (github.com/spcl/LogGOPSim,
``src/LogGOPSim/txt2bin.re``; :mod:`perfmod.trace.formats.goal` shows it).
:func:`read_goal_graph` keeps the schedule exactly as the file gives it, as
``txt2bin`` serialises it for LogGOPSim:

- nodes of a rank in the order of their lines (LogGOPSim's node offsets),
  ranks in increasing order;
- for each node, the nodes that ``require`` it (freed when it is done) and
  those that ``irequire`` it (freed when it starts), in the order of the
  dependency lines; a node may run when all of both kinds are satisfied;
- tags as LogGOPSim reads them: unsigned 32-bit (a larger number keeps its
  low 32 bits, as ``txt2bin`` stores it), where ``-1`` and ``2**32 - 1``
  (so also Schedgen's ``18446744073709551615``) match any tag, and a
  ``recv from -1`` any source.

The file is read in chunks of whole lines by a numba state machine (no
regular expressions, nothing per line in Python;
:mod:`perfmod.trace.formats.goal_scan_kernels`, compiled ahead of time
where it can be: :mod:`perfmod.core.aot`); labels go through a hash
table with the label bytes kept for comparison, so any label is exact.
Errors name file, line and what is wrong, as :func:`perfmod.trace.formats.goal.read_goal`
states them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from perfmod.core.aot import Arg, Kernel, kernels
from perfmod.core.jit import first_call
from perfmod.core.memory import check_fits
from perfmod.trace.core import TraceError
from perfmod.trace.formats.goal_bin import dependency_counts, is_loggopsim_bin, read_goal_bin
from perfmod.trace.formats.textio import FormatError

__all__ = ["GoalGraph", "read_goal_graph"]

SEND, RECV, CALC = 1, 2, 3  #: node types (the ``goal_graph`` module's, LogGOPSim's sort order)
WILD = -1  #: any source / any tag
_ANY32 = 0xFFFFFFFF

_CHUNK = 1 << 22  #: bytes parsed per call of the compiled scanner (two such buffers live at once)

# scanner return codes
_OK, _ROOM, _TABLE = 0, 1, 2
E_NUMRANKS, E_RANK, E_RANK_RANGE, E_UNDEF, E_OP, E_DIR, E_TWICE, E_BIG = 10, 11, 12, 13, 14, 15, 16, 17

# state slots
(S_PHASE, S_LINE, S_NRANKS, S_RANK, S_BLOCK, S_NODES, S_EDGES, S_LIVE, S_LABELS, S_BLOCKS, S_KEEP,
 S_RANK_LINE, S_BLOCK_NODE0, S_COMMENT) = range(14)


_I, _I0 = Arg(np.int64), Arg(np.int64, 0)
#: the compiled scanner's kernels (:mod:`perfmod.trace.formats.goal_scan_kernels`) and their argument types, which
#: :mod:`perfmod.core.aot` compiles them for: the arrays :func:`read_goal_graph` allocates
AOT_KERNELS = (
    Kernel("_scan", (Arg(np.uint8, readonly=True), _I0, _I0, _I, _I, _I, Arg(np.int8), _I, _I, _I, Arg(np.uint8),
                     Arg(np.uint8), _I, _I, _I, _I, _I, Arg(np.bool_), Arg(np.uint64), _I, _I, _I, _I, Arg(np.uint8),
                     _I, _I, _I), (_I0, _I0)),
    Kernel("_rehash", (Arg(np.uint64), _I, _I, _I, _I, _I0, _I0), (Arg(np.uint64), _I, _I, _I, _I)),
    Kernel("_csr", (_I, _I, _I0), (_I, _I)),
    Kernel("_spans", (Arg(np.uint8, readonly=True), _I, _I), Arg(np.uint8)),
)


def _kernels():
    """The scanner's compiled kernels (ahead of time where they could be built, else numba's JIT)."""
    return kernels("goal_reader", "perfmod.trace.formats.goal_scan_kernels", f"{__name__}:AOT_KERNELS", (__name__,))


@dataclass(frozen=True)
class GoalGraph:
    """A GOAL schedule as LogGOPSim's operation graph (nodes of a rank contiguous, ranks increasing).

    Attributes
    ----------
    num_ranks : int
        ``num_ranks`` of the file.
    rank : numpy.ndarray of int64
        Owner of each node.
    kind : numpy.ndarray of int8
        :data:`SEND`, :data:`RECV` or :data:`CALC`.
    size : numpy.ndarray of int64
        Bytes (send, recv) or time units (calc).
    peer, tag : numpy.ndarray of int64
        Destination / source (:data:`WILD`: any) and LogGOPSim's 32-bit tag (:data:`WILD`: any); 0 for calc.
    cpu, nic : numpy.ndarray of uint8
        LogGOPSim's CPU and NIC of the node (txt2bin stores them in 8 bits).
    line : numpy.ndarray of int64
        Line of the node in the file (-1 in a binary schedule: :meth:`where` names a node either way).
    ndeps : numpy.ndarray of int64
        ``requires`` plus ``irequires`` of each node.
    succ_ptr, succ : numpy.ndarray of int64
        CSR: the nodes that require each node (freed when it is done), in file order.
    ssucc_ptr, ssucc : numpy.ndarray of int64
        CSR: the nodes that irequire each node (freed when it starts), in file order.
    labels : list of str or None
        Each node's label (``_anon<line>`` for none), when read with ``labels=True``.
    pred_ptr, pred, pred_start : numpy.ndarray or None
        CSR: what each node requires (``pred_start``: irequires), in file order, with ``labels=True``.
    source : str
        The file.
    """

    num_ranks: int
    rank: np.ndarray
    kind: np.ndarray
    size: np.ndarray
    peer: np.ndarray
    tag: np.ndarray
    cpu: np.ndarray
    nic: np.ndarray
    line: np.ndarray
    ndeps: np.ndarray
    succ_ptr: np.ndarray
    succ: np.ndarray
    ssucc_ptr: np.ndarray
    ssucc: np.ndarray
    source: str = ""
    labels: list | None = None
    pred_ptr: np.ndarray | None = None
    pred: np.ndarray | None = None
    pred_start: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.kind.size)

    @property
    def sync(self) -> np.ndarray:
        """No GOAL send is synchronous (all False; the ``loggp`` replay's parameter lookup reads it)."""
        return np.zeros(self.kind.size, dtype=bool)

    def where(self, v: int) -> str:
        """Where node ``v`` is written: ``file:line``, or ``file: rank R operation K`` in a binary schedule
        (no lines: LogGOPSim's offset among the rank's operations)."""
        if self.line[v] >= 0:
            return f"{self.source}:{int(self.line[v])}"
        r = int(self.rank[v])
        return f"{self.source}: rank {r} operation {v - int(np.searchsorted(self.rank, r))}"

    def nbytes(self) -> int:
        """Bytes held by the graph's arrays."""
        return int(sum(getattr(self, f).nbytes for f in ("rank", "kind", "size", "peer", "tag", "cpu", "nic",
                                                           "line", "ndeps", "succ_ptr", "succ", "ssucc_ptr", "ssucc")))


def _shrink(a: np.ndarray, n: int) -> np.ndarray:
    """``a[:n]``, in place where ``a`` owns its memory (the rest is given back), else a copy."""
    if a.flags.owndata and a.base is None:
        a.resize(n, refcheck=False)
        return a
    return a[:n].copy()


def _grow(a: np.ndarray, n: int, fill=None) -> np.ndarray:
    out = np.empty(n, dtype=a.dtype) if fill is None else np.full(n, fill, dtype=a.dtype)
    out[:a.size] = a
    return out


_MESSAGES = {
    E_NUMRANKS: lambda st, text, tok: f"expected 'num_ranks N' first, got {text!r}",
    E_RANK: lambda st, text, tok: f"expected 'rank R {{', got {text!r}",
    E_UNDEF: lambda st, text, tok: f"rank {st[S_RANK]}: dependency on undefined label {tok!r}",
    E_OP: lambda st, text, tok: f"rank {st[S_RANK]}: not a GOAL operation: {text!r}",
    E_TWICE: lambda st, text, tok: f"rank {st[S_RANK]}: label {tok!r} defined twice",
    E_BIG: lambda st, text, tok: f"rank {st[S_RANK]}: a number beyond 2**63 - 1 in {text!r}",
}


def _error(path, code: int, st: np.ndarray, err: np.ndarray, buf: np.ndarray) -> FormatError:
    text = bytes(buf[err[0]:err[1]]).decode("utf-8", "replace")
    tok = bytes(buf[err[2]:err[3]]).decode("utf-8", "replace")
    line = int(st[S_LINE]) + 1
    if code == E_RANK_RANGE:
        return FormatError(path, line, f"rank {int(err[4])} >= num_ranks {int(st[S_NRANKS])}")
    if code == E_DIR:
        kind = "send" if err[4] == SEND else "recv"
        return FormatError(path, line, f"rank {st[S_RANK]}: {kind} takes '{'to' if kind == 'send' else 'from'}'")
    return FormatError(path, line, _MESSAGES[code](st, text, tok))


def read_goal_graph(path: str | os.PathLike, labels: bool = False, progress: bool = False) -> GoalGraph:
    """Read a GOAL text schedule as written (see the module docstring).

    Parameters
    ----------
    path : path
        The GOAL file.
    labels : bool
        Keep each node's label and the predecessor lists (:func:`~perfmod.trace.formats.goal.read_goal` needs them;
        the replay does not).
    progress : bool
        Show a progress bar over the file's bytes.

    Raises
    ------
    FormatError
        Syntax: ``num_ranks`` first, ``rank R {`` blocks within ``num_ranks``, each rank once, operations
        (``b`` after send/recv sizes, ``to``/``from``), labels defined once per block and before they are
        required; naming file and line.
    TraceError
        An empty file or a block not closed.
    """
    if progress:
        from tqdm.auto import tqdm
    else:  # tqdm's import is a fifth of a small job's start
        from contextlib import nullcontext

        def tqdm(**_kw):
            return nullcontext(SimpleNamespace(update=lambda n: None))

    src = str(path)
    with open(path, "rb") as f:
        if is_loggopsim_bin(f.read(8)):
            return GoalGraph(**read_goal_bin(path, labels, _kernels()))
    size = os.path.getsize(path)
    # nodes and dependencies take about 4 bytes of arrays per byte of text (a line of ~25 bytes: ~100 bytes)
    check_fits(4 * size, f"reading {src} ({size / 2**20:.0f} MiB of GOAL text)")
    est = max(1024, size // 48)
    n_rank, n_kind = np.empty(est, np.int64), np.empty(est, np.int8)
    n_size, n_peer, n_tag = np.empty(est, np.int64), np.empty(est, np.int64), np.empty(est, np.int64)
    n_cpu, n_nic, n_line = np.empty(est, np.uint8), np.empty(est, np.uint8), np.empty(est, np.int64)
    n_loff, n_llen = (np.empty(est if labels else 0, np.int64) for _ in range(2))  # labels only: 16 B per node
    # a dependency line is about 22 bytes: room for one per 24 bytes of text, so that a schedule of mostly
    # dependencies is not copied while read (pages never written take no memory)
    est_e = max(1024, size // 24)
    e_a, e_b, e_start = np.empty(est_e, np.int64), np.empty(est_e, np.int64), np.empty(est_e, np.bool_)
    cap = 1 << 12
    t_hash, t_node, t_stamp = np.zeros(cap, np.uint64), np.zeros(cap, np.int64), np.full(cap, -1, np.int64)
    t_off, t_len = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
    store = np.empty(1 << 16, np.uint8)
    b_rank, b_line, b_node0 = np.empty(1024, np.int64), np.empty(1024, np.int64), np.empty(1024, np.int64)
    st = np.zeros(14, np.int64)
    st[S_KEEP] = int(labels)
    err = np.zeros(5, np.int64)
    carry = b""
    k = _kernels()
    with open(path, "rb") as f, tqdm(total=size, unit="B", unit_scale=True, desc="GOAL", disable=not progress,
                                     mininterval=1.0) as bar, first_call("the GOAL reader"):
        while True:
            raw = f.read(_CHUNK)
            eof = not raw
            data = carry + raw
            if not data:
                break
            cut = len(data) if eof else data.rfind(b"\n") + 1
            if cut == 0:  # no newline in the chunk yet
                carry = data
                continue
            carry = data[cut:]
            buf = np.frombuffer(data, dtype=np.uint8)
            pos = 0
            while True:
                code, pos = k._scan(buf, pos, cut, st, err, n_rank, n_kind, n_size, n_peer, n_tag, n_cpu, n_nic,
                                  n_line, n_loff, n_llen, e_a, e_b, e_start, t_hash, t_node, t_stamp, t_off, t_len,
                                  store, b_rank, b_line, b_node0)
                if code == _OK:
                    break
                if code == _ROOM:  # at most one node or dependency per line left in the chunk
                    lines = int(np.count_nonzero(buf[pos:cut] == 10)) + 1
                    if st[S_NODES] >= n_kind.size:
                        grow = max(int(st[S_NODES]) + lines, 2 * n_kind.size)
                        n_rank, n_kind, n_size, n_peer, n_tag, n_cpu, n_nic, n_line = (
                            _grow(x, grow) for x in (n_rank, n_kind, n_size, n_peer, n_tag, n_cpu, n_nic, n_line))
                        if labels:
                            n_loff, n_llen = _grow(n_loff, grow), _grow(n_llen, grow)
                    if st[S_EDGES] >= e_a.size:
                        grow = max(int(st[S_EDGES]) + lines, 2 * e_a.size)
                        e_a, e_b, e_start = (_grow(x, grow) for x in (e_a, e_b, e_start))
                    if st[S_LABELS] + cut - pos > store.size:
                        store = _grow(store, max(2 * store.size, int(st[S_LABELS]) + cut - pos + 1))
                    if st[S_BLOCKS] >= b_rank.size:
                        b_rank, b_line, b_node0 = (_grow(x, 2 * b_rank.size) for x in (b_rank, b_line, b_node0))
                elif code == _TABLE:
                    cap *= 4
                    t_hash, t_node, t_stamp, t_off, t_len = k._rehash(t_hash, t_node, t_stamp, t_off, t_len,
                                                                    st[S_BLOCK], cap)
                else:
                    raise _error(src, code, st, err, buf)
            bar.update(len(raw))
            if eof:
                break
    if st[S_PHASE] == 0:
        raise TraceError(f"{src}: empty GOAL file (no num_ranks)")
    if st[S_COMMENT] > 0:
        raise TraceError(f"{src}: the comment opened with '/*' on line {int(st[S_COMMENT])} is not closed with '*/'")
    if st[S_PHASE] == 2:
        raise TraceError(f"{src}: rank {int(st[S_RANK])} block is not closed with '}}'")
    return _assemble(k, src, st, n_rank, n_kind, n_size, n_peer, n_tag, n_cpu, n_nic, n_line, n_loff, n_llen,
                     e_a, e_b, e_start, store, b_rank, b_line, b_node0, labels)


def _assemble(kern, src, st, n_rank, n_kind, n_size, n_peer, n_tag, n_cpu, n_nic, n_line, n_loff, n_llen, e_a, e_b,
              e_start, store, b_rank, b_line, b_node0, labels) -> GoalGraph:
    nn, ne, nb = int(st[S_NODES]), int(st[S_EDGES]), int(st[S_BLOCKS])
    # the scanner's arrays shrunk in place to what was read: no second copy at the peak
    rank, kind, size, peer, tag, cpu, nic, line = (_shrink(x, nn) for x in (n_rank, n_kind, n_size, n_peer, n_tag,
                                                                           n_cpu, n_nic, n_line))
    n_loff, n_llen = (_shrink(x, nn if labels else 0) for x in (n_loff, n_llen))
    ea, eb, es = (_shrink(x, ne) for x in (e_a, e_b, e_start))
    del n_rank, n_kind, n_size, n_peer, n_tag, n_cpu, n_nic, n_line, e_a, e_b, e_start
    br = b_rank[:nb]
    if nb > 1 and np.any(br[1:] <= br[:-1]):  # blocks out of order: check each rank once, then order the nodes
        order = np.argsort(br, kind="stable")
        dup = np.flatnonzero(br[order][1:] == br[order][:-1])
        if dup.size:
            k = order[dup[0] + 1]
            raise FormatError(src, int(b_line[k]), f"rank {int(br[k])} has a second block (LogGOPSim takes one "
                                                   "per rank)")
        perm = np.argsort(rank, kind="stable")
        inv = np.empty(nn, dtype=np.int64)
        inv[perm] = np.arange(nn, dtype=np.int64)
        rank, kind, size, peer, tag, cpu, nic, line = (x[perm] for x in (rank, kind, size, peer, tag, cpu, nic, line))
        if labels:
            n_loff, n_llen = n_loff[perm], n_llen[perm]
        ea, eb = inv[ea], inv[eb]
    # "a requires b": a waits for b; b's successor list holds a
    if es.any():
        done = ~es
        succ_ptr, succ = kern._csr(eb[done], ea[done], nn)
        ssucc_ptr, ssucc = kern._csr(eb[es], ea[es], nn)
        del done
    else:  # no irequires: no copies of the edges for the split, and no start-successors (zeros never written
        # take no memory)
        succ_ptr, succ = kern._csr(eb, ea, nn)
        ssucc_ptr, ssucc = np.zeros(nn + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    extra = {}
    if labels:
        pred_ptr, pred = kern._csr(ea, eb, nn)
        _, pstart = kern._csr(ea, es.astype(np.int64), nn)
        names = []
        for v in range(nn):
            o = int(n_loff[v])
            names.append(bytes(store[o:o + int(n_llen[v])]).decode() if o >= 0 else f"_anon{int(line[v])}")
        extra = {"labels": names, "pred_ptr": pred_ptr, "pred": pred, "pred_start": pstart.astype(bool)}
    del ea, eb, es  # each node's dependencies counted from its predecessors' lists, the edges let go first
    ndeps = dependency_counts(succ, ssucc, nn)
    return GoalGraph(int(st[S_NRANKS]), rank, kind, size, peer, tag, cpu, nic, line, ndeps, succ_ptr, succ, ssucc_ptr,
                     ssucc, src, **extra)
