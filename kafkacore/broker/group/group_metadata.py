"""A consumer group's membership, in Kafka's names (``GroupMetadata``, ``MemberMetadata``).

The classic group protocol keeps, per group, a generation: a numbered set of members that all
agreed on one protocol (an assignor, "range" or "roundrobin") and got their share of the
partitions from the member the coordinator made the leader.  The coordinator never reads the
protocol metadata or the assignments: they are opaque bytes it relays (the client's
``ConsumerProtocol`` encodes them).  See ``docs/broker/groups.rst``.

Everything here is read and written under ``GroupMetadata.lock`` (Kafka's ``group.inLock``),
which the group's delayed operations share.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkacore.errors import Errors, IllegalStateError


class GroupState(enum.Enum):
    """The states of a classic group, and which states may come before each (Kafka's
    ``GroupState`` with ``validPreviousStates``)."""

    EMPTY = "Empty"  #: no members; offsets may still be committed (and kept)
    PREPARING_REBALANCE = "PreparingRebalance"  #: waiting (DelayedJoin) for members to (re)join
    COMPLETING_REBALANCE = "CompletingRebalance"  #: joined; waiting for the leader's SyncGroup
    STABLE = "Stable"  #: every member has its assignment; heartbeats keep it so
    DEAD = "Dead"  #: removed; requests get COORDINATOR_NOT_AVAILABLE and retry


VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.DEAD: frozenset(GroupState),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
}


@dataclass
class JoinGroupResult:
    """What a JoinGroup is answered with (Kafka's ``JoinGroupResult``)."""

    member_id: str
    error: int
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    #: (member id, group instance id, metadata): only the leader gets the members.
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class SyncGroupResult:
    error: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


JoinCallback = Callable[[JoinGroupResult], None]
SyncCallback = Callable[[SyncGroupResult], None]


class MemberMetadata:
    """One member of a group (Kafka's ``MemberMetadata``).

    A member is "awaiting join" while its JoinGroup request is parked (``awaiting_join_callback``
    set) until the rebalance completes, and "awaiting sync" likewise for SyncGroup.
    """

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        supported_protocols: list[tuple[str, bytes]],
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.supported_protocols = supported_protocols
        self.assignment = b""
        self.awaiting_join_callback: JoinCallback | None = None
        self.awaiting_sync_callback: SyncCallback | None = None
        #: Joined but never completed a join: expires after ``new_member_join_timeout_ms``.
        self.is_new = False
        #: Set for the instant a heartbeat completes the pending DelayedHeartbeat.
        self.heartbeat_satisfied = False
        self.is_leaving = False

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join_callback is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync_callback is not None

    def has_satisfied_heartbeat(self) -> bool:
        """Whether the member's DelayedHeartbeat may complete without expiring it.

        A member parked in JoinGroup or SyncGroup cannot heartbeat (the client waits for the
        answer), so it counts as alive: the rebalance timeout bounds that wait instead.  A new
        member is the exception (it may have gone away after its first JoinGroup).
        """
        if self.is_new:
            return self.heartbeat_satisfied
        if self.is_awaiting_join or self.is_awaiting_sync:
            return True
        return self.heartbeat_satisfied

    def protocols(self) -> set[str]:
        return {name for name, _ in self.supported_protocols}

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.supported_protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """The same protocols, in the same order, with the same metadata: nothing to rebalance."""
        return protocols == self.supported_protocols

    def vote(self, candidates: set[str]) -> str:
        """The first protocol of this member's preference list that every member supports."""
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def __repr__(self) -> str:
        return f"MemberMetadata({self.member_id!r}, client_id={self.client_id!r})"


class GroupMetadata:
    """One group: its state, its members and its generation (Kafka's ``GroupMetadata``)."""

    def __init__(self, group_id: str, initial_state: GroupState = GroupState.EMPTY) -> None:
        self.group_id = group_id
        self.state = initial_state
        # Lock order 5 (one group's at a time). Guards the group's members and state.
        self.lock = threading.RLock()
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        #: Members that got an id from JoinGroup v4+ (MEMBER_ID_REQUIRED) and must rejoin with it.
        self.pending_members: set[str] = set()
        self.num_members_awaiting_join = 0
        #: A member joined during the initial delay (InitialDelayedJoin waits once more).
        self.new_member_added = False
        #: group instance id -> member id of each static member (KIP-345)
        self.static_members: dict[str, str] = {}

    # -- state --------------------------------------------------------------------------------

    def is_state(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, state: GroupState) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalStateError(
                f"group {self.group_id} cannot go from {self.state.value} to {state.value}"
            )
        self.state = state

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    # -- members ------------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: MemberMetadata, callback: JoinCallback | None = None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        self.pending_members.discard(member.member_id)
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        if callback is not None:
            member.awaiting_join_callback = callback
            self.num_members_awaiting_join += 1

    def remove(self, member_id: str) -> None:
        self.pending_members.discard(member_id)
        member = self.members.pop(member_id, None)
        if member is None:
            return
        if member.group_instance_id is not None \
                and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if member.is_awaiting_join:
            self.num_members_awaiting_join -= 1
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)

    def current_static_member(self, group_instance_id: str) -> str | None:
        """The member id that the static member ``group_instance_id`` has now."""
        return self.static_members.get(group_instance_id)

    def is_static_member_fenced(self, group_instance_id: str | None, member_id: str) -> bool:
        """A request with an instance id and a member id that is no longer that instance's:
        an older incarnation of a restarted static member (FENCED_INSTANCE_ID)."""
        if group_instance_id is None:
            return False
        current = self.static_members.get(group_instance_id)
        return current is not None and current != member_id

    def replace_static_member(self, group_instance_id: str, old_member_id: str,
                              new_member_id: str) -> MemberMetadata:
        """A static member came back under a new member id (Kafka's ``replaceStaticMember``):
        the same member, with its assignment and leadership, now known by the new id; a
        request of the old incarnation still parked is answered FENCED_INSTANCE_ID."""
        member = self.members.pop(old_member_id)
        self.maybe_invoke_join_callback(member, JoinGroupResult(old_member_id,
                                                                Errors.FENCED_INSTANCE_ID))
        self.maybe_invoke_sync_callback(member, SyncGroupResult(Errors.FENCED_INSTANCE_ID))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return member

    def update_member(
        self,
        member: MemberMetadata,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        callback: JoinCallback,
    ) -> None:
        member.supported_protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if not member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        member.awaiting_join_callback = callback

    def maybe_invoke_join_callback(self, member: MemberMetadata, result: JoinGroupResult) -> None:
        callback = member.awaiting_join_callback
        if callback is not None:
            member.awaiting_join_callback = None
            self.num_members_awaiting_join -= 1
            callback(result)

    def maybe_invoke_sync_callback(self, member: MemberMetadata, result: SyncGroupResult) -> bool:
        callback = member.awaiting_sync_callback
        if callback is None:
            return False
        member.awaiting_sync_callback = None
        callback(result)
        return True

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_members

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def maybe_elect_new_joined_leader(self) -> bool:
        """If the leader did not rejoin, make a member that did the leader; False if none did."""
        if self.leader_id is not None:
            leader = self.members.get(self.leader_id)
            if leader is not None and leader.is_awaiting_join:
                return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout of the members: how long the group waits for a rejoin."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols ------------------------------------------------------------------------------

    def supports_protocols(self, member_protocol_type: str, protocols: set[str]) -> bool:
        """A member may join if its protocol type is the group's and it shares an assignor."""
        if not self.members:
            return bool(member_protocol_type) and bool(protocols)
        return member_protocol_type == self.protocol_type and bool(
            protocols & self.candidate_protocols()
        )

    def candidate_protocols(self) -> set[str]:
        protocols: set[str] | None = None
        for member in self.members.values():
            protocols = member.protocols() if protocols is None else protocols & member.protocols()
        return protocols or set()

    def select_protocol(self) -> str:
        """Each member votes for its preferred candidate; the most votes win (Kafka's
        ``selectProtocol``; ties go to the first protocol that reached the count)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY)

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        """What the leader gets in its JoinGroup response: every member's subscription."""
        if self.protocol_name is None:
            raise IllegalStateError(
                f"group {self.group_id}: member metadata asked before a protocol was chosen")
        return [
            (m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        ]

    def summary(self) -> dict[str, Any]:
        """DescribeGroups' view: protocol data and member assignments only when Stable."""
        stable = self.is_state(GroupState.STABLE)
        return {
            "group_state": self.state.value,
            "protocol_type": self.protocol_type or "",
            "protocol_data": (self.protocol_name or "") if stable else "",
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "member_metadata": m.metadata(self.protocol_name)
                    if stable and self.protocol_name else b"",
                    "member_assignment": m.assignment if stable else b"",
                }
                for m in self.members.values()
            ],
        }

    def __repr__(self) -> str:
        return (
            f"GroupMetadata({self.group_id!r}, {self.state.value}, "
            f"generation={self.generation_id}, members={list(self.members)})"
        )
