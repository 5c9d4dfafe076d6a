"""The curated top-level API: every name resolves to the object its module defines."""

import importlib

import pytest

import perfmod


@pytest.mark.parametrize("name", sorted(n for g in perfmod.API.values() for n in g))
def test_api_name_is_the_module_object(name):
    module, _, attr = next(g[name] for g in perfmod.API.values() if name in g).partition(":")
    assert getattr(perfmod, name) is getattr(importlib.import_module(module), attr or name)
    assert name in perfmod.__all__


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        perfmod.nope  # noqa: B018


def test_platform_by_name_through_the_api():
    assert perfmod.load_platform("summit").ranks_per_node == 6


def test_no_lazy_name_is_also_a_submodule():
    """A lazily exported name must not be a submodule's name too: importing the submodule binds the package
    attribute to the module, and ``from package import name`` then gives the module (it did for replay.sweep)."""
    import pkgutil

    import perfmod
    import perfmod.replay

    for pkg in (perfmod, perfmod.replay):
        subs = {m.name for m in pkgutil.iter_modules(pkg.__path__)}
        assert not subs & set(pkg._WHERE), f"{pkg.__name__}: {sorted(subs & set(pkg._WHERE))}"
