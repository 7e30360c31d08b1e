"""The group coordinator's offset store: commits are records of ``__consumer_offsets`` in Kafka's
format (key version 1, value version 3), answered once written, kept across a restart (the latest
per partition wins when the log is loaded again), Kafka's error codes for what it refuses, and a
group's partition computed as Kafka computes it."""

from __future__ import annotations

import time

import pytest
from waits import wait_until

from kafkacore.broker import Broker
from kafkacore.broker.group.group_coordinator import OffsetAndMetadata
from kafkacore.broker.group.group_metadata import GroupState
from kafkacore.broker.group.group_metadata_manager import (
    OFFSETS_TOPIC,
    GroupRecord,
    MemberRecord,
    _records,
    group_metadata_key,
    group_metadata_value,
    java_string_hashcode,
    offset_commit_key,
    offset_commit_value,
    partition_for,
    read_group_metadata_key,
    read_group_metadata_value,
    read_offset_commit_key,
    read_offset_commit_value,
)
from kafkacore.errors import Errors


def _config(tmp_path):
    return {"num.network.threads": "1", "num.io.threads": "2", "log.dirs": str(tmp_path),
            "offsets.topic.num.partitions": "5"}


@pytest.mark.parametrize("text, expected", [
    # Java: "".hashCode() == 0, "a" == 97, "group" == 98629247, "polygenelubricants" ==
    # Integer.MIN_VALUE (the case Utils.abs exists for), "é" (one UTF-16 unit) == 233,
    # "😀" (a surrogate pair) == 31 * 0xD83D + 0xDE00.
    ("", 0), ("a", 97), ("group", 98629247), ("polygenelubricants", -(2**31)),
    ("\u00e9", 233), ("\U0001F600", 31 * 0xD83D + 0xDE00),
])
def test_java_string_hashcode(text, expected):
    assert java_string_hashcode(text) == expected


def test_partition_for_is_kafkas():
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) == 0
    assert partition_for("group", 50) == 98629247 % 50
    assert partition_for("\U0001F600", 7) == (31 * 0xD83D + 0xDE00) % 7


def test_record_format_round_trips_and_matches_kafkas_layout():
    key = offset_commit_key("g", "t", 3)
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    value = OffsetAndMetadata(42, 7, "m", 1234)
    encoded = offset_commit_value(value)
    assert encoded == (b"\x00\x03" + (42).to_bytes(8, "big") + (7).to_bytes(4, "big")
                       + b"\x00\x01m" + (1234).to_bytes(8, "big"))
    assert read_offset_commit_key(key) == ("g", "t", 3)
    assert read_offset_commit_value(encoded) == value
    assert read_offset_commit_key(b"\x00\x02\x00\x01g") is None  # group metadata: not offsets


def _s(text: str) -> bytes:
    return len(text).to_bytes(2, "big") + text.encode()


