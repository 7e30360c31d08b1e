"""Partitioning: murmur2 against kafka-python and Java's vectors, sticky switching, adaptive weights."""

from __future__ import annotations

import array
import collections
import random
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import DefaultPartitioner
from kafka.partitioner.default import murmur2 as kp_murmur2
from support.examples import examples

from kafkacore.config import ProducerConfig
from kafkacore.metadata import Cluster, Node, PartitionInfo
from kafkacore.partitioner import (
    UNKNOWN_PARTITION,
    BuiltInPartitioner,
    Partitioner,
    murmur2,
    partition_for_key,
    to_positive,
)

# Java's own vectors (apache/kafka clients/src/test/.../utils/UtilsTest.java, testMurmur2).
JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


class KpCluster:
    """The little cluster kafka-python's DefaultPartitioner reads: its own shape, not ours."""

    def __init__(self, topic: str, n: int):
        self._topic, self._n = topic, n

    def topics(self):
        return {self._topic}

    def partitions_for_topic(self, topic):
        return set(range(self._n))

    def available_partitions_for_topic(self, topic):
        return set(range(self._n))


KP = DefaultPartitioner()


def kafka_python_partition(key: bytes, n: int) -> int:
    return KP.partition("t", None, key, None, None, KpCluster("t", n))


# -- murmur2 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "expected"), sorted(JAVA_VECTORS.items()))
def test_java_vectors(data, expected):
    assert murmur2(data) == expected


@settings(max_examples=examples(3000), deadline=None)
@given(st.binary(max_size=200), st.integers(1, 1000))
def test_murmur2_and_partition_match_kafka_python(key, n):
    h = murmur2(key)
    assert -(2**31) <= h < 2**31  # signed 32-bit, like Java's int
    assert h & 0xFFFFFFFF == kp_murmur2(key)
    assert partition_for_key(key, n) == kafka_python_partition(key, n)


def test_every_length_mod_4_and_the_empty_key():
    rng = random.Random(1234)
    for length in range(0, 67):  # every tail length, many blocks
        for _ in range(30):
            key = rng.randbytes(length)
            assert murmur2(key) & 0xFFFFFFFF == kp_murmur2(key), length
            for n in (1, 3, 12, 100):
                assert partition_for_key(key, n) == kafka_python_partition(key, n)
    # The empty key is a key (hashed), not a null key.
    assert murmur2(b"") & 0xFFFFFFFF == kp_murmur2(b"")
    assert partition_for_key(b"", 7) == kafka_python_partition(b"", 7)


def test_high_bytes_are_unsigned():
    # Java masks each byte with 0xff; a signed-char slip would differ exactly here.
    for key in (b"\xff", b"\x80\x81", b"\xff\xfe\xfd", b"\xff" * 4, b"\x80" * 9):
        assert murmur2(key) & 0xFFFFFFFF == kp_murmur2(key)


def test_bytes_like_inputs():
    key = b"order-42"
    expected = murmur2(key)
    assert murmur2(bytearray(key)) == expected
    assert murmur2(memoryview(key)) == expected
    assert murmur2(memoryview(b"xx" + key)[2:]) == expected
    assert murmur2(array.array("B", key)) == expected
    assert partition_for_key(bytearray(key), 10) == partition_for_key(key, 10)


def test_bad_inputs_raise_typed_errors():
    with pytest.raises(TypeError, match="not str"):
        murmur2("text")
    with pytest.raises(TypeError, match="None"):
        murmur2(None)
    with pytest.raises(TypeError):
        murmur2(12345)
    with pytest.raises(BufferError):
        murmur2(memoryview(b"abcdef")[::2])  # not contiguous
    with pytest.raises(ValueError, match="num_partitions"):
        partition_for_key(b"k", 0)
    with pytest.raises(ValueError, match="num_partitions"):
        partition_for_key(b"k", -3)
    with pytest.raises(TypeError):
        partition_for_key("k", 3)


def test_to_positive_is_a_mask_not_abs():
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5
    assert to_positive(murmur2(b"21")) == (-973932308) & 0x7FFFFFFF


