"""Extra-P run in a Python of its own (perfmod.models.compute.extrap_runner): closed-form cases it must find."""

import sys

import numpy as np
import pandas as pd
import pytest

from perfmod.models.compute.extrap_runner import ENV_VAR, ExtrapError, ExtrapModeler, extrap_python

VALUES = np.array([4.0, 8.0, 16.0, 32.0, 64.0])
needs_extrap = pytest.mark.skipif(extrap_python() is None, reason="no Python with Extra-P (make extrap-env)")


@pytest.fixture(scope="module")
def modeler():
    with ExtrapModeler() as m:
        yield m


@needs_extrap
def test_one_parameter_polynomial_found_exactly(modeler):
    x = np.repeat(VALUES, 3)
    frame = pd.DataFrame({"p": x, "time": 3.0 + 0.5 * x**2})
    fit = modeler.fit(frame, ["p"], np.array([[128.0], [512.0]]))
    assert fit.lead == ((2.0, 0),)
    np.testing.assert_allclose(fit.predicted, 3.0 + 0.5 * np.array([128.0, 512.0]) ** 2, rtol=1e-9)
    assert "p^(2)" in fit.function and fit.seconds > 0
    assert modeler.version.startswith("4.")


@needs_extrap
def test_two_parameter_product_with_a_log_found_exactly(modeler):
    p, n = (a.ravel() for a in np.meshgrid(VALUES, VALUES, indexing="ij"))
    frame = pd.DataFrame({"n": n, "p": p, "time": 1.0 + 0.01 * p * np.log2(n)})
    # the query's columns follow the names given, not the frame's or Extra-P's order
    fit = modeler.fit(frame, ["p", "n"], np.array([[128.0, 128.0], [512.0, 64.0]]))
    assert fit.lead == ((1.0, 0), (0.0, 1))
    np.testing.assert_allclose(fit.predicted, [1.0 + 0.01 * 128 * 7, 1.0 + 0.01 * 512 * 6], rtol=1e-9)


def test_a_python_without_extrap_is_a_clear_error(monkeypatch):
    if extrap_python() == sys.executable:
        pytest.skip("this Python has Extra-P")
    with pytest.raises(ExtrapError, match="process ended.*extrap"):
        ExtrapModeler(sys.executable)


def test_the_variable_naming_no_file_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "no-python"))
    with pytest.raises(ExtrapError, match=ENV_VAR):
        extrap_python()


@needs_extrap
def test_three_parameters_from_a_notebook_kernel(monkeypatch):
    # a Jupyter kernel's backend, which Extra-P's own matplotlib lacks (its 3-parameter modeler imports it)
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    p, n, s = (a.ravel() for a in np.meshgrid(VALUES, VALUES, VALUES, indexing="ij"))
    frame = pd.DataFrame({"p": p, "n": n, "s": s, "time": 2.0 + 0.1 * p + 0.01 * n**2 + 0.5 * np.log2(s)})
    with ExtrapModeler() as m:
        fit = m.fit(frame, ["p", "n", "s"], np.array([[128.0, 128.0, 128.0]]))
    assert fit.lead == ((1.0, 0), (2.0, 0), (0.0, 1))
    np.testing.assert_allclose(fit.predicted, [2.0 + 12.8 + 163.84 + 3.5], rtol=1e-6)


def _stand_in(tmp_path, after_hello):
    """A stand-in for Extra-P's Python that greets as the bridge does, then runs ``after_hello`` (shell)."""
    path = tmp_path / "python"
    path.write_text(f'#!/bin/sh\necho \'{{"extrap": "0"}}\'\nread line\n{after_hello}\n')
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("after_hello, message", [
    ("echo 'Qt: something on stdout'", "answered something other than a reply: 'Qt: something on stdout"),
    ("echo 'Segmentation fault' >&2; exit 139", r"process ended \(exit status 139\): Segmentation fault"),
])
def test_a_process_that_breaks_the_protocol_is_a_clear_error(tmp_path, after_hello, message):
    frame = pd.DataFrame({"p": VALUES, "time": VALUES})
    with ExtrapModeler(_stand_in(tmp_path, after_hello)) as m, pytest.raises(ExtrapError, match=message):
        m.fit(frame, ["p"], np.array([[128.0]]))
