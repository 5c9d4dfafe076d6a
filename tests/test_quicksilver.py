"""Quicksilver-like proxy (paper 001 §6): mesh, tracking, population control, bookkeeping, seeds."""

import numpy as np
import pytest

from perfmod.measure.proxies.quicksilver import ESCAPE, QSMesh, QuicksilverSim, run_quicksilver


def test_mesh_has_24_facets_14_nodes_and_its_memory():
    m = QSMesh(3, 2, 2)
    assert m.facets.shape == (12, 24, 4) and m.nodes.shape == (12, 14, 3)
    # per element: facet planes 24*4 doubles, 24 neighbour ids, 14 nodes * 3 doubles, one cross-section
    assert m.memory_bytes() == 12 * (24 * 4 * 8 + 24 * 8 + 14 * 3 * 8 + 8)
    # element 0 (corner): -x, -y, -z faces on the boundary; +x neighbour is element 1, +y is 3, +z is 6
    nbr = m.facet_neighbor[0, ::4]
    assert nbr.tolist() == [ESCAPE, 1, ESCAPE, 3, ESCAPE, 6]
    assert np.all(m.facet_neighbor[0, 4:8] == 1)  # the 4 facets of a face share its neighbour
    x = np.array([[0.1, 0.1, 0.1], [0.99, 0.99, 0.99], [0.5, 0.2, 0.7]])
    assert m.locate(x).tolist() == [0, 11, 1 + 3 * 0 + 6 * 1]


def _in_elements(sim):
    for p in sim.parts:
        lo = sim.mesh.lo[p.elem]
        inside = (p.x >= lo - 1e-12) & (p.x <= lo + sim.mesh.h + 1e-12)
        assert np.all(inside[p.alive]), "a live particle left its element"
        assert np.all((p.elem >= 0) & (p.elem < sim.mesh.n_elements))


def test_free_flight_is_a_straight_line_across_facets():
    sim = QuicksilverSim(QSMesh(8, 8, 8, sigma_t=1e-12), 500, workers=1, seed=3, census_dt=0.05)
    p = sim.parts[0]
    x0, u0 = p.x.copy(), p.u.copy()
    sim.track(0)
    alive = p.alive
    assert 0.5 < alive.mean() < 1.0  # some escaped through the domain boundary
    np.testing.assert_allclose(p.x[alive], x0[alive] + 0.05 * u0[alive], atol=1e-12)
    np.testing.assert_array_equal(p.elem[alive], sim.mesh.locate(p.x[alive]))
    _in_elements(sim)
    end = x0[~alive] + 0.05 * u0[~alive]  # the escaped ones would have ended outside the cube
    assert np.all(np.any((end < 0) | (end > 1), axis=1))
    assert sim._counts[0, 1] == (~alive).sum()  # all counted as escapes
    sim.close()


def test_everything_is_absorbed_in_a_thick_absorber():
    res = run_quicksilver(4, 4, 4, 300, iterations=1, m=1, f=10, workers=2, seed=1, absorption=1.0,
                          sigma_t=1e6)
    assert res["absorbed"] == 300 and res["escaped"] == 0 and res["final_particles"] == 0
    assert res["collisions"] == 300


@pytest.mark.parametrize("workers", [1, 3])
def test_particle_ledger_balances(workers):
    res = run_quicksilver(6, 6, 6, 2000, iterations=6, m=3, f=2, workers=workers, seed=7, return_sim=True)
    sim = res["sim"]
    assert res["final_particles"] == (res["initial"] - res["absorbed"] - res["escaped"] + res["added"]
                                      - res["deleted"])
    assert res["absorbed"] > 0 and res["escaped"] > 0 and res["added"] > 0
    if workers > 1:
        assert res["migrated"] > 0
    assert len(sim.ledger.history) == 3
    _in_elements(sim)


def test_population_control_reaches_the_drawn_count_and_migrates():
    sim = QuicksilverSim(QSMesh(6, 6, 6), 3000, workers=3, seed=2, spread=0.0)
    for _ in range(3):
        sim.spawn(sim.track)
    waiting = sum(int((p.alive & p.waiting).sum()) for p in sim.parts)
    assert waiting > 0
    c = sim.population_control()
    assert c["migrated"] == waiting
    for w, p in enumerate(sim.parts):
        assert len(p) == 1000 and p.alive.all() and not p.waiting.any()
        assert np.all(sim.owner[p.elem] == w)  # every particle is with the worker owning its element
    _in_elements(sim)
    sim.close()


def test_seeded_runs_repeat_exactly():
    keys = ("absorbed", "escaped", "added", "deleted", "migrated", "collisions", "facet_crossings",
            "final_particles", "x2_particle_bytes")
    a = run_quicksilver(5, 5, 5, 800, iterations=4, m=2, f=2, workers=2, seed=11, return_sim=True)
    b = run_quicksilver(5, 5, 5, 800, iterations=4, m=2, f=2, workers=2, seed=11, return_sim=True)
    c = run_quicksilver(5, 5, 5, 800, iterations=4, m=2, f=2, workers=2, seed=12)
    assert [a[k] for k in keys] == [b[k] for k in keys]
    for pa, pb in zip(a["sim"].parts, b["sim"].parts, strict=True):
        np.testing.assert_array_equal(pa.x, pb.x)
    assert [a[k] for k in keys] != [c[k] for k in keys]


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="positive"):
        run_quicksilver(2, 2, 2, 10, iterations=0)
    with pytest.raises(ValueError, match="workers"):
        QuicksilverSim(QSMesh(2, 2, 2), 10, workers=0)
