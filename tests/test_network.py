"""The bound network: one resolution of platform and model per public call; a toy model and k rule end to end."""

import sys

import numpy as np
import pytest

import perfmod.machine.platforms as platforms
import perfmod.models.comm.registry as registry
from perfmod.apps.jacobi2d import KERNELS
from perfmod.apps.registry import analytic_comm, kmodel_counts
from perfmod.apps.traces import synthetic
from perfmod.machine.platforms import PROTOCOLS, load
from perfmod.models.comm.collectives import collective_time
from perfmod.models.comm.krules import KRule, k_rule, register_k_rule
from perfmod.models.comm.message import message_time
from perfmod.models.comm.network import Network
from perfmod.models.comm.registry import CommModel, register, unregister
from perfmod.replay import replay
from perfmod.studies import local_jacobi2d as jac

SUMMIT = load("summit")


@pytest.fixture
def lookups(monkeypatch):
    """Every call of ``as_platform`` and ``comm_model``, by the module of its caller.

    Both are imported by name into many modules, so each module's binding is replaced.
    """
    calls: dict[str, list[str]] = {"as_platform": [], "comm_model": []}
    originals = {"as_platform": platforms.as_platform, "comm_model": registry.comm_model}

    def counting(name):
        def wrapper(*args, **kwargs):
            calls[name].append(sys._getframe(1).f_globals["__name__"])
            return originals[name](*args, **kwargs)
        return wrapper

    wrappers = {name: counting(name) for name in originals}
    for mod in [m for n, m in sys.modules.items() if n.startswith("perfmod") and m is not None]:
        for name, fn in originals.items():
            if getattr(mod, name, None) is fn:
                monkeypatch.setattr(mod, name, wrappers[name])
    return calls


def _only_at_binding(calls, networks=1):
    """One platform resolution per network, and every model look-up inside the binding."""
    assert calls["as_platform"] == ["perfmod.models.comm.network"] * networks
    assert set(calls["comm_model"]) == {"perfmod.models.comm.network"}


@pytest.mark.parametrize("model", ["kmodel", "maxrate", "loggp"])
def test_a_replay_resolves_platform_and_model_once(lookups, model):
    replay(synthetic("jacobi2d", 24, 2), "lassen", model)  # 4 ranks per node: every mode occurs
    _only_at_binding(lookups)
    # Lassen's intra-socket max-rate cells are "N/A (Apply postal model)": the fallback is resolved when
    # binding (the look-ups above), not per message
    fallback = {k for k, c in Network("lassen", model).cells.items() if c.model == "postal"}
    assert fallback == ({("intra_socket", p) for p in PROTOCOLS} if model != "loggp" else set())


def test_a_jacobi2d_prediction_resolves_platform_and_model_once(lookups):
    plat = SUMMIT.replace(ranks_per_node=2)
    row = {"GFLOPS - SP": 20.0, "GFLOPS - DP": 10.0, "GIOPS - MAD": 8.0, "GBSEC - DRAM": 40.0, "GBSEC - L2": 150.0,
           "GOPS - SHMEM": 12.0, "GIOPS - ADD": 5.0}
    prof = jac.Profile(2048, 2, 1e-4, {}, dict.fromkeys(KERNELS, 1.5))
    lookups["as_platform"].clear()
    lookups["comm_model"].clear()
    jac.predict_jacobi([64, 128], [1, 2, 4], plat, {1: row, 2: row, 4: row}, prof)
    _only_at_binding(lookups)


def test_message_and_collective_bind_once_per_call(lookups):
    message_time(np.array([8.0, 1e6]), "inter_node", "summit", "kmodel", k_inter=2, k_total=8)
    collective_time("allreduce", 8.0, 48, "summit", "maxrate")
    _only_at_binding(lookups, networks=2)


def test_kmodel_counts_and_analytic_comm_take_a_network(lookups):
    net = Network("summit", "kmodel")
    assert kmodel_counts("jacobi2d", net, 1536) == kmodel_counts("jacobi2d", SUMMIT, 1536)
    assert analytic_comm("minimd", net, 48) == analytic_comm("minimd", "summit", 48)
    assert lookups["as_platform"].count("perfmod.models.comm.network") == 2  # the two networks bound here


def test_bound_network_prices_as_the_public_functions():
    net = Network(SUMMIT, "maxrate")
    sizes = np.array([8.0, 1e4, 1e6])
    assert np.array_equal(net.message_time(sizes, "inter_node"), message_time(sizes, "inter_node", SUMMIT, "maxrate"))
    assert collective_time("allreduce", 8.0, 48, net, "maxrate") == collective_time("allreduce", 8.0, 48, SUMMIT,
                                                                                     "maxrate")
    assert net.cells[("intra_socket", "short")].model == "maxrate"
    assert Network("lassen", "maxrate").cells[("intra_socket", "short")].model == "postal"  # 000 Table 3: N/A
    with pytest.raises(ValueError, match="bound to model 'maxrate'"):
        message_time(8.0, "inter_node", net, "postal")


def test_a_toy_k_rule_and_model():
    """A new k rule (one class) and a model using it, as in the worked example of docs/library.md."""

    class Halved(KRule):
        """Half of the node's ranks communicate at once (at least one)."""

        name = "halved"
        takes_k = True
        one_pair = {"k": 1}

        def message_k(self, net, mode, k, k_inter, k_total, k_prime):
            return max(net.default_k(mode) // 2, 1) if k is None else k

    def shared_postal(nbytes, k, alpha, beta):
        return alpha + k * beta * nbytes

    register_k_rule(Halved())
    register(CommModel("shared_postal", "postal", dict.fromkeys(PROTOCOLS, shared_postal), k="halved"))
    try:
        net = Network(SUMMIT, "shared_postal")
        p = SUMMIT.params("postal", "inter_node", "eager")
        assert net.message_time(1000.0, "inter_node") == pytest.approx(p["alpha"] + 3 * p["beta"] * 1000.0)
        ds = replay(synthetic("jacobi2d", 12, 1), SUMMIT, "shared_postal")
        assert float(ds.total_time.max()) > 0
    finally:
        unregister("shared_postal")
        from perfmod.models.comm import krules
        del krules._RULES["halved"]
    assert k_rule("kmodel").one_pair["k_inter"] == 1
