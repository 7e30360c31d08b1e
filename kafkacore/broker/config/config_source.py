"""Where a described config comes from, and what type its value has (Kafka's
``DescribeConfigsResponse.ConfigSource`` and ``ConfigType``), as DescribeConfigs answers them."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from kafkacore.broker.config.kafka_config import Password

INT32_MAX = (1 << 31) - 1


class ConfigSource(IntEnum):
    UNKNOWN = 0
    TOPIC_CONFIG = 1  #: a topic's own setting (Kafka's DYNAMIC_TOPIC_CONFIG)
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4  #: set in server.properties
    DEFAULT_CONFIG = 5  #: nobody set it: the default
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8  #: a group's own setting (GROUP resource)


class ConfigType(IntEnum):
    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


#: One described setting: name, value, source, is it sensitive, its type, its documentation.
DescribedConfig = tuple[str, "str | None", ConfigSource, bool, ConfigType, "str | None"]


def config_type(name: str, value: Any) -> ConfigType:
    """The type of a value as a client shows it.  Our settings carry Python values (a topic's
    their strings), not Kafka's ConfigDef types: an integer is a LONG when it is a duration
    (``*.ms``) or outside an int, else an INT, as Kafka mostly declares them."""
    if isinstance(value, Password):
        return ConfigType.PASSWORD
    if isinstance(value, bool) or value in ("true", "false"):
        return ConfigType.BOOLEAN
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            return ConfigType.STRING
    if isinstance(value, int):
        return ConfigType.LONG if name.endswith(".ms") or abs(value) > INT32_MAX else ConfigType.INT
    return ConfigType.STRING


def config_value_string(value: Any) -> str | None:
    """A setting's value as Kafka writes it: ``true``/``false``, ``host:n,...`` for a map,
    null where unset."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return ",".join(f"{k}:{v}" for k, v in value.items())
    return str(value)


__all__ = ["ConfigSource", "ConfigType", "DescribedConfig", "config_type", "config_value_string"]
