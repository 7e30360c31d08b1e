"""Committed offsets as records of the replicated ``__consumer_offsets`` topic (Kafka's
``GroupMetadataManager``).

A group belongs to one partition of ``__consumer_offsets``: ``abs(hashCode(group_id)) %
offsets.topic.num.partitions``, with Java's ``String.hashCode`` so a group lands where Kafka
would put it.  The leader of that partition is the group's coordinator.  An OffsetCommit is an
append to that partition with acks=all, so a commit is answered only once every in-sync replica
has it, and a broker that becomes leader after a failover finds every acknowledged commit in its
own replica of the log.

- :meth:`GroupMetadataManager.store_offsets`: the append, through the
  :class:`~kafkacore.broker.server.replica_manager.ReplicaManager` (the answer waits in the produce
  purgatory); the cache is updated when the append is acknowledged.
- :meth:`GroupMetadataManager.on_elected`: this broker became leader of an offsets partition;
  a loader thread reads the partition's log into the cache (the partition answers
  COORDINATOR_LOAD_IN_PROGRESS meanwhile).
- :meth:`GroupMetadataManager.on_resigned`: another broker leads it now; its offsets leave the
  cache (requests get NOT_COORDINATOR and clients look the coordinator up again).

The records are Kafka's (``GroupCoordinatorRecordSerde``): key version 1 (an offset commit:
group, topic, partition) and value version 3 (offset, leader epoch, metadata, commit timestamp),
each a big-endian ``int16`` version then the fields, strings as ``int16`` length + UTF-8; a
record with a null value (a tombstone) deletes the offset.  A group metadata record (key version
2, value version 3: protocol type, generation, protocol, leader, and each member with its
subscription and assignment) is written when a generation gets its assignment and when the group
empties (:meth:`GroupMetadataManager.store_group`); loading restores the latest one of each group.
See docs/broker/groups.rst.
"""

from __future__ import annotations

import logging
import queue
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kafkacore.broker.group import consumer_group_records
from kafkacore.broker.log.log_config import segment_bytes_config
from kafkacore.broker.log.log_manager import LogManager
from kafkacore.broker.metadata.metadata_cache import MetadataCache
from kafkacore.broker.server_common.coordinator_collaborators import (
    InternalTopicCreator,
    Replicas,
)
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_batches
from kafkacore.errors import Errors

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"

#: Record key versions (Kafka's ``OffsetCommitKey`` is 0 and 1, ``GroupMetadataKey`` 2).
OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3

#: How Kafka's ``storeOffsets`` callback turns an append error into an OffsetCommit error.
APPEND_ERROR_TO_COMMIT_ERROR = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.MESSAGE_TOO_LARGE: Errors.INVALID_COMMIT_OFFSET_SIZE,
    Errors.RECORD_LIST_TOO_LARGE: Errors.INVALID_COMMIT_OFFSET_SIZE,
}


@dataclass(frozen=True)
class OffsetAndMetadata:
    """One committed position (Kafka's ``OffsetAndMetadata``)."""

    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_timestamp_ms: int = -1


# -- the partition of a group ---------------------------------------------------------------------


