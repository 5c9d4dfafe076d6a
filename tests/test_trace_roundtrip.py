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


def test_a_lone_dumpi_text_file_with_its_header_is_detected(tmp_path):
    """dumpi2ascii -H opens its output with header lines (version=, starttime=, hostname=: the keys
    perfmod.trace.formats.dumpi skips); the file alone, without a .meta, is still DUMPI."""
    body = (DATA / "dumpi" / "jacobi-mini-0000.txt").read_text()
    lone = tmp_path / "rank0.txt"
    lone.write_text("version=1.0.0\nstarttime=1585900000\nhostname=node01\n" + body)
    assert detect_format(lone) == "dumpi"
    # the DUMPI reader reads it (and says why one rank's file of this trace is not enough: a derived communicator)
    with pytest.raises(FormatError, match=r"rank0.txt:\d+: a rank file read alone: this call uses a communicator"):
        read_trace(lone)
