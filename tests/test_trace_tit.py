"""SimGrid time-independent trace reader and writer: hand-checked lines, round trips, errors."""

from pathlib import Path

import numpy as np
import pytest

from perfmod.apps.traces import synthetic
from perfmod.replay import replay
from perfmod.trace import ANY_SOURCE, ANY_TAG, Call, TraceBuilder, TraceError, TraceWarning, resolve_requests
from perfmod.trace.formats.textio import FormatError
from perfmod.trace.formats.tit import read_tit, write_tit

# the action syntax of simgrid src/smpi/internals/smpi_replay.cpp (format fixture, values chosen by hand)
SAMPLE = """\
# two ranks
0 init
1 init 1
0 compute 5e8
0 send 1 0 1e6
1 recv 0 0 125000
0 isend 1 3 10 1
1 irecv 0 3 40
0 irecv 1 4 16
1 isend 0 4 2
0 wait 1 0 4
0 wait 0 1 3
1 waitall
0 allreduce 5e4 5e8
1 allreduce 6250 5e8
0 bcast 64 1
1 bcast 8 1
0 alltoallv 6 1 5 6 1 2
1 alltoallv 6 2 4 6 5 4
1 compute 2e9
0 finalize
1 finalize
1 sleep 0.125
"""


def _sample(tmp_path: Path) -> Path:
    p = tmp_path / "sample.tit"
    p.write_text(SAMPLE)
    return p


def test_sample_values_hand_checked(tmp_path):
    t = read_tit(_sample(tmp_path), flop_rate=1e9)
    df = t.to_frame()
    r0 = df[df["rank"] == 0].reset_index(drop=True)
    r1 = df[df["rank"] == 1].reset_index(drop=True)
    assert list(r0["name"]) == ["MPI_Init", "MPI_Send", "MPI_Isend", "MPI_Irecv", "MPI_Wait", "MPI_Wait",
                                "MPI_Allreduce", "MPI_Bcast", "MPI_Alltoallv", "MPI_Finalize"]
    # bytes: 1e6 MPI_BYTE; 10 x int (id 1) = 40; 16 bytes; allreduce 5e4 bytes; bcast 64
    assert list(r0["nbytes"]) == [0, 1_000_000, 40, 16, 0, 0, 50_000, 64, 6, 0]
    # rank 1 said "init 1": default datatype MPI_DOUBLE (8 bytes)
    assert list(r1["nbytes"]) == [0, 1_000_000, 320, 16, 0, 50_000, 64, 48, 0, 0]
    # compute before an action is that action's compute; a trailing one is a compute event
    assert r0.loc[1, "compute"] == pytest.approx(0.5) and r1.loc[8, "compute"] == pytest.approx(2.0)
    assert r1.loc[9, "name"] == "compute" and r1.loc[9, "compute"] == 0.125
    # "wait 1 0 4" completes the irecv from 1 (tag 4) first, then "wait 0 1 3" the isend
    req = resolve_requests(t)
    assert [int(t.seq[req.created[k]]) for k in range(req.ref_ptr[4], req.ref_ptr[6])] == [3, 2]
    assert r1.loc[4, "aux"] == [0, 1] and r0.loc[8, "aux"] == [1, 5] and r0.loc[7, "peer"] == 1
    assert t.meta["reduction_flops"] == pytest.approx(1e9)


