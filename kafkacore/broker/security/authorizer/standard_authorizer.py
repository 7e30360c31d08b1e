"""``StandardAuthorizer``: decides each request's operations from the ACLs (Kafka's
``org.apache.kafka.metadata.authorizer.StandardAuthorizer``).

The rules, in order (Kafka's ``StandardAuthorizerData.authorize``):

1. a principal in ``super.users`` may do anything;
2. a DENY that applies (its pattern covers the resource, its principal and host match, its
   operation is the one asked or ALL) refuses: DENY wins over any ALLOW;
3. an ALLOW that applies (the operation asked, ALL, or one that implies it: READ, WRITE, DELETE
   and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows;
4. otherwise refused, unless no ACL at all names the resource and
   ``allow.everyone.if.no.acl.found`` is true.

Where the ACLs live: in a cluster they are the controller's (CreateAcls and DeleteAcls are
forwarded to it; it keeps them in ``__kafkacore_acls.json``), and every broker replaces its copy
with the controller's list at each metadata pull (:meth:`load_snapshot`), as KRaft brokers
replay the ACL records of the metadata log.  A broker alone keeps its own file.
See docs/broker/security.rst.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable
from pathlib import Path

from kafkacore import errors
from kafkacore.broker.config.kafka_config import STANDARD_AUTHORIZER_CLASS, BrokerConfig
from kafkacore.broker.security.authorizer.acl import (
    IMPLIED_BY,
    WILDCARD,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafkacore.broker.server_common.files import replace_atomically

log = logging.getLogger(__name__)

ACLS_FILE = "__kafkacore_acls.json"
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def parse_super_users(text: str) -> frozenset[str]:
    """``super.users``: ``User:admin;User:broker`` (semicolons, as Kafka: a name may hold
    commas)."""
    users = set()
    for part in str(text).split(";"):
        part = part.strip()
        if not part:
            continue
        kind, sep, name = part.partition(":")
        if not sep or not kind or not name:
            raise errors.ConfigError(f"super.users: {part!r} is not Type:name (User:admin)")
        users.add(part)
    return frozenset(users)


class StandardAuthorizer:
    @classmethod
    def from_config(cls, config: BrokerConfig) -> StandardAuthorizer | None:
        """The authorizer ``authorizer.class.name`` asks for, or None (no authorization: every
        request allowed, Kafka's default), its ACLs kept in the first log dir."""
        if config["authorizer.class.name"].strip() != STANDARD_AUTHORIZER_CLASS:
            return None
        return cls(parse_super_users(config["super.users"]),
                   config["allow.everyone.if.no.acl.found"],
                   Path(config.log_dirs[0]) / ACLS_FILE)

    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool =
                 False, path: str | Path | None = None) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.path = Path(path) if path is not None else None
        #: Guards writers; readers take ``self._acls`` (a tuple, replaced whole) without it.
        # Lock order: leaf.
        self._lock = threading.Lock()
        self._acls: tuple[AclBinding, ...] = ()
        if self.path is not None and self.path.exists():
            self._acls = tuple(_decode(self.path.read_bytes()))

    # -- deciding ----------------------------------------------------------------------------------

    def authorize(self, principal: str, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        if principal in self.super_users:
            return True
        found_any = allowed = False
        for acl in self._acls:
            if not acl.pattern.matches(resource_type, name):
                continue
            found_any = True
            e = acl.entry
            if not e.applies_to(principal, host):
                continue
            if e.permission_type == DENY and e.operation in (operation, AclOperation.ALL):
                return False  # DENY wins, whatever else allows
            if e.permission_type == ALLOW and (
                    e.operation in (operation, AclOperation.ALL)
                    or e.operation in IMPLIED_BY.get(operation, ())):
                allowed = True
        if allowed:
            return True
        return not found_any and self.allow_everyone_if_no_acl_found

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """May ``principal`` do ``operation`` on at least one resource of this type?  (Kafka's
        ``authorizeByResourceType``: an idempotent producer needs WRITE on some topic.)"""
        if principal in self.super_users:
            return True
        mine = [a for a in self._acls if a.pattern.resource_type == resource_type
                and a.entry.applies_to(principal, host)
                and a.entry.operation in (operation, AclOperation.ALL)]
        denied = [a.pattern for a in mine if a.entry.permission_type == DENY]
        if any(p.name == WILDCARD and p.pattern_type == PatternType.LITERAL for p in denied):
            return False
        for acl in mine:
            if acl.entry.permission_type != ALLOW:
                continue
            name = acl.pattern.name
            if not any(d.name == name and d.pattern_type == acl.pattern.pattern_type
                       or d.pattern_type == PatternType.PREFIXED and name.startswith(d.name)
                       for d in denied):
                return True
        if any(a.pattern.resource_type == resource_type for a in self._acls):
            return False
        return self.allow_everyone_if_no_acl_found

    # -- the ACLs (CreateAcls, DescribeAcls, DeleteAcls) ---------------------------------------

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return [a for a in self._acls if acl_filter.matches(a)]

    def create_acls(self, bindings: list[AclBinding]) -> list[str | None]:
        """Add each valid binding (one already there is not added twice).  Returns, per
        binding, None or why it was refused; the new list is on disk before this returns."""
        results: list[str | None] = []
        with self._lock:
            acls = list(self._acls)
            for binding in bindings:
                try:
                    binding.validate()
                except ValueError as exc:
                    results.append(str(exc))
                    continue
                if binding not in acls:
                    acls.append(binding)
                results.append(None)
            self._replace(acls)
        return results

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove every ACL each filter matches; returns what each filter removed."""
        with self._lock:
            acls = list(self._acls)
            removed = [[a for a in acls if f.matches(a)] for f in filters]
            gone = {a for r in removed for a in r}
            self._replace([a for a in acls if a not in gone])
        return removed

    def load_snapshot(self, bindings: list[AclBinding]) -> None:
        """Replace every ACL with the controller's list (a broker in a cluster)."""
        with self._lock:
            self._replace(bindings)

    def _replace(self, acls: list[AclBinding]) -> None:
        new = tuple(acls)
        if new == self._acls:
            return
        if self.path is not None:
            replace_atomically(self.path, _encode(new))
        self._acls = new


def _encode(acls: Iterable[AclBinding]) -> bytes:
    return json.dumps([
        [a.pattern.resource_type.name, a.pattern.name, a.pattern.pattern_type.name,
         a.entry.principal, a.entry.host, a.entry.operation.name, a.entry.permission_type.name]
        for a in acls], indent=0).encode()


def _decode(data: bytes) -> list[AclBinding]:
    try:
        return [AclBinding(ResourcePattern(ResourceType[t], name, PatternType[pt]),
                           AccessControlEntry(principal, host, AclOperation[op],
                                              AclPermissionType[perm]))
                for t, name, pt, principal, host, op, perm in json.loads(data)]
    except (ValueError, KeyError, TypeError) as exc:
        raise errors.KafkaStorageError(f"the ACL file is damaged: {exc}") from None
