"""The options of ``format("kafkacore")``: Spark's Kafka connector's names and meanings, checked.

Spark's connector takes its options as strings in a case-insensitive map, checks them when the
query is planned and passes every ``kafka.``-prefixed one, prefix removed, to the Kafka client.
This module does the same for both halves of the connector:

* :func:`parse_source_options` for ``spark.read`` and ``spark.readStream`` gives a
  :class:`SourceOptions`;
* :func:`parse_sink_options` for ``df.write`` and ``df.writeStream`` gives a :class:`SinkOptions`.

Both run on the driver, from :class:`~kafkacore.spark.datasource.KafkaDataSource`, so a bad option
fails ``load()``, ``save()`` or ``start()`` with a message that names it, never a task in an
executor.  Every problem is a :class:`~kafkacore.errors.ConfigError` (a ``ValueError``, where
Spark throws ``IllegalArgumentException``); the wording is Spark's where Spark has one.  One
thing Spark does not do: an option neither half knows is an error with a did-you-mean, where Spark
would silently ignore it (a misspelt ``startingOffsets`` would otherwise read from ``latest``).

Nothing here imports PySpark; the schema given to :func:`parse_sink_options` is duck-typed
(``fields``, each with ``name`` and ``dataType``).
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkacore.errors import ConfigError, IllegalStateError

log = logging.getLogger("kafkacore.spark")

__all__ = [
    "EARLIEST",
    "LATEST",
    "Assign",
    "DataLossError",
    "Earliest",
    "GlobalTimestamp",
    "Latest",
    "SinkOptions",
    "SourceOptions",
    "SpecificOffsets",
    "SpecificTimestamps",
    "Subscribe",
    "SubscribePattern",
    "TopicPartition",
    "parse_sink_options",
    "parse_source_options",
]

#: In ``startingOffsets``/``endingOffsets`` JSON: ``-2`` is the earliest offset, ``-1`` the latest.
EARLIEST = -2
LATEST = -1

TopicPartition = tuple[str, int]

# Spark's names, as the user writes them; options arrive lower-cased (Spark's maps are
# case-insensitive), so the lower-cased name is the key.
_SOURCE_NAMES = (
    "subscribe", "subscribePattern", "assign",
    "startingOffsets", "endingOffsets",
    "startingTimestamp", "endingTimestamp",
    "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "failOnDataLoss", "minPartitions", "maxRecordsPerPartition",
    "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay",
    "includeHeaders",
    # Spark's consumer-group and polling knobs: accepted, and meaningless here (no group, no poll
    # loop); the docs say so.
    "groupIdPrefix", "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries",
    "fetchOffset.retryIntervalMs",
)
_SINK_NAMES = ("topic",)
# Options Spark itself puts in a sink's option map.
_SPARK_SINK_NAMES = ("checkpointLocation", "path", "queryName")
SOURCE_OPTION_NAMES: dict[str, str] = {n.lower(): n for n in _SOURCE_NAMES}
SINK_OPTION_NAMES: dict[str, str] = {n.lower(): n for n in _SINK_NAMES}

# Java consumer settings that Spark refuses, with Spark's reasons.
_REFUSED_KAFKA = {
    "auto.offset.reset": (
        "Kafka option 'auto.offset.reset' is not supported. Instead set the source option "
        "'startingOffsets' to 'earliest' or 'latest' to specify where to start. Structured "
        "Streaming manages which offsets are consumed internally, rather than relying on the "
        "kafkaConsumer to do it. This will ensure that no data is missed when new "
        "topics/partitions are dynamically subscribed. Note that 'startingOffsets' only applies "
        "when a new Streaming query is started, and that resuming will always pick up from where "
        "the query left off."
    ),
    "key.deserializer": (
        "Kafka option 'key.deserializer' is not supported as keys are read as byte arrays. Use "
        "DataFrame operations to explicitly deserialize the keys."
    ),
    "value.deserializer": (
        "Kafka option 'value.deserializer' is not supported as values are read as byte arrays. "
        "Use DataFrame operations to explicitly deserialize the values."
    ),
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}
_REFUSED_KAFKA_SINK = {
    "key.serializer": (
        "Kafka option 'key.serializer' is not supported as keys are serialized with "
        "ByteArraySerializer. Use DataFrame operations to explicitly serialize the keys into "
        "either strings or byte arrays."
    ),
    "value.serializer": (
        "Kafka option 'value.serializer' is not supported as values are serialized with "
        "ByteArraySerializer. Use DataFrame operations to explicitly serialize the values into "
        "either strings or byte arrays."
    ),
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}
# Consumer-group settings a Spark user may pass (Spark's own connector uses a group to poll); we
# read partitions by offset and never join a group, so they are dropped, not handed to the reader.
_GROUP_SETTINGS = frozenset({
    "group.id", "group.instance.id", "session.timeout.ms", "heartbeat.interval.ms",
    "max.poll.records", "max.poll.interval.ms", "auto.commit.interval.ms",
    "partition.assignment.strategy", "key.deserializer", "value.deserializer",
})


class DataLossError(IllegalStateError):
    """Offsets a read was to return are gone (retention, DeleteRecords, a deleted topic or
    partition) and ``failOnDataLoss`` is true, as it is by default.  Spark's connector throws an
    ``IllegalStateException`` with the same advice.  (It lives here, with the options, because
    this module needs no PySpark: the docs and ``import kafkacore.spark`` do without it.)"""


# -- what the options say ------------------------------------------------------------------------


@dataclass(frozen=True)
class Subscribe:
    """``subscribe``: these topics, every partition, new partitions as they appear."""

    topics: tuple[str, ...]


@dataclass(frozen=True)
class SubscribePattern:
    """``subscribePattern``: every topic whose whole name matches the regular expression."""

    pattern: str


@dataclass(frozen=True)
class Assign:
    """``assign``: exactly these partitions."""

    partitions: tuple[TopicPartition, ...]


Strategy = Subscribe | SubscribePattern | Assign


@dataclass(frozen=True)
class Earliest:
    """``earliest``: each partition's log start offset."""


