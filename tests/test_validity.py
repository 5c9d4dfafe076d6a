"""Helpers the studies use to keep measurements honest (issue 13 items 2, 5)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from perfmod.measure.validity import FLAG_META, clean_reduce, host_provenance, run_flags


def test_clean_reduce_drops_interfered_runs_and_names_missing_configurations() -> None:
    t = xr.DataArray([[1.0, 5.0, 1.2], [2.0, 2.2, 9.0], [3.0, 3.1, 3.2]], dims=("case", "rep"),
                     coords={"case": [10, 20, 30]}, attrs={"units": "s"})
    bad = xr.DataArray([[False, True, False], [False, False, True], [True, True, True]], dims=("case", "rep"),
                       coords={"case": [10, 20, 30]})
    med, missing = clean_reduce(t, bad)
    np.testing.assert_allclose(med.values, [1.1, 2.1, np.nan])
    assert missing == ["case=30"] and med.attrs["units"] == "s"
    mn, _ = clean_reduce(t, bad, how="min")
    np.testing.assert_allclose(mn.values, [1.0, 2.0, np.nan])
    with pytest.raises(ValueError, match="no dimension 'run'"):
        clean_reduce(t, bad, dim="run")
    with pytest.raises(ValueError, match="how must be"):
        clean_reduce(t, bad, how="max")


def test_run_flags_from_a_runner_result() -> None:
    res = {"interfered": False, "off_cpu": 0.01, "interference_reason": "clean: ...", "n_interfered": 1,
           "attempts": [{}, {}], "interference": {"load_before": [0.5, 0.7]}}
    f = run_flags(res)
    assert f == {"interfered": False, "off_cpu": 0.01, "attempts": 2, "interfered_attempts": 1,
                 "interference_reason": "clean: ...", "load_before": 0.7}
    assert set(FLAG_META) <= set(f)
    with pytest.raises(KeyError, match="not from perfmod.measure.runner.run_mpi"):
        run_flags({"t": 1.0})


def test_host_provenance_names_the_machine() -> None:
    p = host_provenance()
    assert p["cores"] >= 1 and p["host"] and p["measured_utc"].endswith("+00:00")
    assert p["measuring_lock"] in ("held", "not held")
    assert all(isinstance(v, str | int) for v in p.values())
