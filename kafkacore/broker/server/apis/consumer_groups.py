"""ConsumerGroupHeartbeat and ConsumerGroupDescribe: the consumer group protocol (KIP-848).

The work is the coordinator's (:mod:`kafkacore.broker.group.consumer_group_coordinator`); here:
authorization and the wire shape.  The classic protocol's requests are
:mod:`~kafkacore.broker.server.apis.groups`'.  See docs/broker/groups.rst.
"""

from __future__ import annotations

from typing import Any

from kafkacore.broker.group.consumer_group import JOIN_GROUP_MEMBER_EPOCH
from kafkacore.broker.group.consumer_group_coordinator import HeartbeatRequest
from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.server.apis.base import AUTHORIZED_OPERATIONS_OMITTED, KafkaApisBase, body_of
from kafkacore.errors import Errors


class ConsumerGroupApis(KafkaApisBase):
    """Kafka's ``handleConsumerGroupHeartbeat`` and ``handleConsumerGroupDescribe``."""

    def handle_consumer_group_heartbeat_request(self, request: Request) -> None:
        """Kafka: READ on the group; DESCRIBE on each subscribed topic (a regex subscription
        only matches the topics the member may describe)."""
        body = body_of(request)
        coordinator = self.group_coordinator
        if not self.authorize(request, AclOperation.READ, ResourceType.GROUP, body["group_id"]):
            self.respond(request, _heartbeat_error(Errors.GROUP_AUTHORIZATION_FAILED))
            return
        if coordinator.consumer_groups is None:
            self.respond(request, _heartbeat_error(Errors.UNSUPPORTED_VERSION))
            return
        classic = coordinator.group(body["group_id"])
        if classic is not None and not classic.members and \
                body["member_epoch"] == JOIN_GROUP_MEMBER_EPOCH:
            coordinator.remove_empty_classic_group(body["group_id"])
        elif classic is not None and classic.members and not (
                _joins_with_a_subscription(body)
                and coordinator.upgrade_to_consumer_group(body["group_id"])):
            self.respond(request, _heartbeat_error(
                Errors.GROUP_ID_NOT_FOUND, f"Group {body['group_id']} is not a consumer group."))
            return
        owned = body["topic_partitions"]
        req = HeartbeatRequest(
            group_id=body["group_id"], member_id=body["member_id"],
            member_epoch=body["member_epoch"], instance_id=body["instance_id"],
            rack_id=body["rack_id"], rebalance_timeout_ms=body["rebalance_timeout_ms"],
            subscribed_topic_names=body["subscribed_topic_names"],
            subscribed_topic_regex=body.get("subscribed_topic_regex"),
            server_assignor=body["server_assignor"],
            owned=None if owned is None else {
                t["topic_id"]: frozenset(t["partitions"]) for t in owned if t["partitions"]},
            client_id=request.header.get("client_id") or "",
            client_host="/" + request.client_address[0], version=request.api_version)
        coordinator.consumer_groups.heartbeat(
            req, lambda topic: self.authorize_topic(request, AclOperation.DESCRIBE, topic),
            lambda response: self.respond(request, response))

    def handle_consumer_group_describe_request(self, request: Request) -> None:
        """Kafka: DESCRIBE on each group."""
        body = body_of(request)
        coordinator = self.group_coordinator
        groups = []
        for group_id in body["group_ids"]:
            if not self.authorize(request, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
                groups.append(_describe_error(group_id, Errors.GROUP_AUTHORIZATION_FAILED, None))
                continue
            status = coordinator.validate_group_status(group_id)
            if status != Errors.NONE or coordinator.consumer_groups is None:
                groups.append(_describe_error(group_id, status, None))
                continue
            operations = self.authorized_operations(request, ResourceType.GROUP, group_id) \
                if body["include_authorized_operations"] else AUTHORIZED_OPERATIONS_OMITTED
            described = coordinator.consumer_groups.describe(group_id, operations)
            if described["error_code"] == Errors.GROUP_ID_NOT_FOUND and \
                    coordinator.group(group_id) is not None:
                described["error_message"] = f"Group {group_id} is not a consumer group."
            groups.append(described)
        self.respond(request, {"throttle_time_ms": 0, "groups": groups})


def _joins_with_a_subscription(body: dict[str, Any]) -> bool:
    """A join that can be valid (the upgrade of a classic group waits for one)."""
    return body["member_epoch"] == JOIN_GROUP_MEMBER_EPOCH and (
        body["subscribed_topic_names"] is not None
        or body.get("subscribed_topic_regex") is not None)


def _heartbeat_error(error: int, message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "error_message": message,
            "member_id": None, "member_epoch": -1, "heartbeat_interval_ms": 0,
            "assignment": None}


def _describe_error(group_id: str, error: int, message: str | None) -> dict[str, Any]:
    return {"error_code": error, "error_message": message, "group_id": group_id,
            "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
            "members": [], "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}
