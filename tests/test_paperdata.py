"""Transcribed paper tables: against the paper text, internally, and against the platform files.

Three transcriptions meet here: the CSV files in ``data/paper``, the TOML
files in ``data/platforms`` (typed separately) and the paper text itself
(``shared/papers``, parsed below where the checkout has it).
"""

import itertools
import re

import numpy as np
import pytest

from perfmod.core import paperdata
from perfmod.core.paths import repo_root
from perfmod.machine.platforms import MODES, PROTOCOLS, NotAvailable, load
from perfmod.studies.papers.choi2020 import table5_reproduction

PAPERS = repo_root().parent / "shared" / "papers"
PAPER_000 = PAPERS / "000_95042cffe07dd549.txt"
PLATFORMS = ("summit", "lassen", "bridges")
MODE_LABEL = {"Intra-socket": "intra_socket", "Inter-socket": "inter_socket", "Inter-node": "inter_node"}
PROTO_LABEL = {"Short": "short", "Eager": "eager", "Rendezvous": "rendezvous"}
NUM = re.compile(r"^\$([-+0-9.Ee]+)\$$")

needs_paper = pytest.mark.skipif(not PAPER_000.is_file(), reason="shared/papers not in this checkout")


def _block(text, start, stop):
    return text[text.index(start): text.index(stop)]


