"""A real MPI ping-pong on this machine, and calibration of the committed sample.

``tests/data/pingpong_sample.nc`` is a real measurement on the 2-core
development VM (default sizes, 5 repetitions, k = 1 bound and k = 2
oversubscribed), written by ``python -m perfmod.measure.bench.pingpong --pairs 1,2
--reps 5 --warmup 2 --out tests/data/pingpong_sample.nc``.
"""

import os
import tomllib
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from perfmod.core.io import annotate, check_conventions, read_dataset
from perfmod.machine.platforms import NotAvailable, load
from perfmod.measure import host
from perfmod.measure.bench import pingpong
from perfmod.measure.bench.pingpong import run_pingpong, summarize
from perfmod.models.comm.calibration import calibrate, calibration_dataset
from perfmod.models.comm.message import message_time
from perfmod.models.comm.models import maxrate, maxrate2

SAMPLE = Path(__file__).parent / "data" / "pingpong_sample.nc"
TINY = {"reps": 3, "warmup": 1, "progress": False, "timeout": 120}


@pytest.mark.mpi
def test_two_rank_pingpong(tmp_path):
    out = tmp_path / "pp.nc"
    ds = run_pingpong(sizes=[8, 4096, 4 << 20], out=out, **TINY)
    assert ds.t_oneway.dims == ("pairs", "msg_bytes", "rep") and ds.t_oneway.shape == (1, 3, 3)
    check_conventions(ds)
    for name in ("t_oneway", "msg_bytes", "pairs", "rep", "oversubscribed", "mode"):
        assert {"units", "long_name"} <= set(ds[name].attrs), name
    assert ds.t_oneway.attrs["units"] == "s" and ds.msg_bytes.attrs["units"] == "B"
    med = ds.t_oneway.median("rep").sel(pairs=1)
    assert float(med.sel(msg_bytes=4 << 20)) > float(med.sel(msg_bytes=8)) > 0
    # 4 MiB moves slower than 1 TB/s and faster than 40 MB/s on any machine this runs on
    assert 4e-6 < float(med.sel(msg_bytes=4 << 20)) < 0.1
    a = ds.attrs
    assert a["mpi_library"].startswith("MPICH") and a["mpi4py_version"] and a["cpu"] and a["host"]
    assert a["date_utc"][:2] == "20" and a["oversubscribed"] == 0 and a["cores"] == os.cpu_count()
    assert "-bind-to core" in a["command"] and a["binding"] == "core" and "--out <tmp>" in a["command"]
    assert "r0:cpu" in a["placement"] and not bool(ds.oversubscribed.item())
    if a["sockets"] == 1:
        assert ds["mode"].item() == "intra_socket"
    assert np.isfinite(ds.load_before).all() and (ds.inner.sel(msg_bytes=8) > 1).all()
    back = read_dataset(out)
    assert np.array_equal(back.t_oneway.values, ds.t_oneway.values)
    # an explicit path that exists is refused before anything is measured
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        run_pingpong(sizes=[8], out=out, **TINY)
    assert np.array_equal(read_dataset(out).t_oneway.values, ds.t_oneway.values)


