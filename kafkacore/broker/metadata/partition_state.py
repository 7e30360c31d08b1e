"""``PartitionState``: one partition as the controller decided it, in a broker's image."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PartitionState:
    """What the controller decided for a partition (a ``PartitionRecord`` of KRaft's image): the
    fields of the controller's
    :class:`~kafkacore.broker.controller.replication_control_manager.PartitionRegistration` a
    broker acts on.  The metadata loader builds it; the replica manager's partitions become its
    leader or follower."""

    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    partition_epoch: int = 0
