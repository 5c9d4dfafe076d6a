"""Study helpers of paper 001's Sedov and Quicksilver studies: designs, hold-out split, validation tables."""

import numpy as np
import pandas as pd
import pytest

import perfmod.campaign as campaign
from perfmod.core.io import check_conventions, provenance_attrs, write_dataset
from perfmod.models.regression import lm
from perfmod.studies import sasidharan_quicksilver as qs
from perfmod.studies import sasidharan_sedov as sedov
from perfmod.studies.papers import sasidharan as sc


def test_model_c_has_table_1_terms_and_model_2_table_9_count():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.random((40, 5)) + 1, columns=["X1", "X2", "X3", "X4", "time"])
    c = lm(sedov.FORMULAS["C"], df)
    assert len(c.coef) == 12  # Table 1's rows
    assert lm(sedov.FULL_FORMULAS["full (Table 6)"], df.assign(X5=rng.random(40))).coef.size == 16
    assert lm(qs.FORMULAS["1"], df).coef.size == 6  # Table 8
    # Table 9: Res.Df 456 and 444, so Model 2 has 12 more coefficients than Model 1
    assert lm(qs.FORMULAS["2"], df).coef.size - 6 == 12


def test_designs_and_bad_configurations():
    d = sedov.design([(4, 4, 4), (6, 6, 6)], [1, 4], ["z", "x"], [1, 2])
    assert len(d) == 16 and d[0] == {"nx": 4, "ny": 4, "nz": 4, "chunks": 1, "node_axis": "z", "nprocs": 1}
    with pytest.raises(ValueError, match="node axis"):
        sedov.design([(4, 4, 4)], [1], ["w"])
    with pytest.raises(ValueError, match="positive"):
        qs.design([0], [10], [1])


def test_validation_table_is_fit_with_confidence_interval():
    x = np.arange(10.0)
    train = pd.DataFrame({"x": x, "y": 2 * x + 1 + np.tile([0.5, -0.5], 5)})
    m = lm("y ~ x", train)
    test = pd.DataFrame({"x": [20.0, 30.0], "y": [41.0, 62.0]})
    tab = sc.validation_table(m, test)
    np.testing.assert_allclose(tab["fit"], m.predict(test)["predicted"])
    assert list(tab.columns) == ["measured", "fit", "lower", "upper"]
    ci = m.predict(test, interval="confidence")
    np.testing.assert_allclose(tab[["lower", "upper"]], ci[["lower", "upper"]].to_dataframe())
    assert tab.measured.tolist() == [41.0, 62.0]


def test_small_sedov_measurement_round_trip(tmp_path):
    ds = sedov.measure_shared(sedov.design([(4, 4, 4)], [1, 2], ["x"]), reps=2, iterations=2, progress=False)
    fr = sedov.model_frame(ds)
    assert len(fr) == 4 and (fr.X3 > 0).all() and (fr.time > 0).all()
    assert sorted(set(fr.config)) == ["4x4x4/1/x", "4x4x4/2/x"]  # repetitions share their configuration
    path = campaign.save_raw(ds, "sasidharan_sedov", "t", {"a": 1}, "measurement: test", tmp_path)
    assert path.parent == tmp_path and path.name.startswith("sasidharan_sedov-t-")
    with pytest.raises(FileExistsError):  # a measurement is never overwritten
        write_dataset(ds.assign_attrs(**provenance_attrs("s", "t")), path, overwrite=False)
    out = sc.study_dataset({"v": (pd.DataFrame({"measured": [1.0], "fit": [1.1], "lower": [0.9], "upper": [1.3]}),
                                  "ms", "time")}, {"m": (pd.DataFrame({"RSE": [1.0]}, index=["A"]), {"RSE": "ms"})})
    assert out.v_predicted.attrs["units"] == "ms" and out.m_RSE.attrs["units"] == "ms"
    check_conventions(out.assign_attrs(perfmod_version="x", git_commit="x", study="s", source="s", parameters="{}"))


def test_run_order_interleaves_sets_with_their_own_repetitions():
    cfg = (sedov.design([(4, 4, 4)], [1, 2], ["z"], label="train", reps=3)
           + sedov.design([(5, 5, 5)], [1], ["z"], label="test", reps=1))
    order = sc.run_order(cfg, reps=9, seed=0)
    assert sorted(order) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0)]
    assert order != sorted(order)  # shuffled
    assert sc.run_order(cfg, 9, 0) == order  # seeded
    ds = sedov.measure_shared(cfg, iterations=1, progress=False)
    sets = sc.split_sets(ds)
    assert sets["train"].sizes["run"] == 6 and sets["test"].sizes["run"] == 1
    assert sets["test"].nx.values.tolist() == [5]
