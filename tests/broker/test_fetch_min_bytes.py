"""A Fetch that waits for ``min_bytes`` (a long poll in the fetch purgatory) is answered once
that many bytes are there, counted at each append from batch positions, and its answer holds
them; judged by kafka-python's record reader."""

from __future__ import annotations

import threading

import pytest
from kafka.record.memory_records import MemoryRecords
from reactor_client import Client
from support.topics import new_topic
from waits import wait_until

from kafkacore import KafkaProducer
from kafkacore.broker import Broker
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

VALUE = b"v" * 1000
BATCHES_WANTED = 5


@pytest.fixture(scope="module")
def broker():
    with Broker({"num.network.threads": "1", "num.io.threads": "2"}) as b:
        yield b


def batch_count(records):
    batches, count = MemoryRecords(bytes(records)), 0
    while (b := batches.next_batch()) is not None:
        assert b.validate_crc()
        count += 1
    return count


def test_a_fetch_waiting_for_min_bytes_answers_once_they_are_appended(broker):
    topic = new_topic(broker)
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        producer.send(topic, VALUE, partition=0)
        producer.flush(timeout=30)
        client = Client(broker, "test-min-bytes")
        first = client.call(ApiKey.FETCH, 11, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
        one_batch = len(first["responses"][0]["partitions"][0]["records"])
        # Waits for about BATCHES_WANTED batches, far longer than the test (it must not expire).
        min_bytes = one_batch * BATCHES_WANTED - one_batch // 2
        answer = {}

        def long_poll():
            answer.update(client.call(ApiKey.FETCH, 11, {
                "replica_id": -1, "max_wait_ms": 600_000, "min_bytes": min_bytes,
                "max_bytes": 1 << 20, "topics": [{"topic": topic, "partitions": [
                    {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}))

        poller = threading.Thread(target=long_poll, daemon=True)
        poller.start()
        sent = 1
        while not answer and sent < 4 * BATCHES_WANTED:
            producer.send(topic, VALUE, partition=0)  # one batch per flush
            producer.flush(timeout=30)
            sent += 1
        wait_until(lambda: answer, "the long poll is answered once min_bytes are there")
        poller.join(timeout=30)
        client.close()
    part = answer["responses"][0]["partitions"][0]
    assert part["error_code"] == Errors.NONE
    assert len(part["records"]) >= min_bytes  # not answered early
    assert batch_count(part["records"]) >= BATCHES_WANTED
