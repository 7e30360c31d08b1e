"""ACLs as Kafka writes them: who (a principal, from a host) may or may not do what (an
operation) to which resources (a type, and a name matched literally or as a prefix).

The enums carry Kafka's codes (``org.apache.kafka.common.acl`` and ``common.resource``), the
numbers CreateAcls, DescribeAcls and DeleteAcls put on the wire.  An :class:`AclBinding` is one
rule; an :class:`AclBindingFilter` selects rules (DescribeAcls, DeleteAcls), with ANY and
MATCH as wildcards.  See docs/broker/security.rst.
"""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import dataclass
from typing import Any

#: The principal of a connection that did not authenticate (PLAINTEXT, SSL without a client
#: certificate): Kafka's ``KafkaPrincipal.ANONYMOUS``.
ANONYMOUS = "User:ANONYMOUS"
#: In an ACL: every principal, every host.  As a literal resource name: every resource.
WILDCARD_PRINCIPAL = "User:*"
WILDCARD = "*"
#: The one cluster resource's name (Kafka's ``Resource.CLUSTER_NAME``).
CLUSTER_NAME = "kafka-cluster"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  #: in a filter: any pattern type, the name compared as it is
    MATCH = 2  #: in a filter: every ACL that would apply to the resource named
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: An ALLOW of one of these also allows the key (Kafka's implied operations): who may read,
#: write, delete or alter a resource may see that it exists.
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.READ, AclOperation.WRITE,
                                      AclOperation.DELETE, AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}


#: The operations each resource type has (Kafka's ``AclEntry.supportedOperations``): what the
#: "authorized operations" of Metadata and DescribeGroups report on.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
                         AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.ALTER,
                         AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION,
                           AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
                           AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
}


@dataclass(frozen=True)
class ResourcePattern:
    """A set of resources: one name (LITERAL, or ``*`` for all) or every name with a prefix."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Does this pattern cover the resource ``resource_type``/``name``?"""
        if resource_type != self.resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.name == name or self.name == WILDCARD
        return self.pattern_type == PatternType.PREFIXED and name.startswith(self.name)


@dataclass(frozen=True)
class AccessControlEntry:
    """Who, from where, what, allowed or denied."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def applies_to(self, principal: str, host: str) -> bool:
        return (self.principal in (principal, WILDCARD_PRINCIPAL)
                and self.host in (host, WILDCARD))


@dataclass(frozen=True)
class AclBinding:
    """One ACL: a pattern of resources and an entry."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    def validate(self) -> None:
        """Raise ``ValueError`` for what Kafka refuses to store (its ``validateNewAcl``)."""
        p, e = self.pattern, self.entry
        if p.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise ValueError(f"resource type {p.resource_type.name} is not a resource")
        if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise ValueError(f"pattern type {p.pattern_type.name} is a filter, not a pattern")
        if not p.name:
            raise ValueError("an ACL needs a resource name")
        if p.resource_type == ResourceType.CLUSTER and (
                p.name != CLUSTER_NAME or p.pattern_type != PatternType.LITERAL):
            raise ValueError(f"the cluster resource is LITERAL {CLUSTER_NAME!r}")
        if e.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise ValueError(f"operation {e.operation.name} is a filter, not an operation")
        if e.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            raise ValueError(f"permission {e.permission_type.name} is neither ALLOW nor DENY")
        kind, sep, name = e.principal.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"principal {e.principal!r} is not Type:name (e.g. User:alice)")
        if not e.host:
            raise ValueError("an ACL needs a host (* for every host)")


@dataclass(frozen=True)
class AclBindingFilter:
    """Selects ACLs: None (a null string on the wire) and the ANY codes match everything."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, acl: AclBinding) -> bool:
        p, e = acl.pattern, acl.entry
        if self.resource_type != ResourceType.ANY and p.resource_type != self.resource_type:
            return False
        if self.pattern_type == PatternType.MATCH:
            # Every ACL that would apply to the resource named (Kafka's MATCH filter).
            if self.name is not None and not p.matches(p.resource_type, self.name):
                return False
        else:
            if self.pattern_type != PatternType.ANY and p.pattern_type != self.pattern_type:
                return False
            if self.name is not None and p.name != self.name:
                return False
        return ((self.principal is None or e.principal == self.principal)
                and (self.host is None or e.host == self.host)
                and self.operation in (AclOperation.ANY, e.operation)
                and self.permission_type in (AclPermissionType.ANY, e.permission_type))


# -- the ACL records of the metadata log (docs/broker/security.rst) -----------------------------

#: one ACL added (Kafka's ``AccessControlEntryRecord``: its id and the binding's fields)
ACCESS_CONTROL_ENTRY_RECORD = "AccessControlEntryRecord"
#: one ACL removed, by its id (Kafka's ``RemoveAccessControlEntryRecord``)
REMOVE_ACCESS_CONTROL_ENTRY_RECORD = "RemoveAccessControlEntryRecord"
#: the namespace of the ACLs' ids (see :func:`acl_id`)
_ACL_ID_NAMESPACE = uuid.UUID("5c0f6b1e-6a2d-4f0e-9a55-0c6b1e7a4c1d")


def acl_id(acl: AclBinding) -> str:
    """The ACL's id in the metadata log: a UUID derived from the binding (Kafka draws a random
    one; the controller keeps no two equal bindings, so one derived from it is as unique, and a
    broker that takes the image by DescribeAcls, which carries no ids, knows each one's id)."""
    p, e = acl.pattern, acl.entry
    return str(uuid.uuid5(_ACL_ID_NAMESPACE, json.dumps([
        int(p.resource_type), p.name, int(p.pattern_type), e.principal, e.host,
        int(e.operation), int(e.permission_type)])))


def access_control_entry_record(acl: AclBinding) -> dict[str, Any]:
    """The record that adds ``acl`` (the fields of Kafka's ``AccessControlEntryRecord``)."""
    p, e = acl.pattern, acl.entry
    return {"type": ACCESS_CONTROL_ENTRY_RECORD, "id": acl_id(acl),
            "resource_type": int(p.resource_type), "resource_name": p.name,
            "pattern_type": int(p.pattern_type), "principal": e.principal, "host": e.host,
            "operation": int(e.operation), "permission_type": int(e.permission_type)}


def remove_access_control_entry_record(id_: str) -> dict[str, Any]:
    """The record that removes the ACL ``id_``."""
    return {"type": REMOVE_ACCESS_CONTROL_ENTRY_RECORD, "id": id_}


def acl_of_record(record: dict[str, Any]) -> AclBinding:
    """The ACL an ``AccessControlEntryRecord`` adds (``ValueError``/``KeyError`` if it is not
    one: a code no enum has, a field missing)."""
    acl = AclBinding(
        ResourcePattern(ResourceType(record["resource_type"]), str(record["resource_name"]),
                        PatternType(record["pattern_type"])),
        AccessControlEntry(str(record["principal"]), str(record["host"]),
                           AclOperation(record["operation"]),
                           AclPermissionType(record["permission_type"])))
    acl.validate()
    return acl
