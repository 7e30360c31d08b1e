"""kafka-python: its KafkaProducer, KafkaConsumer and KafkaAdminClient, call by call
(tests/compat/harness.py says what a driver does)."""

from __future__ import annotations

import functools
import time

import harness
from harness import RECORDS, TIMEOUT_S, check
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import CommitFailedError, RebalanceInProgressError
from kafka.structs import OffsetAndMetadata

TIMEOUT_MS = int(TIMEOUT_S * 1000)
VALUES = [b"v%d" % i for i in range(RECORDS)]


@functools.cache
def admin(bootstrap):
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)


def consumer(bootstrap, group=None, **more):
    return KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, request_timeout_ms=TIMEOUT_MS,
                         enable_auto_commit=False, auto_offset_reset="earliest", **more)


def read(c, n=RECORDS):
    """Up to ``n`` records within TIMEOUT_S.  Each poll may take all the time that is left: it
    returns as soon as records come, and a group join it starts ends inside it.  (kafka-python
    3.0 keeps a join that outlives a poll for the next poll, but a join that ends between two
    polls is dropped and started again, and a rejoin that ends there can leave the consumer
    "rebalancing", refusing every commit: CI saw that for 15 s with 100 ms polls.)"""
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < n:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0:
            break
        for records in c.poll(timeout_ms=left_ms, max_records=n - len(got)).values():
            got.extend(r.value for r in records)
    return got


def produce(bootstrap, name, **conf):
    harness.topic(bootstrap, name)
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=TIMEOUT_MS, **conf)
    try:
        for f in [p.send(name, v, partition=0) for v in VALUES]:
            f.get(timeout=TIMEOUT_S)
    finally:
        p.close(timeout=TIMEOUT_S)


def consume(bootstrap, name):
    harness.filled(bootstrap, name)
    c = consumer(bootstrap)
    try:
        c.assign([TopicPartition(name, 0)])
        got = read(c)
    finally:
        c.close()
    check(got == VALUES, f"read back {got}")


def group_consume(bootstrap, name):
    harness.filled(bootstrap, name)
    c = consumer(bootstrap, name)
    try:
        # The topic's metadata first, as a consumer of an existing topic has it: else the
        # first assignment is empty and a metadata update makes kafka-python rejoin at once.
        check(c.partitions_for_topic(name) == {0}, "the topic's partitions are not known")
        c.subscribe([name])
        got = read(c)
        check(len(got) == RECORDS, f"read {len(got)} of {RECORDS} records")
        commit(c, {TopicPartition(name, 0): OffsetAndMetadata(RECORDS, "", -1)})
        committed = c.committed(TopicPartition(name, 0))
    finally:
        c.close()
    check(committed == RECORDS, f"committed offset {committed}")


