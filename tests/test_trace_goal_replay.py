"""GOAL schedules through the replay (issue 14 item 13): read_trace gives a Trace, replay runs it.

Closed forms under the ``loggp`` model (LogGOPS as LogGOPSim computes it,
:mod:`perfmod.replay.loggops`): Summit has no LogGP parameters, so L = alpha,
G = beta, o = g = 0 of its postal model, and a receive completes
``T(n) = o + L + (n - 1) G + o`` after its send started
(:func:`perfmod.models.comm.message.message_time`); an eager send is done for
its sender when it starts (plus o = 0 of CPU).
"""

import numpy as np
import pytest

from perfmod.apps.traces import synthetic
from perfmod.machine.platforms import load
from perfmod.models.comm.message import message_time
from perfmod.replay import replay
from perfmod.trace import Call, Trace, TraceError, read_trace
from perfmod.trace.formats.goal import read_goal, write_goal
from perfmod.trace.formats.goal_trace import goal_to_trace

SUMMIT = load("summit")

# LogGOPSim's txt2bin syntax (src/LogGOPSim/txt2bin.re): labels, sizes with 'b', to/from, tag, cpu, nic,
# requires / irequires, // comments
PINGPONG = """\
// ping-pong with compute on both sides
num_ranks 2

rank 0 {
l1: calc 1000
l2: send 8b to 1 tag 7 cpu 0 nic 0
l2 requires l1
l3: recv 8b from 1 tag 8
l3 requires l2
}

rank 1 {
r1: recv 8b from 0 tag 7
r2: calc 500 cpu 0
r2 requires r1
r3: send 8b to 0 tag 8
r3 requires r2
}
"""

EXCHANGE = """\
num_ranks 2

rank 0 {
c1: calc 1000
s: send 4096b to 1 tag 1
s requires c1
v: recv 4096b from -1 tag -1
v irequires c1
c2: calc 200
c2 requires s
c2 requires v
}

rank 1 {
c1: calc 1000
v: recv 4096b from 0 tag 1
v irequires c1
s: send 4096b to 0 tag 1
s requires c1
c2: calc 200
c2 requires v
c2 requires s
}
"""


def T(n: int) -> float:
    return float(message_time(float(n), "intra_socket", SUMMIT, model="loggp"))


def test_pingpong_closed_form(tmp_path):
    p = tmp_path / "pp.goal"
    p.write_text(PINGPONG)
    t = read_trace(p)
    assert isinstance(t, Trace) and t.nprocs == 2 and t.meta["format"] == "goal"
    r0, r1 = t.rank_events(0), t.rank_events(1)
    assert t.call[r0].tolist() == [Call.COMPUTE, Call.ISEND, Call.WAIT, Call.IRECV, Call.WAIT]
    assert t.call[r1].tolist() == [Call.IRECV, Call.WAIT, Call.COMPUTE, Call.ISEND, Call.WAIT]
    assert t.line[r0].tolist() == [5, 6, 6, 8, 8]
    ds = replay(read_trace(p), SUMMIT, model="loggp")
    # rank 0 computes 1 us, sends (T), rank 1 computes 0.5 us after the arrival and answers (T); rank 1's
    # eager answer is done when it starts (o = 0), rank 0 is done when the answer is in
    expect = 1e-6 + T(8) + 0.5e-6 + T(8)
    np.testing.assert_allclose(ds.total_time.values, [expect, expect - T(8)], rtol=1e-12)
    np.testing.assert_allclose(ds.compute_time.values, [1e-6, 0.5e-6], rtol=1e-12)


def test_exchange_with_irequires_and_wildcards(tmp_path):
    p = tmp_path / "x.goal"
    p.write_text(EXCHANGE)
    t = read_trace(p)
    # both messages posted together after the calc (in line order), one wait for both
    assert t.call[t.rank_events(0)].tolist() == [Call.COMPUTE, Call.ISEND, Call.IRECV, Call.WAITALL, Call.COMPUTE]
    assert t.call[t.rank_events(1)].tolist() == [Call.COMPUTE, Call.IRECV, Call.ISEND, Call.WAITALL, Call.COMPUTE]
    assert t.peer[t.call == Call.IRECV].tolist() == [-2, 0] and t.tag[t.call == Call.IRECV].tolist() == [-1, 1]
    ds = replay(t, SUMMIT, model="loggp")
    np.testing.assert_allclose(ds.total_time.values, [1e-6 + T(4096) + 0.2e-6] * 2, rtol=1e-12)
    np.testing.assert_allclose(ds.wait_time.values, [T(4096)] * 2, rtol=1e-12)


def test_perfmods_own_schedules_replay_like_the_trace_they_came_from(tmp_path):
    """write_goal's rounds, read back and replayed, give the replay of the original trace."""
    src = synthetic("jacobi2d", 16, 3, allreduces=0)
    p = write_goal(src, tmp_path / "j.goal")
    back = read_trace(p)
    a, b = replay(src, SUMMIT, model="loggp"), replay(back, SUMMIT, model="loggp")
    np.testing.assert_allclose(b.total_time.values, a.total_time.values, rtol=1e-9)
    assert int(b.messages.sum()) == int(a.messages.sum())


@pytest.mark.parametrize("text, match", [
    ("num_ranks 2\nrank 0 {\na: calc 5 cpu 1\n}\n", r"c.goal:3: rank 0: cpu 1 nic 0: perfmod's replay models one CPU"),
    ("num_ranks 2\nrank 0 {\na: send 8b to 1 nic 2\n}\n", r"c.goal:3: rank 0: cpu 0 nic 2"),
    ("num_ranks 2\nrank 0 {\na: send 8b to 5\n}\n", r"c.goal:3: rank 0: send peer 5 is outside 0..1"),
    ("num_ranks 1\nrank 0 {\na: calc 1\nb: calc 1\na requires b\nb requires a\n}\n",
     r"c.goal:3: rank 0: operation 'a' can never start: its dependencies form a cycle"),
])
def test_schedules_the_replay_cannot_take_are_named(tmp_path, text, match):
    p = tmp_path / "c.goal"
    p.write_text(text)
    assert read_goal(p).num_ranks >= 1  # valid GOAL for the parser
    with pytest.raises(TraceError, match=match):
        read_trace(p)


def test_goal_to_trace_of_a_parsed_schedule(tmp_path):
    p = tmp_path / "pp.goal"
    p.write_text(PINGPONG)
    t = goal_to_trace(read_goal(p), time_unit=1e-6)  # calc in microseconds
    assert t.compute[t.call == Call.COMPUTE].tolist() == [1000e-6, 500e-6]
