"""extrapolate_trace (issue 24): traces at rank counts nobody traced, from smaller runs.

Two sources: perfmod's synthetic MiniFE and MiniMD traces (always there; the
32-rank synthetic trace is the exact answer) and paper 000's own Lassen DUMPI
traces (``$PERFMOD_CHOI2020_TRACES`` or ``../shared/data/choi2020-traces``
beside the checkout; skipped when absent), where the recorded 32-rank run is
the answer.  Traces are read once per module.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from perfmod.apps.extrapolate import (
    ExtrapolationError,
    ExtrapolationWarning,
    command_params,
    compare_traces,
    extrapolate_trace,
)
from perfmod.apps.minife import default_global_box
from perfmod.apps.traces import synthetic
from perfmod.studies.papers.choi2020_lassen import trace_root
from perfmod.trace import read_trace
from perfmod.trace.requests import validate_trace

ROOT = trace_root("")
needs_traces = pytest.mark.skipif(ROOT is None or not (ROOT / "minife").is_dir(),
                                  reason="paper 000's Lassen DUMPI traces not found (PERFMOD_CHOI2020_TRACES)")


def _box(p):
    return dict(zip(("nx", "ny", "nz"), map(float, default_global_box(p)), strict=True))


@pytest.fixture(scope="module")
def lassen():
    if ROOT is None or not (ROOT / "minife").is_dir():
        pytest.skip("paper 000's Lassen DUMPI traces not found")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {app: {p: read_trace(ROOT / app / f"n{p}.meta") for p in (2, 4, 8, 16, 32)}
                for app in ("minife", "minimd")}



def _kept_events(t, keep, source):
    """``t`` with only the events where ``keep`` (per-rank sequence numbers renumbered, times dropped)."""
    seq = np.arange(len(t))[keep] - np.searchsorted(t.rank[keep], t.rank[keep])
    return replace(t, rank=t.rank[keep], seq=seq.astype(np.int32), call=t.call[keep], peer=t.peer[keep],
                   nbytes=t.nbytes[keep], tag=t.tag[keep], comm=t.comm[keep], request=t.request[keep],
                   compute=t.compute[keep], aux_ptr=np.r_[0, np.cumsum(np.diff(t.aux_ptr)[keep])],
                   aux=t.aux[np.repeat(keep, np.diff(t.aux_ptr))], t_entry=None, t_exit=None, line=None,
                   source=source)

def test_command_params_reads_name_value_pairs():
    assert command_params(["./miniMD", "-i", "in.lj", "-nx", "128", "--ny", "64", "-v"]) == {"nx": 128.0, "ny": 64.0}


@pytest.mark.parametrize("app", ["minife", "minimd"])
def test_synthetic_2_to_16_gives_the_32_rank_trace(app):
    sizes = (2, 4, 8, 16)
    trs = [synthetic(app, p, iterations=3) for p in sizes]
    params = [_box(p) for p in sizes]
    out = extrapolate_trace(trs, 32, params=_box(32), train_params=params, validate=False)
    truth = synthetic(app, 32, iterations=3)
    c = compare_traces(out, truth)
    assert c["messages_error"] == 0 and c["bytes_error"] == 0 and c["rank_bytes_error"] == 0
    assert c["pairs_equal"] and c["collectives_equal"]
    validate_trace(out)
    assert out.meta["extrapolation"]["ordering"] == ("bisection" if app == "minife" else "cartesian")
    assert out.meta["extrapolation"]["periodic"] is (app == "minimd")


def test_synthetic_jacobi2d_on_a_2d_grid():
    trs = [synthetic("jacobi2d", p, iterations=2) for p in (4, 16)]
    out = extrapolate_trace(trs, 64, params={}, validate=False)
    c = compare_traces(out, synthetic("jacobi2d", 64, iterations=2))
    assert c["bytes_error"] == 0 and c["pairs_equal"] and c["collectives_equal"]
    assert out.meta["extrapolation"]["ordering"] == "cartesian2d"


@needs_traces
def test_dumpi_keeps_the_command_line(lassen):
    assert lassen["minife"][32].meta["argv"] == ["./miniFE-d", "-nx", "800", "-ny", "800", "-nz", "400",
                                                 "--num_devices", "1"]
    assert lassen["minimd"][2].meta["argv"][-6:] == ["-nx", "128", "-ny", "64", "-nz", "64"]


@needs_traces
@pytest.mark.parametrize("app", ["minife", "minimd"])
def test_lassen_2_to_16_predicts_the_recorded_32(lassen, app):
    tr = lassen[app]
    out = extrapolate_trace([tr[p] for p in (2, 4, 8, 16)], 32)
    ex = out.meta["extrapolation"]
    assert ex["params"]["nx"] == 800 if app == "minife" else ex["params"]["nx"] == 256
    c = compare_traces(out, tr[32])
    # the standard: totals within 2 %, busiest rank within 5 %, graph and collectives equal
    assert abs(c["messages_error"]) <= 0.02 and abs(c["bytes_error"]) <= 0.02
    assert abs(c["max_rank_bytes_error"]) <= 0.05
    assert c["pairs_equal"] and c["collectives_equal"]
    assert len(out) == len(tr[32])
    validate_trace(out)
    # leave-one-scale-out: folds stored, with their worst errors
    assert [f["nprocs"] for f in ex["loso"]] == [2, 4, 8, 16]
    assert ex["loso_max"]["messages_error"] == 0 and ex["loso_max"]["bytes_error"] == 0
    assert ex["loso_max"]["pairs_equal"] and ex["ranks_not_generalizing"] == []
    assert ex["far_beyond_training"] is False


@needs_traces
def test_lassen_slowest_rank_kmodel_communication(lassen):
    """K-model replay on Lassen of the 32-rank MiniFE trace extrapolated from 2-16 ranks against the recorded one.

    With the computation gaps set to zero on both sides the replay measures the communication pattern alone
    and agrees within 5 % on the slowest rank.  With the recorded gaps kept it does not yet: the recorded
    32-rank run waits more for late partners (slowest rank 0.082 s) than the 16-rank template's gaps
    reproduce (0.060 s): the recorded gaps differ by rank (by node and by GPU within a node) and the
    larger run's spread, and its start-up skew, are wider; the extrapolation does not model that growth
    (issue 24, open).
    """
    from perfmod.machine.platforms import load
    from perfmod.replay import replay

    plat = load("lassen")
    tr = lassen["minife"]
    out = extrapolate_trace([tr[p] for p in (2, 4, 8, 16)], 32, validate=False)
    t = [float((lambda d: (d.send_time + d.recv_time + d.wait_time).max())(
        replay(x.with_compute(np.zeros(len(x))), plat, "kmodel"))) for x in (out, tr[32])]
    assert t[0] == pytest.approx(t[1], rel=0.05)


@needs_traces
def test_lassen_extrapolated_k_counts_are_table5(lassen):
    """Table 5's Lassen cells (MiniFE at 256 ranks, MiniMD at 1,024; no trace of either here) from the
    traces extrapolated from 2-32 ranks, one iteration each (block mapping, 4 ranks per node)."""
    from perfmod.apps.registry import exchange
    from perfmod.core.paperdata import read_table
    from perfmod.studies.papers.choi2020_lassen import trace_k_counts

    t5 = read_table("choi2020_table5_kmodel").set_index(["app", "platform"])
    for app, p, periods, n_ex in (("minife", 256, 1, 1), ("minimd", 1024, 12, 2)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = extrapolate_trace(list(lassen[app].values()), p, iterations=periods, validate=False)
        k = trace_k_counts(out, n_ex, 4, exchange(app, p).stencil)
        row = t5.loc[(app, "lassen")]
        assert (k["k_inter"], k["k_total_counted"]) == (float(row["k_inter"]), float(row["k_total"])), app


@needs_traces
def test_far_target_is_flagged_and_chunked(lassen):
    tr = lassen["minife"]
    with pytest.warns(ExtrapolationWarning, match="times the largest training trace"):
        out = extrapolate_trace([tr[8], tr[16]], 256, iterations=1, validate=False)
    assert out.meta["extrapolation"]["far_beyond_training"] is True
    assert out.nprocs == 256
    validate_trace(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        with pytest.raises(ExtrapolationError, match="give iterations="):
            extrapolate_trace([tr[8], tr[16]], 2**20, validate=False)  # every iteration of a million ranks


@needs_traces
def test_bad_input_is_named(lassen):
    fe, md = lassen["minife"], lassen["minimd"]
    with pytest.raises(ExtrapolationError, match="one training scale"):
        extrapolate_trace([fe[4], fe[4]], 8)
    with pytest.raises(ExtrapolationError, match="program 'miniMD-d' differs"):
        extrapolate_trace([md[4], fe[8]], 16)
    with pytest.raises(ExtrapolationError, match="differ in shape"):
        extrapolate_trace([fe[4], fe[8]], 16, train_params=[{"nx": 400, "ny": 400, "nz": 200}, {"nx": 400}])
    t = fe[4]
    keep = t.rank != 3  # rank 3's file missing
    missing = _kept_events(t, keep, "n4-missing")
    with pytest.raises(ExtrapolationError, match="n4-missing: rank 3 of 4 has no events"):
        extrapolate_trace([fe[2], missing], 8)
    # not SPMD: rank 1 makes one allreduce less
    sl = t.rank_events(1)
    drop = np.ones(len(t), bool)
    drop[sl.start + int(np.flatnonzero(t.call[sl] == 17)[0])] = False
    nonspmd = _kept_events(t, drop, "n4-nonspmd")
    with pytest.raises(ExtrapolationError, match="n4-nonspmd: not SPMD: rank 1"):
        extrapolate_trace([fe[2], nonspmd], 8)


def test_cli_extrapolate_writes_a_trace(tmp_path, capsys):
    from perfmod.trace import write_trace
    from perfmod.workflow.cli import main

    files = [str(write_trace(synthetic("minife", p, iterations=2), tmp_path / f"n{p}.npz")) for p in (2, 4, 8)]
    box = _box(16)
    rc = main(["extrapolate", *files, "--nprocs", "16", "-p", f"nx={box['nx']:g}", "-p", f"ny={box['ny']:g}",
               "-p", f"nz={box['nz']:g}", "-o", str(tmp_path / "n16.npz")])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "bisection grid from 2, 4, 8 ranks" in printed and "leave-one-scale-out" in printed
    got = read_trace(tmp_path / "n16.npz")
    c = compare_traces(got, synthetic("minife", 16, iterations=2))
    assert c["bytes_error"] == 0 and c["pairs_equal"]
    assert main(["extrapolate", files[0], "--nprocs", "16", "-p", "nx", "-o", str(tmp_path / "x.npz")]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err
    assert main(["extrapolate", files[0], "--nprocs", "16", "-o", str(tmp_path / "x.npz")]) == 1
    assert "one training scale" in capsys.readouterr().err
    assert main(["extrapolate", *files[1:], "--nprocs", "128", "--no-validate", "-p", "nx=1600", "-p", "ny=800",
                 "-p", "nz=800", "-o", str(tmp_path / "n128.npz")]) == 0
    assert "warning: extrapolating to 128 ranks, 16 times" in capsys.readouterr().err
