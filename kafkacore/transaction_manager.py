"""The producer's ``TransactionManager``: idempotence, and transactions on top of it.

Idempotence: a producer id, an epoch and a sequence number per partition.

The broker keeps, per producer id and partition, the sequence of the last batches it wrote. A batch
that arrives again after a retry carries the same sequence and is recognised as a duplicate; one
that arrives early (a gap) is refused as out of order. So the producer can retry without writing a
record twice and without reordering — provided it numbers batches in the order they were appended
and never lets a retried batch be overtaken.

When the producer no longer knows what the broker holds — a batch expired after it was sent, the
broker answered UNKNOWN_PRODUCER_ID, or a gap appeared that no retry can close — it starts that
partition over under a new epoch (KIP-360): a new epoch starts every sequence at zero, and the
broker accepts sequence 0 of a higher epoch whatever it held before.

Transactions (KIP-98) add a ``transactional.id`` and a state machine (Java's ``State``)::

    UNINITIALIZED -> INITIALIZING -> READY -> IN_TRANSACTION -> COMMITTING_TRANSACTION -> READY
                                               IN_TRANSACTION -> ABORTING_TRANSACTION -> READY
                     any error in a transaction -> ABORTABLE_ERROR -> ABORTING_TRANSACTION
                     fenced, unauthorized, ...   -> FATAL_ERROR (only close() is left)

The user's thread moves the state (``begin_transaction``, ``begin_commit``, ...) and queues the
requests to the transaction coordinator (:class:`TxnRequest`); the Sender thread sends them, one
at a time, and handles the answers.  The partitions a transaction writes to are found by the
Sender as it drains (``should_stop_drain``): a batch for a partition not yet in the transaction
waits while one AddPartitionsToTxn adds every such partition at once, so ``send()`` does no
per-record transactional work.

The sequence bookkeeping runs on the Sender thread only (the accumulator's ``drain`` and
``rewrite_sequences`` run there too).  The transactional state is shared with the user's thread and
guarded by ``_lock``.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import logging
import struct
import threading
from collections.abc import Callable
from typing import Any

from kafkacore.errors import (
    BrokerResponseError,
    ClusterAuthorizationFailedError,
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    IllegalStateError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
    KafkaError,
    KafkaTimeoutError,
    NotCoordinatorError,
    OperationNotAttemptedError,
    ProducerFencedError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    TransactionAbortableError,
    TransactionalIdAuthorizationFailedError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    for_code,
)
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger("kafkacore")

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


class State(enum.Enum):
    """The transactional producer's states (Java's ``TransactionManager.State``)."""

    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


#: state -> the states it may be entered from (Java's ``State.isTransitionValid``).
_VALID_SOURCES: dict[State, frozenset[State]] = {
    State.UNINITIALIZED: frozenset(),
    State.INITIALIZING: frozenset({State.UNINITIALIZED, State.ABORTING_TRANSACTION}),
    State.READY: frozenset(
        {State.INITIALIZING, State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION}),
    State.IN_TRANSACTION: frozenset({State.READY}),
    State.COMMITTING_TRANSACTION: frozenset({State.IN_TRANSACTION}),
    State.ABORTING_TRANSACTION: frozenset({State.IN_TRANSACTION, State.ABORTABLE_ERROR}),
    State.ABORTABLE_ERROR: frozenset({
        State.IN_TRANSACTION, State.COMMITTING_TRANSACTION, State.ABORTABLE_ERROR,
        State.INITIALIZING}),
    State.FATAL_ERROR: frozenset(State),  # from anywhere
}

#: Errors after which the producer can do nothing but close (Java's ``maybeTransitionToErrorState``).
_FATAL = (ClusterAuthorizationFailedError, TransactionalIdAuthorizationFailedError,
          ProducerFencedError, UnsupportedVersionError, InvalidTxnStateError)

# The order in which queued requests go (Java's ``Priority``): the producer id, then partitions
# and offsets, then the end of the transaction, and an epoch bump after the abort it follows (a
# bump while the transaction is still open would fence ourselves).
_PRIORITY_INIT_PRODUCER_ID = 1
_PRIORITY_ADD = 2
_PRIORITY_END_TXN = 3
_PRIORITY_EPOCH_BUMP = 4


class TransactionalRequestResult:
    """What the user's thread waits on for one transactional call (Java's
    ``TransactionalRequestResult``): set once by the Sender thread, with or without an error."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        self._done = threading.Event()
        self.error: BaseException | None = None

    def done(self, error: BaseException | None = None) -> None:
        if not self._done.is_set():
            self.error = error
            self._done.set()

    @property
    def is_completed(self) -> bool:
        return self._done.is_set()

    def await_(self, timeout_s: float | None) -> None:
        """Wait up to ``timeout_s``; raise the call's error, or KafkaTimeoutError.  After a
        timeout the same call may be made again: it waits for the same request."""
        if not self._done.wait(timeout_s):
            raise KafkaTimeoutError(
                f"{self.operation} did not complete within {timeout_s} s; call it again to keep "
                "waiting")
        if self.error is not None:
            raise self.error


