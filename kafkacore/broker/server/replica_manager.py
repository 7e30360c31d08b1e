"""``ReplicaManager``: this broker's replicas, their roles, and the two purgatories
(Kafka's ``ReplicaManager``).

- Produce goes through :meth:`ReplicaManager.append_records`: the leader appends, and an acks=all
  request waits as a :class:`~kafkacore.broker.server.delayed_produce.DelayedProduce` until the ISR has
  the batches.
- Fetch goes through :meth:`ReplicaManager.fetch_messages`: consumers read below the high
  watermark, followers (``replica_id >= 0``) up to the log end and report their log end offset by
  the offset they fetch from; a fetch that finds too little waits as a
  :class:`~kafkacore.broker.server.delayed_fetch.DelayedFetch`.
- The controller's decisions (leaders, epochs, replicas, ISR) arrive in :meth:`apply_delta` (the
  partitions they changed) or :meth:`apply_image` (all); this
  broker then becomes leader or follower of each of those partitions and starts or stops its
  :class:`~kafkacore.broker.server.replica_fetcher.ReplicaFetcherThread` s.

A broker without a controller (``process.roles`` empty, the single :class:`Broker`) is a cluster
of one: it leads every partition at leader epoch 0 with itself as the only replica.
See docs/broker/replication.rst.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkacore import errors
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.group.group_metadata_manager import OFFSETS_TOPIC
from kafkacore.broker.log import Log, LogConfig, LogManager
from kafkacore.broker.log.leader_epoch_cache import LeaderEpochFileCache
from kafkacore.broker.metadata.metadata_cache import MetadataCache
from kafkacore.broker.metadata.partition_state import PartitionState
from kafkacore.broker.network.faults import FaultInjector
from kafkacore.broker.server.alter_partition_manager import AlterPartitionManager
from kafkacore.broker.server.broker_lifecycle_manager import BrokerLifecycleManager
from kafkacore.broker.server.delayed_fetch import READ_COMMITTED, DelayedFetch
from kafkacore.broker.server.delayed_produce import DelayedProduce, ProducePartitionStatus
from kafkacore.broker.server.partition import Partition
from kafkacore.broker.server.replica_fetcher import ReplicaFetcherManager
from kafkacore.broker.server_common.files import replace_atomically
from kafkacore.broker.server_common.kafka_scheduler import KafkaScheduler
from kafkacore.broker.server_common.purgatory import DelayedOperationPurgatory
from kafkacore.broker.transaction.transaction_state_manager import TRANSACTION_STATE_TOPIC
from kafkacore.errors import Errors
from kafkacore.network.sasl import SaslMechanism

log = logging.getLogger(__name__)

HW_CHECKPOINT_FILE = "replication-offset-checkpoint"
#: the topics a client may not produce to (Kafka's ``Topic.isInternal``) ...
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})
#: ... unless it names itself as Kafka's own admin tools do (``AdminUtils.ADMIN_CLIENT_ID``)
ADMIN_CLIENT_ID = "__admin_client"


@dataclass
class FetchParams:
    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    #: 1: read_committed, consumers read below the last stable offset (KIP-98)
    isolation_level: int = 0

    @property
    def is_follower(self) -> bool:
        return self.replica_id >= 0


@dataclass
class FetchPartitionInfo:
    topic: str
    topic_id: Any
    partition: int
    fetch_offset: int
    current_leader_epoch: int
    max_bytes: int


class ReplicaManager:
    def __init__(self, config: BrokerConfig, broker_id: int, *, log_manager: LogManager,
                 metadata_cache: MetadataCache, scheduler: KafkaScheduler,
                 faults: FaultInjector, inter_broker_sasl: Callable[[], SaslMechanism] | None,
                 lifecycle: Callable[[], BrokerLifecycleManager | None]) -> None:
        """``scheduler``: runs the ISR expiration and the high-watermark checkpoints;
        ``faults`` and ``inter_broker_sasl``: what the replica fetchers' connections obey and
        authenticate with; ``lifecycle()``: the broker's registration with the controller (None
        alone, and in a cluster until the broker joins it, after the replica manager starts):
        its broker epoch, which the fetches carry, and its channel for AlterPartition."""
        self.config = config
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.metadata_cache = metadata_cache
        self.scheduler = scheduler
        self.faults = faults
        self.inter_broker_sasl = inter_broker_sasl
        self.lifecycle = lifecycle
        #: (topic, listener): ``listener({partition: leader epoch})`` of the partitions of
        #: ``topic`` this broker leads, after each image (see add_leadership_listener)
        self._leadership_listeners: list[tuple[str, Callable[[dict[int, int]], None]]] = []
        self.standalone = self.config["process.roles"] == ""
        # Lock order 4 (see threads.rst for its one exception). Guards partitions, roles.
        self._lock = threading.RLock()
        self.partitions: dict[tuple[str, int], Partition] = {}
        #: the same partitions by topic: what a delta of one topic looks at
        self._hosted: dict[str, dict[int, Partition]] = {}
        #: partitions the image makes this broker a replica of but whose log it could not
        #: create (Kafka's ``HostedPartition.Offline``), with why: KAFKA_STORAGE_ERROR to
        #: Produce and Fetch, offline in Metadata; tried again when the controller changes one
        self.offline_partitions: dict[tuple[str, int], str] = {}
        #: the partitions the last :meth:`apply_delta` looked at (a statistic: what one
        #: change costs must not grow with the image)
        self.last_apply_examined = 0
        self.produce_purgatory = DelayedOperationPurgatory("Produce", broker_id=self.broker_id)
        self.fetch_purgatory = DelayedOperationPurgatory("Fetch", broker_id=self.broker_id)
        self.fetcher_manager: ReplicaFetcherManager | None = None  # in a cluster
        self.alter_partition_manager: AlterPartitionManager | None = None
        #: the cluster as the controller last described it: (brokers by id, topics)
        self.brokers: dict[int, tuple[str, int]] = {}
        self.image_topics: dict[str, dict[int, PartitionState]] = {}
        self._checkpoint_path = Path(self.config.log_dirs[0]) / HW_CHECKPOINT_FILE
        self._checkpointed_hw = _read_hw_checkpoint(self._checkpoint_path)
        self._stop = threading.Event()
        # Lock order: leaf. One writer of the high-watermark checkpoint files.
        self._hw_checkpoint_lock = threading.Lock()

    def startup(self) -> None:
        if self.standalone:
            return
        self.fetcher_manager = ReplicaFetcherManager(self)
        self.alter_partition_manager = AlterPartitionManager(
            self.broker_id, lifecycle=self.lifecycle, on_isr_applied=self._on_isr_applied)
        self.alter_partition_manager.start()
        # Kafka's ReplicaManager.startup: both on the broker's KafkaScheduler.
        scheduler = self.scheduler
        isr_period = max(self.config["replica.lag.time.max.ms"] // 2, 50)
        scheduler.schedule("isr-expiration", self.maybe_shrink_isr, isr_period, isr_period)
        hw_period = self.config["replica.high.watermark.checkpoint.interval.ms"]
        scheduler.schedule("highwatermark-checkpoint", self.checkpoint_high_watermarks,
                           hw_period, hw_period)

    def _on_isr_applied(self, key: tuple[str, int], changed: bool) -> None:
        """The controller answered an AlterPartition: a new ISR may complete waiting produces
        (and fetches); an unchanged one still lets the produces recheck."""
        if changed:
            self.complete_delayed_requests(key)
        else:
            self.produce_purgatory.check_and_complete(key)

    def shutdown(self) -> None:
        self._stop.set()
        if self.fetcher_manager is not None:
            self.fetcher_manager.shutdown()
        if self.alter_partition_manager is not None:
            self.alter_partition_manager.shutdown()
        if not self.standalone:
            self.checkpoint_high_watermarks()
        self.produce_purgatory.shutdown()
        self.fetch_purgatory.shutdown()

    # -- partitions ------------------------------------------------------------------------------

    def add_leadership_listener(self, topic: str,
                                listener: Callable[[dict[int, int]], None]) -> None:
        """After each image from the controller, ``listener({partition: leader epoch})`` with
        the partitions of ``topic`` this broker leads (the group coordinator's
        ``__consumer_offsets``, the transaction coordinator's ``__transaction_state``)."""
        self._leadership_listeners.append((topic, listener))

    def topic_config(self, configs: dict[str, str]) -> LogConfig:
        """A topic's :class:`~kafkacore.broker.log.LogConfig`: its own settings over the
        broker-wide defaults (raises ``InvalidConfigError``)."""
        return LogConfig.from_properties(configs, base=self.log_manager.default_config)

    def get_partition_log(self, topic: str, partition: int) -> Log | None:
        """The partition's log, or None when the topic or the partition does not exist."""
        meta = self.metadata_cache.get(topic)
        if meta is None or not 0 <= partition < meta.partitions:
            return None
        lg = self.log_manager.get_log(topic, partition)
        if lg is None:  # the topic is known but this log was lost: recreate it empty
            lg = self.log_manager.get_or_create_log(
                topic, partition, self.topic_config(meta.configs), meta.topic_id)
        return lg

    def get_partition(self, topic: str, index: int) -> Partition | None:
        key = (topic, index)
        partition = self.partitions.get(key)
        if not self.standalone:
            return partition
        # A cluster of one: every partition of a known topic is ours, led at epoch 0.
        meta = self.metadata_cache.get(topic)
        if meta is None or not 0 <= index < meta.partitions:
            return None
        if partition is not None and partition.log is self.log_manager.get_log(topic, index):
            return partition  # the common case (every partition of every Produce): no more to do
        lg = self.get_partition_log(topic, index)
        with self._lock:
            partition = self.partitions.get(key)
            if partition is None or partition.log is not lg:
                partition = Partition(topic, index, meta.topic_id, lg, self.broker_id, None,
                                      self.config["replica.lag.time.max.ms"])
                me = self.broker_id
                partition.make_leader(PartitionState(me, 0, [me], [me]))
                self._host(partition)
            return partition

    def describe_log_dirs(self, wanted: set[tuple[str, int]] | None) -> list[dict[str, Any]]:
        """Each log dir: whether it is online, the size of each partition's log in it (of
        ``wanted``, None for all) and how far its end is behind the high watermark (0 on a
        leader: Kafka's offset lag), the disk's total and usable bytes (Kafka's
        ``ReplicaManager.describeLogDirs``)."""
        import shutil

        log_manager = self.log_manager
        by_dir: dict[Path, dict[str, list[dict[str, Any]]]] = {
            d: {} for d in log_manager.log_dirs}
        for (topic, index), lg in sorted(log_manager.all_logs().items()):
            if wanted is not None and (topic, index) not in wanted:
                continue
            topics = by_dir.setdefault(lg.dir.parent, {})
            topics.setdefault(topic, []).append({
                "partition_index": index, "partition_size": lg.size_in_bytes,
                "offset_lag": max(lg.high_watermark - lg.log_end_offset, 0),
                "is_future_key": False})
        results = []
        for d, topics in by_dir.items():
            offline = log_manager.dir_failure_channel.is_offline(d)
            try:
                usage = shutil.disk_usage(d)
                total, usable = usage.total, usage.free
            except OSError:
                total = usable = -1
            results.append({
                "error_code": Errors.KAFKA_STORAGE_ERROR if offline else Errors.NONE,
                "log_dir": str(d.resolve()),
                "topics": [] if offline else [{"name": t, "partitions": parts}
                                              for t, parts in topics.items()],
                "total_bytes": total, "usable_bytes": usable})
        return results

    def leader_partition_or_error(self, topic: str, index: int,
                                  current_leader_epoch: int = -1) -> tuple[Partition | None, int]:
        partition = self.get_partition(topic, index)
        if partition is None:
            if (topic, index) in self.offline_partitions:
                return None, Errors.KAFKA_STORAGE_ERROR
            known = self.metadata_cache.get(topic)
            exists = known is not None and 0 <= index < known.partitions
            return None, (Errors.NOT_LEADER_OR_FOLLOWER if exists
                          else Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if current_leader_epoch >= 0:
            if current_leader_epoch < partition.leader_epoch:
                return None, Errors.FENCED_LEADER_EPOCH
            if current_leader_epoch > partition.leader_epoch:
                return None, Errors.UNKNOWN_LEADER_EPOCH
        if not partition.is_leader:
            return None, Errors.NOT_LEADER_OR_FOLLOWER
        return partition, Errors.NONE

    def complete_delayed_requests(self, key: tuple[str, int]) -> None:
        """A HW moved or a role changed on ``key``: waiting produces and fetches may be done."""
        self.produce_purgatory.check_and_complete(key)
        self.fetch_purgatory.check_and_complete(key)

    # -- Produce ---------------------------------------------------------------------------------

    def append_records(self, timeout_ms: int, required_acks: int,
                       entries: dict[tuple[str, int], tuple[dict[str, Any], Any]],
                       respond: Any, *, from_coordinator: bool = False,
                       internal_topics_allowed: bool = True) -> None:
        """Append each partition's batches as leader; answer through ``respond({key:
        response})`` now, or, for acks=all, when the ISR has them (Kafka's ``appendRecords``).
        ``from_coordinator``: transaction markers (control batches) written for the
        transaction coordinator."""
        results: dict[tuple[str, int], dict[str, Any]] = {}
        waiting: dict[tuple[str, int], ProducePartitionStatus] = {}
        for key, (response, records) in entries.items():
            results[key] = response
            partition, error = self.leader_partition_or_error(*key)
            if error != Errors.UNKNOWN_TOPIC_OR_PARTITION and not internal_topics_allowed \
                    and key[0] in INTERNAL_TOPICS:
                # a forged commit or transaction record would take effect at the next load
                response.update(error_code=Errors.INVALID_TOPIC_EXCEPTION,
                                error_message=f"Cannot append to internal topic {key[0]}")
                continue
            if partition is None:
                response["error_code"] = error
                continue
            try:
                info, hw_moved, replicated = partition.append_records_to_leader(
                    records, required_acks, from_coordinator=from_coordinator)
            except errors.BrokerResponseError as exc:
                response.update(error_code=exc.errno, error_message=str(exc)[:1000])
                # KIP-467: the records a LogValidator check refused, each by its index
                response["record_errors"] = getattr(exc, "record_errors", [])
                continue
            # A duplicate (a retried batch) gets the original batch's offsets: written once.
            first_offset, last_offset, append_time, start_offset, _, _ = info
            response["base_offset"] = first_offset
            response["log_append_time_ms"] = append_time
            response["log_start_offset"] = start_offset
            # Followers long-polling this partition have new data; a moved HW may complete
            # produces waiting for it (Kafka's ReplicaManager does the same after an append).
            self.fetch_purgatory.check_and_complete(key)
            if hw_moved:
                self.produce_purgatory.check_and_complete(key)
            if required_acks == -1 and not replicated:
                # An ISR of one, or followers already past the batches, answer at once; else
                # the answer waits in the purgatory for the followers.
                waiting[key] = ProducePartitionStatus(last_offset + 1, response)
        if waiting:
            statuses = {key: waiting.get(key) or ProducePartitionStatus(
                -1, response, acks_pending=False) for key, response in results.items()}
            operation = DelayedProduce(timeout_ms, statuses, self, respond)
            self.produce_purgatory.try_complete_else_watch(operation, list(waiting))
            return
        respond(results)

    # -- Fetch -----------------------------------------------------------------------------------

    def fetch_messages(self, params: FetchParams, infos: list[FetchPartitionInfo],
                       respond: Any) -> None:
        """Read now; if there is less than ``min_bytes`` and no error, wait in the purgatory
        (long poll) until there is, or ``max_wait_ms`` passed (Kafka's ``fetchMessages``)."""
        results = self.read_from_local_log(params, infos)
        total = sum(len(r["records"] or b"") for r in results)
        errored = any(r["error_code"] != Errors.NONE for r in results)
        if params.max_wait_ms <= 0 or not infos or total >= params.min_bytes or errored:
            respond(results)
            return
        for r in results:  # read again when the wait ends: give the file regions back now
            if hasattr(r["records"], "close"):
                r["records"].close()
        operation = DelayedFetch(params.max_wait_ms, params, infos, self, respond)
        self.fetch_purgatory.try_complete_else_watch(
            operation, [(i.topic, i.partition) for i in infos])

    def read_from_local_log(self, params: FetchParams,
                            infos: list[FetchPartitionInfo]) -> list[dict[str, Any]]:
        remaining = params.max_bytes
        got_data = False
        results = []
        for info in infos:
            part: dict[str, Any] = {
                "partition_index": info.partition, "error_code": Errors.NONE,
                "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                "aborted_transactions": None, "preferred_read_replica": -1, "records": b"",
            }
            results.append(part)
            partition, error = self.leader_partition_or_error(
                info.topic, info.partition, info.current_leader_epoch)
            if partition is None:
                part["error_code"] = error
                continue
            lg = partition.log
            read_committed = params.isolation_level == READ_COMMITTED and not params.is_follower
            try:
                # KIP-74: the first batch is returned whole even if larger than the limits,
                # so a consumer can always make progress.
                max_offset = None if params.is_follower else (
                    lg.last_stable_offset if read_committed else lg.high_watermark)
                data = lg.read(info.fetch_offset, max(0, min(info.max_bytes, remaining)),
                               max_offset=max_offset, min_one_batch=not got_data,
                               file_records=True)
            except errors.BrokerResponseError as exc:
                part.update(error_code=exc.errno, high_watermark=lg.high_watermark,
                            last_stable_offset=lg.last_stable_offset,
                            log_start_offset=lg.log_start_offset)
                continue
            if params.is_follower:
                hw_moved, expand = partition.update_follower_fetch_state(
                    params.replica_id, info.fetch_offset)
                if expand is not None and params.replica_id not in self.brokers:
                    # Kafka's isReplicaIsrEligible: a fenced broker (a late fetch it sent
                    # before it stopped) does not rejoin the ISR.
                    partition.abandon_pending_isr()
                    expand = None
                if expand is not None and self.alter_partition_manager is not None:
                    self.alter_partition_manager.submit(partition, expand)
                if hw_moved:
                    self.complete_delayed_requests(partition.key)
            if data.records:
                got_data = True
                remaining -= len(data.records)
            part.update(high_watermark=lg.high_watermark,
                        last_stable_offset=lg.last_stable_offset,
                        log_start_offset=data.log_start_offset, records=data.records)
            if read_committed:
                # The consumer drops these producers' batches from each first offset to
                # the transaction's ABORT marker.
                part["aborted_transactions"] = [
                    {"producer_id": t.producer_id, "first_offset": t.first_offset}
                    for t in lg.collect_aborted_transactions(info.fetch_offset, max_offset)]
        return results

    # -- OffsetForLeaderEpoch --------------------------------------------------------------------

    def last_offset_for_leader_epoch(self, topic: str, index: int, current_leader_epoch: int,
                                     epoch: int) -> tuple[int, int, int]:
        """(error, epoch, end offset) as the leader sees it (Kafka's
        ``lastOffsetForLeaderEpoch``)."""
        partition, error = self.leader_partition_or_error(topic, index, current_leader_epoch)
        if partition is None:
            return error, -1, -1
        found_epoch, end = partition.end_offset_for_epoch(epoch)
        return Errors.NONE, found_epoch, end

    # -- the controller's decisions --------------------------------------------------------------

    def apply_image(self, brokers: dict[int, tuple[str, int]],
                    topics: dict[str, tuple[Any, dict[int, PartitionState]]]) -> None:
        """The whole image (the first one, or one taken after falling behind the controller's
        snapshot): every partition is looked at, and the partitions of topics no longer in it
        are dropped (Kafka's ``ReplicaManager`` applies a snapshot as a delta from nothing)."""
        self.apply_delta(brokers, topics, None)

    def apply_delta(self, brokers: dict[int, tuple[str, int]],
                    topics: dict[str, tuple[Any, dict[int, PartitionState]]],
                    changed: Mapping[str, Collection[int]] | None,
                    deleted: Collection[str] = ()) -> None:
        """Become leader or follower of each changed partition the image gives this broker
        (Kafka's ``applyDelta`` of a ``TopicsDelta``).  ``topics``: the image, name -> (topic
        id, {partition: state}); ``changed``: topic -> the partitions whose state changed since
        the last apply (None: every partition of the image); ``deleted``: topics gone.  What it
        costs grows with the changed partitions, not with the image: only they are looked at
        (counted in :attr:`last_apply_examined`).  A topic whose partitions cannot be applied
        is said at ERROR and skipped; a partition whose log cannot be created is offline here
        (:attr:`offline_partitions`), and the others are still applied."""
        with self._lock:
            examined = 0
            if changed is None:
                gone = [k for k in self.partitions if k[0] not in topics]
                examined += len(self.partitions)
                for key in [k for k in self.offline_partitions if k[0] not in topics]:
                    del self.offline_partitions[key]
                work: dict[str, Collection[int] | None] = dict.fromkeys(topics)
            else:
                gone = [(name, i) for name in deleted if name not in topics
                        for i in list(self._hosted.get(name, ()))]
                work = dict(changed)
            for key in gone:
                self._drop_partition(key)
            new_followers: dict[Partition, int] = {}
            offline: dict[tuple[str, int], str] = {}
            for name, indexes in work.items():
                if name not in topics:
                    continue  # deleted since (its partitions went with it)
                topic_id, parts = topics[name]
                try:
                    for index in parts if indexes is None else indexes:
                        state = parts.get(index)
                        if state is not None:
                            examined += 1
                            self._apply_partition(name, index, topic_id, state,
                                                  new_followers, offline)
                except Exception as exc:  # one topic's: the others are still applied
                    log.error("broker %d: cannot apply the partitions of topic %s (%s: %s); "
                              "skipped until the controller changes them", self.broker_id,
                              name, type(exc).__name__, exc)
            if new_followers and self.fetcher_manager is not None:
                self.fetcher_manager.add_partitions(new_followers)
            if offline:
                self._report_offline(offline)
            # Published last, so that Metadata answers never show a decision this broker has
            # not acted on yet; whole, whatever could not be hosted here (every broker lists
            # the controller's partitions: one that is offline here says so itself).
            self.brokers = dict(brokers)
            if changed is None:
                self.image_topics = {name: parts for name, (_, parts) in topics.items()}
            else:
                for name in work:
                    if name in topics:
                        self.image_topics[name] = topics[name][1]
                for name in deleted:
                    if name not in topics:
                        self.image_topics.pop(name, None)
                        self._forget_offline(name)
            # The coordinators load the partitions of their topics this broker now leads and
            # unload the others (Kafka's onLeadershipChange: onElection / onResignation): told
            # when their topic is in the delta.
            for topic, listener in self._leadership_listeners:
                if changed is None or topic in work or topic in deleted:
                    hosted = self._hosted.get(topic, {})
                    examined += len(hosted)
                    listener({i: p.leader_epoch for i, p in hosted.items() if p.is_leader})
            self.last_apply_examined = examined

    def _apply_partition(self, name: str, index: int, topic_id: Any, state: PartitionState,
                         new_followers: dict[Partition, int],
                         offline: dict[tuple[str, int], str]) -> None:
        """One partition's new state: leader, follower, or no longer a replica here."""
        key = (name, index)
        if self.broker_id not in state.replicas:
            self.offline_partitions.pop(key, None)
            if key in self.partitions:
                self._drop_partition(key)
            if self.log_manager.get_log(name, index) is not None:
                # Reassigned away from this broker: its copy goes (Kafka's
                # ReplicaManager stops the replica with deletion).
                self.log_manager.delete_log(name, index)
                log.info("broker %d: no longer a replica of %s-%d; its log deleted",
                         self.broker_id, name, index)
            return
        partition = self.partitions.get(key)
        if partition is not None and state.leader_epoch < partition.leader_epoch:
            return  # an older image than what we acted on already
        if partition is None:
            try:
                partition = self._create_partition(name, index, topic_id)
            except errors.KafkaStorageError as exc:
                # Kafka's HostedPartition.Offline: no log, so no replica here; Produce and
                # Fetch get KAFKA_STORAGE_ERROR, Metadata lists this replica offline.
                if key not in self.offline_partitions:
                    offline[key] = str(exc)
                self.offline_partitions[key] = str(exc)
                return
            self.offline_partitions.pop(key, None)
        if state.leader == self.broker_id:
            # Kafka's makeLeaders: the fetcher goes first, so that nothing it
            # fetched from the old leader lands after this replica leads.
            if self.fetcher_manager is not None:
                self.fetcher_manager.remove_partitions([key])
            if partition.make_leader(state):
                log.info("broker %d: leader of %s-%d at epoch %d, ISR %s",
                         self.broker_id, name, index, state.leader_epoch, state.isr)
        else:
            if partition.make_follower(state):
                if self.fetcher_manager is not None:
                    self.fetcher_manager.remove_partitions([key])
                if state.leader >= 0:
                    new_followers[partition] = state.leader
        if partition.is_leader or state.leader != self.broker_id:
            self.complete_delayed_requests(key)

    def _report_offline(self, offline: dict[tuple[str, int], str]) -> None:
        """Said once, at ERROR, for the partitions newly offline in one apply."""
        keys = sorted(offline)
        shown = ", ".join(f"{t}-{i}" for t, i in keys[:5])
        more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
        log.error("broker %d: cannot host %d partition(s) it is a replica of (%s%s): %s; "
                  "offline on this broker, the others are served", self.broker_id, len(keys),
                  shown, more, offline[keys[0]])

    def _forget_offline(self, topic: str) -> None:
        """A deleted topic's partitions are not offline any more (rare: only then a walk)."""
        if self.offline_partitions:
            for key in [k for k in self.offline_partitions if k[0] == topic]:
                del self.offline_partitions[key]

    def _create_partition(self, topic: str, index: int, topic_id: Any) -> Partition:
        meta = self.metadata_cache.get(topic)
        config = self.topic_config(meta.configs if meta is not None else {})
        lg = self.log_manager.get_or_create_log(topic, index, config, topic_id)
        if lg._hw is None:  # noqa: SLF001 - a replica's HW starts at its checkpoint
            lg.high_watermark = min(self._checkpointed_hw.get((topic, index), 0),
                                    lg.log_end_offset)
        partition = Partition(topic, index, topic_id, lg, self.broker_id,
                              LeaderEpochFileCache(lg.dir),
                              self.config["replica.lag.time.max.ms"])
        self._host(partition)
        return partition

    def _host(self, partition: Partition) -> None:
        self.partitions[partition.key] = partition
        self._hosted.setdefault(partition.topic, {})[partition.index] = partition

    def drop_partition(self, key: tuple[str, int]) -> None:
        with self._lock:
            self._drop_partition(key)

    def _drop_partition(self, key: tuple[str, int]) -> None:
        partition = self.partitions.pop(key, None)
        self.offline_partitions.pop(key, None)
        hosted = self._hosted.get(key[0])
        if hosted is not None:
            hosted.pop(key[1], None)
            if not hosted:
                del self._hosted[key[0]]
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_partitions([key])
        if partition is not None:
            partition.leader_id = -1
            self.complete_delayed_requests(key)

    # -- background work -------------------------------------------------------------------------

    def maybe_shrink_isr(self) -> None:
        """Kafka's ``isr-expiration`` task (every half ``replica.lag.time.max.ms``): drop the
        followers that have not caught up for that long."""
        if self.alter_partition_manager is None or self._stop.is_set():
            return
        for partition in list(self.partitions.values()):
            try:
                new_isr = partition.maybe_shrink_isr()
                if new_isr is not None:
                    log.info("broker %d: shrinking ISR of %s-%d to %s", self.broker_id,
                             partition.topic, partition.index, new_isr)
                    self.alter_partition_manager.submit(partition, new_isr)
            except Exception:
                log.exception("ISR expiration of %r failed", partition)

    def checkpoint_high_watermarks(self) -> None:
        """Kafka's ``replication-offset-checkpoint``: a restarted replica starts from its HW."""
        with self._hw_checkpoint_lock:  # the periodic task and shutdown share its temp file
            points = {k: p.log.high_watermark for k, p in list(self.partitions.items())}
            text = f"0\n{len(points)}\n" + "".join(
                f"{t} {i} {hw}\n" for (t, i), hw in sorted(points.items()))
            replace_atomically(self._checkpoint_path, text.encode())


def _read_hw_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    try:
        lines = path.read_text().split("\n")
        count = int(lines[1])
        out = {}
        for line in lines[2:2 + count]:
            topic, index, hw = line.split()
            out[(topic, int(index))] = int(hw)
        return out
    except (FileNotFoundError, IndexError, ValueError):
        return {}
