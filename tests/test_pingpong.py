"""A real 2-rank MPI ping-pong on this machine, and calibration of the committed sample."""

import tomllib
from pathlib import Path

import numpy as np
import pytest

from perfmod.bench.pingpong import run_pingpong
from perfmod.calibrate import calibrate
from perfmod.io import check_conventions
from perfmod.platforms import load

SAMPLE = Path(__file__).parent / "data" / "pingpong_sample.nc"


@pytest.mark.mpi
def test_two_rank_pingpong(tmp_path):
    out = tmp_path / "pp.nc"
    ds = run_pingpong(sizes=[8, 4096, 1 << 20], reps=3, warmup=1, out=out, progress=False, timeout=120)
    assert ds.t_oneway.dims == ("pairs", "msg_bytes", "rep") and ds.t_oneway.shape == (1, 3, 3)
    check_conventions(ds)
    med = ds.t_oneway.median("rep").sel(pairs=1)
    assert float(med.sel(msg_bytes=1 << 20)) > float(med.sel(msg_bytes=8)) > 0
    # 1 MiB cannot move faster than 1 TB/s nor slower than 10 MB/s on any machine this runs on
    assert 1e-6 < float(med.sel(msg_bytes=1 << 20)) < 0.1
    assert ds.attrs["mpi_library"].startswith("MPICH") and ds.attrs["oversubscribed"] == 0
    assert "bind-to" in ds.attrs["command"]
    assert out.exists()
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        run_pingpong(sizes=[8], reps=1, warmup=0, out=out, progress=False)


def test_default_output_never_overwrites(tmp_path, monkeypatch):
    from perfmod.bench import pingpong

    monkeypatch.setenv("PERFMOD_DATA", str(tmp_path))
    first = pingpong.default_output()
    first.parent.mkdir(parents=True)
    first.write_bytes(b"x")
    second = pingpong.default_output()
    assert second != first and second.name.startswith("pingpong-") and second.parent == first.parent


def test_bad_arguments():
    with pytest.raises(ValueError, match="sizes"):
        run_pingpong(sizes=[0, 8], write=False)
    with pytest.raises(ValueError, match="pairs"):
        run_pingpong(sizes=[8], pairs=[0], write=False)


def test_calibrate_sample(tmp_path):
    out = tmp_path / "local.toml"
    plat, fits, breaks = calibrate(SAMPLE, out=out)
    assert breaks and all(8 < b < (1 << 20) for b in breaks)
    for proto, fit in fits.items():
        assert fit.params["alpha"] > 0 and fit.params["beta"] > 0, proto
        assert fit.rel_rms < 0.3
    back = load(out)
    assert back.sockets_per_node == 1 and back.eager_max_bytes == breaks[-1]
    data = tomllib.loads(out.read_text())
    proto = list(fits)[-1]
    assert data["comm"]["postal"]["intra_socket"][proto]["alpha"] == fits[proto].params["alpha"]
    # only one pair fits on 2 cores: max-rate falls back to postal, as the paper's N/A cells do
    t = np.array([64.0, 1 << 20])
    from perfmod.comm.message import message_time

    if back.entry("maxrate", "intra_socket", proto).__class__.__name__ == "NotAvailable":
        assert np.allclose(message_time(t, "intra_socket", back, "maxrate", k=1),
                           message_time(t, "intra_socket", back, "postal"))
