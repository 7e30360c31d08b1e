"""Session-wide test machinery.

The suite refuses to run against anything but the compiled core (DESIGN.md principle 3).
"""

import importlib
import importlib.machinery

import pytest


def _check_compiled():
    from kafkacore.core import COMPILED_MODULES

    for name in COMPILED_MODULES:
        module = importlib.import_module(name)
        origin = module.__spec__.origin or ""
        if not origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            raise pytest.UsageError(f"{name} was loaded from {origin!r}, not a compiled extension")


def pytest_sessionstart(session):
    _check_compiled()
