"""The replay's scale table and the LogGOPSim side-by-side (``make bench``; issue 23).

Under ``make bench`` the table covers 1,536 to 65,536 ranks (about 1.5 M
events each) and is written to ``data/raw/<host>/replay_scale.nc`` with its
figure ``figures/replay_scale.png``; under ``make test`` a small table
checks the measurement runs.  The side-by-side needs ``PERFMOD_LOGGOPSIM``
(a directory with LogGOPSim's ``txt2bin`` and ``LogGOPSim``).
"""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from perfmod.apps.traces import synthetic
from perfmod.core.io import check_conventions, write_dataset
from perfmod.core.paths import raw_dir, repo_root
from perfmod.replay.scale import (
    DOCS_MARKERS,
    LOGGOPSIM_MARKERS,
    loggopsim_markdown,
    loggopsim_side_by_side,
    scale_markdown,
    scale_table,
    write_docs_table,
)
from perfmod.viz.replay_scale import plot_scale


@pytest.mark.bench
def test_bench_replay_scale_table(benchmark, tmp_path):
    full = not benchmark.disabled
    # 1,048,576 ranks: one iteration, about 10 M events (every model, loggp included)
    ranks, events = ((1536, 16384, 65536, 1_048_576), 1_500_000) if full else ((64, 256), 20_000)
    traces = {p: synthetic("jacobi2d", p, max(1, round(events / len(synthetic("jacobi2d", p, 1))))) for p in ranks}
    limits = {} if full else {"loggp": 64}  # the small table skips one cell (the table's '-')
    ds = benchmark.pedantic(scale_table, args=(traces,), kwargs={"max_ranks": limits}, rounds=1, iterations=1)
    assert ds.sizes == {"model": 4, "ranks": len(ranks)}
    measured = ds.events.notnull()
    assert np.all((ds.events_per_cpu_s > 0) | ~measured) and np.all((ds.peak_bytes_per_event > 0) | ~measured)
    assert np.all((ds.events >= 0.5 * events) | ~measured)
    assert not ds.events.sel(model="kmodel").isnull().any()
    assert int(measured.sum()) == 4 * len(ranks) - (0 if full else 1)  # loggp above its limit
    assert "| `loggp` | " in scale_markdown(ds) and (full or " - |" in scale_markdown(ds))
    # the other models simulate the events; loggp LogGOPSim's graph (collectives in rounds, joins): more operations
    np.testing.assert_array_equal(ds.operations.sel(model="postal"), ds.events.sel(model="postal"))
    lg = ds.sel(model="loggp", ranks=ranks[0])
    assert lg.operations > 2 * lg.events and lg.operations_per_cpu_s > lg.events_per_cpu_s
    assert "`loggp` simulates graph operations" in scale_markdown(ds) and "ops/event" in scale_markdown(ds)
    out_nc = raw_dir() / "replay_scale.nc" if full else tmp_path / "replay_scale.nc"
    out_png = repo_root() / "figures" / "replay_scale.png" if full else tmp_path / "replay_scale.png"
    out_nc.parent.mkdir(parents=True, exist_ok=True)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    write_dataset(ds, out_nc)
    assert plot_scale(ds, out_png).stat().st_size > 0
    doc = repo_root() / "docs" / "library.md"
    if not full:  # the docs' table is rewritten from the dataset by the full benchmark only
        doc = tmp_path / "library.md"
        doc.write_text("before\n" + "\n".join(DOCS_MARKERS) + "\nafter\n")
    write_docs_table(ds, doc)
    text = doc.read_text()
    assert scale_markdown(ds) in text and text.count(DOCS_MARKERS[0]) == 1
    print("\n" + ds[["events_per_cpu_s", "peak_bytes_per_event"]].to_dataframe().to_string())


