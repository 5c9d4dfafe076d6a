"""DUMPI binary reader: equal to the text reader on libdumpi's own traces; bad input named by file and byte.

The fixtures (``tests/data/dumpi-bin``, see its README) are 4-rank runs
traced by sst-dumpi's libdumpi, with the ``dumpi2ascii -S -X`` text of each
rank file.
"""

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from perfmod.trace.core import Call, TraceError
from perfmod.trace.formats.dumpi import read_dumpi
from perfmod.trace.formats.dumpi_bin import DumpiBinError, read_dumpi_bin

DATA = Path(__file__).parent / "data" / "dumpi-bin"
P2P = DATA / "p2p_coll"
CREATE = DATA / "comm_create"
MISC = DATA / "misc_calls"
P2P_META = next(P2P.glob("*.meta"))
COLUMNS = ("rank", "seq", "call", "peer", "nbytes", "tag", "comm", "request", "compute", "aux_ptr", "aux",
           "t_entry", "t_exit")


def _assert_same(b, t):
    for name in COLUMNS:
        x, y = getattr(b, name), getattr(t, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert b.nprocs == t.nprocs and b.other_names == t.other_names
    assert {k: v.tolist() for k, v in b.comms.items()} == {k: v.tolist() for k, v in t.comms.items()}
    assert b.meta["unknown_calls"] == t.meta["unknown_calls"]
    assert b.meta["ignored_requests"] == t.meta["ignored_requests"]


@pytest.mark.parametrize("unknown", ["skip", "keep"])
def test_equals_text_reader_event_by_event(unknown):
    b = read_dumpi_bin(P2P_META, unknown=unknown)
    t = read_dumpi(P2P_META, unknown=unknown)
    _assert_same(b, t)
    assert len(b) == (143 if unknown == "skip" else 143 + 40)
    assert b.meta["format"] == "dumpi-bin" and b.meta["version"] == "13.0.0"
    # what the program did (p2p_coll.c): byte counts from the trace's type table, a derived type of 3 doubles
    first = b.rank_events(0)
    calls = b.call[first]
    assert calls[0] == Call.INIT and calls[-1] == Call.FINALIZE
    isend = np.flatnonzero((b.call == Call.ISEND) & (b.tag == 61))
    assert b.nbytes[isend].tolist() == [48] * 4
    assert b.comms[2].tolist() == [2, 0] and b.comms[3].tolist() == [3, 1]  # Comm_split(rank % 2, key -rank)
    assert np.all(b.t_exit >= b.t_entry) and b.t_entry.dtype == np.int64


@pytest.mark.parametrize("unknown", ["skip", "keep"])
def test_steps_over_calls_it_does_not_model(unknown):
    b = read_dumpi_bin(MISC, unknown=unknown)
    _assert_same(b, read_dumpi(next(MISC.glob("*.meta")), unknown=unknown))
    assert b.meta["unknown_calls"]["MPI_Get_processor_name"] == 4 and b.meta["unknown_calls"]["MPI_Gatherv"] == 4
    irecv = b.call == Call.IRECV
    assert b.nbytes[irecv].tolist() == [48] * 4  # Type_vector(2, 3, 4, MPI_DOUBLE)
    assert b.comms == {1: b.comms[1]} and b.comms[1].tolist() == [0, 1, 2, 3]  # Cart_create, not reordered


def test_directory_and_files_read_alike():
    a = read_dumpi_bin(P2P_META)
    for other in (read_dumpi_bin(P2P), read_dumpi_bin(sorted(P2P.glob("*.bin")))):
        _assert_same(other, a)


def test_comm_create_with_group_incl():
    t = read_dumpi_bin(CREATE)
    assert t.comms[1].tolist() == [3, 1, 0]
    sub = t.comm == 1
    assert sorted(set(t.rank[sub].tolist())) == [0, 1, 3]  # rank 2 got MPI_COMM_NULL
    # ring in the new communicator: sub rank r sends to (r + 1) % 3, receives from (r + 2) % 3
    for world, sub_rank in ((3, 0), (1, 1), (0, 2)):
        ev = (t.rank == world) & sub
        assert t.peer[ev & (t.call == Call.ISEND)].tolist() == [(sub_rank + 1) % 3]
        assert t.peer[ev & (t.call == Call.IRECV)].tolist() == [(sub_rank + 2) % 3]
        assert t.nbytes[ev & (t.call == Call.ISEND)].tolist() == [40]
    assert t.meta["unknown_calls"]["MPI_Comm_create"] == 4


def test_renamed_trace_falls_back_to_the_files_beside_the_meta(tmp_path):
    for f in P2P.glob("*.bin"):
        shutil.copy(f, tmp_path / f.name.replace(P2P_META.stem, "n4"))
    shutil.copy(P2P_META, tmp_path / "n4.meta")
    with pytest.warns(UserWarning, match="fileprefix"):
        t = read_dumpi_bin(tmp_path / "n4.meta")
    assert "n4-NNNN.bin" in t.meta["notes"][0]
    _assert_same(t, read_dumpi_bin(P2P_META))


def test_missing_rank_file_is_named(tmp_path):
    for f in P2P.glob("*"):
        if not f.name.endswith("-0001.bin"):
            shutil.copy(f, tmp_path / f.name)
    with pytest.raises(TraceError, match=r"rank 1's file .*-0001\.bin is missing"):
        read_dumpi_bin(tmp_path / P2P_META.name)


def test_unknown_error_and_datatype_override():
    with pytest.raises(DumpiBinError, match=r"byte 64: MPI_Comm_rank: MPI call not modelled"):
        read_dumpi_bin(P2P_META, unknown="error")
    t = read_dumpi_bin(P2P_META, datatype_sizes={14: 4})  # MPI_DOUBLE as 4 bytes
    assert t.nbytes[(t.call == Call.ALLREDUCE)].tolist() == [4] * 12


# ------------------------------------------------------------------- bad input
def _rank0():
    return bytearray(sorted(P2P.glob("*-0000.bin"))[0].read_bytes())


def _index(data):
    return struct.unpack(">8q", bytes(data[-64:]))


def _write(tmp_path, data, name="bad-0000.bin"):
    p = tmp_path / name
    p.write_bytes(bytes(data))
    return p


def _body_start(data):
    return _index(data)[5] + 8


@pytest.mark.parametrize("cut", [0, 5, 60, 100, 1000, 4000, -1, -64, -70])
def test_truncated_file_is_named(tmp_path, cut):
    data = _rank0()
    p = _write(tmp_path, data[:cut])
    with pytest.raises(TraceError, match=str(p)):
        read_dumpi_bin([p])


def test_bad_magic_and_old_version(tmp_path):
    data = _rank0()
    data[0] ^= 0xFF
    with pytest.raises(DumpiBinError, match=r"byte 0: bad magic"):
        read_dumpi_bin([_write(tmp_path, data)])
    data = _rank0()
    header = _index(data)[4]
    data[header:header + 3] = bytes([0, 5, 1])
    with pytest.raises(DumpiBinError, match=rf"byte {header}: DUMPI format version 0\.5\.1"):
        read_dumpi_bin([_write(tmp_path, data)])


def test_corrupt_label_and_huge_count(tmp_path):
    data = _rank0()
    start = _body_start(data)
    data[start:start + 2] = b"\xff\xf0"
    with pytest.raises(DumpiBinError, match=rf"byte {start}: 65520 is not a DUMPI function label"):
        read_dumpi_bin([_write(tmp_path, data)])
    # the Waitall of the halo exchange: count, then the request array's own count
    t = read_dumpi_bin(P2P_META, unknown="keep")
    off = int(t.line[(t.rank == 0) & (t.call == Call.WAITALL)][0])
    data = _rank0()
    args = off + 3 + 2 + 12 + 12  # label, mask, thread, CPU and wall times
    assert struct.unpack(">i", data[args:args + 4])[0] == 4
    data[args + 4:args + 8] = struct.pack(">i", 2**31 - 1)
    with pytest.raises(DumpiBinError, match=rf"byte {off}: MPI_Waitall record runs past the end"):
        read_dumpi_bin([_write(tmp_path, data)])


def test_empty_and_missing_files(tmp_path):
    p = _write(tmp_path, b"")
    with pytest.raises(DumpiBinError, match="too short"):
        read_dumpi_bin([p])
    with pytest.raises(TraceError, match="no such DUMPI .meta"):
        read_dumpi_bin(tmp_path / "nothing.meta")
    empty = tmp_path / "empty-dir"
    empty.mkdir()
    with pytest.raises(TraceError, match="no DUMPI"):
        read_dumpi_bin(empty)


def test_random_corruption_never_escapes_as_anything_but_trace_error(tmp_path):
    rng = np.random.default_rng(14)
    clean = _rank0()
    start, end = _body_start(clean), _index(clean)[6]
    for k in range(150):
        data = bytearray(clean)
        for pos in rng.integers(start, end, size=rng.integers(1, 4)):
            data[pos] = int(rng.integers(0, 256))
        p = _write(tmp_path, data, f"fuzz{k}-0000.bin")
        try:
            read_dumpi_bin([p], nprocs=4)
        except TraceError as err:
            assert str(p) in str(err)


@pytest.mark.skipif(shutil.which("dumpi2ascii") is None, reason="sst-dumpi's dumpi2ascii is not installed")
@pytest.mark.parametrize("folder", [P2P, MISC, CREATE])
def test_committed_text_is_what_dumpi2ascii_prints(folder):
    import subprocess

    for b in sorted(folder.glob("*.bin")):
        out = subprocess.run(["dumpi2ascii", "-S", "-X", str(b)], capture_output=True, text=True, check=True).stdout
        assert out == b.with_suffix(".txt").read_text()



@pytest.mark.skipif(shutil.which("dumpi2ascii") is None, reason="sst-dumpi's dumpi2ascii is not installed")
@pytest.mark.parametrize("rank", ["0000", "0002"])
def test_the_lone_samples_are_what_dumpi2ascii_prints_with_its_header(rank):
    import os
    import subprocess

    b = next(CREATE.glob(f"*-{rank}.bin"))  # tests/data/dumpi-lone/README.md: the command
    out = subprocess.run(["dumpi2ascii", "-H", "-S", "-X", str(b)], capture_output=True, text=True, check=True,
                         env={**os.environ, "TZ": "UTC"}).stdout
    assert out == (DATA.parent / "dumpi-lone" / f"comm_create-{rank}.txt").read_text()

def test_read_trace_picks_the_binary_reader_for_bin_files():
    from perfmod.trace import detect_format, read_trace

    meta = next((DATA / "p2p_coll").glob("*.meta"))
    assert detect_format(meta) == "dumpi"
    via_api = read_trace(meta)
    direct = read_dumpi_bin(meta)
    assert via_api.nprocs == direct.nprocs == 4
    assert np.array_equal(via_api.call, direct.call) and np.array_equal(via_api.t_entry, direct.t_entry)


# issue 14 items 2-4 and 10: the text reader on the same runs (dumpi2ascii -S -X text of the .bin files)
def test_text_reader_follows_comm_create_like_the_binary_reader():
    t = read_dumpi(next(CREATE.glob("*.meta")))
    _assert_same(read_dumpi_bin(CREATE), t)  # one implementation of communicators and groups for both
    assert t.comms == {1: t.comms[1]} and t.comms[1].tolist() == [3, 1, 0]
    ring = (t.comm == 1) & (t.call == Call.ISEND)
    assert t.rank[ring].tolist() == [0, 1, 3] and t.peer[ring].tolist() == [0, 2, 1]  # sub rank r -> r + 1


def test_text_reader_reads_a_renamed_trace(tmp_path):
    meta = next(CREATE.glob("*.meta"))
    for f in CREATE.glob("*.txt"):
        shutil.copy(f, tmp_path / f.name.replace(meta.stem, "n4"))
    shutil.copy(meta, tmp_path / "n4.meta")  # fileprefix=dumpi-2026.11.23.23.24.52 matches no file now
    with pytest.warns(UserWarning, match=r"n4.meta: fileprefix='dumpi-2026.11.23.23.24.52' matches no file; read "
                      r"the 4 files n4-NNNN.\* beside it"):
        t = read_dumpi(tmp_path / "n4.meta")
    _assert_same(t, read_dumpi(meta))
    assert t.meta["files"][0].endswith("n4-0000.txt")


def test_one_rank_file_read_alone_uses_the_recorded_comm_size(tmp_path):
    f = next(CREATE.glob("*-0002.txt"))  # rank 2 got MPI_COMM_NULL from MPI_Comm_create: world calls only
    t = read_dumpi(f)
    assert t.nprocs == 4  # MPI_Comm_size(MPI_COMM_WORLD) returned 4 in the trace
    assert set(t.rank.tolist()) == {2} and t.call.tolist() == [Call.INIT, Call.ALLREDUCE, Call.FINALIZE]
    assert "read alone" in t.meta["notes"][0]
    # rank 0 of p2p_coll up to its MPI_Comm_dup (world calls only, dumpi2ascii's lines as printed)
    head = next(P2P.glob("*-0000.txt")).read_text().splitlines(keepends=True)[:195]
    (tmp_path / "r-0000.txt").write_text("".join(head))
    one = read_dumpi(tmp_path / "r-0000.txt")
    assert one.nprocs == 4 and len(one) == 26  # not 1: the world size MPI_Comm_size returned
    assert one.call[1] == Call.SEND and one.peer[1] == 1 and one.nbytes[1] == 64  # its first message: to rank 1
    assert one.aux_of(24).tolist() == [8, 16, 24, 32]  # its Alltoallv: one count per world rank
    with pytest.raises(TraceError, match=r"-0002.txt:\d+: a rank file read alone: this call uses a communicator "
                       "made with other ranks"):
        read_dumpi(next(P2P.glob("*-0002.txt")))  # its Comm_split communicator's members are in the other files


def test_text_reader_names_a_missing_last_rank_file(tmp_path):
    for f in P2P.glob("*.txt"):
        if not f.name.endswith("-0003.txt"):
            shutil.copy(f, tmp_path / f.name)
    with pytest.raises(TraceError, match=r"rank 3's file dumpi-2026.11.23.23.25.15-0003.txt is missing \(3 of 4 "
                       r"rank files, 4 from MPI_Comm_size in the trace\)"):
        read_dumpi(tmp_path)
