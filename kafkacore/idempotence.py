"""Idempotence: a producer id, an epoch and a sequence number per partition.

The broker keeps, per producer id and partition, the sequence of the last batches it wrote. A batch
that arrives again after a retry carries the same sequence and is recognised as a duplicate; one
that arrives early (a gap) is refused as out of order. So the producer can retry without writing a
record twice and without reordering — provided it numbers batches in the order they were appended
and never lets a retried batch be overtaken.

When the producer no longer knows what the broker holds — a batch expired after it was sent, the
broker answered UNKNOWN_PRODUCER_ID, or a gap appeared that no retry can close — it starts that
partition over under a new epoch (KIP-360): a new epoch starts every sequence at zero, and the
broker accepts sequence 0 of a higher epoch whatever it held before.

This is the part of Java's ``TransactionManager`` an idempotent producer needs; transactions are not
supported yet. Every method runs on the Sender thread (the accumulator's ``drain`` and
``reset_sequences`` run there too): no lock is needed.
"""

from __future__ import annotations

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
#: Sequence numbers wrap at 2**31 - 1, as in Kafka.
MAX_SEQUENCE = 2**31 - 1
#: The highest epoch a bump may reach; past it the producer asks for a new producer id (Java
#: stops at Short.MAX_VALUE - 1 so that the broker's own bump on a fence still fits).
MAX_EPOCH = 32766


class PartitionEntry:
    """One partition's sequence bookkeeping (Java's ``TopicPartitionEntry``).

    ``producer_id``/``producer_epoch`` are the identity its sequences belong to: after a bump the
    producer's identity moves on, and each partition follows once nothing of it is in flight.
    """

    __slots__ = ("producer_id", "producer_epoch", "next_sequence", "acked_next", "in_flight")

    def __init__(self, producer_id: int, producer_epoch: int) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        #: The base sequence of the next new batch.
        self.next_sequence = 0
        #: The sequence the broker expects next: the end of the last acknowledged batch.
        self.acked_next = 0
        #: Batches in a request and not yet answered, lowest sequence first.
        self.in_flight: list = []


