"""What AlterConfigs and IncrementalAlterConfigs change, for topics, brokers and their loggers,
shared by a broker alone and the controller (the requests' handler, Kafka's
``ConfigAdminManager``, is :mod:`kafkacore.broker.server.apis.configs`; groups' configs are
Kafka 4's GROUP resources, ``kafkacore.broker.config.group_config``).

A config change is checked whole before anything changes: the principal's right (ALTER_CONFIGS
on the topic, or on the cluster for a broker), the resource, each name and value.  Then it is
written to the cluster's metadata (persisted before the answer) and applied at once: a topic's
partitions take their new LogConfig, a broker's log defaults reach every log that does not set
its own.  ``validate_only`` stops after the checks.  An error changes nothing of its resource.

AlterConfigs (the older call) replaces a resource's whole set of dynamic configs: what it does
not name goes back to its default.  IncrementalAlterConfigs changes only what it names, each with
an operation: SET, DELETE, APPEND or SUBTRACT (the last two for list settings).
See docs/broker/admin.rst.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from enum import IntEnum
from typing import Any, Protocol

from kafkacore import errors
from kafkacore.broker.config.config_resource import RESOURCE_TYPE_BROKER, RESOURCE_TYPE_TOPIC
from kafkacore.broker.config.dynamic_broker_config import DynamicBrokerConfig
from kafkacore.broker.config.logging_controller import (
    LEVELS,
    ROOT_LOGGER,
    LoggingController,
)
from kafkacore.broker.log import LogConfig, LogManager
from kafkacore.errors import Errors

log = logging.getLogger(__name__)


#: Topic settings whose value is a comma-separated list (APPEND and SUBTRACT work on them).
LIST_SETTINGS = frozenset({"cleanup.policy", "leader.replication.throttled.replicas",
                           "follower.replication.throttled.replicas"})


class OpType(IntEnum):
    """IncrementalAlterConfigs' operations (Kafka's ``AlterConfigOp.OpType``)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


#: alter_one(kind, name, configs, incremental, validate_only), raising a BrokerResponseError
AlterOne = Callable[[int, str, list[dict[str, Any]], bool, bool], None]


def alter_resources(resources: list[dict[str, Any]], incremental: bool, validate_only: bool,
                    alter_one: AlterOne,
                    kinds: tuple[int, ...] = (RESOURCE_TYPE_TOPIC, RESOURCE_TYPE_BROKER),
                    ) -> list[dict[str, Any]]:
    """Each resource's answer: the request-wide checks (a resource or a config named twice, a
    resource type we do not alter), then ``alter_one``'s.  Shared by a broker alone and the
    controller."""
    seen = Counter((r["resource_type"], r["resource_name"]) for r in resources)
    results = []
    for res in resources:
        kind, name = res["resource_type"], res["resource_name"]
        names = Counter(c["name"] for c in res["configs"])
        repeated = sorted(n for n, count in names.items() if count > 1)
        error: int = Errors.NONE
        message: str | None = None
        if seen[(kind, name)] > 1:
            error, message = Errors.INVALID_REQUEST, "Duplicate resource in the request"
        elif kind not in kinds:
            error, message = Errors.INVALID_REQUEST, f"Unsupported resource type {kind}: " \
                                                     "configs of topics and brokers only"
        elif repeated:
            error, message = (Errors.INVALID_REQUEST,
                              f"Error due to duplicate config keys: {repeated}")
        else:
            try:
                alter_one(kind, name, res["configs"], incremental, validate_only)
            except errors.BrokerResponseError as exc:
                error, message = exc.errno, str(exc) or None
        results.append({"error_code": error, "error_message": message,
                        "resource_type": kind, "resource_name": name})
    return results


def config_operation(config: dict[str, Any]) -> OpType:
    """An IncrementalAlterConfigs entry's operation; INVALID_REQUEST for a number not one."""
    try:
        return OpType(config["config_operation"])
    except ValueError:
        raise errors.InvalidRequestError(f"Unknown operation {config['config_operation']} for "
                                         f"{config['name']}") from None


def apply_ops(current: dict[str, str], configs: list[dict[str, Any]], incremental: bool,
              effective: dict[str, str]) -> dict[str, str]:
    """A resource's dynamic configs after the request's changes.  ``effective``: the values in
    force (a list setting APPENDs to what is in force, its default included)."""
    if not incremental:  # AlterConfigs: the request's set replaces the old one
        return {c["name"]: c["value"] for c in configs if c["value"] is not None}
    new = dict(current)
    for c in configs:
        name, value = c["name"], c["value"]
        op = config_operation(c)
        if op == OpType.DELETE:
            new.pop(name, None)
            continue
        if value is None:
            raise errors.InvalidRequestError(f"Null value not supported for : {name}")
        if op == OpType.SET:
            new[name] = value
            continue
        if name not in LIST_SETTINGS:
            raise errors.InvalidConfigError(
                f"Config value {op.name.lower()} is not allowed for config key: {name}")
        items = [v for v in effective.get(name, "").split(",") if v]
        given = [v.strip() for v in value.split(",") if v.strip()]
        if op == OpType.APPEND:
            items += [v for v in given if v not in items]
        else:
            items = [v for v in items if v not in given]
        new[name] = ",".join(items)
    return new


