"""The consumer group protocol (KIP-848) on the coordinator: ConsumerGroupHeartbeat and
ConsumerGroupDescribe (the consumer-group half of Kafka 4's ``GroupMetadataManager``).

One heartbeat does everything a classic rebalance did in JoinGroup, SyncGroup and Heartbeat:

1. the member's subscription is updated; a new member, a leaving one, a changed subscription
   or a changed partition count of a subscribed topic bumps the **group epoch**;
2. when the group epoch is ahead of the **assignment epoch**, the server-side assignor
   (``uniform`` or ``range``, the member may ask with ``server_assignor``) computes every
   member's target assignment for the new epoch;
3. the member takes one step towards its target (:func:`~kafkacore.broker.group.consumer_group.
   reconcile`): revoke first, then the new **member epoch** with the partitions already free;
4. what changed is written to ``__consumer_offsets`` (the records of
   :mod:`kafkacore.broker.group.consumer_group_records`) and the answer waits until the in-sync
   replicas have it, so a new coordinator knows the group exactly as the members do.

A member that does not heartbeat within ``group.consumer.session.timeout.ms`` is removed,
as if it had left (its session is a delayed operation in the heartbeat purgatory).
See docs/broker/groups.rst.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkacore.broker.group import consumer_group_records as records
from kafkacore.broker.group import consumer_protocol
from kafkacore.broker.group.assignors import ASSIGNORS
from kafkacore.broker.group.consumer_group import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    Partitions,
    is_subset,
    reconcile,
)
from kafkacore.broker.group.group_metadata import (
    JoinCallback,
    JoinGroupResult,
    SyncGroupResult,
)
from kafkacore.broker.group.group_metadata_manager import GroupMetadataManager
from kafkacore.broker.group.regex import RegexError, compile_regex
from kafkacore.broker.metadata.metadata_cache import MetadataCache
from kafkacore.broker.server_common.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkacore.errors import Errors, IllegalStateError

log = logging.getLogger(__name__)


#: Kafka's defaults: ``group.consumer.heartbeat.interval.ms``,
#: ``group.consumer.session.timeout.ms``, ``group.consumer.max.size``.
CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS = 5000
CONSUMER_GROUP_SESSION_TIMEOUT_MS = 45000
CONSUMER_GROUP_MAX_SIZE = 2**31 - 1
#: Kafka 4's ``group.consumer.migration.policy`` default.
CONSUMER_GROUP_MIGRATION_POLICY = "bidirectional"


@dataclass(frozen=True)
class ClassicGroupMember:
    """What a consumer group takes of a classic group's member when it adopts the group."""

    member_id: str
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    #: its metadata of the group's protocol, and its assignment of the last SyncGroup
    metadata: bytes
    assignment: bytes
    instance_id: str | None = None


@dataclass(frozen=True)
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat's fields (None: unchanged since the last heartbeat)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Partitions | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1
    #: a JoinGroup of the classic protocol, answered from this group (KIP-848's migration)
    classic: ClassicMemberMetadata | None = None


class HeartbeatError(Exception):
    def __init__(self, error: int, message: str) -> None:
        super().__init__(message)
        self.error, self.message = error, message


HeartbeatCallback = Callable[[dict[str, Any]], None]


class DelayedConsumerSession(DelayedOperation):
    """A consumer group member's session: its next heartbeat completes it harmlessly; if none
    comes within the session timeout, the member is removed."""

    def __init__(self, coordinator: ConsumerGroupCoordinator, group: ConsumerGroup,
                 member_id: str, session_count: int, timeout_ms: int) -> None:
        super().__init__(timeout_ms, lock=group.lock)
        self.coordinator, self.group = coordinator, group
        self.member_id, self.session_count = member_id, session_count

    def try_complete(self) -> bool:
        member = self.group.members.get(self.member_id)
        if member is None or member.session_count != self.session_count or self.group.dead:
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        self.coordinator.on_session_expired(self.group, self.member_id, self.session_count)

    def on_complete(self) -> None:
        pass


class DelayedRevocation(DelayedOperation):
    """A member asked to revoke partitions has its rebalance timeout to do it; a member that
    still holds them then is removed, so that their new owners are not kept waiting for ever."""

    def __init__(self, coordinator: ConsumerGroupCoordinator, group: ConsumerGroup,
                 member_id: str, member_epoch: int, timeout_ms: int) -> None:
        super().__init__(timeout_ms, lock=group.lock)
        self.coordinator, self.group = coordinator, group
        self.member_id, self.member_epoch = member_id, member_epoch

    def revoking(self) -> bool:
        member = self.group.members.get(self.member_id)
        return (not self.group.dead and member is not None
                and member.state is MemberState.UNREVOKED_PARTITIONS
                and member.member_epoch == self.member_epoch)

    def try_complete(self) -> bool:
        return False if self.revoking() else self.force_complete()

    def on_expiration(self) -> None:
        self.coordinator.on_revocation_expired(self)

    def on_complete(self) -> None:
        pass


class DelayedClassicRejoin(DelayedOperation):
    """A classic member of a consumer group told to rejoin (JoinGroup) or, having joined, to
    sync (SyncGroup) has its rebalance timeout to do so (Kafka's join and sync timeouts); one
    that does not is removed, so that the partitions it waits for are not left unread."""

    def __init__(self, coordinator: ConsumerGroupCoordinator, group: ConsumerGroup,
                 member_id: str, step: str, timeout_ms: int) -> None:
        super().__init__(timeout_ms, lock=group.lock)
        self.coordinator, self.group = coordinator, group
        self.member_id, self.step = member_id, step

    def pending(self) -> bool:
        """Still the member's awaited step (under the group's lock)."""
        return (not self.group.dead and self.member_id in self.group.members
                and self.coordinator.awaited_step(self.group, self.member_id) is self)

    def try_complete(self) -> bool:
        return False if self.pending() else self.force_complete()

    def on_expiration(self) -> None:
        self.coordinator.on_classic_step_expired(self)

    def on_complete(self) -> None:
        pass


