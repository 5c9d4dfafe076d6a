"""Game of Life proxy: patterns, the buffered kernel, and MPI runs matching the serial reference."""

import numpy as np
import pytest

from perfmod.measure.proxies import gol
from perfmod.measure.runner import run_mpi
from perfmod.studies.sharif_gol import fit_gol, halo_cells, measure_gol, predict_gol


def _pad(g):
    return np.concatenate([g[-1:], g, g[:1]])


def test_blinker_oscillates():
    g = np.zeros((5, 5), dtype=np.uint8)
    g[2, 1:4] = 1
    g1 = gol.life_serial(g, 1)
    assert g1[1:4, 2].tolist() == [1, 1, 1] and g1.sum() == 3
    assert np.array_equal(gol.life_serial(g, 2), g)


def test_glider_moves_one_cell_diagonally_every_four_generations():
    g = np.zeros((12, 12), dtype=np.uint8)
    g[0, 1] = g[1, 2] = g[2, 0] = g[2, 1] = g[2, 2] = 1
    assert np.array_equal(gol.life_serial(g, 4), np.roll(g, (1, 1), axis=(0, 1)))
    # 48 generations: 12 cells down and right, once around the torus
    assert np.array_equal(gol.life_serial(g, 48), g)


def test_buffered_kernel_equals_reference():
    g = gol.random_grid(40, 33, seed=5)
    out = np.zeros_like(g)
    gol.LifeKernel(40, 33)(_pad(g), out)
    assert np.array_equal(out, gol.life_step(_pad(g)))
    for cells in (33 * 7, 33 * 40, 1):  # strips of 7 rows (the last one 5), one strip, one row per strip
        k = gol.LifeKernel(40, 33, strip_cells=cells)
        assert k.strip == {33 * 7: 7, 33 * 40: 40, 1: 1}[cells]
        out = np.zeros_like(g)
        k(_pad(g), out)
        assert np.array_equal(out, gol.life_step(_pad(g))), cells


def test_row_blocks_cover_the_grid():
    blocks = [gol.row_block(10, 3, r) for r in range(3)]
    assert blocks == [(0, 4), (4, 7), (7, 10)]
    with pytest.raises(ValueError, match="cannot be split"):
        gol.row_block(2, 3, 0)


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_mpi_run_matches_serial_across_partition_boundaries(nprocs):
    # a random grid's live-cell count after 25 generations is the same on any number of ranks
    ref = gol.life_serial(gol.random_grid(30, 20, seed=7), 25)
    res = run_mpi("perfmod.measure.proxies.gol", nprocs, ["--ny", 30, "--nx", 20, "--generations", 25, "--seed", 7],
                  timeout=120)
    assert res["alive"] == int(ref.sum()) and res["nprocs"] == nprocs
    assert res["t_w"] > 0 and res["total_time"] >= res["t_w"]


def test_halo_cells():
    assert halo_cells(100, 1) == 0 and halo_cells(100, 4) == 200


@pytest.mark.mpi
def test_study_fit_and_predict_small():
    train = measure_gol([[40, 40, 10], [40, 40, 20], [80, 80, 8]], [1, 2], reps=1, progress=False)
    test = measure_gol([[60, 60, 15]], [1, 2], reps=1, progress=False)
    assert train.interfered.dtype == bool and train.interfered.dims == ("case", "nprocs", "rep")
    train = train.assign(interfered=train.interfered & False)  # shapes only: a busy machine may flag every run
    out = predict_gol(fit_gol(train), test)
    assert out.total_time_predicted.shape == (1, 2)
    assert bool((out.total_time_lower <= out.total_time_predicted).all())
    with pytest.raises(ValueError, match="positive"):
        measure_gol([[0, 10, 10]], [1], reps=1, progress=False)