@dataclass(frozen=True)
class Latest:
    """``latest``: each partition's end offset (the last stable offset under read_committed)."""


@dataclass(frozen=True)
class SpecificOffsets:
    """JSON per partition, ``{"t":{"0":23,"1":-2}}``: an offset, or -2 earliest, -1 latest."""

    offsets: tuple[tuple[TopicPartition, int], ...]

    def as_dict(self) -> dict[TopicPartition, int]:
        return dict(self.offsets)


@dataclass(frozen=True)
class GlobalTimestamp:
    """``startingTimestamp``/``endingTimestamp``: one timestamp (ms) for every partition."""

    timestamp: int


@dataclass(frozen=True)
class SpecificTimestamps:
    """``startingOffsetsByTimestamp``/``endingOffsetsByTimestamp``: a timestamp per partition,
    ``{"t":{"0":1700000000000}}``; -2 and -1 mean earliest and latest, as in offsets JSON."""

    timestamps: tuple[tuple[TopicPartition, int], ...]

    def as_dict(self) -> dict[TopicPartition, int]:
        return dict(self.timestamps)


OffsetRangeLimit = Earliest | Latest | SpecificOffsets | GlobalTimestamp | SpecificTimestamps


@dataclass(frozen=True)
class SourceOptions:
    """The checked options of one read: what :func:`parse_source_options` returns."""

    #: Settings for :class:`kafkacore.consumer.PartitionReader`: the ``kafka.`` options, prefix
    #: removed, consumer-group settings dropped.
    kafka_config: dict[str, str]
    strategy: Strategy
    starting: OffsetRangeLimit
    ending: OffsetRangeLimit
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    #: ``startingOffsetsByTimestampStrategy``: ``"error"`` (Spark's default) fails when a
    #: partition has no record at or after the timestamp, ``"latest"`` starts it at the end.
    no_match_strategy: str = "error"


@dataclass(frozen=True)
class SinkOptions:
    """The checked options and input columns of one write: what :func:`parse_sink_options`
    returns.  Column names are those of the DataFrame (Spark matches them case-insensitively)."""

    #: Producer settings: the ``kafka.`` options, prefix removed.
    kafka_config: dict[str, str]
    #: The ``topic`` option (it overrides a ``topic`` column, as in Spark), or None.
    topic: str | None
    value_column: str
    key_column: str | None = None
    topic_column: str | None = None
    partition_column: str | None = None
    headers_column: str | None = None
    #: Every option that is not a ``kafka.`` one (lower-cased name -> value), for the sink's own.
    extra: dict[str, str] = field(default_factory=dict)


# -- parsing ---------------------------------------------------------------------------------------


def _lower(options: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in options.items():
        out[str(k).lower()] = "" if v is None else str(v)
    return out


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name.lower(), [k.lower() for k in known], n=1, cutoff=0.6)
    if not close:
        return ""
    for k in known:
        if k.lower() == close[0]:
            return f"; did you mean {k!r}?"
    return ""  # pragma: no cover - close always comes from known