@pytest.mark.mpi
def test_default_output_is_never_overwritten(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PERFMOD_DATA", str(tmp_path))
    first = run_pingpong(sizes=[8, 64, 512], **TINY)
    assert Path(first.attrs["path"]) == tmp_path / "raw" / pingpong.host_name() / "pingpong.nc"
    before = Path(first.attrs["path"]).read_bytes()
    second = run_pingpong(sizes=[8, 64, 512], **TINY)
    p2 = Path(second.attrs["path"])
    assert p2.parent == Path(first.attrs["path"]).parent and p2.name.startswith("pingpong-") and p2.exists()
    assert Path(first.attrs["path"]).read_bytes() == before
    assert "exists; writing this measurement to" in capsys.readouterr().err


@pytest.mark.mpi
def test_oversubscribed_run_finishes_and_is_marked():
    k = (os.cpu_count() or 1) // 2 + 1  # one pair more than the cores hold
    ds = run_pingpong(sizes=[8, 65536], pairs=[1, k], write=False, **TINY)
    assert ds.oversubscribed.values.tolist() == [False, True] and ds.attrs["oversubscribed"] == 1
    assert ds.attrs["binding"] == "core,none"
    assert (ds.t_oneway > 0).all()


@pytest.mark.mpi
def test_binding_failure_falls_back_with_a_warning(monkeypatch):
    real = pingpong._launch

    def no_binding(nranks, sizes, reps, warmup, seed, timeout, bind, progress):
        if bind:
            raise RuntimeError("hydra: binding not supported (simulated)")
        return real(nranks, sizes, reps, warmup, seed, timeout, bind, progress)

    monkeypatch.setattr(pingpong, "_launch", no_binding)
    with pytest.warns(UserWarning, match="(?s)bind-to core failed.*simulated"):
        ds = run_pingpong(sizes=[8, 64, 512], write=False, **TINY)
    assert ds.attrs["binding"] == "none" and "-bind-to" not in ds.attrs["command"]


@pytest.mark.mpi
def test_timeout_is_a_clear_error():
    with pytest.raises(TimeoutError, match=r"did not finish in 1 s"):
        run_pingpong(sizes=[4 << 20], reps=100000, warmup=0, write=False, progress=False, timeout=1)


def test_bad_arguments(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="sizes"):
        run_pingpong(sizes=[0, 8], write=False)
    with pytest.raises(ValueError, match="pairs"):
        run_pingpong(sizes=[8], pairs=[0], write=False)
    with pytest.raises(ValueError, match="reps"):
        run_pingpong(sizes=[8], reps=0, write=False)
    monkeypatch.setattr(host.sys, "executable", str(tmp_path / "bin" / "python"))
    with pytest.raises(FileNotFoundError, match="mpiexec not found"):
        host.mpiexec_path()


def test_cli_help(capsys):
    with pytest.raises(SystemExit) as exc:
        pingpong.main(["--help"])
    assert exc.value.code == 0 and "--pairs" in capsys.readouterr().out


def test_sample_is_a_real_measurement():
    ds = read_dataset(SAMPLE)
    check_conventions(ds)
    assert ds.attrs["study"] == "pingpong" and ds.attrs["mpi_library"].startswith("MPICH")
    assert ds.oversubscribed.values.tolist() == [False, True]
    s = summarize(ds).sel(pairs=1)
    assert (s.t_min <= s.t_q25).all() and (s.t_q25 <= s.t_median).all() and (s.t_median <= s.t_q75).all()
    assert float(s.t_median.isel(msg_bytes=-1)) > 10 * float(s.t_median.isel(msg_bytes=0))


def test_calibrate_sample(tmp_path):
    out = tmp_path / "local.toml"
    cal = calibrate(SAMPLE, out=out)
    assert cal.path == out and cal.mode == "intra_socket"
    # MPICH's shared-memory eager cells hold < 8 KiB; the single-copy path starts at 8 KiB
    assert cal.breakpoints[0] == 7936 and all(b < (4 << 20) for b in cal.breakpoints)
    for proto, fit in cal.fits.items():
        assert fit.params["alpha"] > 0 and fit.params["beta"] > 0, proto
        assert 0 < fit.stderr["alpha"] < fit.params["alpha"] and fit.rel_rms < 0.15, proto
    assert 1e-7 < cal.fits[next(iter(cal.fits))].params["alpha"] < 1e-4
    back = load(out)
    assert back.sockets_per_node == 1 and back.eager_max_bytes == cal.breakpoints[-1]
    assert back.mpi.startswith("MPICH 5") and "mpich wheel" in back.mpi
    data = tomllib.loads(out.read_text())
    for proto, fit in cal.fits.items():
        cell = data["comm"]["postal"]["intra_socket"][proto]
        assert cell["alpha"] == fit.params["alpha"] and cell["beta_se"] == fit.stderr["beta"]
        assert "tests/data/pingpong_sample.nc" in cell["source"]
    # k = 2 is oversubscribed on 2 cores, so only k = 1 counts: max-rate is N/A, postal fallback
    for proto in cal.fits:
        e = back.entry("maxrate", "intra_socket", proto)
        assert isinstance(e, NotAvailable) and e.fallback == "postal" and "k = [1]" in e.reason
    t = np.array([64.0, 1 << 20])
    assert np.allclose(message_time(t, "intra_socket", back, "maxrate", k=1),
                       message_time(t, "intra_socket", back, "postal"))


def test_calibration_dataset_pairs(tmp_path):
    ds = read_dataset(SAMPLE)
    cal = calibrate(ds, out=None)
    assert cal.path is None
    curve = annotate(calibration_dataset(ds, cal), study="local_calibration", source="test")
    check_conventions(curve)
    assert curve.t_oneway_measured.dims == curve.t_oneway_predicted.dims == ("msg_bytes",)
    err = np.abs(curve.t_oneway_predicted / curve.t_oneway_measured - 1)
    assert float(err.median()) < 0.1
    assert list(curve.fit_protocol.values) == list(cal.fits)
    assert curve.postal_estimate.sel(fit_protocol="short", parameter="alpha") == cal.fits["short"].params["alpha"]


def _synthetic(ks, oversubscribed):
    """A ping-pong dataset from the models: short/eager/rendezvous with 000 Table 3/4-like values."""
    n = np.array([8, 16, 32, 64, 128, 256, 512, 1024, 4096, 8192, 16384, 32768, 65536, 131072, 262144,
                  524288, 1 << 20, 2 << 20, 4 << 20], dtype=float)
    nn, kk = np.meshgrid(n, ks, indexing="xy")
    t = np.where(nn <= 256, maxrate2(nn, kk, 1.0e-6, 1.0e-9),
                 np.where(nn <= 65536, maxrate(nn, kk, 3e-6, 6.68e9, 1.27e9), maxrate(nn, kk, 2e-5, 1.2e10, 4e9)))
    reps = t[..., None] * np.array([0.995, 1.0, 1.01])
    ds = xr.Dataset({"t_oneway": (("pairs", "msg_bytes", "rep"), reps)},
                    coords={"pairs": ks, "msg_bytes": n.astype(int), "rep": [0, 1, 2],
                            "oversubscribed": ("pairs", oversubscribed)})
    ds.attrs.update(cores=8, sockets=1, host="synthetic", mpi_library="MPICH Version: 5.0.2")
    return ds


def test_calibrate_fits_maxrate_from_several_k(tmp_path):
    cal = calibrate(_synthetic([1, 2, 3, 4], [False] * 4), out=tmp_path / "s.toml")
    assert cal.breakpoints == [256, 65536]
    assert cal.fits["eager"].params["alpha"] == pytest.approx(3e-6, rel=1e-6)
    assert cal.maxrate["short"].model == "maxrate2"
    assert cal.maxrate["short"].params["beta"] == pytest.approx(1e-9, rel=1e-6)
    eager = cal.maxrate["eager"]
    assert eager.model == "maxrate"
    assert eager.params["r_cb"] == pytest.approx(6.68e9, rel=1e-6)
    assert eager.params["r_ci"] == pytest.approx(1.27e9, rel=1e-6)
    back = load(tmp_path / "s.toml")
    assert back.entry("maxrate", "intra_socket", "rendezvous")["r_ci"] == pytest.approx(4e9, rel=1e-6)
    # oversubscribed k are left out: with only k = 1 left, max-rate is N/A
    cal2 = calibrate(_synthetic([1, 2, 3, 4], [False, True, True, True]), out=None)
    assert cal2.maxrate == {} and isinstance(cal2.platform.entry("maxrate", "intra_socket", "eager"), NotAvailable)


def test_calibrate_needs_single_pair():
    with pytest.raises(ValueError, match="pairs = 1"):
        calibrate(_synthetic([2, 3], [False, False]), out=None)
    with pytest.raises(ValueError, match="mode must be one of"):
        calibrate(_synthetic([1], [False]), out=None, mode="intra_node")
    flat = _synthetic([1], [False])
    one = calibrate(flat.sel(msg_bytes=flat.msg_bytes <= 256), out=None, max_breaks=0)
    assert one.breakpoints == [] and one.platform.entry("postal", "intra_socket", "rendezvous")["alpha"] == (
        pytest.approx(1e-6, rel=1e-6))
