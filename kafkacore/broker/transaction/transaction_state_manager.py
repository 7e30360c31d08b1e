"""Transactional ids as records of the replicated ``__transaction_state`` topic (Kafka's
``TransactionStateManager``).

It mirrors the group side (:mod:`kafkacore.broker.group.group_metadata_manager`): a transactional id
belongs to partition ``abs(hashCode(id)) % transaction.state.log.num.partitions``; the leader of
that partition is the id's coordinator; every state change is appended there with acks=all
before it takes effect (:meth:`TransactionStateManager.append_transaction_to_log`); a broker that
becomes leader of a partition loads it (COORDINATOR_LOAD_IN_PROGRESS meanwhile) and a broker that
stops leading it forgets its ids (NOT_COORDINATOR).  The partition's leader epoch is the
coordinator epoch written in the markers.
"""

from __future__ import annotations

import logging
import queue
import struct
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kafkacore import errors
from kafkacore.broker.group.group_metadata_manager import _records, partition_for
from kafkacore.broker.log.log_config import segment_bytes_config
from kafkacore.broker.log.log_manager import LogManager
from kafkacore.broker.metadata.metadata_cache import MetadataCache
from kafkacore.broker.server_common.coordinator_collaborators import (
    InternalTopicCreator,
    Replicas,
)
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.broker.transaction import transaction_log
from kafkacore.broker.transaction.transaction_metadata import (
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.errors import Errors

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"


#: How Kafka's ``appendTransactionToLog`` callback turns an append error into the answer's.
APPEND_ERROR_TO_TXN_ERROR = {
    errors.UnknownTopicOrPartitionError.errno: Errors.COORDINATOR_NOT_AVAILABLE,
    errors.NotEnoughReplicasError.errno: Errors.COORDINATOR_NOT_AVAILABLE,
    errors.NotEnoughReplicasAfterAppendError.errno: Errors.COORDINATOR_NOT_AVAILABLE,
    errors.RequestTimedOutError.errno: Errors.COORDINATOR_NOT_AVAILABLE,
    errors.NotLeaderOrFollowerError.errno: Errors.NOT_COORDINATOR,
    errors.KafkaStorageError.errno: Errors.NOT_COORDINATOR,
    errors.MessageTooLargeError.errno: Errors.UNKNOWN_SERVER_ERROR,
    errors.RecordListTooLargeError.errno: Errors.UNKNOWN_SERVER_ERROR,
}

#: ``listener(partition, coordinator_epoch, {id: metadata})`` once a partition is loaded
LoadListener = Callable[[int, int, dict[str, TransactionMetadata]], None]


class TransactionStateManager:
    """The ids of the ``__transaction_state`` partitions this broker leads."""

    def __init__(self, c: Mapping[str, Any], broker_id: int, *, metadata_cache: MetadataCache,
                 log_manager: LogManager, replicas: Replicas,
                 topic_creator: InternalTopicCreator) -> None:
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self.log_manager = log_manager
        #: the replica manager: the ``__transaction_state`` replicas, and their appends
        self.replicas = replicas
        self.topic_creator = topic_creator
        #: A broker alone leads every partition (no controller elects it).
        self.standalone: bool = c["process.roles"] == ""
        self.num_partitions: int = c["transaction.state.log.num.partitions"]
        self.replication_factor: int = c["transaction.state.log.replication.factor"]
        self.min_isr: int = c["transaction.state.log.min.isr"]
        self.segment_bytes: int = c["transaction.state.log.segment.bytes"]
        self.timeout_ms: int = c["offsets.commit.timeout.ms"]
        # Lock order: leaf. Guards _owned, _loading, _metadata.
        self._lock = threading.Lock()
        #: partition -> coordinator epoch, for the partitions loaded and served
        self._owned: dict[int, int] = {}
        #: partition -> election count, for those being loaded
        self._loading: dict[int, int] = {}
        self._elections = 0
        #: transactional id -> its metadata, for the owned partitions
        self._metadata: dict[str, TransactionMetadata] = {}
        self._load_queue: queue.Queue[tuple[int, int, int] | None] = queue.Queue()
        self._loader: ShutdownableThread | None = None
        self._load_listeners: list[LoadListener] = []

    def add_load_listener(self, listener: LoadListener) -> None:
        self._load_listeners.append(listener)

    def startup(self) -> None:
        if self.standalone:
            # A cluster of one leads every partition: load what the logs hold, now.
            meta = self.metadata_cache.get(TRANSACTION_STATE_TOPIC)
            if meta is not None:
                for p in range(meta.partitions):
                    lg = self.log_manager.get_log(TRANSACTION_STATE_TOPIC, p)
                    loaded = self._read_partition(lg) if lg is not None else {}
                    self._install(p, 0, loaded)
            return
        self._loader = ShutdownableThread(
            f"transaction-state-loader-{self.broker_id}", work=self._load_once)
        self._loader.start()

    def shutdown(self) -> None:
        if self._loader is not None:
            self._loader.initiate_shutdown()
            self._load_queue.put(None)  # wakes the loader waiting for a partition
            self._loader.shutdown(timeout_s=5.0)

    # -- who coordinates what ------------------------------------------------------------------

    def partition_count(self) -> int:
        meta = self.metadata_cache.get(TRANSACTION_STATE_TOPIC)
        return self.num_partitions if meta is None else int(meta.partitions)

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.partition_count())

    def ensure_topic(self) -> bool:
        """Create ``__transaction_state`` if it does not exist (on the first FindCoordinator,
        as Kafka): its partitions, its replication factor capped at the live brokers and its
        min.insync.replicas capped at that.  True if it exists now."""
        if self.metadata_cache.get(TRANSACTION_STATE_TOPIC) is not None:
            return True
        rf = min(self.replication_factor, self.topic_creator.live_brokers())
        # Compacted, as Kafka does: the log cleaner keeps each transactional id's latest state.
        configs = {"cleanup.policy": "compact", "retention.ms": "-1",
                   **segment_bytes_config(self.segment_bytes),
                   "min.insync.replicas": str(min(self.min_isr, rf))}
        if not self.topic_creator.create_internal_topic(TRANSACTION_STATE_TOPIC,
                                                        self.num_partitions, rf, configs):
            return False
        if self.standalone:  # a broker alone leads every partition of it at once
            with self._lock:
                for p in range(self.num_partitions):
                    self._owned.setdefault(p, 0)
        return True

    def get_transaction_state(self, transactional_id: str
                              ) -> tuple[int, int, TransactionMetadata | None]:
        """(error, coordinator epoch, metadata or None): NOT_COORDINATOR or
        COORDINATOR_LOAD_IN_PROGRESS when this broker cannot answer for the id (Kafka's
        ``getTransactionState``)."""
        p = self.partition_for(transactional_id)
        with self._lock:
            if p in self._loading:
                return Errors.COORDINATOR_LOAD_IN_PROGRESS, -1, None
            epoch = self._owned.get(p)
            if epoch is None:
                return Errors.NOT_COORDINATOR, -1, None
            return Errors.NONE, epoch, self._metadata.get(transactional_id)

    def put_if_absent(self, metadata: TransactionMetadata) -> TransactionMetadata:
        with self._lock:
            return self._metadata.setdefault(metadata.transactional_id, metadata)

    def coordinator_epoch_of(self, transactional_id: str) -> int | None:
        with self._lock:
            return self._owned.get(self.partition_for(transactional_id))

    def loading(self) -> bool:
        """Is a partition being loaded (ListTransactions cannot answer for it yet)?"""
        with self._lock:
            return bool(self._loading)

    def all_metadata(self) -> list[TransactionMetadata]:
        with self._lock:
            return list(self._metadata.values())

    def remove(self, transactional_id: str) -> None:
        with self._lock:
            self._metadata.pop(transactional_id, None)

    # -- leadership changes (from ReplicaManager.apply_delta) -----------------------------------

    def on_leadership(self, leading: dict[int, int]) -> None:
        """``leading``: partition -> leader epoch of the partitions this broker leads now."""
        if self.standalone:
            return
        with self._lock:
            known = {p: e for p, e in self._owned.items()}
            resigned = [p for p in list(known) + list(self._loading) if p not in leading]
            elected = [(p, e) for p, e in leading.items()
                       if p not in self._loading and known.get(p) != e]
            for p in resigned:
                self._owned.pop(p, None)
                self._loading.pop(p, None)
                for txn_id in [t for t in self._metadata if self.partition_for(t) == p]:
                    del self._metadata[txn_id]
            for p, epoch in elected:
                self._owned.pop(p, None)
                self._elections += 1
                self._loading[p] = self._elections
                self._load_queue.put((p, epoch, self._elections))
        for p in resigned:
            log.info("broker %d: unloaded transaction state partition %d",
                     self.broker_id, p)

    def _load_once(self) -> bool | None:
        """One turn of the loader: one partition loaded.  A load that fails is queued again
        and its error raised, so ShutdownableThread logs it and backs off (bounded) before the
        next turn."""
        task = self._load_queue.get()
        if task is None:
            return False
        partition, epoch, election = task
        try:
            rm = self.replicas
            p = rm.partitions.get((TRANSACTION_STATE_TOPIC, partition))
            loaded = self._read_partition(p.log) if p is not None else {}
        except Exception:
            with self._lock:
                if self._loading.get(partition) == election:
                    self._load_queue.put(task)
            raise
        with self._lock:
            if self._loading.get(partition) != election:
                return None  # resigned or elected again meanwhile
        self._install(partition, epoch, loaded)
        log.info("broker %d: loaded transaction state partition %d (%d ids, epoch %d)",
                 self.broker_id, partition, len(loaded), epoch)
        return None

    def _install(self, partition: int, epoch: int,
                 loaded: dict[str, TransactionMetadata]) -> None:
        with self._lock:
            self._loading.pop(partition, None)
            self._owned[partition] = epoch
            for txn_id, metadata in loaded.items():
                self._metadata[txn_id] = metadata
        for listener in self._load_listeners:
            listener(partition, epoch, loaded)

    def _read_partition(self, lg: Any) -> dict[str, TransactionMetadata]:
        """The latest record of each id in the log (a tombstone removes the id)."""
        out: dict[str, TransactionMetadata] = {}
        for offset, key, value in _records(lg):
            try:
                txn_id = transaction_log.read_key(key)
                if txn_id is None:
                    continue
                if value is None:
                    out.pop(txn_id, None)
                    continue
                out[txn_id] = TransactionMetadata.from_transit(
                    txn_id, transaction_log.read_value(value))
            except (ValueError, UnicodeDecodeError, struct.error) as exc:
                log.warning("%s: record at %d unreadable (%s); skipped", lg.name, offset, exc)
        return out

    # -- writing -------------------------------------------------------------------------------

    def append_transaction_to_log(self, transactional_id: str, coordinator_epoch: int,
                                  metadata: TransactionMetadata, transit: TxnTransitMetadata,
                                  callback: Callable[[int], None]) -> None:
        """Append ``transit`` to the id's partition with acks=all; once acknowledged, make it
        the id's state and call ``callback(NONE)``; else clear the pending state and call
        ``callback(error)`` (Kafka's ``appendTransactionToLog``).  Never call this holding
        ``metadata.lock``: the answer may come from a thread holding the purgatory's lock."""
        partition = self.partition_for(transactional_id)
        key = (TRANSACTION_STATE_TOPIC, partition)
        builder = MemoryRecordsBuilder(1024)
        # Dead is written as a tombstone: the id is forgotten (its expiration).
        builder.append(transit.txn_last_update_timestamp,
                       transaction_log.key_bytes(transactional_id),
                       None if transit.state == TransactionState.DEAD
                       else transaction_log.value_bytes(transit))
        response: dict[str, Any] = {"error_code": Errors.NONE, "base_offset": -1,
                                    "error_message": None}

        def on_append(results: dict[tuple[str, int], dict[str, Any]]) -> None:
            error = results.get(key, response)["error_code"]
            with metadata.lock:
                if error == Errors.NONE and self.coordinator_epoch_of(transactional_id) \
                        != coordinator_epoch:
                    error = Errors.NOT_COORDINATOR  # lost the partition while writing
                if error != Errors.NONE:
                    log.info("transactional id %s: writing %s failed with %d", transactional_id,
                             transit.state.name, error)
                    if metadata.pending_state == transit.state:
                        metadata.pending_state = None
                    error = APPEND_ERROR_TO_TXN_ERROR.get(error, error)
                else:
                    # Not fsync'd, as in Kafka (the log's flush.messages/flush.ms decide): the
                    # records and markers this state speaks of are not fsync'd either, and a
                    # flush here would cost three per transaction.
                    metadata.complete_transition(transit)
                    if transit.state == TransactionState.DEAD:
                        self.remove(transactional_id)
            callback(error)

        if not self.ensure_topic():
            with metadata.lock:
                metadata.pending_state = None
            callback(Errors.COORDINATOR_NOT_AVAILABLE)
            return
        try:
            self.replicas.append_records(
                self.timeout_ms, -1, {key: (response, bytes(builder.build()))}, on_append)
        except Exception:
            log.exception("transactional id %s: appending its state failed", transactional_id)
            with metadata.lock:
                metadata.pending_state = None
            callback(Errors.UNKNOWN_SERVER_ERROR)