def _check_unknown(opts: Mapping[str, str], known: Mapping[str, str], what: str,
                   other: Mapping[str, str], other_what: str) -> None:
    for name in opts:
        if name.startswith("kafka.") or name in known:
            continue
        if name in other:
            raise ConfigError(f"option {other[name]!r} is for the kafkacore {other_what}, not "
                              f"the {what}")
        raise ConfigError(f"unknown option {name!r} for the kafkacore {what}"
                          f"{_did_you_mean(name, known.values())}")


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"option {name!r} must be 'true' or 'false', got {raw!r}")
    return value == "true"


def _positive_int(opts: Mapping[str, str], name: str) -> int | None:
    raw = opts.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"option {name!r} must be an integer, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be positive")
    return value


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def _duration_ms(opts: Mapping[str, str], name: str, default_ms: int) -> int:
    """Spark's time strings (``"15m"``, ``"30s"``, ``"500ms"``); a bare number is milliseconds."""
    raw = opts.get(name.lower())
    if raw is None:
        return default_ms
    m = _DURATION.match(raw)
    if not m:
        raise ConfigError(f"option {name!r} must be a duration such as '15m', '30s' or '500ms', "
                          f"got {raw!r}")
    return int(m.group(1)) * _UNIT_MS[(m.group(2) or "ms").lower()]


def _json(raw: str, name: str, example: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise ConfigError(f"Expected e.g. {example}, got {raw} (option {name!r} is not valid "
                          f"JSON)") from None


def _partition_json(raw: str, name: str) -> tuple[tuple[TopicPartition, int], ...]:
    """``{"topicA":{"0":23,"1":-1}}`` -> ((("topicA", 0), 23), (("topicA", 1), -1))."""
    example = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
    parsed = _json(raw, name, example)
    out: list[tuple[TopicPartition, int]] = []
    if not isinstance(parsed, dict):
        raise ConfigError(f"Expected e.g. {example}, got {raw} (option {name!r})")
    for topic, parts in parsed.items():
        if not isinstance(parts, dict):
            raise ConfigError(f"Expected e.g. {example}, got {raw} (option {name!r})")
        for p, off in parts.items():
            try:
                partition = int(p)
            except ValueError:
                raise ConfigError(f"Expected e.g. {example}, got {raw} (option {name!r}: "
                                  f"partition {p!r} is not a number)") from None
            if isinstance(off, bool) or not isinstance(off, int):
                raise ConfigError(f"Expected e.g. {example}, got {raw} (option {name!r}: "
                                  f"{topic}-{p} is not an integer)")
            out.append(((topic, partition), off))
    return tuple(sorted(out))


def _assign_json(raw: str) -> tuple[TopicPartition, ...]:
    example = '{"topicA":[0,1],"topicB":[0,1]}'
    if not raw.strip().startswith("{"):
        raise ConfigError(f"No topicpartitions to assign as specified value for option 'assign' "
                          f"is '{raw}'")
    parsed = _json(raw, "assign", example)
    out: list[TopicPartition] = []
    for topic, parts in parsed.items():
        if not isinstance(parts, list) or not all(
                isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts):
            raise ConfigError(f"Expected e.g. {example}, got {raw} (option 'assign')")
        out.extend((topic, p) for p in parts)
    return tuple(sorted(set(out)))


def _strategy(opts: Mapping[str, str]) -> Strategy:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    names = "subscribe, subscribepattern, assign"
    if not given:
        raise ConfigError(f"One of the following options must be specified for Kafka source: "
                          f"{names}. See the docs for more details.")
    if len(given) > 1:
        raise ConfigError(f"Only one of the following options can be specified for Kafka "
                          f"source: {names}. See the docs for more details.")
    key = given[0]
    value = opts[key]
    if key == "assign":
        return Assign(_assign_json(value))
    if key == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ConfigError(f"No topics to subscribe to as specified value for option "
                              f"'subscribe' is '{value}'")
        return Subscribe(topics)
    pattern = value.strip()
    if not pattern:
        raise ConfigError(f"Pattern to subscribe is empty as specified value for option "
                          f"'subscribePattern' is '{value}'")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"option 'subscribePattern' is not a valid regular expression: "
                          f"{exc}") from None
    return SubscribePattern(pattern)


