"""The exactly-once sink when Spark runs a task attempt twice: the first attempt of a task fails
(raises, its Python worker lives on and may run the retry) before, while or after its
transaction commits, and Spark retries it (``local[2,4]``: ``spark.task.maxFailures`` 4).  The
retry fences the failed attempt and writes, or finds its completion mark and writes nothing.

Spark's speculative execution is the other way an attempt runs twice; Spark does not speculate
in local mode, so a retry is what a test on one machine can make Spark do.  The sink's answer is
the same for both (``init_transactions`` fences the other attempt, the mark says whether it
committed): see docs/spark_sink.rst.

Both writes are judged by confluent-kafka (``read_committed``: each row once) and kafka-python
(``read_uncommitted``: the failed attempts did leave records in the log).
"""

from __future__ import annotations

import collections
import json

import pytest
from readback import read_confluent, read_kafka_python
from support.topics import new_topic

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (the `spark` extra)")
pytest.importorskip("pyarrow", reason="the Spark tests need pyarrow (the `spark` extra)")

# Each a Spark job with three failed and retried tasks: tens of seconds on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

COMMITTED = {"isolation.level": "read_committed"}
N = 3000
# The first attempt of Spark partition p raises at FAILS[p]: with records sent in its open
# transaction; with all acknowledged and the mark in the transaction, before the commit; and
# after the commit, the rows written for good.
FAILS = {0: "sending", 1: "flushed", 2: "committed"}


def _ids(records) -> collections.Counter:
    return collections.Counter(json.loads(r.value)["id"] for r in records)


def _fault_property(markers) -> str:
    return ",".join(f"{p}={point}:raise" for p, point in FAILS.items()) + f"@{markers}"


def _check(bootstrap, topic, markers):
    # Every first attempt failed where it was told to: the test tested what it says.
    assert sorted(p.name for p in markers.iterdir()) == sorted(
        f"{p}-{point}" for p, point in FAILS.items())
    assert _ids(read_confluent(bootstrap, topic, 3, N, config=COMMITTED)) == \
        collections.Counter(range(N))
    # The attempt that failed after its commit had written its rows for good, and the one that
    # failed after flushing had them acknowledged in a transaction it then aborted: a
    # read_uncommitted reader sees more than N, so each retry did face rows already there.
    assert len(read_kafka_python(bootstrap, topic, 3, N + 1)) > N


def test_batch_write_tasks_retried_after_writing_write_once(kspark, our_broker, tmp_path):
    bootstrap = our_broker.bootstrap
    topic = new_topic(bootstrap, 3, prefix="retrybatch")
    markers = tmp_path / "markers"
    markers.mkdir()
    df = kspark.range(N, numPartitions=3).selectExpr(
        "CAST(id % 7 AS STRING) AS key", "to_json(struct(id)) AS value")
    kspark.sparkContext.setLocalProperty("kafkacore.sink.fault", _fault_property(markers))
    try:
        (df.write.format("kafkacore").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", topic).mode("append").save())
    finally:
        kspark.sparkContext.setLocalProperty("kafkacore.sink.fault", None)
    _check(bootstrap, topic, markers)


def test_stream_tasks_retried_after_writing_write_once(kspark, our_broker, tmp_path):
    bootstrap = our_broker.bootstrap
    topic = new_topic(bootstrap, 3, prefix="retrystream")
    source = tmp_path / "in"
    source.mkdir()
    for f in range(3):
        (source / f"part-{f}.json").write_text("".join(
            json.dumps({"id": i}) + "\n" for i in range(f * N // 3, (f + 1) * N // 3)))
    markers = tmp_path / "markers"
    markers.mkdir()
    kspark.sparkContext.setLocalProperty("kafkacore.sink.fault", _fault_property(markers))
    try:
        query = (kspark.readStream.schema("id long").json(str(source))
                 .repartition(3)  # three Spark partitions in the sink
                 .selectExpr("CAST(id % 7 AS STRING) AS key", "to_json(struct(id)) AS value")
                 .writeStream.format("kafkacore")
                 .option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
                 .option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
    finally:
        kspark.sparkContext.setLocalProperty("kafkacore.sink.fault", None)
    assert query.awaitTermination(300)
    assert query.exception() is None
    _check(bootstrap, topic, markers)
