"""``ReplicationControlManager``: topics, their partitions, and the leader elections."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from kafkacore.errors import Errors


@dataclass
class PartitionRegistration:
    """A partition as the controller records it (KRaft's ``PartitionRegistration``)."""

    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0


@dataclass
class TopicControlInfo:
    name: str
    topic_id: str
    configs: dict[str, str]
    partitions: list[PartitionRegistration] = field(default_factory=list)


def create_partitions_error(current: int, count: int,
                            assignments: list[Any] | None) -> tuple[int, str | None]:
    """CreatePartitions' checks of a topic's new count (Kafka's
    ``ReplicationControlManager.createPartitions``): partitions are only added."""
    if assignments is not None:
        return Errors.INVALID_REPLICA_ASSIGNMENT, "manual replica assignments are not supported"
    if count < current:
        return (Errors.INVALID_PARTITIONS, f"The topic currently has {current} partition(s); "
                f"{count} would not be an increase.")
    if count == current:
        return Errors.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
    return Errors.NONE, None


class ReplicationControlManager:
    """Topics, partitions, and the elections (Kafka's ``ReplicationControlManager``)."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicControlInfo] = {}
        #: topic id -> name (AlterPartition names topics by id)
        self.names_by_id: dict[str, str] = {}

    def add(self, info: TopicControlInfo) -> None:
        self.topics[info.name] = info
        self.names_by_id[info.topic_id] = info.name

    def remove(self, name: str) -> TopicControlInfo | None:
        info = self.topics.pop(name, None)
        if info is not None:
            self.names_by_id.pop(info.topic_id, None)
        return info

    def by_id(self, topic_id: str) -> TopicControlInfo | None:
        name = self.names_by_id.get(topic_id)
        return None if name is None else self.topics[name]

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str], live: list[int]) -> TopicControlInfo:
        # Kafka's rack-unaware assignment: replicas of partition p start at a random broker
        # shifted by p, so that leaders spread over the brokers.
        start = random.randrange(len(live))
        info = TopicControlInfo(name, str(uuid.uuid4()), configs)
        for p in range(partitions):
            replicas = [live[(start + p + i) % len(live)] for i in range(replication_factor)]
            info.partitions.append(PartitionRegistration(replicas, list(replicas), replicas[0]))
        self.add(info)
        return info

    def create_partitions(self, info: TopicControlInfo, count: int, live: list[int]) -> None:
        """Add partitions up to ``count``, with the replication factor of the first, assigned
        as create_topic assigns them."""
        replication_factor = len(info.partitions[0].replicas)
        start = random.randrange(len(live))
        for p in range(len(info.partitions), count):
            replicas = [live[(start + p + i) % len(live)] for i in range(replication_factor)]
            info.partitions.append(PartitionRegistration(replicas, list(replicas), replicas[0]))

    def elect(self, part: PartitionRegistration, active: set[int],
              preferred: int | None = None) -> None:
        """A new leader from the ISR (clean election only), and a new leader epoch."""
        candidates = [r for r in part.replicas if r in part.isr and r in active]
        if preferred is not None and preferred in candidates:
            leader = preferred
        else:
            leader = candidates[0] if candidates else -1
        part.leader = leader
        part.leader_epoch += 1
        part.partition_epoch += 1

    def handle_broker_fenced(self, broker_id: int,
                             active: set[int]) -> list[tuple[TopicControlInfo, int]]:
        """Remove ``broker_id`` from every ISR (unless it is the last member: the data is
        there only) and re-elect where it led.  Returns the partitions changed."""
        changes = []
        for t in self.topics.values():
            for i, part in enumerate(t.partitions):
                if broker_id not in part.replicas:
                    continue
                touched = False
                if broker_id in part.isr and len(part.isr) > 1:
                    part.isr = [r for r in part.isr if r != broker_id]
                    touched = True
                if part.leader == broker_id or touched:
                    # Kafka 4 keeps the leader epoch when only the ISR shrinks; we bump it, so a
                    # broker that pulls the image knows the controller changed the ISR (docs).
                    if part.leader == broker_id:
                        self.elect(part, active)
                    else:
                        part.leader_epoch += 1
                        part.partition_epoch += 1
                    changes.append((t, i))
        return changes

    def handle_broker_unfenced(self, broker_id: int,
                               active: set[int]) -> list[tuple[TopicControlInfo, int]]:
        """Partitions left without a leader get one if this broker is in their ISR.  Returns
        the partitions changed."""
        changes = []
        for t in self.topics.values():
            for i, part in enumerate(t.partitions):
                if part.leader == -1 and broker_id in part.isr:
                    self.elect(part, active)
                    changes.append((t, i))
        return changes
