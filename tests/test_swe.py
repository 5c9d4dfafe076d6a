"""TRITON-like shallow-water proxy: well-balanced, mass-conserving, same answer on any rank count."""

import numpy as np
import pytest
from mpi4py import MPI

from perfmod.proxies import swe
from perfmod.proxies.runner import run_mpi


def test_lake_at_rest_stays_at_rest():
    z = swe.terrain("bowl", 40, 30, 10.0)
    h0 = np.maximum(0.0, 3.0 - z)  # wet centre, dry rim: a wet/dry shoreline
    r = swe.run_swe(MPI.COMM_SELF, z, 10.0, 200.0, h0=h0)
    assert r["steps"] > 50
    assert np.abs(r["h"] - h0).max() < 1e-12


def test_dam_break_conserves_mass_on_a_closed_domain():
    z = np.zeros((40, 30))
    h0 = np.where(np.arange(40)[:, None] < 20, 2.0, 0.0) * np.ones((1, 30))
    r = swe.run_swe(MPI.COMM_SELF, z, 1.0, 20.0, h0=h0)
    assert r["mass"] == pytest.approx(h0.sum(), rel=1e-9)
    assert r["h"].min() >= 0 and r["h"][30:].max() > 0.1  # the wave has travelled downstream


def test_inflow_adds_exactly_its_volume():
    z, dx, cells = swe.scenario("valley", 40, 40, 5.0)
    r = swe.run_swe(MPI.COMM_SELF, z, dx, 30.0, inflow=20.0, inflow_cells=cells)
    assert r["mass"] == pytest.approx(20.0 * 30.0, rel=1e-10)


def test_coarsen_averages_squares():
    a = np.arange(16.0).reshape(4, 4)
    assert swe.coarsen(a, 2).tolist() == [[2.5, 4.5], [10.5, 12.5]]
    with pytest.raises(ValueError, match="divisible"):
        swe.coarsen(a, 3)
    with pytest.raises(ValueError, match="unknown terrain"):
        swe.terrain("moon", 4, 4, 1.0)


@pytest.mark.mpi
def test_two_ranks_match_one():
    args = ["--terrain", "valley", "--ny", 60, "--nx", 40, "--dx", 5.0, "--t-end", 40.0, "--inflow", 30.0]
    one = run_mpi("perfmod.proxies.swe", 1, args, timeout=120)
    two = run_mpi("perfmod.proxies.swe", 2, args, timeout=120)
    assert one["steps"] == two["steps"]
    assert two["mass"] == pytest.approx(one["mass"], rel=1e-12) == pytest.approx(30.0 * 40.0, rel=1e-10)
    assert two["wet_fraction"] == one["wet_fraction"] > 0
