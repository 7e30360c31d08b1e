"""``readStream.format("kafkacore")`` on the 3-broker cluster while a partition's leader is
SIGKILLed mid-stream: the query goes on at the new leaders and reads every record exactly once.

The records are written with ``acks=all`` to a topic replicated on all three brokers
(``min.insync.replicas=2``); half before the kill, half after, to the new leaders.  The query
reads them in small micro-batches (``maxOffsetsPerTrigger``) into Spark's memory sink, so the kill
falls between and inside its reads: the executors' cached readers and the driver's planning
reader both still point at the dead broker.  Judged by the memory table: every ``(partition,
offset)`` once, and every value written once.
"""

from __future__ import annotations

import collections
import time
import uuid

import pytest
from support.topics import new_replicated_topic

from kafkacore import KafkaProducer

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (the `spark` extra)")
pytest.importorskip("pyarrow", reason="the Spark tests need pyarrow (the `spark` extra)")

# The cluster (session-scoped) and a query of a dozen micro-batches: a minute or more on CI.
pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(600)]

PARTITIONS = 2
HALF = 1200  # records written before the kill, and again after it
PER_TRIGGER = 200  # so the first half alone takes six micro-batches


def produce(cluster, topic, first, count):
    """Values ``%06d`` of ``first..first+count``, round-robin over the partitions, acks=all."""
    with KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                        "batch.size": 4096, "retry.backoff.ms": 50}) as producer:
        futures = [producer.send(topic, value=b"%06d" % i, partition=i % PARTITIONS)
                   for i in range(first, first + count)]
        producer.flush(60)
    for f in futures:
        f.get(60)  # every record acknowledged by the in-sync replicas


def memory_rows(spark, table):
    return [(r["partition"], r["offset"], bytes(r["value"]))
            for r in spark.sql(f"SELECT partition, offset, value FROM {table}").collect()]


def test_leader_killed_while_a_stream_reads(kspark, cluster, tmp_path):
    topic = new_replicated_topic(cluster, PARTITIONS, prefix="srckill")
    produce(cluster, topic, 0, HALF)
    table = f"srckill_{uuid.uuid4().hex[:8]}"
    query = (kspark.readStream.format("kafkacore")
             .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", str(PER_TRIGGER))
             # small Fetch answers: a task's range takes several Fetches
             .option("kafka.max.partition.fetch.bytes", "2048")
             .option("kafka.retry.backoff.ms", "50")
             .load()
             .writeStream.format("memory").queryName(table)
             .option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        # The first micro-batch done (its progress, not a Spark job over the table: cheap)
        deadline = time.monotonic() + 180
        while _read_so_far(query, topic) == 0:
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, query.lastProgress
            time.sleep(0.05)
        victim = cluster.leader_of(topic, 0)
        cluster.kill(victim)
        # Read when the leader died: some, not all (each micro-batch takes at least a trigger
        # interval, so the first half's six cannot be over yet).
        assert 0 < _read_so_far(query, topic) < HALF
        cluster.wait_for_leader_change(topic, 0, victim)
        produce(cluster, topic, HALF, HALF)
        # Until the last micro-batch ended at the log's end offsets: then the table is final
        deadline = time.monotonic() + 180
        while _read_so_far(query, topic) < 2 * HALF:
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, query.lastProgress
            time.sleep(0.1)
        rows = memory_rows(kspark, table)
    finally:
        query.stop()
    assert query.exception() is None
    positions = collections.Counter((p, o) for p, o, _ in rows)
    assert [pos for pos, n in positions.items() if n > 1] == []
    values = collections.Counter(v for _, _, v in rows)
    assert values == collections.Counter(b"%06d" % i for i in range(2 * HALF))
    # Each partition's offsets are 0..n-1 with no gap (the log's own numbering)
    for p in range(PARTITIONS):
        offsets = sorted(o for q, o, _ in rows if q == p)
        assert offsets == list(range(len(offsets)))


def _read_so_far(query, topic):
    """The sum of the end offsets of the query's last finished micro-batch (0 before one)."""
    import json

    progress = query.lastProgress
    if not progress or not progress["sources"]:
        return 0
    end = progress["sources"][0]["endOffset"]
    if isinstance(end, str):
        end = json.loads(end)
    return sum((end or {}).get(topic, {}).values())
