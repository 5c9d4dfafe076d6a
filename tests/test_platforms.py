"""perfmod.machine.platforms: paper numbers, N/A cells, thresholds, validation errors, round trips."""

import pickle
import tomllib

import numpy as np
import pytest

from perfmod.core.paths import shipped_platforms_dir
from perfmod.machine import platforms as P

GPU_PLATFORMS = ("summit", "lassen", "bridges")


@pytest.mark.parametrize(
    ("name", "model", "mode", "protocol", "param", "value"),
    [
        ("summit", "postal", "intra_socket", "short", "alpha", 4.79e-7),  # 000 Table 2
        ("summit", "postal", "inter_node", "rendezvous", "beta", 8.70e-11),
        ("lassen", "postal", "inter_socket", "eager", "beta", 2.16e-10),
        ("lassen", "postal", "intra_socket", "rendezvous", "alpha", 2.92e-6),
        ("bridges", "postal", "inter_node", "rendezvous", "alpha", 2.94e-5),
        ("bridges", "postal", "inter_socket", "short", "beta", 1.46e-9),
        ("summit", "maxrate", "intra_socket", "short", "beta", 6.21e-10),  # Table 3
        ("lassen", "maxrate", "inter_node", "short", "alpha", 1.55e-6),
        ("bridges", "maxrate", "inter_node", "short", "beta", 5.51e-9),
        ("summit", "maxrate", "inter_node", "rendezvous", "r_ci", 2.58e7),  # Table 4
        ("summit", "maxrate", "intra_socket", "rendezvous", "r_cb", 1.80e10),
        ("lassen", "maxrate", "inter_node", "eager", "r_cb", 4.92e9),
        ("lassen", "maxrate", "inter_socket", "rendezvous", "r_ci", 7.09e9),
        ("bridges", "maxrate", "inter_node", "rendezvous", "r_ci", 2.08e8),
    ],
)
def test_paper_parameters(name, model, mode, protocol, param, value):
    assert P.load(name).params(model, mode, protocol)[param] == value


def test_params_returns_exactly_the_model_parameters():
    s = P.load("summit")
    assert s.params("postal", "inter_node", "eager") == {"alpha": 2.86e-6, "beta": 1.55e-10}
    assert set(s.params("maxrate", "inter_node", "eager")) == {"alpha", "r_cb", "r_ci"}
    e = s.entry("postal", "inter_node", "eager")
    assert isinstance(e, P.Params) and e.source == "000 Table 2" and dict(e) == {"alpha": 2.86e-6, "beta": 1.55e-10}


def test_table1_topology():
    s, lassen, b = (P.load(n) for n in GPU_PLATFORMS)
    assert (s.nodes, s.sockets_per_node, s.gpus_per_node, s.ranks_per_node, s.ranks_per_socket) == (4608, 2, 6, 6, 3)
    assert (lassen.nodes, lassen.gpus_per_node, lassen.ranks_per_socket, lassen.gpu) == (792, 4, 2, "Tesla V100")
    assert (b.nodes, b.gpus_per_node, b.ranks_per_socket, b.gpu, b.mpi) == (32, 2, 1, "Tesla P100", "Intel MPI")


def test_stampede2_from_paper_003():
    p = P.load("Stampede2")  # names are case-insensitive
    assert (p.nodes, p.sockets_per_node, p.gpus_per_socket, p.ranks_per_node, p.gpus_per_node) == (4200, 1, 0, 2, 0)
    assert "[paper 003]" in p.source and "68 OpenMP threads" in p.source
    assert p.comm == {} and not p.has("postal", "inter_node", "eager")
    with pytest.raises(P.ParameterNotAvailable, match=r"'stampede2'.*postal.*'inter_node'.*'eager'.*no such entry"):
        p.params("postal", "inter_node", "eager")


def test_na_cells_keep_the_papers_reason():
    b = P.load("bridges")
    with pytest.raises(P.ParameterNotAvailable, match=r"'bridges'.*postal.*'intra_socket'.*'eager'.*1 process/socket"):
        b.params("postal", "intra_socket", "eager")
    e = P.load("lassen").entry("maxrate", "intra_socket", "rendezvous")
    assert e == P.NotAvailable("N/A (Apply postal model)", "postal", "000 Table 4")
    with pytest.raises(P.ParameterNotAvailable, match=r"Apply postal model.*apply the postal model"):
        P.load("lassen").params("maxrate", "intra_socket", "short")
    assert not P.load("lassen").has("maxrate", "intra_socket", "short")
    assert P.load("bridges").entry("maxrate", "intra_socket", "short").fallback is None
    assert P.load("bridges").entry("maxrate", "inter_socket", "eager").fallback == "postal"


