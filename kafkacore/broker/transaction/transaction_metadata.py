"""A transactional id's state (Kafka's ``TransactionMetadata``, ``TransactionState`` and
``TxnTransitMetadata``).

Every change is made in two steps, as Kafka does: ``prepare_*`` checks the change and returns the
new state as a :class:`TxnTransitMetadata` (the id is marked with ``pending_state`` meanwhile, so a
concurrent request gets CONCURRENT_TRANSACTIONS); the new state is written to
``__transaction_state``; only once the write is acknowledged does :meth:`complete_transition`
make it the current state.  A coordinator that dies between the two finds the written state when
its successor loads the partition, and finishes what it began.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field, replace

from kafkacore.errors import (
    ConcurrentTransactionsError,
    InvalidTxnStateError,
    ProducerFencedError,
    TransactionCoordinatorFencedError,
)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
#: Kafka's ``Short.MAX_VALUE - 1``: an epoch may reach this; then the producer id is rotated
MAX_PRODUCER_EPOCH = 32766
SHORT_MAX = 32767


class TransactionState(enum.IntEnum):
    """The states, with the numbers written in ``__transaction_state`` (Kafka's ``id``)."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def state_name(self) -> str:
        """Kafka's name, as DescribeTransactions and ListTransactions show it."""
        return "".join(w.capitalize() for w in self.name.split("_"))


S = TransactionState
#: the states each state may be entered from (Kafka's ``validPreviousStates``)
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # (an abort with nothing added is transaction version 2's: see TransactionCoordinator)
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT,
                                S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}

