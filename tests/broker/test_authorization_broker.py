"""Authorization on our broker, judged by clients we did not write: confluent-kafka's and
kafka-python's admin clients create, describe and delete ACLs; a producer without WRITE is
refused with TOPIC_AUTHORIZATION_FAILED; a user cannot read or delete another user's topic.

Users authenticate with SASL/PLAIN; ``admin`` is a super user.  confluent-kafka runs in a child
process (librdkafka's objects have crashed test processes during garbage collection, see
tests/readback.py).  See docs/broker/security.rst.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import textwrap
import uuid

import pytest
from readback import produce_confluent
from support.children import child_env

from kafkacore.broker.config.logging_controller import RESOURCE_TYPE_BROKER_LOGGER
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
from kafkacore.errors import Errors, SecurityDisabledError
from kafkacore.network.sasl import PlainMechanism
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

ADMIN, ALICE, BOB = ("admin", "admin-secret"), ("alice", "alice-secret"), ("bob", "bob-secret")
CAROL = ("carol", "carol-secret")  # granted nothing but what one test gives her
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.users": ",".join(f"{u}:{p}" for u, p in (ADMIN, ALICE, BOB, CAROL)),
        "authorizer.class.name": STANDARD,
        "super.users": "User:admin",
        "num.partitions": 1,
        "num.network.threads": 2,
        "log.dirs": str(tmp_path_factory.mktemp("authz")),
    }
    with Broker(config) as b:
        yield b


def grant(broker, *bindings: AclBinding) -> None:
    """ACLs added as the controller would (the broker's own authorizer: it is alone)."""
    assert broker.authorizer.create_acls(list(bindings)) == [None] * len(bindings)


def topic_acl(name: str, user: str, op: AclOperation, pattern=PatternType.LITERAL,
              permission=AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType.TOPIC, name, pattern),
                      AccessControlEntry(f"User:{user}", "*", op, permission))


def sasl(user) -> dict:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user[0], "sasl.password": user[1]}


def kafka_python_admin(broker, user):
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers,
                            security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                            sasl_plain_username=user[0], sasl_plain_password=user[1],
                            request_timeout_ms=10000)


# confluent-kafka's AdminClient, as admin then as alice, in a child process; prints JSON.
CONFLUENT_ACLS = textwrap.dedent("""
    import json, sys
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
        AclPermissionType, AdminClient, ResourcePatternType, ResourceType)
    bootstrap, topic, admin_config, alice_config = json.loads(sys.argv[1])
    def client(config):
        return AdminClient({"bootstrap.servers": bootstrap, **config})
    def rows(bindings):
        return sorted([b.restype.name, b.name, b.resource_pattern_type.name, b.principal,
                       b.host, b.operation.name, b.permission_type.name] for b in bindings)
    admin = client(admin_config)
    wanted = [
        AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.WRITE, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, topic[:6], ResourcePatternType.PREFIXED, "User:alice",
                   "*", AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, "g-" + topic, ResourcePatternType.LITERAL, "User:bob",
                   "*", AclOperation.READ, AclPermissionType.DENY),
    ]
    for f in admin.create_acls(wanted, request_timeout=10).values():
        f.result()
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    described = rows(admin.describe_acls(everything, request_timeout=10).result())
    alices = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, "User:alice",
                              None, AclOperation.ANY, AclPermissionType.ANY)
    deleted = [rows(f.result()) for f in
               admin.delete_acls([alices], request_timeout=10).values()]
    left = rows(admin.describe_acls(everything, request_timeout=10).result())
    alice = client(alice_config)
    try:
        for f in alice.create_acls(wanted[:1], request_timeout=10).values():
            f.result()
        refused = None
    except KafkaException as exc:
        refused = exc.args[0].name()
    print(json.dumps({"described": described, "deleted": deleted, "left": left,
                      "alice_refused": refused}))
""")


