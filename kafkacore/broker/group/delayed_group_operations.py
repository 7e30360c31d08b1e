"""The group coordinator's delayed operations: ``DelayedJoin``, ``InitialDelayedJoin``,
``DelayedHeartbeat`` (Kafka's ``DelayedJoin.scala`` and ``DelayedHeartbeat.scala``).

Each one only decides *when*; the coordinator does the work (``try_complete_join``,
``on_complete_join``, ``try_complete_heartbeat``, ``on_expire_heartbeat``).  They share the
group's lock, so their checks see the membership as the coordinator's handlers left it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kafkacore.broker.group.group_metadata import GroupMetadata
from kafkacore.broker.server_common.purgatory import DelayedOperation, DelayedOperationPurgatory


class CoordinatorCallbacks(Protocol):
    """The work these operations leave to the
    :class:`~kafkacore.broker.group.group_coordinator.GroupCoordinator` that made them."""

    def try_complete_join(self, group: GroupMetadata,
                          force_complete: Callable[[], bool]) -> bool: ...

    def on_complete_join(self, group: GroupMetadata) -> None: ...

    def try_complete_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool,
                               force_complete: Callable[[], bool]) -> bool: ...

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str,
                            is_pending: bool) -> None: ...


def group_join_key(group_id: str) -> tuple[str, str]:
    """The rebalance purgatory's watch key of a group (Kafka's ``GroupJoinKey``)."""
    return ("join", group_id)


def member_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """The heartbeat purgatory's watch key of a member (Kafka's ``MemberKey``)."""
    return ("member", group_id, member_id)


class DelayedJoin(DelayedOperation):
    """The PreparingRebalance wait: completes as soon as every known member has rejoined, or
    after the rebalance timeout, when those that did not are dropped from the group."""

    def __init__(
        self, coordinator: CoordinatorCallbacks, group: GroupMetadata, rebalance_timeout_ms: int
    ) -> None:
        super().__init__(rebalance_timeout_ms, lock=group.lock)
        self.coordinator = coordinator
        self.group = group

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_join(self.group, self.force_complete)

    def on_expiration(self) -> None:
        pass  # on_complete_join drops the members that did not rejoin, whoever completed it

    def on_complete(self) -> None:
        self.coordinator.on_complete_join(self.group)


class InitialDelayedJoin(DelayedJoin):
    """The first rebalance of an empty group waits ``group.initial.rebalance.delay.ms``, and
    again each time a member arrived meanwhile, up to the rebalance timeout: consumers started
    together then share one generation instead of one rebalance each."""

    def __init__(
        self,
        coordinator: CoordinatorCallbacks,
        purgatory: DelayedOperationPurgatory,
        group: GroupMetadata,
        configured_rebalance_delay_ms: int,
        delay_ms: int,
        remaining_ms: int,
    ) -> None:
        super().__init__(coordinator, group, delay_ms)
        self.purgatory = purgatory
        self.configured_rebalance_delay_ms = configured_rebalance_delay_ms
        self.remaining_ms = remaining_ms

    def try_complete(self) -> bool:
        return False  # only the delay ends it

    def on_complete(self) -> None:
        with self.group.lock:
            if self.group.new_member_added and self.remaining_ms > 0:
                self.group.new_member_added = False
                delay = min(self.configured_rebalance_delay_ms, self.remaining_ms)
                remaining = max(self.remaining_ms - delay, 0)
                self.purgatory.try_complete_else_watch(
                    InitialDelayedJoin(self.coordinator, self.purgatory, self.group,
                                       self.configured_rebalance_delay_ms, delay, remaining),
                    [group_join_key(self.group.group_id)],
                )
            else:
                self.coordinator.on_complete_join(self.group)


class DelayedHeartbeat(DelayedOperation):
    """A member's session: completed (harmlessly) by its next heartbeat, or expires after the
    session timeout, removing the member.  ``is_pending`` times a member id handed out by
    MEMBER_ID_REQUIRED that has not joined with it yet (KIP-394)."""

    def __init__(
        self,
        coordinator: CoordinatorCallbacks,
        group: GroupMetadata,
        member_id: str,
        is_pending: bool,
        timeout_ms: int,
    ) -> None:
        super().__init__(timeout_ms, lock=group.lock)
        self.coordinator = coordinator
        self.group = group
        self.member_id = member_id
        self.is_pending = is_pending

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_heartbeat(
            self.group, self.member_id, self.is_pending, self.force_complete)

    def on_expiration(self) -> None:
        self.coordinator.on_expire_heartbeat(self.group, self.member_id, self.is_pending)

    def on_complete(self) -> None:
        pass
