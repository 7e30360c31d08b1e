"""``ConfigurationControlManager``: the cluster's dynamic configs, as the controller keeps them.

A topic's own configs live with the topic (its ``TopicControlInfo``); the dynamic broker configs
live here, by resource name ("" for the cluster-wide default, else a broker id), as KRaft's
ConfigRecords do.  Brokers read both in their metadata pull and apply what changed.
"""

from __future__ import annotations

from typing import Any

from kafkacore import errors
from kafkacore.broker.config_admin_manager import (
    RESOURCE_TYPE_TOPIC,
    new_broker_configs,
    new_topic_configs,
)
from kafkacore.broker.controller.replication_control_manager import ReplicationControlManager
from kafkacore.broker.dynamic_broker_config import DEFAULT_RESOURCE
from kafkacore.broker.log import LogConfig


class ConfigurationControlManager:
    """Checks and records config changes (Kafka's ``ConfigurationControlManager``)."""

    def __init__(self, replication: ReplicationControlManager) -> None:
        self.replication = replication
        #: resource name -> setting -> value
        self.broker_configs: dict[str, dict[str, str]] = {}

    def alter(self, kind: int, name: str, configs: list[dict[str, Any]], incremental: bool,
              validate_only: bool) -> bool:
        """Change one resource's configs (raises a ``BrokerResponseError``); True if they
        changed (then the caller saves)."""
        if kind == RESOURCE_TYPE_TOPIC:
            info = self.replication.topics.get(name)
            if info is None:
                raise errors.UnknownTopicOrPartitionError(f"Topic {name} does not exist")
            # Checked over Kafka's defaults: the brokers' own defaults are theirs.
            new = new_topic_configs(info.configs, configs, incremental, LogConfig())
            if validate_only or new == info.configs:
                return False
            info.configs = new
            return True
        if name != DEFAULT_RESOURCE and not name.isdigit():
            raise errors.InvalidRequestError(f"Invalid broker name {name!r}: a broker id or "
                                             "the empty string")
        current = self.broker_configs.get(name, {})
        new = new_broker_configs(current, configs, incremental)
        if validate_only or new == current:
            return False
        if new:
            self.broker_configs[name] = new
        else:
            self.broker_configs.pop(name, None)
        return True


__all__ = ["ConfigurationControlManager"]
