"""The broker's packages stand on floors (docs/broker/layout.rst): a package imports only
packages on lower floors, or the few on its own floor named below.  ``Broker`` (in ``server``)
hands each part the collaborators it uses, so nothing below ``server`` needs to import it, not
even for a type under ``TYPE_CHECKING``.

Read from the source (every import, a function's own and ``TYPE_CHECKING``'s included), so a
new import that runs back up fails here before it makes a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.pure_python  # reads the source: one interpreter is enough

BROKER = Path(__file__).resolve().parent.parent / "kafkacore" / "broker"

FLOOR = {
    "server_common": 0,
    "log": 1,
    "config": 2,
    "network": 3, "security": 3,
    "metadata": 4,
    "group": 5, "transaction": 5,
    "controller": 6,
    "server": 7,
}
#: imports between two packages of one floor, one way only (network and security both ways:
#: a connection authenticates, and the ACL APIs answer requests)
SAME_FLOOR = {("network", "security"), ("security", "network"), ("transaction", "group")}


def _imports() -> list[tuple[str, str, str]]:
    """(importing package, imported package, where) for every import between two packages."""
    found = []
    for path in sorted(BROKER.rglob("*.py")):
        parts = path.relative_to(BROKER).parts
        if len(parts) < 2:
            continue  # the broker's face and __main__ stand above every floor
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith("kafkacore.broker."):
                    target = name.split(".")[2]
                    if target in FLOOR and target != parts[0]:
                        found.append((parts[0], target, f"{path.relative_to(BROKER)}:"
                                                        f"{node.lineno} imports {name}"))
    return found


def test_every_package_of_the_broker_has_a_floor():
    packages = {p.name for p in BROKER.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(FLOOR)


def test_no_import_runs_back_up():
    wrong = [where for source, target, where in _imports()
             if FLOOR[target] > FLOOR[source]
             or (FLOOR[target] == FLOOR[source] and (source, target) not in SAME_FLOOR)]
    assert not wrong, "\n".join(wrong)