def java_string_hashcode(s: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units,
    in 32-bit two's complement."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``partitionFor``: ``Utils.abs(groupId.hashCode) % groupMetadataTopicPartitionCount``
    (``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0)."""
    h = java_string_hashcode(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


# -- the record format ----------------------------------------------------------------------------


def _string(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return (struct.pack(">h", OFFSET_COMMIT_KEY_VERSION) + _string(group) + _string(topic)
            + struct.pack(">i", partition))


def offset_commit_value(value: OffsetAndMetadata) -> bytes:
    return (struct.pack(">hqi", OFFSET_COMMIT_VALUE_VERSION, value.offset, value.leader_epoch)
            + _string(value.metadata or "") + struct.pack(">q", value.commit_timestamp_ms))


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError("record shorter than its fields")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values[0] if len(values) == 1 else values

    def string(self) -> str:
        n = self.take(">h")
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("bad string length")
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def nullable_string(self) -> str | None:
        if self.pos + 2 <= len(self.data) and struct.unpack_from(">h", self.data,
                                                                 self.pos)[0] == -1:
            self.pos += 2
            return None
        return self.string()

    def bytes(self) -> bytes:
        n = self.take(">i")
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("bad bytes length")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b


def read_offset_commit_key(key: bytes) -> tuple[str, str, int] | None:
    """(group, topic, partition) of an offset commit key; None for another kind of key."""
    r = _Reader(key)
    version = r.take(">h")
    if version not in (0, 1):
        return None
    return r.string(), r.string(), r.take(">i")


def read_offset_commit_value(value: bytes) -> OffsetAndMetadata:
    """Value versions 0 to 3 (Kafka's ``OffsetCommitValue``)."""
    r = _Reader(value)
    version = r.take(">h")
    if not 0 <= version <= 3:
        raise ValueError(f"unknown offset commit value version {version}")
    offset = r.take(">q")
    leader_epoch = r.take(">i") if version >= 3 else -1
    metadata = r.string()
    timestamp = r.take(">q")
    return OffsetAndMetadata(offset, leader_epoch, metadata, timestamp)


# Group metadata records (Kafka's ``GroupMetadataKey`` version 2, ``GroupMetadataValue``
# versions 0 to 3; we write version 3, the last before the flexible versions).

GROUP_METADATA_VALUE_VERSION = 3


@dataclass(frozen=True)
class MemberRecord:
    """One member as the group metadata record keeps it (Kafka's ``MemberMetadataValue``)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupRecord:
    """A group's generation as the coordinator last stored it (Kafka's ``GroupMetadataValue``).
    No members: the group is Empty (its generation is kept)."""

    protocol_type: str
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberRecord, ...]


def _nullable_string(s: str | None) -> bytes:
    return struct.pack(">h", -1) if s is None else _string(s)


def _bytes(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def group_metadata_key(group: str) -> bytes:
    return struct.pack(">h", GROUP_METADATA_KEY_VERSION) + _string(group)


def read_group_metadata_key(key: bytes) -> str | None:
    """The group of a group metadata key; None for another kind of key."""
    r = _Reader(key)
    if r.take(">h") != GROUP_METADATA_KEY_VERSION:
        return None
    return r.string()


def group_metadata_value(group: GroupRecord) -> bytes:
    out = [struct.pack(">h", GROUP_METADATA_VALUE_VERSION), _string(group.protocol_type),
           struct.pack(">i", group.generation_id), _nullable_string(group.protocol_name),
           _nullable_string(group.leader_id), struct.pack(">q", group.current_state_timestamp_ms),
           struct.pack(">i", len(group.members))]
    for m in group.members:
        out += [_string(m.member_id), _nullable_string(m.group_instance_id),
                _string(m.client_id), _string(m.client_host),
                struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms),
                _bytes(m.subscription), _bytes(m.assignment)]
    return b"".join(out)


def read_group_metadata_value(value: bytes) -> GroupRecord:
    """Value versions 0 to 3: the rebalance timeout since 1 (before, the session timeout stood
    in), the state timestamp since 2, the group instance id since 3."""
    r = _Reader(value)
    version = r.take(">h")
    if not 0 <= version <= 3:
        raise ValueError(f"unknown group metadata value version {version}")
    protocol_type = r.string()
    generation = r.take(">i")
    protocol = r.nullable_string()
    leader = r.nullable_string()
    timestamp = r.take(">q") if version >= 2 else -1
    count = r.take(">i")
    if count < 0:
        raise ValueError("bad member count")
    members = []
    for _ in range(count):
        member_id = r.string()
        instance_id = r.nullable_string() if version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        rebalance_timeout = r.take(">i") if version >= 1 else None
        session_timeout = r.take(">i")
        members.append(MemberRecord(
            member_id, instance_id, client_id, client_host,
            session_timeout if rebalance_timeout is None else rebalance_timeout,
            session_timeout, r.bytes(), r.bytes()))
    return GroupRecord(protocol_type, generation, protocol, leader, timestamp, tuple(members))


#: How Kafka's ``storeGroup`` callback turns an append error into a SyncGroup error.
APPEND_ERROR_TO_SYNC_ERROR = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.REQUEST_TIMED_OUT: Errors.REBALANCE_IN_PROGRESS,
}


# -- the manager ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cached:
    value: OffsetAndMetadata
    log_offset: int  #: where the commit is in the offsets log: a later record wins


CommitCallback = Callable[[dict[tuple[str, int], int]], None]
StoreGroupCallback = Callable[[int], None]


class GroupMetadataManager:
    """The offsets cache of the ``__consumer_offsets`` partitions this broker leads."""

    def __init__(self, config: Mapping[str, Any], broker_id: int, *,
                 metadata_cache: MetadataCache, log_manager: LogManager, replicas: Replicas,
                 topic_creator: InternalTopicCreator) -> None:
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self.log_manager = log_manager
        #: the replica manager: the offsets partitions' replicas, and their appends
        self.replicas = replicas
        self.topic_creator = topic_creator
        #: A broker alone leads every offsets partition (no controller elects it).
        self.standalone: bool = config["process.roles"] == ""
        self.segment_bytes: int = config["offsets.topic.segment.bytes"]
        self.num_partitions: int = config["offsets.topic.num.partitions"]
        self.replication_factor: int = config["offsets.topic.replication.factor"]
        self.commit_timeout_ms: int = config["offsets.commit.timeout.ms"]
        # Lock order: leaf (taken under order 4 and 5). Guards the offsets cache.
        self._lock = threading.Lock()
        #: group -> (topic, partition) -> the latest commit
        self._offsets: dict[str, dict[tuple[str, int], _Cached]] = {}
        #: producer id -> group -> (topic, partition) -> a transactional commit (TxnOffsetCommit)
        #: waiting for its transaction's marker: invisible until COMMIT, dropped on ABORT
        self._pending_txn_offsets: dict[int, dict[str, dict[tuple[str, int], _Cached]]] = {}
        #: offsets partitions this broker leads and has loaded, and those being loaded, each
        #: with the count of its election (a load finished after a newer election is dropped)
        self._owned: set[int] = set()
        self._loading: dict[int, int] = {}
        self._elections = 0
        self._load_queue: queue.Queue[tuple[int, int] | None] = queue.Queue()
        self._loader: ShutdownableThread | None = None
        self._resign_listeners: list[Callable[[int], None]] = []
        self._load_listeners: list[Callable[[int, dict[str, GroupRecord]], None]] = []
        #: group records wait here for the writer thread (see ``store_group``)
        #: (group, its records as (key, value or None for a tombstone), callback)
        self._group_writes: queue.Queue[tuple[str, list[tuple[bytes, bytes | None]],
                                              StoreGroupCallback] | None] = queue.Queue()
        self._consumer_group_load_listeners: list[
            Callable[[int, list[tuple[bytes, bytes | None]]], None]] = []
        self._writer: ShutdownableThread | None = None

    # -- life cycle --------------------------------------------------------------------------

    def startup(self) -> None:
        self._writer = ShutdownableThread(f"group-metadata-writer-{self.broker_id}",
                                          work=self._run_writer)
        self._writer.start()
        if self.standalone:
            # A cluster of one leads every offsets partition: load what the logs hold now,
            # before the first request.
            for p in range(self.partition_count()):
                self._owned.add(p)
                lg = self.log_manager.get_log(OFFSETS_TOPIC, p)
                if lg is not None:
                    offsets, groups, consumer_records = self._read_partition(lg)
                    self._install(p, offsets)
                    self._notify_loaded(p, groups, consumer_records)
            return
        self._loader = ShutdownableThread(f"group-metadata-manager-{self.broker_id}",
                                          work=self._run_loader)
        self._loader.start()

    def shutdown(self) -> None:
        if self._loader is not None:
            self._load_queue.put(None)
            self._loader.join(5.0)
        if self._writer is not None:
            self._group_writes.put(None)
            self._writer.join(5.0)

    def add_resign_listener(self, listener: Callable[[int], None]) -> None:
        """``listener(partition)`` runs when this broker stops leading an offsets partition
        (the coordinator drops that partition's groups)."""
        self._resign_listeners.append(listener)

    def add_load_listener(self, listener: Callable[[int, dict[str, GroupRecord]], None]) -> None:
        """``listener(partition, groups)`` runs when an offsets partition has been loaded, before
        it is served: the coordinator restores the groups whose last record it is (Kafka's
        ``onGroupLoaded``)."""
        self._load_listeners.append(listener)

    def add_consumer_group_load_listener(
            self, listener: Callable[[int, list[tuple[bytes, bytes | None]]], None]) -> None:
        """``listener(partition, records)``: the consumer group records (KIP-848) of a loaded
        offsets partition, in log order, replayed by the coordinator before it is served."""
        self._consumer_group_load_listeners.append(listener)

    def _notify_loaded(self, partition: int, groups: dict[str, GroupRecord],
                       consumer_records: list[tuple[bytes, bytes | None]] | None = None
                       ) -> None:
        for listener in self._load_listeners:
            listener(partition, {g: r for g, r in groups.items()
                                 if self.partition_for(g) == partition})
        for consumer_listener in self._consumer_group_load_listeners:
            consumer_listener(partition, list(consumer_records or ()))

    # -- who coordinates what ------------------------------------------------------------------

    def partition_count(self) -> int:
        """The partitions of ``__consumer_offsets``: the topic's own count once it exists (a
        changed ``offsets.topic.num.partitions`` must not move groups away from their commits),
        the setting before."""
        meta = self.metadata_cache.get(OFFSETS_TOPIC)
        return self.num_partitions if meta is None else int(meta.partitions)

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.partition_count())

    def group_status(self, group_id: str) -> int:
        """NONE if this broker coordinates ``group_id`` now; COORDINATOR_LOAD_IN_PROGRESS while
        it loads the group's partition; NOT_COORDINATOR if another broker does (Kafka's
        ``validateGroupStatus``)."""
        p = self.partition_for(group_id)
        with self._lock:
            if p in self._owned:
                return Errors.NONE
            if p in self._loading:
                return Errors.COORDINATOR_LOAD_IN_PROGRESS
            return Errors.NOT_COORDINATOR

    def ensure_offsets_topic(self) -> bool:
        """Create ``__consumer_offsets`` if it does not exist (Kafka creates it on the first
        FindCoordinator): ``offsets.topic.num.partitions`` partitions, replication factor
        ``offsets.topic.replication.factor`` but no more than the live brokers.  True if it
        exists now."""
        if self.metadata_cache.get(OFFSETS_TOPIC) is not None:
            return True
        # Retention by time would delete commits: the topic is compacted instead, the log
        # cleaner keeping each key's latest record (docs/broker/log_cleaner.rst).
        configs = {"cleanup.policy": "compact", "retention.ms": "-1",
                   **segment_bytes_config(self.segment_bytes)}
        rf = min(self.replication_factor, self.topic_creator.live_brokers())
        return self.topic_creator.create_internal_topic(OFFSETS_TOPIC, self.num_partitions, rf,
                                                        configs)

    # -- leadership changes (from ReplicaManager.apply_delta) -----------------------------------

    def on_leadership(self, leading: set[int]) -> None:
        """The offsets partitions this broker leads after the controller's latest decision:
        load those it did not lead, unload those it no longer leads."""
        if self.standalone:
            return
        with self._lock:
            known = self._owned | set(self._loading)
            elected = sorted(leading - known)
            resigned = sorted(known - leading)
        for p in resigned:
            self.on_resigned(p)
        for p in elected:
            self.on_elected(p)

    def on_elected(self, partition: int) -> None:
        """Kafka's ``onElection``: load the partition in the background."""
        with self._lock:
            self._elections += 1
            self._loading[partition] = self._elections
            self._owned.discard(partition)
            election = self._elections
        log.info("broker %d: loading offsets partition %d", self.broker_id, partition)
        self._load_queue.put((partition, election))

    def on_resigned(self, partition: int) -> None:
        """Kafka's ``onResignation``: forget the partition's offsets and groups."""
        with self._lock:
            self._owned.discard(partition)
            self._loading.pop(partition, None)
            for group in [g for g in self._offsets if self.partition_for(g) == partition]:
                del self._offsets[group]
            for by_group in self._pending_txn_offsets.values():
                for group in [g for g in by_group if self.partition_for(g) == partition]:
                    del by_group[group]
        log.info("broker %d: unloaded offsets partition %d", self.broker_id, partition)
        for listener in self._resign_listeners:
            listener(partition)

    def _run_loader(self) -> bool:
        """One turn of the loader thread: one offsets partition loaded (supervised: see
        :class:`~kafkacore.broker.server_common.shutdownable_thread.ShutdownableThread`)."""
        task = self._load_queue.get()
        if task is None:
            return False
        partition, election = task
        try:
            self._load_and_install(partition, election)
        except Exception:
            # e.g. the log is being truncated, or a bug: try again while it is still ours to
            # load, rather than leave the partition "loading" for ever.
            log.exception("loading offsets partition %d failed; retrying", partition)
            time.sleep(0.5)
            with self._lock:
                if self._loading.get(partition) == election:
                    self._load_queue.put(task)
        return True

    def _load_and_install(self, partition: int, election: int) -> None:
        offsets, groups, consumer_records = self._load(partition)
        # The groups first, while requests still get COORDINATOR_LOAD_IN_PROGRESS: a member
        # heartbeating once the partition is served must find its group.
        self._notify_loaded(partition, groups, consumer_records)
        with self._lock:
            current = self._loading.get(partition) == election
            if current:
                del self._loading[partition]
                self._owned.add(partition)
                self._install_locked(partition, offsets)
        if not current:  # resigned or elected again meanwhile: drop the groups restored
            for listener in self._resign_listeners:
                listener(partition)
            return
        log.info("broker %d: loaded offsets partition %d (offsets of %d groups, %d groups)",
                 self.broker_id, partition, len(offsets), len(groups))

    def _load(self, partition: int) -> tuple[dict[str, dict[tuple[str, int], _Cached]],
                                             dict[str, GroupRecord],
                                             list[tuple[bytes, bytes | None]]]:
        rm = self.replicas
        p = rm.partitions.get((OFFSETS_TOPIC, partition))
        if p is None:
            return {}, {}, []
        return self._read_partition(p.log)

    def _read_partition(self, lg: Any) -> tuple[dict[str, dict[tuple[str, int], _Cached]],
                                                dict[str, GroupRecord],
                                                list[tuple[bytes, bytes | None]]]:
        """Every commit in the log, the latest per (group, topic, partition), and the latest
        group metadata record of each group (Kafka's ``doLoadGroupsAndOffsets``: up to the log
        end; this broker is the leader).  A tombstone removes the offset or the group."""
        out: dict[str, dict[tuple[str, int], _Cached]] = {}
        groups: dict[str, GroupRecord] = {}
        pending: dict[int, dict[str, dict[tuple[str, int], _Cached]]] = {}
        consumer_records: list[tuple[bytes, bytes | None]] = []
        for offset, key, value, producer_id, marker in _txn_records(lg):
            if marker is not None:  # a transaction's end: its commits count, or not
                for group, by_tp in pending.pop(producer_id, {}).items():
                    if marker:
                        out.setdefault(group, {}).update(by_tp)
                continue
            if consumer_group_records.record_type(key) in consumer_group_records.RECORD_TYPES:
                consumer_records.append((key, value))  # KIP-848: the coordinator replays them
                continue
            try:
                parsed = read_offset_commit_key(key)
                if parsed is None:
                    group_id = read_group_metadata_key(key)
                    if group_id is None:
                        continue
                    if value is None:
                        groups.pop(group_id, None)
                    else:
                        groups[group_id] = read_group_metadata_value(value)
                    continue
                group, topic, index = parsed
                if value is None:  # a tombstone
                    out.get(group, {}).pop((topic, index), None)
                    continue
                target = out if producer_id is None else pending.setdefault(producer_id, {})
                target.setdefault(group, {})[(topic, index)] = _Cached(
                    read_offset_commit_value(value), offset)
            except (ValueError, UnicodeDecodeError, struct.error) as exc:
                log.warning("offsets log %s: record at %d unreadable (%s); skipped", lg.name,
                            offset, exc)
        if pending:  # transactions still open: their commits wait for the markers
            with self._lock:
                for producer_id, by_group in pending.items():
                    self._pending_txn_offsets.setdefault(producer_id, {}).update(by_group)
        return out, groups, consumer_records

    def _install(self, partition: int, offsets: dict[str, dict[tuple[str, int], _Cached]]) -> None:
        with self._lock:
            self._install_locked(partition, offsets)

    def _install_locked(self, partition: int,
                        offsets: dict[str, dict[tuple[str, int], _Cached]]) -> None:
        for group, by_tp in offsets.items():
            if self.partition_for(group) == partition:
                self._offsets.setdefault(group, {}).update(by_tp)

    # -- OffsetCommit ------------------------------------------------------------------------

    def store_offsets(self, group_id: str, offsets: dict[tuple[str, int], OffsetAndMetadata],
                      callback: CommitCallback, producer: tuple[int, int] | None = None) -> None:
        """Append the commits to the group's partition with acks=all; ``callback(errors)`` once
        the ISR has them (or the append failed), from whichever thread completes it.

        ``producer`` (id, epoch): a transaction's commit (TxnOffsetCommit), written as a
        transactional batch of that producer and held pending until its marker (Kafka's
        ``prepareTxnOffsetCommit``)."""
        if not offsets:
            callback({})
            return
        if not self.ensure_offsets_topic():
            callback(dict.fromkeys(offsets, Errors.COORDINATOR_NOT_AVAILABLE))
            return
        partition = self.partition_for(group_id)
        key = (OFFSETS_TOPIC, partition)
        now = int(time.time() * 1000)
        if producer is None:
            builder = MemoryRecordsBuilder(1024)
        else:
            builder = MemoryRecordsBuilder(1024, producer_id=producer[0],
                                           producer_epoch=producer[1], base_sequence=0,
                                           is_transactional=True)
        order = list(offsets.items())
        for (topic, index), value in order:
            builder.append(now, offset_commit_key(group_id, topic, index),
                           offset_commit_value(value))
        records = bytes(builder.build())
        response: dict[str, Any] = {"error_code": Errors.NONE, "base_offset": -1,
                                    "error_message": None}

        def on_append(results: dict[tuple[str, int], dict[str, Any]]) -> None:
            result = results.get(key, response)
            error = result["error_code"]
            if error != Errors.NONE:
                error = APPEND_ERROR_TO_COMMIT_ERROR.get(error, error)
                log.info("group %s: commit to %s-%d failed with %d", group_id, OFFSETS_TOPIC,
                         partition, result["error_code"])
                callback(dict.fromkeys(offsets, error))
                return
            if self.standalone:
                self._flush(partition)
            base = result["base_offset"]
            with self._lock:
                if partition in self._owned and producer is not None:
                    pending = self._pending_txn_offsets.setdefault(producer[0], {}).setdefault(
                        group_id, {})
                    for i, (tp, value) in enumerate(order):
                        pending[tp] = _Cached(value, base + i)
                elif partition in self._owned:
                    cached = self._offsets.setdefault(group_id, {})
                    for i, (tp, value) in enumerate(order):
                        old = cached.get(tp)
                        if old is None or old.log_offset < base + i:
                            cached[tp] = _Cached(value, base + i)
            callback(dict.fromkeys(offsets, Errors.NONE))

        try:
            # A transactional commit is the coordinator's write (Kafka's COORDINATOR origin):
            # no sequence checks, the producer's transactions tracked.
            self.replicas.append_records(
                self.commit_timeout_ms, -1, {key: (response, records)}, on_append,
                from_coordinator=producer is not None)
        except Exception:
            log.exception("group %s: appending a commit failed", group_id)
            callback(dict.fromkeys(offsets, Errors.UNKNOWN_SERVER_ERROR))

    def handle_txn_completion(self, producer_id: int, partitions: set[int],
                              commit: bool) -> None:
        """A COMMIT or ABORT marker of ``producer_id`` is in these offsets partitions: its
        pending commits of their groups become committed, or are dropped (Kafka's
        ``handleTxnCompletion``)."""
        with self._lock:
            by_group = self._pending_txn_offsets.get(producer_id, {})
            for group_id in [g for g in by_group if self.partition_for(g) in partitions]:
                pending = by_group.pop(group_id)
                if not commit:
                    continue
                cached = self._offsets.setdefault(group_id, {})
                for tp, value in pending.items():
                    old = cached.get(tp)
                    if old is None or old.log_offset < value.log_offset:
                        cached[tp] = value
            if not by_group:
                self._pending_txn_offsets.pop(producer_id, None)

    def pending_offset_partitions(self, group_id: str) -> set[tuple[str, int]]:
        """The partitions whose commit an open transaction holds (KIP-447's unstable offsets:
        OffsetFetch with ``require_stable`` answers UNSTABLE_OFFSET_COMMIT for them)."""
        with self._lock:
            return {tp for by_group in self._pending_txn_offsets.values()
                    for tp in by_group.get(group_id, {})}

    # -- group metadata --------------------------------------------------------------------

    def store_group(self, group_id: str, record: GroupRecord | None,
                    callback: StoreGroupCallback) -> None:
        """Append the group's record (None: a tombstone) to its partition with acks=all;
        ``callback(error)`` once the ISR has it (NONE) or the append failed (the error mapped as
        Kafka's ``storeGroup`` does), from whichever thread completes it.

        The append is made by a writer thread, in the order of the calls: the coordinator calls
        this under the group's lock, and the append's answer (which takes that lock) may come
        from a thread that holds the produce purgatory's."""
        value = None if record is None else group_metadata_value(record)
        self._group_writes.put((group_id, [(group_metadata_key(group_id), value)], callback))

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None,
                       delete_group: bool, callback: StoreGroupCallback) -> int:
        """Forget the group's commits of ``partitions`` (None: every one) and, with
        ``delete_group``, the group itself: the cache at once, the log by tombstones appended
        in order with the group's other records (Kafka's ``cleanupGroupMetadata``); the log
        cleaner drops what they cover.  ``callback(error)`` once the ISR has them.  Returns how
        many offsets were removed."""
        with self._lock:
            cached = self._offsets.get(group_id, {})
            # (a partition named twice is deleted, and tombstoned, once)
            gone = list(cached) if partitions is None else [tp for tp in dict.fromkeys(partitions)
                                                            if tp in cached]
            for tp in gone:
                del cached[tp]
            if not cached:
                self._offsets.pop(group_id, None)
        records: list[tuple[bytes, bytes | None]] = [
            (offset_commit_key(group_id, topic, index), None) for topic, index in gone]
        if delete_group:
            records.append((group_metadata_key(group_id), None))
        if records:
            self._group_writes.put((group_id, records, callback))
        else:
            callback(Errors.NONE)
        return len(gone)

    def store_records(self, group_id: str, records: list[tuple[bytes, bytes | None]],
                      callback: StoreGroupCallback) -> None:
        """Append a consumer group's records (KIP-848; (key, value), None a tombstone) in one
        batch, like :meth:`store_group`: ``callback(error)`` once the ISR has them (at once
        when there are none: an empty batch is not a valid write)."""
        if not records:
            callback(Errors.NONE)
            return
        self._group_writes.put((group_id, records, callback))

    def _run_writer(self) -> bool:
        """One turn of the writer thread: one group record appended."""
        task = self._group_writes.get()
        if task is None:
            return False
        group_id, records, callback = task
        answered = []

        def once(error: int) -> None:
            if not answered:
                answered.append(error)
                callback(error)

        try:
            self._append_group(group_id, records, once)
        except Exception:
            log.exception("group %s: appending its metadata failed", group_id)
            once(Errors.UNKNOWN_SERVER_ERROR)
        return True

    def _append_group(self, group_id: str, records: list[tuple[bytes, bytes | None]],
                      callback: StoreGroupCallback) -> None:
        if not self.ensure_offsets_topic():
            callback(Errors.COORDINATOR_NOT_AVAILABLE)
            return
        partition = self.partition_for(group_id)
        key = (OFFSETS_TOPIC, partition)
        builder = MemoryRecordsBuilder(1024)
        now = int(time.time() * 1000)
        for record_key, value in records:
            builder.append(now, record_key, value)
        response: dict[str, Any] = {"error_code": Errors.NONE, "base_offset": -1,
                                    "error_message": None}

        def on_append(results: dict[tuple[str, int], dict[str, Any]]) -> None:
            error = results.get(key, response)["error_code"]
            if error != Errors.NONE:
                log.info("group %s: storing its metadata in %s-%d failed with %d", group_id,
                         OFFSETS_TOPIC, partition, error)
                callback(APPEND_ERROR_TO_SYNC_ERROR.get(error, Errors.UNKNOWN_SERVER_ERROR))
                return
            if self.standalone:
                self._flush(partition)
            callback(Errors.NONE)

        self.replicas.append_records(
            self.commit_timeout_ms, -1, {key: (response, bytes(builder.build()))}, on_append)

    def _flush(self, partition: int) -> None:
        """Alone, a broker's disk is the only copy: a commit is fsync'd before it is answered
        (in a cluster the replicas are the durability, as in Kafka)."""
        lg = self.log_manager.get_log(OFFSETS_TOPIC, partition)
        if lg is not None:
            lg.flush()

    # -- OffsetFetch -------------------------------------------------------------------------

    def get_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None
                    ) -> dict[tuple[str, int], OffsetAndMetadata | None]:
        with self._lock:
            stored = {tp: c.value for tp, c in self._offsets.get(group_id, {}).items()}
        if partitions is None:
            return stored
        return {tp: stored.get(tp) for tp in partitions}

    def has_offsets(self, group_id: str) -> bool:
        with self._lock:
            return bool(self._offsets.get(group_id))

    def groups_with_offsets(self) -> list[str]:
        with self._lock:
            return [g for g, by_tp in self._offsets.items() if by_tp]