class TransactionManager:
    """Producer id and epoch, and each partition's sequences, in-flight batches and KIP-360 state."""

    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = -1
        self._partitions: dict[tuple, PartitionEntry] = {}
        # tp -> the sequence after the last batch that expired with an unknown outcome (Java's
        # partitionsWithUnresolvedSequences): no new batch is numbered there until the batches
        # in flight have told us whether the broker wrote it.
        self._unresolved: dict[tuple, int] = {}
        # Partitions to start over from sequence 0 under a new epoch once nothing of theirs is in
        # flight (Java's partitionsToRewriteSequences); nothing is sent to them meanwhile.
        self._to_rewrite: set[tuple] = set()

    # -- the producer's identity ---------------------------------------------------------------

    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    def set_producer_id(self, producer_id: int, producer_epoch: int) -> None:
        """A new identity (from InitProducerId).  Each partition takes it, from sequence 0, as
        soon as none of its batches is in flight under the old one (``should_stop_drain``)."""
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch

    def _entry(self, tp: tuple) -> PartitionEntry:
        entry = self._partitions.get(tp)
        if entry is None:
            entry = self._partitions[tp] = PartitionEntry(self.producer_id, self.producer_epoch)
        return entry

    def _is_stale(self, entry: PartitionEntry) -> bool:
        return (entry.producer_id, entry.producer_epoch) != (self.producer_id, self.producer_epoch)

    # -- numbering and draining ----------------------------------------------------------------

    def assign_sequence(self, tp: tuple, batch) -> None:
        """Number a batch as it leaves the accumulator for the first time."""
        entry = self._entry(tp)
        if self._is_stale(entry):
            # Nothing in flight under the old identity (should_stop_drain saw to it): this
            # partition starts at sequence 0 of the new epoch, and any doubt is settled with it.
            self._restart(tp, entry, 0)
        seq = entry.next_sequence
        batch.set_producer_state(self.producer_id, self.producer_epoch, seq, False)
        entry.next_sequence = (seq + batch.record_count) % (MAX_SEQUENCE + 1)

    def _restart(self, tp: tuple, entry: PartitionEntry, next_sequence: int) -> None:
        entry.producer_id, entry.producer_epoch = self.producer_id, self.producer_epoch
        entry.next_sequence = next_sequence
        entry.acked_next = 0
        self._unresolved.pop(tp, None)

    def should_stop_drain(self, tp: tuple, first) -> bool:
        """Whether ``first``, the head of ``tp``'s queue, must wait (Java's
        ``shouldStopDrainBatchesForPartition``).

        - a partition waiting to start over under a new epoch sends nothing;
        - a new batch waits while batches of an older identity are in flight (sequence 0 of
          the new epoch must not overtake them), and while the outcome of an expired batch is
          unknown; once nothing is in flight the doubt is settled here (Java's
          ``maybeResolveSequences``): if the broker acknowledged everything numbered, the
          expired batch was written after all; if not, the partition starts over;
        - a retried batch (it already has a sequence) goes only when it is the oldest in flight,
          so that it cannot be overtaken by a younger one.
        """
        if tp in self._to_rewrite:
            return True
        entry = self._partitions.get(tp)
        if entry is None:
            return False
        if first.base_sequence < 0:
            if entry.in_flight:
                return self._is_stale(entry) or tp in self._unresolved
            if tp in self._unresolved and not self._is_stale(entry):
                del self._unresolved[tp]
                if entry.acked_next != entry.next_sequence:
                    self.request_epoch_bump(tp)
                    return True
            return False
        return bool(entry.in_flight) and entry.in_flight[0].base_sequence != first.base_sequence

    def add_in_flight(self, tp: tuple, batch) -> None:
        batches = self._entry(tp).in_flight
        batches.append(batch)
        batches.sort(key=_sequence_of)

    def remove_in_flight(self, tp: tuple, batch) -> None:
        entry = self._partitions.get(tp)
        if entry is not None and batch in entry.in_flight:
            entry.in_flight.remove(batch)

    # -- answers ---------------------------------------------------------------------------

    def acknowledged(self, tp: tuple, batch) -> None:
        """The broker wrote ``batch``: it now expects the sequence after it."""
        entry = self._partitions.get(tp)
        if entry is not None and batch.base_sequence >= 0 and self._same_identity(entry, batch):
            entry.acked_next = (batch.base_sequence + batch.record_count) % (MAX_SEQUENCE + 1)

    @staticmethod
    def _same_identity(entry: PartitionEntry, batch) -> bool:
        return (batch.producer_id, batch.producer_epoch) == (entry.producer_id, entry.producer_epoch)

    def is_waiting_for_earlier(self, tp: tuple, batch) -> bool:
        """Whether a batch numbered before this one is not acknowledged yet (in flight, or
        queued again for a retry or a split).  Then an OUT_OF_ORDER_SEQUENCE_NUMBER answer for
        this batch only means it arrived before its elders: retry it behind them (Java's rule).
        If it *is* the next one the broker should expect, the broker lost our sequence.
        """
        return batch.base_sequence != self._entry(tp).acked_next

    def can_retry_sequence_error(self, tp: tuple, batch, unknown_producer_id: bool) -> bool:
        """OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID for ``batch``: the idempotent
        producer always retries (delivery.timeout.ms bounds it), and decides whether the
        partition must start over under a new epoch first (Java's ``canRetry``).
        """
        entry = self._entry(tp)
        if not self._same_identity(entry, batch):
            return True  # numbered again since it was sent: its answer is about the old numbers
        if unknown_producer_id:
            # The broker has no state for us here (it lost it, or retention removed our
            # records): only a new epoch, from sequence 0, will be accepted.
            self.request_epoch_bump(tp)
            return True
        unresolved = self._unresolved.get(tp)
        if unresolved is None and self.is_waiting_for_earlier(tp, batch):
            return True  # an elder is still on its way: retry behind it
        if unresolved is None or batch.base_sequence == unresolved:
            # A real gap: the batch the broker expects (or the one after an expired batch)
            # is refused, so what came before it will never arrive.
            self.request_epoch_bump(tp)
        return True

    def mark_unresolved(self, tp: tuple, batch) -> None:
        """A numbered batch expired: the broker may or may not have written it (Java's
        ``markSequenceUnresolved``).  No new batch is numbered here until we know."""
        if batch.base_sequence < 0 or not self._same_identity(self._entry(tp), batch):
            return
        after = batch.base_sequence + batch.record_count
        self._unresolved[tp] = max(self._unresolved.get(tp, after), after) % (MAX_SEQUENCE + 1)

    def failed(self, tp: tuple, batch) -> None:
        """A numbered batch failed for good with an error answer: the broker did not write it,
        so its sequences are a gap nothing will fill.  Start the partition over (Java's
        ``handleFailedBatch`` bumps the idempotent producer's epoch for it)."""
        if batch.base_sequence >= 0 and self._same_identity(self._entry(tp), batch):
            self.request_epoch_bump(tp)

    # -- starting partitions over (KIP-360) ----------------------------------------------------

    def request_epoch_bump(self, tp: tuple) -> None:
        """Start ``tp`` over from sequence 0 under a new epoch (Java's
        ``requestEpochBumpForPartition``): done by :meth:`partitions_to_rewrite`'s caller once
        nothing of ``tp`` is in flight."""
        self._to_rewrite.add(tp)
        self._unresolved.pop(tp, None)

    def partitions_to_rewrite(self) -> tuple[list[tuple], bool]:
        """The partitions that can start over now (nothing of theirs in flight), and whether
        that needs a new epoch first: a partition still numbered under the current identity
        does; one left behind by an earlier bump just takes the current one."""
        idle = [tp for tp in self._to_rewrite if not self._entry(tp).in_flight]
        needs_bump = any(not self._is_stale(self._entry(tp)) for tp in idle)
        return idle, needs_bump

    def bump_request(self, supports_bump: bool) -> tuple[int, int]:
        """The producer id and epoch an InitProducerId for a bump sends: ours, so that the
        broker bumps the epoch (v3+, KIP-360); (-1, -1), a new producer id, if the broker
        cannot bump or the epoch is exhausted."""
        if supports_bump and self.has_producer_id() and self.producer_epoch < MAX_EPOCH:
            return self.producer_id, self.producer_epoch
        return NO_PRODUCER_ID, -1

    def rewrite_sequences(self, tp: tuple, queued: list) -> None:
        """Start ``tp`` over under the current identity: its ``queued`` batches that already
        have sequences (the head of its queue, in sequence order) are numbered again from 0
        (Java's ``startSequencesAtBeginning``)."""
        entry = self._entry(tp)
        seq = 0
        for batch in queued:
            batch.reset_producer_state(self.producer_id, self.producer_epoch, seq)
            seq = (seq + batch.record_count) % (MAX_SEQUENCE + 1)
        self._restart(tp, entry, seq)
        self._to_rewrite.discard(tp)

    def has_unresolved(self, tp: tuple) -> bool:
        return tp in self._unresolved


def _sequence_of(batch) -> int:
    return batch.base_sequence
