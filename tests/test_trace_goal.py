"""GOAL writer: hand-checked schedule, collective expansions, executability, parser errors."""

from collections import Counter, deque
from pathlib import Path

import pytest

from perfmod.apps.traces import synthetic
from perfmod.trace import Call, TraceBuilder
from perfmod.trace.core import ANY_SOURCE, ANY_TAG, PROC_NULL
from perfmod.trace.formats.dumpi import read_dumpi
from perfmod.trace.formats.goal import COLLECTIVE_TAG, GoalSchedule, collective_rounds, read_goal, write_goal
from perfmod.trace.formats.textio import FormatError

DUMPI_DATA = Path(__file__).parent / "data" / "dumpi"


def _execute(s: GoalSchedule) -> int:
    """Run the schedule with eager sends (a recv needs a matching earlier send); return ops executed.

    Raises AssertionError when some operation can never run (a cycle or an unmatched receive).
    """
    deps = [{lab: [b for a, b, _ in s.requires[r] if a == lab] for lab in s.ops[r]} for r in range(s.num_ranks)]
    done = [set() for _ in range(s.num_ranks)]
    inbox: dict[tuple[int, int, int], deque] = {}
    progress, sent = True, 0
    while progress:
        progress = False
        for r in range(s.num_ranks):
            for lab, op in s.ops[r].items():
                if lab in done[r] or any(d not in done[r] for d in deps[r][lab]):
                    continue
                if op.kind == "send":
                    sent += 1
                    inbox.setdefault((r, op.peer, op.tag), deque()).append((sent, op.size))
                elif op.kind == "recv":  # the earliest message that matches (-1: any source / any tag)
                    keys = [k for k, q in inbox.items() if q and k[1] == r and op.peer in (-1, k[0])
                            and op.tag in (-1, k[2])]
                    if not keys:
                        continue
                    q = inbox[min(keys, key=lambda k: inbox[k][0][0])]
                    assert q.popleft()[1] == op.size, f"rank {r} {lab}: size mismatch"
                done[r].add(lab)
                progress = True
    stuck = [(r, lab) for r in range(s.num_ranks) for lab in s.ops[r] if lab not in done[r]]
    assert not stuck, f"operations that never run: {stuck[:5]}"
    return sum(len(d) for d in done)


def test_hand_checked_schedule(tmp_path):
    b = TraceBuilder(2)
    b.append(0, "irecv", peer=1, nbytes=8, request=0, compute=1.5e-6)
    b.append(0, "isend", peer=1, nbytes=8, request=1)
    b.append(0, "waitall", aux=[0, 1])
    b.append(0, "barrier", compute=1e-6)
    b.append(1, "recv", peer=0, nbytes=8)
    b.append(1, "send", peer=0, nbytes=8, tag=0)
    b.append(1, "barrier")
    text = write_goal(b.build(), tmp_path / "a.goal").read_text().splitlines()
    t = COLLECTIVE_TAG
    assert text[0] == "num_ranks 2" and text[1].startswith("// GOAL schedule written by perfmod")
    assert text[2:] == [
        "",
        "rank 0 {",
        "l1: calc 1500",
        "l2: recv 8b from 1 tag 0", "l2 requires l1",
        "l3: send 8b to 1 tag 0", "l3 requires l1",
        "l4: calc 0", "l4 requires l1", "l4 requires l2", "l4 requires l3",
        "l5: calc 1000", "l5 requires l4",
        f"l6: send 0b to 1 tag {t}", "l6 requires l5",
        f"l7: recv 0b from 1 tag {t}", "l7 requires l5",
        "}", "",
        "rank 1 {",
        "l1: recv 8b from 0 tag 0",
        "l2: send 8b to 0 tag 0", "l2 requires l1",
        f"l3: send 0b to 0 tag {t}", "l3 requires l2",
        f"l4: recv 0b from 0 tag {t}", "l4 requires l2",
        "}"]
    s = read_goal(tmp_path / "a.goal")
    assert s.total_calc(0) == 2500 and _execute(s) == 11