def test_large_keys_hashed_without_the_gil_agree():
    # 64 KiB and more take the nogil path, for bytes and for exported buffers alike.
    rng = random.Random(7)
    for length in (65535, 65536, 65537, 1 << 20):
        key = rng.randbytes(length)
        expected = kp_murmur2(key)
        assert murmur2(key) & 0xFFFFFFFF == expected
        assert murmur2(bytearray(key)) & 0xFFFFFFFF == expected
        assert partition_for_key(memoryview(key), 97) == kafka_python_partition(key, 97)


# -- the sticky partitioner ------------------------------------------------------------------------


class Ints:
    """A cluster view listing partition numbers, the smallest shape the partitioner accepts."""

    def __init__(self, n: int, available=None):
        self.all = list(range(n))
        self.available = list(range(n)) if available is None else list(available)

    def partitions_for_topic(self, topic):
        return list(self.all)

    def available_partitions_for_topic(self, topic):
        return list(self.available)


def real_cluster(n: int, leaderless=()) -> Cluster:
    """kafkacore's own Cluster (kafkacore.metadata), with PartitionInfo entries."""
    parts = [PartitionInfo("t", p, None if p in leaderless else 1, 0) for p in range(n)]
    return Cluster([Node(1, "127.0.0.1", 9092)], parts)


def run(sticky, cluster, sizes):
    """Append records of ``sizes`` bytes the way the producer does; the partition of each."""
    out = []
    for size in sizes:
        p = sticky.peek_current_partition(cluster)
        out.append(p)
        sticky.update_partition_info(p, size, cluster)
    return out


def runs(partitions):
    """Lengths of the runs of equal consecutive partitions."""
    lengths, last = [], object()
    for p in partitions:
        if p == last:
            lengths[-1] += 1
        else:
            lengths.append(1)
            last = p
    return lengths


def test_switches_after_batch_size_bytes():
    random.seed(11)
    sticky = BuiltInPartitioner("t", 1000)
    cluster = Ints(1000)  # many partitions: two switches in a row rarely pick the same one
    parts = run(sticky, cluster, [100] * 2000)
    # Each partition gets exactly 10 records of 100 bytes (1000 bytes), then the next is chosen.
    switch_points = [i for i in range(1, len(parts)) if parts[i] != parts[i - 1]]
    assert all(i % 10 == 0 for i in switch_points)
    assert len(switch_points) >= 190
    # Bytes that do not divide the batch size: switch on the record that reaches it.
    sticky = BuiltInPartitioner("t", 1000)
    parts = run(sticky, cluster, [300] * 4)
    assert parts[0] == parts[1] == parts[2] == parts[3]  # 300, 600, 900, then 1200 >= 1000
    assert sticky.produced_bytes == 0  # the fourth record reached 1000 bytes: a new choice began


def test_enable_switch_false_waits_for_twice_the_batch():
    sticky = BuiltInPartitioner("t", 1000)
    cluster = Ints(1000)
    first = sticky.peek_current_partition(cluster)
    for _ in range(19):  # 1900 bytes: not yet 2x
        sticky.update_partition_info(first, 100, cluster, enable_switch=False)
        assert sticky.peek_current_partition(cluster) == first
    sticky.update_partition_info(first, 100, cluster, enable_switch=False)  # 2000 bytes
    assert sticky.produced_bytes == 0  # a new partition was chosen (it may, rarely, be the same)


def test_update_for_a_stale_partition_is_ignored():
    sticky = BuiltInPartitioner("t", 100)
    cluster = Ints(10)
    current = sticky.peek_current_partition(cluster)
    stale = (current + 1) % 10
    assert sticky.is_partition_changed(stale) and not sticky.is_partition_changed(current)
    sticky.update_partition_info(stale, 10_000, cluster)
    assert sticky.peek_current_partition(cluster) == current
    assert sticky.produced_bytes == 0


