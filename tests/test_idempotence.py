"""Idempotence on the wire: producer id, epoch and per-partition sequence numbers.

These tests run against both session brokers (tests/conftest.py): tansu and our own.  They read
back what the producer put in each batch header, as the broker stores it, and they make the
producer send a batch twice (a request retried after a timeout) to check it is stored once.
"""

from __future__ import annotations

import time

from readback import fetch_batches, read_confluent

from kafkacore import KafkaProducer


def test_batches_carry_one_producer_id_and_contiguous_sequences(bootstrap, make_topic):
    topic = make_topic(partitions=2)
    with KafkaProducer(bootstrap_servers=bootstrap, batch_size=4096, linger_ms=1) as producer:
        futures = [producer.send(topic, b"v%05d" % i, key=b"k%d" % (i % 7)) for i in range(3000)]
        producer.flush(timeout=60)
    assert all(f.exception() is None for f in futures)
    producer_ids = set()
    for partition in (0, 1):
        batches = fetch_batches(bootstrap, topic, partition)
        assert len(batches) > 3  # small batches: many of them
        expected_sequence = 0
        for batch in batches:
            producer_ids.add((batch.producer_id, batch.producer_epoch))
            assert batch.base_sequence == expected_sequence
            expected_sequence += batch.last_offset_delta + 1
        assert expected_sequence == sum(1 for f in futures if f.result().partition == partition)
    [(producer_id, epoch)] = producer_ids
    assert producer_id >= 0 and epoch >= 0


def test_without_idempotence_batches_have_no_producer_id(bootstrap, make_topic):
    topic = make_topic(partitions=1)
    with KafkaProducer(
        bootstrap_servers=bootstrap, enable_idempotence=False, acks=1
    ) as producer:
        producer.send(topic, b"plain").get(timeout=30)
    [batch] = fetch_batches(bootstrap, topic, 0)
    assert (batch.producer_id, batch.base_sequence) == (-1, -1)


def test_a_request_retried_after_a_timeout_is_written_once(broker, make_topic):
    """The duplicate a retry makes, on purpose: freeze the broker until the producer's request
    times out and it sends the batch again, so both copies wait in the frozen broker's sockets.
    Our broker answers the second with the first's offsets (docs/broker/idempotence.rst); tansu
    answers DUPLICATE_SEQUENCE_NUMBER.  Either way every record is stored once, in order."""
    topic = make_topic(partitions=1)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, request_timeout_ms=1000, retry_backoff_ms=50,
        delivery_timeout_ms=120_000, linger_ms=0, max_in_flight_requests_per_connection=1,
    )
    try:
        producer.send(topic, b"before").get(timeout=30)
        retries_before = producer.metrics()["record-retry-rate"]
        with broker.paused():
            futures = [producer.send(topic, b"frozen-%d" % i) for i in range(20)]
            deadline = time.monotonic() + 30
            # Observe the retry: counted once the first request timed out, then sent again.
            while (producer.metrics()["record-retry-rate"] <= retries_before
                   or not producer.metrics()["requests-in-flight"]):
                assert time.monotonic() < deadline, "the producer never retried"
                time.sleep(0.02)
        producer.flush(timeout=60)
        metas = [f.get(timeout=30) for f in futures]
        after = producer.send(topic, b"after").get(timeout=30)
    finally:
        producer.close(10)
    assert all(f.exception() is None for f in futures)
    values = [r.value for r in read_confluent(broker.bootstrap, topic, 1, expected=22)]
    assert values == [b"before", *(b"frozen-%d" % i for i in range(20)), b"after"]
    assert after.offset == 21  # nothing was written twice
    if broker.kind == "kafkacore":  # the original offsets, not DUPLICATE_SEQUENCE_NUMBER's -1
        assert [m.offset for m in metas] == list(range(1, 21))
