"""LogGOPSim's binary schedules (``txt2bin``'s ``.bin``): read as the GOAL text they were made from, replayed with
LogGOPSim's own finishing times, and refused with a clear error when damaged.

The fixtures (``tests/data/loggopsim-bin/``, its README) are GOAL texts and the ``.bin`` files LogGOPSim's own
``txt2bin`` wrote from them, with the finishing times LogGOPSim printed for them."""

import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_replay_loggops import platform as ns_platform

from perfmod.replay.loggops import goal_finish_times
from perfmod.replay.matching import ReplayError
from perfmod.trace.core import TraceError
from perfmod.trace.formats import detect_format, read_trace
from perfmod.trace.formats.goal_bin import MAGIC, NODE
from perfmod.trace.formats.goal_scan import read_goal_graph

DATA = Path(__file__).parent / "data" / "loggopsim-bin"
FIELDS = ("num_ranks", "rank", "kind", "size", "peer", "tag", "cpu", "nic", "ndeps", "succ_ptr", "succ", "ssucc_ptr",
          "ssucc")
#: LogGOPSim's finishing times (ns) of the fixtures with -L 2500 -o 1500 -g 1000 -G 6 -S 65535, read from the
#: README that records its output (one place for the numbers)
LOGGOPSIM_NS = {name: [int(t) for t in times.split(", ")] for name, times in
                re.findall(r"^- `(\w+)\.bin`: ([\d, ]+)$", (DATA / "README.md").read_text(), flags=re.M)}


def test_the_readme_records_loggopsims_times_of_both_binaries():
    assert sorted(LOGGOPSIM_NS) == ["halo", "small"]
    assert [len(v) for v in (LOGGOPSIM_NS["small"], LOGGOPSIM_NS["halo"])] == [3, 9]  # one per host


@pytest.mark.parametrize("name", ["small", "halo"])
@pytest.mark.parametrize("labels", [False, True])
def test_a_binary_schedule_reads_as_the_text_it_was_made_from(name, labels):
    text = read_goal_graph(DATA / f"{name}.goal", labels=labels)
    binary = read_goal_graph(DATA / f"{name}.bin", labels=labels)
    for f in FIELDS + (("pred_ptr", "pred", "pred_start") if labels else ()):
        a, b = getattr(text, f), getattr(binary, f)
        assert np.array_equal(a, b), f
        assert np.asarray(a).dtype == np.asarray(b).dtype, f
    assert (binary.line == -1).all() and (text.line > 0).all()
    if labels:
        assert binary.labels[:2] == ["op0", "op1"]


def test_the_small_schedule_has_what_its_text_says():
    g = read_goal_graph(DATA / "small.bin")
    assert g.num_ranks == 3 and len(g) == 9
    assert g.kind.tolist() == [3, 1, 2, 3, 2, 1, 1, 2, 3]
    assert g.size.tolist() == [100, 10, 2000, 7, 10, 2000, 64, 64, 50]
    assert g.peer.tolist() == [0, 1, -1, 0, 0, 0, 2, 1, 0]  # recv from -1: any source
    assert g.tag.tolist() == [0, 5, -1, 0, 5, 9, 1, -1, 0]  # Schedgen's 2**64 - 1 and -1: any tag
    # l1 is required by l2 and irequired by l3; b irequired by c
    assert g.succ[g.succ_ptr[0]:g.succ_ptr[1]].tolist() == [1]
    assert g.ssucc[g.ssucc_ptr[0]:g.ssucc_ptr[1]].tolist() == [2]
    assert g.ssucc[g.ssucc_ptr[5]:g.ssucc_ptr[6]].tolist() == [6]
    assert g.ndeps.tolist() == [0, 1, 1, 2, 0, 1, 1, 0, 1]
    assert g.where(5) == f"{DATA / 'small.bin'}: rank 1 operation 1"


@pytest.mark.parametrize("name", ["small", "halo"])
def test_a_binary_schedule_replays_with_loggopsims_own_finishing_times(name):
    plat = ns_platform(2500, 1500, 1000, 6, 65535)
    got = goal_finish_times(DATA / f"{name}.bin", plat).total_time
    assert np.rint(got / 1e-9).astype(np.int64).tolist() == LOGGOPSIM_NS[name]
    assert np.array_equal(got, goal_finish_times(DATA / f"{name}.goal", plat).total_time)


