"""``AutoTopicCreationManager``: the internal topics made on their first use.

The group and transaction coordinators create ``__consumer_offsets`` and
``__transaction_state`` on the first FindCoordinator, as Kafka's ``AutoTopicCreationManager``
does: a broker alone adds the topic to its metadata; a broker of a cluster asks the controller
(a CreateTopics sent through the :class:`~kafkacore.broker.server.forwarding_manager.ForwardingManager`)
and has the topic once its image shows it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafkacore.broker.metadata.metadata_cache import MetadataCache
from kafkacore.broker.server.forwarding_manager import ForwardingManager
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

CREATE_TOPICS_VERSION = 7
CREATE_TOPICS_TIMEOUT_MS = 30000


class AutoTopicCreationManager:
    """``forwarding()``: the channel to the controller, None for a broker alone (the broker
    joins its cluster after its parts are built, so it is asked for at each creation)."""

    def __init__(self, metadata_cache: MetadataCache, replica_manager: Any,
                 forwarding: Callable[[], ForwardingManager | None]) -> None:
        self.metadata_cache = metadata_cache
        self.replica_manager = replica_manager
        self.forwarding = forwarding

    def live_brokers(self) -> int:
        if self.forwarding() is None:
            return 1
        return len(self.replica_manager.brokers) or 1

    def create_internal_topic(self, name: str, num_partitions: int, replication_factor: int,
                              configs: dict[str, str]) -> bool:
        if self.metadata_cache.get(name) is not None:
            return True
        forwarding = self.forwarding()
        if forwarding is None:
            self.metadata_cache.add_topic(name, num_partitions, configs)
            return True  # the logs are created when first written
        try:
            forwarding.forward(ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION, {
                "topics": [{"name": name, "num_partitions": num_partitions,
                            "replication_factor": replication_factor, "assignments": [],
                            "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
                "timeout_ms": CREATE_TOPICS_TIMEOUT_MS, "validate_only": False})
        except OSError as exc:
            log.info("creating %s: controller unreachable: %s", name, exc)
            return False
        return self.metadata_cache.get(name) is not None
