"""Reading a topic back with consumers we did not write: confluent-kafka and kafka-python.

Both read every partition from offset 0 with ``assign()`` (consumer groups are slow on tansu, see
TESTING.md) until they hold ``expected`` records or the bound runs out, and return the records in a
common shape so tests can compare them field by field.
"""

from __future__ import annotations

import multiprocessing
import time
from typing import NamedTuple


class Consumed(NamedTuple):
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple  # ((str, bytes | None), ...)


def read_confluent(bootstrap, topic, partitions, expected, timeout_s=60.0) -> list[Consumed]:
    """Read with confluent-kafka in a child process.

    librdkafka's objects have crashed test processes during garbage collection while other
    threads ran (confluent-kafka-python issue #1761); in a child, such a crash fails one read
    (loudly) instead of taking the whole test session with it.
    """
    context = multiprocessing.get_context("forkserver")  # children fork from a clean server
    with context.Pool(1) as pool:
        rows = pool.apply(
            _read_confluent_here, (bootstrap, topic, partitions, expected, timeout_s)
        )
    return [Consumed(*row) for row in rows]


def _read_confluent_here(bootstrap, topic, partitions, expected, timeout_s):
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kafkacore-tests",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[Consumed] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for m in consumer.consume(5000, timeout=0.5):
                if m.error():
                    raise AssertionError(f"confluent-kafka consumer error: {m.error()}")
                headers = tuple((k, v) for k, v in (m.headers() or ()))
                out.append(
                    Consumed(m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value(), headers)
                )
        # Anything beyond what we expect is a duplicate: give it a moment to show up.
        for m in consumer.consume(5000, timeout=0.5):
            if not m.error():
                headers = tuple((k, v) for k, v in (m.headers() or ()))
                out.append(
                    Consumed(m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value(), headers)
                )
    finally:
        consumer.close()
    return [tuple(c) for c in out]


def read_kafka_python(bootstrap, topic, partitions, expected, timeout_s=60.0) -> list[Consumed]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
        auto_offset_reset="earliest",
    )
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    out: list[Consumed] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for tp, messages in consumer.poll(timeout_ms=500, max_records=10000).items():
                for m in messages:
                    headers = tuple((k, v) for k, v in (m.headers or ()))
                    out.append(Consumed(tp.partition, m.offset, m.timestamp, m.key, m.value, headers))
        for tp, messages in consumer.poll(timeout_ms=500).items():
            for m in messages:
                headers = tuple((k, v) for k, v in (m.headers or ()))
                out.append(Consumed(tp.partition, m.offset, m.timestamp, m.key, m.value, headers))
    finally:
        consumer.close()
    return out


def fetch_batches(bootstrap, topic, partition, timeout_s=30.0) -> list:
    """The partition's record batches as the broker stores them, decoded by kafka-python's
    reader (``DefaultRecordBatch``): producer id, epoch and base sequence included."""
    from kafka.record.memory_records import MemoryRecords

    from kafkacore.testing import fetch_record_batches

    batches = []
    for raw in fetch_record_batches(bootstrap, topic, partition, timeout_ms=int(timeout_s * 1000)):
        records = MemoryRecords(raw)
        batches.append(records.next_batch())
        assert not records.has_next()
    return batches
