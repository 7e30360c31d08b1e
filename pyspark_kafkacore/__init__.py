"""PySpark finds ``format("kafkacore")`` through this module by itself.

At the first use of a Python data source a Spark session imports every top-level module whose
name starts with ``pyspark_`` and registers its ``DefaultSource`` under ``DefaultSource.name()``.
The source lives in :mod:`kafkacore.spark.datasource`; this is only its address.
"""

from kafkacore.spark.datasource import KafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
