"""``QuorumController``: the controller's state and every change to it."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from kafkacore.broker.config.config_admin_manager import alter_resources
from kafkacore.broker.config.config_resource import RESOURCE_TYPE_BROKER
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.controller.acl_control_manager import AclControlManager
from kafkacore.broker.controller.broker_heartbeat_manager import BrokerHeartbeatManager
from kafkacore.broker.controller.configuration_control_manager import (
    ConfigurationControlManager,
    config_record,
)
from kafkacore.broker.controller.kafka_raft_manager import KafkaRaftManager
from kafkacore.broker.controller.producer_id_control_manager import ProducerIdControlManager
from kafkacore.broker.controller.replication_control_manager import (
    PartitionRegistration,
    ReplicationControlManager,
    TopicControlInfo,
    create_partitions_error,
    manual_assignment_error,
    placed_partition,
)
from kafkacore.broker.log import LogConfig
from kafkacore.broker.metadata.client_quota_control_manager import ClientQuotaControlManager
from kafkacore.broker.metadata.metadata_cache import validate_topic_name
from kafkacore.broker.metadata.metadata_log import MetadataLog, Record
from kafkacore.broker.metadata.quorum_description import (
    UNKNOWN,
    elect_self,
    now_ms,
    replica_state,
)
from kafkacore.broker.security.authorizer.acl import (
    ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    AclBinding,
    AclBindingFilter,
)
from kafkacore.broker.security.authorizer.standard_authorizer import StandardAuthorizer
from kafkacore.broker.server_common.producer_ids_block import ProducerIdsBlock
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.errors import (
    DuplicateBrokerRegistrationError,
    Errors,
    IllegalStateError,
    InvalidConfigError,
    InvalidTopicError,
    InvalidUpdateVersionError,
    NotControllerError,
)
from kafkacore.raft import OffsetAndEpoch

log = logging.getLogger(__name__)

#: the controller's metadata log in its first log dir: ``controller-state.log`` and the snapshot
#: ``controller-state.json``
STATE_LOG_NAME = "controller-state"
#: the longest a change waits for the quorum to commit it (the leader resigns sooner if a
#: majority is gone: 1.5 fetch timeouts)
COMMIT_TIMEOUT_S = 10.0
#: committed entries replayed per pass of the replayer, between two takes of the lock
REPLAY_BATCH = 1000


@dataclass
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    epoch: int
    incarnation_id: str


def partition_record(kind: str, info: TopicControlInfo, index: int) -> Record:
    """A ``PartitionRecord`` (a new partition) or ``PartitionChangeRecord`` (its leader, ISR or
    epochs changed), with the partition's whole registration."""
    p = info.partitions[index]
    return {"type": kind, "topic_id": info.topic_id, "partition_id": index,
            "replicas": list(p.replicas), "isr": list(p.isr), "leader": p.leader,
            "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch,
            "adding_replicas": list(p.adding_replicas),
            "removing_replicas": list(p.removing_replicas)}


