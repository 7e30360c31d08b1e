"""The classic group protocol and committed offsets: FindCoordinator, OffsetCommit, OffsetFetch,
JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups, ListGroups, DeleteGroups and
OffsetDelete.

The work is the group coordinator's (:mod:`kafkacore.broker.group.group_coordinator`); here:
Kafka's authorization checks and the wire shape of each version.  FindCoordinator finds a
transactional id's coordinator too.  KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe
are :mod:`~kafkacore.broker.server.apis.consumer_groups`'.  See docs/broker/groups.rst.
"""

from __future__ import annotations

from typing import Any

from kafkacore.broker.group.group_coordinator import OffsetAndMetadata
from kafkacore.broker.group.group_metadata import JoinGroupResult, SyncGroupResult
from kafkacore.broker.group.group_metadata_manager import OFFSETS_TOPIC
from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.server.apis.base import AUTHORIZED_OPERATIONS_OMITTED, KafkaApisBase, body_of
from kafkacore.broker.transaction.transaction_state_manager import TRANSACTION_STATE_TOPIC
from kafkacore.errors import Errors

#: FindCoordinator key types
COORDINATOR_TYPE_GROUP = 0
COORDINATOR_TYPE_TRANSACTION = 1


class GroupApis(KafkaApisBase):
    """Kafka's ``handleFindCoordinatorRequest``, ``handleOffsetCommitRequest``,
    ``handleOffsetFetchRequest``, ``handleJoinGroupRequest``, ``handleSyncGroupRequest``,
    ``handleHeartbeatRequest``, ``handleLeaveGroupRequest``, ``handleDescribeGroupsRequest``,
    ``handleListGroupsRequest``, ``handleDeleteGroupsRequest`` and ``handleOffsetDeleteRequest``."""

    # -- FindCoordinator, OffsetCommit, OffsetFetch ----------------------------------------------

    def handle_find_coordinator_request(self, request: Request) -> None:
        """The coordinator of a group is the leader of its ``__consumer_offsets`` partition
        (created on the first look-up, as Kafka does); COORDINATOR_NOT_AVAILABLE while that
        partition has no live leader.  A transactional id's (key type 1) is the leader of its
        ``__transaction_state`` partition, likewise."""
        body, version = body_of(request), request.api_version
        keys = body["coordinator_keys"] if version >= 4 else [body["key"]]
        live = self.live_brokers(request.listener_name)
        nodes = {}
        for key in keys:
            node, error = (-1, "", -1), Errors.COORDINATOR_NOT_AVAILABLE
            key_type = body.get("key_type", COORDINATOR_TYPE_GROUP)
            if key_type == COORDINATOR_TYPE_GROUP and not self.authorize(
                    request, AclOperation.DESCRIBE, ResourceType.GROUP, key):
                error = Errors.GROUP_AUTHORIZATION_FAILED
            elif key_type == COORDINATOR_TYPE_TRANSACTION and not self.authorize(
                    request, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
                error = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            elif key_type == COORDINATOR_TYPE_TRANSACTION and not key:
                error = Errors.INVALID_REQUEST
            elif key_type in (COORDINATOR_TYPE_GROUP, COORDINATOR_TYPE_TRANSACTION):
                leader = (self._group_coordinator_of(key) if key_type == COORDINATOR_TYPE_GROUP
                          else self._transaction_coordinator_of(key))
                if leader in live:
                    node, error = (leader, *live[leader]), Errors.NONE
            nodes[key] = (node, error)
        if version >= 4:
            response = {
                "throttle_time_ms": 0,
                "coordinators": [
                    {"key": key, "node_id": node[0], "host": node[1], "port": node[2],
                     "error_code": error, "error_message": None}
                    for key in keys for node, error in [nodes[key]]
                ],
            }
        else:
            node, error = nodes[keys[0]]
            response = {"throttle_time_ms": 0, "error_code": error, "error_message": None,
                        "node_id": node[0], "host": node[1], "port": node[2]}
        self.respond(request, response)

    def _group_coordinator_of(self, group_id: str) -> int:
        """The leader of the group's ``__consumer_offsets`` partition, or -1."""
        manager = self.group_coordinator.group_manager
        if not manager.ensure_offsets_topic():
            return -1
        if self.replica_manager.standalone:
            return int(self.broker_id)
        state = self.metadata_partition(OFFSETS_TOPIC, manager.partition_for(group_id))
        return int(state["leader_id"])

    def _transaction_coordinator_of(self, transactional_id: str) -> int:
        """The leader of the id's ``__transaction_state`` partition, or -1."""
        manager = self.transaction_coordinator.txn_manager
        if not manager.ensure_topic():
            return -1
        if self.replica_manager.standalone:
            return int(self.broker_id)
        state = self.metadata_partition(TRANSACTION_STATE_TOPIC,
                                         manager.partition_for(transactional_id))
        return int(state["leader_id"])

    def handle_offset_commit_request(self, request: Request) -> None:
        """Answered once the commit is on the offsets topic's in-sync replicas (the answer
        waits in the produce purgatory, as an acks=all produce)."""
        body = body_of(request)
        coordinator = self.group_coordinator
        offsets = {}
        unknown = set()
        # Kafka: READ on the group, then READ on each topic.
        group_refused = not self.authorize(request, AclOperation.READ, ResourceType.GROUP,
                                           body["group_id"])
        refused: dict[tuple[str | None, int], int] = {}
        for t in body["topics"]:
            if request.api_version >= 10:  # topics by id (KIP-848)
                t["name"] = self.metadata_cache.name_of(t["topic_id"])
            name = t.get("name")
            for p in t["partitions"]:
                tp = (name, p["partition_index"])
                if group_refused or not self.authorize_topic(request, AclOperation.READ, name):
                    refused[tp] = Errors.GROUP_AUTHORIZATION_FAILED if group_refused \
                        else Errors.TOPIC_AUTHORIZATION_FAILED
                    continue
                meta = None if name is None else self.metadata_cache.get(name)
                if meta is None or not 0 <= tp[1] < meta.partitions:
                    unknown.add(tp)
                    continue
                offsets[tp] = OffsetAndMetadata(
                    p["committed_offset"], p.get("committed_leader_epoch", -1),
                    p["committed_metadata"], p.get("commit_timestamp", -1))

        def send_response(errors: dict[tuple[str | None, int], int]) -> None:
            errors = {**errors, **dict.fromkeys(unknown, Errors.UNKNOWN_TOPIC_OR_PARTITION),
                      **refused}
            self.respond(request, {
                "throttle_time_ms": 0,
                "topics": [
                    {"name": t.get("name"), "topic_id": t.get("topic_id"), "partitions": [
                        {"partition_index": p["partition_index"],
                         "error_code": errors[(t.get("name"), p["partition_index"])]}
                        for p in t["partitions"]]}
                    for t in body["topics"]
                ],
            })

        if group_refused:
            send_response({})
            return
        coordinator.handle_commit_offsets(
            body["group_id"], body.get("generation_id_or_member_epoch", -1), offsets,
            member_id=body.get("member_id", ""), response_callback=send_response,
            api_version=request.api_version, group_instance_id=body.get("group_instance_id"))

    def _offset_fetch_topics(
        self, group_id: str, topics: list[dict[str, Any]] | None, version: int,
        require_stable: bool = False,
    ) -> list[dict[str, Any]]:
        asked = None
        if topics is not None:
            if version >= 10:  # topics by id (KIP-848)
                for t in topics:
                    t["name"] = self.metadata_cache.name_of(t["topic_id"])
            asked = [(t["name"], p) for t in topics for p in t["partition_indexes"]]
        error, found = self.group_coordinator.handle_fetch_offsets(group_id, asked)
        if error != Errors.NONE:
            # v0-1 have no top-level error: each partition carries it.
            found = dict.fromkeys(asked or [], None)
        unstable = self.group_coordinator.group_manager.pending_offset_partitions(
            group_id) if require_stable and error == Errors.NONE else set()
        if unstable:
            # KIP-447: a transaction holds a commit of these: answer none until it ends.
            found = {tp: None if tp in unstable else v for tp, v in found.items()}
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), value in found.items():
            by_topic.setdefault(topic, []).append({
                "partition_index": partition,
                # -1 and an empty metadata string: nothing committed (Kafka's INVALID_OFFSET).
                "committed_offset": -1 if value is None else value.offset,
                "committed_leader_epoch": -1 if value is None else value.leader_epoch,
                "metadata": "" if value is None else value.metadata,
                "error_code": error if error != Errors.NONE else
                              Errors.UNKNOWN_TOPIC_ID if topic is None else
                              Errors.UNSTABLE_OFFSET_COMMIT if (topic, partition) in unstable
                              else Errors.NONE,
            })
        if version < 8:  # the single-group shape has no topic ids at all
            return [{"name": topic, "partitions": parts} for topic, parts in by_topic.items()]
        return [
            {"name": topic, "topic_id": self.topic_id(topic), "partitions": parts}
            for topic, parts in by_topic.items()
        ]

    def handle_offset_fetch_request(self, request: Request) -> None:
        body, version = body_of(request), request.api_version

        def may_describe(group_id: str) -> bool:
            return self.authorize(request, AclOperation.DESCRIBE, ResourceType.GROUP, group_id)

        def status(group_id: str) -> int:
            if not may_describe(group_id):
                return Errors.GROUP_AUTHORIZATION_FAILED
            return self.group_coordinator.validate_group_status(group_id,
                                                                       allow_empty=True)

        def topics(group_id: str, asked: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
            """Kafka: DESCRIBE on the group, then on each topic; a topic asked by name that
            may not be described gets TOPIC_AUTHORIZATION_FAILED, one not asked is left out."""
            if not may_describe(group_id):
                return []
            found = self._offset_fetch_topics(group_id, asked, version,
                                              body.get("require_stable", False))
            for t in found:
                if not self.authorize_topic(request, AclOperation.DESCRIBE, t["name"]):
                    for p in t["partitions"]:
                        p.update(error_code=Errors.TOPIC_AUTHORIZATION_FAILED, committed_offset=-1,
                                 committed_leader_epoch=-1, metadata="")
            return [t for t in found if asked is not None or all(
                p["error_code"] != Errors.TOPIC_AUTHORIZATION_FAILED for p in t["partitions"])]

        def group(g: dict[str, Any]) -> dict[str, Any]:
            error = status(g["group_id"])
            if error == Errors.NONE and version >= 9:  # a consumer group's member (KIP-848)
                error = self.group_coordinator.validate_offset_fetch(
                    g["group_id"], g["member_id"], g["member_epoch"])
                if error != Errors.NONE:
                    return {"group_id": g["group_id"], "error_code": error, "topics": []}
            return {"group_id": g["group_id"], "error_code": error,
                    "topics": topics(g["group_id"], g["topics"])}

        if version >= 8:
            response = {"throttle_time_ms": 0, "groups": [group(g) for g in body["groups"]]}
        else:
            response = {
                "throttle_time_ms": 0,
                "error_code": status(body["group_id"]) if version >= 2 else Errors.NONE,
                "topics": topics(body["group_id"], body["topics"]),
            }
        self.respond(request, response)

    # -- the classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup -----------------

    def group_refused(self, request: Request, group_id: str) -> bool:
        """Kafka: a member needs READ on its group; refused, the request is answered with
        GROUP_AUTHORIZATION_FAILED here (True)."""
        if self.authorize(request, AclOperation.READ, ResourceType.GROUP, group_id):
            return False
        self.send_error_response(request, Errors.GROUP_AUTHORIZATION_FAILED)
        return True

    def handle_join_group_request(self, request: Request) -> None:
        """Parked in the group until the rebalance completes; answered by the callback, from
        whichever thread completes it (a handler, or the rebalance purgatory's reaper)."""
        body, version = body_of(request), request.api_version
        if self.group_refused(request, body["group_id"]):
            return

        def send_response(result: JoinGroupResult) -> None:
            self.respond(request, {
                "throttle_time_ms": 0,
                "error_code": result.error,
                "generation_id": result.generation_id,
                "protocol_type": result.protocol_type,
                # null before v7 is not encodable: "" means no protocol there.
                "protocol_name": result.protocol_name if version >= 7 else
                                 (result.protocol_name or ""),
                "leader": result.leader_id,
                "skip_assignment": False,
                "member_id": result.member_id,
                "members": [{"member_id": m, "group_instance_id": instance, "metadata": metadata}
                            for m, instance, metadata in result.members],
            })

        self.group_coordinator.handle_join_group(
            group_id=body["group_id"],
            member_id=body["member_id"],
            group_instance_id=body.get("group_instance_id"),
            require_known_member_id=version >= 4,  # KIP-394
            client_id=request.header.get("client_id") or "",
            client_host="/" + request.client_address[0],
            rebalance_timeout_ms=body.get("rebalance_timeout_ms", -1),
            session_timeout_ms=body["session_timeout_ms"],
            protocol_type=body["protocol_type"],
            protocols=[(p["name"], p["metadata"]) for p in body["protocols"]],
            response_callback=send_response,
        )

    def handle_sync_group_request(self, request: Request) -> None:
        body = body_of(request)
        if self.group_refused(request, body["group_id"]):
            return

        def send_response(result: SyncGroupResult) -> None:
            self.respond(request, {
                "throttle_time_ms": 0, "error_code": result.error,
                "protocol_type": result.protocol_type, "protocol_name": result.protocol_name,
                "assignment": result.assignment,
            })

        self.group_coordinator.handle_sync_group(
            body["group_id"], body["generation_id"], body["member_id"],
            body.get("protocol_type"), body.get("protocol_name"),
            {a["member_id"]: a["assignment"] for a in body["assignments"]},
            send_response, body.get("group_instance_id"),
        )

    def handle_heartbeat_request(self, request: Request) -> None:
        body = body_of(request)
        if self.group_refused(request, body["group_id"]):
            return
        error = self.group_coordinator.handle_heartbeat(
            body["group_id"], body["member_id"], body["generation_id"],
            body.get("group_instance_id"))
        self.respond(request, {"throttle_time_ms": 0, "error_code": error})

    def handle_leave_group_request(self, request: Request) -> None:
        body, version = body_of(request), request.api_version
        if self.group_refused(request, body["group_id"]):
            return
        if version >= 3:  # several members at once (KIP-345)
            members = [(m["member_id"], m.get("group_instance_id")) for m in body["members"]]
        else:
            members = [(body["member_id"], None)]
        error, member_errors = self.group_coordinator.handle_leave_group(
            body["group_id"], [m for m, _ in members], [i for _, i in members])
        if version < 3 and error == Errors.NONE and member_errors:
            error = member_errors[0]  # the one member's error is the request's
        self.respond(request, {
            "throttle_time_ms": 0, "error_code": error,
            "members": [{"member_id": m, "group_instance_id": instance, "error_code": e}
                        # none when the whole request failed
                        for (m, instance), e in zip(members, member_errors, strict=False)],
        })

    # -- DescribeGroups, ListGroups ----------------------------------------------------------

    def handle_describe_groups_request(self, request: Request) -> None:
        body = body_of(request)
        groups = []
        for group_id in body["groups"]:
            if not self.authorize(request, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
                groups.append({"error_code": Errors.GROUP_AUTHORIZATION_FAILED,
                               "group_id": group_id, "group_state": "", "protocol_type": "",
                               "protocol_data": "", "members": [],
                               "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})
                continue
            error, summary = self.group_coordinator.handle_describe_group(group_id)
            operations = self.authorized_operations(request, ResourceType.GROUP, group_id) \
                if body.get("include_authorized_operations", False) \
                else AUTHORIZED_OPERATIONS_OMITTED  # KIP-430
            groups.append({"error_code": error, "group_id": group_id,
                           "authorized_operations": operations, **summary})
        self.respond(request, {"throttle_time_ms": 0, "groups": groups})

    def handle_list_groups_request(self, request: Request) -> None:
        body = body_of(request)
        states = {s.lower() for s in body.get("states_filter") or []}
        types = {t.lower() for t in body.get("types_filter") or []}
        coordinator = self.group_coordinator
        listed = [
            {"group_id": group_id, "protocol_type": protocol_type, "group_state": state,
             "group_type": coordinator.group_type(group_id)}
            for group_id, protocol_type, state in coordinator.handle_list_groups()
            if not states or state.lower() in states
        ]
        listed = [g for g in listed if not types or g["group_type"] in types]
        # Kafka: DESCRIBE on the cluster lists every group, otherwise those one may describe.
        if not self.authorize(request, AclOperation.DESCRIBE, ResourceType.CLUSTER):
            listed = [g for g in listed if self.authorize(
                request, AclOperation.DESCRIBE, ResourceType.GROUP, g["group_id"])]
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE, "groups": listed})

    # -- DeleteGroups, OffsetDelete ------------------------------------------------------------

    def handle_delete_groups_request(self, request: Request) -> None:
        """DELETE on each group, then the coordinator deletes the Empty ones."""
        body = body_of(request)
        asked = body["groups_names"]
        refused = {g: Errors.GROUP_AUTHORIZATION_FAILED for g in asked
                   if not self.authorize(request, AclOperation.DELETE, ResourceType.GROUP, g)}

        def send_response(results: dict[str, int]) -> None:
            results = {**results, **refused}
            self.respond(request, {"throttle_time_ms": 0, "results": [
                {"group_id": g, "error_code": results[g]} for g in dict.fromkeys(asked)]})

        self.group_coordinator.handle_delete_groups(
            [g for g in dict.fromkeys(asked) if g not in refused], send_response)

    def handle_offset_delete_request(self, request: Request) -> None:
        """DELETE on the group (else GROUP_AUTHORIZATION_FAILED for the whole request), READ
        on each topic; partitions of unknown topics are UNKNOWN_TOPIC_OR_PARTITION."""
        body = body_of(request)
        if not self.authorize(request, AclOperation.DELETE, ResourceType.GROUP, body["group_id"]):
            self.respond(request, {"error_code": Errors.GROUP_AUTHORIZATION_FAILED,
                                   "throttle_time_ms": 0, "topics": []})
            return
        errors_of: dict[tuple[str, int], int] = {}
        partitions = []
        for t in body["topics"]:
            allowed = self.authorize_topic(request, AclOperation.READ, t["name"])
            for p in t["partitions"]:
                tp = (t["name"], p["partition_index"])
                if not allowed:
                    errors_of[tp] = Errors.TOPIC_AUTHORIZATION_FAILED
                elif not self.partition_exists(*tp):
                    errors_of[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    partitions.append(tp)

        def send_response(error: int, results: dict[tuple[str, int], int]) -> None:
            results = {**results, **errors_of}
            self.respond(request, {"error_code": error, "throttle_time_ms": 0, "topics": [] if
                                   error != Errors.NONE else [
                {"name": t["name"], "partitions": [
                    {"partition_index": p["partition_index"],
                     "error_code": results[(t["name"], p["partition_index"])]}
                    for p in t["partitions"]]} for t in body["topics"]]})

        self.group_coordinator.handle_delete_offsets(body["group_id"], partitions,
                                                            send_response)


__all__ = ["COORDINATOR_TYPE_GROUP", "COORDINATOR_TYPE_TRANSACTION", "GroupApis"]
