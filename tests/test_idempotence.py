"""Idempotence on the wire: producer id, epoch and per-partition sequence numbers.

tansu hands out producer ids but does not check sequences (TESTING.md), so it cannot show that a
broker drops duplicates.  What we can show is what the producer puts in each batch header: read
the batches back as the broker stores them and decode them with kafka-python's reader.
"""

from __future__ import annotations

import pytest
from readback import fetch_batches

from kafkacore import KafkaProducer

pytestmark = pytest.mark.broker


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
