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


def test_a_split_trace_index_with_names_relative_to_the_replay_directory(tmp_path, monkeypatch):
    """SimGrid's examples/smpi/replay/split_traces lists actions0.txt and actions1.txt, opened by the replay
    relative to the directory it runs in; rank 0's lines are those of its actions0.txt."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "actions0.txt").write_text("0 init\n0 send 1 0 1e6\n0 recv 1 1 1e6\n0 send 1 2 1e6\n0 finalize\n")
    (run / "actions1.txt").write_text("1 init\n1 recv 0 0 1e6\n1 send 0 1 1e6\n1 recv 0 2 1e6\n1 finalize\n")
    (tmp_path / "index").mkdir()
    index = tmp_path / "index" / "split_traces"
    index.write_text("actions0.txt\nactions1.txt\n")
    monkeypatch.chdir(run)
    t = read_trace(index)
    assert t.nprocs == 2 and t.counts()["MPI_Send"] == 3 and _p2p_bytes(t) == 3 * 10**6
    monkeypatch.chdir(tmp_path)  # names relative to the index also read
    (tmp_path / "index" / "actions0.txt").write_bytes((run / "actions0.txt").read_bytes())
    (tmp_path / "index" / "actions1.txt").write_bytes((run / "actions1.txt").read_bytes())
    assert read_trace(index).counts() == t.counts()


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
