"""Sedov proxy (paper 001 §5): mesh, decompositions, edge-cuts, kernels, shared vs MPI physics."""

import numpy as np
import pytest

import perfmod.measure.proxies.sedov as sedov
from perfmod.measure.proxies.sedov_mesh import HexMesh, edge_cut, edge_cut_max, element_blocks, node_blocks
from perfmod.measure.runner import run_mpi


def test_single_hexahedron_corner_order():
    m = HexMesh(1, 1, 1)
    assert (m.n_elements, m.n_nodes) == (1, 8)
    # node id = i + 2 j + 4 k; bottom face counter-clockwise, then top face
    assert m.connectivity().tolist() == [[0, 1, 3, 2, 4, 5, 7, 6]]


def test_nodes_are_shared_between_neighbouring_elements():
    m = HexMesh(2, 2, 2)
    refs = np.bincount(m.connectivity().ravel(), minlength=m.n_nodes)
    # 8 box corners in 1 element, 12 edge midpoints in 2, 6 face centres in 4, the centre in 8
    assert {int(k): int(v) for k, v in zip(*np.unique(refs, return_counts=True), strict=True)} == \
        {1: 8, 2: 12, 4: 6, 8: 1}
    assert refs[m.node_id(np.array([1, 1, 1]))] == 8


def test_edge_cut_by_hand_two_elements_along_x():
    m = HexMesh(2, 1, 1)  # nodes i + 3 j + 6 k
    conn = m.connectivity()
    assert conn.tolist() == [[0, 1, 4, 3, 6, 7, 10, 9], [1, 2, 5, 4, 7, 8, 11, 10]]
    elems = element_blocks(m, 2)
    assert elems.tolist() == [0, 1]
    # nodes by z planes: ids 0-5 and 6-11; each element reads 4 nodes of the other partition
    nz = node_blocks(m, 2, "z")
    assert np.flatnonzero(nz == 0).tolist() == [0, 1, 2, 3, 4, 5]
    assert edge_cut(conn, elems, nz).tolist() == [4, 4]
    # nodes by x: {0,3,6,9,1,4} and {7,10,2,5,8,11}: element 0 reads 7, 10; element 1 reads 1, 4
    nx = node_blocks(m, 2, "x")
    assert np.flatnonzero(nx == 0).tolist() == [0, 1, 3, 4, 6, 9]
    assert edge_cut(conn, elems, nx).tolist() == [2, 2]
    assert edge_cut(conn, np.zeros(2, int), np.zeros(12, int)).tolist() == [0]


def test_edge_cut_by_hand_two_elements_along_z():
    m = HexMesh(1, 1, 2)  # node planes k = 0, 1, 2 of 4 nodes each
    # nodes 0-5 | 6-11; element 0 (nodes 0-7) reads 6, 7; element 1 (nodes 4-11) reads 4, 5
    assert edge_cut(m.connectivity(), element_blocks(m, 2), node_blocks(m, 2, "z")).tolist() == [2, 2]
    assert edge_cut_max(m, 2, "z") == 2


def test_edge_cut_grows_when_decompositions_cut_across():
    m = HexMesh(8, 8, 8)
    assert edge_cut_max(m, 2, "x") > 5 * edge_cut_max(m, 2, "z")
    assert edge_cut_max(m, 1, "x") == 0


def test_edge_cut_rejects_bad_input():
    with pytest.raises(ValueError, match="shape"):
        edge_cut(np.zeros((3, 8), int), np.zeros(2, int), np.zeros(8, int))
    with pytest.raises(ValueError, match="outside"):
        edge_cut(np.full((1, 8), 9), np.zeros(1, int), np.zeros(8, int))
    with pytest.raises(ValueError, match="axis"):
        node_blocks(HexMesh(2, 2, 2), 2, "w")
    with pytest.raises(ValueError, match="positive"):
        HexMesh(0, 2, 2)


