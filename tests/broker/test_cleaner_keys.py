"""A compacted topic refuses a record without a key, as Kafka's ``LogValidator`` does:
INVALID_RECORD, with KIP-467's per-record ``record_errors`` (docs/broker/log_cleaner.rst)."""

from __future__ import annotations

import time

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from support.topics import new_topic

from kafkacore.broker.server.broker_server import Broker
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey


@pytest.fixture(scope="module")
def broker():
    with Broker({"num.network.threads": "1", "num.io.threads": "1"}) as b:
        yield b


def _produce(broker, topic: str, keys: list[bytes | None]) -> dict:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    now = int(time.time() * 1000)
    for i, key in enumerate(keys):
        builder.append(i, now, key, b"v%d" % i, [])
    client = InterBrokerClient(broker.advertised_host, broker.advertised_port, "test", 30)
    try:
        response = client.send(ApiKey.PRODUCE, 9, {
            "transactional_id": None, "acks": 1, "timeout_ms": 10000, "topic_data": [
                {"name": topic, "partition_data": [
                    {"index": 0, "records": bytes(builder.build())}]}]})
    finally:
        client.close()
    return response["responses"][0]["partition_responses"][0]


def test_a_keyless_record_is_refused_by_a_compacted_topic_with_its_index(broker):
    topic = new_topic(broker, configs={"cleanup.policy": "compact"})
    part = _produce(broker, topic, [b"k0", None, b"k2", None])
    assert part["error_code"] == Errors.INVALID_RECORD
    assert [e["batch_index"] for e in part["record_errors"]] == [1, 3]
    assert all(e["batch_index_error_message"] ==
               f"Compacted topic cannot accept message without key in topic partition {topic}-0."
               for e in part["record_errors"])
    assert "2 record errors" in part["error_message"]
    # Nothing of the batch was written; a batch with every key goes in at offset 0.
    ok = _produce(broker, topic, [b"k0", b"k1"])
    assert (ok["error_code"], ok["base_offset"], ok["record_errors"]) == (Errors.NONE, 0, [])
    # A topic that deletes takes keyless records.
    plain = new_topic(broker)
    assert _produce(broker, plain, [None])["error_code"] == Errors.NONE


def test_confluent_kafka_sees_invalid_record_for_a_keyless_record(broker):
    ck = pytest.importorskip("confluent_kafka")
    topic = new_topic(broker, configs={"cleanup.policy": "compact,delete"})
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers,
                            "message.send.max.retries": 0})
    reports: list = []
    producer.produce(topic, value=b"no key", partition=0,
                     on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(30) == 0  # alone in its batch: Kafka refuses the whole batch
    producer.produce(topic, key=b"k", value=b"keyed", partition=0,
                     on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(30) == 0
    assert reports[0] is not None and reports[0].code() == ck.KafkaError.INVALID_RECORD
    assert reports[1] is None
