"""``format("kafkacore")``'s options that decide *when* and *from where* Spark reads, observed
through real Spark queries on the test broker: ``minOffsetsPerTrigger`` (a micro-batch waits for
enough records), ``maxTriggerDelay`` (but not longer than this) and ``startingOffsetsByTimestamp``
(a batch read starts, per partition, at the first record at or after a time).

The streaming tests watch the query's progress events, one per trigger: with
``spark.sql.streaming.noDataProgressEventInterval=0`` Spark reports the triggers that ran no
micro-batch too, each with the source's latest offsets (``reportLatestOffset``), so a trigger that
saw records and held them back is a state the test can wait for, not a pause it has to guess.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime

import pytest

from kafkacore import KafkaProducer

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (the `spark` extra)")
pytest.importorskip("pyarrow", reason="the Spark tests need pyarrow (the `spark` extra)")

pytestmark = pytest.mark.timeout(300)

# Recent: records older than the topic's retention.ms (7 days) may be deleted while a test runs.
T0 = (int(time.time()) - 3600) * 1000


def produce(bootstrap, topic, first, count, partitions=2, timestamps=None):
    """Values ``v<i>`` for ``first..first+count``, round-robin over the partitions."""
    with KafkaProducer({"bootstrap.servers": bootstrap}) as producer:
        futures = [producer.send(topic, value=b"v%d" % i, partition=i % partitions,
                                 timestamp=None if timestamps is None else timestamps(i))
                   for i in range(first, first + count)]
        producer.flush(30)
    for f in futures:
        f.get(30)


def _offsets(progress, field):
    value = progress["sources"][0][field]
    value = json.loads(value) if isinstance(value, str) else value
    return sum(n for parts in (value or {}).values() for n in parts.values())


def _ms(progress):
    stamp = progress["timestamp"].replace("Z", "+00:00")
    return datetime.fromisoformat(stamp).timestamp() * 1000


_NO_WORKER = "Python worker failed to connect back"


class Query:
    """A processing-time query of the topic into Spark's memory sink, with every trigger
    reported (runs with and without a micro-batch)."""

    def __init__(self, spark, bootstrap, topic, checkpoint, **options):
        self.spark = spark
        self.table = f"trig_{uuid.uuid4().hex[:8]}"
        spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "0")
        reader = (spark.readStream.format("kafkacore")
                  .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
                  .option("startingOffsets", "earliest"))
        for k, v in options.items():
            reader = reader.option(k, v)
        for attempt in range(3):
            self.query = (reader.load().writeStream.format("memory").queryName(self.table)
                          .option("checkpointLocation", str(checkpoint / str(attempt)))
                          .trigger(processingTime="200 milliseconds").start())
            deadline = time.monotonic() + 120
            while self.query.exception() is None and not self.query.recentProgress:
                assert time.monotonic() < deadline, "no trigger in 120 s"
                time.sleep(0.1)
            error = self.query.exception()
            if error is None:
                break
            # Spark gives a new Python process 10 s to connect back; on a machine loaded far
            # beyond its cores the source's can miss that before any of our code runs.  Such a
            # start is tried again, at most twice (the memory sink does not restart from a
            # checkpoint; the failed start read nothing).
            if _NO_WORKER not in str(error) or attempt == 2:
                raise AssertionError(str(error))
        # every progress event so far, in order (recentProgress keeps the last 100 only)
        self.seen: list = []
        self._keys: set = set()

    def progress(self):
        for p in self.query.recentProgress:
            key = (p["batchId"], p["timestamp"])
            if key not in self._keys:
                self._keys.add(key)
                self.seen.append(p)
        return self.seen

    def batches(self):
        """The micro-batches that ran: (progress event, rows read), in order."""
        return [(p, p["numInputRows"]) for p in self.progress() if p["numInputRows"] > 0]

    def wait(self, done, what, timeout_s=120.0):
        deadline = time.monotonic() + timeout_s
        while not done():
            assert self.query.exception() is None, self.query.exception()
            assert time.monotonic() < deadline, f"{what}: {self.progress()[-3:]}"
            time.sleep(0.1)

    def values(self):
        return sorted(bytes(r["value"]) for r in
                      self.spark.sql(f"SELECT value FROM {self.table}").collect())

    def stop(self):
        self.query.stop()
        self.spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")


@pytest.mark.slow  # a streaming query of some dozens of triggers: up to two minutes when loaded
def test_min_offsets_per_trigger_holds_a_batch_until_enough_records(kspark, bootstrap,
                                                                    make_topic, tmp_path):
    """minOffsetsPerTrigger=10 (and a delay far away): the query's first trigger reads what is
    there (4), as Spark's does; then 5 records wait, seen by the source, until 5 more make 10,
    which one micro-batch reads."""
    topic = make_topic(2)
    produce(bootstrap, topic, 0, 4)
    q = Query(kspark, bootstrap, topic, tmp_path / "cp", minOffsetsPerTrigger="10",
              maxTriggerDelay="1h")
    try:
        q.wait(lambda: len(q.batches()) == 1, "the first micro-batch")
        produce(bootstrap, topic, 4, 5)
        # A trigger that saw the 5 new records (latest 9) and ran no micro-batch: held back.
        q.wait(lambda: any(p["numInputRows"] == 0 and _offsets(p, "latestOffset") == 9
                           for p in q.progress()), "a trigger that saw 9 records")
        assert len(q.batches()) == 1
        produce(bootstrap, topic, 9, 5)
        q.wait(lambda: len(q.batches()) == 2, "the second micro-batch")
        assert [n for _, n in q.batches()] == [4, 10]
        assert q.values() == sorted(b"v%d" % i for i in range(14))
    finally:
        q.stop()
    assert q.query.exception() is None


DELAY_S = 5


@pytest.mark.slow  # waits out the delay, after a query's start
def test_max_trigger_delay_runs_a_short_batch_when_the_delay_is_over(kspark, bootstrap,
                                                                     make_topic, tmp_path):
    """minOffsetsPerTrigger=1000, never reached, and maxTriggerDelay: 3 records are read anyway,
    in a micro-batch that came no sooner than the delay after the one before it."""
    topic = make_topic(2)
    produce(bootstrap, topic, 0, 4)
    q = Query(kspark, bootstrap, topic, tmp_path / "cp", minOffsetsPerTrigger="1000",
              maxTriggerDelay=f"{DELAY_S}s")
    try:
        q.wait(lambda: len(q.batches()) == 1, "the first micro-batch")
        produce(bootstrap, topic, 4, 3)
        q.wait(lambda: len(q.batches()) == 2, "the micro-batch after the delay")
        (first, n0), (second, n1) = q.batches()
        assert (n0, n1) == (4, 3)
        assert q.values() == sorted(b"v%d" % i for i in range(7))
    finally:
        q.stop()
    assert q.query.exception() is None
    # The source starts the delay when it lets a micro-batch go (inside the first trigger, so
    # not before that trigger began) and lets the next go no sooner than the delay after, inside
    # the second trigger (so before that trigger ended): a bound that holds however slow the
    # machine is.  The JVM's and Python's clocks are the same clock, read at ms granularity.
    second_end = _ms(second) + second["durationMs"]["triggerExecution"]
    assert second_end - _ms(first) >= DELAY_S * 1000 - 2


def test_starting_offsets_by_timestamp_per_partition(kspark, bootstrap, make_topic):
    """A batch read from ``startingOffsetsByTimestamp``: in each partition, the first record
    whose timestamp is at or after the partition's time (exactly a record's, between two
    records', before every record's); it takes precedence over ``startingOffsets``.  With the
    strategy ``latest``, a partition none of whose records is that late is read from its end
    (nothing); without it, the read fails on the driver, naming the partition."""
    topic = make_topic(3)
    # Record i: partition i % 3, offset i // 3, timestamp T0 + 10 i.
    produce(bootstrap, topic, 0, 30, partitions=3, timestamps=lambda i: T0 + 10 * i)

    def read(by_timestamp, **options):
        reader = (kspark.read.format("kafkacore").option("kafka.bootstrap.servers", bootstrap)
                  .option("subscribe", topic).option("startingOffsets", "earliest")
                  .option("startingOffsetsByTimestamp", json.dumps({topic: by_timestamp})))
        for k, v in options.items():
            reader = reader.option(k, v)
        return sorted((r["partition"], r["offset"], bytes(r["value"]))
                      for r in reader.load().collect())

    def records(partition, first_offset):
        return [(partition, o, b"v%d" % (3 * o + partition)) for o in range(first_offset, 10)]

    got = read({"0": T0 + 10 * 12,  # exactly record 12's: partition 0, offset 4
                "1": T0 + 10 * 19 + 1,  # between records 19 and 22: offset 7
                "2": T0 - 60_000})  # before every record: offset 0
    assert got == records(0, 4) + records(1, 7) + records(2, 0)

    late = T0 + 10 * 30 + 1  # after every record
    got = read({"0": T0 + 10 * 27, "1": late, "2": late},
               startingOffsetsByTimestampStrategy="latest")
    assert got == records(0, 9)

    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    with pytest.raises((PySparkException, Py4JJavaError)) as info:
        read({"0": T0, "1": late, "2": T0})
    assert f"No offset matched the timestamp of startingOffsets for [{topic}-1]" in \
        str(info.value), str(info.value)[:2000]
