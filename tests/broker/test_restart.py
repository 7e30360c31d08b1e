"""``kill -9`` of our broker mid-stream, through the network (docs/broker/log.rst, recovery).

The broker runs as its own process (``python -m kafkacore.broker``) with
``log.flush.interval.messages=1``: every append is fsynced before it is acknowledged.  One
idempotent producer sends 100,000 records; after 30,000 are acknowledged the broker is killed with
SIGKILL and started again on the same ``log.dirs`` and port, and the same producer instance goes on.
Batches in flight at the kill may or may not have reached the disk: the producer retries them and the
restarted broker, whose producer state was rebuilt from its snapshot and the log, must answer the
ones it already holds with their original offsets instead of writing them twice.  confluent-kafka
(which we did not write) reads every record back: each once, in order, on its partition.
"""

from __future__ import annotations

import threading
import time

import pytest
from readback import read_confluent

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.testing import LocalBroker

TOTAL = 100_000
KILL_AFTER_ACKED = 30_000
# The sender stops here until the broker has been killed, so the stream always crosses the kill.
SENT_BEFORE_KILL = 60_000
PARTITIONS = 2


@pytest.mark.timeout(300)
def test_kill_9_mid_stream_then_restart_loses_and_duplicates_nothing(tmp_path):
    broker = LocalBroker(kind="kafkacore", log_dirs=tmp_path,
                         config={"log.flush.interval.messages": "1"})
    broker.start()
    producer = None
    try:
        topic = "restart-100k"
        assert create_topics(broker.bootstrap, {topic: PARTITIONS}) == {topic: 0}
        producer = KafkaProducer(
            bootstrap_servers=broker.bootstrap, enable_idempotence=True, acks="all",
            linger_ms=5, request_timeout_ms=5000, retry_backoff_ms=100,
            delivery_timeout_ms=180_000, max_block_ms=180_000, reconnect_backoff_max_ms=200,
        )
        acked: list[tuple[int, int, bytes]] = []  # (partition, offset, value), in ack order
        failures: list[BaseException] = []
        lock = threading.Lock()
        killed = threading.Event()

        def on_ack(metadata, exception):
            with lock:
                if exception is not None:
                    failures.append(exception)
                else:
                    acked.append((metadata.partition, metadata.offset, metadata.value))

        def record_value(i: int) -> bytes:
            return b"r%06d" % i

        sent: list[tuple[int, bytes]] = []  # (partition, value) in send order

        def send_all():
            for i in range(TOTAL):
                if i == SENT_BEFORE_KILL:
                    assert killed.wait(120), "the broker was never killed"
                partition, value = i % PARTITIONS, record_value(i)
                producer.send(topic, value, partition=partition,
                              callback=lambda m, e, v=value: on_ack(_Ack(m, v), e))
                sent.append((partition, value))

        sender = threading.Thread(target=send_all, name="test-sender", daemon=True)
        sender.start()
        deadline = time.monotonic() + 120
        while True:  # observe the acknowledgements, then kill
            with lock:
                count = len(acked)
            if count >= KILL_AFTER_ACKED:
                break
            assert sender.is_alive() or len(sent) == TOTAL, "the sending thread died"
            assert time.monotonic() < deadline, f"only {count} records acknowledged"
            time.sleep(0.01)
        broker.kill()
        with lock:
            acked_before_kill = list(acked)
        assert KILL_AFTER_ACKED <= len(acked_before_kill) <= SENT_BEFORE_KILL
        killed.set()
        broker.start()  # same port, same log.dirs
        sender.join(180)
        assert not sender.is_alive()
        assert len(sent) == TOTAL
        producer.flush(timeout=180)
        with lock:
            assert failures == []
            assert len(acked) == TOTAL
        assert {p: [] for p in range(PARTITIONS)} == {
            p: [o for (q, o, _) in acked if q == p and o < 0] for p in range(PARTITIONS)
        }
        consumed = read_confluent(broker.bootstrap, topic, PARTITIONS, TOTAL, timeout_s=120)
    finally:
        if producer is not None:
            producer.close(30)
        broker.stop()
    # Each record once, in the order it was sent, on its partition, at the offset it was
    # acknowledged with (also those acknowledged before the kill).
    assert len(consumed) == TOTAL
    for p in range(PARTITIONS):
        got = [(c.offset, c.value) for c in consumed if c.partition == p]
        assert [v for _, v in got] == [v for (q, v) in sent if q == p]
        assert [o for o, _ in got] == list(range(len(got)))
        assert sorted((o, v) for (q, o, v) in acked if q == p) == got
    assert set(acked_before_kill) <= set(acked)


class _Ack:
    """The RecordMetadata with the value it acknowledges."""

    __slots__ = ("partition", "offset", "value")

    def __init__(self, metadata, value: bytes) -> None:
        if metadata is not None:
            self.partition, self.offset = metadata.partition, metadata.offset
        self.value = value
