"""The group coordinator: committed offsets and the classic group protocol (Kafka's
``GroupCoordinator``).

Offsets.  Kafka keeps committed offsets in the replicated ``__consumer_offsets`` topic and a
cache in memory; so does this broker, through
:class:`~kafkacore.broker.group.group_metadata_manager.GroupMetadataManager`.  The coordinator of a
group is the leader of the group's partition of that topic; every request for a group this broker
does not coordinate (any more, or not yet) gets NOT_COORDINATOR (or
COORDINATOR_LOAD_IN_PROGRESS while the partition loads) and the client looks the coordinator up
again.  An OffsetCommit is answered when the in-sync replicas have it.

Membership.  JoinGroup, SyncGroup, Heartbeat and LeaveGroup move each group through the states of
:class:`~kafkacore.broker.group.group_metadata.GroupState`.  Two purgatories hold what waits: the
rebalance purgatory a group's ``DelayedJoin`` (members rejoining), the heartbeat purgatory each
member's ``DelayedHeartbeat`` (its session).  Each generation is written to ``__consumer_offsets``
when its assignment is set (SyncGroup is answered once the replicas have it) and when the group
empties; a new coordinator loads it, and the members carry on without rejoining.
Static membership (KIP-345, ``group.instance.id``) is not implemented in a classic group: such a
member is treated as a dynamic one (a consumer group's classic members are static).  The groups of the consumer protocol (KIP-848) are
:class:`~kafkacore.broker.group.consumer_group_coordinator.ConsumerGroupCoordinator`'s; offset commits,
DeleteGroups, OffsetDelete and ListGroups here ask it about them, and the classic requests of a
consumer group's classic members go to it (KIP-848's migration).  See ``docs/broker/groups.rst``.
"""

from __future__ import annotations

import functools
import logging
import struct
import threading
import time
import uuid
from collections.abc import Callable

from kafkacore.broker.group.consumer_group import ConsumerGroup
from kafkacore.broker.group.consumer_group_coordinator import (
    ClassicGroupMember,
    ConsumerGroupCoordinator,
)
from kafkacore.broker.group.delayed_group_operations import (
    DelayedHeartbeat,
    DelayedJoin,
    InitialDelayedJoin,
    group_join_key,
    member_key,
)
from kafkacore.broker.group.group_metadata import (
    GroupMetadata,
    GroupState,
    JoinCallback,
    JoinGroupResult,
    MemberMetadata,
    SyncCallback,
    SyncGroupResult,
)
from kafkacore.broker.group.group_metadata_manager import (
    GroupMetadataManager,
    GroupRecord,
    MemberRecord,
    OffsetAndMetadata,
    group_metadata_key,
    group_metadata_value,
)
from kafkacore.broker.server_common.purgatory import DelayedOperationPurgatory
from kafkacore.errors import Errors, IllegalStateError

log = logging.getLogger(__name__)

#: The member id of a member that has none yet (Kafka's ``JoinGroupRequest.UNKNOWN_MEMBER_ID``).
UNKNOWN_MEMBER = ""

#: Kafka's defaults: ``group.min.session.timeout.ms``, ``group.max.session.timeout.ms``,
#: ``group.initial.rebalance.delay.ms``, ``group.max.size``.
GROUP_MIN_SESSION_TIMEOUT_MS = 6000
GROUP_MAX_SESSION_TIMEOUT_MS = 1800000
GROUP_INITIAL_REBALANCE_DELAY_MS = 3000
GROUP_MAX_SIZE = 2**31 - 1
#: How long a new member's first join may wait before it is dropped (``NewMemberJoinTimeoutMs``).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

#: Kafka's ``offset.metadata.max.bytes`` default.
OFFSET_METADATA_MAX_BYTES = 4096

#: How long a caller without a callback waits for a commit (``offsets.commit.timeout.ms``
#: bounds the append; this bounds the wait for its answer).
COMMIT_WAIT_S = 60.0

