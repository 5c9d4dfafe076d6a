"""OTF2 reader and writer (the otf2 package from PyPI): round trips, Score-P byte accounting, errors."""

from pathlib import Path

import numpy as np
import pytest

from perfmod.apps.traces import synthetic
from perfmod.replay import replay
from perfmod.trace import Call, TraceBuilder, TraceError, TraceWarning
from perfmod.trace.formats.dumpi import read_dumpi
from perfmod.trace.formats.otf2 import _damaged_event_file, read_otf2, write_otf2

DUMPI_DATA = Path(__file__).parent / "data" / "dumpi"
COLUMNS = ("rank", "seq", "call", "peer", "nbytes", "tag", "comm", "request", "aux_ptr", "aux")


def _same(a, b, cols=COLUMNS):
    for col in cols:
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col), err_msg=col)


def test_round_trip_dumpi_fixture_exact(tmp_path):
    """Times, wildcards, a split communicator, Sendrecv and Waitall come back unchanged (exact ns)."""
    t = read_dumpi(DUMPI_DATA)
    anchor = write_otf2(t, tmp_path / "arch")
    assert anchor.name == "traces.otf2" and anchor.is_file()
    back = read_otf2(tmp_path / "arch")
    _same(t, back, COLUMNS + ("t_entry", "t_exit", "compute"))
    assert back.comms[1].tolist() == [1, 0]


def test_round_trip_synthetic_without_times(tmp_path):
    t = synthetic("minife", 6, 2)
    t = t.with_compute(np.linspace(0, 2e-3, len(t)))
    back = read_otf2(write_otf2(t, tmp_path / "m"))
    _same(t, back)
    np.testing.assert_allclose(back.compute, t.compute, atol=1e-9)  # the synthetic clock ticks in ns
    a, b = replay(t, "lassen", model="kmodel"), replay(back, "lassen", model="kmodel")
    # same replay up to the 1 ns rounding of each compute gap (26 events per rank: < 13 ns)
    np.testing.assert_allclose(b["comm_time"].values, a["comm_time"].values, rtol=0, atol=13e-9)


def test_collective_bytes_follow_scorep_accounting(tmp_path):
    otf2 = pytest.importorskip("otf2")
    b = TraceBuilder(4)
    for r in range(4):
        b.append(r, "bcast", peer=2, nbytes=400)
        b.append(r, "allreduce", nbytes=16)
        b.append(r, "alltoall", nbytes=10)
        b.append(r, "alltoallv", nbytes=6, aux=[1, 2, 3, 0] if r == 3 else [0, 2, 2, 2])
    t = b.build()
    write_otf2(t, tmp_path / "c")
    ends = {}
    with otf2.reader.open(str(tmp_path / "c" / "traces.otf2")) as tr:
        for loc, ev in tr.events:
            if type(ev).__name__ == "MpiCollectiveEnd" and loc.group.name == "MPI Rank 2":
                ends[str(ev.collective_op).split(".")[-1]] = (ev.size_sent, ev.size_received)
    # the unit tests of Score-P's scorep_mpi_coll_bytes_*: root of a bcast sends P*N, everyone receives N
    assert ends == {"BCAST": (1600, 400), "ALLREDUCE": (64, 64), "ALLTOALL": (30, 30), "ALLTOALLV": (6, 6)}
    back = read_otf2(tmp_path / "c")
    np.testing.assert_array_equal(back.nbytes, t.nbytes)
    # alltoallv per-destination counts are not in OTF2: even split over the other ranks
    i = int(np.flatnonzero((back.rank == 3) & (back.call == Call.ALLTOALLV))[0])
    assert back.aux_of(i).tolist() == [2, 2, 2, 0]


def test_unknown_mpi_regions(tmp_path):
    b = TraceBuilder(1, other_names=["MPI_Comm_rank"])
    b.append(0, "init", t_entry=0, t_exit=10)
    b.append(0, "other", peer=0, t_entry=20, t_exit=25)
    b.append(0, "finalize", t_entry=40, t_exit=50)
    write_otf2(b.build(), tmp_path / "u")
    t = read_otf2(tmp_path / "u")
    assert t.counts() == {"MPI_Init": 1, "MPI_Finalize": 1} and t.meta["unknown_calls"] == {"MPI_Comm_rank": 1}
    assert t.compute[1] == pytest.approx(30e-9)  # the skipped call's time is compute
    assert read_otf2(tmp_path / "u", unknown="keep").other_names == ("MPI_Comm_rank",)
    with pytest.raises(Exception, match="rank 0: MPI call MPI_Comm_rank not modelled"):
        read_otf2(tmp_path / "u", unknown="error")


def test_bad_archives_are_named(tmp_path):
    with pytest.raises(Exception, match="no OTF2 anchor file"):
        read_otf2(tmp_path / "missing")
    bad = tmp_path / "bad.otf2"
    bad.write_text("not an otf2 anchor\n")
    with pytest.raises(Exception, match="bad.otf2: not a readable OTF2 archive"):
        read_otf2(bad)


