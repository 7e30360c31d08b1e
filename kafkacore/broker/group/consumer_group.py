"""A group of the consumer group protocol (KIP-848): Kafka's ``ConsumerGroup``,
``ConsumerGroupMember`` and the reconciliation of ``CurrentAssignmentBuilder``.

Three epochs order everything.  The *group epoch* moves when the membership or a subscription
changes (or a subscribed topic's partition count); the *assignment epoch* is the group epoch
the target assignment was computed for; each member's *member epoch* is the group epoch of the
target it has reached.  A member moves to its target in steps: first it revokes the partitions
it must give up (UNREVOKED_PARTITIONS, its epoch unchanged), then it gets the new epoch and the
partitions nobody else owns any more; those still owned by another member wait
(UNRELEASED_PARTITIONS) until that member revoked them.  A partition therefore never has two
owners: the coordinator tracks the epoch of each partition's owner (``partition_epochs``).
See docs/broker/groups.rst.
"""

from __future__ import annotations

import enum
import threading
import uuid
from dataclasses import dataclass, field

#: topic id -> partitions
Partitions = dict[uuid.UUID, frozenset[int]]

#: The member epochs a heartbeat can carry besides a real one (Kafka's
#: ``ConsumerGroupHeartbeatRequest.JOIN_GROUP_MEMBER_EPOCH``, ``LEAVE_GROUP_MEMBER_EPOCH``,
#: ``LEAVE_GROUP_STATIC_MEMBER_EPOCH``).
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(enum.IntEnum):
    """Where a member is on its way to its target (Kafka's ``MemberState``; stored as int8)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState(enum.Enum):
    """Kafka's ``ConsumerGroup.ConsumerGroupState``, as ConsumerGroupDescribe names them."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """What a member of the classic protocol (JoinGroup, SyncGroup, Heartbeat) inside a consumer
    group keeps of its JoinGroup (Kafka's ``ClassicMemberMetadata``): its session timeout and
    the protocols it offered, (name, metadata) in its order of preference."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]


@dataclass
class ConsumerGroupMember:
    """One member (Kafka's ``ConsumerGroupMember``): its subscription and where it is."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)
    #: counts heartbeats: the session timer of an older count is stale
    session_count: int = 0
    #: None for a member of the consumer protocol
    classic: ClassicMemberMetadata | None = None


def union(a: Partitions, b: Partitions) -> Partitions:
    return {t: a.get(t, frozenset()) | b.get(t, frozenset()) for t in {*a, *b}}


def minus(a: Partitions, b: Partitions) -> Partitions:
    out = {t: ps - b.get(t, frozenset()) for t, ps in a.items()}
    return {t: ps for t, ps in out.items() if ps}


def intersect(a: Partitions, b: Partitions) -> Partitions:
    out = {t: ps & b.get(t, frozenset()) for t, ps in a.items()}
    return {t: ps for t, ps in out.items() if ps}


def is_subset(a: Partitions, b: Partitions) -> bool:
    return all(ps <= b.get(t, frozenset()) for t, ps in a.items())


class ConsumerGroup:
    """A consumer group: members, epochs, the target assignment and who owns what.

    Every field is guarded by ``lock``."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # Lock order 5 (one group's at a time). Guards its members and epochs.
        self.lock = threading.RLock()
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        #: member id -> its target partitions (of ``assignment_epoch``)
        self.target: dict[str, Partitions] = {}
        #: (topic id, partition) -> the epoch of the member that owns it (or revokes it)
        self.partition_epochs: dict[tuple[uuid.UUID, int], int] = {}
        #: topic name -> (topic id, partition count) of the topics some member subscribes to
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        self.dead = False

    def state(self) -> ConsumerGroupState:
        """Kafka's ``ConsumerGroup.state``, derived from the epochs."""
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE
               for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def member_by_instance_id(self, instance_id: str) -> ConsumerGroupMember | None:
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    def supports_classic_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """Kafka's ``ConsumerGroup.supportsClassicProtocols``: a classic member may join when it
        is a consumer and offers a protocol that every classic member offered too."""
        if protocol_type != "consumer" or not names:
            return False
        for m in self.members.values():
            if m.classic is not None:
                names &= {name for name, _ in m.classic.supported_protocols}
        return bool(names)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Some partition of the member's target is still owned by another member."""
        for t, ps in self.target.get(member.member_id, {}).items():
            for p in ps - member.assigned.get(t, frozenset()):
                if (t, p) in self.partition_epochs:
                    return True
        return False

    def owner_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member that owns the partition, -1 if nobody does."""
        return self.partition_epochs.get((topic_id, partition), -1)

    def add_partition_epochs(self, partitions: Partitions, epoch: int) -> None:
        for t, ps in partitions.items():
            for p in ps:
                self.partition_epochs[(t, p)] = epoch

    def remove_partition_epochs(self, partitions: Partitions, epoch: int) -> None:
        for t, ps in partitions.items():
            for p in ps:
                if self.partition_epochs.get((t, p)) == epoch:
                    del self.partition_epochs[(t, p)]

    def update_member(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember) -> None:
        """Install ``new`` (the member as it is now) and move the partition epochs with it."""
        if old is not None:
            self.remove_partition_epochs(old.assigned, old.member_epoch)
            self.remove_partition_epochs(old.pending_revocation, old.member_epoch)
            if old.member_id != new.member_id:
                self.members.pop(old.member_id, None)
        self.members[new.member_id] = new
        self.add_partition_epochs(new.assigned, new.member_epoch)
        self.add_partition_epochs(new.pending_revocation, new.member_epoch)

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.remove_partition_epochs(member.assigned, member.member_epoch)
            self.remove_partition_epochs(member.pending_revocation, member.member_epoch)
            self.target.pop(member_id, None)
        return member


def reconcile(group: ConsumerGroup, member: ConsumerGroupMember,
              owned: Partitions | None) -> ConsumerGroupMember:
    """Kafka's ``CurrentAssignmentBuilder.build``: the member's next step towards its target.

    ``owned``: the partitions the member says it owns (None: not said in this heartbeat).
    Returns a new member value (the caller stores it with :meth:`ConsumerGroup.update_member`).
    """
    target = group.target.get(member.member_id, {})
    epoch = group.assignment_epoch
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        # Wait for the member to say it no longer owns what it had to revoke.
        if owned is None or not is_subset(owned, member.assigned):
            return member
        return _next(group, member, epoch, target)
    if member.state is MemberState.UNRELEASED_PARTITIONS or member.member_epoch != epoch:
        # Partitions may have been released meanwhile, or the target moved.
        return _next(group, member, epoch, target)
    return member


def _next(group: ConsumerGroup, member: ConsumerGroupMember, epoch: int,
          target: Partitions) -> ConsumerGroupMember:
    """Kafka's ``computeNextAssignment``."""
    keep = intersect(member.assigned, target)
    revoke = minus(member.assigned, target)
    wanted = minus(target, member.assigned)
    base = dict(member.__dict__)
    if revoke:
        # First the revocation: the member keeps its epoch until it has let them go.
        base.update(state=MemberState.UNREVOKED_PARTITIONS, assigned=keep,
                    pending_revocation=revoke)
        return ConsumerGroupMember(**base)
    free: Partitions = {}
    for t, ps in wanted.items():
        ok = frozenset(p for p in ps if _owner_is(group, member, t, p))
        if ok:
            free[t] = ok
    unreleased = minus(wanted, free)
    base.update(
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        assigned=union(keep, free), pending_revocation={},
        previous_member_epoch=member.member_epoch, member_epoch=epoch)
    return ConsumerGroupMember(**base)


def _owner_is(group: ConsumerGroup, member: ConsumerGroupMember, t: uuid.UUID, p: int) -> bool:
    """The partition has no owner, or it is this member itself."""
    if (t, p) not in group.partition_epochs:
        return True
    return p in member.assigned.get(t, frozenset()) or p in member.pending_revocation.get(
        t, frozenset())