class GroupCoordinator:
    """The groups whose ``__consumer_offsets`` partition this broker leads."""

    def __init__(
        self,
        group_metadata_manager: GroupMetadataManager,
        offset_metadata_max_bytes: int = OFFSET_METADATA_MAX_BYTES,
        group_min_session_timeout_ms: int = GROUP_MIN_SESSION_TIMEOUT_MS,
        group_max_session_timeout_ms: int = GROUP_MAX_SESSION_TIMEOUT_MS,
        group_initial_rebalance_delay_ms: int = GROUP_INITIAL_REBALANCE_DELAY_MS,
        group_max_size: int = GROUP_MAX_SIZE,
        broker_id: int = 0,
        consumer_groups: ConsumerGroupCoordinator | None = None,
    ) -> None:
        self.group_manager = group_metadata_manager
        self.offset_metadata_max_bytes = offset_metadata_max_bytes
        self.group_min_session_timeout_ms = group_min_session_timeout_ms
        self.group_max_session_timeout_ms = group_max_session_timeout_ms
        self.group_initial_rebalance_delay_ms = group_initial_rebalance_delay_ms
        self.group_max_size = group_max_size
        self.broker_id = broker_id
        self._groups: dict[str, GroupMetadata] = {}
        # Lock order: leaf (never held while taking a group's lock). Guards _groups.
        self._groups_lock = threading.Lock()
        self.heartbeat_purgatory: DelayedOperationPurgatory | None = None
        self.rebalance_purgatory: DelayedOperationPurgatory | None = None
        #: the groups of the consumer group protocol (KIP-848)
        self.consumer_groups = consumer_groups

    # -- life cycle --------------------------------------------------------------------------

    def startup(self) -> None:
        self.heartbeat_purgatory = DelayedOperationPurgatory("Heartbeat", broker_id=self.broker_id)
        self.rebalance_purgatory = DelayedOperationPurgatory("Rebalance", broker_id=self.broker_id)
        self.group_manager.add_resign_listener(self._on_resigned)
        self.group_manager.add_load_listener(self._on_loaded)
        if self.consumer_groups is not None:
            self.consumer_groups.startup(self.heartbeat_purgatory)
            self.consumer_groups.to_classic_group = self._classic_group_from
            self.group_manager.add_resign_listener(self.consumer_groups.on_resigned)
            self.group_manager.add_consumer_group_load_listener(self.consumer_groups.on_loaded)
        self.group_manager.startup()

    def shutdown(self) -> None:
        self.group_manager.shutdown()
        for purgatory in (self.heartbeat_purgatory, self.rebalance_purgatory):
            if purgatory is not None:
                purgatory.shutdown()
        with self._groups_lock:
            groups = list(self._groups.values())
            self._groups.clear()
        for group in groups:  # parked requests get an answer they retry on (Kafka's onResignation)
            with group.lock:
                self._fail_waiting_members(group, Errors.COORDINATOR_NOT_AVAILABLE)
                group.state = GroupState.DEAD

    def _on_resigned(self, partition: int) -> None:
        """Another broker leads the offsets partition now: its groups leave this coordinator;
        members parked in JoinGroup or SyncGroup get NOT_COORDINATOR and find the new one."""
        with self._groups_lock:
            gone = [g for g in self._groups.values()
                    if self.group_manager.partition_for(g.group_id) == partition]
            for group in gone:
                del self._groups[group.group_id]
        for group in gone:
            with group.lock:
                self._fail_waiting_members(group, Errors.NOT_COORDINATOR)
                group.state = GroupState.DEAD

    def _on_loaded(self, partition: int, records: dict[str, GroupRecord]) -> None:
        """The offsets partition was loaded: its groups come back as last stored, Stable with
        their members, generation and assignments (Empty if they had none), and each member's
        session starts again from now (Kafka's ``onGroupLoaded``), so members carry on
        heartbeating without a rebalance."""
        loaded = [_group_from_record(group_id, record) for group_id, record in records.items()]
        with self._groups_lock:
            for group in loaded:
                self._groups[group.group_id] = group
        for group in loaded:
            with group.lock:
                for member in group.members.values():
                    self._complete_and_schedule_next_heartbeat_expiration(group, member)
        if loaded:
            log.info("broker %d: restored %d groups of offsets partition %d", self.broker_id,
                     len(loaded), partition)

    def _store_group(self, group: GroupMetadata, callback: Callable[[int], None]) -> None:
        """Write the group's current generation (called under its lock; ``callback(error)``
        once the in-sync replicas have it, Kafka's ``storeGroup``)."""
        self.group_manager.store_group(group.group_id, self._group_record(group), callback)

    @staticmethod
    def _group_record(group: GroupMetadata) -> GroupRecord:
        return GroupRecord(
            group.protocol_type or "", group.generation_id, group.protocol_name, group.leader_id,
            int(time.time() * 1000),
            tuple(MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                               m.rebalance_timeout_ms, m.session_timeout_ms,
                               m.metadata(group.protocol_name) if group.protocol_name else b"",
                               m.assignment)
                  for m in group.members.values()))

    def validate_group_status(self, group_id: str, allow_empty: bool = False) -> int:
        """Kafka's ``validateGroupStatus``: INVALID_GROUP_ID, NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS or NONE.  ``allow_empty``: OffsetFetch and DescribeGroups
        accept the empty group id (Kafka's ``isValidGroupId``, for old clients)."""
        if not group_id and not allow_empty:
            return Errors.INVALID_GROUP_ID
        return self.group_manager.group_status(group_id)

    # -- OffsetCommit --------------------------------------------------------------------------

    def handle_commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        offsets: dict[tuple[str, int], OffsetAndMetadata],
        member_id: str = UNKNOWN_MEMBER,
        response_callback: Callable[[dict[tuple[str, int], int]], None] | None = None,
        producer: tuple[int, int] | None = None,
        api_version: int | None = None,
        group_instance_id: str | None = None,
    ) -> dict[tuple[str, int], int] | None:
        """Store ``offsets`` for ``group_id``: the error code of each partition, given to
        ``response_callback`` once the offsets topic's in-sync replicas have the commit (from
        whichever thread completes it).  Without a callback, waits (bounded) and returns them.

        A member commits with its generation and member id, checked against the group's
        (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID: a member that was dropped must rejoin before its
        offsets count).  Generation -1 and no member id is a group that "is only using Kafka to
        store offsets", allowed while the group has no members.

        A static member's commit with the member id of an older incarnation is
        FENCED_INSTANCE_ID.  ``producer`` (id, epoch): TxnOffsetCommit, a commit that counts only once its
        transaction commits (Kafka's ``handleTxnCommitOffsets``).  ``api_version``: the
        OffsetCommit's (v9+ answers GROUP_ID_NOT_FOUND for a membership of no group, and a
        consumer group's member must use v9+); None for TxnOffsetCommit.
        """
        if response_callback is None:
            return self._wait_for_commit(group_id, generation_id, offsets, member_id)
        status = self.validate_group_status(group_id)
        if status != Errors.NONE:
            response_callback(dict.fromkeys(offsets, status))
            return None
        consumer_group = (self.consumer_groups.group(group_id)
                          if self.consumer_groups is not None else None)
        if consumer_group is not None:  # KIP-848: the member commits with its member epoch
            if self.consumer_groups is None:
                raise IllegalStateError("a consumer group without the consumer group coordinator")
            error = self.consumer_groups.validate_offset_commit(consumer_group, member_id,
                                                                generation_id, api_version)
            if error != Errors.NONE:
                response_callback(dict.fromkeys(offsets, error))
                return None
            self._store_offsets(group_id, offsets, response_callback, producer)
            return None
        group = self._get_group(group_id)
        if group is None:
            if generation_id >= 0:  # a membership this coordinator never handed out
                response_callback(dict.fromkeys(
                    offsets, Errors.GROUP_ID_NOT_FOUND if api_version is not None
                    and api_version >= 9 else Errors.ILLEGAL_GENERATION))
                return None
            self._store_offsets(group_id, offsets, response_callback, producer)
            return None
        with group.lock:
            error = Errors.FENCED_INSTANCE_ID if group.is_static_member_fenced(
                group_instance_id, member_id) else self._validate_offset_commit(
                group, generation_id, member_id)
            if error != Errors.NONE:
                response_callback(dict.fromkeys(offsets, error))
                return None
            if group.has(member_id):  # a commit is a sign of life too
                self._complete_and_schedule_next_heartbeat_expiration(group, group.get(member_id))
        # The append is not made under the group's lock: its answer may come from a thread that
        # holds another lock (the purgatory's), and nothing here needs the group any more.
        self._store_offsets(group_id, offsets, response_callback, producer)
        return None

    def _wait_for_commit(self, group_id: str, generation_id: int,
                         offsets: dict[tuple[str, int], OffsetAndMetadata],
                         member_id: str) -> dict[tuple[str, int], int]:
        done = threading.Event()
        answer: dict[tuple[str, int], int] = {}

        def callback(errors: dict[tuple[str, int], int]) -> None:
            answer.update(errors)
            done.set()

        self.handle_commit_offsets(group_id, generation_id, offsets, member_id, callback)
        if not done.wait(COMMIT_WAIT_S):
            raise TimeoutError(f"group {group_id}: commit not answered in {COMMIT_WAIT_S} s")
        return answer

    @staticmethod
    def _validate_offset_commit(group: GroupMetadata, generation_id: int, member_id: str) -> int:
        if group.is_state(GroupState.DEAD):
            return Errors.NOT_COORDINATOR  # unloaded (another broker leads its partition now)
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER:
            if not group.has(member_id):
                return Errors.UNKNOWN_MEMBER_ID
            if generation_id != group.generation_id:
                return Errors.ILLEGAL_GENERATION
            if group.is_state(GroupState.COMPLETING_REBALANCE):
                return Errors.REBALANCE_IN_PROGRESS  # the new assignment is not known yet
            return Errors.NONE
        if not group.is_state(GroupState.EMPTY):
            return Errors.UNKNOWN_MEMBER_ID  # only members commit into a group that has members
        return Errors.NONE

    def _store_offsets(
        self, group_id: str, offsets: dict[tuple[str, int], OffsetAndMetadata],
        response_callback: Callable[[dict[tuple[str, int], int]], None],
        producer: tuple[int, int] | None = None,
    ) -> None:
        errors: dict[tuple[str, int], int] = {}
        accepted = {}
        for tp, value in offsets.items():
            metadata = value.metadata
            if metadata is not None and len(metadata.encode()) > self.offset_metadata_max_bytes:
                errors[tp] = Errors.OFFSET_METADATA_TOO_LARGE
                continue
            if value.commit_timestamp_ms < 0:
                value = OffsetAndMetadata(value.offset, value.leader_epoch, metadata,
                                          int(time.time() * 1000))
            accepted[tp] = value

        def appended(results: dict[tuple[str, int], int]) -> None:
            response_callback({**errors, **results})

        self.group_manager.store_offsets(group_id, accepted, appended, producer)

    # -- OffsetFetch ---------------------------------------------------------------------------

    def handle_fetch_offsets(
        self, group_id: str, partitions: list[tuple[str, int]] | None = None
    ) -> tuple[int, dict[tuple[str, int], OffsetAndMetadata | None]]:
        """(error, the committed offset of each partition (None: nothing committed)).

        ``partitions=None`` asks for every partition the group has committed (OffsetFetch v2+
        with null topics).  The error is NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS when
        this broker cannot answer for the group (then no offsets).
        """
        status = self.validate_group_status(group_id, allow_empty=True)
        if status != Errors.NONE:
            return status, {}
        return Errors.NONE, self.group_manager.get_offsets(group_id, partitions)

    def validate_offset_fetch(self, group_id: str, member_id: str | None,
                              member_epoch: int) -> int:
        """OffsetFetch v9+'s member check (Kafka's ``Group.validateOffsetFetch``): only a
        consumer group's members are checked; a classic group answers everyone."""
        consumer_group = (self.consumer_groups.group(group_id)
                          if self.consumer_groups is not None else None)
        if consumer_group is None:
            return Errors.NONE
        if self.consumer_groups is None:
            raise IllegalStateError("a consumer group without the consumer group coordinator")
        return self.consumer_groups.validate_offset_fetch(consumer_group, member_id,
                                                          member_epoch)

    # -- groups ---------------------------------------------------------------------------------

    def _get_group(self, group_id: str) -> GroupMetadata | None:
        with self._groups_lock:
            return self._groups.get(group_id)

    def _get_or_create_group(self, group_id: str) -> GroupMetadata:
        with self._groups_lock:
            group = self._groups.get(group_id)
            if group is None:
                group = self._groups[group_id] = GroupMetadata(group_id)
            return group

    def _purgatories(self) -> tuple[DelayedOperationPurgatory, DelayedOperationPurgatory]:
        if self.heartbeat_purgatory is None or self.rebalance_purgatory is None:
            raise RuntimeError("GroupCoordinator is not started")
        return self.heartbeat_purgatory, self.rebalance_purgatory

    def group(self, group_id: str) -> GroupMetadata | None:
        """The group's membership (for DescribeGroups, tests and tutorials); read under its lock."""
        return self._get_group(group_id)

    # -- classic and consumer groups under one id (KIP-848's migration) ------------------------

    def _consumer_group_with_members(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group that answers this id's classic requests: one with members."""
        if self.consumer_groups is None:
            return None
        group = self.consumer_groups.group(group_id)
        return group if group is not None and group.members else None

    def remove_empty_classic_group(self, group_id: str) -> None:
        """A consumer-protocol member joins where only an empty classic group is: the classic
        group goes (Kafka's ``maybeDeleteEmptyClassicGroup``), its committed offsets stay."""
        group = self._get_group(group_id)
        if group is None:
            return
        with group.lock:
            if group.members or group.pending_members or group.is_state(GroupState.DEAD):
                return
            group.state = GroupState.DEAD
            with self._groups_lock:
                if self._groups.get(group_id) is group:
                    del self._groups[group_id]
            self.group_manager.store_group(group_id, None, lambda error: None)

    def upgrade_to_consumer_group(self, group_id: str) -> bool:
        """Kafka's online upgrade (``validateOnlineUpgrade``, ``convertToConsumerGroup``): a
        member of the consumer protocol joins a classic group of consumers, which becomes a
        consumer group with its classic members in it.  Members parked in JoinGroup or
        SyncGroup are answered REBALANCE_IN_PROGRESS and rejoin, into the consumer group.
        False (the group stays classic) when ``group.consumer.migration.policy`` forbids it,
        the group is not of consumers, or it is larger than ``group.consumer.max.size``."""
        consumers = self.consumer_groups
        group = self._get_group(group_id)
        if consumers is None or group is None or not consumers.upgrade_enabled:
            return False
        with group.lock:
            if group.is_state(GroupState.DEAD) or group.protocol_type != "consumer" \
                    or len(group.members) > consumers.max_size:
                return False
            members = [ClassicGroupMember(
                m.member_id, m.client_id, m.client_host,
                m.rebalance_timeout_ms, m.session_timeout_ms, list(m.supported_protocols),
                m.metadata(group.protocol_name) if group.protocol_name in m.protocols()
                else m.supported_protocols[0][1], m.assignment, m.group_instance_id)
                for m in group.members.values()]
            # The classic group's tombstone goes in the consumer group's first batch: a replay
            # never has both groups.
            if not consumers.adopt_classic_group(group_id, group.generation_id, members,
                                                 [(group_metadata_key(group_id), None)]):
                return False
            self._fail_waiting_members(group, Errors.REBALANCE_IN_PROGRESS)
            group.state = GroupState.DEAD
            with self._groups_lock:
                if self._groups.get(group_id) is group:
                    del self._groups[group_id]
        return True

    def _classic_group_from(self, consumer_group: ConsumerGroup,
                            leaving_member_id: str) -> list[tuple[bytes, bytes | None]] | None:
        """Kafka's ``ClassicGroup.fromConsumerGroup`` (the downgrade; called under the consumer
        group's lock): the classic members, with their protocols and current partitions, form
        a classic group at the group epoch as generation, which rebalances at once so that its
        leader assigns again.  Returns its record; None (the group stays a consumer group) if
        it would exceed ``group.max.size`` or its members share no protocol."""
        if self.consumer_groups is None:
            raise IllegalStateError("a consumer group without the consumer group coordinator")
        staying = [m for m in consumer_group.members.values() if m.member_id != leaving_member_id]
        if len(staying) > self.group_max_size:
            return None
        common = set.intersection(*({name for name, _ in m.classic.supported_protocols}
                                    for m in staying if m.classic is not None))
        if not common:  # no protocol every member speaks: it stays a consumer group
            return None
        group = GroupMetadata(consumer_group.group_id, GroupState.STABLE)
        group.generation_id = consumer_group.group_epoch
        for m in staying:
            if m.classic is None:
                raise IllegalStateError(
                    f"member {m.member_id}: no classic protocols to join a classic group with")
            member = MemberMetadata(
                m.member_id, None, m.client_id, m.client_host,
                m.rebalance_timeout_ms if m.rebalance_timeout_ms > 0
                else m.classic.session_timeout_ms,
                m.classic.session_timeout_ms, "consumer", list(m.classic.supported_protocols))
            member.assignment = self.consumer_groups.classic_assignment(consumer_group, m)
            group.add(member)
        group.protocol_name = group.select_protocol()
        record = self._group_record(group)
        with self._groups_lock:
            self._groups[group.group_id] = group
        with group.lock:
            for member in group.members.values():
                self._complete_and_schedule_next_heartbeat_expiration(group, member)
            self._prepare_rebalance(group, "downgraded from a consumer group")
        return [(group_metadata_key(group.group_id), group_metadata_value(record))]

    # -- JoinGroup ------------------------------------------------------------------------------

    def handle_join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        response_callback: JoinCallback,
    ) -> None:
        """Kafka's ``handleJoinGroup``: the callback is called once, now or when the rebalance
        completes (the request is parked in the group meanwhile)."""
        _, rebalance_purgatory = self._purgatories()
        status = self.validate_group_status(group_id)
        if status != Errors.NONE:
            response_callback(JoinGroupResult(member_id, status))
            return
        if not (self.group_min_session_timeout_ms <= session_timeout_ms
                <= self.group_max_session_timeout_ms):
            response_callback(JoinGroupResult(member_id, Errors.INVALID_SESSION_TIMEOUT))
            return
        if rebalance_timeout_ms < 0:  # v0 had none: the session timeout stands in
            rebalance_timeout_ms = session_timeout_ms
        if self._consumer_group_with_members(group_id) is not None:
            # A group of the consumer protocol (KIP-848) takes classic members in.
            if self.consumer_groups is None:
                raise IllegalStateError("a consumer group without the consumer group coordinator")
            self.consumer_groups.classic_join(
                group_id, member_id, require_known_member_id, client_id,
                client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                response_callback, instance_id=group_instance_id)
            return
        if self.consumer_groups is not None and self.consumer_groups.has_group(group_id):
            # An empty consumer group gives its id to the classic group (Kafka's
            # ``maybeDeleteEmptyConsumerGroup``): one group per id.
            self.consumer_groups.delete_group(group_id)
        is_unknown_member = member_id == UNKNOWN_MEMBER
        group = self._get_or_create_group(group_id) if is_unknown_member else self._get_group(
            group_id)
        if group is None:  # a known member id, but no group: it was removed meanwhile
            response_callback(JoinGroupResult(member_id, Errors.UNKNOWN_MEMBER_ID))
            return
        with group.lock:
            if group.is_state(GroupState.DEAD):
                # Removed between our look-up and our lock: the client looks the coordinator up
                # again and retries.
                response_callback(JoinGroupResult(member_id, Errors.COORDINATOR_NOT_AVAILABLE))
                return
            if not group.supports_protocols(protocol_type, {name for name, _ in protocols}):
                response_callback(JoinGroupResult(member_id, Errors.INCONSISTENT_GROUP_PROTOCOL))
                return
            if is_unknown_member:
                self._do_new_member_join_group(
                    group, group_instance_id, require_known_member_id, client_id, client_host,
                    rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                    response_callback)
            else:
                self._do_current_member_join_group(
                    group, member_id, group_instance_id, client_id, client_host,
                    rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                    response_callback)
            # A join may have been the last one the DelayedJoin waited for.
            if group.is_state(GroupState.PREPARING_REBALANCE):
                rebalance_purgatory.check_and_complete(group_join_key(group.group_id))

    def _do_new_member_join_group(
        self, group: GroupMetadata, group_instance_id: str | None, require_known_member_id: bool,
        client_id: str, client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
        protocol_type: str, protocols: list[tuple[str, bytes]], response_callback: JoinCallback,
    ) -> None:
        if len(group.members) + len(group.pending_members) >= self.group_max_size:
            response_callback(JoinGroupResult(UNKNOWN_MEMBER, Errors.GROUP_MAX_SIZE_REACHED))
            return
        new_member_id = f"{client_id}-{uuid.uuid4()}"
        if group_instance_id is not None:
            # KIP-345: the instance id names the member, so no MEMBER_ID_REQUIRED round; a
            # restarted one takes its own place back.
            old_member_id = group.current_static_member(group_instance_id)
            if old_member_id is not None:
                self._update_static_member_and_rebalance(
                    group, old_member_id, new_member_id, group_instance_id, protocols,
                    rebalance_timeout_ms, session_timeout_ms, response_callback)
                return
        elif require_known_member_id:
            # KIP-394: hand out the id first, so that a client that dies before it joins leaves
            # no member behind, only a pending id that expires after the session timeout.
            group.pending_members.add(new_member_id)
            self._add_pending_member_expiration(group, new_member_id, session_timeout_ms)
            response_callback(JoinGroupResult(new_member_id, Errors.MEMBER_ID_REQUIRED))
            return
        self._add_member_and_rebalance(
            group, new_member_id, group_instance_id, client_id, client_host,
            rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, response_callback)

    def _do_current_member_join_group(
        self, group: GroupMetadata, member_id: str, group_instance_id: str | None,
        client_id: str, client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
        protocol_type: str, protocols: list[tuple[str, bytes]], response_callback: JoinCallback,
    ) -> None:
        if group.is_pending_member(member_id):  # the second JoinGroup of KIP-394
            self._add_member_and_rebalance(
                group, member_id, group_instance_id, client_id, client_host,
                rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                response_callback)
            return
        if group.is_static_member_fenced(group_instance_id, member_id):
            response_callback(JoinGroupResult(member_id, Errors.FENCED_INSTANCE_ID))
            return
        if not group.has(member_id) or (group_instance_id is not None and
                                        group.current_static_member(group_instance_id) is None):
            response_callback(JoinGroupResult(member_id, Errors.UNKNOWN_MEMBER_ID))
            return
        member = group.get(member_id)
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                              session_timeout_ms, response_callback)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # The join response was lost: send the same generation again.
                response_callback(self._join_result(group, member))
            else:
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, response_callback)
        elif state is GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                # The leader rejoining (e.g. the topics' partitions changed) or a new
                # subscription: a new generation.
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, response_callback)
            else:
                response_callback(self._join_result(group, member))
        else:  # Empty or Dead: this member is not here
            response_callback(JoinGroupResult(member_id, Errors.UNKNOWN_MEMBER_ID))

    def _join_result(self, group: GroupMetadata, member: MemberMetadata) -> JoinGroupResult:
        """The current generation as ``member`` sees it: only the leader gets the members."""
        return JoinGroupResult(
            member_id=member.member_id,
            error=Errors.NONE,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader_id=group.leader_id or "",
            members=group.current_member_metadata() if group.is_leader(member.member_id) else [],
        )

    def _add_member_and_rebalance(
        self, group: GroupMetadata, member_id: str, group_instance_id: str | None,
        client_id: str, client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
        protocol_type: str, protocols: list[tuple[str, bytes]], response_callback: JoinCallback,
    ) -> None:
        member = MemberMetadata(member_id, group_instance_id, client_id, client_host,
                                rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols)
        member.is_new = True
        if group.is_state(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True  # the InitialDelayedJoin waits once more
        group.add(member, response_callback)
        # A new member that never completes its join is dropped after this long (not the
        # session timeout: the join itself may legitimately take up to the rebalance timeout).
        self._complete_and_schedule_next_expiration(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"adding new member {member_id}")

    def _update_member_and_rebalance(
        self, group: GroupMetadata, member: MemberMetadata, protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int, session_timeout_ms: int, response_callback: JoinCallback,
    ) -> None:
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms,
                            response_callback)
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined")

    def _update_static_member_and_rebalance(
        self, group: GroupMetadata, old_member_id: str, new_member_id: str,
        group_instance_id: str, protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
        session_timeout_ms: int, response_callback: JoinCallback,
    ) -> None:
        """Kafka's ``updateStaticMemberAndRebalance``: a static member that restarted (it
        joins with its instance id and no member id) replaces its old self.  In a Stable group
        whose protocol it does not change, nobody else moves: the group is stored with the new
        member id and the member answered at the current generation, its old assignment to be
        fetched by SyncGroup.  The answer names the leader as it was, so that a restarted
        leader does not compute an assignment a Stable group would not hand out."""
        current_leader = group.leader_id or ""
        member = group.replace_static_member(group_instance_id, old_member_id, new_member_id)
        # the old id's DelayedHeartbeat finds no such member and expires without effect
        self._complete_and_schedule_next_heartbeat_expiration(group, member)
        old_protocols = member.supported_protocols
        old_timeouts = (member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms,
                            response_callback)
        if group.is_state(GroupState.STABLE):
            if group.select_protocol() != group.protocol_name:
                self._maybe_prepare_rebalance(
                    group, f"static member {group_instance_id} rejoined with other protocols")
                return

            def stored(error: int) -> None:
                with group.lock:
                    if error == Errors.NONE:
                        group.maybe_invoke_join_callback(member, JoinGroupResult(
                            new_member_id, Errors.NONE, group.generation_id,
                            group.protocol_type, group.protocol_name, current_leader))
                        return
                    log.info("group %s: storing static member %s's new member id failed with"
                             " %d; the old one stays", group.group_id, group_instance_id, error)
                    group.maybe_invoke_join_callback(member, JoinGroupResult(
                        UNKNOWN_MEMBER, error, group.generation_id, group.protocol_type,
                        group.protocol_name, current_leader))
                    member.supported_protocols = old_protocols
                    member.rebalance_timeout_ms, member.session_timeout_ms = old_timeouts
                    if group.current_static_member(group_instance_id) == new_member_id:
                        self._complete_and_schedule_next_heartbeat_expiration(
                            group, group.replace_static_member(group_instance_id,
                                                               new_member_id, old_member_id))

            self._store_group(group, stored)
        elif group.is_state(GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(
                group, f"static member {group_instance_id} rejoined during the sync")
        # PreparingRebalance: it waits with the others for the join phase to end

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        _, rebalance_purgatory = self._purgatories()
        if group.is_state(GroupState.COMPLETING_REBALANCE):
            # Members waiting in SyncGroup will never get this generation's assignment.
            self._reset_and_propagate_assignment_error(group, Errors.REBALANCE_IN_PROGRESS)
        delayed_rebalance: DelayedJoin
        if group.is_state(GroupState.EMPTY):
            delay = self.group_initial_rebalance_delay_ms
            delayed_rebalance = InitialDelayedJoin(
                self, rebalance_purgatory, group, delay, delay,
                max(group.rebalance_timeout_ms() - delay, 0))
        else:
            delayed_rebalance = DelayedJoin(self, group, group.rebalance_timeout_ms())
        log.info("preparing to rebalance group %s from state %s with old generation %d (%s)",
                 group.group_id, group.state.value, group.generation_id, reason)
        group.transition_to(GroupState.PREPARING_REBALANCE)
        rebalance_purgatory.try_complete_else_watch(
            delayed_rebalance, [group_join_key(group.group_id)])

    # -- the DelayedJoin's decisions -------------------------------------------------------------

    def try_complete_join(self, group: GroupMetadata, force_complete: Callable[[], bool]) -> bool:
        with group.lock:
            if group.has_all_members_joined():
                return force_complete()
            return False

    def on_complete_join(self, group: GroupMetadata) -> None:
        """The rebalance's join phase is over: drop who did not rejoin, start a generation."""
        _, rebalance_purgatory = self._purgatories()
        with group.lock:
            for member in group.not_yet_rejoined_members():
                log.info("group %s: member %s did not rejoin in time; removed",
                         group.group_id, member.member_id)
                self._remove_heartbeat_for_leaving_member(group, member)
                group.remove(member.member_id)
            if group.is_state(GroupState.DEAD):
                return
            if not group.maybe_elect_new_joined_leader() and group.members:
                # Nobody has rejoined yet, but some members are still within their session:
                # wait another rebalance timeout (their heartbeats expire them if they are gone).
                rebalance_purgatory.try_complete_else_watch(
                    DelayedJoin(self, group, group.rebalance_timeout_ms()),
                    [group_join_key(group.group_id)])
                return
            group.init_next_generation()
            if group.is_state(GroupState.EMPTY):
                log.info("group %s with generation %d is now empty", group.group_id,
                         group.generation_id)
                # A new coordinator must not bring the last members back (Kafka stores the
                # empty group too).
                group_id, generation = group.group_id, group.generation_id

                def stored(error: int) -> None:
                    if error != Errors.NONE:
                        log.info("group %s: storing empty generation %d failed with %d",
                                 group_id, generation, error)

                self._store_group(group, stored)
                return
            log.info("stabilized group %s generation %d with %d members", group.group_id,
                     group.generation_id, len(group.members))
            for member in list(group.members.values()):
                group.maybe_invoke_join_callback(member, self._join_result(group, member))
                self._complete_and_schedule_next_heartbeat_expiration(group, member)
                member.is_new = False

    # -- SyncGroup ------------------------------------------------------------------------------

    def handle_sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        group_assignment: dict[str, bytes],
        response_callback: SyncCallback,
        group_instance_id: str | None = None,
    ) -> None:
        """Kafka's ``handleSyncGroup``: followers wait (parked) for the leader's assignment."""
        self._purgatories()
        status = self.validate_group_status(group_id)
        if status != Errors.NONE:
            response_callback(SyncGroupResult(status))
            return
        consumer_group = self._consumer_group_with_members(group_id)
        if consumer_group is not None:  # a classic member of a consumer group
            if self.consumer_groups is None:
                raise IllegalStateError("a consumer group without the consumer group coordinator")
            response_callback(self.consumer_groups.classic_sync(
                consumer_group, member_id, generation_id, protocol_type, protocol_name,
                group_instance_id))
            return
        group = self._get_group(group_id)
        if group is None:
            response_callback(SyncGroupResult(Errors.UNKNOWN_MEMBER_ID))
            return
        with group.lock:
            error = Errors.NONE
            if group.is_state(GroupState.DEAD):
                error = Errors.COORDINATOR_NOT_AVAILABLE
            elif group.is_static_member_fenced(group_instance_id, member_id):
                error = Errors.FENCED_INSTANCE_ID
            elif not group.has(member_id):
                error = Errors.UNKNOWN_MEMBER_ID
            elif generation_id != group.generation_id:
                error = Errors.ILLEGAL_GENERATION
            elif (protocol_type is not None and protocol_type != group.protocol_type) or (
                    protocol_name is not None and protocol_name != group.protocol_name):
                error = Errors.INCONSISTENT_GROUP_PROTOCOL
            elif group.is_state(GroupState.EMPTY):
                error = Errors.UNKNOWN_MEMBER_ID
            elif group.is_state(GroupState.PREPARING_REBALANCE):
                error = Errors.REBALANCE_IN_PROGRESS
            if error != Errors.NONE:
                response_callback(SyncGroupResult(error))
                return
            member = group.get(member_id)
            if group.is_state(GroupState.COMPLETING_REBALANCE):
                member.awaiting_sync_callback = response_callback
                self._complete_and_schedule_next_heartbeat_expiration(group, member)
                if group.is_leader(member_id):
                    # Members the leader left out get an empty assignment, not a hang.
                    assignment = {m: group_assignment.get(m, b"") for m in group.members}
                    self._store_assignment(group, assignment)
            else:  # Stable: the assignment is known (a retried SyncGroup)
                self._complete_and_schedule_next_heartbeat_expiration(group, member)
                response_callback(SyncGroupResult(Errors.NONE, member.assignment,
                                                  group.protocol_type, group.protocol_name))

    def _store_assignment(self, group: GroupMetadata, assignment: dict[str, bytes]) -> None:
        """Kafka's ``doSyncGroup`` for the leader: the generation and its assignment are written
        to ``__consumer_offsets`` first; the members get their assignment once the in-sync
        replicas have it (so a new coordinator knows it), or the mapped error and the group
        rebalances."""
        generation = group.generation_id
        for member_id, member in group.members.items():
            member.assignment = assignment[member_id]

        def stored(error: int) -> None:
            with group.lock:
                # Another rebalance (or the group's unloading) may have come meanwhile.
                if (not group.is_state(GroupState.COMPLETING_REBALANCE)
                        or group.generation_id != generation):
                    return
                if error != Errors.NONE:
                    self._reset_and_propagate_assignment_error(group, error)
                    self._maybe_prepare_rebalance(
                        group, f"error {error} when storing the group's assignment")
                else:
                    self._set_and_propagate_assignment(group, assignment)

        self._store_group(group, stored)

    def _set_and_propagate_assignment(self, group: GroupMetadata,
                                      assignment: dict[str, bytes]) -> None:
        for member_id, member in group.members.items():
            member.assignment = assignment[member_id]
        self._propagate_assignment(group, Errors.NONE)
        group.transition_to(GroupState.STABLE)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            result = SyncGroupResult(error, member.assignment, group.protocol_type,
                                     group.protocol_name)
            if group.maybe_invoke_sync_callback(member, result):
                # The member heartbeats from now on; its session starts again.
                self._complete_and_schedule_next_heartbeat_expiration(group, member)

    # -- Heartbeat ------------------------------------------------------------------------------

    def handle_heartbeat(self, group_id: str, member_id: str, generation_id: int,
                         group_instance_id: str | None = None) -> int:
        """Kafka's ``handleHeartbeat``: the error code.  REBALANCE_IN_PROGRESS is how a member
        learns it must rejoin."""
        self._purgatories()
        status = self.validate_group_status(group_id)
        if status != Errors.NONE:
            return status
        consumer_group = self._consumer_group_with_members(group_id)
        if consumer_group is not None:  # a classic member of a consumer group
            if self.consumer_groups is None:
                raise IllegalStateError("a consumer group without the consumer group coordinator")
            return self.consumer_groups.classic_heartbeat(consumer_group, member_id,
                                                          generation_id, group_instance_id)
        group = self._get_group(group_id)
        if group is None:
            return Errors.UNKNOWN_MEMBER_ID
        with group.lock:
            if group.is_state(GroupState.DEAD):
                return Errors.COORDINATOR_NOT_AVAILABLE
            if group.is_static_member_fenced(group_instance_id, member_id):
                return Errors.FENCED_INSTANCE_ID
            if group.is_state(GroupState.EMPTY) or not group.has(member_id):
                return Errors.UNKNOWN_MEMBER_ID
            if generation_id != group.generation_id:
                return Errors.ILLEGAL_GENERATION
            member = group.get(member_id)
            self._complete_and_schedule_next_heartbeat_expiration(group, member)
            if group.is_state(GroupState.PREPARING_REBALANCE):
                return Errors.REBALANCE_IN_PROGRESS
            # Stable, or CompletingRebalance (a member may heartbeat between its join and sync).
            return Errors.NONE

    def _complete_and_schedule_next_heartbeat_expiration(
        self, group: GroupMetadata, member: MemberMetadata
    ) -> None:
        self._complete_and_schedule_next_expiration(group, member, member.session_timeout_ms)

    def _complete_and_schedule_next_expiration(
        self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int
    ) -> None:
        """Complete the member's current DelayedHeartbeat (it was satisfied) and start the next
        one: the session timeout counts from now."""
        heartbeat_purgatory, _ = self._purgatories()
        key = member_key(group.group_id, member.member_id)
        member.heartbeat_satisfied = True
        heartbeat_purgatory.check_and_complete(key)
        member.heartbeat_satisfied = False
        heartbeat_purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member.member_id, False, timeout_ms), [key])

    def _add_pending_member_expiration(self, group: GroupMetadata, member_id: str,
                                       timeout_ms: int) -> None:
        heartbeat_purgatory, _ = self._purgatories()
        heartbeat_purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member_id, True, timeout_ms),
            [member_key(group.group_id, member_id)])

    def _remove_heartbeat_for_leaving_member(self, group: GroupMetadata,
                                             member: MemberMetadata) -> None:
        heartbeat_purgatory, _ = self._purgatories()
        member.is_leaving = True
        heartbeat_purgatory.check_and_complete(member_key(group.group_id, member.member_id))

    # -- the DelayedHeartbeat's decisions --------------------------------------------------------

    def try_complete_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool,
                               force_complete: Callable[[], bool]) -> bool:
        with group.lock:
            if is_pending:
                # Complete (without expiring) once the pending id joined or was dropped.
                done = not group.is_pending_member(member_id)
            elif group.has(member_id):
                member = group.get(member_id)
                done = member.has_satisfied_heartbeat() or member.is_leaving
            else:
                done = True  # removed already
            return force_complete() if done else False

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None:
        """The session timeout passed without a heartbeat: the member is gone; rebalance."""
        with group.lock:
            if group.is_state(GroupState.DEAD):
                return
            if is_pending:
                if group.is_pending_member(member_id):
                    log.info("group %s: pending member %s expired", group.group_id, member_id)
                    self._remove_pending_member_and_update_group(group, member_id)
                return
            if not group.has(member_id):
                return
            member = group.get(member_id)
            if not member.has_satisfied_heartbeat():
                log.info("group %s: member %s failed to heartbeat within its session timeout "
                         "(%d ms); removed", group.group_id, member_id, member.session_timeout_ms)
                self._remove_member_and_update_group(group, member)

    # -- LeaveGroup -----------------------------------------------------------------------------

    def handle_leave_group(self, group_id: str, member_ids: list[str],
                           group_instance_ids: list[str | None] | None = None,
                           ) -> tuple[int, list[int]]:
        """Kafka's ``handleLeaveGroup`` (several members at once since v3): the top-level error
        and one error per member."""
        self._purgatories()
        status = self.validate_group_status(group_id)
        if status != Errors.NONE:
            return status, []
        consumer_group = self._consumer_group_with_members(group_id)
        if consumer_group is not None:  # classic members of a consumer group
            if self.consumer_groups is None:
                raise IllegalStateError("a consumer group without the consumer group coordinator")
            return Errors.NONE, self.consumer_groups.classic_leave(consumer_group, member_ids,
                                                                   group_instance_ids)
        group = self._get_group(group_id)
        if group is None:
            return Errors.NONE, [Errors.UNKNOWN_MEMBER_ID] * len(member_ids)
        with group.lock:
            if group.is_state(GroupState.DEAD):
                return Errors.COORDINATOR_NOT_AVAILABLE, []
            errors: list[int] = []
            instance_ids = group_instance_ids or [None] * len(member_ids)
            for member_id, instance_id in zip(member_ids, instance_ids, strict=False):
                if instance_id is not None:  # a static member, named by its instance id
                    current = group.current_static_member(instance_id)
                    if current is None:
                        errors.append(Errors.UNKNOWN_MEMBER_ID)
                        continue
                    if member_id not in (UNKNOWN_MEMBER, current):
                        errors.append(Errors.FENCED_INSTANCE_ID)
                        continue
                    member_id = current
                if group.is_pending_member(member_id):
                    self._remove_pending_member_and_update_group(group, member_id)
                    errors.append(Errors.NONE)
                elif not group.has(member_id):
                    errors.append(Errors.UNKNOWN_MEMBER_ID)
                else:
                    member = group.get(member_id)
                    log.info("group %s: member %s left", group.group_id, member_id)
                    self._remove_heartbeat_for_leaving_member(group, member)
                    self._remove_member_and_update_group(group, member)
                    errors.append(Errors.NONE)
            return Errors.NONE, errors

    def _remove_member_and_update_group(self, group: GroupMetadata,
                                        member: MemberMetadata) -> None:
        _, rebalance_purgatory = self._purgatories()
        # A member parked in JoinGroup learns it is out.
        group.maybe_invoke_join_callback(member, JoinGroupResult(member.member_id,
                                                                 Errors.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"removing member {member.member_id}")
        elif group.is_state(GroupState.PREPARING_REBALANCE):
            # One fewer member to wait for.
            rebalance_purgatory.check_and_complete(group_join_key(group.group_id))

    def _remove_pending_member_and_update_group(self, group: GroupMetadata,
                                                member_id: str) -> None:
        _, rebalance_purgatory = self._purgatories()
        group.remove(member_id)
        if group.is_state(GroupState.PREPARING_REBALANCE):
            rebalance_purgatory.check_and_complete(group_join_key(group.group_id))

    def _fail_waiting_members(self, group: GroupMetadata, error: int) -> None:
        for member in list(group.members.values()):
            group.maybe_invoke_join_callback(member, JoinGroupResult(member.member_id, error))
            group.maybe_invoke_sync_callback(member, SyncGroupResult(error))

    # -- DeleteGroups, OffsetDelete -------------------------------------------------------------

    def handle_delete_groups(self, group_ids: list[str],
                             callback: Callable[[dict[str, int]], None]) -> None:
        """Kafka's ``handleDeleteGroups``: an Empty group (or one that only holds offsets) goes
        Dead, its offsets and its record tombstoned; a group with members is NON_EMPTY_GROUP,
        one nobody knows GROUP_ID_NOT_FOUND.  ``callback({group: error})`` once the tombstones
        are on the in-sync replicas."""
        results: dict[str, int] = {}
        writes = [g for g in group_ids if self._delete_group_error(g, results) == Errors.NONE]
        if not writes:
            callback(results)
            return
        # Lock order: leaf. Guards this call's fan-in count.
        lock = threading.Lock()
        remaining = [len(writes)]

        def stored(group_id: str, error: int) -> None:
            with lock:
                results[group_id] = error
                remaining[0] -= 1
                if remaining[0]:
                    return
            callback(results)

        for group_id in writes:
            self.group_manager.delete_offsets(group_id, None, True,
                                              functools.partial(stored, group_id))

    def _delete_group_error(self, group_id: str, results: dict[str, int]) -> int:
        """Check ``group_id`` can be deleted and make it Dead (its answer, if not, in
        ``results``)."""
        error = self.validate_group_status(group_id)
        group = self._get_group(group_id) if error == Errors.NONE else None
        if (error == Errors.NONE and self.consumer_groups is not None
                and self.consumer_groups.has_group(group_id)):  # KIP-848's group
            error = self.consumer_groups.delete_group(group_id)
        elif error == Errors.NONE and group is None and not self.group_manager.has_offsets(
                group_id):
            error = Errors.GROUP_ID_NOT_FOUND
        elif group is not None:
            with group.lock:
                if group.is_state(GroupState.DEAD):
                    error = Errors.GROUP_ID_NOT_FOUND
                elif not group.is_state(GroupState.EMPTY):
                    error = Errors.NON_EMPTY_GROUP
                else:
                    group.transition_to(GroupState.DEAD)
            if error == Errors.NONE:
                with self._groups_lock:
                    if self._groups.get(group_id) is group:
                        del self._groups[group_id]
        if error != Errors.NONE:
            results[group_id] = error
        else:
            log.info("group %s: deleted", group_id)
        return error

    def handle_delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]],
        callback: Callable[[int, dict[tuple[str, int], int]], None],
    ) -> None:
        """Kafka's ``handleDeleteOffsets``: an Empty group's offsets go; a consumer group with
        members keeps those of the topics it subscribes to (GROUP_SUBSCRIBED_TO_TOPIC); another
        group with members is NON_EMPTY_GROUP.  ``callback(error, {partition: error})``."""
        error = self.validate_group_status(group_id)
        group = self._get_group(group_id) if error == Errors.NONE else None
        if error == Errors.NONE and group is None and not self.group_manager.has_offsets(
                group_id) and not (self.consumer_groups is not None
                                   and self.consumer_groups.has_group(group_id)):
            error = Errors.GROUP_ID_NOT_FOUND
        refused: dict[tuple[str, int], int] = {}
        if group is not None and error == Errors.NONE:
            with group.lock:
                if group.is_state(GroupState.DEAD):
                    error = Errors.GROUP_ID_NOT_FOUND
                elif not group.is_state(GroupState.EMPTY):
                    subscribed = subscribed_topics(group)
                    if subscribed is None:
                        error = Errors.NON_EMPTY_GROUP
                    else:
                        refused = {tp: Errors.GROUP_SUBSCRIBED_TO_TOPIC for tp in partitions
                                   if tp[0] in subscribed}
        if error == Errors.NONE and self.consumer_groups is not None:  # KIP-848's group
            subscribed_names = self.consumer_groups.subscribed_topic_names(group_id)
            refused.update({tp: Errors.GROUP_SUBSCRIBED_TO_TOPIC for tp in partitions
                            if tp[0] in subscribed_names})
        if error != Errors.NONE:
            callback(error, {})
            return
        deleted = [tp for tp in partitions if tp not in refused]
        self.group_manager.delete_offsets(
            group_id, deleted, False,
            lambda e: callback(Errors.NONE, {**dict.fromkeys(deleted, e), **refused}))

    # -- DescribeGroups, ListGroups ----------------------------------------------------------------

    def handle_describe_group(self, group_id: str) -> tuple[int, dict[str, object]]:
        """The group's summary; a group nobody knows is described as Dead (Kafka does too)."""
        status = self.validate_group_status(group_id, allow_empty=True)
        if status != Errors.NONE:
            return status, {"group_state": GroupState.DEAD.value, "protocol_type": "",
                            "protocol_data": "", "members": []}
        if self.consumer_groups is not None and self.consumer_groups.has_group(group_id):
            # Kafka: a group of the consumer protocol is not described here ("not a classic
            # group"); clients ask ConsumerGroupDescribe.
            return Errors.GROUP_ID_NOT_FOUND, {"group_state": GroupState.DEAD.value,
                                               "protocol_type": "", "protocol_data": "",
                                               "members": []}
        group = self._get_group(group_id)
        if group is None:
            known = self.group_manager.has_offsets(group_id)
            state = GroupState.EMPTY if known else GroupState.DEAD
            return Errors.NONE, {"group_state": state.value, "protocol_type": "",
                          "protocol_data": "", "members": []}
        with group.lock:
            return Errors.NONE, group.summary()

    def handle_list_groups(self) -> list[tuple[str, str, str]]:
        """(group id, protocol type, state) of every group: those with members and those that
        only hold committed offsets (Empty)."""
        with self._groups_lock:
            groups = list(self._groups.values())
        listed = {}
        for group in groups:
            with group.lock:
                if not group.is_state(GroupState.DEAD):
                    listed[group.group_id] = (group.group_id, group.protocol_type or "",
                                              group.state.value)
        if self.consumer_groups is not None:  # KIP-848's groups: protocol type "consumer"
            for group_id in self.consumer_groups.group_ids():
                consumer_group = self.consumer_groups.group(group_id)
                if consumer_group is not None:
                    with consumer_group.lock:
                        listed[group_id] = (group_id, "consumer", consumer_group.state().value)
        for group_id in self.group_manager.groups_with_offsets():
            listed.setdefault(group_id, (group_id, "", GroupState.EMPTY.value))
        return sorted(listed.values())

    def group_type(self, group_id: str) -> str:
        """ListGroups' group type (KIP-848): "consumer" for a group of the consumer protocol."""
        if self.consumer_groups is not None and self.consumer_groups.has_group(group_id):
            return "consumer"
        return "classic"


