"""The registry never drops a method quietly: a registry line (or a module a method
declares: AUDIT, COST) that does not import is an InputError naming the string."""

import sys
import types

import pytest

from engine.core.errors import InputError
from engine.methods import registry

BROKEN = "engine.methods.no_such_method.method"


def test_a_registry_line_that_does_not_import_is_an_error_naming_it(monkeypatch):
    monkeypatch.setitem(registry.METHODS, "broken", BROKEN)
    with pytest.raises(InputError, match=f"'broken' is registered as '{BROKEN}'"):
        registry.available_methods()
    with pytest.raises(InputError, match=f"'{BROKEN}', which does not import"):
        registry.get_method("broken")


def test_a_line_whose_package_is_missing_is_named_too(monkeypatch):
    monkeypatch.setitem(registry.METHODS, "broken", "no_such_package.method")
    with pytest.raises(InputError, match="'no_such_package.method'"):
        registry.available_methods()


def test_every_registered_method_is_available_and_imports():
    assert registry.available_methods() == list(registry.METHODS)
    for name in registry.METHODS:
        assert registry.get_method(name).TITLE


def test_a_declared_module_that_does_not_import_is_an_error_naming_it(monkeypatch):
    module = types.ModuleType("fake_method")
    module.AUDIT = "engine.methods.fake.audit"
    monkeypatch.setitem(registry.METHODS, "fake", "fake_method")
    monkeypatch.setitem(sys.modules, "fake_method", module)
    with pytest.raises(InputError, match="fake's AUDIT is registered as 'engine.methods.fake.audit'"):
        registry.part_module("fake", "AUDIT")
    assert registry.part_module("fake", "COST") is None  # not declared: none, no error


def test_an_unknown_name_lists_the_registered_ones():
    with pytest.raises(InputError, match="unknown method 'nope'; choose one of dpmerf"):
        registry.get_method("nope")
