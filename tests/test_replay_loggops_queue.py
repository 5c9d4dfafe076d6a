"""The LogGOPS event loop's data layout and event queue (perfmod.replay.loggops_kernel; issue 23): the rows'
time-major order in closed form, and the radix queue giving events in exactly ``(time, sequence)`` order."""

import numpy as np
import pytest

from perfmod.replay import loggops_kernel as lk


def test_time_major_order_in_bands_of_each_rank_closed_form():
    # rank 0: nodes 0..4, rank 1: none, rank 2: nodes 5..6, rank 3: nodes 7..12; band 2
    rank = np.array([0] * 5 + [2] * 2 + [3] * 6)
    ndeps = np.array([0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1, 0])
    order, newpos, init, init_ptr = lk.time_major(rank, ndeps, 4, 2)
    # band 0: the first two nodes of ranks 0, 2, 3; band 1: the next two of ranks 0, 3; band 2: the fifth
    assert order.tolist() == [0, 1, 5, 6, 7, 8, 2, 3, 9, 10, 4, 11, 12]
    assert newpos[order].tolist() == list(range(13)) and order.dtype == newpos.dtype == np.int32
    assert init_ptr.tolist() == [0, 2, 2, 3, 5]
    assert order[init].tolist() == [0, 3, 5, 8, 12]  # each rank's nodes that require nothing, in node order
    band1 = lk.time_major(rank, ndeps, 4, 1)[0]
    assert band1.tolist() == [0, 5, 7, 1, 6, 8, 2, 9, 3, 10, 4, 11, 12]
    with pytest.raises(ValueError, match="rank order"):
        lk.time_major(np.array([1, 0]), np.zeros(2, dtype=np.int64), 2, 2)


def test_successor_lists_follow_the_rows():
    order = np.array([2, 0, 1], dtype=np.int32)
    newpos = np.array([1, 2, 0], dtype=np.int32)
    sp, succ = np.array([0, 2, 2, 3]), np.array([1, 2, 0])  # node 0 -> 1, 2; node 2 -> 0
    ssp, ssucc = np.array([0, 0, 1, 1]), np.array([2])  # node 1 irequires-frees 2
    eptr, edges = lk.time_major_edges(order, newpos, sp, succ, ssp, ssucc)
    # row 0 = node 2: done-successor node 0 (row 1); row 1 = node 0: rows 2, 0; row 2 = node 1: start-successor row 0
    assert eptr.tolist() == [0, 1, 1, 3, 3, 3, 4] and edges.tolist() == [1, 2, 0, 0]
    d, r, m = lk.by_node(order, np.array([30, 10, 20]), np.array([3, 1, 2]), np.array([1, 0, -1]))
    assert d.tolist() == [10, 20, 30] and r.tolist() == [1, 2, 3] and m.tolist() == [2, -1, 0]


def _queue(nn):
    nblk = nn // lk._BS + 2 * lk._NB + 2
    qs = np.zeros(6, dtype=np.int64)
    qs[lk._FREE] = nblk
    return (np.empty(nn + 2, dtype=np.int64), np.empty(2 * lk._BS * nblk, dtype=np.int64),
            np.full(nblk, -1, dtype=np.int64), np.arange(nblk)[::-1].copy(), np.full(lk._NB, -1, dtype=np.int64),
            np.full(lk._NB, -1, dtype=np.int64), np.zeros(lk._NB, dtype=np.int64), np.full(lk._NB, lk._FAR), qs)


