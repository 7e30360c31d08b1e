"""kafkacore.compat.confluent's transactional API and AIOProducer, against our broker: what
confluent-kafka's KafkaError says after each kind of failure (retry, abort, give up), and
that the transactions commit and abort what they should, read back by confluent-kafka's
read_committed consumer."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from readback import read_confluent

from kafkacore.compat import confluent
from kafkacore.compat.confluent.aio import AIOProducer
from kafkacore.transaction_manager import ConsumerGroupMetadata

pytest.importorskip("confluent_kafka")


@pytest.fixture
def ours_only(broker):
    if broker.kind != "kafkacore":
        pytest.skip("transactions: run against kafkacore's broker only")
    return broker


def _producer(broker, txn_id=None):
    return confluent.Producer({"bootstrap.servers": broker.bootstrap,
                               "transactional.id": txn_id or f"txn-{uuid.uuid4()}"})


def _failure(call, *args):
    with pytest.raises(confluent.KafkaException) as info:
        call(*args)
    err = info.value.args[0]
    return err, (err.retriable(), err.txn_requires_abort(), err.fatal())


def test_a_call_out_of_order_is_a_state_error(ours_only):
    p = _producer(ours_only)
    err, flags = _failure(p.commit_transaction, 10)
    assert err.code() == confluent.KafkaError._STATE and flags == (False, False, False)
    p.close()


def test_an_abortable_error_aborts_and_the_next_transaction_commits(ours_only, make_topic):
    topic = make_topic(1)
    p = _producer(ours_only)
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"aborted")
    # A consumer generation the group never had (our own ConsumerGroupMetadata): the group
    # coordinator refuses the offsets, and the transaction can only be aborted.
    stale = ConsumerGroupMetadata(f"group-{uuid.uuid4()}", 7, "a-member-that-left")
    err, flags = _failure(p.send_offsets_to_transaction, {(topic, 0): 1}, stale, 30)
    assert err.name() == "ILLEGAL_GENERATION" and flags == (False, True, False)
    err, flags = _failure(p.commit_transaction, 30)
    assert flags == (False, True, False)
    p.abort_transaction(30)
    p.begin_transaction()
    reports = []
    p.produce(topic, b"committed", on_delivery=lambda e, m: reports.append(e))
    p.commit_transaction(30)
    assert reports == [None]  # commit_transaction served the report, as flush() does
    p.close()
    got = read_confluent(ours_only.bootstrap, topic, 1, 1,
                         config={"isolation.level": "read_committed"})
    assert [r.value for r in got] == [b"committed"]


def test_a_fenced_producer_gets_a_fatal_error(ours_only, make_topic):
    topic, txn_id = make_topic(1), f"txn-{uuid.uuid4()}"
    old = _producer(ours_only, txn_id)
    old.init_transactions(30)
    old.begin_transaction()
    old.produce(topic, b"zombie")
    # Acknowledged before the fencing, so that what fails is the commit itself (EndTxn:
    # PRODUCER_FENCED); a produce still in flight would meet the bumped epoch at the partition
    # leader first (INVALID_PRODUCER_EPOCH), which CI saw now and then.
    assert old.flush(30) == 0
    new = _producer(ours_only, txn_id)
    new.init_transactions(30)  # a new epoch: the old producer is fenced
    err, flags = _failure(old.commit_transaction, 30)
    assert err.name() == "PRODUCER_FENCED" and flags == (False, False, True)
    old.close(0)
    new.close()


def test_a_timeout_is_retriable_and_the_same_call_goes_on(ours_only):
    p = _producer(ours_only)
    p.list_topics(timeout=30)
    with ours_only.paused():  # the broker accepts bytes and answers nothing
        err, flags = _failure(p.init_transactions, 0.5)
    assert err.code() == confluent.KafkaError._TIMED_OUT and flags == (True, False, False)
    p.init_transactions(30)
    p.close()


def test_aio_producer_resolves_futures_on_the_loop_and_runs_coroutine_callbacks(
        ours_only, make_topic):
    topic = make_topic(1)

    async def main():
        stats = asyncio.Queue()

        async def stats_cb(text):  # a coroutine, as confluent's asyncio example writes it
            await stats.put(text)

        producer = AIOProducer({"bootstrap.servers": ours_only.bootstrap,
                                "transactional.id": f"txn-{uuid.uuid4()}",
                                "statistics.interval.ms": 100, "stats_cb": stats_cb})
        await producer.init_transactions()
        await producer.begin_transaction()
        futures = [await producer.produce(topic, value=f"v{i}", key=f"k{i}") for i in range(5)]
        await producer.commit_transaction()
        delivered = await asyncio.gather(*futures)
        first_stats = await asyncio.wait_for(stats.get(), 20)
        with pytest.raises(confluent.KafkaException):
            await producer.produce(topic, value=b"x" * 2_000_000)  # past max.request.size
        await producer.close()
        return delivered, first_stats

    delivered, first_stats = asyncio.run(main())
    assert [(m.offset(), m.value()) for m in delivered] == [(i, b"v%d" % i) for i in range(5)]
    assert '"type": "producer"' in first_stats
