"""The replay's compiled preprocessing against plain-Python statements of the same rules (issue 23).

Request resolution (:func:`perfmod.trace.requests.resolve_requests`) and point-to-point matching
(:func:`perfmod.replay.matching.match_messages`) run as compiled passes (a hash table of requests; the sends in
buckets by receiver); here random traces
(tags, handle reuse, lists, Sendrecv, PROC_NULL, more receives than sends) are resolved and matched
again by dictionaries of queues, and both must agree event for event.
"""

import random
from collections import defaultdict, deque

import pytest

from perfmod.replay.matching import ReplayError, match_messages
from perfmod.trace import PROC_NULL, Call, TraceBuilder, TraceError, resolve_requests


def _random_trace(seed: int, nprocs: int = 5, per_rank: int = 60):
    rng = random.Random(seed)
    b = TraceBuilder(nprocs)
    for r in range(nprocs):
        pending: list[int] = []
        free = list(range(6))  # request handles, reused once completed
        for _ in range(per_rank):
            x = rng.random()
            peer = rng.choice([p for p in range(nprocs) if p != r] + [PROC_NULL])
            tag = rng.randrange(3)
            if x < 0.25 and free:
                q = free.pop(rng.randrange(len(free)))
                b.append(r, rng.choice(["isend", "irecv"]), peer=peer, tag=tag, nbytes=8, request=q)
                pending.append(q)
            elif x < 0.35 and pending:
                q = pending.pop(rng.randrange(len(pending)))
                b.append(r, "wait", request=q)
                free.append(q)
            elif x < 0.45 and pending:
                k = rng.randint(1, len(pending))
                done = [pending.pop(rng.randrange(len(pending))) for _ in range(k)]
                b.append(r, "waitall", aux=done)
                free.extend(done)
            elif x < 0.55:
                src = rng.choice([p for p in range(nprocs) if p != r])
                b.append(r, "sendrecv", peer=peer, tag=tag, nbytes=8, aux=[src, 8, rng.randrange(3)])
            else:
                b.append(r, rng.choice(["send", "recv"]), peer=peer, tag=tag, nbytes=8)
    return b.build()


def _reference(trace):
    """(created per reference, never completed, pdst, psrc) by dictionaries of queues, event by event."""
    n = len(trace)
    pending, created, ptr = {}, [], [0]
    for i in range(n):
        c, r = int(trace.call[i]), int(trace.rank[i])
        if c in (Call.ISEND, Call.IRECV, Call.ISSEND):
            pending[(r, int(trace.request[i]))] = i
        ids = [int(trace.request[i])] if c == Call.WAIT else trace.aux_of(i).tolist() if c == Call.WAITALL else []
        created.extend(pending.pop((r, q)) for q in ids)
        ptr.append(len(created))
    sends, recvs = defaultdict(deque), defaultdict(deque)
    pdst, psrc = [-1] * n, [-1] * n
    for i in range(n):
        c, r = int(trace.call[i]), int(trace.rank[i])
        if c in (Call.SEND, Call.ISEND, Call.SENDRECV):
            d = int(trace.peer[i])
            if d == PROC_NULL:
                pdst[i] = -2
            else:
                sends[(r, d, int(trace.tag[i]))].append(i)
        if c in (Call.RECV, Call.IRECV, Call.SENDRECV):
            s, tag = (int(trace.peer[i]), int(trace.tag[i])) if c != Call.SENDRECV else (
                int(trace.aux_of(i)[0]), int(trace.aux_of(i)[2]))
            if s == PROC_NULL:
                psrc[i] = -2
            else:
                recvs[(s, r, tag)].append(i)
    for key, q in sends.items():
        for s, r in zip(q, recvs.get(key, ()), strict=False):
            pdst[s], psrc[r] = r, s
    return created, ptr, sorted(pending.values()), pdst, psrc


