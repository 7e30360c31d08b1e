"""``AclControlManager``: the cluster's ACLs, as the controller keeps them (Kafka's
``org.apache.kafka.controller.AclControlManager``).

Every ACL is a record of the metadata log: CreateAcls makes an ``AccessControlEntryRecord`` for
each new binding (with its id), DeleteAcls a ``RemoveAccessControlEntryRecord`` for each ACL a
filter matches.  The manager checks a change and says which records make it; the
:class:`~kafkacore.broker.controller.quorum_controller.QuorumController` appends them and
replays them here, as every controller of the quorum replays what is committed and as the lone
controller replays its log and snapshot at a start.  So every controller holds the same ACLs,
and the one elected next has them.  The controller's own authorizer (if it has one) is kept in
step, record by record.  See docs/broker/security.rst.
"""

from __future__ import annotations

import logging

from kafkacore.broker.metadata.metadata_log import Record
from kafkacore.broker.security.authorizer.acl import (
    ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    AclBinding,
    AclBindingFilter,
    access_control_entry_record,
    acl_id,
    acl_of_record,
    remove_access_control_entry_record,
)
from kafkacore.broker.security.authorizer.standard_authorizer import StandardAuthorizer
from kafkacore.errors import IllegalStateError

log = logging.getLogger(__name__)


class AclControlManager:
    """The ACLs by id; ``authorizer``: the controller's own (None: it authorizes nothing),
    which each replayed record changes too.  A new manager (a controller's state rebuilt from
    the log) starts it empty."""

    def __init__(self, authorizer: StandardAuthorizer | None = None) -> None:
        self.acls: dict[str, AclBinding] = {}
        self._authorizer = authorizer
        if authorizer is not None:
            authorizer.load_snapshot([])

    def create_acls(self, bindings: list[AclBinding]) -> tuple[list[str | None], list[Record]]:
        """(per binding, None or why it is refused; the records that add the new ones).  A
        binding already there, or twice in the request, is accepted and recorded once."""
        results: list[str | None] = []
        records: list[Record] = []
        seen: set[str] = set()
        for binding in bindings:
            try:
                binding.validate()
            except ValueError as exc:
                results.append(str(exc))
                continue
            id_ = acl_id(binding)
            if id_ not in self.acls and id_ not in seen:
                seen.add(id_)
                records.append(access_control_entry_record(binding))
            results.append(None)
        return results, records

    def delete_acls(self, filters: list[AclBindingFilter]
                    ) -> tuple[list[list[AclBinding]], list[Record]]:
        """(what each filter matches; the records that remove them, one per ACL however
        many filters match it)."""
        matched = [[a for a in self.acls.values() if f.matches(a)] for f in filters]
        gone = {acl_id(a) for found in matched for a in found}
        return matched, [remove_access_control_entry_record(i)
                         for i in self.acls if i in gone]

    def describe(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return [a for a in self.acls.values() if acl_filter.matches(a)]

    def replay(self, record: Record) -> None:
        """Apply one ACL record of the log (and to the controller's authorizer)."""
        kind, id_ = record["type"], str(record["id"])
        if kind == ACCESS_CONTROL_ENTRY_RECORD:
            acl = acl_of_record(record)
            self.acls[id_] = acl
            if self._authorizer is not None:
                self._authorizer.add_acl(id_, acl)
            log.debug("controller: ACL %s added: %s", id_, acl)
        elif kind == REMOVE_ACCESS_CONTROL_ENTRY_RECORD:
            acl = self.acls.pop(id_, None)
            if acl is None:
                # The controller's log names only ACLs it added: a removal of one it does
                # not have means its state and its log disagree (Kafka's replay throws too).
                raise IllegalStateError(f"{kind} of ACL {id_}, which is not there")
            if self._authorizer is not None:
                self._authorizer.remove_acl(id_)
            log.debug("controller: ACL %s removed: %s", id_, acl)
        else:
            raise IllegalStateError(f"not an ACL record: {record!r}")

    def records(self) -> list[Record]:
        """The ACLs as the records that add them (the snapshot's)."""
        return [access_control_entry_record(a) for a in self.acls.values()]
