"""``DynamicBrokerConfig``: the broker settings an administrator changes without a restart.

A broker setting has up to four layers, the first one set wins (Kafka's ``DynamicBrokerConfig``
and the ``ConfigSource`` DescribeConfigs reports):

1. this broker's dynamic value (``DYNAMIC_BROKER_CONFIG``, the resource named by its id),
2. the cluster-wide dynamic default (``DYNAMIC_DEFAULT_BROKER_CONFIG``, the resource named ""),
3. ``server.properties`` (``STATIC_BROKER_CONFIG``),
4. Kafka's default (``DEFAULT_CONFIG``).

The dynamic layers live in the cluster's metadata (ConfigRecords in KRaft), so a restart keeps
them.  Only the settings we can apply while running are dynamic: the log defaults every topic
inherits, which each partition's log takes at once.  See docs/broker/admin.rst.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kafkacore import errors
from kafkacore.broker.config.config_source import ConfigSource
from kafkacore.broker.config.kafka_config import SETTINGS, BrokerConfig
from kafkacore.broker.log import LogConfig

#: The dynamic broker settings -> the topic setting each one is the default of (Kafka's
#: ``DynamicLogConfig`` and the topic configs' broker synonyms).
LOG_DEFAULT_SYNONYMS: dict[str, str] = {
    "log.segment.bytes": "segment.bytes",
    "log.retention.ms": "retention.ms",
    "log.retention.bytes": "retention.bytes",
    "message.max.bytes": "max.message.bytes",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.index.interval.bytes": "index.interval.bytes",
    "min.insync.replicas": "min.insync.replicas",
    "log.cleanup.policy": "cleanup.policy",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
}
#: topic setting -> the broker setting that is its default
TOPIC_SYNONYMS = {topic: broker for broker, topic in LOG_DEFAULT_SYNONYMS.items()}

DEFAULT_RESOURCE = ""


class DynamicBrokerConfig:
    """The broker's settings with the dynamic layers over the static ones."""

    def __init__(self, static: BrokerConfig, broker_id: int,
                 dynamic: dict[str, dict[str, str]] | None = None) -> None:
        self.static = static
        self.broker_id = broker_id
        # Lock order: leaf (listeners are called after it is released). Guards _dynamic.
        self._lock = threading.Lock()
        #: resource name ("" or this broker's id) -> setting -> value, as stored (strings)
        self._dynamic: dict[str, dict[str, str]] = {
            k: dict(v) for k, v in (dynamic or {}).items()
            if k in (DEFAULT_RESOURCE, str(broker_id))}
        #: called with the new default LogConfig after a change (the LogManager's reconfigure)
        self.log_listeners: list[Callable[[LogConfig], None]] = []

    @staticmethod
    def validate(name: str, value: str | None) -> None:
        """Raise ``InvalidConfigError`` (unknown setting, bad value) or ``InvalidRequestError``
        (a setting that needs a restart), with Kafka's messages."""
        if name not in SETTINGS:
            raise errors.InvalidConfigError(f"Unknown broker config name: {name}")
        if name not in LOG_DEFAULT_SYNONYMS:
            raise errors.InvalidRequestError(
                f"Cannot update these configs dynamically: Set({name})")
        if value is not None:
            topic_name = LOG_DEFAULT_SYNONYMS[name]
            try:
                SETTINGS[name].parse(name, value)
                # the topic setting's own checks (its minimum, an int's range)
                LogConfig.from_properties({topic_name: value})
            except errors.ConfigError as exc:
                why = str(exc).split(": ", 1)[-1]
                raise errors.InvalidConfigError(
                    f"Invalid value {value} for configuration {name}: {why}") from None
            except errors.InvalidConfigError as exc:
                raise errors.InvalidConfigError(str(exc).replace(
                    f"configuration {topic_name}:", f"configuration {name}:")) from None

    def dynamic(self, resource_name: str) -> dict[str, str]:
        with self._lock:
            return dict(self._dynamic.get(resource_name, {}))

    def update(self, resource_name: str, configs: dict[str, str]) -> None:
        """Replace one layer (already validated and persisted), then reconfigure the logs."""
        with self._lock:
            self._dynamic[resource_name] = dict(configs)
        default = self.default_log_config()
        for listener in self.log_listeners:
            listener(default)

    def __getitem__(self, name: str) -> Any:
        """The value in effect: the first layer that sets it."""
        with self._lock:
            for layer in (self._dynamic.get(str(self.broker_id), {}),
                          self._dynamic.get(DEFAULT_RESOURCE, {})):
                if name in layer:
                    return SETTINGS[name].parse(name, layer[name])
        return self.static[name]

    def source(self, name: str) -> ConfigSource:
        with self._lock:
            if name in self._dynamic.get(str(self.broker_id), {}):
                return ConfigSource.DYNAMIC_BROKER_CONFIG
            if name in self._dynamic.get(DEFAULT_RESOURCE, {}):
                return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        return ConfigSource.STATIC_BROKER_CONFIG if name in self.static.given \
            else ConfigSource.DEFAULT_CONFIG

    def default_log_config(self) -> LogConfig:
        """Every topic's defaults, from the broker settings in effect."""
        flush_ms = self["log.flush.interval.ms"]
        return LogConfig(
            segment_bytes=self["log.segment.bytes"],
            retention_ms=self["log.retention.ms"],
            retention_bytes=self["log.retention.bytes"],
            max_message_bytes=self["message.max.bytes"],
            flush_messages=self["log.flush.interval.messages"],
            index_interval_bytes=self["log.index.interval.bytes"],
            min_insync_replicas=self["min.insync.replicas"],
            cleanup_policy=",".join(sorted(self["log.cleanup.policy"].split(","))),
            min_cleanable_dirty_ratio=self["log.cleaner.min.cleanable.ratio"],
            min_compaction_lag_ms=self["log.cleaner.min.compaction.lag.ms"],
            max_compaction_lag_ms=self["log.cleaner.max.compaction.lag.ms"],
            delete_retention_ms=self["log.cleaner.delete.retention.ms"],
            # Kafka: log.flush.interval.ms unset means log.flush.scheduler.interval.ms.
            flush_ms=self["log.flush.scheduler.interval.ms"] if flush_ms is None else flush_ms,
        )


__all__ = ["DEFAULT_RESOURCE", "LOG_DEFAULT_SYNONYMS", "TOPIC_SYNONYMS", "DynamicBrokerConfig"]
