"""Recorder for mpi4py programs: in-process checks on COMM_SELF and a real 2-rank run."""

import json
import pickle
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from mpi4py import MPI

from perfmod.measure.host import mpiexec_path
from perfmod.replay import replay
from perfmod.trace import ANY_SOURCE, ANY_TAG, Call, resolve_requests
from perfmod.trace.formats.otf2 import read_otf2
from perfmod.trace.recorder import _nbytes, load_recording, record


def test_buffer_specs_give_bytes():
    a = np.zeros(100)
    assert _nbytes(a) == 800
    assert _nbytes([a, MPI.DOUBLE]) == 800
    assert _nbytes([a, 10, MPI.DOUBLE]) == 80
    assert _nbytes([a, (3, None), MPI.INT]) == 12
    assert _nbytes(bytearray(7)) == 7 and _nbytes(None) == 0


def test_self_messages_recorded_with_times_and_requests(tmp_path):
    c = record(MPI.COMM_SELF)
    a, b = np.arange(64, dtype=np.int32), np.empty(64, np.int32)
    rr = c.Irecv(b, 0, tag=3)
    rs = c.Isend(a, 0, tag=3)
    c.Waitall([rr, rs])
    assert np.array_equal(a, b)
    x, y = np.ones(5), np.empty(5)
    c.Allreduce(x, y)
    c.Barrier()
    c.recorder.save(tmp_path / "r0.npz")
    t = load_recording([tmp_path / "r0.npz"])
    assert [Call(k).name for k in t.call] == ["IRECV", "ISEND", "WAITALL", "ALLREDUCE", "BARRIER"]
    assert t.nbytes.tolist() == [256, 256, 0, 40, 0] and t.tag[:2].tolist() == [3, 3]
    assert t.aux.tolist() == [0, 1] and t.request[:2].tolist() == [0, 1]
    assert np.all(t.t_exit >= t.t_entry) and np.all(t.t_entry[1:] >= t.t_exit[:-1])
    assert abs(int(t.t_entry[0]) - time.time_ns()) < 60e9  # wall clock, in ns
    assert t.compute[1] == pytest.approx((t.t_entry[1] - t.t_exit[0]) * 1e-9)


def test_wildcards_and_unrecorded_attributes():
    c = record(MPI.COMM_SELF)
    assert c.Get_size() == 1 and c.rank == 0  # delegated, not recorded
    buf = np.zeros(3)
    req = c.Irecv(buf)
    c.Send(np.ones(3), 0, tag=4)
    assert req.Test() is True
    ev = c.recorder.events
    assert len(ev) == 3 and ev[0][1] == ANY_SOURCE and ev[0][3] == ANY_TAG and ev[2][5] == 0


def test_pickle_based_calls_are_recorded():
    c = record(MPI.COMM_SELF)
    assert c.allreduce(3) == 3 and c.bcast({"a": 1}) == {"a": 1} and c.gather(np.zeros(4)) [0].shape == (4,)
    assert c.sendrecv(b"xyz", 0, 2, source=0, recvtag=2) == b"xyz"  # a blocking send to self could hang
    c.barrier()
    ev = c.recorder.events
    assert [Call(e[0]).name for e in ev] == ["ALLREDUCE", "BCAST", "GATHER", "SENDRECV", "BARRIER"]
    assert ev[0][2] == len(pickle.dumps(3, pickle.HIGHEST_PROTOCOL)) and ev[2][2] == 32
    assert ev[3][2] == len(pickle.dumps(b"xyz", pickle.HIGHEST_PROTOCOL))
    assert c.recorder.aux[3] == [0, ev[3][2], 2]


def test_load_recording_errors(tmp_path):
    (tmp_path / "x.npz").write_text("nope")
    with pytest.raises(Exception, match="x.npz: not a perfmod recording"):
        load_recording([tmp_path / "x.npz"])


PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    from mpi4py import MPI
    from perfmod.trace.recorder import record
    from perfmod.trace.formats.otf2 import write_otf2

    out = sys.argv[1]
    c = record()
    r, p = c.Get_rank(), c.Get_size()
    a, b = np.full(1000, float(r)), np.empty(1000)
    for it in range(3):
        c.recorder.iteration(it)
        rr = c.Irecv(b, (r - 1) % p, tag=it)
        rs = c.Isend(a, (r + 1) % p, tag=it)
        c.Waitall([rr, rs])
    c.recorder.iteration(None)
    s = np.zeros(4, np.int32)
    c.Sendrecv(np.arange(4, dtype=np.int32), (r + 1) % p, 5, s, (r - 1) % p, 5)
    y = np.empty(2)
    c.Allreduce(np.ones(2), y)
    bb = np.zeros(16, np.int64)
    c.Bcast(bb, root=1)
    sub = c.Split(color=0, key=-r)
    sub.Barrier()
    if r == 0:
        c.Send([a, 10, MPI.DOUBLE], 1, tag=9)
        c.send({"step": 1}, 1, tag=11)
    else:
        c.Recv([b, 10, MPI.DOUBLE], MPI.ANY_SOURCE, 9)
        assert c.recv(source=0, tag=11) == {"step": 1}
    c.Barrier()
    c.recorder.save(f"{out}/rank{r}.npz")
    t = c.recorder.gather(0)
    if r == 0:
        write_otf2(t, f"{out}/otf2")
        print(json.dumps({"events": len(t), "sum": float(y.sum())}))
""")


@pytest.mark.mpi
def test_two_rank_run_records_and_exports(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    proc = subprocess.run([str(mpiexec_path()), "-n", "2", sys.executable, str(prog), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    t = load_recording([tmp_path / "rank0.npz", tmp_path / "rank1.npz"])
    assert len(t) == res["events"] == 2 * 16 and res["sum"] == 4.0
    assert t.iteration[t.rank == 0].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2] + [-1] * 7
    r0 = t.to_frame().query("rank == 0")
    assert r0["name"].tolist()[:3] == ["MPI_Irecv", "MPI_Isend", "MPI_Waitall"]
    sends = t.nbytes[(t.call == Call.ISEND)]
    assert sends.tolist() == [8000] * 6  # 1000 doubles per message
    pickled = len(pickle.dumps({"step": 1}, pickle.HIGHEST_PROTOCOL))
    assert t.nbytes[t.call == Call.SEND].tolist() == [80, pickled]  # [buf, 10, MPI.DOUBLE], then a pickle
    assert t.nbytes[t.call == Call.RECV].tolist() == [80, pickled]
    recv = np.flatnonzero(t.call == Call.RECV)[0]
    assert t.peer[recv] == ANY_SOURCE and t.nbytes[recv] == 80
    assert t.nbytes[t.call == Call.BCAST].tolist() == [128, 128] and set(t.peer[t.call == Call.BCAST]) == {1}
    # Split with key -rank: the new communicator lists world ranks [1, 0]; same id on both ranks
    (cid,) = set(t.comm[t.call == Call.BARRIER]) - {0}
    assert t.comms[cid].tolist() == [1, 0]
    req = resolve_requests(t)
    assert req.never_completed.size == 0
    # both ranks' clocks are the same node's wall clock: the Waitall of iteration 0 ends after the partner's Isend
    i_send_1 = np.flatnonzero((t.rank == 1) & (t.call == Call.ISEND))[0]
    wait_0 = np.flatnonzero((t.rank == 0) & (t.call == Call.WAITALL))[0]
    assert t.t_exit[wait_0] >= t.t_entry[i_send_1]
    # the recorded trace replays, per iteration where the program marked them
    ds = replay(t, "summit", model="postal")
    assert ds["comm_time"].sizes["rank"] == 2 and ds["comm_time_iteration"].sizes["iteration"] == 3
    # the OTF2 export written on rank 0 reads back with the same events and times
    o = read_otf2(tmp_path / "otf2")
    for col in ("call", "peer", "nbytes", "tag", "t_entry", "t_exit"):
        np.testing.assert_array_equal(getattr(o, col), getattr(t, col), err_msg=col)