def test_distribution_over_many_batches_covers_every_partition():
    random.seed(5)
    sticky = BuiltInPartitioner("t", 16384)
    cluster = real_cluster(12)
    parts = run(sticky, cluster, [1024] * (16 * 1200))  # 1200 batches' worth
    counts = collections.Counter(parts)
    assert set(counts) == set(range(12))
    # Uniform on average: every partition got between half and twice its fair share.
    fair = len(parts) / 12
    assert all(fair / 2 < c < fair * 2 for c in counts.values()), counts
    # And it is sticky: records come in runs that are multiples of a batch.
    assert all(r % 16 == 0 for r in runs(parts))


def test_only_available_partitions_are_chosen():
    random.seed(3)
    sticky = BuiltInPartitioner("t", 10)
    cluster = real_cluster(8, leaderless={0, 2, 5})
    parts = set(run(sticky, cluster, [10] * 2000))
    assert parts == {1, 3, 4, 6, 7}
    sticky = BuiltInPartitioner("t", 10)
    parts = set(run(sticky, Ints(8, available=[6]), [10] * 50))
    assert parts == {6}


def test_no_available_partition_falls_back_to_any():
    random.seed(4)
    sticky = BuiltInPartitioner("t", 10)
    parts = set(run(sticky, real_cluster(5, leaderless=range(5)), [10] * 1000))
    assert parts == set(range(5))


def test_unknown_topic_is_a_clear_error():
    sticky = BuiltInPartitioner("missing", 10)
    with pytest.raises(ValueError, match="'missing' has no partitions"):
        sticky.peek_current_partition(real_cluster(3))


@pytest.mark.parametrize("size", [0, -1, 1.5, None, True])
def test_sticky_batch_size_must_be_positive_int(size):
    with pytest.raises(ValueError, match="sticky_batch_size"):
        BuiltInPartitioner("t", size)


def test_racing_first_sends_agree():
    for attempt in range(20):
        sticky = BuiltInPartitioner("t", 1 << 30)
        cluster = Ints(1000)
        barrier = threading.Barrier(4)
        seen = []

        def first_send(sticky=sticky, cluster=cluster, barrier=barrier, seen=seen):
            barrier.wait(timeout=5)
            seen.append(sticky.peek_current_partition(cluster))

        threads = [threading.Thread(target=first_send) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=5)
        assert len(seen) == 4 and len(set(seen)) == 1, (attempt, seen)


def test_unknown_partition_constant():
    assert UNKNOWN_PARTITION == -1  # Java's RecordMetadata.UNKNOWN_PARTITION


# -- adaptive partitioning ---------------------------------------------------------------------------


def switches(sticky, cluster, n):
    """The partition chosen at each of ``n`` switches (batch size 1, one byte per record)."""
    return run(sticky, cluster, [1] * n)


def test_adaptive_weights_follow_javas_table():
    # Java's example: queue sizes 0 3 1 -> weights 4 1 3 (cumulative 4 5 8).
    random.seed(99)
    sticky = BuiltInPartitioner("t", 1)
    sticky.update_partition_load_stats([0, 3, 1], [10, 11, 12])
    counts = collections.Counter(switches(sticky, Ints(13), 16000))
    assert set(counts) == {10, 11, 12}
    for partition, share in ((10, 4 / 8), (11, 1 / 8), (12, 3 / 8)):
        assert abs(counts[partition] / 16000 - share) < 0.03, counts


def test_adaptive_excluded_partitions_are_never_chosen():
    random.seed(7)
    sticky = BuiltInPartitioner("t", 1)
    # Four partitions with leaders; only the first two count (the others timed out).
    sticky.update_partition_load_stats([2, 2, 0, 0], [0, 1, 2, 3], length=2)
    assert set(switches(sticky, Ints(4), 2000)) == {0, 1}


