"""``ConfigHelper``: DescribeConfigs, the settings of topics and brokers and where each comes from.

A topic's setting is its own (``DYNAMIC_TOPIC_CONFIG``) or the broker's default for it, which
is reported with the source of that broker setting (a dynamic default, server.properties, or
Kafka's default).  A broker's setting comes from the first of its layers that sets it
(:class:`~kafkacore.broker.config.dynamic_broker_config.DynamicBrokerConfig`).  The cluster-wide
default resource (the broker named "") lists only its dynamic settings, as Kafka does.
See docs/broker/admin.rst.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkacore.broker.config.config_admin_manager import RESOURCE_TYPE_BROKER, RESOURCE_TYPE_TOPIC
from kafkacore.broker.config.config_source import (
    ConfigSource,
    ConfigType,
    DescribedConfig,
    config_type,
    config_value_string,
)
from kafkacore.broker.config.dynamic_broker_config import DEFAULT_RESOURCE, TOPIC_SYNONYMS
from kafkacore.broker.config.kafka_config import SETTINGS, is_sensitive
from kafkacore.broker.config.logging_controller import (
    RESOURCE_TYPE_BROKER_LOGGER,
    LoggingController,
)
from kafkacore.broker.group.group_config import GROUP_CONFIGS, RESOURCE_TYPE_GROUP, group_defaults
from kafkacore.broker.log import LogConfig
from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.errors import Errors, IllegalStateError

if TYPE_CHECKING:
    from kafkacore.broker.server.kafka_apis import KafkaApis


class ConfigHelper:
    """Answers DescribeConfigs (Kafka's ``ConfigHelper``)."""

    def __init__(self, apis: KafkaApis) -> None:
        self.apis = apis
        self.broker = apis.broker

    def handle_describe_configs_request(self, request: Request) -> None:
        """Kafka's checks: a topic needs DESCRIBE_CONFIGS on it, a broker DESCRIBE_CONFIGS on
        the cluster; a broker describes itself and the cluster-wide default ("")."""
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        documented = bool(request.body.get("include_documentation"))
        results = []
        for res in request.body["resources"]:
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
        self.apis.respond(request, {"throttle_time_ms": 0, "results": results})

    def _describe_topic_configs(self, request: Request, res: dict[str, Any],
                                result: dict[str, Any]) -> list[DescribedConfig]:
        name = res["resource_name"]
        meta = self.broker.metadata_cache.get(name)
        if not self.apis.authorize_topic(request, AclOperation.DESCRIBE_CONFIGS, name):
            result["error_code"] = Errors.TOPIC_AUTHORIZATION_FAILED
            return []
        if meta is None:
            result.update(error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION,
                          error_message=f"topic {name!r} does not exist")
            return []
        dynamic = self.broker.dynamic_config
        config = LogConfig.from_properties(meta.configs, base=self.broker.log_manager.default_config)

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
        if not self.apis.authorize(request, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER):
            result["error_code"] = Errors.CLUSTER_AUTHORIZATION_FAILED
            return []
        dynamic = self.broker.dynamic_config
        if name == DEFAULT_RESOURCE:
            return [(key, value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, is_sensitive(key),
                     config_type(key, SETTINGS[key].parse(key, value)), SETTINGS[key].doc)
                    for key, value in sorted(dynamic.dynamic(DEFAULT_RESOURCE).items())]
        if name != str(self.broker.broker_id):
            result.update(error_code=Errors.INVALID_REQUEST,
                          error_message=f"unexpected broker id {name!r}: this is broker "
                                        f"{self.broker.broker_id}")
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
        if not self.apis.authorize(request, AclOperation.DESCRIBE_CONFIGS, ResourceType.GROUP,
                                   name):
            result["error_code"] = Errors.GROUP_AUTHORIZATION_FAILED
            return []
        if not name:
            result.update(error_code=Errors.INVALID_REQUEST,
                          error_message="Group name must not be empty")
            return []
        own = self.broker.metadata_cache.group_configs(name)
        return [(key, own.get(key, default),
                 ConfigSource.GROUP_CONFIG if key in own else ConfigSource.DEFAULT_CONFIG,
                 False, ConfigType[GROUP_CONFIGS[key].type], GROUP_CONFIGS[key].doc)
                for key, default in group_defaults(self.broker.config).items()]

    def _describe_logger_configs(self, request: Request, res: dict[str, Any],
                                 result: dict[str, Any]) -> list[DescribedConfig]:
        """This broker's loggers and their levels in force: DESCRIBE_CONFIGS on the cluster, as
        for the broker's settings."""
        name = res["resource_name"]
        if not self.apis.authorize(request, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER):
            result["error_code"] = Errors.CLUSTER_AUTHORIZATION_FAILED
            return []
        if name != str(self.broker.broker_id):
            result.update(error_code=Errors.INVALID_REQUEST,
                          error_message=f"Unexpected broker id, expected "
                                        f"{self.broker.broker_id} but received {name}")
            return []
        return [(logger, level, ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, False,
                 ConfigType.STRING, None)
                for logger, level in LoggingController.loggers().items()]


__all__ = ["ConfigHelper"]
