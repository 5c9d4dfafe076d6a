"""The registry of communication models: shipped entries, adding a model as one entry, bad entries."""

import numpy as np
import pytest

from perfmod.apps.traces import synthetic
from perfmod.machine.platforms import PARAM_NAMES, PROTOCOLS, Params, PlatformError, load, param_tables
from perfmod.models.comm.collectives import collective_time
from perfmod.models.comm.fitting import fit_maxrate, fit_maxrate2, fit_postal
from perfmod.models.comm.krules import k_rule
from perfmod.models.comm.message import message_time
from perfmod.models.comm.models import evaluate, maxrate, maxrate2, postal
from perfmod.models.comm.registry import CommModel, comm_model, model_names, register, unregister
from perfmod.replay import replay

SUMMIT = load("summit")
SIZES = np.array([8.0, 200.0, 4096.0, 1e5, 4e6])  # every protocol of Summit (short <= 231 B, eager <= 64 KiB)


def toy(nbytes, t0, per_byte):
    """A toy model: the postal formula with its own parameter names (s, s/B)."""
    return t0 + per_byte * nbytes


def test_shipped_models():
    assert model_names()[:4] == ("postal", "maxrate", "kmodel", "loggp")
    assert comm_model("kmodel").table == "maxrate" and comm_model("kmodel").k == "kmodel"
    assert comm_model("maxrate").forms == {"short": maxrate2, "eager": maxrate, "rendezvous": maxrate}
    assert comm_model("maxrate").fitters["short"] is fit_maxrate2
    assert comm_model("maxrate").fitters["eager"] is fit_maxrate
    assert comm_model("maxrate").fallback is maxrate2
    assert comm_model("postal").fitters["rendezvous"] is fit_postal
    assert comm_model("loggp").fitters == {}
    for name in model_names():
        m = comm_model(name)
        for p in PROTOCOLS:  # the registry reads the platform table's names, it does not copy them
            assert m.param_names(p) is PARAM_NAMES[(m.table, p)]
    def one_pair(name):
        return k_rule(comm_model(name).k).one_pair
    assert one_pair("postal") == {} and one_pair("maxrate") == {"k": 1}
    assert one_pair("kmodel") == {"k": 1, "k_inter": 1, "k_total": 1, "k_prime": 1}


def test_unknown_model_lists_the_registered_ones():
    with pytest.raises(ValueError, match=r"unknown model 'hockney'.*'postal', 'maxrate', 'kmodel', 'loggp'"):
        message_time(8.0, "inter_node", SUMMIT, model="hockney")
    with pytest.raises(ValueError, match="unknown model 'hockney'"):
        replay(synthetic("jacobi2d", 4, 1), SUMMIT, "hockney")


def test_evaluate_passes_k_only_to_formulas_that_take_it():
    p = {"alpha": 1e-6, "r_cb": 1e9, "r_ci": 5e8, "alpha_se": 1.0}
    assert evaluate(maxrate, 1e6, 3, p) == 1e-6 + 3 * 1e6 / (1e9 + 2 * 5e8)
    assert evaluate(postal, 100.0, 7, {"alpha": 1e-6, "beta": 1e-9}) == 1e-6 + 1e-9 * 100.0


def test_kmodel_costs_a_collective_step_as_maxrate_at_k1():
    n = SIZES
    for op in ("allreduce", "reduce", "bcast"):
        np.testing.assert_array_equal(collective_time(op, n, 24, SUMMIT, model="kmodel"),
                                      collective_time(op, n, 24, SUMMIT, model="maxrate"))


@pytest.fixture
def toy_platform():
    """Summit plus a ``toy`` table holding Summit's postal numbers, with the toy model registered."""
    register(CommModel("toy", "toy", dict.fromkeys(PROTOCOLS, toy), params=dict.fromkeys(PROTOCOLS, ("t0", "per_byte")),
                       description="a toy for the registry test"))
    try:
        cells = {("toy", mode, proto): Params({"t0": e["alpha"], "per_byte": e["beta"]}, "test")
                 for (model, mode, proto), e in SUMMIT.comm.items() if model == "postal"}
        yield SUMMIT.replace(comm={**SUMMIT.comm, **cells})
    finally:
        unregister("toy")


def test_a_new_model_is_one_entry(toy_platform):
    assert "toy" in model_names() and "toy" in param_tables()
    assert PARAM_NAMES[("toy", "eager")] == ("t0", "per_byte")
    e = toy_platform.params("toy", "inter_node", "eager")
    assert e == {"t0": 2.86e-6, "per_byte": 1.55e-10}  # 000 Table 2, Summit inter-node eager
    np.testing.assert_array_equal(message_time(5000.0, "inter_node", toy_platform, model="toy"),
                                  2.86e-6 + 1.55e-10 * 5000.0)
    for mode in ("intra_socket", "inter_socket", "inter_node"):
        np.testing.assert_array_equal(message_time(SIZES, mode, toy_platform, model="toy"),
                                      message_time(SIZES, mode, SUMMIT, model="postal"))
    # the replay (messages and collectives) takes it as it is; same numbers as postal -> same times
    trace = synthetic("minife", 24, 2)
    got, want = replay(trace, toy_platform, "toy"), replay(trace, toy_platform, "postal")
    assert got.attrs["model"] == "toy"
    for v in ("comm_time", "send_time", "wait_time", "collective_time", "total_time"):
        np.testing.assert_array_equal(got[v].values, want[v].values)
    assert float(got.comm_time.max()) > 0