def test_confluent_kafka_admin_creates_describes_and_deletes_acls(broker, tmp_path):
    topic = f"acl-{uuid.uuid4().hex[:8]}"
    args = json.dumps([broker.bootstrap_servers, topic, sasl(ADMIN), sasl(ALICE)])
    done = subprocess.run([sys.executable, "-c", CONFLUENT_ACLS, args], env=child_env(),
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    write = ["TOPIC", topic, "LITERAL", "User:alice", "*", "WRITE", "ALLOW"]
    read = ["TOPIC", topic[:6], "PREFIXED", "User:alice", "*", "READ", "ALLOW"]
    deny = ["GROUP", "g-" + topic, "LITERAL", "User:bob", "*", "READ", "DENY"]
    assert [r for r in got["described"] if topic[:6] in r[1]] == sorted([write, read, deny])
    assert got["deleted"] == [sorted([write, read])]
    assert deny in got["left"] and write not in got["left"] and read not in got["left"]
    # alice may not change ACLs: ALTER on the cluster is the admin's.
    assert got["alice_refused"] == "CLUSTER_AUTHORIZATION_FAILED"


def test_kafka_python_admin_creates_describes_and_deletes_acls(broker):
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KpResourceType
    from kafka.errors import ClusterAuthorizationFailedError

    group = f"group-{uuid.uuid4().hex[:8]}"
    pattern = ResourcePattern(KpResourceType.GROUP, group, ACLResourcePatternType.LITERAL)
    acl = ACL("User:bob", "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)
    admin = kafka_python_admin(broker, ADMIN)
    try:
        result = admin.create_acls([acl])
        assert result["failed"] == [] and len(result["succeeded"]) == 1
        mine = ACLFilter(None, "*", ACLOperation.ANY, ACLPermissionType.ANY,
                         ResourcePatternFilter(KpResourceType.GROUP, group,
                                               ACLResourcePatternType.ANY))
        described, error = admin.describe_acls(mine)
        assert error.errno == 0
        assert [(a.principal, a.operation, a.permission_type, a.resource_pattern.resource_name)
                for a in described] == [("User:bob", ACLOperation.READ,
                                         ACLPermissionType.ALLOW, group)]
        [(_, matched, error)] = admin.delete_acls([mine])
        assert error.errno == 0 and [a.principal for a in matched] == ["User:bob"]
        assert admin.describe_acls(mine)[0] == []
    finally:
        admin.close()
    bob = kafka_python_admin(broker, BOB)
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            bob.describe_acls(mine)
    finally:
        bob.close()


def test_a_producer_without_write_is_refused_until_granted(broker):
    topic = f"owned-{uuid.uuid4().hex[:8]}"
    grant(broker, topic_acl(topic, "alice", AclOperation.ALL))
    delivered, problems = produce_confluent(broker.bootstrap_servers, topic, [b"a"] * 3,
                                            sasl(ALICE), timeout_s=20)
    assert problems == [] and None not in delivered
    # bob may do nothing on alice's topic: librdkafka reports the broker's refusal by name.
    delivered, problems = produce_confluent(broker.bootstrap_servers, topic, [b"b"] * 3,
                                            sasl(BOB), timeout_s=10)
    assert delivered == [None] * 3
    assert problems and all("TOPIC_AUTHORIZATION_FAILED" in p for p in problems), problems
    grant(broker, topic_acl(topic, "bob", AclOperation.WRITE))
    delivered, problems = produce_confluent(broker.bootstrap_servers, topic, [b"b"] * 3,
                                            sasl(BOB), timeout_s=20)
    assert problems == [] and None not in delivered


def fetch_error(broker, topic: str, user) -> int:
    """The error of a consumer's Fetch of ``topic``-0 from offset 0, sent as ``user``."""
    host, port = broker.bootstrap_servers.split(":")
    client = InterBrokerClient(host, int(port), "test", 10.0,
                               sasl=functools.partial(PlainMechanism, *user))
    body = codec.REQUESTS[ApiKey.FETCH].body.defaults(16)
    body.update(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, session_epoch=-1, topics=[
        {"topic_id": broker.metadata_cache.get(topic).topic_id, "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
             "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}])
    try:
        return int(client.send(ApiKey.FETCH, 16, body)["responses"][0]["partitions"][0][
            "error_code"])
    finally:
        client.close()


def call_as(broker, user, api_key: int, version: int, body: dict) -> dict:
    """One request sent as ``user``; its answer."""
    host, port = broker.bootstrap_servers.split(":")
    client = InterBrokerClient(host, int(port), "test", 10.0,
                               sasl=functools.partial(PlainMechanism, *user))
    try:
        return client.send(api_key, version, body)
    finally:
        client.close()


def test_a_user_cannot_see_read_or_delete_another_users_topic(broker):
    from kafka.errors import TopicAuthorizationFailedError

    topic = f"private-{uuid.uuid4().hex[:8]}"
    grant(broker, topic_acl(topic, "alice", AclOperation.ALL))
    delivered, problems = produce_confluent(broker.bootstrap_servers, topic, [b"x"] * 2,
                                            sasl(ALICE), timeout_s=20)
    assert problems == [] and None not in delivered
    bob = kafka_python_admin(broker, BOB)
    try:
        assert topic not in bob.list_topics()  # Metadata leaves out what bob may not describe
        with pytest.raises(TopicAuthorizationFailedError):
            bob.delete_topics([topic], timeout_ms=10000)
    finally:
        bob.close()
    assert fetch_error(broker, topic, BOB) == TopicAuthorizationFailedError.errno
    assert fetch_error(broker, topic, ALICE) == 0
    alice = kafka_python_admin(broker, ALICE)
    try:
        assert topic in alice.list_topics()
    finally:
        alice.close()


def test_without_an_authorizer_the_acl_apis_answer_security_disabled():
    with Broker({"num.network.threads": 1}) as b:
        host, port = b.bootstrap_servers.split(":")
        client = InterBrokerClient(host, int(port), "test", 10.0)
        try:
            response = client.send(ApiKey.DESCRIBE_ACLS, 2, {
                "resource_type_filter": 1, "resource_name_filter": None,
                "pattern_type_filter": 1, "principal_filter": None, "host_filter": None,
                "operation": 1, "permission_type": 1})
        finally:
            client.close()
    assert response["error_code"] == SecurityDisabledError.errno


def test_our_producer_refused_a_producer_id_fails_at_once_with_the_error(broker):
    """InitProducerId refused for want of ACLs is fatal, as in Java's producer: every record
    fails with ClusterAuthorizationFailedError instead of waiting out delivery.timeout.ms."""
    from kafkacore import KafkaProducer
    from kafkacore.errors import ClusterAuthorizationFailedError

    topic = f"readable-{uuid.uuid4().hex[:8]}"
    broker.apis.create_topic(topic, 1, {})
    grant(broker, topic_acl(topic, "carol", AclOperation.READ))  # may see it, write nowhere
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, **sasl(CAROL),
                        "delivery.timeout.ms": 600000}) as producer:
        future = producer.send(topic, value=b"nope")
        with pytest.raises(ClusterAuthorizationFailedError):
            future.result(timeout=30)


def test_a_client_certificate_is_its_principal(tmp_path):
    """Mutual TLS without SASL: the principal is the certificate's subject in RFC 2253 form
    (Kafka's default principal builder), and ACLs name it like any user."""
    from certs import make_pki

    pki = make_pki(tmp_path, client_cn="client-1")
    config = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.cert),
              "ssl.key.location": str(pki.key), "ssl.truststore.location": str(pki.ca),
              "ssl.client.auth": "required", "authorizer.class.name": STANDARD,
              "num.partitions": 1, "log.dirs": str(tmp_path / "logs")}
    tls = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca),
           "ssl.certificate.location": str(pki.client_cert),
           "ssl.key.location": str(pki.client_key)}
    with Broker(config) as b:
        b.apis.create_topic("granted", 1, {})
        b.apis.create_topic("other", 1, {})
        grant(b, topic_acl("granted", "CN=client-1", AclOperation.WRITE),
              topic_acl("other", "CN=client-1", AclOperation.DESCRIBE))
        delivered, problems = produce_confluent(b.bootstrap_servers, "granted", [b"x"], tls,
                                                timeout_s=20)
        assert problems == [] and None not in delivered
        delivered, problems = produce_confluent(b.bootstrap_servers, "other", [b"x"], tls,
                                                timeout_s=10)
        assert delivered == [None]
        assert problems and all("TOPIC_AUTHORIZATION_FAILED" in p for p in problems), problems


