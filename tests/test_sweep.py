"""Parameter sweeps on dask.distributed: grids, one process per point, failures recorded, resume, a remote scheduler."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from perfmod.workflow.sweep import SweepError, grid_points, read_grid, sweep

FIXTURE = Path(__file__).parent / "data" / "notebooks" / "sweep_fixture.ipynb"
NOTEBOOKS = Path(__file__).parents[1] / "notebooks"


def test_grid_points_product_times_zip_plus_fixed():
    pts = grid_points({"b": 1, "product": {"a": [1, 2], "c": [[1], [2, 3]]}, "zip": {"n": [2, 3], "m": ["x", "y"]}})
    assert len(pts) == 2 * 2 * 2
    assert pts[0].params == {"b": 1, "a": 1, "c": [1], "n": 2, "m": "x"}
    assert pts[0].index == {"a": 1, "c": "[1]", "zip": 0}  # list values become their JSON text as coordinates
    assert pts[-1].params == {"b": 1, "a": 2, "c": [2, 3], "n": 3, "m": "y"}


@pytest.mark.parametrize(("grid", "message"), [
    ({"zip": {"n": [1, 2], "m": [1]}}, "zip: lists of different lengths"),
    ({"a": 1, "product": {"a": [1, 2]}}, "a is both fixed and swept"),
    ({"product": {"a": []}}, "product.a: expected a non-empty list"),
    ({"product": {"a": [1]}, "zip": {"a": [2]}}, "in both product and zip"),
])
def test_bad_grids_name_the_key(grid, message):
    with pytest.raises(SweepError, match=message):
        grid_points(grid, "g.yaml")


def test_unknown_or_mistyped_parameters_fail_before_anything_runs(tmp_path):
    with pytest.raises(SweepError, match="has no parameter 'nope'"):
        sweep(FIXTURE, {"product": {"nope": [1]}}, out=tmp_path, workers=1, progress=False)
    with pytest.raises(ValueError, match="parameter n expects int, got 'two'"):
        sweep(FIXTURE, {"product": {"n": ["two"]}}, out=tmp_path, workers=1, progress=False)
    assert not any(tmp_path.iterdir())


def test_sweep_records_a_killed_point_and_resume_reruns_only_it(tmp_path):
    flag = tmp_path / "die"
    flag.write_text("")
    grid = {"b": 1, "product": {"a": [1.0, 2.0]}, "zip": {"n": [2, 3], "die_if": ["", str(flag)]}}
    ds = sweep(FIXTURE, grid, out=tmp_path / "sw", workers=2, progress=False)
    assert ds.sizes["a"] == 2 and ds.sizes["zip"] == 2
    assert (ds.status.sel(zip=0) == "ok").all() and (ds.status.sel(zip=1) == "failed").all()
    assert ds.error.sel(zip=1, a=1.0).item()  # the kernel's death is named
    assert np.allclose(ds.y.sel(zip=0).isel(x=slice(0, 2)).values, [[1, 2], [1, 3]])  # y = a x + 1 (rows: a)
    assert np.isnan(ds.y.sel(zip=1)).all()  # failed points are NaN, not dropped
    assert (tmp_path / "sw" / "sweep.nc").is_file()
    done = {d: (d / "status.json").stat().st_mtime_ns for d in (tmp_path / "sw").iterdir() if d.is_dir()}
    flag.unlink()
    time.sleep(0.01)
    ds2 = sweep(FIXTURE, grid, out=tmp_path / "sw", workers=2, resume=True, progress=False)
    assert (ds2.status == "ok").all()
    assert np.allclose(ds2.y.sel(zip=1).values, [[1, 2, 3], [1, 3, 5]])
    rerun = [d for d, t in done.items() if (d / "status.json").stat().st_mtime_ns != t]
    assert len(rerun) == 2 and all(json.loads((d / "status.json").read_text())["params"]["die_if"] for d in rerun)


@pytest.mark.slow
def test_what_if_two_by_two(tmp_path):
    grid = {"product": {"total_gpus": [16, 64], "models": [["postal"], ["maxrate"]]}}
    ds = sweep(NOTEBOOKS / "choi2020_what_if.ipynb", grid, out=tmp_path, workers=2, smoke=True, progress=False)
    assert dict(ds.sizes) | {} and ds.sizes["total_gpus"] == 2 and ds.sizes["models"] == 2
    assert (ds.status == "ok").all()
    assert set(ds["fat_model"].values) == {"postal", "maxrate"}


@pytest.mark.slow
def test_sweep_on_a_separately_started_scheduler(tmp_path):
    dask = shutil.which("dask", path=str(Path(sys.executable).parent))
    if dask is None:
        pytest.skip("the dask command is not installed beside this Python")
    sched_file = tmp_path / "scheduler.json"
    sched = subprocess.Popen([dask, "scheduler", "--scheduler-file", str(sched_file), "--host", "127.0.0.1",
                              "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        for _ in range(200):
            if sched_file.is_file() and sched_file.stat().st_size:
                break
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        worker = subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ds = sweep(FIXTURE, {"product": {"b": [0, 5]}}, out=tmp_path / "sw", scheduler=address, progress=False)
        assert (ds.status == "ok").all()
        assert np.allclose(ds.y.transpose("b", "x").values, [[0, 1, 2], [5, 6, 7]])
        assert ds.attrs["executor"] == address
    finally:
        for p in (worker, sched):
            if p is not None:
                p.terminate()
                p.wait(timeout=30)


def test_a_measuring_notebook_in_smoke_mode_on_a_local_cluster(tmp_path):
    """local_calibration (exclusive: its points hold the measuring lock one at a time) over two values of its
    breakpoint limit, from its smoke parameters (the committed ping-pong sample, nothing measured)."""
    ds = sweep(NOTEBOOKS / "local_calibration.ipynb", {"product": {"max_breaks": [1, 2]}}, out=tmp_path / "sw",
               workers=2, smoke=True, progress=False)
    assert list(ds.max_breaks.values) == [1, 2] and (ds.status == "ok").all(), ds.status.values
    assert "t_oneway_measured" in ds and "t_oneway_predicted" in ds
    # both points fitted the same sample: the same measured curve, the fits may differ by their breakpoints
    np.testing.assert_array_equal(ds.t_oneway_measured.sel(max_breaks=1), ds.t_oneway_measured.sel(max_breaks=2))
    assert (tmp_path / "sw" / "sweep.nc").is_file()


def test_measuring_notebooks_are_exclusive_and_analytic_ones_are_not():
    import nbformat

    exclusive = {p.stem for p in NOTEBOOKS.glob("*.ipynb")
                 if nbformat.read(str(p), as_version=4).metadata.get("perfmod", {}).get("exclusive")}
    assert {"local_calibration", "sharif_gol", "sharif_triton", "local_jacobi2d", "sasidharan_sedov",
            "sasidharan_quicksilver", "anger_skeletons"} <= exclusive
    assert not exclusive & {"choi2020_comm_models", "choi2020_end_to_end", "choi2020_what_if", "choi2019_minife",
                            "choi2020_traces"}


def test_exclusive_points_wait_for_the_measuring_lock(tmp_path, monkeypatch):
    from perfmod.workflow.sweep import host_lock

    monkeypatch.setenv("PERFMOD_LOCK_FILE", str(tmp_path / "measure.lock"))
    monkeypatch.delenv("PERFMOD_MEASURE_LOCK", raising=False)
    holder = subprocess.Popen([sys.executable, "-m", "perfmod.measure.lock", "--", sys.executable, "-c",
                               "import time; time.sleep(3)"], env={**__import__("os").environ})
    time.sleep(1.0)  # let it take the lock
    t0 = time.monotonic()
    with host_lock(True):
        waited = time.monotonic() - t0
    holder.wait(timeout=30)
    assert waited > 1.0


def test_one_swept_parameter_becomes_the_sorted_dimension(tmp_path):
    """Combining points of one swept parameter (a one-level MultiIndex unstacked), a failed one NaN."""
    import xarray as xr

    from perfmod.workflow.sweep import Point, _combine

    points, records, dirs = [], [], []
    for i, n in enumerate([30, 10, 20]):
        d = tmp_path / f"p{i}"
        d.mkdir()
        if n != 10:
            xr.Dataset({"y": ("x", [n, n + 1.0])}, coords={"x": [0, 1]}).to_netcdf(d / "r.nc")
        points.append(Point({"n": n}, {"n": n}))
        records.append({"status": "failed" if n == 10 else "ok", "error": "boom" if n == 10 else "",
                        "elapsed": float(i)})
        dirs.append(d)
    ds = _combine(points, records, dirs, "r")
    assert ds.y.dims == ("n", "x") and list(ds.n.values) == [10, 20, 30]
    assert list(ds.status.values) == ["failed", "ok", "ok"] and list(ds.elapsed.values) == [1.0, 2.0, 0.0]
    assert np.isnan(ds.y.sel(n=10)).all() and ds.y.sel(n=30).values.tolist() == [30.0, 31.0]
    assert "point" not in ds.coords and ds.elapsed.attrs["units"] == "s"


def test_sweep_file_equals_the_returned_dataset_with_a_failed_point_and_strings_of_different_widths(tmp_path):
    """Every dtype round-trips: whole strings (the first point's width cuts nothing), an integer result of a
    failed point NaN (not the int64 sentinel), a string result of a failed point the declared empty string;
    the failed point's error is the notebook's own exception, whole, with the cell and line it came from."""
    from perfmod.core.io import read_dataset

    grid = {"zip": {"label": ["a", "a much longer label", "xyz"], "b": [1, 2, 3],
                    "fail_with": ["", "", "bad value\nsecond line of the message"]}}
    ds = sweep(FIXTURE, grid, out=tmp_path / "sw", workers=2, progress=False)
    back = read_dataset(tmp_path / "sw" / "sweep.nc")
    xr.testing.assert_identical(back, ds)
    assert list(ds.status.values) == ["ok", "ok", "failed"]
    assert list(back["name"].values) == ["a", "a much longer label", ""]
    assert back["count"].isel(zip=[0, 1]).values.tolist() == [[1, 1, 1], [2, 2, 2]]
    assert np.isnan(back["count"].isel(zip=2)).all() and np.isnan(back["y"].isel(zip=2)).all()
    assert back["positive"].isel(zip=[0, 1]).values.tolist() == [1.0, 1.0] and np.isnan(back["positive"][2])
    error = str(back.error.isel(zip=2).item())
    assert error.startswith("ValueError: bad value\nsecond line of the message\n"
                            "  in the executed notebook's cell 3 (In [3]), line 14"), error
    assert "raise ValueError(fail_with)" in error
    assert list(back.error.isel(zip=[0, 1]).values) == ["", ""]


@pytest.mark.parametrize("bad", ["file", "readonly"])
def test_an_unusable_out_is_refused_before_anything_starts(tmp_path, bad):
    out = tmp_path / "out"
    if bad == "file":
        out.write_text("")
        match = "is a file, not a directory"
    else:
        out.mkdir()
        out.chmod(0o500)
        match = "cannot write there"
        if os.access(out, os.W_OK):
            pytest.skip("running as root: a read-only directory is writable")
    t0 = time.monotonic()
    with pytest.raises(SweepError, match=match):
        sweep(FIXTURE, {"product": {"b": [0, 1]}}, out=out, workers=1, progress=False)
    assert time.monotonic() - t0 < 5  # no cluster was started
    with pytest.raises(SweepError, match="--workers 0: give at least 1 worker"):
        sweep(FIXTURE, {"product": {"b": [0, 1]}}, out=tmp_path / "ok", workers=0, progress=False)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_sweep_stops_every_point_and_keeps_the_completed_ones(tmp_path, sig):
    import psutil

    grid = tmp_path / "grid.yaml"
    grid.write_text("zip:\n  sleep: [0, 300, 300]\n  label: [fast, slow, slower]\n")
    out = tmp_path / "sw"
    cmd = [sys.executable, "-m", "perfmod.workflow.cli", "sweep", str(FIXTURE), "--grid", str(grid), "--out",
           str(out), "--workers", "2", "-q"]
    # SIGINT as a terminal's Ctrl-C delivers it: a process started in the background of a script (as CI may start
    # this suite) inherits SIGINT ignored, and Python then leaves it ignored
    sweeper = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    procs: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # the fast point done, both slow ones running (with their kernels)
            done = [d for d in out.glob("*/status.json")]
            running = [json.loads(f.read_text()) for f in out.glob("*/running.json") if f.stat().st_size]
            if done and len(running) == 2:
                tops = [psutil.Process(r["pid"]) for r in running]
                procs = [*tops, *(c for t in tops for c in t.children(recursive=True))]
                if len(procs) >= 4:  # each perfmod run has started its kernel
                    break
            time.sleep(0.5)
        assert len(procs) >= 4, "the slow points did not start"
        sweeper.send_signal(sig)
        _, err = sweeper.communicate(timeout=120)
    finally:
        if sweeper.poll() is None:
            sweeper.kill()
    assert sweeper.returncode != 0 and "interrupted" in err
    gone, alive = psutil.wait_procs(procs, timeout=10)
    assert not alive, f"orphaned: {[p.cmdline()[:4] for p in alive]}"
    from perfmod.core.io import read_dataset

    ds = read_dataset(out / "sweep.nc")  # the completed point and the status of the others
    assert list(ds.status.values) == ["ok", "missing", "missing"] and ds["name"].values[0] == "fast"
    assert not list(out.glob("*/running.json"))


def test_a_point_that_another_process_runs_is_not_started_again(tmp_path):
    import fcntl

    from perfmod.workflow.sweep import run_point

    d = tmp_path / "p"
    d.mkdir()
    (d / "running.json").write_text(json.dumps({"pid": 12345, "host": "h"}))
    with open(d / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        t0 = time.monotonic()
        rec = run_point(str(FIXTURE), {"b": 1}, str(d), smoke=False, exclusive=False)
    assert time.monotonic() - t0 < 2 and rec["status"] == "failed"
    assert rec["error"].startswith("already running in another process ({'pid': 12345")
    assert not (d / "status.json").exists()


def test_in_process_points_give_the_papermill_dataset(tmp_path):
    """choi2020_what_if's run() in the worker gives the same sweep as one papermill process per point."""
    from perfmod.workflow.inprocess import study_module

    nb = NOTEBOOKS / "choi2020_what_if.ipynb"
    assert study_module(nb) == "perfmod.studies.choi2020_what_if"
    # gpus_per_node is also a dimension of the study's dataset: the sweep's dimension is swept_gpus_per_node
    grid = {"models": ["maxrate"], "product": {"gpus_per_node": [[1, 4], [2, 4]]}}
    fast = sweep(nb, grid, out=tmp_path / "in", workers=2, smoke=True, progress=False)
    slow = sweep(nb, grid, out=tmp_path / "pm", workers=2, smoke=True, progress=False, inprocess=False)
    assert (fast.status == "ok").all() and (slow.status == "ok").all()
    assert fast.sizes["swept_gpus_per_node"] == 2 and fast.sizes["gpus_per_node"] == 3  # 1, 2, 4 (outer join)
    assert list(fast.swept_gpus_per_node.values) == ["[1, 4]", "[2, 4]"]
    from perfmod.core.io import read_dataset

    xr.testing.assert_identical(read_dataset(tmp_path / "in" / "sweep.nc"), fast)
    assert not list((tmp_path / "in").glob("*/*.ipynb")) and len(list((tmp_path / "pm").glob("*/*.ipynb"))) == 2
    xr.testing.assert_identical(fast.drop_vars(["elapsed", "point_dir"]), slow.drop_vars(["elapsed", "point_dir"]))
    assert fast.elapsed.max() < slow.elapsed.min()


def test_an_in_process_failure_names_the_study_line_and_gets_its_notebook(tmp_path):
    nb = NOTEBOOKS / "choi2020_what_if.ipynb"
    ds = sweep(nb, {"product": {"platform": ["lassen", "frontier"]}}, out=tmp_path / "sw", workers=1, smoke=True,
               progress=False)
    assert list(ds.status.values) == ["failed", "ok"]  # sorted: frontier, lassen
    error = str(ds.error.sel(platform="frontier").item())
    assert "unknown platform 'frontier'" in error, error
    point = Path(str(ds.point_dir.sel(platform="frontier").item()))
    assert (point / "choi2020_what_if.ipynb").is_file()  # --notebooks failed: rendered for the failed point
    assert not (Path(str(ds.point_dir.sel(platform="lassen").item())) / "choi2020_what_if.ipynb").exists()


@pytest.mark.parametrize("doc", ["README.md", "docs/usage.md"])
def test_the_documented_grid_is_a_valid_what_if_grid(doc):
    import re

    import yaml

    from perfmod.workflow.notebooks import declared_parameters
    from perfmod.workflow.params import check_type

    text = (Path(__file__).parents[1] / doc).read_text()
    (block,) = re.findall(r"```yaml\n(.*?)```", text, re.S)
    points = grid_points(yaml.safe_load(__import__("textwrap").dedent(block)), doc)
    declared = declared_parameters(NOTEBOOKS / "choi2020_what_if.ipynb")
    assert len(points) == 4 * (2 if "zip:" in block else 1)
    for p in points:
        for k, v in p.params.items():
            check_type(k, v, declared[k])


def test_grid_and_parameter_files_share_one_yaml_reader(tmp_path):
    """read_grid and the CLI's -f file both go through params.read_yaml_mapping: same checks, own error type."""
    from perfmod.workflow.cli import CLIError, _read_param_file

    good = tmp_path / "g.yaml"
    good.write_text("block: 64\nproduct:\n  nprocs: [1, 2]\n")
    assert read_grid(good) == {"block": 64, "product": {"nprocs": [1, 2]}}
    assert _read_param_file(str(good), {}) == {"block": 64, "product": {"nprocs": [1, 2]}}
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    (tmp_path / "bad.yaml").write_text("a: [1,\n")
    for reader, error in ((read_grid, SweepError), (lambda p: _read_param_file(p, {}), CLIError)):
        with pytest.raises(error, match=r"list\.yaml: expected a mapping"):
            reader(str(tmp_path / "list.yaml"))
        with pytest.raises(error, match=r"bad\.yaml: not valid YAML"):
            reader(str(tmp_path / "bad.yaml"))
        with pytest.raises(error, match=r"nope\.yaml: cannot read"):
            reader(str(tmp_path / "nope.yaml"))


SLEEPER = '''"""A scratch analytic study for the in-process interrupt test: it marks its start, then sleeps."""
import os
import time
from pathlib import Path

import xarray as xr

from perfmod.core.io import annotate


def run(sleep: float = 0.0, label: str = "x", marker_dir: str = "") -> xr.Dataset:
    if marker_dir:
        (Path(marker_dir) / f"{label}.started").write_text(str(os.getpid()))
    time.sleep(sleep)
    ds = xr.Dataset({"name": ((), label)})
    return annotate(ds, "sweep_sleeper", "closed form", {"sleep": sleep, "label": label},
                    {"name": ("", "the label parameter")})
'''


def _sleeper_notebook(marker_dir: Path) -> dict:
    params = ('dataset_path: str = "out.nc"  # output dataset\nfigures_dir: str = "figures"  # output figures\n'
              'sleep: float = 0.0  # seconds\nlabel: str = "x"  # the point\'s name\n'
              f'marker_dir: str = "{marker_dir}"  # where each point marks its start\n')
    body = ("from perfmod.core.io import write_dataset\nfrom perfmod.studies import sweep_sleeper as study\n"
            "from perfmod.workflow.notebooks import study_parameters\n\n"
            "ds = study.run(**study_parameters(study.run, globals()))\nwrite_dataset(ds, dataset_path)\n")
    cells = [{"cell_type": "code", "id": "p", "metadata": {"tags": ["parameters"]}, "source": params,
              "execution_count": None, "outputs": []},
             {"cell_type": "code", "id": "r", "metadata": {}, "source": body, "execution_count": None, "outputs": []}]
    return {"cells": cells, "metadata": {"perfmod": {}}, "nbformat": 4, "nbformat_minor": 5}


def test_an_interrupted_in_process_sweep_stops_its_workers_and_keeps_the_completed_point(tmp_path):
    """SIGINT while two in-process points run: the workers that ran them are gone, the completed point stays,
    the interrupted ones are 'missing' with their point locks free (a --resume may run them)."""
    import psutil

    from perfmod.workflow.inprocess import study_module
    from perfmod.workflow.pointlock import point_lock

    root = Path(__file__).resolve().parents[1]
    tree = tmp_path / "tree"
    shutil.copytree(root / "perfmod", tree / "perfmod", ignore=shutil.ignore_patterns("__pycache__", "notebooks"))
    (tree / "perfmod" / "studies" / "sweep_sleeper.py").write_text(SLEEPER)
    markers = tmp_path / "markers"
    markers.mkdir()
    nb = tmp_path / "sweep_sleeper.ipynb"
    nb.write_text(json.dumps(_sleeper_notebook(markers)))
    assert study_module(nb) == "perfmod.studies.sweep_sleeper"
    grid = tmp_path / "grid.yaml"
    grid.write_text("zip:\n  sleep: [0, 300, 300]\n  label: [fast, slow, slower]\n")
    out = tmp_path / "sw"
    cmd = [sys.executable, "-m", "perfmod.workflow.cli", "sweep", str(nb), "--grid", str(grid), "--out", str(out),
           "--workers", "2", "-q"]
    sweeper = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                               env=os.environ | {"PYTHONPATH": str(tree)},
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    workers: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            slow = [markers / f"{n}.started" for n in ("slow", "slower")]
            if list(out.glob("*/status.json")) and all(m.is_file() and m.stat().st_size for m in slow):
                workers = [psutil.Process(int(m.read_text())) for m in slow]
                break
            time.sleep(0.5)
        assert len(workers) == 2, f"the slow points did not start: {sweeper.poll()} {list(markers.iterdir())}"
        assert all(w.pid != sweeper.pid for w in workers)  # they ran in the workers, not in the sweeper
        sweeper.send_signal(signal.SIGINT)
        _, err = sweeper.communicate(timeout=120)
    finally:
        if sweeper.poll() is None:
            sweeper.kill()
    assert sweeper.returncode != 0 and "interrupted" in err, err
    _, alive = psutil.wait_procs(workers, timeout=15)
    assert not alive, f"orphaned workers: {[p.pid for p in alive]}"
    from perfmod.core.io import read_dataset

    ds = read_dataset(out / "sweep.nc")
    assert list(ds.status.values) == ["ok", "missing", "missing"] and ds["name"].values[0] == "fast"
    for d in out.iterdir():
        if d.is_dir() and not (d / "status.json").exists():
            with point_lock(d) as fd:
                assert fd is not None  # nobody holds it: the point can be resumed


def test_a_point_counts_as_finished_only_by_a_whole_ok_record(tmp_path):
    """What an interrupted sweep keeps of a point whose worker finished before the client heard (and what --resume
    skips): its status.json saying ok; not a failed one, a half-written one, or none."""
    from perfmod.workflow.sweep import _finished

    d = tmp_path / "p"
    d.mkdir()
    assert _finished(d) is None
    (d / "status.json").write_text('{"status": "ok", "elapsed": 1.5')  # being written
    assert _finished(d) is None
    (d / "status.json").write_text('{"status": "failed", "error": "boom"}')
    assert _finished(d) is None
    (d / "status.json").write_text('{"status": "ok", "elapsed": 1.5}')
    assert _finished(d) == {"status": "ok", "elapsed": 1.5}
