"""DeleteGroups and OffsetDelete on our broker, judged by confluent-kafka's AdminClient and
kafka-python's KafkaAdminClient: a group with members is not deleted, nor the offsets of topics it
subscribes to; what is deleted stays deleted after a restart (tombstones in __consumer_offsets)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition
from support.topics import new_topic
from test_admin_calls import _call
from waits import wait_until

from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    with LocalBroker(kind="kafkacore", log_dirs=tmp_path_factory.mktemp("groups"),
                     config={"group.initial.rebalance.delay.ms": "0"}) as broker:
        yield broker


def _member(broker, group, topic):
    """A consumer in ``group``, subscribed to ``topic``, once it has its assignment."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    wait_until(lambda: consumer.poll(0.2) is None and bool(consumer.assignment()),
               f"{group} gets its assignment", bound_s=30)
    return consumer


def _committed(broker, group, topic, partitions):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    [future] = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(
        group, [CkTopicPartition(topic, p) for p in partitions])]).values()
    return {tp.partition: tp.offset for tp in future.result(timeout=30).topic_partitions}


def _error_of(future):
    with pytest.raises(KafkaException) as exc:
        future.result(timeout=30)
    return exc.value.args[0].name()


def test_groups_and_offsets_deleted_only_when_nobody_uses_them(ours):
    topic, other = new_topic(ours, partitions=2), new_topic(ours)
    group = f"g-{topic}"
    admin = AdminClient({"bootstrap.servers": ours.bootstrap})
    consumer = _member(ours, group, topic)
    try:
        consumer.commit(offsets=[CkTopicPartition(topic, 0, 5), CkTopicPartition(topic, 1, 7),
                                 CkTopicPartition(other, 0, 3)], asynchronous=False)
        [busy] = admin.delete_consumer_groups([group]).values()
        assert _error_of(busy) == "NON_EMPTY_GROUP"
        # The group reads `topic`: its offsets stay; `other` is not subscribed: deleted.
        # (confluent-kafka's Python AdminClient has no OffsetDelete: kafka-python's has.)
        kp = KafkaAdminClient(bootstrap_servers=ours.bootstrap)
        result = kp.delete_group_offsets(group, [KpTopicPartition(topic, 0),
                                                 KpTopicPartition(other, 0)])
        assert {tp.topic: e.errno for tp, e in result.items()} == {
            topic: Errors.GROUP_SUBSCRIBED_TO_TOPIC, other: Errors.NONE}
        assert _committed(ours, group, other, [0]) == {0: -1001}  # none
        assert _committed(ours, group, topic, [0, 1]) == {0: 5, 1: 7}
    finally:
        consumer.close()
    # Empty now: one partition's offset goes, then the group.
    try:
        result = kp.delete_group_offsets(group, [KpTopicPartition(topic, 1)])
        assert [e.errno for e in result.values()] == [Errors.NONE]
        assert _committed(ours, group, topic, [0, 1]) == {0: 5, 1: -1001}
        [deleted] = admin.delete_consumer_groups([group]).values()
        deleted.result(timeout=30)
        assert kp.delete_groups([group]) == {group: "GroupIdNotFoundError"}
        assert group not in [g.group_id for g in admin.list_consumer_groups().result(
            timeout=30).valid]
    finally:
        kp.close()
    # The tombstones are in __consumer_offsets: a restarted broker does not bring them back.
    ours.restart()
    assert _committed(ours, group, topic, [0, 1]) == {0: -1001, 1: -1001}


def test_every_version_of_delete_groups(ours):
    for version in (0, 1, 2):
        response = _call(ours, ApiKey.DELETE_GROUPS, version,
                         {"groups_names": [f"never-{version}", ""]})
        assert [(r["group_id"], r["error_code"]) for r in response["results"]] == [
            (f"never-{version}", Errors.GROUP_ID_NOT_FOUND), ("", Errors.INVALID_GROUP_ID)]
    response = _call(ours, ApiKey.OFFSET_DELETE, 0, {"group_id": "never", "topics": []})
    assert response["error_code"] == Errors.GROUP_ID_NOT_FOUND
