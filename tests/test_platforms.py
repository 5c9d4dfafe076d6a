"""perfmod.platforms: paper numbers, validation errors, round trips."""

import tomllib

import numpy as np
import pytest

from perfmod import platforms as P


@pytest.mark.parametrize(
    ("name", "model", "mode", "protocol", "param", "value"),
    [
        ("summit", "postal", "intra_socket", "short", "alpha", 4.79e-7),  # 000 Table 2
        ("summit", "postal", "inter_node", "rendezvous", "beta", 8.70e-11),
        ("lassen", "postal", "inter_socket", "eager", "beta", 2.16e-10),
        ("bridges", "postal", "inter_node", "rendezvous", "alpha", 2.94e-5),
        ("summit", "maxrate", "intra_socket", "short", "beta", 6.21e-10),  # Table 3
        ("bridges", "maxrate", "inter_node", "short", "beta", 5.51e-9),
        ("summit", "maxrate", "inter_node", "rendezvous", "r_ci", 2.58e7),  # Table 4
        ("lassen", "maxrate", "inter_node", "eager", "r_cb", 4.92e9),
        ("bridges", "maxrate", "inter_node", "rendezvous", "r_ci", 2.08e8),
    ],
)
def test_paper_parameters(name, model, mode, protocol, param, value):
    assert P.load(name).params(model, mode, protocol)[param] == value


def test_table1_topology():
    s, lassen, b = (P.load(n) for n in ("summit", "lassen", "bridges"))
    assert (s.nodes, s.gpus_per_node, s.ranks_per_socket) == (4608, 6, 3)
    assert (lassen.nodes, lassen.gpus_per_node, lassen.ranks_per_socket) == (792, 4, 2)
    assert (b.nodes, b.gpus_per_node, b.ranks_per_socket, b.gpu) == (32, 2, 1, "Tesla P100")


def test_na_cells_keep_the_papers_reason():
    b = P.load("bridges")
    with pytest.raises(P.ParameterNotAvailable, match=r"1 process/socket"):
        b.params("postal", "intra_socket", "eager")
    e = P.load("lassen").entry("maxrate", "intra_socket", "rendezvous")
    assert isinstance(e, P.NotAvailable) and e.fallback == "postal" and "Apply postal model" in e.reason
    assert not P.load("lassen").has("maxrate", "intra_socket", "short")
    assert P.load("bridges").entry("maxrate", "intra_socket", "short").fallback is None


def test_every_gpu_platform_has_all_27_cells():
    for name in ("summit", "lassen", "bridges"):
        p = P.load(name)
        assert len(p.comm) == 18  # postal and maxrate x 3 modes x 3 protocols
        tab = p.table()
        assert set(tab["model"]) == {"postal", "maxrate"}


def test_protocol_selection_at_thresholds():
    p = P.load("summit")
    s, e = p.short_max_bytes, p.eager_max_bytes
    assert list(p.protocol([1, s, s + 1, e, e + 1])) == ["short", "short", "eager", "eager", "rendezvous"]
    with pytest.raises(ValueError, match="positive"):
        p.protocol([8, 0])


def test_unknown_platform_lists_known():
    with pytest.raises(P.PlatformError, match="known platforms: .*summit"):
        P.load("frontier")


def test_unknown_names():
    p = P.load("summit")
    with pytest.raises(ValueError, match="unknown mode 'intra_node'"):
        p.params("postal", "intra_node", "short")
    with pytest.raises(ValueError, match="unknown protocol"):
        p.params("postal", "inter_node", "long")


def test_round_trip(tmp_path):
    for name in P.available():
        p = P.load(name)
        back = P.load(P.save(p, tmp_path / f"{name}.toml"))
        assert back.replace(path=None) == p.replace(path=None)


def _write(tmp_path, text):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    return path


GOOD = """name = "x"
sockets_per_node = 1
gpus_per_socket = 0
ranks_per_node = 2
[protocols]
short_max_bytes = 64
eager_max_bytes = 1024
[comm.postal.intra_socket.short]
alpha = 1e-6
beta = 1e-10
"""


def test_good_minimal_file(tmp_path):
    p = P.load(_write(tmp_path, GOOD))
    assert p.params("postal", "intra_socket", "short") == {"alpha": 1e-6, "beta": 1e-10}


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("sockets_per_node = 1\n", "", r"bad.toml: sockets_per_node: missing"),
        ("beta = 1e-10", "beta = -1.0", r"bad.toml: comm.postal.intra_socket.short.beta: must be a positive number"),
        ("beta = 1e-10", 'beta = "fast"', r"comm.postal.intra_socket.short.beta: must be a number"),
        ("intra_socket.short]", "intra_node.short]", r"comm.postal.intra_node: unknown mode"),
        ("beta = 1e-10", "gamma = 1e-10", r"comm.postal.intra_socket.short.beta: missing"),
        ("eager_max_bytes = 1024", "eager_max_bytes = 8", r"protocols.eager_max_bytes: must be >= short_max_bytes"),
        ("ranks_per_node = 2", "ranks_per_node = 0", r"ranks_per_node: must be an integer >= 1"),
    ],
)
def test_malformed_files_name_file_and_field(tmp_path, old, new, message):
    assert old in GOOD
    with pytest.raises(P.PlatformError, match=message):
        P.load(_write(tmp_path, GOOD.replace(old, new)))


def test_files_are_valid_toml_with_sources():
    for name in P.available():
        path = P.load(name).path
        data = tomllib.loads(path.read_text())
        assert data["protocols"]["source"], name
        assert data["source"], name


def test_replace_for_what_if():
    s = P.load("summit")
    fat = s.replace(sockets_per_node=2, gpus_per_socket=8, ranks_per_node=16)
    assert fat.ranks_per_socket == 8 and s.ranks_per_node == 6
    assert np.isclose(fat.params("postal", "inter_node", "eager")["beta"], 1.55e-10)
