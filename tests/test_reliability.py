"""The producer under faults (issue 11): each test reproduces a failure a user met."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time

import pytest
from readback import read_confluent
from support.children import child_env

from kafkacore import KafkaProducer
from kafkacore.errors import IllegalStateError, InvalidTopicError

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
            while producer.metrics()["waiting-threads"] == 0:  # the thread waiting in the pool
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


# -- exit without close(): flush within a bound, say what was lost ------------------------------

_EXIT_SCRIPT = """
import sys
from kafkacore import KafkaProducer
producer = KafkaProducer(bootstrap_servers=sys.argv[1], linger_ms=50,
                         close_timeout_at_exit_ms=int(sys.argv[3]))
if len(sys.argv) > 4:  # the broker is frozen: wait for metadata first, then it stops answering
    producer.partitions_for(sys.argv[2])
    print("ready", flush=True)
    sys.stdin.readline()
for i in range(100):
    producer.send(sys.argv[2], b"record-%d" % i)
# no flush, no close: the interpreter exits here
"""


def _run_exit_script(*args, stdin=None, timeout=60):
    return subprocess.Popen(
        [sys.executable, "-c", _EXIT_SCRIPT, *map(str, args)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=child_env(), cwd=tempfile.gettempdir(),
    )


def test_records_sent_without_close_arrive_at_exit(bootstrap, make_topic):
    topic = make_topic(partitions=1)
    child = _run_exit_script(bootstrap, topic, 30_000)
    out, err = child.communicate(timeout=90)
    assert child.returncode == 0, err
    got = read_confluent(bootstrap, topic, 1, expected=100)
    assert sorted(r.value for r in got) == sorted(b"record-%d" % i for i in range(100))
    assert "not delivered" not in err


def test_exit_with_a_frozen_broker_is_bounded_and_warns(broker, make_topic):
    topic = make_topic(partitions=1)
    child = _run_exit_script(broker.bootstrap, topic, 1000, "frozen")
    try:
        assert child.stdout.readline().strip() == "ready"
        with broker.paused():
            child.stdin.write("go\\n")
            child.stdin.flush()
            # Bounded: close.timeout.at.exit.ms is 1 s; 60 s only bounds this test's wait.
            out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    assert child.returncode == 0, err
    assert "100 records not acknowledged" in err, err


_SPLIT_EXIT_SCRIPT = """
import sys
from kafkacore import KafkaProducer
# Small batches, one request in flight: a few batches go out, the rest wait in the accumulator.
producer = KafkaProducer(bootstrap_servers=sys.argv[1], linger_ms=0, batch_size=2000,
                         max_in_flight_requests_per_connection=1, enable_idempotence=False,
                         close_timeout_at_exit_ms=1000)
producer.send(sys.argv[2], b"first").get(30)  # connected to the leader, then it freezes
print("ready", flush=True)
sys.stdin.readline()
for i in range(1000):
    producer.send(sys.argv[2], b"record-%04d" % i + b"." * 90)
"""


def test_exit_warning_tells_failed_records_from_unknown_ones(broker, make_topic):
    """With the broker frozen, a record already sent may be written once it wakes: the exit
    warning must not count it as lost (whoever resends "the lost records" would duplicate it)."""
    import re

    topic = make_topic(partitions=1)
    child = subprocess.Popen(
        [sys.executable, "-c", _SPLIT_EXIT_SCRIPT, broker.bootstrap, topic],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=child_env(), cwd=tempfile.gettempdir())
    try:
        assert child.stdout.readline().strip() == "ready"
        with broker.paused():
            child.stdin.write("go\n")
            child.stdin.flush()
            out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    assert child.returncode == 0, err
    found = re.search(r"(\d+) records not acknowledged .*: (\d+) failed, never sent .*; "
                      r"(\d+) unknown, sent with no answer", err)
    assert found, err
    total, failed, unknown = map(int, found.groups())
    assert total == failed + unknown == 1000, err
    assert failed > 0 and unknown > 0, err
    # The unknown ones may be in the log now; the failed ones may not.
    got = read_confluent(broker.bootstrap, topic, 1, expected=1 + unknown, timeout_s=20)
    assert len(got) <= 1 + unknown