def test_hand_checked_sendrecv_alltoallv_reduce_scatter(tmp_path):
    """Wildcards, MPI_PROC_NULL, per-peer alltoallv sizes and reduce-scatter as reduce + scatter, by hand."""
    b = TraceBuilder(2)
    b.append(0, "sendrecv", peer=1, nbytes=8, tag=3, aux=[ANY_SOURCE, 16, ANY_TAG], compute=2e-9)
    b.append(0, "alltoallv", aux=[1, 2])  # 1 byte to itself, 2 to rank 1
    b.append(0, "reduce_scatter", nbytes=5)
    b.append(0, "irecv", peer=PROC_NULL, nbytes=8, request=0)
    b.append(0, "wait", request=0)
    b.append(1, "sendrecv", peer=0, nbytes=16, tag=9, aux=[0, 8, 3])
    b.append(1, "alltoallv", aux=[3, 4])
    b.append(1, "reduce_scatter", nbytes=5)
    b.append(1, "ssend", peer=PROC_NULL, nbytes=8, compute=1e-9)
    text = write_goal(b.build(), tmp_path / "b.goal").read_text().splitlines()
    t = COLLECTIVE_TAG
    assert text[0] == "num_ranks 2" and text[1].startswith("// GOAL schedule written by perfmod")
    assert text[2:] == [
        "",
        "rank 0 {",
        "l1: calc 2",
        "l2: send 8b to 1 tag 3", "l2 requires l1",
        "l3: recv 16b from -1 tag -1", "l3 requires l1",
        "l4: calc 0", "l4 requires l2", "l4 requires l3",
        f"l5: send 2b to 1 tag {t}", "l5 requires l4",
        f"l6: recv 3b from 1 tag {t}", "l6 requires l4",  # what rank 1 sends to rank 0
        "l7: calc 0", "l7 requires l5", "l7 requires l6",
        f"l8: recv 5b from 1 tag {t}", "l8 requires l7",  # reduce to root 0
        f"l9: send 3b to 1 tag {t}", "l9 requires l8",  # scatter of ceil(5 / 2) bytes
        "}", "",
        "rank 1 {",
        "l1: send 16b to 0 tag 9",
        "l2: recv 8b from 0 tag 3",
        "l3: calc 0", "l3 requires l1", "l3 requires l2",
        f"l4: send 3b to 0 tag {t}", "l4 requires l3",
        f"l5: recv 2b from 0 tag {t}", "l5 requires l3",
        "l6: calc 0", "l6 requires l4", "l6 requires l5",
        f"l7: send 5b to 0 tag {t}", "l7 requires l6",
        f"l8: recv 3b from 0 tag {t}", "l8 requires l7",
        "l9: calc 1", "l9 requires l8",
        "}"]


@pytest.mark.parametrize("p", [1, 2, 3, 5, 6, 8, 12])
@pytest.mark.parametrize("call", [Call.BARRIER, Call.BCAST, Call.REDUCE, Call.ALLREDUCE, Call.ALLGATHER,
                                  Call.ALLTOALL, Call.GATHER, Call.SCATTER])
def test_collective_expansions_match_up(p, call):
    root = p // 2
    sends, recvs = Counter(), Counter()
    rounds = {}
    for v in range(p):
        rounds[v] = collective_rounds(call, v, p, root)
        for rnd in rounds[v]:
            for kind, x in rnd:
                assert 0 <= x < p and x != v
                (sends if kind == "send" else recvs)[(v, x) if kind == "send" else (x, v)] += 1
    assert sends == recvs
    if call == Call.BCAST:  # every rank but the root receives the data exactly once
        assert sorted(d for (_, d), k in recvs.items() for _ in range(k)) == [v for v in range(p) if v != root]
    if call == Call.ALLREDUCE and p & (p - 1) == 0 and p > 1:  # recursive doubling: log2 p exchange rounds
        assert all(len(rounds[v]) == p.bit_length() - 1 for v in range(p))
    if call == Call.BARRIER and p > 1:  # dissemination: ceil(log2 p) rounds
        assert all(len(rounds[v]) == (p - 1).bit_length() for v in range(p))