class QuorumController:
    """Brokers, topics and partitions under one lock; each change appended to the controller's
    metadata log as records before it is answered (Kafka's ``QuorumController``, with a quorum
    of one)."""

    def __init__(self, config: BrokerConfig, raft: KafkaRaftManager | None = None,
                 authorizer: StandardAuthorizer | None = None) -> None:
        """``raft``: this controller's voter of a quorum of controllers; None for a lone
        controller (a quorum of one, with its own ``MetadataLog``).  ``authorizer``: the
        controller's own, which the ACL records replayed here keep up to date."""
        self.config = config
        self.authorizer = authorizer
        self.node_id = config["node.id"]
        # Lock order 2: the controller's state; takes no broker lock.
        self.lock = threading.RLock()
        self.raft = raft
        self._reset_state()
        #: the quorum's epoch in which this controller is the active one; -1 while it is not
        #: (always -1 without a quorum)
        self.active_epoch = -1
        #: the next quorum offset to replay (everything before it is in the state)
        self._applied = 0
        #: bytes of records applied since the last snapshot of the quorum's log (Kafka's
        #: ``metadata.log.max.record.bytes.between.snapshots`` counts these)
        self._bytes_since_snapshot = 0
        #: snapshots of the quorum's log this controller loaded (at a start, after losing the
        #: leadership, or one installed from the leader) and wrote, since its start
        self.snapshots_loaded = 0
        self.snapshots_written = 0
        #: quorum entries replayed since the start (those after the snapshot loaded)
        self.entries_replayed = 0
        #: records of the open batch (see :meth:`batch`), appended when it ends
        self._pending: list[Record] = []
        self._batch_depth = 0
        #: the records since the last snapshot, from offset ``records_start``: what brokers
        #: fetch (:meth:`fetch_records`), as KRaft brokers fetch the metadata log (a lone
        #: controller's; a quorum's brokers fetch the quorum's committed log)
        self.records: list[Record] = []
        self.records_start = 0
        #: broker id -> partition replicas placed on it, kept between two creations (None:
        #: count again; any other change may have moved replicas)
        self._replica_counts: dict[int, int] | None = None
        #: replica id -> how it fetches the records (Kafka's ``LeaderState.ReplicaState``): its
        #: last fetch offset, when it fetched, our end offset then, when it was last caught up
        self._fetches: dict[int, tuple[int, int, int, int]] = {}
        # Guards _fetches in a quorum, where a broker's Fetch must never wait for the
        # controller's lock: a change holds it until the quorum commits, and the commit needs
        # the Fetch handler threads free (lock order: a leaf).
        self._fetches_lock = threading.Lock()
        self._stop = threading.Event()
        self._fencer = ShutdownableThread(f"controller-{self.node_id}-fencer",
                                           work=self._fence_lapsed)
        #: the thread that follows the quorum (:meth:`_catch_up`); None without a quorum
        self._replayer: ShutdownableThread | None = None
        self._seen_version = -1
        if raft is not None:
            #: a quorum's epoch is its Raft epoch (``active_epoch`` while active)
            self.leader_epoch = -1
            self._replayer = ShutdownableThread(f"controller-{self.node_id}-replayer",
                                                work=self._replay_turn)
            return
        self.metadata_log = MetadataLog(config.log_dirs[0], STATE_LOG_NAME)
        self._load()
        #: the leader epoch of ``__cluster_metadata``: each start is an election this lone
        #: voter wins, persisted in the ``quorum-state`` file before it leads
        self.leader_epoch = elect_self(config.log_dirs[0], self.node_id)

    def _reset_state(self) -> None:
        """The empty state, before any record is replayed."""
        self.brokers: dict[int, BrokerRegistration] = {}
        self.heartbeats = BrokerHeartbeatManager(self.config["broker.session.timeout.ms"])
        self.replication = ReplicationControlManager()
        self.configuration = ConfigurationControlManager(self.replication)
        self.client_quotas = ClientQuotaControlManager()
        #: the producer id blocks handed to brokers (KIP-730)
        self.producer_ids = ProducerIdControlManager(self.check_broker_epoch)
        #: the cluster's ACLs (AccessControlEntryRecord, RemoveAccessControlEntryRecord)
        self.acl_control = AclControlManager(self.authorizer)
        self._next_broker_epoch = 1
        #: brokers the log says registered (fenced at a restart until they register again)
        self._registered: set[int] = set()

    # -- the quorum (docs/broker/quorum.rst) -------------------------------------------------------

    def _replay_turn(self) -> bool:
        """One turn of the replayer thread: wait (bounded) for the quorum to change, then
        catch up with it under the lock."""
        if self._stop.is_set() or self.raft is None:
            return False
        self._seen_version = self.raft.wait_for_change(self._seen_version, 0.25)
        with self.lock:
            self._catch_up()
        return True

    def _catch_up(self) -> None:
        """Follow the quorum (under the lock): replay what it committed, become the active
        controller once this voter leads and has replayed its whole log, stop being it when
        the leadership is gone (Kafka's ``QuorumController`` ``handleCommit`` and
        ``handleLeaderChange``)."""
        raft = self.raft
        if raft is None:
            raise IllegalStateError("a controller without a quorum has nothing to catch up")
        status = raft.status()
        if self.active_epoch >= 0 and (not status.is_leader or status.epoch != self.active_epoch):
            # Changes this controller made may not be committed, and the next leader may never
            # have them: forget everything and replay the committed log from its start.
            log.info("controller %d: no longer active (epoch %d, leader %d); rebuilding from "
                     "the committed log", self.node_id, status.epoch, status.leader_id)
            self.active_epoch = -1
            self._reset_state()
            self._applied = 0
        if self.active_epoch >= 0:
            return  # the active controller's state is ahead of the log already
        while True:
            # From nothing, the latest snapshot first (KIP-630); and whenever the entries to
            # replay are gone, replaced by a snapshot (one fetched from the leader).
            entries, high_watermark, snapshot = raft.read_committed(
                self._applied, REPLAY_BATCH, from_snapshot=self._applied == 0)
            if snapshot is not None:
                self._load_snapshot(*snapshot)
                continue
            for entry in entries:
                if entry.leader_change is None:
                    self._replay(json.loads(entry.value))
                    self._bytes_since_snapshot += len(entry.value)
                self._applied = entry.offset + 1
                self.entries_replayed += 1
            if not entries:
                break
        # The state is the committed log's up to _applied: a snapshot may be due.
        self._maybe_snapshot()
        if status.is_leader and self._applied == status.end_offset == status.high_watermark \
                and raft.status() == status:
            # Leading, and the log (down to this epoch's LeaderChange) is committed and
            # replayed: act.  Every registered broker gets a fresh session to heartbeat in,
            # as a new active controller knows nothing of their last heartbeats.
            self.active_epoch = status.epoch
            for broker_id in self.brokers:
                if broker_id not in self.heartbeats.fenced:
                    self.heartbeats.touch(broker_id)
            log.info("controller %d: active in epoch %d, at offset %d", self.node_id,
                     status.epoch, self._applied)

    def _append_through_raft(self, records: list[Record]) -> None:
        """Append ``records`` to the quorum's log and wait until they are committed.
        ``NotControllerError`` if this controller is not (or stops being) the active one."""
        raft = self.raft
        if raft is None:
            raise IllegalStateError("a controller without a quorum appends to its own log")
        if self.active_epoch < 0:
            raise NotControllerError(f"controller {self.node_id} is not the active controller")
        values = [json.dumps(r).encode() for r in records]
        try:
            last = raft.append(values, self.active_epoch)
            self._applied = last + 1
            self._bytes_since_snapshot += sum(len(v) for v in values)
            raft.wait_for_commit(last, self.active_epoch, COMMIT_TIMEOUT_S)
        except NotControllerError:
            # What this controller applied but the quorum did not commit must go: the
            # replayer rebuilds from the committed log, before anyone reads the state again.
            self._catch_up()
            raise
        # Committed, and no change is half made (a batch appends when it ends): the state is
        # the log's up to _applied.
        self._maybe_snapshot()

    # -- snapshots of the quorum's log (KIP-630, docs/broker/quorum.rst) ---------------------------

    def _maybe_snapshot(self) -> None:
        """Under the lock, with the state exactly the committed log's up to ``_applied``:
        write a snapshot there once ``metadata.log.max.record.bytes.between.snapshots`` of
        records were applied since the last (Kafka's ``SnapshotGenerator``).  The quorum's log
        then deletes the entries before its oldest snapshot kept."""
        raft = self.raft
        if raft is None or self._bytes_since_snapshot < \
                self.config["metadata.log.max.record.bytes.between.snapshots"]:
            return
        records = [json.dumps(r).encode() for r in self.snapshot_records()]
        try:
            snapshot_id = raft.create_snapshot(self._applied, records)
        except IllegalStateError:
            # The change that got here is committed and must be answered as such: a snapshot
            # refused is logged loudly and tried again after the next change.
            log.exception("controller %d: snapshot at offset %d refused", self.node_id,
                          self._applied)
            return
        self._bytes_since_snapshot = 0
        self.snapshots_written += 1
        log.info("controller %d: snapshot at offset %d, epoch %d (%d records)", self.node_id,
                 snapshot_id.offset, snapshot_id.epoch, len(records))

    def snapshot_records(self) -> list[Record]:
        """The image as the records that rebuild it, replayed in this order (Kafka writes its
        snapshots so: a ``RegisterBrokerRecord`` per broker, a ``TopicRecord`` and the
        ``PartitionRecord`` of each partition, the ``ConfigRecord`` of each config, ...)."""
        records: list[Record] = []
        for b in sorted(self.brokers.values(), key=lambda b: b.broker_id):
            records.append({"type": "RegisterBrokerRecord", "broker_id": b.broker_id,
                            "broker_epoch": b.epoch, "host": b.host, "port": b.port,
                            "incarnation_id": b.incarnation_id})
        records += [{"type": "FenceBrokerRecord", "broker_id": b}
                    for b in sorted(self.heartbeats.fenced)]
        for info in self.replication.topics.values():
            records.append({"type": "TopicRecord", "name": info.name, "topic_id": info.topic_id})
            records += [{"type": "ConfigRecord", "resource_name": info.name, "name": k,
                         "value": v} for k, v in sorted(info.configs.items())]
            records += [partition_record("PartitionRecord", info, i)
                        for i in range(len(info.partitions))]
        records += [config_record(RESOURCE_TYPE_BROKER, name, k, v)
                    for name, configs in sorted(self.configuration.broker_configs.items())
                    for k, v in sorted(configs.items())]
        records += self.client_quotas.records()
        records += self.acl_control.records()
        if self.producer_ids.next_producer_id > 0:
            records.append({"type": "ProducerIdsRecord", "broker_id": -1, "broker_epoch": -1,
                            "producer_ids_end": self.producer_ids.next_producer_id})
        return records

    def applied_offset(self) -> int:
        """The quorum offset the state stands at (every entry before it applied); the lone
        controller's log end."""
        return self._applied if self.raft is not None else self.metadata_log.end_offset

    def _load_snapshot(self, snapshot_id: OffsetAndEpoch, records: list[bytes]) -> None:
        """Replace the state by a snapshot's (Kafka's ``handleLoadSnapshot``)."""
        self._reset_state()
        for value in records:
            self._replay(json.loads(value))
        self._applied = snapshot_id.offset
        self._bytes_since_snapshot = 0
        self.snapshots_loaded += 1
        log.info("controller %d: loaded the snapshot at offset %d, epoch %d (%d records)",
                 self.node_id, snapshot_id.offset, snapshot_id.epoch, len(records))

    def check_active(self) -> None:
        """``NotControllerError`` unless this controller may act (always, without a quorum)."""
        if self.raft is not None and self.active_epoch < 0:
            raise NotControllerError(f"controller {self.node_id} is not the active controller")

    # -- state on disk ---------------------------------------------------------------------------

    def _load(self) -> None:
        snapshot, records = self.metadata_log.load()
        if snapshot is not None:
            self._next_broker_epoch = snapshot["next_broker_epoch"]
            self._registered.update(snapshot.get("registered_brokers", []))
            for t in snapshot["topics"]:
                self.replication.add(TopicControlInfo(
                    t["name"], t["topic_id"], t["configs"],
                    [PartitionRegistration(**p) for p in t["partitions"]]))
            self.configuration.broker_configs = snapshot.get("broker_configs", {})
            for r in snapshot.get("client_quotas", []):
                self.client_quotas.replay(r)
            self.producer_ids.load_snapshot(snapshot)
            for r in snapshot.get("acls", []):
                self.acl_control.replay(r)
        for record in records:
            self._replay(record)
        self.records_start = self.metadata_log.end_offset - len(records)
        self.records = records
        # Brokers must register again after a controller restart; until they do, they are
        # fenced, and the brokers that fetch the records learn it.
        self._commit([{"type": "FenceBrokerRecord", "broker_id": b}
                      for b in sorted(self._registered)])

    def _replay(self, r: Record) -> None:
        """Apply one record of the log to the state (at start-up)."""
        kind, rc = r["type"], self.replication
        if kind == "RegisterBrokerRecord":
            self._next_broker_epoch = max(self._next_broker_epoch, r["broker_epoch"] + 1)
            self._registered.add(r["broker_id"])
            if self.raft is not None:
                # A follower keeps the registrations, so that it can take over with them.
                self.brokers[r["broker_id"]] = BrokerRegistration(
                    r["broker_id"], r["host"], r["port"], r["broker_epoch"],
                    r.get("incarnation_id", ""))
                self.heartbeats.fenced.discard(r["broker_id"])
        elif kind in ("FenceBrokerRecord", "UnfenceBrokerRecord") and self.raft is not None:
            if kind == "FenceBrokerRecord":
                self.heartbeats.fenced.add(r["broker_id"])
            else:
                self.heartbeats.fenced.discard(r["broker_id"])
        elif kind == "TopicRecord":
            rc.add(TopicControlInfo(r["name"], r["topic_id"], {}))
        elif kind == "ConfigRecord":
            self.configuration.replay(r)
        elif kind == "ClientQuotaRecord":
            self.client_quotas.replay(r)
        elif kind in ("PartitionRecord", "PartitionChangeRecord"):
            info = rc.by_id(r["topic_id"])
            if info is None:
                raise IllegalStateError(f"{kind} for a topic id no TopicRecord made: {r}")
            reg = PartitionRegistration(r["replicas"], r["isr"], r["leader"], r["leader_epoch"],
                                        r["partition_epoch"], r.get("adding_replicas", []),
                                        r.get("removing_replicas", []))
            if r["partition_id"] == len(info.partitions):
                info.partitions.append(reg)
            else:
                info.partitions[r["partition_id"]] = reg
        elif kind == "RemoveTopicRecord":
            rc.remove(rc.names_by_id[r["topic_id"]])
        elif kind == "ProducerIdsRecord":
            self.producer_ids.replay(r)
        elif kind in (ACCESS_CONTROL_ENTRY_RECORD, REMOVE_ACCESS_CONTROL_ENTRY_RECORD):
            self.acl_control.replay(r)

    def _snapshot(self) -> dict[str, Any]:
        return {"next_broker_epoch": self._next_broker_epoch,
                "registered_brokers": sorted(self._registered),
                "topics": [asdict(t) for t in self.replication.topics.values()],
                "broker_configs": self.configuration.broker_configs,
                "client_quotas": self.client_quotas.records(),
                "acls": self.acl_control.records(),
                **self.producer_ids.snapshot()}

    def fetch_records(self, offset: int, max_records: int, replica_id: int = UNKNOWN,
                      ) -> tuple[int, list[Record], int, int]:
        """(error, up to ``max_records`` records from ``offset``, the first offset held, the end
        offset).  ``OFFSET_OUT_OF_RANGE`` when ``offset`` is before the last snapshot or past
        the end: the broker then takes the whole image (a Metadata request) instead.
        ``replica_id``: the broker fetching (DescribeQuorum shows how far each has fetched)."""
        if self.raft is not None:
            return self._fetch_committed(offset, max_records, replica_id)
        with self.lock:
            start, end = self.records_start, self.metadata_log.end_offset
            if replica_id >= 0:
                self._record_fetch(replica_id, offset, end)
            if not start <= offset <= end:
                return Errors.OFFSET_OUT_OF_RANGE, [], start, end
            first = offset - start
            return Errors.NONE, self.records[first:first + max_records], start, end

    def _fetch_committed(self, offset: int, max_records: int, replica_id: int,
                         ) -> tuple[int, list[Record], int, int]:
        """``fetch_records`` from the quorum's committed log: a broker sees a record only once
        a majority of the controllers has it.  A leader's ``LeaderChange`` entry is a record
        of its own kind, which brokers skip, so that offsets stay the log's."""
        if self.raft is None:
            raise IllegalStateError("no quorum to fetch from")
        entries, high_watermark, snapshot = self.raft.read_committed(offset, max_records)
        with self._fetches_lock:
            if replica_id >= 0:
                self._record_fetch(replica_id, offset, high_watermark)
        if snapshot is not None or not 0 <= offset <= high_watermark:
            # Before the log start: the entries are in a snapshot now, and the broker takes
            # the whole image instead (as from the lone controller's).
            return (Errors.OFFSET_OUT_OF_RANGE, [], self.raft.status().log_start_offset,
                    high_watermark)
        return Errors.NONE, [
            {"type": "LeaderChangeRecord", "leader_id": e.leader_change.leader_id}
            if e.leader_change is not None else json.loads(e.value) for e in entries
        ], 0, high_watermark

    def _record_fetch(self, replica_id: int, offset: int, end: int) -> None:
        """Kafka's ``ReplicaState.updateFollowerState``: a fetch from our end offset is caught
        up now; a fetch from at least the end offset of its previous fetch was caught up then."""
        now = now_ms()
        caught_up = UNKNOWN
        last = self._fetches.get(replica_id)
        if last is not None:
            _, last_fetch, end_then, caught_up = last
            if offset >= end_then:
                caught_up = max(caught_up, last_fetch)
        if offset >= end:
            caught_up = now
        self._fetches[replica_id] = (offset, now, end, caught_up)

    def describe_quorum(self) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
        """(high watermark, voters, observers) for DescribeQuorum: this controller is the one
        voter, and its end offset the high watermark (a quorum of one commits what it has
        fsync'd); the observers are the brokers registered or fetching, each at its last fetch
        offset (-1 for one not seen fetching since this controller started)."""
        if self.raft is not None:
            return self._describe_raft_quorum()
        with self.lock:
            now = now_ms()
            end = self.metadata_log.end_offset
            voters = [replica_state(self.node_id, end, now, now)]
            observers = []
            for broker_id in sorted((set(self.brokers) | set(self._fetches)) - {self.node_id}):
                fetch = self._fetches.get(broker_id)
                observers.append(replica_state(broker_id) if fetch is None else replica_state(
                    broker_id, fetch[0], fetch[1], fetch[3]))
            return end, voters, observers

    def _describe_raft_quorum(self) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
        """``describe_quorum`` from the Raft leader's state: each voter at the end offset of
        its last Fetch (-1 before its first), the brokers as observers."""
        if self.raft is None:
            raise IllegalStateError("no quorum to describe")
        high_watermark, ends = self.raft.replica_states()
        with self.lock:
            brokers = set(self.brokers)
        with self._fetches_lock:
            voters = [replica_state(v, ends.get(v, UNKNOWN)) for v in sorted(self.raft.voters)]
            observers = []
            for broker_id in sorted(brokers | set(self._fetches)):
                fetch = self._fetches.get(broker_id)
                observers.append(replica_state(broker_id) if fetch is None else replica_state(
                    broker_id, fetch[0], fetch[1], fetch[3]))
            return high_watermark, voters, observers

    @contextmanager
    def batch(self) -> Iterator[None]:
        """The changes made inside are appended as one batch with one fsync (one CreateTopics
        request's topics), under the lock, so no broker sees them before they are on disk."""
        with self.lock:
            self._batch_depth += 1
            try:
                yield
            finally:
                self._batch_depth -= 1
                if self._batch_depth == 0:
                    self._commit([])

    def _commit(self, records: list[Record]) -> None:
        """Append ``records`` (at the end of the open batch, if there is one); an occasional
        snapshot replaces the log (Kafka's ``metadata.log.max.record.bytes.between.snapshots``)."""
        self._pending.extend(records)
        self._replica_counts = None
        if self._batch_depth > 0 or not self._pending:
            return
        pending, self._pending = self._pending, []
        if self.raft is not None:
            self._append_through_raft(pending)
            return
        self.metadata_log.append(pending)
        self.records.extend(pending)
        if self.metadata_log.maybe_snapshot(self._snapshot):
            # Brokers behind the snapshot take the whole image: the records can go.
            self.records, self.records_start = [], self.metadata_log.end_offset

    def _commit_partition_changes(self, changes: list[tuple[TopicControlInfo, int]]) -> str:
        """Append a ``PartitionChangeRecord`` for each changed partition; what changed, for
        the log."""
        self._commit([partition_record("PartitionChangeRecord", t, i) for t, i in changes])
        return "; ".join(f"{t.name}-{i}: leader {t.partitions[i].leader} epoch "
                         f"{t.partitions[i].leader_epoch} isr {t.partitions[i].isr}"
                         for t, i in changes)

    def start(self) -> None:
        self._fencer.start()
        if self._replayer is not None:
            self._replayer.start()

    def shutdown(self) -> None:
        self._stop.set()
        self._fencer.shutdown(5.0)
        if self._replayer is not None:
            self._replayer.shutdown(5.0)

    @property
    def fencer(self) -> ShutdownableThread:
        """The thread that fences brokers whose heartbeats lapsed (Kafka's controller runs
        the same check as a periodic task): its ``failures`` count the passes that raised,
        and ``is_alive()`` says it still runs."""
        return self._fencer

    # -- brokers -----------------------------------------------------------------------------------

    def active_brokers(self) -> set[int]:
        return {b for b in self.brokers if self.heartbeats.is_active(b)}

    def register_broker(self, broker_id: int, host: str, port: int, incarnation: str) -> int:
        """The new broker epoch.  A registration of another incarnation under the id of a
        broker whose session is still valid is refused (Kafka's ``ClusterControlManager``):
        ``DuplicateBrokerRegistrationError``; a restarted broker registers once its old
        session lapsed or it shut down cleanly."""
        with self.batch():
            old = self.brokers.get(broker_id)
            if old is not None and old.incarnation_id != incarnation \
                    and self.heartbeats.has_valid_session(broker_id):
                raise DuplicateBrokerRegistrationError(
                    f"Another broker is registered with that broker id ({broker_id}).")
            if old is not None and old.incarnation_id != incarnation:
                # A new incarnation (a restart): whatever the old one led must be re-elected
                # before the new one, which starts with no role, takes part again.
                self._fence(broker_id, "re-registered with a new incarnation")
            epoch = self._next_broker_epoch
            self._next_broker_epoch += 1
            self.brokers[broker_id] = BrokerRegistration(broker_id, host, port, epoch,
                                                         incarnation)
            self.heartbeats.touch(broker_id)
            self.heartbeats.fenced.discard(broker_id)
            self._registered.add(broker_id)
            record: Record = {"type": "RegisterBrokerRecord", "broker_id": broker_id,
                              "broker_epoch": epoch, "host": host, "port": port}
            if self.raft is not None:
                record["incarnation_id"] = incarnation  # the other controllers keep it
            self._commit([record])
            changes = self._commit_partition_changes(
                self.replication.handle_broker_unfenced(broker_id, self.active_brokers()))
            log.info("controller: broker %d registered at %s:%d, epoch %d%s", broker_id, host,
                     port, epoch, "; " + changes if changes else "")
            return epoch

    def heartbeat(self, broker_id: int, broker_epoch: int,
                  want_shut_down: bool = False) -> tuple[int, bool]:
        """(error, is_fenced).  ``want_shut_down``: a controlled shutdown; the broker is fenced
        at once, so its partitions get new leaders before it goes."""
        with self.lock:
            reg = self.brokers.get(broker_id)
            if reg is None:
                return Errors.BROKER_ID_NOT_REGISTERED, True
            if reg.epoch != broker_epoch:
                return Errors.STALE_BROKER_EPOCH, True
            if want_shut_down:
                if broker_id not in self.heartbeats.fenced:
                    self._fence(broker_id, "controlled shutdown")
                return Errors.NONE, True
            self.heartbeats.touch(broker_id)
            if broker_id in self.heartbeats.fenced:
                self.heartbeats.fenced.discard(broker_id)
                self._commit([{"type": "UnfenceBrokerRecord", "broker_id": broker_id,
                               "host": reg.host, "port": reg.port}])
                changes = self._commit_partition_changes(
                    self.replication.handle_broker_unfenced(broker_id, self.active_brokers()))
                log.info("controller: broker %d unfenced%s", broker_id,
                         "; " + changes if changes else "")
            return Errors.NONE, False

    def _fence(self, broker_id: int, why: str) -> None:
        self.heartbeats.fenced.add(broker_id)
        self._commit([{"type": "FenceBrokerRecord", "broker_id": broker_id}])
        changes = self._commit_partition_changes(
            self.replication.handle_broker_fenced(broker_id, self.active_brokers()))
        log.info("controller: broker %d fenced (%s)%s", broker_id, why,
                 "; " + changes if changes else "")

    def _fence_lapsed(self) -> bool:
        """One turn of the fencer thread (supervised: an error is logged, the next turn runs)."""
        period = min(self.heartbeats.session_timeout_ms / 4000.0, 0.25)
        if self._stop.wait(period):
            return False
        with self.lock:
            if self.raft is not None and self.active_epoch < 0:
                return True  # only the active controller fences
            try:
                for broker_id in self.heartbeats.expired():
                    self._fence(broker_id, "its session expired")
            except NotControllerError as exc:
                log.info("controller %d: fencing stopped: %s", self.node_id, exc)
        return True

    # -- topics ------------------------------------------------------------------------------------

    def _placement_error(self, replica_lists: list[list[int]]) -> tuple[int, str | None]:
        """POLICY_VIOLATION if placing ``replica_lists`` takes a broker past
        ``max.partitions.per.broker`` (ours: Kafka has no such cap); the counts are kept for
        the next creation if not."""
        counts = self._replica_counts
        if counts is None:
            counts = self.replication.partition_counts()
        added: dict[int, int] = {}
        for replicas in replica_lists:
            for r in replicas:
                added[r] = added.get(r, 0) + 1
        cap = self.config["max.partitions.per.broker"]
        over = sorted(b for b, n in added.items() if counts.get(b, 0) + n > cap)
        if over:
            b = over[0]
            return (Errors.POLICY_VIOLATION, f"Broker {b} would hold "
                    f"{counts.get(b, 0) + added[b]} partitions, more than "
                    f"max.partitions.per.broker={cap}.")
        for b, n in added.items():
            counts[b] = counts.get(b, 0) + n
        self._replica_counts = counts
        return Errors.NONE, None

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str], assignments: list[list[int]] | None = None,
                     validate_only: bool = False,
                     ) -> tuple[int, str | None, TopicControlInfo | None]:
        """Every check of Kafka's ``ReplicationControlManager.createTopic``, then (unless
        ``validate_only``) the topic's records.  ``assignments``: each partition's replicas,
        given by the client (the counts are then -1).  Nothing is recorded for a topic
        refused: its configs are checked here (Kafka's ``ControllerConfigurationValidator``),
        as no broker could apply a topic whose configs it cannot parse."""
        with self.lock:
            try:
                validate_topic_name(name)
            except InvalidTopicError as exc:
                return Errors.INVALID_TOPIC_EXCEPTION, str(exc), None
            if name in self.replication.topics:
                return Errors.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists", None
            active = self.active_brokers()
            if assignments:
                error, message = manual_assignment_error(assignments, set(self.brokers), active)
                if error != Errors.NONE:
                    return error, message, None
                replica_lists = assignments
            else:
                if partitions <= 0:
                    return (Errors.INVALID_PARTITIONS, f"number of partitions must be "
                            f"positive, got {partitions}", None)
                live = sorted(active)
                if replication_factor <= 0 or replication_factor > len(live):
                    return (Errors.INVALID_REPLICATION_FACTOR,
                            f"replication factor {replication_factor} with {len(live)} live "
                            f"brokers", None)
                replica_lists = self.replication.place(0, partitions, replication_factor, live)
            try:
                LogConfig.from_properties(configs)
            except InvalidConfigError as exc:
                return Errors.INVALID_CONFIG, str(exc), None
            error, message = self._placement_error(replica_lists)
            if error != Errors.NONE or validate_only:
                if validate_only:
                    self._replica_counts = None  # counted the topic in: count again
                return error, message, None
            counts = self._replica_counts
            info = self.replication.create_placed_topic(name, configs, replica_lists, active)
            self._commit([{"type": "TopicRecord", "name": name, "topic_id": info.topic_id},
                          *({"type": "ConfigRecord", "resource_name": name, "name": k,
                             "value": v} for k, v in configs.items()),
                          *(partition_record("PartitionRecord", info, i)
                            for i in range(len(replica_lists)))])
            self._replica_counts = counts  # as _placement_error left them: still right
            log.debug("controller: created %s: %s", name,
                      [(p.leader, p.replicas) for p in info.partitions])
            return Errors.NONE, None, info

    def create_partitions(self, name: str, count: int, assignments: list[Any] | None,
                          validate_only: bool) -> tuple[int, str | None]:
        """CreatePartitions of one topic; ``assignments``: the replicas of each new partition
        (``{"broker_ids": [...]}``), or None to place them as CreateTopics does."""
        with self.lock:
            info = self.replication.topics.get(name)
            if info is None:
                return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
            error, message = create_partitions_error(len(info.partitions), count, assignments)
            if error != Errors.NONE:
                return error, message
            active = self.active_brokers()
            replication_factor = len(info.partitions[0].replicas)
            before = len(info.partitions)
            if assignments is not None:
                replica_lists = [list(a["broker_ids"]) for a in assignments]
                error, message = manual_assignment_error(replica_lists, set(self.brokers),
                                                         active, replication_factor)
            else:
                live = sorted(active)
                if replication_factor > len(live):
                    return (Errors.INVALID_REPLICATION_FACTOR, f"replication factor "
                            f"{replication_factor} with {len(live)} live brokers")
                replica_lists = self.replication.place(before, count - before,
                                                       replication_factor, live)
            if error != Errors.NONE:
                return error, message
            error, message = self._placement_error(replica_lists)
            if error != Errors.NONE or validate_only:
                if validate_only:
                    self._replica_counts = None
                return error, message
            counts = self._replica_counts
            info.partitions.extend(placed_partition(r, active) for r in replica_lists)
            self._commit([partition_record("PartitionRecord", info, i)
                          for i in range(before, count)])
            self._replica_counts = counts
            log.info("controller: %s now has %d partitions", name, count)
            return Errors.NONE, None

    def delete_topic(self, name: str) -> int:
        with self.lock:
            info = self.replication.remove(name)
            if info is None:
                return Errors.UNKNOWN_TOPIC_OR_PARTITION
            self._commit([{"type": "RemoveTopicRecord", "topic_id": info.topic_id}])
            return Errors.NONE

    def check_broker_epoch(self, broker_id: int, broker_epoch: int) -> int:
        """STALE_BROKER_EPOCH unless ``broker_id`` is registered at ``broker_epoch`` (Kafka's
        ``ClusterControlManager.checkBrokerEpoch``, which AlterPartition passes first)."""
        with self.lock:
            reg = self.brokers.get(broker_id)
            if reg is None or reg.epoch != broker_epoch:
                return Errors.STALE_BROKER_EPOCH
            return Errors.NONE

    def allocate_producer_ids(self, broker_id: int, broker_epoch: int,
                              ) -> tuple[int, ProducerIdsBlock | None]:
        """AllocateProducerIds: the next block of producer ids for a broker registered at
        ``broker_epoch`` (STALE_BROKER_EPOCH otherwise), its ``ProducerIdsRecord`` on disk
        before it is answered, so no restart hands the block out again (KIP-730)."""
        with self.lock:
            error, message, block, records = self.producer_ids.generate_next_producer_id(
                broker_id, broker_epoch)
            if error != Errors.NONE or block is None:
                log.info("controller: AllocateProducerIds of broker %d refused: %s", broker_id,
                         message)
                return error, None
            # Replayed first: a snapshot taken by the commit must hold the block too.
            for record in records:
                self.producer_ids.replay(record)
            self._commit(records)
            log.info("controller: producer ids %d-%d to broker %d", block.first_producer_id,
                     block.last_producer_id, broker_id)
            return Errors.NONE, block

    def alter_partition(self, broker_id: int, topic_id: uuid.UUID, index: int, leader_epoch: int,
                        new_isr: list[int], partition_epoch: int,
                        ) -> tuple[int, PartitionRegistration | None]:
        """Kafka's ``ReplicationControlManager.alterPartition``: a leader's ISR change, accepted
        only from the current leader at the current leader epoch, and only over the partition
        state it was decided on: a ``partition_epoch`` behind ours (the ISR or the replicas
        changed since, by an election or another AlterPartition) is refused with
        ``INVALID_UPDATE_VERSION``, and the leader waits for the new state."""
        with self.lock:
            info = self.replication.by_id(str(topic_id))
            if info is None or not 0 <= index < len(info.partitions):
                return Errors.UNKNOWN_TOPIC_OR_PARTITION, None
            part = info.partitions[index]
            if part.leader != broker_id:
                return Errors.NOT_LEADER_OR_FOLLOWER, part
            if leader_epoch != part.leader_epoch:
                return Errors.FENCED_LEADER_EPOCH, part
            if partition_epoch != part.partition_epoch:
                return InvalidUpdateVersionError.errno, part
            active = self.active_brokers()
            if any(r not in part.replicas or (r not in active and r not in part.isr)
                   for r in new_isr) or broker_id not in new_isr:
                return Errors.INELIGIBLE_REPLICA, part
            part.isr = [r for r in part.replicas if r in new_isr]
            part.partition_epoch += 1
            if self.replication.maybe_complete_reassignment(part, active):
                log.info("controller: %s-%d reassigned to %s, leader %d", info.name, index,
                         part.replicas, part.leader)
            self._commit([partition_record("PartitionChangeRecord", info, index)])
            log.info("controller: %s-%d ISR now %s (asked by leader %d)", info.name, index,
                     part.isr, broker_id)
            return Errors.NONE, part

    def alter_configs(self, resources: list[dict[str, Any]], incremental: bool,
                      validate_only: bool) -> list[dict[str, Any]]:
        """AlterConfigs and IncrementalAlterConfigs, each resource's answer; saved before."""
        records: list[Record] = []

        def alter_one(kind: int, name: str, configs: list[dict[str, Any]], incremental: bool,
                      validate_only: bool) -> None:
            records.extend(self.configuration.alter(kind, name, configs, incremental,
                                                    validate_only))

        with self.lock:
            results = alter_resources(resources, incremental, validate_only, alter_one)
            if records:
                self._commit(records)
                log.info("controller: %s", [(r["resource_name"], r["name"], r["value"])
                                            for r in records])
        return results

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """DescribeAcls: the ACLs ``acl_filter`` matches."""
        with self.lock:
            return self.acl_control.describe(acl_filter)

    def create_acls(self, bindings: list[AclBinding]) -> list[str | None]:
        """CreateAcls: per binding, None or why it is refused; the new ones'
        ``AccessControlEntryRecord`` committed before this returns."""
        with self.lock:
            results, records = self.acl_control.create_acls(bindings)
            # Replayed first: a snapshot taken by the commit must hold them too.
            for record in records:
                self.acl_control.replay(record)
            self._commit(records)
            if records:
                log.info("controller: ACLs added: %s", [r["id"] for r in records])
            return results

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """DeleteAcls: what each filter removed, its ``RemoveAccessControlEntryRecord``
        committed before this returns."""
        with self.lock:
            removed, records = self.acl_control.delete_acls(filters)
            for record in records:
                self.acl_control.replay(record)
            self._commit(records)
            if records:
                log.info("controller: ACLs removed: %s", [r["id"] for r in records])
            return removed

    def alter_client_quotas(self, entries: list[dict[str, Any]], validate_only: bool
                            ) -> list[dict[str, Any]]:
        """AlterClientQuotas: each entry's answer; the ClientQuotaRecords saved before."""
        with self.lock:
            results, records = self.client_quotas.alter(entries, validate_only)
            if records:
                self._commit(records)
                log.info("controller: client quotas: %s",
                         [(r["entity"], r["key"], r["value"]) for r in records])
        return results

    def alter_partition_reassignments(
            self, moves: list[tuple[str, int, list[int] | None]], allow_rf_change: bool,
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """AlterPartitionReassignments: each move's (error, message); saved before."""
        with self.lock:
            registered = set(self.brokers)
            active = self.active_brokers()
            results = {(name, index): self.replication.alter_partition_reassignment(
                name, index, target, registered, active, allow_rf_change)
                for name, index, target in moves}
            changed = [(self.replication.topics[name], index)
                       for (name, index), (error, _) in results.items() if error == Errors.NONE]
            if changed:
                log.info("controller: reassignments: %s",
                         self._commit_partition_changes(changed))
            return results

    def elect_leaders(self, election_type: int, wanted: list[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """ElectLeaders through the controller (see ``ReplicationControlManager``)."""
        with self.lock:
            results = self.replication.elect_leaders(election_type, wanted,
                                                     self.active_brokers())
            changed = [(self.replication.topics[name], index)
                       for (name, index), (error, _) in results.items() if error == Errors.NONE]
            if changed:
                log.info("controller: ElectLeaders: %s", self._commit_partition_changes(changed))
            return results

    def elect_leader(self, name: str, index: int, preferred: int) -> int:
        """Move leadership of a partition to ``preferred`` (an ISR member that is alive)."""
        with self.lock:
            info = self.replication.topics.get(name)
            if info is None or not 0 <= index < len(info.partitions):
                return Errors.UNKNOWN_TOPIC_OR_PARTITION
            part = info.partitions[index]
            if preferred not in part.isr or preferred not in self.active_brokers():
                return Errors.INELIGIBLE_REPLICA
            if part.leader != preferred:
                self.replication.elect(part, self.active_brokers(), preferred)
                self._commit([partition_record("PartitionChangeRecord", info, index)])
                log.info("controller: %s-%d moved to leader %d, epoch %d", name, index,
                         part.leader, part.leader_epoch)
            return Errors.NONE
