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

Where the ACLs live: in a cluster, in the metadata log.  CreateAcls and DeleteAcls are
forwarded to the active controller, whose ``AclControlManager`` writes them as
``AccessControlEntryRecord`` and ``RemoveAccessControlEntryRecord``; every controller of the
quorum and every broker replays those records into its authorizer (:meth:`add_acl`,
:meth:`remove_acl`; a broker behind the controller's snapshot takes the whole list,
:meth:`load_snapshot`), as KRaft's ``AclPublisher`` does.  Such an authorizer keeps no file.
A broker alone (its own controller) keeps its ACLs in ``__kafkacore_acls.json``.
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
    acl_id,
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
        request allowed, Kafka's default).  A broker alone keeps its ACLs in its first log
        dir; a cluster's broker or controller has them from the metadata log, and no file."""
        if config["authorizer.class.name"].strip() != STANDARD_AUTHORIZER_CLASS:
            return None
        in_cluster = config["process.roles"] in ("broker", "controller")
        return cls(parse_super_users(config["super.users"]),
                   config["allow.everyone.if.no.acl.found"],
                   None if in_cluster else Path(config.log_dirs[0]) / ACLS_FILE)

    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool =
                 False, path: str | Path | None = None) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.path = Path(path) if path is not None else None
        #: Guards writers; readers take ``self._acls`` (a tuple, replaced whole) without it.
        # Lock order: leaf.
        self._lock = threading.Lock()
        #: the ACLs by their id in the metadata log (guarded by the lock)
        self._by_id: dict[str, AclBinding] = {}
        self._acls: tuple[AclBinding, ...] = ()
        if self.path is not None and self.path.exists():
            self._by_id = {acl_id(a): a for a in _decode(self.path.read_bytes())}
            self._acls = tuple(self._by_id.values())

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
        binding, None or why it was refused; the new list is on disk before this returns.
        (A broker alone: in a cluster the controller's ``AclControlManager`` decides.)"""
        results: list[str | None] = []
        with self._lock:
            acls = dict(self._by_id)
            for binding in bindings:
                try:
                    binding.validate()
                except ValueError as exc:
                    results.append(str(exc))
                    continue
                acls.setdefault(acl_id(binding), binding)
                results.append(None)
            self._replace(acls)
        return results

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove every ACL each filter matches; returns what each filter removed."""
        with self._lock:
            removed = [[a for a in self._acls if f.matches(a)] for f in filters]
            gone = {a for r in removed for a in r}
            self._replace({i: a for i, a in self._by_id.items() if a not in gone})
        return removed

    # -- fed by the metadata log (Kafka's ClusterMetadataAuthorizer) ----------------------------

    def add_acl(self, id_: str, acl: AclBinding) -> None:
        """An ``AccessControlEntryRecord`` replayed (one already there: nothing changes)."""
        with self._lock:
            if self._by_id.get(id_) != acl:
                self._replace({**self._by_id, id_: acl})

    def remove_acl(self, id_: str) -> None:
        """A ``RemoveAccessControlEntryRecord`` replayed (an id not there: nothing changes, as
        for a broker whose image, taken whole, is already past the removal)."""
        with self._lock:
            if id_ in self._by_id:
                self._replace({i: a for i, a in self._by_id.items() if i != id_})

    def load_snapshot(self, bindings: Iterable[AclBinding]) -> None:
        """Replace every ACL with the controller's whole list (the image)."""
        with self._lock:
            self._replace({acl_id(a): a for a in bindings})

    def _replace(self, acls: dict[str, AclBinding]) -> None:
        new = tuple(acls.values())
        if new == self._acls:
            return
        if self.path is not None:
            replace_atomically(self.path, _encode(new))
        self._by_id = acls
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
