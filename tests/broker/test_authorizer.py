"""The StandardAuthorizer's rules, one at a time (literal, prefixed, DENY wins, implied
operations, super users, allow.everyone.if.no.acl.found), and its ACL list kept on disk.

The end-to-end checks, with clients we did not write, are in test_authorization_broker.py.
"""

from __future__ import annotations

import pytest

from kafkacore import errors
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.security.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    StandardAuthorizer,
)
from kafkacore.broker.security.authorizer.standard_authorizer import ACLS_FILE, parse_super_users

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation
ALICE, BOB = "User:alice", "User:bob"


def acl(resource_type, name, principal, operation, permission=ALLOW, pattern=LITERAL,
        host="*") -> AclBinding:
    return AclBinding(ResourcePattern(resource_type, name, pattern),
                      AccessControlEntry(principal, host, operation, permission))


def authorizer(*acls, **kwargs) -> StandardAuthorizer:
    a = StandardAuthorizer(**kwargs)
    assert a.create_acls(list(acls)) == [None] * len(acls)
    return a


def may(a, principal, operation, resource_type, name, host="10.0.0.1") -> bool:
    return a.authorize(principal, host, operation, resource_type, name)


def test_a_literal_acl_names_one_resource():
    a = authorizer(acl(TOPIC, "orders", ALICE, Op.WRITE))
    assert may(a, ALICE, Op.WRITE, TOPIC, "orders")
    assert not may(a, ALICE, Op.WRITE, TOPIC, "orders2")  # literal: not a prefix
    assert not may(a, BOB, Op.WRITE, TOPIC, "orders")  # another principal
    assert not may(a, ALICE, Op.READ, TOPIC, "orders")  # another operation
    assert not may(a, ALICE, Op.WRITE, GROUP, "orders")  # another resource type


def test_a_prefixed_acl_names_every_resource_with_the_prefix():
    a = authorizer(acl(TOPIC, "sales-", ALICE, Op.READ, pattern=PREFIXED))
    assert may(a, ALICE, Op.READ, TOPIC, "sales-eu")
    assert may(a, ALICE, Op.READ, TOPIC, "sales-")
    assert not may(a, ALICE, Op.READ, TOPIC, "sales")
    assert not may(a, ALICE, Op.READ, TOPIC, "presales-eu")


def test_the_wildcards_name_every_resource_principal_and_host():
    a = authorizer(acl(TOPIC, "*", "User:*", Op.DESCRIBE))
    assert may(a, BOB, Op.DESCRIBE, TOPIC, "anything")
    b = authorizer(acl(TOPIC, "t", ALICE, Op.READ, host="10.0.0.1"))
    assert may(b, ALICE, Op.READ, TOPIC, "t", host="10.0.0.1")
    assert not may(b, ALICE, Op.READ, TOPIC, "t", host="10.0.0.2")


def test_deny_wins_over_every_allow():
    a = authorizer(acl(TOPIC, "*", ALICE, Op.ALL),
                   acl(TOPIC, "secret-", ALICE, Op.READ, DENY, PREFIXED))
    assert may(a, ALICE, Op.READ, TOPIC, "public")
    assert not may(a, ALICE, Op.READ, TOPIC, "secret-plans")
    assert may(a, ALICE, Op.WRITE, TOPIC, "secret-plans")  # the DENY names READ only
    b = authorizer(acl(TOPIC, "t", ALICE, Op.READ), acl(TOPIC, "t", "User:*", Op.ALL, DENY))
    assert not may(b, ALICE, Op.READ, TOPIC, "t")


def test_read_write_delete_and_alter_imply_describe():
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert may(authorizer(acl(TOPIC, "t", ALICE, op)), ALICE, Op.DESCRIBE, TOPIC, "t")
    assert may(authorizer(acl(TOPIC, "t", ALICE, Op.ALTER_CONFIGS)), ALICE,
               Op.DESCRIBE_CONFIGS, TOPIC, "t")
    assert not may(authorizer(acl(TOPIC, "t", ALICE, Op.CREATE)), ALICE, Op.DESCRIBE, TOPIC,
                   "t")
    # An implied ALLOW does not undo a DENY of DESCRIBE itself.
    a = authorizer(acl(TOPIC, "t", ALICE, Op.READ), acl(TOPIC, "t", ALICE, Op.DESCRIBE, DENY))
    assert not may(a, ALICE, Op.DESCRIBE, TOPIC, "t")


def test_super_users_may_do_anything_even_when_denied():
    a = authorizer(acl(TOPIC, "*", "User:*", Op.ALL, DENY), super_users={"User:admin"})
    assert may(a, "User:admin", Op.DELETE, TOPIC, "t")
    assert may(a, "User:admin", Op.CLUSTER_ACTION, CLUSTER, "kafka-cluster")
    assert not may(a, ALICE, Op.DESCRIBE, TOPIC, "t")


