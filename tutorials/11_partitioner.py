"""Where do records go?  Keys by murmur2 (as the Java client), null keys by the sticky partitioner.

No broker needed: partitioning is decided on the client, before a record is ever sent.  We check
our keyed choices against kafka-python's partitioner, written independently from the Java
client's, and watch the sticky partitioner fill one batch at a time.

Run it from the repository's root:

    python tutorials/11_partitioner.py

Needs: kafkacore's compiled core, built in place once
(``python setup.py build_ext --inplace``); no broker.
kafka-python (the ``test`` extra) for the comparison.
"""

import collections
import random

from kafka.partitioner.default import DefaultPartitioner

from kafkacore.metadata import Cluster, Node, PartitionInfo
from kafkacore.partitioner import BuiltInPartitioner, murmur2, partition_for_key, to_positive

PARTITIONS = 6


class KafkaPythonCluster:
    """What kafka-python's partitioner wants to know about the cluster: one topic, n partitions."""

    def __init__(self, topic: str, n: int) -> None:
        self.topic, self.n = topic, n

    def topics(self) -> set[str]:
        return {self.topic}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.n))

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.n))


def keyed() -> None:
    # --- keyed
    kafka_python = DefaultPartitioner()
    print(f"{'key':<12} {'murmur2':>12} {'positive':>11}  partition (of {PARTITIONS})")
    for key in [b"alice", b"bob", b"carol", b"dave", b"", b"\xff\x00"]:
        h = murmur2(key)  # a signed 32-bit int, exactly Java's Utils.murmur2
        ours = partition_for_key(key, PARTITIONS)  # to_positive(h) % PARTITIONS
        theirs = kafka_python.partition(
            "orders", None, key, None, None, KafkaPythonCluster("orders", PARTITIONS)
        )
        print(f"{key!r:<12} {h:>12} {to_positive(h):>11}  {ours}")
        assert ours == theirs == to_positive(h) % PARTITIONS
    # --- end keyed

    # The same check on many keys: the partition depends on the key bytes and the partition
    # count only, so every client that follows Java's rule agrees.
    rng = random.Random(42)
    kafka_python = DefaultPartitioner()
    for _ in range(20000):
        key = rng.randbytes(rng.randrange(0, 40))
        n = rng.randrange(1, 200)
        theirs = kafka_python.partition("t", None, key, None, None, KafkaPythonCluster("t", n))
        assert partition_for_key(key, n) == theirs
    print("20000 random keys: kafkacore and kafka-python agree on every partition")

    # Adding partitions moves keys: that is why keyed topics rarely grow.
    moved = sum(
        partition_for_key(b"user-%d" % i, 6) != partition_for_key(b"user-%d" % i, 8)
        for i in range(1000)
    )
    print(f"growing 6 -> 8 partitions moves {moved} of 1000 keys to another partition")
    assert moved > 500


def sticky() -> None:
    # --- sticky
    cluster = Cluster(
        [Node(1, "127.0.0.1", 9092)],
        [PartitionInfo("clicks", p, 1, 0) for p in range(PARTITIONS)],
    )
    partitioner = BuiltInPartitioner("clicks", 16384)  # batch.size
    sent = []
    for _ in range(6000):
        record_size = 1024
        partition = partitioner.peek_current_partition(cluster)
        # ... the producer appends the record to `partition`'s batch here ...
        partitioner.update_partition_info(partition, record_size, cluster)
        sent.append(partition)
    # --- end sticky
    runs = [sent[0]] + [sent[i] for i in range(1, len(sent)) if sent[i] != sent[i - 1]]
    print(f"first runs of partitions: {runs[:12]} ...")
    # 16 records of 1 KiB fill a 16 KiB batch; only then does the partitioner move on.
    first_run = next(i for i, p in enumerate(sent) if p != sent[0])
    assert first_run % 16 == 0
    counts = collections.Counter(sent)
    print("records per partition:", dict(sorted(counts.items())))
    assert set(counts) == set(range(PARTITIONS))
    # Over 375 batches, each partition got a fair share (give or take): no partition starves.
    assert all(1000 / 2 < c < 1000 * 2 for c in counts.values())


if __name__ == "__main__":
    random.seed(7)
    keyed()
    sticky()
