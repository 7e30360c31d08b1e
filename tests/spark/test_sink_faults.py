"""The streaming sink's exactly-once guarantee under faults: Python workers SIGKILLed mid-batch
(and the same fault in at-least-once mode, which duplicates), and the driver killed between the
sink's writes and Spark's commit log, the query then restarted from its checkpoint.

Judged by confluent-kafka reading ``read_committed`` (each row once) and kafka-python reading
``read_uncommitted`` (the killed attempts did leave records in the log: the fault bit).
"""

from __future__ import annotations

import collections
import json
import pathlib
import signal
import subprocess
import sys
import textwrap

import pytest
from readback import read_confluent, read_kafka_python
from support.children import child_env
from support.topics import new_topic

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (the `spark` extra)")
pytest.importorskip("pyarrow", reason="the Spark tests need pyarrow (the `spark` extra)")

pytestmark = pytest.mark.timeout(600)

COMMITTED = {"isolation.level": "read_committed"}


def _ids(records) -> collections.Counter:
    return collections.Counter(json.loads(r.value)["id"] for r in records)


def _write_input(source: pathlib.Path, n: int, files: int = 3) -> None:
    source.mkdir()
    per = n // files
    for f in range(files):
        (source / f"part-{f}.json").write_text(
            "".join(json.dumps({"id": i}) + "\n" for i in range(f * per, (f + 1) * per)))


