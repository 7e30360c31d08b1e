"""The producer under faults (issue 11): each test reproduces a failure a user met."""

from __future__ import annotations

import threading
import time

import pytest

from kafkacore import KafkaProducer
from kafkacore.errors import IllegalStateError, InvalidTopicError

pytestmark = pytest.mark.broker


# -- a topic name that cannot be sent must not poison metadata for the others ----------------

BAD_TOPICS = [
    "bad\udcfftopic",  # a lone surrogate: cannot be encoded as UTF-8
    "bad topic",  # illegal character (Kafka allows [a-zA-Z0-9._-])
    "x" * 250,  # longer than Kafka's 249
    ".",
    "..",
]


@pytest.mark.parametrize("bad", BAD_TOPICS, ids=["surrogate", "space", "too-long", "dot", "dotdot"])
def test_an_illegal_topic_is_refused_at_send_and_others_still_work(bootstrap, make_topic, bad):
    good = make_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=10_000) as producer:
        with pytest.raises(InvalidTopicError):
            producer.send(bad, b"v")
        with pytest.raises(InvalidTopicError):
            producer.send_batch(bad, [b"v"])
        # Metadata for a topic we have not used yet still arrives.
        assert producer.send(good, b"ok").get(timeout=30).offset == 0


# -- close() wakes a thread waiting for buffer memory ------------------------------------------


def test_close_wakes_a_thread_blocked_in_allocate(broker, make_topic):
    topic = make_topic(partitions=1)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, buffer_memory=32768, batch_size=16384,
        max_block_ms=600_000, linger_ms=0, request_timeout_ms=300_000,
        delivery_timeout_ms=600_000,
    )
    outcome: list[BaseException | None] = []

    def fill():
        try:
            for _ in range(1000):  # two batches of memory, then the third waits in allocate()
                producer.send(topic, b"x" * 1000)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    try:
        producer.partitions_for(topic)
        with broker.paused():
            t = threading.Thread(target=fill, daemon=True)
            t.start()
            deadline = time.monotonic() + 30
            while producer._pool.queued() == 0:  # observe the thread waiting in the pool
                assert time.monotonic() < deadline, "the sender never blocked in allocate()"
                assert t.is_alive()
                time.sleep(0.01)
            # A graceful close: with the broker frozen, nothing in flight gives memory back,
            # so only the pool's own close can wake the waiter.
            closer = threading.Thread(target=producer.close, daemon=True)
            closer.start()
            t.join(30)  # far below max.block.ms and request.timeout.ms
            assert not t.is_alive(), "close() left a thread blocked in allocate()"
        closer.join(60)
        assert not closer.is_alive()
    finally:
        producer.close(0)
    assert len(outcome) == 1 and isinstance(outcome[0], IllegalStateError), outcome
    assert "closed" in str(outcome[0])
