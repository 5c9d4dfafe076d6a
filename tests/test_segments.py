"""Calibration segment fits that always give a valid platform (issue 13 item 1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import perfmod.machine.platforms as platforms
from perfmod.models.comm import CalibrationError, calibrate
from perfmod.models.comm.calibration import calibration_dataset
from perfmod.models.comm.fitting import fit_postal
from perfmod.models.comm.segments import fit_segments, segment_problem

DATA = Path(__file__).parent / "data"
NEG = DATA / "pingpong-negative-beta.nc"


def test_negative_beta_fixture_calibrates_to_a_valid_platform(tmp_path: Path) -> None:
    out = tmp_path / "local.toml"
    cal = calibrate(NEG, out=out)
    plat = platforms.load(out)  # the check that failed `make all` in issue 13
    # BIC's [7936, 12288] leaves 8,192-12,288 B as a segment of 3 sizes with beta -2.99e-10 s/B: merged upwards
    assert cal.breakpoints == [7936]
    assert len(cal.decisions) == 1
    assert "-2.99e-10" in cal.decisions[0] and "12,288 B dropped" in cal.decisions[0]
    assert plat.short_max_bytes == 0 and plat.eager_max_bytes == 7936
    eager = plat.params("postal", "intra_socket", "eager")
    rdv = plat.params("postal", "intra_socket", "rendezvous")
    assert eager["alpha"] == pytest.approx(2.009e-6, rel=1e-3)
    assert eager["beta"] == pytest.approx(8.465e-11, rel=1e-3)
    assert rdv["alpha"] == pytest.approx(5.50e-6, rel=1e-2)
    assert rdv["beta"] == pytest.approx(1.037e-10, rel=1e-2)
    # every decision is in the file: per entry and for the thresholds
    assert "merged with the one above" in plat.entry("postal", "intra_socket", "rendezvous").note
    assert "no merge needed" in plat.entry("postal", "intra_socket", "eager").note
    assert "BIC chose breakpoints [7936, 12288] B" in plat.protocol_note
    text = out.read_text()
    assert text.count("note = ") == 3


def test_calibrate_writes_nothing_by_default_and_the_dataset_shows_the_decisions() -> None:
    cal = calibrate(NEG)
    assert cal.path is None
    ds = calibration_dataset(xr.open_dataset(NEG), cal)
    assert list(ds.fit_protocol.values) == ["eager", "rendezvous"]
    assert "merged" in str(ds.fit_note.sel(fit_protocol="rendezvous").item())
    assert "12,288 B dropped" in ds.attrs["fit_decisions"]


def test_clean_sample_needs_no_decision() -> None:
    cal = calibrate(DATA / "pingpong_sample.nc")
    assert cal.decisions == []
    assert cal.breakpoints == [7936, 262144]
    assert all(f.params["beta"] > 0 and f.params["alpha"] > 0 for f in cal.fits.values())


def _curve() -> tuple[np.ndarray, np.ndarray]:
    n = np.array([8, 64, 512, 1024, 2048, 4096, 8192, 16384, 65536, 262144, 1048576], float)
    t = np.where(n <= 4096, 1.5e-6 + 1.2e-10 * n, 4.0e-6 + 1.5e-10 * n)
    return n, t


def test_fit_segments_keeps_good_segments() -> None:
    n, t = _curve()
    seg = fit_segments(n, t, [4096])
    assert seg.breakpoints == [4096] and seg.decisions == []
    assert seg.fits["eager"].params["alpha"] == pytest.approx(1.5e-6, rel=1e-6)
    assert seg.fits["rendezvous"].params["beta"] == pytest.approx(1.5e-10, rel=1e-6)


def test_fit_segments_merges_a_falling_segment_into_the_better_neighbour() -> None:
    n, t = _curve()
    t = t.copy()
    t[(n > 4096) & (n <= 16384)] = [7.0e-6, 6.0e-6]  # 8 and 16 KiB fall
    t = np.append(t, 5.5e-6)
    n = np.append(n, 12288.0)
    seg = fit_segments(n, t, [4096, 16384])
    assert seg.breakpoints in ([4096], [16384])
    assert len(seg.decisions) == 1 and "<= 0" in seg.decisions[0]
    assert all(f.params["beta"] > 0 for f in seg.fits.values())


def test_too_short_segment_is_merged() -> None:
    n, t = _curve()
    seg = fit_segments(n, t, [8, 4096])  # a segment of one size
    assert seg.breakpoints == [4096]
    assert "1 sizes (fewer than 3)" in seg.decisions[0]


def test_insignificant_slope_is_reported() -> None:
    n = np.array([1000.0, 2000.0, 3000.0, 4000.0])
    t = np.array([2.0e-6, 1.9e-6, 2.2e-6, 2.01e-6])
    assert "not significantly > 0" in segment_problem(n, t)


def test_unusable_measurement_stops_with_one_clear_message() -> None:
    n = np.array([8.0, 1024.0, 65536.0, 1048576.0])
    t = np.array([9e-6, 7e-6, 5e-6, 4e-6])  # falling: no ping-pong looks like this
    with pytest.raises(CalibrationError, match=r"re-measure .*make calibration.* quieter machine"):
        fit_segments(n, t, [], where="pp.nc")
    with pytest.raises(CalibrationError, match=r"^pp.nc: no usable postal fit even with all 4 sizes \(8-1,048,576 B"):
        fit_segments(n, t, [], where="pp.nc")


def test_calibrate_refuses_a_dataset_without_usable_times(tmp_path: Path) -> None:
    ds = xr.open_dataset(NEG).load()
    ds["t_oneway"][:] = np.nan
    with pytest.raises(CalibrationError, match=r"0 of 30 message sizes have a positive finite median"):
        calibrate(ds)


def test_bounded_postal_fit_stays_nonnegative() -> None:
    n = np.array([100.0, 200.0, 300.0, 400.0, 500.0])
    t = 3e-6 - 1e-9 * n
    free = fit_postal(n, t)
    assert free.params["beta"] == pytest.approx(-1e-9, rel=1e-6)
    b = fit_postal(n, t, nonnegative=True)
    assert b.params["beta"] == pytest.approx(0.0, abs=1e-18)
    assert b.params["alpha"] > 0
    assert "beta on the bound" in b.form


def test_platform_note_round_trip(tmp_path: Path) -> None:
    plat = calibrate(NEG).platform
    back = platforms.load(platforms.write(plat, tmp_path / "p.toml"))
    assert back.protocol_note == plat.protocol_note
    e = back.entry("postal", "intra_socket", "rendezvous")
    assert e.note == plat.entry("postal", "intra_socket", "rendezvous").note
    with pytest.raises(platforms.PlatformError, match=r"comm.postal.intra_socket.eager.note: must be a string"):
        d = platforms.to_dict(plat)
        d["comm"]["postal"]["intra_socket"]["eager"]["note"] = 3
        platforms.from_dict(d)
