"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: the settings of topics, brokers,
their loggers and groups.

``ConfigHelper`` (DescribeConfigs) says where each setting comes from.

A topic's setting is its own (``DYNAMIC_TOPIC_CONFIG``) or the broker's default for it, which
is reported with the source of that broker setting (a dynamic default, server.properties, or
Kafka's default).  A broker's setting comes from the first of its layers that sets it
(:class:`~kafkacore.broker.config.dynamic_broker_config.DynamicBrokerConfig`).  The cluster-wide
default resource (the broker named "") lists only its dynamic settings, as Kafka does.

``ConfigAdminManager`` (AlterConfigs, IncrementalAlterConfigs) checks the principal's rights,
then has the change made: by the controller in a cluster (forwarded), by this broker alone
(:mod:`kafkacore.broker.config.config_admin_manager`, the checks and changes the controller
shares); a broker's loggers and groups' configs are this broker's own.  See docs/broker/admin.rst.
"""

from __future__ import annotations

import logging
from typing import Any

from kafkacore import errors
from kafkacore.broker.config.config_admin_manager import (
    RESOURCE_TYPE_BROKER,
    RESOURCE_TYPE_TOPIC,
    OpType,
    alter_log_levels,
    alter_resources,
    apply_broker_configs,
    apply_ops,
    apply_topic_configs,
    config_operation,
    new_broker_configs,
    new_topic_configs,
)
from kafkacore.broker.config.config_source import (
    ConfigSource,
    ConfigType,
    DescribedConfig,
    config_type,
    config_value_string,
)
from kafkacore.broker.config.dynamic_broker_config import DEFAULT_RESOURCE, TOPIC_SYNONYMS
from kafkacore.broker.config.group_config import (
    GROUP_CONFIGS,
    RESOURCE_TYPE_GROUP,
    group_defaults,
    validate_group_configs,
)
from kafkacore.broker.config.kafka_config import SETTINGS, is_sensitive
from kafkacore.broker.config.logging_controller import (
    RESOURCE_TYPE_BROKER_LOGGER,
    LoggingController,
)
from kafkacore.broker.log import LogConfig
from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.server.apis.base import KafkaApisBase, body_of
from kafkacore.errors import Errors

log = logging.getLogger(__name__)


class ConfigHelper(KafkaApisBase):
    """Answers DescribeConfigs (Kafka's ``ConfigHelper``)."""

    def handle_describe_configs_request(self, request: Request) -> None:
        """Kafka's checks: a topic needs DESCRIBE_CONFIGS on it, a broker DESCRIBE_CONFIGS on
        the cluster; a broker describes itself and the cluster-wide default ("")."""
        body = body_of(request)
        documented = bool(body.get("include_documentation"))
        results = []
        for res in body["resources"]:
            result: dict[str, Any] = {"error_code": Errors.NONE, "error_message": None,
                                      "resource_type": res["resource_type"],
                                      "resource_name": res["resource_name"], "configs": []}
            if res["resource_type"] == RESOURCE_TYPE_TOPIC:
                configs = self._describe_topic_configs(request, res, result)
            elif res["resource_type"] == RESOURCE_TYPE_BROKER:
                configs = self._describe_broker_configs(request, res, result)
            elif res["resource_type"] == RESOURCE_TYPE_BROKER_LOGGER:
                configs = self._describe_logger_configs(request, res, result)
            elif res["resource_type"] == RESOURCE_TYPE_GROUP:
                configs = self._describe_group_configs(request, res, result)
            else:
                result.update(error_code=Errors.INVALID_REQUEST,
                              error_message="this broker describes topics, brokers, "
                                            "broker loggers and groups only")
                configs = []
            keys = res["configuration_keys"]
            for name, value, source, sensitive, value_type, doc in configs:
                if keys is not None and name not in keys:
                    continue
                result["configs"].append({
                    "name": name, "value": None if sensitive else value, "read_only": False,
                    "is_default": source == ConfigSource.DEFAULT_CONFIG, "config_source": source,
                    "is_sensitive": sensitive, "synonyms": [], "config_type": value_type,
                    "documentation": doc if documented else None,
                })
            results.append(result)
        self.respond(request, {"throttle_time_ms": 0, "results": results})

    def _describe_topic_configs(self, request: Request, res: dict[str, Any],
                                result: dict[str, Any]) -> list[DescribedConfig]:
        name = res["resource_name"]
        meta = self.metadata_cache.get(name)
        if not self.authorize_topic(request, AclOperation.DESCRIBE_CONFIGS, name):
            result["error_code"] = Errors.TOPIC_AUTHORIZATION_FAILED
            return []
        if meta is None:
            result.update(error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION,
                          error_message=f"topic {name!r} does not exist")
            return []
        dynamic = self.dynamic_config
        config = LogConfig.from_properties(meta.configs, base=self.log_manager.default_config)

        def source(key: str) -> ConfigSource:
            if key in meta.configs:
                return ConfigSource.TOPIC_CONFIG
            synonym = TOPIC_SYNONYMS.get(key)
            return ConfigSource.DEFAULT_CONFIG if synonym is None else dynamic.source(synonym)

        # Kafka's type of each topic config, and what it means here (its documentation says
        # when a config is accepted but has no effect on this broker).
        return [(key, value, source(key), False, ConfigType[LogConfig.config_type(key)],
                 LogConfig.documentation(key))
                for key, value in config.to_properties().items()]

    def _describe_broker_configs(self, request: Request, res: dict[str, Any],
                                 result: dict[str, Any]) -> list[DescribedConfig]:
        name = res["resource_name"]
        if not self.authorize(request, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER):
            result["error_code"] = Errors.CLUSTER_AUTHORIZATION_FAILED
            return []
        dynamic = self.dynamic_config
        if name == DEFAULT_RESOURCE:
            return [(key, value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, is_sensitive(key),
                     config_type(key, SETTINGS[key].parse(key, value)), SETTINGS[key].doc)
                    for key, value in sorted(dynamic.dynamic(DEFAULT_RESOURCE).items())]
        if name != str(self.broker_id):
            result.update(error_code=Errors.INVALID_REQUEST,
                          error_message=f"unexpected broker id {name!r}: this is broker "
                                        f"{self.broker_id}")
            return []
        return [(key, config_value_string(dynamic[key]), dynamic.source(key), is_sensitive(key),
                 config_type(key, dynamic[key]), setting.doc)
                for key, setting in SETTINGS.items()]

    def _describe_group_configs(self, request: Request, res: dict[str, Any],
                                result: dict[str, Any]) -> list[DescribedConfig]:
        """A group's configs (Kafka 4's GroupConfig): its own (GROUP_CONFIG) or the default
        (the broker's setting, or Kafka's); DESCRIBE_CONFIGS on the group.  The group need
        not exist, as in Kafka."""
        name = res["resource_name"]
        if not self.authorize(request, AclOperation.DESCRIBE_CONFIGS, ResourceType.GROUP,
                                   name):
            result["error_code"] = Errors.GROUP_AUTHORIZATION_FAILED
            return []
        if not name:
            result.update(error_code=Errors.INVALID_REQUEST,
                          error_message="Group name must not be empty")
            return []
        own = self.metadata_cache.group_configs(name)
        return [(key, own.get(key, default),
                 ConfigSource.GROUP_CONFIG if key in own else ConfigSource.DEFAULT_CONFIG,
                 False, ConfigType[GROUP_CONFIGS[key].type], GROUP_CONFIGS[key].doc)
                for key, default in group_defaults(self.config).items()]

    def _describe_logger_configs(self, request: Request, res: dict[str, Any],
                                 result: dict[str, Any]) -> list[DescribedConfig]:
        """This broker's loggers and their levels in force: DESCRIBE_CONFIGS on the cluster, as
        for the broker's settings."""
        name = res["resource_name"]
        if not self.authorize(request, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER):
            result["error_code"] = Errors.CLUSTER_AUTHORIZATION_FAILED
            return []
        if name != str(self.broker_id):
            result.update(error_code=Errors.INVALID_REQUEST,
                          error_message=f"Unexpected broker id, expected "
                                        f"{self.broker_id} but received {name}")
            return []
        return [(logger, level, ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, False,
                 ConfigType.STRING, None)
                for logger, level in LoggingController.loggers().items()]


class ConfigAdminManager(KafkaApisBase):
    """The broker's side of config changes (Kafka's ``ConfigAdminManager``): the principal's
    rights, then the change itself, made here by a broker alone (its own controller) or
    forwarded to the controller in a cluster."""

    def handle_incremental_alter_configs_request(self, request: Request) -> None:
        self._alter_configs(request, incremental=True)

    def handle_alter_configs_request(self, request: Request) -> None:
        self._alter_configs(request, incremental=False)

    def _alter_configs(self, request: Request, incremental: bool) -> None:
        body = body_of(request)
        refused = []
        allowed = []
        loggers = []  # this broker's own, never forwarded (Kafka's ConfigAdminManager.preprocess)
        groups = []  # GROUP resources: kept by this broker (see _alter_group)
        for res in body["resources"]:
            error = self._alter_configs_refused(request, res["resource_type"], res["resource_name"])
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
        if allowed and self.forward_to_controller(request, ("responses", refused)):
            return
        results = alter_resources(allowed, incremental, body["validate_only"], self._alter_one)
        self.respond(request, {"throttle_time_ms": 0, "responses": refused + results})

    def _alter_configs_refused(self, request: Request, kind: int, name: str) -> int:
        """Kafka's checks: ALTER_CONFIGS on the topic, or on the cluster for a broker or its
        loggers."""
        if kind == RESOURCE_TYPE_TOPIC and not self.authorize_topic(
                request, AclOperation.ALTER_CONFIGS, name):
            return Errors.TOPIC_AUTHORIZATION_FAILED
        if kind in (RESOURCE_TYPE_BROKER, RESOURCE_TYPE_BROKER_LOGGER) and not self.authorize(
                request, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER):
            return Errors.CLUSTER_AUTHORIZATION_FAILED
        if kind == RESOURCE_TYPE_GROUP and not self.authorize(
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
        current = self.metadata_cache.group_configs(name)
        effective = {**group_defaults(self.config), **current}
        for c in configs:  # Kafka: no group config is a list
            if incremental and config_operation(c) in (OpType.APPEND, OpType.SUBTRACT):
                raise errors.InvalidConfigError(
                    f"Config value {config_operation(c).name.lower()} is not allowed for config "
                    f"key: {c['name']}")
        new = apply_ops(current, configs, incremental, effective)
        new = validate_group_configs(new, self.config)
        if not validate_only:
            self.metadata_cache.alter_group_configs(name, new, persist=not self.in_cluster)
            log.info("group %s: configs now %s", name, new)

    def _alter_logger(self, kind: int, name: str, configs: list[dict[str, Any]],
                      incremental: bool, validate_only: bool) -> None:
        if name != str(self.broker_id):
            raise errors.InvalidRequestError(
                f"Unexpected broker id, expected {self.broker_id} but received {name}")
        alter_log_levels(configs, validate_only)

    def _alter_one(self, kind: int, name: str, configs: list[dict[str, Any]], incremental: bool,
                   validate_only: bool) -> None:
        if kind == RESOURCE_TYPE_TOPIC:
            meta = self.metadata_cache.get(name)
            if meta is None:
                raise errors.UnknownTopicOrPartitionError(f"Topic {name} does not exist")
            new = new_topic_configs(meta.configs, configs, incremental,
                                    self.log_manager.default_config)
            if not validate_only:
                apply_topic_configs(self, name, new)
            return
        if name not in (DEFAULT_RESOURCE, str(self.broker_id)):
            raise errors.InvalidRequestError(
                f"Unexpected broker id, expected {self.broker_id} or empty string, but "
                f"received {name}")
        new = new_broker_configs(self.dynamic_config.dynamic(name), configs, incremental)
        if not validate_only:
            apply_broker_configs(self, name, new)


__all__ = ["ConfigAdminManager", "ConfigHelper"]
