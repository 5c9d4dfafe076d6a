"""SQLite store of region calls in Eiger's schema (paper 004 §IV, §V step 4).

The tables are those of gtcasl/eiger ``database/schema.sql`` (datacollections,
applications, datasets, machines, metric_types, metrics, machine_metrics,
trials, nondeterministic_metrics, deterministic_metrics, model_sources,
models), filled the way lwperf's Eiger backend fills them: one data collection
per region, one dataset per distinct parameter combination (its parameters
and invariants as deterministic metrics), one trial per call with its time in
seconds (and energy in joules) as nondeterministic metrics.  So Eiger's tools
can train on a region directly.

One extra table, ``perfmod_calls``, keyed by trial, keeps what Eiger has no
place for: rank, call sequence, parent call, start and wall time in integer
nanoseconds, exclusive time, run id.

Writes are batched, one transaction per batch (``BEGIN IMMEDIATE``), in WAL
mode with ``synchronous=NORMAL``: several ranks may write to one file, and a
process killed mid-run leaves every committed batch readable.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["exclusive_ns", "RegionStore", "RegionStoreError", "MissingParameterError", "EIGER_SCHEMA"]

EIGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS model_sources(ID INTEGER PRIMARY KEY, name TEXT UNIQUE);
CREATE TABLE IF NOT EXISTS models(ID INTEGER PRIMARY KEY, description TEXT, created TEXT,
    source_id INTEGER REFERENCES model_sources(ID) ON DELETE CASCADE ON UPDATE CASCADE, data BLOB);
CREATE TABLE IF NOT EXISTS datacollections(ID INTEGER PRIMARY KEY, name TEXT UNIQUE, description TEXT, created TEXT);
CREATE TABLE IF NOT EXISTS applications(ID INTEGER PRIMARY KEY, name TEXT UNIQUE, description TEXT);
CREATE TABLE IF NOT EXISTS datasets(ID INTEGER PRIMARY KEY,
    applicationID INTEGER REFERENCES applications(ID) ON DELETE CASCADE ON UPDATE CASCADE,
    name TEXT UNIQUE, description TEXT, created TEXT, url TEXT);
CREATE TABLE IF NOT EXISTS machines(ID INTEGER PRIMARY KEY, name TEXT UNIQUE, description TEXT);
CREATE TABLE IF NOT EXISTS metric_types(type TEXT PRIMARY KEY, seq INTEGER);
INSERT OR IGNORE INTO metric_types(type, seq) VALUES ('deterministic', 1), ('nondeterministic', 2), ('machine', 3);
CREATE TABLE IF NOT EXISTS metrics(ID INTEGER PRIMARY KEY, type TEXT REFERENCES metric_types(type),
    name TEXT UNIQUE, description TEXT);
CREATE TABLE IF NOT EXISTS machine_metrics(
    machineID INTEGER REFERENCES machines(ID) ON DELETE CASCADE ON UPDATE CASCADE,
    metricID INTEGER REFERENCES metrics(ID) ON DELETE CASCADE ON UPDATE CASCADE, metric REAL);
CREATE TABLE IF NOT EXISTS trials(ID INTEGER PRIMARY KEY,
    dataCollectionID INTEGER REFERENCES datacollections(ID) ON DELETE CASCADE ON UPDATE CASCADE,
    machineID INTEGER REFERENCES machines(ID) ON DELETE CASCADE ON UPDATE CASCADE,
    applicationID INTEGER REFERENCES applications(ID) ON DELETE CASCADE ON UPDATE CASCADE,
    datasetID INTEGER REFERENCES datasets(ID) ON DELETE CASCADE ON UPDATE CASCADE);
CREATE INDEX IF NOT EXISTS trial_dset_idx ON trials(datasetID);
CREATE TABLE IF NOT EXISTS nondeterministic_metrics(
    trialID INTEGER REFERENCES trials(ID) ON DELETE CASCADE ON UPDATE CASCADE,
    metricID INTEGER REFERENCES metrics(ID) ON DELETE CASCADE ON UPDATE CASCADE, metric REAL);
CREATE INDEX IF NOT EXISTS ndet_metrics_trial_idx ON nondeterministic_metrics(trialID);
CREATE TABLE IF NOT EXISTS deterministic_metrics(
    datasetID INTEGER REFERENCES datasets(ID) ON DELETE CASCADE ON UPDATE CASCADE,
    metricID INTEGER REFERENCES metrics(ID) ON DELETE CASCADE ON UPDATE CASCADE, metric REAL);
CREATE INDEX IF NOT EXISTS det_metrics_dset_idx ON deterministic_metrics(datasetID);
CREATE TABLE IF NOT EXISTS perfmod_calls(trialID INTEGER PRIMARY KEY REFERENCES trials(ID),
    run_id TEXT, region TEXT, rank INTEGER, seq INTEGER, parent_seq INTEGER,
    start_ns INTEGER, time_ns INTEGER, exclusive_ns INTEGER, energy_j REAL);
"""

