"""``LogConfig``: a partition's log settings, by Kafka's topic-config names (Kafka's ``LogConfig``).

Every topic config Kafka 4 defines is accepted, with Kafka's type and bounds (its ``ConfigDef``
validators): :data:`TOPIC_CONFIGS` lists them, each with what it means on this broker.  A few
mean nothing here (tiered storage, replication throttling, preallocation); they are accepted
and stored, and their DescribeConfigs documentation says so.  See docs/broker/configs.rst.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, NamedTuple

from kafkacore.errors import InvalidConfigError

LONG_MAX = (1 << 63) - 1
LONG_MIN = -(1 << 63)
INT_MAX = (1 << 31) - 1
INT_MIN = -(1 << 31)
MIB = 1024 * 1024

#: Kafka's ``compression.type`` values: the codecs, and ``producer`` (keep the producer's)
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


class TopicConfigDef(NamedTuple):
    """One topic config as Kafka's ``ConfigDef`` declares it, and what it means here."""

    field: str
    #: Kafka's type: INT, LONG, DOUBLE, STRING, BOOLEAN or LIST
    type: str
    #: INT/LONG/DOUBLE: (lowest, highest) allowed (None: the type's range);
    #: STRING/LIST: the allowed values (None: any)
    valid: object
    doc: str
    #: a special value allowed outside ``valid`` (gzip's level -1, Kafka's default)
    also: object = None


_NOTHING_HERE = "Accepted and stored, as Kafka does; it has no effect on this broker: "