def test_adaptive_off_when_equal_too_few_or_none():
    random.seed(8)
    cluster = Ints(6, available=[0, 1, 2, 3, 4, 5])
    sticky = BuiltInPartitioner("t", 1)
    sticky.update_partition_load_stats([3, 3, 3], [0, 1, 2])  # all equal: uniform over available
    assert set(switches(sticky, cluster, 2000)) == set(range(6))
    sticky.update_partition_load_stats([0, 9], [0, 1])
    # The first record still goes to the partition chosen before; the switches use the weights.
    assert set(switches(sticky, cluster, 300)[1:]) == {0, 1}
    sticky.update_partition_load_stats(None)
    assert set(switches(sticky, cluster, 2000)) == set(range(6))
    sticky.update_partition_load_stats([5], [4])  # a one-partition topic: nothing to weigh
    assert set(switches(sticky, cluster, 2000)) == set(range(6))


def test_adaptive_bad_arguments():
    sticky = BuiltInPartitioner("t", 1)
    with pytest.raises(ValueError, match="differ in length"):
        sticky.update_partition_load_stats([1, 2], [0])
    with pytest.raises(ValueError, match="length 3"):
        sticky.update_partition_load_stats([1, 2], [0, 1], length=3)


# -- keys ignored, custom partitioners -------------------------------------------------------------


def test_ignore_keys_setting_and_sticky_path():
    # partitioner.ignore.keys routes keyed records through the sticky partitioner: for the
    # partitioner that is just a record whose partition it chooses; the key never matters.
    cfg = ProducerConfig(bootstrap_servers="h:1", partitioner_ignore_keys=True)
    assert cfg.partitioner_ignore_keys is True
    random.seed(2)
    sticky = BuiltInPartitioner("t", 100)
    parts = run(sticky, Ints(50), [10] * 1000)
    keyed_parts = {partition_for_key(b"same-key", 50)}
    assert len(set(parts)) > 10 and not set(parts) <= keyed_parts


def kafka_python_style(topic, key_bytes, value_bytes, num_partitions, available_partitions):
    """A custom partitioner: kafka-python's choice for keys, the first available otherwise."""
    if key_bytes is None:
        return min(available_partitions)
    return kafka_python_partition(key_bytes, num_partitions)


def test_custom_partitioner_shape():
    custom: Partitioner = kafka_python_style
    cfg = ProducerConfig(bootstrap_servers="h:1", partitioner_class=custom)
    fn = cfg.partitioner_class
    assert fn is kafka_python_style
    for i in range(500):
        key = b"user-%d" % i
        assert fn("t", key, b"v", 9, [0, 1, 2]) == partition_for_key(key, 9)
    assert fn("t", None, b"v", 9, [4, 7]) == 4


# -- through a real producer and broker ------------------------------------------------------------


def _send_all(producer, topic, records):
    futures = [producer.send(topic, value, key=key) for key, value in records]
    producer.flush(timeout=60)
    return [f.get(timeout=30).partition for f in futures]


def test_ignore_keys_sends_one_key_to_every_partition(bootstrap, make_topic):
    from readback import read_kafka_python

    from kafkacore import KafkaProducer

    topic = make_topic(partitions=4)
    records = [(b"same-key", b"v%04d" % i + b"x" * 100) for i in range(600)]
    # Keys honoured: one key, one partition, the one kafka-python computes.
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        keyed = _send_all(producer, topic, records)
    assert set(keyed) == {kafka_python_partition(b"same-key", 4)}
    # Keys ignored: the sticky partitioner spreads them, a batch (1 KiB here) at a time.
    with KafkaProducer(
        bootstrap_servers=bootstrap, partitioner_ignore_keys=True, batch_size=1024
    ) as producer:
        sticky = _send_all(producer, topic, records)
    assert set(sticky) == {0, 1, 2, 3}
    lengths = runs(sticky)
    # ~110-byte records, 1024 bytes per switch: runs of about nine records (a run may be longer
    # when the same partition is chosen again), never one-record round robin.
    assert sorted(lengths)[len(lengths) // 2] >= 5
    # The broker holds what the acknowledgements said, as a consumer we did not write reads it.
    consumed = read_kafka_python(bootstrap, topic, 4, len(records) * 2)
    assert collections.Counter(c.partition for c in consumed) == collections.Counter(keyed + sticky)
