"""Authorization: ACLs and the ``StandardAuthorizer`` (see docs/broker/security.rst)."""

from kafkacore.broker.security.authorizer.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafkacore.broker.security.authorizer.standard_authorizer import StandardAuthorizer

__all__ = [
    "AccessControlEntry",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourcePattern",
    "ResourceType",
    "StandardAuthorizer",
]