def test_damaged_event_file_is_named(tmp_path, capfd):
    write_otf2(synthetic("jacobi2d", 4, 2), tmp_path / "a")
    evt = tmp_path / "a" / "traces" / "2.evt"
    evt.write_bytes(evt.read_bytes()[: len(evt.read_bytes()) // 2])
    capfd.readouterr()
    with pytest.raises(TraceError, match=r"a/traces/2.evt: OTF2 event data unreadable \(truncated or corrupt\): "
                       r".*the OTF2 library said: .*error"):
        read_otf2(tmp_path / "a")
    assert capfd.readouterr().err == ""  # the C library's messages are in the error, not on the terminal


def test_event_file_with_fewer_events_than_declared_is_named(tmp_path):
    """A well-formed event file that ends early (here one of a 1-iteration run) is named in a warning."""
    import otf2

    full, one = synthetic("jacobi2d", 4, 2), synthetic("jacobi2d", 4, 1)
    declared = {}
    for name, trace in (("a", full), ("b", one)):
        write_otf2(trace, tmp_path / name)
        with otf2.reader.open(str(tmp_path / name / "traces.otf2")) as tr:
            declared[name] = {loc._ref: loc.number_of_events for loc in tr.definitions.locations}
    assert declared["b"][2] < declared["a"][2]
    (tmp_path / "a" / "traces" / "2.evt").write_bytes((tmp_path / "b" / "traces" / "2.evt").read_bytes())
    with pytest.warns(TraceWarning, match=rf"a/traces/2.evt: {declared['b'][2]} events read, {declared['a'][2]} "
                      r"declared in the archive's definitions: the file is truncated, or holds records"):
        t = read_otf2(tmp_path / "a")
    calls = np.diff(t.rank_ptr)  # the trace is what could be read: rank 2 as in the 1-iteration run, the rest whole
    assert calls.tolist() == [*np.diff(full.rank_ptr)[:2], np.diff(one.rank_ptr)[2], np.diff(full.rank_ptr)[3]]
    # the search run after a library error finds the same file by its count (reading it alone raises nothing)
    assert _damaged_event_file(tmp_path / "a" / "traces.otf2", declared["a"]) == tmp_path / "a" / "traces" / "2.evt"


def _scorep_like(path, ranks, calls):
    """An archive laid out as Score-P writes it (otf2 package): world and a COMM_SELF group of 0 members."""
    import otf2
    from otf2.enums import GroupType, Paradigm, RegionRole

    with otf2.writer.open(str(path), timer_resolution=1_000_000_000) as w:
        d = w.definitions
        node = d.system_tree_node("node")
        locs = [d.location("Master thread", group=d.location_group(f"MPI Rank {r}", system_tree_parent=node))
                for r in range(ranks)]
        d.group("MPI_COMM_WORLD locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
        comms = {"world": d.comm("MPI_COMM_WORLD", group=d.group("MPI_COMM_WORLD", group_type=GroupType.COMM_GROUP,
                                                                  paradigm=Paradigm.MPI, members=list(range(ranks)))),
                 "self": d.comm("MPI_COMM_SELF", group=d.group("MPI_COMM_SELF", group_type=GroupType.COMM_SELF,
                                                               paradigm=Paradigm.MPI, members=[]))}
        regions = {name: d.region(name, paradigm=Paradigm.MPI if name.startswith("MPI") else Paradigm.CUDA,
                                  region_role=RegionRole.COLL_ALL2ALL if name == "MPI_Allreduce" else
                                  RegionRole.FUNCTION) for name in ("main", "MPI_Allreduce", "cudaMemcpy")}
        for r in range(ranks):
            ew = w.event_writer_from_location(locs[r])
            ew.enter(0, regions["main"])
            for k, (name, comm) in enumerate(calls):
                t = 1000 * (k + 1)
                ew.enter(t, regions[name])
                if name == "MPI_Allreduce":
                    ew.mpi_collective_begin(t + 1)
                    ew.mpi_collective_end(t + 2, otf2.CollectiveOp.ALLREDUCE, comms[comm], 0xFFFFFFFF, 8, 8)
                ew.leave(t + 100, regions[name])
            ew.leave(1000 * (len(calls) + 1), regions["main"])
    return path / "traces.otf2"


def test_comm_self_group_of_zero_members(tmp_path):
    """Issue 14 item 5: Score-P stores one-rank communicators as a COMM_SELF group of zero members."""
    t = read_otf2(_scorep_like(tmp_path / "s", 2, [("MPI_Allreduce", "self"), ("MPI_Allreduce", "world")]))
    assert t.call.tolist() == [Call.ALLREDUCE] * 4
    assert t.comm.tolist() == [1, 0, 2, 0] and {k: v.tolist() for k, v in t.comms.items()} == {1: [0], 2: [1]}
    assert t.nbytes.tolist() == [8, 4, 8, 4]  # Score-P's accounting: P x N sent, P = 1 on COMM_SELF, 2 on world
    ds = replay(t, "summit", "postal")
    assert ds.collective_time.values.tolist() == pytest.approx([ds.collective_time.values[0]] * 2)


def test_archive_without_mpi_events_warns(tmp_path):
    from perfmod.trace import TraceWarning

    with pytest.warns(TraceWarning, match=r"traces.otf2: no MPI events in this OTF2 archive \(0 events on 1 ranks"):
        t = read_otf2(_scorep_like(tmp_path / "gpu", 1, [("cudaMemcpy", "world")] * 3))
    assert len(t) == 0