@pytest.mark.bench
def test_bench_loggopsim_side_by_side(benchmark, tmp_path):
    d = os.environ.get("PERFMOD_LOGGOPSIM")
    if not d or not all(shutil.which(str(Path(d) / t)) for t in ("txt2bin", "LogGOPSim")):
        pytest.skip("set PERFMOD_LOGGOPSIM to a directory with LogGOPSim's txt2bin and LogGOPSim binaries")
    full = not benchmark.disabled
    grids = ((32, 48, 20), (128, 128, 3)) if full else ((6, 8, 2),)
    sizes = ((1536, 20), (16384, 10)) if full else ((16, 2),)  # the scale, then where the caches end
    traces = {f"Jacobi2D trace {p:,} x {it}": synthetic("jacobi2d", p, it) for p, it in sizes}
    ds = benchmark.pedantic(loggopsim_side_by_side, args=(d,),
                            kwargs={"grids": grids, "traces": traces, "workdir": tmp_path,
                                    "rounds": 2 if full else 1},
                            rounds=1, iterations=1)
    np.testing.assert_array_equal(ds.perfmod_finish_ns, ds.loggopsim_finish_ns)
    for v in ("loggopsim_sim_cpu_s", "perfmod_sim_cpu_s", "loggopsim_job_cpu_s", "perfmod_job_cpu_s",
              "loggopsim_peak_bytes", "perfmod_peak_bytes"):
        assert np.all(ds[v] > 0), v
    assert np.all(ds.loggopsim_job_cpu_s >= ds.loggopsim_sim_cpu_s)
    doc = repo_root() / "docs" / "library.md"
    if full:
        write_dataset(ds, raw_dir() / "replay_loggopsim.nc")
    else:  # the docs' table is rewritten by the full benchmark only
        doc = tmp_path / "library.md"
        doc.write_text("before\n" + "\n".join(LOGGOPSIM_MARKERS) + "\nafter\n")
    write_docs_table(ds, doc, LOGGOPSIM_MARKERS, loggopsim_markdown)
    text = doc.read_text()
    assert loggopsim_markdown(ds) in text and text.count(LOGGOPSIM_MARKERS[0]) == 1
    print("\n" + loggopsim_markdown(ds))


@pytest.mark.bench
def test_bench_collective_at_8_million_ranks(benchmark, tmp_path):
    """LogGOPSim's headline case (issue 23 item 4): a broadcast and an allreduce over 8,388,608 ranks, each model
    in its own process; a replay that would not fit is refused before it allocates.  Under ``make test``: 4,096
    ranks, with a memory budget (5 MB) that the loggp replays exceed (its streaming graph:
    ``loggops.stream_bytes``, 10.4 MiB here, the same for both collectives) and the other models do not."""
    from perfmod.apps.traces import collective
    from perfmod.replay import replay
    from perfmod.replay.collective_scale import COLLECTIVE_MARKERS, collective_markdown, collective_scale
    from perfmod.replay.loggops import stream_bytes

    full = not benchmark.disabled
    p = 8_388_608 if full else 4096
    ds = benchmark.pedantic(collective_scale, args=(p,), kwargs={} if full else {"memory_budget": 5_000_000},
                            rounds=1, iterations=1)
    check_conventions(ds)
    bcast = ds.sel(collective="bcast")
    ran = ds.refused == ""
    assert bool(((ds.peak_bytes > 0) & (ds.cpu_s > 0) | ~ran).all())
    assert ds.refused.sel(collective="allreduce", model="kmodel") == ""
    if not full:  # the job's finishing time is the in-process replay's; the budget refuses the loggp replays only
        want = replay(collective("bcast", p), "summit", "kmodel").total_time.max()
        assert float(bcast.finish_s.sel(model="kmodel")) == pytest.approx(float(want), rel=1e-6)
        need = stream_bytes(p, p)  # one event a rank
        assert f"{need / 2**20:.1f} MiB" == "10.4 MiB"  # 2 MiB, and 90 B an event and 2,070 a rank
        for c in ("bcast", "allreduce"):
            assert "the LogGOPS replay of 4,096 events needs about 10.4 MiB" in str(
                ds.refused.sel(collective=c, model="loggp").values)
        assert int((ds.refused != "").sum()) == 2
    else:
        assert not any(bcast.refused.values)
    doc = repo_root() / "docs" / "library.md"
    if full:
        write_dataset(ds, raw_dir() / "replay_collective_scale.nc")
    else:
        doc = tmp_path / "library.md"
        doc.write_text("before\n" + "\n".join(COLLECTIVE_MARKERS) + "\nafter\n")
    write_docs_table(ds, doc, COLLECTIVE_MARKERS, collective_markdown)
    assert collective_markdown(ds) in doc.read_text()
    print("\n" + collective_markdown(ds))
