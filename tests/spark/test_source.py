"""``format("kafkacore")`` as a source: Spark's Kafka integration guide's read examples and the
checkpointed offsets, each on our broker, and the first of each kind (a batch read, a
``read_committed`` read, a restarted stream) on the 3-broker cluster too (the ``guide_kafka``
fixture, tests/spark/conftest.py; topics replicated three times there; the others are
parametrized to our broker only, to keep the Spark lane short), and Spark's data-loss rules.

The records are written by confluent-kafka (a client we did not write), in a child process (see
``_confluent``), and every row Spark reads is compared with what confluent-kafka was told was
delivered: partition, offset, key, value, timestamp, headers.  One Spark session serves the module
(tests/spark/conftest.py); topics are small, so each test takes seconds.
"""

from __future__ import annotations

import json
import pathlib
import pickle
import shutil
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (the `spark` extra)")
pytest.importorskip("pyarrow", reason="the Spark tests need pyarrow (the `spark` extra)")

pytestmark = pytest.mark.timeout(300)

# -- confluent-kafka, in a child process ----------------------------------------------------------
# librdkafka objects have crashed a process running Spark's py4j threads during garbage collection
# (confluent-kafka-python issue #1761), so confluent-kafka runs in a child of its own.

_CHILD = r"""
import pickle, sys, time
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

action, bootstrap, args = pickle.loads(sys.stdin.buffer.read())
out = None
if action == "produce":
    delivered, errors = {}, []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, (topic, partition, key, value, headers, ts) in enumerate(args):
        def report(err, msg, i=i):
            if err is not None:
                errors.append(str(err))
            else:
                delivered[i] = (msg.partition(), msg.offset())
        p.produce(topic, value, key=key, partition=partition, headers=headers, timestamp=ts,
                  on_delivery=report)
    deadline = time.monotonic() + 60
    while p.flush(0.5) and time.monotonic() < deadline:
        pass
    assert not errors and len(delivered) == len(args), (errors, len(delivered))
    out = [delivered[i] for i in range(len(args))]
elif action == "transactions":  # [(commit?, [values]), ...] in transactions of their own
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": args[0]})
    p.init_transactions(30)
    for commit, values in args[1]:
        p.begin_transaction()
        for v in values:
            p.produce(args[2], v, partition=0)
        p.flush(30)
        p.commit_transaction(30) if commit else p.abort_transaction(30)
else:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if action == "delete_records":
        topic, partition, before = args
        futures = admin.delete_records([TopicPartition(topic, partition, before)])
    else:  # create_partitions
        topic, count = args
        futures = admin.create_partitions([NewPartitions(topic, count)])
    for f in futures.values():
        f.result(timeout=30)
sys.stdout.buffer.write(pickle.dumps(out))
"""


def _confluent(action, bootstrap, args):
    done = subprocess.run([sys.executable, "-c", _CHILD],
                          input=pickle.dumps((action, bootstrap, args)),
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return pickle.loads(done.stdout)


# The records' CreateTime, ms: T0 + i.  Recent: records older than the topic's retention.ms
# (7 days) may be deleted by the broker's retention while a test runs.
T0 = (int(time.time()) - 3600) * 1000


def produce(bootstrap, topic, count, *, partitions=1, first=0, headers=False):
    """``count`` records spread round-robin over ``partitions``; record i has key ``k<i>``, value
    ``v<i>``, timestamp ``T0 + i``; returns ``{(partition, offset): record}``."""
    records = []
    for i in range(first, first + count):
        hdrs = [("h", f"x{i}".encode()), ("n", None)] if headers else None
        records.append((topic, i % partitions, f"k{i}".encode(), f"v{i}".encode(), hdrs, T0 + i))
    where = _confluent("produce", bootstrap, records)
    return {pos: rec for pos, rec in zip(where, records, strict=True)}


def delete_records(bootstrap, topic, partition, before):
    _confluent("delete_records", bootstrap, (topic, partition, before))


def create_partitions(bootstrap, topic, count):
    _confluent("create_partitions", bootstrap, (topic, count))


# -- comparing -------------------------------------------------------------------------------------


def as_rows(produced, topic, headers=False):
    """What Spark should read for ``produce``'s records: sorted (partition, offset, ...)."""
    rows = []
    for (partition, offset), (_, _, key, value, hdrs, ts) in produced.items():
        row = (topic, partition, offset, key, value, ts, 0)
        if headers:
            row += (tuple(hdrs),)
        rows.append(row)
    return sorted(rows)


def spark_rows(rows, headers=False):
    out = []
    for r in rows:
        ms = round(r["timestamp"].timestamp() * 1000)  # a naive local datetime from PySpark
        row = (r["topic"], r["partition"], r["offset"], bytes(r["key"]), bytes(r["value"]), ms,
               r["timestampType"])
        if headers:
            row += (tuple((h["key"], None if h["value"] is None else bytes(h["value"]))
                          for h in r["headers"]),)
        out.append(row)
    return sorted(out)


def read(kspark, bootstrap, **options):
    reader = kspark.read.format("kafkacore").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


# -- spark.read ----------------------------------------------------------------------------------


def test_spark_finds_the_format_without_register(spark, bootstrap, make_topic):
    # First in the module, before anything calls register(): the session's own lookup of
    # ``pyspark_*`` modules finds pyspark_kafkacore.DefaultSource.  One broker only: what it
    # tests is Spark's lookup, and a second run would come after register().
    topic = make_topic(1)
    produced = produce(bootstrap, topic, 3)
    df = (spark.read.format("kafkacore").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).load())
    assert spark_rows(df.collect()) == as_rows(produced, topic)