class ConsumerGroupCoordinator:
    """The consumer groups of the ``__consumer_offsets`` partitions this broker leads."""

    def __init__(self, group_manager: GroupMetadataManager, metadata_cache: MetadataCache,
                 heartbeat_interval_ms: int = CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS,
                 session_timeout_ms: int = CONSUMER_GROUP_SESSION_TIMEOUT_MS,
                 max_size: int = CONSUMER_GROUP_MAX_SIZE,
                 assignors: tuple[str, ...] = tuple(ASSIGNORS),
                 migration_policy: str = CONSUMER_GROUP_MIGRATION_POLICY) -> None:
        self.group_manager = group_manager
        #: ``group.consumer.migration.policy``: may a classic group become a consumer group
        #: (upgrade), and a consumer group of classic members go back (downgrade)
        self.upgrade_enabled = migration_policy in ("upgrade", "bidirectional")
        self.downgrade_enabled = migration_policy in ("downgrade", "bidirectional")
        #: set by the GroupCoordinator, which keeps the classic groups: installs the classic
        #: group a consumer group becomes (without the leaving member) and returns its record,
        #: or None when it may not
        self.to_classic_group: Callable[[ConsumerGroup, str], list[records.Record] | None] \
            | None = None
        self.metadata_cache = metadata_cache
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.session_timeout_ms = session_timeout_ms
        self.max_size = max_size
        self.assignors = {name: ASSIGNORS[name] for name in assignors}
        self._groups: dict[str, ConsumerGroup] = {}
        # Lock order: leaf (never held while taking a group's lock). Guards _groups.
        self._lock = threading.Lock()
        #: (group id, member id) -> the JoinGroup or SyncGroup a classic member owes (written
        #: under the group's lock)
        self._awaited: dict[tuple[str, str], DelayedClassicRejoin] = {}
        self.purgatory: DelayedOperationPurgatory | None = None

    # -- life cycle ----------------------------------------------------------------------------

    def startup(self, purgatory: DelayedOperationPurgatory) -> None:
        self.purgatory = purgatory

    def group(self, group_id: str) -> ConsumerGroup | None:
        with self._lock:
            return self._groups.get(group_id)

    def has_group(self, group_id: str) -> bool:
        return self.group(group_id) is not None

    def group_ids(self) -> list[str]:
        with self._lock:
            return list(self._groups)

    def on_loaded(self, partition: int, loaded: list[records.Record]) -> None:
        """Replay a loaded offsets partition's consumer group records; each member's session
        starts again from now."""
        groups: dict[str, ConsumerGroup] = {}
        for key, value in loaded:
            try:
                records.replay(groups, key, value)
            except Exception as exc:  # one bad record must not lose the partition
                log.warning("offsets partition %d: consumer group record unreadable (%s)",
                            partition, exc)
        with self._lock:
            self._groups.update(groups)
        for group in groups.values():
            with group.lock:
                for member in group.members.values():
                    self._schedule_session(group, member)
        if groups:
            log.info("restored %d consumer groups of offsets partition %d", len(groups),
                     partition)

    def on_resigned(self, partition: int) -> None:
        with self._lock:
            gone = [g for g in self._groups.values()
                    if self.group_manager.partition_for(g.group_id) == partition]
            for g in gone:
                del self._groups[g.group_id]
        for g in gone:
            with g.lock:
                g.dead = True
                for member_id in g.members:
                    self._awaited.pop((g.group_id, member_id), None)

    # -- ConsumerGroupHeartbeat ------------------------------------------------------------

    def heartbeat(self, req: HeartbeatRequest, may_describe: Callable[[str], bool],
                  callback: HeartbeatCallback) -> None:
        """Kafka's ``consumerGroupHeartbeat``: ``callback(response body)`` once the group's
        new records are on the in-sync replicas (at once when nothing changed)."""
        try:
            self._validate(req)
            status = self.group_manager.group_status(req.group_id)
            if status != Errors.NONE:
                raise HeartbeatError(status, f"not the coordinator of {req.group_id}")
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                response, to_store = self._leave(req)
            else:
                response, to_store = self._join_or_heartbeat(req, may_describe)
        except HeartbeatError as exc:
            callback(_error_response(exc.error, exc.message))
            return
        if not to_store:
            callback(response)
            return

        def stored(error: int) -> None:
            callback(response if error == Errors.NONE else
                     _error_response(error, "storing the group's records failed"))

        self.group_manager.store_records(req.group_id, to_store, stored)

    def _validate(self, req: HeartbeatRequest) -> None:
        """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
        def invalid(message: str) -> HeartbeatError:
            return HeartbeatError(Errors.INVALID_REQUEST, message)

        if not req.group_id:
            raise invalid("GroupId can't be empty.")
        if not req.member_id and (req.version >= 1 or req.member_epoch != 0):
            raise invalid("MemberId can't be empty.")
        if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if req.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in "
                              "first request.")
        elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and req.instance_id is None:
            raise invalid("InstanceId can't be null.")
        elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise invalid(f"MemberEpoch is invalid: {req.member_epoch}")
        if req.server_assignor is not None and req.server_assignor not in self.assignors:
            raise HeartbeatError(Errors.UNSUPPORTED_ASSIGNOR,
                                 f"ServerAssignor {req.server_assignor} is not supported. "
                                 f"Supported assignors: {', '.join(self.assignors)}.")
        if req.subscribed_topic_regex is not None:
            try:
                compile_regex(req.subscribed_topic_regex)
            except (RegexError, UnicodeError) as exc:
                why = exc.args[0] if exc.args else str(exc)
                # RE2 says why in bytes; a str that is not UTF-8 says it itself
                why = why.decode(errors="replace") if isinstance(why, bytes) else str(exc)
                raise HeartbeatError(Errors.INVALID_REGULAR_EXPRESSION,
                                     f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is "
                                     f"not a valid regular expression: {why}.") from None

    def _leave(self, req: HeartbeatRequest) -> tuple[dict[str, Any], list[records.Record]]:
        group = self.group(req.group_id)
        member = None if group is None else group.members.get(req.member_id)
        if group is None or member is None:
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH or group is None:
                raise HeartbeatError(Errors.UNKNOWN_MEMBER_ID,
                                     f"Member {req.member_id} is not a member of group "
                                     f"{req.group_id}.")
            raise HeartbeatError(Errors.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is unknown.")
        with group.lock:
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                # A static member leaves for a while: it keeps its partitions until it comes
                # back (with another member id) or its session expires.
                left = ConsumerGroupMember(**{**member.__dict__,
                                              "member_epoch": LEAVE_GROUP_STATIC_MEMBER_EPOCH})
                group.update_member(member, left)
                return (_response(req.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH, 0, None),
                        [records.current_assignment_record(group.group_id, left)])
            log.info("consumer group %s: member %s left", group.group_id, req.member_id)
            to_store = self._remove_or_downgrade(group, req.member_id)
        return _response(req.member_id, LEAVE_GROUP_MEMBER_EPOCH, 0, None), to_store

    def _remove_or_downgrade(self, group: ConsumerGroup,
                             member_id: str) -> list[records.Record]:
        """A member leaves or is fenced (under the group's lock).  When it is the last member
        of the consumer protocol and classic members remain, the group goes back to being a
        classic group (Kafka's ``validateOnlineDowngradeWithFencedMember`` and
        ``convertToClassicGroup``, under ``group.consumer.migration.policy`` ``downgrade`` or
        ``bidirectional``): the consumer group's records are tombstoned and the classic
        group's record follows them in the same batch."""
        others = [m for m in group.members.values() if m.member_id != member_id]
        if not (self.downgrade_enabled and self.to_classic_group is not None and others
                and all(m.classic is not None for m in others)):
            return self._remove_member(group, member_id)
        classic_record = self.to_classic_group(group, member_id)
        if classic_record is None:  # too large, or no protocol its members share
            return self._remove_member(group, member_id)
        out: list[records.Record] = []
        for m in group.members:
            out += records.member_tombstones(group.group_id, m)
        out += records.group_tombstones(group.group_id)
        out += classic_record
        group.dead = True
        with self._lock:
            if self._groups.get(group.group_id) is group:
                del self._groups[group.group_id]
        for m in group.members:
            self._awaited.pop((group.group_id, m), None)
        if self.purgatory is not None:  # the members' timers find the group dead
            for m in group.members:
                self.purgatory.check_and_complete(_session_key(group.group_id, m))
                self.purgatory.check_and_complete(_revocation_key(group.group_id, m))
        log.info("consumer group %s is a classic group again: its last member of the consumer "
                 "protocol (%s) left", group.group_id, member_id)
        return out

    def _remove_member(self, group: ConsumerGroup, member_id: str) -> list[records.Record]:
        """The member is gone (it left, or was fenced): its partitions are free, the group epoch
        moves and the others get a new target (under the group's lock)."""
        group.remove_member(member_id)
        out = records.member_tombstones(group.group_id, member_id)
        group.group_epoch += 1
        self._refresh_subscription_metadata(group, lambda _: True)
        out += [records.partition_metadata_record(group), records.group_epoch_record(group)]
        out += self._update_target(group)
        self._forget_timers(group, member_id)
        return out

    def _forget_timers(self, group: ConsumerGroup, member_id: str) -> None:
        """A member no longer in the group: its session, revocation and classic step timers
        end now (each finds the member gone)."""
        self._awaited.pop((group.group_id, member_id), None)
        if self.purgatory is not None:
            self.purgatory.check_and_complete(_session_key(group.group_id, member_id))
            self.purgatory.check_and_complete(_revocation_key(group.group_id, member_id))
            self.purgatory.check_and_complete(_rejoin_key(group.group_id, member_id))

    def _join_or_heartbeat(self, req: HeartbeatRequest, may_describe: Callable[[str], bool]
                           ) -> tuple[dict[str, Any], list[records.Record]]:
        for name in req.subscribed_topic_names or ():
            if not may_describe(name):
                raise HeartbeatError(Errors.TOPIC_AUTHORIZATION_FAILED,
                                     f"Not authorized to describe topic {name}.")
        joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        group = self._get_or_create(req.group_id, create=joining)
        member_id = req.member_id or str(uuid.uuid4())  # v0: the coordinator names members
        to_store: list[records.Record] = []
        with group.lock:
            if group.dead:
                raise HeartbeatError(Errors.COORDINATOR_NOT_AVAILABLE, "the group was unloaded")
            member = group.members.get(member_id)
            if joining:
                member, to_store = self._joining_member(group, req, member_id, member)
            elif member is None:
                raise HeartbeatError(Errors.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group "
                                     f"{group.group_id}.")
            else:
                _check_member_epoch(member, req.member_epoch, req.owned)
            old = member
            member = _with_subscription(member, req)
            new = old.member_id not in group.members
            if member != old or new:
                group.update_member(None if new else old, member)
                to_store.append(records.member_subscription_record(group.group_id, member))
            # Kafka's ``hasMemberSubscriptionChanged``: only what the assignor reads moves
            # the group epoch (a classic member's protocol metadata changes at every join).
            bumped = new or _subscription(member) != _subscription(old)
            if self._refresh_subscription_metadata(group, may_describe) or bumped:
                group.group_epoch += 1
                to_store += [records.partition_metadata_record(group),
                             records.group_epoch_record(group)]
            if group.group_epoch > group.assignment_epoch:
                to_store += self._update_target(group)
            current = group.members[member.member_id]
            updated = reconcile(group, current, req.owned)
            if updated != current:
                group.update_member(current, updated)
                to_store.append(records.current_assignment_record(group.group_id, updated))
            if updated.state is not current.state:
                self._schedule_revocation(group, updated)
            updated.session_count += 1
            self._schedule_session(group, updated)
            full = (req.rebalance_timeout_ms != -1 and req.owned is not None and (
                req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None))
            give = joining or full or updated.assigned != current.assigned \
                or updated.member_epoch != req.member_epoch
            return (_response(updated.member_id, updated.member_epoch,
                              _group_setting(self, group.group_id,
                                             "consumer.heartbeat.interval.ms",
                                             self.heartbeat_interval_ms),
                              updated.assigned if give else None), to_store)

    def _joining_member(self, group: ConsumerGroup, req: HeartbeatRequest, member_id: str,
                        member: ConsumerGroupMember | None
                        ) -> tuple[ConsumerGroupMember, list[records.Record]]:
        """A member joins with epoch 0: new, a static member coming back, or one that lost its
        epoch and starts again (its old partitions are released first)."""
        to_store: list[records.Record] = []
        if req.instance_id is not None:
            previous = group.member_by_instance_id(req.instance_id)
            if previous is not None and previous.member_id != member_id:
                # A member of the consumer protocol must have left first (epoch -2); a classic
                # one with a new member id fences the old one at once, as in a classic group.
                if previous.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and req.classic is None:
                    raise HeartbeatError(Errors.UNRELEASED_INSTANCE_ID,
                                         f"Static member {previous.member_id} with instance id "
                                         f"{req.instance_id} is not released yet.")
                # The static member is back with a new member id: it takes the old one's place,
                # epoch and partitions.
                replaced = ConsumerGroupMember(**{
                    **previous.__dict__, "member_id": member_id, "member_epoch": 0,
                    "previous_member_epoch": -1, "session_count": 0})
                target = group.target.pop(previous.member_id, {})
                group.remove_member(previous.member_id)
                group.target[member_id] = target
                group.update_member(None, replaced)
                self._forget_timers(group, previous.member_id)
                to_store += records.member_tombstones(group.group_id, previous.member_id)
                to_store += [records.target_member_record(group.group_id, member_id, target),
                             records.current_assignment_record(group.group_id, replaced)]
                return replaced, to_store
        if member is not None:  # the member starts again: what it owned is free
            to_store += self._remove_member(group, member_id)
        if len(group.members) >= self.max_size:
            raise HeartbeatError(Errors.GROUP_MAX_SIZE_REACHED,
                                 f"The consumer group has reached its maximum capacity of "
                                 f"{self.max_size} members.")
        return ConsumerGroupMember(member_id, client_id=req.client_id,
                                   client_host=req.client_host), to_store

    def _get_or_create(self, group_id: str, create: bool) -> ConsumerGroup:
        with self._lock:
            group = self._groups.get(group_id)
            if group is None:
                if not create:
                    raise HeartbeatError(Errors.UNKNOWN_MEMBER_ID,
                                         f"Group {group_id} not found.")
                group = self._groups[group_id] = ConsumerGroup(group_id)
            return group

    # -- subscriptions and the target assignment ---------------------------------------------

    def _subscribed_topics(self, member: ConsumerGroupMember,
                           may_describe: Callable[[str], bool]) -> set[str]:
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            pattern = compile_regex(member.subscribed_topic_regex)
            names |= {t.name for t in self.metadata_cache.topics()
                      if not t.name.startswith("__") and pattern.fullmatch(t.name)
                      and may_describe(t.name)}
        return names

    def _refresh_subscription_metadata(self, group: ConsumerGroup,
                                       may_describe: Callable[[str], bool]) -> bool:
        """The subscribed topics' ids and partition counts, as they are now: True when they
        changed (a topic created, deleted or grown: the group epoch moves)."""
        metadata: dict[str, tuple[uuid.UUID, int]] = {}
        for m in group.members.values():
            for name in self._subscribed_topics(m, may_describe):
                meta = self.metadata_cache.get(name)
                if meta is not None:
                    metadata[name] = (meta.topic_id, int(meta.partitions))
        if metadata == group.subscription_metadata:
            return False
        group.subscription_metadata = metadata
        return True

    def _update_target(self, group: ConsumerGroup) -> list[records.Record]:
        """Kafka's ``TargetAssignmentBuilder``: every member's target for the group epoch, and
        the records of the members whose target changed."""
        ids = {name: tid for name, (tid, _) in group.subscription_metadata.items()}
        subscriptions = {
            m.member_id: frozenset(ids[n] for n in self._subscribed_topics(m, lambda _: True)
                                   if n in ids)
            for m in group.members.values()}
        counts = {tid: n for tid, n in group.subscription_metadata.values()}
        assignor = self._assignor_for(group)
        target = assignor.assign(subscriptions, counts, group.target)
        out = [records.target_member_record(group.group_id, m, ps)
               for m, ps in target.items() if group.target.get(m) != ps]
        group.target = target
        group.assignment_epoch = group.group_epoch
        out.append(records.target_epoch_record(group))
        return out

    def _assignor_for(self, group: ConsumerGroup) -> Any:
        """The assignor most members asked for, else the first configured (Kafka's rule)."""
        asked = Counter(m.server_assignor for m in group.members.values()
                        if m.server_assignor in self.assignors)
        name = asked.most_common(1)[0][0] if asked else next(iter(self.assignors))
        return self.assignors[name]

    # -- sessions -----------------------------------------------------------------------------

    def _schedule_session(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        if self.purgatory is None:
            return
        key = _session_key(group.group_id, member.member_id)
        self.purgatory.check_and_complete(key)  # the previous session, satisfied
        self.purgatory.try_complete_else_watch(
            DelayedConsumerSession(self, group, member.member_id, member.session_count,
                                   _session_timeout_ms(self, member, group.group_id)), [key])

    def _schedule_revocation(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """Kafka's rebalance timeout: started when the member is asked to revoke partitions,
        done when it has (or left)."""
        if self.purgatory is None:
            return
        key = _revocation_key(group.group_id, member.member_id)
        self.purgatory.check_and_complete(key)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            timeout = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 \
                else self.session_timeout_ms
            self.purgatory.try_complete_else_watch(
                DelayedRevocation(self, group, member.member_id, member.member_epoch, timeout),
                [key])

    def on_revocation_expired(self, revocation: DelayedRevocation) -> None:
        group = revocation.group
        with group.lock:
            if not revocation.revoking():
                return
            log.info("consumer group %s: member %s did not revoke its partitions within its "
                     "rebalance timeout; removed", group.group_id, revocation.member_id)
            to_store = self._remove_or_downgrade(group, revocation.member_id)
        self.group_manager.store_records(group.group_id, to_store, lambda error: None)

    def on_session_expired(self, group: ConsumerGroup, member_id: str,
                           session_count: int) -> None:
        with group.lock:
            member = group.members.get(member_id)
            if group.dead or member is None or member.session_count != session_count:
                return
            log.info("consumer group %s: member %s did not heartbeat within %d ms; removed",
                     group.group_id, member_id, _session_timeout_ms(self, member, group.group_id))
            to_store = self._remove_or_downgrade(group, member_id)
        self.group_manager.store_records(group.group_id, to_store, lambda error: None)

    # -- classic members (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) ------------------------

    def classic_join(self, group_id: str, member_id: str, require_known_member_id: bool,
                     client_id: str, client_host: str, rebalance_timeout_ms: int,
                     session_timeout_ms: int, protocol_type: str,
                     protocols: list[tuple[str, bytes]], callback: JoinCallback,
                     instance_id: str | None = None) -> None:
        """Kafka's ``classicGroupJoinToConsumerGroup``: a classic consumer joins a consumer
        group.  Its subscription (and the partitions it still owns) come from its protocol
        metadata; it takes the same steps as a heartbeat of the consumer protocol, and the
        JoinGroup is answered at once with its member epoch as the generation and no leader:
        the coordinator assigns, and SyncGroup hands the member its partitions.

        A static member (``instance_id``) that joins without a member id takes the place of
        the member with its instance id, if any (its partitions, and it fences the old one);
        one that rejoins with its member id must still be that instance's member."""
        group = self.group(group_id)
        if group is None:  # gone since the caller looked
            callback(JoinGroupResult(member_id, Errors.UNKNOWN_MEMBER_ID))
            return
        with group.lock:
            if not group.supports_classic_protocols(protocol_type,
                                                    {name for name, _ in protocols}):
                callback(JoinGroupResult(member_id, Errors.INCONSISTENT_GROUP_PROTOCOL))
                return
            replacing = instance_id is not None and \
                group.member_by_instance_id(instance_id) is not None
            if not member_id and not replacing and len(group.members) >= self.max_size:
                callback(JoinGroupResult(member_id, Errors.GROUP_MAX_SIZE_REACHED))
                return
            if member_id and instance_id is not None:
                error = _static_member_error(group, member_id, instance_id)
                if error != Errors.NONE:
                    callback(JoinGroupResult(member_id, error))
                    return
            if not member_id and require_known_member_id and instance_id is None:
                # KIP-394, as the classic groups (a static member is known by its instance id)
                callback(JoinGroupResult(str(uuid.uuid4()), Errors.MEMBER_ID_REQUIRED))
                return
            # A member id the group does not know is a new member (the one MEMBER_ID_REQUIRED
            # handed out, which is not remembered: Kafka's ``createIfNotExists``).
            known = group.members.get(member_id) if member_id else None
            if known is not None and known.classic is None:
                callback(JoinGroupResult(member_id, Errors.UNKNOWN_MEMBER_ID))
                return
        try:
            subscription = consumer_protocol.deserialize_subscription(protocols[0][1])
        except consumer_protocol.ConsumerProtocolError as exc:
            log.warning("consumer group %s: a classic member's subscription is unreadable: %s",
                        group_id, exc)
            callback(JoinGroupResult(member_id, Errors.INCONSISTENT_GROUP_PROTOCOL))
            return
        req = HeartbeatRequest(
            group_id=group_id, member_id=member_id or str(uuid.uuid4()),
            member_epoch=JOIN_GROUP_MEMBER_EPOCH if known is None else known.member_epoch,
            instance_id=instance_id, rack_id=subscription.rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=list(subscription.topics),
            owned=self._by_topic_id(subscription.owned), client_id=client_id,
            client_host=client_host,
            # bytes: the request's buffer is not kept
            classic=ClassicMemberMetadata(session_timeout_ms,
                                          tuple((n, bytes(md)) for n, md in protocols)))
        try:
            response, to_store = self._join_or_heartbeat(req, lambda _: True)
        except HeartbeatError as exc:
            callback(JoinGroupResult(member_id, exc.error))
            return
        result = JoinGroupResult(response["member_id"], Errors.NONE,
                                 generation_id=response["member_epoch"],
                                 protocol_type=consumer_protocol.PROTOCOL_TYPE,
                                 protocol_name=protocols[0][0])

        def stored(error: int) -> None:
            if error == Errors.NONE:  # now it owes a SyncGroup
                with group.lock:
                    member = group.members.get(result.member_id)
                    if member is not None and not group.dead:
                        self._await_step(group, member, "sync")
            callback(result if error == Errors.NONE else
                     JoinGroupResult(result.member_id, error))

        self.group_manager.store_records(group_id, to_store, stored)

    def awaited_step(self, group: ConsumerGroup, member_id: str) -> DelayedClassicRejoin | None:
        return self._awaited.get((group.group_id, member_id))

    def _await_step(self, group: ConsumerGroup, member: ConsumerGroupMember, step: str | None,
                    replace: bool = True) -> None:
        """The classic member now owes ``step`` ("join", "sync"; None: nothing) within its
        rebalance timeout (under the group's lock).  ``replace=False``: a join timeout
        already running keeps its deadline (Kafka's ``scheduleConsumerGroupJoinTimeoutIfAbsent``)."""
        key = (group.group_id, member.member_id)
        current = self._awaited.get(key)
        if not replace and current is not None and current.step == step:
            return
        self._awaited.pop(key, None)
        if self.purgatory is not None:
            self.purgatory.check_and_complete(_rejoin_key(*key))  # the previous step is done
        if step is None or self.purgatory is None:
            return
        timeout = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 \
            else _session_timeout_ms(self, member, group.group_id)
        awaited = self._awaited[key] = DelayedClassicRejoin(self, group, member.member_id, step,
                                                           timeout)
        self.purgatory.try_complete_else_watch(awaited, [_rejoin_key(*key)])

    def on_classic_step_expired(self, awaited: DelayedClassicRejoin) -> None:
        group = awaited.group
        with group.lock:
            if not awaited.pending():
                return
            del self._awaited[(group.group_id, awaited.member_id)]
            log.info("consumer group %s: classic member %s did not %s within its rebalance "
                     "timeout; removed", group.group_id, awaited.member_id, awaited.step)
            to_store = self._remove_or_downgrade(group, awaited.member_id)
        self.group_manager.store_records(group.group_id, to_store, lambda error: None)

    def _by_topic_id(self, partitions: consumer_protocol.TopicPartitions) -> Partitions:
        out: Partitions = {}
        for name, ps in partitions.items():
            meta = self.metadata_cache.get(name)
            if meta is not None:
                out[meta.topic_id] = ps
        return out

    def _classic_member(self, group: ConsumerGroup, member_id: str, generation_id: int,
                        instance_id: str | None) -> tuple[int, ConsumerGroupMember | None]:
        """The classic member a SyncGroup or Heartbeat names, checked (under the lock)."""
        if group.dead:
            return Errors.COORDINATOR_NOT_AVAILABLE, None
        if instance_id is not None:
            error = _static_member_error(group, member_id, instance_id)
            if error != Errors.NONE:
                return error, None
        member = group.members.get(member_id)
        if member is None or member.classic is None:
            return Errors.UNKNOWN_MEMBER_ID, None
        if generation_id != member.member_epoch:
            return Errors.ILLEGAL_GENERATION, None
        return Errors.NONE, member

    def _renew_session(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        member.session_count += 1
        self._schedule_session(group, member)

    def classic_sync(self, group: ConsumerGroup, member_id: str, generation_id: int,
                     protocol_type: str | None, protocol_name: str | None,
                     instance_id: str | None = None) -> SyncGroupResult:
        """Kafka's ``classicGroupSyncToConsumerGroup``: the member's current partitions, in
        the consumer protocol's version of its own metadata."""
        with group.lock:
            error, member = self._classic_member(group, member_id, generation_id, instance_id)
            if member is None or member.classic is None:
                return SyncGroupResult(error)
            name = member.classic.supported_protocols[0][0]
            if protocol_type not in (None, consumer_protocol.PROTOCOL_TYPE) or \
                    protocol_name not in (None, name):
                return SyncGroupResult(Errors.INCONSISTENT_GROUP_PROTOCOL)
            if group.group_epoch > member.member_epoch and \
                    member.state is not MemberState.UNREVOKED_PARTITIONS:
                self._await_step(group, member, "join", replace=False)
                return SyncGroupResult(Errors.REBALANCE_IN_PROGRESS)  # rejoin to catch up
            self._await_step(group, member, None)
            self._renew_session(group, member)
            return SyncGroupResult(Errors.NONE, self.classic_assignment(group, member),
                                   consumer_protocol.PROTOCOL_TYPE, name)

    def classic_assignment(self, group: ConsumerGroup, member: ConsumerGroupMember) -> bytes:
        """The member's current partitions in the consumer protocol, in the version of its
        own metadata."""
        if member.classic is None:
            raise IllegalStateError(
                f"member {member.member_id}: a classic assignment for a consumer-protocol member")
        names = {tid: topic for topic, (tid, _) in group.subscription_metadata.items()}
        assigned = {names.get(t) or self.metadata_cache.name_of(t): ps
                    for t, ps in member.assigned.items()}
        return consumer_protocol.serialize_assignment(
            {t: ps for t, ps in assigned.items() if t},
            consumer_protocol.version_of(member.classic.supported_protocols[0][1]))

    def classic_heartbeat(self, group: ConsumerGroup, member_id: str, generation_id: int,
                          instance_id: str | None = None) -> int:
        """Kafka's ``classicGroupHeartbeatToConsumerGroup``: REBALANCE_IN_PROGRESS (rejoin)
        when the group epoch moved past the member's, when it has partitions to revoke, or
        when partitions it waits for were released."""
        with group.lock:
            error, member = self._classic_member(group, member_id, generation_id, instance_id)
            if member is None:
                return error
            self._renew_session(group, member)
            if member.member_epoch < group.group_epoch \
                    or member.state is MemberState.UNREVOKED_PARTITIONS \
                    or (member.state is MemberState.UNRELEASED_PARTITIONS
                        and not group.waiting_on_unreleased_partition(member)):
                self._await_step(group, member, "join", replace=False)
                return Errors.REBALANCE_IN_PROGRESS
            return Errors.NONE

    def classic_leave(self, group: ConsumerGroup, member_ids: list[str],
                      instance_ids: list[str | None] | None = None) -> list[int]:
        """Kafka's ``classicGroupLeaveToConsumerGroup``: each classic member named leaves; a
        static one may be named by its instance id alone (an admin client removing it)."""
        errors: list[int] = []
        to_store: list[records.Record] = []
        with group.lock:
            for member_id, instance_id in zip(member_ids, instance_ids or [None] * len(member_ids),
                                              strict=True):
                if instance_id is not None:
                    static = group.member_by_instance_id(instance_id)
                    if static is not None and not member_id:
                        member_id = static.member_id
                    error = _static_member_error(group, member_id, instance_id)
                    if error != Errors.NONE:
                        errors.append(error)
                        continue
                member = group.members.get(member_id)
                if group.dead or member is None or member.classic is None:
                    errors.append(Errors.UNKNOWN_MEMBER_ID)
                    continue
                log.info("consumer group %s: classic member %s left", group.group_id, member_id)
                to_store += self._remove_member(group, member_id)
                errors.append(Errors.NONE)
        if to_store:
            self.group_manager.store_records(group.group_id, to_store, lambda error: None)
        return errors

    def adopt_classic_group(self, group_id: str, generation_id: int,
                            members: list[ClassicGroupMember],
                            first: list[records.Record]) -> bool:
        """Kafka's ``convertToConsumerGroup``: a classic group becomes a consumer group (a
        member of the consumer protocol is joining it).  Each classic member keeps the
        partitions of its last SyncGroup, its generation as its member epoch; the group epoch
        and the target are the classic generation's, so nothing moves until the joining
        member bumps the epoch.  ``first``: records written before the group's (the classic
        group's tombstone).  False when a member's metadata is not the consumer protocol (the
        group stays classic)."""
        group = ConsumerGroup(group_id)
        group.group_epoch = group.assignment_epoch = generation_id
        # The classic group took its static members as dynamic ones, so one instance id may
        # have two members there (a restart): those stay dynamic, the others are static here.
        instances = Counter(m.instance_id for m in members)
        try:
            for m in members:
                subscription = consumer_protocol.deserialize_subscription(m.metadata)
                assigned = self._by_topic_id(consumer_protocol.deserialize_assignment(
                    m.assignment))
                member = ConsumerGroupMember(
                    m.member_id, rack_id=subscription.rack_id,
                    instance_id=m.instance_id if instances[m.instance_id] == 1 else None,
                    client_id=m.client_id, client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    subscribed_topic_names=tuple(sorted(subscription.topics)),
                    member_epoch=generation_id, previous_member_epoch=generation_id,
                    assigned=assigned, classic=ClassicMemberMetadata(
                        m.session_timeout_ms, tuple((n, bytes(md)) for n, md in m.protocols)))
                group.update_member(None, member)
                group.target[member.member_id] = assigned
        except consumer_protocol.ConsumerProtocolError as exc:
            log.warning("classic group %s cannot become a consumer group: %s", group_id, exc)
            return False
        with group.lock:
            self._refresh_subscription_metadata(group, lambda _: True)
            to_store = [*first, records.group_epoch_record(group),
                        records.partition_metadata_record(group)]
            for member in group.members.values():
                to_store += [records.member_subscription_record(group_id, member),
                             records.target_member_record(group_id, member.member_id,
                                                          group.target[member.member_id])]
            to_store.append(records.target_epoch_record(group))
            to_store += [records.current_assignment_record(group_id, member)
                         for member in group.members.values()]
            with self._lock:
                self._groups[group_id] = group
            for member in group.members.values():
                self._schedule_session(group, member)
        log.info("classic group %s is now a consumer group (generation %d, %d members)",
                 group_id, generation_id, len(members))
        self.group_manager.store_records(group_id, to_store, lambda error: None)
        return True

    # -- OffsetCommit ---------------------------------------------------------------------------

    def validate_offset_commit(self, group: ConsumerGroup, member_id: str, member_epoch: int,
                               api_version: int | None = None) -> int:
        """Kafka's ``ConsumerGroup.validateOffsetCommit``: a member commits with its own
        epoch; outside the group (epoch -1) only while the group is empty.  A member of the
        consumer protocol must commit with OffsetCommit v9+, the first that carries a member
        epoch (``api_version`` None: TxnOffsetCommit, which has no such rule)."""
        with group.lock:
            if group.dead:
                return Errors.NOT_COORDINATOR
            if member_epoch < 0 and not group.members:
                return Errors.NONE
            member = group.members.get(member_id)
            if member is None:
                return Errors.UNKNOWN_MEMBER_ID
            if member.classic is None and api_version is not None and api_version < 9:
                return Errors.UNSUPPORTED_VERSION
            return _check_offset_epoch(member, member_epoch)

    def validate_offset_fetch(self, group: ConsumerGroup, member_id: str | None,
                              member_epoch: int) -> int:
        """Kafka's ``ConsumerGroup.validateOffsetFetch`` (OffsetFetch v9+): a member reads the
        committed offsets with its own epoch; no member id and epoch -1 is an admin client or
        an older client, always answered."""
        with group.lock:
            if group.dead:
                return Errors.NOT_COORDINATOR
            if member_id is None and member_epoch < 0:
                return Errors.NONE
            member = group.members.get(member_id or "")
            if member is None:
                return Errors.UNKNOWN_MEMBER_ID
            return _check_offset_epoch(member, member_epoch)

    # -- DeleteGroups, OffsetDelete -------------------------------------------------------------

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups of a consumer group: NON_EMPTY_GROUP while it has members; otherwise
        it is forgotten and its records tombstoned (before the offsets' tombstones the caller
        appends: the writer keeps the order)."""
        group = self.group(group_id)
        if group is None:
            return Errors.GROUP_ID_NOT_FOUND
        with group.lock:
            if group.members:
                return Errors.NON_EMPTY_GROUP
            group.dead = True
        with self._lock:
            if self._groups.get(group_id) is group:
                del self._groups[group_id]
        self.group_manager.store_records(group_id, records.group_tombstones(group_id),
                                         lambda error: None)
        return Errors.NONE

    def subscribed_topic_names(self, group_id: str) -> set[str]:
        """The topics the group's members subscribe to now (OffsetDelete keeps their offsets:
        GROUP_SUBSCRIBED_TO_TOPIC)."""
        group = self.group(group_id)
        if group is None:
            return set()
        with group.lock:
            return set(group.subscription_metadata) if group.members else set()

    # -- ConsumerGroupDescribe --------------------------------------------------------------

    def describe(self, group_id: str, include_operations: int) -> dict[str, Any]:
        group = self.group(group_id)
        if group is None:
            return {"error_code": Errors.GROUP_ID_NOT_FOUND, "group_id": group_id,
                    "error_message": f"Group {group_id} not found.", "group_state": "",
                    "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
                    "members": [], "authorized_operations": include_operations}
        with group.lock:
            names = {tid: name for name, (tid, _) in group.subscription_metadata.items()}

            def described(ps: Partitions) -> dict[str, Any]:
                return {"topic_partitions": [
                    {"topic_id": t, "topic_name": names.get(t, ""), "partitions": sorted(p)}
                    for t, p in ps.items()]}

            return {
                "error_code": Errors.NONE, "error_message": None, "group_id": group_id,
                "group_state": group.state().value, "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": self._assignor_for(group).name,
                "members": [{
                    "member_id": m.member_id, "instance_id": m.instance_id,
                    "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                    "client_id": m.client_id, "client_host": m.client_host,
                    "subscribed_topic_names": list(m.subscribed_topic_names),
                    "subscribed_topic_regex": m.subscribed_topic_regex,
                    "assignment": described(m.assigned),
                    "target_assignment": described(group.target.get(m.member_id, {})),
                    # KIP-1099: 0 the classic protocol, 1 the consumer protocol
                    "member_type": 0 if m.classic is not None else 1,
                } for m in group.members.values()],
                "authorized_operations": include_operations,
            }


def _session_timeout_ms(coordinator: ConsumerGroupCoordinator,
                        member: ConsumerGroupMember, group_id: str) -> int:
    """A classic member keeps the session timeout of its JoinGroup; the others get their
    group's consumer.session.timeout.ms (a GROUP config) or the broker's."""
    if member.classic is not None:
        return member.classic.session_timeout_ms
    return _group_setting(coordinator, group_id, "consumer.session.timeout.ms",
                          coordinator.session_timeout_ms)


def _group_setting(coordinator: ConsumerGroupCoordinator, group_id: str, name: str,
                   default: int) -> int:
    """A group's own config (Kafka 4's GroupConfig, kafkacore.broker.config.group_config), else
    ``default``, the broker's setting."""
    own = getattr(coordinator.metadata_cache, "group_configs", None)
    value = own(group_id).get(name) if own is not None else None
    return default if value is None else int(value)


def _session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-member", group_id, member_id)


def _revocation_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-revocation", group_id, member_id)


def _rejoin_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-classic-step", group_id, member_id)


def _static_member_error(group: ConsumerGroup, member_id: str, instance_id: str) -> int:
    """Kafka's ``throwIfStaticMemberIsUnknown`` and ``throwIfInstanceIdIsFenced``: the
    instance id is a member's, and that member is the one named (not one it replaced)."""
    static = group.member_by_instance_id(instance_id)
    if static is None:
        return Errors.UNKNOWN_MEMBER_ID
    if static.member_id != member_id:
        return Errors.FENCED_INSTANCE_ID
    return Errors.NONE


def _check_offset_epoch(member: ConsumerGroupMember, received: int) -> int:
    """Kafka's ``validateMemberEpoch``: an OffsetCommit or OffsetFetch carries exactly the
    member's epoch (a commit from an older epoch could overwrite its partitions' new owner's)."""
    if received == member.member_epoch:
        return Errors.NONE
    # A classic member's epoch is its generation.
    return Errors.STALE_MEMBER_EPOCH if member.classic is None else Errors.ILLEGAL_GENERATION


def _check_member_epoch(member: ConsumerGroupMember, received: int,
                        owned: Partitions | None) -> None:
    """Kafka's ``throwIfMemberEpochIsInvalid``: a member ahead of the coordinator, or behind
    it, is fenced, except one epoch behind with a subset of its partitions (the answer that
    gave it the new epoch was lost)."""
    if received > member.member_epoch:
        raise HeartbeatError(Errors.FENCED_MEMBER_EPOCH,
                             f"The consumer group member has a greater member epoch "
                             f"({received}) than the one known by the group coordinator "
                             f"({member.member_epoch}). The member must abandon all its "
                             f"partitions and rejoin.")
    if received < member.member_epoch and (
            received != member.previous_member_epoch or owned is None
            or not is_subset(owned, member.assigned)):
        raise HeartbeatError(Errors.FENCED_MEMBER_EPOCH,
                             f"The consumer group member has a smaller member epoch "
                             f"({received}) than the one known by the group coordinator "
                             f"({member.member_epoch}). The member must abandon all its "
                             f"partitions and rejoin.")


def _with_subscription(member: ConsumerGroupMember,
                       req: HeartbeatRequest) -> ConsumerGroupMember:
    """The member with what the heartbeat changed (a None field is unchanged)."""
    changes: dict[str, Any] = {}
    if req.instance_id is not None:
        changes["instance_id"] = req.instance_id
    if req.rack_id is not None:
        changes["rack_id"] = req.rack_id
    if req.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    if req.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = tuple(sorted(req.subscribed_topic_names))
    if req.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = req.subscribed_topic_regex or None
    if req.server_assignor is not None:
        changes["server_assignor"] = req.server_assignor
    if req.classic is not None:
        changes["classic"] = req.classic
    if not changes:
        return member
    return ConsumerGroupMember(**{**member.__dict__, **changes})


def _subscription(m: ConsumerGroupMember) -> tuple[Any, ...]:
    return (m.subscribed_topic_names, m.subscribed_topic_regex, m.server_assignor, m.rack_id)


def _response(member_id: str, epoch: int, interval_ms: int,
              assigned: Partitions | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": Errors.NONE, "error_message": None,
            "member_id": member_id, "member_epoch": epoch, "heartbeat_interval_ms": interval_ms,
            "assignment": None if assigned is None else {"topic_partitions": [
                {"topic_id": t, "partitions": sorted(ps)} for t, ps in assigned.items()]}}


def _error_response(error: int, message: str) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "error_message": message,
            "member_id": None, "member_epoch": -1, "heartbeat_interval_ms": 0,
            "assignment": None}
