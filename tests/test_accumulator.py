"""The RecordAccumulator on its own: adaptive partitioning's feed (KIP-794).

A real accumulator, BufferPool and Cluster; no broker is needed because nothing is sent: ready()
is the Sender's question, and we ask it here ourselves.
"""

from __future__ import annotations

import collections
import random

import pytest

from kafkacore.accumulator import RecordAccumulator
from kafkacore.core import BufferPool
from kafkacore.metadata import Cluster, Node, PartitionInfo

BATCH = 1024
VALUE = b"v" * 700  # two never fit in one batch: one record, one batch


def accumulator(**settings) -> RecordAccumulator:
    options = dict(
        batch_size=BATCH, compression="none", compression_level=None, linger_ms=60_000,
        retry_backoff_ms=100, retry_backoff_max_ms=1000, delivery_timeout_ms=120_000,
        pool=BufferPool(1 << 20, BATCH), adaptive_partitioning=True,
    )
    options.update(settings)
    return RecordAccumulator(**options)


def cluster(leaders) -> Cluster:
    """Topic "t" with one partition per entry of ``leaders`` (a node id, or None: leaderless)."""
    nodes = [Node(1, "127.0.0.1", 9092), Node(2, "127.0.0.1", 9093)]
    return Cluster(nodes, [PartitionInfo("t", p, leader, 0) for p, leader in enumerate(leaders)])


def queue(acc: RecordAccumulator, partition: int, batches: int) -> None:
    for _ in range(batches):
        acc.append("t", partition, 0, None, VALUE, None, None, 0, 0)


def choices(partitioner, view: Cluster, n: int) -> collections.Counter:
    """Where the sticky partitioner goes at each of ``n`` switches (a full batch each time)."""
    counts = collections.Counter()
    for _ in range(n):
        p = partitioner.peek_current_partition(view)
        partitioner.update_partition_info(p, partitioner.sticky_batch_size, view)
        counts[partitioner.peek_current_partition(view)] += 1
    return counts


def test_queue_sizes_weigh_the_sticky_choice():
    random.seed(11)
    acc = accumulator()
    view = cluster([1, 1, 2])
    partitioner = acc.built_in_partitioner("t")
    assert acc.built_in_partitioner("t") is partitioner  # one per topic
    queue(acc, 0, 1)
    queue(acc, 1, 3)
    acc.ready(view, 0)
    # Partition 2 has never had a batch: adaptive weights would starve it, so still uniform.
    assert set(choices(partitioner, view, 600)) == {0, 1, 2}
    queue(acc, 2, 2)
    acc.ready(view, 0)
    # Queues 1, 3, 2 -> weights 3, 1, 2 (longest + 1 - queue): shares 1/2, 1/6, 1/3.
    counts = choices(partitioner, view, 12_000)
    for partition, share in ((0, 3 / 6), (1, 1 / 6), (2, 2 / 6)):
        assert abs(counts[partition] / 12_000 - share) < 0.03, counts


def test_off_means_uniform_whatever_the_queues():
    random.seed(12)
    acc = accumulator(adaptive_partitioning=False)
    view = cluster([1, 1, 2])
    partitioner = acc.built_in_partitioner("t")
    for partition, batches in enumerate((1, 9, 1)):
        queue(acc, partition, batches)
    acc.ready(view, 0)
    counts = choices(partitioner, view, 12_000)
    assert all(abs(counts[p] / 12_000 - 1 / 3) < 0.03 for p in range(3)), counts


def test_leaderless_partitions_are_left_out():
    random.seed(13)
    acc = accumulator()
    view = cluster([1, None, 2])
    partitioner = acc.built_in_partitioner("t")
    for partition, batches in enumerate((1, 1, 2)):
        queue(acc, partition, batches)
    acc.ready(view, 0)
    counts = choices(partitioner, view, 6000)
    assert set(counts) == {0, 2}
    assert abs(counts[0] / 6000 - 2 / 3) < 0.03, counts  # weights 2 and 1


@pytest.mark.parametrize("timeout_ms", [0, 1000])
def test_a_lagging_broker_loses_its_partitions_for_a_while(timeout_ms):
    random.seed(14)
    acc = accumulator(partition_availability_timeout_ms=timeout_ms)
    view = cluster([1, 1, 2])
    partitioner = acc.built_in_partitioner("t")
    for partition in range(3):
        queue(acc, partition, 1)
    # What the Sender reports: node 1 takes its batches; node 2 has had data ready for 5 s
    # that its connection could not take.
    for node, can_drain in ((1, True), (2, True), (1, True), (2, False)):
        acc.update_node_latency_stats(node, 0 if can_drain else 5000, can_drain)
    acc.ready(view, 5000)
    if timeout_ms == 0:  # the setting's default: nobody is left out
        assert set(choices(partitioner, view, 600)) == {0, 1, 2}
        return
    assert set(choices(partitioner, view, 600)) == {0, 1}
    acc.update_node_latency_stats(2, 5100, True)  # node 2 took data again
    acc.ready(view, 5100)
    assert set(choices(partitioner, view, 600)) == {0, 1, 2}
