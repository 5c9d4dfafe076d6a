"""Every path write_trace writes reads back with read_trace: with the format's extension, without one
(``format=`` given), and through the path write_trace returns."""

from __future__ import annotations

import numpy as np
import pytest

from perfmod.apps.traces import synthetic
from perfmod.trace import read_trace, write_trace

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
