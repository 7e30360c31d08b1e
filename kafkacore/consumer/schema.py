"""Spark's Kafka source schema as Arrow, and what a ListOffsets call may ask for."""

from __future__ import annotations

import enum

import pyarrow as pa

__all__ = ["HEADERS_TYPE", "OffsetSpec", "SPARK_KAFKA_SCHEMA", "SPARK_KAFKA_SCHEMA_WITH_HEADERS",
           "schema_for"]

#: Spark's ``headers`` column: ``array<struct<key: string, value: binary>>``.
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

#: The columns of Spark's Kafka source (``KafkaRecordToRowConverter.kafkaSchema``), in its
#: order and with its types: ``timestamp`` is Spark's TimestampType (microseconds, UTC),
#: ``timestampType`` 0 for CreateTime and 1 for LogAppendTime.  Every column is nullable, as in
#: Spark; only ``key`` and ``value`` hold nulls.
SPARK_KAFKA_SCHEMA = pa.schema([
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")),
    ("timestampType", pa.int32()),
])

#: :data:`SPARK_KAFKA_SCHEMA` with ``headers`` last (Spark's ``includeHeaders=true``).
SPARK_KAFKA_SCHEMA_WITH_HEADERS = SPARK_KAFKA_SCHEMA.append(pa.field("headers", HEADERS_TYPE))


def schema_for(include_headers: bool) -> pa.Schema:
    """The schema :meth:`~kafkacore.consumer.PartitionReader.read` yields."""
    return SPARK_KAFKA_SCHEMA_WITH_HEADERS if include_headers else SPARK_KAFKA_SCHEMA


class OffsetSpec(enum.IntEnum):
    """Which offset :meth:`~kafkacore.consumer.PartitionReader.list_offsets` asks for; an
    ``int`` timestamp in milliseconds asks for the first offset at or after it.  The values are
    ListOffsets' own special timestamps."""

    #: The log start offset, the first offset still in the log.
    EARLIEST = -2
    #: The end of the log, the high watermark (under read_committed the last stable offset).
    LATEST = -1