def test_every_gpu_platform_has_all_18_cells():
    for name in GPU_PLATFORMS:
        p = P.load(name)
        assert set(p.comm) == {(m, mo, pr) for m in ("postal", "maxrate") for mo in P.MODES for pr in P.PROTOCOLS}
        tab = p.table()
        assert list(tab.columns) == ["model", "mode", "protocol", "parameter", "value", "note", "source"]
        na = tab[tab.parameter.isna()]
        assert na.value.isna().all() and na.note.str.startswith("N/A").all()
        assert (tab.loc[tab.parameter.notna(), "value"] > 0).all()
    assert len(P.load("summit").table()) == 9 * 2 + 3 * 2 + 6 * 3  # no N/A on Summit


@pytest.mark.parametrize("name", ["summit", "lassen", "bridges", "stampede2"])
def test_protocol_selection_at_thresholds(name):
    p = P.load(name)
    s, e = p.short_max_bytes, p.eager_max_bytes
    got = p.protocol([1, s, s + 1, e, e + 1, 10**9])
    assert got.tolist() == ["short", "short", "eager", "eager", "rendezvous", "rendezvous"]
    assert p.protocol(np.array([[8.0, 1e7]])).shape == (1, 2)
    for bad in ([8, 0], [-1], [np.nan], [np.inf]):
        with pytest.raises(ValueError, match="positive and finite"):
            p.protocol(bad)


@pytest.mark.parametrize(
    ("name", "short", "eager", "cites"),
    [
        ("summit", 231, 65535, "mpidi_platform.h"),  # IBM PAMI device for PE: n < 232, n < 65536
        ("lassen", 231, 65535, "mpidi_platform.h"),
        ("bridges", 8192, 64000, "MQ_HFI_THRESH_RNDV_XEON"),  # PSM2 defaults on Xeon hosts
        ("stampede2", 8192, 200000, "MQ_HFI_THRESH_RNDV_PHI2"),  # PSM2 defaults on KNL hosts
    ],
)
def test_thresholds_are_documented_assumptions_not_paper_numbers(name, short, eager, cites):
    p = P.load(name)
    assert (p.short_max_bytes, p.eager_max_bytes) == (short, eager)
    assert p.protocol_source.startswith("assumption:") and cites in p.protocol_source
    assert "does not state the thresholds" in p.protocol_source
    assert "Table" not in p.protocol_source  # no paper table gives them


def test_unknown_platform_lists_known():
    with pytest.raises(P.PlatformError, match="unknown platform 'frontier'; known platforms: .*summit"):
        P.load("frontier")
    with pytest.raises(P.PlatformError, match="no such platform file"):
        P.load("/nonexistent/dir/x.toml")
    assert {"summit", "lassen", "bridges", "stampede2"} <= set(P.available())


def test_unknown_names():
    p = P.load("summit")
    with pytest.raises(ValueError, match="unknown mode 'intra_node'; expected one of intra_socket"):
        p.params("postal", "intra_node", "short")
    with pytest.raises(ValueError, match="unknown protocol 'long'"):
        p.entry("postal", "inter_node", "long")
    with pytest.raises(ValueError, match="unknown model 'logp'; expected one of postal, maxrate, loggp"):
        p.has("logp", "inter_node", "eager")


def test_round_trip(tmp_path):
    for name in P.available():
        p = P.load(name)
        back = P.load(P.write(p, tmp_path / f"{name}.toml"))
        assert back.replace(path=None) == p.replace(path=None)
        assert back.protocol_source == p.protocol_source
        assert all(getattr(back.comm[k], "source", None) == getattr(p.comm[k], "source", None) for k in p.comm)
        assert P.to_dict(back) == P.to_dict(p)
    assert not list(tmp_path.glob(".*.tmp"))  # atomic: no temporary left behind