def new_topic_configs(current: dict[str, str], configs: list[dict[str, Any]], incremental: bool,
                      default: LogConfig) -> dict[str, str]:
    """A topic's own configs after the change, checked (``InvalidConfigError``)."""
    effective = LogConfig.from_properties(current, base=default).to_properties()
    new = apply_ops(current, configs, incremental, effective)
    LogConfig.from_properties(new, base=default)
    return new


def new_broker_configs(current: dict[str, str], configs: list[dict[str, Any]],
                       incremental: bool) -> dict[str, str]:
    """A broker resource's dynamic configs after the change, checked."""
    new = apply_ops(current, configs, incremental, {})  # no broker setting is a list
    for key in sorted(set(new) | {c["name"] for c in configs}):
        DynamicBrokerConfig.validate(key, new.get(key))
    return new


def alter_log_levels(configs: list[dict[str, Any]], validate_only: bool) -> None:
    """IncrementalAlterConfigs on BROKER_LOGGER (Kafka's ``validateLogLevelConfigs`` then
    ``alterLogLevelConfigs``): every operation is checked before any is made, and only loggers
    that exist are changed, so that a client cannot make the broker create loggers without end.
    Not persisted, as in Kafka."""
    for c in configs:
        name, value = c["name"], c["value"]
        op = config_operation(c)
        if op in (OpType.APPEND, OpType.SUBTRACT):
            raise errors.InvalidRequestError(
                f"{op.name} operation is not allowed for the BROKER_LOGGER resource")
        if not LoggingController.logger_exists(name):
            raise errors.InvalidConfigError(f"Logger {name} does not exist!")
        if op == OpType.DELETE and name == ROOT_LOGGER:
            raise errors.InvalidRequestError(
                f"Removing the log level of the {ROOT_LOGGER} logger is not allowed")
        if op == OpType.SET and value not in LEVELS:
            raise errors.InvalidConfigError(
                f"Cannot set the log level of {name} to {value} as it is not a supported log "
                f"level. Valid log levels are {', '.join(reversed(LEVELS))}")
    if validate_only:
        return
    for c in configs:
        if c["config_operation"] == OpType.DELETE:
            LoggingController.unset_log_level(c["name"])
        else:
            LoggingController.set_log_level(c["name"], c["value"])


class ConfigRepository(Protocol):
    """Where the cluster's configs are kept (Kafka's ``ConfigRepository``; on a broker its
    :class:`~kafkacore.broker.metadata.metadata_cache.MetadataCache`, which persists them)."""

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> Any:
        """The topic's metadata (its ``partitions``) after the change, None if there is no
        such topic."""

    def alter_broker_configs(self, resource_name: str, configs: dict[str, str]) -> None: ...


class ConfigHolder(Protocol):
    """Where a config change lands on a broker: its metadata (persisted), its logs and its
    dynamic config.  The broker's KafkaApis (a change it makes alone) and its metadata loader's
    broker (a change the controller made) both have them."""

    @property
    def metadata_cache(self) -> ConfigRepository: ...
    @property
    def log_manager(self) -> LogManager: ...
    @property
    def dynamic_config(self) -> DynamicBrokerConfig: ...


def apply_topic_configs(broker: ConfigHolder, name: str, configs: dict[str, str]) -> None:
    """A topic's new own configs: into the metadata (persisted), then into its logs here."""
    meta = broker.metadata_cache.alter_topic_configs(name, configs)
    if meta is None:
        return
    config = LogConfig.from_properties(configs, base=broker.log_manager.default_config)
    for p in range(meta.partitions):
        lg = broker.log_manager.get_log(name, p)
        if lg is not None:
            lg.update_config(config)
    log.info("topic %s: configs now %s", name, configs)


def apply_broker_configs(broker: ConfigHolder, name: str, configs: dict[str, str]) -> None:
    """A broker resource's new dynamic configs: persisted, then in force (every log's
    defaults follow)."""
    broker.metadata_cache.alter_broker_configs(name, configs)
    broker.dynamic_config.update(name, configs)
    log.info("broker resource %r: dynamic configs now %s", name, configs)


__all__ = ["LIST_SETTINGS", "RESOURCE_TYPE_BROKER", "RESOURCE_TYPE_TOPIC", "ConfigHolder",
           "OpType", "alter_log_levels", "alter_resources", "apply_broker_configs", "apply_ops",
           "apply_topic_configs", "config_operation", "new_broker_configs", "new_topic_configs"]
