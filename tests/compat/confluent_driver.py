"""confluent-kafka (librdkafka): its Producer, Consumer and AdminClient, call by call
(tests/compat/harness.py says what a driver does)."""

from __future__ import annotations

import functools

import harness
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    ElectionType,
    IsolationLevel,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
)
from harness import RECORDS, TIMEOUT_S, check

COMMON = {"socket.timeout.ms": 10000, "api.version.request.timeout.ms": 10000}


@functools.cache
def admin(bootstrap):
    """One AdminClient for the run (a future outlives no client: keep it referenced)."""
    return AdminClient({"bootstrap.servers": bootstrap, **COMMON})


def one(futures):
    """The result of the single future in a dict of them (raises its error)."""
    [f] = futures.values()
    return f.result(timeout=TIMEOUT_S)


def consumer(bootstrap, group, **more):
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, **COMMON,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest", **more})


def read(c, n):
    got = []
    for _ in range(int(TIMEOUT_S * 10)):
        m = c.poll(0.1)
        if m is None:
            if len(got) >= n:
                break
            continue
        if m.error():
            raise RuntimeError(str(m.error()))
        got.append(m.value())
        if len(got) >= n:
            break
    return got


def produce(bootstrap, name, conf=None):
    harness.topic(bootstrap, name)
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, **COMMON, **(conf or {})})
    for i in range(RECORDS):
        p.produce(name, b"v%d" % i, partition=0,
                  on_delivery=lambda err, _m: err and errors.append(err))
    check(p.flush(TIMEOUT_S) == 0, "records not delivered in time")
    check(not errors, f"delivery errors: {errors}")


def consume(bootstrap, name):
    harness.filled(bootstrap, name)
    c = consumer(bootstrap, name)
    try:
        c.assign([TopicPartition(name, 0, 0)])
        got = read(c, RECORDS)
    finally:
        c.close()
    check(got == [b"v%d" % i for i in range(RECORDS)], f"read back {got}")


def group_consume(bootstrap, name):
    harness.filled(bootstrap, name)
    c = consumer(bootstrap, name, **{"session.timeout.ms": 10000})
    try:
        c.subscribe([name])
        got = read(c, RECORDS)
        check(len(got) == RECORDS, f"read {len(got)} of {RECORDS} records")
        c.commit(asynchronous=False)
        [tp] = c.committed([TopicPartition(name, 0)], timeout=TIMEOUT_S)
        check(tp.offset == RECORDS, f"committed offset {tp.offset}")
    finally:
        c.close()


def consumer_group_consume(bootstrap, name):
    """group.protocol=consumer: the broker assigns (ConsumerGroupHeartbeat); the AdminClient
    then describes the group as a new-protocol one (ConsumerGroupDescribe)."""
    harness.filled(bootstrap, name)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": name, **COMMON,
                  "group.protocol": "consumer", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.subscribe([name])
        got = read(c, RECORDS)
        check(len(got) == RECORDS, f"read {len(got)} of {RECORDS} records")
        c.commit(asynchronous=False)
        group = one(admin(bootstrap).describe_consumer_groups([name]))
        check(group.type == ConsumerGroupType.CONSUMER and len(group.members) == 1,
              f"described {group}")
    finally:
        c.close()


def committed_group(bootstrap, name, offset=5):
    """A group with no members that committed ``offset`` for partition 0 of topic ``name``."""
    harness.filled(bootstrap, name)
    c = consumer(bootstrap, name)
    try:
        c.commit(offsets=[TopicPartition(name, 0, offset)], asynchronous=False)
    finally:
        c.close()
    return name


def metadata(bootstrap, name):
    harness.topic(bootstrap, name)
    check(name in admin(bootstrap).list_topics(timeout=TIMEOUT_S).topics, "topic not listed")


def create_topics(bootstrap, name):
    one(admin(bootstrap).create_topics([NewTopic(name, 2, 1)], operation_timeout=TIMEOUT_S))
    check(len(admin(bootstrap).list_topics(name, timeout=TIMEOUT_S).topics[name].partitions) == 2,
          "created topic has not 2 partitions")


def delete_topics(bootstrap, name):
    harness.topic(bootstrap, name)
    one(admin(bootstrap).delete_topics([name], operation_timeout=TIMEOUT_S))


def create_partitions(bootstrap, name):
    harness.topic(bootstrap, name)
    one(admin(bootstrap).create_partitions([NewPartitions(name, 3)], operation_timeout=TIMEOUT_S))


def describe_configs(bootstrap, name):
    harness.topic(bootstrap, name)
    configs = one(admin(bootstrap).describe_configs([ConfigResource("topic", name)]))
    check(configs["retention.ms"].value == "604800000", "retention.ms is not Kafka's default")


def _retention(bootstrap, name):
    return one(admin(bootstrap).describe_configs([ConfigResource("topic", name)]))["retention.ms"].value


def incremental_alter_configs(bootstrap, name):
    harness.topic(bootstrap, name)
    entry = ConfigEntry("retention.ms", "12345", incremental_operation=AlterConfigOpType.SET)
    one(admin(bootstrap).incremental_alter_configs([ConfigResource("topic", name,
                                                                   incremental_configs=[entry])]))
    check(_retention(bootstrap, name) == "12345", "retention.ms not changed")


