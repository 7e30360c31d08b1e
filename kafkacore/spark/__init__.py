"""kafkacore for Apache Spark.

* :mod:`kafkacore.spark.writers`: the batch writers, :func:`write_to_kafka` and
  :func:`delivery_reports`, which produce a DataFrame from Spark's executors through ``mapInArrow``,
  with the per-process producer cache they share.

PySpark and pyarrow are imported only when something here runs, so ``import kafkacore.spark``
works without them.
"""

from kafkacore.spark.writers import (
    DeliveryFailedError,
    WriteSummary,
    close_producers,
    config_key,
    delivery_reports,
    get_producer,
    write_to_kafka,
)

__all__ = [
    "DeliveryFailedError",
    "WriteSummary",
    "close_producers",
    "config_key",
    "delivery_reports",
    "get_producer",
    "write_to_kafka",
]
