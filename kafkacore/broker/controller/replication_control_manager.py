"""``ReplicationControlManager``: topics, their partitions, and the leader elections."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from kafkacore.errors import Errors

#: ElectLeaders' election types (Kafka's ``ElectionType``)
ELECTION_PREFERRED = 0
ELECTION_UNCLEAN = 1
#: partitions one CreateTopics may ask for, in all its topics (Kafka's
#: ``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``): beyond, every topic is refused
#: with POLICY_VIOLATION before anything is placed
MAX_PARTITIONS_PER_BATCH = 10_000
#: records one controller operation may make (Kafka's ``QuorumController.MAX_RECORDS_PER_USER_OP``,
#: the bound of its ``BoundedList``): a CreatePartitions adding more partitions than this, in all
#: its topics, is refused with POLICY_VIOLATION as a whole
MAX_RECORDS_PER_USER_OP = 10_000
#: Kafka's messages for the two caps above
EXCESSIVE_PARTITIONS_MESSAGE = "Excessively large number of partitions per request."
EXCESSIVE_BATCH_MESSAGE = "Unable to perform excessively large batch operation."


@dataclass
class PartitionRegistration:
    """A partition as the controller records it (KRaft's ``PartitionRegistration``)."""

    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    #: a reassignment under way: the replicas joining, and those leaving once they have
    adding_replicas: list[int] = field(default_factory=list)
    removing_replicas: list[int] = field(default_factory=list)


@dataclass
class TopicControlInfo:
    name: str
    topic_id: str
    configs: dict[str, str]
    partitions: list[PartitionRegistration] = field(default_factory=list)


def create_partitions_error(current: int, count: int,
                            assignments: list[Any] | None) -> tuple[int, str | None]:
    """CreatePartitions' checks of a topic's new count (Kafka's
    ``ReplicationControlManager.createPartitions``): partitions are only added, and manual
    assignments (each ``{"broker_ids": [...]}``) name exactly the partitions added."""
    if count < current:
        return (Errors.INVALID_PARTITIONS, f"The topic currently has {current} partition(s); "
                f"{count} would not be an increase.")
    if count == current:
        return Errors.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
    if assignments is not None and len(assignments) != count - current:
        return (Errors.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {count - current} "
                f"additional partition(s), but only {len(assignments)} assignment(s) were "
                f"specified.")
    return Errors.NONE, None


def total_partitions_requested(topics: list[dict[str, Any]], default_partitions: int) -> int:
    """The partitions a CreateTopics asks for in all its topics (Kafka's
    ``validateTotalNumberOfPartitions``): its assignments, or its count (-1: the default)."""
    total = 0
    for t in topics:
        if t["assignments"]:
            total += len(t["assignments"])
        elif t["num_partitions"] == -1:
            total += default_partitions
        elif t["num_partitions"] > 0:
            total += t["num_partitions"]
    return total


def partitions_added(current: dict[str, int], topics: list[dict[str, Any]]) -> int:
    """The partitions (one record each) a CreatePartitions would add in all its topics;
    ``current``: each existing topic's count."""
    return sum(max(0, t["count"] - current[t["name"]]) for t in topics if t["name"] in current)


def manual_assignment_error(replica_lists: list[list[int]], registered: set[int],
                            active: set[int], replication_factor: int | None = None
                            ) -> tuple[int, str | None]:
    """Kafka's ``validateManualPartitionAssignment`` for each partition's replicas: at least
    one, no broker twice, every broker registered, the same replication factor as the others
    (``replication_factor``: the topic's, for CreatePartitions), and one of them unfenced to
    lead."""
    for index, replicas in enumerate(replica_lists):
        if not replicas:
            return (Errors.INVALID_REPLICA_ASSIGNMENT,
                    "The manual partition assignment includes an empty replica list.")
        seen: set[int] = set()
        for r in replicas:
            if r in seen:
                return (Errors.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment "
                        f"includes the broker {r} more than once.")
            seen.add(r)
            if r not in registered:
                return (Errors.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment "
                        f"includes broker {r}, but no such broker is registered.")
        if replication_factor is None:
            replication_factor = len(replicas)
        if len(replicas) != replication_factor:
            return (Errors.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment "
                    f"includes a partition with {len(replicas)} replica(s), but this is not "
                    f"consistent with previous partitions, which have {replication_factor} "
                    f"replica(s).")
        if not any(r in active for r in replicas):
            return (Errors.INVALID_REPLICA_ASSIGNMENT, f"All brokers specified in the manual "
                    f"partition assignment for partition {index} are fenced or in controlled "
                    f"shutdown.")
    return Errors.NONE, None


def placed_partition(replicas: list[int], active: set[int]) -> PartitionRegistration:
    """A new partition on ``replicas``: its ISR the unfenced ones, led by the first of them."""
    isr = [r for r in replicas if r in active]
    return PartitionRegistration(list(replicas), isr, isr[0])


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

    @staticmethod
    def place(first: int, count: int, replication_factor: int,
              live: list[int]) -> list[list[int]]:
        """Kafka's rack-unaware assignment of partitions ``first`` .. ``first + count - 1``:
        replicas of partition p start at a random broker shifted by p, so that leaders spread
        over the brokers."""
        start = random.randrange(len(live))
        return [[live[(start + p + i) % len(live)] for i in range(replication_factor)]
                for p in range(first, first + count)]

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str], live: list[int]) -> TopicControlInfo:
        """A new topic placed as Kafka places one (:meth:`place`) on the ``live`` brokers."""
        return self.create_placed_topic(
            name, configs, self.place(0, partitions, replication_factor, live), set(live))

    def create_placed_topic(self, name: str, configs: dict[str, str],
                            replica_lists: list[list[int]],
                            active: set[int]) -> TopicControlInfo:
        """A new topic whose partition p is on ``replica_lists[p]``."""
        info = TopicControlInfo(name, str(uuid.uuid4()), configs,
                                [placed_partition(r, active) for r in replica_lists])
        self.add(info)
        return info

    def partition_counts(self) -> dict[int, int]:
        """Broker id -> the partition replicas placed on it."""
        counts: dict[int, int] = {}
        for t in self.topics.values():
            for part in t.partitions:
                for r in part.replicas:
                    counts[r] = counts.get(r, 0) + 1
        return counts

    def elect(self, part: PartitionRegistration, active: set[int],
              preferred: int | None = None, unclean: bool = False) -> None:
        """A new leader from the ISR, and a new leader epoch.  ``unclean``: with nobody of the
        ISR alive, any live replica, which becomes the whole ISR (what it lacks is lost)."""
        candidates = [r for r in part.replicas if r in part.isr and r in active]
        if not candidates and unclean:
            candidates = [r for r in part.replicas if r in active]
            part.isr = candidates[:1]
        if preferred is not None and preferred in candidates:
            leader = preferred
        else:
            leader = candidates[0] if candidates else -1
        part.leader = leader
        part.leader_epoch += 1
        part.partition_epoch += 1

    def elect_leaders(self, election_type: int, wanted: list[tuple[str, int]] | None,
                      active: set[int]) -> dict[tuple[str, int], tuple[int, str | None]]:
        """ElectLeaders (KIP-460): PREFERRED moves leadership back to each partition's first
        replica if it is alive and in sync; UNCLEAN gives a leaderless partition a leader, from
        outside the ISR if need be.  (partition -> (error, message)); with ``wanted`` None,
        every partition where an election happened."""
        results: dict[tuple[str, int], tuple[int, str | None]] = {}
        every = [(t.name, i) for t in self.topics.values() for i in range(len(t.partitions))]
        for name, index in every if wanted is None else wanted:
            info = self.topics.get(name)
            if info is None or not 0 <= index < len(info.partitions):
                results[(name, index)] = (Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                          f"{name}-{index} does not exist")
                continue
            part = info.partitions[index]
            if election_type == ELECTION_PREFERRED:
                preferred = part.replicas[0]
                if part.leader == preferred:
                    results[(name, index)] = (Errors.ELECTION_NOT_NEEDED, None)
                elif preferred not in part.isr or preferred not in active:
                    results[(name, index)] = (
                        Errors.PREFERRED_LEADER_NOT_AVAILABLE,
                        f"broker {preferred} is not alive and in sync for {name}-{index}")
                else:
                    self.elect(part, active, preferred)
                    results[(name, index)] = (Errors.NONE, None)
            elif part.leader >= 0:
                results[(name, index)] = (Errors.ELECTION_NOT_NEEDED, None)
            else:
                self.elect(part, active, unclean=True)
                results[(name, index)] = (
                    (Errors.NONE, None) if part.leader >= 0 else
                    (Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                     f"no replica of {name}-{index} is alive"))
        if wanted is None:
            results = {tp: r for tp, r in results.items() if r[0] != Errors.ELECTION_NOT_NEEDED}
        return results

    # -- reassignments (KIP-455) ---------------------------------------------------------------

    def alter_partition_reassignment(self, name: str, index: int, target: list[int] | None,
                                     registered: set[int], active: set[int],
                                     allow_rf_change: bool = True) -> tuple[int, str | None]:
        """Start (or replace, or with ``target`` None cancel) a partition's reassignment.  The
        partition's replicas become the target plus those leaving; the joining ones fetch as
        followers, and once every target replica is in the ISR the leaving ones go
        (:meth:`maybe_complete_reassignment`)."""
        info = self.topics.get(name)
        if info is None or not 0 <= index < len(info.partitions):
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{name}-{index} does not exist"
        part = info.partitions[index]
        original = [r for r in part.replicas if r not in part.adding_replicas]
        if target is None:
            if not part.adding_replicas and not part.removing_replicas:
                return Errors.NO_REASSIGNMENT_IN_PROGRESS, f"{name}-{index} is not being moved"
            self._set_replicas(part, original, active)
            return Errors.NONE, None
        if not target or len(set(target)) != len(target):
            return (Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"the replicas {target} must be distinct, and at least one")
        unknown = [r for r in target if r not in registered]
        if unknown:
            return (Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes brokers {unknown}, but no such "
                    f"broker is registered.")
        dead = [r for r in target if r not in active and r not in original]
        if dead:  # a new replica must be able to copy the data now
            return (Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes brokers {dead}, which are not "
                    f"alive (fenced).")
        if not allow_rf_change and len(target) != len(original):
            return (Errors.INVALID_REPLICATION_FACTOR,
                    f"the replication factor would change from {len(original)} to "
                    f"{len(target)}")
        if target == original:  # nothing to move (a pending move is cancelled)
            if part.adding_replicas or part.removing_replicas:
                self._set_replicas(part, original, active)
            return Errors.NONE, None
        removing = [r for r in original if r not in target]
        part.adding_replicas = [r for r in target if r not in original]
        part.removing_replicas = removing
        part.replicas = list(target) + removing
        part.isr = [r for r in part.isr if r in part.replicas]
        part.leader_epoch += 1  # the leader learns its new followers
        part.partition_epoch += 1
        self.maybe_complete_reassignment(part, active)
        return Errors.NONE, None

    def maybe_complete_reassignment(self, part: PartitionRegistration, active: set[int]) -> bool:
        """Every target replica is in sync: the leaving ones go (a new leader if the leader
        was one of them).  True if it completed."""
        if not part.adding_replicas and not part.removing_replicas:
            return False
        target = [r for r in part.replicas if r not in part.removing_replicas]
        if not all(r in part.isr for r in target):
            return False
        self._set_replicas(part, target, active)
        return True

    def _set_replicas(self, part: PartitionRegistration, replicas: list[int],
                      active: set[int]) -> None:
        part.replicas = list(replicas)
        part.adding_replicas, part.removing_replicas = [], []
        isr = [r for r in part.isr if r in replicas]
        part.isr = isr or [r for r in replicas if r in active][:1]
        if part.leader in replicas:
            part.leader_epoch += 1
            part.partition_epoch += 1
        else:
            self.elect(part, active)

    def ongoing_reassignments(self, wanted: list[tuple[str, int]] | None
                              ) -> dict[tuple[str, int], PartitionRegistration]:
        every = [(t.name, i) for t in self.topics.values() for i in range(len(t.partitions))]
        out = {}
        for name, index in every if wanted is None else wanted:
            info = self.topics.get(name)
            if info is None or not 0 <= index < len(info.partitions):
                continue
            part = info.partitions[index]
            if part.adding_replicas or part.removing_replicas:
                out[(name, index)] = part
        return out

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
