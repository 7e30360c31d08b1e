"""Manual replica assignments (Kafka's ``validateManualPartitionAssignment``): CreateTopics and
CreatePartitions place each partition on the brokers the client names, on the 3-broker cluster
and on a broker alone; wrong ones are INVALID_REPLICA_ASSIGNMENT.  Judged by confluent-kafka's
and kafka-python's admin clients."""

from __future__ import annotations

import uuid

import kafka.errors
import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka import KafkaAdminClient
from kafka.admin import NewPartitions as KpNewPartitions
from support.topics import new_topic
from waits import wait_until

from kafkacore.broker import Broker


def _result(future) -> KafkaError | None:
    try:
        future.result(timeout=30)
    except KafkaException as exc:
        return exc.args[0]
    return None


def _create(where: str, name: str, assignment: list[list[int]]) -> KafkaError | None:
    admin = AdminClient({"bootstrap.servers": where})
    return _result(admin.create_topics([NewTopic(name, len(assignment), replica_assignment=assignment)],
                                       request_timeout=30)[name])


def _grow(where: str, name: str, count: int, assignment: list[list[int]]) -> KafkaError | None:
    admin = AdminClient({"bootstrap.servers": where})
    return _result(admin.create_partitions(
        [NewPartitions(name, count, replica_assignment=assignment)], request_timeout=30)[name])


def _replicas(cluster, topic: str) -> list[list[int]]:
    t = next(t for t in cluster.metadata()["topics"] if t["name"] == topic)
    return [p["replica_nodes"] for p in sorted(t["partitions"],
                                               key=lambda p: p["partition_index"])]


@pytest.mark.cluster
def test_manual_assignments_on_the_cluster(cluster):
    where = cluster.bootstrap_servers
    name = f"placed-{uuid.uuid4().hex[:8]}"
    assert _create(where, name, [[1, 2], [2, 3], [3, 1]]) is None
    assert _replicas(cluster, name) == [[1, 2], [2, 3], [3, 1]]
    assert _grow(where, name, 5, [[2, 1], [3, 2]]) is None
    assert _replicas(cluster, name) == [[1, 2], [2, 3], [3, 1], [2, 1], [3, 2]]
    # kafka-python's admin client: one more, on 1 and 3.
    admin = KafkaAdminClient(bootstrap_servers=where)
    try:
        admin.create_partitions({name: KpNewPartitions(6, [[1, 3]])})
        with pytest.raises(kafka.errors.InvalidReplicationAssignmentError):
            admin.create_partitions({name: KpNewPartitions(7, [[1]])})  # one replica of two
    finally:
        admin.close()
    assert _replicas(cluster, name)[5] == [1, 3]
    # Every broker learns them: each leads where it is first in the ISR.
    cluster.wait_for_topic(name)
    wait_until(lambda: all(cluster.leader_of(name, p) >= 0 for p in range(6)), "leaders")
    # Wrong ones, nothing made: a broker nobody registered, two assignments for one new
    # partition, an unregistered broker in CreateTopics.
    for error in (_grow(where, name, 7, [[1, 9]]), _grow(where, name, 7, [[1, 2], [2, 3]]),
                  _create(where, f"placed-{uuid.uuid4().hex[:8]}", [[1, 9]])):
        assert error is not None and error.code() == KafkaError.INVALID_REPLICA_ASSIGNMENT, error
    assert len(_replicas(cluster, name)) == 6


def test_manual_assignments_on_a_broker_alone(tmp_path):
    with Broker({"log.dirs": str(tmp_path)}) as broker:
        where, me = broker.bootstrap_servers, broker.broker_id
        topic = new_topic(where, 1)
        assert _grow(where, topic, 3, [[me], [me]]) is None
        assert broker.metadata_cache.get(topic).partitions == 3
        error = _grow(where, topic, 4, [[me + 1]])
        assert error.code() == KafkaError.INVALID_REPLICA_ASSIGNMENT, error
        assert broker.metadata_cache.get(topic).partitions == 3
