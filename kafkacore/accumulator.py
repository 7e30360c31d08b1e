"""RecordAccumulator: where records wait in batches until the Sender takes them (Java's ``RecordAccumulator``).

The main thread appends records; the Sender thread asks which leaders have something sendable
(``ready``), takes batches per node (``drain``), gives failed ones back (``reenqueue``) and frees
finished ones (``deallocate``).  Everything here runs once per *batch* except ``append``, whose
per-record work is the compiled ``ProducerBatch.try_append``.

Locks (docs/design.rst, principle 6):

- ``self.batches`` is a :class:`~kafkacore.core.CopyOnWriteMap`: reads take no lock.
- each partition's :class:`~kafkacore.core.appender.PartitionQueue` has its own lock (``with
  queue:``) guarding its ``batches`` deque and the batches in it (appends to the last batch,
  drains from the first);
- ``self._incomplete`` (every batch created and not yet deallocated) has its own lock;
- ``_muted`` and ``_drain_index`` are touched by the Sender thread only.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkacore.core import BufferPool, CopyOnWriteMap, MemoryRecordsBuilder, ProducerBatch
from kafkacore.core.appender import ClosedFlag, PartitionQueue
from kafkacore.core.record_sizes import estimate_size_upper_bound
from kafkacore.errors import IllegalStateError, KafkaTimeoutError
from kafkacore.partitioner import BuiltInPartitioner

if TYPE_CHECKING:
    from kafkacore.transaction_manager import TransactionManager

TopicPartition = tuple  # (topic: str, partition: int)


@dataclass
class ReadyCheckResult:
    """What ``ready()`` found: the nodes to drain, when to look again, leaders we do not know."""

    ready_nodes: set[int]
    next_ready_check_delay_ms: float
    unknown_leader_topics: set[str] = field(default_factory=set)


class RecordAccumulator:
    """Collects records into per-partition batches of ``batch.size`` bytes."""

    def __init__(
        self,
        *,
        batch_size: int,
        compression: str,
        compression_level: int | None,
        linger_ms: int,
        retry_backoff_ms: int,
        retry_backoff_max_ms: int,
        delivery_timeout_ms: int,
        pool: BufferPool,
        transaction_manager: TransactionManager | None = None,
        adaptive_partitioning: bool = False,
        partition_availability_timeout_ms: int = 0,
    ) -> None:
        self.batch_size = batch_size
        self.compression = compression
        self.compression_level = compression_level
        self.linger_ms = linger_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = max(retry_backoff_max_ms, retry_backoff_ms)
        self.delivery_timeout_ms = delivery_timeout_ms
        self.pool = pool
        self.transaction_manager = transaction_manager
        #: tp -> PartitionQueue; the compiled send path reads it too.
        self.batches: CopyOnWriteMap = CopyOnWriteMap()
        # Every batch created and not yet deallocated -> whether its buffer came from the pool
        # (split batches live on plain heap buffers and give nothing back).
        self._incomplete: dict[ProducerBatch, bool] = {}
        self._incomplete_lock = threading.Lock()
        self._muted: set[TopicPartition] = set()
        self._drain_index: dict[int, int] = {}
        # Counters read by ready() without a lock: a stale read only delays a send by one loop.
        self._appends_in_progress = 0
        self._appends_lock = threading.Lock()
        self._flushes_in_progress = 0
        self._flush_lock = threading.Lock()
        #: Set by close(): no more appends.  A compiled flag, which the send path reads under
        #: the partition's lock without an attribute lookup (``closed`` reads it too).
        self.closed_flag = ClosedFlag()
        # Adaptive partitioning (KIP-794): ready() tells each topic's sticky partitioner how long
        # its partitions' queues are, leaving out partitions whose leader has not been drained for
        # partition_availability_timeout_ms (0: none left out).
        self.adaptive_partitioning = adaptive_partitioning
        self.partition_availability_timeout_ms = partition_availability_timeout_ms
        #: topic -> BuiltInPartitioner; the send path adds, the Sender thread reads.
        self.partitioners: CopyOnWriteMap = CopyOnWriteMap()
        # node -> [ready_ms, drain_ms]: the last time the node had something ready, and the last
        # time it could take it.  Written and read by the Sender thread only.
        self._node_latency: dict[int, list[int]] = {}
        # Batch -> the attempt that goes out without back-off, because a Produce response named a
        # new leader for its partition (KIP-951): a new leader is no reason to wait.
        self._retry_now: dict[ProducerBatch, int] = {}

    @property
    def closed(self) -> bool:
        """Whether close() was called: appends are refused from then on."""
        return self.closed_flag.is_set

    # -- the main thread ------------------------------------------------------------------

    def append(
        self,
        topic: str,
        partition: int,
        timestamp_ms: int,
        key: Any,
        value: Any,
        headers: Any,
        callback: Any,
        max_block_ms: int,
        now_ms: int,
        row: int = -1,
    ) -> tuple[Any, bool, bool]:
        """Append one record; return ``(future, batch_is_full, new_batch_created)``.

        Java's two-phase locking: first try the last batch under the partition's lock; if it
        is full, allocate a buffer from the BufferPool *outside* the lock (it may block for
        ``max.block.ms``), then take the lock again, since another thread may have made a new
        batch meanwhile, and only then start a batch of our own.
        """
        tp = (topic, partition)
        pq = self.batches.get(tp)
        if pq is None:
            pq = self.batches.put_if_absent(tp, PartitionQueue())
        with self._appends_lock:
            self._appends_in_progress += 1
        buffer = None
        try:
            with pq:
                if self.closed:
                    raise IllegalStateError("cannot send: the producer is closed")
                appended = self._try_append(pq, timestamp_ms, key, value, headers, callback, now_ms, row)
                if appended is not None:
                    return appended
            size = max(self.batch_size, estimate_size_upper_bound(key, value, headers))
            buffer = self.pool.allocate(size, max_block_ms)
            with pq:
                if self.closed:
                    raise IllegalStateError("cannot send: the producer is closed")
                appended = self._try_append(pq, timestamp_ms, key, value, headers, callback, now_ms, row)
                if appended is not None:
                    return appended  # another thread made a batch; our buffer goes back below
                builder = MemoryRecordsBuilder(
                    buffer,
                    compression=self.compression,
                    compression_level=self.compression_level,
                    # Full at batch.size, even on a bigger buffer (a large first record); with
                    # batch.size=0, every record is a batch of its own: batching is off.
                    write_limit=self.batch_size,
                )
                batch = ProducerBatch(topic, partition, builder, now_ms)
                future = batch.try_append(timestamp_ms, key, value, headers, callback, now_ms, row)
                pq.batches.append(batch)
                with self._incomplete_lock:
                    self._incomplete[batch] = True
                buffer = None  # the batch owns it now
                return future, len(pq.batches) > 1 or batch.is_full(), True
        finally:
            if buffer is not None:
                self.pool.deallocate(buffer)
            with self._appends_lock:
                self._appends_in_progress -= 1

    @staticmethod
    def _try_append(pq, timestamp_ms, key, value, headers, callback, now_ms, row):
        if not pq.batches:
            return None
        last = pq.batches[-1]
        future = last.try_append(timestamp_ms, key, value, headers, callback, now_ms, row)
        if future is None:
            last.close_for_record_appends()  # full: the caller starts a new batch behind it
            return None
        return future, len(pq.batches) > 1 or last.is_full(), False

    # -- the Sender thread ------------------------------------------------------------------

    def _backoff_ms(self, batch: ProducerBatch) -> float:
        """Exponential retry back-off: retry.backoff.ms doubling up to retry.backoff.max.ms."""
        if batch.attempts <= 0 or self._retry_now.get(batch) == batch.attempts:
            return 0
        return min(self.retry_backoff_ms * (2 ** (batch.attempts - 1)), self.retry_backoff_max_ms)

    def ready(self, cluster, now_ms: int) -> ReadyCheckResult:
        """Which leaders have a sendable batch: full, lingered long enough, or being flushed,
        memory waiters queued, or closing; a batch in retry waits out its back-off first."""
        ready_nodes: set[int] = set()
        # With nothing queued the Sender may sleep until woken (send() wakes it for a new batch).
        next_delay = float("inf")
        unknown: set[str] = set()
        exhausted = self.pool.queued() > 0
        flushing = self._flushes_in_progress > 0
        # topic -> [(partition, batches queued)], for adaptive partitioning; None when off.
        queues: dict[str, list[tuple[int, int]]] | None = (
            {} if self.adaptive_partitioning and len(self.partitioners) else None
        )
        tm = self.transaction_manager
        transactional = tm is not None and tm.transactional_id is not None
        for tp, pq in self.batches.items():
            with pq:
                queued = len(pq.batches)
                first = pq.batches[0] if queued else None
            if queues is not None:
                queues.setdefault(tp[0], []).append((tp[1], queued))
            if first is None:
                continue
            if transactional:
                # A partition's first batch in a transaction: AddPartitionsToTxn goes now, while
                # the batch lingers, not once it is ready (Java adds it at send()).
                tm.partition_needs_adding(tp)
            several = queued > 1
            # Whatever else happens, look again by the time this batch must expire.
            next_delay = min(next_delay, max(first.created_ms + self.delivery_timeout_ms - now_ms, 0))
            leader = cluster.leader_for(tp[0], tp[1])
            if leader is None:
                unknown.add(tp[0])
                continue
            if leader in ready_nodes or tp in self._muted:
                continue
            backoff = self._backoff_ms(first)
            waited = now_ms - (first.last_attempt_ms if first.attempts > 0 else first.created_ms)
            backing_off = waited < backoff
            time_to_wait = backoff if first.attempts > 0 else self.linger_ms
            sendable = (
                several
                or first.is_full()
                or waited >= time_to_wait
                or exhausted
                or self.closed
                or flushing
            )
            if sendable and not backing_off:
                ready_nodes.add(leader)
            else:
                next_delay = min(next_delay, max(time_to_wait - waited, 0))
        if queues is not None:
            self._update_partition_load_stats(cluster, queues)
        return ReadyCheckResult(ready_nodes, next_delay, unknown)

    # -- adaptive partitioning -------------------------------------------------------------

    def built_in_partitioner(self, topic: str) -> BuiltInPartitioner:
        """The topic's sticky partitioner (made on first use; racing threads get the same one)."""
        partitioner = self.partitioners.get(topic)
        if partitioner is None:
            partitioner = self.partitioners.put_if_absent(
                topic, BuiltInPartitioner(topic, max(self.batch_size, 1))
            )
        return partitioner

    def _update_partition_load_stats(
        self, cluster, queues: dict[str, list[tuple[int, int]]]
    ) -> None:
        """Give each sticky partitioner its topic's queue sizes (Java's ``partitionReady``);
        ``queues`` is what :meth:`ready` counted: topic -> [(partition, batches queued)].

        Only once every partition of the topic has had a batch: a partition without a queue
        would get no weight and never be chosen again, so until then the choice stays uniform.
        Partitions without a leader are left out; partitions whose leader is lagging (see
        :meth:`update_node_latency_stats`) go to the end, outside the ``length`` that counts.
        """
        for topic, partitioner in self.partitioners.items():
            entries = queues.get(topic, ())
            count = cluster.partition_count(topic)
            if count is None or len(entries) < count:
                partitioner.update_partition_load_stats(None)
                continue
            available: list[tuple[int, int]] = []
            lagging: list[tuple[int, int]] = []
            for partition, size in entries:
                leader = cluster.leader_for(topic, partition)
                if leader is None:
                    continue
                (lagging if self._is_lagging(leader) else available).append((partition, size))
            ordered = available + lagging
            partitioner.update_partition_load_stats(
                [size for _, size in ordered],
                [partition for partition, _ in ordered],
                len(available),
            )

    def update_node_latency_stats(self, node: int, now_ms: int, can_drain: bool) -> None:
        """The Sender found ``node`` with batches ready; ``can_drain``: its connection took them.

        A node that keeps having data it cannot take (its connection is down, or all its
        in-flight slots are stuck) sees its ready time move on while its drain time stands still;
        once the gap passes ``partitioner.availability.timeout.ms`` its partitions stop getting
        new sticky records.  Does nothing when that setting is 0.
        """
        if self.partition_availability_timeout_ms <= 0:
            return
        stats = self._node_latency.get(node)
        if stats is None:
            self._node_latency[node] = [now_ms, now_ms]
            return
        if can_drain:
            stats[1] = now_ms
        stats[0] = now_ms

    def _is_lagging(self, node: int) -> bool:
        stats = self._node_latency.get(node)
        timeout = self.partition_availability_timeout_ms
        return timeout > 0 and stats is not None and stats[0] - stats[1] > timeout

    def drain(self, cluster, nodes, max_size: int, now_ms: int) -> dict[int, list[ProducerBatch]]:
        """Take batches for each node, up to ``max_size`` bytes per request.

        Partitions are visited round-robin from a per-node starting point that moves on every
        call, so a busy partition cannot starve the others on the same leader.
        """
        drained: dict[int, list[ProducerBatch]] = {}
        for node in nodes:
            drained[node] = self._drain_node(cluster, node, max_size, now_ms)
        return drained

    def _drain_node(self, cluster, node: int, max_size: int, now_ms: int) -> list[ProducerBatch]:
        parts = cluster.partitions_for_node(node)
        ready: list[ProducerBatch] = []
        if not parts:
            return ready
        size = 0
        start = self._drain_index.get(node, 0) % len(parts)
        self._drain_index[node] = start + 1
        tm = self.transaction_manager
        for i in range(len(parts)):
            tp = parts[(start + i) % len(parts)]
            if tp in self._muted:
                continue
            pq = self.batches.get(tp)
            if pq is None:
                continue
            with pq:
                if not pq.batches:
                    continue
                first = pq.batches[0]
                if first.attempts > 0 and now_ms - first.last_attempt_ms < self._backoff_ms(first):
                    continue
                batch_size = first.estimated_size_in_bytes()
                if ready and size + batch_size > max_size:
                    # One batch always goes, even past the limit: the broker decides on it.
                    break
                if tm is not None:
                    if not tm.has_producer_id():
                        break
                    if tm.should_stop_drain(tp, first):
                        continue
                if tm is not None and first.base_sequence < 0:
                    tm.assign_sequence(tp, first)
                first.close()
                first.drained(now_ms)
                pq.batches.popleft()
                size += batch_size
                ready.append(first)
        return ready

    def reenqueue(self, batch: ProducerBatch, now_ms: int) -> None:
        """Put a batch that failed retriably back at the head of its queue.

        With idempotence the queue stays in sequence order, so a retried batch goes before any
        younger batch that already has a sequence number (Java's ``insertInSequenceOrder``).
        """
        batch.reenqueued(now_ms)
        pq = self.batches.get((batch.topic, batch.partition))
        with pq:
            if self.transaction_manager is None or batch.base_sequence < 0:
                pq.batches.appendleft(batch)
                return
            i = 0
            for i, queued in enumerate(pq.batches):  # noqa: B007
                if queued.base_sequence < 0 or queued.base_sequence > batch.base_sequence:
                    break
            else:
                i = len(pq.batches)
            pq.batches.insert(i, batch)

    def rewrite_sequences(self, tp: TopicPartition) -> None:
        """KIP-360: ``tp`` starts over under the transaction manager's current epoch; its queued
        batches that already have sequences (the head of the queue, in sequence order) are
        numbered again from 0.  Sender thread, with nothing of ``tp`` in flight."""
        tm = self.transaction_manager
        if tm is None:
            raise IllegalStateError("sequences reset without a transaction manager")
        pq = self.batches.get(tp)
        if pq is None:
            tm.rewrite_sequences(tp, [])
            return
        with pq:
            numbered = []
            for batch in pq.batches:
                if batch.base_sequence < 0:
                    break
                numbered.append(batch)
            tm.rewrite_sequences(tp, numbered)

    def retry_without_backoff(self, batch: ProducerBatch) -> None:
        """Let the reenqueued ``batch`` go out again at once: its partition has a new leader."""
        self._retry_now[batch] = batch.attempts

    def split_and_reenqueue(self, batch: ProducerBatch, now_ms: int) -> int:
        """MESSAGE_TOO_LARGE: split a batch and queue the pieces first, in record order.

        Java cuts pieces of ``batch.size``, which helps when a batch grew past it (a compression
        estimate that was too hopeful).  A batch within ``batch.size`` that the broker still
        refuses is cut in halves instead, so that repeated refusals make progress down to single
        records rather than resending the same piece until the delivery timeout.
        """
        piece_size = min(self.batch_size, max(batch.estimated_size_in_bytes() // 2, 1))
        pieces = batch.split(piece_size)
        with self._incomplete_lock:
            self._incomplete.update(dict.fromkeys(pieces, False))
        if self.transaction_manager is not None:
            for piece in pieces:  # numbered: each goes to its place in sequence order
                self.reenqueue(piece, now_ms)
        else:
            pq = self.batches.get((batch.topic, batch.partition))
            with pq:
                for piece in reversed(pieces):
                    piece.reenqueued(now_ms)
                    pq.batches.appendleft(piece)
        return len(pieces)

    def expired_batches(self, now_ms: int) -> list[ProducerBatch]:
        """Take out queued batches that have waited past ``delivery.timeout.ms``."""
        expired: list[ProducerBatch] = []
        for _tp, pq in self.batches.items():
            with pq:
                while pq.batches and pq.batches[0].has_reached_delivery_timeout(
                    self.delivery_timeout_ms, now_ms
                ):
                    batch = pq.batches.popleft()
                    batch.close()
                    expired.append(batch)
        return expired

    def deallocate(self, batch: ProducerBatch) -> None:
        """A finished batch gives its memory back (a grown buffer counts as non-pooled).

        Only once: a batch both aborted and answered late must not return its memory twice.
        """
        with self._incomplete_lock:
            pooled = self._incomplete.pop(batch, None)
        self._retry_now.pop(batch, None)
        if pooled:
            self.pool.deallocate(batch.buffer, batch.initial_capacity)

    def mute(self, tp: TopicPartition) -> None:
        self._muted.add(tp)

    def unmute(self, tp: TopicPartition) -> None:
        self._muted.discard(tp)

    def has_undrained(self) -> bool:
        for _tp, pq in self.batches.items():
            with pq:
                if pq.batches:
                    return True
        return False

    def begin_flush(self) -> None:
        with self._flush_lock:
            self._flushes_in_progress += 1

    def end_flush(self) -> None:
        with self._flush_lock:
            self._flushes_in_progress -= 1

    def await_flush_completion(self, timeout_ms: float | None) -> None:
        """Wait until every batch that exists now is done, bounded by ``timeout_ms``."""
        with self._incomplete_lock:
            batches = list(self._incomplete)
        deadline = None if timeout_ms is None else _monotonic_ms() + timeout_ms
        for batch in batches:
            remaining = None if deadline is None else max(deadline - _monotonic_ms(), 0) / 1000
            if not batch.await_done(remaining):
                raise KafkaTimeoutError(
                    f"flush timed out after {timeout_ms} ms with batches still in flight"
                )

    def appends_in_progress(self) -> bool:
        return self._appends_in_progress > 0

    def close(self) -> None:
        """No more appends; ready() now treats every batch as sendable.

        Closes the pool too, as Java's ``RecordAccumulator.close()`` does: a thread waiting in
        ``allocate()`` for memory wakes at once with IllegalStateError instead of sleeping on
        up to ``max.block.ms`` (memory still in flight is given back as batches complete)."""
        self.closed_flag.is_set = True
        self.pool.close()

    def undelivered_record_count(self) -> int:
        """Records in batches not yet acknowledged or failed (what a forced close would fail)."""
        return sum(self.undelivered_record_counts())

    def undelivered_record_counts(self) -> tuple[int, int]:
        """(never sent, sent and unanswered): the records of batches not yet acknowledged or
        failed.  A batch never drained was written nowhere: failing it loses it for sure.  A
        batch drained at least once may be in a broker's log already (the request went out; its
        answer did not come): its outcome is unknown, and resending it may duplicate it."""
        with self._incomplete_lock:
            batches = list(self._incomplete)
        never_sent = unknown = 0
        for b in batches:
            if b.is_done:
                continue
            if b.drained_ms > 0 or b.attempts > 0:
                unknown += b.record_count
            else:
                never_sent += b.record_count
        return never_sent, unknown

    def has_incomplete(self) -> bool:
        """Whether any batch is not yet acknowledged or failed (queued or in flight)."""
        with self._incomplete_lock:
            return bool(self._incomplete)

    def abort_undrained_batches(self, exception: BaseException, queued_retries: bool = False
                                ) -> None:
        """Fail the batches never sent (no sequence yet): their transaction is being aborted
        (Java's ``abortUndrainedBatches``).  With ``queued_retries``, also those queued for a
        retry (a fatal error: they will never be sent).  Batches in flight finish with their
        answers."""
        with self._incomplete_lock:
            batches = list(self._incomplete)
        for batch in batches:
            pq = self.batches.get((batch.topic, batch.partition))
            if pq is None:
                continue
            with pq:
                if (batch.base_sequence >= 0 and not queued_retries) or batch not in pq.batches:
                    continue
                batch.abort_record_appends()
                pq.batches.remove(batch)
            batch.abort(exception)
            self.deallocate(batch)

    def abort_incomplete_batches(self, exception: BaseException) -> None:
        """Fail every batch not yet done (a forced close or a fatal error)."""
        while True:
            with self._incomplete_lock:
                batches = list(self._incomplete)
            if not batches and not self.appends_in_progress():
                break
            for batch in batches:
                pq = self.batches.get((batch.topic, batch.partition))
                if pq is not None:
                    with pq:
                        try:
                            pq.batches.remove(batch)
                        except ValueError:
                            pass
                        batch.abort_record_appends()
                if not batch.is_done:  # one answered meanwhile keeps its outcome
                    batch.abort(exception)
                self.deallocate(batch)
            # An append may still be adding a batch (it started before close): look again.
            time.sleep(0.001)


def _monotonic_ms() -> float:
    return time.monotonic() * 1000
