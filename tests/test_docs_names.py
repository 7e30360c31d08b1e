"""The docs name only files, settings and modules that exist (docs/_ext/kafkacore_names.py)."""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import kafkacore_names  # noqa: E402


def test_every_name_in_the_docs_exists():
    assert kafkacore_names.problems() == []


def test_the_check_finds_what_does_not_exist(tmp_path):
    (tmp_path / "chapter.rst").write_text(
        "Retention runs every ``log.retention.check.interval.ms`` and ``batch.size=0``;\n"
        "see ``kafkacore/broker/log/log.py``, ``kafkacore.broker.log.LogConfig`` and\n"
        "``RecordAccumulator.ready``.\n"
        "Not so: ``log.retention.every.ms``, ``kafkacore/broker/no_such.py``,\n"
        "``kafkacore.broker.log.NoSuchClass``, ``RecordAccumulatr.ready``.\n"
    )
    found = [message for _, _, message in kafkacore_names.problems(tmp_path)]
    assert found == [
        "not a known setting: log.retention.every.ms",
        "no such file: kafkacore/broker/no_such.py",
        "no such module or attribute: kafkacore.broker.log.NoSuchClass",
        "no such class: RecordAccumulatr",
    ]
