"""The forged-follower attack, on a cluster of three brokers that authenticate each other.

A follower's Fetch carries its broker id, and the leader moves the high watermark by the fetch
offsets followers report.  A client that claims a follower's id while the real followers are
frozen could make the leader acknowledge ``acks=all`` writes that only the leader has, and lose
them when it dies.  Kafka's answer, ours too: a fetch with a replica id needs CLUSTER_ACTION on
the cluster, which only the brokers' own principal has (a super user here).  The control: the
same forged fetch sent with the brokers' credentials does move the high watermark, so the
refusal is what keeps it still.  See docs/broker/security.rst.
"""

from __future__ import annotations

import functools
import time
import uuid

import pytest
from waits import wait_until

from kafkacore import KafkaProducer
from kafkacore.broker.security.authorizer.acl import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.errors import (
    ClusterAuthorizationFailedError,
    CoordinatorLoadInProgressError,
    TopicAuthorizationFailedError,
)
from kafkacore.network.sasl import PlainMechanism
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing.cluster import Cluster

BROKER, ALICE, MALLORY = (("broker", "broker-secret"), ("alice", "alice-secret"),
                          ("mallory", "mallory-secret"))
NONE = 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    config = {
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.users": ",".join(f"{u}:{p}" for u, p in (BROKER, ALICE, MALLORY)),
        # The brokers' own credentials on the inter-broker listener (Kafka's setting).
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        # ... and to the controller, which answers brokers only (CLUSTER_ACTION).
        "controller.listener.names": "SASL_PLAINTEXT",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{BROKER[0]}" password="{BROKER[1]}";',
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:broker;User:alice",
        "replica.lag.time.max.ms": "600000",  # frozen followers stay in the ISR meanwhile
    }
    with Cluster(3, log_dir=tmp_path_factory.mktemp("authz-cluster"), config=config,
                 security_protocol="SASL_PLAINTEXT", sasl_plain=ALICE) as c:
        yield c


def to_the_active_controller(cluster: Cluster, user) -> InterBrokerClient:
    """A client of the quorum's active controller (the others answer NOT_CONTROLLER)."""
    host, port = cluster.controller_address().split(":")
    return InterBrokerClient(host, int(port), f"test-{user[0]}", 30.0,
                             sasl=functools.partial(PlainMechanism, *user))


def client(cluster: Cluster, broker: int, user) -> InterBrokerClient:
    host, port = cluster.broker_address(broker).split(":")
    return InterBrokerClient(host, int(port), f"test-{user[0]}", 30.0,
                             sasl=functools.partial(PlainMechanism, *user))


def high_watermark(cluster: Cluster, leader: int, topic: str) -> int:
    c = client(cluster, leader, ALICE)
    try:
        response = c.send(ApiKey.LIST_OFFSETS, 7, {
            "replica_id": -1, "isolation_level": 0, "topics": [
                {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                                "timestamp": -1}]}]})
    finally:
        c.close()
    part = response["topics"][0]["partitions"][0]
    assert part["error_code"] == NONE
    return int(part["offset"])


def forged_fetch(cluster: Cluster, leader: int, follower: int, topic: str, offset: int,
                 user) -> int:
    """A Fetch from ``user`` claiming to be broker ``follower`` at ``offset``; its error."""
    topic_id = next(t["topic_id"] for t in cluster.metadata([topic])["topics"])
    body = codec.REQUESTS[ApiKey.FETCH].body.defaults(16)
    body.update(replica_state={"replica_id": follower, "replica_epoch": -1}, max_wait_ms=0,
                min_bytes=1, max_bytes=1 << 20, session_epoch=-1, topics=[
                    {"topic_id": topic_id, "partitions": [
                        {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                         "last_fetched_epoch": -1, "log_start_offset": -1,
                         "partition_max_bytes": 1 << 20}]}])
    c = client(cluster, leader, user)
    try:
        response = c.send(ApiKey.FETCH, 16, body)
    finally:
        c.close()
    return int(response["responses"][0]["partitions"][0]["error_code"])


