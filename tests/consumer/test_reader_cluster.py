"""PartitionReader on the 3-broker cluster: the partition's leader moves (a new leader epoch:
the old leader answers our Fetch, sent with the epoch we knew, as fenced or not the leader) or
is killed in the middle of a read; the read goes on at the new leader and returns every record
exactly once."""

from __future__ import annotations

import logging

import pytest
from support.topics import new_replicated_topic

from kafkacore import KafkaProducer
from kafkacore.consumer import OffsetSpec, PartitionReader

RECORDS = 3000

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


def filled_topic(cluster) -> str:
    topic = new_replicated_topic(cluster)
    with KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                        "batch.size": 4096}) as producer:
        for i in range(RECORDS):
            producer.send(topic, value=b"%06d" % i, partition=0)
        producer.flush()
    return topic


def reader_of(cluster) -> PartitionReader:
    # Small answers, so the read takes many Fetches and the change falls inside it.
    return PartitionReader({"bootstrap.servers": cluster.bootstrap_servers,
                            "max.partition.fetch.bytes": 4096, "retry.backoff.ms": 20})


def read_across(reader, topic, change) -> list[int]:
    offsets: list[int] = []
    for batch in reader.read(topic, 0, 0, RECORDS, timeout_s=60):
        if not offsets:
            change()
        offsets.extend(batch.column("offset").to_pylist())
    return offsets


def test_leader_moved_mid_read(cluster, caplog):
    topic = filled_topic(cluster)
    old = cluster.leader_of(topic, 0)
    target = next(b for b in (1, 2, 3) if b != old)
    caplog.set_level(logging.DEBUG, logger="kafkacore.consumer.fetcher")

    def move():
        cluster.move_leader(topic, 0, target)
        # Until the old leader hears of it, it still serves (as Kafka's would): wait for that.
        cluster.wait_for_leader_known(topic, 0, target)

    with reader_of(cluster) as reader:
        assert reader.list_offsets([(topic, 0)], OffsetSpec.LATEST) == {(topic, 0): RECORDS}
        offsets = read_across(reader, topic, move)
    assert offsets == list(range(RECORDS))
    # The old leader refused the Fetch that carried the old epoch, and the read moved on.
    assert any("FENCED_LEADER_EPOCH" in r.getMessage() or "NOT_LEADER_OR_FOLLOWER"
               in r.getMessage() for r in caplog.records)


def test_leader_killed_mid_read(cluster):
    topic = filled_topic(cluster)
    old = cluster.leader_of(topic, 0)

    def kill():
        cluster.kill(old)
        cluster.wait_for_leader_change(topic, 0, old)

    with reader_of(cluster) as reader:
        offsets = read_across(reader, topic, kill)
    assert offsets == list(range(RECORDS))
