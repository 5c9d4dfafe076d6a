"""GOAL schedules of a 2D halo exchange with allreduces, written the way Schedgen writes rounds.

For comparing the ``loggp`` replay with LogGOPSim on schedules that are not
``write_goal``'s: each step of a rank (a ``calc``, the halo exchange, each
round of the allreduce) requires *every* operation of the step before it
(several ``requires`` lines, no join node), and a rank's sends and receives
of one step are independent of one another, so LogGOPSim runs whichever is
ready.  The allreduce is recursive doubling with MPICH's fold for a
non-power-of-two count (:func:`~perfmod.trace.formats.goal_graph.collective_rounds`).
"""

from __future__ import annotations

import os
from pathlib import Path

from perfmod.core.io import atomic_path
from perfmod.trace.core import Call
from perfmod.trace.formats.goal_graph import collective_rounds

__all__ = ["ANY_TAG_U64", "write_halo_goal"]

ANY_TAG_U64 = 18446744073709551615  #: the any-tag as LogGOPSim's Schedgen writes it (2**64 - 1)


def _neighbours(r: int, px: int, py: int, periodic: bool) -> list[int]:
    x, y = r % px, r // px
    out = []
    for dx, dy in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        nx, ny = x + dx, y + dy
        if periodic:
            nx, ny = nx % px, ny % py
        elif not (0 <= nx < px and 0 <= ny < py):
            continue
        if (nx, ny) != (x, y):
            out.append(ny * px + nx)
    return out


def write_halo_goal(path: str | os.PathLike, px: int, py: int, iterations: int, *, nbytes: int = 131072,
                    periodic: bool = True, calc: int = 0, calc_spread: int = 0, allreduce: bool = True,
                    allreduce_bytes: int = 8, any_tag: bool = False) -> Path:
    """Write the schedule of ``iterations`` halo exchanges on a ``px`` x ``py`` grid (see the module docstring).

    Parameters
    ----------
    path : path
        Destination (written atomically).
    px, py : int
        The grid; rank ``r`` sits at ``(r % px, r // px)``.
    iterations : int
        Halo exchanges (each followed by an allreduce when ``allreduce``).
    nbytes : int
        Bytes of each halo message.
    periodic : bool
        Wrap around the grid's edges (else edge ranks have fewer neighbours).
    calc, calc_spread : int
        A ``calc`` of ``calc + (r * 7919 % 13) * calc_spread`` time units before each exchange (none if 0).
    allreduce_bytes : int
        Bytes of each allreduce message.
    any_tag : bool
        Receives take any tag, written as Schedgen writes it (:data:`ANY_TAG_U64`).
    """
    p = px * py
    dest = Path(path)
    rtag = ANY_TAG_U64 if any_tag else None
    with atomic_path(dest) as tmp, open(tmp, "w") as f:
        f.write(f"// {px} x {py} halo exchange, {iterations} iterations, written by perfmod\nnum_ranks {p}\n")
        for r in range(p):
            steps = []
            for _ in range(iterations):
                if calc:
                    steps.append([f"calc {calc + (r * 7919 % 13) * calc_spread}"])
                nbs = _neighbours(r, px, py, periodic)
                steps.append([f"recv {nbytes}b from {nb} tag {0 if rtag is None else rtag}" for nb in nbs]
                             + [f"send {nbytes}b to {nb} tag 0" for nb in nbs])
                for rnd in collective_rounds(int(Call.ALLREDUCE), r, p) if allreduce else []:
                    steps.append([f"send {allreduce_bytes}b to {x} tag 1" if kind == "send" else
                                  f"recv {allreduce_bytes}b from {x} tag {1 if rtag is None else rtag}"
                                  for kind, x in rnd])
            f.write(_rank_block(r, steps))
    return dest


def _rank_block(r: int, steps: list[list[str]]) -> str:
    """Rank ``r``'s block: each step's operations require every operation of the last non-empty step."""
    lines = [f"\nrank {r} {{"]
    k = 0
    prev: list[int] = []
    for ops in steps:
        if not ops:
            continue
        now = []
        for text in ops:
            k += 1
            lines.append(f"l{k}: {text}")
            lines.extend(f"l{k} requires l{q}" for q in prev)
            now.append(k)
        prev = now
    lines.append("}\n")
    return "\n".join(lines)
