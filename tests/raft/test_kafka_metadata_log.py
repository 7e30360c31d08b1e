"""``KafkaMetadataLog``: the quorum's log on disk keeps what a voter had across a restart."""

from __future__ import annotations

import pytest

from kafkacore.errors import IllegalStateError, KafkaStorageError
from kafkacore.raft import FileQuorumStateStore, KafkaRaftClient, RaftConfig
from kafkacore.raft.kafka_metadata_log import KafkaMetadataLog, snapshot_file_name
from kafkacore.raft.raft_log import LeaderChangeMessage, LogEntry
from kafkacore.raft.raw_snapshot_reader import OffsetAndEpoch, RawSnapshotReader, encode_snapshot


def test_entries_and_a_truncation_survive_a_restart(tmp_path):
    log = KafkaMetadataLog(tmp_path)
    change = LeaderChangeMessage(1, (1, 2, 3), (1, 2))
    assert log.append_as_leader([change, b"a", b"b"], 1) == 2
    log.append_as_follower([LogEntry(3, 2, b"c"), LogEntry(4, 2, b"d")])
    log.truncate_to(4)  # a follower cut back where its log left the leader's
    log.append_as_follower([LogEntry(4, 3, b"e")])
    log.close()

    again = KafkaMetadataLog(tmp_path)
    assert [(e.offset, e.epoch, e.value) for e in again.entries] == [
        (0, 1, b""), (1, 1, b"a"), (2, 1, b"b"), (3, 2, b"c"), (4, 3, b"e")]
    assert again.entries[0].leader_change == change
    assert again.end_offset_for_epoch(2) == (4, 2)
    # The high watermark is not kept: a restarted voter learns it from the leader.
    assert again.high_watermark == 0
    again.close()


def test_a_torn_last_entry_is_cut_off_and_damage_before_it_refused(tmp_path):
    log = KafkaMetadataLog(tmp_path)
    log.append_as_leader([b"a", b"b"], 1)
    log.close()
    with open(log.path, "ab") as f:
        f.write(b"0000 {\"offset\": 2")  # a crash in the middle of a write
    torn = KafkaMetadataLog(tmp_path)
    assert [e.value for e in torn.entries] == [b"a", b"b"]
    torn.append_as_leader([b"c"], 1)  # written where the torn line was
    torn.close()
    assert [e.value for e in KafkaMetadataLog(tmp_path).entries] == [b"a", b"b", b"c"]

    data = log.path.read_bytes()
    log.path.write_bytes(data[:5] + b"x" + data[6:])  # the first line damaged
    with pytest.raises(KafkaStorageError, match="damaged"):
        KafkaMetadataLog(tmp_path)


def test_committed_entries_are_never_truncated(tmp_path):
    log = KafkaMetadataLog(tmp_path)
    log.append_as_leader([b"a", b"b"], 1)
    log.update_high_watermark(2)
    with pytest.raises(IllegalStateError):
        log.truncate_to(1)
    log.close()


def test_a_restarted_voter_keeps_its_log_and_its_epoch(tmp_path):
    """A quorum of one on disk: it elects itself, appends, restarts, and is back in a later
    epoch with its entries, never reusing an epoch it was in."""
    def start(now_ms: int) -> KafkaRaftClient:
        return KafkaRaftClient(1, [1], KafkaMetadataLog(tmp_path), FileQuorumStateStore(tmp_path),
                               __import__("random").Random(1), now_ms, RaftConfig())

    client = start(0)
    client.poll(10_000)  # the election timeout passed: it stands, and wins alone
    assert client.is_leader()
    first_epoch = client.epoch
    client.append([b"x"], 10_001)
    client.log.close()  # type: ignore[attr-defined]

    again = start(20_000)
    assert [e.value for e in again.log.read(0, 10)][-1] == b"x"
    again.poll(40_000)
    assert again.is_leader() and again.epoch > first_epoch


def test_snapshots_and_the_log_start_survive_a_restart(tmp_path):
    """A snapshot is a ``.checkpoint`` file; the entries before it are deleted from the file;
    a restart starts the log at the snapshot, with what the snapshot holds committed."""
    log = KafkaMetadataLog(tmp_path)
    log.append_as_leader([b"a", b"b", b"c"], 1)
    log.append_as_leader([b"d", b"e"], 2)
    log.update_high_watermark(4)
    with pytest.raises(IllegalStateError, match="past the high watermark"):
        log.create_new_snapshot(OffsetAndEpoch(5, 2), [b"too far"])
    with pytest.raises(IllegalStateError, match="epoch"):
        log.create_new_snapshot(OffsetAndEpoch(4, 1), [b"wrong epoch"])
    log.create_new_snapshot(OffsetAndEpoch(4, 2), [b"state at 4"])
    assert log.delete_before_snapshot(OffsetAndEpoch(4, 2))
    assert (log.log_start_offset, log.end_offset()) == (4, 5)
    assert log.end_offset_for_epoch(1) == (0, 0) and log.end_offset_for_epoch(2) == (5, 2)
    log.append_as_leader([b"f"], 3)
    log.close()

    again = KafkaMetadataLog(tmp_path)
    assert (again.log_start_offset, again.end_offset(), again.high_watermark) == (4, 6, 4)
    assert [(e.offset, e.value) for e in again.read(0, 10)] == [(4, b"e"), (5, b"f")]
    assert again.snapshot_ids() == [OffsetAndEpoch(4, 2)]
    reader = again.read_snapshot(OffsetAndEpoch(4, 2))
    assert reader is not None and reader.records() == [b"state at 4"]
    assert again.last_fetched_epoch() == 3 and again.epoch_at(4) == 2
    again.close()


def test_a_snapshot_from_the_leader_replaces_the_log_even_across_a_crash(tmp_path):
    log = KafkaMetadataLog(tmp_path)
    log.append_as_leader([b"a", b"b"], 1)
    data = encode_snapshot([b"the leader's state at 10"])
    log.install_snapshot(RawSnapshotReader(OffsetAndEpoch(10, 3), data))
    assert (log.log_start_offset, log.end_offset(), log.high_watermark) == (10, 10, 10)
    assert log.last_fetched_epoch() == 3
    log.append_as_follower([LogEntry(10, 3, b"k")])
    log.close()
    assert [e.offset for e in KafkaMetadataLog(tmp_path).read(0, 10)] == [10]

    # A crash after the snapshot was stored, before the log was emptied: the next start
    # finishes the install.
    other = tmp_path / "other"
    crashed = KafkaMetadataLog(other)
    crashed.append_as_leader([b"a", b"b"], 1)
    crashed.close()
    (crashed.directory / snapshot_file_name(OffsetAndEpoch(7, 2))).write_bytes(data)
    restarted = KafkaMetadataLog(other)
    assert (restarted.log_start_offset, restarted.end_offset()) == (7, 7)
    restarted.close()
    # A damaged snapshot is refused, not half used.
    (crashed.directory / snapshot_file_name(OffsetAndEpoch(7, 2))).write_bytes(b"x" + data)
    with pytest.raises(KafkaStorageError):
        KafkaMetadataLog(other)