@pytest.mark.parametrize("seed", range(8))
def test_compiled_requests_and_matching_agree_with_queues(seed):
    t = _random_trace(seed)
    created, ptr, never, pdst, psrc = _reference(t)
    req = resolve_requests(t)
    assert req.created.tolist() == created and req.ref_ptr.tolist() == ptr
    assert req.never_completed.tolist() == never
    m = match_messages(t)
    assert m.pdst.tolist() == pdst and m.psrc.tolist() == psrc
    assert sum(p >= 0 for p in pdst) > 20  # the random traces do match messages


def test_first_error_in_rank_then_id_order():
    b = TraceBuilder(2)
    b.append(0, "isend", peer=1, request=5)
    b.append(0, "wait", request=7)  # rank 0, id 7: never created
    b.append(0, "wait", request=4)  # rank 0, id 4: the lower id is reported, though later in the trace
    b.append(1, "recv", peer=0)
    with pytest.raises(TraceError, match=r"rank 0 event 2 .*request 4 was never created"):
        resolve_requests(b.build(validate=False))


def test_truncation_reports_the_first_message_of_the_lowest_group():
    b = TraceBuilder(3)
    b.append(0, "send", peer=2, tag=9, nbytes=64)
    b.append(1, "send", peer=2, tag=1, nbytes=64)
    b.append(2, "recv", peer=1, tag=1, nbytes=8)  # group (1, 2, 1, 0) is above (0, 2, 9, 0) ...
    b.append(2, "recv", peer=0, tag=9, nbytes=8)  # ... so this one is reported
    with pytest.raises(ReplayError, match=r"rank 2 event 1 .*64 B message from rank 0 \(tag 9\).* in 2 receives"):
        match_messages(b.build())


def test_request_table_grows_past_its_first_size():
    b = TraceBuilder(2)
    ids = list(range(5000, 0, -1))  # more distinct pending ids than the table's first 1,024 slots hold
    for q in ids:
        b.append(0, "isend", peer=1, request=q)
    b.append(0, "waitall", aux=ids[::2])
    b.append(1, "recv", peer=0)
    req = resolve_requests(b.build())
    assert req.created.tolist() == list(range(0, 5000, 2))
    assert req.never_completed.tolist() == list(range(1, 5000, 2))


def test_many_groups_between_two_ranks_in_reverse_order():
    b = TraceBuilder(2)
    tags = list(range(1500))  # 1,500 (src, dst, tag, comm) groups in one receiver's bucket, received in reverse
    for t in tags:
        b.append(0, "isend", peer=1, tag=t, nbytes=8, request=t)
    b.append(0, "waitall", aux=tags)
    for t in tags[::-1]:
        b.append(1, "irecv", peer=0, tag=t, nbytes=8, request=t)
    b.append(1, "waitall", aux=tags[::-1])
    t = b.build()
    m = match_messages(t)
    assert m.pdst[:1500].tolist() == [1501 + 1499 - k for k in range(1500)]
    assert _reference(t)[3] == m.pdst.tolist() and _reference(t)[4] == m.psrc.tolist()


def test_senders_with_interleaved_tags_are_paired_in_posting_order_per_tag():
    # two senders post 300 messages each to rank 2 with their tags shuffled (the receiver's bucket is sorted by
    # group, a merge sort), rank 2 receives them in another order; message k of a tag carries k in its size
    rng = random.Random(5)
    b = TraceBuilder(3)
    posted = {}
    for s in (0, 1):
        tags = [t for t in range(6) for _ in range(50)]
        rng.shuffle(tags)
        for t in tags:
            k = posted.setdefault((s, t), 0)
            posted[(s, t)] = k + 1
            b.append(s, "send", peer=2, tag=t, nbytes=8 * (k + 1))
    recvs = [(s, t) for (s, t), k in posted.items() for _ in range(k)]
    rng.shuffle(recvs)
    got = {}
    for s, t in recvs:
        k = got.setdefault((s, t), 0)
        got[(s, t)] = k + 1
        b.append(2, "recv", peer=s, tag=t, nbytes=8 * (k + 1))  # just fits the k-th message of its group
    t = b.build()
    m = match_messages(t)  # a wrong pairing would truncate a message or leave one unmatched
    assert _reference(t)[3] == m.pdst.tolist() and _reference(t)[4] == m.psrc.tolist()
    recv = m.pdst[:600]
    assert (recv >= 600).all() and (t.nbytes[recv] == t.nbytes[:600]).all()