TopicPartition = tuple[str, int]


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka's ``TransactionMetadata.isEpochExhausted``: the id must rotate before the next
    bump (one epoch is kept for the coordinator's fence)."""
    return epoch >= MAX_PRODUCER_EPOCH


@dataclass(frozen=True)
class TxnTransitMetadata:
    """The state a transition leads to: what is written to ``__transaction_state``."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    #: transaction version 2, epoch exhausted: the producer id the transaction's end moves to
    next_producer_id: int = NO_PRODUCER_ID
    #: the transaction version the client ended its last transaction with (2: KIP-890 part 2)
    client_transaction_version: int = 0


@dataclass
class TransactionMetadata:
    """One transactional id.  Guarded by ``lock``; the coordinator holds it to check and
    prepare a change, never while it waits for a write."""

    transactional_id: str
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0
    #: the state being written, None when no write is under way
    pending_state: TransactionState | None = None
    # Lock order 5 (one id's at a time): before Partition.lock and ProducerIdManager._lock.
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    # -- preparing changes ---------------------------------------------------------------------

    def _transit(self, state: TransactionState, *, producer_id: int | None = None,
                 producer_epoch: int | None = None, last_producer_epoch: int | None = None,
                 txn_timeout_ms: int | None = None,
                 topic_partitions: frozenset[TopicPartition] | None = None,
                 txn_start_timestamp: int | None = None, last_producer_id: int | None = None,
                 next_producer_id: int = NO_PRODUCER_ID,
                 now_ms: int) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise ConcurrentTransactionsError(
                f"{self.transactional_id}: a change to {self.pending_state.name} is under way")
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise InvalidTxnStateError(
                f"{self.transactional_id}: {self.state.name} cannot become {state.name}")
        self.pending_state = state
        return TxnTransitMetadata(
            self.producer_id if producer_id is None else producer_id,
            self.last_producer_id if last_producer_id is None else last_producer_id,
            self.producer_epoch if producer_epoch is None else producer_epoch,
            self.last_producer_epoch if last_producer_epoch is None else last_producer_epoch,
            self.txn_timeout_ms if txn_timeout_ms is None else txn_timeout_ms,
            state,
            frozenset(self.topic_partitions) if topic_partitions is None else topic_partitions,
            self.txn_start_timestamp if txn_start_timestamp is None else txn_start_timestamp,
            now_ms,
            next_producer_id,
            self.client_transaction_version,
        )

    def prepare_increment_producer_epoch(self, txn_timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> TxnTransitMetadata:
        """InitProducerId: the next epoch, Empty (Kafka's ``prepareIncrementProducerEpoch``).
        ``expected_epoch`` is the epoch the producer says it has (None for a new producer):
        the current one (or none yet: a new id) is bumped; the last one means a retry of a
        bump already made, answered with the same epoch; any other is fenced."""
        if expected_epoch is None:
            epoch, last_epoch = self.producer_epoch + 1, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last_epoch = self.producer_epoch + 1, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            raise ProducerFencedError(
                f"{self.transactional_id}: epoch {expected_epoch} is neither the current "
                f"{self.producer_epoch} nor the last {self.last_producer_epoch}")
        return self._transit(S.EMPTY, producer_epoch=epoch, last_producer_epoch=last_epoch,
                             txn_timeout_ms=txn_timeout_ms, topic_partitions=frozenset(),
                             txn_start_timestamp=-1, now_ms=now_ms)

    def prepare_producer_id_rotation(self, producer_id: int, txn_timeout_ms: int, now_ms: int,
                                     *, record_last_epoch: bool) -> TxnTransitMetadata:
        """InitProducerId once the epoch is exhausted: a new producer id at epoch 0.  With
        ``record_last_epoch`` (the producer named its exhausted id and epoch) the old id and
        epoch are kept, so that a retry of this call is recognised and not fenced."""
        return self._transit(S.EMPTY, producer_id=producer_id, producer_epoch=0,
                             last_producer_id=self.producer_id if record_last_epoch
                             else NO_PRODUCER_ID,
                             last_producer_epoch=self.producer_epoch if record_last_epoch
                             else NO_PRODUCER_EPOCH, txn_timeout_ms=txn_timeout_ms,
                             topic_partitions=frozenset(), txn_start_timestamp=-1, now_ms=now_ms)

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def prepare_add_partitions(self, partitions: set[TopicPartition],
                               now_ms: int) -> TxnTransitMetadata:
        start = now_ms if self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT) \
            else self.txn_start_timestamp
        return self._transit(S.ONGOING, topic_partitions=frozenset(self.topic_partitions
                                                                   | partitions),
                             txn_start_timestamp=start, now_ms=now_ms)

    def prepare_fence_producer_epoch(self, now_ms: int) -> TxnTransitMetadata:
        """A newer producer (or the timeout) ends an open transaction: the epoch goes up by
        one so that the old producer is fenced, then the transaction is aborted with it
        (Kafka's ``prepareFenceProducerEpoch``; the fence itself is not written)."""
        epoch = min(self.producer_epoch + 1, SHORT_MAX)  # room left by the rotation
        return self._transit(S.PREPARE_EPOCH_FENCE, producer_epoch=epoch, now_ms=now_ms)

    def prepare_abort_or_commit(self, state: TransactionState, now_ms: int, *,
                                bump_epoch: bool = False,
                                next_producer_id: int = NO_PRODUCER_ID) -> TxnTransitMetadata:
        """PrepareCommit/PrepareAbort.  ``bump_epoch`` (transaction version 2, KIP-890 part
        2): the epoch goes up by one here, so that the markers carry the new epoch and every
        batch of the ending transaction (old epoch) that arrives later is fenced; with the
        epoch exhausted, ``next_producer_id`` is where :meth:`prepare_complete` moves to."""
        if not bump_epoch:
            return self._transit(state, now_ms=now_ms)
        transit = self._transit(state, producer_epoch=self.producer_epoch + 1,
                                last_producer_epoch=self.producer_epoch,
                                next_producer_id=next_producer_id, now_ms=now_ms)
        return replace(transit, client_transaction_version=2)

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if self.next_producer_id != NO_PRODUCER_ID:  # the exhausted id is left for the next
            return self._transit(state, topic_partitions=frozenset(),
                                 producer_id=self.next_producer_id, producer_epoch=0,
                                 last_producer_id=self.producer_id,
                                 last_producer_epoch=NO_PRODUCER_EPOCH, now_ms=now_ms)
        return self._transit(state, topic_partitions=frozenset(), now_ms=now_ms)

    def prepare_dead(self, now_ms: int) -> TxnTransitMetadata:
        return self._transit(S.DEAD, topic_partitions=frozenset(), now_ms=now_ms)

    # -- completing them -----------------------------------------------------------------------

    def complete_transition(self, transit: TxnTransitMetadata) -> None:
        """The write of ``transit`` was acknowledged: make it the current state."""
        if self.pending_state != transit.state:
            raise TransactionCoordinatorFencedError(
                f"{self.transactional_id}: completing {transit.state.name}, but the change under"
                f" way is {self.pending_state}")
        if transit.producer_id != self.producer_id:
            self.last_producer_id = transit.last_producer_id
        self.producer_id = transit.producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.state = transit.state
        self.topic_partitions = set(transit.topic_partitions)
        self.txn_start_timestamp = transit.txn_start_timestamp
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.next_producer_id = transit.next_producer_id
        self.client_transaction_version = transit.client_transaction_version
        self.pending_state = None

    def fence(self, transit: TxnTransitMetadata) -> None:
        """Apply a PrepareEpochFence at once (it is not written): the bumped epoch."""
        self.producer_epoch = transit.producer_epoch
        self.state = S.PREPARE_EPOCH_FENCE
        self.pending_state = None

    @classmethod
    def from_transit(cls, transactional_id: str, t: TxnTransitMetadata) -> TransactionMetadata:
        return cls(transactional_id, t.producer_id, t.last_producer_id, t.producer_epoch,
                   t.last_producer_epoch, t.txn_timeout_ms, t.state, set(t.topic_partitions),
                   t.txn_start_timestamp, t.txn_last_update_timestamp, t.next_producer_id,
                   t.client_transaction_version)
