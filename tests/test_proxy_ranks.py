"""The MPI proxies' shared main(): abort every rank on a failure, probe the work, print one JSON line on rank 0."""

from __future__ import annotations

import json

import pytest

from perfmod.measure.interference import FIELDS
from perfmod.measure.proxies.ranks import or_abort, print_on_root, probed


class Comm:
    """A one-rank stand-in that records Abort (a real Abort ends the process)."""

    def __init__(self, rank: int = 0) -> None:
        self.rank, self.aborted = rank, []

    def Get_rank(self) -> int:  # noqa: N802
        return self.rank

    def Abort(self, code: int) -> None:  # noqa: N802
        self.aborted.append(code)

    def gather(self, value, root=0):
        return [value] if self.rank == root else None


def test_a_failing_rank_prints_its_traceback_and_aborts_all(capsys):
    comm = Comm()

    def boom():
        raise ValueError("rank failed")

    with pytest.raises(SystemExit):
        or_abort(comm, boom)
    assert comm.aborted == [1]
    assert "ValueError: rank failed" in capsys.readouterr().err
    assert or_abort(comm, lambda: 42) == 42 and comm.aborted == [1]


def test_probed_returns_result_wall_time_and_the_reports_on_rank_0_only():
    res, total, reports = probed(Comm(0), lambda: sum(range(10**5)))
    assert res == sum(range(10**5)) and total > 0
    assert set(reports) == set(FIELDS) and all(len(v) == 1 for v in reports.values())
    assert probed(Comm(1), lambda: 1)[2] is None


def test_only_rank_0_prints_one_json_line(capsys):
    print_on_root(Comm(1), {"a": 1})
    assert capsys.readouterr().out == ""
    print_on_root(Comm(0), {"a": 1, "b": float("nan")}, default=float)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and json.loads(out)["a"] == 1