def test_radix_queue_pops_in_time_then_sequence_order():
    rng = np.random.default_rng(7)
    cur, pool, bnext, fstk, bhead, btail, bfill, bmin, qs = _queue(5000)
    q = (cur, pool, bnext, bhead, btail, bfill, bmin, fstk, qs)
    seq, live, popped, expect = 0, {}, [], []
    times = np.array([0, 1, 2, 3, 1000, 1500, 2500, 10**6, 3 * 10**9, 2**40])
    for _ in range(20000):
        if live and (rng.random() < 0.5 or len(live) > 4000):
            if qs[lk._POS] == qs[lk._END]:
                lk._qrefill(*q)
            t, k = int(qs[lk._LAST]), int(cur[qs[lk._POS]])
            qs[lk._POS] = qs[lk._POS] + 1 if qs[lk._POS] + 1 < cur.size else 0
            qs[lk._LIVE] -= 1
            popped.append((t, k))
            expect.append(min(live.items(), key=lambda e: (e[1], e[0])))
            del live[k]
            if rng.random() < 0.3:  # an event that only moves in time keeps its sequence
                live[k] = t + int(rng.choice(times[1:]))
                lk._qpush(live[k], k, *q)
        else:
            now = int(qs[lk._LAST])
            # an event at the current time or later: a new sequence, or (later only) one that was queued before
            t = now + int(rng.choice(times)) * int(rng.integers(0, 3))
            k = seq << 32 | int(rng.integers(0, 1000))
            seq += 1
            live[k] = t
            lk._qpush(t, k, *q)
    assert [(t, k) for t, k in popped] == [(t, k) for k, t in expect]
    assert len(popped) > 5000 and len({t for t, _ in popped}) > 100


@pytest.mark.parametrize("case", ["random", "nearly", "reversed", "ties", "tiny"])
def test_the_refill_sorts_its_head_in_place_as_numpy_does(case):
    # _sort_head replaces cur[:e].sort() so that the loop allocates nothing: insertion sort while the entries are
    # nearly in order, heap sort once it has moved more than 8 n (random and reversed take that path)
    rng = np.random.default_rng(11)
    n = 3 if case == "tiny" else 2000
    a = {"random": rng.integers(0, 1 << 40, n), "nearly": np.arange(n) * 5 + rng.integers(0, 12, n),
         "reversed": np.arange(n)[::-1] << 32, "ties": rng.integers(0, 4, n), "tiny": np.array([9, 2, 5])}[case]
    buf = np.concatenate([a, [-7, -8]]).astype(np.int64)  # entries past n are not touched
    lk._sort_head(buf, n)
    assert buf[:n].tolist() == np.sort(a).tolist() and buf[n:].tolist() == [-7, -8]
    one = np.array([4, 1], dtype=np.int64)
    lk._sort_head(one, 1)
    assert one.tolist() == [4, 1]


def test_the_queue_files_a_time_by_its_bit_length_as_python_counts_it():
    from numba import njit

    from perfmod.core.bitlen import bit_length

    f = njit(lambda x: bit_length(x))
    values = [0, 1, 2, 3, 255, 256, 1500 * 10**3, 2**40, 2**62, 2**63 - 1]
    assert [f(np.int64(v)) for v in values] == [v.bit_length() for v in values] == [0, 1, 2, 2, 8, 9, 21, 41, 63, 63]
    assert f(np.int64(-1)) == 64 and f(np.int32(5)) == 3


def test_an_event_queued_before_the_current_time_is_counted():
    cur, pool, bnext, fstk, bhead, btail, bfill, bmin, qs = _queue(10)
    q = (cur, pool, bnext, bhead, btail, bfill, bmin, fstk, qs)
    lk._qpush(100, 1 << 32, *q)
    lk._qrefill(*q)
    assert qs[lk._LAST] == 100 and qs[lk._EARLY] == 0
    lk._qpush(99, 2 << 32, *q)  # the loop returns STATUS_EARLY then, which the replay raises as a bug
    assert qs[lk._EARLY] == 1


def test_the_replay_reports_the_operations_it_simulated():
    from perfmod.apps.traces import synthetic
    from perfmod.replay import replay
    from perfmod.replay.graph import build_graph
    from perfmod.trace.requests import resolve_requests

    t = synthetic("jacobi2d", 16, 2)
    ops = replay(t, "summit", "loggp").attrs["operations"]
    assert ops == len(build_graph(t, resolve_requests(t), t.compute)) and ops > 2 * len(t)
    assert "operations" not in replay(t, "summit", "postal").attrs
