"""Every path write_trace writes reads back with read_trace: with the format's extension, without one
(``format=`` given), and through the path write_trace returns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfmod.apps.traces import synthetic
from perfmod.trace import read_trace, write_trace
from perfmod.trace.formats import detect_format
from perfmod.trace.formats.textio import FormatError

WRITABLE = ("npz", "otf2", "tit", "goal")


def _p2p_bytes(t) -> int:
    from perfmod.trace.core import Call

    sends = np.isin(t.call, [Call.SEND, Call.ISEND, Call.SSEND, Call.ISSEND])
    return int(t.nbytes[sends].sum())


@pytest.mark.parametrize("fmt", WRITABLE)
@pytest.mark.parametrize("name", ["x.{fmt}", "plain"])
def test_write_trace_reads_back(tmp_path, fmt, name):
    if fmt == "otf2":
        pytest.importorskip("otf2")
    t = synthetic("jacobi2d", 4, 2)
    path = tmp_path / name.format(fmt=fmt)
    written = write_trace(t, path, format=fmt)
    readable = [written] + ([path] if path.suffix else [])  # a named file reads back by the name it was given
    for p in readable:
        back = read_trace(p)
        assert back.nprocs == t.nprocs, p
        if fmt == "goal":  # a schedule spells collectives as messages: the point-to-point bytes and more
            assert _p2p_bytes(back) > _p2p_bytes(t)
        else:
            counts = {k: v for k, v in back.counts().items() if k not in ("MPI_Init", "MPI_Finalize")}  # TIT adds
            assert _p2p_bytes(back) == _p2p_bytes(t) and counts == t.counts(), p


def test_an_otf2_anchor_name_is_the_anchor(tmp_path):
    pytest.importorskip("otf2")
    t = synthetic("jacobi2d", 4, 1)
    written = write_trace(t, tmp_path / "x.otf2", format="otf2")
    assert written == tmp_path / "x.otf2" and written.is_file()
    assert (tmp_path / "x.def").is_file() and (tmp_path / "x").is_dir()
    again = write_trace(t, tmp_path / "x.otf2")  # overwriting replaces the archive
    assert read_trace(again).counts() == t.counts()


DATA = Path(__file__).parent / "data"


SIMGRID_REPLAY = DATA / "simgrid-replay"  # SimGrid's examples/smpi/replay, as SimGrid ships it (README there)


def test_a_split_trace_index_with_names_relative_to_the_replay_directory(tmp_path, monkeypatch):
    """SimGrid's examples/smpi/replay/split_traces lists replay/actions0.txt and replay/actions1.txt, which the
    replay opens relative to the directory it runs in (examples/smpi), not to the index."""
    from perfmod.trace.core import Call

    monkeypatch.chdir(SIMGRID_REPLAY)  # as smpirun runs it: replay/replay/actions0.txt does not exist
    # rank 1 runs on Jupiter (76.296 Mflop/s in SimGrid's small_platform.xml): SimGrid's replay prints
    # "1 compute 1e9 13.106847" for its compute line (replay.tesh, and our run of SimGrid 3.32: README)
    t = read_trace(SIMGRID_REPLAY / "replay" / "split_traces", flop_rate=76.296e6)
    assert detect_format("replay/split_traces") == "tit" and t.nprocs == 2
    assert t.counts() == {"MPI_Init": 2, "MPI_Send": 2, "MPI_Recv": 2, "MPI_Isend": 1, "MPI_Irecv": 1,
                          "MPI_Wait": 1, "MPI_Finalize": 2}
    assert _p2p_bytes(t) == 3 * 10**6  # "send 1 0 1e6", "send 1 2 1e6" on rank 0, "isend 0 1 1e6" on rank 1
    r0, r1 = t.rank_events(0), t.rank_events(1)
    assert t.call[r0].tolist() == [Call.INIT, Call.SEND, Call.RECV, Call.SEND, Call.FINALIZE]  # actions0.txt
    assert t.tag[r0].tolist() == [0, 0, 1, 2, 0] and t.line[r0].tolist() == [1, 2, 3, 4, 5]
    assert t.call[r1].tolist() == [Call.INIT, Call.RECV, Call.ISEND, Call.IRECV, Call.WAIT, Call.FINALIZE]
    assert t.line[r1].tolist() == [1, 2, 4, 5, 6, 7]  # line 3, "1 compute 1e9", is the isend's compute
    assert t.compute[r1][2] == pytest.approx(13.106847, abs=5e-7) and t.compute.sum() == t.compute[r1][2]
    # the same files laid out with their names relative to the index also read, from anywhere
    index = tmp_path / "idx" / "split_traces"
    (index.parent / "replay").mkdir(parents=True)
    for name in ("split_traces", "actions0.txt", "actions1.txt"):
        src = SIMGRID_REPLAY / "replay" / name
        (index.parent / ("" if name == "split_traces" else "replay") / name).write_bytes(src.read_bytes())
    monkeypatch.chdir(tmp_path)
    back = read_trace(index, flop_rate=76.296e6)
    assert back.counts() == t.counts() and np.array_equal(back.compute, t.compute)
    assert np.array_equal(back.nbytes, t.nbytes) and np.array_equal(back.peer, t.peer)
    # from a directory where the names resolve neither way: the index and both places are named
    monkeypatch.chdir(tmp_path / "idx" / "replay")
    with pytest.raises(FormatError, match=r"split_traces:1: an index of per-rank traces whose first file "
                                          r"'replay/actions0.txt' is neither beside the index"):
        read_trace(SIMGRID_REPLAY / "replay" / "split_traces", format="tit")


def test_a_lone_dumpi_text_file_with_its_header_is_detected():
    """sst-dumpi's dumpi2ascii -H -S -X of one rank file of a real libdumpi trace (tests/data/dumpi-lone,
    README there) opens with its header record (version=, starttime=, hostname=, username=, meshdim=,
    meshsize=, meshcrd=); the file alone, without its .meta and named without "dumpi", is still DUMPI."""
    from perfmod.trace.core import Call

    lone = DATA / "dumpi-lone"
    head = (lone / "comm_create-0002.txt").read_text().splitlines()[:8]
    assert head[:2] == ["version=13.0.0", "starttime=Mon Nov 23 23:24:52 2026"] and head[7].startswith("MPI_Init ")
    assert detect_format(lone / "comm_create-0002.txt") == "dumpi" == detect_format(lone / "comm_create-0000.txt")
    # world rank 2 is left out of the MPI_Comm_create (comm_create.c): its file alone has only world calls
    t = read_trace(lone / "comm_create-0002.txt")
    assert t.nprocs == 4 and t.rank.tolist() == [2, 2, 2]  # MPI_Comm_size's size=4; the other ranks have no events
    assert t.call.tolist() == [Call.INIT, Call.ALLREDUCE, Call.FINALIZE] and t.nbytes.tolist() == [0, 8, 0]
    assert t.line.tolist() == [8, 41, 47]  # after the 7 header lines
    assert t.t_entry.tolist() == [366_280_253_189, 366_292_046_717, 366_312_055_503]  # "at walltime 366.280253189"
    assert "one rank's file read alone (world of 4 ranks)" in t.meta["notes"][0]
    # the same events as the binary reader reads for rank 2 from the whole trace
    full = read_trace(next((DATA / "dumpi-bin" / "comm_create").glob("*.meta")))
    r2 = full.rank_events(2)
    for col in ("call", "nbytes", "peer", "t_entry", "t_exit"):
        assert np.array_equal(getattr(full, col)[r2], getattr(t, col)), col
    # rank 0 is in the new communicator, whose members are in the other ranks' files
    with pytest.raises(FormatError, match=r"comm_create-0000.txt:39: a rank file read alone: this call uses a "
                                          r"communicator made with other ranks"):
        read_trace(lone / "comm_create-0000.txt")
