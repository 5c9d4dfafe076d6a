"""TRITON-like shallow-water proxy: well-balanced, mass-conserving, same answer on any rank count."""

import numpy as np
import pytest
from mpi4py import MPI

from perfmod.measure.proxies import swe
from perfmod.measure.runner import run_mpi


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
    one = run_mpi("perfmod.measure.proxies.swe", 1, args, timeout=120)
    two = run_mpi("perfmod.measure.proxies.swe", 2, args, timeout=120)
    assert one["steps"] == two["steps"]
    assert two["mass"] == pytest.approx(one["mass"], rel=1e-12) == pytest.approx(30.0 * 40.0, rel=1e-10)
    assert two["wet_fraction"] == one["wet_fraction"] > 0


def test_manning_friction_closed_form():
    # a uniform current over a flat bed: interior fluxes cancel, so only friction acts:
    # q_new = q / (1 + dt g n^2 |u| / h^(4/3))
    h = np.full((8, 10), 2.0)
    hu = np.full_like(h, 3.0)
    hv = np.zeros_like(h)
    dt, n = 0.5, 0.03
    _, qx, qy = swe.step_fluxes(h, hu, hv, np.zeros_like(h), 10.0, dt, manning=n)
    want = 3.0 / (1 + dt * swe.G * n * n * 1.5 / 2.0 ** (4 / 3))
    assert qx[:, 1:-1] == pytest.approx(np.full((6, 8), want), rel=1e-12)
    assert np.all(qy == 0)


def test_velocity_is_desingularized_only_on_thin_films():
    h = np.array([0.0, 1e-4, swe.EPS_U, 2.0])
    u = swe.velocity(h, np.ones(4) * 1e-3)
    assert u[0] == 0 and u[1] < 1e-3 / 1e-4 / 10  # thin film: far below q / h
    assert u[2:] == pytest.approx([1e-3 / swe.EPS_U, 1e-3 / 2.0])


def test_dry_domain_steps_at_the_cap():
    # nothing wet, no inflow: every step is cfl dx / sqrt(g h_ref), so the count scales as 1 / dx
    z = np.zeros((16, 16))
    for dx in (10.0, 5.0):
        r = swe.run_swe(MPI.COMM_SELF, z, dx, 100.0, cfl=0.4, h_ref=0.25)
        assert r["steps"] == int(np.ceil(100.0 / (0.4 * dx / np.sqrt(swe.G * 0.25)) - 1e-9))


def test_strips_and_dry_column_skipping_do_not_change_the_flood():
    # one row per strip (column boxes per row) against one strip for the whole grid
    z, dx, cells = swe.scenario("plain", 48, 48, 10.0)
    a = swe.run_swe(MPI.COMM_SELF, z, dx, 120.0, inflow=80.0, inflow_cells=cells, strip_cells=48)
    b = swe.run_swe(MPI.COMM_SELF, z, dx, 120.0, inflow=80.0, inflow_cells=cells, strip_cells=10**9)
    assert a["steps"] == b["steps"]
    assert a["mass"] == pytest.approx(b["mass"], rel=1e-12) == pytest.approx(80.0 * 120.0, rel=1e-10)
    assert np.abs(a["h"] - b["h"]).max() < 1e-9
    assert 0.02 < (a["h"] > swe.DRY).mean() < 0.9  # part of the domain stays dry: columns were skipped


def test_base_flow_fills_every_row_up_to_its_level():
    z = swe.terrain("valley", 20, 30, 10.0)
    h0 = swe.base_flow(z, 0.5)
    assert np.all((h0 > 0).any(axis=1))  # a river in every row: every rank of a row partition gets water
    surface = np.where(h0 > 0, z + h0, np.nan)
    assert np.nanmax(surface - z.min(axis=1, keepdims=True)) == pytest.approx(0.5)
    assert np.all(h0 >= 0) and h0.max() == pytest.approx(0.5)
