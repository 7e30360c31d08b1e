"""The idempotent producer's bookkeeping (``TransactionManager``), rule by rule, on real batches.

The end-to-end proofs are in tests/test_epoch_bump.py; these pin down each KIP-360 rule alone.
"""

from __future__ import annotations

import pytest

from kafkacore.accumulator import RecordAccumulator
from kafkacore.core import BufferPool
from kafkacore.transaction_manager import MAX_EPOCH, TransactionManager

TP = ("orders", 0)


def setup(n_batches: int = 3):
    tm = TransactionManager()
    tm.set_producer_id(4000, 0)
    acc = RecordAccumulator(
        batch_size=320, compression="none", compression_level=None, linger_ms=0,
        retry_backoff_ms=0, retry_backoff_max_ms=0, delivery_timeout_ms=120_000,
        pool=BufferPool(1 << 20, 320), transaction_manager=tm,
    )
    for i in range(n_batches * 2):  # two 100-byte records per 320-byte batch
        acc.append(TP[0], TP[1], 0, None, b"v%d" % i + b"." * 98, None, None, 1000, 0)
    batches = list(acc.batches.get(TP).batches)
    assert len(batches) == n_batches
    return tm, acc, batches


def drain_one(tm, acc, batch):
    """What drain does to the head batch: number it, close it, take it out, put it in flight."""
    assert not tm.should_stop_drain(TP, batch)
    if batch.base_sequence < 0:
        tm.assign_sequence(TP, batch)
    batch.close()
    acc.batches.get(TP).batches.remove(batch)
    tm.add_in_flight(TP, batch)


def test_sequences_are_contiguous_and_acknowledged_in_order():
    tm, acc, (a, b, c) = setup()
    for batch in (a, b, c):
        drain_one(tm, acc, batch)
    assert [x.base_sequence for x in (a, b, c)] == [0, 2, 4]
    assert tm.is_waiting_for_earlier(TP, b)  # a not acknowledged yet
    tm.remove_in_flight(TP, a)
    tm.acknowledged(TP, a)
    assert not tm.is_waiting_for_earlier(TP, b)


def test_an_expired_batch_holds_new_batches_until_the_doubt_is_settled():
    tm, acc, (a, b, c) = setup()
    drain_one(tm, acc, a)
    drain_one(tm, acc, b)
    tm.remove_in_flight(TP, a)
    tm.mark_unresolved(TP, a)  # a expired: written or not?
    assert tm.has_unresolved(TP)
    assert tm.should_stop_drain(TP, c)  # b still in flight: c waits
    tm.remove_in_flight(TP, b)
    tm.acknowledged(TP, b)  # b written right after a: a was written too
    assert not tm.should_stop_drain(TP, c)  # settled without a bump
    assert not tm.has_unresolved(TP) and tm.partitions_to_rewrite() == ([], False)


def test_an_expired_batch_nobody_acknowledged_starts_the_partition_over():
    tm, acc, (a, b, c) = setup()
    drain_one(tm, acc, a)
    tm.remove_in_flight(TP, a)
    tm.mark_unresolved(TP, a)
    assert tm.should_stop_drain(TP, b)  # nothing in flight, nothing acknowledged: a gap
    assert tm.partitions_to_rewrite() == ([TP], True)  # a new epoch first
    tm.set_producer_id(4000, 1)  # the bump's answer
    assert tm.partitions_to_rewrite() == ([TP], False)
    acc.rewrite_sequences(TP)
    drain_one(tm, acc, b)
    assert (b.producer_epoch, b.base_sequence) == (1, 0)


def test_out_of_order_behind_an_elder_is_retried_without_a_bump():
    tm, acc, (a, b, _c) = setup()
    drain_one(tm, acc, a)
    drain_one(tm, acc, b)
    assert tm.can_retry_sequence_error(TP, b, unknown_producer_id=False)
    assert tm.partitions_to_rewrite() == ([], False)


def test_out_of_order_for_the_expected_batch_is_a_gap():
    tm, acc, (a, _b, _c) = setup()
    drain_one(tm, acc, a)
    assert tm.can_retry_sequence_error(TP, a, unknown_producer_id=False)
    assert tm.should_stop_drain(TP, a)  # nothing goes to the partition until it starts over
    tm.remove_in_flight(TP, a)
    assert tm.partitions_to_rewrite() == ([TP], True)


def test_retried_batches_are_renumbered_from_zero_under_the_new_epoch():
    tm, acc, (a, b, c) = setup()
    for batch in (a, b):
        drain_one(tm, acc, batch)
    for batch in (a, b):  # UNKNOWN_PRODUCER_ID for both, queued again in sequence order
        assert tm.can_retry_sequence_error(TP, batch, unknown_producer_id=True)
        tm.remove_in_flight(TP, batch)
        acc.reenqueue(batch, 0)
    tm.set_producer_id(4000, 1)
    acc.rewrite_sequences(TP)
    assert [(x.producer_epoch, x.base_sequence) for x in (a, b)] == [(1, 0), (1, 2)]
    drain_one(tm, acc, a)
    assert tm.should_stop_drain(TP, b)  # retries go one at a time, oldest first
    tm.remove_in_flight(TP, a)
    tm.acknowledged(TP, a)
    drain_one(tm, acc, b)
    drain_one(tm, acc, c)  # a new batch may follow a retry in flight
    assert (c.producer_epoch, c.base_sequence) == (1, 4)


