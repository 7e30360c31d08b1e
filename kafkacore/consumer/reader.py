"""PartitionReader: a partition's offset range as Arrow record batches (docs/consumer.rst)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafkacore import errors
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.fetcher import ClientSession, PartitionFetcher
from kafkacore.consumer.offset_fetcher import list_offsets
from kafkacore.consumer.schema import OffsetSpec, schema_for
from kafkacore.metadata import TopicPartition
from kafkacore.network.client import clock_ms
from kafkacore.protocol.api_keys import ApiKey

__all__ = ["PartitionReader"]

#: Kafka's own internal topics (a broker also flags them ``is_internal``).
_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class PartitionReader:
    """Reads partitions' offset ranges into ``pyarrow.RecordBatch`` es in Spark's Kafka source
    schema, and answers the questions a source asks first (partitions, offsets).

    :param config: client settings by the Java consumer's names (``bootstrap.servers``
        required; ``isolation.level``, ``client.id``, ``security.protocol`` and the ``ssl.*`` /
        ``sasl.*`` settings as :class:`~kafkacore.producer.KafkaProducer` takes them,
        ``fetch.max.bytes``, ``max.partition.fetch.bytes``, ``request.timeout.ms``,
        ``retry.backoff.ms``, ``default.api.timeout.ms``, ...).  An unknown name is a
        :class:`~kafkacore.errors.ConfigError` with a did-you-mean.

    Connections open on first use; :meth:`close` (or ``with``) releases them.  One reader
    belongs to one thread: make one per Python worker process (or thread).
    """

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._config = ConsumerConfig(config)
        self._session: ClientSession | None = ClientSession(self._config)

    @property
    def config(self) -> ConsumerConfig:
        """The checked settings, every one filled in."""
        return self._config

    def _open(self) -> ClientSession:
        if self._session is None:
            raise errors.IllegalStateError("the PartitionReader is closed")
        return self._session

    def _deadline(self) -> int:
        return clock_ms() + int(self._config["default.api.timeout.ms"])

    # -- metadata ----------------------------------------------------------------------------

    def partitions_for(self, topics: Iterable[str]) -> dict[str, int]:
        """``{topic: partition count}`` for each of ``topics`` that exists (one that does not
        is left out, as Java's ``partitionsFor`` gives it no partitions)."""
        names = _topic_names(topics)
        session = self._open()
        deadline = self._deadline()
        counts = {}
        for topic in names:
            count = session.partition_count(topic, deadline)
            if count is not None:
                counts[topic] = count
        return counts

    def topics_matching(self, pattern: str) -> dict[str, int]:
        """``{topic: partition count}`` of every topic whose whole name matches the regular
        expression ``pattern`` (Spark's ``subscribePattern``); internal topics are left out."""
        if not isinstance(pattern, str):
            raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"bad topic pattern {pattern!r}: {exc}") from None
        session = self._open()
        deadline = self._deadline()
        attempt = 0
        while True:
            if clock_ms() >= deadline:
                raise errors.KafkaTimeoutError("no broker listed the topics in time"
                                               + session.unreachable())
            node = session.client.least_loaded_node()
            if node is not None:
                try:
                    done = session.send(node, ApiKey.METADATA, {
                        "topics": None, "allow_auto_topic_creation": False,
                        "include_cluster_authorized_operations": False,
                        "include_topic_authorized_operations": False}, deadline)
                    response = session.wait(done, deadline)
                    if response.error is None:
                        break
                    if not response.error.retriable and not response.was_disconnected:
                        raise response.error
                except errors.KafkaError as exc:
                    if not exc.retriable or isinstance(exc, errors.KafkaTimeoutError):
                        raise
            session.sleep(session.backoff_ms(attempt), deadline)
            attempt += 1
        found = {}
        for topic in response.response_body()["topics"]:
            name = topic["name"]
            if (not name or topic["error_code"] or topic.get("is_internal")
                    or name in _INTERNAL_TOPICS or not regex.fullmatch(name)):
                continue
            found[name] = len(topic["partitions"])
        return found

    # -- offsets -----------------------------------------------------------------------------

    def list_offsets(self, partitions: Iterable[tuple[str, int]],
                     spec: OffsetSpec | int) -> dict[tuple[str, int], int]:
        """``{(topic, partition): offset}`` for ``spec``: :attr:`OffsetSpec.EARLIEST` (the log
        start offset), :attr:`OffsetSpec.LATEST` (the high watermark; the last stable offset
        under read_committed), or a timestamp in ms (the first offset whose timestamp is at or
        after it; LATEST for a partition without one).  A partition that does not exist raises
        ``UnknownTopicOrPartitionError``."""
        tps = _partitions(partitions)
        if not _is_int(spec) or spec < OffsetSpec.EARLIEST:
            raise ValueError(f"spec must be OffsetSpec.EARLIEST, OffsetSpec.LATEST or a"
                             f" timestamp in ms >= 0, not {spec!r}")
        session = self._open()
        timeout = self._config["default.api.timeout.ms"]
        answers = list_offsets(session, dict.fromkeys(tps, int(spec)), timeout)
        result = {(tp.topic, tp.partition): answers[tp][0] for tp in tps}
        if spec >= 0:
            for tp in tps:
                if answers[tp][0] >= 0:
                    result[tp] = self._first_at_or_after(tp, answers[tp][0], int(spec))
        missing = [tp for tp in tps if result[tp] < 0]
        if missing:  # no record at or after the timestamp: the end of the log
            ends = list_offsets(session, dict.fromkeys(missing, int(OffsetSpec.LATEST)), timeout)
            result.update({(tp.topic, tp.partition): ends[tp][0] for tp in missing})
        return result

    def _first_at_or_after(self, tp: TopicPartition, offset: int, timestamp: int) -> int:
        """The first offset at or after ``offset`` whose record has a timestamp at or after
        ``timestamp``.  Kafka's broker answers exactly that; a broker that answers with the
        batch's base offset (ours did, before its time index) is made exact here, from one
        Fetch."""
        for batch in self.read(tp.topic, tp.partition, offset, 2**63 - 1):
            micros = batch.column("timestamp").cast(pa.int64())
            at = pc.index(pc.greater_equal(micros, timestamp * 1000), True).as_py()
            if at >= 0:
                return int(batch.column("offset")[at].as_py())
        return -1  # no such record after all: the caller takes the end of the log

    # -- records -----------------------------------------------------------------------------

    def read(self, topic: str, partition: int, start: int, end: int, *,
             include_headers: bool = False, max_rows: int | None = None,
             timeout_s: float = 30.0) -> Iterator[pa.RecordBatch]:
        """Every record with ``start <= offset < end``, as record batches in
        :data:`~kafkacore.consumer.SPARK_KAFKA_SCHEMA` (with ``headers`` when
        ``include_headers``), one per Fetch answer that had rows, at most ``max_rows`` rows.

        Fewer when the log ends first: read_committed stops at the last stable offset, and
        aborted records and control records are left out (so offsets may have gaps).
        ``timeout_s`` bounds how long the read may go without progress (leader changes,
        retries).  Raises ``OffsetOutOfRangeError`` when ``start`` is
        not in the log (before its start offset, or past its end), so the caller can apply
        ``failOnDataLoss``; ``UnknownTopicOrPartitionError`` when the
        partition does not exist.  Arguments are checked at the call, before anything is sent.
        """
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"topic must be a non-empty str, not {topic!r}")
        for name, value in (("partition", partition), ("start", start), ("end", end)):
            if not _is_int(value) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, not {value!r}")
        if end < start:
            raise ValueError(f"end ({end}) must not be before start ({start})")
        if max_rows is not None and (not _is_int(max_rows) or max_rows < 0):
            raise ValueError(f"max_rows must be None or an int >= 0, not {max_rows!r}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not (
                timeout_s > 0):
            raise ValueError(f"timeout_s must be a number > 0, not {timeout_s!r}")
        fetcher = PartitionFetcher(self._open(), topic, partition, start, end,
                                   include_headers=bool(include_headers), max_rows=max_rows,
                                   timeout_s=float(timeout_s))
        return iter(fetcher)

    def read_range(self, topic: str, partition: int, start: int, end: int, *,
                   include_headers: bool = False, max_rows: int | None = None,
                   timeout_s: float = 30.0) -> pa.RecordBatch:
        """:meth:`read`'s batches as one ``pyarrow.RecordBatch`` (empty if there are none)."""
        batches = list(self.read(topic, partition, start, end, include_headers=include_headers,
                                 max_rows=max_rows, timeout_s=timeout_s))
        schema = schema_for(bool(include_headers))
        if not batches:
            return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema],
                                              schema=schema)
        if len(batches) == 1:
            return batches[0]
        return pa.Table.from_batches(batches, schema).combine_chunks().to_batches()[0]

    # -- the end -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connections (again: nothing)."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def __enter__(self) -> PartitionReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._session is None else "open"
        return (f"PartitionReader({self._config['isolation.level']},"
                f" bootstrap={self._config['bootstrap.servers']}, {state})")


def _topic_names(topics: Iterable[str]) -> list[str]:
    if isinstance(topics, str):
        raise TypeError("topics must be an iterable of names, not one str (wrap it in a list)")
    names = list(topics)
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a topic name must be a non-empty str, not {name!r}")
    return names


def _partitions(partitions: Iterable[tuple[str, int]]) -> list[TopicPartition]:
    out = []
    for item in partitions:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                and item[0] and _is_int(item[1]) and item[1] >= 0):
            raise TypeError(f"a partition is a (topic, partition >= 0) pair, not {item!r}")
        out.append(TopicPartition(item[0], item[1]))
    return list(dict.fromkeys(out))
