"""The group coordinator's offset store: commits answered only once on disk, kept across a
restart, a torn journal tail ignored, Kafka's error codes for what it refuses."""

from __future__ import annotations

from kafkacore.broker.group_coordinator import (
    ILLEGAL_GENERATION,
    INVALID_GROUP_ID,
    JOURNAL,
    NONE,
    OFFSET_METADATA_TOO_LARGE,
    GroupCoordinator,
    OffsetAndMetadata,
)


def _started(tmp_path) -> GroupCoordinator:
    coordinator = GroupCoordinator(tmp_path)
    coordinator.startup()
    return coordinator


def test_commit_then_fetch(tmp_path):
    c = _started(tmp_path)
    errors = c.handle_commit_offsets(
        "g", -1, {("t", 0): OffsetAndMetadata(5, 3, "m"), ("t", 1): OffsetAndMetadata(7)}
    )
    assert errors == {("t", 0): NONE, ("t", 1): NONE}
    fetched = c.handle_fetch_offsets("g", [("t", 0), ("t", 1), ("t", 2)])
    assert fetched[("t", 0)].offset == 5
    assert fetched[("t", 0)].leader_epoch == 3
    assert fetched[("t", 0)].metadata == "m"
    assert fetched[("t", 0)].commit_timestamp_ms > 0
    assert fetched[("t", 1)].offset == 7
    assert fetched[("t", 2)] is None
    assert c.handle_fetch_offsets("other", [("t", 0)]) == {("t", 0): None}
    assert set(c.handle_fetch_offsets("g")) == {("t", 0), ("t", 1)}
    c.shutdown()


def test_offsets_survive_a_restart_latest_wins(tmp_path):
    c = _started(tmp_path)
    for offset in range(10):
        c.handle_commit_offsets("g", -1, {("t", 0): OffsetAndMetadata(offset)})
    c.shutdown()
    c = _started(tmp_path)
    assert c.handle_fetch_offsets("g", [("t", 0)])[("t", 0)].offset == 9
    # Start-up compacted the journal to one line per partition.
    assert (tmp_path / JOURNAL).read_bytes().count(b"\n") == 1
    c.shutdown()


def test_torn_tail_is_ignored(tmp_path):
    c = _started(tmp_path)
    c.handle_commit_offsets("g", -1, {("t", 0): OffsetAndMetadata(3)})
    c.shutdown()
    with open(tmp_path / JOURNAL, "ab") as f:
        f.write(b'{"g":"g","t":"t","p":0,"o":99')  # a crash in the middle of a write
    c = _started(tmp_path)
    assert c.handle_fetch_offsets("g", [("t", 0)])[("t", 0)].offset == 3
    c.handle_commit_offsets("g", -1, {("t", 0): OffsetAndMetadata(4)})
    c.shutdown()
    c = _started(tmp_path)
    assert c.handle_fetch_offsets("g", [("t", 0)])[("t", 0)].offset == 4
    c.shutdown()


def test_refusals_carry_kafkas_error_codes(tmp_path):
    c = _started(tmp_path)
    tp = ("t", 0)
    assert c.handle_commit_offsets("", -1, {tp: OffsetAndMetadata(1)}) == {tp: INVALID_GROUP_ID}
    assert c.handle_commit_offsets("g", 3, {tp: OffsetAndMetadata(1)}) == {tp: ILLEGAL_GENERATION}
    big = OffsetAndMetadata(1, metadata="x" * 4097)
    ok = OffsetAndMetadata(2, metadata="x" * 4096)
    assert c.handle_commit_offsets("g", -1, {tp: big, ("t", 1): ok}) == {
        tp: OFFSET_METADATA_TOO_LARGE,
        ("t", 1): NONE,
    }
    assert c.handle_fetch_offsets("g", [tp]) == {tp: None}  # the refused one was not stored
    assert c.handle_fetch_offsets("g", [("t", 1)])[("t", 1)].offset == 2
    c.shutdown()
