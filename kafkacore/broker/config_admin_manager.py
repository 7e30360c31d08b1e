"""``ConfigAdminManager``: AlterConfigs and IncrementalAlterConfigs, for topics and brokers.

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
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from kafkacore import errors
from kafkacore.broker.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.dynamic_broker_config import DEFAULT_RESOURCE, DynamicBrokerConfig
from kafkacore.broker.log import LogConfig
from kafkacore.broker.request_channel import Request
from kafkacore.errors import Errors

if TYPE_CHECKING:
    from kafkacore.broker.apis import KafkaApis

log = logging.getLogger(__name__)

#: ConfigResource.Type, as the wire carries it
RESOURCE_TYPE_TOPIC = 2
RESOURCE_TYPE_BROKER = 4

#: Topic settings whose value is a comma-separated list (APPEND and SUBTRACT work on them).
LIST_SETTINGS = frozenset({"cleanup.policy"})


class OpType(IntEnum):
    """IncrementalAlterConfigs' operations (Kafka's ``AlterConfigOp.OpType``)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigAdminManager:
    """Checks, persists and applies config changes (Kafka's ``ConfigAdminManager`` on the broker
    and the controller's ``ConfigurationControlManager``: a broker alone is its own controller)."""

    def __init__(self, apis: KafkaApis) -> None:
        self.apis = apis
        self.broker = apis.broker

    # -- the two requests --------------------------------------------------------------------

    def handle_incremental_alter_configs_request(self, request: Request) -> None:
        self._handle(request, incremental=True)

    def handle_alter_configs_request(self, request: Request) -> None:
        self._handle(request, incremental=False)

    def _handle(self, request: Request, incremental: bool) -> None:
        assert request.body is not None
        body = request.body
        seen = Counter((r["resource_type"], r["resource_name"]) for r in body["resources"])
        results = []
        for res in body["resources"]:
            key = (res["resource_type"], res["resource_name"])
            if seen[key] > 1:
                error, message = Errors.INVALID_REQUEST, "Duplicate resource in the request"
            else:
                error, message = self._alter_resource(request, res, incremental,
                                                      body["validate_only"])
            results.append({"error_code": error, "error_message": message,
                            "resource_type": res["resource_type"],
                            "resource_name": res["resource_name"]})
        self.apis.respond(request, {"throttle_time_ms": 0, "responses": results})

    def _alter_resource(self, request: Request, res: dict[str, Any], incremental: bool,
                        validate_only: bool) -> tuple[int, str | None]:
        kind, name = res["resource_type"], res["resource_name"]
        if kind == RESOURCE_TYPE_TOPIC:
            if not self.apis.authorize_topic(request, AclOperation.ALTER_CONFIGS, name):
                return Errors.TOPIC_AUTHORIZATION_FAILED, None
        elif kind == RESOURCE_TYPE_BROKER:
            if not self.apis.authorize(request, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER):
                return Errors.CLUSTER_AUTHORIZATION_FAILED, None
        else:
            return Errors.INVALID_REQUEST, f"Unsupported resource type {kind}: this broker " \
                                           "alters the configs of topics and brokers"
        names = Counter(c["name"] for c in res["configs"])
        repeated = sorted(n for n, count in names.items() if count > 1)
        if repeated:
            return Errors.INVALID_REQUEST, f"Error due to duplicate config keys: {repeated}"
        try:
            if kind == RESOURCE_TYPE_TOPIC:
                self._alter_topic(name, res["configs"], incremental, validate_only)
            else:
                self._alter_broker(name, res["configs"], incremental, validate_only)
        except errors.BrokerResponseError as exc:
            return exc.errno, str(exc) or None
        return Errors.NONE, None

    # -- computing the new set -----------------------------------------------------------------

    @staticmethod
    def _apply_ops(current: dict[str, str], configs: list[dict[str, Any]], incremental: bool,
                   effective: dict[str, str]) -> dict[str, str]:
        """The resource's dynamic configs after the request's changes.  ``effective``: the
        values in force (a list setting APPENDs to what is in force, its default included)."""
        if not incremental:  # AlterConfigs: the request's set replaces the old one
            return {c["name"]: c["value"] for c in configs if c["value"] is not None}
        new = dict(current)
        for c in configs:
            name, value = c["name"], c["value"]
            try:
                op = OpType(c["config_operation"])
            except ValueError:
                raise errors.InvalidRequestError(
                    f"Unknown operation {c['config_operation']} for {name}") from None
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

    # -- topics ------------------------------------------------------------------------------

    def _alter_topic(self, name: str, configs: list[dict[str, Any]], incremental: bool,
                     validate_only: bool) -> None:
        meta = self.broker.metadata_cache.get(name)
        if meta is None:
            raise errors.UnknownTopicOrPartitionError(f"Topic {name} does not exist")
        default = self.broker.log_manager.default_config
        effective = LogConfig.from_properties(meta.configs, base=default).to_properties()
        new = self._apply_ops(meta.configs, configs, incremental, effective)
        config = LogConfig.from_properties(new, base=default)  # raises InvalidConfigError
        if validate_only:
            return
        self.broker.metadata_cache.alter_topic_configs(name, new)
        for p in range(meta.partitions):
            lg = self.broker.log_manager.get_log(name, p)
            if lg is not None:
                lg.update_config(config)
        log.info("topic %s: configs now %s", name, new)

    # -- brokers -----------------------------------------------------------------------------

    def _alter_broker(self, name: str, configs: list[dict[str, Any]], incremental: bool,
                      validate_only: bool) -> None:
        dynamic: DynamicBrokerConfig = self.broker.dynamic_config
        if name not in (DEFAULT_RESOURCE, str(self.broker.broker_id)):
            raise errors.InvalidRequestError(
                f"Unexpected broker id, expected {self.broker.broker_id} or empty string, but "
                f"received {name}")
        current = dynamic.dynamic(name)
        new = self._apply_ops(current, configs, incremental, {})  # no broker list settings
        for key in sorted(set(new) | {c["name"] for c in configs}):
            dynamic.validate(key, new.get(key))
        if validate_only:
            return
        self.broker.metadata_cache.alter_broker_configs(name, new)
        dynamic.update(name, new)
        log.info("broker resource %r: dynamic configs now %s", name, new)


__all__ = ["ConfigAdminManager", "OpType"]