def _run_once(spark, source, checkpoint, bootstrap, topic, guarantee, deaths, markers):
    """One availableNow run of a 3-partition copy whose first attempts die as ``deaths`` say."""
    spark.sparkContext.setLocalProperty(
        "kafkacore.sink.fault", ",".join(f"{p}={point}" for p, point in deaths.items())
        + f"@{markers}")
    try:
        query = (spark.readStream.schema("id long").json(str(source))
                 .repartition(3)  # three Spark partitions in the sink, several batches each
                 .selectExpr("CAST(id % 11 AS STRING) AS key", "to_json(struct(id)) AS value")
                 .writeStream.format("kafkacore")
                 .option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
                 .option("kafkacore.sink.guarantee", guarantee)
                 .option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
    finally:
        spark.sparkContext.setLocalProperty("kafkacore.sink.fault", None)
    assert query.awaitTermination(300)
    assert query.exception() is None


def test_workers_sigkilled_mid_batch_leave_each_row_once(kspark, our_broker, tmp_path):
    """Three tasks of one micro-batch: the first attempt of each SIGKILLs its Python worker, one
    with records sent in its open transaction, one with all flushed and the completion mark in
    the transaction, one just after its commit.  Spark retries each task; each row is in the
    topic once, the killed attempts' records aborted."""
    n, bootstrap = 3000, our_broker.bootstrap
    topic = new_topic(bootstrap, 3, prefix="sinkkill")
    _write_input(tmp_path / "in", n)
    markers = tmp_path / "markers"
    markers.mkdir()
    deaths = {0: "sending", 1: "flushed", 2: "committed"}
    _run_once(kspark, tmp_path / "in", tmp_path / "checkpoint", bootstrap, topic,
              "exactly_once", deaths, markers)
    # Every first attempt died where it was told to: the test tested what it says.
    assert sorted(p.name for p in markers.iterdir()) == ["0-sending", "1-flushed", "2-committed"]
    assert _ids(read_confluent(bootstrap, topic, 3, n, config=COMMITTED)) == \
        collections.Counter(range(n))
    # The attempt killed after flushing had its records in the log, in a transaction that never
    # committed, and the one killed after its commit wrote them for good: a read_uncommitted
    # reader sees more than n records, so read_committed did hide some.
    assert len(read_kafka_python(bootstrap, topic, 3, n + 1)) > n


def test_at_least_once_duplicates_under_the_same_fault(kspark, our_broker, tmp_path):
    """The control: a worker killed after its records were acknowledged, at_least_once: the
    retried task sends them again, and a read_committed reader sees them twice."""
    n, bootstrap = 3000, our_broker.bootstrap
    topic = new_topic(bootstrap, 3, prefix="alokill")
    _write_input(tmp_path / "in", n)
    markers = tmp_path / "markers"
    markers.mkdir()
    _run_once(kspark, tmp_path / "in", tmp_path / "checkpoint", bootstrap, topic,
              "at_least_once", {1: "flushed"}, markers)
    assert [p.name for p in markers.iterdir()] == ["1-flushed"]
    # No transactions here, so no control records: the end offsets count the records.
    total = _end_offsets(bootstrap, topic, 3)
    assert total > n
    got = _ids(read_confluent(bootstrap, topic, 3, total, config=COMMITTED))
    assert set(got) == set(range(n))
    twice = [i for i, c in got.items() if c > 1]
    assert twice and sum(got.values()) == total == n + len(twice)


def _end_offsets(bootstrap: str, topic: str, partitions: int) -> int:
    """The sum of the partitions' end offsets, asked with kafka-python."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
        return sum(ends.values())
    finally:
        consumer.close()


# The driver: a Structured Streaming copy from JSON files into Kafka, availableNow.  It is a
# separate process so that the test can kill all of it (JVM, Python workers) with SIGKILL.
DRIVER = textwrap.dedent("""
    import os
    import sys
    from pyspark.sql import SparkSession
    from kafkacore.spark import register

    source, checkpoint, bootstrap, topic = sys.argv[1:5]
    if os.environ.get("DIE_AT"):  # the sink's fault hook: SIGKILL this process group there
        os.environ["KAFKACORE_SINK_FAULT"] = os.environ["DIE_AT"] + f":{os.getpgrp()}"
    # C1 only: a JVM that lives for one short query spends less CPU compiling than it saves.
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
             .config("spark.sql.shuffle.partitions", "3").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    query = (spark.readStream.schema("id long").option("maxFilesPerTrigger", 2)
             .json(source).repartition(3)
             .selectExpr("to_json(struct(id)) AS value")
             .writeStream.format("kafkacore")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
             .option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None, query.exception()
    print("query", query.id, "done")
""")


def test_driver_killed_before_the_commit_log_then_restarted(kspark, our_broker, tmp_path):
    """The driver dies (SIGKILL, its whole process group) after every task of micro-batch 1
    committed its transaction but before Spark wrote batch 1 to its commit log.  Restarted on
    the same checkpoint (in this test session's Spark: another driver than the one killed, as a
    restarted job is, without the cost of starting a third JVM), Spark replays batch 1: its
    tasks find their completion marks and write nothing; batch 2 follows.  Each row once."""
    n, bootstrap = 3000, our_broker.bootstrap
    topic = new_topic(bootstrap, 3, prefix="driverkill")
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    _write_input(source, n, files=6)  # two files per micro-batch: batches 0, 1, 2
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    args = [sys.executable, str(script), str(source), str(checkpoint), bootstrap, topic]
    env = child_env(PYSPARK_PYTHON=sys.executable)

    # The first driver, told to die before batch 1's commit log (start_new_session: it leads
    # its own process group, which the fault kills whole).
    first = subprocess.run(args, cwd=tmp_path, env={**env, "DIE_AT": "commit:1"},
                           start_new_session=True, capture_output=True, text=True, timeout=400)
    assert first.returncode == -signal.SIGKILL, first.stdout + first.stderr[-3000:]
    commits = checkpoint / "commits"
    assert (checkpoint / "offsets" / "1").exists() and not (commits / "1").exists()
    assert (commits / "0").exists()
    # Batches 0 and 1 are in the topic already (their transactions committed), once each.
    before = _ids(read_confluent(bootstrap, topic, 3, 2 * n // 3, config=COMMITTED))
    assert before == collections.Counter(range(2 * n // 3))

    # The same query (its id is in the checkpoint, so are the sink's transactional ids).
    query = (kspark.readStream.schema("id long").option("maxFilesPerTrigger", 2)
             .json(str(source)).repartition(3)
             .selectExpr("to_json(struct(id)) AS value")
             .writeStream.format("kafkacore")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
             .option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(300)
    assert query.exception() is None
    assert (commits / "1").exists() and (commits / "2").exists()
    assert _ids(read_confluent(bootstrap, topic, 3, n, config=COMMITTED)) == \
        collections.Counter(range(n))
