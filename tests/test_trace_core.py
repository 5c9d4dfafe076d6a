"""The columnar trace: builder, layout, validation, request resolution."""

import numpy as np
import pytest

from perfmod.trace import (
    ANY_SOURCE,
    CALL_NAMES,
    NO_REQUEST,
    NO_TIME,
    PROC_NULL,
    Call,
    TraceBuilder,
    TraceError,
    call_code,
    resolve_requests,
)


def halo_pair():
    b = TraceBuilder(2)
    b.append(0, "isend", peer=1, nbytes=8, tag=3, request=5)
    b.append(0, "irecv", peer=1, nbytes=16, tag=4, request=6)
    b.append(0, "waitall", aux=[6, 5])
    b.append(1, "recv", peer=0, nbytes=8, tag=3, compute=1e-3)
    b.append(1, "send", peer=0, nbytes=16, tag=4)
    b.append(0, "isend", peer=1, nbytes=8, request=5)  # handle 5 reused after completion
    b.append(0, "wait", request=5)
    b.append(1, "recv", peer=0, nbytes=8)
    return b.build()


def test_layout_sorted_by_rank_in_append_order():
    t = halo_pair()
    assert len(t) == 8 and t.nprocs == 2
    assert t.rank.tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    assert t.seq.tolist() == [0, 1, 2, 3, 4, 0, 1, 2]
    assert [CALL_NAMES[c] for c in t.call[:5]] == ["MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Isend", "MPI_Wait"]
    assert t.rank_ptr.tolist() == [0, 5, 8]
    assert t.rank_events(1) == slice(5, 8)
    assert t.aux_of(2).tolist() == [6, 5]
    assert t.compute[5] == 1e-3 and t.nbytes[1] == 16 and t.tag[1] == 4
    assert t.t_entry is None and t.iteration is None
    assert t.counts() == {"MPI_Send": 1, "MPI_Recv": 2, "MPI_Isend": 2, "MPI_Irecv": 1, "MPI_Wait": 1,
                          "MPI_Waitall": 1}
    assert {k: str(v.dtype) for k, v in vars(t).items() if isinstance(v, np.ndarray)} == {
        "rank": "int32", "seq": "int32", "call": "uint8", "peer": "int32", "nbytes": "int64", "tag": "int32",
        "comm": "int32", "request": "int64", "compute": "float64", "aux_ptr": "int64", "aux": "int64"}


def test_requests_resolve_to_creating_event_with_handle_reuse():
    t = halo_pair()
    req = resolve_requests(t)
    # Waitall (event 2) completes Irecv (1) then Isend (0), in its aux order; Wait (4) the second Isend (3)
    assert req.ref_ptr.tolist() == [0, 0, 0, 2, 2, 3, 3, 3, 3]
    assert req.created.tolist() == [1, 0, 3]
    assert req.never_completed.size == 0


def test_extend_and_append_interleave_per_rank():
    b = TraceBuilder(3)
    b.extend(rank=np.array([2, 0, 1]), call="compute", compute=np.array([3.0, 1.0, 2.0]))
    b.append(1, "barrier")
    b.extend(rank=np.arange(3), call=Call.BARRIER)
    t = b.build()
    assert t.rank.tolist() == [0, 0, 1, 1, 1, 2, 2]
    assert t.call.tolist() == [0, 14, 0, 14, 14, 0, 14]
    assert t.compute.tolist() == [1.0, 0.0, 2.0, 0.0, 0.0, 3.0, 0.0]


def test_extend_aux_csr_is_gathered_in_sorted_order():
    b = TraceBuilder(2)
    b.extend(rank=[1, 0], call="isend", peer=[0, 1], nbytes=4, request=[7, 9])
    b.extend(rank=[1, 0], call="waitall", aux_len=[1, 1], aux=[7, 9])
    t = b.build()
    assert t.aux_of(1).tolist() == [9] and t.aux_of(3).tolist() == [7]


