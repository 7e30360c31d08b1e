"""Choosing a partition: murmur2 for keyed records, sticky for the rest, or your own callable.

This is Java's partitioning since Kafka 3.3 (KIP-794), in three parts:

* A record with a key goes to ``to_positive(murmur2(key)) % num_partitions``
  (:func:`partition_for_key`, compiled in :mod:`kafkacore.core.murmur2`): the same partition the
  Java client picks, so consumers that rely on keys see the same layout whichever client wrote.
* A record without a key (or every record, with ``partitioner.ignore.keys``) goes to the topic's
  current *sticky* partition (:class:`BuiltInPartitioner`).  The partitioner stays on one
  partition until about ``batch.size`` bytes went there, then picks another at random among the
  partitions that have a leader, so batches fill up and the load still spreads evenly.
* ``partitioner.class`` replaces both with a callable (see :class:`Partitioner`).
"""

from __future__ import annotations

import random
import threading
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate
from typing import Any, Protocol

from kafkacore.core.murmur2 import murmur2, partition_for_key, to_positive

__all__ = [
    "UNKNOWN_PARTITION",
    "BuiltInPartitioner",
    "Partitioner",
    "murmur2",
    "partition_for_key",
    "to_positive",
]

#: Java's ``RecordMetadata.UNKNOWN_PARTITION``: "any partition will do, the sticky one decides".
UNKNOWN_PARTITION = -1


class Partitioner(Protocol):
    """The shape of a custom partitioner (``partitioner.class``).

    ``partitioner(topic, key_bytes, value_bytes, num_partitions, available_partitions) -> int``

    It gets the *serialized* key and value (``None`` for a null key or value), the topic's
    partition count and the numbers of the partitions that have a leader right now, and returns a
    partition number in ``range(num_partitions)``; :class:`~kafkacore.producer.KafkaProducer`
    checks that and fails the ``send()`` with a clear error otherwise.  It runs on the thread
    that calls ``send()``, once per record without an explicit partition, so it should be quick;
    an exception it raises reaches the caller of ``send()``.  With a custom partitioner there is
    no sticky partitioning and ``partitioner.ignore.keys`` has no effect (as in Java).
    """

    def __call__(
        self,
        topic: str,
        key_bytes: bytes | None,
        value_bytes: bytes | None,
        num_partitions: int,
        available_partitions: Sequence[int],
    ) -> int: ...


def _number(p: Any) -> int:
    # The cluster view may list partition numbers or PartitionInfo-like objects.
    return p if type(p) is int else p.partition


