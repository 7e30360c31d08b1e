"""send() with confluent-kafka's on_delivery(err, msg) and kafka-python's timestamp_ms."""

from __future__ import annotations

import threading

import pytest
from readback import read_confluent

from kafkacore import KafkaProducer, admin, errors
from kafkacore.delivery import OFFSET_INVALID
from kafkacore.testing import LocalBroker


def test_on_delivery_gets_error_first_and_a_confluent_style_message(bootstrap, make_topic):
    topic = make_topic(1)
    seen = []
    with KafkaProducer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(3):
            producer.send(topic, b"v%d" % i, key=b"k", timestamp_ms=1_700_000_000_000 + i,
                          on_delivery=lambda err, msg: seen.append((err, msg)))
        producer.flush()
    assert [err for err, _ in seen] == [None, None, None]
    assert [(m.topic(), m.partition(), m.offset(), m.key(), m.value()) for _, m in seen] == [
        (topic, 0, i, b"k", b"v%d" % i) for i in range(3)
    ]
    assert all(m.error() is None for _, m in seen)
    # timestamp_ms reached the broker: a client we did not write reads it back.
    records = read_confluent(bootstrap, topic, 1, 3)
    assert [r.timestamp for r in records] == [1_700_000_000_000 + i for i in range(3)]


def test_on_delivery_reports_a_failure_with_err_set():
    failed = threading.Event()
    seen = []

    def on_delivery(err, msg):
        seen.append((err, msg))
        failed.set()

    with LocalBroker() as broker:
        producer = KafkaProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0,
                                  "delivery.timeout.ms": 1500, "request.timeout.ms": 1000})
        try:
            admin.create_topics(broker.bootstrap, {"gone": 1})
            producer.send("gone", b"first").get(timeout=30)  # metadata is known from here on
            broker.kill()  # the broker is gone: the next record can only expire
            producer.send("gone", b"x", on_delivery=on_delivery)
            assert failed.wait(60)
        finally:
            producer.close(timeout=5)
    ((err, msg),) = seen
    assert isinstance(err, errors.KafkaError) and msg.error() is err
    assert msg.offset() == OFFSET_INVALID and msg.value() == b"x" and msg.topic() == "gone"


def test_the_names_of_two_clients_at_once_are_refused(bootstrap):
    with KafkaProducer({"bootstrap.servers": bootstrap}) as producer:
        with pytest.raises(TypeError, match="not both"):
            producer.send("t", b"x", timestamp=1, timestamp_ms=1)
        with pytest.raises(TypeError, match="not both"):
            producer.send("t", b"x", callback=lambda m, e: None, on_delivery=lambda e, m: None)
        with pytest.raises(TypeError, match="must be callable"):
            producer.send("t", b"x", on_delivery="print")
