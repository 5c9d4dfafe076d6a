"""Rank placement, MPI_Dims_create, Cartesian grids and K-model counts (paper 000 §3.1, Table 5)."""

import sys
import time
import types

import numpy as np
import pytest
from mpi4py import MPI

from perfmod.apps.registry import exchange, kmodel_counts
from perfmod.machine.cart import cart_coords, cart_rank, cart_shift, dims_create
from perfmod.machine.mapping import mode_names, node_of, pair_modes, socket_of
from perfmod.models.comm.kmodel import kmodel_counts_from
from perfmod.studies.papers.choi2020 import TABLE5_CONFIGS, table5_reproduction

SUMMIT = types.SimpleNamespace(name="summit", ranks_per_node=6, sockets_per_node=2)
LASSEN = types.SimpleNamespace(name="lassen", ranks_per_node=4, sockets_per_node=2)
BRIDGES = types.SimpleNamespace(name="bridges", ranks_per_node=2, sockets_per_node=2)
PLATFORMS = {"summit": SUMMIT, "lassen": LASSEN, "bridges": BRIDGES}


# ------------------------------------------------------------------ grids


def test_dims_create_matches_mpich():
    for d in (2, 3):
        for n in range(1, 2001):
            assert dims_create(n, d) == tuple(MPI.Compute_dims(n, d)), (n, d)
    for n in (1, 7, 64, 96, 360, 1000):
        assert dims_create(n, 4) == tuple(MPI.Compute_dims(n, 4)), n
    for n in (3072, 6144, 12288, 16384, 65536):
        assert dims_create(n, 2) == tuple(MPI.Compute_dims(n, 2)), n


def test_dims_create_errors():
    with pytest.raises(ValueError, match="nnodes must be a positive integer"):
        dims_create(0, 2)
    with pytest.raises(ValueError, match="ndims must be a positive integer"):
        dims_create(4, 0)


def test_cartesian_round_trip_and_boundaries():
    dims = (4, 3, 5)
    ranks = np.arange(60)
    c = cart_coords(ranks, dims)
    assert np.array_equal(cart_rank(c, dims), ranks)
    assert c[1].tolist() == [0, 0, 1]  # last dimension fastest (row-major, as MPI)
    assert cart_rank([[-1, 0, 0]], dims, False).tolist() == [-1]
    assert cart_rank([[-1, 0, 0]], dims, True).tolist() == [45]
    assert cart_rank([[-1, 0, 0]], dims, (True, False, False)).tolist() == [45]
    with pytest.raises(ValueError, match="periods has 2 entries"):
        cart_rank([[0, 0, 0]], dims, (True, False))


def test_cart_shift_like_mpi():
    # 4 x 3 grid, rank 4 = (1, 1): dim 0 neighbours 1 and 7, dim 1 neighbours 3 and 5
    src, dst = cart_shift([4, 0, 11], (4, 3), 0)
    assert src.tolist() == [1, -1, 8] and dst.tolist() == [7, 3, -1]
    src, dst = cart_shift([4, 0, 11], (4, 3), 1, periods=True)
    assert src.tolist() == [3, 2, 10] and dst.tolist() == [5, 1, 9]
    with pytest.raises(ValueError, match="direction 2"):
        cart_shift([0], (4, 3), 2)


# ------------------------------------------------------------------ mapping


def test_block_mapping_summit():
    r = np.arange(12)
    assert node_of(r, 6).tolist() == [0] * 6 + [1] * 6
    assert socket_of(r, 6, 2).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    modes = pair_modes([0, 0, 0], [2, 3, 6], 6, 2)
    assert modes.tolist() == [0, 1, 2]
    assert mode_names(modes).tolist() == ["intra_socket", "inter_socket", "inter_node"]


def test_block_mapping_lassen_and_bridges():
    # Lassen: 4 ranks, 2 per socket; Bridges: 2 ranks, one per socket (000 Table 1, §4.1)
    assert mode_names(pair_modes([0, 0, 0], [1, 2, 4], 4, 2)).tolist() == [
        "intra_socket", "inter_socket", "inter_node"]
    assert mode_names(pair_modes([0, 0], [1, 2], 2, 2)).tolist() == ["inter_socket", "inter_node"]


