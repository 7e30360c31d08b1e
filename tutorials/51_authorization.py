"""Authorization: who may do what, decided by ACLs on our broker.

We start kafkacore's broker with a SASL listener and the StandardAuthorizer switched on, as a
Kafka 4 broker is (``authorizer.class.name``), with ``admin`` as its only super user.  As admin
we grant ACLs with kafka-python's admin client; then alice and bob, each with their own
password, find out what those ACLs let them do: a prefixed ALLOW, a DENY that wins over it, and
a user who may read a topic but not write to it.  Every claim is checked with ``assert``.

The same broker from a shell::

    python -m kafkacore.broker --listeners SASL_PLAINTEXT://127.0.0.1:9092 \\
        --config sasl.users=admin:admin-secret,alice:alice-secret \\
        --config authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer \\
        --config super.users=User:admin

See docs/broker/security.rst.
"""

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
    ResourceType,
)

from kafkacore import KafkaProducer, errors
from kafkacore.broker.server.broker_server import Broker

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


def admin_client(bootstrap: str, user: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                            sasl_mechanism="PLAIN", sasl_plain_username=user,
                            sasl_plain_password=USERS[user])


def producer(bootstrap: str, user: str) -> KafkaProducer:
    return KafkaProducer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                          "sasl.mechanism": "PLAIN", "sasl.username": user,
                          "sasl.password": USERS[user], "max.block.ms": 10000})


def try_send(bootstrap: str, user: str, topic: str) -> str:
    """Send one record as ``user``; the outcome's name."""
    with producer(bootstrap, user) as p:
        try:
            p.send(topic, value=b"hello").result(timeout=30)
            return "delivered"
        except errors.KafkaError as exc:
            return type(exc).__name__


def main() -> None:
    # --- start broker
    settings = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.users": ",".join(f"{u}:{p}" for u, p in USERS.items()),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        # Kafka's default: a resource no ACL names is closed to all but super users.
        "allow.everyone.if.no.acl.found": "false",
        "auto.create.topics.enable": "false",
    }
    # --- end broker
    with Broker(settings) as broker:
        bootstrap = broker.bootstrap_servers
        print("broker with ACLs on", bootstrap)

        # --- start grant
        admin = admin_client(bootstrap, "admin")
        admin.create_topics([NewTopic(t, 1, 1) for t in
                             ("orders-eu", "orders-secret", "payments")])

        def acl(user: str, operation: ACLOperation, permission: ACLPermissionType, name: str,
                pattern: ACLResourcePatternType = ACLResourcePatternType.LITERAL) -> ACL:
            return ACL(f"User:{user}", "*", operation, permission,
                       ResourcePattern(ResourceType.TOPIC, name, pattern))

        allow, deny = ACLPermissionType.ALLOW, ACLPermissionType.DENY
        created = admin.create_acls([
            # alice may write to every topic whose name starts with "orders-" ...
            acl("alice", ACLOperation.WRITE, allow, "orders-", ACLResourcePatternType.PREFIXED),
            # ... except this one: a DENY wins over any ALLOW.
            acl("alice", ACLOperation.WRITE, deny, "orders-secret"),
            # bob may read orders-eu (READ implies DESCRIBE: he may see it exists).
            acl("bob", ACLOperation.READ, allow, "orders-eu"),
        ])
        assert created["failed"] == [], created
        # --- end grant
        every_topic_acl = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                    ResourcePatternFilter(ResourceType.TOPIC, None,
                                                          ACLResourcePatternType.ANY))
        acls, _ = admin.describe_acls(every_topic_acl)
        for a in sorted(acls, key=lambda a: (a.principal, a.resource_pattern.resource_name)):
            print(f"  {a.principal:11} {a.permission_type.name:5} {a.operation.name:5} on "
                  f"{a.resource_pattern.pattern_type.name} {a.resource_pattern.resource_name}")
        assert len(acls) == 3

        # --- start check
        outcomes = {
            ("alice", "orders-eu"): try_send(bootstrap, "alice", "orders-eu"),
            ("alice", "orders-secret"): try_send(bootstrap, "alice", "orders-secret"),
            ("bob", "orders-eu"): try_send(bootstrap, "bob", "orders-eu"),
            ("bob", "payments"): try_send(bootstrap, "bob", "payments"),
        }
        for (user, topic), outcome in outcomes.items():
            print(f"{user} writes to {topic}: {outcome}")
        assert outcomes == {
            ("alice", "orders-eu"): "delivered",  # the prefixed ALLOW
            ("alice", "orders-secret"): "TopicAuthorizationFailedError",  # the DENY wins
            # READ is not WRITE.  bob may write nowhere, so our producer (idempotent, as
            # Kafka's by default) is refused a producer id first: InitProducerId needs
            # IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
            ("bob", "orders-eu"): "ClusterAuthorizationFailedError",
            ("bob", "payments"): "TopicAuthorizationFailedError",  # no ACL: closed
        }
        # Metadata shows bob only what he may describe.
        bob = admin_client(bootstrap, "bob")
        assert sorted(bob.list_topics()) == ["orders-eu"], bob.list_topics()
        # --- end check

        # Revoking: delete alice's ACLs, and her writes are refused from the next request on.
        alices = ACLFilter("User:alice", None, ACLOperation.ANY, ACLPermissionType.ANY,
                           ResourcePatternFilter(ResourceType.TOPIC, None,
                                                 ACLResourcePatternType.ANY))
        [(_, removed, _)] = admin.delete_acls([alices])
        print(f"deleted {len(removed)} ACLs of alice")
        assert len(removed) == 2
        assert try_send(bootstrap, "alice", "orders-eu") == "TopicAuthorizationFailedError"
        print("alice writes to orders-eu again: refused")
        bob.close()
        admin.close()


if __name__ == "__main__":
    main()