def test_compute_derived_from_integer_ns_times():
    b = TraceBuilder(1)
    b.append(0, "barrier", t_entry=1_296_777_956_739_674_000, t_exit=1_296_777_956_739_675_000)
    b.append(0, "barrier", t_entry=1_296_777_956_739_676_500, t_exit=1_296_777_956_739_677_000)
    b.append(0, "barrier", t_entry=1_296_777_956_739_678_000, t_exit=1_296_777_956_739_678_000, compute=5.0)
    t = b.build()
    assert t.has_times() and t.t_entry.dtype == np.int64
    assert t.t_entry[0] == 1_296_777_956_739_674_000  # exact, no float rounding
    assert t.compute.tolist() == [0.0, 1.5e-6, 5.0]  # given compute kept


def test_missing_times_use_sentinel():
    b = TraceBuilder(1)
    b.append(0, "barrier", t_entry=10, t_exit=20)
    b.append(0, "barrier")
    t = b.build()
    assert t.t_entry.tolist() == [10, NO_TIME] and t.compute.tolist() == [0.0, 0.0]


def test_call_code_names():
    assert call_code("MPI_Isend") == call_code("isend") == int(Call.ISEND) == 4
    assert CALL_NAMES[int(Call.REDUCE_SCATTER)] == "MPI_Reduce_scatter"
    with pytest.raises(ValueError, match="unknown call 'MPI_Foo'"):
        call_code("MPI_Foo")


def test_sendrecv_alltoallv_and_other():
    b = TraceBuilder(2, other_names=["MPI_Comm_split"])
    for r in range(2):
        b.append(r, "sendrecv", peer=1 - r, nbytes=8, tag=1, aux=[1 - r, 8, 1])
        b.append(r, "alltoallv", aux=[0, 16])
        b.append(r, Call.OTHER, peer=0)
    t = b.build()
    assert t.aux_of(0).tolist() == [1, 8, 1] and t.other_names == ("MPI_Comm_split",)


def test_subcommunicator_ranks():
    b = TraceBuilder(4, comms={1: [1, 3]})
    b.append(1, "send", peer=1, nbytes=4, comm=1)  # to world rank 3
    b.append(3, "recv", peer=0, nbytes=4, comm=1)
    t = b.build()
    assert t.comm_ranks(1).tolist() == [1, 3]


@pytest.mark.parametrize(
    ("events", "match"),
    [
        ([(0, "send", {"peer": 2})], r"rank 0 event 0 \(MPI_Send\): peer = 2: destination outside"),
        ([(0, "recv", {"peer": ANY_SOURCE}), (0, "send", {"peer": PROC_NULL}), (0, "send", {"peer": -5})],
         r"event 2 \(MPI_Send\): peer = -5"),
        ([(0, "send", {"peer": 1, "nbytes": -1})], r"nbytes = -1: must be >= 0"),
        ([(0, "send", {"peer": 1, "tag": -4})], "negative tag"),
        ([(0, "barrier", {"compute": float("nan")})], "compute"),
        ([(0, "isend", {"peer": 1})], "needs a request id"),
        ([(0, "send", {"peer": 1, "request": 2})], r"request = 2: only nonblocking calls, waits and tests carry"),
        ([(0, "isend", {"peer": 1, "request": 1}), (0, "wait", {"request": -3})],
         r"event 1 \(MPI_Wait\).*waits on a negative request id"),
        ([(0, "isend", {"peer": 1, "request": 1}), (0, "waitall", {"aux": [1, -4]})],
         r"event 1 \(MPI_Waitall\).*waits on a negative request id"),
        ([(0, "wait", {"request": 3})], "request 3 was never created"),
        ([(0, "isend", {"peer": 1, "request": 1}), (0, "isend", {"peer": 1, "request": 1})],
         r"event 1 \(MPI_Isend\): request 1 created again while .*event 0"),
        ([(0, "irecv", {"peer": 1, "request": 1}), (0, "waitall", {"aux": [1, 1]})], "already completed"),
        ([(0, "bcast", {"peer": 7})], "root outside"),
        ([(0, "sendrecv", {"peer": 1, "aux": [1, 8]})], "SENDRECV needs aux"),
        ([(0, "barrier", {"aux": [1]})], "takes no aux"),
        ([(0, "barrier", {}), (1, "barrier", {"aux": [1]}), (1, "allreduce", {"aux": [2]})],
         r"rank 1 event 0 \(MPI_Barrier\): aux_ptr = 0: this call takes no aux list \(and 1 more events\)"),
        ([(0, "alltoallv", {"aux": [8]}), (1, "alltoallv", {"aux": [8, 8]})],
         r"rank 0 event 0 \(MPI_Alltoallv\): aux_ptr = 0: ALLTOALLV needs one aux entry"),
        ([(0, "alltoallv", {"aux": [8, -1]}), (1, "alltoallv", {"aux": [8, 8]})], "negative ALLTOALLV byte count"),
        ([(0, "send", {"peer": 1, "comm": 4})], "communicator not described"),
        ([(0, Call.OTHER, {"peer": 0})], "other_names"),
        ([(0, "barrier", {"t_entry": 20, "t_exit": 10})], "exit before entry"),
    ],
)
def test_validation_errors_name_rank_event_call_field(events, match):
    b = TraceBuilder(2)
    for rank, call, kw in events:
        b.append(rank, call, **kw)
    with pytest.raises(TraceError, match=match):
        b.build()


