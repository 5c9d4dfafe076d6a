"""Communicators and groups of a DUMPI binary trace, rebuilt across the rank files.

Used by :mod:`perfmod.trace.formats.dumpi_bin` and, through
:func:`comm_table` and :func:`group_expression`, by the text reader
:mod:`perfmod.trace.formats.dumpi` (one implementation for both).  The scanner
(:mod:`perfmod.trace.formats.dumpi_bin_scan`) lists, per rank, the calls
that make communicators and groups (side records) and numbers the
communicators a rank creates 1, 2, ... ("local" indices; 0 is world).  This
module gives each one a key that all its members compute alike and numbers
the keys globally, as :mod:`perfmod.trace.dumpi` does for the text form:

- ``MPI_Comm_dup`` and ``MPI_Cart_create`` (ranks not reordered): key
  ``(parent, k, 0)``, ``k`` counting the rank's creations from ``parent``;
  members in the parent's order;
- ``MPI_Comm_split``: key ``(parent, k, color)``, members ordered by
  (split key, rank in the parent); ``MPI_UNDEFINED`` gives no communicator;
- ``MPI_Comm_create``: key ``(parent, k, 0)``, members the group's ranks in
  the group's order; the group comes from ``MPI_Comm_group`` and
  ``MPI_Group_incl`` / ``_excl`` / ``_range_incl`` / ``_range_excl``
  (groups from other calls are not followed; a communicator made from one is
  reported when an event uses it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core import TraceError
from .dumpi_bin_layout import LABEL, RECORDS

__all__ = ["RankSides", "comm_table", "group_expression", "rank_sides"]

_DUP, _SPLIT, _CART, _CREATE = LABEL["MPI_Comm_dup"], LABEL["MPI_Comm_split"], LABEL["MPI_Cart_create"], \
    LABEL["MPI_Comm_create"]
_COMM_GROUP = LABEL["MPI_Comm_group"]
_GROUP_OPS = {LABEL[f"MPI_Group_{op}"]: op for op in ("incl", "excl", "range_incl", "range_excl")}
_GROUP_NULL = 1


def _fields(buf: np.ndarray, pos: int, layout: str, end: int) -> list:
    """The arguments of a side record (layouts of b/h/i/I/J fields only), checked against ``end``."""
    out: list = []

    def take(n: int) -> int:
        nonlocal pos
        if pos + n > end:
            raise IndexError
        v = int.from_bytes(bytes(buf[pos:pos + n]), "big", signed=n == 4)
        pos += n
        return v

    for c in layout:
        if c in "bhi":
            out.append(take({"b": 1, "h": 2, "i": 4}[c]))
        elif c == "I":
            out.append([take(4) for _ in range(max(take(4), 0))])
        elif c == "J":
            out.append([[take(4) for _ in range(max(take(4), 0))] for _ in range(max(take(4), 0))])
    return out


@dataclass
class RankSides:
    """What one rank's side records define: a key per local communicator index, and its creations.

    ``creations`` lists ``(key, order, group expression or None, where)``:
    ``where`` names the file and the byte offset (or text line) of the call.
    """

    rank: int
    path: str
    keys: dict[int, tuple] = field(default_factory=lambda: {0: ("world",)})
    creations: list[tuple[tuple, int | None, tuple | None, int]] = field(default_factory=list)


def rank_sides(rank: int, path: str, buf: np.ndarray, end: int, labels: np.ndarray, offsets: np.ndarray,
               comm: np.ndarray, new: np.ndarray) -> RankSides:
    """Keys of the communicators one rank created, from its side records (in stream order)."""
    st = RankSides(rank, path)
    created: Counter = Counter()
    groups: dict[int, tuple | None] = {}
    for label, off, a, nl in zip(labels.tolist(), offsets.tolist(), comm.tolist(), new.tolist(), strict=True):
        try:
            args = _fields(buf, off, RECORDS[label][1] or "", end)
        except IndexError:
            raise TraceError(f"{path}: byte {off}: {RECORDS[label][0]} record runs past the end of the "
                             "call stream") from None
        if label == _COMM_GROUP:
            groups[args[1]] = ("comm", st.keys[a]) if a >= 0 else None
        elif label in _GROUP_OPS:
            groups[args[3]] = group_expression(_GROUP_OPS[label], groups.get(args[0]), args[2])
        elif label in (_DUP, _SPLIT, _CART, _CREATE):
            parent = st.keys[a]
            k = created[parent]
            created[parent] += 1
            if nl < 0:
                continue
            color = args[1] if label == _SPLIT else 0
            key = (parent, k, color)
            st.keys[nl] = key
            expr = None
            if label == _CREATE:
                expr = groups.get(args[1])
                if expr is None:
                    raise TraceError(f"{path}: byte {off}: MPI_Comm_create: group {args[1]} was not made by "
                                     "MPI_Comm_group / MPI_Group_incl / _excl / _range_incl / _range_excl")
            st.creations.append((key, args[2] if label == _SPLIT else 0, expr, f"{path}: byte {off}"))
        else:  # union, intersection, difference: a group perfmod does not follow
            groups[args[2]] = None
    return st


def group_expression(op: str, base: tuple | None, ranks: Sequence) -> tuple | None:
    """The expression of a group made by ``MPI_Group_<op>`` (incl, excl, range_incl, range_excl) from ``base``.

    ``ranks`` are the listed ranks, or ``(first, last, stride)`` triples for
    the range forms; None when the base group is not followed.
    """
    if base is None:
        return None
    arg = tuple(map(tuple, ranks)) if op.startswith("range") else tuple(ranks)
    return (op, base, arg)


def _comms_in(expr: tuple) -> list[tuple]:
    """Communicator keys a group expression refers to."""
    return [expr[1]] if expr[0] == "comm" else _comms_in(expr[1])


def _evaluate(expr: tuple, members: dict[tuple, np.ndarray]) -> np.ndarray:
    """World ranks of a group expression (index = rank in the group)."""
    if expr[0] == "comm":
        return members[expr[1]]
    base = _evaluate(expr[1], members)
    op, arg = expr[0], expr[2]
    if op.startswith("range"):
        arg = tuple(r for first, last, stride in arg if stride
                    for r in range(first, last + (1 if stride > 0 else -1), stride))
    idx = np.asarray(arg, dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= base.size):
        raise IndexError
    if op.endswith("incl"):
        return base[idx]
    return np.delete(base, idx)


def comm_table(states: Sequence[RankSides], nprocs: int) -> tuple[dict[tuple, int], dict[int, np.ndarray]]:
    """Global ids (world = 0) and world members of every communicator the ranks created.

    A parent is resolved before its children; ids are given round by round
    in the order of the keys' ``repr``, as the text reader numbers them.
    """
    joined: dict[tuple, list[tuple[int, int]]] = {}
    exprs: dict[tuple, tuple[tuple, RankSides, int]] = {}
    for st in states:
        for key, order, expr, where in st.creations:
            joined.setdefault(key, []).append((order, st.rank))
            if expr is not None:
                exprs.setdefault(key, (expr, st, where))
    ids: dict[tuple, int] = {("world",): 0}
    members: dict[tuple, np.ndarray] = {("world",): np.arange(nprocs, dtype=np.int64)}
    comms: dict[int, np.ndarray] = {}
    todo = sorted(joined, key=repr)
    while todo:
        ready = [k for k in todo if k[0] in ids and (k not in exprs or all(c in ids for c in _comms_in(exprs[k][0])))]
        if not ready:
            break
        for key in ready:
            if key in exprs:
                expr, st, where = exprs[key]
                try:
                    ranks = _evaluate(expr, members)
                except IndexError:
                    raise TraceError(f"{where}: MPI_Comm_create: the group names ranks outside its base "
                                     "group") from None
                outside = sorted({r for _, r in joined[key]} - set(ranks.tolist()))
                if outside:
                    raise TraceError(f"{where}: MPI_Comm_create: world rank {outside[0]} got the new "
                                     "communicator but is not in its group")
            else:
                pos = {int(r): i for i, r in enumerate(members[key[0]])}
                ranked = sorted(joined[key], key=lambda m: (m[0], pos.get(m[1], m[1])))
                ranks = np.array([r for _, r in ranked], dtype=np.int64)
            ids[key] = len(ids)
            members[key] = ranks
            comms[ids[key]] = ranks
        todo = [k for k in todo if k not in ids]
    return ids, comms