@pytest.mark.parametrize("allow_everyone", [False, True])
def test_allow_everyone_if_no_acl_found_applies_only_to_resources_no_acl_names(allow_everyone):
    a = authorizer(acl(TOPIC, "owned", BOB, Op.WRITE),
                   allow_everyone_if_no_acl_found=allow_everyone)
    assert may(a, ALICE, Op.WRITE, TOPIC, "free") is allow_everyone
    # An ACL names "owned" (for someone else): the fallback no longer applies to it.
    assert not may(a, ALICE, Op.WRITE, TOPIC, "owned")


def test_authorize_by_resource_type_finds_an_allowed_topic_not_denied():
    a = authorizer(acl(TOPIC, "t-", ALICE, Op.WRITE, pattern=PREFIXED))
    assert a.authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)
    assert not a.authorize_by_resource_type(BOB, "h", Op.WRITE, TOPIC)
    b = authorizer(acl(TOPIC, "t-1", ALICE, Op.WRITE), acl(TOPIC, "t-", ALICE, Op.WRITE, DENY,
                                                           PREFIXED))
    assert not b.authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)


def test_filters_select_acls_as_describe_and_delete_acls_do():
    literal = acl(TOPIC, "sales-eu", ALICE, Op.READ)
    prefixed = acl(TOPIC, "sales-", BOB, Op.WRITE, pattern=PREFIXED)
    group = acl(GROUP, "g", ALICE, Op.READ)
    a = authorizer(literal, prefixed, group)
    assert a.acls(AclBindingFilter()) == [literal, prefixed, group]
    assert a.acls(AclBindingFilter(resource_type=TOPIC, principal=ALICE)) == [literal]
    assert a.acls(AclBindingFilter(TOPIC, "sales-eu", PatternType.MATCH)) == [literal, prefixed]
    assert a.acls(AclBindingFilter(TOPIC, "sales-", PREFIXED)) == [prefixed]
    assert a.delete_acls([AclBindingFilter(principal=ALICE)]) == [[literal, group]]
    assert a.acls(AclBindingFilter()) == [prefixed]


def test_acls_kafka_refuses_to_store_are_refused_with_a_reason():
    a = StandardAuthorizer()
    bad = [acl(ResourceType.ANY, "t", ALICE, Op.READ), acl(TOPIC, "t", ALICE, Op.ANY),
           acl(TOPIC, "t", "alice", Op.READ), acl(CLUSTER, "other", ALICE, Op.ALTER),
           acl(TOPIC, "t", ALICE, Op.READ, pattern=PatternType.MATCH)]
    refused = a.create_acls(bad)
    assert all(isinstance(why, str) and why for why in refused)
    assert a.acls(AclBindingFilter()) == []


def test_the_acls_survive_a_restart(tmp_path):
    path = tmp_path / ACLS_FILE
    a = StandardAuthorizer(path=path)
    a.create_acls([acl(TOPIC, "t", ALICE, Op.READ)])
    b = StandardAuthorizer(path=path)
    assert may(b, ALICE, Op.READ, TOPIC, "t")
    path.write_text("[[1, 2")
    with pytest.raises(errors.KafkaStorageError):
        StandardAuthorizer(path=path)


def test_the_settings_switch_it_on_as_kafka_does(tmp_path):
    assert StandardAuthorizer.from_config(BrokerConfig({"log.dirs": str(tmp_path)})) is None
    a = StandardAuthorizer.from_config(BrokerConfig({
        "log.dirs": str(tmp_path),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:broker", "allow.everyone.if.no.acl.found": "true"}))
    assert a is not None and a.super_users == {"User:admin", "User:broker"}
    assert a.allow_everyone_if_no_acl_found
    with pytest.raises(errors.ConfigError, match="authorizer.class.name"):
        BrokerConfig({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    with pytest.raises(errors.ConfigError, match="super.users"):
        parse_super_users("admin")
    with pytest.raises(errors.ConfigError, match="inter.broker.listener.name"):
        BrokerConfig({"inter.broker.listener.name": "BROKER"})


def test_a_certificates_subject_is_written_as_rfc_2253():
    from kafkacore.broker.security.authentication import certificate_principal

    subject = ((("countryName", "FR"),), (("organizationName", "Acme, Inc."),),
               (("organizationalUnitName", "ops"), ("commonName", "#1 client ")))
    assert certificate_principal({"subject": subject}) == \
        "User:OU=ops+CN=\\#1 client\\ ,O=Acme\\, Inc.,C=FR"
    assert certificate_principal({}) is None
    assert certificate_principal(None) is None