# confluent-kafka's describe_topics and describe_cluster with their authorized operations, for
# each user given; an empty set comes back as None.
CONFLUENT_OPERATIONS = textwrap.dedent("""
    import json, sys
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient
    bootstrap, topic, configs = json.loads(sys.argv[1])
    def names(operations):
        return sorted(op.name for op in operations or [])
    out = []
    for config in configs:
        admin = AdminClient({"bootstrap.servers": bootstrap, **config})
        [described] = admin.describe_topics(TopicCollection([topic]),
                                            include_authorized_operations=True).values()
        cluster = admin.describe_cluster(include_authorized_operations=True).result()
        out.append({"topic": names(described.result().authorized_operations),
                    "cluster": names(cluster.authorized_operations)})
    print(json.dumps(out))
""")


def test_authorized_operations_are_reported_to_confluent_kafkas_admin(broker, tmp_path):
    """KIP-430: Metadata tells a client what it may do, when asked."""
    topic = f"ops-{uuid.uuid4().hex[:8]}"
    broker.apis.create_topic(topic, 1, {})
    grant(broker, topic_acl(topic, "carol", AclOperation.READ),
          topic_acl(topic, "carol", AclOperation.ALTER_CONFIGS))
    args = json.dumps([broker.bootstrap_servers, topic, [sasl(CAROL), sasl(ADMIN)]])
    done = subprocess.run([sys.executable, "-c", CONFLUENT_OPERATIONS, args], env=child_env(),
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    carol, admin = json.loads(done.stdout)
    # READ and ALTER_CONFIGS, and what they imply: DESCRIBE, DESCRIBE_CONFIGS.
    assert carol == {"topic": ["ALTER_CONFIGS", "DESCRIBE", "DESCRIBE_CONFIGS", "READ"],
                     "cluster": []}
    assert admin["topic"] == sorted(["READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER",
                                     "DESCRIBE_CONFIGS", "ALTER_CONFIGS"])
    assert admin["cluster"] == sorted(["CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS",
                                       "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE"])


def test_the_admin_calls_ask_kafkas_rights(broker):
    """AlterConfigs needs ALTER_CONFIGS on the topic (or the cluster for a broker), DeleteGroups
    DELETE on the group, DescribeLogDirs DESCRIBE and ElectLeaders ALTER on the cluster,
    DescribeTopicPartitions DESCRIBE on the topic; each refusal is answered, not a close."""
    from kafka.admin import ConfigResource, ConfigResourceType

    topic = f"owned-{uuid.uuid4().hex[:8]}"
    grant(broker, topic_acl(topic, "alice", AclOperation.ALL))
    delivered, problems = produce_confluent(broker.bootstrap_servers, topic, [b"x"],
                                            sasl(ALICE), timeout_s=20)
    assert problems == [] and None not in delivered
    bob = kafka_python_admin(broker, BOB)
    try:
        def alter(kind, name):
            result = bob.alter_configs([ConfigResource(kind, name,
                                                       configs={"retention.ms": "1000"})],
                                       raise_on_unknown=False)
            [(_, outcome)] = [item for by_name in result.values() for item in by_name.items()]
            return str(outcome)

        assert "TopicAuthorizationFailedError" in alter(ConfigResourceType.TOPIC, topic)
        [described] = bob.describe_topic_partitions([topic])["topics"]
        assert described["error_code"] == Errors.TOPIC_AUTHORIZATION_FAILED
        grant(broker, topic_acl(topic, "bob", AclOperation.ALTER_CONFIGS))
        assert "Error" not in alter(ConfigResourceType.TOPIC, topic)
    finally:
        bob.close()
    for api_key, version, body in [
            (ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None}),
            (ApiKey.ELECT_LEADERS, 2, {"election_type": 0, "timeout_ms": 1000,
                                       "topic_partitions": None}),
            (ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False, "resources": [
                {"resource_type": 4, "resource_name": "1", "configs": [
                    {"name": "log.retention.ms", "config_operation": 0, "value": "5"}]}]}),
            # the broker's loggers: ALTER_CONFIGS and DESCRIBE_CONFIGS on the cluster too
            (ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False, "resources": [
                {"resource_type": RESOURCE_TYPE_BROKER_LOGGER, "resource_name": "1",
                 "configs": [{"name": "root", "config_operation": 0, "value": "DEBUG"}]}]}),
            (ApiKey.DESCRIBE_CONFIGS, 4, {"include_synoyms": False,  # (sic, Kafka's)
                                          "include_documentation": False, "resources": [
                {"resource_type": RESOURCE_TYPE_BROKER_LOGGER, "resource_name": "1",
                 "configuration_keys": None}]})]:
        response = call_as(broker, BOB, api_key, version, body)
        errors = [response.get("error_code")] + [
            r["error_code"] for r in response.get("responses", response.get("results", []))]
        assert Errors.CLUSTER_AUTHORIZATION_FAILED in errors, (api_key, response)
    # (kafka-python's delete_groups stops at FindCoordinator, which bob may not ask either.)
    response = call_as(broker, BOB, ApiKey.DELETE_GROUPS, 2, {"groups_names": [f"g-{topic}"]})
    assert response["results"] == [{"group_id": f"g-{topic}",
                                    "error_code": Errors.GROUP_AUTHORIZATION_FAILED}]


