"""Our broker's admin and bookkeeping answers, judged by clients we did not write (kafka-python,
confluent-kafka, kcat): what a batch's header says once stored, the configs a broker describes,
partitions added, records deleted, the cluster described."""

from __future__ import annotations

import socket
import struct

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c
from reactor_client import recv_frame
from support.topics import new_topic

from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker

T0 = 1_700_000_000_000


@pytest.fixture(scope="module")
def ours():
    with LocalBroker(kind="kafkacore") as broker:
        yield broker


def _call(broker, api_key, version, body):
    payload = b"".join(bytes(memoryview(c).cast("B")) for c in
                       codec.encode_request(api_key, version, 1, "admin-calls", body))
    with socket.create_connection((broker.host, broker.port), timeout=30) as s:
        s.settimeout(30)
        s.sendall(len(payload).to_bytes(4, "big") + payload)
        _, response = codec.decode_response(api_key, version, recv_frame(s))
    return response


def _batch_without_max_timestamp(timestamps):
    """A batch as Sarama writes it: maxTimestamp -1 whatever its records say (kafka-python's
    builder, its max timestamp overwritten and its CRC-32C recomputed by kafka-python's)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i, ts in enumerate(timestamps):
        builder.append(i, timestamp=ts, key=None, value=b"v%d" % i, headers=[])
    batch = bytearray(builder.build())
    struct.pack_into(">q", batch, 35, -1)  # maxTimestamp
    struct.pack_into(">I", batch, 17, calc_crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_a_batch_without_its_max_timestamp_is_found_by_time(ours):
    topic = new_topic(ours)
    # Timestamps out of order: the largest is the second record's, not the last one's.
    timestamps = [T0, T0 + 5000, T0 + 1000]
    response = _call(ours, ApiKey.PRODUCE, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 30000,
        "topic_data": [{"name": topic, "partition_data": [
            {"index": 0, "records": _batch_without_max_timestamp(timestamps)}]}]})
    answer = response["responses"][0]["partition_responses"][0]
    assert answer["error_code"] == Errors.NONE and answer["base_offset"] == 0

    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=ours.bootstrap, request_timeout_ms=30000)
    try:
        found = consumer.offsets_for_times({tp: T0 + 4000})[tp]
        assert found is not None and found.offset == 0 and found.timestamp == T0 + 5000
        assert consumer.offsets_for_times({tp: T0 + 5001})[tp] is None
        # The stored header now says what its records say, and its CRC matches (the consumer
        # checks it): the records come back as they were sent.
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        records = consumer.poll(timeout_ms=10000, max_records=10).get(tp, [])
        assert [(r.offset, r.timestamp) for r in records] == list(enumerate(timestamps))
    finally:
        consumer.close()
