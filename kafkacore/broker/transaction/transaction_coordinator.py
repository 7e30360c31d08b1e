"""``TransactionCoordinator``: InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn and EndTxn (Kafka's ``TransactionCoordinator``).

Each request is checked against the id's :class:`TransactionMetadata` under its lock; the
change is prepared (the id's ``pending_state`` set), written to ``__transaction_state`` by the
:class:`TransactionStateManager`, and only then applied and answered.  EndTxn answers once
PrepareCommit/PrepareAbort is written; the markers follow through the
:class:`TransactionMarkerChannelManager`, and CompleteCommit/CompleteAbort is written when every
partition has its marker.  A background task aborts the transactions open longer than their
timeout, fencing their producer (Kafka's ``abortTimedOutTransactions``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kafkacore import errors
from kafkacore.broker.group.group_metadata_manager import GroupMetadataManager
from kafkacore.broker.group.regex import RegexError, compile_regex
from kafkacore.broker.log.log_manager import LogManager
from kafkacore.broker.metadata.metadata_cache import MetadataCache
from kafkacore.broker.network.faults import FaultInjector
from kafkacore.broker.server_common.coordinator_collaborators import (
    InternalTopicCreator,
    ProducerIdGenerator,
    Replicas,
)
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.broker.transaction.add_partitions_to_txn_manager import AddPartitionsToTxnManager
from kafkacore.broker.transaction.transaction_marker_channel_manager import (
    TransactionMarkerChannelManager,
    TxnMarkerEntry,
)
from kafkacore.broker.transaction.transaction_metadata import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
    is_epoch_exhausted,
)
from kafkacore.broker.transaction.transaction_state_manager import TransactionStateManager
from kafkacore.errors import Errors
from kafkacore.network.sasl import SaslMechanism

log = logging.getLogger(__name__)

S = TransactionState

InitProducerIdCallback = Callable[[int, int, int], None]  # (error, producer id, epoch)
ErrorCallback = Callable[[int], None]
EndTxnCallback = Callable[[int, int, int], None]  # (error, producer id, epoch)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class TransactionCoordinator:
    def __init__(self, c: Mapping[str, Any], broker_id: int, *,
                 producer_id_manager: ProducerIdGenerator, metadata_cache: MetadataCache,
                 log_manager: LogManager, replicas: Replicas, group_manager: GroupMetadataManager,
                 topic_creator: InternalTopicCreator, faults: FaultInjector | None = None,
                 inter_broker_sasl: Callable[[], SaslMechanism] | None = None) -> None:
        self.broker_id = broker_id
        self.producer_id_manager = producer_id_manager
        self.max_timeout_ms: int = c["transaction.max.timeout.ms"]
        self.abort_interval_s = c["transaction.abort.timed.out.transaction.cleanup.interval.ms"] \
            / 1000.0
        self.expiry_interval_s = \
            c["transaction.remove.expired.transaction.cleanup.interval.ms"] / 1000.0
        self.id_expiration_ms: int = c["transactional.id.expiration.ms"]
        self.txn_manager = TransactionStateManager(
            c, broker_id, metadata_cache=metadata_cache, log_manager=log_manager,
            replicas=replicas, topic_creator=topic_creator)
        self.marker_manager = TransactionMarkerChannelManager(
            broker_id, metadata_cache=metadata_cache, replicas=replicas,
            group_manager=group_manager, still_coordinating=self._still_coordinating,
            faults=faults, inter_broker_sasl=inter_broker_sasl)
        self.txn_manager.add_load_listener(self._on_loaded)
        self.add_partitions_manager = AddPartitionsToTxnManager(
            broker_id, self.txn_manager, self.handle_add_partitions, replicas=replicas,
            faults=faults, inter_broker_sasl=inter_broker_sasl)
        self._stop = threading.Event()
        self._timer: ShutdownableThread | None = None
        self._next_expiry = 0.0  # time.monotonic() of the next removal of expired ids

    def startup(self) -> None:
        self.marker_manager.startup()
        self.add_partitions_manager.startup()
        self.txn_manager.startup()
        self._next_expiry = time.monotonic() + self.expiry_interval_s
        self._timer = ShutdownableThread(f"transaction-timeouts-{self.broker_id}",
                                         work=self._run_timer_once)
        self._timer.start()

    def shutdown(self) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.shutdown(timeout_s=5.0)
        self.txn_manager.shutdown()
        self.marker_manager.shutdown()
        self.add_partitions_manager.shutdown()

    def partition_for(self, transactional_id: str) -> int:
        return self.txn_manager.partition_for(transactional_id)

    # -- InitProducerId ------------------------------------------------------------------------

    def handle_init_producer_id(self, transactional_id: str, txn_timeout_ms: int,
                                expected_producer_id: int, expected_epoch: int,
                                callback: InitProducerIdCallback) -> None:
        """Kafka's ``handleInitProducerId``: a new producer id for a new transactional id, or the
        next epoch of the existing one (fencing the older producer); a transaction left open is
        aborted first (the producer retries on CONCURRENT_TRANSACTIONS until it is done)."""
        if not transactional_id:
            callback(Errors.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            return
        if not 0 < txn_timeout_ms <= self.max_timeout_ms:
            callback(Errors.INVALID_TRANSACTION_TIMEOUT, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            return
        error, coordinator_epoch, metadata = self.txn_manager.get_transaction_state(
            transactional_id)
        if error != Errors.NONE:
            callback(error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            return
        if metadata is None:
            try:
                producer_id = self.producer_id_manager.generate_producer_id()
            except errors.BrokerResponseError as exc:  # no block of ids yet: retriable
                callback(exc.errno, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
                return
            metadata = self.txn_manager.put_if_absent(TransactionMetadata(
                transactional_id, producer_id, NO_PRODUCER_ID, NO_PRODUCER_EPOCH,
                NO_PRODUCER_EPOCH, txn_timeout_ms, S.EMPTY))
        now = _now_ms()
        abort_first = False
        transit: TxnTransitMetadata | None = None
        with metadata.lock:
            try:
                if metadata.pending_state is not None:
                    raise errors.ConcurrentTransactionsError()
                expected = None if expected_producer_id == NO_PRODUCER_ID else expected_epoch
                if expected is not None and not self._may_init(metadata, expected_producer_id,
                                                               expected_epoch):
                    raise errors.ProducerFencedError()
                if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                    raise errors.ConcurrentTransactionsError()
                if metadata.state in (S.ONGOING, S.PREPARE_EPOCH_FENCE):
                    if metadata.state == S.ONGOING:
                        metadata.fence(metadata.prepare_fence_producer_epoch(now))
                    abort_first = True
                elif metadata.is_producer_epoch_exhausted and expected in (
                        None, metadata.producer_epoch):
                    transit = metadata.prepare_producer_id_rotation(
                        self.producer_id_manager.generate_producer_id(),
                        txn_timeout_ms, now, record_last_epoch=expected is not None)
                elif metadata.is_producer_epoch_exhausted:
                    raise errors.ProducerFencedError()  # an older epoch of an exhausted id
                else:
                    transit = metadata.prepare_increment_producer_epoch(txn_timeout_ms,
                                                                        expected, now)
            except errors.BrokerResponseError as exc:
                callback(exc.errno, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
                return
        if abort_first:
            self._end_transaction(metadata, coordinator_epoch, commit=False,
                                  callback=lambda e: callback(
                                      Errors.CONCURRENT_TRANSACTIONS if e == Errors.NONE else e,
                                      NO_PRODUCER_ID, NO_PRODUCER_EPOCH))
            return
        if transit is None:
            raise errors.IllegalStateError(
                f"{transactional_id}: no transition prepared for InitProducerId")

        def written(error: int) -> None:
            if error != Errors.NONE:
                callback(error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            else:
                callback(Errors.NONE, transit.producer_id, transit.producer_epoch)

        self.txn_manager.append_transaction_to_log(transactional_id, coordinator_epoch,
                                                   metadata, transit, written)

    @staticmethod
    def _may_init(metadata: TransactionMetadata, producer_id: int, epoch: int) -> bool:
        """Kafka's ``isValidProducerId`` (KIP-360): a producer that names its id and epoch may
        go on if the id has no epoch yet (it was just created: a producer recovering from
        UNKNOWN_PRODUCER_ID, or a client that starts at producer id 0 and epoch 0), if it
        names the current id (the epoch is checked by the bump), or if it names the id before
        a rotation with its exhausted epoch (a retry of the call that rotated it)."""
        return metadata.producer_epoch == NO_PRODUCER_EPOCH \
            or producer_id == metadata.producer_id \
            or (producer_id == metadata.last_producer_id and is_epoch_exhausted(epoch))

    # -- AddPartitionsToTxn, AddOffsetsToTxn ---------------------------------------------------

    def _check_producer(self, metadata: TransactionMetadata, producer_id: int,
                        producer_epoch: int) -> None:
        if metadata.producer_id != producer_id:
            raise errors.InvalidProducerIdMappingError()
        if metadata.producer_epoch != producer_epoch:
            raise errors.ProducerFencedError()
        if metadata.pending_state is not None:
            raise errors.ConcurrentTransactionsError()

    def _existing_transaction(self, transactional_id: str, callback: ErrorCallback
                              ) -> tuple[int, TransactionMetadata] | None:
        """(coordinator epoch, metadata) of a transactional id this coordinator has loaded; or
        None, with ``callback`` answered: the partition's error, or INVALID_PRODUCER_ID_MAPPING
        for an id it does not know."""
        error, coordinator_epoch, metadata = self.txn_manager.get_transaction_state(
            transactional_id)
        if error != Errors.NONE:
            callback(error)
            return None
        if metadata is None:
            callback(Errors.INVALID_PRODUCER_ID_MAPPING)
            return None
        return coordinator_epoch, metadata

    def handle_add_partitions(self, transactional_id: str, producer_id: int,
                              producer_epoch: int, partitions: set[TopicPartition],
                              callback: ErrorCallback, *, verify_only: bool = False) -> None:
        """Kafka's ``handleAddPartitionsToTransaction`` (and, ``verify_only``, the brokers'
        check that the partitions are in the transaction, KIP-890)."""
        loaded = self._existing_transaction(transactional_id, callback)
        if loaded is None:
            return
        coordinator_epoch, metadata = loaded
        with metadata.lock:
            try:
                self._check_producer(metadata, producer_id, producer_epoch)
                if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                    raise errors.ConcurrentTransactionsError()
                if metadata.state in (S.PREPARE_EPOCH_FENCE, S.DEAD):
                    raise errors.ProducerFencedError()
                if verify_only:
                    ok = metadata.state == S.ONGOING and partitions <= metadata.topic_partitions
                    raise errors.InvalidTxnStateError() if not ok else _Done()
                if metadata.state == S.ONGOING and partitions <= metadata.topic_partitions:
                    raise _Done()
                transit = metadata.prepare_add_partitions(partitions, _now_ms())
            except _Done:
                callback(Errors.NONE)
                return
            except errors.BrokerResponseError as exc:
                callback(exc.errno)
                return
        self.txn_manager.append_transaction_to_log(transactional_id, coordinator_epoch,
                                                   metadata, transit, callback)

    # -- EndTxn --------------------------------------------------------------------------------

    def handle_end_transaction(self, transactional_id: str, producer_id: int,
                               producer_epoch: int, commit: bool,
                               callback: EndTxnCallback, *, bump_epoch: bool = False) -> None:
        """Kafka's ``handleEndTransaction``: answered once PrepareCommit/PrepareAbort is
        written; a retry of a transaction already ended the same way is answered NONE.

        ``bump_epoch`` is transaction version 2 (EndTxn v5, KIP-890 part 2): the epoch goes up
        by one with PrepareCommit/PrepareAbort, and the answer carries the producer id and
        epoch the producer continues with (a new id when the epoch is exhausted).  A retry
        then comes with the epoch just left behind."""
        def answer(error: int) -> None:
            callback(error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)

        if not transactional_id:
            answer(Errors.INVALID_REQUEST)
            return
        loaded = self._existing_transaction(transactional_id, answer)
        if loaded is None:
            return
        coordinator_epoch, metadata = loaded
        next_producer_id = NO_PRODUCER_ID
        with metadata.lock:
            try:
                same, preparing = ((S.COMPLETE_COMMIT, S.PREPARE_COMMIT) if commit
                                   else (S.COMPLETE_ABORT, S.PREPARE_ABORT))
                if bump_epoch and self._is_bumped_retry(metadata, producer_id, producer_epoch):
                    if metadata.state == same:
                        raise _Done()  # its answer was lost: the same answer again
                    if metadata.state == preparing:
                        raise errors.ConcurrentTransactionsError()
                    raise errors.InvalidTxnStateError()
                if metadata.producer_id != producer_id:
                    raise errors.InvalidProducerIdMappingError()
                if metadata.producer_epoch != producer_epoch:
                    raise errors.ProducerFencedError()
                if metadata.pending_state is not None:
                    raise errors.ConcurrentTransactionsError()
                if metadata.state == same and not bump_epoch:
                    raise _Done()  # a retry of what was done
                if metadata.state == preparing:
                    raise errors.ConcurrentTransactionsError()  # being done: retry later
                # Version 2 may abort with nothing added: a producer that lost track of what
                # reached the brokers (Produce v12 adds partitions without it) can always
                # abort, and the epoch bump fences whatever of it is still on the way.
                empty_abort = bump_epoch and not commit and metadata.state in (
                    S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
                if metadata.state != S.ONGOING and not empty_abort:
                    raise errors.InvalidTxnStateError()
                if bump_epoch and metadata.producer_epoch >= MAX_PRODUCER_EPOCH:
                    next_producer_id = self.producer_id_manager.generate_producer_id()
            except _Done:
                callback(Errors.NONE, *_producer_after_end(metadata))
                return
            except errors.BrokerResponseError as exc:
                answer(exc.errno)
                return

        def ended(error: int) -> None:
            if error != Errors.NONE:
                answer(error)
            elif not bump_epoch:
                callback(Errors.NONE, producer_id, producer_epoch)
            else:
                with metadata.lock:
                    callback(Errors.NONE, *_producer_after_end(metadata))

        self._end_transaction(metadata, coordinator_epoch, commit, callback=ended,
                              bump_epoch=bump_epoch, next_producer_id=next_producer_id)

    @staticmethod
    def _is_bumped_retry(metadata: TransactionMetadata, producer_id: int,
                         producer_epoch: int) -> bool:
        """Whether an EndTxn v5 is the retry of one whose epoch bump is written: it comes with
        the epoch before the bump (or the exhausted producer id, once moved to the next)."""
        if metadata.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT, S.COMPLETE_COMMIT,
                                  S.COMPLETE_ABORT) or metadata.client_transaction_version < 2:
            return False
        if producer_id == metadata.producer_id:
            return producer_epoch == metadata.producer_epoch - 1
        return producer_id == metadata.last_producer_id and metadata.producer_epoch == 0 \
            and producer_epoch == MAX_PRODUCER_EPOCH

    def _end_transaction(self, metadata: TransactionMetadata, coordinator_epoch: int,
                         commit: bool, callback: ErrorCallback, *, bump_epoch: bool = False,
                         next_producer_id: int = NO_PRODUCER_ID) -> None:
        """Write PrepareCommit/PrepareAbort, answer, then send the markers."""
        with metadata.lock:
            try:
                transit = metadata.prepare_abort_or_commit(
                    S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, _now_ms(),
                    bump_epoch=bump_epoch, next_producer_id=next_producer_id)
            except errors.BrokerResponseError as exc:
                callback(exc.errno)
                return

        def written(error: int) -> None:
            callback(error)
            if error == Errors.NONE:
                self._send_markers(metadata, coordinator_epoch, transit)

        self.txn_manager.append_transaction_to_log(metadata.transactional_id, coordinator_epoch,
                                                   metadata, transit, written)

    def _send_markers(self, metadata: TransactionMetadata, coordinator_epoch: int,
                      transit: TxnTransitMetadata) -> None:
        txn_id = metadata.transactional_id

        def complete() -> None:
            with metadata.lock:
                if metadata.state != transit.state or metadata.pending_state is not None:
                    return  # someone else moved it on (a new coordinator epoch, a restart)
                done = metadata.prepare_complete(_now_ms())
            self.txn_manager.append_transaction_to_log(
                txn_id, coordinator_epoch, metadata, done,
                lambda e: None if e == Errors.NONE else self._retry_complete(
                    metadata, coordinator_epoch, transit, e))

        self.marker_manager.add_txn_markers(TxnMarkerEntry(
            txn_id, coordinator_epoch, transit.producer_id, transit.producer_epoch,
            transit.state == S.PREPARE_COMMIT, set(transit.topic_partitions), complete))

    def _retry_complete(self, metadata: TransactionMetadata, coordinator_epoch: int,
                        transit: TxnTransitMetadata, error: int) -> None:
        """Writing the Complete state failed: the markers are written; try again while we
        are still the coordinator (writing markers twice is harmless)."""
        if self.txn_manager.coordinator_epoch_of(metadata.transactional_id) != coordinator_epoch:
            return
        log.info("transaction %s: writing its completion failed (%d); retrying",
                 metadata.transactional_id, error)
        self._stop.wait(0.1)
        self._send_markers(metadata, coordinator_epoch, transit)

    def _still_coordinating(self, entry: TxnMarkerEntry) -> bool:
        return self.txn_manager.coordinator_epoch_of(entry.transactional_id) \
            == entry.coordinator_epoch

    def _on_loaded(self, partition: int, coordinator_epoch: int,
                   loaded: dict[str, TransactionMetadata]) -> None:
        """A partition was loaded: finish what its previous coordinator began (Kafka's
        ``onTransactionLoaded``): markers for every PrepareCommit/PrepareAbort."""
        for metadata in loaded.values():
            with metadata.lock:
                if metadata.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                    continue
                transit = TxnTransitMetadata(
                    metadata.producer_id, metadata.last_producer_id, metadata.producer_epoch,
                    metadata.last_producer_epoch, metadata.txn_timeout_ms, metadata.state,
                    frozenset(metadata.topic_partitions), metadata.txn_start_timestamp,
                    metadata.txn_last_update_timestamp, metadata.next_producer_id,
                    metadata.client_transaction_version)
            log.info("transaction %s: completing its %s after loading",
                     metadata.transactional_id, metadata.state.name)
            self._send_markers(metadata, coordinator_epoch, transit)

    # -- DescribeTransactions, ListTransactions -----------------------------------------------

    def handle_describe_transactions(self, transactional_id: str) -> dict[str, Any]:
        """One id's state as DescribeTransactions answers it (Kafka's
        ``handleDescribeTransactions``)."""
        out: dict[str, Any] = {"error_code": Errors.NONE, "transactional_id": transactional_id,
                               "transaction_state": "", "transaction_timeout_ms": 0,
                               "transaction_start_time_ms": -1, "producer_id": NO_PRODUCER_ID,
                               "producer_epoch": NO_PRODUCER_EPOCH, "topics": []}
        error, _epoch, metadata = self.txn_manager.get_transaction_state(transactional_id)
        if error == Errors.NONE and metadata is None:
            error = Errors.TRANSACTIONAL_ID_NOT_FOUND
        if error != Errors.NONE:
            out["error_code"] = error
            return out
        if metadata is None:
            raise errors.IllegalStateError(f"{transactional_id}: no metadata and no error")
        with metadata.lock:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(metadata.topic_partitions):
                by_topic.setdefault(topic, []).append(partition)
            out.update(transaction_state=metadata.state.state_name,
                       transaction_timeout_ms=metadata.txn_timeout_ms,
                       transaction_start_time_ms=metadata.txn_start_timestamp,
                       producer_id=metadata.producer_id,
                       producer_epoch=metadata.producer_epoch,
                       topics=[{"topic": t, "partitions": p} for t, p in by_topic.items()])
        return out

    def handle_list_transactions(self, state_filters: list[str], producer_id_filters: list[int],
                                 duration_filter_ms: int, pattern: str | None
                                 ) -> tuple[int, list[str], list[TransactionMetadata]]:
        """(error, unknown state names, the matching ids) among those this broker coordinates
        (Kafka's ``listTransactionStates``)."""
        names = {s.state_name: s for s in TransactionState}
        unknown = [f for f in state_filters if f not in names]
        states = {names[f] for f in state_filters if f in names}
        if state_filters and not states:
            return Errors.NONE, unknown, []
        regex = None
        if pattern:
            try:
                regex = compile_regex(pattern)
            except (RegexError, UnicodeError):
                return Errors.INVALID_REGULAR_EXPRESSION, unknown, []
        if self.txn_manager.loading():
            return errors.CoordinatorLoadInProgressError.errno, unknown, []
        now = _now_ms()
        out = []
        for metadata in self.txn_manager.all_metadata():
            with metadata.lock:
                if states and metadata.state not in states:
                    continue
                if producer_id_filters and metadata.producer_id not in producer_id_filters:
                    continue
                if duration_filter_ms >= 0 and (metadata.state != S.ONGOING or now
                                                - metadata.txn_start_timestamp
                                                < duration_filter_ms):
                    continue
                if regex is not None and not regex.fullmatch(metadata.transactional_id):
                    continue
            out.append(metadata)
        return Errors.NONE, unknown, out

    # -- timeouts ------------------------------------------------------------------------------

    def _run_timer_once(self) -> bool:
        """One turn of Kafka's two scheduled tasks, on one supervised thread: abort the
        transactions past their timeout (every
        ``transaction.abort.timed.out.transaction.cleanup.interval.ms``), forget the ids unused
        for ``transactional.id.expiration.ms`` (every
        ``transaction.remove.expired.transaction.cleanup.interval.ms``).  A turn that raises is
        logged by ShutdownableThread and the next turn comes after its back-off."""
        if self._stop.wait(min(self.abort_interval_s, self.expiry_interval_s)):
            return False
        self.abort_timed_out_transactions()
        if time.monotonic() >= self._next_expiry:
            self._next_expiry = time.monotonic() + self.expiry_interval_s
            self.remove_expired_transactional_ids()
        return True

    def remove_expired_transactional_ids(self) -> None:
        """Write a tombstone for every id whose producer has not used it for
        ``transactional.id.expiration.ms`` and that has no transaction open (Kafka's
        ``removeExpiredTransactionalIds``)."""
        now = _now_ms()
        for metadata in self.txn_manager.all_metadata():
            with metadata.lock:
                if not (metadata.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
                        and metadata.pending_state is None
                        and metadata.txn_last_update_timestamp >= 0  # written at least once
                        and now - metadata.txn_last_update_timestamp > self.id_expiration_ms):
                    continue
                transit = metadata.prepare_dead(now)
            epoch = self.txn_manager.coordinator_epoch_of(metadata.transactional_id)
            if epoch is None:
                with metadata.lock:
                    metadata.pending_state = None
                continue
            log.info("transactional id %s: unused for %d ms, forgotten",
                     metadata.transactional_id, now - metadata.txn_last_update_timestamp)
            self.txn_manager.append_transaction_to_log(metadata.transactional_id, epoch,
                                                       metadata, transit, lambda e: None)

    def abort_timed_out_transactions(self) -> None:
        """Abort every Ongoing transaction past its timeout, with the producer's epoch bumped
        so that the producer is fenced (Kafka's ``abortTimedOutTransactions``)."""
        now = _now_ms()
        for metadata in self.txn_manager.all_metadata():
            with metadata.lock:
                if not (metadata.state == S.ONGOING and metadata.pending_state is None
                        and metadata.txn_start_timestamp + metadata.txn_timeout_ms < now):
                    continue
                metadata.fence(metadata.prepare_fence_producer_epoch(now))
            epoch = self.txn_manager.coordinator_epoch_of(metadata.transactional_id)
            if epoch is None:
                continue
            log.info("transaction %s: aborting it, open longer than %d ms",
                     metadata.transactional_id, metadata.txn_timeout_ms)
            self._end_transaction(metadata, epoch, commit=False,
                                  callback=lambda e: None)


def _producer_after_end(metadata: TransactionMetadata) -> tuple[int, int]:
    """The producer id and epoch a transaction version 2 producer continues with once its
    transaction ended: the bumped epoch, or epoch 0 of the next producer id."""
    if metadata.next_producer_id != NO_PRODUCER_ID:
        return metadata.next_producer_id, 0
    return metadata.producer_id, metadata.producer_epoch


class _Done(Exception):
    """Nothing to change: answer NONE."""
