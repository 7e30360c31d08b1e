"""The compiled modules are the ones loaded: no source fallback can sneak in."""

import importlib
import importlib.machinery

from kafkacore.core import COMPILED_MODULES


def test_every_core_module_is_an_extension():
    for name in COMPILED_MODULES:
        module = importlib.import_module(name)
        assert module.__spec__.origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), name
        assert type(module.__loader__) is importlib.machinery.ExtensionFileLoader, name


def test_core_exports_the_documented_names():
    import kafkacore.core as core

    for name in core.__all__:
        assert getattr(core, name) is not None
