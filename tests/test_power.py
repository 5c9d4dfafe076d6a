"""Power sensors: RAPL read through a fake powercap tree, wrap-around, no-sensor reporting."""

import os
import time

import pytest

from perfmod.measure import power


def _zone(root, name, label, uj, max_uj=1_000_000_000):
    d = root / name
    d.mkdir()
    (d / "name").write_text(label + "\n")
    (d / "energy_uj").write_text(f"{uj}\n")
    (d / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return d


def test_rapl_zones_and_readings(tmp_path):
    _zone(tmp_path, "intel-rapl:0", "package-0", 5_000_000)
    _zone(tmp_path, "intel-rapl:0:0", "core", 1_500_000)
    (tmp_path / "intel-rapl").mkdir()  # the control-type directory has no counter
    zones = power.rapl_zones(tmp_path)
    assert [z.label for z in zones] == ["intel-rapl:0/package-0", "intel-rapl:0:0/core"]
    assert zones[0].max_range_j == 1000.0
    assert power.read_rapl(zones) == {"intel-rapl:0/package-0": 5.0, "intel-rapl:0:0/core": 1.5}
    st = {s.kind: s for s in power.probe(tmp_path)}
    assert st["rapl"].available and st["rapl"].zones == ("intel-rapl:0/package-0", "intel-rapl:0:0/core")


def test_counter_wrap_around():
    assert power.rapl_delta(10.0, 12.5, 1000.0) == 2.5
    assert power.rapl_delta(999.0, 1.0, 1000.0) == pytest.approx(2.0)


def test_measure_integrates_a_counter_that_wraps(tmp_path):
    d = _zone(tmp_path, "intel-rapl:0", "package-0", 999_000_000)  # 1 J before the 1000 J wrap

    def counter(uj):  # replaced whole, as the kernel's counter reads: the sampler thread never sees it empty
        (d / "energy_uj.new").write_text(f"{uj}\n")
        os.replace(d / "energy_uj.new", d / "energy_uj")

    def work():
        time.sleep(0.08)
        counter(500_000)  # +1.5 J, wrapped
        time.sleep(0.08)
        counter(1_000_000)  # +0.5 J
        time.sleep(0.03)
        return "done"

    res = power.measure(work, interval=0.02, root=tmp_path)
    assert res.sensor == "rapl" and res.value == "done"
    assert res.energy_j["intel-rapl:0/package-0"] == pytest.approx(2.0)
    assert res.mean_power_w["intel-rapl:0/package-0"] == pytest.approx(2.0 / res.seconds)
    assert res.max_power_w["intel-rapl:0/package-0"] > res.mean_power_w["intel-rapl:0/package-0"]
    assert res.samples >= 5


def test_no_sensor_is_said_plainly(tmp_path):
    st = {s.kind: s for s in power.probe(tmp_path / "missing")}
    assert not st["rapl"].available and "no intel-rapl zone" in st["rapl"].reason
    if not st["nvml"].available:
        with pytest.raises(RuntimeError, match="no power sensor: rapl: no intel-rapl zone"):
            power.measure(lambda: None, root=tmp_path / "missing")


def test_unreadable_counter_is_reported(tmp_path, monkeypatch):
    d = _zone(tmp_path, "intel-rapl:0", "package-0", 1)
    if os.geteuid() == 0:  # root reads whatever the mode: make the read fail as it does for a user
        real = type(d).read_text

        def read_text(self, *a, **k):
            if self.name == "energy_uj":
                raise PermissionError(13, "Permission denied")
            return real(self, *a, **k)
        monkeypatch.setattr(type(d), "read_text", read_text)
    else:
        (d / "energy_uj").chmod(0)
    st = {s.kind: s for s in power.probe(tmp_path)}
    assert not st["rapl"].available and "not readable" in st["rapl"].reason


def test_bad_counter_text_names_the_file(tmp_path):
    d = _zone(tmp_path, "intel-rapl:0", "package-0", 1)
    (d / "energy_uj").write_text("n/a\n")
    with pytest.raises(ValueError, match=r"intel-rapl:0/energy_uj: expected a number"):
        power.read_rapl(power.rapl_zones(tmp_path))
