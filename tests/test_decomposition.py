"""Decompositions of Jacobi2D, MiniFE and MiniMD (paper 000 §4.2).

Reference facts come from the DUMPI traces stored with the proxies the
paper ran (github.com/minitu/jacobi2d ``lassen-dumpi``, minitu/miniFE
``cuda/src/dumpi/lassen``, minitu/miniMD master ``kokkos/dumpi/lassen``),
read with sst-dumpi's ``dumpi2ascii``; counts below are in doubles.
"""

import numpy as np
import pytest

from perfmod.apps.jacobi2d import decompose as jacobi2d
from perfmod.apps.minife import box_partition
from perfmod.apps.minife import decompose as minife
from perfmod.apps.minife import default_global_box as minife_global_box
from perfmod.apps.minimd import decompose as minimd
from perfmod.apps.minimd import fcc_lattice_constant, minimd_border_atoms, minimd_procgrid
from perfmod.apps.registry import exchange
from perfmod.machine.cart import dims_create


def _pairs(dst, nbytes):
    return list(zip(dst.tolist(), (nbytes // 8).tolist(), strict=True))


def _symmetric(ex):
    pairs = set(zip(ex.src.tolist(), ex.dst.tolist(), strict=True))
    return all((d, s) in pairs for s, d in pairs)


# ------------------------------------------------------------------ Jacobi2D


def test_jacobi2d_grid_and_sizes():
    ex = jacobi2d(1536)
    assert ex.config["dims"] == [48, 32]
    assert set(ex.nbytes.tolist()) == {131072}  # 16384 doubles per face
    # non-periodic: corners 2, edges 3, interior 4 neighbours
    assert len(ex) == 4 * 1536 - 2 * (48 + 32)
    assert ex.neighbours(33) == {1: 131072, 65: 131072, 32: 131072, 34: 131072}
    assert _symmetric(ex) and ex.max_neighbours == 4


def test_jacobi2d_matches_lassen_trace():
    # jacobi2d lassen-dumpi/n1024-0033.bin: Isend to 32, 34, 65, 1 (16384 doubles); rank 0 to 1 and 32
    ex = jacobi2d(1024)
    assert ex.config["dims"] == [32, 32]
    assert ex.neighbours(33) == {d: 16384 * 8 for d in (32, 34, 65, 1)}
    assert ex.neighbours(0) == {1: 16384 * 8, 32: 16384 * 8}


def test_jacobi2d_periodic_and_dims():
    ex = jacobi2d(48, periodic=True, block=10)
    assert len(ex) == 4 * 48 and set(ex.nbytes.tolist()) == {80}
    assert jacobi2d(6, dims=(2, 3)).config["dims"] == [2, 3]
    with pytest.raises(ValueError, match="multiply to nprocs=6"):
        jacobi2d(6, dims=(2, 2))
    # a periodic dimension of size 2: both neighbours are the same rank, two messages
    ex = jacobi2d(4, periodic=True)
    d, _ = ex.messages(0)
    assert sorted(d.tolist()) == [1, 1, 2, 2]


# ------------------------------------------------------------------ MiniFE


def test_minife_global_box_convention():
    # DUMPI headers / scripts: -nx -ny -nz of the paper's runs
    assert minife_global_box(2) == (400, 200, 200)
    assert minife_global_box(16) == (800, 400, 400)
    assert minife_global_box(256) == (1600, 1600, 800)
    assert minife_global_box(1024) == (3200, 1600, 1600)
    for p in (2**k for k in range(13)):
        boxes = box_partition(p, minife_global_box(p))
        assert (boxes[:, :, 1] - boxes[:, :, 0] == 200).all(), p


def test_box_partition_rule_uneven():
    # 3 ranks of 10^3: lower 1 rank gets 10 - int(10 * 2/3) = 4 in x; the upper 2 split y 5 | 5
    b = box_partition(3, (10, 10, 10))
    assert b[0].tolist() == [[0, 4], [0, 10], [0, 10]]
    assert b[1].tolist() == [[4, 10], [0, 5], [0, 10]]
    assert b[2].tolist() == [[4, 10], [5, 10], [0, 10]]
    for p, g in ((7, (30, 20, 10)), (12, (100, 100, 100)), (1000, (2000, 2000, 2000))):
        b = box_partition(p, g)
        vol = np.prod(b[:, :, 1] - b[:, :, 0], axis=1)
        assert vol.sum() == np.prod(g) and (vol > 0).all()
    with pytest.raises(ValueError, match="3 positive element counts"):
        box_partition(4, (10, 10))


def test_minife_matches_lassen_traces():
    # messages of the first matvec exchange, summed over all ranks (DUMPI traces n2 ... n256)
    totals = {2: 2, 4: 12, 8: 56, 16: 144, 32: 368, 64: 936, 128: 2072, 256: 4584}
    for p, n in totals.items():
        assert len(minife(p)) == n, p
    # n16-0001: rank 1's Isends (doubles)
    expected = {0: 40000, 2: 200, 3: 40000, 4: 200, 5: 40000, 6: 1, 7: 200, 8: 40000, 10: 200, 12: 200, 14: 1}
    assert minife(16).neighbours(1) == {k: 8 * v for k, v in expected.items()}
    ex = minife(256)
    assert sorted(set((ex.nbytes // 8).tolist())) == [1, 200, 201, 40000, 40200, 40401]
    assert ex.config["grid"] == [8, 8, 4] and ex.max_neighbours == 26 and _symmetric(ex)


def test_minife_general_counts_brute_force():
    for p in (3, 7, 12, 100, 1000):
        ex = minife(p)
        b = box_partition(p, minife_global_box(p))
        lo, hi = b[:, :, 0], b[:, :, 1]
        a, c = (x.ravel() for x in np.meshgrid(np.arange(p), np.arange(p), indexing="ij"))
        touch = (a != c) & np.all((lo[a] <= hi[c]) & (lo[c] <= hi[a]), axis=1)
        expected = set(zip(a[touch].tolist(), c[touch].tolist(), strict=True))
        assert expected == set(zip(ex.src.tolist(), ex.dst.tolist(), strict=True)), p
        assert _symmetric(ex)
    # uneven boxes can touch more than 26 others
    assert minife(1536).max_neighbours == 32


def test_minife_errors():
    with pytest.raises(ValueError, match="without elements"):
        minife(64, global_box=(2, 2, 2))
    with pytest.raises(ValueError, match="nprocs must be a positive integer"):
        minife(0)
    with pytest.raises(ValueError, match="box must be"):
        minife(8, box=0)


# ------------------------------------------------------------------ MiniMD


def test_minimd_border_atoms_match_trace():
    # minitu/miniMD kokkos/dumpi/lassen/n512-0000: 98304, 73728, 103680, 77760, 109350, 82011 doubles
    atoms = minimd_border_atoms(64)
    assert atoms.tolist() == [[32768, 24576], [34560, 25920], [36450, 27337]]
    assert 4 * 64**3 == 1_048_576  # atoms per rank ("one million")
    assert fcc_lattice_constant() == pytest.approx((4 / 0.8442) ** (1 / 3))
    with pytest.raises(ValueError, match="smaller than cutneigh"):
        minimd_border_atoms(1)


def test_minimd_messages_match_trace():
    fwd, rev = minimd(512), minimd(512, phase="reverse")
    assert fwd.config["dims"] == [8, 8, 8]
    d, n = fwd.messages(0)
    assert _pairs(d, n) == [
        (448, 98304), (64, 73728), (56, 103680), (8, 77760), (7, 109350), (1, 82011)]
    d, n = rev.messages(0)
    assert _pairs(d, n) == [
        (7, 82011), (1, 109350), (56, 77760), (8, 103680), (448, 73728), (64, 98304)]
    d, n = fwd.messages(511)
    assert _pairs(d, n) == [
        (447, 98304), (63, 73728), (503, 103680), (455, 77760), (510, 109350), (504, 82011)]
    assert len(fwd) == 6 * 512 and _symmetric(fwd)


def test_minimd_procgrid():
    # Comm::setup picks the least-surface grid; the K_MODE run at 1,024 ranks used 1024 x 512 x 512 cells
    assert minimd_procgrid(1024, (1024, 512, 512)) == (16, 8, 8)
    assert minimd_procgrid(2, (64, 64, 64)) == (1, 1, 2)  # a cube: first of the ties (MPI gives 2, 1, 1)
    for p in range(1, 257):
        dims = dims_create(p, 3)
        assert minimd_procgrid(p, 64 * np.array(dims)) == dims, p
    ex = minimd(1024, global_cells=(1024, 512, 512))
    assert ex.config["dims"] == [16, 8, 8] and ex.config["cells"] == [64, 64, 64]
    with pytest.raises(ValueError, match="whole cells"):
        minimd(2, global_cells=(65, 64, 64))


def test_minimd_small_periodic_dimensions():
    ex = minimd(8)  # (2, 2, 2): both swaps of a dimension go to the same rank, two messages
    assert len(ex) == 48
    d, _ = ex.messages(0)
    assert d.tolist() == [4, 4, 2, 2, 1, 1]
    ex = minimd(2)  # (2, 1, 1): the size-1 dimensions swap with the rank itself, no MPI message
    assert ex.messages(0)[0].tolist() == [1, 1]


def test_minimd_non_periodic_what_if():
    ex = minimd(27, periodic=False)  # 3 x 3 x 3
    assert ex.messages_per_rank()[0] == 3 and ex.messages_per_rank()[13] == 6
    d, n = ex.messages(0)  # corner: sends up only; no ghosts below, so y and z slabs are narrower
    assert d.tolist() == [9, 3, 1]
    # x: 3 planes of 128 x 128 / 2; y: 3 planes of (128 + 4) x 128 / 2; z: 3 planes of 132 x 132 / 2
    assert (n // 24).tolist() == [24576, 25344, 26136]


def test_minimd_errors():
    with pytest.raises(ValueError, match="phase must be"):
        minimd(8, phase="both")
    with pytest.raises(ValueError, match="multiply to nprocs=8"):
        minimd(8, dims=(2, 2, 3))


# ------------------------------------------------------------------ dispatch


def test_dispatch_and_errors():
    assert exchange("MiniMD", 8).app == "minimd"
    with pytest.raises(ValueError, match="known apps: jacobi2d, minife, minimd"):
        exchange("lulesh", 8)
    with pytest.raises(ValueError, match="nprocs"):
        jacobi2d(-1)
    frame = exchange("jacobi2d", 4).to_frame()
    assert list(frame.columns) == ["src", "dst", "nbytes"] and len(frame) == 8