def subscribed_topics(group: GroupMetadata) -> set[str] | None:
    """The topics a consumer group's members subscribe to, read from their ConsumerProtocol
    subscriptions (int16 version, then an array of topic names); None if the group does not
    use the consumer protocol or a subscription cannot be read."""
    if group.protocol_type != "consumer" or not group.protocol_name:
        return None
    topics: set[str] = set()
    for member in group.members.values():
        data = member.metadata(group.protocol_name)
        try:
            (count,) = struct.unpack_from(">i", data, 2)
            pos = 6
            for _ in range(count):
                (length,) = struct.unpack_from(">h", data, pos)
                topics.add(data[pos + 2:pos + 2 + length].decode())
                pos += 2 + length
        except (struct.error, UnicodeDecodeError):
            return None
    return topics


def _group_from_record(group_id: str, record: GroupRecord) -> GroupMetadata:
    """Kafka's ``GroupMetadata.loadGroup``: Stable with the stored members, Empty without."""
    group = GroupMetadata(group_id, GroupState.STABLE if record.members else GroupState.EMPTY)
    group.generation_id = record.generation_id
    group.protocol_type = record.protocol_type or None
    group.protocol_name = record.protocol_name
    group.leader_id = record.leader_id
    for m in record.members:
        member = MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                m.rebalance_timeout_ms, m.session_timeout_ms,
                                record.protocol_type,
                                [(record.protocol_name or "", m.subscription)])
        member.assignment = m.assignment
        group.members[m.member_id] = member
        if m.group_instance_id is not None:
            group.static_members[m.group_instance_id] = m.member_id
    return group
