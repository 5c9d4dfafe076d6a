"""Synthetic traces of the proxies: same messages as the decompositions, valid, vectorized."""

import numpy as np
import pytest

from perfmod.apps.registry import exchange
from perfmod.apps.traces import collective, synthetic
from perfmod.trace import CALL_NAMES, Call, TraceError
from perfmod.trace.requests import resolve_requests


def _messages(trace, call):
    sel = trace.call == call
    return sorted(zip(trace.rank[sel].tolist(), trace.peer[sel].tolist(), trace.nbytes[sel].tolist(), strict=True))


@pytest.mark.parametrize(("app", "nprocs", "opts"), [("jacobi2d", 48, {}), ("jacobi2d", 12, {"periodic": True}),
                                                     ("minife", 16, {"box": 20}), ("minimd", 8, {"cells": 8})])
def test_one_iteration_sends_exactly_the_decomposition(app, nprocs, opts):
    t = synthetic(app, nprocs, 1, allreduces=0, reverse=False, **opts).validate()
    ex = exchange(app, nprocs, **opts)
    send = Call.SEND if app == "minimd" else Call.ISEND
    expect = sorted(zip(ex.src.tolist(), ex.dst.tolist(), ex.nbytes.tolist(), strict=True))
    assert _messages(t, send) == expect
    # every receive is posted by the destination for the source with the same size
    assert _messages(t, Call.IRECV) == sorted(zip(ex.dst.tolist(), ex.src.tolist(), ex.nbytes.tolist(), strict=True))


def test_jacobi2d_listing1_structure_and_length():
    t = synthetic("jacobi2d", 1536, 3)
    ex = exchange("jacobi2d", 1536)
    per_rank = 2 * ex.messages_per_rank() + 2  # Irecv + Isend per neighbour, Waitall, Allreduce
    assert len(t) == 3 * per_rank.sum()
    assert np.array_equal(np.diff(t.rank_ptr), 3 * per_rank)
    r0 = t.rank_events(0)
    names = [CALL_NAMES[c] for c in t.call[r0]]
    assert names == (["MPI_Irecv"] * 2 + ["MPI_Isend"] * 2 + ["MPI_Waitall", "MPI_Allreduce"]) * 3
    assert t.iteration[r0].tolist() == [0] * 6 + [1] * 6 + [2] * 6
    assert t.aux_of(r0.start + 4).tolist() == [0, 1, 2, 3] and t.nbytes[r0.start + 5] == 8
    req = resolve_requests(t)
    assert req.never_completed.size == 0 and req.created.size == 3 * 2 * len(ex)


def test_minife_allreduces_and_minimd_swaps_in_rounds():
    t = synthetic("minife", 8, 2, box=10)
    assert t.counts()["MPI_Allreduce"] == 8 * 2 * 2
    md = synthetic("minimd", 64, 1, cells=8).validate()  # 4 x 4 x 4: one partner per swap
    r = md.rank_events(0)
    names = [CALL_NAMES[c] for c in md.call[r]]
    assert names == ["MPI_Irecv", "MPI_Send", "MPI_Wait"] * 12  # 6 forward + 6 reverse swaps
    fwd = exchange("minimd", 64, cells=8)
    dst, nb = fwd.messages(0)
    sends = md.call[r] == Call.SEND
    assert md.peer[r][sends][:6].tolist() == dst.tolist() and md.nbytes[r][sends][:6].tolist() == nb.tolist()


def test_compute_per_iteration_and_allreduce_app():
    t = synthetic("allreduce", 4, 5, allreduce_bytes=64, compute=[1.0, 2.0, 3.0, 4.0])
    assert len(t) == 20 and set(t.nbytes.tolist()) == {64}
    assert t.compute[t.rank_events(3)].tolist() == [4.0] * 5


def test_large_scale_is_vectorized():
    t = synthetic("jacobi2d", 100_000, 1)
    assert len(t) == 2 * len(exchange("jacobi2d", 100_000)) + 2 * 100_000
    assert t.meta["phases"][0]["dims"] == [400, 250]


@pytest.mark.parametrize(("args", "kw", "match"), [
    (("lulesh", 8), {}, "unknown app 'lulesh'"),
    (("jacobi2d", 0), {}, "nprocs must be a positive integer"),
    (("jacobi2d", 4, 0), {}, "iterations must be a positive integer"),
    (("allreduce", 4), {"allreduces": 0}, "without communication"),
    (("jacobi2d", 4), {"compute": -1.0}, "compute must be finite"),
])
def test_bad_arguments(args, kw, match):
    with pytest.raises(ValueError, match=match):
        synthetic(*args, **kw)


def test_synthetic_trace_is_valid():
    t = synthetic("minife", 27, 2, box=6)
    assert t.validate() is t
    with pytest.raises(TraceError):
        t.with_compute(np.full(len(t), -1.0))


def test_a_world_allreduce_made_by_collective_is_the_synthetic_allreduce_app():
    a, b = collective("allreduce", 37, 64, iterations=3), synthetic("allreduce", 37, 3, allreduce_bytes=64)
    for col in ("rank", "seq", "call", "peer", "nbytes", "tag", "comm", "request", "compute", "aux_ptr", "aux",
                "iteration"):
        assert np.array_equal(getattr(a, col), getattr(b, col)), col
    assert a.validate() is a


def test_rooted_collectives_name_their_root():
    t = collective("bcast", 6, 1024, root=4, iterations=2)
    assert t.counts() == {"MPI_Bcast": 12} and set(t.peer.tolist()) == {4} and set(t.nbytes.tolist()) == {1024}
    assert t.rank.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5] and t.seq.tolist() == [0, 1] * 6
    assert t.validate() is t and t.meta["root"] == 4
    assert set(collective("barrier", 3, 4096).nbytes.tolist()) == {0}


@pytest.mark.parametrize(("args", "kw", "match"), [
    (("alltoall", 4), {}, "call must be one of"),
    (("bcast", 4), {"root": 4}, "root 4 is not a rank of 4"),
    (("reduce", 0), {}, "nprocs must be a positive integer"),
    (("bcast", 4, -1), {}, "nbytes must be >= 0"),
])
def test_collective_bad_arguments(args, kw, match):
    with pytest.raises(ValueError, match=match):
        collective(*args, **kw)
