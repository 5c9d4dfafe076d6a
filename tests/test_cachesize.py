"""The cache probe: the knee read from bandwidth curves, and a real (small) probe of this machine."""

import os

import numpy as np
import pytest
import xarray as xr

from perfmod.measure.bench import cachesize as cs

MiB = 2 ** 20


def _curve(sizes_mib, gbs):
    return xr.Dataset({"cache_probe_bandwidth": ("cache_probe_bytes", np.asarray(gbs) * 1e9)},
                      coords={"cache_probe_bytes": np.asarray(sizes_mib, dtype=np.int64) * MiB})


def test_knee_of_a_clean_step():
    sizes = [1, 2, 4, 8, 16, 32, 48, 64, 128, 256, 512]
    bw = [36, 28, 20, 20, 20, 20, 16, 7, 6, 5.5, 5]  # np.add on the development VM, rounded
    assert cs.effective_llc(_curve(sizes, bw), above=4 * MiB) == 48 * MiB


def test_one_noisy_point_does_not_move_the_knee():
    sizes = [8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]
    bw = [13.6, 13.4, 13.4, 12.3, 12.6, 17.2, 10.1, 8.9, 11.4, 8.1, 9.4, 9.4, 7.7]  # a probe under load 2.6
    assert cs.effective_llc(_curve(sizes, bw), above=4 * MiB) == 48 * MiB


def test_a_flat_curve_has_no_cache():
    sizes = [8, 16, 32, 64, 128, 256]
    assert cs.effective_llc(_curve(sizes, [10, 10.2, 9.9, 10.1, 9.8, 10]), above=4 * MiB) == 0


def test_too_few_points_is_an_error():
    with pytest.raises(ValueError, match="3 or more working sets"):
        cs.effective_llc(_curve([1, 2, 8, 16], [9, 9, 9, 9]), above=4 * MiB)


def test_probe_sizes_are_geometric():
    s = cs.probe_sizes(64 * MiB, MiB)
    assert s[0] == MiB and s[-1] == 64 * MiB and len(s) == 13
    assert np.allclose(s[1:] / s[:-1], 2 ** 0.5, rtol=1e-6)
    with pytest.raises(ValueError):
        cs.probe_sizes(MiB, 2 * MiB)


def test_a_real_probe_of_this_machine():
    probe = cs.probe_cache([MiB // 4, MiB, 4 * MiB], reps=1)
    bw = probe.cache_probe_bandwidth.values
    assert probe.cache_probe_bandwidth.attrs["units"] == "B/s"
    assert np.all(np.isfinite(bw)) and np.all(bw > 1e8)  # any machine streams 100 MB/s
    assert probe.attrs["sysfs_llc_bytes"] == cs.sysfs_llc_bytes()


def test_probe_keeps_the_best_sample_over_its_sweeps(monkeypatch):
    times = iter([2.0, 1.0, 1.0, 4.0])  # sweep 1: sizes A, B; sweep 2: A, B

    def fake_triad(xp, n, reps, inner):
        return np.array([next(times)]), 1e9

    monkeypatch.setattr(cs, "triad", fake_triad)
    probe = cs.probe_cache([MiB, 2 * MiB], reps=1, sweeps=2)
    assert probe.cache_probe_bandwidth.values.tolist() == [1e9, 1e9]  # A from sweep 2, B from sweep 1
    assert probe.attrs["sweeps"] == 2
    with pytest.raises(ValueError, match="sweeps"):
        cs.probe_cache([MiB], sweeps=0)


def test_cache_shared_compares_the_knees_alone_and_together(monkeypatch):
    monkeypatch.setattr(cs, "_sysfs_sizes", lambda *a: [32 * 1024, 2 * MiB, 300 * MiB])  # knee search above 4 MiB
    sizes = [8, 16, 32, 64, 128, 256]
    alone = _curve(sizes, [33, 33, 32, 18, 17, 17])              # knee at 32 MiB
    own = _curve(sizes, [31, 31, 30, 17, 16, 16])                # two processes, each still to 32 MiB
    halved = _curve(sizes, [30, 29, 17, 16, 16, 16])             # two processes sharing it: 16 MiB each
    assert not cs.cache_shared(alone, own)
    assert cs.cache_shared(alone, halved)
    assert not cs.cache_shared(_curve(sizes, [10, 10, 10, 10, 10, 10]), halved)  # no cache seen alone: no sharing


def test_a_real_probe_in_two_processes_at_once():
    probe = cs.probe_cache([MiB, 4 * MiB], reps=1, processes=2)
    bw = probe.cache_probe_bandwidth.values
    assert probe.attrs["processes"] == 2 and "2 processes" in probe.cache_probe_bandwidth.attrs["long_name"]
    assert np.all(np.isfinite(bw)) and np.all(bw > 1e8)
    per = probe.cache_probe_bandwidth_per_process  # the mean is of the two processes' own bandwidths
    assert per.shape == (2, 2) and np.allclose(per.mean("process"), bw, rtol=1e-12)
    started, finished = probe.cache_probe_started.values, probe.cache_probe_finished.values
    assert np.all(started < finished) and started.max() < finished.min()  # they probed at once
    cores = probe.cache_probe_core.values
    if len(os.sched_getaffinity(0)) >= 2:  # each on a core of its own
        assert len(set(cores.tolist())) == 2 and np.all(cores >= 0)
    with pytest.raises(ValueError, match="processes"):
        cs.probe_cache([MiB], processes=0)


def test_sysfs_reader(tmp_path):
    for i, size in enumerate(("32K", "2048K", "300M")):
        (tmp_path / f"index{i}").mkdir()
        (tmp_path / f"index{i}" / "size").write_text(size + "\n")
    (tmp_path / "index3").mkdir()
    (tmp_path / "index3" / "size").write_text("garbage\n")
    assert cs.sysfs_llc_bytes(tmp_path) == 300 * MiB
    assert cs.sysfs_llc_bytes(tmp_path / "none") == 0
