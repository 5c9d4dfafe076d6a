"""Rank placement, MPI_Dims_create, Cartesian grids and K-model counts (paper 000 §3.1, Table 5)."""

import time
from types import SimpleNamespace

import numpy as np
import pytest
from mpi4py import MPI

from perfmod import topology as T


def test_dims_create_matches_mpich():
    for d in (2, 3):
        for n in range(1, 2001):
            assert T.dims_create(n, d) == tuple(MPI.Compute_dims(n, d)), (n, d)


def test_block_mapping_summit():
    r = np.arange(12)
    assert T.node_of(r, 6).tolist() == [0] * 6 + [1] * 6
    assert T.socket_of(r, 6, 2).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    modes = T.pair_modes([0, 0, 0], [2, 3, 6], 6, 2)
    assert [T.MODES[m] for m in modes] == ["intra_socket", "inter_socket", "inter_node"]


def test_round_robin_mapping():
    r = np.arange(8)
    assert T.node_of(r, 4, "round_robin", nnodes=2).tolist() == [0, 1] * 4
    # 4 ranks per node, 2 sockets: node-local index r // 2 -> socket (r // 2) // 2
    assert T.socket_of(r, 4, 2, "round_robin", nnodes=2).tolist() == [0, 2, 0, 2, 1, 3, 1, 3]
    with pytest.raises(ValueError, match="needs nnodes"):
        T.node_of(r, 4, "round_robin")


def test_cartesian_round_trip_and_boundaries():
    dims = (4, 3, 5)
    ranks = np.arange(60)
    c = T.cart_coords(ranks, dims)
    assert np.array_equal(T.cart_rank(c, dims), ranks)
    assert c[1].tolist() == [0, 0, 1]  # last dimension fastest (row-major, as MPI)
    assert T.cart_rank([[-1, 0, 0]], dims, False).tolist() == [-1]
    assert T.cart_rank([[-1, 0, 0]], dims, True).tolist() == [45]


def test_section_3_1_example():
    # 48 ranks, 6 per node, periodic 2D halo exchange: K_inter 12, K_total 24, k 3
    c = T.kmodel_counts("jacobi2d", None, 48, ranks_per_node=6, periodic=True)
    assert (c.k_inter, c.k_total, c.k) == (12, 24, 3.0)
    assert c.config["dims"] == [8, 6]


@pytest.mark.parametrize(
    ("app", "rpn", "nprocs", "k_inter", "k_total", "k"),
    [
        ("jacobi2d", 6, 1536, 14, 24, 3.50),
        ("jacobi2d", 4, 768, 10, 16, 2.50),
        ("jacobi2d", 2, 6, 4, 8, 1.00),
        ("minife", 4, 256, 92, 104, 3.54),
        ("minife", 2, 256, 50, 52, 1.92),
        ("minimd", 6, 1024, 28, 36, 4.67),
        ("minimd", 4, 1024, 18, 24, 3.00),
        ("minimd", 2, 1024, 10, 12, 1.67),
    ],
)
def test_table5_reproduced(app, rpn, nprocs, k_inter, k_total, k):
    c = T.kmodel_counts(app, None, nprocs, ranks_per_node=rpn)
    assert (c.k_inter, c.k_total, round(c.k, 2)) == (k_inter, k_total, k)


def test_table5_minife_summit_not_reproduced():
    # Table 5 gives K_inter 135; the 256-rank bisection with 6 ranks per node gives 118.
    c = T.kmodel_counts("minife", None, 256, ranks_per_node=6)
    assert (c.k_inter, c.k_total, c.k_total_counted) == (118, 156, 138)


def test_k_total_rules():
    # Bridges Jacobi2D: 3 x 2 non-periodic grid, at most 3 neighbours -> counted 6; Table 5 has 8 = 2 x 4
    kw = dict(ranks_per_node=2)
    assert T.kmodel_counts("jacobi2d", None, 6, k_total_rule="counted", **kw).k_total == 6
    c = T.kmodel_counts("jacobi2d", None, 6, **kw)
    assert (c.k_total, c.max_neighbours, c.max_sent, c.k_total_counted) == (8, 4, 3, 6)
    # MiniFE Summit: 156 = 6 x 26 by the default rule; no node sends that many
    c = T.kmodel_counts("minife", None, 256, ranks_per_node=6)
    assert c.k_total == 156 and c.k_total_counted < 156
    with pytest.raises(ValueError, match="k_total_rule"):
        T.kmodel_counts("jacobi2d", None, 6, k_total_rule="guess", **kw)


