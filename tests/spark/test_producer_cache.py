"""The per-process producer cache of kafkacore.spark, without Spark: canonical keys, one
producer per configuration, and never a producer from another process (a real ``os.fork()``).

These need no pyspark, so they run on every Python version of the matrix.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import time

import pytest
from readback import read_kafka_python

from kafkacore.errors import KafkaError
from kafkacore.spark import writers as kspark

pytestmark = pytest.mark.timeout(120)


def _config(bootstrap, **extra):
    return {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 65536, **extra}


def _send_one(producer, topic):
    result = producer.send_batch(topic, [b"v"], keys=[b"k"]).result(30)
    assert result.failed == 0, result.errors
    return result.partitions[0], result.offsets[0]


def test_config_key_is_canonical():
    a = {"bootstrap.servers": "h:1", "linger.ms": 5, "acks": "all"}
    b = dict(reversed(list(a.items())))
    assert kspark.config_key(a) == kspark.config_key(b)
    assert kspark.config_key(a) != kspark.config_key({**a, "linger.ms": 6})
    assert kspark.config_key({"x": [1, 2]}) == kspark.config_key({"x": (1, 2)})
    hash(kspark.config_key({"x": {"b": 1, "a": [2]}}))
    # A serializer unpickled in each task is a new object every time; the key stays the same.
    ser = pickle.loads(pickle.dumps(str.encode))
    assert kspark.config_key({"value.serializer": ser}) == kspark.config_key(
        {"value.serializer": str.encode}
    )


def _wait_child(pid, timeout_s):
    """The child's wait status; a child that hangs is killed and the test fails (bounded)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError(f"the forked child did not finish within {timeout_s} s")


def test_cache_one_producer_per_config_and_fork_builds_a_new_one(bootstrap, make_topic):
    topic = make_topic(1)
    config = _config(bootstrap, **{"client.id": "fork-test"})
    try:
        parent = kspark.get_producer(config)
        assert kspark.get_producer(dict(config)) is parent
        other = kspark.get_producer({**config, "linger.ms": 1})
        assert other is not parent
        _send_one(parent, topic)

        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report, never return into pytest
            code = 1
            try:
                child = kspark.get_producer(config)
                report = {
                    "new": child is not parent,
                    "again": kspark.get_producer(config) is child,
                    "sent": _send_one(child, topic),
                }
                kspark.close_producers(10)
                os.write(write_end, json.dumps(report).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        status = _wait_child(pid, timeout_s=60)
        with os.fdopen(read_end, "rb") as f:
            report = json.loads(f.read() or b"{}")
        assert os.waitstatus_to_exitcode(status) == 0, report
        assert report["new"] and report["again"]
        assert report["sent"][1] >= 0
        # The child built, used and closed its own producer; the parent's still works.
        assert kspark.get_producer(config) is parent
        _send_one(parent, topic)
        got = read_kafka_python(bootstrap, topic, 1, 3)
        assert len(got) == 3
    finally:
        assert kspark.close_producers(10) >= 2


def test_cache_never_returns_a_producer_from_another_process(bootstrap):
    """The belt to os.register_at_fork's braces: an entry whose pid is not ours (a fork done
    from C, which skips the at-fork hooks) is set aside, never used."""
    config = _config(bootstrap, **{"client.id": "pid-test"})
    try:
        first = kspark.get_producer(config)
        key = kspark.config_key(config)
        # white-box: an entry from another pid can only be staged in the cache itself
        entry = kspark._cache[key]
        kspark._cache[key] = kspark._Cached(entry.pid + 1_000_000, entry.serial, entry.producer)
        second = kspark.get_producer(config)
        assert second is not first
        assert first in kspark._orphans
    finally:
        kspark.close_producers(5)
        first.close(5)


def test_delivery_failed_error_is_a_kafka_error():
    summary = kspark.WriteSummary("t", 10, 1, {0: 9}, 1.0, 1, frozenset(), "X: y")
    err = kspark.DeliveryFailedError("1 of 10", summary)
    assert isinstance(err, KafkaError) and err.summary.acked == 9
    assert "10 records to 't'" in str(summary)
