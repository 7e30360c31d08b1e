"""kafkacore.spark against the real test broker, read back by consumers we did not write.

``write_to_kafka`` and ``delivery_reports`` run on a local[2,4] Spark session (tests/spark/
conftest.py); what they produced is read back with confluent-kafka and kafka-python and compared
record by record.  Keyed partitioning is checked against kafka-python's murmur2 (the Java
client's partitioner).  The producer cache is tested directly too, across a real ``os.fork()``.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import pickle
import subprocess
import sys
import time

import pytest
from readback import read_kafka_python

from kafkacore.errors import ConfigError
from kafkacore.spark import writers as kspark

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (the `spark` extra)")
pytest.importorskip("pyarrow", reason="the Spark tests need pyarrow (the `spark` extra)")

pytestmark = pytest.mark.timeout(300)


def _config(bootstrap, **extra):
    return {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 65536, **extra}


def _java_partition(key: bytes, partitions: int) -> int:
    """The Java client's keyed partition, by kafka-python's murmur2 (the reference)."""
    from kafka.partitioner.default import murmur2

    return (murmur2(key) & 0x7FFFFFFF) % partitions


def read_confluent(bootstrap, topic, partitions, expected, timeout_s=60.0):
    """readback.read_confluent, run in a child process: librdkafka objects have crashed a
    multi-threaded process (this one runs Spark's py4j threads) during garbage collection
    (confluent-kafka-python issue #1761), and a crash here would end the whole session."""
    code = (
        "import pickle, sys, readback; "
        "sys.stdout.buffer.write(pickle.dumps(readback.read_confluent("
        "*pickle.loads(bytes.fromhex(sys.argv[1])))))"
    )
    here = str(pathlib.Path(__file__).parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [here, os.environ.get("PYTHONPATH")])))
    args = pickle.dumps((bootstrap, topic, partitions, expected, timeout_s)).hex()
    done = subprocess.run([sys.executable, "-c", code, args], capture_output=True, env=env,
                          timeout=timeout_s + 60)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return pickle.loads(done.stdout)


def _flights_like(spark, n, keys=40, slices=6):
    """``n`` rows: id, a string key of ``keys`` distinct values, a JSON string value; each key's
    rows in one Spark partition, ordered by id (so send order per key is id order)."""
    from pyspark.sql import functions as F

    return (
        spark.range(n, numPartitions=slices)
        .withColumn("key", F.concat(F.lit("key-"), (F.col("id") % keys).cast("string")))
        .withColumn("value", F.to_json(F.struct("id", "key")))
        .repartition(slices, "key")
        .sortWithinPartitions("key", "id")
    )


# -- write_to_kafka ---------------------------------------------------------------------------


def test_write_to_kafka_every_row_once_in_key_order(spark, bootstrap, make_topic):
    n, partitions = 3000, 3
    topic = make_topic(partitions)
    df = _flights_like(spark, n)
    summary = kspark.write_to_kafka(df, topic, _config(bootstrap))

    assert summary.records == n and summary.failures == 0 and summary.acked == n
    assert summary.tasks == df.rdd.getNumPartitions()
    assert sum(summary.partition_counts.values()) == n
    assert summary.seconds > 0 and summary.first_error is None
    assert summary.cpu_seconds > 0  # the workers' CPU, measured in the tasks

    for read in (read_confluent, read_kafka_python):
        got = read(bootstrap, topic, partitions, n)
        ids = [json.loads(r.value)["id"] for r in got]
        assert sorted(ids) == list(range(n)), read.__name__  # every row, exactly once
        per_partition = collections.Counter(r.partition for r in got)
        assert dict(per_partition) == summary.partition_counts, read.__name__
        by_key = collections.defaultdict(list)
        for r in sorted(got, key=lambda r: (r.partition, r.offset)):
            assert r.partition == _java_partition(r.key, partitions), r.key
            by_key[r.key].append(json.loads(r.value)["id"])
        for key, seq in by_key.items():
            assert seq == sorted(seq), f"{read.__name__}: {key!r} out of order"


