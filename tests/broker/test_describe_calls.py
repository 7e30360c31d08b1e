"""DescribeLogDirs, DescribeTopicPartitions (KIP-966) and DeleteTopics v5-v6 on our broker, judged
by kafka-python's KafkaAdminClient (confluent-kafka's Python AdminClient has none of the first
two) and by every version on the wire."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from support.topics import new_topic
from test_admin_calls import _call

from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker


@pytest.fixture(scope="module")
def ours():
    with LocalBroker(kind="kafkacore") as broker:
        yield broker


@pytest.fixture
def admin(ours):
    client = KafkaAdminClient(bootstrap_servers=ours.bootstrap)
    yield client
    client.close()


def test_log_dirs_tell_each_partitions_size(ours, admin):
    topic = new_topic(ours, partitions=2)
    producer = KafkaProducer(bootstrap_servers=ours.bootstrap)
    producer.send(topic, b"x" * 1000, partition=1).get(timeout=30)
    producer.close()
    [answer] = admin.describe_log_dirs({topic: [0, 1]})
    [log_dir] = answer["log_dirs"]
    assert answer["broker"] == 1 and log_dir["error_code"] == Errors.NONE
    assert log_dir["log_dir"] == str(Path(ours.log_dirs).resolve())
    assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
    [described] = log_dir["topics"]
    sizes = {p["partition_index"]: (p["partition_size"], p["offset_lag"])
             for p in described["partitions"]}
    assert sizes[0] == (0, 0) and 1000 < sizes[1][0] < 1200 and sizes[1][1] == 0
    for version in (1, 2, 3, 4):
        response = _call(ours, ApiKey.DESCRIBE_LOG_DIRS, version,
                         {"topics": [{"topic": topic, "partitions": [1]}]})
        [result] = response["results"]
        assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
                for t in result["topics"]] == [(topic, [1])]


def test_topic_partitions_come_a_page_at_a_time(ours, admin):
    counts = {new_topic(ours, partitions=3): 3, new_topic(ours, partitions=2): 2}
    first, second = sorted(counts)  # pages go in name order
    seen, cursor, pages = [], None, 0
    while True:
        page = admin.describe_topic_partitions([second, first], response_partition_limit=2,
                                               cursor=cursor)
        pages += 1
        seen += [(t["name"], p["partition_index"], p["leader_id"])
                 for t in page["topics"] for p in t["partitions"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3  # 2 + 2 + 1 partitions
    assert seen == [(first, p, 1) for p in range(counts[first])] + [
        (second, p, 1) for p in range(counts[second])]
    missing = admin.describe_topic_partitions(["no-such-topic"])["topics"]
    assert [(t["name"], t["error_code"]) for t in missing] == [
        ("no-such-topic", Errors.UNKNOWN_TOPIC_OR_PARTITION)]
    refused = _call(ours, ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {
        "topics": [{"name": first}], "response_partition_limit": 10,
        "cursor": {"topic_name": first, "partition_index": -1}})
    assert [(t["name"], t["error_code"], t["partitions"]) for t in refused["topics"]] == [
        (first, Errors.INVALID_REQUEST, [])]


def test_delete_topics_by_name_or_id(ours, admin):
    by_client, by_name, by_id = (new_topic(ours) for _ in range(3))
    answer = admin.delete_topics([by_client])
    assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [(by_client, Errors.NONE)]
    response = _call(ours, ApiKey.DELETE_TOPICS, 5, {"topic_names": [by_name, "gone"],
                                                     "timeout_ms": 30000})
    assert [(r["name"], r["error_code"], bool(r["error_message"]))
            for r in response["responses"]] == [
        (by_name, Errors.NONE, False), ("gone", Errors.UNKNOWN_TOPIC_OR_PARTITION, True)]
    topic_id = admin.describe_topic_partitions([by_id])["topics"][0]["topic_id"]
    unknown_id = uuid.uuid4()
    response = _call(ours, ApiKey.DELETE_TOPICS, 6, {"topics": [
        {"name": None, "topic_id": topic_id}, {"name": None, "topic_id": unknown_id}],
        "timeout_ms": 30000})
    assert [(r["name"], r["topic_id"], r["error_code"]) for r in response["responses"]] == [
        (None, unknown_id, Errors.UNKNOWN_TOPIC_ID), (by_id, topic_id, Errors.NONE)]
    assert set(admin.list_topics()).isdisjoint({by_client, by_name, by_id})


@pytest.mark.cluster
def test_delete_topics_through_the_controller_in_every_form(cluster):
    from types import SimpleNamespace

    from confluent_kafka.admin import AdminClient

    by_confluent, by_name, by_id = (new_topic(cluster, replication_factor=3) for _ in range(3))
    for topic in (by_confluent, by_name, by_id):
        cluster.wait_for_topic(topic)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    [future] = admin.delete_topics([by_confluent]).values()
    future.result(timeout=30)
    host, port = cluster.broker_address(1).rsplit(":", 1)
    broker = SimpleNamespace(host=host, port=int(port))
    response = _call(broker, ApiKey.DELETE_TOPICS, 5, {"topic_names": [by_name],
                                                       "timeout_ms": 30000})
    assert [r["error_code"] for r in response["responses"]] == [Errors.NONE]
    [topic_id] = [t["topic_id"] for t in cluster.metadata()["topics"] if t["name"] == by_id]
    response = _call(broker, ApiKey.DELETE_TOPICS, 6, {
        "topics": [{"name": None, "topic_id": topic_id}], "timeout_ms": 30000})
    assert [(r["name"], r["error_code"]) for r in response["responses"]] == [
        (by_id, Errors.NONE)]
    assert not {by_confluent, by_name, by_id} & {t["name"] for t in cluster.metadata()["topics"]}
