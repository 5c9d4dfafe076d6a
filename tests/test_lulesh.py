"""LULESH-like skeleton proxy: the Sedov kernels as regions, the mesh-derived exchange, model mode at scale."""

import numpy as np
import pytest

import perfmod.measure.proxies.sedov as sedov
from perfmod.measure.proxies.gol import row_block
from perfmod.measure.proxies.lulesh import REGIONS, block_owner, exchange_pattern, run_lulesh
from perfmod.measure.proxies.sedov_mesh import HexMesh, node_blocks
from perfmod.measure.regions import Recorder
from perfmod.measure.regions.skeleton import Skeleton
from perfmod.measure.regions.virtual import NullComm, run_virtual
from perfmod.trace.core import Call

MODELS = {"init_nodes": 2e-6, "volume_forces": 4e-4, "gather_forces": 6e-5, "integrate": 3e-5,
          "update_elements": 1e-4, "constraints": 5e-5}  # s per call


def _physics(res):
    return np.array([res["e_internal"], res["e_kinetic"], res["x_moment"], res["dt"]])


def test_block_owner_is_row_block_and_the_z_node_split():
    for n, parts in [(10, 3), (12, 4), (7, 7), (100, 6)]:
        blocks = [row_block(n, parts, p) for p in range(parts)]
        want = np.concatenate([np.full(b - a, p) for p, (a, b) in enumerate(blocks)])
        np.testing.assert_array_equal(block_owner(np.arange(n), n, parts), want)
    m = HexMesh(3, 4, 5)
    np.testing.assert_array_equal(block_owner(np.arange(m.n_nodes), m.n_nodes, 3), node_blocks(m, 3, "z"))
    with pytest.raises(ValueError, match="cannot be split over 4"):
        block_owner(np.arange(3), 3, 4)


def test_exchange_pattern_is_what_the_other_ranks_expect():
    m, p = HexMesh(4, 3, 5), 3
    states = []
    for r in range(p):
        lo, hi = row_block(m.n_elements, p, r)
        nlo, nhi = row_block(m.n_nodes, p, r)
        states.append(sedov.SedovState(m, np.arange(lo, hi), np.arange(nlo, nhi)))
    patterns = [exchange_pattern(m, st, r, p) for r, st in enumerate(states)]
    node_owner = node_blocks(m, p, "z")
    for r, (recv, send) in enumerate(patterns):
        st = states[r]
        # every ghost node is received from its owner, once
        got = np.sort(np.concatenate([st.nodes[i] for i in recv.values()]))
        np.testing.assert_array_equal(got, st.nodes[~st.owned])
        assert all((node_owner[st.nodes[i]] == s).all() for s, i in recv.items())
        for s in range(p):
            if s == r:
                assert s not in send and s not in recv
                continue
            # brute force: the nodes of s's elements that r owns, in the order s expects them
            lo, hi = row_block(m.n_elements, p, s)
            used = np.intersect1d(m.connectivity(np.arange(lo, hi)), st.nodes[st.owned])
            sent = st.nodes[send[s]] if s in send else np.zeros(0, int)
            np.testing.assert_array_equal(sent, used)
            theirs = states[s].nodes[patterns[s][0][r]] if r in patterns[s][0] else np.zeros(0, int)
            np.testing.assert_array_equal(sent, theirs)


def test_one_rank_is_the_sedov_kernels_result():
    res = run_lulesh(NullComm(0, 1), 4, iterations=30, chunks=2)
    ref = sedov.run_shared(4, 4, 4, 30, workers=1, chunks=2)
    np.testing.assert_allclose(_physics(res), _physics(ref), rtol=1e-12)
    assert res["e_initial"] == pytest.approx(ref["e_initial"], rel=1e-15)
    assert res["e_kinetic"] > 0.2 * res["e_initial"]  # the blast moved the mesh (26 % kinetic after 30 steps)
    drift = abs(res["e_internal"] + res["e_kinetic"] - res["e_initial"]) / res["e_initial"]
    assert drift < 0.15  # first-order in the time step (test_sedov), bounded by test_sedov's 40-step bound
    assert (res["elements"], res["nodes"], res["owned_nodes"]) == (64, 125, 125)


def test_measure_mode_records_the_declared_parameters():
    with Recorder(None, application="lulesh") as rec, Skeleton("measure"):
        run_lulesh(NullComm(0, 1), 4, iterations=3, chunks=2)
    df = rec.to_dataframe()
    assert set(df.region) == set(REGIONS)
    for region, params in REGIONS.items():
        calls = df[df.region == region]
        assert len(calls) == 3 and calls[list(params)].notna().all().all(), region
    n = df.groupby("region")["n"].unique().map(list).to_dict()
    assert n == {"init_nodes": [125], "gather_forces": [125], "integrate": [125], "volume_forces": [64],
                 "update_elements": [64], "constraints": [64]}
    assert (df["chunks"] == 2).all()


def test_model_mode_as_virtual_ranks_is_the_region_models_and_the_halo_pattern():
    its = 3
    vr = run_virtual(lambda c: run_lulesh(c, 4, iterations=its), 3,
                     lambda r: Skeleton("model", MODELS, clock="modeled"))
    for res in vr.results:
        assert res["virtual_time"] == pytest.approx(its * sum(MODELS.values()), rel=1e-9)
    assert (vr.stats["modeled"] == 3 * its).all() and (vr.stats["run"] == 0).all()
    tr = vr.traces["predicted"]
    isend = tr.call == Call.ISEND
    assert set(tr.peer[isend & (tr.rank == 0)]) == {1} and set(tr.peer[isend & (tr.rank == 1)]) == {0, 2}
    # rank 0's forward messages to rank 1: x, v, a (9 doubles) of each node rank 1 holds as a ghost
    m = HexMesh(4, 4, 4)
    lo, hi = row_block(m.n_elements, 3, 0)
    st = sedov.SedovState(m, np.arange(lo, hi), np.arange(*row_block(m.n_nodes, 3, 0)))
    send = exchange_pattern(m, st, 0, 3)[1]
    fwd = isend & (tr.rank == 0) & (tr.tag == 12) & (tr.peer == 1)
    assert fwd.sum() == its + 1  # the nodal masses once, then every iteration
    assert set(tr.nbytes[fwd][1:]) == {72 * len(send[1])}
    assert int(np.sum(tr.call == Call.ALLREDUCE)) > 0


def test_weak_scaling_keeps_the_elements_per_rank():
    vr = run_virtual(lambda c: run_lulesh(c, 3, iterations=1, weak=True), 4,
                     lambda r: Skeleton("model", MODELS, clock="modeled"))
    assert [r["elements"] for r in vr.results] == [27] * 4
    with pytest.raises(ValueError, match="iterations and chunks must be >= 1"):
        run_lulesh(NullComm(0, 1), 3, iterations=0)