def test_other_partitions_take_the_new_epoch_once_their_in_flight_batches_are_done():
    tm, acc, (a, b, _c) = setup()
    drain_one(tm, acc, a)
    tm.set_producer_id(4000, 1)  # bumped for another partition
    assert tm.should_stop_drain(TP, b)  # a is in flight under epoch 0: b must not overtake it
    tm.remove_in_flight(TP, a)
    tm.acknowledged(TP, a)
    drain_one(tm, acc, b)
    assert (b.producer_epoch, b.base_sequence) == (1, 0)


def test_an_idempotent_producer_raises_its_own_epoch():
    """Java's bumpIdempotentProducerEpoch: the same producer id, the next epoch (a broker then
    fences the old epoch's late batches); InitProducerId only when the epoch is exhausted or a
    broker forgot the id."""
    tm, acc, (a, b, _c) = setup()
    drain_one(tm, acc, a)
    tm.remove_in_flight(TP, a)
    tm.mark_unresolved(TP, a)
    assert tm.should_stop_drain(TP, b) and tm.partitions_to_rewrite() == ([TP], True)
    assert tm.bump_idempotent_epoch()
    assert (tm.producer_id, tm.producer_epoch) == (4000, 1)
    assert tm.partitions_to_rewrite() == ([TP], False)
    acc.rewrite_sequences(TP)
    drain_one(tm, acc, b)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (4000, 1, 0)

    tm.set_producer_id(4000, MAX_EPOCH)
    assert not tm.bump_idempotent_epoch()  # exhausted: a new producer id
    assert not TransactionManager("txn").bump_idempotent_epoch()  # the coordinator's to bump


def test_a_broker_that_forgot_us_or_refuses_a_raised_epoch_is_asked_for_one():
    tm, acc, (a, _b, _c) = setup()
    drain_one(tm, acc, a)
    assert tm.can_retry_sequence_error(TP, a, unknown_producer_id=True)
    tm.remove_in_flight(TP, a)
    assert not tm.bump_idempotent_epoch()  # it forgot us: ask InitProducerId
    tm.set_producer_id(4001, 0)  # a new id, which the broker knows ...
    assert tm.bump_idempotent_epoch()  # ... so the next start-over is ours again

    tm, acc, (a, b, _c) = setup()
    drain_one(tm, acc, a)
    tm.remove_in_flight(TP, a)
    tm.mark_unresolved(TP, a)
    assert tm.should_stop_drain(TP, b)
    assert tm.bump_idempotent_epoch()
    acc.rewrite_sequences(TP)
    drain_one(tm, acc, b)
    assert (b.producer_id, b.producer_epoch) == (4000, 1)
    assert tm.can_retry_fenced_raised_epoch(TP, b)  # refused (tansu): retried ...
    tm.remove_in_flight(TP, b)
    assert tm.partitions_to_rewrite() == ([TP], True)
    assert not tm.bump_idempotent_epoch()  # ... once InitProducerId gave a new identity

    tm, acc, (a, _b, _c) = setup()
    drain_one(tm, acc, a)  # an identity from InitProducerId: a fencing is the batch's error
    assert not tm.can_retry_fenced_raised_epoch(TP, a)


def test_a_bump_asks_for_our_epoch_or_a_new_id():
    tm = TransactionManager()
    tm.set_producer_id(4000, 3)
    assert tm.bump_request(supports_bump=True) == (4000, 3)
    assert tm.bump_request(supports_bump=False) == (-1, -1)
    tm.set_producer_id(4000, MAX_EPOCH)  # exhausted: a new producer id
    assert tm.bump_request(supports_bump=True) == (-1, -1)


def test_a_live_view_of_a_batch_postpones_its_renumbering():
    """A batch's header is never rewritten under a live view of its bytes (a request could be
    writing them): the rewrite refuses, the partition stays marked, and goes through later."""
    tm, acc, (a, _b, _c) = setup()
    drain_one(tm, acc, a)
    assert tm.can_retry_sequence_error(TP, a, unknown_producer_id=True)
    tm.remove_in_flight(TP, a)
    acc.reenqueue(a, 0)
    tm.set_producer_id(4000, 1)
    view = a.records()
    with pytest.raises(BufferError):
        acc.rewrite_sequences(TP)
    assert tm.partitions_to_rewrite() == ([TP], False)  # still to do
    view.release()
    acc.rewrite_sequences(TP)
    assert (a.producer_epoch, a.base_sequence) == (1, 0)
    assert tm.partitions_to_rewrite() == ([], False)
