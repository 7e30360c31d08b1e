"""``QuorumController``: the controller's state and every change to it."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kafkacore.broker.config import BrokerConfig
from kafkacore.broker.config_admin_manager import alter_resources
from kafkacore.broker.controller.broker_heartbeat_manager import BrokerHeartbeatManager
from kafkacore.broker.controller.configuration_control_manager import (
    ConfigurationControlManager,
)
from kafkacore.broker.controller.replication_control_manager import (
    PartitionRegistration,
    ReplicationControlManager,
    TopicControlInfo,
    create_partitions_error,
)
from kafkacore.broker.files import replace_atomically
from kafkacore.broker.metadata_cache import validate_topic_name
from kafkacore.broker.shutdownable_thread import ShutdownableThread
from kafkacore.errors import Errors, InvalidTopicError, InvalidUpdateVersionError

log = logging.getLogger(__name__)

STATE_FILE = "controller-state.json"


@dataclass
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    epoch: int
    incarnation_id: str


class QuorumController:
    """Brokers, topics and partitions under one lock, saved after every change (Kafka's
    ``QuorumController``, with a quorum of one)."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id = config["node.id"]
        self.lock = threading.RLock()
        self.brokers: dict[int, BrokerRegistration] = {}
        self.heartbeats = BrokerHeartbeatManager(config["broker.session.timeout.ms"])
        self.replication = ReplicationControlManager()
        self.configuration = ConfigurationControlManager(self.replication)
        self._next_broker_epoch = 1
        self.path = Path(config.log_dirs[0]) / STATE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._load()
        self._stop = threading.Event()
        self._fencer = ShutdownableThread(f"controller-{self.node_id}-fencer",
                                           work=self._fence_lapsed)

    # -- state on disk ---------------------------------------------------------------------------

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        self._next_broker_epoch = data["next_broker_epoch"]
        for t in data["topics"]:
            info = TopicControlInfo(t["name"], t["topic_id"], t["configs"],
                                    [PartitionRegistration(**p) for p in t["partitions"]])
            self.replication.topics[info.name] = info
        self.configuration.broker_configs = data.get("broker_configs", {})
        # Brokers must register again after a controller restart; until they do, they are fenced.

    def _save(self) -> None:
        data = {"next_broker_epoch": self._next_broker_epoch,
                "topics": [asdict(t) for t in self.replication.topics.values()],
                "broker_configs": self.configuration.broker_configs}
        replace_atomically(self.path, json.dumps(data).encode())

    def start(self) -> None:
        self._fencer.start()

    def shutdown(self) -> None:
        self._stop.set()
        self._fencer.shutdown(5.0)

    # -- brokers -----------------------------------------------------------------------------------

    def active_brokers(self) -> set[int]:
        return {b for b in self.brokers if self.heartbeats.is_active(b)}

    def register_broker(self, broker_id: int, host: str, port: int, incarnation: str) -> int:
        with self.lock:
            old = self.brokers.get(broker_id)
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
            changes = self.replication.handle_broker_unfenced(broker_id, self.active_brokers())
            self._save()
            log.info("controller: broker %d registered at %s:%d, epoch %d%s", broker_id, host,
                     port, epoch, "; " + "; ".join(changes) if changes else "")
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
                changes = self.replication.handle_broker_unfenced(broker_id,
                                                                  self.active_brokers())
                self._save()
                log.info("controller: broker %d unfenced%s", broker_id,
                         "; " + "; ".join(changes) if changes else "")
            return Errors.NONE, False

    def _fence(self, broker_id: int, why: str) -> None:
        self.heartbeats.fenced.add(broker_id)
        changes = self.replication.handle_broker_fenced(broker_id, self.active_brokers())
        self._save()
        log.info("controller: broker %d fenced (%s)%s", broker_id, why,
                 "; " + "; ".join(changes) if changes else "")

    def _fence_lapsed(self) -> bool:
        """One turn of the fencer thread (supervised: an error is logged, the next turn runs)."""
        period = min(self.heartbeats.session_timeout_ms / 4000.0, 0.25)
        if self._stop.wait(period):
            return False
        with self.lock:
            for broker_id in self.heartbeats.expired():
                self._fence(broker_id, "its session expired")
        return True

    # -- topics ------------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str]) -> tuple[int, str | None, TopicControlInfo | None]:
        with self.lock:
            try:
                validate_topic_name(name)
            except InvalidTopicError as exc:
                return Errors.INVALID_TOPIC_EXCEPTION, str(exc), None
            if name in self.replication.topics:
                return Errors.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists", None
            if partitions <= 0:
                return Errors.INVALID_PARTITIONS, f"number of partitions must be positive, got " \
                                           f"{partitions}", None
            live = sorted(self.active_brokers())
            if replication_factor <= 0 or replication_factor > len(live):
                return (Errors.INVALID_REPLICATION_FACTOR,
                        f"replication factor {replication_factor} with {len(live)} live brokers",
                        None)
            info = self.replication.create_topic(name, partitions, replication_factor,
                                                 configs, live)
            self._save()
            log.info("controller: created %s: %s", name,
                     [(p.leader, p.replicas) for p in info.partitions])
            return Errors.NONE, None, info

    def create_partitions(self, name: str, count: int, assignments: list[Any] | None,
                          validate_only: bool) -> tuple[int, str | None]:
        with self.lock:
            info = self.replication.topics.get(name)
            if info is None:
                return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
            error, message = create_partitions_error(len(info.partitions), count, assignments)
            live = sorted(self.active_brokers())
            if error == Errors.NONE and len(info.partitions[0].replicas) > len(live):
                error, message = (Errors.INVALID_REPLICATION_FACTOR,
                                  f"replication factor {len(info.partitions[0].replicas)} with "
                                  f"{len(live)} live brokers")
            if error != Errors.NONE or validate_only:
                return error, message
            self.replication.create_partitions(info, count, live)
            self._save()
            log.info("controller: %s now has %d partitions", name, count)
            return Errors.NONE, None

    def delete_topic(self, name: str) -> int:
        with self.lock:
            if self.replication.topics.pop(name, None) is None:
                return Errors.UNKNOWN_TOPIC_OR_PARTITION
            self._save()
            return Errors.NONE

    def alter_partition(self, broker_id: int, topic_id: uuid.UUID, index: int, leader_epoch: int,
                        new_isr: list[int], partition_epoch: int,
                        ) -> tuple[int, PartitionRegistration | None]:
        """Kafka's ``ReplicationControlManager.alterPartition``: a leader's ISR change, accepted
        only from the current leader at the current leader epoch, and only over the partition
        state it was decided on: a ``partition_epoch`` behind ours (the ISR or the replicas
        changed since, by an election or another AlterPartition) is refused with
        ``INVALID_UPDATE_VERSION``, and the leader waits for the new state."""
        with self.lock:
            info = next((t for t in self.replication.topics.values()
                         if t.topic_id == str(topic_id)), None)
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
            self._save()
            log.info("controller: %s-%d ISR now %s (asked by leader %d)", info.name, index,
                     part.isr, broker_id)
            return Errors.NONE, part

    def alter_configs(self, resources: list[dict[str, Any]], incremental: bool,
                      validate_only: bool) -> list[dict[str, Any]]:
        """AlterConfigs and IncrementalAlterConfigs, each resource's answer; saved before."""
        changed = []

        def alter_one(kind: int, name: str, configs: list[dict[str, Any]], incremental: bool,
                      validate_only: bool) -> None:
            if self.configuration.alter(kind, name, configs, incremental, validate_only):
                changed.append((kind, name))

        with self.lock:
            results = alter_resources(resources, incremental, validate_only, alter_one)
            if changed:
                self._save()
                log.info("controller: configs of %s changed", changed)
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
            if any(error == Errors.NONE for error, _ in results.values()):
                self._save()
                log.info("controller: reassignments %s", moves)
            return results

    def elect_leaders(self, election_type: int, wanted: list[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """ElectLeaders through the controller (see ``ReplicationControlManager``)."""
        with self.lock:
            results = self.replication.elect_leaders(election_type, wanted,
                                                     self.active_brokers())
            if any(error == Errors.NONE for error, _ in results.values()):
                self._save()
            for (name, index), (error, _) in results.items():
                if error == Errors.NONE:
                    part = self.replication.topics[name].partitions[index]
                    log.info("controller: %s-%d elected leader %d, epoch %d (ElectLeaders)",
                             name, index, part.leader, part.leader_epoch)
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
                self._save()
                log.info("controller: %s-%d moved to leader %d, epoch %d", name, index,
                         part.leader, part.leader_epoch)
            return Errors.NONE
