"""Decompositions of Jacobi2D, MiniFE and MiniMD (paper 000 §4.2)."""

import numpy as np
import pytest

from perfmod import decomposition as D


def _symmetric(ex):
    pairs = set(zip(ex.src.tolist(), ex.dst.tolist(), strict=True))
    return all((d, s) in pairs for s, d in pairs)


def test_jacobi2d_grid_and_sizes():
    ex = D.jacobi2d(1536)
    assert ex.config["dims"] == [48, 32]
    assert set(ex.nbytes.tolist()) == {131072}  # 16384 doubles per face
    # non-periodic: corners 2, edges 3, interior 4 neighbours
    assert len(ex) == 4 * 1536 - 2 * (48 + 32)
    assert ex.neighbours(33) == {1: 131072, 65: 131072, 32: 131072, 34: 131072}
    assert _symmetric(ex)


def test_minife_bisection_grid_and_message_sizes():
    ex = D.minife(256)
    assert ex.config["grid"] == [8, 8, 4]
    assert ex.max_neighbours == 26
    assert sorted(set(ex.nbytes.tolist())) == [8, 200 * 8, 40000 * 8]  # corner, edge, face
    # consecutive ranks are y-neighbours (last split in y), ranks r and r+2 x-neighbours
    nb = ex.neighbours(0)
    assert nb[1] == 40000 * 8 and nb[2] == 40000 * 8 and nb[3] == 200 * 8
    assert _symmetric(ex)
    # non-periodic 8 x 8 x 4 boxes: messages = sum over ranks of in-grid neighbours
    per_dim = [np.array([2 if 0 < i < n - 1 else 1 for i in range(n)]) + 1 for n in (8, 8, 4)]
    expected = int(np.einsum("i,j,k->", *per_dim)) - 256
    assert len(ex) == expected


def test_minife_needs_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        D.minife(12)
    with pytest.raises(ValueError, match="periodic"):
        D.minife(8, periodic=True)


def test_minife_split_order_is_chois_fork():
    # Choi's fork: x first, then y, then z; upstream miniFE: z, y, x
    b = D.minife_boxes(8, (400, 400, 400))
    assert b[4].tolist() == [[200, 400], [0, 200], [0, 200]]  # rank 4: upper half of the x split
    assert b[1].tolist() == [[0, 200], [0, 200], [200, 400]]  # rank 1: last split in z
    up = D.minife_boxes(8, (400, 400, 400), first_axis=2, axis_step=2)
    assert up[4].tolist() == [[0, 200], [0, 200], [200, 400]]


def test_minife_general_counts_match_box_partition():
    # 12 ranks need a global box; boxes tile it and the neighbour list is symmetric
    ex = D.minife(12, global_box=(600, 400, 200))
    boxes = D.minife_boxes(12, (600, 400, 200))
    assert int(np.prod(boxes[:, :, 1] - boxes[:, :, 0], axis=1).sum()) == 600 * 400 * 200
    assert _symmetric(ex) and ex.max_sent <= 26 and len(ex) > 0
    # the general (pairwise) path agrees with the grid path for a power of two
    ex64 = D.minife(64)
    s, d, pts = D._touching_pairs(D.minife_boxes(64, (800, 800, 800)), pairwise=True)
    key = lambda a, b, c: sorted(zip(a.tolist(), b.tolist(), c.tolist(), strict=True))  # noqa: E731
    assert key(s, d, pts * 8) == key(ex64.src, ex64.dst, ex64.nbytes)


def test_minimd_border_and_grid():
    atoms = D.minimd_border_atoms(64)
    assert D.minimd_procgrid(1024, (64 * 16, 64 * 8, 64 * 8)) == (16, 8, 8)
    assert D.minimd_procgrid(1024, (1, 1, 1)) == (8, 8, 16)  # cubic global box
    assert D.minimd(1024, procgrid=(8, 8, 16)).config["dims"] == [8, 8, 16]
    a = (4 / 0.8442) ** (1 / 3)
    assert atoms[0] == round(0.8442 * (64 * a) ** 2 * 2.8)
    assert atoms[0] < atoms[1] < atoms[2]
    ex = D.minimd(1024)
    assert ex.config["dims"] == [16, 8, 8]
    assert len(ex) == 6 * 1024 and ex.max_neighbours == 6 == ex.max_sent
    assert _symmetric(ex)
    # 4 * 64^3 atoms per subdomain (FCC): about one million, as the paper says
    assert 4 * 64**3 == 1_048_576


def test_minimd_size_two_dimension_sends_twice_to_same_rank():
    ex = D.minimd(8)  # (2, 2, 2) periodic grid
    assert len(ex) == 48
    assert sum(1 for d in ex.dst[ex.src == 0] if d == 4) == 2


def test_minimd_size_one_dimension_has_no_self_messages():
    ex = D.minimd(4, procgrid=(4, 1, 1))
    assert len(ex) == 8 and not np.any(ex.src == ex.dst)


def test_dispatch_and_errors():
    assert D.exchange("MiniMD", 8).app == "minimd"
    with pytest.raises(ValueError, match="known apps"):
        D.exchange("lulesh", 8)
    with pytest.raises(ValueError, match="nprocs"):
        D.jacobi2d(-1)
    with pytest.raises(ValueError, match="multiply"):
        D.jacobi2d(6, dims=(2, 2))
