"""``PartitionState``: one partition as the controller decided it, in a broker's image."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PartitionState:
    """What the controller decided for a partition (a ``PartitionRecord`` of KRaft's image,
    Kafka's ``PartitionRegistration``): the metadata loader builds it, the replica manager's
    partitions become its leader or follower."""

    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    partition_epoch: int = 0
