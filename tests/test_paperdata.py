"""Transcribed paper tables: spot checks, internal consistency, and agreement with the platform files."""

import numpy as np
import pytest

from perfmod import paperdata
from perfmod.platforms import NotAvailable, load
from perfmod.studies.choi2020_comm import table5_reproduction


def test_spot_checks():
    t2 = paperdata.read_table("choi2020_table2_postal").set_index(["platform", "mode", "protocol"])
    assert t2.loc[("summit", "intra_socket", "short"), "alpha"] == 4.79e-7
    assert t2.loc[("summit", "intra_socket", "short"), "beta"] == 2.99e-10
    assert t2.loc[("bridges", "inter_node", "rendezvous"), "alpha"] == 2.94e-5
    assert len(t2) == 27
    t4 = paperdata.read_table("choi2020_table4_maxrate.csv").set_index(["platform", "mode", "protocol"])
    assert len(t4) == 18
    assert t4.loc[("summit", "inter_node", "rendezvous"), "r_ci"] == 2.58e7
    assert t4.loc[("lassen", "inter_node", "eager"), "r_cb"] == 4.92e9
    t3 = paperdata.read_table("choi2020_table3_maxrate_short").set_index(["platform", "mode"])
    assert t3.loc[("lassen", "intra_socket"), "note"] == "N/A (Apply postal model)"
    assert np.isnan(t3.loc[("lassen", "intra_socket"), "alpha"])


def test_header_names_paper_and_table():
    for name in paperdata.available():
        src = paperdata.read_table(name).attrs["source"]
        assert "shared/papers/" in src and ("Table" in src or "§" in src), name


def test_unknown_table_lists_available():
    with pytest.raises(FileNotFoundError, match="available: .*choi2020_table2_postal"):
        paperdata.read_table("table99")


def test_table5_k_is_k_inter_over_k_total_times_k_prime():
    t5 = paperdata.read_table("choi2020_table5_kmodel")
    assert len(t5) == 9
    assert np.allclose((t5.k_inter / t5.k_total * t5.k_prime).round(2), t5.k)


def test_orders_of_magnitude():
    t2 = paperdata.read_table("choi2020_table2_postal").dropna(subset=["alpha"])
    assert t2.alpha.between(1e-7, 1e-4).all() and t2.beta.between(1e-11, 1e-8).all()
    t4 = paperdata.read_table("choi2020_table4_maxrate").dropna(subset=["alpha"])
    assert (t4.r_ci <= t4.r_cb).all()  # additional processes get less bandwidth (000 §2.1)


def test_overheads():
    o = paperdata.read_table("overheads").set_index(["paper", "app", "platform"])
    assert o.loc[(0, "jacobi2d", "summit"), "overhead"] == pytest.approx(200e-6)
    assert o.loc[(2, "minife", "bridges"), "overhead"] == pytest.approx(1001e-6)


def _platform_value(p, model, mode, protocol, param):
    e = p.entry(model, mode, protocol)
    return e if isinstance(e, NotAvailable) else e[param]


@pytest.mark.parametrize(
    ("table", "model", "params"),
    [
        ("choi2020_table2_postal", "postal", ("alpha", "beta")),
        ("choi2020_table3_maxrate_short", "maxrate", ("alpha", "beta")),
        ("choi2020_table4_maxrate", "maxrate", ("alpha", "r_cb", "r_ci")),
    ],
)
def test_platform_files_agree_with_tables(table, model, params):
    """Two transcriptions (CSV parsed from the text, TOML typed) agree cell by cell."""
    df = paperdata.read_table(table)
    for row in df.itertuples():
        p = load(row.platform)
        protocol = getattr(row, "protocol", "short")
        for param in params:
            got = _platform_value(p, model, row.mode, protocol, param)
            if isinstance(row.note, str) and row.note:
                assert isinstance(got, NotAvailable) and got.reason == row.note, row
            else:
                assert got == getattr(row, param), row


def test_table1_agrees_with_platforms():
    for row in paperdata.read_table("choi2020_table1_platforms").itertuples():
        p = load(row.platform)
        assert (p.nodes, p.gpus_per_node, p.gpus_per_socket, p.gpu, p.mpi) == (
            row.nodes, row.gpus_per_node, row.gpus_per_socket, row.gpu, row.mpi)


def test_table5_reproduction_frame():
    df = table5_reproduction()
    assert df.reproduced.sum() == 8
    bad = df[~df.reproduced]
    assert bad[["app", "platform"]].values.tolist() == [["minife", "summit"]]
    assert "135" not in bad.why.iloc[0] or "118" in bad.why.iloc[0]