def test_pickle_round_trip():
    p = P.load("lassen")
    assert pickle.loads(pickle.dumps(p)) == p


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
source = "test"
[comm.postal.intra_socket.short]
alpha = 1e-6
beta = 1e-10
source = "test"
[comm.maxrate.intra_socket.short]
na = "N/A (Apply postal model)"
fallback = "postal"
"""


def test_good_minimal_file(tmp_path):
    p = P.load(_write(tmp_path, GOOD))
    assert p.params("postal", "intra_socket", "short") == {"alpha": 1e-6, "beta": 1e-10}
    assert p.entry("maxrate", "intra_socket", "short").fallback == "postal"
    assert p.nodes is None and p.gpus_per_node == 0


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("sockets_per_node = 1\n", "", r"bad.toml: sockets_per_node: missing"),
        ("beta = 1e-10", "beta = -1",
         r"bad.toml: comm.postal.intra_socket.short.beta: must be a positive number, got -1"),
        ("beta = 1e-10", 'beta = "fast"', r"bad.toml: comm.postal.intra_socket.short.beta: must be a finite number"),
        ("beta = 1e-10", "beta = nan", r"comm.postal.intra_socket.short.beta: must be a finite number"),
        ("postal.intra_socket.short]", "postal.intra_node.short]", r"bad.toml: comm.postal.intra_node: unknown mode"),
        ("postal.intra_socket.short]", "postal.intra_socket.long]", r"comm.postal.intra_socket.long: unknown protocol"),
        ("[comm.postal.", "[comm.logp.", r"bad.toml: comm.logp: unknown model"),
        ("beta = 1e-10", "gamma = 1e-10", r"comm.postal.intra_socket.short.beta: missing"),
        ("source = \"test\"\n[comm.maxrate", "gamma = 1.0\n[comm.maxrate",
         r"comm.postal.intra_socket.short.gamma: unknown parameter"),
        ("fallback = \"postal\"", "fallback = \"loggp\"",
         r"comm.maxrate.intra_socket.short.fallback: must be 'postal'"),
        ("fallback = \"postal\"", "alpha = 1e-6", r"comm.maxrate.intra_socket.short: an N/A entry carries no param"),
        ("eager_max_bytes = 1024", "eager_max_bytes = 8", r"protocols.eager_max_bytes: must be >= short_max_bytes"),
        ("eager_max_bytes = 1024\n", "", r"bad.toml: protocols.eager_max_bytes: missing"),
        ("ranks_per_node = 2", "ranks_per_node = 0", r"bad.toml: ranks_per_node: must be an integer >= 1, got 0"),
        ("ranks_per_node = 2", "ranks_per_node = 2.5", r"ranks_per_node: must be an integer >= 1, got 2.5"),
        ("gpus_per_socket = 0", "gpus_per_sockets = 0", r"bad.toml: (gpus_per_socket: missing|gpus_per_sockets)"),
        ("name = \"x\"", "name = \"x\"\nnodes = 0", r"bad.toml: nodes: must be an integer >= 1, got 0"),
        ("name = \"x\"", "name = \"x\"\ncpus = \"a\"", r"bad.toml: cpus: unknown field"),
        ("name = \"x\"", "name = \"x\"\ncpu = 1", r"bad.toml: cpu: must be a string"),
        ("[protocols]", "[protocol]", r"bad.toml: protocol: unknown field"),
        ("alpha = 1e-6\nbeta", "alpha = 1e-6\nalpha_se = -1.0\nbeta", r"alpha_se: must be a number >= 0"),
        ("name = \"x\"", "name = [", r"bad.toml: not valid TOML"),
    ],
)
def test_malformed_files_name_file_and_field(tmp_path, old, new, message):
    assert old in GOOD
    with pytest.raises(P.PlatformError, match=message):
        P.load(_write(tmp_path, GOOD.replace(old, new, 1)))


def test_errors_name_the_file_relative_to_the_checkout():
    path = shipped_platforms_dir() / "summit.toml"
    d = tomllib.loads(path.read_text())
    d["comm"]["postal"]["inter_node"]["eager"]["beta"] = -1
    with pytest.raises(P.PlatformError) as err:
        P.from_dict(d, path=path)
    assert str(err.value) == (
        "perfmod/data/platforms/summit.toml: comm.postal.inter_node.eager.beta: must be a positive number, got -1")


def test_files_are_valid_toml_with_sources():
    for name in P.available():
        path = P.load(name).path
        data = tomllib.loads(path.read_text())
        assert data["protocols"]["source"], name
        assert data["source"], name
        assert path.read_text().startswith("#"), name  # header comment naming the sources
    for name in GPU_PLATFORMS:
        p = P.load(name)
        assert "[paper 000]" in p.source and "shared/" not in p.source
        assert {getattr(e, "source", "") for e in p.comm.values()} == {"000 Table 2", "000 Table 3", "000 Table 4"}


def test_replace_for_what_if():
    s = P.load("summit")
    fat = s.replace(sockets_per_node=2, gpus_per_socket=8, ranks_per_node=16)
    assert fat.ranks_per_socket == 8 and fat.gpus_per_node == 16 and s.ranks_per_node == 6
    assert fat.params("postal", "inter_node", "eager")["beta"] == 1.55e-10
    comm = dict(s.comm) | {("postal", "inter_node", "eager"): {"alpha": 1e-6, "beta": 1e-11}}
    fast = s.replace(comm=comm)
    assert fast.params("postal", "inter_node", "eager") == {"alpha": 1e-6, "beta": 1e-11}
    assert s.params("postal", "inter_node", "eager")["beta"] == 1.55e-10
    with pytest.raises(P.PlatformError, match=r"platform 'summit'|summit.toml"):
        s.replace(eager_max_bytes=10)
    with pytest.raises(P.PlatformError, match=r"comm.postal.inter_node.eager.beta: must be a positive number"):
        s.replace(comm={("postal", "inter_node", "eager"): {"alpha": 1e-6, "beta": 0.0}})
    with pytest.raises(P.PlatformError, match=r"unknown mode 'intra_node'"):
        s.replace(comm={("postal", "intra_node", "eager"): {"alpha": 1e-6, "beta": 1e-9}})


def test_as_platform_coerces_names_and_paths_and_passes_platforms_through():
    summit = P.load("summit")
    assert P.as_platform("Summit") == summit
    assert P.as_platform(shipped_platforms_dir() / "summit.toml").ranks_per_node == 6  # 000 Table 1
    assert P.as_platform(summit) is summit
    with pytest.raises(P.PlatformError, match="unknown platform 'nowhere'"):
        P.as_platform("nowhere")


def test_param_tables_can_be_added_and_removed():
    assert P.param_tables() == ("postal", "maxrate", "loggp")
    names = dict.fromkeys(P.PROTOCOLS, ("t0",))
    P.add_param_table("extra", names)
    try:
        P.add_param_table("extra", names)  # the same again: nothing happens
        assert P.param_tables() == ("postal", "maxrate", "loggp", "extra")
        summit = P.load("summit")
        cell = {("extra", "inter_node", "eager"): {"t0": 1e-6, "source": "test"}}
        p = summit.replace(comm={**summit.comm, **cell})
        assert p.params("extra", "inter_node", "eager") == {"t0": 1e-6}
        with pytest.raises(P.PlatformError, match=r"comm.extra.inter_node.eager.t0: missing"):
            summit.replace(comm={("extra", "inter_node", "eager"): {"t1": 1e-6}})
        with pytest.raises(ValueError, match="exists with other names"):
            P.add_param_table("extra", dict.fromkeys(P.PROTOCOLS, ("t1",)))
    finally:
        P.remove_param_table("extra")
    assert P.param_tables() == ("postal", "maxrate", "loggp")
    with pytest.raises(ValueError, match="shipped with perfmod"):
        P.remove_param_table("postal")
    with pytest.raises(ValueError, match="for each of"):
        P.add_param_table("half", {"short": ("t0",)})


def test_shipped_platforms_are_plausible():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in P.available():
            P.load(name)


@pytest.mark.parametrize(("field", "value", "hint"), [
    ("beta = 1.55e-10", "beta = 12.5", r"beta = 12.5 s/B is outside \[1e-13, 1e-05\] s/B: it looks like a bandwidth "
                                       r"in GB/s \(12.5 GB/s is beta = 8e-11 s/B\)"),
    ("alpha = 2.86e-06", "alpha = 7.59", r"alpha = 7.59 s is outside \[1e-09, 0.01\] s: it looks like microseconds "
                                        r"\(7.59 us is 7.59e-06 s\)"),
])
def test_a_value_in_the_wrong_unit_warns_with_file_field_and_likely_mistake(tmp_path, field, value, hint):
    from perfmod.machine.plausibility import PlatformWarning

    text = (shipped_platforms_dir() / "summit.toml").read_text()
    assert field in text
    p = tmp_path / "summit_typo.toml"
    p.write_text(text.replace(field, value, 1))
    with pytest.warns(PlatformWarning, match=rf"summit_typo.toml: comm\.postal\.\w+\.\w+\.{hint}"):
        P.load(p)