def test_batch_subscribe_reads_every_record_with_headers(kspark, guide_kafka):
    bootstrap, make_topic = guide_kafka.bootstrap, guide_kafka.new_topic
    topic = make_topic(3)
    produced = produce(bootstrap, topic, 30, partitions=3, headers=True)
    df = read(kspark, bootstrap, subscribe=topic, includeHeaders="true")
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                          "timestampType", "headers"]
    assert spark_rows(df.collect(), headers=True) == as_rows(produced, topic, headers=True)


@pytest.mark.parametrize("guide_kafka", ["broker"], indirect=True)
def test_batch_assign_with_offsets_json_and_min_partitions(kspark, guide_kafka):
    bootstrap, make_topic = guide_kafka.bootstrap, guide_kafka.new_topic
    topic = make_topic(3)
    produced = produce(bootstrap, topic, 30, partitions=3)  # 10 per partition
    df = read(kspark, bootstrap, assign=json.dumps({topic: [0, 2]}),
              startingOffsets=json.dumps({topic: {"0": 2, "2": -2}}),
              endingOffsets=json.dumps({topic: {"0": 5, "2": -1}}), minPartitions="6")
    want = [r for r in as_rows(produced, topic)
            if (r[1] == 0 and 2 <= r[2] < 5) or r[1] == 2]
    assert spark_rows(df.collect()) == want
    # 3 + 10 records, cut into at least minPartitions tasks, proportionally to their sizes
    assert df.rdd.getNumPartitions() >= 6


@pytest.mark.parametrize("guide_kafka", ["broker"], indirect=True)
def test_batch_subscribe_pattern_and_timestamps(kspark, guide_kafka):
    bootstrap, make_topic = guide_kafka.bootstrap, guide_kafka.new_topic
    a, b, other = make_topic(1, prefix="pat"), make_topic(2, prefix="pat"), make_topic(1)
    pa_ = produce(bootstrap, a, 4)  # batched together: the time index finds the record inside
    pb = produce(bootstrap, b, 6, partitions=2, first=100)
    produce(bootstrap, other, 3)
    df = read(kspark, bootstrap, subscribePattern=f"({a}|{b})")
    assert spark_rows(df.collect()) == sorted(as_rows(pa_, a) + as_rows(pb, b))
    # startingTimestamp: the first record at or after it, per partition
    df = read(kspark, bootstrap, subscribe=a, startingTimestamp=str(T0 + 2))
    assert [r[2] for r in spark_rows(df.collect())] == [2, 3]


def test_batch_read_committed_leaves_out_aborted_records(kspark, guide_kafka):
    bootstrap, make_topic = guide_kafka.bootstrap, guide_kafka.new_topic
    topic = make_topic(1)
    _confluent("transactions", bootstrap, (f"tx-{topic}", [
        (True, [b"c0", b"c1"]), (False, [b"a0", b"a1", b"a2"]), (True, [b"c2"])], topic))
    committed = read(kspark, bootstrap, subscribe=topic,
                     **{"kafka.isolation.level": "read_committed"})
    assert [bytes(r["value"]) for r in committed.orderBy("offset").collect()] == [
        b"c0", b"c1", b"c2"]
    everything = read(kspark, bootstrap, subscribe=topic)
    assert [bytes(r["value"]) for r in everything.orderBy("offset").collect()] == [
        b"c0", b"c1", b"a0", b"a1", b"a2", b"c2"]


