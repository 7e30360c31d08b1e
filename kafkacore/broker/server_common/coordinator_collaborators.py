"""What the group and transaction coordinators are handed by the broker, as Protocols.

Kafka passes each coordinator the collaborators it uses (its ``CoordinatorRuntime`` writes
through a ``PartitionWriter`` over the ``ReplicaManager``; internal topics are made by the
``AutoTopicCreationManager``).  The coordinators live below the broker's ``server`` package, so
they name here the little they use of its parts; ``Broker`` hands them the real ones
(``ReplicaManager``, ``AutoTopicCreationManager``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

TopicPartition = tuple[str, int]


class Replicas(Protocol):
    """The replica manager as a coordinator uses it: its partitions, the cluster as the
    controller last described it, and appends to the coordinator's topic."""

    @property
    def standalone(self) -> bool:
        """A broker alone (no controller): it leads every partition."""

    @property
    def partitions(self) -> Mapping[TopicPartition, Any]:
        """This broker's replicas (``Partition``), leader or follower."""

    @property
    def brokers(self) -> Mapping[int, tuple[str, int]]:
        """The live brokers' (host, port), by id."""

    @property
    def image_topics(self) -> Mapping[str, Mapping[int, Any]]:
        """Each topic's ``PartitionState`` by partition, as the controller decided."""

    def get_partition(self, topic: str, index: int) -> Any:
        """The ``Partition`` (None if this broker has no replica of it)."""

    def append_records(self, timeout_ms: int, required_acks: int,
                       entries: dict[TopicPartition, tuple[dict[str, Any], Any]],
                       respond: Callable[[dict[TopicPartition, dict[str, Any]]], None], *,
                       from_coordinator: bool = False) -> None:
        """Append as leader; ``respond({partition: response})`` once done."""


class InternalTopicCreator(Protocol):
    """Creates the coordinators' own topics (``__consumer_offsets``, ``__transaction_state``)
    on their first use, as Kafka's ``AutoTopicCreationManager`` does."""

    def live_brokers(self) -> int:
        """How many brokers could hold a replica now (1 for a broker alone)."""

    def create_internal_topic(self, name: str, num_partitions: int, replication_factor: int,
                              configs: dict[str, str]) -> bool:
        """Create ``name`` (alone: here; in a cluster: by the controller); True if it exists
        now."""


class ProducerIdGenerator(Protocol):
    """Where InitProducerId's producer ids come from (Kafka's ``ProducerIdManager``
    interface): a broker alone's ``ProducerIdManager`` (blocks reserved in a file), or in a
    cluster the ``RPCProducerIdManager`` (blocks from the controller)."""

    def generate_producer_id(self) -> int:
        """An id never handed out before; a ``BrokerResponseError`` (retriable) if none can be
        given now."""
