"""The ACLs on a quorum of three controllers: they are records of the metadata log, so the
controller elected after the active one is SIGKILLed has them, and every broker goes on
applying them.  Judged by kafka-python's admin client (CreateAcls, DescribeAcls and DeleteAcls
through the brokers, which forward the changes to the active controller); each broker is asked
directly whether it lets mallory see the topic.  See docs/broker/security.rst and
docs/broker/quorum.rst.
"""

from __future__ import annotations

import functools
import uuid

import pytest
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KafkaPythonResourceType
from waits import wait_until

from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.errors import Errors
from kafkacore.network.sasl import PlainMechanism
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing.cluster import Cluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

BROKER, ALICE, MALLORY = (("broker", "broker-secret"), ("alice", "alice-secret"),
                          ("mallory", "mallory-secret"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    config = {
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.users": ",".join(f"{u}:{p}" for u, p in (BROKER, ALICE, MALLORY)),
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        # Brokers to the controllers, and the voters to each other, as User:broker.
        "controller.listener.names": "SASL_PLAINTEXT",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{BROKER[0]}" password="{BROKER[1]}";',
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:broker;User:alice",
        # A topic no ACL names is anyone's: the DENY is what hides it from mallory.
        "allow.everyone.if.no.acl.found": "true",
    }
    with Cluster(3, controllers=3, log_dir=tmp_path_factory.mktemp("quorum-acls"),
                 config=config, security_protocol="SASL_PLAINTEXT", sasl_plain=ALICE) as c:
        yield c


def admin(cluster: Cluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                            security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                            sasl_plain_username=ALICE[0], sasl_plain_password=ALICE[1],
                            request_timeout_ms=30000)


def connect(port: int, user: tuple[str, str]) -> InterBrokerClient:
    return InterBrokerClient("127.0.0.1", port, f"test-{user[0]}", 30.0,
                             sasl=functools.partial(PlainMechanism, *user))


def mallory_sees(cluster: Cluster, broker: int, topic: str) -> int:
    """The error ``broker`` answers mallory's Metadata request for ``topic`` with: NONE if it
    shows it to her (DESCRIBE on it), TOPIC_AUTHORIZATION_FAILED if it hides it."""
    c = connect(cluster.brokers[broker].port, MALLORY)
    try:
        body = codec.REQUESTS[ApiKey.METADATA].body.defaults(12)
        body.update(topics=[{"topic_id": uuid.UUID(int=0), "name": topic}],
                    allow_auto_topic_creation=False)
        [answer] = c.send(ApiKey.METADATA, 12, body)["topics"]
    finally:
        c.close()
    return int(answer["error_code"])


def wait_for_every_broker(cluster: Cluster, topic: str, sees: bool, what: str) -> None:
    wanted = Errors.NONE if sees else Errors.TOPIC_AUTHORIZATION_FAILED
    for broker in cluster.brokers:
        wait_until(functools.partial(lambda b: mallory_sees(cluster, b, topic) == wanted, broker),
                   f"broker {broker} {what}")


def controller_acl_principals(cluster: Cluster, controller: int, topic: str) -> list[str]:
    """The principals of the ACLs on ``topic`` that ``controller`` holds (DescribeAcls asked
    of the controller itself: the brokers' answers come from their own authorizers)."""
    c = connect(cluster.controllers[controller].port, ALICE)
    try:
        answer = c.send(ApiKey.DESCRIBE_ACLS, 3, {
            "resource_type_filter": 2, "resource_name_filter": topic,  # TOPIC
            "pattern_type_filter": 3, "principal_filter": None, "host_filter": None,  # LITERAL
            "operation": 1, "permission_type": 1})  # ANY, ANY
    finally:
        c.close()
    assert answer["error_code"] == Errors.NONE
    return [a["principal"] for r in answer["resources"] for a in r["acls"]]


def test_an_acl_outlives_the_active_controller_and_goes_when_deleted(cluster):
    topic = f"acl-{uuid.uuid4().hex[:8]}"
    deny = ACL("User:mallory", "*", ACLOperation.ALL, ACLPermissionType.DENY,
               ResourcePattern(KafkaPythonResourceType.TOPIC, topic,
                               ACLResourcePatternType.LITERAL))
    a = admin(cluster)
    try:
        a.create_topics([NewTopic(topic, 1, 3)])
        cluster.wait_for_topic(topic)
        # The control: no ACL names the topic, so every broker shows it to mallory.
        wait_for_every_broker(cluster, topic, True, "shows mallory the new topic")
        assert a.create_acls([deny])["failed"] == []
    finally:
        a.close()
    wait_for_every_broker(cluster, topic, False, "hides the topic from mallory (the DENY)")

    first = cluster.active_controller()
    cluster.kill(first)
    second = cluster.active_controller()
    assert second != first
    # The new active controller has the ACL: it replayed the record as a follower.
    assert controller_acl_principals(cluster, second, topic) == ["User:mallory"]
    # A broker started now has nothing but what it fetches from the new controller.
    cluster.kill(1)
    cluster.restart(1)
    wait_for_every_broker(cluster, topic, False, "still hides the topic from mallory")

    on_topic = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                         ResourcePatternFilter(KafkaPythonResourceType.TOPIC, topic,
                                               ACLResourcePatternType.LITERAL))
    a = admin(cluster)
    try:
        listed, error = a.describe_acls(on_topic)
        assert error.errno == Errors.NONE
        assert [(acl.principal, acl.operation, acl.permission_type) for acl in listed] == \
            [("User:mallory", ACLOperation.ALL, ACLPermissionType.DENY)]
        # Deleted through the new controller, which finds it (it is what the filter matched).
        [(_, matched, error)] = a.delete_acls([on_topic])
        assert error.errno == Errors.NONE
        assert [(acl.principal, acl.permission_type) for acl in matched] == \
            [("User:mallory", ACLPermissionType.DENY)]
    finally:
        a.close()
    wait_for_every_broker(cluster, topic, True, "shows mallory the topic again")
    a = admin(cluster)
    try:
        assert a.describe_acls(on_topic)[0] == []
    finally:
        a.close()
    assert controller_acl_principals(cluster, cluster.active_controller(), topic) == []