def test_bad_options_fail_at_load_with_spark_wording(kspark, bootstrap):
    # One broker only: the options are refused on the driver, before any request to a broker.
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    def fails(options, words, stream=False):
        reader = (kspark.readStream if stream else kspark.read).format("kafkacore")
        for k, v in options.items():
            reader = reader.option(k, v)
        with pytest.raises((PySparkException, Py4JJavaError)) as info:
            reader.load()
        assert words in str(info.value), str(info.value)[:2000]

    fails({"subscribe": "t"},
          "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
    fails({"kafka.bootstrap.servers": bootstrap, "subscribe": "t", "assign": '{"t":[0]}'},
          "Only one of the following options can be specified for Kafka source: subscribe, "
          "subscribepattern, assign")
    fails({"kafka.bootstrap.servers": bootstrap, "subscribe": "t", "startingOffset": "earliest"},
          "unknown option 'startingoffset' for the kafkacore source; did you mean "
          "'startingOffsets'?", stream=True)
    fails({"kafka.bootstrap.servers": bootstrap, "subscribe": "t",
           "kafka.auto.offset.reset": "earliest"},
          "Kafka option 'auto.offset.reset' is not supported")
    fails({"kafka.bootstrap.servers": bootstrap, "subscribe": "t", "topic": "t"},
          "option 'topic' is for the kafkacore sink, not the source")


# -- spark.readStream ----------------------------------------------------------------------------


class Collector:
    """A foreachBatch sink: keeps every micro-batch's rows, in order (it runs in this process)."""

    def __init__(self, headers=False):
        self.batches = []
        self.headers = headers
        self.lock = threading.Lock()

    def __call__(self, df, batch_id):
        rows = spark_rows(df.collect(), self.headers)
        with self.lock:
            self.batches.append((batch_id, rows))

    def rows(self):
        with self.lock:
            return sorted(r for _, b in self.batches for r in b)

    def wait_for(self, count, query, timeout_s=90.0):
        deadline = time.monotonic() + timeout_s
        while len(self.rows()) < count:
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, f"{len(self.rows())} of {count} rows"
            time.sleep(0.2)


def start_processing_time(kspark, bootstrap, collector, checkpoint, **options):
    """A processing-time query whose source has started (see ``_NO_WORKER``), with its first
    offsets in the checkpoint."""
    for attempt in range(3):
        query = stream(kspark, bootstrap, collector, checkpoint,
                       {"processingTime": "500 milliseconds"}, **options)
        deadline = time.monotonic() + 60
        while query.exception() is None and not (checkpoint / "offsets" / "0").exists():
            assert time.monotonic() < deadline
            time.sleep(0.2)
        if query.exception() is None:
            return query
        if _NO_WORKER not in str(query.exception()) or attempt == 2:
            raise AssertionError(str(query.exception()))
    raise AssertionError("unreachable")


def stream(kspark, bootstrap, collector, checkpoint, trigger, **options):
    reader = kspark.readStream.format("kafkacore").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return (reader.load().writeStream.foreachBatch(collector)
            .option("checkpointLocation", str(checkpoint)).trigger(**trigger).start())


# Spark gives a new Python process 10 s (not configurable) to connect back; on a machine
# loaded far beyond its cores a streaming query's source process can miss that, before any of
# our code runs.  Such a start is tried again from the same checkpoint (which is what a
# checkpoint is for), at most twice.
_NO_WORKER = "Python worker failed to connect back"


def run_available_now(kspark, bootstrap, checkpoint, collector=None, **options):
    from pyspark.errors import StreamingQueryException

    collector = collector or Collector()
    for attempt in range(3):
        query = stream(kspark, bootstrap, collector, checkpoint, {"availableNow": True},
                       **options)
        try:
            query.awaitTermination(120)  # raises the query's error, if it failed
        except StreamingQueryException as exc:
            if _NO_WORKER not in str(exc) or attempt == 2:
                raise
            continue
        assert not query.isActive
        return collector


def last_checkpoint_offsets(checkpoint):
    """The source's offsets in the last entry of the checkpoint's offset log (Spark's format: a
    version line, a metadata line, then one line per source)."""
    logs = pathlib.Path(checkpoint) / "offsets"
    last = max((p for p in logs.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    return json.loads(last.read_text().splitlines()[2])


def test_stream_available_now_restarts_where_it_left_off(kspark, guide_kafka, tmp_path):
    bootstrap, make_topic = guide_kafka.bootstrap, guide_kafka.new_topic
    topic = make_topic(2)
    first = produce(bootstrap, topic, 10, partitions=2)
    checkpoint = tmp_path / "cp"
    got = run_available_now(kspark, bootstrap, checkpoint, subscribe=topic,
                            startingOffsets="earliest")
    assert got.rows() == as_rows(first, topic)
    assert last_checkpoint_offsets(checkpoint) == {topic: {"0": 5, "1": 5}}

    second = produce(bootstrap, topic, 6, partitions=2, first=10)
    again = run_available_now(kspark, bootstrap, checkpoint, subscribe=topic,
                              startingOffsets="earliest")
    # nothing read twice, nothing missed
    assert again.rows() == as_rows(second, topic)
    assert last_checkpoint_offsets(checkpoint) == {topic: {"0": 8, "1": 8}}


@pytest.mark.parametrize("guide_kafka", ["broker"], indirect=True)
def test_stream_max_offsets_per_trigger(kspark, guide_kafka, tmp_path):
    bootstrap, make_topic = guide_kafka.bootstrap, guide_kafka.new_topic
    topic = make_topic(3)
    produced = produce(bootstrap, topic, 30, partitions=3)
    got = run_available_now(kspark, bootstrap, tmp_path / "cp", subscribe=topic,
                            startingOffsets="earliest", maxOffsetsPerTrigger="9")
    sizes = [len(rows) for _, rows in sorted(got.batches)]
    assert sizes == [9, 9, 9, 3], sizes
    assert got.rows() == as_rows(produced, topic)


@pytest.mark.parametrize("guide_kafka", ["broker"], indirect=True)
def test_stream_processing_time_picks_up_new_partitions(kspark, guide_kafka, tmp_path):
    bootstrap, make_topic = guide_kafka.bootstrap, guide_kafka.new_topic
    topic = make_topic(2)
    collector = Collector(headers=True)
    # startingOffsets defaults to latest: the query must have its first offsets before writing
    query = start_processing_time(kspark, bootstrap, collector, tmp_path / "cp", subscribe=topic,
                                  includeHeaders="true")
    try:
        before = produce(bootstrap, topic, 8, partitions=2, headers=True)
        collector.wait_for(8, query)
        create_partitions(bootstrap, topic, 4)
        after = produce(bootstrap, topic, 8, partitions=4, first=8, headers=True)
        collector.wait_for(16, query)
    finally:
        query.stop()
    assert query.exception() is None
    assert collector.rows() == sorted(as_rows(before, topic, True) + as_rows(after, topic, True))
    assert set(last_checkpoint_offsets(tmp_path / "cp")[topic]) == {"0", "1", "2", "3"}


def test_fail_on_data_loss_both_ways(kspark, bootstrap, make_topic, tmp_path):
    # One broker only: not one of the guide's examples but the source's rule for a log whose
    # start moved past the checkpoint, and DeleteRecords moves it on the cluster's leader as on
    # one broker (it passed there); its four queries would cost the Spark lane some 15 s more.
    topic = make_topic(1)
    produce(bootstrap, topic, 10)
    checkpoint = tmp_path / "cp"
    run_available_now(kspark, bootstrap, checkpoint, subscribe=topic, startingOffsets="earliest")
    assert last_checkpoint_offsets(checkpoint) == {topic: {"0": 10}}
    later = produce(bootstrap, topic, 10, first=10)  # offsets 10..19
    delete_records(bootstrap, topic, 0, 15)  # 10..14 gone before the query read them
    lenient = tmp_path / "cp-lenient"
    shutil.copytree(checkpoint, lenient)

    from pyspark.errors import StreamingQueryException

    with pytest.raises(StreamingQueryException) as info:
        run_available_now(kspark, bootstrap, checkpoint, subscribe=topic)
    assert "Cannot fetch offset 10 of" in str(info.value)
    assert "the log starts at 15" in str(info.value)
    assert 'set the source option "failOnDataLoss" to "false"' in str(info.value)

    got = run_available_now(kspark, bootstrap, lenient, subscribe=topic, failOnDataLoss="false")
    assert got.rows() == [r for r in as_rows(later, topic) if r[2] >= 15]
    assert last_checkpoint_offsets(lenient) == {topic: {"0": 20}}
