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


def read_confluent(bootstrap, topic, partitions, expected, timeout_s=60.0,
                   config=None) -> list[Consumed]:
    """Read with confluent-kafka in a child process.

    librdkafka's objects have crashed test processes during garbage collection while other
    threads ran (confluent-kafka-python issue #1761); in a child, such a crash fails one read
    (loudly) instead of taking the whole test session with it.  ``config``: more librdkafka
    settings (``security.protocol``, ``ssl.ca.location``, ``sasl.*``).
    """
    context = multiprocessing.get_context("forkserver")  # children fork from a clean server
    with context.Pool(1) as pool:
        rows = pool.apply(
            _read_confluent_here, (bootstrap, topic, partitions, expected, timeout_s, config)
        )
    return [Consumed(*row) for row in rows]


def _read_confluent_here(bootstrap, topic, partitions, expected, timeout_s, config=None):
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kafkacore-tests",
            "enable.auto.commit": False,
            **(config or {}),
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


def read_kafka_python(bootstrap, topic, partitions, expected, timeout_s=60.0,
                      config=None) -> list[Consumed]:
    """``config``: more KafkaConsumer arguments (``security_protocol``, ``ssl_cafile``, ...)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
        auto_offset_reset="earliest", **(config or {}),
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


def produce_confluent(bootstrap, topic, values, config=None, timeout_s=60.0, spread_s=0.0):
    """Produce ``values`` with confluent-kafka in a child process (see :func:`read_confluent`).

    Returns ``(delivered, errors)``: the (partition, offset) of each delivered record, in the
    order of ``values``, and the text of every error librdkafka reported (delivery reports and
    the error callback, e.g. an authentication failure).  With ``spread_s`` the records are
    produced at an even pace over that many seconds rather than at once.
    """
    context = multiprocessing.get_context("forkserver")
    with context.Pool(1) as pool:
        return pool.apply(_produce_confluent_here,
                          (bootstrap, topic, values, config, timeout_s, spread_s))


def _produce_confluent_here(bootstrap, topic, values, config, timeout_s, spread_s=0.0):
    from confluent_kafka import KafkaException, Producer

    errors: list[str] = []
    delivered: dict[int, tuple[int, int]] = {}

    def on_error(err):
        errors.append(f"{err.name()}: {err.str()}")
        if err.fatal() or err.name() in ("_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED"):
            raise KafkaException(err)

    producer = Producer({"bootstrap.servers": bootstrap, "error_cb": on_error,
                         "message.timeout.ms": int(timeout_s * 1000), **(config or {})})
    for i, value in enumerate(values):
        def report(err, msg, i=i):
            if err is not None:
                errors.append(f"{err.name()}: {err.str()}")
            else:
                delivered[i] = (msg.partition(), msg.offset())
        producer.produce(topic, value, on_delivery=report)
        if spread_s:
            producer.poll(0)
            time.sleep(spread_s / len(values))
    deadline = time.monotonic() + timeout_s
    try:
        while producer.flush(0.5) and time.monotonic() < deadline:
            if any("_AUTHENTICATION" in e or "SASL_AUTHENTICATION" in e for e in errors):
                break
    except KafkaException:
        pass
    return [delivered.get(i) for i in range(len(values))], errors


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
