"""``format("kafkacore")`` as a sink: the write examples of Spark's Kafka integration guide with
the format name changed, batch and streaming, judged row by row by confluent-kafka reading
``read_committed``; and the bad input Spark's sink refuses, refused on the driver.

Each example runs on our broker (``LocalBroker(kind="kafkacore")``); the batch write with the
``topic`` option and the streaming write run on the 3-broker cluster too, their topics
replicated three times (the ``guide_kafka`` fixture, tests/spark/conftest.py): the default
guarantee is exactly once, and read_committed hides aborted records only where Fetch returns the
aborted transactions.  (The topic-column examples differ from the first only on the driver's
side, so they run on our broker only, to keep the Spark lane short.)  The bad input is refused on the driver, before any request to
a broker: those tests run on one broker.
"""

from __future__ import annotations

import collections
import json

import pytest
from readback import read_confluent

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (the `spark` extra)")
pytest.importorskip("pyarrow", reason="the Spark tests need pyarrow (the `spark` extra)")

pytestmark = pytest.mark.timeout(300)

COMMITTED = {"isolation.level": "read_committed"}


def _rows(n: int, spark, slices: int = 3):
    from pyspark.sql import functions as F

    return (spark.range(n, numPartitions=slices)
            .withColumn("key", F.concat(F.lit("k"), (F.col("id") % 17).cast("string")))
            .withColumn("value", F.to_json(F.struct("id"))))


def _ids(records) -> collections.Counter:
    return collections.Counter(json.loads(r.value)["id"] for r in records)


# The guide's example has the default guarantee, exactly once: that one runs on the cluster too;
# at_least_once (an option of ours, not the guide's) on our broker only, to keep the Spark lane
# short.
@pytest.mark.parametrize("guide_kafka, guarantee", [
    ("broker", "exactly_once"), ("broker", "at_least_once"),
    pytest.param("cluster", "exactly_once", marks=pytest.mark.cluster),
], indirect=["guide_kafka"])
def test_batch_write_with_the_topic_option_and_headers(kspark, guide_kafka, guarantee):
    """The guide's "Writing the output of Batch Queries to Kafka", ``topic`` as an option, with
    headers: each row once, with its key, value and headers."""
    from pyspark.sql import functions as F

    n, bootstrap = 1000, guide_kafka.bootstrap
    topic = guide_kafka.new_topic(3, prefix="sink")
    df = _rows(n, kspark).withColumn("headers", F.array(F.struct(
        F.lit("row").alias("key"), F.col("id").cast("string").cast("binary").alias("value"))))
    (df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)", "headers")
       .write.format("kafkacore")
       .option("kafka.bootstrap.servers", bootstrap)
       .option("topic", topic)
       .option("kafkacore.sink.guarantee", guarantee)
       .mode("append")  # Spark's Python data sources take append or overwrite only
       .save())
    got = read_confluent(bootstrap, topic, 3, n, config=COMMITTED)
    assert _ids(got) == collections.Counter(range(n))
    for record in got:
        row = json.loads(record.value)["id"]
        assert record.key == f"k{row % 17}".encode()
        assert record.headers == (("row", str(row).encode()),)
    # One key, one partition: the default partitioner chose, as send() would.
    by_key = collections.defaultdict(set)
    for record in got:
        by_key[record.key].add(record.partition)
    assert all(len(parts) == 1 for parts in by_key.values())