class TxnRequest:
    """One request to a coordinator and what its answer does (Java's ``TxnRequestHandler``).

    ``body()`` builds the request when it is sent (the producer id may have changed since it was
    queued); ``handle(body)`` runs on the Sender thread with the decoded answer.
    """

    def __init__(self, tm: TransactionManager, api_key: ApiKey, priority: int,
                 result: TransactionalRequestResult, body: Callable[[], dict[str, Any]],
                 handle: Callable[[TxnRequest, dict[str, Any]], None],
                 group_id: str | None = None) -> None:
        self.tm = tm
        self.api_key = api_key
        self.priority = priority
        self.result = result
        self.body = body
        self.handle = handle
        #: For TxnOffsetCommit: the group whose coordinator it goes to (else the transaction's).
        self.group_id = group_id
        #: For EndTxn: commit (True) or abort.
        self.commit = False
        #: For InitProducerId: bump our epoch (KIP-360) rather than ask as a new producer.
        self.bump = False
        #: Retried after a retriable error, not before this time (monotonic ms).
        self.retry_at_ms = 0


class ConsumerGroupMetadata:
    """A consumer's group, generation and member (KIP-447), which ``send_offsets_to_transaction``
    passes on so that the group coordinator can fence a zombie consumer's offsets.

    :meth:`~kafkacore.transaction_manager.ConsumerGroupMetadata.of` also reads what the other
    clients give: a group id (a ``str``), kafka-python's
    ``consumer.group_metadata()``, and confluent-kafka's ``consumer.consumer_group_metadata()``
    (librdkafka's serialised form).
    """

    __slots__ = ("group_id", "generation_id", "member_id", "group_instance_id")

    def __init__(self, group_id: str, generation_id: int = -1, member_id: str = "",
                 group_instance_id: str | None = None) -> None:
        if not isinstance(group_id, str) or not group_id:
            raise ValueError(f"a group id is a non-empty string, not {group_id!r}")
        self.group_id = group_id
        self.generation_id = generation_id
        self.member_id = member_id
        self.group_instance_id = group_instance_id

    def __repr__(self) -> str:
        return (f"ConsumerGroupMetadata(group_id={self.group_id!r}, generation_id="
                f"{self.generation_id}, member_id={self.member_id!r}, group_instance_id="
                f"{self.group_instance_id!r})")

    @classmethod
    def of(cls, value: Any) -> ConsumerGroupMetadata:
        """``value`` as a ConsumerGroupMetadata: ours, a group id, kafka-python's, or
        confluent-kafka's bytes; TypeError for anything else, ValueError for bad bytes."""
        if isinstance(value, ConsumerGroupMetadata):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, (bytes, bytearray)):
            return cls._from_librdkafka(bytes(value))
        group_id = getattr(value, "group_id", None)
        if isinstance(group_id, str):  # kafka-python's ConsumerGroupMetadata, or alike
            return cls(group_id, getattr(value, "generation_id", -1),
                       getattr(value, "member_id", "") or "",
                       getattr(value, "group_instance_id", None))
        raise TypeError(
            "group_metadata must be a group id, a ConsumerGroupMetadata, kafka-python's "
            "group_metadata() or confluent-kafka's consumer_group_metadata(), not "
            f"{type(value).__name__}")

    @classmethod
    def _from_librdkafka(cls, data: bytes) -> ConsumerGroupMetadata:
        # rd_kafka_consumer_group_metadata_write: b"CGMDv2:", the generation (int32, host
        # order), the group id and the member id (each NUL-terminated), then one byte: 1 if
        # there is no group instance id, else 0 and the instance id (NUL-terminated).
        magic = b"CGMDv2:"
        try:
            if not data.startswith(magic):
                raise ValueError("no CGMDv2 magic")
            (generation,) = struct.unpack_from("=i", data, len(magic))
            fields = data[len(magic) + 4:].split(b"\0")
            group_id, member_id = fields[0].decode(), fields[1].decode()
            rest = data[len(magic) + 4 + len(fields[0]) + len(fields[1]) + 2:]
            instance = None if rest[:1] == b"\x01" else rest[1:].split(b"\0")[0].decode()
        except (ValueError, IndexError, struct.error, UnicodeDecodeError) as exc:
            raise ValueError(f"not librdkafka's consumer group metadata: {data!r}") from exc
        return cls(group_id, generation, member_id, instance)


