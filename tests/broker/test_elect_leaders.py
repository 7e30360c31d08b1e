"""ElectLeaders (preferred and unclean, KIP-460) through the controller, judged by confluent-kafka's
and kafka-python's admin clients."""

from __future__ import annotations

import pytest
from confluent_kafka import ElectionType
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from support.topics import new_replicated_topic, new_topic
from test_admin_calls import _call
from waits import wait_until

from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker


def _elect(bootstrap, election_type, topic, partition=0):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = CkTopicPartition(topic, partition)
    return admin.elect_leaders(election_type, [tp]).result(timeout=30)[tp]


def test_a_single_broker_needs_no_election():
    with LocalBroker(kind="kafkacore") as broker:
        topic = new_topic(broker)
        for election_type in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
            assert _elect(broker.bootstrap, election_type, topic).name() == \
                "ELECTION_NOT_NEEDED"
        for version in (0, 1, 2):
            body = {"timeout_ms": 30000, "topic_partitions": [
                {"topic": topic, "partitions": [0, 5]}]}
            if version >= 1:  # v0 elects the preferred leader only
                body["election_type"] = 1
            response = _call(broker, ApiKey.ELECT_LEADERS, version, body)
            [result] = response["replica_election_results"]
            assert [p["error_code"] for p in result["partition_result"]] == [
                Errors.ELECTION_NOT_NEEDED, Errors.UNKNOWN_TOPIC_OR_PARTITION]
        refused = _call(broker, ApiKey.ELECT_LEADERS, 2, {
            "election_type": 7, "timeout_ms": 30000, "topic_partitions": None})
        assert refused["error_code"] == Errors.INVALID_REQUEST


@pytest.mark.cluster
def test_preferred_and_unclean_elections_in_a_cluster(cluster):
    # Preferred: the leader moved away from the first replica comes back to it.
    topic = new_replicated_topic(cluster)
    preferred = cluster.partition_state(topic, 0)["replica_nodes"][0]
    other = next(b for b in (1, 2, 3) if b != preferred)
    cluster.move_leader(topic, 0, other)
    assert _elect(cluster.bootstrap_servers, ElectionType.PREFERRED, topic) is None
    wait_until(lambda: cluster.leader_of(topic, 0) == preferred, "the preferred leader is back",
               bound_s=30)
    again = _elect(cluster.bootstrap_servers, ElectionType.PREFERRED, topic)
    assert again.name() == "ELECTION_NOT_NEEDED"
    # Unclean: both replicas of a topic stop, the one out of the ISR comes back first; only an
    # unclean election gives the partition a leader again.
    lossy = new_topic(cluster, replication_factor=2)
    first, second = cluster.partition_state(lossy, 0)["replica_nodes"]
    cluster.wait_for_isr(lossy, 0, [first, second])
    cluster.stop(second)
    cluster.wait_for_isr(lossy, 0, [first])
    cluster.stop(first)
    cluster.restart(second)
    wait_until(lambda: (cluster.partition_state(lossy, 0) or {}).get("leader_id") == -1,
               "the partition is leaderless", bound_s=30)
    # The admin client sends ElectLeaders to the "controller" a Metadata answer names (a live
    # broker): only once no broker still names the stopped one.
    cluster.wait_for_brokers()
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        answer = kp.elect_leaders(1, {lossy: [0]})  # raises on any error but NOT_NEEDED
    finally:
        kp.close()
    [result] = answer.replica_election_results
    assert [(p.partition_id, p.error_code) for p in result.partition_result] == [
        (0, Errors.NONE)]
    wait_until(lambda: cluster.leader_of(lossy, 0) == second, "the unclean leader", bound_s=30)
    cluster.restart(first)