@pytest.mark.parametrize("guide_kafka", ["broker"], indirect=True)
def test_batch_write_to_the_topic_column_and_chosen_partitions(kspark, guide_kafka):
    """``topic`` as a column (rows to two topics in one write) and a ``partition`` column, null
    in some rows (the partitioner chooses those, as in Spark's sink)."""
    from pyspark.sql import functions as F

    n, bootstrap = 900, guide_kafka.bootstrap
    even, odd = guide_kafka.new_topic(3, prefix="even"), guide_kafka.new_topic(3, prefix="odd")
    df = (_rows(n, kspark)
          .withColumn("topic", F.when(F.col("id") % 2 == 0, F.lit(even)).otherwise(F.lit(odd)))
          .withColumn("partition", F.when(F.col("id") % 3 == 0, F.lit(None))
                      .otherwise((F.col("id") % 3).cast("int"))))
    (df.select("key", "value", "topic", "partition")
       .write.format("kafkacore").mode("append")
       .option("kafka.bootstrap.servers", bootstrap).save())
    for topic, parity in ((even, 0), (odd, 1)):
        got = read_confluent(bootstrap, topic, 3, n // 2, config=COMMITTED)
        assert _ids(got) == collections.Counter(i for i in range(n) if i % 2 == parity)
        for record in got:
            row = json.loads(record.value)["id"]
            if row % 3:
                assert record.partition == row % 3


@pytest.mark.parametrize("guide_kafka", ["broker"], indirect=True)
def test_the_topic_option_overrides_the_topic_column(kspark, guide_kafka):
    bootstrap = guide_kafka.bootstrap
    topic = guide_kafka.new_topic(1, prefix="override")
    df = kspark.createDataFrame([("no-such-topic-here", "v1"), ("nor-this", "v2")],
                                "topic string, value string")
    (df.write.format("kafkacore").mode("append").option("kafka.bootstrap.servers", bootstrap)
       .option("topic", topic).save())
    got = read_confluent(bootstrap, topic, 1, 2, config=COMMITTED)
    assert sorted(r.value for r in got) == [b"v1", b"v2"]


def _json_stream(spark, source_dir):
    return (spark.readStream.schema("id long").option("maxFilesPerTrigger", 1)
            .json(str(source_dir)))


def _add_file(source_dir, name: str, ids) -> None:
    tmp = source_dir.parent / f".{name}.tmp"
    tmp.write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    tmp.rename(source_dir / f"{name}.json")  # whole files only: the file source lists the dir


def test_stream_available_now_runs_on_from_its_checkpoint(kspark, guide_kafka, tmp_path):
    """The guide's streaming write with ``trigger(availableNow=True)``, twice on one checkpoint:
    the second run writes only the rows that arrived since, each once."""
    bootstrap = guide_kafka.bootstrap
    topic = guide_kafka.new_topic(2, prefix="stream")
    source = tmp_path / "in"
    source.mkdir()
    for f in range(3):
        _add_file(source, f"part-{f}", range(f * 100, f * 100 + 100))

    def run():
        query = (_json_stream(kspark, source)
                 .selectExpr("CAST(id % 5 AS STRING) AS key", "to_json(struct(id)) AS value")
                 .writeStream.format("kafkacore")
                 .option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
                 .option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
        assert query.awaitTermination(180)
        assert query.exception() is None
        return query

    first = run()
    assert _ids(read_confluent(bootstrap, topic, 2, 300, config=COMMITTED)) == \
        collections.Counter(range(300))
    _add_file(source, "part-3", range(300, 350))
    second = run()
    assert second.id == first.id  # the checkpoint keeps the query's id (and the sink's ids)
    assert _ids(read_confluent(bootstrap, topic, 2, 350, config=COMMITTED)) == \
        collections.Counter(range(350))


@pytest.mark.parametrize("guide_kafka", ["broker"], indirect=True)
def test_stream_with_a_processing_time_trigger(kspark, guide_kafka, tmp_path):
    """A processing-time trigger, the topic as a column, the at-least-once guarantee (no
    faults here: each row once)."""
    bootstrap = guide_kafka.bootstrap
    topic = guide_kafka.new_topic(2, prefix="ticks")
    source = tmp_path / "in"
    source.mkdir()
    _add_file(source, "part-0", range(200))
    query = (_json_stream(kspark, source)
             .selectExpr(f"'{topic}' AS topic", "to_json(struct(id)) AS value")
             .writeStream.format("kafkacore")
             .option("kafka.bootstrap.servers", bootstrap)
             .option("kafkacore.sink.guarantee", "at_least_once")
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="500 milliseconds").start())
    try:
        query.processAllAvailable()
        _add_file(source, "part-1", range(200, 260))
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None
    assert _ids(read_confluent(bootstrap, topic, 2, 260, config=COMMITTED)) == \
        collections.Counter(range(260))


# -- bad input: refused on the driver, before any task ----------------------------------------


def _error_text(error: BaseException) -> str:
    return str(error)


@pytest.mark.parametrize("columns, options, message", [
    ("value string", {}, "topic option required when no 'topic' attribute is present"),
    ("value int", {"topic": "t"}, "value attribute type must be a string or binary"),
    ("key string", {"topic": "t"}, "Required attribute 'value' not found"),
    ("value string, topic int", {}, "Topic type must be a string"),
    ("value string", {"topic": "t", "kafkacore.sink.guarantee": "twice"},
     "must be 'exactly_once' or 'at_least_once'"),
    ("value string", {"topic": "t", "kafka.linger.ms": "soon"}, "linger.ms"),
    ("value string", {"topic": "t", "kafka.value.serializer": "x"},
     "'value.serializer' is not supported"),
])
def test_bad_input_fails_the_write_on_the_driver(kspark, our_broker, columns, options, message):
    df = kspark.createDataFrame([], columns)
    writer = df.write.format("kafkacore").mode("append").option("kafka.bootstrap.servers", our_broker.bootstrap)
    for name, value in options.items():
        writer = writer.option(name, value)
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)")):
        writer.save()


def test_a_missing_bootstrap_fails_the_write(kspark):
    df = kspark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match="kafka.bootstrap.servers"):
        df.write.format("kafkacore").mode("append").option("topic", "t").save()


def test_a_stream_without_a_topic_fails_before_any_task(kspark, our_broker, tmp_path):
    """A streaming sink is made when the first micro-batch is planned: the query stops there,
    with Spark's message, and no task ran."""
    source = tmp_path / "in"
    source.mkdir()
    _add_file(source, "part-0", range(10))
    query = (_json_stream(kspark, source).selectExpr("to_json(struct(id)) AS value")
             .writeStream.format("kafkacore")
             .option("kafka.bootstrap.servers", our_broker.bootstrap)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    with pytest.raises(Exception, match="topic option required"):
        query.awaitTermination(120)
    assert not (tmp_path / "checkpoint" / "commits" / "0").exists()
