"""``ConfigAdminManager``: AlterConfigs and IncrementalAlterConfigs, for topics, brokers and
groups (Kafka 4's GROUP resources, ``kafkacore.broker.group.group_config``).

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
from typing import TYPE_CHECKING, Any

from kafkacore import errors
from kafkacore.broker.config.dynamic_broker_config import DEFAULT_RESOURCE, DynamicBrokerConfig
from kafkacore.broker.config.logging_controller import (
    LEVELS,
    RESOURCE_TYPE_BROKER_LOGGER,
    ROOT_LOGGER,
    LoggingController,
)
from kafkacore.broker.group.group_config import (
    RESOURCE_TYPE_GROUP,
    group_defaults,
    validate_group_configs,
)
from kafkacore.broker.log import LogConfig
from kafkacore.broker.metadata.metadata_cache import RESOURCE_TYPE_BROKER, RESOURCE_TYPE_TOPIC
from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.errors import Errors

if TYPE_CHECKING:
    from kafkacore.broker.server.broker_server import Broker
    from kafkacore.broker.server.kafka_apis import KafkaApis

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


def _operation(config: dict[str, Any]) -> OpType:
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
        op = _operation(c)
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
        op = _operation(c)
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


def apply_topic_configs(broker: Broker, name: str, configs: dict[str, str]) -> None:
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


def apply_broker_configs(broker: Broker, name: str, configs: dict[str, str]) -> None:
    """A broker resource's new dynamic configs: persisted, then in force (every log's
    defaults follow)."""
    broker.metadata_cache.alter_broker_configs(name, configs)
    broker.dynamic_config.update(name, configs)
    log.info("broker resource %r: dynamic configs now %s", name, configs)


class ConfigAdminManager:
    """The broker's side of config changes (Kafka's ``ConfigAdminManager``): the principal's
    rights, then the change itself, made here by a broker alone (its own controller) or
    forwarded to the controller in a cluster."""

    def __init__(self, apis: KafkaApis) -> None:
        self.apis = apis
        self.broker = apis.broker

    def handle_incremental_alter_configs_request(self, request: Request) -> None:
        self._handle(request, incremental=True)

    def handle_alter_configs_request(self, request: Request) -> None:
        self._handle(request, incremental=False)

    def _handle(self, request: Request, incremental: bool) -> None:
        if request.body is None:
            raise errors.IllegalStateError(f"{request!r}: dispatched without a decoded body")
        body = request.body
        refused = []
        allowed = []
        loggers = []  # this broker's own, never forwarded (Kafka's ConfigAdminManager.preprocess)
        groups = []  # GROUP resources: kept by this broker (see _alter_group)
        for res in body["resources"]:
            error = self._refused(request, res["resource_type"], res["resource_name"])
            if error == Errors.NONE and incremental and \
                    res["resource_type"] == RESOURCE_TYPE_BROKER_LOGGER:
                loggers.append(res)
            elif error == Errors.NONE and res["resource_type"] == RESOURCE_TYPE_GROUP:
                groups.append(res)
            elif error == Errors.NONE:
                allowed.append(res)
            else:
                refused.append({"error_code": error, "error_message": None,
                                "resource_type": res["resource_type"],
                                "resource_name": res["resource_name"]})
        refused += alter_resources(loggers, incremental, body["validate_only"], self._alter_logger,
                                   kinds=(RESOURCE_TYPE_BROKER_LOGGER,))
        refused += alter_resources(groups, incremental, body["validate_only"], self._alter_group,
                                   kinds=(RESOURCE_TYPE_GROUP,))
        body["resources"] = allowed
        if allowed and self.apis.forward_to_controller(request, ("responses", refused)):
            return
        results = alter_resources(allowed, incremental, body["validate_only"], self._alter_one)
        self.apis.respond(request, {"throttle_time_ms": 0, "responses": refused + results})

    def _refused(self, request: Request, kind: int, name: str) -> int:
        """Kafka's checks: ALTER_CONFIGS on the topic, or on the cluster for a broker or its
        loggers."""
        if kind == RESOURCE_TYPE_TOPIC and not self.apis.authorize_topic(
                request, AclOperation.ALTER_CONFIGS, name):
            return Errors.TOPIC_AUTHORIZATION_FAILED
        if kind in (RESOURCE_TYPE_BROKER, RESOURCE_TYPE_BROKER_LOGGER) and not self.apis.authorize(
                request, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER):
            return Errors.CLUSTER_AUTHORIZATION_FAILED
        if kind == RESOURCE_TYPE_GROUP and not self.apis.authorize(
                request, AclOperation.ALTER_CONFIGS, ResourceType.GROUP, name):
            return Errors.GROUP_AUTHORIZATION_FAILED
        return Errors.NONE

    def _alter_group(self, kind: int, name: str, configs: list[dict[str, Any]],
                     incremental: bool, validate_only: bool) -> None:
        """A group's configs (Kafka 4's GroupConfig), checked whole, then stored: persisted in
        the metadata log by a broker alone; a broker of a cluster keeps them in memory, as
        the controller does not take GROUP resources yet."""
        if not name:
            raise errors.InvalidRequestError("Group name must not be empty")
        broker = self.broker
        current = broker.metadata_cache.group_configs(name)
        effective = {**group_defaults(broker.config), **current}
        for c in configs:  # Kafka: no group config is a list
            if incremental and _operation(c) in (OpType.APPEND, OpType.SUBTRACT):
                raise errors.InvalidConfigError(
                    f"Config value {_operation(c).name.lower()} is not allowed for config "
                    f"key: {c['name']}")
        new = apply_ops(current, configs, incremental, effective)
        new = validate_group_configs(new, broker.config)
        if not validate_only:
            broker.metadata_cache.alter_group_configs(name, new,
                                                      persist=broker.lifecycle is None)
            log.info("group %s: configs now %s", name, new)

    def _alter_logger(self, kind: int, name: str, configs: list[dict[str, Any]],
                      incremental: bool, validate_only: bool) -> None:
        if name != str(self.broker.broker_id):
            raise errors.InvalidRequestError(
                f"Unexpected broker id, expected {self.broker.broker_id} but received {name}")
        alter_log_levels(configs, validate_only)

    def _alter_one(self, kind: int, name: str, configs: list[dict[str, Any]], incremental: bool,
                   validate_only: bool) -> None:
        broker = self.broker
        if kind == RESOURCE_TYPE_TOPIC:
            meta = broker.metadata_cache.get(name)
            if meta is None:
                raise errors.UnknownTopicOrPartitionError(f"Topic {name} does not exist")
            new = new_topic_configs(meta.configs, configs, incremental,
                                    broker.log_manager.default_config)
            if not validate_only:
                apply_topic_configs(broker, name, new)
            return
        if name not in (DEFAULT_RESOURCE, str(broker.broker_id)):
            raise errors.InvalidRequestError(
                f"Unexpected broker id, expected {broker.broker_id} or empty string, but "
                f"received {name}")
        new = new_broker_configs(broker.dynamic_config.dynamic(name), configs, incremental)
        if not validate_only:
            apply_broker_configs(broker, name, new)


__all__ = ["RESOURCE_TYPE_BROKER", "RESOURCE_TYPE_TOPIC", "ConfigAdminManager", "OpType", "alter_log_levels", "alter_resources", "apply_broker_configs",
           "apply_topic_configs", "new_broker_configs", "new_topic_configs"]
