"""The application registry (issue 21): each apps module declares an Application; a toy application registered
here is found by exchange, kmodel_counts, app_counts, app_kernels, analytic_comm, synthetic and `perfmod replay
--synthetic`, with values checked in closed form."""

import numpy as np
import pytest

from perfmod.apps import registry
from perfmod.apps.application import Application, Phase
from perfmod.apps.exchange import Exchange
from perfmod.apps.kernels import KernelCounts
from perfmod.apps.registry import (
    analytic_comm,
    app_counts,
    app_kernels,
    applications,
    exchange,
    kmodel_counts,
    register_application,
)
from perfmod.apps.traces import synthetic
from perfmod.models.comm.phase import phase_time
from perfmod.trace import Call


def _ring(nprocs, nbytes=800, direction="left"):
    """A periodic 1D ring: every rank sends ``nbytes`` to its left (or right) neighbour."""
    src = np.arange(nprocs, dtype=np.int64)
    dst = (src + (-1 if direction == "left" else 1)) % nprocs
    return Exchange("ring", nprocs, src, dst, np.full(nprocs, int(nbytes), np.int64), 2,
                    {"direction": direction, "nbytes": int(nbytes)})


def _ring_kernels(n=1000):
    return [KernelCounts("AXPY", float(n), 3, 2, 1, 0, 3, 0, 24.0)]


RING = Application(name="ring", decompose=_ring, kernel_counts=_ring_kernels,
                   phases=(Phase("left", {"direction": "left"}),
                           Phase("right", {"direction": "right"}, sequential=True, optional=True)),
                   allreduces=1, module=__name__)


@pytest.fixture
def ring(monkeypatch):
    monkeypatch.setattr(registry, "_APPS", dict(registry._APPS))
    return register_application(RING)


def test_the_built_in_applications_are_declared_by_their_modules():
    assert applications() == ("allreduce", "jacobi2d", "minife", "minimd")
    assert applications("decompose") == ("jacobi2d", "minife", "minimd")
    assert {a: registry.application(a).module for a in applications()} == {
        a: f"perfmod.apps.{a}" for a in applications()}


def test_a_registered_toy_application_is_found_by_every_lookup(ring):
    assert "ring" in applications("decompose") and "ring" in applications("kernel_counts")
    ex = exchange("ring", 8, direction="right")
    assert ex.dst.tolist() == [1, 2, 3, 4, 5, 6, 7, 0] and ex.nbytes.sum() == 8 * 800
    # block mapping, 4 ranks per node: node 0's ranks send one message each; only 0 -> 7 leaves the node
    c = kmodel_counts("ring", nprocs=8, ranks_per_node=4)
    assert (c.k_inter, c.k_prime, c.k_total, c.k_total_counted) == (1, 4, 4 * 2, 4)
    assert c.k == pytest.approx(1 / 8 * 4)
    counts = app_counts("ring", n=10)
    assert counts.loc["AXPY", "items"] == 10 and counts.loc["AXPY", "invocations"] == 3
    assert app_kernels("ring").loc["AXPY", "count"] == 3


def test_the_toy_applications_phases_make_its_analytic_time_and_its_synthetic_trace(ring):
    both = sum(float(phase_time(_ring(8, direction=d), "lassen", model="postal")["t_phase"])
               for d in ("left", "right"))
    assert analytic_comm("ring", "lassen", 8, model="postal") == pytest.approx(both, rel=1e-12)
    assert both > 0
    t = synthetic("ring", 8, 2)
    # per rank and iteration: left posted (irecv, isend, waitall), right sequential as miniMD's swaps (irecv,
    # blocking send, wait), the declared allreduce
    assert len(t) == 8 * 2 * 7
    calls = t.call[t.rank == 0].tolist()
    assert calls[:7] == [int(c) for c in (Call.IRECV, Call.ISEND, Call.WAITALL, Call.IRECV, Call.SEND, Call.WAIT,
                                          Call.ALLREDUCE)]
    assert calls[7:] == calls[:7]
    short = synthetic("ring", 8, 1, reverse=False, allreduces=0)  # the optional phase left out
    assert len(short) == 8 * 3 and sorted(set(short.peer[short.call == int(Call.ISEND)].tolist())) == list(range(8))


def test_the_toy_application_replays_from_the_command_line(ring, capsys):
    from perfmod.workflow.cli import main

    assert main(["replay", "--synthetic", "ring:8:1", "--platform", "lassen", "--model", "postal"]) == 0
    assert "on lassen, postal: slowest rank" in capsys.readouterr().out


def test_unknown_and_duplicate_applications_name_the_known_ones(ring):
    with pytest.raises(ValueError, match="unknown app 'hpl'; known apps: jacobi2d, minife, minimd, ring"):
        exchange("hpl", 4)
    with pytest.raises(KeyError, match="known apps: jacobi2d, minife, minimd, ring"):
        app_kernels("allreduce")  # registered, but without kernel counts
    with pytest.raises(ValueError, match="'ring' is already registered"):
        register_application(RING)
    with pytest.raises(ValueError, match="phases need a decompose function"):
        Application(name="bad", decompose=None, kernel_counts=None, phases=(Phase("x"),), allreduces=0)
