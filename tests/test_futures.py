"""send()'s futures in the standard library's hands, against a real broker.

``concurrent.futures.wait``/``as_completed``, ``asyncio.wrap_future``, ``await`` and kafka-python's
``add_callback``/``add_errback`` are given the futures ``send()`` returns, no bridge in between;
what they report is checked against what a client we did not write reads back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures

from readback import read_confluent

from kafkacore import KafkaProducer


def test_wait_and_as_completed_on_sent_records(bootstrap, make_topic):
    topic = make_topic(partitions=2)
    with KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20) as producer:
        futures = [producer.send(topic, b"v%d" % i, key=b"k%d" % i) for i in range(200)]
        done, pending = concurrent.futures.wait(futures, timeout=60)
        assert not pending and done == set(futures)
        seen = [f.result(0) for f in concurrent.futures.as_completed(futures, timeout=60)]
    assert len(seen) == 200
    offsets = {(m.partition, m.offset) for m in seen}
    assert len(offsets) == 200  # every record its own place

    consumed = read_confluent(bootstrap, topic, 2, 200)
    by_place = {(c.partition, c.offset): c.value for c in consumed}
    for i, future in enumerate(futures):
        metadata = future.result(0)
        assert by_place[metadata.partition, metadata.offset] == b"v%d" % i


def test_asyncio_wrap_future_gather_and_await(bootstrap, make_topic):
    topic = make_topic(partitions=1)

    async def main():
        with KafkaProducer(bootstrap_servers=bootstrap) as producer:
            wrapped = [asyncio.wrap_future(producer.send(topic, b"w%d" % i)) for i in range(50)]
            gathered = await asyncio.gather(*wrapped)
            awaited = await producer.send(topic, b"last")
        return gathered, awaited

    gathered, awaited = asyncio.run(main())
    assert [m.offset for m in gathered] == list(range(50))
    assert awaited.offset == 50
    consumed = read_confluent(bootstrap, topic, 1, 51)
    assert [c.value for c in sorted(consumed, key=lambda c: c.offset)] == (
        [b"w%d" % i for i in range(50)] + [b"last"])


def test_add_callback_and_add_errback_on_a_real_send(bootstrap, make_topic):
    topic = make_topic(partitions=1)
    acked, failed = [], []
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        future = producer.send(topic, b"one")
        future.add_callback(acked.append).add_errback(failed.append)
        producer.flush(60)
        assert future.done()
    assert failed == [] and [m.offset for m in acked] == [0]
    assert acked[0] == future.result(0)


def test_errback_gets_the_failure_of_a_record_closed_away(bootstrap, make_topic):
    # close(0) fails what is still queued (a long linger keeps it queued): errbacks run.
    topic = make_topic(partitions=1)
    acked, failed = [], []
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=600_000)
    producer.partitions_for(topic)
    future = producer.send(topic, b"never")
    future.add_callback(acked.append).add_errback(failed.append)
    producer.close(0)
    done, _ = concurrent.futures.wait([future], timeout=60)
    assert done == {future}
    assert acked == [] and failed == [future.exception(0)] and failed[0] is not None


def _slow(into):
    """A callback that takes a while, so that flush() returning before it ran would show."""
    import time

    def callback(result):
        time.sleep(0.05)
        into.append(result)

    return callback


def test_flush_waits_for_add_callback_and_add_errback(broker, make_topic):
    """kafka-python's flush() returns once every add_callback/add_errback of its records ran:
    5 of 5, acknowledged or failed."""
    topic = make_topic(partitions=1)
    acked, failed = [], []
    with KafkaProducer(bootstrap_servers=broker.bootstrap) as producer:
        for i in range(5):
            producer.send(topic, b"v%d" % i).add_callback(_slow(acked)).add_errback(
                _slow(failed))
        producer.flush(60)
        assert (len(acked), failed) == (5, [])
    # Failures too: records that expire while the broker does not answer.
    with KafkaProducer(bootstrap_servers=broker.bootstrap, request_timeout_ms=300,
                       delivery_timeout_ms=600, linger_ms=0, retries=0,
                       enable_idempotence=False) as producer:
        producer.partitions_for(topic)
        with broker.paused():
            for i in range(5):
                producer.send(topic, b"late%d" % i).add_callback(_slow(acked)).add_errback(
                    _slow(failed))
            producer.flush(60)
            assert len(failed) == 5 and len(acked) == 5