def alter_configs(bootstrap, name):
    harness.topic(bootstrap, name)
    one(admin(bootstrap).alter_configs([ConfigResource("topic", name,
                                                       set_config={"retention.ms": "23456"})]))
    check(_retention(bootstrap, name) == "23456", "retention.ms not changed")


def delete_records(bootstrap, name):
    harness.filled(bootstrap, name)
    result = one(admin(bootstrap).delete_records([TopicPartition(name, 0, 5)]))
    check(result.low_watermark == 5, f"low watermark {result.low_watermark}")


def list_offsets(bootstrap, name):
    harness.filled(bootstrap, name)
    tp = TopicPartition(name, 0)
    latest = one(admin(bootstrap).list_offsets({tp: OffsetSpec.latest()},
                                               isolation_level=IsolationLevel.READ_UNCOMMITTED))
    check(latest.offset == RECORDS, f"latest offset {latest.offset}")


def list_groups(bootstrap, name):
    committed_group(bootstrap, name)
    result = admin(bootstrap).list_consumer_groups().result(timeout=TIMEOUT_S)
    check(name in {g.group_id for g in result.valid}, "group not listed")


def describe_groups(bootstrap, name):
    committed_group(bootstrap, name)
    group = one(admin(bootstrap).describe_consumer_groups([name]))
    check(group.group_id == name and not group.members, f"described {group}")


def list_group_offsets(bootstrap, name):
    committed_group(bootstrap, name)
    result = one(admin(bootstrap).list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(name, [TopicPartition(name, 0)])]))
    check(result.topic_partitions[0].offset == 5, f"offsets {result.topic_partitions}")


def alter_group_offsets(bootstrap, name):
    committed_group(bootstrap, name)
    one(admin(bootstrap).alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(name, [TopicPartition(name, 0, 3)])]))
    result = one(admin(bootstrap).list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(name, [TopicPartition(name, 0)])]))
    check(result.topic_partitions[0].offset == 3, f"offsets {result.topic_partitions}")


def delete_groups(bootstrap, name):
    committed_group(bootstrap, name)
    one(admin(bootstrap).delete_consumer_groups([name], request_timeout=TIMEOUT_S))


def describe_cluster(bootstrap, name):
    cluster = admin(bootstrap).describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    check(cluster.nodes and cluster.controller is not None, f"described {cluster}")


def elect_leaders(bootstrap, name):
    name, prepared = harness.elect_topic(bootstrap, name)
    result = admin(bootstrap).elect_leaders(
        ElectionType.PREFERRED, [TopicPartition(name, 0)]).result(timeout=TIMEOUT_S)
    harness.check_elected(prepared, {(tp.topic, tp.partition): err
                                     for tp, err in result.items()})


def acls(bootstrap, name):
    a = admin(bootstrap)
    binding = AclBinding(ResourceType.TOPIC, name, ResourcePatternType.LITERAL, "User:compat", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    one(a.create_acls([binding], request_timeout=TIMEOUT_S))
    search = AclBindingFilter(ResourceType.TOPIC, name, ResourcePatternType.LITERAL, None, None,
                              AclOperation.ANY, AclPermissionType.ANY)
    found = a.describe_acls(search, request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    check(found == [binding], f"described {found}")
    deleted = one(a.delete_acls([search], request_timeout=TIMEOUT_S))
    check(deleted == [binding], f"deleted {deleted}")


def transactions(bootstrap, name):
    harness.topic(bootstrap, name)
    p = Producer({"bootstrap.servers": bootstrap, **COMMON, "transactional.id": name})
    p.init_transactions(TIMEOUT_S)
    p.begin_transaction()
    for i in range(RECORDS):
        p.produce(name, b"v%d" % i, partition=0)
    p.commit_transaction(TIMEOUT_S)
    c = consumer(bootstrap, name, **{"isolation.level": "read_committed"})
    try:
        c.assign([TopicPartition(name, 0, 0)])
        got = read(c, RECORDS)
    finally:
        c.close()
    check(got == [b"v%d" % i for i in range(RECORDS)], f"read back {got}")


if __name__ == "__main__":
    harness.main({
        "produce": produce, "consume": consume, "group_consume": group_consume,
        "consumer_group_consume": consumer_group_consume, "metadata": metadata,
        "create_topics": create_topics, "delete_topics": delete_topics,
        "create_partitions": create_partitions, "describe_configs": describe_configs,
        "incremental_alter_configs": incremental_alter_configs, "alter_configs": alter_configs,
        "delete_records": delete_records, "list_offsets": list_offsets,
        "list_groups": list_groups, "describe_groups": describe_groups,
        "list_group_offsets": list_group_offsets, "alter_group_offsets": alter_group_offsets,
        "offset_delete": "no call (librdkafka has DeleteConsumerGroupOffsets, the Python "
                         "AdminClient does not offer it)",
        "delete_groups": delete_groups, "describe_cluster": describe_cluster,
        "describe_topic_partitions": "no call (describe_topics reads Metadata)",
        "describe_log_dirs": "no call", "elect_leaders": elect_leaders, "acls": acls,
        "transactions": transactions,
    })