def test_consumer_group_heartbeat_needs_read_on_the_group_and_describe_on_its_topics(broker):
    """KIP-848's ConsumerGroupHeartbeat: READ on the group, DESCRIBE on each subscribed topic;
    ConsumerGroupDescribe: DESCRIBE on the group (READ implies it)."""
    topic, group = f"kip848-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    call = functools.partial(call_as, broker)
    created = call(ADMIN, ApiKey.CREATE_TOPICS, 7, {"topics": [
        {"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [],
         "configs": []}], "timeout_ms": 5000, "validate_only": False})
    assert created["topics"][0]["error_code"] == Errors.NONE

    def heartbeat():
        body = codec.REQUESTS[ApiKey.CONSUMER_GROUP_HEARTBEAT].body.defaults(1)
        body.update(group_id=group, member_id="m", member_epoch=0, rebalance_timeout_ms=30000,
                    subscribed_topic_names=[topic], topic_partitions=[])
        return call(CAROL, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)["error_code"]

    def describe(user):
        return call(user, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {
            "group_ids": [group], "include_authorized_operations": False})["groups"][0][
            "error_code"]

    group_read = AclBinding(ResourcePattern(ResourceType.GROUP, group, PatternType.LITERAL),
                            AccessControlEntry("User:carol", "*", AclOperation.READ,
                                               AclPermissionType.ALLOW))
    assert heartbeat() == Errors.GROUP_AUTHORIZATION_FAILED
    grant(broker, group_read)
    assert heartbeat() == Errors.TOPIC_AUTHORIZATION_FAILED
    grant(broker, topic_acl(topic, "carol", AclOperation.DESCRIBE))
    assert heartbeat() == Errors.NONE
    assert describe(CAROL) == Errors.NONE
    assert describe(BOB) == Errors.GROUP_AUTHORIZATION_FAILED


