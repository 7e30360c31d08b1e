"""The log's side of transactions, in-process: producer state tracks open transactions, the last
stable offset, the per-segment aborted-transaction index (and its rebuild), the end-transaction
markers as kafka-python reads them, the ``__transaction_state`` record layout.
See docs/broker/transactions.rst."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatch

from kafkacore.broker.log import Log, LogConfig
from kafkacore.broker.log.end_transaction_marker import ABORT, COMMIT, control_type
from kafkacore.broker.log.end_transaction_marker import end_transaction_marker as marker
from kafkacore.broker.log.log_validator import analyze
from kafkacore.broker.log.transaction_index import AbortedTxn
from kafkacore.broker.transaction import transaction_log
from kafkacore.broker.transaction.transaction_metadata import (
    TransactionMetadata,
    TransactionState,
)
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.errors import (
    ConcurrentTransactionsError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)


def txn_batch(producer_id: int, epoch: int, sequence: int, n: int = 2,
              transactional: bool = True) -> bytes:
    b = MemoryRecordsBuilder(1024, producer_id=producer_id, producer_epoch=epoch,
                             base_sequence=sequence, is_transactional=transactional)
    for i in range(n):
        b.append(1000 + i, None, b"v%d" % i)
    return bytes(b.build())


def end(lg: Log, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int = 0) -> int:
    return lg.append_as_leader(marker(producer_id, epoch, commit, coordinator_epoch, 1000),
                               from_coordinator=True).first_offset


def test_marker_is_a_control_batch_kafka_python_reads():
    data = marker(7, 3, True, 5, 1234)
    batch = DefaultRecordBatch(data)
    assert batch.is_control_batch and batch.is_transactional and batch.validate_crc()
    assert (batch.producer_id, batch.producer_epoch) == (7, 3)
    [record] = list(batch)
    assert record.key == b"\x00\x00\x00\x01" and record.value == b"\x00\x00\x00\x00\x00\x05"
    [h] = analyze(data, 1 << 20, allow_control=True)
    assert control_type(data, h) == COMMIT
    assert control_type(marker(7, 3, False, 5, 1), h) == ABORT


def test_clients_may_not_write_markers(tmp_path):
    lg = Log(tmp_path)
    with pytest.raises(InvalidRecordError):
        lg.append_as_leader(marker(1, 0, True, 0, 1000))


def test_open_transactions_hold_the_last_stable_offset(tmp_path):
    lg = Log(tmp_path)
    lg.append_as_leader(txn_batch(-1, -1, -1, transactional=False))  # offsets 0-1
    lg.append_as_leader(txn_batch(1, 0, 0))  # producer 1 opens at 2
    lg.append_as_leader(txn_batch(2, 0, 0))  # producer 2 opens at 4
    assert lg.last_stable_offset == 2
    end(lg, 1, 0, commit=True)  # marker at 6
    assert lg.last_stable_offset == 4
    end(lg, 2, 0, commit=False)  # marker at 7
    assert lg.last_stable_offset == lg.high_watermark == 8
    assert lg.collect_aborted_transactions(0, 8) == [AbortedTxn(2, 4, 7, 8)]
    assert lg.collect_aborted_transactions(8, 9) == []


def test_a_marker_not_yet_replicated_holds_the_lso(tmp_path):
    lg = Log(tmp_path)
    lg.append_as_leader(txn_batch(1, 0, 0))  # 0-1
    lg.high_watermark = 2
    end(lg, 1, 0, commit=True)  # marker at 2, not below the HW yet
    assert lg.last_stable_offset == 0
    lg.high_watermark = 3
    assert lg.last_stable_offset == 3


def test_producer_state_checks_of_transactions(tmp_path):
    lg = Log(tmp_path)
    lg.append_as_leader(txn_batch(1, 3, 0))
    with pytest.raises(InvalidTxnStateError):  # a plain batch inside the open transaction
        lg.append_as_leader(txn_batch(1, 3, 2, transactional=False))
    with pytest.raises(InvalidProducerEpochError):  # a marker of an older epoch
        end(lg, 1, 2, commit=True)
    end(lg, 1, 4, commit=False)  # the coordinator fenced epoch 3 and aborted
    with pytest.raises(InvalidProducerEpochError):
        lg.append_as_leader(txn_batch(1, 3, 2))


def test_aborted_index_and_open_transactions_survive_restarts(tmp_path):
    lg = Log(tmp_path, LogConfig(segment_bytes=300))
    for pid in range(1, 6):
        lg.append_as_leader(txn_batch(pid, 0, 0))
        end(lg, pid, 0, commit=pid % 2 == 0)
    lg.append_as_leader(txn_batch(9, 0, 0))  # left open
    aborted = lg.collect_aborted_transactions(0, lg.log_end_offset)
    lso = lg.last_stable_offset
    assert [a.producer_id for a in aborted] == [1, 3, 5] and len(lg.segments) > 2
    lg.close()
    lg = Log(tmp_path, had_clean_shutdown=True)
    assert lg.collect_aborted_transactions(0, lg.log_end_offset) == aborted
    assert lg.last_stable_offset == lso
    lg.close(clean=False)
    # Lost index files are rebuilt from the batches.
    for path in tmp_path.glob("*.txnindex"):
        path.unlink()
    lg = Log(tmp_path)
    assert lg.collect_aborted_transactions(0, lg.log_end_offset) == aborted
    assert lg.last_stable_offset == lso
    # A truncation below a marker drops its entry.
    lg.truncate_to(aborted[-1].last_offset)
    assert lg.collect_aborted_transactions(0, lg.log_end_offset) == aborted[:-1]


def test_transaction_log_record_round_trip():
    metadata = TransactionMetadata("tx", 42, -1, 3, -1, 60000, TransactionState.ONGOING,
                                   {("a", 1), ("a", 0), ("b", 2)}, 1000, 1500)
    transit = metadata.prepare_abort_or_commit(TransactionState.PREPARE_COMMIT, 2000)
    with pytest.raises(ConcurrentTransactionsError):  # one change at a time
        metadata.prepare_abort_or_commit(TransactionState.PREPARE_ABORT, 2000)
    key, value = transaction_log.key_bytes("tx"), transaction_log.value_bytes(transit)
    assert key == b"\x00\x00\x00\x02tx"
    assert value[:17] == (b"\x00\x00" + (42).to_bytes(8, "big") + b"\x00\x03"
                          + (60000).to_bytes(4, "big") + b"\x02")
    assert transaction_log.read_key(key) == "tx"
    read = transaction_log.read_value(value)
    assert read.state == TransactionState.PREPARE_COMMIT
    assert read.topic_partitions == frozenset({("a", 1), ("a", 0), ("b", 2)})
    assert (read.producer_id, read.producer_epoch, read.txn_start_timestamp,
            read.txn_last_update_timestamp) == (42, 3, 1000, 2000)
    metadata.complete_transition(transit)
    with pytest.raises(InvalidTxnStateError):  # PrepareCommit cannot go back to Ongoing
        metadata.prepare_add_partitions({("c", 0)}, 3000)


def test_a_zombie_coordinators_marker_is_fenced(tmp_path):
    lg = Log(tmp_path)
    lg.append_as_leader(txn_batch(1, 0, 0))
    end(lg, 1, 0, commit=True, coordinator_epoch=5)
    lg.append_as_leader(txn_batch(1, 0, 2))
    with pytest.raises(TransactionCoordinatorFencedError):  # the old coordinator, epoch 4
        end(lg, 1, 0, commit=False, coordinator_epoch=4)
    assert lg.last_stable_offset == 3  # still open
    lg.close()
    lg = Log(tmp_path, had_clean_shutdown=True)  # the epoch is in the snapshot
    assert lg.producer_state.last_entry(1).coordinator_epoch == 5
    with pytest.raises(TransactionCoordinatorFencedError):
        end(lg, 1, 0, commit=False, coordinator_epoch=4)
    end(lg, 1, 0, commit=False, coordinator_epoch=-1)  # an administrator's abort
    assert lg.last_stable_offset == lg.high_watermark


def test_an_exhausted_epoch_moves_to_the_next_producer_id_through_the_log():
    """Transaction version 2 at the last epoch: PrepareCommit is written with the epoch bumped
    once more and the next producer id (version 1 of the value, its tagged fields); a new
    coordinator reading it completes the move to that id at epoch 0."""
    from kafkacore.broker.transaction.transaction_metadata import MAX_PRODUCER_EPOCH

    metadata = TransactionMetadata("tx", 42, -1, MAX_PRODUCER_EPOCH, -1, 60000,
                                   TransactionState.ONGOING, {("a", 0)}, 1000, 1500)
    transit = metadata.prepare_abort_or_commit(TransactionState.PREPARE_COMMIT, 2000,
                                               bump_epoch=True, next_producer_id=43)
    value = transaction_log.value_bytes(transit)
    assert value[:2] == b"\x00\x01"
    read = transaction_log.read_value(value)
    assert (read.producer_id, read.producer_epoch, read.next_producer_id,
            read.client_transaction_version) == (42, MAX_PRODUCER_EPOCH + 1, 43, 2)
    successor = TransactionMetadata.from_transit("tx", read)
    done = successor.prepare_complete(3000)
    successor.complete_transition(done)
    read = transaction_log.read_value(transaction_log.value_bytes(done))
    assert (read.producer_id, read.last_producer_id, read.producer_epoch,
            read.next_producer_id) == (43, 42, 0, -1)
    assert (successor.producer_id, successor.last_producer_id,
            successor.producer_epoch) == (43, 42, 0)


def test_a_new_logs_transaction_index_is_written_at_its_first_flush(tmp_path):
    """A new partition creates one file fewer: its first segment's index waits for an abort or a
    flush; a crash before either leaves no file, and the reopened log is replayed whole."""
    d = tmp_path / "t-0"
    lg = Log(d)
    assert not list(d.glob("*.txnindex"))
    lg.append_as_leader(txn_batch(1, 0, 0))
    end(lg, 1, 0, commit=True)
    lg.append_as_leader(txn_batch(2, 0, 0))  # left open
    lso = lg.last_stable_offset
    assert not list(d.glob("*.txnindex"))
    lg.close(clean=False)  # a crash
    lg = Log(d)
    assert lg.segments[0].txn_index.existed is False  # missing: rebuilt from the batches
    assert lg.last_stable_offset == lso
    end(lg, 2, 0, commit=False)
    aborted = lg.collect_aborted_transactions(0, lg.log_end_offset)
    assert [a.producer_id for a in aborted] == [2]
    lg.close()
    lg = Log(d, had_clean_shutdown=True)
    assert lg.segments[0].txn_index.existed is True
    assert lg.collect_aborted_transactions(0, lg.log_end_offset) == aborted
    lg.close()
    fresh = Log(tmp_path / "t-1")
    fresh.close()
    assert [p.name for p in (tmp_path / "t-1").glob("*.txnindex")] == ["0" * 20 + ".txnindex"]