def _range_limit(opts: Mapping[str, str], prefix: str, default: OffsetRangeLimit
                 ) -> OffsetRangeLimit:
    """``starting*``/``ending*`` by Spark's order of preference: one timestamp, timestamps by
    partition, then offsets."""
    ts_key, by_ts_key, off_key = (f"{prefix}timestamp", f"{prefix}offsetsbytimestamp",
                                  f"{prefix}offsets")
    if ts_key in opts:
        raw = opts[ts_key].strip()
        try:
            return GlobalTimestamp(int(raw))
        except ValueError:
            raise ConfigError(f"Expected a single long value, got {raw}") from None
    if by_ts_key in opts:
        return SpecificTimestamps(_partition_json(opts[by_ts_key], SOURCE_OPTION_NAMES[by_ts_key]))
    if off_key in opts:
        raw = opts[off_key].strip()
        if raw.lower() == "earliest":
            return Earliest()
        if raw.lower() == "latest":
            return Latest()
        return SpecificOffsets(_partition_json(raw, SOURCE_OPTION_NAMES[off_key]))
    return default


def _kafka_config(opts: Mapping[str, str], refused: Mapping[str, str]) -> dict[str, str]:
    config: dict[str, str] = {}
    for name, value in opts.items():
        if not name.startswith("kafka."):
            continue
        setting = name[len("kafka."):]
        if setting in refused:
            raise ConfigError(refused[setting])
        config[setting] = value
    if not config.get("bootstrap.servers", "").strip():
        raise ConfigError("Option 'kafka.bootstrap.servers' must be specified for configuring "
                          "Kafka consumer")
    return config


def parse_source_options(options: Mapping[str, Any], *, streaming: bool | None
                         ) -> SourceOptions:
    """Check the options of a read and say what they mean.

    ``streaming`` tells ``spark.readStream`` (``startingOffsets`` defaults to ``latest``; no
    ending) from ``spark.read`` (``earliest`` to ``latest``); ``None`` makes only the checks both
    share (``DataSource.schema()`` does not know which read it serves).  Raises
    :class:`~kafkacore.errors.ConfigError`.
    """
    opts = _lower(options)
    _check_unknown(opts, SOURCE_OPTION_NAMES, "source", SINK_OPTION_NAMES, "sink")
    config = _kafka_config(opts, _REFUSED_KAFKA)
    if "group.id" in config:
        log.warning("option 'kafka.group.id' is ignored: the kafkacore source reads partitions "
                    "by offset and joins no consumer group")
    kafka_config = {k: v for k, v in config.items() if k not in _GROUP_SETTINGS}
    strategy = _strategy(opts)
    # The reader's own check, here on the driver at load(): a misspelt kafka. setting fails now,
    # not when the first reader is made.
    from kafkacore.consumer import ConsumerConfig

    try:
        ConsumerConfig(kafka_config)
    except ConfigError as exc:
        raise ConfigError(f"a kafka.-prefixed option is a reader setting, prefix removed: "
                          f"{exc}") from None

    ending: OffsetRangeLimit
    if streaming is None:
        starting = _range_limit(opts, "starting", Earliest())
        ending = _range_limit(opts, "ending", Latest())
    elif streaming:
        if "endingoffsets" in opts:
            raise ConfigError("ending offset not valid in streaming queries")
        if "endingoffsetsbytimestamp" in opts or "endingtimestamp" in opts:
            raise ConfigError("ending timestamp not valid in streaming queries")
        starting = _range_limit(opts, "starting", Latest())
        ending = Latest()
    else:
        starting = _range_limit(opts, "starting", Earliest())
        ending = _range_limit(opts, "ending", Latest())
        if isinstance(starting, Latest):
            raise ConfigError("starting offset can't be latest for batch queries on Kafka")
        if isinstance(ending, Earliest):
            raise ConfigError("ending offset can't be earliest for batch queries on Kafka")
        if isinstance(starting, SpecificOffsets):
            for (t, p), off in starting.offsets:
                if off == LATEST:
                    raise ConfigError(f"startingOffsets for {t}-{p} can't be latest for batch "
                                      f"queries on Kafka")
        if isinstance(ending, SpecificOffsets):
            for (t, p), off in ending.offsets:
                if off == EARLIEST:
                    raise ConfigError(f"ending offset for {t}-{p} can't be earliest for batch "
                                      f"queries on Kafka")
        _check_start_before_end(starting, ending)
        for name in ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"):
            if name.lower() in opts:
                log.warning("%s option ignored in batch queries", name)

    max_per_trigger = _positive_int(opts, "maxOffsetsPerTrigger")
    min_per_trigger = _positive_int(opts, "minOffsetsPerTrigger")
    if max_per_trigger is not None and min_per_trigger is not None \
            and min_per_trigger > max_per_trigger:
        raise ConfigError(f"The value of minOffsetPerTrigger({min_per_trigger}) is higher than "
                          f"the maxOffsetsPerTrigger({max_per_trigger}).")
    strategy_raw = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy_raw not in ("error", "latest"):
        raise ConfigError(f"option 'startingOffsetsByTimestampStrategy' must be 'error' or "
                          f"'latest', got {strategy_raw!r}")
    return SourceOptions(
        kafka_config=kafka_config,
        strategy=strategy,
        starting=starting,
        ending=ending,
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        include_headers=_bool(opts, "includeHeaders", False),
        min_partitions=_positive_int(opts, "minPartitions"),
        max_records_per_partition=_positive_int(opts, "maxRecordsPerPartition"),
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=_duration_ms(opts, "maxTriggerDelay", 15 * 60 * 1000),
        no_match_strategy=strategy_raw,
    )