#: Kafka 4's topic configs (``LogConfig``'s ConfigDef), in Kafka's order.
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    "segment.bytes": TopicConfigDef(
        "segment_bytes", "INT", (MIB, None),
        "A segment is rolled when it would grow past this size (at least 1 MiB, as in Kafka 4)."),
    "segment.ms": TopicConfigDef(
        "segment_ms", "LONG", (1, None),
        "A segment is rolled once it is this old (counted from its creation on this broker), "
        "so that retention and compaction can act on it."),
    "segment.jitter.ms": TopicConfigDef(
        "segment_jitter_ms", "LONG", (0, None),
        "A random amount up to this (and below segment.ms) taken off segment.ms for each new "
        "segment, so that the segments of many partitions do not all roll at once."),
    "segment.index.bytes": TopicConfigDef(
        "segment_index_bytes", "INT", (4, None),
        "The most bytes of a segment's offset index (8-byte entries) and time index (12-byte "
        "entries): a segment whose index is full is rolled, as in Kafka; the indexes are kept "
        "in memory and never preallocated."),
    "flush.messages": TopicConfigDef(
        "flush_messages", "LONG", (1, None),
        "fsync the log after this many records appended (the default never does: the page "
        "cache survives a crash of the broker process, replication a crash of the machine)."),
    "flush.ms": TopicConfigDef(
        "flush_ms", "LONG", (0, None),
        "fsync the log when its last flush is older than this."),
    "retention.bytes": TopicConfigDef(
        "retention_bytes", "LONG", (None, None),
        "Delete the oldest segments while the partition is larger than this (-1: no limit)."),
    "retention.ms": TopicConfigDef(
        "retention_ms", "LONG", (-1, None),
        "Delete a segment once its newest record is older than this (-1: no limit)."),
    "max.message.bytes": TopicConfigDef(
        "max_message_bytes", "INT", (0, None),
        "The largest record batch accepted (after the broker's recompression, if any)."),
    "index.interval.bytes": TopicConfigDef(
        "index_interval_bytes", "INT", (0, None),
        "An offset-index and a time-index entry every this many bytes of log."),
    "delete.retention.ms": TopicConfigDef(
        "delete_retention_ms", "LONG", (0, None),
        "A tombstone stays this long after the log cleaner first kept it, then goes."),
    "min.compaction.lag.ms": TopicConfigDef(
        "min_compaction_lag_ms", "LONG", (0, None),
        "A record stays uncompacted at least this long after it was written."),
    "max.compaction.lag.ms": TopicConfigDef(
        "max_compaction_lag_ms", "LONG", (1, None),
        "A record is compacted at the latest this long after it was written, whatever the "
        "dirty ratio."),
    "file.delete.delay.ms": TopicConfigDef(
        "file_delete_delay_ms", "LONG", (0, None),
        "A segment that retention, DeleteRecords or the log cleaner removed is renamed "
        "``.deleted`` at once and its files removed this long after, so that a read already "
        "sending it finishes."),
    "min.cleanable.dirty.ratio": TopicConfigDef(
        "min_cleanable_dirty_ratio", "DOUBLE", (0.0, 1.0),
        "The log cleaner cleans a log once this share of it is dirty."),
    "cleanup.policy": TopicConfigDef(
        "cleanup_policy", "LIST", ("compact", "delete"),
        "delete (retention), compact (the log cleaner keeps each key's latest record), or "
        "both."),
    "unclean.leader.election.enable": TopicConfigDef(
        "unclean_leader_election_enable", "BOOLEAN", None,
        "Accepted and stored; the controller elects leaders from the ISR only, as Kafka does "
        "with the default false."),
    "min.insync.replicas": TopicConfigDef(
        "min_insync_replicas", "INT", (1, None),
        "acks=all is refused (NOT_ENOUGH_REPLICAS) below this ISR size."),
    "compression.type": TopicConfigDef(
        "compression_type", "STRING", COMPRESSION_TYPES,
        "producer keeps each batch as the producer compressed it; a codec (or uncompressed) "
        "makes the broker recompress every batch that differs, as Kafka's LogValidator does."),
    "compression.gzip.level": TopicConfigDef(
        "compression_gzip_level", "INT", (1, 9),
        "The level of the broker's gzip recompression (-1: zlib's default).", also=-1),
    "compression.lz4.level": TopicConfigDef(
        "compression_lz4_level", "INT", (1, 17),
        "The level of the broker's lz4 recompression."),
    "compression.zstd.level": TopicConfigDef(
        "compression_zstd_level", "INT", (-131072, 22),
        "The level of the broker's zstd recompression."),
    "preallocate": TopicConfigDef(
        "preallocate", "BOOLEAN", None,
        _NOTHING_HERE + "segment files grow as they are written."),
    "message.timestamp.type": TopicConfigDef(
        "message_timestamp_type", "STRING", ("CreateTime", "LogAppendTime"),
        "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the "
        "broker's clock at the append."),
    "message.timestamp.before.max.ms": TopicConfigDef(
        "message_timestamp_before_max_ms", "LONG", (0, None),
        "CreateTime batches with a timestamp older than now minus this are refused "
        "(INVALID_TIMESTAMP)."),
    "message.timestamp.after.max.ms": TopicConfigDef(
        "message_timestamp_after_max_ms", "LONG", (0, None),
        "CreateTime batches with a timestamp newer than now plus this are refused "
        "(INVALID_TIMESTAMP)."),
    "leader.replication.throttled.replicas": TopicConfigDef(
        "leader_replication_throttled_replicas", "LIST", None,
        _NOTHING_HERE + "replication is not throttled ('*' or partition:broker pairs)."),
    "follower.replication.throttled.replicas": TopicConfigDef(
        "follower_replication_throttled_replicas", "LIST", None,
        _NOTHING_HERE + "replication is not throttled ('*' or partition:broker pairs)."),
    "remote.storage.enable": TopicConfigDef(
        "remote_storage_enable", "BOOLEAN", None,
        "Tiered storage: this broker has none, so true is refused, as Kafka refuses it when "
        "remote.log.storage.system.enable is false."),
    "local.retention.ms": TopicConfigDef(
        "local_retention_ms", "LONG", (-2, None),
        _NOTHING_HERE + "tiered storage only (-2: retention.ms)."),
    "local.retention.bytes": TopicConfigDef(
        "local_retention_bytes", "LONG", (-2, None),
        _NOTHING_HERE + "tiered storage only (-2: retention.bytes)."),
    "remote.log.copy.disable": TopicConfigDef(
        "remote_log_copy_disable", "BOOLEAN", None, _NOTHING_HERE + "tiered storage only."),
    "remote.log.delete.on.disable": TopicConfigDef(
        "remote_log_delete_on_disable", "BOOLEAN", None, _NOTHING_HERE + "tiered storage only."),
}

#: Kafka's internal topic config (``LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG``): a segment size
#: below segment.bytes' minimum, for tests and small internal topics; not described.
INTERNAL_SEGMENT_BYTES = "internal.segment.bytes"
_INTERNAL = TopicConfigDef("internal_segment_bytes", "INT", (14, None),
                           "A segment size below segment.bytes' minimum (tests only).")

#: the dataclass's own floors where Kafka's client-facing minimum is larger: the broker's
#: defaults (log.segment.bytes) and code may set smaller values than a client may
_FIELD_FLOORS = {"segment_bytes": 14}


def invalid_value(name: str, raw: object, why: str) -> InvalidConfigError:
    """Kafka's ``ConfigException`` wording, which admin clients show as it is."""
    return InvalidConfigError(f"Invalid value {raw} for configuration {name}: {why}")


def _spec(name: str) -> TopicConfigDef:
    spec = _INTERNAL if name == INTERNAL_SEGMENT_BYTES else TOPIC_CONFIGS.get(name)
    if spec is None:
        raise InvalidConfigError(f"Unknown topic config name: {name}")
    return spec


