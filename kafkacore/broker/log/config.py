"""``LogConfig``: a partition's log settings, by Kafka's topic-config names (Kafka's ``LogConfig``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import cast

from kafkacore.errors import InvalidConfigError

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1

#: Kafka's topic-config name -> (field, type, lowest allowed value or allowed strings).
_SPEC: dict[str, tuple[str, type, object]] = {
    "segment.bytes": ("segment_bytes", int, 14),  # Kafka: at least LegacyRecord.RECORD_OVERHEAD_V0
    "segment.ms": ("segment_ms", int, 1),
    "segment.index.bytes": ("segment_index_bytes", int, 8),
    "retention.ms": ("retention_ms", int, -1),
    "retention.bytes": ("retention_bytes", int, -1),
    "max.message.bytes": ("max_message_bytes", int, 0),
    "message.timestamp.type": ("message_timestamp_type", str, ("CreateTime", "LogAppendTime")),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", int, 0),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", int, 0),
    "flush.messages": ("flush_messages", int, 1),
    "flush.ms": ("flush_ms", int, 0),
    "index.interval.bytes": ("index_interval_bytes", int, 0),
    "cleanup.policy": ("cleanup_policy", str, ("delete", "compact", "compact,delete")),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", float, (0.0, 1.0)),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", int, 0),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", int, 1),
    "delete.retention.ms": ("delete_retention_ms", int, 0),
    "producer.id.expiration.ms": ("producer_id_expiration_ms", int, 1),
    "min.insync.replicas": ("min_insync_replicas", int, 1),
}

#: The settings Kafka declares as INT (the others of type int are LONG): its messages name the type.
_INT_SETTINGS = frozenset({"segment.bytes", "segment.index.bytes", "max.message.bytes",
                           "index.interval.bytes", "min.insync.replicas"})


def invalid_value(name: str, raw: object, why: str) -> InvalidConfigError:
    """Kafka's ``ConfigException`` wording, which admin clients show as it is."""
    return InvalidConfigError(f"Invalid value {raw} for configuration {name}: {why}")


@dataclass(frozen=True)
class LogConfig:
    """One partition's log settings, with Kafka 4's defaults.

    ``flush_messages`` is the topic's ``flush.messages`` (the broker's
    ``log.flush.interval.messages``): fsync after that many appended records.  The default,
    ``Long.MAX_VALUE``, never fsyncs from the append path: the data sits in the page cache, which
    survives a crash of the broker process but not of the machine (Kafka's answer is replication).
    """

    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_index_bytes: int = 10 * 1024 * 1024
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    #: CreateTime batches older than this are refused (INVALID_TIMESTAMP); no limit by default
    message_timestamp_before_max_ms: int = LONG_MAX
    #: ... and newer than now + this: one hour, Kafka 4.0's default (KIP-1030)
    message_timestamp_after_max_ms: int = 3600 * 1000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    index_interval_bytes: int = 4096
    #: ``cleanup.policy``: ``delete`` (retention), ``compact`` (the log cleaner keeps each key's
    #: latest record), or both
    cleanup_policy: str = "delete"
    #: the log cleaner cleans a log once this share of it is dirty (not cleaned yet)
    min_cleanable_dirty_ratio: float = 0.5
    #: a record stays uncompacted at least this long after it was written
    min_compaction_lag_ms: int = 0
    #: ... and is compacted at the latest this long after, whatever the dirty ratio
    max_compaction_lag_ms: int = LONG_MAX
    #: a tombstone (null value) stays this long after its first cleaning, then goes
    delete_retention_ms: int = 24 * 3600 * 1000
    #: ``producer.id.expiration.ms`` (a broker setting in Kafka): forget idle producers after it.
    producer_id_expiration_ms: int = 24 * 3600 * 1000
    #: ``min.insync.replicas``: acks=all is refused (NOT_ENOUGH_REPLICAS) below this ISR size
    min_insync_replicas: int = 1

    def __post_init__(self) -> None:
        for name, (field, kind, allowed) in _SPEC.items():
            value = getattr(self, field)
            if kind is float:
                low, high = cast(tuple[float, float], allowed)
                if type(value) not in (int, float):
                    raise invalid_value(name, value, "Not a number of type DOUBLE")
                if not low <= value <= high:
                    raise invalid_value(name, value, f"Value must be at least {low}"
                                        if value < low else f"Value must be no more than {high}")
            elif kind is int:
                if type(value) is not int:
                    raise invalid_value(name, value, "Not a number of type LONG")
                if value < allowed:  # type: ignore[operator]
                    raise invalid_value(name, value, f"Value must be at least {allowed}")
                limit = INT_MAX if name in _INT_SETTINGS else LONG_MAX
                if value > limit:
                    raise invalid_value(name, value, "Not a number of type "
                                        + ("INT" if limit == INT_MAX else "LONG"))
            elif value not in allowed:  # type: ignore[operator]
                raise invalid_value(name, value, "String must be one of: "
                                    + ", ".join(allowed))  # type: ignore[arg-type]

    @property
    def compact(self) -> bool:
        """The log cleaner compacts this log (``cleanup.policy`` has ``compact``)."""
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        """Retention deletes old segments (``cleanup.policy`` has ``delete``)."""
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_properties(cls, props: dict[str, str], base: LogConfig | None = None) -> LogConfig:
        """Parse topic configs (strings, as CreateTopics carries them) over ``base``'s values.

        Unknown names and bad values raise :class:`~kafkacore.errors.InvalidConfigError`."""
        values: dict[str, object] = {}
        for name, raw in props.items():
            spec = _SPEC.get(name)
            if spec is None:
                raise InvalidConfigError(f"Unknown topic config name: {name}")
            field, kind, _ = spec
            if kind is int:
                try:
                    values[field] = int(str(raw).strip())
                except ValueError:
                    kind_name = "INT" if name in _INT_SETTINGS else "LONG"
                    raise invalid_value(name, raw, f"Not a number of type {kind_name}") from None
            elif kind is float:
                try:
                    values[field] = float(str(raw).strip())
                except ValueError:
                    raise invalid_value(name, raw, "Not a number of type DOUBLE") from None
            elif name == "cleanup.policy":
                values[field] = _cleanup_policy(str(raw))
            else:
                values[field] = str(raw).strip()
        return dataclasses.replace(base or cls(), **values)  # type: ignore[arg-type]

    def to_properties(self) -> dict[str, str]:
        """Every setting as Kafka's name -> string (DescribeConfigs' answer)."""
        return {name: str(getattr(self, field)) for name, (field, _, _) in _SPEC.items()}


def _cleanup_policy(raw: str) -> str:
    """Kafka's list ``compact,delete`` in any order and spacing, as one canonical string."""
    policies = [p.strip().lower() for p in raw.split(",")]
    if not policies or any(p not in ("compact", "delete") for p in policies) \
            or len(set(policies)) != len(policies):
        raise invalid_value("cleanup.policy", raw, "String must be one of: compact, delete, "
                            "or both (compact,delete), each once")
    return ",".join(sorted(policies))
