"""The reading half of ``format("kafkacore")``: ``spark.read`` and ``spark.readStream``.

The driver plans, the executors read.  On the driver (a Python process Spark keeps for the query)
a :class:`~kafkacore.consumer.PartitionReader` asks the brokers for metadata and offsets only,
and cuts the work into offset ranges, one :class:`KafkaInputPartition` per Spark task.  Each
task reads its range with the compiled read path (:meth:`PartitionReader.read
<kafkacore.consumer.PartitionReader.read>`), which gives ``pyarrow.RecordBatch`` es in Spark's
Kafka source schema: they go to Spark as they are, with no Python object per record.

Streaming offsets are Spark's: ``{"topic": {"0": 23, "1": 42}}``, the next offset to read of
every partition, written by Spark to the checkpoint's offset log before a micro-batch runs and
given back after a restart.  What Spark's connector does, this does too: new partitions are read
from their earliest offset, and offsets that retention removed, or a topic that was deleted, are
data loss: an error by default, or with ``failOnDataLoss=false`` a warning and a skip to what is
still there.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from kafkacore.errors import (
    ConfigError,
    IllegalStateError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from kafkacore.spark.options import (
    EARLIEST,
    LATEST,
    Assign,
    DataLossError,
    Earliest,
    GlobalTimestamp,
    Latest,
    OffsetRangeLimit,
    SourceOptions,
    SpecificOffsets,
    SpecificTimestamps,
    Subscribe,
    SubscribePattern,
    TopicPartition,
)

log = logging.getLogger("kafkacore.spark")

__all__ = [
    "DataLossError",
    "KafkaBatchReader",
    "KafkaInputPartition",
    "KafkaStreamReader",
    "close_readers",
]

# Spark's words (KafkaSourceProvider's INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_*), so that a user who
# searches for them finds the same advice.
_LOST = ("Some data may have been lost because they are not available in Kafka any more; either "
         "the data was aged out by Kafka or the topic may have been deleted before all the data in "
         "the topic was processed.")
INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE = (
    f"{_LOST} If you don't want your streaming query to fail on such cases, set the source "
    f"option \"failOnDataLoss\" to \"false\".")
INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_FALSE = (
    f"{_LOST} If you want your streaming query to fail on such cases, set the source option "
    f"\"failOnDataLoss\" to \"true\".")


def _report_data_loss(fail: bool, message: str) -> None:
    if fail:
        raise DataLossError(f"{message}. {INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE}")
    log.warning("%s. %s", message, INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_FALSE)


def _tp(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


# -- offsets as Spark writes them ------------------------------------------------------------------


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{("t", 0): 23}`` -> ``{"t": {"0": 23}}``, the checkpoint's form (Spark's
    ``JsonUtils.partitionOffsets``)."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def offsets_from_json(offsets: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {(topic, int(p)): int(off) for topic, parts in offsets.items()
            for p, off in parts.items()}


# -- the work of one task --------------------------------------------------------------------------


class KafkaInputPartition(InputPartition):
    """One Spark task: the records of ``topic``-``partition`` with ``start <= offset < end``."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"KafkaInputPartition({self.topic}-{self.partition} [{self.start}, {self.end}))"