def _parse(name: str, raw: object) -> object:
    """A client's string as the setting's Python value, type-checked (not range-checked)."""
    spec = _spec(name)
    text = str(raw).strip()
    if spec.type in ("INT", "LONG"):
        low, high = (INT_MIN, INT_MAX) if spec.type == "INT" else (LONG_MIN, LONG_MAX)
        try:
            value = int(text)
        except ValueError:
            raise invalid_value(name, raw, f"Not a number of type {spec.type}") from None
        if not low <= value <= high:
            raise invalid_value(name, raw, f"Not a number of type {spec.type}")
        return value
    if spec.type == "DOUBLE":
        try:
            return float(text)
        except ValueError:
            raise invalid_value(name, raw, "Not a number of type DOUBLE") from None
    if spec.type == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            raise invalid_value(name, raw, "Expected value to be either true or false")
        return text.lower() == "true"
    if spec.type == "LIST":
        return ",".join(item.strip() for item in text.split(",") if item.strip())
    return text


def _check(name: str, value: object, floor: object = None) -> None:
    """Kafka's validator for ``name`` (``floor``: a lower minimum the dataclass allows)."""
    spec = _spec(name)
    if spec.type in ("INT", "LONG", "DOUBLE"):
        number_type = float if spec.type == "DOUBLE" else int
        if type(value) not in ((int, float) if number_type is float else (int,)):
            raise invalid_value(name, value, f"Not a number of type {spec.type}")
        limit = INT_MAX if spec.type == "INT" else LONG_MAX
        if spec.type != "DOUBLE" and not -limit - 1 <= value <= limit:  # type: ignore[operator]
            raise invalid_value(name, value, f"Not a number of type {spec.type}")
        if value == spec.also:
            return
        number: Any = value
        bounds: tuple[Any, Any] = spec.valid  # type: ignore[assignment]
        low, high = bounds
        low = floor if floor is not None else low
        out = (low is not None and number < low) or (high is not None and number > high)
        if out and spec.also is not None:
            raise invalid_value(name, value, f"Value must be between {low} and {high} or "
                                             f"equal to {spec.also}")
        if low is not None and number < low:
            raise invalid_value(name, value, f"Value must be at least {low}")
        if high is not None and number > high:
            raise invalid_value(name, value, f"Value must be no more than {high}")
    elif spec.type == "BOOLEAN":
        if type(value) is not bool:
            raise invalid_value(name, value, "Expected value to be either true or false")
    elif spec.type == "STRING":
        if spec.valid is not None and value not in spec.valid:  # type: ignore[operator]
            raise invalid_value(name, value, "String must be one of: "
                                + ", ".join(spec.valid))  # type: ignore[arg-type]
    elif name == "cleanup.policy":
        _cleanup_policy(str(value))
    elif name.endswith("replication.throttled.replicas"):
        _throttled_replicas(name, str(value))


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
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_bytes: int = -1
    retention_ms: int = 7 * 24 * 3600 * 1000
    max_message_bytes: int = 1048588
    index_interval_bytes: int = 4096
    #: a tombstone (null value) stays this long after its first cleaning, then goes
    delete_retention_ms: int = 24 * 3600 * 1000
    #: a record stays uncompacted at least this long after it was written
    min_compaction_lag_ms: int = 0
    #: ... and is compacted at the latest this long after, whatever the dirty ratio
    max_compaction_lag_ms: int = LONG_MAX
    #: a removed segment's files stay (renamed ``.deleted``) this long
    file_delete_delay_ms: int = 60000
    #: the log cleaner cleans a log once this share of it is dirty (not cleaned yet)
    min_cleanable_dirty_ratio: float = 0.5
    #: ``cleanup.policy``: ``delete`` (retention), ``compact`` (the log cleaner keeps each key's
    #: latest record), or both
    cleanup_policy: str = "delete"
    unclean_leader_election_enable: bool = False
    #: ``min.insync.replicas``: acks=all is refused (NOT_ENOUGH_REPLICAS) below this ISR size
    min_insync_replicas: int = 1
    #: ``producer`` keeps the producer's codec; a codec makes the broker recompress
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    preallocate: bool = False
    message_timestamp_type: str = "CreateTime"
    #: CreateTime batches older than this are refused (INVALID_TIMESTAMP); no limit by default
    message_timestamp_before_max_ms: int = LONG_MAX
    #: ... and newer than now + this: one hour, Kafka 4.0's default (KIP-1030)
    message_timestamp_after_max_ms: int = 3600 * 1000
    leader_replication_throttled_replicas: str = ""
    follower_replication_throttled_replicas: str = ""
    remote_storage_enable: bool = False
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    #: Kafka's ``internal.segment.bytes``: overrides segment.bytes when set (tests)
    internal_segment_bytes: int | None = None
    #: ``producer.id.expiration.ms`` (a broker setting in Kafka, not a topic config): forget
    #: idle producers after it
    producer_id_expiration_ms: int = 24 * 3600 * 1000

    def __post_init__(self) -> None:
        for name, spec in TOPIC_CONFIGS.items():
            _check(name, getattr(self, spec.field), _FIELD_FLOORS.get(spec.field))
        if self.internal_segment_bytes is not None:
            _check(INTERNAL_SEGMENT_BYTES, self.internal_segment_bytes)
        if type(self.producer_id_expiration_ms) is not int or self.producer_id_expiration_ms < 1:
            raise invalid_value("producer.id.expiration.ms", self.producer_id_expiration_ms,
                                "Value must be at least 1")
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            # Kafka's LogConfig.validateValues
            raise InvalidConfigError(
                f"conflict topic config setting min.compaction.lag.ms "
                f"({self.min_compaction_lag_ms}) > max.compaction.lag.ms "
                f"({self.max_compaction_lag_ms})")
        if self.remote_storage_enable:
            raise InvalidConfigError(
                "Tiered Storage functionality is disabled in the broker. Topic cannot be "
                "configured with remote log storage.")

    @property
    def segment_size(self) -> int:
        """The size a segment rolls at: ``internal.segment.bytes`` if set, else
        ``segment.bytes`` (Kafka's ``segmentSize()``)."""
        return self.segment_bytes if self.internal_segment_bytes is None \
            else self.internal_segment_bytes

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

    @property
    def compression_level(self) -> int | None:
        """The level of the broker's recompression codec (None: no level, or zlib's default)."""
        level = {"gzip": self.compression_gzip_level, "lz4": self.compression_lz4_level,
                 "zstd": self.compression_zstd_level}.get(self.compression_type)
        return None if level == -1 else level

    @classmethod
    def from_properties(cls, props: dict[str, str], base: LogConfig | None = None) -> LogConfig:
        """Parse topic configs (strings, as CreateTopics carries them) over ``base``'s values,
        with Kafka's types and bounds (the topic-config validator: CreateTopics, AlterConfigs
        and the controller call it).

        Unknown names and bad values raise :class:`~kafkacore.errors.InvalidConfigError`."""
        values: dict[str, object] = {}
        for name, raw in props.items():
            spec = _spec(name)
            value = _parse(name, raw)
            if name == "cleanup.policy":
                value = _cleanup_policy(str(raw))
            _check(name, value)
            values[spec.field] = value
        return dataclasses.replace(base or cls(), **values)  # type: ignore[arg-type]

    def to_properties(self) -> dict[str, str]:
        """Every topic config as Kafka's name -> string (DescribeConfigs' answer);
        ``internal.segment.bytes`` only when set."""
        out = {name: _string(getattr(self, spec.field)) for name, spec in TOPIC_CONFIGS.items()}
        if self.internal_segment_bytes is not None:
            out[INTERNAL_SEGMENT_BYTES] = str(self.internal_segment_bytes)
        return out

    @staticmethod
    def config_type(name: str) -> str:
        """Kafka's type of a topic config (INT, LONG, DOUBLE, STRING, BOOLEAN, LIST)."""
        return _spec(name).type

    @staticmethod
    def documentation(name: str) -> str:
        """What the topic config means on this broker (DescribeConfigs' documentation)."""
        return _spec(name).doc


