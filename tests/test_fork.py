"""A producer inherited by a forked child (issue 11 item 4) starts afresh on first use: its own
Sender thread and connections.  Records queued in the parent at fork time are the parent's and are
sent once, by the parent; the child's records are delivered too.  Everything is read back by
confluent-kafka, a client we did not write."""

from __future__ import annotations

import collections
import gc
import multiprocessing
import os
import signal
import threading
import time
import weakref

import confluent_kafka
import pytest
from readback import read_confluent
from waits import wait_until

from kafkacore import KafkaProducer
from kafkacore.errors import IllegalStateError

_producer: KafkaProducer | None = None  # the "created at import" producer a pool worker inherits


def _send_in_child(producer: KafkaProducer, topic: str, tag: bytes, close: bool = True) -> int:
    """What a child does with the inherited producer: send, wait for every ack, close (a pool
    worker keeps it for its next task).  0 if every record was acknowledged."""
    n = 10
    futures = [producer.send(topic, tag + b"-%d" % i) for i in range(n)]
    futures.append(producer.send_batch(topic, [tag + b"-batch"]))
    producer.flush(timeout=30)
    for f in futures:
        if f.exception(timeout=30) is not None:
            return 2
    if producer.partitions_for(topic) != [0]:
        return 3
    if close:
        producer.close(30)
    return 0


def _fork_and_wait(target, bound_s: float = 60.0) -> int:
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


def read_values(bootstrap, topic, expected) -> collections.Counter:
    return collections.Counter(r.value for r in read_confluent(bootstrap, topic, 1, expected))


def test_os_fork(bootstrap, make_topic):
    topic = make_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=bootstrap, linger_ms=60_000) as producer:
        queued = producer.send(topic, b"before the fork")  # queued in the parent at fork time
        assert _fork_and_wait(lambda: _send_in_child(producer, topic, b"child")) == 0
        producer.flush(timeout=30)
        assert queued.get(timeout=30).topic == topic  # the parent's record, sent by the parent
        after = producer.send(topic, b"after")
        producer.flush(timeout=30)  # linger.ms is a minute
        after.get(timeout=30)
    values = read_values(bootstrap, topic, 13)
    expected = [b"before the fork", b"after", b"child-batch"] + [b"child-%d" % i for i in range(10)]
    assert values == collections.Counter(expected)  # each once: nobody sent another's record


def test_a_child_that_closes_before_using_the_producer(bootstrap, make_topic):
    topic = make_topic(partitions=1)

    def child() -> int:
        _producer_in_child = producer
        _producer_in_child.close()  # at once: nothing of the child's to send
        try:
            _producer_in_child.send(topic, b"x")
        except IllegalStateError as exc:
            return 0 if "closed" in str(exc) else 2
        return 3

    with KafkaProducer(bootstrap_servers=bootstrap, linger_ms=60_000) as producer:
        queued = producer.send(topic, b"parent")
        assert _fork_and_wait(child) == 0
        producer.flush(timeout=30)
        assert queued.get(timeout=30).offset == 0
    assert read_values(bootstrap, topic, 1) == collections.Counter([b"parent"])


def test_a_grandchild(bootstrap, make_topic):
    """A child forks again before using the producer: the grandchild starts afresh too."""
    topic = make_topic(partitions=1)

    def child() -> int:
        code = _fork_and_wait(lambda: _send_in_child(producer, topic, b"grandchild"))
        return code or _send_in_child(producer, topic, b"child")

    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        producer.partitions_for(topic)
        assert _fork_and_wait(child) == 0
    expected = [b"%s-%s" % (who, i) for who in (b"child", b"grandchild")
                for i in [b"%d" % j for j in range(10)] + [b"batch"]]
    assert read_values(bootstrap, topic, len(expected)) == collections.Counter(expected)


class _Litter:
    """What a failed test leaves behind: clients in a reference cycle nothing else refers to."""


def _litter_confluent_clients(port: int) -> weakref.ref[_Litter]:
    """Two busy confluent-kafka clients (connecting to ``port``, refused, retrying), left in a
    reference cycle: garbage for the next full collection to free."""
    refused: list[object] = []
    clients = [confluent_kafka.Producer({"bootstrap.servers": f"127.0.0.1:{port}",
                                         "log_level": 0, "error_cb": refused.append})
               for _ in range(2)]
    for client in clients:
        client.produce("t", b"x")
    wait_until(lambda: all(c.poll(0.01) >= 0 for c in clients) and refused,
               "librdkafka reports the refused connections")
    litter = _Litter()
    litter.clients = clients  # type: ignore[attr-defined]
    litter.cycle = litter  # type: ignore[attr-defined]
    return weakref.ref(litter)


def test_a_fork_leaves_other_clients_garbage_to_the_parent(closed_port):
    """confluent-kafka clients an earlier test left in a reference cycle are freed by the next
    full collection; librdkafka cannot free them in a forked child, where their threads are
    gone (the child died of SIGSEGV inside the collector, or hung).  tests/conftest.py collects
    before every fork, so the parent frees them and the child has nothing of theirs to free."""

    def child() -> int:
        gc.collect()
        return 0

    gc.disable()  # only the collection before the fork may free them
    try:
        freed = _litter_confluent_clients(closed_port)
        assert freed() is not None  # garbage, not yet freed
        assert _fork_and_wait(child) == 0
        assert freed() is None  # freed in the parent, before the fork
    finally:
        gc.enable()


def _pool_task(args):
    topic, i = args
    return _send_in_child(_producer, topic, b"task-%d" % i, close=False)


def test_fork_multiprocessing_pool(bootstrap, make_topic):
    global _producer
    topic = make_topic(partitions=1)
    _producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        _producer.send(topic, b"parent-before").get(timeout=30)
        with multiprocessing.get_context("fork").Pool(2) as pool:
            tasks = [(topic, i) for i in range(4)]
            assert pool.map_async(_pool_task, tasks).get(timeout=120) == [0, 0, 0, 0]
        _producer.send(topic, b"parent-after").get(timeout=30)
    finally:
        _producer.close()
        _producer = None
    expected = [b"parent-before", b"parent-after"]
    for i in range(4):
        expected += [b"task-%d-%d" % (i, j) for j in range(10)] + [b"task-%d-batch" % i]
    assert read_values(bootstrap, topic, len(expected)) == collections.Counter(expected)


@pytest.mark.timeout(240)
def test_fork_while_another_thread_sends(bootstrap, make_topic):
    topic = make_topic(partitions=1)
    producer = KafkaProducer(bootstrap_servers=bootstrap, buffer_memory=1 << 20)
    stop = threading.Event()
    futures = []

    def send_loop():
        i = 0
        while not stop.is_set():
            futures.append(producer.send(topic, b"parent-%d" % i))
            i += 1

    t = threading.Thread(target=send_loop, daemon=True)
    try:
        producer.partitions_for(topic)
        t.start()
        while len(futures) < 1000:  # the other thread is sending now
            assert t.is_alive()
            time.sleep(0.001)
        for k in range(5):  # fork at different moments of the other thread's send()
            assert _fork_and_wait(lambda k=k: _send_in_child(producer, topic, b"child%d" % k)) == 0
    finally:
        stop.set()
        t.join(30)
        producer.close(30)
    assert all(f.exception(timeout=0) is None for f in futures)
    expected = [b"parent-%d" % i for i in range(len(futures))]
    for k in range(5):
        expected += [b"child%d-%d" % (k, j) for j in range(10)] + [b"child%d-batch" % k]
    assert read_values(bootstrap, topic, len(expected)) == collections.Counter(expected)