def _check_start_before_end(starting: OffsetRangeLimit, ending: OffsetRangeLimit) -> None:
    pairs: list[tuple[dict[TopicPartition, int], dict[TopicPartition, int], str]] = []
    if isinstance(starting, SpecificOffsets) and isinstance(ending, SpecificOffsets):
        pairs.append((starting.as_dict(), ending.as_dict(), "offset"))
    if isinstance(starting, SpecificTimestamps) and isinstance(ending, SpecificTimestamps):
        pairs.append((starting.as_dict(), ending.as_dict(), "timestamp"))
    for start, end, what in pairs:
        if set(start) != set(end):
            raise ConfigError(
                f"The topic partitions of the starting and ending {what}s differ: starting "
                f"{_tps(start)}, ending {_tps(end)}")
        for tp, s in start.items():
            e = end[tp]
            if s >= 0 and e >= 0 and s > e:
                raise ConfigError(f"The starting {what} {s} of {tp[0]}-{tp[1]} is greater than "
                                  f"its ending {what} {e}")


def _tps(tps: Iterable[TopicPartition]) -> str:
    return "[" + ", ".join(f"{t}-{p}" for t, p in sorted(tps)) + "]"


# -- the sink --------------------------------------------------------------------------------------


def _type_name(data_type: Any) -> str:
    simple = getattr(data_type, "simpleString", None)
    return simple() if callable(simple) else str(data_type)


def parse_sink_options(options: Mapping[str, Any], schema: Any, *,
                       extra_options: Iterable[str] = ()) -> SinkOptions:
    """Check the options and the DataFrame schema of a write, as Spark's Kafka sink does.

    Needs ``kafka.bootstrap.servers``; a ``topic`` option or a ``topic`` column (string); a
    ``value`` column (string or binary); optional ``key`` (string or binary), ``partition`` (int)
    and ``headers`` (``array<struct<key:string,value:binary>>``) columns.  ``extra_options`` are
    the lower- or camel-case names of the sink's own options (accepted, returned in
    ``SinkOptions.extra``).  Raises :class:`~kafkacore.errors.ConfigError` (bad options,
    missing columns) or ``TypeError`` (a column of the wrong type).
    """
    opts = _lower(options)
    extra_names = {n.lower(): n for n in extra_options}
    known = {**SINK_OPTION_NAMES, **extra_names, **{n.lower(): n for n in _SPARK_SINK_NAMES}}
    _check_unknown(opts, known, "sink", SOURCE_OPTION_NAMES, "source")
    kafka_config = _kafka_config(opts, _REFUSED_KAFKA_SINK)
    topic = opts.get("topic")
    if topic is not None:
        topic = topic.strip()
        if not topic:
            raise ConfigError("option 'topic' is empty")

    columns = {f.name.lower(): f for f in schema.fields}

    def typed(name: str, allowed: tuple[str, ...], message: str) -> str | None:
        f = columns.get(name)
        if f is None:
            return None
        if _type_name(f.dataType) not in allowed:
            raise TypeError(f"{message}, not {_type_name(f.dataType)}")
        return str(f.name)

    topic_column = typed("topic", ("string",), "Topic type must be a string")
    if topic is None and topic_column is None:
        raise ConfigError("topic option required when no 'topic' attribute is present. Use the "
                          "topic option for setting a topic.")
    value_column = typed("value", ("string", "binary"),
                         "value attribute type must be a string or binary")
    if value_column is None:
        raise ConfigError("Required attribute 'value' not found")
    return SinkOptions(
        kafka_config=kafka_config,
        topic=topic,
        value_column=value_column,
        key_column=typed("key", ("string", "binary"),
                         "key attribute type must be a string or binary"),
        topic_column=topic_column,
        partition_column=typed("partition", ("int",), "partition attribute type must be an int"),
        headers_column=typed("headers", ("array<struct<key:string,value:binary>>",),
                             "headers attribute type must be array<struct<key:string,"
                             "value:binary>>"),
        extra={k: v for k, v in opts.items() if k in extra_names},
    )
