"""KafkaProducer.send_batch: whole columns, the same guarantees as send(), read back by others."""

from __future__ import annotations

import pyarrow as pa
import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2
from readback import read_confluent, read_kafka_python
from waits import wait_for_metadata

from kafkacore import KafkaProducer
from kafkacore.core import BatchFuture, BatchResult
from kafkacore.errors import (
    BufferExhaustedError,
    IllegalStateError,
    KafkaTimeoutError,
    RecordTooLargeError,
    SerializationError,
)


def java_partition(key: bytes, partitions: int) -> int:
    return (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions


def check_read_back(bootstrap, topic, partitions, rows, result):
    """Every row arrived once, where the result says, in call order per partition."""
    expected = {}
    for i, (key, value) in enumerate(rows):
        expected.setdefault(result.partitions[i], []).append((result.offsets[i], key, value))
    for reader in (read_confluent, read_kafka_python):
        consumed = reader(bootstrap, topic, partitions, len(rows))
        got = {}
        for c in sorted(consumed, key=lambda c: (c.partition, c.offset)):
            got.setdefault(c.partition, []).append((c.offset, c.key, c.value))
        assert got == expected, reader.__name__


@pytest.mark.parametrize("arrow_type", [None, pa.binary(), pa.large_binary(), pa.string(),
                                        pa.large_string()])
def test_columns_arrive_where_send_would_put_them(bootstrap, make_topic, arrow_type):
    topic = make_topic(partitions=4)
    n = 20_000
    keys = [None if i % 5 == 0 else f"k{i % 300}" for i in range(n)]
    values = [None if i % 11 == 0 else f"value {i} ü" for i in range(n)]
    if arrow_type is None:  # Python lists: bytes and str mixed
        key_col = [k if k is None or i % 2 else k.encode() for i, k in enumerate(keys)]
        value_col = [v if v is None or i % 2 else v.encode() for i, v in enumerate(values)]
    else:
        key_col = pa.array(keys, arrow_type)
        value_col = pa.array(values, arrow_type)
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        future = producer.send_batch(topic, value_col, keys=key_col)
        assert isinstance(future, BatchFuture)
        result = future.result(timeout=60)
    assert isinstance(result, BatchResult)
    assert len(result) == n and result.failed == 0 and result.errors == [None] * n
    rows = [(None if k is None else k.encode(), None if v is None else v.encode())
            for k, v in zip(keys, values, strict=True)]
    for i, (key, _value) in enumerate(rows):
        if key is not None:
            assert result.partitions[i] == java_partition(key, 4)
    assert len(set(result.partitions)) == 4
    check_read_back(bootstrap, topic, 4, rows, result)


def test_sliced_arrow_arrays_and_chunked_arrays(bootstrap, make_topic):
    topic = make_topic(partitions=1)
    full = pa.array([b"a%d" % i for i in range(100)] + [None], pa.binary())
    sliced = full.slice(40, 30)
    chunked = pa.chunked_array([full.slice(0, 10), full.slice(90, 11)])
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        first = producer.send_batch(topic, sliced).result(timeout=30)
        second = producer.send_batch(topic, chunked).result(timeout=30)
    consumed = read_confluent(bootstrap, topic, 1, 51)
    values = [c.value for c in sorted(consumed, key=lambda c: c.offset)]
    assert values == [b"a%d" % i for i in range(40, 70)] + [b"a%d" % i for i in range(10)] + [
        b"a%d" % i for i in range(90, 100)] + [None]
    assert first.failed == second.failed == 0


def test_explicit_partitions_timestamps_and_headers(bootstrap, make_topic):
    topic = make_topic(partitions=3)
    n = 300
    values = [b"v%d" % i for i in range(n)]
    partitions = [i % 3 for i in range(n)]
    timestamps = [1_700_000_000_000 + i if i % 2 else None for i in range(n)]
    headers = [[("row", b"%d" % i)] if i % 3 == 0 else None for i in range(n)]
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        result = producer.send_batch(
            topic, values, partitions=partitions, timestamps=timestamps, headers=headers
        ).result(timeout=30)
    assert list(result.partitions) == partitions
    consumed = {(c.partition, c.offset): c for c in read_confluent(bootstrap, topic, 3, n)}
    for i in range(n):
        c = consumed[(result.partitions[i], result.offsets[i])]
        assert c.value == values[i]
        if timestamps[i] is not None:
            assert c.timestamp == timestamps[i]
        assert c.headers == (tuple(headers[i]) if headers[i] else ())


def test_many_batches_and_concurrent_send(bootstrap, make_topic):
    topic = make_topic(partitions=2)
    n = 50_000
    values = pa.array([b"%08d" % i + b"x" * 92 for i in range(n)], pa.binary())
    with KafkaProducer(bootstrap_servers=bootstrap, batch_size=16384) as producer:
        single = producer.send(topic, b"single", partition=0)
        batch = producer.send_batch(topic, values, keys=None)
        result = batch.result(timeout=60)
        assert single.get(timeout=30).partition == 0
    assert result.failed == 0
    consumed = read_confluent(bootstrap, topic, 2, n + 1)
    assert len(consumed) == n + 1
    # Without keys, rows go sticky: runs of about batch.size bytes per partition, in order.
    for p in (0, 1):
        rows = [i for i in range(n) if result.partitions[i] == p]
        offsets = [result.offsets[i] for i in rows]
        assert offsets == sorted(offsets)


def test_empty_call_is_done_at_once(bootstrap, make_topic):
    topic = make_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        future = producer.send_batch(topic, [])
        assert future.done()
        assert len(future.result(timeout=0)) == 0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"values": [b"a", 3]}, SerializationError, r"values\[1\]"),
        ({"values": [b"a"], "keys": [b"a", b"b"]}, ValueError, "keys has 2 rows"),
        ({"values": pa.array([1, 2])}, SerializationError, "int64"),
        ({"values": "abc"}, TypeError, "list or a pyarrow array"),
        # As with send(): a partition the metadata does not have is waited for, max.block.ms.
        ({"values": [b"a", b"b"], "partitions": [0, 9]}, KafkaTimeoutError, "partition count 2"),
        ({"values": [b"a"], "partitions": [None]}, TypeError, "partitions"),
        ({"values": [b"a"], "timestamps": [-3]}, ValueError, "negative"),
        ({"values": [b"a"], "timestamps": [1.5]}, TypeError, r"timestamps\[0\]"),
        ({"values": [b"a"], "headers": [[("k", 3)]]}, TypeError, "headers"),
        ({"values": [b"a", b"x" * 5000]}, RecordTooLargeError, "row 1"),
    ],
)
def test_bad_columns_fail_before_anything_is_sent(bootstrap, make_topic, kwargs, error, match):
    topic = make_topic(partitions=2)
    with KafkaProducer(
        bootstrap_servers=bootstrap, max_request_size=4096, max_block_ms=1500
    ) as producer:
        producer.partitions_for(topic)
        with pytest.raises(error, match=match):
            producer.send_batch(topic, **kwargs)
        producer.flush(timeout=30)
        # Nothing of the refused call was queued: the next record is the topic's first.
        meta = producer.send(topic, b"after", partition=0).get(timeout=30)
        assert meta.offset == 0


def test_memory_running_out_part_way_fails_the_rest_in_the_result(broker, make_topic):
    topic = make_topic(partitions=1)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, buffer_memory=65536, batch_size=16384,
        max_block_ms=0, linger_ms=0,
    )
    try:
        deadline_rows = [b"x" * 1000] * 200  # about 200 KB: more than the pool holds
        wait_for_metadata(producer, topic)  # max.block.ms=0: ask until it is there
        with broker.paused():
            future = producer.send_batch(topic, deadline_rows)
        result = future.result(timeout=60)
    finally:
        producer.close(timeout=30)
    assert 0 < result.failed < len(deadline_rows)
    failed = [i for i, e in enumerate(result.errors) if e is not None]
    assert all(isinstance(result.errors[i], BufferExhaustedError) for i in failed)
    assert failed == list(range(failed[0], len(deadline_rows)))  # a tail, in order
    assert all(result.offsets[i] >= 0 for i in range(failed[0]))  # the head was delivered


def test_send_batch_after_close(bootstrap):
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.close()
    with pytest.raises(IllegalStateError):
        producer.send_batch("t", [b"a"])