def test_client_quotas_need_kafkas_rights_and_follow_the_principal(broker):
    """AlterClientQuotas needs ALTER_CONFIGS on the cluster, DescribeClientQuotas
    DESCRIBE_CONFIGS; a user quota applies to the principal's name."""
    alice_quota = {"entries": [{"entity": [{"entity_type": "user", "entity_name": "alice"}],
                                "ops": [{"key": "producer_byte_rate", "value": 10.0 ** 9,
                                         "remove": False}]}], "validate_only": False}
    refused = call_as(broker, BOB, ApiKey.ALTER_CLIENT_QUOTAS, 1, alice_quota)
    assert [e["error_code"] for e in refused["entries"]] == [Errors.CLUSTER_AUTHORIZATION_FAILED]
    described = call_as(broker, BOB, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1,
                        {"components": [], "strict": False})
    assert described["error_code"] == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert broker.quotas.produce.quota("alice", "any") is None
    altered = call_as(broker, ADMIN, ApiKey.ALTER_CLIENT_QUOTAS, 1, alice_quota)
    assert [e["error_code"] for e in altered["entries"]] == [Errors.NONE]
    try:
        topic = f"quota-{uuid.uuid4().hex[:8]}"
        grant(broker, topic_acl(topic, "alice", AclOperation.ALL))
        delivered, problems = produce_confluent(broker.bootstrap_servers, topic, [b"x"],
                                                sasl(ALICE), timeout_s=20)
        assert problems == [] and None not in delivered
        # alice's produce was measured by her user quota's sensor
        assert broker.quotas.produce.rate("alice", "any") > 0
    finally:
        alice_quota["entries"][0]["ops"][0]["remove"] = True
        call_as(broker, ADMIN, ApiKey.ALTER_CLIENT_QUOTAS, 1, alice_quota)
    assert broker.quotas.produce.quota("alice", "any") is None
