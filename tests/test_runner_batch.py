"""Several proxy runs in one launch: the proxies' ``--batch``, ``run_mpi_batch``, ``batch_order``, ``run_mpi_jobs``."""

from __future__ import annotations

import json

import pytest

import perfmod.measure.runner as runner
from perfmod.measure.proxies.ranks import read_batch
from perfmod.measure.runner import batch_order, run_mpi, run_mpi_batch, run_mpi_jobs

GOL = "perfmod.measure.proxies.gol"


def _gol_args(ny: int, nx: int, seed: int) -> list:
    return ["--ny", ny, "--nx", nx, "--generations", 12, "--seed", seed]


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2])
def test_a_batch_gives_each_run_what_its_own_launch_gives(nprocs: int) -> None:
    """The final grid of each Game of Life run (live cells) is a deterministic function of its arguments: the
    runs of one launch equal the same runs launched one by one, in order, each with its own probe report."""
    lists = [_gol_args(30, 20, 7), _gol_args(16, 24, 3), _gol_args(30, 20, 8)]
    batch = run_mpi_batch(GOL, nprocs, lists, retries=0, lock=False)
    alone = [run_mpi(GOL, nprocs, a, retries=0, lock=False) for a in lists]
    assert [r["alive"] for r in batch] == [r["alive"] for r in alone]
    assert [(r["ny"], r["nx"]) for r in batch] == [(30, 20), (16, 24), (30, 20)]
    assert [r["batch_position"] for r in batch] == [0, 1, 2]
    assert batch[0]["alive"] != batch[2]["alive"]  # the seed matters, so the equality above says something
    for r, a in zip(batch, lists, strict=True):
        assert r["command"].endswith(" ".join(map(str, a))) and r["nprocs"] == nprocs
        assert len(r["interference"]["wall_s"]) == nprocs and len(r["attempts"]) == 1


def test_only_the_interfered_runs_of_a_batch_are_launched_again(monkeypatch: pytest.MonkeyPatch) -> None:
    launches = []
    busy = {"b": 1, "c": 2}  # run b is disturbed once, run c twice

    def fake(module: str, nprocs: int, lists: list, timeout: float) -> list:
        launches.append([a[0] for a in lists])
        out = []
        for a in lists:
            hit = busy.get(a[0], 0) > 0
            busy[a[0]] = busy.get(a[0], 0) - 1
            out.append({"name": a[0], "interfered": hit, "interference_reason": "busy" if hit else "",
                        "off_cpu": 0.4 if hit else 0.0})
        return out

    monkeypatch.setattr(runner, "_batch_once", fake)
    monkeypatch.setattr(runner, "_spent", [0.0])
    res = run_mpi_batch("m", 2, [["a"], ["b"], ["c"]], retries=2, retry_wait=0.0, lock=False)
    assert launches == [["a", "b", "c"], ["b", "c"], ["c"]]
    assert [r["name"] for r in res] == ["a", "b", "c"]
    assert [len(r["attempts"]) for r in res] == [1, 2, 3]
    assert [r["n_interfered"] for r in res] == [0, 1, 2]
    assert not any(r["interfered"] for r in res) and not any(r["rerun_budget_exhausted"] for r in res)
    launches.clear()
    busy.update(c=5)
    res = run_mpi_batch("m", 2, [["a"], ["c"]], retries=1, retry_wait=0.0, lock=False)
    assert launches == [["a", "c"], ["c"]] and res[1]["interfered"] and res[1]["n_interfered"] == 2


def test_batch_order_groups_rank_counts_in_turns_keeping_each_counts_order() -> None:
    p = [1, 2, 2, 1, 1, 2, 1, 2, 2, 2]
    order = batch_order(p, 2)
    assert order == [0, 3, 1, 2, 4, 6, 5, 7, 8, 9]
    assert sorted(order) == list(range(len(p)))
    assert batch_order(p, 100) == [0, 3, 4, 6, 1, 2, 5, 7, 8, 9]
    assert batch_order([], 4) == []
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        batch_order(p, 0)


def test_run_mpi_jobs_launches_consecutive_jobs_of_one_rank_count_together(monkeypatch: pytest.MonkeyPatch) -> None:
    launches = []

    def fake(module: str, nprocs: int, lists: list, **kw: object) -> list:
        launches.append((nprocs, [a[0] for a in lists]))
        return [{"job": a[0], "nprocs": nprocs} for a in lists]

    monkeypatch.setattr(runner, "run_mpi_batch", fake)
    jobs = [(1, [0]), (1, [1]), (1, [2]), (2, [3]), (1, [4]), (2, [5]), (2, [6])]
    res = run_mpi_jobs("m", jobs, batch_size=2, progress=False)
    assert launches == [(1, [0, 1]), (1, [2]), (2, [3]), (1, [4]), (2, [5, 6])]
    assert [r["job"] for r in res] == list(range(7))


@pytest.mark.parametrize("text, message", [
    ("not json", "not a readable JSON batch file"),
    ('{"runs": []}', "at least one run"),
    ('[["--nx", "3"]]', "at least one run"),
    ('{"runs": [["--nx", 3]]}', "run 0 is not a list of strings"),
    ('{"runs": [["--nx", "3"], "--ny 4"]}', "run 1 is not a list of strings"),
])
def test_a_malformed_batch_file_is_named_with_what_is_wrong(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as e:
        read_batch(str(path))
    assert str(path) in str(e.value)
    path.write_text(json.dumps({"runs": [["--nx", "3"], []]}))
    assert read_batch(str(path)) == [["--nx", "3"], []]


def test_measure_mpi_runs_puts_each_result_with_its_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sedov's MPI runs are measured in batches; each row of the dataset is the run of its own configuration
    and repetition, every (configuration, repetition) once, the study's own columns added."""
    from perfmod.studies.papers import sasidharan as sc

    launches = []

    def fake(module: str, nprocs: int, lists: list, **kw: object) -> list:
        launches.append((nprocs, len(lists)))
        return [{"nx": int(a[1]), "x5_processes": nprocs, "t_iter": 1e-3 * int(a[1]) * nprocs, "interfered": False}
                for a in lists]

    monkeypatch.setattr(runner, "run_mpi_batch", fake)
    configs = [{"nx": nx, "nprocs": p, "set": s} for nx, s in ((4, "train"), (6, "test")) for p in (1, 2)]
    meta = {"nx": ("1", "x"), "x5_processes": ("1", "p"), "t_iter": ("s", "t"), "twice": ("s", "2t"),
            "rep": ("1", "repetition"), "set": ("1", "train or test")}
    ds = sc.measure_mpi_runs(configs, 3, 0, "m", lambda c: ["--nx", c["nx"]],
                             lambda c, res: res.update(twice=2 * res["t_iter"]), meta, "", progress=False,
                             batch_size=4)
    assert sorted(launches) == [(1, 2), (1, 4), (2, 2), (2, 4)]
    got = sorted(zip(ds.nx.values.tolist(), ds.x5_processes.values.tolist(), ds.rep.values.tolist(),
                     ds.set.values.tolist(), strict=True))
    assert got == sorted((c["nx"], c["nprocs"], r, c["set"]) for c in configs for r in range(3))
    assert (ds.twice.values == 2e-3 * ds.nx.values * ds.x5_processes.values).all()
    assert not ds.interfered.values.any()
