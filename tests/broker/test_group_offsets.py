"""Committed offsets on our broker: FindCoordinator, OffsetCommit and OffsetFetch at every declared
version by hand, and a kafka-python consumer with a group.id (assign() + commit) whose successor
resumes where it committed, also after the broker restarts on the same log.dirs."""

from __future__ import annotations

import uuid

import pytest
from kafka import KafkaConsumer, TopicPartition
from reactor_client import Client

from kafkacore import KafkaProducer
from kafkacore.broker import Broker
from kafkacore.protocol.api_keys import ApiKey


@pytest.fixture(scope="module")
def broker():
    with Broker({"num.network.threads": "1", "num.io.threads": "2", "num.partitions": "1"}) as b:
        yield b


@pytest.mark.parametrize("version", range(7))
def test_find_coordinator_is_this_broker(broker, version):
    c = Client(broker)
    body = {"key_type": 0}
    body.update({"coordinator_keys": ["g1", "g2"]} if version >= 4 else {"key": "g1"})
    response = c.call(ApiKey.FIND_COORDINATOR, version, body)
    c.sock.close()
    answers = response["coordinators"] if version >= 4 else [response]
    assert len(answers) == (2 if version >= 4 else 1)
    for a in answers:
        assert (a["error_code"], a["node_id"], a["host"], a["port"]) == (
            0,
            broker.broker_id,
            broker.advertised_host,
            broker.advertised_port,
        )


@pytest.mark.parametrize("version", range(2, 11))
def test_offset_commit_then_fetch_every_version(broker, version):
    topic = f"off-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    c = Client(broker)
    created = c.call(
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [{"name": topic, "num_partitions": 2, "replication_factor": 1}],
            "timeout_ms": 5000,
        },
    )
    topic_id = created["topics"][0]["topic_id"]
    part = {"partition_index": 1, "committed_offset": 42, "committed_metadata": "m"}
    committed = c.call(
        ApiKey.OFFSET_COMMIT,
        version,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [
                {
                    "name": topic,
                    "topic_id": topic_id,
                    "partitions": [part, {**part, "partition_index": 9}],
                },
                {"name": "no-such-topic", "topic_id": uuid.uuid4(), "partitions": [part]},
            ],
        },
    )
    errors = [[p["error_code"] for p in t["partitions"]] for t in committed["topics"]]
    assert errors == [[0, 3], [3]]  # partition 9 and the unknown topic: UNKNOWN_TOPIC_OR_PARTITION
    fetch_version = version if version <= 7 else version if version == 10 else 8
    asked = [{"name": topic, "partition_indexes": [0, 1]}]
    if fetch_version >= 8:
        asked[0]["topic_id"] = topic_id
    if fetch_version >= 8:
        fetched = c.call(
            ApiKey.OFFSET_FETCH, fetch_version, {"groups": [{"group_id": group, "topics": asked}]}
        )
        topics = fetched["groups"][0]["topics"]
    else:
        fetched = c.call(ApiKey.OFFSET_FETCH, fetch_version, {"group_id": group, "topics": asked})
        topics = fetched["topics"]
    c.sock.close()
    got = {
        p["partition_index"]: (p["committed_offset"], p["metadata"])
        for p in topics[0]["partitions"]
    }
    assert got == {0: (-1, ""), 1: (42, "m")}


def _consume(bootstrap, topic, group, n, assign_from_committed=True):
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=20000,
    )
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    values = []
    for record in consumer:
        values.append(record.value)
        if len(values) == n:
            break
    consumer.commit()
    committed = consumer.committed(tp)
    consumer.close()
    return values, committed


def test_kafka_python_group_commits_and_a_new_consumer_resumes(tmp_path):
    topic = f"resume-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    config = {
        "num.network.threads": "1",
        "num.io.threads": "2",
        "num.partitions": "1",
        "log.dirs": str(tmp_path),
    }
    sent = [b"v%03d" % i for i in range(30)]
    with Broker(config) as b:
        with KafkaProducer({"bootstrap.servers": b.bootstrap_servers}) as producer:
            for v in sent:
                producer.send(topic, v, partition=0)
            producer.flush(timeout=30)
        first, committed = _consume(b.bootstrap_servers, topic, group, 10)
        assert first == sent[:10]
        assert committed == 10
        second, committed = _consume(b.bootstrap_servers, topic, group, 10)
        assert second == sent[10:20]
        assert committed == 20
    with Broker(config) as b:  # the same log.dirs: the commit survived
        third, committed = _consume(b.bootstrap_servers, topic, group, 10)
        assert third == sent[20:30]
        assert committed == 30