def test_platform_objects_and_names():
    summit = SimpleNamespace(name="summit", ranks_per_node=6, sockets_per_node=2)
    assert T.node_of([5, 6], summit).tolist() == [0, 1]
    assert T.socket_of([2, 3], summit).tolist() == [0, 1]
    assert T.pair_modes([0, 0, 0], [1, 4, 7], summit).tolist() == [0, 1, 2]
    a = T.kmodel_counts("jacobi2d", summit, 1536)
    b = T.kmodel_counts("jacobi2d", 6, 1536)
    assert (a.k_inter, a.k_total) == (b.k_inter, b.k_total) == (14, 24)


def test_minimd_grid_orientation_does_not_change_table5():
    # miniMD's procs2grid on a cubic box picks (8, 8, 16) instead of (16, 8, 8): same K counts
    for rpn, k_inter in ((6, 28), (4, 18), (2, 10)):
        c = T.kmodel_counts("minimd", None, 1024, ranks_per_node=rpn, procgrid=(8, 8, 16))
        assert c.k_inter == k_inter


def test_table5_reproduction_frame():
    df = T.table5_reproduction()
    assert list(df.columns) == [
        "app",
        "platform",
        "nprocs",
        "config",
        "k_inter_paper",
        "k_total_paper",
        "k_paper",
        "k_inter",
        "k_total",
        "k",
        "reproduced",
        "why",
    ]
    assert len(df) == 9 and df.reproduced.sum() == 8
    bad = df[~df.reproduced].iloc[0]
    assert (bad.app, bad.platform, bad.k_inter, bad.k_total) == ("minife", "summit", 118, 156)
    assert "135" in bad.why
    assert (df.why[df.reproduced] == "").all()


def test_round_robin_counts():
    # round-robin over 8 nodes of a 48-rank periodic 8 x 6 grid: ranks r, r+8, ... share a node;
    # r and r+8 are not neighbours in the 8 x 6 grid (r+6 and r+1 are), so all 4 messages leave the node
    c = T.kmodel_counts("jacobi2d", None, 48, ranks_per_node=6, mapping="round_robin", periodic=True)
    assert (c.k_inter, c.k_total) == (24, 24)


def test_kmodel_performance_16k():
    t0 = time.perf_counter()
    for app in ("jacobi2d", "minife", "minimd"):
        T.kmodel_counts(app, None, 16384, ranks_per_node=6)
    assert time.perf_counter() - t0 < 3.0


def test_counts_from_raw_messages():
    # two nodes of two ranks, a ring 0->1->2->3->0: node 0 sends 1 inter-node message (1->2)
    c = T.kmodel_counts_from([0, 1, 2, 3], [1, 2, 3, 0], 4, 2)
    assert (c.k_inter, c.k_total, c.k) == (1, 2, 1.0)


def test_platform_by_name_and_errors():
    assert T.kmodel_counts("minimd", "lassen", 1024).k_prime == 4
    with pytest.raises(ValueError, match="unknown app"):
        T.kmodel_counts("hpl", None, 4, ranks_per_node=2)
    with pytest.raises(ValueError, match="ranks_per_node"):
        T.kmodel_counts("jacobi2d", None, 4)
    with pytest.raises(ValueError, match="nprocs must be a positive integer"):
        T.kmodel_counts("jacobi2d", None, 0, ranks_per_node=2)
    with pytest.raises(ValueError, match="ranks_per_node must be a positive integer"):
        T.kmodel_counts("jacobi2d", None, 4, ranks_per_node=0)
    with pytest.raises(ValueError, match="unknown mapping"):
        T.node_of([0], 2, "scatter")