def split_ranges(ranges: Iterable[tuple[TopicPartition, int, int]], *,
                 min_partitions: int | None = None,
                 max_records_per_partition: int | None = None) -> list[KafkaInputPartition]:
    """Spark tasks for offset ranges, as Spark's ``KafkaOffsetRangeCalculator`` cuts them: empty
    ranges dropped; none longer than ``maxRecordsPerPartition``; and, when there are fewer than
    ``minPartitions``, the large ranges cut into pieces in proportion to their size."""
    pieces = [(tp, s, e) for tp, s, e in ranges if e > s]
    if max_records_per_partition:
        pieces = [piece for tp, s, e in pieces
                  for piece in _cut(tp, s, e, -(-(e - s) // max_records_per_partition))]
    if min_partitions and len(pieces) < min_partitions:
        total = sum(e - s for _, s, e in pieces)
        pieces = [piece for tp, s, e in pieces
                  for piece in _cut(tp, s, e, max(round((e - s) / total * min_partitions), 1))]
    return [KafkaInputPartition(tp[0], tp[1], s, e) for tp, s, e in pieces]


def _cut(tp: TopicPartition, start: int, end: int, parts: int
         ) -> list[tuple[TopicPartition, int, int]]:
    size = end - start
    parts = max(1, min(parts, size))
    bounds = [start + size * i // parts for i in range(parts + 1)]
    return [(tp, bounds[i], bounds[i + 1]) for i in range(parts)]


# -- the readers: one per process and configuration -----------------------------------------------
# A Spark Python worker runs one task at a time and is reused across tasks and queries, so its
# reader (connections, metadata) outlives a task.  A reader is never used in a process other than
# the one that made it: after fork() the child makes its own.

_readers_lock = threading.Lock()
_readers: dict[tuple[tuple[str, str], ...], tuple[int, Any]] = {}


def _config_key(config: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in config.items()))


def _get_reader(config: Mapping[str, str]) -> Any:
    from kafkacore.consumer import PartitionReader

    key = _config_key(config)
    pid = os.getpid()
    with _readers_lock:
        cached = _readers.get(key)
        if cached is not None and cached[0] == pid:
            return cached[1]
        reader = PartitionReader(dict(config))
        _readers[key] = (pid, reader)
        return reader


def close_readers() -> None:
    """Close this process's cached readers (those made in it; a forked child's copies of its
    parent's are dropped, not closed)."""
    pid = os.getpid()
    with _readers_lock:
        cached = list(_readers.values())
        _readers.clear()
    for owner, reader in cached:
        if owner == pid:
            reader.close()


def _arrow_schema(schema: Any) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def read_partition(options: SourceOptions, target_schema: Any, partition: InputPartition
                   ) -> Iterator[Any]:
    """The records of one task's range, as ``pyarrow.RecordBatch`` es of ``target_schema``.

    Offsets no longer in the log are data loss: with ``failOnDataLoss`` a :class:`DataLossError`,
    without it a warning and a skip to the log's start (or to the end of the range).
    """
    if not isinstance(partition, KafkaInputPartition):
        return  # Spark's placeholder task when a read has no ranges at all
    from kafkacore.consumer import OffsetSpec

    reader = _get_reader(options.kafka_config)
    tp = (partition.topic, partition.partition)
    position = partition.start
    while position < partition.end:
        try:
            for batch in reader.read(partition.topic, partition.partition, position, partition.end,
                                     include_headers=options.include_headers):
                if batch.num_rows == 0:
                    continue
                if not batch.schema.equals(target_schema):
                    batch = batch.cast(target_schema)
                position = batch.column("offset")[batch.num_rows - 1].as_py() + 1
                yield batch
            return
        except OffsetOutOfRangeError:
            bounds = reader.list_offsets([tp], OffsetSpec.EARLIEST)
            log_start = bounds[tp]
            if log_start <= position:
                # not retention: the log ends before the offset (a topic deleted and made again)
                _report_data_loss(options.fail_on_data_loss,
                                  f"Cannot fetch offset {position} of {_tp(tp)}: the log ends "
                                  f"before it")
                return
            _report_data_loss(options.fail_on_data_loss,
                              f"Cannot fetch offset {position} of {_tp(tp)}: the log starts at "
                              f"{log_start}")
            position = log_start
        except UnknownTopicOrPartitionError:
            _report_data_loss(options.fail_on_data_loss,
                              f"Cannot fetch offset {position} of {_tp(tp)}: the partition is gone")
            return


# -- planning on the driver ----------------------------------------------------------------------


def _topic_partitions(reader: Any, strategy: Any) -> list[TopicPartition]:
    """The partitions a strategy covers now."""
    if isinstance(strategy, Assign):
        return list(strategy.partitions)
    if isinstance(strategy, SubscribePattern):
        counts = reader.topics_matching(strategy.pattern)
    else:
        if not isinstance(strategy, Subscribe):
            raise IllegalStateError(f"not a subscription: {strategy!r}")
        # One Metadata request for the cluster's topics, every time: partition counts must be
        # fresh, or partitions added since the last look would never be read.  A subscribed
        # topic that does not exist (yet) has no partitions, as in Spark.
        counts = reader.topics_matching("|".join(re.escape(t) for t in strategy.topics))
    return sorted((t, p) for t, n in counts.items() for p in range(n))


def _list(reader: Any, tps: Iterable[TopicPartition], spec: Any) -> dict[TopicPartition, int]:
    tps = list(tps)
    if not tps:
        return {}
    return dict(reader.list_offsets(tps, spec))


def resolve_offsets(reader: Any, tps: list[TopicPartition], limit: OffsetRangeLimit, *,
                    option: str, no_match_strategy: str = "error") -> dict[TopicPartition, int]:
    """Offsets for ``tps`` from a ``startingOffsets``-like option: earliest/latest, JSON per
    partition (-2 earliest, -1 latest) or timestamps."""
    from kafkacore.consumer import OffsetSpec

    if isinstance(limit, Earliest):
        return _list(reader, tps, OffsetSpec.EARLIEST)
    if isinstance(limit, Latest):
        return _list(reader, tps, OffsetSpec.LATEST)
    if isinstance(limit, SpecificOffsets):
        given = limit.as_dict()
        if set(given) != set(tps):
            raise ConfigError(
                f"If {option} contains specific offsets, you must specify all TopicPartitions. "
                f"Use -1 for latest, -2 for earliest. Specified: {_names(given)} Assigned: "
                f"{_names(tps)}")
        specific = {tp: off for tp, off in given.items() if off >= 0}
        specific.update(_list(reader, [tp for tp, o in given.items() if o == EARLIEST],
                              OffsetSpec.EARLIEST))
        specific.update(_list(reader, [tp for tp, o in given.items() if o == LATEST],
                              OffsetSpec.LATEST))
        return specific
    if isinstance(limit, GlobalTimestamp):
        by_ts = {tp: limit.timestamp for tp in tps}
    else:
        if not isinstance(limit, SpecificTimestamps):
            raise IllegalStateError(f"not a timestamp limit: {limit!r}")
        by_ts = limit.as_dict()
        if set(by_ts) != set(tps):
            raise ConfigError(
                f"If {option} contains specific timestamps, you must specify all "
                f"TopicPartitions. Specified: {_names(by_ts)} Assigned: {_names(tps)}")
    out: dict[TopicPartition, int] = {}
    for ts in sorted(set(by_ts.values())):
        group = [tp for tp, t in by_ts.items() if t == ts]
        out.update(_list(reader, group, OffsetSpec(ts) if ts in (EARLIEST, LATEST) else ts))
    # No record at or after the timestamp: ListOffsets says -1, or the reader the log's end
    # (no record is at the end offset, so that is no match either).
    by_time = [tp for tp, t in by_ts.items() if t >= 0]
    ends = _list(reader, by_time, OffsetSpec.LATEST)
    unmatched = [tp for tp in by_time if out[tp] < 0 or out[tp] >= ends[tp]]
    if unmatched:
        if no_match_strategy != "latest":
            raise ConfigError(
                f"No offset matched the timestamp of {option} for {_names(unmatched)} (no record "
                f"at or after it); set 'startingOffsetsByTimestampStrategy' to 'latest' to start "
                f"those at the end")
        out.update({tp: ends[tp] for tp in unmatched})
    return out


def _names(tps: Iterable[TopicPartition]) -> str:
    return "[" + ", ".join(_tp(tp) for tp in sorted(tps)) + "]"


# -- spark.read ---------------------------------------------------------------------------------


class KafkaBatchReader(DataSourceReader):
    """``spark.read.format("kafkacore")``: from ``startingOffsets`` (default earliest) to
    ``endingOffsets`` (default latest), both resolved once, when Spark plans the read."""

    def __init__(self, options: SourceOptions, schema: Any) -> None:
        self.options = options
        self.schema = schema

    def partitions(self) -> list[KafkaInputPartition]:
        from kafkacore.consumer import PartitionReader

        opts = self.options
        with PartitionReader(dict(opts.kafka_config)) as reader:
            tps = _topic_partitions(reader, opts.strategy)
            start = resolve_offsets(reader, tps, opts.starting, option="startingOffsets",
                                    no_match_strategy=opts.no_match_strategy)
            end = resolve_offsets(reader, tps, opts.ending, option="endingOffsets",
                                  no_match_strategy="latest")
        ranges = []
        for tp in tps:
            if start[tp] > end[tp]:
                raise ConfigError(f"The starting offset {start[tp]} of {_tp(tp)} is greater than "
                                  f"its ending offset {end[tp]}")
            ranges.append((tp, start[tp], end[tp]))
        return split_ranges(ranges, min_partitions=opts.min_partitions,
                            max_records_per_partition=opts.max_records_per_partition)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(self.options, _arrow_schema(self.schema), partition)


# -- spark.readStream ---------------------------------------------------------------------------


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("kafkacore")``: micro-batches of offset ranges.

    Spark calls :meth:`initialOffset` once for a new query (a restarted one continues from its
    checkpoint), :meth:`latestOffset` before each micro-batch (with the read limit of
    ``maxOffsetsPerTrigger``/``minOffsetsPerTrigger``), :meth:`partitions` to plan it, and
    :meth:`prepareForTriggerAvailableNow` first under ``Trigger.AvailableNow``.  All of these run
    in one Python process on the driver, which keeps one :class:`PartitionReader` for them;
    :meth:`read` runs in the executors.
    """

    def __init__(self, options: SourceOptions, schema: Any) -> None:
        self.options = options
        self.schema = schema
        self._reader: Any = None
        self._target: dict[TopicPartition, int] | None = None  # Trigger.AvailableNow's end
        self._latest: dict[TopicPartition, int] | None = None
        self._last_trigger_ms = 0

    def __getstate__(self) -> dict[str, Any]:
        # the reader is pickled into every task: only what read() needs goes with it
        return {"options": self.options, "schema": self.schema, "_reader": None,
                "_target": None, "_latest": None, "_last_trigger_ms": 0}

    def _driver_reader(self) -> Any:
        if self._reader is None:
            from kafkacore.consumer import PartitionReader

            self._reader = PartitionReader(dict(self.options.kafka_config))
        return self._reader

    def _fetch_latest(self) -> dict[TopicPartition, int]:
        from kafkacore.consumer import OffsetSpec

        reader = self._driver_reader()
        return _list(reader, _topic_partitions(reader, self.options.strategy), OffsetSpec.LATEST)

    def initialOffset(self) -> dict[str, Any]:
        reader = self._driver_reader()
        tps = _topic_partitions(reader, self.options.strategy)
        start = resolve_offsets(reader, tps, self.options.starting, option="startingOffsets",
                                no_match_strategy=self.options.no_match_strategy)
        return offsets_to_json(start)

    def prepareForTriggerAvailableNow(self) -> None:
        # Everything there is now, and nothing later: the query ends when it has read this.
        self._target = self._fetch_latest()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None if self._latest is None else offsets_to_json(self._latest)

    def _new_partition_offsets(self, new: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Partitions that appeared since the last batch start at their earliest offset; one
        whose log does not start at 0 has lost records before we saw it."""
        from kafkacore.consumer import OffsetSpec

        earliest = _list(self._driver_reader(), new, OffsetSpec.EARLIEST)
        for tp, off in sorted(earliest.items()):
            if off != 0:
                _report_data_loss(self.options.fail_on_data_loss,
                                  f"Added partition {_tp(tp)} starts from {off} instead of 0. "
                                  f"Some data may have been missed")
        return earliest

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        opts = self.options
        begin = offsets_from_json(start)
        latest = dict(self._target) if self._target is not None else self._fetch_latest()
        self._latest = latest
        gone = [tp for tp in begin if tp not in latest]
        if gone and self._target is None:
            _report_data_loss(opts.fail_on_data_loss,
                              f"{_names(gone)} are gone. Some data may have been missed")
        new = [tp for tp in latest if tp not in begin]
        if new:
            begin.update(self._new_partition_offsets(new))
        if self._target is not None:
            # partitions that went away after prepareForTriggerAvailableNow are dropped here
            begin = {tp: off for tp, off in begin.items() if tp in latest}

        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        min_rows = (limit.min_rows if isinstance(limit, ReadMinRows)
                    else None if isinstance(limit, ReadAllAvailable)
                    else opts.min_offsets_per_trigger)
        if min_rows is not None and self._target is None:
            available = sum(max(0, latest[tp] - begin[tp]) for tp in latest)
            now = int(time.time() * 1000)
            if available < min_rows and now - self._last_trigger_ms < opts.max_trigger_delay_ms:
                return start
            self._last_trigger_ms = now
        end = _rate_limit(begin, latest, max_rows) if max_rows is not None else latest
        return offsets_to_json(end)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[KafkaInputPartition]:
        begin = offsets_from_json(start)
        until = offsets_from_json(end)
        new = [tp for tp in until if tp not in begin]
        if new:
            begin.update(self._new_partition_offsets(new))
        ranges = []
        for tp, stop in sorted(until.items()):
            if stop < begin[tp]:
                _report_data_loss(self.options.fail_on_data_loss,
                                  f"Partition {_tp(tp)}'s offset was changed from {begin[tp]} to "
                                  f"{stop}, some data may have been missed")
                continue
            ranges.append((tp, begin[tp], stop))
        return split_ranges(ranges, min_partitions=self.options.min_partitions,
                            max_records_per_partition=self.options.max_records_per_partition)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(self.options, _arrow_schema(self.schema), partition)

    def commit(self, end: dict[str, Any]) -> None:
        # Spark's connector commits nothing to Kafka either: the checkpoint is the only record.
        pass

    def stop(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


def _rate_limit(begin: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
                max_rows: int) -> dict[TopicPartition, int]:
    """At most about ``max_rows`` records, shared among the partitions in proportion to what each
    has waiting (Spark's ``rateLimit``: a share below one record is rounded up, others down)."""
    sizes = {tp: max(0, latest[tp] - begin[tp]) for tp in latest}
    total = sum(sizes.values())
    if total <= max_rows:
        return dict(latest)
    out = {}
    for tp, size in sizes.items():
        share = max_rows * size / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(latest[tp], begin[tp] + step)
    return out