def test_volume_and_gradient_of_a_parallelepiped():
    a = np.array([[2.0, 0.0, 0.0], [0.5, 1.5, 0.0], [0.2, 0.3, 0.7]])  # edge vectors
    xe = (sedov.CORNERS @ a)[None].astype(float)
    v, grad = sedov.hex_volume_gradient(xe)
    assert v[0] == pytest.approx(abs(np.linalg.det(a)), rel=1e-13)
    np.testing.assert_allclose(grad.sum(axis=1), 0.0, atol=1e-14)  # corner forces sum to zero
    # the gradient is the derivative of the one-point volume (central differences, exact for this polynomial)
    rng = np.random.default_rng(1)
    xr = xe + 0.05 * rng.standard_normal(xe.shape)
    _, g = sedov.hex_volume_gradient(xr)
    h = 1e-6
    for corner, axis in [(0, 0), (3, 1), (6, 2), (5, 0)]:
        d = np.zeros_like(xr)
        d[0, corner, axis] = h
        fd = (sedov.hex_volume(xr + d) - sedov.hex_volume(xr - d))[0] / (2 * h)
        assert g[0, corner, axis] == pytest.approx(fd, rel=1e-7)


def _physics(res):
    return np.array([res["e_internal"], res["e_kinetic"], res["x_moment"], res["dt"], res["v_max"]])


def test_decomposition_does_not_change_the_shared_memory_result():
    ref = sedov.run_shared(6, 5, 4, 30, workers=1, chunks=1)
    for workers, chunks, axis in [(2, 1, "z"), (2, 3, "x"), (3, 2, "y")]:
        res = sedov.run_shared(6, 5, 4, 30, workers=workers, chunks=chunks, node_axis=axis)
        np.testing.assert_array_equal(_physics(res), _physics(ref))
        assert res["x2_chunks"] == chunks
    assert ref["x3_peer_edges"] == 0
    assert sedov.run_shared(6, 5, 4, 1, workers=2, node_axis="x")["x3_peer_edges"] == \
        edge_cut_max(HexMesh(6, 5, 4), 2, "x")


def test_blast_is_symmetric_under_swapping_x_and_y():
    res = sedov.run_shared(5, 5, 3, 40, workers=2, return_state=True)
    st, m = res["state"], HexMesh(5, 5, 3)
    ijk = m.node_ijk()
    swapped = m.node_id(ijk[:, [1, 0, 2]])
    np.testing.assert_allclose(st.x[swapped][:, [1, 0, 2]], st.x, atol=1e-12)
    assert res["v_max"] > 0.1  # something moved


def test_energy_error_is_first_order_in_the_time_step(monkeypatch):
    drift = []
    for cfl in (0.2, 0.1):
        monkeypatch.setattr(sedov, "CFL", cfl)
        monkeypatch.setattr(sedov, "DVOV_MAX", cfl / 3)
        res = sedov.run_shared(4, 4, 4, int(40 * 0.2 / cfl), workers=1)
        drift.append(abs(res["e_internal"] + res["e_kinetic"] - res["e_initial"]) / res["e_initial"])
    assert drift[0] < 0.15
    assert 1.4 < drift[0] / drift[1] < 3.0


def test_memory_grows_with_the_mesh():
    small = sedov.run_shared(4, 4, 4, 1, workers=1)["x1_bytes"]
    big = sedov.run_shared(4, 4, 8, 1, workers=1)["x1_bytes"]
    assert 1.8 < big / small < 2.0  # nodes grow as (nz + 1)


@pytest.mark.mpi
def test_mpi_version_gives_the_shared_memory_physics():
    shared = sedov.run_shared(6, 5, 4, 30, workers=2)
    res = run_mpi("perfmod.measure.proxies.sedov_mpi", 2, ["--nx", 6, "--ny", 5, "--nz", 4, "--iterations", 30,
                                                   "--node-axis", "x", "--workers", 2])
    np.testing.assert_allclose(_physics(res), _physics(shared), rtol=1e-11)
    m = HexMesh(6, 5, 4)
    # X4: element-node references from a rank's elements to the other rank's nodes
    assert res["x4_interprocess_edges"] == edge_cut_max(m, 2, "x")
    assert res["x5_processes"] == 2
    assert res["t_comm"] > 0 and res["t_iter"] >= res["t_comp"]
