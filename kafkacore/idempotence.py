"""Idempotence: a producer id, an epoch and a sequence number per partition.

The broker keeps, per producer id and partition, the sequence of the last batches it wrote. A batch
that arrives again after a retry carries the same sequence and is recognised as a duplicate; one
that arrives early (a gap) is refused as out of order. So the producer can retry without writing a
record twice and without reordering — provided it numbers batches in the order they were appended
and never lets a retried batch be overtaken.

This is the part of Java's ``TransactionManager`` an idempotent producer needs; transactions are not
supported yet. Every method runs on the Sender thread, except ``has_producer_id`` and the reads the
accumulator's ``drain`` makes, which also run on the Sender thread: no lock is needed.
"""

from __future__ import annotations

from collections import defaultdict

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
#: Sequence numbers wrap at 2**31 - 1, as in Kafka.
MAX_SEQUENCE = 2**31 - 1


class TransactionManager:
    """Producer id and epoch, next sequence per partition, and the batches in flight by sequence."""

    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = -1
        self._next_sequence: dict[tuple, int] = defaultdict(int)
        # tp -> the sequence the broker expects next: the end of the last acknowledged batch.
        self._acked_next: dict[tuple, int] = defaultdict(int)
        # tp -> batches sent and not yet answered, lowest sequence first.
        self._in_flight: dict[tuple, list] = defaultdict(list)

    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    def set_producer_id(self, producer_id: int, producer_epoch: int) -> None:
        """A new identity (from InitProducerId) starts every partition's sequence at zero."""
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self._next_sequence.clear()
        self._acked_next.clear()

    def reset_producer_id(self) -> None:
        """Forget the identity after a fatal sequence error: the next batches need a new one."""
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = -1

    def assign_sequence(self, tp: tuple, batch) -> None:
        """Number a batch as it leaves the accumulator for the first time."""
        seq = self._next_sequence[tp]
        batch.set_producer_state(self.producer_id, self.producer_epoch, seq, False)
        self._next_sequence[tp] = (seq + batch.record_count) % (MAX_SEQUENCE + 1)

    def should_stop_drain(self, tp: tuple, first) -> bool:
        """A retried batch (it already has a sequence) goes only when it is the oldest in flight.

        Java's rule: while a retry is outstanding, the partition is sent one batch at a time, so
        the retried batch cannot be overtaken by a younger one.
        """
        if first.base_sequence < 0:
            return False
        in_flight = self._in_flight.get(tp)
        return bool(in_flight) and in_flight[0].base_sequence != first.base_sequence

    def add_in_flight(self, tp: tuple, batch) -> None:
        batches = self._in_flight[tp]
        batches.append(batch)
        batches.sort(key=_sequence_of)

    def remove_in_flight(self, tp: tuple, batch) -> None:
        batches = self._in_flight.get(tp)
        if batches and batch in batches:
            batches.remove(batch)

    def acknowledged(self, tp: tuple, batch) -> None:
        """The broker wrote ``batch``: it now expects the sequence after it."""
        if batch.base_sequence >= 0 and batch.producer_id == self.producer_id:
            end = (batch.base_sequence + batch.record_count) % (MAX_SEQUENCE + 1)
            self._acked_next[tp] = end

    def is_waiting_for_earlier(self, tp: tuple, batch) -> bool:
        """Whether a batch numbered before this one is not acknowledged yet (in flight, or
        queued again for a retry or a split).  Then an OUT_OF_ORDER_SEQUENCE_NUMBER answer for
        this batch only means it arrived before its elders: retry it behind them (Java's rule).
        If it *is* the next one the broker should expect, the broker lost our sequence: fatal.
        """
        return batch.base_sequence != self._acked_next[tp]


def _sequence_of(batch) -> int:
    return batch.base_sequence
