"""Study choi2020_traces (paper 000's own Lassen traces): the trace pipeline on a real libdumpi run, and the
paper half without traces.

The sample is ``tests/data/dumpi-bin/comm_create`` (4 ranks, written by libdumpi; see its README), laid out
as the study expects (``<trace_dir>/minife/*.meta``): a ring on a communicator of world ranks 3, 1, 0 made by
MPI_Comm_create, world rank r' sending 5 doubles to the next member (3 -> 1, 1 -> 0, 0 -> 3), one Waitall
per member, then an Allreduce on world.  The counts are worked out by hand below; the recorded times are
recomputed from the ``dumpi2ascii`` text of the same files (an independent print of the same run).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from perfmod.studies import choi2020_traces as study
from perfmod.studies.papers import choi2020_lassen as lassen
from perfmod.trace import TraceError, read_trace

SAMPLE = Path(__file__).parent / "data" / "dumpi-bin" / "comm_create"


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("traces")
    (root / "minife").mkdir()
    for f in [*SAMPLE.glob("*.bin"), *SAMPLE.glob("*.meta")]:
        shutil.copy(f, root / "minife" / f.name)
    return root


@pytest.fixture(scope="module")
def sample_ds(trace_dir):
    return study.run(trace_dir=str(trace_dir), apps=["minife"], iterations=[1], nprocs=[4, 8],
                     models=["postal", "kmodel"], ranks_per_node=2, progress=False)


def _calls(rank: int) -> list[tuple[str, float, float]]:
    """(call, entry s, exit s) of every call of ``rank`` in the dumpi2ascii text."""
    text = next(SAMPLE.glob(f"*-{rank:04d}.txt")).read_text()
    pat = re.compile(r"^(MPI_\w+) (entering|returning) at walltime ([0-9.]+)", re.M)
    out, open_ = [], {}
    for name, what, t in pat.findall(text):
        if what == "entering":
            open_[name] = float(t)
        else:
            out.append((name, open_.pop(name), float(t)))
    return out


def test_k_counts_of_the_sample_by_hand(sample_ds):
    # 2 ranks per node: nodes {0, 1} and {2, 3}; 0 -> 3 and 3 -> 1 cross nodes, 1 -> 0 does not
    s = sample_ds.sel(app="minife", nprocs=4)
    assert float(s.k_inter_trace) == 1 and float(s.k_inter_min_trace) == 1
    assert float(s.k_total_counted_trace) == 2  # node 0 sends 1 -> 0 and 0 -> 3
    assert float(s.k_total_trace) == 2 * 26  # Table 5's rule: k' x MiniFE's 26 neighbours
    assert float(s.k_trace) == pytest.approx(1 / 52 * 2)
    assert float(s.events) == len(read_trace(next(SAMPLE.glob("*.meta"))))
    # 8 ranks are not in the folder: NaN, and said so
    assert bool(sample_ds.k_inter_trace.sel(nprocs=8).isnull())
    assert sample_ds.attrs["nprocs_missing"] == "minife n8" and sample_ds.attrs["traces_missing"] == ""


def test_recorded_times_match_the_text_print(sample_ds):
    calls = {r: _calls(r) for r in range(4)}
    p2p = [sum(b - a for n, a, b in calls[r] if n in ("MPI_Irecv", "MPI_Isend", "MPI_Waitall")) for r in range(4)]
    post = [sum(b - a for n, a, b in calls[r] if n in ("MPI_Irecv", "MPI_Isend")) for r in range(4)]
    s = sample_ds.sel(app="minife", nprocs=4)
    # the binary holds integer nanoseconds, the text prints them: equal to the nanosecond
    assert float(s.t_comm_measured) == pytest.approx(np.mean(p2p), abs=1e-9)
    assert float(s.t_comm_max_measured) == pytest.approx(max(p2p), abs=1e-9)
    assert float(s.t_post_recorded) == pytest.approx(np.mean(post), abs=1e-9)
    # late partners: clocks aligned on the world allreduce (each rank's last call), then per receiver
    # the wait's entry to the entry of the sender's Isend, between 0 and the wait's duration
    ends = np.array([[b for n, a, b in calls[r] if n == "MPI_Allreduce"][-1] for r in range(4)])
    off = ends - np.median(ends)
    first = {r: {n: (a - off[r], b - a) for n, a, b in reversed(calls[r])} for r in range(4)}
    late = [min(max(first[src]["MPI_Isend"][0] - first[dst]["MPI_Waitall"][0], 0.0), first[dst]["MPI_Waitall"][1])
            for src, dst in ((3, 1), (1, 0), (0, 3))]
    assert float(s.t_late_recorded) == pytest.approx(sum(late) / 4, abs=1e-9)
    assert 0 < float(s.t_late_recorded) <= float(s.t_wait_recorded)


def test_predicted_is_the_replay_and_the_error_its_ratio(sample_ds, trace_dir):
    from perfmod.machine.platforms import load
    from perfmod.replay import replay

    trace = read_trace(next((trace_dir / "minife").glob("*.meta")))
    rep = replay(trace, load("lassen").replace(ranks_per_node=2), "postal")
    s = sample_ds.sel(app="minife", nprocs=4)
    expect = (rep.send_time + rep.recv_time + rep.wait_time).values
    assert float(s.t_comm_predicted.sel(model="postal")) == pytest.approx(expect.mean(), rel=1e-12)
    assert float(s.t_comm_max_predicted.sel(model="postal")) == pytest.approx(expect.max(), rel=1e-12)
    np.testing.assert_allclose(s.t_comm_error, s.t_comm_predicted / s.t_comm_measured - 1, rtol=1e-12)
    figs = study.figures(sample_ds)
    assert figs.keys() == {"k_counts", "comm_per_iteration"}


def test_without_traces_the_paper_half_and_how_to_get_them(monkeypatch, tmp_path):
    monkeypatch.delenv(lassen.TRACE_ENV, raising=False)
    monkeypatch.setattr(lassen, "DEFAULT_TRACE_DIR", tmp_path / "absent")
    assert lassen.trace_root("") is None
    ds = study.run(nprocs=[64, 256], models=["kmodel"], progress=False)
    assert "git clone https://github.com/minitu/miniFE" in ds.attrs["traces_missing"]
    assert "bcfd595^" in ds.attrs["traces_missing"]
    assert bool(ds.t_comm_measured.isnull().all()) and bool(ds.k_inter_trace.isnull().all())
    # Table 5, Lassen, as printed, and perfmod's decomposition at MiniFE's 256 ranks gives the same cell
    assert ds.table5_k_inter_paper.values.tolist() == [92, 18]
    assert ds.table5_k_total_paper.values.tolist() == [104, 24]
    assert ds.table5_nprocs.values.tolist() == [256, 1024]
    assert float(ds.k_inter_decomposition.sel(app="minife", nprocs=256)) == 92
    assert float(ds.k_total_decomposition.sel(app="minife", nprocs=256)) == 104
    assert bool(ds.t_comm_analytic.notnull().all())
    assert study.figures(ds).keys() == {"k_counts"}


def test_trace_dir_from_the_environment_and_bad_input(trace_dir, tmp_path, monkeypatch):
    monkeypatch.setenv(lassen.TRACE_ENV, str(trace_dir))
    assert lassen.trace_root("") == trace_dir
    ds = study.run(apps=["minife"], iterations=[1], nprocs=[4], models=["postal"], progress=False)
    assert float(ds.k_total_counted_trace.squeeze()) == 3  # Lassen: one node of 4 ranks sends all 3 messages...
    assert float(ds.k_inter_trace.squeeze()) == 0  # ...and none leaves it
    with pytest.raises(ValueError, match="must pair with apps"):
        study.run(apps=["minife"], iterations=[1, 2])
    # 3 exchanges cannot divide one Waitall per rank
    with pytest.raises(TraceError, match="not a multiple of 3 exchanges"):
        study.run(apps=["minife"], iterations=[3], nprocs=[4], progress=False)
    bad = tmp_path / "minife"
    bad.mkdir()
    (bad / "x.meta").write_text("hostname=h\n")
    with pytest.raises(TraceError, match=r"x.meta: no numprocs"):
        lassen.find_traces(bad)
