"""``ConfigurationControlManager``: the cluster's dynamic configs, as the controller keeps them.

A topic's own configs live with the topic (its ``TopicControlInfo``); the dynamic broker configs
live here, by resource name ("" for the cluster-wide default, else a broker id).  Every change
is a ``ConfigRecord`` in the controller's metadata log, as in KRaft (a null value: back to the
default); brokers replay them and apply what changed.
"""

from __future__ import annotations

from typing import Any

from kafkacore import errors
from kafkacore.broker.config.config_admin_manager import (
    RESOURCE_TYPE_BROKER,
    RESOURCE_TYPE_TOPIC,
    new_broker_configs,
    new_topic_configs,
)
from kafkacore.broker.config.dynamic_broker_config import DEFAULT_RESOURCE
from kafkacore.broker.controller.replication_control_manager import ReplicationControlManager
from kafkacore.broker.log import LogConfig


class ConfigurationControlManager:
    """Checks and records config changes (Kafka's ``ConfigurationControlManager``)."""

    def __init__(self, replication: ReplicationControlManager) -> None:
        self.replication = replication
        #: resource name -> setting -> value
        self.broker_configs: dict[str, dict[str, str]] = {}

    def alter(self, kind: int, name: str, configs: list[dict[str, Any]], incremental: bool,
              validate_only: bool) -> list[dict[str, Any]]:
        """Check one resource's change (raises a ``BrokerResponseError``); the ConfigRecords
        that make it (none for ``validate_only``), already applied here."""
        if kind == RESOURCE_TYPE_TOPIC:
            info = self.replication.topics.get(name)
            if info is None:
                raise errors.UnknownTopicOrPartitionError(f"Topic {name} does not exist")
            # Checked over Kafka's defaults: the brokers' own defaults are theirs.
            current = info.configs
            new = new_topic_configs(current, configs, incremental, LogConfig())
        else:
            if name != DEFAULT_RESOURCE and not name.isdigit():
                raise errors.InvalidRequestError(f"Invalid broker name {name!r}: a broker id "
                                                 "or the empty string")
            current = self.broker_configs.get(name, {})
            new = new_broker_configs(current, configs, incremental)
        if validate_only:
            return []
        records = [config_record(kind, name, key, new.get(key))
                   for key in sorted(set(current) | set(new))
                   if current.get(key) != new.get(key)]
        for record in records:
            self.replay(record)
        return records

    def replay(self, record: dict[str, Any]) -> None:
        """Apply a ConfigRecord (from a change, or the log at start-up)."""
        name = record["resource_name"]
        if record.get("resource_type", RESOURCE_TYPE_TOPIC) == RESOURCE_TYPE_TOPIC:
            info = self.replication.topics.get(name)
            configs = {} if info is None else info.configs
        else:
            configs = self.broker_configs.setdefault(name, {})
        if record["value"] is None:
            configs.pop(record["name"], None)
        else:
            configs[record["name"]] = record["value"]
        if not configs and record.get("resource_type") == RESOURCE_TYPE_BROKER:
            self.broker_configs.pop(name, None)


def config_record(kind: int, name: str, key: str, value: str | None) -> dict[str, Any]:
    """A ``ConfigRecord``: one setting of one resource (null: back to its default)."""
    return {"type": "ConfigRecord", "resource_type": kind, "resource_name": name, "name": key,
            "value": value}


__all__ = ["ConfigurationControlManager", "config_record"]
