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


def test_every_class_holding_a_py_buffer_has_no_gc_clear():
    """A Py_buffer field makes Cython's generated tp_clear Py_CLEAR the buffer's object without
    PyBuffer_Release, leaving the export behind when the garbage collector takes the instance
    apart (see docs/core/bytestream.rst); such classes are ``@cython.no_gc_clear``."""
    import re
    from pathlib import Path

    core = Path(__file__).resolve().parent.parent / "kafkacore" / "core"
    holders = []
    for pxd in sorted(core.glob("*.pxd")):
        for name, body in re.findall(r"^cdef class (\w+)[^\n]*:\n((?:[ \t]+[^\n]*\n|\n)*)",
                                     pxd.read_text(), flags=re.M):
            if re.search(r"^\s+Py_buffer\b", body, flags=re.M):
                holders.append((pxd.with_suffix(".pyx"), name))
    assert holders  # the stream and the send_batch column hold one each
    for pyx, name in holders:
        assert re.search(rf"^@cython\.no_gc_clear\ncdef class {name}\b", pyx.read_text(),
                         flags=re.M), f"{pyx.name}: {name} holds a Py_buffer and has a tp_clear"


def test_modules_that_read_outside_bytes_are_compiled_with_cythons_checks():
    """setup.py compiles every module with bounds, wraparound and division checks unless it
    names the module in UNCHECKED with a reason; nothing that reads a client's or a file's bytes
    may be named there (docs/design.rst, "Compiled code")."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    tree = ast.parse((root / "setup.py").read_text())
    (unchecked,) = [ast.literal_eval(node.value) for node in tree.body
                    if isinstance(node, ast.Assign)
                    and any(getattr(t, "id", None) == "UNCHECKED" for t in node.targets)]
    reads_outside_bytes = {
        "kafkacore.broker.network.request_parser", "kafkacore.broker.network.processor_core",
        "kafkacore.broker.network.request", "kafkacore.broker.network.memory_pool",
        "kafkacore.broker.log.log_validator_core", "kafkacore.core.record_batch",
        "kafkacore.core.compression", "kafkacore.core.crc",
    }
    def pyx(name: str) -> Path:
        return root / (name.replace(".", "/") + ".pyx")

    assert all(pyx(name).exists() for name in reads_outside_bytes)
    assert not reads_outside_bytes & set(unchecked)
    for name, reason in unchecked.items():
        assert pyx(name).exists() and reason.strip(), name
    # A file's own "# cython:" header would override setup.py's choice.
    for name in reads_outside_bytes:
        source = pyx(name).read_text()
        assert "boundscheck=False" not in source and "boundscheck(False)" not in source, name
