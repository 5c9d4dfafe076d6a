"""perfmod.core.io: conventions, provenance and atomic writes."""

import json
import os
import stat

import numpy as np
import pytest
import xarray as xr

import perfmod
from perfmod.core import io


def _ds():
    ds = xr.Dataset(
        {"t": ("msg_bytes", np.array([1e-6, 2e-6]))},
        coords={"msg_bytes": [8, 1024]},
    )
    return io.annotate(
        ds, study="unit", source="measurement", parameters={"reps": 3, "sizes": np.array([8, 1024])},
        meta={"t": ("s", "one-way time"), "msg_bytes": ("B", "message size")},
    )


def test_annotate_sets_provenance_and_units():
    ds = _ds()
    assert ds.attrs["perfmod_version"] == perfmod.__version__
    assert ds.attrs["study"] == "unit"
    assert json.loads(ds.attrs["parameters"]) == {"reps": 3, "sizes": [8, 1024]}
    assert ds["t"].attrs == {"units": "s", "long_name": "one-way time"}
    io.check_conventions(ds)


def test_annotate_unknown_variable():
    with pytest.raises(KeyError, match="nope"):
        io.annotate(xr.Dataset(), "s", "x", meta={"nope": ("s", "x")})


def test_check_conventions_names_every_problem():
    ds = xr.Dataset({"a": ("x", [1.0]), "b": ("x", [2.0])})
    ds["a"].attrs["units"] = "s"
    with pytest.raises(io.DatasetConventionError) as err:
        io.check_conventions(ds)
    msg = str(err.value)
    assert "'a' has no 'long_name'" in msg and "'b' has no 'units'" in msg and "'study'" in msg


def test_write_read_round_trip(tmp_path):
    ds = _ds()
    path = io.write_dataset(ds, tmp_path / "sub" / "x.nc")
    back = io.read_dataset(path)
    xr.testing.assert_identical(back, ds)
    assert [p.name for p in path.parent.iterdir()] == ["x.nc"]  # no temporary left behind


def test_write_refuses_overwrite_of_measurement(tmp_path):
    path = io.write_dataset(_ds(), tmp_path / "m.nc", overwrite=False)
    with pytest.raises(FileExistsError, match="m.nc"):
        io.write_dataset(_ds(), path, overwrite=False)


def test_failed_write_leaves_nothing(tmp_path):
    dest = tmp_path / "half.nc"
    with pytest.raises(RuntimeError), io.atomic_path(dest) as tmp:
        tmp.write_text("partial")
        raise RuntimeError("boom")
    assert not dest.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_atomic_writes_get_the_umask_mode_not_mkstemps_0600(tmp_path, umask):
    old = os.umask(umask)
    try:
        text = io.write_text_atomic(tmp_path / "t.txt", "x\n")
        nc = io.write_dataset(_ds(), tmp_path / "d.nc")
    finally:
        os.umask(old)
    assert text.read_text() == "x\n"
    for p in (text, nc):
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~umask, p
    with pytest.raises(FileExistsError, match="t.txt"):
        io.write_text_atomic(text, "y", overwrite=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.nc", "t.txt"]


def test_git_commit_is_a_sha_or_unknown():
    sha = io.git_commit()
    assert sha == "unknown" or len(sha.split("+")[0]) == 40
