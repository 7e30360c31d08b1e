"""A producer inherited by a forked child (issue 11 item 4): every call fails at once with a
clear error, close() returns at once, nothing hangs; the parent's producer carries on."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time

import pytest

from kafkacore import KafkaProducer
from kafkacore.errors import IllegalStateError

pytestmark = pytest.mark.broker

_producer: KafkaProducer | None = None  # the "created at import" producer a pool worker inherits


def _in_child(producer: KafkaProducer) -> int:
    """What the child sees: 0 if every call failed at once with the fork error."""
    for call in (
        lambda: producer.send("t", b"v"),
        lambda: producer.send_batch("t", [b"v"]),
        lambda: producer.flush(),
        lambda: producer.partitions_for("t"),
    ):
        try:
            call()
        except IllegalStateError as exc:
            if "fork" not in str(exc):
                return 2
        else:
            return 3
    producer.close()  # returns at once: nothing of the child's to send
    return 0


def _fork_and_wait(target, bound_s: float = 30.0) -> int:
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 1
        try:
            code = target()
        finally:
            os._exit(code)
    deadline = time.monotonic() + bound_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung")
        time.sleep(0.01)


def test_os_fork(bootstrap, make_topic):
    topic = make_topic(partitions=1)  # one partition: offsets 0 and 1 are the two records
    with KafkaProducer(bootstrap_servers=bootstrap, linger_ms=60_000) as producer:
        queued = producer.send(topic, b"before the fork")  # queued in the parent at fork time
        assert _fork_and_wait(lambda: _in_child(producer)) == 0
        producer.flush(timeout=30)
        assert queued.get(timeout=30).offset == 0  # the parent's record is sent once, by it
        after = producer.send(topic, b"after")
        producer.flush(timeout=30)
        assert after.get(timeout=30).offset == 1


def _pool_task(_):
    return _in_child(_producer)


def test_fork_multiprocessing_pool(bootstrap, topic):
    global _producer
    _producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            assert pool.map_async(_pool_task, range(4)).get(timeout=60) == [0, 0, 0, 0]
        assert _producer.send(topic, b"parent").get(timeout=30).offset == 0
    finally:
        _producer.close()
        _producer = None


def test_fork_while_another_thread_sends(bootstrap, topic):
    producer = KafkaProducer(bootstrap_servers=bootstrap, buffer_memory=1 << 20)
    stop = threading.Event()
    futures = []

    def send_loop():
        while not stop.is_set():
            futures.append(producer.send(topic, b"x" * 100))

    t = threading.Thread(target=send_loop, daemon=True)
    try:
        producer.partitions_for(topic)
        t.start()
        while len(futures) < 1000:  # the other thread is sending now
            assert t.is_alive()
            time.sleep(0.001)
        for _ in range(5):  # fork at different moments of the other thread's send()
            assert _fork_and_wait(lambda: _in_child(producer)) == 0
    finally:
        stop.set()
        t.join(30)
        producer.close(30)
    assert all(f.exception(timeout=0) is None for f in futures)
