"""``GroupConfig``: the configs of one group, a GROUP config resource (Kafka's ``GroupConfig``,
KIP-848 and KIP-932).

DescribeConfigs and IncrementalAlterConfigs take GROUP resources (type 32): a group may set its
own session timeout and heartbeat interval, which its consumer-protocol members then get instead
of the broker's ``group.consumer.*`` settings.  The share and streams configs are accepted and
checked as Kafka does, but this broker has no share groups nor streams groups, so they change
nothing (their documentation says so).  See docs/broker/configs.rst.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from kafkacore.broker.config.config_resource import RESOURCE_TYPE_GROUP
from kafkacore.errors import InvalidConfigError


class GroupConfigDef(NamedTuple):
    type: str  #: INT or STRING
    #: the broker setting that is its default, or Kafka's default
    default: str | int
    #: INT: the lowest value ConfigDef allows; STRING: the allowed values
    valid: Any
    #: INT: (broker setting or Kafka's number) bounding it from below and above
    bounds: tuple[str | int, str | int] | None
    doc: str


_NO_SUCH_GROUPS = "Accepted and checked as Kafka does; this broker has no {} groups, so it " \
                  "changes nothing here."

#: Kafka 4's group configs, with its defaults and checks (GroupConfig.validateValues: each
#: between the broker's min and max, a session longer than its heartbeat interval).
GROUP_CONFIGS: dict[str, GroupConfigDef] = {
    "consumer.session.timeout.ms": GroupConfigDef(
        "INT", "group.consumer.session.timeout.ms", 1,
        ("group.consumer.min.session.timeout.ms", 60000),
        "A consumer-protocol member of this group silent this long is removed."),
    "consumer.heartbeat.interval.ms": GroupConfigDef(
        "INT", "group.consumer.heartbeat.interval.ms", 1, (5000, 15000),
        "How often this group's consumer-protocol members heartbeat."),
    "share.session.timeout.ms": GroupConfigDef(
        "INT", 45000, 1, (45000, 60000), _NO_SUCH_GROUPS.format("share")),
    "share.heartbeat.interval.ms": GroupConfigDef(
        "INT", 5000, 1, (5000, 15000), _NO_SUCH_GROUPS.format("share")),
    "share.record.lock.duration.ms": GroupConfigDef(
        "INT", 30000, 1000, (15000, 60000), _NO_SUCH_GROUPS.format("share")),
    "share.auto.offset.reset": GroupConfigDef(
        "STRING", "latest", ("latest", "earliest"), None, _NO_SUCH_GROUPS.format("share")),
    "share.isolation.level": GroupConfigDef(
        "STRING", "read_uncommitted", ("read_committed", "read_uncommitted"), None,
        _NO_SUCH_GROUPS.format("share")),
    "streams.session.timeout.ms": GroupConfigDef(
        "INT", 45000, 1, (45000, 60000), _NO_SUCH_GROUPS.format("streams")),
    "streams.heartbeat.interval.ms": GroupConfigDef(
        "INT", 5000, 1, (5000, 15000), _NO_SUCH_GROUPS.format("streams")),
    "streams.num.standby.replicas": GroupConfigDef(
        "INT", 0, 0, (0, 2), _NO_SUCH_GROUPS.format("streams")),
}

#: (session, heartbeat) pairs: the session must be longer than the heartbeat interval
_PAIRS = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
          ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
          ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"))


def _number(broker_config: Any, value: str | int) -> Any:
    """A default or bound: a broker setting's value, or a number as it is."""
    return broker_config[value] if isinstance(value, str) and "." in value else value


def group_defaults(broker_config: Any) -> dict[str, str]:
    """Every group config's default: the broker's setting where it has one."""
    return {name: str(_number(broker_config, d.default)) for name, d in GROUP_CONFIGS.items()}


def validate_group_configs(configs: Mapping[str, str], broker_config: Any
                           ) -> dict[str, str]:
    """A group's own configs, checked (Kafka's ``GroupConfig.validate``): names, types,
    ConfigDef bounds, then each between the broker's bounds and every session longer than
    its heartbeat interval.  Raises :class:`~kafkacore.errors.InvalidConfigError`."""
    values: dict[str, Any] = {}
    for name, raw in configs.items():
        spec = GROUP_CONFIGS.get(name)
        if spec is None:
            raise InvalidConfigError(f"Unknown group config name: {name}")
        text = str(raw).strip()
        if spec.type == "INT":
            try:
                value: Any = int(text)
            except ValueError:
                raise InvalidConfigError(f"Invalid value {raw} for configuration {name}: "
                                         "Not a number of type INT") from None
            if not -(1 << 31) <= value < (1 << 31):
                raise InvalidConfigError(f"Invalid value {raw} for configuration {name}: "
                                         "Not a number of type INT")
            if value < spec.valid:
                raise InvalidConfigError(f"Invalid value {raw} for configuration {name}: "
                                         f"Value must be at least {spec.valid}")
        else:
            value = text
            if value not in spec.valid:
                raise InvalidConfigError(f"Invalid value {raw} for configuration {name}: "
                                         f"String must be one of: {', '.join(spec.valid)}")
        values[name] = value
    effective = {**{k: _number(broker_config, d.default) for k, d in GROUP_CONFIGS.items()},
                 **values}
    for name in values:
        bounds = GROUP_CONFIGS[name].bounds
        if bounds is None:
            continue
        low, high = (_number(broker_config, b) for b in bounds)
        if values[name] < low:
            raise InvalidConfigError(f"{name} must be greater than or equal to {low}")
        if values[name] > high:
            raise InvalidConfigError(f"{name} must be less than or equal to {high}")
    for session, heartbeat in _PAIRS:
        if (session in values or heartbeat in values) and \
                int(effective[session]) <= int(effective[heartbeat]):
            raise InvalidConfigError(f"{session} must be greater than {heartbeat}")
    return {name: str(value) for name, value in values.items()}


__all__ = ["GROUP_CONFIGS", "RESOURCE_TYPE_GROUP", "group_defaults", "validate_group_configs"]