_RESULT_METRICS = ("time", "energy")
_TABLES = tuple(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", EIGER_SCHEMA))



def exclusive_ns(df: pd.DataFrame) -> pd.Series:
    """Exclusive time of each call: its wall time minus that of the calls directly nested in it (ns)."""
    import pandas as pd

    child = df[df["parent_seq"] >= 0].groupby(["run_id", "rank", "parent_seq"])["time_ns"].sum()
    key = pd.MultiIndex.from_arrays([df["run_id"], df["rank"], df["seq"]])
    nested = child.reindex(key).fillna(0).to_numpy(dtype=np.int64)
    return pd.Series(df["time_ns"].to_numpy(dtype=np.int64) - nested, index=df.index, name="exclusive_ns")

class RegionStoreError(ValueError):
    """A file that is not a region store, or a store that lacks some of its tables (the message names the path)."""


class MissingParameterError(ValueError):
    """Some calls of a region lack a parameter that other calls of it carry."""


class RegionStore:
    """An Eiger-schema SQLite database of region calls.

    Parameters
    ----------
    path : path-like
        Database file (created with the schema if new).
    timeout : float
        Seconds to wait for another writer's lock.
    """

    def __init__(self, path: str | Path, timeout: float = 60.0) -> None:
        self.path = Path(path)
        existed = self.path.is_file() and self.path.stat().st_size > 0
        try:
            self.conn = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None)
        except sqlite3.Error as e:
            raise RegionStoreError(f"{self.path}: cannot open the region store: {e}") from None
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            if existed:  # an existing store keeps every table: a missing one would read as "no calls"
                have = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                missing = [t for t in _TABLES if t not in have]
                if missing:
                    raise RegionStoreError(f"{self.path}: the region store has no table {', '.join(missing)} "
                                           "(damaged, or not written by perfmod's recorder)")
            self.conn.executescript(EIGER_SCHEMA)
        except sqlite3.DatabaseError as e:
            self.conn.close()
            raise RegionStoreError(f"{self.path}: not a region store: {e}") from None
        except RegionStoreError:
            self.conn.close()
            raise
        self._ids: dict[tuple[str, ...], int] = {}
        self._datasets: dict[tuple, int] = {}
        self._raw_datasets: dict[tuple, dict[tuple, int]] = {}

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> RegionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- writing
    def _named(self, table: str, name: str, extra: Mapping[str, Any] | None = None) -> int:
        key = (table, name)
        if key not in self._ids:
            cols = {"name": name, **(extra or {})}
            self.conn.execute(f"INSERT OR IGNORE INTO {table}({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                              tuple(cols.values()))
            self._ids[key] = self.conn.execute(f"SELECT ID FROM {table} WHERE name=?", (name,)).fetchone()[0]
        return self._ids[key]

    def _metric(self, name: str, kind: str) -> int:
        key = ("metrics", name, kind)
        if key not in self._ids:
            self.conn.execute("INSERT OR IGNORE INTO metrics(type,name,description) VALUES (?,?,?)", (kind, name, name))
            mid, have = self.conn.execute("SELECT ID, type FROM metrics WHERE name=?", (name,)).fetchone()
            if have != kind:
                raise ValueError(f"metric {name!r} is {have} in {self.path}, cannot record it as {kind} "
                                 f"(a region parameter may not be called {' or '.join(_RESULT_METRICS)})")
            self._ids[key] = mid
        return self._ids[key]

    def _dataset(self, app: int, application: str, region: str, params: Mapping[str, Any],
                 inv: Mapping[str, float]) -> int:
        """Eiger dataset of one parameter combination (created with its deterministic metrics if new)."""
        bad = [k for k, v in params.items() if not _is_number(v)]
        if bad:
            raise ValueError(f"region {region!r}: parameter {bad[0]!r} = {params[bad[0]]!r} is not a number")
        allp = {**inv, **{k: float(v) for k, v in params.items()}}
        key = (application, tuple(sorted(allp.items())))
        dsid = self._datasets.get(key)
        if dsid is None:
            conn = self.conn
            dname = "_".join([application, *[f"{k}_{v!r}" for k, v in key[1]]])
            cur = conn.execute("INSERT OR IGNORE INTO datasets(applicationID,name,description,created,url) "
                               "VALUES (?,?,?,?,?)", (app, dname, dname, time.strftime("%Y-%m-%d %H:%M:%S"), ""))
            dsid = conn.execute("SELECT ID FROM datasets WHERE name=?", (dname,)).fetchone()[0]
            if cur.rowcount == 1:
                conn.executemany("INSERT INTO deterministic_metrics(datasetID,metricID,metric) VALUES (?,?,?)",
                                 [(dsid, self._metric(k, "deterministic"), v) for k, v in key[1]])
            self._datasets[key] = dsid
        return dsid

    def write_calls(self, calls: Iterable[tuple], *, application: str, machine: str, rank: int, run_id: str,
                    invariants: Mapping[str, float], epoch_offset_ns: int) -> None:
        """Write buffered calls ``(seq, parent_seq, region, params, t0_ns, t1_ns, energy_j)`` (start and end on the
        recorder's clock; ``epoch_offset_ns`` puts the start on the epoch).

        ``exclusive_ns`` stays NULL in the table: a parent may be written in a
        later batch than its children, so :meth:`calls` derives it on reading.
        """
        calls = list(calls)
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            app = self._named("applications", application, {"description": application})
            mach = self._named("machines", machine, {"description": machine})
            t_metric = self._metric("time", "nondeterministic")
            e_metric = None
            trial0 = conn.execute("SELECT COALESCE(MAX(ID), 0) + 1 FROM trials").fetchone()[0]
            trials, ndet, side = [], [], []
            inv = {k: float(v) for k, v in invariants.items()}
            fast = self._raw_datasets.setdefault((application, tuple(sorted(inv.items()))), {})
            dcs: dict[str, int] = {}
            for off, (seq, pseq, name, params, t0, t1, energy) in enumerate(calls):
                incl = t1 - t0
                try:
                    dsid = fast.get(tuple(params.items()))
                except TypeError:  # unhashable value: let the checks below name it
                    dsid = None
                if dsid is None:
                    dsid = self._dataset(app, application, name, params, inv)
                    try:
                        fast[tuple(params.items())] = dsid
                    except TypeError:
                        pass
                dc = dcs.get(name)
                if dc is None:
                    dc = dcs[name] = self._named("datacollections", name, {
                        "description": name, "created": time.strftime("%Y-%m-%d %H:%M:%S")})
                tid = trial0 + off
                trials.append((tid, dc, mach, app, dsid))
                ndet.append((tid, t_metric, incl * 1e-9))
                if energy is not None:
                    e_metric = e_metric or self._metric("energy", "nondeterministic")
                    ndet.append((tid, e_metric, float(energy)))
                side.append((tid, run_id, name, rank, seq, pseq, t0 + epoch_offset_ns, incl, None, energy))
            conn.executemany("INSERT INTO trials(ID,dataCollectionID,machineID,applicationID,datasetID) "
                             "VALUES (?,?,?,?,?)", trials)
            conn.executemany("INSERT INTO nondeterministic_metrics(trialID,metricID,metric) VALUES (?,?,?)", ndet)
            conn.executemany("INSERT INTO perfmod_calls VALUES (?,?,?,?,?,?,?,?,?,?)", side)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._ids.clear()
            self._datasets.clear()
            self._raw_datasets.clear()
            raise

    # ----------------------------------------------------------------- reading
    def regions(self) -> list[str]:
        """Region names (Eiger data collections) with at least one call."""
        return [r[0] for r in self.conn.execute("SELECT DISTINCT region FROM perfmod_calls ORDER BY region")]

    def calls(self, region: str | None = None) -> pd.DataFrame:
        """One row per call: region, rank, seq, parent_seq, start_ns, time_ns, exclusive_ns, energy_j,
        ``time`` and ``exclusive_time`` in seconds, and one column per parameter (NaN where a call lacks it)."""
        q = ("SELECT c.trialID, c.run_id, c.region, c.rank, c.seq, c.parent_seq, c.start_ns, c.time_ns, "
             "c.energy_j, t.datasetID FROM perfmod_calls c JOIN trials t ON t.ID = c.trialID ORDER BY c.trialID")
        import pandas as pd

        df = pd.read_sql_query(q, self.conn)
        df["exclusive_ns"] = exclusive_ns(df) if len(df) else pd.Series(dtype=np.int64)
        if region is not None:
            df = df[df["region"] == region].reset_index(drop=True)
        pm = pd.read_sql_query("SELECT dm.datasetID, m.name, dm.metric FROM deterministic_metrics dm "
                               "JOIN metrics m ON m.ID = dm.metricID", self.conn)
        if len(pm):
            wide = pm.pivot_table(index="datasetID", columns="name", values="metric", aggfunc="first")
            df = df.merge(wide, left_on="datasetID", right_index=True, how="left")
        df["time"] = df["time_ns"] * 1e-9
        df["exclusive_time"] = df["exclusive_ns"] * 1e-9
        return df.drop(columns=["datasetID"])

    def parameter_names(self, region: str) -> list[str]:
        """Parameters (deterministic metrics) seen in any call of ``region``."""
        rows = self.conn.execute(
            "SELECT DISTINCT m.name FROM perfmod_calls c JOIN trials t ON t.ID = c.trialID "
            "JOIN deterministic_metrics dm ON dm.datasetID = t.datasetID JOIN metrics m ON m.ID = dm.metricID "
            "WHERE c.region = ? ORDER BY m.name", (region,)).fetchall()
        return [r[0] for r in rows]

    def region_frame(self, region: str, target: str = "time", exclusive: bool = False) -> pd.DataFrame:
        """Training table of one region: its parameters and ``target`` (seconds), one row per call.

        Raises
        ------
        MissingParameterError
            If a parameter is recorded in some calls of the region but not in others.
        KeyError
            If the region has no calls.
        """
        df = self.calls(region)
        if df.empty:
            raise KeyError(f"no calls of region {region!r} in {self.path}; regions: {self.regions()}")
        params = self.parameter_names(region)
        for p in params:
            miss = int(df[p].isna().sum())
            if miss:
                raise MissingParameterError(
                    f"region {region!r}: parameter {p!r} is missing in {miss} of {len(df)} calls")
        col = "exclusive_time" if exclusive and target == "time" else ("energy_j" if target == "energy" else target)
        out = df[params].copy()
        out[target] = df[col].to_numpy()
        return out

    def eiger_profile(self, region: str) -> pd.DataFrame:
        """The region's data collection as Eiger reads it: one row per trial, one column per metric."""
        dc = self.conn.execute("SELECT ID FROM datacollections WHERE name=?", (region,)).fetchone()
        if dc is None:
            raise KeyError(f"no data collection {region!r} in {self.path}")
        import pandas as pd

        det = pd.read_sql_query(
            "SELECT t.ID AS trial, m.name, dm.metric FROM trials t JOIN deterministic_metrics dm "
            "ON dm.datasetID = t.datasetID JOIN metrics m ON m.ID = dm.metricID WHERE t.dataCollectionID = ?",
            self.conn, params=(dc[0],))
        ndet = pd.read_sql_query(
            "SELECT t.ID AS trial, m.name, nm.metric FROM trials t JOIN nondeterministic_metrics nm "
            "ON nm.trialID = t.ID JOIN metrics m ON m.ID = nm.metricID WHERE t.dataCollectionID = ?",
            self.conn, params=(dc[0],))
        both = pd.concat([det, ndet])
        return both.pivot_table(index="trial", columns="name", values="metric", aggfunc="first")


def _is_number(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return np.ndim(v) == 0