def _same_structure(a, b):
    if not np.any(a.call == Call.INIT):  # the writer adds the init/finalize SMPI needs
        keep = (b.call != Call.INIT) & (b.call != Call.FINALIZE)
        b = _drop(b, keep)
    for col in ("rank", "seq", "call", "peer", "nbytes", "tag", "comm"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col), err_msg=col)
    np.testing.assert_allclose(a.compute, b.compute, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(a.aux_ptr, b.aux_ptr)
    ra, rb = resolve_requests(a), resolve_requests(b)
    np.testing.assert_array_equal(ra.ref_ptr, rb.ref_ptr)
    np.testing.assert_array_equal(a.seq[ra.created], b.seq[rb.created])  # waits complete the same calls


def _drop(t, keep):
    tb = TraceBuilder(t.nprocs)
    idx = np.flatnonzero(keep)
    alen = np.diff(t.aux_ptr)[idx]
    aux = np.concatenate([t.aux_of(int(i)) for i in idx]) if idx.size else np.zeros(0, np.int64)
    tb.extend(t.rank[idx], t.call[idx], t.peer[idx], t.nbytes[idx], t.tag[idx], t.comm[idx], t.request[idx],
              t.compute[idx], aux_len=alen, aux=aux)
    return tb.build()


@pytest.mark.parametrize("per_rank", [False, True])
def test_round_trip_synthetic_jacobi(tmp_path, per_rank):
    rng = np.random.default_rng(3)
    t = synthetic("jacobi2d", 6, 3)
    t = t.with_compute(rng.uniform(0, 1e-3, len(t)))
    index = write_tit(t, tmp_path / "jacobi.tit", per_rank=per_rank)
    assert index == tmp_path / "jacobi.tit"
    per = sorted(p.name for p in tmp_path.glob("jacobi-*.txt"))
    assert per == (sorted(f"jacobi-{r}.txt" for r in range(6)) if per_rank else [])
    if per_rank:
        assert index.read_text().split() == [f"jacobi-{r}.txt" for r in range(6)]
    back = read_tit(index)
    _same_structure(t, back)
    a = replay(t, "summit", model="postal")
    b = replay(back, "summit", model="postal")
    np.testing.assert_allclose(a["comm_time"].values, b["comm_time"].values, rtol=1e-12)


def test_round_trip_every_world_call(tmp_path):
    b = TraceBuilder(3)
    for r in range(3):
        o = (r + 1) % 3
        p = (r - 1) % 3
        b.append(r, "init")
        b.append(r, "irecv", peer=p, nbytes=24, tag=5, request=7, compute=1e-6)
        b.append(r, "isend", peer=o, nbytes=24, tag=5, request=8)
        b.append(r, "waitany", aux=[8])
        b.append(r, "wait", request=7, compute=2e-6)
        b.append(r, "sendrecv", peer=o, nbytes=16, tag=0, aux=[p, 16, 0])
        b.append(r, "barrier")
        b.append(r, "reduce", peer=2, nbytes=8)
        b.append(r, "alltoall", nbytes=32)
        b.append(r, "alltoallv", aux=[r, 2 * r, 3], nbytes=3 * r + 3)
        b.append(r, "allgather", nbytes=4)
        b.append(r, "gather", peer=0, nbytes=12)
        b.append(r, "scatter", peer=1, nbytes=12)
        b.append(r, "finalize", compute=0.25)
    t = b.build()
    write_tit(t, tmp_path / "all.tit")
    back = read_tit(tmp_path / "all.tit")
    # a Waitany that completes one request comes back as a wait of that request
    np.testing.assert_array_equal(np.where(t.call == Call.WAITANY, Call.WAIT, t.call), back.call)
    for col in ("peer", "nbytes", "tag"):
        np.testing.assert_array_equal(getattr(t, col), getattr(back, col), err_msg=col)
    np.testing.assert_allclose(t.compute, back.compute, rtol=1e-15)


def test_wildcards_and_proc_null(tmp_path):
    b = TraceBuilder(2)
    b.append(0, "recv", peer=ANY_SOURCE, tag=ANY_TAG, nbytes=8)
    b.append(1, "send", peer=0, tag=9, nbytes=8)
    b.append(1, "isend", peer=-3, nbytes=8, request=0)  # PROC_NULL: left out with its wait
    b.append(1, "wait", request=0)
    write_tit(b.build(), tmp_path / "w.tit")
    text = (tmp_path / "w.tit").read_text()
    assert "0 recv -555 -444 8" in text and "isend" not in text and "wait" not in text
    back = read_tit(tmp_path / "w.tit")
    assert back.peer[1] == ANY_SOURCE and back.tag[1] == ANY_TAG
    assert back.counts() == {"MPI_Send": 1, "MPI_Recv": 1, "MPI_Init": 2, "MPI_Finalize": 2}


def test_writer_rejects_other_communicators(tmp_path):
    b = TraceBuilder(2, comms={1: [1, 0]})
    b.append(0, "barrier", comm=1)
    b.append(1, "barrier", comm=1)
    with pytest.raises(Exception, match="MPI_COMM_WORLD only"):
        write_tit(b.build(), tmp_path / "x.tit")


def test_unknown_actions(tmp_path):
    p = tmp_path / "u.tit"
    p.write_text("0 init\n0 scan 8 0\n0 location foo.c 12\n0 finalize\n")
    with pytest.warns(TraceWarning, match=r"u.tit: skipped SMPI actions that move data.*: scan x1"):
        t = read_tit(p)
    assert len(t) == 2 and t.meta["unknown_calls"] == {"scan": 1, "location": 1}
    assert read_tit(p, unknown="keep").counts()["other"] == 2
    with pytest.raises(FormatError, match=r"u.tit:2: scan: action not modelled"):
        read_tit(p, unknown="error")


@pytest.mark.parametrize("text, match", [
    ("0 send 1\n", r"x.tit:1: send: needs 2 arguments"),
    ("0 send 1 0 lots\n", r"x.tit:1: send: argument 3 \(size\): 'lots' is not a number"),
    ("0 init\nx send 1 0 8\n", r"x.tit:2: rank: 'x' is not an integer"),
    ("0 send 1 0 -8\n", r"x.tit:1: send: argument 3 \(size\) must be >= 0"),
    ("0 send 1 0 8 99\n", r"x.tit:1: send: argument 4 \(datatype\): unknown SMPI datatype id 99"),
    ("0 wait\n", r"x.tit:1: wait: no isend/irecv of this rank is pending"),
    ("0 isend 1 0 8\n0 wait 0 1 5\n", r"x.tit:2: wait: no pending request with src 0, dst 1, tag 5"),
    ("0 compute -1\n", r"x.tit:1: compute: argument 1 must be finite and >= 0"),
    ("0\n", r"x.tit:1: expected '<rank> <action>"),
])
def test_malformed_lines_name_file_line_and_argument(tmp_path, text, match):
    p = tmp_path / "x.tit"
    p.write_text(text)
    with pytest.raises(FormatError, match=match):
        read_tit(p, nprocs=2)


PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="node-" suffix="" radical="0-7" speed="1Gf" bw="10GBps" lat="1us"/>
</platform>
"""


def test_smpi_replays_the_written_traces(tmp_path):
    """SimGrid's own replay (smpirun -replay, when installed) runs what write_tit writes."""
    import re
    import shutil
    import subprocess

    if shutil.which("smpirun") is None:
        pytest.skip("SimGrid's smpirun is not installed")
    (tmp_path / "plat.xml").write_text(PLATFORM)
    (tmp_path / "hosts").write_text("".join(f"node-{i}\n" for i in range(8)))
    b = TraceBuilder(2)
    b.append(0, "send", peer=1, nbytes=8, compute=1.0)  # 1 s of compute at 1 Gflop/s before the send
    b.append(1, "recv", peer=0, nbytes=8)
    cases = {"compute": b.build(), "jacobi": synthetic("jacobi2d", 8, 2), "minimd": synthetic("minimd", 8, 2)}
    for name, trace in cases.items():
        write_tit(trace, tmp_path / f"{name}.txt", per_rank=True)
        out = subprocess.run(["smpirun", "-np", str(trace.nprocs), "-platform", "plat.xml", "-hostfile", "hosts",
                              "-replay", f"{name}.txt", "--log=smpi_config.thres:warning",
                              "--log=xbt_cfg.thres:warning"], cwd=tmp_path, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, f"{name}: {out.stderr[-1500:]}"
        t_sim = float(re.search(r"Simulation time ([0-9.e+-]+)", out.stdout + out.stderr).group(1))
        if name == "compute":
            assert 1.0 < t_sim < 1.001, t_sim  # the compute line came back as 1e9 flops


def test_missing_ranks_are_an_error_not_a_huge_trace(tmp_path):
    p = tmp_path / "gap.tit"
    p.write_text("0 init\n99999999999 init\n")
    with pytest.raises(TraceError, match=r"gap.tit: ranks 0..99999999999 expected .* \(first: rank 1\)"):
        read_tit(p)
    p.write_text("0 init\n2 init\n")
    assert read_tit(p, nprocs=3).nprocs == 3


# issue 14 items 6-10: lines in SMPI's own syntax (smpi_replay.cpp's parsers and their comments)
A2AV = [[1, 7, 10, 12], [2, 3, 4, 5], [0, 6, 1, 2], [9, 1, 1, 1]]  # bytes rank j sends to rank v


def _a2av_text(datatypes: str = "") -> str:
    lines = [f"{r} init" for r in range(4)]
    for j, row in enumerate(A2AV):
        col = [A2AV[i][j] for i in range(4)]
        lines.append(f"{j} alltoallv {sum(row)} {' '.join(map(str, row))} {sum(col)} {' '.join(map(str, col))}"
                     + datatypes)
    return "\n".join(lines + [f"{r} finalize" for r in range(4)]) + "\n"


@pytest.mark.parametrize("datatypes", ["", " 6 6"])  # MPI_BYTE by default or named (SMPI id 6)
def test_alltoallv_with_different_totals_per_rank_replays(tmp_path, datatypes):
    from perfmod.machine.platforms import load
    from perfmod.models.comm.message import message_time

    p = tmp_path / "a2av.tit"
    p.write_text(_a2av_text(datatypes))
    t = read_tit(p)  # no nprocs: the world size (4) comes from the ranks, not from the line length
    ev = np.flatnonzero(t.call == Call.ALLTOALLV)
    assert [t.aux_of(int(i)).tolist() for i in ev] == A2AV
    assert t.nbytes[ev].tolist() == [30, 14, 9, 12]  # different totals: legal in MPI
    ds = replay(t, "summit", "postal")
    # pairwise exchange (costs.py): step s, rank r sends A2AV[r][(r + s) % 4]; on Summit ranks 0-2 share a
    # socket and rank 3 is on the other one; each step costs its slowest message
    summit = load("summit")

    def tm(n, a, b):
        mode = "inter_socket" if 3 in (a, b) else "intra_socket"
        return float(message_time(float(max(n, 1)), mode, summit, model="postal"))

    expect = sum(max(tm(A2AV[r][(r + s) % 4], r, (r + s) % 4) for r in range(4)) for s in (1, 2, 3))
    np.testing.assert_allclose(ds.collective_time.values, [expect] * 4, rtol=1e-12)


def test_reducescatter_with_trailing_datatype_and_no_nprocs(tmp_path):
    # the example of SMPI's ReduceScatterArgParser, for rank 0 of 4, with its datatype field (0: MPI_DOUBLE)
    p = tmp_path / "rs.tit"
    p.write_text("".join(f"{r} reducescatter 275427 275427 275427 204020 11346849 0\n" for r in range(4)))
    t = read_tit(p)
    assert t.nprocs == 4 and len(t) == 4
    assert t.nbytes.tolist() == [(3 * 275427 + 204020) * 8] * 4  # counts x 8 B, not the flops
    assert t.meta["reduction_flops"] == 4 * 11346849
    p.write_text("".join(f"{r} reducescatter 3 3 3 3 100\n" for r in range(4)))  # no datatype: MPI_BYTE
    assert read_tit(p).nbytes.tolist() == [12] * 4
    p.write_text("0 reducescatter 3 3 3 3 100 0 7\n1 init\n2 init\n3 init\n")
    with pytest.raises(FormatError, match=r"rs.tit:1: reducescatter: needs 4 receive counts, flops \[datatype\]"):
        read_tit(p)


def test_test_then_wait_on_the_same_request(tmp_path):
    p = tmp_path / "tw.tit"
    p.write_text("0 init\n1 init\n0 irecv 1 5 8\n1 isend 0 5 8\n0 test 1 0 5\n0 test 1 0 5\n0 wait 1 0 5\n"
                 "1 test 1 0 5\n0 finalize\n1 finalize\n")
    t = read_tit(p)
    r0 = t.rank_events(0)
    assert t.call[r0].tolist() == [Call.INIT, Call.IRECV, Call.TEST, Call.TEST, Call.WAIT, Call.FINALIZE]
    assert t.request[r0].tolist() == [-1, 0, -1, -1, 0, -1]  # the wait completes it, the tests found it pending
    r1 = t.rank_events(1)
    assert t.request[r1].tolist() == [-1, 0, 0, -1]  # no wait follows: the test completed it
    ds = replay(t, "summit", "postal")
    assert ds.attrs["requests_never_completed"] == 0
    p.write_text("0 init\n0 test 1 0 5\n0 finalize\n1 init\n1 finalize\n")  # nothing pending: SMPI ignores it
    assert read_tit(p).request.tolist() == [-1] * 5


def test_allgatherv_is_not_skipped_silently(tmp_path):
    # GatherVArgParser: "<rank> allgatherv <sendcount> <P recvcounts>"
    p = tmp_path / "agv.tit"
    p.write_text("".join(f"{r} allgatherv {10 * (r + 1)} 10 20 30 40\n" for r in range(4)))
    with pytest.warns(TraceWarning, match=r"agv.tit: skipped SMPI actions that move data.*allgatherv x4"):
        t = read_tit(p)
    assert t.meta["unknown_calls"] == {"allgatherv": 4}
    assert read_tit(p, unknown="keep").other_names == ("allgatherv",)


def test_a_last_line_without_newline_is_read_and_a_cut_one_is_caught_by_the_replay(tmp_path):
    """SimGrid's replay reads a file whose last line has no newline; so does perfmod.  A file cut in the middle of
    a number ("1000" read as "1") still reads as a valid line: the replay's message matching names it."""
    from perfmod.replay.engine import ReplayError, replay

    whole = "0 init\n1 init\n0 send 1 0 1000\n1 recv 0 0 1000\n0 finalize\n1 finalize"
    (tmp_path / "a.tit").write_text(whole)
    (tmp_path / "b.tit").write_text(whole + "\n")
    a, b = read_tit(tmp_path / "a.tit"), read_tit(tmp_path / "b.tit")
    assert a.counts() == b.counts() and a.nbytes.tolist() == b.nbytes.tolist()
    p = tmp_path / "cut.tit"
    p.write_text("0 init\n1 init\n0 send 1 0 1000\n1 recv 0 0 1")  # "1000" cut to "1"
    with pytest.raises(ReplayError, match=r"cut.tit:4: .*smaller than the 1000 B message"):
        replay(read_tit(p), "summit", "postal")


def test_a_misspelt_action_is_an_error_unless_skipping_is_asked_for(tmp_path):
    p = tmp_path / "m.tit"
    p.write_text("".join(f"{r} init\n{r} allreduse 8 0\n{r} finalize\n" for r in range(4)))
    with pytest.raises(FormatError, match=r"m.tit:2: allreduse: not an action of SimGrid's replay \(misspelt\?\)"):
        read_tit(p)
    with pytest.warns(TraceWarning, match=r"m.tit: skipped 4 lines whose action SimGrid's replay does not define: "
                                          r"allreduse x4"):
        t = read_tit(p, unknown="skip")
    assert t.meta["unknown_calls"] == {"allreduse": 4}


# SimGrid's own example traces (examples/smpi/replay/actions_*.txt, copied in tests/data/simgrid-replay: README
# there); the values are read off each file: ranks, actions, bytes (counts x the datatype: MPI_BYTE unless the
# line names one, 0 MPI_DOUBLE, 3 MPI_SHORT, 4 MPI_LONG) and compute flops (at DEFAULT_FLOP_RATE, 1 Gflop/s)
SIMGRID_EXAMPLES = Path(__file__).parent / "data" / "simgrid-replay" / "replay"
EXAMPLE_VALUES = {  # file: (ranks, {action: count}, bytes of all events, compute seconds)
    "allreduce": (3, {"MPI_Allreduce": 3}, 3 * 50_000, 1.5),
    "alltoall": (3, {"MPI_Alltoall": 3}, 3 * 500, 0.0),
    "alltoallv": (3, {"MPI_Alltoallv": 3}, (1 + 40 + 30) + (80 + 1 + 40) + (100 + 30 + 1), 0.0),  # send counts
    "barrier": (3, {"MPI_Send": 1, "MPI_Recv": 1, "MPI_Barrier": 3}, 2 * 10**7, (98_095_000 + 2 * 76_296_000) / 1e9),
    "bcast": (3, {"MPI_Bcast": 6, "MPI_Reduce": 3}, 9 * 50_000, 2 * (5e8 + 2e8 + 5e8) / 1e9),
    "bcast_reduce_datatypes": (3, {"MPI_Bcast": 6, "MPI_Reduce": 3}, 3 * 50_000 * (8 + 2 + 8), 2.4),  # "init 1"
    "gather": (4, {"MPI_Gather": 4}, 4 * 68 * 8, 0.0),  # "gather 68 68 0 0 0": root 0, two MPI_DOUBLE types
    "reducescatter": (4, {"MPI_Reduce_scatter": 4}, 4 * (3 * 275_427 + 204_020) * 8, 0.0),  # datatype 0
    "waitall": (3, {"MPI_Isend": 3, "MPI_Irecv": 3, "MPI_Waitall": 3}, 2 * (2000 + 3000 + 3000), 0.0),
    "with_isend": (3, {"MPI_Send": 2, "MPI_Recv": 1, "MPI_Isend": 1, "MPI_Irecv": 2, "MPI_Wait": 2, "MPI_Test": 2},
                   6 * 10**6, (2e9 + 1e9 + 3e9) / 1e9),
}


@pytest.mark.parametrize("name", sorted(EXAMPLE_VALUES))
def test_simgrid_example_traces_read_with_the_values_in_their_lines(name):
    nprocs, counts, nbytes, compute = EXAMPLE_VALUES[name]
    t = read_tit(SIMGRID_EXAMPLES / f"actions_{name}.txt")
    assert t.nprocs == nprocs
    assert t.counts() == {**counts, "MPI_Init": nprocs, "MPI_Finalize": nprocs}
    assert int(t.nbytes.sum()) == nbytes
    assert float(t.compute.sum()) == pytest.approx(compute, rel=1e-12)


def test_simgrid_example_allgatherv_is_named_as_skipped():
    p = SIMGRID_EXAMPLES / "actions_allgatherv.txt"
    with pytest.warns(TraceWarning, match=r"actions_allgatherv.txt: skipped SMPI actions .*: allgatherv x4"):
        t = read_tit(p)
    assert t.nprocs == 4 and t.meta["unknown_calls"] == {"allgatherv": 4}
    kept = read_tit(p, unknown="keep")
    assert kept.other_names == ("allgatherv",) and kept.counts()["other"] == 4