def segment_bytes_config(size: int) -> dict[str, str]:
    """The topic config that sets a segment size: ``segment.bytes``, or below its 1 MiB
    minimum ``internal.segment.bytes`` (internal topics whose broker setting is small)."""
    return {"segment.bytes" if size >= MIB else INTERNAL_SEGMENT_BYTES: str(size)}


def _string(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _cleanup_policy(raw: str) -> str:
    """Kafka's list ``compact,delete`` in any order and spacing, as one canonical string."""
    policies = [p.strip().lower() for p in raw.split(",")]
    if not policies or any(p not in ("compact", "delete") for p in policies) \
            or len(set(policies)) != len(policies):
        raise invalid_value("cleanup.policy", raw, "String must be one of: compact, delete, "
                            "or both (compact,delete), each once")
    return ",".join(sorted(policies))


def _throttled_replicas(name: str, raw: str) -> None:
    """Kafka's ``ThrottledReplicaListValidator``: empty, ``*``, or partition:broker pairs."""
    items = [i.strip() for i in raw.split(",") if i.strip()]
    if items == ["*"] or all(
            len(parts := item.split(":")) == 2 and all(p.strip().isdigit() for p in parts)
            for item in items):
        return
    raise invalid_value(name, raw, "must be the literal '*' or a list of replicas in the "
                                   "following format: [partitionId]:[brokerId],"
                                   "[partitionId]:[brokerId],...")


__all__ = ["COMPRESSION_TYPES", "INTERNAL_SEGMENT_BYTES", "TOPIC_CONFIGS", "LogConfig",
           "TopicConfigDef", "invalid_value", "segment_bytes_config"]