def test_falling_aux_offsets_are_reported_before_the_columns():
    import dataclasses

    b = TraceBuilder(2)
    b.append(0, "waitall", aux=[1])
    b.append(1, "send", peer=7)  # a bad peer too: the offsets are reported first
    t = b.build(validate=False)
    bad = dataclasses.replace(t, aux_ptr=np.array([0, 2, 1]), aux=np.array([5]))
    with pytest.raises(TraceError, match=r"aux_ptr must rise from 0 to len\(aux\) = 1"):
        bad.validate()
    with pytest.raises(TraceError, match="destination outside"):
        t.validate()


def test_errors_name_file_and_line():
    b = TraceBuilder(2, source="run/rank0.txt")
    b.append(0, "barrier", line=3)
    b.append(0, "send", peer=9, nbytes=1, line=12)
    with pytest.raises(TraceError, match=r"^run/rank0.txt:12: rank 0 event 1 \(MPI_Send\)"):
        b.build()


def test_builder_rejects_bad_rank_and_shapes():
    with pytest.raises(TraceError, match="rank 5 outside 0..1"):
        b = TraceBuilder(2)
        b.append(5, "barrier")
        b.build()
    with pytest.raises(TraceError, match="peer has shape"):
        TraceBuilder(2).extend(rank=[0, 1], call="send", peer=[1, 0, 1])
    with pytest.raises(TraceError, match="aux has 1 entries"):
        TraceBuilder(2).extend(rank=[0, 1], call="waitall", aux_len=[1, 1], aux=[3])
    with pytest.raises(TraceError, match="nprocs"):
        TraceBuilder(0)


def test_with_compute_and_never_completed():
    b = TraceBuilder(2)
    b.append(0, "isend", peer=1, nbytes=8, request=1)
    b.append(1, "recv", peer=0, nbytes=8)
    t = b.build()
    assert resolve_requests(t).never_completed.tolist() == [0]
    t2 = t.with_compute(np.array([1.0, 2.0]))
    assert t2.compute.tolist() == [1.0, 2.0] and t2.rank is t.rank and t.compute.tolist() == [0.0, 0.0]
    with pytest.raises(TraceError, match="compute must be finite"):
        t.with_compute(np.array([1.0, -1.0]))
    assert t.request[1] == NO_REQUEST


