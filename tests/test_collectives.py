"""Collectives on top of the point-to-point model (paper 002 §1.2, paper 003 Eq. 6)."""

import numpy as np
import pytest

from perfmod.machine.platforms import load
from perfmod.models.comm import collectives as C

SUMMIT = load("summit")


def test_recursive_doubling_power_of_two():
    steps = C.recursive_doubling_steps(8)
    assert len(steps) == 3
    for i, (src, dst) in enumerate(steps):
        assert np.array_equal(dst, src ^ (1 << i))


def test_recursive_doubling_non_power_of_two_folds():
    # P = 6: P' = 4, r = 2 -> fold, lg 4 = 2 exchanges, unfold
    steps = C.recursive_doubling_steps(6)
    assert len(steps) == 4
    assert steps[0][0].tolist() == [1, 3] and steps[0][1].tolist() == [0, 2]
    assert steps[1][0].tolist() == [0, 2, 4, 5] and steps[1][1].tolist() == [2, 0, 5, 4]
    assert steps[-1][1].tolist() == [1, 3]


def test_binomial_tree_has_ceil_lg_p_steps():
    for p in (1, 2, 3, 6, 8, 1000):
        assert len(C.binomial_tree_steps(p)) == int(np.ceil(np.log2(p)))
    s = C.binomial_tree_steps(6)
    assert [x.tolist() for x, _ in s] == [[1, 3, 5], [2], [4]]
    # every rank but the root sends exactly once
    assert sorted(np.concatenate([x for x, _ in C.binomial_tree_steps(1000)]).tolist()) == list(range(1, 1000))


def test_allreduce_one_rank_is_free():
    assert C.allreduce_recursive_doubling(8, 1, SUMMIT) == 0


def test_allreduce_node_aware_hand_computed():
    # 12 ranks on 2 Summit nodes (6 per node, 3 per socket), one double, postal, short protocol.
    # fold pairs (1,0),(3,2),(5,4),(7,6): (3,2) crosses sockets -> inter-socket step;
    # exchange pairs include (4,6) across nodes in every step -> 3 inter-node steps; unfold as fold.
    t = C.allreduce_recursive_doubling(8, 12, SUMMIT)
    expected = 2 * (8.52e-7 + 8 * 3.33e-10) + 3 * (1.24e-6 + 8 * 1.01e-9)
    assert float(t) == pytest.approx(expected, rel=1e-12)


def test_allreduce_within_a_socket_is_intra_socket():
    t = C.allreduce_recursive_doubling(8, 2, SUMMIT)
    assert float(t) == pytest.approx(4.79e-7 + 8 * 2.99e-10)


def test_reduce_lg_p_with_custom_p2p():
    # paper 003 Eq. 6: a global reduction costs lg(P) * K_r
    t = C.reduce_binomial(8, 64, SUMMIT, p2p=lambda n, mode: 1e-6)
    assert float(t) == pytest.approx(6e-6)
    assert float(C.bcast_binomial(8, 64, SUMMIT, p2p=lambda n, mode: 1e-6)) == pytest.approx(6e-6)


def test_gamma_and_vector_sizes():
    n = np.array([8.0, 8e3])
    t0 = C.allreduce_recursive_doubling(n, 4, SUMMIT, p2p=lambda n, mode: 0 * n)
    t1 = C.allreduce_recursive_doubling(n, 4, SUMMIT, gamma=1e-9, p2p=lambda n, mode: 0 * n)
    assert np.allclose(t1 - t0, 2 * 1e-9 * n)


def test_bad_nprocs():
    with pytest.raises(ValueError, match="nprocs"):
        C.allreduce_recursive_doubling(8, 0, SUMMIT)


def test_collective_time_dispatch():
    assert float(C.collective_time("allreduce", 8, 12, SUMMIT)) == float(C.allreduce_recursive_doubling(8, 12, SUMMIT))
    with pytest.raises(ValueError, match="unknown collective"):
        C.collective_time("scan", 8, 4, SUMMIT)
