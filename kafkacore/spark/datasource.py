"""``format("kafkacore")``: kafkacore as a PySpark data source (``pyspark.sql.datasource``).

:class:`KafkaDataSource` is what Spark instantiates for ``spark.read``, ``spark.readStream``,
``df.write`` and ``df.writeStream`` with ``format("kafkacore")``, in a Python process on the
driver.  It checks the options there (:mod:`kafkacore.spark.options`) and hands out the reader
(:mod:`kafkacore.spark.source`) or the writer (:mod:`kafkacore.spark.sink`); both are imported
only when asked for, so a read never imports the sink and the other way round.

Register it with :func:`kafkacore.spark.register`; with kafkacore installed, Spark also finds it by
itself (the top-level module ``pyspark_kafkacore``, see :func:`kafkacore.spark.register`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kafkacore.spark.options import parse_source_options

if TYPE_CHECKING:
    from pyspark.sql.datasource import (
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )

__all__ = ["FORMAT", "KafkaDataSource", "source_schema"]

#: The name given to ``format()``.
FORMAT = "kafkacore"

HEADERS_TYPE = ArrayType(StructType([
    StructField("key", StringType()),
    StructField("value", BinaryType()),
]))


def source_schema(include_headers: bool = False) -> StructType:
    """The columns of a read: Spark's Kafka source's, in its order (``headers`` only with
    ``includeHeaders``)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


class KafkaDataSource(DataSource):
    """Kafka as a Spark data source, with the options of Spark's own Kafka connector.

    ``options`` arrive case-insensitive and as strings (Spark's ``.option(name, value)``).
    """

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self.options = options

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        # Spark asks for the schema of a read at load(), before any reader: the checks both
        # kinds of read share are made here, so a bad option fails load() itself.
        parsed = parse_source_options(self.options, streaming=None)
        return source_schema(parsed.include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        from kafkacore.spark.source import KafkaBatchReader

        return KafkaBatchReader(parse_source_options(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from kafkacore.spark.source import KafkaStreamReader

        return KafkaStreamReader(parse_source_options(self.options, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from kafkacore.spark.sink import KafkaBatchWriter

        return KafkaBatchWriter(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from kafkacore.spark.sink import KafkaStreamWriter

        return KafkaStreamWriter(self.options, schema, overwrite)
