"""DUMPI dumpi2ascii reader.

tests/data/dumpi holds a format fixture: two rank files written line by line
after sst-dumpi's dumpi2ascii printf formats (dumpi/bin/dumpi2ascii-defs.h,
dumpi2ascii-callbacks.c), with hand-chosen values, not the output of a run.
"""

from pathlib import Path

import numpy as np
import pytest

from perfmod.trace import ANY_SOURCE, ANY_TAG, PROC_NULL, Call, TraceError
from perfmod.trace.formats.dumpi import DUMPI_TYPE_SIZES, read_dumpi
from perfmod.trace.formats.textio import FormatError, decimal_ns

DATA = Path(__file__).parent / "data" / "dumpi"


def _call(name: str, params: list[str], t0: str = "10.000000000", t1: str = "10.000000100") -> list[str]:
    return ([f"{name} entering at walltime {t0}, cputime 0.000000000 seconds in thread 0."] + params
            + [f"{name} returning at walltime {t1}, cputime 0.000000000 seconds in thread 0."])


def _write(tmp_path: Path, lines: list[str], name: str = "t-0000.txt") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_fixture_values_hand_checked():
    t = read_dumpi(DATA)
    assert t.nprocs == 2 and len(t) == 20
    r0 = t.to_frame().query("rank == 0").set_index("seq")
    names = list(r0["name"])
    assert names == ["MPI_Init", "MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Allreduce", "MPI_Sendrecv",
                     "MPI_Bcast", "MPI_Send", "MPI_Barrier", "MPI_Finalize"]
    # bytes = count x datatype size: 1024 doubles, 1 double, 2 x contiguous(16 doubles), 3 ints, 5 DOUBLE_INT
    assert list(r0["nbytes"]) == [0, 8192, 8192, 0, 8, 2 * 16 * 8, 3 * 4, 5 * 12, 0, 0]
    assert r0.loc[5, "aux"] == [1, 256, 7]
    assert r0.loc[3, "aux"] == [2, 3] and r0.loc[1, "request"] == 2 and r0.loc[2, "request"] == 3
    assert r0.loc[7, "tag"] == 1337
    # exact nanoseconds, and compute = gap from the previous kept call's return (skipped calls included)
    assert t.t_entry[0] == 1585900000_100000000 and t.t_exit[0] == 1585900000_250000123
    assert t.compute[1] == pytest.approx((251000000 - 250000123) * 1e-9, rel=1e-12)
    assert t.t_exit[3] - t.t_entry[3] == 12345
    # the receive on rank 1 used the wildcards
    recv = np.flatnonzero((t.rank == 1) & (t.call == Call.RECV))[0]
    assert t.peer[recv] == ANY_SOURCE and t.tag[recv] == ANY_TAG and t.nbytes[recv] == 60
    # Comm_split with keys 1 (rank 0) and 0 (rank 1): new communicator = world ranks [1, 0]
    assert t.comms[1].tolist() == [1, 0]
    assert t.meta["unknown_calls"] == {"MPI_Comm_rank": 2, "MPI_Comm_size": 2, "MPI_Type_contiguous": 2,
                                       "MPI_Type_commit": 2, "MPI_Comm_split": 2}


def test_unknown_calls_keep_and_error():
    kept = read_dumpi(DATA, unknown="keep")
    assert len(kept) == 30 and kept.counts()["other"] == 10
    assert "MPI_Comm_rank" in kept.other_names
    with pytest.raises(FormatError, match=r"jacobi-mini-0000.txt:5: MPI_Comm_rank: MPI call not modelled"):
        read_dumpi(DATA, unknown="error")


def test_datatype_size_override_and_printed_sizes(tmp_path):
    t = read_dumpi(DATA, datatype_sizes={14: 4})  # pretend MPI_DOUBLE is 4 bytes
    assert t.nbytes[1] == 4096 and t.nbytes[5] == 2 * 16 * 4
    lines = _call("MPI_Send", ["int count=3", "MPI_Datatype datatype=30 (user-defined-datatype)", "int dest=0",
                               "int tag=0", "MPI_Comm comm=2 (MPI_COMM_WORLD)"])
    lines += ["Datatype 30 (user-defined-datatype) has size 24"]
    assert read_dumpi(_write(tmp_path, lines)).nbytes[0] == 72
    assert DUMPI_TYPE_SIZES[9] == 4 and DUMPI_TYPE_SIZES[14] == 8


def test_decimal_ns_is_exact():
    assert decimal_ns("1296777956.739674001", "f", 1, "walltime") == 1296777956739674001
    assert decimal_ns("0.5", "f", 1, "walltime") == 500_000_000
    with pytest.raises(FormatError, match="f:3: walltime"):
        decimal_ns("1.0000000001", "f", 3, "walltime")


