"""``write_to_kafka(..., exactly_once=True)``: every row exactly once, as a read_committed
consumer sees it, though Spark's tasks die before, during and after their commits.

The broker is ours (``LocalBroker(kind="kafkacore")``) whatever KAFKACORE_TEST_BROKERS says:
read_committed hides aborted records only where Fetch returns the aborted transactions, which
tansu does not.  The topic is read back by confluent-kafka (read_committed) and by kafka-python
(read_uncommitted, to see that the killed attempts really left records behind).
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import random

import pytest
from readback import read_confluent, read_kafka_python
from support.topics import new_topic

from kafkacore.spark import writers as kspark

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (the `spark` extra)")
pytest.importorskip("pyarrow", reason="the Spark tests need pyarrow (the `spark` extra)")

pytestmark = pytest.mark.timeout(300)

# Where an exactly-once task can die (the names of _write_task_exactly_once's fault points):
# before its transaction, with records of it sent, with all sent and the completion offset in
# the transaction but no commit, and after the commit succeeded.
POINTS = ("begun", "sending", "flushed", "committed")


def _die_once(deaths: dict[int, str], record: pathlib.Path):
    """fault(point) for the tasks: the first attempt of Spark partition p kills its own Python
    worker (os._exit, no cleanup, no abort) at the point deaths[p], after noting it in a file."""

    def fault(point: str) -> None:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx.attemptNumber() == 0 and deaths.get(ctx.partitionId()) == point:
            (record / f"{ctx.partitionId()}-{point}").touch()
            os._exit(1)

    return fault


def _ids(records) -> collections.Counter:
    return collections.Counter(json.loads(r.value)["id"] for r in records)


def test_killed_tasks_leave_every_row_exactly_once(spark, our_broker, tmp_path):
    """Four Spark partitions, each of whose first attempt dies at one of the four points (which
    partition dies where is chosen at random); Spark retries each (local[2,4]).  A read_committed consumer then sees
    each row exactly once, while the log holds the killed attempts' aborted records too.  Running
    the same write again (same write_id) writes nothing."""
    from pyspark.sql import functions as F

    n, slices, partitions = 2000, len(POINTS), 3
    bootstrap = our_broker.bootstrap
    topic = new_topic(bootstrap, partitions, prefix="eo")
    seed = random.randrange(2**32)
    chosen = list(POINTS)
    random.Random(seed).shuffle(chosen)
    deaths = dict(enumerate(chosen))
    print(f"seed {seed}: first attempts die at {deaths}")

    df = (spark.range(n, numPartitions=slices)
          .withColumn("key", F.concat(F.lit("key-"), (F.col("id") % 40).cast("string")))
          .withColumn("value", F.to_json(F.struct("id", "key"))))
    config = {"bootstrap.servers": bootstrap, "linger.ms": 5}
    # white-box: only _write_to_kafka takes the tests' fault(point) hook
    summary = kspark._write_to_kafka(
        df, topic, config, key="key", value="value", headers=None, partition=None,
        timestamp=None, exactly_once=True, write_id="killed", fault=_die_once(deaths, tmp_path))

    # Every first attempt died where it was told to: the test tested what it says.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{p}-{point}" for p, point in deaths.items())
    assert summary.records == n and summary.failures == 0 and summary.tasks == slices
    assert sum(summary.partition_counts.values()) == n

    committed = read_confluent(bootstrap, topic, partitions, n,
                               config={"isolation.level": "read_committed"})
    assert _ids(committed) == collections.Counter(range(n))  # each id once, none missing
    assert collections.Counter(r.partition for r in committed) == summary.partition_counts

    # An attempt killed at "flushed" had all its records acknowledged, in a transaction that
    # never committed; a read_uncommitted reader sees them, so read_committed hid something.
    everything = read_kafka_python(bootstrap, topic, partitions, n + 1)
    assert len(everything) > n

    # The same write again: every partition finds its completion committed, nothing is sent.
    again = kspark.write_to_kafka(df, topic, config, exactly_once=True, write_id="killed")
    assert again.records == n and again.partition_counts == summary.partition_counts
    assert _ids(read_confluent(bootstrap, topic, partitions, n,
                               config={"isolation.level": "read_committed"})) == _ids(committed)


def test_exactly_once_needs_its_flag_and_a_transactional_config(spark, our_broker):
    """Checked on the driver, before a job starts."""
    from kafkacore.errors import ConfigError

    df = spark.createDataFrame([("k", "v")], "key string, value string")
    config = {"bootstrap.servers": our_broker.bootstrap}
    with pytest.raises(ValueError, match="exactly_once=True"):
        kspark.write_to_kafka(df, "t", config, write_id="w")
    with pytest.raises(ConfigError, match="enable.idempotence"):
        kspark.write_to_kafka(df, "t", {**config, "enable.idempotence": False},
                              exactly_once=True)
    with pytest.raises(TypeError, match="write_id"):
        kspark.write_to_kafka(df, "t", config, exactly_once=True, write_id="")