def test_unregister_removes_the_model_and_its_table(toy_platform):
    cells = dict(toy_platform.comm)
    unregister("toy")
    try:
        assert "toy" not in model_names() and "toy" not in param_tables()
        with pytest.raises(ValueError, match="unknown model 'toy'"):
            message_time(8.0, "inter_node", SUMMIT, model="toy")
        with pytest.raises(PlatformError, match="unknown model 'toy'"):
            SUMMIT.replace(comm=cells)
    finally:  # the fixture unregisters it again
        register(CommModel("toy", "toy", dict.fromkeys(PROTOCOLS, toy),
                           params=dict.fromkeys(PROTOCOLS, ("t0", "per_byte"))))


def test_a_new_model_with_the_kmodel_k_rule_replays_like_the_kmodel():
    register(CommModel("kmodel_twin", "maxrate", comm_model("kmodel").forms, k="kmodel"))
    try:
        trace = synthetic("jacobi2d", 48, 2)
        got, want = replay(trace, SUMMIT, "kmodel_twin"), replay(trace, SUMMIT, "kmodel")
        np.testing.assert_array_equal(got.comm_time.values, want.comm_time.values)
        np.testing.assert_array_equal(got.phase_k.values, want.phase_k.values)
        assert float(got.phase_k.max()) > 0
    finally:
        unregister("kmodel_twin")
    assert "kmodel_twin" not in model_names() and "maxrate" in param_tables()  # a shipped table stays


def test_a_model_that_restates_a_shipped_table_leaves_it_on_unregister():
    register(CommModel("postal_twin", "postal", dict.fromkeys(PROTOCOLS, postal),
                       params=dict.fromkeys(PROTOCOLS, ("alpha", "beta"))))
    try:
        np.testing.assert_array_equal(message_time(SIZES, "inter_node", SUMMIT, model="postal_twin"),
                                      message_time(SIZES, "inter_node", SUMMIT, model="postal"))
    finally:
        unregister("postal_twin")
    assert "postal" in param_tables() and "postal_twin" not in model_names()


@pytest.mark.parametrize(("entry", "match"), [
    (CommModel("postal", "postal", dict.fromkeys(PROTOCOLS, postal)), "registered already"),
    (CommModel("bad", "postal", dict.fromkeys(PROTOCOLS, maxrate), k="default"),
     r"formula maxrate takes \('alpha', 'r_cb', 'r_ci'\), the parameter table 'postal' has \('alpha', 'beta'\)"),
    (CommModel("bad", "maxrate", {"short": maxrate2, "eager": maxrate, "rendezvous": maxrate2}, k="default"),
     "protocol 'rendezvous': formula maxrate2 takes"),
    (CommModel("bad", "maxrate", comm_model("maxrate").forms, k="none"), "takes k, so k cannot be 'none'"),
    (CommModel("bad", "postal", {"short": postal}), "a formula for each protocol"),
    (CommModel("bad", "postal", dict.fromkeys(PROTOCOLS, postal), k="max"), "k must be one of"),
    (CommModel("bad", "nowhere", dict.fromkeys(PROTOCOLS, postal)), "no parameter table 'nowhere'"),
    (CommModel("bad", "postal", dict.fromkeys(PROTOCOLS, toy), params=dict.fromkeys(PROTOCOLS, ("t0", "per_byte"))),
     "exists with other names"),
])
def test_bad_entries_are_refused(entry, match):
    before = (model_names(), dict(PARAM_NAMES))
    with pytest.raises(ValueError, match=match):
        register(entry)
    assert (model_names(), dict(PARAM_NAMES)) == before


def test_a_formula_takes_nbytes_first():
    with pytest.raises(TypeError, match="first argument is nbytes"):
        register(CommModel("bad", "postal", dict.fromkeys(PROTOCOLS, lambda n, alpha, beta: alpha + beta * n)))


def test_the_replay_does_not_import_the_fitting_stack():
    """``import perfmod.replay`` leaves scipy.stats and scipy.optimize (calibration, fitting) unimported (issue 23)."""
    import subprocess
    import sys

    code = ("import sys, perfmod.replay; from perfmod.models.comm.registry import comm_model; "
            "comm_model('kmodel'); print(sorted(m for m in ('scipy.stats', 'scipy.optimize') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"
