"""Malformed text traces raise TraceError (naming file and line), never a bare exception or a huge allocation.

Seeded mutations (deleted, duplicated and corrupted lines) of valid DUMPI, TIT and GOAL text.
"""

import random
from pathlib import Path

import pytest

from perfmod.apps.traces import synthetic
from perfmod.trace import TraceError
from perfmod.trace.formats.dumpi import read_dumpi
from perfmod.trace.formats.goal import read_goal, write_goal
from perfmod.trace.formats.tit import read_tit, write_tit

DUMPI = Path(__file__).parent / "data" / "dumpi" / "jacobi-mini-0000.txt"
TOKENS = ["-1", "0", "x", "", "=", "[", "]", "1e309", "nan", "-5", "99999999999999999999", "MPI_Isend", "{", "}",
          "requires", "b", ".", ",", "wait", "(MPI_INT)"]


def _mutate(lines: list[str], rng: random.Random) -> list[str]:
    lines = list(lines)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        op = rng.random()
        if op < 0.3:
            del lines[i]
        elif op < 0.6:
            parts = lines[i].split(" ")
            parts[rng.randrange(len(parts))] = rng.choice(TOKENS)
            lines[i] = " ".join(parts)
        elif op < 0.8:
            lines.insert(i, lines[rng.randrange(len(lines))])
        else:
            k = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:k] + rng.choice(TOKENS) + lines[i][k:]
    return lines


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mutated_traces_fail_cleanly(tmp_path, seed):
    rng = random.Random(seed)
    write_tit(synthetic("jacobi2d", 2, 2), tmp_path / "src.tit")
    write_goal(synthetic("jacobi2d", 4, 1), tmp_path / "src.goal")
    sources = {
        "dumpi": (DUMPI.read_text().splitlines()[:47], lambda p: read_dumpi(p, nprocs=2)),  # Init .. Allreduce
        "tit": ((tmp_path / "src.tit").read_text().splitlines(), lambda p: read_tit(p, nprocs=2)),
        "goal": ((tmp_path / "src.goal").read_text().splitlines(), read_goal),
    }
    outcomes = {"ok": 0, "error": 0}
    for n in range(150):
        kind = rng.choice(sorted(sources))
        lines, read = sources[kind]
        p = tmp_path / f"m{n}-0000.{kind}"
        p.write_text("\n".join(_mutate(lines, rng)) + "\n")
        try:
            read(p)
            outcomes["ok"] += 1
        except TraceError as err:
            assert str(p.name) in str(err) or str(p) in str(err)
            outcomes["error"] += 1
    assert outcomes["ok"] > 0 and outcomes["error"] > 0  # both valid and invalid mutations were exercised
