"""The Produce path under damaged requests, through the network, with hypothesis.

A valid Produce request is damaged -- bytes overwritten anywhere after the api key and version,
the frame cut short, or records damaged behind a recomputed CRC so that the record walk itself
meets the damage -- and sent to a live broker.  Whatever arrives, the broker answers that request (a Produce
response, with Kafka's error code where the records are bad) or closes that connection; it keeps
serving everyone else; and whatever it accepted is readable by a consumer we did not write.
"""

from __future__ import annotations

import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactor_client import api_versions, connect, recv_frame
from readback import read_kafka_python
from support.examples import examples

from kafkacore.admin import create_topics
from kafkacore.broker import Broker
from kafkacore.core.crc import crc32c
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

TOPIC = "fuzzed"
VERSION = 9
# What a damaged Produce may be answered with: NONE, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE,
# RECORD_LIST_TOO_LARGE, INVALID_TIMESTAMP, UNKNOWN_TOPIC_OR_PARTITION, INVALID_RECORD,
# INVALID_REQUIRED_ACKS, OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID.
ANSWERS = {0, 2, 10, 18, 32, 3, 87, 21, 45, 47, 59}


@pytest.fixture(scope="module")
def broker():
    with Broker({"num.network.threads": "2", "num.io.threads": "2"}) as b:
        assert create_topics(b.bootstrap_servers, {TOPIC: 1}) == {TOPIC: 0}
        yield b


def _batch() -> bytes:
    b = MemoryRecordsBuilder(4096)
    for i in range(5):
        b.append(1_700_000_000_000 + i, b"k%d" % i, b"value-%d" % i, [("h", b"%d" % i)])
    return bytes(b.build())


BATCH = _batch()


def _frame(records: bytes, correlation_id: int = 1) -> bytearray:
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 30_000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": 0, "records": records}]}]}
    payload = b"".join(bytes(memoryview(c).cast("B")) for c in
                       codec.encode_request(ApiKey.PRODUCE, VERSION, correlation_id, "fuzz", body))
    return bytearray(len(payload).to_bytes(4, "big") + payload)


def _answer_or_close(s: socket.socket, frame: bytes) -> list[int] | None:
    """The partition error codes of the answer, or None if the broker closed the connection."""
    s.sendall(frame)
    try:
        payload = recv_frame(s)
    except ConnectionError:
        return None
    _, body = codec.decode_response(ApiKey.PRODUCE, VERSION, payload)
    return [p["error_code"] for t in body["responses"] for p in t["partition_responses"]]


@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_produce_requests_never_hurt_the_broker(broker, data):
    how = data.draw(st.sampled_from(["overwrite", "cut", "records behind a valid crc"]))
    if how == "records behind a valid crc":
        batch = bytearray(BATCH)
        for _ in range(data.draw(st.integers(1, 4))):
            batch[data.draw(st.integers(61, len(batch) - 1))] = data.draw(st.integers(0, 255))
        struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
        frame = _frame(bytes(batch))
    else:
        frame = _frame(BATCH)
        if how == "overwrite":
            # Past the api key and version: with those changed the frame is another request (a
            # Fetch may wait its long poll), which the request parser's own tests damage.
            for _ in range(data.draw(st.integers(1, 4))):
                frame[data.draw(st.integers(8, len(frame) - 1))] = data.draw(st.integers(0, 255))
        else:
            del frame[data.draw(st.integers(5, len(frame) - 1)):]
            frame[:4] = (len(frame) - 4).to_bytes(4, "big")
    s = connect(broker)
    try:
        codes = _answer_or_close(s, bytes(frame))
    finally:
        s.close()
    if codes is not None:
        assert set(codes) <= ANSWERS, codes
    # Everyone else is still served.
    assert api_versions(connect(broker))[1]["error_code"] == 0


def test_after_the_fuzz_every_accepted_record_reads_back_and_the_log_goes_on(broker):
    s = connect(broker)
    assert _answer_or_close(s, bytes(_frame(BATCH, 77))) == [0]
    s.close()
    # kafka-python's consumer checks every batch's CRC and decodes every record the broker kept
    # (including those the fuzz got accepted): the log holds nothing a client cannot read.
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=None,
                             enable_auto_commit=False, check_crcs=True)
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    end = consumer.end_offsets([tp])[tp]
    consumer.close()
    consumed = read_kafka_python(broker.bootstrap_servers, TOPIC, 1, end)
    assert [c.offset for c in consumed] == list(range(end))
    assert [c.value for c in consumed[-5:]] == [b"value-%d" % i for i in range(5)]
