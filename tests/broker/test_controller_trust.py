"""What the controller takes from whoever reaches it (no authorizer): a BrokerRegistration
under the id of a live broker is DUPLICATE_BROKER_REGISTRATION, and an AlterPartition or an
AllocateProducerIds must carry the broker epoch of the broker it names (STALE_BROKER_EPOCH), as
Kafka's controller answers.  A stranger talks to the 3-broker cluster's active controller directly."""

from __future__ import annotations

import uuid

import pytest
from support.topics import new_replicated_topic

from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

pytestmark = pytest.mark.cluster


@pytest.fixture
def stranger(cluster):
    """A client of the active controller (the others answer NOT_CONTROLLER) that is no broker
    of the cluster."""
    host, port = cluster.controller_address().split(":")
    client = InterBrokerClient(host, int(port), "stranger", 10.0)
    yield client
    client.close()


def _brokers(cluster) -> dict[int, tuple[str, int]]:
    return {b["node_id"]: (b["host"], b["port"]) for b in cluster.metadata()["brokers"]}


def test_a_registration_under_a_live_brokers_id_is_refused(cluster, stranger):
    before = _brokers(cluster)
    assert set(before) == {1, 2, 3}
    response = stranger.send(ApiKey.BROKER_REGISTRATION, 0, {
        "broker_id": 1, "cluster_id": "kafkacore-cluster", "incarnation_id": uuid.uuid4(),
        "listeners": [{"name": "PLAINTEXT", "host": "10.9.9.9", "port": 9092,
                       "security_protocol": 0}],
        "features": [], "rack": None})
    assert (response["error_code"], response["broker_epoch"]) == (
        Errors.DUPLICATE_BROKER_REGISTRATION, -1)
    # Broker 1 is neither fenced nor moved: clients are still sent to it.
    assert _brokers(cluster) == before


def test_an_alter_partition_without_the_leaders_broker_epoch_is_refused(cluster, stranger):
    topic = new_replicated_topic(cluster)
    state = cluster.partition_state(topic, 0)
    topic_id = next(t["topic_id"] for t in cluster.metadata()["topics"] if t["name"] == topic)
    leader = state["leader_id"]
    # The leader's id, its leader epoch, an ISR of the leader alone: all a stranger can read
    # from Metadata; the broker epoch it cannot.
    response = stranger.send(ApiKey.ALTER_PARTITION, 3, {
        "broker_id": leader, "broker_epoch": -1, "topics": [{
            "topic_id": topic_id, "partitions": [{
                "partition_index": 0, "leader_epoch": state["leader_epoch"],
                "new_isr_with_epochs": [{"broker_id": leader, "broker_epoch": -1}],
                "leader_recovery_state": 0, "partition_epoch": 0}]}]})
    assert response["error_code"] == Errors.STALE_BROKER_EPOCH
    assert sorted(cluster.partition_state(topic, 0)["isr_nodes"]) == [1, 2, 3]


def test_producer_ids_only_for_the_broker_epoch_of_the_broker_named(cluster, stranger):
    # A broker's id is in every Metadata answer; its broker epoch is not.
    for epoch in (-1, 0, 1 << 62):  # none of them broker 1's (epochs count up from 1)
        response = stranger.send(ApiKey.ALLOCATE_PRODUCER_IDS, 0,
                                 {"broker_id": 1, "broker_epoch": epoch})
        assert (response["error_code"], response["producer_id_start"],
                response["producer_id_len"]) == (Errors.STALE_BROKER_EPOCH, -1, 0)
