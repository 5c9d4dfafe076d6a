"""Schedules written by LogGOPSim's Schedgen replay with LogGOPSim's own finishing times, to the nanosecond.

The files and LogGOPSim's times of them are in ``tests/data/schedgen/`` (its README says how both were made);
this test reads the README's table, so the numbers live in one place."""

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_replay_loggops import platform as ns_platform

from perfmod.replay.loggops import goal_finish_times
from perfmod.trace.formats import detect_format
from perfmod.trace.formats.goal_scan import read_goal_graph

DATA = Path(__file__).parent / "data" / "schedgen"
ROWS = re.findall(r"^\| `([\w.]+)` \| `([^`]+)` \| ([\d ]+) \|$", (DATA / "README.md").read_text(), flags=re.M)


def test_the_readme_lists_every_schedule():
    assert sorted(f for f, _, _ in ROWS) == sorted(p.name for p in DATA.glob("*.goal"))
    assert len(ROWS) == 10


@pytest.mark.parametrize("name, options, times", ROWS, ids=[r[0] for r in ROWS])
def test_schedgen_schedules_replay_with_loggopsims_finishing_times(name, options, times):
    path = DATA / name
    assert detect_format(path) == "goal"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # zero-byte messages too, where o and g are at least G: no warning
        got = goal_finish_times(path, ns_platform(2500, 1500, 1000, 6, 65535)).total_time
    assert np.rint(got / 1e-9).astype(np.int64).tolist() == [int(t) for t in times.split()]


def test_block_comments_are_skipped_where_a_statement_may_start_and_across_lines(tmp_path):
    """LogGOPSim's txt2bin takes ``/* ... */`` where a statement may start, over several lines (Schedgen's
    ``resnet`` writes them); one left open is named with the line it opened on."""
    from perfmod.trace.core import TraceError

    g = read_goal_graph(DATA / "resnet_2_1000.goal")
    assert g.num_ranks == 2 and len(g) == 82
    p = tmp_path / "c.goal"
    p.write_text("num_ranks 2\n/* a\nmulti-line\ncomment */\nrank 0 {\n/* one */ /* two */ l1: calc 5\n// line\n"
                 "l2: send 8b to 1 tag 0\n/**/\nl2 requires l1\n}\nrank 1 {\n/*/ still a comment\n*/\n"
                 "x: recv 8b from 0 tag 0\n}\n")
    g = read_goal_graph(p)
    assert g.line.tolist() == [6, 8, 15] and g.kind.tolist() == [3, 1, 2] and g.ndeps.tolist() == [0, 1, 0]
    p.write_text("num_ranks 1\nrank 0 {\nl1: calc 5\n/* open\n}\n")
    with pytest.raises(TraceError, match=r"c.goal: the comment opened with '/\*' on line 4 is not closed"):
        read_goal_graph(p)
    p.write_text("num_ranks 1\nrank 0 {\nl1: calc 5 /* not where a statement starts */\n}\n")
    with pytest.raises(TraceError, match=r"c.goal:3: rank 0: not a GOAL operation"):
        read_goal_graph(p)