def test_binary_columns_headers_timestamps_explicit_partitions(spark, bootstrap, make_topic):
    from pyspark.sql import functions as F

    n, partitions = 600, 4
    topic = make_topic(partitions)
    df = (
        spark.range(n, numPartitions=3)
        .withColumn("k", F.when(F.col("id") % 5 == 0, F.lit(None)).otherwise(
            F.col("id").cast("string").cast("binary")))
        # every 7th value is null: a tombstone
        .withColumn("v", F.when(F.col("id") % 7 == 3, F.lit(None).cast("binary")).otherwise(
            F.concat(F.lit(b"\x00\xff"), F.col("id").cast("string").cast("binary"))))
        .withColumn("h", F.create_map(F.lit("row"), F.col("id").cast("string"),
                                      F.lit("raw"), F.lit(b"\x01\x02")))
        .withColumn("p", (F.col("id") % partitions).cast("int"))
        .withColumn("ts", F.timestamp_millis(F.lit(1_700_000_000_000) + F.col("id")))
    )
    summary = kspark.write_to_kafka(
        df, topic, _config(bootstrap), key="k", value="v", headers="h", partition="p",
        timestamp="ts",
    )
    assert summary.records == n and summary.failures == 0
    assert summary.partition_counts == {p: n // partitions for p in range(partitions)}

    got = read_confluent(bootstrap, topic, partitions, n)
    assert len(got) == n
    seen = set()
    for r in got:
        headers = dict(r.headers)
        i = int(headers["row"])
        seen.add(i)
        assert headers["raw"] == b"\x01\x02"
        assert r.partition == i % partitions
        assert r.timestamp == 1_700_000_000_000 + i
        assert r.key == (None if i % 5 == 0 else str(i).encode())
        assert r.value == (None if i % 7 == 3 else b"\x00\xff" + str(i).encode())
    assert seen == set(range(n))


def test_headers_as_array_of_structs(spark, bootstrap, make_topic):
    from pyspark.sql import functions as F

    topic = make_topic(1)
    df = (
        spark.range(50, numPartitions=2)
        .withColumn("key", F.lit(None).cast("string"))
        .withColumn("value", F.col("id").cast("string"))
        .withColumn("headers", F.array(F.struct(F.lit("a").alias("key"),
                                                F.lit("x").cast("binary").alias("value")),
                                       F.struct(F.lit("a").alias("key"),
                                                F.lit("y").cast("binary").alias("value"))))
    )
    kspark.write_to_kafka(df, topic, _config(bootstrap), headers="headers")
    got = read_kafka_python(bootstrap, topic, 1, 50)
    assert sorted(int(r.value) for r in got) == list(range(50))
    # Repeated header names are kept, in order, as Kafka allows.
    assert all(r.headers == (("a", b"x"), ("a", b"y")) for r in got)
    assert all(r.key is None for r in got)


# -- delivery_reports -------------------------------------------------------------------------


def test_delivery_reports_one_row_per_input_row_and_lazy(spark, bootstrap, make_topic):
    n, partitions = 1200, 3
    topic = make_topic(partitions)
    df = _flights_like(spark, n)
    reports = kspark.delivery_reports(df, topic, _config(bootstrap))
    assert reports.columns == ["id", "key", "value", "partition", "offset", "error"]
    # Lazy: building the DataFrame sent nothing.
    assert read_confluent(bootstrap, topic, partitions, 0, timeout_s=1) == []

    rows = reports.collect()
    assert len(rows) == n
    assert sorted(r["id"] for r in rows) == list(range(n))
    assert all(r["error"] is None for r in rows)
    # Join the reports back to what the broker holds: (partition, offset) -> the same value.
    got = {(r.partition, r.offset): r for r in read_confluent(bootstrap, topic, partitions, n)}
    assert len(got) == n
    for row in rows:
        record = got[(row["partition"], row["offset"])]
        assert record.value == row["value"].encode() and record.key == row["key"].encode()


def test_delivery_reports_selected_columns_and_clash(spark, bootstrap, make_topic):
    from pyspark.sql import functions as F

    topic = make_topic(2)
    df = spark.range(100, numPartitions=2).select(
        F.col("id"), F.col("id").cast("string").alias("key"),
        F.col("id").cast("string").alias("value"), F.lit(0).alias("partition"),
    )
    with pytest.raises(ValueError, match="'partition'"):
        kspark.delivery_reports(df, topic, _config(bootstrap))
    reports = kspark.delivery_reports(df, topic, _config(bootstrap), columns=["id"],
                                      partition="partition")
    assert reports.columns == ["id", "partition", "offset", "error"]
    rows = reports.collect()
    assert sorted(r["id"] for r in rows) == list(range(100))
    assert {r["partition"] for r in rows} == {0}  # the explicit partition column was honoured
    assert sorted(r["offset"] for r in rows) == list(range(100))


# -- at-least-once: a task retried after a failure --------------------------------------------


def test_task_retry_leaves_no_record_missing(spark, bootstrap, make_topic, tmp_path):
    """Partition 1's first attempt dies half way, after some of its batches were produced;
    Spark runs the task again (local[2,4]) and the retry sends all of them: every row arrives
    at least once, and the summary counts each row once (only successful attempts report)."""
    from pyspark import TaskContext

    n, partitions = 4000, 3
    topic = make_topic(partitions)
    marker = pathlib.Path(tmp_path) / "failed-once"

    def fail_once(batches):
        sent = 0
        for batch in batches:
            yield batch
            sent += batch.num_rows
            ctx = TaskContext.get()
            if ctx.partitionId() == 1 and sent >= 500 and not marker.exists():
                marker.write_text(f"attempt {ctx.attemptNumber()}")
                raise RuntimeError("injected failure, first attempt of partition 1")

    base = _flights_like(spark, n, slices=4)
    df = base.mapInArrow(fail_once, base.schema)
    summary = kspark.write_to_kafka(df, topic, _config(bootstrap))
    assert marker.read_text() == "attempt 0"  # the failure really happened, once
    assert summary.records == n and summary.failures == 0

    counts = _read_ids(bootstrap, topic, partitions, n)
    assert set(counts) == set(range(n))  # nothing missing
    assert all(c >= 1 for c in counts.values())


def _read_ids(bootstrap, topic, partitions, n, timeout_s=60.0):
    """How often each event id is in the topic (read by kafka-python from offset 0): until
    every id 0..n-1 was seen once or the bound ran out, then one more second for duplicates."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             group_id=None, auto_offset_reset="earliest")
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    counts = collections.Counter()
    deadline = time.monotonic() + timeout_s
    try:
        settle = None
        while time.monotonic() < (settle or deadline):
            for messages in consumer.poll(timeout_ms=200, max_records=10000).values():
                for m in messages:
                    counts[json.loads(m.value)["id"]] += 1
            if settle is None and len(counts) >= n:
                settle = time.monotonic() + 1.0
    finally:
        consumer.close()
    return counts


# -- records that fail: reported, and raised on the driver ------------------------------------


def test_failed_records_are_counted_reported_and_raised(spark, broker, bootstrap, make_topic):
    """Real failures: the broker frozen (SIGSTOP) while the task body runs, so every record
    expires after delivery.timeout.ms.  The task body is run here, in this process, so that the
    failure is certain (in a Spark job it would race the task scheduling); its summary row goes
    through the same driver-side code as a collected Spark row."""
    import pyarrow as pa

    topic = make_topic(2)
    config = _config(bootstrap, **{"linger.ms": 0, "request.timeout.ms": 400,
                                   "delivery.timeout.ms": 800, "client.id": "expiry-test"})
    df = spark.range(1).selectExpr("cast(id as string) as key", "cast(id as string) as value")
    plan = kspark._make_plan(df, topic, config, "key", "value", None, None, None, ("key",))
    batches = [pa.RecordBatch.from_pydict({"key": [f"k{i}" for i in range(j, j + 50)],
                                           "value": [b"v" * 20] * 50}) for j in (0, 50)]
    try:
        producer = kspark.get_producer(config)
        _send_one(producer, topic)  # metadata known: the failure will be delivery, not lookup
        with broker.paused():  # returns once the kernel shows the broker stopped
            # white-box: the task bodies run in this process, so the failure is certain
            rows = [b.to_pylist()[0] for b in kspark._write_task(plan, iter(batches))]
            reports = pa.Table.from_batches(list(kspark._report_task(plan, iter(batches))))
    finally:
        kspark.close_producers(5)
    assert rows[0]["records"] == 100 and rows[0]["failures"] == 100
    assert rows[0]["partitions"] == [] and "Timeout" in rows[0]["first_error"]

    with pytest.raises(kspark.DeliveryFailedError) as info:
        # white-box: the driver's summary of those rows, as write_to_kafka makes it
        kspark._summarize(topic, rows, 1.0)
    assert str(info.value).startswith(f"100 of 100 records were not delivered to {topic!r}")
    assert "Timeout" in str(info.value) and info.value.summary.acked == 0

    # The lazy form does not raise: each row says what happened to it.
    assert reports.column_names == ["key", "partition", "offset", "error"]
    assert reports.num_rows == 100
    assert reports.column("key").to_pylist() == [f"k{i}" for i in range(100)]
    assert reports.column("partition").null_count == 100
    assert reports.column("offset").null_count == 100
    assert all("Timeout" in e for e in reports.column("error").to_pylist())


def test_a_task_that_keeps_failing_fails_the_job_with_our_message(spark, bootstrap, make_topic):
    from pyspark.sql import functions as F

    topic = make_topic(2)
    df = spark.range(20, numPartitions=2).select(
        F.col("id").cast("string").alias("key"), F.col("id").cast("string").alias("value"),
        F.when(F.col("id") == 7, F.lit(None)).otherwise(F.lit(0)).alias("p"),
    )
    # Spark tries the task four times (local[2,4]), then gives up; the error says why.
    with pytest.raises(Exception, match=r"column 'p' \(the record partition\) is null"):
        kspark.write_to_kafka(df, topic, _config(bootstrap), partition="p")


# -- errors on the driver, before any job starts ----------------------------------------------


def _no_job_ran(spark, group, call):
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        call()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert sc.statusTracker().getJobIdsForGroup(group) == []


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"value": "n"}, TypeError, "column 'n' (the record value) has type bigint"),
        ({"key": "n"}, TypeError, "column 'n' (the record key) has type bigint"),
        ({"value": "nope"}, ValueError, "no column 'nope' for the record value"),
        ({"key": "absent"}, ValueError, "no column 'absent' for the record key"),
        ({"partition": "s"}, TypeError, "column 's' (the record partition) has type string"),
        ({"timestamp": "s"}, TypeError, "column 's' (the record timestamp) has type string"),
        ({"headers": "s"}, TypeError, "column 's' (the record headers) has type string"),
        ({"headers": "m"}, TypeError, "column 'm' (the record headers) has type map<string,bigint>"),
        ({"value": 3}, TypeError, "value= must be a column name"),
    ],
)
def test_bad_columns_fail_on_the_driver(spark, bootstrap, kwargs, error, words):
    from pyspark.sql import functions as F

    df = spark.range(10).select(
        F.col("id").alias("n"), F.col("id").cast("string").alias("key"),
        F.col("id").cast("string").alias("value"), F.lit("x").alias("s"),
        F.create_map(F.lit("a"), F.col("id")).alias("m"),
    )
    for fn in (kspark.write_to_kafka, kspark.delivery_reports):
        def call(fn=fn):
            with pytest.raises(error) as info:
                fn(df, "any-topic", _config(bootstrap), **kwargs)
            assert words in str(info.value)

        _no_job_ran(spark, f"bad-{fn.__name__}", call)


def test_bad_config_and_topic_fail_on_the_driver(spark, bootstrap):
    df = spark.range(3).selectExpr("cast(id as string) as key", "cast(id as string) as value")
    with pytest.raises(ConfigError, match="linger.ms"):
        kspark.write_to_kafka(df, "t", {"bootstrap.servers": bootstrap, "linger.ms": -1})
    with pytest.raises(ConfigError, match="bootstrap.servers"):
        kspark.write_to_kafka(df, "t", {})
    with pytest.raises(TypeError, match="topic"):
        kspark.write_to_kafka(df, "", _config(bootstrap))
    # Serializers would silently do nothing to columns that are sent as they are: refused.
    with pytest.raises(ConfigError, match="'value.serializer' do not apply to DataFrame columns"):
        kspark.write_to_kafka(df, "t", _config(bootstrap, **{"value.serializer": str.encode}))
    with pytest.raises(TypeError, match="config"):
        kspark.config_key([("bootstrap.servers", bootstrap)])


# -- producers in the executors: one per worker and configuration, never across a fork --------


def test_worker_reuse_keeps_one_producer_per_config(spark, bootstrap, make_topic):
    topic = make_topic(2)
    df = _flights_like(spark, 800, slices=8)  # 8 tasks on 2 slots: workers run several each
    a = _config(bootstrap)
    b = _config(bootstrap, **{"linger.ms": 7})
    runs = [kspark.write_to_kafka(df, topic, cfg) for cfg in (a, a, b, dict(reversed(a.items())))]
    by_config = {"a": runs[0].producers | runs[1].producers | runs[3].producers,
                 "b": runs[2].producers}
    for name, producers in by_config.items():
        per_pid = collections.defaultdict(set)
        for pid, serial in producers:
            per_pid[pid].add(serial)
        assert all(len(s) == 1 for s in per_pid.values()), (name, per_pid)
    # Reuse really happened: the 24 tasks of config a ran on a few workers (two slots; Spark
    # may replace a worker now and then), so each producer served several tasks.
    assert all(run.tasks == 8 for run in runs)
    assert len(by_config["a"]) <= 24 // 2
    # A different configuration gets producers of its own, even in the same worker.
    assert not by_config["a"] & by_config["b"]


def _send_one(producer, topic):
    result = producer.send_batch(topic, [b"v"], keys=[b"k"]).result(30)
    assert result.failed == 0, result.errors
    return result.partitions[0], result.offsets[0]