@pytest.mark.parametrize("lines, match", [
    (["MPI_Send entering at walltime 1.0, cputime 0.0 seconds in thread 0.", "int count=1"],
     r"t-0000.txt:1: MPI_Send entering without a matching 'returning'"),
    (_call("MPI_Send", ["int count=1", "MPI_Datatype datatype=9 (MPI_INT)", "int dest=0",
                        "MPI_Comm comm=2 (MPI_COMM_WORLD)"]), r"t-0000.txt:1: MPI_Send: field 'tag' is missing"),
    (_call("MPI_Send", ["int count=x", "MPI_Datatype datatype=9 (MPI_INT)", "int dest=0", "int tag=0",
                        "MPI_Comm comm=2 (MPI_COMM_WORLD)"]), r"t-0000.txt:2: MPI_Send: field 'count'"),
    (_call("MPI_Send", ["int count=1", "MPI_Datatype datatype=99 (user-defined-datatype)", "int dest=0",
                        "int tag=0", "MPI_Comm comm=2 (MPI_COMM_WORLD)"]), r"t-0000.txt:3: .*datatype 99"),
    (_call("MPI_Barrier", ["MPI_Comm comm=7 (user-defined-comm)"]), r"t-0000.txt:2: MPI_Barrier: field 'comm'"),
    (["garbage line"], r"t-0000.txt:1: expected 'MPI_<call> entering"),
    (_call("MPI_Barrier", ["MPI_Comm comm=2 (MPI_COMM_WORLD)"], t0="1.5", t1="1.4"), r"t-0000.txt:3: .*before"),
    (_call("MPI_Barrier", ["MPI_Comm comm=2 (MPI_COMM_WORLD)"], t0="1.x"), r"t-0000.txt:1: walltime"),
    (_call("MPI_Barrier", ["no equals sign"]), r"t-0000.txt:2: MPI_Barrier: cannot read parameter line"),
])
def test_malformed_input_names_file_line_and_field(tmp_path, lines, match):
    with pytest.raises(FormatError, match=match):
        read_dumpi(_write(tmp_path, lines))


def test_binary_file_and_missing_files_are_clear(tmp_path):
    p = tmp_path / "x-0000.bin"
    p.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(Exception, match="not a text trace"):
        read_dumpi(p)
    with pytest.raises(Exception, match="no DUMPI text files"):
        read_dumpi(tmp_path / "none-*.txt")


def test_waits_drop_null_requests_and_proc_null(tmp_path):
    w = "MPI_Comm comm=2 (MPI_COMM_WORLD)"
    lines = (_call("MPI_Isend", ["int count=1", "MPI_Datatype datatype=9 (MPI_INT)", "int dest=-1", "int tag=0", w,
                                 "MPI_Request request=[5]"])
             + _call("MPI_Waitall", ["int count=2", "MPI_Request requests[2]=[5, 1]",
                                     "MPI_Status statuses[2]=<IGNORED>"], t0="10.000000200", t1="10.000000300"))
    t = read_dumpi(_write(tmp_path, lines))
    assert t.peer[0] == PROC_NULL and t.aux.tolist() == [5] and t.meta["ignored_requests"] == 1


def test_multiline_array_parameters_are_joined(tmp_path):
    # DUMPI_REPORT_INT_ARRAY_2 prints one row per line (MPI_Group_range_incl)
    lines = _call("MPI_Group_range_incl", ["MPI_Group group=2 (user-defined-group)", "int count=2",
                                           "int ranges[2][3]=[[0, 1, 1]", ", [2, 3, 1]", "]",
                                           "MPI_Group newgroup=3 (user-defined-group)"])
    lines += _call("MPI_Barrier", ["MPI_Comm comm=2 (MPI_COMM_WORLD)"], t0="10.000000200", t1="10.000000300")
    t = read_dumpi(_write(tmp_path, lines))
    assert len(t) == 1 and t.meta["unknown_calls"] == {"MPI_Group_range_incl": 1}


def test_full_dumpi2ascii_a_output_is_accepted(tmp_path):
    """-a prints header, stream (PAPI counters after entering and returning), keyvals, footer, labels, sizes."""
    w = "MPI_Comm comm=2 (MPI_COMM_WORLD)"
    lines = ["version=0.7.0", "starttime=Thu Jul 24 13:18:14 2026", "hostname=node77", "username=someone",
             "meshdim=0", "meshsize=[]", "meshcrd=[]"]
    lines += ["MPI_Send entering at walltime 10.000000000, cputime 0.000000000 seconds in thread 0.",
              "Perfcounters: [PAPI_TOT_CYC=100]", "int count=2", "MPI_Datatype datatype=31 (user-defined-datatype)",
              "int dest=0", "int tag=0", w,
              "MPI_Send returning at walltime 10.000000500, cputime 0.000000000 seconds in thread 0.",
              "Perfcounters: [PAPI_TOT_CYC=180]"]
    lines += ["Total keyvals: 1", "MPI_TAG_UB=2147483647", "MPI_Send called 1 times and ignored 0 times",
              "Performance counters: 1", "    PAPI_TOT_CYC", "Function address 4196000 has label main",
              "Datatype 14 (MPI_DOUBLE) has size 8", "Datatype 31 (user-defined-datatype) has size 40"]
    t = read_dumpi(_write(tmp_path, lines))
    assert len(t) == 1 and t.nbytes[0] == 80 and t.t_exit[0] - t.t_entry[0] == 500


