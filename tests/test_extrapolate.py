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
from perfmod.studies.papers.choi2020_lassen import find_traces, trace_root
from perfmod.trace import read_trace
from perfmod.trace.core import Call
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


def _slowest_kmodel(trace, plat, gaps=True):
    from perfmod.replay import replay

    x = trace if gaps else trace.with_compute(np.zeros(len(trace)))
    d = replay(x, plat, "kmodel")
    return float((d.send_time + d.recv_time + d.wait_time).max())


@needs_traces
@pytest.mark.parametrize("app", ["minife", "minimd"])
def test_lassen_slowest_rank_kmodel_communication(lassen, app):
    """K-model replay on Lassen of the 32-rank trace extrapolated from 2-16 ranks against the recorded one.

    With the computation gaps set to zero on both sides the replay measures the communication pattern alone
    (equal). With the gaps kept nearly all of MiniFE's slowest-rank time is waiting for late partners: the
    per-rank imbalance and start-up skew fitted on 2-16 ranks (``gaps="model"``) give -3.5 % (MiniMD +0.1 %);
    a recorded template rank's gaps per target rank (``gaps="ranks"``) gave -26.6 %.
    """
    from perfmod.machine.platforms import load

    plat = load("lassen")
    tr = lassen[app]
    out = extrapolate_trace([tr[p] for p in (2, 4, 8, 16)], 32, validate=False)
    rec = {g: _slowest_kmodel(tr[32], plat, g) for g in (True, False)}
    assert _slowest_kmodel(out, plat, False) == pytest.approx(rec[False], rel=0.005)
    err = _slowest_kmodel(out, plat) / rec[True] - 1
    assert abs(err) <= 0.05
    assert err == pytest.approx(-0.035 if app == "minife" else 0.001, abs=0.005)
    imb = out.meta["extrapolation"]["imbalance"]
    assert out.meta["extrapolation"]["gaps"] == "model" and imb["seed"] == 0
    if app == "minife":
        old = extrapolate_trace([tr[p] for p in (2, 4, 8, 16)], 32, validate=False, gaps="ranks")
        assert _slowest_kmodel(old, plat) / rec[True] - 1 == pytest.approx(-0.266, abs=0.005)
        # the exchange after the second allreduce: +9.9 us per neighbour, 46.9 us spread by rank (16 ranks);
        # start-up spread 0.74-0.87 ms at 2-16 ranks, ~P^0.08, 0.94 ms at 32 (recorded: 1.77 ms)
        k = imb["sites"].index(9)
        assert imb["slope_per_neighbour_s"][k] == pytest.approx(9.94e-6, rel=0.01)
        assert imb["sigma_s"][k] == pytest.approx(46.9e-6, rel=0.01)
        assert imb["start_sd_exponent"] == pytest.approx(0.080, abs=0.002)
        assert imb["start_sd_target_s"] == pytest.approx(0.94e-3, rel=0.01)


@needs_traces
@pytest.mark.parametrize(("app", "p", "expected"), [("minife", 64, 0.004), ("minife", 256, -0.238),
                                                     ("minimd", 64, 0.0005), ("minimd", 256, -0.002)])
def test_lassen_2_to_32_against_the_authors_larger_runs(lassen, app, p, expected):
    """The authors' repositories (github minitu/miniFE, minitu/miniMD) hold runs at 64 and 256 ranks that
    are not shipped here: where the trace folder has them, the slowest rank's K-model time with the gaps kept,
    extrapolated from 2-32 ranks, is within 0.5 % of the recorded at 64 ranks (both apps) and at 256 for
    MiniMD. MiniFE at 256 is 23.8 % short: its recorded start-up spread (29 ms) is 16 times that of 2-32
    ranks, which the power law fitted there does not foresee (the message pattern is still exact)."""
    runs = find_traces(ROOT / app)
    if p not in runs:
        pytest.skip(f"no {p}-rank {app} trace under {ROOT}")
    from perfmod.machine.platforms import load

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = read_trace(runs[p])
    plat = load("lassen")
    out = extrapolate_trace([lassen[app][q] for q in (2, 4, 8, 16, 32)], p, validate=False)
    c = compare_traces(out, rec)
    assert c["bytes_error"] == 0 and c["pairs_equal"] and c["collectives_equal"]
    assert _slowest_kmodel(out, plat, False) == pytest.approx(_slowest_kmodel(rec, plat, False), rel=0.005)
    assert _slowest_kmodel(out, plat) / _slowest_kmodel(rec, plat) - 1 == pytest.approx(expected, abs=0.005)


