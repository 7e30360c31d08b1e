"""Idempotence on the broker: replay a batch by hand and watch the broker refuse to write it twice.

Our producer writes three batches into our own broker.  Then we play the part of a producer whose
response got lost: we take the second batch exactly as the broker stored it and send it again in a
raw Produce request.  The broker recognises one of the producer's last five batches (same producer
id, epoch and sequence range) and answers success with the *original* offsets; nothing is written.
A batch that skips a sequence number is refused with OUT_OF_ORDER_SEQUENCE_NUMBER.

It starts its own kafkacore broker in this process (no other broker needed):

    python tutorials/42_broker_idempotence.py
"""

import socket
from typing import Any

from kafkacore import KafkaProducer, admin
from kafkacore.broker import Broker
from kafkacore.core import MemoryRecordsBuilder, iter_batches
from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import fetch_record_batches

TOPIC = "replay-tour"
PRODUCE_VERSION = 9


def recv_exactly(s: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(n - len(out))
        assert chunk, "the broker closed the connection"
        out += chunk
    return bytes(out)


def produce_by_hand(address: tuple[str, int], correlation_id: int, batch: bytes) -> dict[str, Any]:
    """One raw Produce request (acks=all) carrying ``batch`` for partition 0; its answer."""
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 30_000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]}
    chunks = codec.encode_request(ApiKey.PRODUCE, PRODUCE_VERSION, correlation_id, "replayer", body)
    payload = b"".join(bytes(memoryview(c).cast("B")) for c in chunks)
    with socket.create_connection(address, timeout=30) as s:
        s.sendall(len(payload).to_bytes(4, "big") + payload)
        size = int.from_bytes(recv_exactly(s, 4), "big")
        _, response = codec.decode_response(ApiKey.PRODUCE, PRODUCE_VERSION, recv_exactly(s, size))
    answer: dict[str, Any] = response["responses"][0]["partition_responses"][0]
    return answer


with Broker({"num.partitions": "1"}) as broker:
    bootstrap = broker.bootstrap_servers
    address = (broker.advertised_host, broker.advertised_port)
    admin.create_topics(bootstrap, {TOPIC: 1})

    # 1. Our idempotent producer writes three batches of five records (a flush after each).
    with KafkaProducer(bootstrap_servers=bootstrap, linger_ms=1000) as producer:
        for b in range(3):
            futures = [producer.send(TOPIC, b"record %d" % (5 * b + i)) for i in range(5)]
            producer.flush()
            print(f"batch {b}: offsets {[f.get().offset for f in futures]}")

    stored = fetch_record_batches(bootstrap, TOPIC, 0)
    headers = [next(iter_batches(raw)) for raw in stored]
    for h in headers:
        print(f"  stored: offsets {h.base_offset}-{h.last_offset}, producer id {h.producer_id},"
              f" epoch {h.producer_epoch}, sequences {h.base_sequence}-"
              f"{h.base_sequence + h.last_offset_delta}")
    assert [h.base_sequence for h in headers] == [0, 5, 10]

    # 2. Replay the second batch, byte for byte as stored (the producer's bytes: the broker only
    #    wrote its base offset, which the CRC does not cover, so the CRC still checks).
    answer = produce_by_hand(address, 1, stored[1])
    print(f"replayed batch 1 -> error {answer['error_code']}, base offset {answer['base_offset']}")
    assert answer["error_code"] == Errors.NONE  # success...
    assert answer["base_offset"] == headers[1].base_offset == 5  # ...at the original offsets

    # Nothing was written: the partition still holds three batches and fifteen records.
    after = [next(iter_batches(raw)) for raw in fetch_record_batches(bootstrap, TOPIC, 0)]
    assert [(h.base_offset, h.record_count) for h in after] == [(0, 5), (5, 5), (10, 5)]
    print(f"the log still holds {sum(h.record_count for h in after)} records in {len(after)} batches")

    # 3. The same producer id and epoch, but sequence 16: record 15 was never sent.  The broker
    #    refuses it, OUT_OF_ORDER_SEQUENCE_NUMBER (45), and writes nothing.
    gap = MemoryRecordsBuilder(1024, producer_id=headers[0].producer_id,
                               producer_epoch=headers[0].producer_epoch, base_sequence=16)
    gap.append(1_700_000_000_000, None, b"record 16")
    answer = produce_by_hand(address, 2, bytes(gap.build()))
    print(f"a batch starting at sequence 16 -> error {answer['error_code']}")
    assert answer["error_code"] == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert len(fetch_record_batches(bootstrap, TOPIC, 0)) == 3