def test_delimit_iterations_by_a_marker_call():
    from perfmod.apps.traces import synthetic

    t = synthetic("jacobi2d", 12, 3)
    stripped = t.with_iterations(np.full(len(t), -1))
    again = stripped.delimit_iterations("MPI_Allreduce")
    assert np.array_equal(again.iteration, t.iteration) and again.iteration.dtype == np.int32
    mf = synthetic("minife", 8, 3, box=6)
    assert np.array_equal(mf.with_iterations(np.zeros(len(mf), int)).delimit_iterations(every=2).iteration,
                          mf.iteration)
    with pytest.raises(TraceError, match="every must be a positive integer"):
        t.delimit_iterations(every=0)
    with pytest.raises(TraceError, match="iteration must be"):
        t.with_iterations(np.zeros(3, int))


def test_npz_round_trip_keeps_every_column_and_replays_the_same(tmp_path):
    from perfmod.replay import replay
    from perfmod.trace.formats.npz import read_npz, write_npz

    b = TraceBuilder(4, comms={1: [1, 3]}, source="run/x.dumpi", other_names=["MPI_Comm_dup"])
    for r in range(4):
        b.append(r, Call.OTHER, peer=0, t_entry=1_296_777_956_739_674_000 + r, t_exit=1_296_777_956_739_675_000)
        b.append(r, "allreduce", nbytes=8, iteration=0)
    b.append(1, "isend", peer=1, nbytes=100, comm=1, request=4, tag=2)
    b.append(1, "waitall", aux=[4])
    b.append(3, "recv", peer=0, nbytes=100, comm=1, tag=2, line=17)
    t = b.build(meta={"app": "x", "sizes": np.arange(3)})
    path = write_npz(t, tmp_path / "t.npz")
    u = read_npz(path)
    for name in ("rank", "seq", "call", "peer", "nbytes", "tag", "comm", "request", "compute", "aux_ptr", "aux",
                 "t_entry", "t_exit", "iteration", "line"):
        a, c = getattr(t, name), getattr(u, name)
        assert np.array_equal(a, c) and a.dtype == c.dtype, name
    assert u.t_entry[0] == 1_296_777_956_739_674_000 and u.comm_ranks(1).tolist() == [1, 3]
    assert u.other_names == ("MPI_Comm_dup",) and u.source == str(path)
    assert u.meta == {"app": "x", "sizes": [0, 1, 2], "saved_from": "run/x.dumpi"}
    a, c = replay(t, "summit", "postal"), replay(u, "summit", "postal")
    assert np.array_equal(a.comm_time, c.comm_time) and np.array_equal(a.total_time, c.total_time)


def test_npz_errors_name_the_file(tmp_path):
    from perfmod.trace.formats.npz import read_npz, write_npz

    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(TraceError, match=r"bad.npz: not a perfmod trace file"):
        read_npz(bad)
    # issue 14 item 10: no numpy EOFError or allow_pickle message
    bad.write_bytes(b"")
    with pytest.raises(TraceError, match=r"bad.npz: empty file \(0 bytes\): not a perfmod trace file"):
        read_npz(bad)
    bad.write_text("0 init\n0 send 1 0 8\n")
    with pytest.raises(TraceError, match=r"bad.npz: not a perfmod trace file: an .npz is a zip archive, this file "
                       r"starts with b'0 in'") as err:
        read_npz(bad)
    assert "pickle" not in str(err.value)
    write_npz(halo_pair(), bad)
    bad.write_bytes(bad.read_bytes()[:200])  # cut: a zip whose directory is gone
    with pytest.raises(TraceError, match=r"bad.npz: not a perfmod trace file \(damaged zip archive"):
        read_npz(bad)
    np.savez(tmp_path / "other.npz", x=np.arange(3))
    with pytest.raises(TraceError, match="no header"):
        read_npz(tmp_path / "other.npz")
    b = TraceBuilder(2)
    b.append(0, "send", peer=1, nbytes=8)
    t = b.build()
    broken = type(t)(**{**vars(t), "peer": np.array([5], dtype=np.int32)})
    path = write_npz(broken, tmp_path / "broken.npz")
    with pytest.raises(TraceError, match=r"broken.npz: rank 0 event 0 \(MPI_Send\): peer = 5"):
        read_npz(path)
    with pytest.raises(FileExistsError):
        write_npz(t, path, overwrite=False)