@pytest.mark.parametrize("model", ["postal", "kmodel"])
def test_event_heap_grows_between_kernel_calls_with_the_same_result(model, monkeypatch):
    from perfmod.apps.traces import synthetic
    from perfmod.replay import kernel, replay

    t = synthetic("minife", 64, 3, compute=1e-6)
    ref = replay(t, "summit", model)
    monkeypatch.setattr(kernel, "_HEAP_ENTRIES_PER_RANK", 0)  # no spare entries: the heap grows at the first step
    grown = replay(t, "summit", model)
    for v in ("total_time", "comm_time", "wait_time", "collective_time"):
        assert grown[v].values.tolist() == ref[v].values.tolist()


def test_senders_per_group_is_the_same_for_messages_in_trace_order_and_shuffled():
    import numpy as np

    from perfmod.models.comm.krules import _senders_per_group

    rng = np.random.default_rng(3)
    src = np.sort(rng.integers(0, 40, 500))
    phase = np.concatenate([np.sort(rng.integers(0, 6, int(np.count_nonzero(src == s)))) for s in range(40)])
    group = np.arange(40) // 8  # 5 nodes of 8 ranks
    want = [max(len({s for s, q in zip(src.tolist(), phase.tolist(), strict=True) if q == f and group[s] == g}) for g
                in range(5)) for f in range(6)]
    assert _senders_per_group(phase, src, group, 6).tolist() == want  # trace order: one pass
    o = rng.permutation(src.size)
    assert _senders_per_group(phase[o], src[o], group, 6).tolist() == want  # any order: sorted


def _collective_trace(seed: int, nprocs: int = 6, per_rank: int = 8):
    """Random collectives on one communicator (the same sequence on every rank, one rank cut short)."""
    rng = random.Random(seed)
    seq = [(rng.choice(["allreduce", "bcast", "barrier", "alltoall"]), 8 * rng.randint(1, 4), rng.randrange(nprocs))
           for _ in range(per_rank)]
    b = TraceBuilder(nprocs)
    for r in range(nprocs):
        for name, nbytes, root in seq[:per_rank - 2 if r == nprocs - 1 else per_rank]:
            b.append(r, "compute", compute=1e-6)
            b.append(r, name, nbytes=nbytes, **({"peer": root} if name == "bcast" else {}))
    return b.build()


@pytest.mark.parametrize("seed", range(4))
def test_world_collective_instances_agree_with_the_general_numbering(seed, monkeypatch):
    import dataclasses

    import numpy as np

    from perfmod.replay import matching

    t = _collective_trace(seed)
    fast = matching.collective_instances(t)  # all on MPI_COMM_WORLD: the one-pass numbering
    monkeypatch.setattr(matching, "_world_instances", lambda *a: -1)  # the sorted numbering of any communicator
    general = matching.collective_instances(t)
    assert fast.inst.max() == 7 and fast.size.tolist() == [6] * 8  # the short rank leaves two instances unfilled
    for f in dataclasses.fields(fast):
        a, b = getattr(fast, f.name), getattr(general, f.name)
        assert a.dtype == b.dtype and a.tolist() == b.tolist(), f.name
    assert np.array_equal(fast.members, np.tile(np.arange(6), 8))


def test_world_collective_disagreement_is_reported_as_by_the_general_numbering():
    b = TraceBuilder(3)
    for r in range(3):
        b.append(r, "allreduce", nbytes=8)
        b.append(r, "bcast", nbytes=16 if r != 1 else 24, peer=0)
    from perfmod.replay.matching import collective_instances

    with pytest.raises(ReplayError, match="collective #1 on communicator 0: members disagree on the nbytes"):
        collective_instances(b.build())