def test_imbalance_recovers_a_closed_form_gap_law():
    """Gaps set to a + b * neighbours at every modelled call, and a start-up gap spread that doubles with the
    rank count: the fit recovers b exactly, no spread by rank, and the power law's exponent 1."""
    from perfmod.apps.extrapolate.generate import build_template, sharing
    from perfmod.apps.extrapolate.imbalance import fit_imbalance, gap_events, neighbours
    from perfmod.apps.extrapolate.training import load_training

    trs, ordering, periodic = load_training([synthetic("minife", p, iterations=3) for p in (4, 8, 16)],
                                            [_box(p) for p in (4, 8, 16)])
    for x in trs:
        t = x.trace
        c = np.zeros(len(t))
        gb = gap_events(x)
        c[gb] = 1e-4 + 5e-6 * neighbours(x)[t.rank[gb]]
        spread = 1e-3 * t.nprocs * np.sqrt((t.nprocs - 1) / t.nprocs)  # sample sd (ddof 1): 1e-3 * P
        c[t.rank_ptr[:-1] + 1] = 1.0 + spread * np.where(np.arange(t.nprocs) % 2, 1.0, -1.0)
        x.trace = t.with_compute(c)
    tpl = build_template(trs[-1], ordering, periodic)
    imb = fit_imbalance(tpl.tr, sharing(tpl, trs), trs)
    assert np.allclose(imb.slope, 5e-6, rtol=1e-9) and np.allclose(imb.sigma, 0, atol=1e-12)
    assert imb.start_sd == pytest.approx({4: 4e-3, 8: 8e-3, 16: 16e-3}, rel=1e-9)
    assert imb.start_law[0] == pytest.approx(1.0, rel=1e-9) and imb.start_sigma(32) == pytest.approx(32e-3)
    given = fit_imbalance(tpl.tr, sharing(tpl, trs), trs, start_sd=5e-3)  # the what-if: any target, that spread
    assert given.start_sd == imb.start_sd and given.start_sigma(32) == given.start_sigma(4096) == pytest.approx(5e-3)
    assert fit_imbalance(tpl.tr, sharing(tpl, trs), trs, start_sd=0.0).start_sigma(32) == 0.0
    with pytest.raises(ValueError, match="start_sd"):
        fit_imbalance(tpl.tr, sharing(tpl, trs), trs, start_sd=-1.0)
    a = extrapolate_trace([x.trace for x in trs], 32, params=_box(32), train_params=[x.params for x in trs],
                          validate=False)
    b = extrapolate_trace([x.trace for x in trs], 32, params=_box(32), train_params=[x.params for x in trs],
                          validate=False)
    assert np.array_equal(a.compute, b.compute)  # seeded: the same trace every time
    gb = a.call == Call.ALLREDUCE  # a + b * neighbours of the target rank, no spread
    s = np.isin(a.call, [Call.ISEND, Call.SEND])
    nb = np.bincount(np.unique(a.rank[s].astype(np.int64) * 32 + a.peer[s]) // 32, minlength=32)
    assert np.allclose(a.compute[gb], 1e-4 + 5e-6 * nb[a.rank[gb]], rtol=1e-9)


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
    assert main(["extrapolate", *files, "--nprocs", "16", "-p", f"nx={box['nx']:g}", "-p", f"ny={box['ny']:g}",
                 "-p", f"nz={box['nz']:g}", "--seed", "3", "--no-validate", "-o", str(tmp_path / "s3.npz")]) == 0
    capsys.readouterr()
    other = read_trace(tmp_path / "s3.npz")
    assert np.array_equal(other.peer, got.peer) and np.array_equal(other.nbytes, got.nbytes)
    assert main(["extrapolate", *files, "--nprocs", "16", "-p", f"nx={box['nx']:g}", "-p", f"ny={box['ny']:g}",
                 "-p", f"nz={box['nz']:g}", "--start-sd", "0.002", "--no-validate", "-o",
                 str(tmp_path / "sd.npz")]) == 0
    capsys.readouterr()
    skewed = read_trace(tmp_path / "sd.npz")
    start = skewed.compute[skewed.rank_ptr[:-1] + 1]
    assert np.array_equal(skewed.peer, got.peer) and 0.0005 < np.std(start, ddof=1) < 0.004  # 16 draws of sd 2 ms
    assert main(["extrapolate", files[0], "--nprocs", "16", "-p", "nx", "-o", str(tmp_path / "x.npz")]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err
    assert main(["extrapolate", files[0], "--nprocs", "16", "-o", str(tmp_path / "x.npz")]) == 1
    assert "one training scale" in capsys.readouterr().err
    assert main(["extrapolate", *files[1:], "--nprocs", "128", "--no-validate", "-p", "nx=1600", "-p", "ny=800",
                 "-p", "nz=800", "-o", str(tmp_path / "n128.npz")]) == 0
    assert "warning: extrapolating to 128 ranks, 16 times" in capsys.readouterr().err


def test_start_spread_check_predicts_the_largest_scale_from_the_others():
    from perfmod.apps.extrapolate.imbalance import start_spread_check

    exact = start_spread_check({2: 1e-3, 4: 2e-3, 8: 4e-3})  # sd = 0.5 ms * P: predicted exactly
    assert exact["nprocs"] == 8 and exact["from"] == [2, 4]
    assert exact["predicted_s"] == pytest.approx(4e-3, rel=1e-12) and exact["error"] == pytest.approx(0, abs=1e-12)
    jump = start_spread_check({2: 1e-3, 4: 1e-3, 8: 2e-3})  # flat, then doubling: predicted half
    assert jump["error"] == pytest.approx(-0.5, rel=1e-12)
    assert start_spread_check({2: 1e-3, 4: 2e-3}) is None


@needs_traces
def test_a_start_up_skew_the_small_scales_do_not_predict_is_flagged(lassen):
    tr = lassen["minife"]
    with pytest.warns(ExtrapolationWarning, match="start-up gap's spread at 32 ranks"):
        out = extrapolate_trace([tr[p] for p in (2, 4, 8, 16, 32)], 64)
    ex = out.meta["extrapolation"]
    # MiniFE on Lassen: 0.7-0.9 ms from 2 to 16 ranks, then 1.8 ms at 32
    assert ex["start_spread_check"]["error"] < -0.4 and "start-up gap" in ex["sites_not_generalizing"]
    out = extrapolate_trace([tr[p] for p in (2, 4, 8, 16)], 32)  # 16 from 2-8: within the tolerance
    assert abs(out.meta["extrapolation"]["start_spread_check"]["error"]) < 0.25
    assert "start-up gap" not in out.meta["extrapolation"]["sites_not_generalizing"]


@needs_traces
def test_a_given_start_up_spread_replaces_the_fitted_law(lassen):
    tr = lassen["minife"]
    train = [tr[p] for p in (2, 4, 8, 16)]
    first = []
    for sd in (0.004, 0.008):
        out = extrapolate_trace(train, 64, start_sd=sd, validate=False)
        assert out.meta["extrapolation"]["start_sd_given"] == sd
        assert out.meta["extrapolation"]["imbalance"]["start_sd_target_s"] == pytest.approx(sd, rel=1e-12)
        first.append(out.compute[out.rank_ptr[:-1] + 1])
    # the same draws scaled: every rank's start-up gap departs from the mean twice as far at twice the spread
    dev = [g - g.mean() for g in first]
    assert np.allclose(dev[1], 2 * dev[0], rtol=1e-9, atol=1e-12)
    assert np.std(first[0], ddof=1) == pytest.approx(0.004, rel=0.25)  # 64 draws of sd 4 ms
    with pytest.raises(ExtrapolationError, match="start_sd"):
        extrapolate_trace(train, 64, start_sd=-1.0, validate=False)
