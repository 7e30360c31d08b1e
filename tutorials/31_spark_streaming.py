"""Tutorial 31: a Structured Streaming query writes to Kafka exactly once, stopped and restarted.

Tutorial 30 wrote the flights with batch jobs.  Here they arrive as a stream: JSON files dropped
into a directory, one per micro-batch, and a streaming query writes them with
``writeStream.format("kafkacore")``, Spark's own Kafka sink interface.  The sink is exactly once
by default: each task writes its rows in one Kafka transaction with a completion mark, so a
task Spark retries, or a micro-batch Spark replays from its checkpoint, is not written twice.

1. the events of the first 2,000 flights, as four JSON files (the stream's input);
2. a query with a processing-time trigger writes the first files, and we stop it;
3. the same query, restarted from its checkpoint with ``trigger(availableNow=True)``, writes
   only what it had not: the checkpoint keeps the query's id, and with it the sink's
   transactional ids and completion marks;
4. confluent-kafka reads the topic back (``read_committed``): every flight once, each tail
   number in one partition, in time order.

Run it from the repository's root (or from anywhere); it starts its own broker unless
``KAFKACORE_BOOTSTRAP`` names one:

    python tutorials/31_spark_streaming.py

Needs: pyspark and confluent-kafka (the ``spark`` extra), and Java for Spark.
"""
# needs: spark

import collections
import json
import os
import pathlib
import sys
import tempfile
import uuid
from typing import Any

# The flights pipeline is an example, not part of the library: import it from examples/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
import pipeline  # noqa: E402

from kafkacore import admin  # noqa: E402
from kafkacore.core.murmur2 import partition_for_key  # noqa: E402

bootstrap = os.environ.get("KAFKACORE_BOOTSTRAP")
broker = None
if not bootstrap:  # no broker given: start our own, in a process of its own
    from kafkacore.testing import LocalBroker

    broker = LocalBroker(kind="kafkacore").start()
    bootstrap = broker.bootstrap
    print(f"started a kafkacore broker at {bootstrap}")

FLIGHTS, FILES, PARTITIONS = 2000, 4, 3
topic = f"tutorial-stream-{uuid.uuid4().hex[:8]}"
admin.create_topics(bootstrap, {topic: PARTITIONS})
spark = pipeline.start_spark("local[2]", app="kafkacore-tutorial-31")  # registers "kafkacore"
workdir = pathlib.Path(tempfile.mkdtemp(prefix="kafkacore-tutorial-31-"))

# -- 1. the stream's input: the events as JSON files, oldest first ------------------------------
# In departure order (the order the files arrive in): each plane's events in time order.
events = sorted(pipeline.build_events(spark, workdir, limit=FLIGHTS, slices=1).collect(),
                key=lambda r: (json.loads(r["value"])["sched_dep"], r["id"]))
incoming, staging = workdir / "incoming", workdir / "staging"
incoming.mkdir()
staging.mkdir()
per_file = FLIGHTS // FILES


def drop_file(n: int) -> None:
    """File n of the input: the n-th quarter of the events (moved in whole: the stream lists
    files, and must not see one half written)."""
    rows = events[n * per_file:(n + 1) * per_file]
    path = staging / f"events-{n}.json"
    path.write_text("".join(json.dumps({"id": r["id"], "key": r["key"], "value": r["value"]})
                            + "\n" for r in rows))
    os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))  # the file source's order
    path.rename(incoming / path.name)


def stream(trigger: dict[str, Any]) -> Any:
    """The query: the events as they are, key and value, to the topic."""
    return (spark.readStream.schema("id long, key string, value string")
            .option("maxFilesPerTrigger", 1)  # one file per micro-batch
            .json(str(incoming))
            .select("key", "value")
            .writeStream.format("kafkacore")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", topic)
            .option("checkpointLocation", str(workdir / "checkpoint"))
            .trigger(**trigger)
            .start())


# -- 2. a processing-time trigger; stop it after the first files --------------------------------
drop_file(0)
drop_file(1)
query = stream({"processingTime": "1 second"})
query.processAllAvailable()  # every file there has gone through a micro-batch
query.stop()
first_id = query.id
commits = sorted(int(p.name) for p in (workdir / "checkpoint" / "commits").iterdir()
                 if p.name.isdigit())
print(f"query {first_id} stopped after micro-batches {commits}")

# -- 3. more files arrive; the query restarts from its checkpoint -------------------------------
drop_file(2)
drop_file(3)
query = stream({"availableNow": True})
query.awaitTermination()
assert query.exception() is None, query.exception()
assert query.id == first_id  # the checkpoint keeps the id: the sink's transactional ids too
print(f"restarted: the same query id, micro-batch {query.lastProgress['batchId']} was the last")

# -- 4. read back (read_committed) and check ----------------------------------------------------
# The partitions the producer's default partitioner chose: murmur2 of the key, as Java's.
expected = collections.Counter(partition_for_key(r["key"].encode(), PARTITIONS) for r in events)
checks = pipeline.verify(bootstrap, topic, PARTITIONS, FLIGHTS, dict(expected), timeout_s=120)
for name, ok in checks.results.items():
    print(f"  [{'ok' if ok else 'FAILED'}] {name}")
assert checks.passed, checks

spark.stop()
if broker is not None:
    broker.stop()
    broker.remove_data()
print("every check passed")
