"""Environments for the child processes tests start.

A child must import the kafkacore under test: the installed wheel in tox, the tree itself when it is
built in place. Never the checkout by accident: a fresh clone's tree has no compiled modules, and
``python -m`` or a script run from the checkout would find it first. So the children get the
directory that holds the imported ``kafkacore`` first on ``PYTHONPATH`` (then ``tests/``, for
helpers like ``readback``), and tests start them outside the checkout.
"""

from __future__ import annotations

import os
import pathlib

import kafkacore

KAFKACORE_ROOT = str(pathlib.Path(kafkacore.__file__).resolve().parent.parent)
TESTS = str(pathlib.Path(__file__).resolve().parent.parent)


def child_env(**extra: str) -> dict[str, str]:
    """``os.environ`` with the kafkacore under test first on ``PYTHONPATH``, plus ``extra``."""
    path = os.pathsep.join(filter(None, [KAFKACORE_ROOT, TESTS, os.environ.get("PYTHONPATH")]))
    return {**os.environ, **extra, "PYTHONPATH": path}