@pytest.mark.parametrize("p", [2, 3, 5, 6, 7, 8, 12, 16])
def test_reduce_is_the_bcast_reversed_with_sends_and_receives_swapped(p):
    swap = {"send": "recv", "recv": "send"}
    for root in sorted({0, 1, p // 2, p - 1}):
        sends = Counter()
        for v in range(p):
            bcast = collective_rounds(Call.BCAST, v, p, root)
            reduce = collective_rounds(Call.REDUCE, v, p, root)
            assert reduce == [[(swap[k], x) for k, x in rnd] for rnd in reversed(bcast)]
            for rnd in reduce:
                sends[v] += sum(k == "send" for k, _ in rnd)
            if v != root:  # a non-root rank sends its partial result once, in its last round
                assert reduce[-1] == [("send", reduce[-1][0][1])]
        assert sends == Counter({v: 1 for v in range(p) if v != root})
        assert len(collective_rounds(Call.REDUCE, root, p, root)) == (p - 1).bit_length()  # root: ceil(lg p) receives


def test_binomial_reduce_hand_checked():
    # MPICH's binomial reduce over 8 ranks, root 2 (relative ranks rel = (v - 2) % 8):
    # rel 0 receives from rel 1, 2, 4; rel 6 receives from rel 7 and sends to rel 4; rel 5 sends to rel 4.
    assert collective_rounds(Call.REDUCE, 2, 8, 2) == [[("recv", 3)], [("recv", 4)], [("recv", 6)]]
    assert collective_rounds(Call.REDUCE, 0, 8, 2) == [[("recv", 1)], [("send", 6)]]
    assert collective_rounds(Call.REDUCE, 7, 8, 2) == [[("send", 6)]]


@pytest.mark.parametrize("app, nprocs", [("jacobi2d", 9), ("minife", 6), ("minimd", 8)])
def test_synthetic_traces_give_executable_schedules(tmp_path, app, nprocs):
    t = synthetic(app, nprocs, 2)
    s = read_goal(write_goal(t, tmp_path / f"{app}.goal"))
    assert s.num_ranks == nprocs
    assert s.messages("send") == s.messages("recv")
    p2p = [(int(t.rank[i]), int(t.peer[i]), int(t.nbytes[i])) for i in range(len(t))
           if t.call[i] in (Call.ISEND, Call.SEND)]
    got = [(a, b, n) for a, b, tag, n in s.messages("send") if tag < COLLECTIVE_TAG]
    assert sorted(p2p) == sorted(got)
    _execute(s)


def test_dumpi_fixture_with_split_communicator(tmp_path):
    t = read_dumpi(DUMPI_DATA)
    s = read_goal(write_goal(t, tmp_path / "d.goal"))
    _execute(s)
    # the Bcast on the split communicator [1, 0] has root 0 there = world rank 1
    bc = [m for m in s.messages("send") if m[2] == COLLECTIVE_TAG + 1 and m[3] == 12]
    assert bc == [(1, 0, COLLECTIVE_TAG + 1, 12)]
    # the compute gaps survive as calc in ns (rank 0: sum of its rounded gaps)
    assert s.total_calc(0) == pytest.approx(sum(t.compute[:10]) * 1e9, abs=10)


@pytest.mark.parametrize("text, match", [
    ("rank 0 {\n}\n", r"g.goal:1: expected 'num_ranks N' first"),
    ("num_ranks 1\nrank 1 {\n}\n", r"g.goal:2: rank 1 >= num_ranks 1"),
    ("num_ranks 1\nrank 0 {\nl1: send 8 to 0 tag 0\n}\n", r"g.goal:3: rank 0: not a GOAL operation"),
    ("num_ranks 1\nrank 0 {\nl1: send 8b from 0 tag 0\n}\n", r"g.goal:3: rank 0: send takes 'to'"),
    ("num_ranks 1\nrank 0 {\nl1: calc 5\nl2 requires l1\n}\n", r"g.goal:4: rank 0: dependency on undefined label"),
    ("num_ranks 1\nrank 0 {\nl1: calc 5\nl1: calc 6\n}\n", r"g.goal:4: rank 0: label 'l1' defined twice"),
    ("num_ranks 1\nrank 0 {\nl1: calc 5\n", r"rank 0 block is not closed"),
])
def test_parser_errors_name_file_and_line(tmp_path, text, match):
    p = tmp_path / "g.goal"
    p.write_text(text)
    with pytest.raises((FormatError, Exception), match=match):
        read_goal(p)


def _loggopsim():
    """txt2bin and LogGOPSim built from github.com/spcl/LogGOPSim, in $PERFMOD_LOGGOPSIM (else skip)."""
    import os
    import shutil

    d = os.environ.get("PERFMOD_LOGGOPSIM")
    tools = [Path(d) / "txt2bin", Path(d) / "LogGOPSim"] if d else []
    if not tools or not all(t.is_file() and shutil.which(str(t)) for t in tools):
        pytest.skip("set PERFMOD_LOGGOPSIM to a directory with LogGOPSim's txt2bin and LogGOPSim binaries")
    return tools


def test_loggopsim_accepts_and_finishes_the_schedules(tmp_path):
    import subprocess

    txt2bin, sim = _loggopsim()
    b = TraceBuilder(2)
    b.append(0, "send", peer=1, nbytes=8)
    b.append(0, "recv", peer=1, nbytes=8)
    b.append(1, "recv", peer=0, nbytes=8)
    b.append(1, "send", peer=0, nbytes=8)
    cases = {"pingpong": b.build(), "jacobi": synthetic("jacobi2d", 16, 3), "minimd": synthetic("minimd", 12, 2),
             "dumpi": read_dumpi(DUMPI_DATA)}
    for name, trace in cases.items():
        goal, binary = tmp_path / f"{name}.goal", tmp_path / f"{name}.bin"
        write_goal(trace, goal)
        subprocess.run([str(txt2bin), "-i", str(goal), "-o", str(binary)], check=True, capture_output=True)
        out = subprocess.run([str(sim), "-f", str(binary), "-b"], check=True, capture_output=True, text=True).stdout
        assert "receive queue" not in out, f"{name}: unmatched receives\n{out}"  # LogGOPSim lists leftovers
        if name == "pingpong":  # defaults L=2500, o=1500, G=6 ns: 2 x (o + L + 7 G + o) for 8 bytes
            import re

            assert int(re.search(r"Maximum finishing time at host \d+: (\d+)", out).group(1)) == 2 * (3000 + 2500 + 42)


def test_declared_ranks_are_not_allocated_up_front(tmp_path):
    p = tmp_path / "big.goal"
    p.write_text("num_ranks 99999999999\nrank 5 {\nl1: calc 7\n}\n")
    s = read_goal(p)
    assert s.num_ranks == 99999999999 and s.total_calc(5) == 7 and s.total_calc(0) == 0
