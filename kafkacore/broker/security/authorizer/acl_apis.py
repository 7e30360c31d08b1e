"""CreateAcls, DescribeAcls and DeleteAcls (Kafka's ``AclApis``).

A broker with no authorizer answers SECURITY_DISABLED, as Kafka does.  Changing ACLs needs ALTER
on the cluster, reading them DESCRIBE on the cluster.  In a cluster the changes are forwarded to
the active controller, which owns the ACLs (the same handlers serve it, over its
``QuorumController``, whose ``AclControlManager`` writes them to the metadata log); the broker
then fetches the new records at once, so that the client that made a change sees it in its
next DescribeAcls.  See docs/broker/security.rst.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafkacore.errors import Errors, IllegalStateError

if TYPE_CHECKING:
    from kafkacore.broker.network.api_request_handler import ApiRequestHandler


class AclStore(Protocol):
    """Where the ACL APIs find and change the ACLs: a broker's ``StandardAuthorizer``, or the
    controller's ``QuorumController`` (its ``AclControlManager``, through the metadata log)."""

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]: ...

    def create_acls(self, bindings: list[AclBinding]) -> list[str | None]: ...

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]: ...


def _enum(kind: Any, code: int) -> Any:
    try:
        return kind(code)
    except ValueError:
        return kind.UNKNOWN


def binding_of(creation: dict[str, Any]) -> AclBinding:
    """A CreateAcls ``creations`` entry as an :class:`AclBinding` (unknown codes: UNKNOWN)."""
    return AclBinding(
        ResourcePattern(_enum(ResourceType, creation["resource_type"]),
                        creation["resource_name"],
                        _enum(PatternType, creation["resource_pattern_type"])),
        AccessControlEntry(creation["principal"], creation["host"],
                           _enum(AclOperation, creation["operation"]),
                           _enum(AclPermissionType, creation["permission_type"])))


def filter_of(f: dict[str, Any]) -> AclBindingFilter:
    """A DescribeAcls request, or a DeleteAcls ``filters`` entry, as an AclBindingFilter."""
    return AclBindingFilter(
        _enum(ResourceType, f["resource_type_filter"]), f["resource_name_filter"],
        _enum(PatternType, f["pattern_type_filter"]), f["principal_filter"], f["host_filter"],
        _enum(AclOperation, f["operation"]), _enum(AclPermissionType, f["permission_type"]))


def acl_fields(acl: AclBinding) -> dict[str, Any]:
    e = acl.entry
    return {"principal": e.principal, "host": e.host, "operation": int(e.operation),
            "permission_type": int(e.permission_type)}


def describe_resources(acls: list[AclBinding]) -> list[dict[str, Any]]:
    """DescribeAcls' shape: ACLs grouped by resource pattern."""
    by_pattern: dict[ResourcePattern, list[dict[str, Any]]] = {}
    for acl in acls:
        by_pattern.setdefault(acl.pattern, []).append(acl_fields(acl))
    return [{"resource_type": int(p.resource_type), "resource_name": p.name,
             "pattern_type": int(p.pattern_type), "acls": entries}
            for p, entries in by_pattern.items()]


class AclApis:
    """The ACL APIs of ``apis`` (a broker's KafkaApis or the ControllerApis) over the ACLs in
    ``store``; ``forwarding``: where a broker in a cluster sends changes (None: kept here)."""

    def __init__(self, apis: ApiRequestHandler, store: AclStore | None,
                 forwarding: Callable[[], Any] = lambda: None) -> None:
        self.apis = apis
        self.authorizer = store
        self._forwarding = forwarding

    def _forward(self, request: Request) -> dict[str, Any] | None:
        """In a cluster: the controller's answer to ``request`` (None when alone)."""
        manager = self._forwarding()
        if manager is None:
            return None
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        return manager.forward(request.api_key, request.api_version, request.body)

    def _may(self, request: Request, operation: AclOperation) -> bool:
        return self.apis.authorize(request, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def handle_create_acls_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        creations = request.body["creations"]

        def results(code: int, message: str | None) -> dict[str, Any]:
            return {"throttle_time_ms": 0, "results": [
                {"error_code": code, "error_message": message} for _ in creations]}

        if self.authorizer is None:
            self.apis.respond(request, results(Errors.SECURITY_DISABLED,
                                               "no authorizer is configured"))
        elif not self._may(request, AclOperation.ALTER):
            self.apis.respond(request, results(Errors.CLUSTER_AUTHORIZATION_FAILED, None))
        else:
            try:
                forwarded = self._forward(request)
            except OSError as exc:
                forwarded = results(Errors.NOT_CONTROLLER, f"the controller is unreachable: {exc}")
            if forwarded is not None:
                self.apis.respond(request, forwarded)
                return
            refused = self.authorizer.create_acls([binding_of(c) for c in creations])
            self.apis.respond(request, {"throttle_time_ms": 0, "results": [
                {"error_code": Errors.NONE if why is None else Errors.INVALID_REQUEST,
                 "error_message": why}
                for why in refused]})

    def handle_describe_acls_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        response: dict[str, Any] = {"throttle_time_ms": 0, "error_code": Errors.NONE,
                                    "error_message": None, "resources": []}
        if self.authorizer is None:
            response.update(error_code=Errors.SECURITY_DISABLED,
                            error_message="no authorizer is configured")
        elif not self._may(request, AclOperation.DESCRIBE):
            response["error_code"] = Errors.CLUSTER_AUTHORIZATION_FAILED
        else:
            response["resources"] = describe_resources(
                self.authorizer.acls(filter_of(request.body)))
        self.apis.respond(request, response)

    def handle_delete_acls_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        filters = request.body["filters"]

        def results(code: int, message: str | None) -> dict[str, Any]:
            return {"throttle_time_ms": 0, "filter_results": [
                {"error_code": code, "error_message": message, "matching_acls": []}
                for _ in filters]}

        if self.authorizer is None:
            self.apis.respond(request, results(Errors.SECURITY_DISABLED,
                                               "no authorizer is configured"))
            return
        if not self._may(request, AclOperation.ALTER):
            self.apis.respond(request, results(Errors.CLUSTER_AUTHORIZATION_FAILED, None))
            return
        try:
            forwarded = self._forward(request)
        except OSError as exc:
            forwarded = results(Errors.NOT_CONTROLLER, f"the controller is unreachable: {exc}")
        if forwarded is not None:
            self.apis.respond(request, forwarded)
            return
        removed = self.authorizer.delete_acls([filter_of(f) for f in filters])
        self.apis.respond(request, {"throttle_time_ms": 0, "filter_results": [
            {"error_code": Errors.NONE, "error_message": None, "matching_acls": [
                {"error_code": Errors.NONE, "error_message": None,
                 "resource_type": int(a.pattern.resource_type), "resource_name": a.pattern.name,
                 "pattern_type": int(a.pattern.pattern_type), **acl_fields(a)}
                for a in acls]}
            for acls in removed]})
