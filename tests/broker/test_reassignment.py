"""Reassigning a partition (AlterPartitionReassignments, ListPartitionReassignments, KIP-455) while a
producer writes to it with acks=all: nothing acknowledged is lost, the new replica catches up, the
old replica's files are gone.  Judged by confluent-kafka (producer, consumer) and kafka-python's
admin client."""

from __future__ import annotations

import dataclasses

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaAdminClient
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError
from kafka.structs import TopicPartition as KpTopicPartition
from support.topics import new_topic
from test_admin_calls import _call
from waits import wait_until

from kafkacore.broker.controller.replication_control_manager import ReplicationControlManager
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker
from kafkacore.testing.cluster import Cluster


def test_a_single_broker_has_nowhere_to_move_a_partition():
    with LocalBroker(kind="kafkacore") as broker:
        topic = new_topic(broker)
        response = _call(broker, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {
            "timeout_ms": 30000, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "replicas": [1]},
                {"partition_index": 1, "replicas": [1]}]}]})
        [answer] = response["responses"]
        assert [p["error_code"] for p in answer["partitions"]] == [
            Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION]
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            assert admin.alter_partition_reassignments({KpTopicPartition(topic, 0): [2]}) == {
                KpTopicPartition(topic, 0): InvalidReplicationAssignmentError}
            assert admin.list_partition_reassignments() == {}
        finally:
            admin.close()


def test_the_controller_refuses_a_bad_target_and_changes_nothing():
    rc = ReplicationControlManager()
    info = rc.create_topic("t", 1, 3, {}, [1, 2, 3])
    part = info.partitions[0]
    before = dataclasses.replace(part)
    registered, active = {1, 2, 3, 4, 5}, {1, 2, 3, 4}
    for target, error in [([1, 2, 9], Errors.INVALID_REPLICA_ASSIGNMENT),  # unknown broker
                          ([1, 2, 5], Errors.INVALID_REPLICA_ASSIGNMENT),  # a dead one
                          ([1, 1, 2], Errors.INVALID_REPLICA_ASSIGNMENT),
                          ([], Errors.INVALID_REPLICA_ASSIGNMENT),
                          (None, Errors.NO_REASSIGNMENT_IN_PROGRESS)]:
        assert rc.alter_partition_reassignment("t", 0, target, registered, active)[0] == error
        assert part == before
    assert rc.alter_partition_reassignment("t", 0, [2, 3], registered, active,
                                           allow_rf_change=False)[0] == \
        Errors.INVALID_REPLICATION_FACTOR
    # A move, then its cancellation: the original replicas, the joining one gone.
    target = [r for r in before.replicas if r != before.leader] + [4]
    assert rc.alter_partition_reassignment("t", 0, target, registered, active)[0] == Errors.NONE
    assert part.adding_replicas == [4] and part.removing_replicas == [before.leader]
    assert rc.alter_partition_reassignment("t", 0, None, registered, active)[0] == Errors.NONE
    assert sorted(part.replicas) == sorted(before.replicas) and part.leader == before.leader
    assert not part.adding_replicas and not part.removing_replicas


@pytest.mark.cluster
def test_a_replica_moves_while_a_producer_writes(tmp_path):
    with Cluster(4, log_dir=tmp_path, config={"replica.lag.time.max.ms": "2000"}) as cluster:
        topic = new_topic(cluster, replication_factor=3, configs={"min.insync.replicas": "2"})
        state = cluster.partition_state(topic, 0)
        old = state["leader_id"]  # the hardest one to move: the leader
        [new] = {1, 2, 3, 4} - set(state["replica_nodes"])
        target = [r for r in state["replica_nodes"] if r != old] + [new]
        cluster.wait_for_isr(topic, 0, state["replica_nodes"])
        old_dir = cluster.brokers[old].directory / f"{topic}-0"
        wait_until(old_dir.is_dir, f"broker {old} has its replica's log", bound_s=30)

        acked: list[bytes] = []
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5})

        def produce(n: int) -> None:
            for _ in range(n):
                value = b"%d" % (len(acked) + producer.__len__() + 1_000_000)
                producer.produce(topic, value, partition=0, on_delivery=lambda err, msg: (
                    acked.append(msg.value()) if err is None else None))
            producer.poll(0)

        produce(200)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            tp = KpTopicPartition(topic, 0)
            # Broker 9 does not exist: refused, nothing changes.
            assert admin.alter_partition_reassignments({tp: [1, 9]}) == {
                tp: InvalidReplicationAssignmentError}
            assert admin.alter_partition_reassignments({tp: target}) == {tp: None}

            def moved() -> bool:
                produce(20)
                return (admin.list_partition_reassignments() == {}
                        and cluster.partition_state(topic, 0)["replica_nodes"] == target)

            wait_until(moved, f"{topic}-0 moves to {target}", bound_s=60)
            assert admin.alter_partition_reassignments({tp: None}) == {
                tp: NoReassignmentInProgressError}
        finally:
            admin.close()
        produce(100)
        assert producer.flush(60) == 0
        wait_until(lambda: not old_dir.exists(), "the old replica's files are deleted",
                   bound_s=30)
        assert sorted(cluster.partition_state(topic, 0)["isr_nodes"]) == sorted(target)

        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                             "group.id": f"g-{topic}", "enable.auto.commit": False})
        try:
            consumer.assign([CkTopicPartition(topic, 0, 0)])
            seen: set[bytes] = set()

            def read_all() -> bool:
                for msg in consumer.consume(500, timeout=1.0):
                    if msg.error() is None:
                        seen.add(msg.value())
                return set(acked) <= seen

            wait_until(read_all, "every acknowledged record is read back", bound_s=60)
        finally:
            consumer.close()
        assert len(acked) >= 300