def test_group_record_round_trips_and_matches_kafkas_layout():
    """``GroupMetadataKey`` v2 and ``GroupMetadataValue`` v3: int16/int32/int64 big-endian,
    strings int16 length + UTF-8 (-1: null), bytes and arrays int32 length."""
    assert group_metadata_key("g") == b"\x00\x02" + _s("g")
    assert read_group_metadata_key(group_metadata_key("g")) == "g"
    assert read_group_metadata_key(offset_commit_key("g", "t", 0)) is None
    member = MemberRecord("m-1", None, "client", "/10.0.0.1", 60000, 30000, b"sub", b"asg")
    record = GroupRecord("consumer", 7, "range", "m-1", 1234, (member,))
    encoded = group_metadata_value(record)
    assert encoded == (b"\x00\x03" + _s("consumer") + (7).to_bytes(4, "big") + _s("range")
                       + _s("m-1") + (1234).to_bytes(8, "big") + (1).to_bytes(4, "big")
                       + _s("m-1") + b"\xff\xff" + _s("client") + _s("/10.0.0.1")
                       + (60000).to_bytes(4, "big") + (30000).to_bytes(4, "big")
                       + b"\x00\x00\x00\x03sub" + b"\x00\x00\x00\x03asg")
    assert read_group_metadata_value(encoded) == record
    empty = GroupRecord("consumer", 8, None, None, 99, ())
    assert group_metadata_value(empty) == (b"\x00\x03" + _s("consumer") + (8).to_bytes(4, "big")
                                           + b"\xff\xff\xff\xff" + (99).to_bytes(8, "big")
                                           + b"\x00\x00\x00\x00")
    assert read_group_metadata_value(group_metadata_value(empty)) == empty
    # Version 0 (Kafka 0.9): no rebalance timeout (the session timeout stands in), no state
    # timestamp, no group instance id.
    v0 = (b"\x00\x00" + _s("consumer") + (2).to_bytes(4, "big") + _s("range") + _s("a")
          + (1).to_bytes(4, "big") + _s("a") + _s("c") + _s("h") + (10000).to_bytes(4, "big")
          + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x01x")
    assert read_group_metadata_value(v0) == GroupRecord(
        "consumer", 2, "range", "a", -1, (MemberRecord("a", None, "c", "h", 10000, 10000, b"",
                                                       b"x"),))
    with pytest.raises(ValueError):
        read_group_metadata_value(encoded[:-1])  # torn
    with pytest.raises(ValueError):
        read_group_metadata_value(b"\x00\x04" + encoded[2:])  # a flexible version: not ours


def _join_and_sync(c, group: str) -> tuple[str, int]:
    """One member joins and syncs as its own leader: (member id, generation)."""
    joined: list = []
    c.handle_join_group(group, "", None, False, "client", "/127.0.0.1", 30000, 30000,
                        "consumer", [("range", b"subscription")], joined.append)
    assert wait_until(lambda: joined, "JoinGroup answered")[0].error == Errors.NONE, joined
    member_id, generation = joined[0].member_id, joined[0].generation_id
    synced: list = []
    c.handle_sync_group(group, generation, member_id, "consumer", "range",
                        {member_id: b"assignment"}, synced.append)
    result = wait_until(lambda: synced, "SyncGroup answered")[0]  # answered once the group's record is written
    assert (result.error, result.assignment) == (Errors.NONE, b"assignment")
    return member_id, generation


def test_membership_survives_a_restart(tmp_path):
    """The generation and its assignment are a record of ``__consumer_offsets``: a restarted
    coordinator knows the member, which carries on heartbeating (no rejoin)."""
    config = {**_config(tmp_path), "group.initial.rebalance.delay.ms": "0"}
    with Broker(config) as broker:
        member_id, generation = _join_and_sync(broker.group_coordinator, "g")
        lg = broker.log_manager.get_log(OFFSETS_TOPIC, partition_for("g", 5))
        records = [read_group_metadata_value(v) for _, k, v in _records(lg)
                   if read_group_metadata_key(k) == "g"]
        assert [(r.generation_id, r.leader_id, [m.assignment for m in r.members])
                for r in records] == [(generation, member_id, [b"assignment"])]
    with Broker(config) as broker:
        c = broker.group_coordinator
        assert c.handle_heartbeat("g", member_id, generation) == Errors.NONE
        error, summary = c.handle_describe_group("g")
        assert (error, summary["group_state"], summary["protocol_data"]) == (
            Errors.NONE, GroupState.STABLE.value, "range")
        assert [(m["member_id"], m["member_metadata"], m["member_assignment"])
                for m in summary["members"]] == [(member_id, b"subscription", b"assignment")]
        # Leaving empties the group: the empty generation is written too, and loaded as Empty.
        assert c.handle_leave_group("g", [member_id]) == (Errors.NONE, [Errors.NONE])
        deadline = time.monotonic() + 30
        while c.handle_describe_group("g")[1]["group_state"] != GroupState.EMPTY.value:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    with Broker(config) as broker:
        c = broker.group_coordinator
        assert c.handle_heartbeat("g", member_id, generation) == Errors.UNKNOWN_MEMBER_ID
        group = c.group("g")
        assert group is not None
        assert (group.state, group.generation_id) == (GroupState.EMPTY, generation + 1)
        # A tombstone (a null value) removes the group when the partition is loaded.
        stored: list[int] = []
        c.group_manager.store_group("g", None, stored.append)
        assert wait_until(lambda: stored, "the tombstone stored")[0] == Errors.NONE
    with Broker(config) as broker:
        assert broker.group_coordinator.group("g") is None


def test_commit_then_fetch(tmp_path):
    with Broker(_config(tmp_path)) as broker:
        c = broker.group_coordinator
        errors = c.handle_commit_offsets(
            "g", -1, {("t", 0): OffsetAndMetadata(5, 3, "m"), ("t", 1): OffsetAndMetadata(7)})
        assert errors == {("t", 0): Errors.NONE, ("t", 1): Errors.NONE}
        error, fetched = c.handle_fetch_offsets("g", [("t", 0), ("t", 1), ("t", 2)])
        assert error == Errors.NONE
        assert fetched[("t", 0)].offset == 5
        assert fetched[("t", 0)].leader_epoch == 3
        assert fetched[("t", 0)].metadata == "m"
        assert fetched[("t", 0)].commit_timestamp_ms > 0
        assert fetched[("t", 1)].offset == 7
        assert fetched[("t", 2)] is None
        assert c.handle_fetch_offsets("other", [("t", 0)]) == (Errors.NONE, {("t", 0): None})
        assert set(c.handle_fetch_offsets("g")[1]) == {("t", 0), ("t", 1)}
        # The commit is a record of the group's partition of __consumer_offsets.
        lg = broker.log_manager.get_log(OFFSETS_TOPIC, partition_for("g", 5))
        decoded = {read_offset_commit_key(k): read_offset_commit_value(v).offset
                   for _, k, v in _records(lg)}
        assert decoded == {("g", "t", 0): 5, ("g", "t", 1): 7}


def test_offsets_survive_a_restart_latest_wins(tmp_path):
    with Broker(_config(tmp_path)) as broker:
        for offset in range(10):
            broker.group_coordinator.handle_commit_offsets(
                "g", -1, {("t", 0): OffsetAndMetadata(offset)})
    with Broker(_config(tmp_path)) as broker:
        error, fetched = broker.group_coordinator.handle_fetch_offsets("g", [("t", 0)])
        assert (error, fetched[("t", 0)].offset) == (Errors.NONE, 9)
        # Every commit is in the log (no cleaner yet); loading kept the last.
        lg = broker.log_manager.get_log(OFFSETS_TOPIC, partition_for("g", 5))
        assert [read_offset_commit_value(v).offset for _, _, v in _records(lg)] == list(range(10))


def test_refusals_carry_kafkas_error_codes(tmp_path):
    with Broker(_config(tmp_path)) as broker:
        c = broker.group_coordinator
        tp = ("t", 0)
        assert c.handle_commit_offsets("", -1, {tp: OffsetAndMetadata(1)}) == {
            tp: Errors.INVALID_GROUP_ID}
        assert c.handle_commit_offsets("g", 3, {tp: OffsetAndMetadata(1)}) == {
            tp: Errors.ILLEGAL_GENERATION}
        big = OffsetAndMetadata(1, metadata="x" * 4097)
        ok = OffsetAndMetadata(2, metadata="x" * 4096)
        assert c.handle_commit_offsets("g", -1, {tp: big, ("t", 1): ok}) == {
            tp: Errors.OFFSET_METADATA_TOO_LARGE,
            ("t", 1): Errors.NONE,
        }
        assert c.handle_fetch_offsets("g", [tp]) == (Errors.NONE, {tp: None})  # refused: not stored
        assert c.handle_fetch_offsets("g", [("t", 1)])[1][("t", 1)].offset == 2


def test_a_changed_partition_count_does_not_move_groups_away_from_their_commits(tmp_path):
    with Broker(_config(tmp_path)) as broker:
        broker.group_coordinator.handle_commit_offsets(
            "group-x", -1, {("t", 0): OffsetAndMetadata(17)})
    # The topic keeps its 5 partitions; the setting now says 50.
    with Broker({**_config(tmp_path), "offsets.topic.num.partitions": "50"}) as broker:
        manager = broker.group_coordinator.group_manager
        assert manager.partition_count() == 5
        assert manager.partition_for("group-x") == partition_for("group-x", 5)
        error, fetched = broker.group_coordinator.handle_fetch_offsets("group-x", [("t", 0)])
        assert (error, fetched[("t", 0)].offset) == (Errors.NONE, 17)
