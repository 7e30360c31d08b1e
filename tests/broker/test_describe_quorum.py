"""DescribeQuorum (KIP-595, KIP-836, KIP-853) on our broker alone and on a 3-broker cluster,
judged by kafka-python's ``KafkaAdminClient.describe_metadata_quorum`` and by every version on
the wire.

With one controller the quorum is one voter: the controller (or the broker alone, its own
controller) leads ``__cluster_metadata`` partition 0 at the epoch of its last start, its
metadata log's end offset is the high watermark, and the brokers fetching the records are
observers.  The session's cluster runs the default quorum of three controllers: the active one
leads, the three are the voters, the brokers observe.  See docs/broker/controller.rst and
docs/broker/quorum.rst.
"""

from __future__ import annotations

import functools
import uuid

import pytest
from kafka import KafkaAdminClient
from kafka.errors import ClusterAuthorizationFailedError
from support.topics import new_topic
from waits import wait_until

from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.controller.quorum_controller import QuorumController
from kafkacore.broker.security.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafkacore.broker.server.broker_server import Broker
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.errors import Errors
from kafkacore.network.sasl import PlainMechanism
from kafkacore.protocol.api_keys import ApiKey

METADATA_TOPIC = "__cluster_metadata"
ASK = {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}


def describe(bootstrap: str, **config) -> dict:
    """kafka-python's answer for ``__cluster_metadata`` partition 0."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000, **config)
    try:
        answer = admin.describe_metadata_quorum()
    finally:
        admin.close()
    [topic] = answer["topics"]
    assert topic["topic_name"] == METADATA_TOPIC
    [partition] = topic["partitions"]
    assert partition["partition_index"] == 0 and partition["error"] is None
    return {**partition, "nodes": answer.get("nodes")}


def on_the_wire(address: str, version: int, body: dict = ASK, sasl=None) -> dict:
    host, port = address.rsplit(":", 1)
    client = InterBrokerClient(host, int(port), "describe-quorum", 30.0, sasl=sasl)
    try:
        return client.send(ApiKey.DESCRIBE_QUORUM, version, body)
    finally:
        client.close()


# -- a broker alone -------------------------------------------------------------------------------

def test_a_broker_alone_is_the_one_voter(kafka_broker):
    broker = kafka_broker.broker
    before = describe(kafka_broker.bootstrap_servers)
    assert before["leader_id"] == broker.broker_id and before["leader_epoch"] >= 1
    [voter] = before["current_voters"]
    assert voter["replica_id"] == broker.broker_id
    assert voter["log_end_offset"] == before["high_watermark"] >= 0
    assert voter["last_fetch_timestamp"] > 0 and voter["last_caught_up_timestamp"] > 0
    assert before["observers"] == []
    host, port = kafka_broker.bootstrap_servers.rsplit(":", 1)
    assert before["nodes"] == [{"node_id": broker.broker_id, "listeners": [
        {"name": "PLAINTEXT", "host": host, "port": int(port)}]}]
    kafka_broker.new_topic(partitions=2)  # a TopicRecord and two PartitionRecords
    after = describe(kafka_broker.bootstrap_servers)
    assert after["high_watermark"] >= before["high_watermark"] + 3
    assert after["leader_epoch"] == before["leader_epoch"]
    assert after["current_voters"][0]["log_end_offset"] == after["high_watermark"]


def test_every_version_and_a_partition_that_is_not_the_quorums(kafka_broker):
    address = kafka_broker.bootstrap_servers
    for version in (0, 1, 2):
        answer = on_the_wire(address, version)
        assert answer["error_code"] == Errors.NONE
        [part] = answer["topics"][0]["partitions"]
        assert part["error_code"] == Errors.NONE
        assert part["leader_id"] == kafka_broker.broker.broker_id
        [voter] = part["current_voters"]
        assert ("last_fetch_timestamp" in voter) == (version >= 1)
        assert ("replica_directory_id" in voter) == (version >= 2)
        assert ("nodes" in answer) == (version >= 2)
    wrong = {"topics": [{"topic_name": "not-the-metadata", "partitions": [
        {"partition_index": 0}, {"partition_index": 1}]}]}
    answer = on_the_wire(address, 2, wrong)
    assert answer["error_code"] == Errors.NONE and answer["nodes"] == []
    assert [(p["partition_index"], p["error_code"]) for p in answer["topics"][0]["partitions"]] \
        == [(0, Errors.UNKNOWN_TOPIC_OR_PARTITION), (1, Errors.UNKNOWN_TOPIC_OR_PARTITION)]


def test_each_start_is_a_new_epoch(tmp_path):
    config = {"log.dirs": str(tmp_path), "node.id": 7}
    with Broker(config) as b:
        first = describe(b.bootstrap_servers)
        new_topic(b)
        grown = describe(b.bootstrap_servers)
    with Broker(config) as b:
        again = describe(b.bootstrap_servers)
    assert first["leader_id"] == again["leader_id"] == 7
    assert first["leader_epoch"] == 1 and again["leader_epoch"] == 2
    assert again["high_watermark"] == grown["high_watermark"] > first["high_watermark"]


# -- authorization --------------------------------------------------------------------------------

ADMIN, ALICE, BOB = ("admin", "admin-secret"), ("alice", "alice-secret"), ("bob", "bob-secret")


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.users": ",".join(f"{u}:{p}" for u, p in (ADMIN, ALICE, BOB)),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "log.dirs": str(tmp_path_factory.mktemp("quorum-authz")),
    }
    with Broker(config) as b:
        yield b


def sasl_config(user) -> dict:
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": user[0], "sasl_plain_password": user[1]}


def test_describe_on_the_cluster_is_needed(secured):
    assert describe(secured.bootstrap_servers, **sasl_config(ADMIN))["leader_id"] \
        == secured.broker_id
    with pytest.raises(ClusterAuthorizationFailedError):
        describe(secured.bootstrap_servers, **sasl_config(BOB))
    answer = on_the_wire(secured.bootstrap_servers, 2,
                         sasl=functools.partial(PlainMechanism, *BOB))
    assert answer["error_code"] == Errors.CLUSTER_AUTHORIZATION_FAILED and answer["topics"] == []
    # DESCRIBE on the cluster, and nothing else, lets alice ask.
    assert secured.authorizer.create_acls([AclBinding(
        ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),
        AccessControlEntry("User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
    )]) == [None]
    assert describe(secured.bootstrap_servers, **sasl_config(ALICE))["leader_id"] \
        == secured.broker_id


# -- the controller's bookkeeping --------------------------------------------------------------

def test_the_controller_follows_each_brokers_fetches(tmp_path):
    config = BrokerConfig({"log.dirs": str(tmp_path), "node.id": 0})
    controller = QuorumController(config)
    for b in (1, 2):
        controller.register_broker(b, "127.0.0.1", 9000 + b, f"incarnation-{b}")
    end, [voter], observers = controller.describe_quorum()
    assert end == controller.metadata_log.end_offset == voter["log_end_offset"] > 0
    assert voter["replica_id"] == 0 and controller.leader_epoch == 1
    # Registered, not yet fetching: known to be there, offsets unknown.
    assert [(o["replica_id"], o["log_end_offset"], o["last_caught_up_timestamp"])
            for o in observers] == [(1, -1, -1), (2, -1, -1)]
    controller.fetch_records(0, 1000, replica_id=1)  # behind: not caught up yet
    [one, _] = controller.describe_quorum()[2]
    assert one["log_end_offset"] == 0 and one["last_fetch_timestamp"] > 0
    assert one["last_caught_up_timestamp"] == -1
    controller.fetch_records(end, 1000, replica_id=1)  # at the end: caught up now
    [one, two] = controller.describe_quorum()[2]
    assert one["log_end_offset"] == end
    assert one["last_caught_up_timestamp"] == one["last_fetch_timestamp"] > 0
    assert two["log_end_offset"] == -1
    controller.create_topic("t", 1, 2, {})  # the end moves on; broker 1's next fetch says so
    end2 = controller.describe_quorum()[0]
    assert end2 > end
    controller.fetch_records(end2, 1000, replica_id=1)
    assert controller.describe_quorum()[2][0]["log_end_offset"] == end2
    controller.metadata_log.close()
    # A restart is a new election: the epoch goes on from the quorum-state file.
    assert QuorumController(config).leader_epoch == 2


# -- a cluster: the active controller leads, the brokers observe ----------------------------------

def _leaders_end(answer: dict) -> int:
    return next(v["log_end_offset"] for v in answer["current_voters"]
                if v["replica_id"] == answer["leader_id"])


@pytest.mark.cluster
def test_the_active_controller_leads_and_the_brokers_observe(cluster):
    cluster.wait_for_brokers()
    active = cluster.active_controller()
    before = describe(cluster.bootstrap_servers)
    assert before["leader_id"] == active and before["leader_epoch"] >= 1
    assert sorted(v["replica_id"] for v in before["current_voters"]) == sorted(
        cluster.controllers)
    # Idle, the leader's log is all committed: its end is the high watermark (a record
    # appended just now is committed once a majority has fetched it).
    wait_until(lambda: (lambda a: _leaders_end(a) == a["high_watermark"])(
        describe(cluster.bootstrap_servers)), "the leader's end offset is the high watermark")
    assert {o["replica_id"] for o in before["observers"]} == set(cluster.brokers)
    assert sorted(n["node_id"] for n in before["nodes"]) == sorted(cluster.controllers)
    topic = new_topic(cluster, partitions=2, replication_factor=3)
    cluster.wait_for_topic(topic)
    after = describe(cluster.bootstrap_servers)
    assert after["high_watermark"] >= before["high_watermark"] + 3
    # Every broker fetches the records on: each is seen at the high watermark after the topic.
    wait_until(lambda: all(o["log_end_offset"] >= after["high_watermark"]
                           for o in describe(cluster.bootstrap_servers)["observers"]),
               "every broker fetched the metadata log up to the topic's records")


@pytest.mark.cluster
def test_every_broker_forwards_every_version(cluster):
    cluster.wait_for_brokers()
    active = cluster.active_controller()
    for broker in cluster.brokers:
        for version in (0, 1, 2):
            answer = on_the_wire(cluster.broker_address(broker), version)
            assert answer["error_code"] == Errors.NONE
            [part] = answer["topics"][0]["partitions"]
            assert part["error_code"] == Errors.NONE
            assert part["leader_id"] == active
    # A name nobody uses: the controller answers it per partition, as Kafka's does.
    wrong = {"topics": [{"topic_name": f"t-{uuid.uuid4().hex[:6]}",
                         "partitions": [{"partition_index": 0}]}]}
    answer = on_the_wire(cluster.broker_address(1), 1, wrong)
    assert answer["topics"][0]["partitions"][0]["error_code"] == Errors.UNKNOWN_TOPIC_OR_PARTITION