def test_a_binary_schedule_is_goal_whatever_its_extension_and_reads_as_a_trace(tmp_path):
    assert detect_format(DATA / "halo.bin") == "goal"
    other = tmp_path / "schedule.dat"
    other.write_bytes((DATA / "halo.bin").read_bytes())
    assert detect_format(other) == "goal"
    dumpi = next((Path(__file__).parent / "data" / "dumpi-bin" / "p2p_coll").glob("*.bin"))
    assert detect_format(dumpi) == "dumpi"  # DUMPI's .bin files keep their reader
    a, b = read_trace(DATA / "halo.bin"), read_trace(DATA / "halo.goal")
    for col in ("rank_ptr", "call", "peer", "tag", "nbytes", "compute"):
        assert np.array_equal(getattr(a, col), getattr(b, col)), col


def test_perfmod_replay_runs_a_binary_schedule_from_the_command_line():
    out = subprocess.run([sys.executable, "-m", "perfmod", "replay", str(DATA / "small.bin"), "--model", "loggp"],
                         capture_output=True, text=True, check=True).stdout
    text = subprocess.run([sys.executable, "-m", "perfmod", "replay", str(DATA / "small.goal"), "--model", "loggp"],
                          capture_output=True, text=True, check=True).stdout
    assert "3 ranks, 9 operations" in out
    assert out.splitlines()[-1] == text.splitlines()[-1]  # the finishing time


def _bytes():
    return bytearray((DATA / "small.bin").read_bytes())


def _node_at(buf, rank, k):
    """Byte offset of operation ``k`` of ``rank`` in a schedule."""
    start = struct.unpack_from("<Q", buf, 14 + 16 * rank)[0] + 8
    nroot = struct.unpack_from("<I", buf, start + 4)[0]
    return start + 8 + 4 * nroot + NODE.itemsize * k


def _field(name):
    return NODE.fields[name][1]


def _damaged(tmp_path, edit):
    buf = _bytes()
    edit(buf)
    p = tmp_path / "bad.bin"
    p.write_bytes(bytes(buf))
    return p


@pytest.mark.parametrize("edit, message", [
    (lambda b: struct.pack_into("<I", b, 8, 1000), "num_ranks 1000"),
    (lambda b: struct.pack_into("<Q", b, 14 + 16, 10**6), "rank 1: its data at bytes"),
    (lambda b: struct.pack_into("<B", b, _node_at(b, 0, 1) + _field("type"), 9), "rank 0 operation 1: type 9"),
    (lambda b: struct.pack_into("<I", b, _node_at(b, 1, 1) + _field("ndeps"), 4),
     "rank 1 operation 1: dependency count 4, but 1 operations"),
    (lambda b: struct.pack_into("<I", b, _node_at(b, 0, 0) + _field("nsucc"), 50), "rank 0 operation 0: nsucc 50"),
    (lambda b: struct.pack_into("<Q", b, _node_at(b, 2, 1) + _field("size"), 2**64 - 1),
     "rank 2 operation 1: size 18446744073709551615"),
])
def test_a_damaged_binary_schedule_is_refused_naming_rank_operation_and_field(tmp_path, edit, message):
    with pytest.raises(TraceError, match=message.replace("(", r"\(")):
        read_goal_graph(_damaged(tmp_path, edit))


def test_a_dependency_on_another_ranks_operation_is_refused(tmp_path):
    def edit(b):  # rank 0's first index: operation 1 -> 7, beyond rank 0's 4 operations
        app = _node_at(b, 0, 4)
        struct.pack_into("<I", b, app, 7)

    with pytest.raises(TraceError, match="rank 0 operation 0: nsucc: operation 7 is not one of its rank's 4"):
        read_goal_graph(_damaged(tmp_path, edit))


def test_a_truncated_binary_schedule_is_refused_at_every_length(tmp_path):
    whole = (DATA / "small.bin").read_bytes()
    p = tmp_path / "cut.bin"
    for n in range(8, len(whole)):
        p.write_bytes(whole[:n])
        with pytest.raises(TraceError, match=str(p)):
            read_goal_graph(p)
    assert whole[:8] == MAGIC.to_bytes(8, "little")


def test_an_operation_that_never_completes_is_named_by_rank_and_offset(tmp_path):
    def edit(b):  # rank 2's receive waits for tag 1 only: rank 1's message keeps tag 1, so make it tag 3
        struct.pack_into("<I", b, _node_at(b, 1, 2) + _field("tag"), 3)
        struct.pack_into("<I", b, _node_at(b, 2, 0) + _field("tag"), 1)

    with pytest.raises(ReplayError, match="rank 2: operation 0"):
        goal_finish_times(_damaged(tmp_path, edit), "summit")