def _txn_records(lg: Any) -> Iterator[tuple[int, bytes, bytes | None, int | None,
                                             bool | None]]:
    """(offset, key, value, producer id of a transactional record or None, None) for every
    keyed data record, and (offset, b"", None, producer id, True for COMMIT / False for ABORT)
    for every transaction marker, in log order."""
    offset = lg.log_start_offset
    end = lg.log_end_offset
    while offset < end:
        data = lg.read(offset, 1 << 20, max_offset=None, min_one_batch=True).records
        if not data:
            break
        for batch in iter_batches(data):
            if batch.last_offset < offset:
                continue
            if batch.is_control:
                for record in batch.records:
                    key = record.key or b""
                    if len(key) >= 4 and key[2:4] in (b"\x00\x00", b"\x00\x01"):
                        yield record.offset, b"", None, batch.producer_id, key[3] == 1
            else:
                producer_id = batch.producer_id if batch.is_transactional else None
                for record in batch.records:
                    if record.offset >= offset and record.key is not None:
                        yield record.offset, record.key, record.value, producer_id, None
            offset = batch.last_offset + 1


def _records(lg: Any) -> Iterator[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of every keyed data record in the log, in order."""
    offset = lg.log_start_offset
    end = lg.log_end_offset
    while offset < end:
        data = lg.read(offset, 1 << 20, max_offset=None, min_one_batch=True).records
        if not data:
            break
        for batch in iter_batches(data):
            if batch.last_offset < offset:
                continue
            if not batch.is_control:
                for record in batch.records:
                    if record.offset >= offset and record.key is not None:
                        yield record.offset, record.key, record.value
            offset = batch.last_offset + 1
