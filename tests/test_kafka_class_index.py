"""The "Kafka class -> file" index (docs/broker/kafka_classes.csv, shown in docs/broker/layout.rst).

A reader who knows a Kafka class name looks it up there and opens one file; these tests keep the
index true as files move: every row's file exists and defines the name it gives, a Kafka class
has one home, and every broker module that defines a public class is in the index.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.pure_python  # reads the source: one interpreter is enough

ROOT = Path(__file__).resolve().parent.parent
INDEX = ROOT / "docs" / "broker" / "kafka_classes.csv"


def _rows() -> list[dict[str, str]]:
    with INDEX.open(newline="") as f:
        return list(csv.DictReader(f))


def _defines(source: str, name: str) -> bool:
    pattern = rf"^\s*(?:cdef |cpdef )?(?:class|def)\s+{re.escape(name)}\b|^{re.escape(name)}\s*[:=]"
    return re.search(pattern, source, re.M) is not None


def test_every_row_names_a_file_that_defines_it():
    wrong = []
    for row in _rows():
        path = ROOT / row["file"]
        if not path.is_file():
            wrong.append(f"{row['Kafka class']}: {row['file']} does not exist")
        elif not _defines(path.read_text(), row["kafkacore"]):
            wrong.append(f"{row['Kafka class']}: {row['file']} does not define {row['kafkacore']}")
    assert not wrong, "\n".join(wrong)


def test_a_kafka_class_has_one_home():
    seen: dict[str, str] = {}
    twice = []
    for row in _rows():
        name = row["Kafka class"]
        if name == "-":  # a class of ours with no Kafka counterpart
            continue
        if name in seen:
            twice.append(f"{name}: {seen[name]} and {row['file']}")
        seen[name] = row["file"]
    assert not twice, "\n".join(twice)


def test_every_broker_module_with_a_public_class_is_indexed():
    indexed = {row["file"] for row in _rows()}
    missing = []
    for path in sorted((ROOT / "kafkacore" / "broker").rglob("*.py*")):
        if path.suffix not in (".py", ".pyx") or path.name.startswith("__"):
            continue
        if re.search(r"^(?:cdef )?class [A-Z]", path.read_text(), re.M):
            rel = path.relative_to(ROOT).as_posix()
            if rel not in indexed:
                missing.append(rel)
    assert not missing, "not in docs/broker/kafka_classes.csv:\n" + "\n".join(missing)
