"""The read path: a partition's offset range into Arrow record batches (docs/consumer.rst).

``PartitionReader`` fetches (leader discovery, retries, KIP-320 epoch fencing) and lists
offsets; the compiled :mod:`kafkacore.core.arrow_records` decodes each Fetch answer straight
into Arrow columns in Spark's Kafka source schema, with no Python object per record.
"""

from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.reader import PartitionReader
from kafkacore.consumer.schema import (
    HEADERS_TYPE,
    SPARK_KAFKA_SCHEMA,
    SPARK_KAFKA_SCHEMA_WITH_HEADERS,
    OffsetSpec,
    schema_for,
)

__all__ = [
    "ConsumerConfig",
    "HEADERS_TYPE",
    "OffsetSpec",
    "PartitionReader",
    "SPARK_KAFKA_SCHEMA",
    "SPARK_KAFKA_SCHEMA_WITH_HEADERS",
    "schema_for",
]