@pytest.mark.cluster
def test_a_client_posing_as_a_follower_cannot_move_the_high_watermark(cluster):
    topic = f"forged-{uuid.uuid4().hex[:8]}"
    c = client(cluster, 1, ALICE)
    try:
        body = codec.REQUESTS[ApiKey.CREATE_TOPICS].body.defaults(7)
        body["topics"] = [{"name": topic, "num_partitions": 1, "replication_factor": 3,
                           "assignments": [], "configs": []}]
        assert c.send(ApiKey.CREATE_TOPICS, 7, body)["topics"][0]["error_code"] == NONE
    finally:
        c.close()
    cluster.wait_for_isr(topic, 0, [1, 2, 3])
    leader = cluster.leader_of(topic)
    followers = [b for b in (1, 2, 3) if b != leader]
    # acks=1: answered once the leader has the record; with the followers frozen the high
    # watermark stays below it, and an acks=all write would wait for it to move.
    producer = KafkaProducer({
        "bootstrap.servers": cluster.broker_address(leader), "acks": "1",
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.username": ALICE[0], "sasl.password": ALICE[1]})
    for b in followers:
        cluster.pause(b)
    try:
        assert producer.send(topic, value=b"one copy only", partition=0).result(30).offset == 0
        assert high_watermark(cluster, leader, topic) == 0
        # mallory authenticates but is no broker: refused, and the high watermark stays.
        for follower in followers:
            assert forged_fetch(cluster, leader, follower, topic, 1, MALLORY) == \
                TopicAuthorizationFailedError.errno
        assert high_watermark(cluster, leader, topic) == 0
        # The control: with the brokers' own credentials the same claim is believed, and
        # the leader would count a record only it has as on every replica.
        for follower in followers:
            assert forged_fetch(cluster, leader, follower, topic, 1, BROKER) == NONE
        assert high_watermark(cluster, leader, topic) == 1
    finally:
        for b in followers:
            cluster.resume(b)
        producer.close(timeout=30)
    # The real followers, with the brokers' credentials on the SASL listener, fetch again:
    # an acks=all write is acknowledged once all three have it.
    with KafkaProducer({
            "bootstrap.servers": cluster.broker_address(leader), "acks": "all",
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": ALICE[0], "sasl.password": ALICE[1]}) as producer:
        assert producer.send(topic, value=b"three copies", partition=0).result(60).offset == 1
    cluster.wait_for_isr(topic, 0, [1, 2, 3])


def kafka_python_admin(cluster: Cluster, broker: int, user):
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=cluster.broker_address(broker),
                            security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                            sasl_plain_username=user[0], sasl_plain_password=user[1],
                            request_timeout_ms=10000)


@pytest.mark.cluster
def test_acls_are_the_controllers_and_reach_every_broker(cluster):
    """CreateAcls on one broker goes to the controller; every broker pulls the new list with
    its next image, and answers DescribeAcls and authorizes with it."""
    from kafka.admin import (
        ACL,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        NewTopic,
        ResourcePattern,
    )
    from kafka.admin import ResourceType as KafkaPythonResourceType

    topic = f"shared-{uuid.uuid4().hex[:8]}"
    # The test before froze two brokers: wait until all three are registered and unfenced
    # again, or kafka-python's admin client may pick as "controller" a broker that a later
    # Metadata answer no longer lists (UnknownBrokerIdError).
    cluster.wait_for_brokers()
    grant = ACL("User:mallory", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
                ResourcePattern(KafkaPythonResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))
    admin = kafka_python_admin(cluster, 1, ALICE)
    try:
        admin.create_topics([NewTopic(topic, 1, 3)])
        assert admin.create_acls([grant])["failed"] == []
    finally:
        admin.close()
    # Every broker knows the topic (each learns of it at its next pull of the image).
    cluster.wait_for_leader_known(topic, 0, cluster.leader_of(topic))
    # Each broker asked directly (an admin client sends to whichever broker it likes, so its
    # answers cannot say which broker has pulled the ACL): first it lists the ACL, then it
    # shows mallory the topic.
    for broker in (1, 2, 3):
        alice = client(cluster, broker, ALICE)
        try:
            deadline = time.monotonic() + 30
            while acl_principals(alice, topic) != ["User:mallory"]:
                assert time.monotonic() < deadline, f"broker {broker} never got the ACL"
                time.sleep(0.05)
        finally:
            alice.close()
        mallory = client(cluster, broker, MALLORY)
        try:
            body = codec.REQUESTS[ApiKey.METADATA].body.defaults(12)
            body.update(topics=[{"topic_id": uuid.UUID(int=0), "name": topic}],
                        allow_auto_topic_creation=False)
            answer = mallory.send(ApiKey.METADATA, 12, body)
        finally:
            mallory.close()
        assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [(topic, NONE)], \
            f"broker {broker} does not show mallory {topic}"


def acl_principals(c: InterBrokerClient, topic: str) -> list[str]:
    """The principals of the ACLs on ``topic`` that the broker ``c`` talks to knows."""
    answer = c.send(ApiKey.DESCRIBE_ACLS, 3, {
        "resource_type_filter": ResourceType.TOPIC, "resource_name_filter": topic,
        "pattern_type_filter": PatternType.LITERAL, "principal_filter": None,
        "host_filter": None, "operation": AclOperation.ANY,
        "permission_type": AclPermissionType.ANY})
    assert answer["error_code"] == NONE
    return [acl["principal"] for resource in answer["resources"] for acl in resource["acls"]]


@pytest.mark.cluster
def test_only_brokers_may_talk_to_the_controller(cluster):
    """The controller decides leaders and ISRs: a client that could send it AlterPartition
    would shrink an ISR to the leader alone (acks=all with one copy again), one that could
    register a broker's id would fence it.  Both need CLUSTER_ACTION, which only the brokers'
    principal has."""
    topic = f"isr-{uuid.uuid4().hex[:8]}"
    c = client(cluster, 1, ALICE)
    try:
        body = codec.REQUESTS[ApiKey.CREATE_TOPICS].body.defaults(7)
        body["topics"] = [{"name": topic, "num_partitions": 1, "replication_factor": 3,
                           "assignments": [], "configs": []}]
        assert c.send(ApiKey.CREATE_TOPICS, 7, body)["topics"][0]["error_code"] == NONE
    finally:
        c.close()
    cluster.wait_for_isr(topic, 0, [1, 2, 3])
    state = cluster.partition_state(topic, 0)
    assert state is not None
    topic_id = next(t["topic_id"] for t in cluster.metadata([topic])["topics"])
    mallory = to_the_active_controller(cluster, MALLORY)
    try:
        shrink = mallory.send(ApiKey.ALTER_PARTITION, 3, {
            "broker_id": state["leader_id"], "broker_epoch": -1, "topics": [
                {"topic_id": topic_id, "partitions": [{
                    "partition_index": 0, "leader_epoch": state["leader_epoch"],
                    "new_isr_with_epochs": [{"broker_id": state["leader_id"],
                                             "broker_epoch": -1}],
                    "leader_recovery_state": 0, "partition_epoch": -1}]}]})
        assert shrink["error_code"] == ClusterAuthorizationFailedError.errno
        register = mallory.send(ApiKey.BROKER_REGISTRATION, 0, {
            "broker_id": 2, "cluster_id": "kafkacore-cluster", "incarnation_id": uuid.uuid4(),
            "listeners": [{"name": "SASL_PLAINTEXT", "host": "127.0.0.1", "port": 1,
                           "security_protocol": 2}], "features": [], "rack": None})
        assert register["error_code"] == ClusterAuthorizationFailedError.errno
    finally:
        mallory.close()
    assert sorted(cluster.partition_state(topic, 0)["isr_nodes"]) == [1, 2, 3]


@pytest.mark.cluster
def test_only_brokers_get_producer_ids_from_the_controller(cluster):
    """AllocateProducerIds hands out ids that no other producer may be given: a client asking
    in a broker's name is refused for want of CLUSTER_ACTION, before its epoch is looked at,
    while the brokers (SASL to the controller) get their blocks: an idempotent producer of
    alice's is given an id by whichever broker it asks."""
    mallory = to_the_active_controller(cluster, MALLORY)
    try:
        answer = mallory.send(ApiKey.ALLOCATE_PRODUCER_IDS, 0, {"broker_id": 1,
                                                                "broker_epoch": -1})
        assert answer["error_code"] == ClusterAuthorizationFailedError.errno
    finally:
        mallory.close()
    c = client(cluster, 1, ALICE)

    def init_producer_id():
        answer = c.send(ApiKey.INIT_PRODUCER_ID, 4, {
            "transactional_id": None, "transaction_timeout_ms": -1, "producer_id": -1,
            "producer_epoch": -1})
        # Retriable, as for any client: the broker's first block may be on its way.
        return None if answer["error_code"] == CoordinatorLoadInProgressError.errno else answer

    try:
        answer = wait_until(init_producer_id, "an answer other than COORDINATOR_LOAD_IN_PROGRESS")
    finally:
        c.close()
    assert answer["error_code"] == NONE and 0 <= answer["producer_id"] < 1 << 40