class BuiltInPartitioner:
    """The sticky partition of one topic (Java's ``BuiltInPartitioner``).

    Per record without a key, the producer does::

        partition = sticky.peek_current_partition(cluster)   # which partition now
        ... append the record to that partition's batch ...
        sticky.update_partition_info(partition, appended_bytes, cluster)   # count, maybe switch

    Both are a few attribute reads and writes; a new partition is chosen (at random, among the
    partitions with a leader) only when ``sticky_batch_size`` bytes have gone to the current one.
    ``cluster`` is anything with ``partitions_for_topic(topic)`` and
    ``available_partitions_for_topic(topic)``, returning partition numbers or objects with a
    ``partition`` attribute (``kafkacore.metadata.Cluster``).

    Adaptive partitioning is optional: if the accumulator reports the partitions' queue sizes
    through :meth:`update_partition_load_stats`, the random choice favours partitions with shorter
    queues, as Java's does.  Without that call every available partition is equally likely.

    Concurrency: Java runs ``update_partition_info`` under the lock of the partition's batch
    queue.  Here the current partition and its byte count are plain attributes under the GIL;
    two threads updating at once may lose a few bytes of count, which only delays a switch a
    little, and an update for a partition that is no longer current is ignored.  The first
    choice takes a lock so that concurrent first sends agree on one partition.
    """

    __slots__ = ("topic", "sticky_batch_size", "_partition", "_produced", "_load_stats", "_lock")

    def __init__(self, topic: str, sticky_batch_size: int) -> None:
        if type(sticky_batch_size) is not int or sticky_batch_size < 1:
            # batch.size may be 0 ("no batching"); Java then uses 1, and so should the caller.
            raise ValueError(f"sticky_batch_size must be an int >= 1, got {sticky_batch_size!r}")
        #: The topic this partitioner chooses for.
        self.topic = topic
        #: Bytes to send to one partition before switching (``batch.size``).
        self.sticky_batch_size = sticky_batch_size
        # The current sticky partition, -1 before the first record.
        self._partition = UNKNOWN_PARTITION
        # Bytes appended to the current sticky partition since it was chosen.
        self._produced = 0
        # (cumulative frequency table, partition ids) from the queue sizes, or None: uniform.
        self._load_stats: tuple[list[int], tuple[int, ...]] | None = None
        # Taken only to choose the first partition, so that racing first sends agree.
        self._lock = threading.Lock()

    @property
    def produced_bytes(self) -> int:
        """Bytes appended to the current sticky partition since it was chosen (Kafka's
        ``StickyPartitionInfo.producedBytes``): 0 right after a new choice."""
        return self._produced

    # -- per record ----------------------------------------------------------------------------

    def peek_current_partition(self, cluster: Any) -> int:
        """The partition a record without a key goes to now."""
        partition = self._partition
        if partition >= 0:
            return partition
        with self._lock:
            if self._partition < 0:
                self._partition = self._next_partition(cluster)
                self._produced = 0
            return self._partition

    def is_partition_changed(self, partition: int) -> bool:
        """True if the sticky partition is no longer ``partition`` (another thread switched it)."""
        return partition != self._partition

    def update_partition_info(
        self, partition: int, appended_bytes: int, cluster: Any, enable_switch: bool = True
    ) -> None:
        """Count ``appended_bytes`` sent to ``partition``; switch once enough went there.

        The switch comes when ``sticky_batch_size`` bytes have been produced, or, if the caller
        passes ``enable_switch=False`` (its batch is not full yet, so switching now would leave a
        small batch behind), no later than twice that.  Java's comment: with a long
        ``linger.ms`` this aligns switches with batch boundaries.
        """
        if partition != self._partition:
            return
        produced = self._produced + appended_bytes
        self._produced = produced
        size = self.sticky_batch_size
        if (produced >= size and enable_switch) or produced >= 2 * size:
            self._produced = 0
            self._partition = self._next_partition(cluster)

    # -- per switch ----------------------------------------------------------------------------

    def _next_partition(self, cluster: Any) -> int:
        r = random.getrandbits(31)  # Java: toPositive(ThreadLocalRandom.nextInt())
        stats = self._load_stats
        if stats is not None:
            # Weighted: a uniform number in [0, total) lands in the slot of the first cumulative
            # weight strictly greater than it.
            cft, ids = stats
            return ids[bisect_right(cft, r % cft[-1])]
        available = cluster.available_partitions_for_topic(self.topic)
        if available:
            return _number(available[r % len(available)])
        # No partition has a leader: any partition will do; the batch waits for a leader there.
        count = len(cluster.partitions_for_topic(self.topic))
        if count == 0:
            raise ValueError(f"topic {self.topic!r} has no partitions in this cluster view")
        return r % count

    def update_partition_load_stats(
        self,
        queue_sizes: Sequence[int] | None,
        partition_ids: Sequence[int] = (),
        length: int | None = None,
    ) -> None:
        """Weight the next choices by queue sizes (adaptive partitioning, optional).

        ``queue_sizes[i]`` is the number of batches waiting for partition ``partition_ids[i]``;
        partitions without a leader are left out.  ``length`` (default: all) is how many of the
        entries count: the accumulator may leave out, at the end, partitions whose broker has
        not taken data for ``partitioner.availability.timeout.ms``.  ``None`` turns weighting off.
        A partition with a queue of ``q`` gets weight ``max + 1 - q``.
        """
        if queue_sizes is None:
            self._load_stats = None
            return
        if len(partition_ids) != len(queue_sizes):
            raise ValueError("queue_sizes and partition_ids differ in length")
        if length is None:
            length = len(queue_sizes)
        if not 0 <= length <= len(queue_sizes):
            raise ValueError(f"length {length} outside 0..{len(queue_sizes)}")
        # Fewer than two partitions in the topic: nothing to weigh (Java's rule).
        if length < 1 or len(queue_sizes) < 2:
            self._load_stats = None
            return
        sizes = queue_sizes[:length]
        top = max(sizes)
        if length == len(queue_sizes) and min(sizes) == top:
            # All equal and none left out: uniform choice is the same thing, and cheaper.
            self._load_stats = None
            return
        cft = list(accumulate(top + 1 - q for q in sizes))
        # One assignment, so a concurrent _next_partition sees the old or the new stats whole.
        self._load_stats = (cft, tuple(partition_ids[:length]))

    def __repr__(self) -> str:
        return (
            f"BuiltInPartitioner(topic={self.topic!r}, partition={self._partition}, "
            f"produced={self._produced}/{self.sticky_batch_size})"
        )