def _parse_param_table(start, stop, params, with_protocol):
    """Cells of Tables 2-4 from the paper text: {(platform, mode, protocol, param): value}, {(platform, mode): N/A}."""
    values, na = {}, {}
    mode = None
    first = 2 if with_protocol else 1
    for line in _block(PAPER_000.read_text(encoding="utf-8"), start, stop).splitlines():
        cells = line.split("\t")
        if cells[0] in MODE_LABEL:
            mode = MODE_LABEL[cells[0]]
        if mode is None or (with_protocol and (len(cells) < 2 or cells[1] not in PROTO_LABEL)):
            continue
        proto = PROTO_LABEL[cells[1]] if with_protocol else "short"
        for i, cell in enumerate(cells[first:]):
            plat, par = PLATFORMS[i // len(params)], params[i % len(params)]
            if m := NUM.match(cell):
                values[(plat, mode, proto, par)] = float(m.group(1))
            elif cell.startswith("N/A"):
                na[(plat, mode)] = cell
            else:
                assert cell == "", (line, cell)
    return values, na


@needs_paper
@pytest.mark.parametrize(
    ("table", "start", "stop", "csv_cols", "params", "with_protocol"),
    [
        ("choi2020_table2_postal", "Table 2:", "Table 3:", ("alpha_s", "beta_s_per_byte"), ("a", "b"), True),
        ("choi2020_table3_maxrate_short", "Table 3:", "Table 4:", ("alpha_s", "beta_s_per_byte"), ("a", "b"), False),
        ("choi2020_table4_maxrate", "Table 4:", "4.2 Proxy", ("alpha_s", "r_cb_bytes_per_s", "r_ci_bytes_per_s"),
         ("a", "rcb", "rci"), True),
    ],
)
def test_csv_matches_paper_text_cell_by_cell(table, start, stop, csv_cols, params, with_protocol):
    values, na = _parse_param_table(start, stop, params, with_protocol)
    df = paperdata.read_table(table)
    seen = 0
    for row in df.itertuples():
        proto = getattr(row, "protocol", "short")
        if row.note:
            assert na.get((row.platform, row.mode)) == row.note, row
            assert all(np.isnan(getattr(row, c)) for c in csv_cols), row
            assert not any((row.platform, row.mode, proto, p) in values for p in params), row
        else:
            for c, p in zip(csv_cols, params, strict=True):
                assert getattr(row, c) == values[(row.platform, row.mode, proto, p)], (row, c)
                seen += 1
    assert seen == len(values)  # every number printed in the paper is in the CSV


@needs_paper
def test_table1_matches_paper_text():
    rows = _block(PAPER_000.read_text(encoding="utf-8"), "Table 1:", "- (3) Combine").splitlines()
    paper = {}
    for line in rows:
        cells = line.split("\t")
        if cells[0] in ("Summit", "Lassen", "Bridges"):
            paper[cells[0].lower()] = cells
    df = paperdata.read_table("choi2020_table1_platforms")
    assert sorted(df.platform) == sorted(paper)
    for row in df.itertuples():
        name, nodes, cpu, gpu, gpn, gps, net, mpi = paper[row.platform]
        assert (row.nodes, row.cpu, row.gpu, row.gpus_per_node, row.gpus_per_socket, row.network, row.mpi) == (
            int(nodes.replace(",", "")), cpu, gpu, int(gpn), int(gps), net, mpi)


@needs_paper
def test_table5_matches_paper_text():
    block = _block(PAPER_000.read_text(encoding="utf-8"), "Table 5:", "times on Lassen and Bridges")
    kprime = dict(re.findall(r"(Summit|Lassen|Bridges) \(\$k' = (\d)\$\)", block))
    t5 = paperdata.read_table("choi2020_table5_kmodel").set_index(["app", "platform"])
    n = 0
    for line in block.splitlines():
        cells = line.split("\t")
        if cells[0] not in ("Jacobi2D", "MiniFE", "MiniMD"):
            continue
        for i, plat in enumerate(PLATFORMS):
            ki, kt, k = cells[1 + 3 * i: 4 + 3 * i]
            row = t5.loc[(cells[0].lower(), plat)]
            assert (row.k_prime, row.k_inter, row.k_total, row.k) == (
                int(kprime[plat.capitalize()]), int(ki), int(kt), float(k))
            n += 1
    assert n == len(t5) == 9


def test_table5_k_is_k_inter_over_k_total_times_k_prime():
    """Eq. 4 reproduces every printed k to its two decimals."""
    t5 = paperdata.read_table("choi2020_table5_kmodel")
    assert len(t5) == 9
    k = t5.k_inter / t5.k_total * t5.k_prime
    assert (abs(k - t5.k) <= 0.005 + 1e-12).all()
    assert (k.round(2) == t5.k).all()


def test_long_format_and_na_rows():
    t2 = paperdata.read_table("choi2020_table2_postal")
    assert set(itertools.product(PLATFORMS, MODES, PROTOCOLS)) == set(
        zip(t2.platform, t2["mode"], t2.protocol, strict=True))
    t3 = paperdata.read_table("choi2020_table3_maxrate_short")
    assert set(itertools.product(PLATFORMS, MODES)) == set(zip(t3.platform, t3["mode"], strict=True))
    t4 = paperdata.read_table("choi2020_table4_maxrate")
    assert set(itertools.product(PLATFORMS, MODES, ("eager", "rendezvous"))) == set(
        zip(t4.platform, t4["mode"], t4.protocol, strict=True))
    assert (len(t2), len(t3), len(t4)) == (27, 9, 18)
    for df in (t2, t3, t4):
        values = df.drop(columns=[c for c in ("platform", "mode", "protocol", "note") if c in df])
        na = df.note != ""
        assert values[na].isna().all().all() and values[~na].notna().all().all()
        assert set(df.note[na]) <= {"N/A (1 process/socket)", "N/A (Apply postal model)"}


def test_spot_checks():
    t2 = paperdata.read_table("choi2020_table2_postal").set_index(["platform", "mode", "protocol"])
    assert t2.loc[("summit", "intra_socket", "short"), "alpha_s"] == 4.79e-7
    assert t2.loc[("summit", "intra_socket", "short"), "beta_s_per_byte"] == 2.99e-10
    assert t2.loc[("lassen", "inter_socket", "eager"), "beta_s_per_byte"] == 2.16e-10
    assert t2.loc[("bridges", "inter_node", "rendezvous"), "alpha_s"] == 2.94e-5
    assert t2.loc[("bridges", "intra_socket", "eager"), "note"] == "N/A (1 process/socket)"
    t4 = paperdata.read_table("choi2020_table4_maxrate.csv").set_index(["platform", "mode", "protocol"])
    assert t4.loc[("summit", "inter_node", "rendezvous"), "r_ci_bytes_per_s"] == 2.58e7
    assert t4.loc[("lassen", "inter_node", "eager"), "r_cb_bytes_per_s"] == 4.92e9
    t3 = paperdata.read_table("choi2020_table3_maxrate_short").set_index(["platform", "mode"])
    assert t3.loc[("lassen", "intra_socket"), "note"] == "N/A (Apply postal model)"
    assert np.isnan(t3.loc[("lassen", "intra_socket"), "alpha_s"])
    assert t3.loc[("bridges", "inter_node"), "beta_s_per_byte"] == 5.51e-9


def test_orders_of_magnitude():
    t2 = paperdata.read_table("choi2020_table2_postal").dropna(subset=["alpha_s"])
    assert t2.alpha_s.between(1e-7, 1e-4).all() and t2.beta_s_per_byte.between(1e-11, 1e-8).all()
    t4 = paperdata.read_table("choi2020_table4_maxrate").dropna(subset=["alpha_s"])
    assert (t4.r_ci_bytes_per_s <= t4.r_cb_bytes_per_s).all()  # additional processes get less (000 §2.1)


def test_protocol_ordering_within_platform_and_mode():
    """Every printed (platform, mode) of Table 2 has alpha rising and beta falling from short to
    eager to rendezvous, and Table 3/4 alphas are of the same order as Table 2's: a swapped
    digit or exponent in one cell breaks one of these."""
    t2 = paperdata.read_table("choi2020_table2_postal").dropna(subset=["alpha_s"])
    groups = 0
    for (plat, mode), g in t2.groupby(["platform", "mode"]):
        g = g.set_index("protocol").loc[list(PROTOCOLS)]
        assert g.alpha_s.is_monotonic_increasing and g.alpha_s.is_unique, (plat, mode)
        assert g.beta_s_per_byte.is_monotonic_decreasing and g.beta_s_per_byte.is_unique, (plat, mode)
        groups += 1
    assert groups == 8  # 3 platforms x 3 modes, less Bridges intra-socket
    t3 = paperdata.read_table("choi2020_table3_maxrate_short").dropna(subset=["alpha_s"])
    t4 = paperdata.read_table("choi2020_table4_maxrate").dropna(subset=["alpha_s"])
    assert t3.alpha_s.between(1e-7, 1e-4).all() and t4.alpha_s.between(1e-7, 1e-4).all()
    t2i = t2.set_index(["platform", "mode", "protocol"])
    for row in t4.itertuples():  # max-rate alpha within a factor 3 of the postal alpha of the same cell
        assert 1 / 3 < row.alpha_s / t2i.loc[(row.platform, row.mode, row.protocol), "alpha_s"] < 3, row
    for row in t3.itertuples():
        assert 1 / 3 < row.alpha_s / t2i.loc[(row.platform, row.mode, "short"), "alpha_s"] < 3, row
    assert (t4.groupby(["platform", "mode"]).alpha_s.agg(lambda a: a.is_monotonic_increasing)).all()


def test_header_names_paper_file_and_table():
    for name in paperdata.available():
        df = paperdata.read_table(name)
        src = df.attrs["source"]
        assert re.search(r'"[A-Z][^"]{20,}" \[paper \d{3}\]', src), name  # the title and the paper's number
        assert "shared/" not in src, name  # a clone has no shared/: cite the paper, not a file
        assert "Table" in src or "§" in src, name
        assert "Columns" in src or "columns" in src or "Long format" in src, name


def test_read_table_name_forms_and_unknown():
    a = paperdata.read_table("overheads")
    b = paperdata.read_table("overheads.csv")
    assert a.equals(b) and a.attrs["source"] == b.attrs["source"]
    with pytest.raises(FileNotFoundError, match="available: .*choi2020_table2_postal"):
        paperdata.read_table("table99")


def test_overheads_values_and_provenance():
    o = paperdata.read_table("overheads").set_index(["paper", "app", "platform"])
    assert o.loc[("000_95042cffe07dd549", "jacobi2d", "summit"), "overhead_s"] == pytest.approx(200e-6)
    assert o.loc[("000_95042cffe07dd549", "minife", "lassen"), "overhead_s"] == pytest.approx(165e-6)
    assert o.loc[("000_95042cffe07dd549", "minimd", "lassen"), "overhead_s"] == pytest.approx(148e-6)
    assert o.loc[("002_919f0c05d5ad9f00", "minife", "lassen"), "overhead_s"] == pytest.approx(820e-6)
    assert o.loc[("002_919f0c05d5ad9f00", "minife", "bridges"), "overhead_s"] == pytest.approx(1001e-6)
    assert (o.xs("000_95042cffe07dd549").nprocs == 2).all()  # "two-process" runs (000 §4.2, §5)
    assert o.xs("002_919f0c05d5ad9f00").nprocs.isna().all()  # the poster does not say


@pytest.mark.skipif(not PAPERS.is_dir(), reason="shared/papers not in this checkout")
def test_overhead_quotes_are_verbatim_at_their_lines():
    for row in paperdata.read_table("overheads").itertuples():
        raw = (PAPERS / f"{row.paper}.txt").read_text(encoding="utf-8")
        text = " ".join(re.sub(r"-\n", "-", raw).split())
        assert row.quote in text, row.quote
        assert row.quote.split(" ")[0] in raw.splitlines()[row.line - 1], (row.line, row.quote)
        micro = re.search(r"(\d+) [μµ] ?s", row.quote)
        assert micro and float(micro.group(1)) * 1e-6 == pytest.approx(row.overhead_s), row.quote


def _platform_value(p, model, mode, protocol, param):
    e = p.entry(model, mode, protocol)
    return e if isinstance(e, NotAvailable) else e[param]


@pytest.mark.parametrize(
    ("table", "model", "params"),
    [
        ("choi2020_table2_postal", "postal", {"alpha": "alpha_s", "beta": "beta_s_per_byte"}),
        ("choi2020_table3_maxrate_short", "maxrate", {"alpha": "alpha_s", "beta": "beta_s_per_byte"}),
        ("choi2020_table4_maxrate", "maxrate",
         {"alpha": "alpha_s", "r_cb": "r_cb_bytes_per_s", "r_ci": "r_ci_bytes_per_s"}),
    ],
)
def test_platform_files_agree_with_tables(table, model, params):
    """Two transcriptions (CSV and TOML) agree cell by cell, N/A reasons included."""
    df = paperdata.read_table(table)
    for row in df.itertuples():
        p = load(row.platform)
        protocol = getattr(row, "protocol", "short")
        for param, col in params.items():
            got = _platform_value(p, model, row.mode, protocol, param)
            if row.note:
                assert isinstance(got, NotAvailable) and got.reason == row.note, row
                assert got.fallback == ("postal" if "Apply postal model" in row.note else None), row
            else:
                assert got == getattr(row, col), (row, param)


def test_table1_agrees_with_platforms():
    for row in paperdata.read_table("choi2020_table1_platforms").itertuples():
        p = load(row.platform)
        assert (p.nodes, p.gpus_per_node, p.gpus_per_socket, p.cpu, p.gpu, p.network, p.mpi) == (
            row.nodes, row.gpus_per_node, row.gpus_per_socket, row.cpu, row.gpu, row.network, row.mpi)
        assert p.ranks_per_node == p.gpus_per_node  # one MPI process per GPU (000 §4.1)


def test_table5_reproduction_frame():
    df = table5_reproduction()
    assert df.reproduced.sum() == 8
    bad = df[~df.reproduced]
    assert bad[["app", "platform"]].values.tolist() == [["minife", "summit"]]
    assert "135" not in bad.why.iloc[0] or "118" in bad.why.iloc[0]