def test_an_independent_operation_the_rank_does_not_list_is_refused(tmp_path):
    def edit(b):  # rank 2 lists its operation 0 as independent: name operation 1 instead, which requires it
        start = struct.unpack_from("<Q", b, 14 + 16 * 2)[0] + 8
        struct.pack_into("<I", b, start + 8, 1)

    with pytest.raises(TraceError, match="rank 2 operation 0: depends on nothing, but is not listed"):
        read_goal_graph(_damaged(tmp_path, edit))


LEFTOVERS = {  # schedules LogGOPSim does not run through: the ranks with an operation that never completes, and
    # the messages no receive takes (receiver, sender, tag)
    "eager message nobody receives": ("num_ranks 2\nrank 0 {\ns: send 10b to 1 tag 5\n}\nrank 1 {\nc: calc 10\n}\n",
                                      [], [(1, 0, 5)]),
    "receives that wait for the wrong tags": (
        "num_ranks 2\nrank 0 {\nl1: send 10b to 1 tag 5\nl2: recv 10b from 1 tag 7\n}\n"
        "rank 1 {\nl1: calc 10\nl2: recv 10b from 0 tag 6\n}\n", [0, 1], [(1, 0, 5)]),
    "rendezvous message nobody receives": ("num_ranks 2\nrank 0 {\ns: send 100000b to 1 tag 1\n}\nrank 1 {\n}\n",
                                           [0], [(1, 0, 1)]),  # the rendezvous send waits for its receive
}


@pytest.mark.parametrize("name", sorted(LEFTOVERS))
def test_messages_no_receive_took_are_reported_as_loggopsim_lists_them(tmp_path, name):
    """A GOAL schedule with messages no receive takes fails as LogGOPSim's does (it prints its unexpected queues
    and no times), even where every operation completes; the error names each message's receiver, sender, tag
    and send, and the receives that never complete."""
    text, stuck, messages = LEFTOVERS[name]
    p = tmp_path / "left.goal"
    p.write_text(text)
    with pytest.raises(ReplayError, match="messages no receive took") as err:
        goal_finish_times(p, ns_platform(2500, 1500, 1000, 6, 65535))
    got = [(d["rank"], d["from"], d["tag"]) for d in err.value.details if d.get("unexpected")]
    assert got == messages
    assert [d["rank"] for d in err.value.details if not d.get("unexpected")] == stuck
    assert "(the send at line 3 of rank 0)" in str(err.value)


@pytest.mark.parametrize("name", sorted(LEFTOVERS))
def test_leftover_messages_and_receives_are_loggopsims_own(tmp_path, name):
    """Against LogGOPSim (``PERFMOD_LOGGOPSIM``): the same receives left in its receive queues and messages in its
    unexpected queues, read from the binary its txt2bin wrote."""
    from test_replay_loggops import _loggopsim

    txt2bin, sim = _loggopsim()
    text, _, _ = LEFTOVERS[name]
    goal, binary = tmp_path / "left.goal", tmp_path / "left.bin"
    goal.write_text(text)
    subprocess.run([str(txt2bin), "-i", str(goal), "-o", str(binary)], check=True, capture_output=True)
    out = subprocess.run([str(sim), "-f", str(binary), "-L", "2500", "-o", "1500", "-g", "1000", "-G", "6", "-S",
                          "65535"], check=True, capture_output=True, text=True).stdout
    theirs: dict[str, list] = {"receive": [], "unexpected": []}
    for kind, host, body in re.findall(r"^(receive|unexpected) queue on host (\d+) contains \d+ elements!\n"
                                       r"((?: src: -?\d+, tag: -?\d+\n)+)", out, flags=re.M):
        theirs[kind] += [(int(host), int(s), int(t)) for s, t in re.findall(r"src: (-?\d+), tag: (-?\d+)", body)]
    assert "Times:" not in out
    with pytest.raises(ReplayError) as err:
        goal_finish_times(binary, ns_platform(2500, 1500, 1000, 6, 65535))
    mine = [(d["rank"], d["from"], d["tag"]) for d in err.value.details if d.get("unexpected")]
    assert mine == theirs["unexpected"]
    stuck = read_goal_graph(goal)
    posted = [(int(stuck.rank[v]), int(stuck.peer[v]), int(stuck.tag[v])) for v in np.flatnonzero(stuck.kind == 2)]
    assert sorted(theirs["receive"]) == sorted(posted)  # every receive of these schedules is left posted