def test_round_robin_mapping():
    r = np.arange(8)
    assert node_of(r, 4, "round_robin", nnodes=2).tolist() == [0, 1] * 4
    # node-local index r // 2 fills sockets of 2 ranks
    assert socket_of(r, 4, 2, "round_robin", nnodes=2).tolist() == [0, 2, 0, 2, 1, 3, 1, 3]
    with pytest.raises(ValueError, match="needs nnodes"):
        node_of(r, 4, "round_robin")
    with pytest.raises(ValueError, match="unknown mapping 'scatter'"):
        node_of([0], 2, "scatter")
    with pytest.raises(ValueError, match="differ in shape"):
        pair_modes([0, 1], [1], 2, 2)


@pytest.mark.parametrize(("rpn", "spn", "mapping", "nnodes"), [(6, 2, "block", None), (7, 3, "block", None),
                                                           (4, 2, "round_robin", 300), (40, 2, "round_robin", 31)])
def test_many_pairs_looked_up_per_rank_agree_with_the_socket_formula(rpn, spn, mapping, nnodes):
    # from 4,096 pairs the modes come from per-rank socket and node tables; below, from socket_of itself
    rng = np.random.default_rng(rpn)
    src, dst = rng.integers(0, 1200, 5000), rng.integers(0, 1200, 5000)
    many = pair_modes(src, dst, rpn, spn, mapping, nnodes)
    few = np.concatenate([pair_modes(src[a:a + 1000], dst[a:a + 1000], rpn, spn, mapping, nnodes)
                          for a in range(0, 5000, 1000)])
    ss, sd = (socket_of(x, rpn, spn, mapping, nnodes) for x in (src, dst))
    assert many.tolist() == few.tolist() == np.where(ss // spn != sd // spn, 2, np.where(ss != sd, 1, 0)).tolist()
    assert set(many.tolist()) == {0, 1, 2}


# ------------------------------------------------------------------ K-model


@pytest.mark.parametrize("mapping", ["block", "round_robin"])
@pytest.mark.parametrize(("rule", "stencil"), [("counted", None), ("kprime_x_maxneighbours", None),
                                               ("kprime_x_stencil", 4)])
def test_counts_per_phase_in_one_pass_agree_with_each_phase_counted_alone(mapping, rule, stencil):
    from perfmod.models.comm.kmodel import kmodel_counts_per_phase

    rng = np.random.default_rng(7)
    p, nph = 50, 6
    src, dst = rng.integers(0, p, 400), rng.integers(0, p, 400)
    phase = rng.choice([0, 1, 2, 4, 5], 400)  # phase 3 has no message
    ki, kt, kp = kmodel_counts_per_phase(phase, src, dst, nph, p, 6, mapping, stencil, rule)
    for f in range(nph):
        sel = phase == f
        if not sel.any():
            assert (ki[f], kt[f], kp[f]) == (0.0, 1.0, 6.0)
            continue
        c = kmodel_counts_from(src[sel], dst[sel], p, 6, mapping, stencil, rule)
        assert (ki[f], kt[f], kp[f]) == (c.k_inter, c.k_total, c.k_prime)
        assert c.k_inter > 0
    with pytest.raises(ValueError, match="needs stencil"):
        kmodel_counts_per_phase(phase, src, dst, nph, p, 6, mapping, None, "kprime_x_stencil")
    # in trace order (senders ascending, each sender's phases ascending): one sequential pass under block mapping
    o = np.lexsort((phase, src))
    assert [a.tolist() for a in kmodel_counts_per_phase(phase[o], src[o], dst[o], nph, p, 6, mapping, stencil, rule)] \
        == [ki.tolist(), kt.tolist(), kp.tolist()]


def test_section_3_1_example():
    # 48 ranks on 8 Summit nodes, 6 x 8 grid, periodic: K_inter 12, K_total 24, k 3 (§3.1, Fig. 1)
    c = kmodel_counts("jacobi2d", SUMMIT, 48, periodic=True)
    assert (c.k_inter, c.k_total, c.k_prime, c.k) == (12, 24, 6, 3.0)
    assert c.k_total_counted == 24 and c.config["dims"] == [8, 6]
    # Fig. 1: ranks 0-5 (the first column) on the first node
    assert node_of(np.arange(6), 6).tolist() == [0] * 6


@pytest.mark.parametrize(("app", "platform"), [k for k in TABLE5_CONFIGS if k != ("minife", "summit")])
def test_table5_reproduced(app, platform):
    paper = {  # 000 Table 5: K_inter, K_total, k
        ("jacobi2d", "summit"): (14, 24, 3.50), ("jacobi2d", "lassen"): (10, 16, 2.50),
        ("jacobi2d", "bridges"): (4, 8, 1.00), ("minife", "lassen"): (92, 104, 3.54),
        ("minife", "bridges"): (50, 52, 1.92), ("minimd", "summit"): (28, 36, 4.67),
        ("minimd", "lassen"): (18, 24, 3.00), ("minimd", "bridges"): (10, 12, 1.67),
    }[(app, platform)]
    c = kmodel_counts(app, PLATFORMS[platform], TABLE5_CONFIGS[(app, platform)]["nprocs"])
    assert (c.k_inter, c.k_total, round(c.k, 2)) == paper


def test_table5_minife_summit_not_reproduced():
    # Table 5 prints K_inter 135; the 256-rank trace configuration with 6 ranks per node gives 118
    c = kmodel_counts("minife", SUMMIT, 256)
    assert (c.k_inter, c.k_total, c.k_total_counted, round(c.k, 2)) == (118, 156, 138, 4.54)
    assert c.config["grid"] == [8, 8, 4]


def test_table5_reproduction_frame():
    df = table5_reproduction()
    assert list(df.columns) == ["app", "platform", "nprocs", "config", "k_inter_paper", "k_total_paper",
                                "k_paper", "k_inter", "k_total", "k", "reproduced", "why"]
    assert len(df) == 9 and int(df.reproduced.sum()) == 8
    bad = df[~df.reproduced].iloc[0]
    assert (bad.app, bad.platform, bad.k_inter, bad.k_inter_paper) == ("minife", "summit", 118, 135)
    assert "DUMPI" in bad.why
    assert (df.why.str.len() > 0).all()
    # the other K_total rules reproduce fewer cells
    assert int(table5_reproduction("counted").reproduced.sum()) == 7
    assert int(table5_reproduction("kprime_x_maxneighbours").reproduced.sum()) == 7


def test_k_total_rules():
    # Bridges Jacobi2D: 3 x 2 non-periodic grid, at most 3 neighbours -> counted 6; Table 5 has 8 = 2 x 4
    kw = dict(ranks_per_node=2)
    assert kmodel_counts("jacobi2d", None, 6, k_total_rule="counted", **kw).k_total == 6
    assert kmodel_counts("jacobi2d", None, 6, k_total_rule="kprime_x_maxneighbours", **kw).k_total == 6
    assert kmodel_counts("jacobi2d", None, 6, **kw).k_total == 8
    # MiniFE Summit: counted 138, k' x max neighbours 6 x 26 = 156
    assert kmodel_counts("minife", SUMMIT, 256, k_total_rule="kprime_x_maxneighbours").k_total == 156
    with pytest.raises(ValueError, match="unknown k_total_rule"):
        kmodel_counts("jacobi2d", SUMMIT, 6, k_total_rule="max")


def test_jacobi2d_matches_choi_summit_measurements():
    # maxima of Choi's per-node counts, minitu/jacobi2d summit-kmodel/ht-n<P>-s16384.* (6 ranks per node)
    measured = {12: 3, 24: 9, 48: 12, 96: 14, 192: 13, 384: 14, 768: 14, 1536: 14}
    for p, k_inter in measured.items():
        assert kmodel_counts("jacobi2d", SUMMIT, p).k_inter == k_inter, p


def test_minimd_matches_choi_k_mode_measurements():
    # Choi's K_MODE counters (minitu/miniMD master, kokkos/k-model/{summit,lassen}/k-n<P>.out), max per node
    measured = {("summit", 256): 26, ("summit", 512): 28, ("summit", 1024): 28,
                ("lassen", 256): 16, ("lassen", 512): 18}
    for (plat, p), k_inter in measured.items():
        c = kmodel_counts("minimd", PLATFORMS[plat], p)
        assert (c.k_inter, c.k_total_counted) == (k_inter, 6 * PLATFORMS[plat].ranks_per_node), (plat, p)


def test_counts_from_raw_messages():
    # two nodes of two ranks, a ring 0->1->2->3->0: node 0 sends 1 inter-node message (1->2)
    c = kmodel_counts_from([0, 1, 2, 3], [1, 2, 3, 0], 4, 2)
    assert (c.k_inter, c.k_total, c.k, c.nnodes) == (1, 2, 1.0, 2)
    c = kmodel_counts_from([0, 1, 2, 3], [1, 2, 3, 0], 4, 2, mapping="round_robin")
    assert (c.k_inter, c.k_total) == (2, 2)  # nodes {0, 2}, {1, 3}: every message leaves its node
    assert kmodel_counts_from([], [], 4, 2).k == 0.0
    with pytest.raises(ValueError, match="outside 0..3"):
        kmodel_counts_from([0], [4], 4, 2)
    with pytest.raises(ValueError, match="needs stencil"):
        kmodel_counts_from([0], [1], 4, 2, k_total_rule="kprime_x_stencil")


def test_fewer_ranks_than_a_node():
    c = kmodel_counts("jacobi2d", SUMMIT, 4)
    assert (c.k_inter, c.k_prime, c.k) == (0, 4, 0.0)


def test_exchange_input_and_overrides():
    ex = exchange("minimd", 1024)
    assert kmodel_counts(ex, LASSEN).k_inter == 18
    assert kmodel_counts(ex, LASSEN, 1024, ranks_per_node=6).k_inter == 28  # what-if override
    with pytest.raises(ValueError, match="differs from the Exchange"):
        kmodel_counts(ex, LASSEN, 512)
    with pytest.raises(ValueError, match="apply to an app name"):
        kmodel_counts(ex, LASSEN, periodic=False)


def test_platform_by_name_loaded_lazily(monkeypatch):
    fake = types.ModuleType("perfmod.machine.platforms")
    fake.load = lambda name: PLATFORMS[name]
    monkeypatch.setitem(sys.modules, "perfmod.machine.platforms", fake)
    assert kmodel_counts("minimd", "lassen", 1024).k_prime == 4


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="unknown app 'hpl'; known apps: jacobi2d, minife, minimd"):
        kmodel_counts("hpl", SUMMIT, 4)
    for bad in (0, -3, 2.5, None, True):
        with pytest.raises(ValueError, match="nprocs must be a positive integer"):
            kmodel_counts("jacobi2d", SUMMIT, bad)
    with pytest.raises(ValueError, match="ranks_per_node must be a positive integer"):
        kmodel_counts("jacobi2d", SUMMIT, 4, ranks_per_node=0)
    with pytest.raises(ValueError, match="ranks_per_node must be a positive integer"):
        kmodel_counts("jacobi2d", types.SimpleNamespace(ranks_per_node=-1), 4)
    with pytest.raises(ValueError, match="give a platform"):
        kmodel_counts("jacobi2d", None, 4)
    with pytest.raises(ValueError, match="has no ranks_per_node"):
        kmodel_counts("jacobi2d", object(), 4)
    with pytest.raises(ValueError, match="unknown mapping"):
        kmodel_counts("jacobi2d", SUMMIT, 12, mapping="cyclic")


def test_speed_and_large_scale():
    t0 = time.perf_counter()
    for app in ("jacobi2d", "minife", "minimd"):
        kmodel_counts(app, SUMMIT, 1536)
    assert time.perf_counter() - t0 < 1.5  # three apps; each is well under a second
    big = {app: kmodel_counts(app, SUMMIT, 16384) for app in ("jacobi2d", "minife", "minimd")}
    assert big["jacobi2d"].config["dims"] == [128, 128] and big["jacobi2d"].k_inter == 14
    assert big["minife"].config["grid"] == [32, 32, 16] and big["minife"].max_neighbours == 26
    assert big["minimd"].config["dims"] == [32, 32, 16] and big["minimd"].k_total == 36
