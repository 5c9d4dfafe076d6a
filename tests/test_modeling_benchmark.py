"""The modeling_benchmark study's run: its parts fitted in parallel processes give the serial result."""

import numpy as np

from perfmod.studies import modeling_benchmark as mb


def test_parallel_parts_equal_the_serial_run():
    kw = dict(n_cases=3, n_cases_3p=1, seeds=(0, 1), n_params=(1, 2), noises=(0.05,), methods=("perfmod", "loop"))
    serial, parallel = mb.run(workers=1, **kw), mb.run(workers=2, **kw)
    for v in ("rel_error", "lead_right", "covered", "function"):
        assert np.array_equal(serial[v].values, parallel[v].values, equal_nan=v != "function"), v
    # the parts land where the serial run puts them: seed 1's two-parameter functions are its own
    assert list(serial.function.sel(seed=1, n_params=2).values[:3]) == [c.expression() for c in mb.make_cases(2, 3, 1)]
    assert np.isfinite(serial.rel_error.sel(model="perfmod")).all()