@pytest.mark.parametrize(("events", "want"), [
    ([(0, "send", {"peer": 1}), (1, "recv", {"peer": 0})], False),
    ([(0, "send", {"peer": 1}), (1, "recv", {"peer": -2})], True),  # MPI_ANY_SOURCE
    ([(0, "send", {"peer": 1}), (1, "irecv", {"peer": 0, "tag": -1, "request": 1}), (1, "wait", {"request": 1})],
     True),  # MPI_ANY_TAG
    ([(0, "sendrecv", {"peer": 1, "aux": [1, 8, -1]}), (1, "sendrecv", {"peer": 0, "aux": [0, 8, 0]})], True),
    ([(0, "sendrecv", {"peer": 1, "aux": [-2, 8, 0]}), (1, "sendrecv", {"peer": 0, "aux": [0, 8, 0]})], True),
    ([(0, "sendrecv", {"peer": 1, "aux": [1, 8, 0]}), (1, "sendrecv", {"peer": 0, "aux": [0, 8, 0]})], False),
])
def test_wildcards_are_found_in_receives_and_sendrecv_receive_sides(events, want):
    from perfmod.replay.matching import has_wildcards
    from perfmod.trace import ANY_SOURCE, ANY_TAG

    assert (ANY_SOURCE, ANY_TAG) == (-2, -1)
    b = TraceBuilder(2)
    for r, c, kw in events:
        b.append(r, c, **kw)
    assert has_wildcards(b.build()) is want


def test_maxrate_senders_per_phase_compiled_pass_agrees_with_sets():
    # the max-rate k of each phase (most distinct senders of one node / socket) counted by the compiled pass over
    # trace-ordered messages against sets of senders; out of that order the pass declines (NumPy counts instead)
    import numpy as np

    from perfmod.machine.mapping import node_of, socket_of
    from perfmod.models.comm.kmodel_kernels import senders_per_group_in_order

    rng = np.random.default_rng(3)
    for _ in range(50):
        p, nph, rpn, spn = int(rng.integers(2, 200)), int(rng.integers(1, 6)), int(rng.integers(1, 9)), 2
        src = np.sort(rng.integers(0, p, 600))
        phase = np.zeros(src.size, np.int64)
        for r in np.unique(src):  # each sender's phases ascending
            sel = np.flatnonzero(src == r)
            phase[sel] = np.sort(rng.integers(0, nph, sel.size))
        nodes, sockets = node_of(np.arange(p), rpn), socket_of(np.arange(p), rpn, spn)
        kn, ks = np.zeros(nph, np.int64), np.zeros(nph, np.int64)
        z = [np.zeros(nph, np.int64), np.zeros(nph, np.int64), np.empty(nph, np.int64), np.empty(nph, np.int64)]
        assert senders_per_group_in_order(phase, src, nodes, sockets, kn, ks, *z)
        for group, got in ((nodes, kn), (sockets, ks)):
            senders = defaultdict(set)
            for f, r in zip(phase.tolist(), src.tolist(), strict=True):
                senders[(f, int(group[r]))].add(r)
            want = [max((len(v) for (f, _), v in senders.items() if f == ph), default=0) for ph in range(nph)]
            assert got.tolist() == want
    src = np.array([3, 1])  # senders descending
    assert not senders_per_group_in_order(np.zeros(2, np.int64), src, nodes, sockets, kn, ks, *z)


@pytest.mark.parametrize("model", ["maxrate", "kmodel"])
def test_messages_costed_once_per_distinct_kind_equal_every_message_costed(model, monkeypatch):
    # message_costs costs each distinct (mode, bytes, phase) once; beyond _MAX_DISTINCT of them every message:
    # both give the same times, bit for bit (MiniFE: several sizes per phase, three modes)
    import numpy as np

    from perfmod.apps.traces import synthetic
    from perfmod.models.comm.network import bind
    from perfmod.replay import costs

    t = synthetic("minife", 64, 3)
    m, net = match_messages(t), bind("summit", model, "block", 64)
    once = costs.message_costs(t, m, net)
    monkeypatch.setattr(costs, "_MAX_DISTINCT", 2)
    every = costs.message_costs(t, m, net)
    assert np.unique(once.time).size > 2 and np.array_equal(once.time, every.time)
    assert np.array_equal(once.rndv, every.rndv)
