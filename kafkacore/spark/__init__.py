"""kafkacore for Apache Spark.

* :mod:`kafkacore.spark.writers`: the batch writers, :func:`write_to_kafka` and
  :func:`delivery_reports`, which produce a DataFrame from Spark's executors through ``mapInArrow``,
  with the per-process producer cache they share.
* :mod:`kafkacore.spark.datasource`: ``format("kafkacore")``, kafkacore as a Spark data source
  for ``spark.read``, ``spark.readStream``, ``df.write`` and ``df.writeStream``, with the options
  of Spark's own Kafka connector (:mod:`kafkacore.spark.options`); :func:`register` makes it
  known to a session.

PySpark and pyarrow are imported only when something here runs, so ``import kafkacore.spark``
works without them.
"""

from typing import Any

from kafkacore.spark.options import DataLossError
from kafkacore.spark.writers import (
    DeliveryFailedError,
    WriteSummary,
    close_producers,
    config_key,
    delivery_reports,
    get_producer,
    write_to_kafka,
)


def register(spark: Any) -> None:
    """Make ``format("kafkacore")`` known to the SparkSession ``spark``.

    Spark also registers it by itself when kafkacore is installed: at the first use of a Python
    data source a session imports every top-level module named ``pyspark_*`` and registers its
    ``DefaultSource``, and kafkacore installs ``pyspark_kafkacore``.  Calling this does no harm
    then; it is needed where that lookup does not happen or does not see the package.
    """
    from kafkacore.spark.datasource import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)


__all__ = [
    "DataLossError",
    "DeliveryFailedError",
    "WriteSummary",
    "close_producers",
    "config_key",
    "delivery_reports",
    "get_producer",
    "register",
    "write_to_kafka",
]