def test_meta_file_gives_files_and_rank_count(tmp_path):
    for r in (0, 1):
        (tmp_path / f"dumpi-2020.04.03-000{r}.txt").write_text((DATA / f"jacobi-mini-000{r}.txt").read_text())
    (tmp_path / "dumpi-2020.04.03-0000.bin").write_bytes(b"\x00\x01")
    meta = tmp_path / "dumpi-2020.04.03.meta"
    meta.write_text("hostname=n1\nnumprocs=2\nusername=u\nstartime=1585900000\nfileprefix=dumpi-2020.04.03\n"
                    "version=1\nsubversion=1\nsubsubversion=0\n")
    a, b = read_dumpi(meta), read_dumpi(tmp_path)
    assert a.nprocs == b.nprocs == 2 and len(a) == len(b) == 20
    meta.write_text("numprocs=4\nfileprefix=dumpi-2020.04.03\n")
    with pytest.raises(TraceError, match=r"rank 2's file dumpi-2020.04.03-0002.txt is missing \(2 of 4 rank files, "
                       r"4 from numprocs in the .meta file\)"):
        read_dumpi(meta)  # issue 14 item 10: named as missing, not read as ranks without events
    assert read_dumpi(meta, nprocs=4).nprocs == 4  # asked for: ranks 2 and 3 have no file, no events
    meta.write_text("numprocs 4\n")
    with pytest.raises(FormatError, match=r"dumpi-2020.04.03.meta:1: expected key=value"):
        read_dumpi(meta)


def test_missing_rank_files_are_an_error(tmp_path):
    (tmp_path / "t-0000.txt").write_text("")
    (tmp_path / "t-0900000000.txt").write_text("")
    with pytest.raises(TraceError, match=r"rank 1's file t-0001.txt is missing \(2 of 900000001 rank files, "
                       r"900000001 from the file names\)"):
        read_dumpi(tmp_path)
    with pytest.raises(TraceError, match=r"t-0000.txt: no MPI call in this DUMPI rank file \(empty"):
        read_dumpi([tmp_path / "t-0000.txt"], nprocs=3)  # issue 14 item 10: an empty rank file is not 0 events
    (tmp_path / "t-0000.txt").write_text((DATA / "jacobi-mini-0000.txt").read_text())
    assert read_dumpi([tmp_path / "t-0000.txt"], nprocs=3).nprocs == 3


def test_wildcards_resolved_from_statuses(tmp_path):
    t = read_dumpi(DATA, resolve_wildcards=True)
    recv = np.flatnonzero((t.rank == 1) & (t.call == Call.RECV))[0]
    assert t.peer[recv] == 0 and t.tag[recv] == 1337 and t.meta["resolved_wildcards"] == 1
    w = "MPI_Comm comm=2 (MPI_COMM_WORLD)"
    lines = (_call("MPI_Irecv", ["int count=4", "MPI_Datatype datatype=9 (MPI_INT)", "int source=-1 (MPI_ANY_SOURCE)",
                                 "int tag=-1 (MPI_ANY_TAG)", w, "MPI_Request request=[2]"])
             + _call("MPI_Irecv", ["int count=4", "MPI_Datatype datatype=9 (MPI_INT)", "int source=0", "int tag=3", w,
                                   "MPI_Request request=[3]"], t0="10.000000200", t1="10.000000300")
             + _call("MPI_Waitall", ["int count=2", "MPI_Request requests[2]=[3, 2]",
                                     "MPI_Status statuses[2]=[{bytes=16, cancelled=0, source=0, tag=3, error=0}, "
                                     "{bytes=12, cancelled=0, source=1, tag=8, error=0}]"],
                     t0="10.000000400", t1="10.000000500"))
    p = _write(tmp_path, lines)
    kept, resolved = read_dumpi(p, nprocs=2), read_dumpi(p, nprocs=2, resolve_wildcards=True)
    assert (kept.peer[0], kept.tag[0]) == (ANY_SOURCE, ANY_TAG)
    assert (resolved.peer[0], resolved.tag[0]) == (1, 8) and resolved.meta["resolved_wildcards"] == 1
    assert resolved.peer[1] == 0 and resolved.tag[1] == 3  # statuses follow the requests' order [3, 2]