class TransactionManager:
    """Producer id and epoch, and each partition's sequences, in-flight batches and KIP-360 state;
    with a ``transactional_id``, the transaction's state machine and its coordinator requests."""

    def __init__(self, transactional_id: str | None = None,
                 transaction_timeout_ms: int = 60000) -> None:
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self._init_transactional()
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
        # A broker answered UNKNOWN_PRODUCER_ID: it lost our state, so an epoch we raise
        # ourselves may be refused too; the next start-over asks InitProducerId instead.
        self._producer_forgotten = False
        # The identity we last raised ourselves, and whether a broker refused one (tansu
        # answers PRODUCER_FENCED): then every start-over asks InitProducerId.
        self._raised: tuple[int, int] | None = None
        self._raise_refused = False

    # -- the producer's identity ---------------------------------------------------------------

    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    def set_producer_id(self, producer_id: int, producer_epoch: int) -> None:
        """A new identity (from InitProducerId).  Each partition takes it, from sequence 0, as
        soon as none of its batches is in flight under the old one (``should_stop_drain``)."""
        if producer_id != self.producer_id:
            self._producer_forgotten = False  # a new id is known to the broker that gave it
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
        batch.set_producer_state(self.producer_id, self.producer_epoch, seq,
                                 self.transactional_id is not None)
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
        if self.transactional_id is not None and self.partition_needs_adding(tp):
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
        if self.transactional_id is not None:
            # Behind an elder still on its way: retry.  Otherwise the transaction has a gap:
            # the batch fails, the transaction becomes abortable, and the abort bumps the epoch.
            if not unknown_producer_id and self.is_waiting_for_earlier(tp, batch):
                return True
            self._epoch_bump_required = True
            return False
        if unknown_producer_id:
            # The broker has no state for us here (it lost it, or retention removed our
            # records): only a new epoch, from sequence 0, will be accepted.
            self._producer_forgotten = True
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
        if self.transactional_id is not None:
            self._epoch_bump_required = True  # settled by the abort's epoch bump
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
        if self.transactional_id is not None:
            # A transaction cannot restart one partition alone: the transaction fails (the
            # batch's error makes it abortable) and its abort bumps the epoch for every partition.
            self._epoch_bump_required = True
            return
        self._to_rewrite.add(tp)
        self._unresolved.pop(tp, None)

    def partitions_to_rewrite(self) -> tuple[list[tuple], bool]:
        """The partitions that can start over now (nothing of theirs in flight), and whether
        that needs a new epoch first: a partition still numbered under the current identity
        does; one left behind by an earlier bump just takes the current one."""
        idle = [tp for tp in self._to_rewrite if not self._entry(tp).in_flight]
        needs_bump = any(not self._is_stale(self._entry(tp)) for tp in idle)
        return idle, needs_bump

    def bump_idempotent_epoch(self) -> bool:
        """Raise our own epoch by one (Java's ``bumpIdempotentProducerEpoch``); False when that
        will not do and InitProducerId must be asked: the epoch is exhausted, or a broker
        forgot our producer id.

        Why not ask the broker: without a transactional id it answers InitProducerId with a new
        producer id (nothing proves we own the old one), and a new id fences nothing.  Batches
        of the old identity may still sit unread in a broker's socket buffer (a frozen or slow
        leader); under a new id the broker would append them *after* the batches sent since,
        out of order.  Under the same id with a higher epoch it refuses them
        (INVALID_PRODUCER_EPOCH): the expired records stay unwritten and the order is kept.
        """
        if self.transactional_id is not None or self._producer_forgotten or self._raise_refused:
            return False
        if not self.has_producer_id() or self.producer_epoch >= MAX_EPOCH:
            return False
        self.set_producer_id(self.producer_id, self.producer_epoch + 1)
        self._raised = (self.producer_id, self.producer_epoch)
        return True

    def can_retry_fenced_raised_epoch(self, tp: tuple, batch) -> bool:
        """PRODUCER_FENCED or INVALID_PRODUCER_EPOCH for ``batch``: if it went out under an
        epoch we raised ourselves, this broker does not take self-raised epochs (Kafka's does;
        tansu does not): retry it once ``tp`` starts over under an identity from
        InitProducerId.  Otherwise the error is the batch's (False)."""
        if self.transactional_id is not None or self._raised is None:
            return False
        if (batch.producer_id, batch.producer_epoch) != self._raised:
            return False
        self._raise_refused = True
        self.request_epoch_bump(tp)
        return True

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



    # == transactions (KIP-98) ================================================================

    def _init_transactional(self) -> None:
        #: Guards everything below: the user's thread and the Sender thread both use it.
        self._lock = threading.Lock()
        self.state = State.UNINITIALIZED
        #: ``state is IN_TRANSACTION``, kept as a plain bool: send() reads it for every record.
        self.sending_allowed = False
        self.last_error: BaseException | None = None
        self._pending: list[tuple[int, int, TxnRequest]] = []  # a heap by (priority, order)
        self._order = itertools.count()
        self._cached: TransactionalRequestResult | None = None  # the call a timeout left pending
        self._in_transaction: set[tuple] = set()  # partitions added (AddPartitionsToTxn answered)
        self._new_partitions: set[tuple] = set()  # partitions with a batch waiting to be added
        self._being_added: set[tuple] = set()
        self._transaction_started = False  # a partition or offsets were added: EndTxn is needed
        self._epoch_bump_required = False
        #: The node id of the transaction coordinator and of each group's, once found.
        self.coordinator: int | None = None
        self.group_coordinators: dict[str, int] = {}
        #: Whether the coordinator can bump the epoch (InitProducerId v3+), set by the Sender.
        self.coordinator_supports_bump = False
        #: the coordinator's finalized ``transaction.version`` (set by the Sender)
        self.coordinator_transaction_version = 0
        #: this transaction uses transaction version 2 (KIP-890 part 2): no AddPartitionsToTxn
        #: nor AddOffsetsToTxn, and EndTxn answers the epoch of the next transaction
        self.transaction_v2 = False

    def is_transactional(self) -> bool:
        return self.transactional_id is not None

    # -- the state machine ----------------------------------------------------------------

    def _transition_to(self, target: State, error: BaseException | None = None) -> None:
        # Under _lock.
        if self.state is State.FATAL_ERROR and target is not State.FATAL_ERROR:
            raise IllegalStateError(
                f"the transactional producer hit a fatal error and can only be closed: "
                f"{self.last_error!r}")
        if self.state not in _VALID_SOURCES[target]:
            raise IllegalStateError(
                f"transactional id {self.transactional_id!r}: invalid transition attempted from "
                f"state {self.state.value} to state {target.value}")
        if target in (State.ABORTABLE_ERROR, State.FATAL_ERROR):
            self.last_error = error
        else:
            self.last_error = None
        self.state = target
        self.sending_allowed = target is State.IN_TRANSACTION

    def _fail_if_error(self) -> None:
        # Under _lock: Java's maybeFailWithError.
        if self.state is State.FATAL_ERROR:
            raise self._wrapped(self.last_error, "the producer hit a fatal error and must be "
                                                 "closed")
        if self.state is State.ABORTABLE_ERROR:
            raise self._wrapped(self.last_error, "the transaction hit an error and must be "
                                                 "aborted (abort_transaction())")

    @staticmethod
    def _wrapped(error: BaseException | None, text: str) -> BaseException:
        if isinstance(error, KafkaError):
            return error
        return KafkaError(f"{text}: {error!r}")

    def _check_transactional(self) -> None:
        if self.transactional_id is None:
            raise IllegalStateError(
                "transactional method called on a producer without a transactional.id")

    def transition_to_abortable_error(self, error: BaseException) -> None:
        """An error that fails the current transaction but not the producer."""
        with self._lock:
            if self.state in (State.ABORTING_TRANSACTION, State.FATAL_ERROR):
                return  # aborting anyway; or already worse
            if self.state in (State.READY, State.UNINITIALIZED):
                return  # no transaction to fail
            self._transition_to(State.ABORTABLE_ERROR, error)

    def transition_to_fatal_error(self, error: BaseException) -> None:
        with self._lock:
            self._transition_to(State.FATAL_ERROR, error)
            pending, self._pending = self._pending, []
        for _, _, request in pending:  # nothing queued will be sent now
            request.result.done(error)

    def maybe_transition_to_error_state(self, error: BaseException) -> None:
        """A batch of the transaction failed (Java's ``maybeTransitionToErrorState``)."""
        if isinstance(error, _FATAL):
            self.transition_to_fatal_error(error)
            return
        if self.coordinator_supports_bump and not self.is_completing():
            self._epoch_bump_required = True
        self.transition_to_abortable_error(error)

    def has_fatal_error(self) -> bool:
        return self.state is State.FATAL_ERROR

    def has_abortable_error(self) -> bool:
        return self.state is State.ABORTABLE_ERROR

    def is_aborting(self) -> bool:
        return self.state is State.ABORTING_TRANSACTION

    def is_completing(self) -> bool:
        return self.state in (State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION)

    def fail_if_not_ready_for_send(self) -> None:
        """``send()`` of a transactional producer outside a transaction, or after an error
        (Java's ``failIfNotReadyForSend``).  send() calls it only when ``sending_allowed``
        is false: one attribute test per record, as Java's one state test."""
        with self._lock:
            if self.state is State.IN_TRANSACTION:
                return
            self._fail_if_error()
            raise IllegalStateError(
                f"cannot send in state {self.state.value}: call begin_transaction() first"
                if self.state is not State.UNINITIALIZED
                else "cannot send before init_transactions() has completed")

    # -- the user's calls (KafkaProducer's thread) ----------------------------------------

    def _cached_or(self, operation: str, start: Callable[[], TransactionalRequestResult]
                   ) -> TransactionalRequestResult:
        """The same call again after a timeout waits for the same request (Java's
        ``handleCachedTransactionRequestResult``)."""
        with self._lock:
            cached = self._cached
            if cached is not None and not cached.is_completed:
                if cached.operation != operation:
                    raise IllegalStateError(
                        f"{operation} called while {cached.operation} is still in progress; "
                        f"call {cached.operation} again to finish it")
                return cached
            result = start()
            self._cached = result
            return result

    def initialize_transactions(self) -> TransactionalRequestResult:
        """Queue InitProducerId for our transactional id: the coordinator aborts or completes
        what an earlier producer with this id left open, and fences it (a new epoch)."""
        self._check_transactional()

        def start() -> TransactionalRequestResult:
            if self.state is not State.UNINITIALIZED:
                raise IllegalStateError(
                    f"init_transactions() in state {self.state.value}: it is called once")
            self._transition_to(State.INITIALIZING)
            return self._enqueue_init_producer_id(bump=False)

        return self._cached_or("init_transactions", start)

    def _enqueue_init_producer_id(self, bump: bool) -> TransactionalRequestResult:
        # Under _lock.
        result = TransactionalRequestResult("init_transactions")

        def body() -> dict[str, Any]:
            pid, epoch = ((self.producer_id, self.producer_epoch) if request.bump
                          else (NO_PRODUCER_ID, -1))
            return {"transactional_id": self.transactional_id,
                    "transaction_timeout_ms": self.transaction_timeout_ms,
                    "producer_id": pid, "producer_epoch": epoch}

        request = TxnRequest(
            self, ApiKey.INIT_PRODUCER_ID,
            _PRIORITY_EPOCH_BUMP if bump else _PRIORITY_INIT_PRODUCER_ID, result, body,
            self._on_init_producer_id)
        request.bump = bump
        self._push(request)
        return result

    def begin_transaction(self) -> None:
        self._check_transactional()
        with self._lock:
            self._fail_if_error()
            if self.state is not State.READY:
                raise IllegalStateError(
                    f"begin_transaction() in state {self.state.value}"
                    + (": call init_transactions() first" if self.state in (
                        State.UNINITIALIZED, State.INITIALIZING) else ""))
            self.transaction_v2 = self.coordinator_transaction_version >= 2
            self._transition_to(State.IN_TRANSACTION)

    def begin_commit(self) -> TransactionalRequestResult:
        """Queue EndTxn(commit).  The Sender flushes first and sends it once every batch of the
        transaction is answered."""
        self._check_transactional()

        def start() -> TransactionalRequestResult:
            self._fail_if_error()
            self._transition_to(State.COMMITTING_TRANSACTION)
            return self._begin_completing(commit=True)

        return self._cached_or("commit_transaction", start)

    def begin_abort(self) -> TransactionalRequestResult:
        """Queue EndTxn(abort); after an error that left our sequences in doubt, then an epoch
        bump (InitProducerId with our id and epoch, KIP-360), so the producer carries on."""
        self._check_transactional()

        def start() -> TransactionalRequestResult:
            if self.state is not State.ABORTABLE_ERROR:
                self._fail_if_error()
            self._transition_to(State.ABORTING_TRANSACTION)
            return self._begin_completing(commit=False)

        return self._cached_or("abort_transaction", start)

    def _begin_completing(self, commit: bool) -> TransactionalRequestResult:
        # Under _lock.
        operation = "commit_transaction" if commit else "abort_transaction"
        result = TransactionalRequestResult(operation)
        invalid_mapping = isinstance(self.last_error, InvalidProducerIdMappingError)
        if not invalid_mapping:
            def body() -> dict[str, Any]:
                return {"transactional_id": self.transactional_id,
                        "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                        "committed": commit}

            end = TxnRequest(self, ApiKey.END_TXN, _PRIORITY_END_TXN, result, body,
                             self._on_end_txn)
            end.commit = commit
            self._push(end)
        # With transaction version 2 the EndTxn itself bumps the epoch.
        if not commit and invalid_mapping or (
                not commit and self._epoch_bump_required and not self.transaction_v2):
            # The abort's result is the bump's: the producer is usable once it is done.
            end_result = result
            result = self._enqueue_init_producer_id(bump=not invalid_mapping)
            result.operation = operation
            if not invalid_mapping:
                end.result = end_result
        return result

    def send_offsets_to_transaction(self, offsets: dict[tuple, tuple[int, str | None, int]],
                                    group: ConsumerGroupMetadata) -> TransactionalRequestResult:
        """Queue AddOffsetsToTxn (the group's offsets topic joins the transaction), then
        TxnOffsetCommit to the group's coordinator: the offsets count only if the transaction
        commits.  ``offsets``: (topic, partition) -> (offset, metadata, leader epoch)."""
        self._check_transactional()

        def start() -> TransactionalRequestResult:
            self._fail_if_error()
            if self.state is not State.IN_TRANSACTION:
                raise IllegalStateError(
                    f"send_offsets_to_transaction() in state {self.state.value}: call "
                    "begin_transaction() first")
            result = TransactionalRequestResult("send_offsets_to_transaction")

            if self.transaction_v2:  # TxnOffsetCommit v5 adds the offsets partition itself
                self._push_txn_offset_commit(result, offsets, group)
                return result

            def body() -> dict[str, Any]:
                return {"transactional_id": self.transactional_id,
                        "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                        "group_id": group.group_id}

            def handle(request: TxnRequest, answer: dict[str, Any]) -> None:
                self._on_add_offsets(request, answer, offsets, group)

            self._push(TxnRequest(self, ApiKey.ADD_OFFSETS_TO_TXN, _PRIORITY_ADD, result, body,
                                  handle))
            return result

        return self._cached_or("send_offsets_to_transaction", start)

    # -- the Sender's side ----------------------------------------------------------------

    def _push(self, request: TxnRequest) -> None:
        heapq.heappush(self._pending, (request.priority, next(self._order), request))

    def retry(self, request: TxnRequest, backoff_ms: int, now_ms: int) -> None:
        """Queue ``request`` again (a retriable error, or no answer)."""
        request.retry_at_ms = now_ms + backoff_ms
        with self._lock:
            if self.state is State.FATAL_ERROR:
                request.result.done(self.last_error)
                return
            self._push(request)

    def is_send_to_partition_allowed(self, tp: tuple) -> bool:
        return tp in self._in_transaction

    def next_request(self, has_incomplete_batches: bool, now_ms: int) -> TxnRequest | None:
        """The request the Sender should send now, or None (Java's ``nextRequest``).

        Partitions found by the drain go first, in one AddPartitionsToTxn; EndTxn waits until
        every batch of the transaction is answered; an EndTxn for a transaction that never
        added anything completes at once, without a request.
        """
        with self._lock:
            if self._new_partitions and self.state in (
                    State.IN_TRANSACTION, State.COMMITTING_TRANSACTION):
                self._push(self._add_partitions_request())
            while self._pending:
                request = self._pending[0][2]
                if request.api_key == ApiKey.END_TXN:
                    if request.commit and self.state is State.ABORTABLE_ERROR:
                        # A batch failed during the commit's flush: the commit fails with it.
                        heapq.heappop(self._pending)
                        request.result.done(self.last_error)
                        continue
                    if has_incomplete_batches:
                        return None
                    if not self._transaction_started:
                        heapq.heappop(self._pending)
                        self._complete_transaction()
                        request.result.done()
                        continue
                if request.retry_at_ms > now_ms:
                    return None
                heapq.heappop(self._pending)
                return request
            return None

    def next_request_delay_ms(self, now_ms: int) -> int:
        """How long the Sender may sleep before a request of ours is due."""
        with self._lock:
            if self._new_partitions:
                return 0
            # An EndTxn that waits for the transaction's batches is woken by their answers.
            due = [r.retry_at_ms for _, _, r in self._pending
                   if r.api_key != ApiKey.END_TXN or r.retry_at_ms > now_ms]
            return max(min(due) - now_ms, 0) if due else 2**31 - 1

    def _add_partitions_request(self) -> TxnRequest:
        # Under _lock.
        partitions = self._new_partitions
        self._being_added |= partitions
        self._new_partitions = set()
        result = TransactionalRequestResult("add_partitions_to_txn")

        def body() -> dict[str, Any]:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(partitions):
                by_topic.setdefault(topic, []).append(partition)
            return {"v3_and_below_transactional_id": self.transactional_id,
                    "v3_and_below_producer_id": self.producer_id,
                    "v3_and_below_producer_epoch": self.producer_epoch,
                    "v3_and_below_topics": [{"name": t, "partitions": p}
                                            for t, p in by_topic.items()]}

        def handle(request: TxnRequest, answer: dict[str, Any]) -> None:
            self._on_add_partitions(request, answer, partitions)

        return TxnRequest(self, ApiKey.ADD_PARTITIONS_TO_TXN, _PRIORITY_ADD, result, body, handle)

    def _complete_transaction(self) -> None:
        # Under _lock: EndTxn answered (or not needed).
        if self.state is State.FATAL_ERROR:
            return
        bump_pending = any(r.api_key == ApiKey.INIT_PRODUCER_ID for _, _, r in self._pending)
        if not bump_pending:
            self._transition_to(State.READY)
        self._in_transaction.clear()
        self._new_partitions.clear()
        self._being_added.clear()
        self._transaction_started = False

    def abort_pending_partitions(self) -> None:
        """The transaction is being aborted: the partitions waiting to be added never will be."""
        with self._lock:
            self._new_partitions.clear()

    def lookup_coordinator(self, request: TxnRequest) -> None:
        """Forget the coordinator ``request`` goes to: the Sender finds it again."""
        if request.group_id is None:
            self.coordinator = None
        else:
            self.group_coordinators.pop(request.group_id, None)

    # -- answers ----------------------------------------------------------------------------

    def _common_error(self, error: BrokerResponseError) -> str:
        """What to do with an error most requests share: "retry", "lookup" (find the
        coordinator, then retry), "fatal" or "abortable"."""
        if isinstance(error, (NotCoordinatorError, CoordinatorNotAvailableError,
                              RequestTimedOutError)):
            return "lookup"
        if isinstance(error, (CoordinatorLoadInProgressError, ConcurrentTransactionsError,
                              UnknownTopicOrPartitionError)):
            return "retry"
        if isinstance(error, (ProducerFencedError, InvalidProducerEpochError)):
            return "fenced"
        if isinstance(error, _FATAL):
            return "fatal"
        return "abortable"

    def _act(self, request: TxnRequest, error: BrokerResponseError, action: str,
             now_ms: int, backoff_ms: int) -> None:
        log.debug("%s for %r: %s (%s)", request.api_key.name, self.transactional_id,
                  error.code_name, action)
        if action == "lookup":
            self.lookup_coordinator(request)
            self.retry(request, 0, now_ms)
        elif action == "retry":
            self.retry(request, backoff_ms, now_ms)
        elif action == "fenced":
            # From a coordinator, an old epoch means a newer producer took our id (KIP-588).
            fenced = ProducerFencedError(
                f"producer id {self.producer_id} epoch {self.producer_epoch} of transactional id "
                f"{self.transactional_id!r} was fenced by a newer producer ({error.code_name})")
            self.transition_to_fatal_error(fenced)
            request.result.done(fenced)
        elif action == "fatal":
            self.transition_to_fatal_error(error)
            request.result.done(error)
        else:
            self.transition_to_abortable_error(error)
            request.result.done(error)

    def _on_init_producer_id(self, request: TxnRequest, answer: dict[str, Any]) -> None:
        code = answer["error_code"]
        if code == 0:
            self.set_producer_id(answer["producer_id"], answer["producer_epoch"])
            with self._lock:
                self._epoch_bump_required = False
                self._transition_to(State.READY)
            request.result.done()
            return
        error = for_code(code)()
        action = self._common_error(error)
        if action == "abortable" and request.bump:
            # A coordinator that cannot bump a transactional id's epoch (tansu answers
            # UNKNOWN_SERVER_ERROR): ask as a restarted producer would.  The coordinator answers
            # with the next epoch too, and nothing is left open, since we have just aborted.
            log.info("the coordinator refused to bump the epoch of %r (%s); initializing it "
                     "again instead", self.transactional_id, error.code_name)
            request.bump = False
            self.retry(request, 0, self._now)
            return
        self._act(request, error, "fatal" if action == "abortable" else action, self._now,
                  self._backoff)

    def _on_add_partitions(self, request: TxnRequest, answer: dict[str, Any],
                           partitions: set[tuple]) -> None:
        errors: dict[tuple, int] = {}
        for topic in answer.get("results_by_topic_v3_and_below") or ():
            for part in topic["results_by_partition"]:
                if part["partition_error_code"]:
                    errors[(topic["name"], part["partition_index"])] = part[
                        "partition_error_code"]
        with self._lock:
            self._being_added -= partitions
            if not errors:
                self._in_transaction |= partitions
                self._transaction_started = True
        if not errors:
            request.result.done()
            return
        # The worst error decides; OPERATION_NOT_ATTEMPTED only says another partition failed.
        real = [c for c in errors.values() if c != OperationNotAttemptedError.errno]
        error = for_code(real[0] if real else next(iter(errors.values())))()
        action = self._common_error(error)
        if isinstance(error, TopicAuthorizationFailedError):
            action = "abortable"
        if action in ("lookup", "retry"):
            with self._lock:  # the same partitions go again, with any found meanwhile
                self._new_partitions |= partitions
            request.result.done()
            if action == "lookup":
                self.lookup_coordinator(request)
            return
        self._act(request, error, action, self._now, self._backoff)

    def _on_add_offsets(self, request: TxnRequest, answer: dict[str, Any],
                        offsets: dict[tuple, tuple[int, str | None, int]],
                        group: ConsumerGroupMetadata) -> None:
        code = answer["error_code"]
        if code:
            error = for_code(code)()
            action = self._common_error(error)
            if isinstance(error, GroupAuthorizationFailedError):
                action = "abortable"
            self._act(request, error, action, self._now, self._backoff)
            return
        with self._lock:
            self._push_txn_offset_commit(request.result, offsets, group)

    def _push_txn_offset_commit(self, result: TransactionalRequestResult,
                                offsets: dict[tuple[str, int], tuple[int, str | None, int]],
                                group: ConsumerGroupMetadata) -> None:
        # Under _lock.
        self._transaction_started = True

        def body() -> dict[str, Any]:
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for (topic, partition), (offset, metadata, epoch) in sorted(offsets.items()):
                by_topic.setdefault(topic, []).append({
                    "partition_index": partition, "committed_offset": offset,
                    "committed_leader_epoch": epoch, "committed_metadata": metadata})
            return {"transactional_id": self.transactional_id, "group_id": group.group_id,
                    "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                    "generation_id": group.generation_id, "member_id": group.member_id,
                    "group_instance_id": group.group_instance_id,
                    "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}

        # The user's result completes when the offsets are committed in the transaction.
        self._push(TxnRequest(self, ApiKey.TXN_OFFSET_COMMIT, _PRIORITY_ADD, result,
                              body, self._on_txn_offset_commit, group_id=group.group_id))

    def _on_txn_offset_commit(self, request: TxnRequest, answer: dict[str, Any]) -> None:
        codes = [p["error_code"] for t in answer["topics"] for p in t["partitions"]
                 if p["error_code"]]
        if not codes:
            request.result.done()
            return
        error = for_code(codes[0])()
        action = self._common_error(error)
        if error.code_name in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_INSTANCE_ID",
                               "GROUP_AUTHORIZATION_FAILED"):
            action = "abortable"  # the consumer was fenced: its offsets must not commit
        self._act(request, error, action, self._now, self._backoff)

    def _on_end_txn(self, request: TxnRequest, answer: dict[str, Any]) -> None:
        code = answer["error_code"]
        if code == 0:
            if self.transaction_v2 and answer.get("producer_id", -1) >= 0:
                # The coordinator bumped the epoch (or moved to a new producer id): the next
                # transaction is written with it, every partition from sequence 0.
                self.set_producer_id(answer["producer_id"], answer["producer_epoch"])
                with self._lock:
                    self._epoch_bump_required = False
            with self._lock:
                self._complete_transaction()
            request.result.done()
            return
        error = for_code(code)()
        action = self._common_error(error)
        if action == "abortable" and not isinstance(error, TransactionAbortableError):
            action = "fatal"  # Java: an unexpected EndTxn error is fatal
        self._act(request, error, action, self._now, self._backoff)

    #: Set by the Sender before it calls a handler: the time and the retry back-off.
    _now = 0
    _backoff = 100

    def handle_response(self, request: TxnRequest, answer: dict[str, Any], now_ms: int,
                        backoff_ms: int) -> None:
        """The Sender thread hands over a coordinator's answer."""
        self._now, self._backoff = now_ms, backoff_ms
        request.handle(request, answer)

    def partition_needs_adding(self, tp: tuple) -> bool:
        """Sender thread, in the readiness check and the drain: ``tp`` has a batch but is not
        in the transaction yet, so the batch waits and ``tp`` goes into the next
        AddPartitionsToTxn."""
        if tp in self._in_transaction:
            return False
        if self.transaction_v2:  # Produce v12: the leader adds it
            with self._lock:
                self._in_transaction.add(tp)
                self._transaction_started = True
            return False
        if tp not in self._being_added:
            with self._lock:
                self._new_partitions.add(tp)
        return True


def _sequence_of(batch) -> int:
    return batch.base_sequence
