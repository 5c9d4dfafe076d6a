"""OTF2 reader and writer (the otf2 package from PyPI): round trips, Score-P byte accounting, errors."""

from pathlib import Path

import numpy as np
import pytest

from perfmod.apps.traces import synthetic
from perfmod.replay import replay
from perfmod.trace import Call, TraceBuilder, TraceError
from perfmod.trace.formats.dumpi import read_dumpi
from perfmod.trace.formats.otf2 import read_otf2, write_otf2

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


def test_damaged_event_file_is_named(tmp_path):
    write_otf2(synthetic("jacobi2d", 4, 2), tmp_path / "a")
    evt = sorted((tmp_path / "a" / "traces").glob("*.evt"))[0]
    evt.write_bytes(evt.read_bytes()[: len(evt.read_bytes()) // 2])
    with pytest.raises(TraceError, match=r"traces.otf2: OTF2 event data unreadable"):
        read_otf2(tmp_path / "a")