def commit(c, offsets):
    """Commit ``offsets`` as a consumer's loop does: a commit refused because the group is
    rebalancing (kafka-python rejoins by itself, after a metadata change for one) is made again
    once poll() has taken the consumer back into the group, within TIMEOUT_S.  The poll waits
    long enough for a rejoin to end inside it (see read)."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            c.commit(offsets)
            return
        except (RebalanceInProgressError, CommitFailedError):
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                raise
            c.poll(timeout_ms=min(left_ms, 2000))


def committed_group(bootstrap, name, offset=5):
    """A group with no members that committed ``offset`` for partition 0 of topic ``name``."""
    harness.filled(bootstrap, name)
    c = consumer(bootstrap, name)
    try:
        c.assign([TopicPartition(name, 0)])
        c.commit({TopicPartition(name, 0): OffsetAndMetadata(offset, "", -1)})
    finally:
        c.close()


def group_offset(bootstrap, name):
    offsets = admin(bootstrap).list_group_offsets({name: [TopicPartition(name, 0)]})[name]
    return offsets[TopicPartition(name, 0)].offset


def metadata(bootstrap, name):
    harness.topic(bootstrap, name)
    check(name in admin(bootstrap).list_topics(), "topic not listed")


def create_topics(bootstrap, name):
    admin(bootstrap).create_topics([NewTopic(name, 2, 1)], timeout_ms=TIMEOUT_MS)
    [described] = admin(bootstrap).describe_topics([name])
    check(len(described["partitions"]) == 2, "created topic has not 2 partitions")


def delete_topics(bootstrap, name):
    harness.topic(bootstrap, name)
    admin(bootstrap).delete_topics([name], timeout_ms=TIMEOUT_MS)


def create_partitions(bootstrap, name):
    harness.topic(bootstrap, name)
    admin(bootstrap).create_partitions({name: NewPartitions(3)}, timeout_ms=TIMEOUT_MS)


def _retention(bootstrap, name):
    described = admin(bootstrap).describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, name, ["retention.ms"])], config_filter="all")
    return described["topic"][name]["retention.ms"]["value"]


def describe_configs(bootstrap, name):
    harness.topic(bootstrap, name)
    check(_retention(bootstrap, name) == "604800000", "retention.ms is not Kafka's default")


def _alter(bootstrap, name, value, incremental):
    harness.topic(bootstrap, name)
    resource = ConfigResource(ConfigResourceType.TOPIC, name,
                              {"retention.ms": (AlterConfigOp.SET, value)})
    answer = admin(bootstrap).alter_configs([resource], incremental=incremental)
    check(_retention(bootstrap, name) == value, f"retention.ms not changed ({answer})")


def incremental_alter_configs(bootstrap, name):
    _alter(bootstrap, name, "12345", incremental=True)


def alter_configs(bootstrap, name):
    _alter(bootstrap, name, "23456", incremental=False)


def delete_records(bootstrap, name):
    harness.filled(bootstrap, name)
    result = admin(bootstrap).delete_records({TopicPartition(name, 0): 5}, timeout_ms=TIMEOUT_MS)
    check(result[TopicPartition(name, 0)]["low_watermark"] == 5, f"answered {result}")


def list_offsets(bootstrap, name):
    harness.filled(bootstrap, name)
    tp = TopicPartition(name, 0)
    result = admin(bootstrap).list_partition_offsets({tp: OffsetSpec.LATEST})
    check(result[tp].offset == RECORDS, f"answered {result}")


def list_groups(bootstrap, name):
    committed_group(bootstrap, name)
    listed = admin(bootstrap).list_groups()
    check(name in {g["group_id"] for g in listed}, f"listed {listed}")


def describe_groups(bootstrap, name):
    committed_group(bootstrap, name)
    group = admin(bootstrap).describe_groups([name])[name]
    check(group["group_state"] == "Empty" and not group["error"], f"described {group}")


def list_group_offsets(bootstrap, name):
    committed_group(bootstrap, name)
    check(group_offset(bootstrap, name) == 5, "committed offset not 5")


def alter_group_offsets(bootstrap, name):
    committed_group(bootstrap, name)
    admin(bootstrap).alter_group_offsets(name, {TopicPartition(name, 0): OffsetAndMetadata(3, "", -1)})
    check(group_offset(bootstrap, name) == 3, "offset not altered")


def offset_delete(bootstrap, name):
    committed_group(bootstrap, name)
    result = admin(bootstrap).delete_group_offsets(name, [TopicPartition(name, 0)])
    check(group_offset(bootstrap, name) == -1, f"offset still there ({result})")


def delete_groups(bootstrap, name):
    committed_group(bootstrap, name)
    result = admin(bootstrap).delete_groups([name])
    check(name not in {g["group_id"] for g in admin(bootstrap).list_groups()},
          f"group still listed ({result})")


def describe_cluster(bootstrap, name):
    cluster = admin(bootstrap).describe_cluster()
    check(cluster["brokers"] and cluster["controller_id"] is not None, f"described {cluster}")


def describe_topic_partitions(bootstrap, name):
    harness.topic(bootstrap, name, partitions=2)
    described = admin(bootstrap).describe_topic_partitions([name])
    check(described, f"described {described}")


def describe_log_dirs(bootstrap, name):
    harness.filled(bootstrap, name)
    described = admin(bootstrap).describe_log_dirs({name: [0]})
    check(name in str(described), f"described {described}")


def elect_leaders(bootstrap, name):
    name, prepared = harness.elect_topic(bootstrap, name)
    answer = admin(bootstrap).elect_leaders(0, {name: [0]}, timeout_ms=TIMEOUT_MS, raise_errors=False)
    errors = {(t[0], p[0]): p[1] for t in answer.replica_election_results for p in t[1]}
    harness.check_elected(prepared, errors)


def acls(bootstrap, name):
    a = admin(bootstrap)
    acl = ACL("User:compat", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
              ResourcePattern(ResourceType.TOPIC, name, ACLResourcePatternType.LITERAL))
    created = a.create_acls([acl])
    check(not created["failed"], f"created {created}")
    search = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                       ResourcePatternFilter(ResourceType.TOPIC, name, ACLResourcePatternType.LITERAL))
    found, error = a.describe_acls(search)
    check(found == [acl], f"described {found} {error}")
    deleted = a.delete_acls([search])
    check(len(deleted[0][1]) == 1, f"deleted {deleted}")


def transactions(bootstrap, name):
    harness.topic(bootstrap, name)
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=name,
                      request_timeout_ms=TIMEOUT_MS)
    try:
        p.init_transactions()
        p.begin_transaction()
        for v in VALUES:
            p.send(name, v, partition=0)
        p.commit_transaction()
    finally:
        p.close(timeout=TIMEOUT_S)
    c = consumer(bootstrap, isolation_level="read_committed")
    try:
        c.assign([TopicPartition(name, 0)])
        got = read(c)
    finally:
        c.close()
    check(got == VALUES, f"read back {got}")


if __name__ == "__main__":
    harness.main({
        "consumer_group_consume": "no call (the classic group protocol only)",
        "produce": produce, "consume": consume, "group_consume": group_consume,
        "metadata": metadata, "create_topics": create_topics, "delete_topics": delete_topics,
        "create_partitions": create_partitions, "describe_configs": describe_configs,
        "incremental_alter_configs": incremental_alter_configs, "alter_configs": alter_configs,
        "delete_records": delete_records, "list_offsets": list_offsets,
        "list_groups": list_groups, "describe_groups": describe_groups,
        "list_group_offsets": list_group_offsets, "alter_group_offsets": alter_group_offsets,
        "offset_delete": offset_delete, "delete_groups": delete_groups,
        "describe_cluster": describe_cluster, "describe_topic_partitions": describe_topic_partitions,
        "describe_log_dirs": describe_log_dirs, "elect_leaders": elect_leaders, "acls": acls,
        "transactions": transactions,
    })
