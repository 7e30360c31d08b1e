"""``ControllerApis``: the requests the controller answers."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from kafkacore.broker.config.config_resource import RESOURCE_TYPE_BROKER
from kafkacore.broker.config.config_source import ConfigSource
from kafkacore.broker.config.dynamic_broker_config import DEFAULT_RESOURCE
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.controller import kafka_network_channel as raft_wire
from kafkacore.broker.controller.quorum_controller import QuorumController
from kafkacore.broker.controller.replication_control_manager import (
    EXCESSIVE_BATCH_MESSAGE,
    EXCESSIVE_PARTITIONS_MESSAGE,
    MAX_PARTITIONS_PER_BATCH,
    MAX_RECORDS_PER_USER_OP,
    partitions_added,
    total_partitions_requested,
)
from kafkacore.broker.metadata.metadata_log import METADATA_TOPIC_ID
from kafkacore.broker.metadata.quorum_description import (
    UNKNOWN,
    asks_for_the_metadata_partition,
    describe_quorum_response,
)
from kafkacore.broker.network.api_request_handler import ApiRequestHandler
from kafkacore.broker.network.request_channel import Request, RequestChannel
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.security.authorizer.acl_apis import AclApis
from kafkacore.broker.security.authorizer.standard_authorizer import StandardAuthorizer
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.errors import (
    BrokerResponseError,
    Errors,
    IllegalStateError,
    NotControllerError,
    NotLeaderOrFollowerError,
)
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
#: what a controller of a quorum answers whether it is the active one or not: the quorum's own
#: messages, and DescribeQuorum, which a voter that is not the Raft leader answers with
#: NOT_LEADER_OR_FOLLOWER for the partition, as Kafka's ``KafkaRaftClient`` does.  Everything
#: else only the active one answers; the others answer NOT_CONTROLLER.
QUORUM_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH,
                         ApiKey.END_QUORUM_EPOCH, ApiKey.DESCRIBE_QUORUM,
                         ApiKey.FETCH_SNAPSHOT})
#: at most this many metadata records in one Fetch answer (the broker fetches again)
MAX_RECORDS_PER_FETCH = 10_000


def reassignment_results(results: dict[tuple[str, int], tuple[int, str | None]]
                         ) -> dict[str, Any]:
    """AlterPartitionReassignments' answer, by topic."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), (error, message) in results.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": index, "error_code": error, "error_message": message})
    return {"throttle_time_ms": 0, "error_code": Errors.NONE, "error_message": None,
            "allow_replication_factor_change": True,
            "responses": [{"name": t, "partitions": parts} for t, parts in by_topic.items()]}


def not_leader_describe_quorum_response(leader_id: int, leader_epoch: int) -> dict[str, Any]:
    """DescribeQuorum's answer from a voter that is not the leader (Kafka's
    ``DescribeQuorumResponse.singletonErrorResponse``): the error for the partition."""
    error = Errors.NOT_LEADER_OR_FOLLOWER
    return {"error_code": Errors.NONE, "error_message": None, "nodes": [], "topics": [{
        "topic_name": raft_wire.CLUSTER_METADATA_TOPIC, "partitions": [{
            "partition_index": 0, "error_code": error,
            "error_message": NotLeaderOrFollowerError.description,
            "leader_id": leader_id, "leader_epoch": leader_epoch, "high_watermark": UNKNOWN,
            "current_voters": [], "observers": []}]}]}


def create_topic_result(name: str, error: int, message: str | None) -> dict[str, Any]:
    """One topic's CreateTopics answer, before it is known."""
    return {"name": name, "topic_id": uuid.UUID(int=0), "error_code": error,
            "error_message": message, "num_partitions": -1, "replication_factor": -1,
            "configs": None}


def election_results(results: dict[tuple[str, int], tuple[int, str | None]]
                     ) -> list[dict[str, Any]]:
    """ElectLeaders' answer, by topic."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), (error, message) in results.items():
        by_topic.setdefault(topic, []).append(
            {"partition_id": index, "error_code": error, "error_message": message})
    return [{"topic": t, "partition_result": parts} for t, parts in by_topic.items()]


class ControllerApis(ApiRequestHandler):
    """The APIs the controller answers (Kafka's ``ControllerApis``)."""

    def __init__(self, request_channel: RequestChannel, config: BrokerConfig,
                 controller: QuorumController, authorizer: StandardAuthorizer | None,
                 listeners: Callable[[], list[tuple[str, str, int]]] | None = None) -> None:
        """``authorizer``: the ACLs' judge (None: authorization is off; the ACL APIs manage
        the cluster's ACLs all the same, in the controller's ``AclControlManager``);
        ``listeners``: this controller's endpoints as (name, host, port), the bound ports once
        listening (DescribeQuorum's nodes; the configured ones if not given)."""
        super().__init__(request_channel)
        self.authorizer = authorizer
        self.config = config
        self.controller = controller
        self.listeners = listeners or (lambda: [
            (name, e.host, e.port) for name, e in config.advertised.items()])
        self.handlers = {
            ApiKey.API_VERSIONS: self.handle_api_versions_request,
            ApiKey.METADATA: self.handle_metadata_request,
            ApiKey.FETCH: self.handle_fetch_request,
            ApiKey.CREATE_TOPICS: self.handle_create_topics_request,
            ApiKey.DELETE_TOPICS: self.handle_delete_topics_request,
            ApiKey.DESCRIBE_CONFIGS: self.handle_describe_configs_request,
            ApiKey.CREATE_PARTITIONS: self.handle_create_partitions_request,
            ApiKey.BROKER_REGISTRATION: self.handle_broker_registration_request,
            ApiKey.BROKER_HEARTBEAT: self.handle_broker_heartbeat_request,
            ApiKey.ALTER_PARTITION: self.handle_alter_partition_request,
            ApiKey.ELECT_LEADERS: self.handle_elect_leaders_request,
            ApiKey.ALTER_CONFIGS: self.handle_alter_configs_request,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.handle_incremental_alter_configs_request,
            ApiKey.DESCRIBE_CLIENT_QUOTAS: self.handle_describe_client_quotas_request,
            ApiKey.ALTER_CLIENT_QUOTAS: self.handle_alter_client_quotas_request,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS:
                self.handle_alter_partition_reassignments_request,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: self.handle_list_partition_reassignments_request,
            ApiKey.DESCRIBE_QUORUM: self.handle_describe_quorum_request,
            ApiKey.ALLOCATE_PRODUCER_IDS: self.handle_allocate_producer_ids_request,
        }
        if controller.raft is not None:
            self.handlers.update({
                ApiKey.VOTE: self.handle_raft_request,
                ApiKey.BEGIN_QUORUM_EPOCH: self.handle_raft_request,
                ApiKey.END_QUORUM_EPOCH: self.handle_raft_request,
                ApiKey.FETCH_SNAPSHOT: self.handle_raft_request,
            })
        acl_apis = AclApis(self, controller)
        self.handlers.update({
            ApiKey.CREATE_ACLS: acl_apis.handle_create_acls_request,
            ApiKey.DESCRIBE_ACLS: acl_apis.handle_describe_acls_request,
            ApiKey.DELETE_ACLS: acl_apis.handle_delete_acls_request,
        })

    def handle(self, request: Request) -> None:
        if request.api_key == ApiKey.API_VERSIONS and request.body is None:
            self.handle_unparsed_api_versions_request(request)
            return
        handler = self.handlers.get(request.api_key)
        if handler is None:
            self.request_channel.close_connection(
                request, f"API key {request.api_key} is not a controller API")
            return
        low, high = self.supported_versions(request.api_key)
        if request.body is None or not low <= request.api_version <= high:
            self.send_error_response(request, Errors.UNSUPPORTED_VERSION)
            return
        if request.api_key != ApiKey.API_VERSIONS and not self.authorize(
                request, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER) and not (
                request.api_key == ApiKey.DESCRIBE_QUORUM and self.authorize(
                    request, AclOperation.DESCRIBE, ResourceType.CLUSTER)):
            # Only brokers talk to the controller (Kafka: CLUSTER_ACTION for registrations,
            # heartbeats, AlterPartition and the Envelope of forwarded requests); a request
            # whose answer has no error code to carry the refusal closes the connection.
            # DescribeQuorum is a client's too: DESCRIBE on the cluster will do (Kafka's
            # ControllerApis asks that of it; a broker forwards it having asked the same).
            self.send_error_response(request, Errors.CLUSTER_AUTHORIZATION_FAILED)
            return
        if self.controller.raft is not None and request.api_key not in QUORUM_APIS \
                and not self._is_voter_fetch(request):
            # Only the active controller decides and answers (Kafka's NOT_CONTROLLER): a broker
            # moves on to another controller.  A request whose answer has no error code to
            # carry it closes the connection, which a broker takes the same way.
            try:
                self.controller.check_active()
                handler(request)
            except NotControllerError:
                self.send_error_response(request, Errors.NOT_CONTROLLER)
            return
        handler(request)

    def handle_metadata_request(self, request: Request) -> None:
        """The whole image: every topic's partitions and every active broker."""
        c = self.controller
        with c.lock:
            active = c.active_brokers()
            brokers = [{"node_id": b.broker_id, "host": b.host, "port": b.port, "rack": None}
                       for b in sorted(c.brokers.values(), key=lambda b: b.broker_id)
                       if b.broker_id in active]
            topics = [{
                "error_code": Errors.NONE, "name": t.name, "topic_id": uuid.UUID(t.topic_id),
                "is_internal": False, "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
                "partitions": [{
                    "error_code": Errors.NONE, "partition_index": i, "leader_id": p.leader,
                    "leader_epoch": p.leader_epoch, "replica_nodes": list(p.replicas),
                    "isr_nodes": list(p.isr),
                    "offline_replicas": [r for r in p.replicas if r not in active]}
                    for i, p in enumerate(t.partitions)],
            } for t in c.replication.topics.values()]
        self.respond(request, {"throttle_time_ms": 0, "brokers": brokers,
                               "cluster_id": self.config["cluster.id"],
                               "controller_id": c.node_id, "topics": topics,
                               "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})

    def _is_voter_fetch(self, request: Request) -> bool:
        """A Fetch from another controller of the quorum (Raft's replication): from a voter's
        id, naming the cluster (KIP-595's ClusterId, which the voters send).  A broker's
        metadata fetch names no cluster: in a combined node (``process.roles=broker,
        controller``) the broker has its voter's id, and is an observer all the same."""
        raft = self.controller.raft
        return (raft is not None and request.api_key == ApiKey.FETCH
                and request.body is not None
                and request.body.get("cluster_id") is not None
                and raft_wire.fetch_replica_id(request.body) in raft.voters)

    def handle_raft_request(self, request: Request) -> None:
        """Vote, BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot, or a voter's Fetch: handed to this
        controller's voter (``KafkaRaftManager``), answered when it answers (a Fetch with
        nothing new is held, up to its wait)."""
        raft = self.controller.raft
        if request.body is None or raft is None:
            raise IllegalStateError(f"{request!r}: not a request of a quorum's voter")
        try:
            source, body = raft_wire.request_from_wire(request.api_key, request.body)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            self.request_channel.close_connection(request, f"a malformed quorum request: {exc}")
            return
        raft.handle_request(source, body, lambda answer: self.respond(
            request, raft_wire.response_to_wire(answer)))

    def handle_fetch_request(self, request: Request) -> None:
        """The metadata records from the broker's offset (KRaft brokers fetch
        ``__cluster_metadata`` from the controller quorum): each record's value is its JSON,
        in one record batch whose base offset is the fetch offset.  In a quorum, a Fetch from
        another controller is Raft's replication (:meth:`handle_raft_request`), and brokers
        fetch only what the quorum committed."""
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        if self._is_voter_fetch(request):
            self.handle_raft_request(request)
            return
        body = request.body
        replica_id = body["replica_state"]["replica_id"] if body.get("replica_state") \
            else body.get("replica_id", UNKNOWN)
        responses = []
        for t in body["topics"]:
            parts = []
            for p in t["partitions"]:
                part: dict[str, Any] = {
                    "partition_index": p["partition"], "error_code": Errors.NONE,
                    "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                    "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}
                parts.append(part)
                if t.get("topic_id") != METADATA_TOPIC_ID or p["partition"] != 0:
                    part["error_code"] = Errors.UNKNOWN_TOPIC_ID
                    continue
                error, records, start, end = self.controller.fetch_records(
                    p["fetch_offset"], MAX_RECORDS_PER_FETCH, replica_id)
                part.update(error_code=error, high_watermark=end, last_stable_offset=end,
                            log_start_offset=start)
                if records:
                    builder = MemoryRecordsBuilder(1 << 16, base_offset=p["fetch_offset"])
                    now = int(time.time() * 1000)
                    for record in records:  # at least one, then up to partition_max_bytes
                        builder.append(now, None, json.dumps(record).encode())
                        if builder.estimated_size_in_bytes() >= p["partition_max_bytes"]:
                            break
                    part["records"] = bytes(builder.build())
            responses.append({"topic_id": t.get("topic_id"), "partitions": parts})
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                               "session_id": 0, "responses": responses})

    def handle_describe_quorum_request(self, request: Request) -> None:
        """The ``__cluster_metadata`` partition's quorum (KIP-595): this controller leads it,
        alone, at the epoch of its last start; the high watermark is its metadata log's end
        offset; the brokers are observers at the offset of their last metadata fetch."""
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        c = self.controller
        if c.raft is not None:
            self._describe_raft_quorum(request)
            return
        high_watermark, voters, observers = c.describe_quorum()
        self.respond(request, describe_quorum_response(
            request.body, leader_id=c.node_id, leader_epoch=c.leader_epoch,
            high_watermark=high_watermark, voters=voters, observers=observers,
            nodes=[(c.node_id, self.listeners())]))

    def _describe_raft_quorum(self, request: Request) -> None:
        """DescribeQuorum of a quorum of controllers, from the Raft leader's state.  Any voter
        answers (Kafka's ``handleDescribeQuorumRequest``): one that does not lead says
        NOT_LEADER_OR_FOLLOWER for the partition, with the leader and epoch it knows (Kafka
        leaves them at 0; they tell an operator where to ask)."""
        c = self.controller
        raft = c.raft
        if raft is None or request.body is None:
            raise IllegalStateError(f"{request!r}: no quorum to describe")
        status = raft.status()
        if asks_for_the_metadata_partition(request.body) and not status.is_leader:
            self.respond(request, not_leader_describe_quorum_response(
                status.leader_id, status.epoch))
            return
        high_watermark, voters, observers = c.describe_quorum()
        name = self.listeners()[0][0]
        self.respond(request, describe_quorum_response(
            request.body, leader_id=c.node_id, leader_epoch=status.epoch,
            high_watermark=high_watermark, voters=voters, observers=observers,
            nodes=[(v, [(name, host, port)]) for v, (host, port) in sorted(raft.voters.items())]))

    def handle_create_topics_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        body = request.body
        default_rf = self.config["default.replication.factor"]
        default_partitions = self.config["num.partitions"]
        validate_only = body.get("validate_only", False)
        if total_partitions_requested(body["topics"], default_partitions) \
                > MAX_PARTITIONS_PER_BATCH:
            # Refused whole before anything is placed (Kafka's validateTotalNumberOfPartitions).
            self.respond(request, {"throttle_time_ms": 0, "topics": [
                create_topic_result(t["name"], Errors.POLICY_VIOLATION,
                                    EXCESSIVE_PARTITIONS_MESSAGE) for t in body["topics"]]})
            return
        results = []
        # The request's topics are one batch of records: one append, one fsync.
        with self.controller.batch():
            for t in body["topics"]:
                results.append(self._create_topic(t, default_partitions, default_rf,
                                                  validate_only))
        self.respond(request, {"throttle_time_ms": 0, "topics": results})

    def _create_topic(self, t: dict[str, Any], default_partitions: int, default_rf: int,
                      validate_only: bool) -> dict[str, Any]:
        result = create_topic_result(t["name"], Errors.NONE, None)
        configs = {c["name"]: c["value"] for c in t["configs"] if c["value"] is not None}
        assignments: list[list[int]] | None = None
        if t["assignments"]:
            # Kafka's checks of a manual assignment's shape; the brokers named are checked by
            # the controller.
            if t["num_partitions"] != -1:
                result.update(error_code=Errors.INVALID_REQUEST, error_message="A manual "
                              "partition assignment was specified, but numPartitions was not "
                              "set to -1.")
                return result
            if t["replication_factor"] != -1:
                result.update(error_code=Errors.INVALID_REQUEST, error_message="A manual "
                              "partition assignment was specified, but replicationFactor was "
                              "not set to -1.")
                return result
            by_index = {a["partition_index"]: list(a["broker_ids"]) for a in t["assignments"]}
            if sorted(by_index) != list(range(len(t["assignments"]))):
                result.update(error_code=Errors.INVALID_REPLICA_ASSIGNMENT, error_message=(
                    "Partitions should be a consecutive 0-based integer sequence"))
                return result
            assignments = [by_index[i] for i in range(len(by_index))]
            partitions, rf = len(assignments), len(assignments[0])
        else:
            partitions = t["num_partitions"] if t["num_partitions"] != -1 \
                else default_partitions
            rf = t["replication_factor"] if t["replication_factor"] != -1 else default_rf
        error, message, info = self.controller.create_topic(
            t["name"], partitions, rf, configs, assignments, validate_only)
        result.update(error_code=error, error_message=message)
        if error == Errors.NONE:
            result.update(num_partitions=partitions, replication_factor=rf)
        if info is not None:
            result["topic_id"] = uuid.UUID(info.topic_id)
        return result

    def handle_delete_topics_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        body = request.body
        # A broker forwards topics by name (it resolved v6's ids).
        names = [t["name"] for t in body["topics"]] if request.api_version >= 6 \
            else body["topic_names"]
        results = []
        for name in names:
            info = self.controller.replication.topics.get(name)
            topic_id = uuid.UUID(info.topic_id) if info is not None else uuid.UUID(int=0)
            results.append({"name": name, "topic_id": topic_id, "error_message": None,
                            "error_code": self.controller.delete_topic(name)})
        self.respond(request, {"throttle_time_ms": 0, "responses": results})

    def handle_create_partitions_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        body = request.body
        with self.controller.lock:
            current = {t["name"]: len(info.partitions) for t in body["topics"]
                       if (info := self.controller.replication.topics.get(t["name"]))}
        if partitions_added(current, body["topics"]) > MAX_RECORDS_PER_USER_OP:
            # One record per new partition: Kafka's bounded record list refuses the whole
            # operation (its BoundedListTooLongException, answered as POLICY_VIOLATION).
            self.respond(request, {"throttle_time_ms": 0, "results": [
                {"name": t["name"], "error_code": Errors.POLICY_VIOLATION,
                 "error_message": EXCESSIVE_BATCH_MESSAGE} for t in body["topics"]]})
            return
        results = []
        for t in body["topics"]:
            error, message = self.controller.create_partitions(
                t["name"], t["count"], t["assignments"], body["validate_only"])
            results.append({"name": t["name"], "error_code": error, "error_message": message})
        self.respond(request, {"throttle_time_ms": 0, "results": results})

    def handle_describe_configs_request(self, request: Request) -> None:
        """The dynamic configs the controller keeps: a topic's own (DYNAMIC_TOPIC_CONFIG), a
        broker resource's (DYNAMIC_BROKER_CONFIG, or DYNAMIC_DEFAULT_BROKER_CONFIG for "").
        Brokers behind the last snapshot read them with the whole image."""
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        results = []
        for res in request.body["resources"]:
            name = res["resource_name"]
            result: dict[str, Any] = {"error_code": Errors.NONE, "error_message": None,
                                      "resource_type": res["resource_type"],
                                      "resource_name": name, "configs": []}
            if res["resource_type"] == RESOURCE_TYPE_BROKER:
                configs = self.controller.configuration.broker_configs.get(name, {})
                source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG if name == DEFAULT_RESOURCE \
                    else ConfigSource.DYNAMIC_BROKER_CONFIG
            else:
                info = self.controller.replication.topics.get(name)
                if info is None:
                    result["error_code"] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                configs = {} if info is None else info.configs
                source = ConfigSource.TOPIC_CONFIG
            result["configs"] = [
                {"name": k, "value": v, "read_only": False, "is_default": False,
                 "config_source": source, "is_sensitive": False, "synonyms": []}
                for k, v in configs.items()]
            results.append(result)
        self.respond(request, {"throttle_time_ms": 0, "results": results})

    def handle_alter_configs_request(self, request: Request) -> None:
        self._alter_configs(request, incremental=False)

    def handle_incremental_alter_configs_request(self, request: Request) -> None:
        self._alter_configs(request, incremental=True)

    def _alter_configs(self, request: Request, incremental: bool) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        body = request.body
        self.respond(request, {"throttle_time_ms": 0, "responses": self.controller.alter_configs(
            body["resources"], incremental, body["validate_only"])})

    def handle_describe_client_quotas_request(self, request: Request) -> None:
        """Every quota a filter matches (a broker behind the last snapshot takes them all)."""
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        answer: dict[str, Any] = {"throttle_time_ms": 0, "error_code": Errors.NONE,
                                  "error_message": None, "entries": None}
        try:
            with self.controller.lock:
                answer["entries"] = self.controller.client_quotas.describe(
                    request.body["components"], request.body["strict"])
        except BrokerResponseError as exc:
            answer.update(error_code=exc.errno, error_message=exc.error_message)
        self.respond(request, answer)

    def handle_alter_client_quotas_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        self.respond(request, {"throttle_time_ms": 0, "entries": self.controller
                               .alter_client_quotas(request.body["entries"],
                                                    request.body["validate_only"])})

    def handle_elect_leaders_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        body = request.body
        asked = body["topic_partitions"]
        wanted = None if asked is None else [(t["topic"], p) for t in asked
                                             for p in t["partitions"]]
        results = self.controller.elect_leaders(body.get("election_type", 0), wanted)
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                               "replica_election_results": election_results(results)})

    def handle_alter_partition_reassignments_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        body = request.body
        results = self.controller.alter_partition_reassignments(
            [(t["name"], p["partition_index"], p["replicas"]) for t in body["topics"]
             for p in t["partitions"]], body.get("allow_replication_factor_change", True))
        self.respond(request, reassignment_results(results))

    def handle_list_partition_reassignments_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        asked = request.body["topics"]
        with self.controller.lock:
            ongoing = self.controller.replication.ongoing_reassignments(
                None if asked is None else [(t["name"], p) for t in asked
                                            for p in t["partition_indexes"]])
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for (name, index), part in ongoing.items():
                by_topic.setdefault(name, []).append({
                    "partition_index": index, "replicas": list(part.replicas),
                    "adding_replicas": list(part.adding_replicas),
                    "removing_replicas": list(part.removing_replicas)})
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                               "error_message": None, "topics": [
                                   {"name": t, "partitions": parts}
                                   for t, parts in by_topic.items()]})

    def handle_broker_registration_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        body = request.body
        listener = body["listeners"][0] if body["listeners"] else None
        if listener is None:
            self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.INVALID_REQUEST,
                                   "broker_epoch": -1})
            return
        try:
            epoch = self.controller.register_broker(body["broker_id"], listener["host"],
                                                    listener["port"], str(body["incarnation_id"]))
        except BrokerResponseError as exc:  # another incarnation's session is still valid
            log.warning("controller: BrokerRegistration of broker %d from %s:%d refused: %s",
                        body["broker_id"], listener["host"], listener["port"], exc)
            self.respond(request, {"throttle_time_ms": 0, "error_code": exc.errno,
                                   "broker_epoch": -1})
            return
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                               "broker_epoch": epoch})

    def handle_broker_heartbeat_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        body = request.body
        error, fenced = self.controller.heartbeat(body["broker_id"], body["broker_epoch"],
                                                  body["want_shut_down"])
        self.respond(request, {"throttle_time_ms": 0, "error_code": error, "is_caught_up": True,
                               "is_fenced": fenced,
                               "should_shut_down": body["want_shut_down"] and error == Errors.NONE})

    def handle_alter_partition_request(self, request: Request) -> None:
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        body = request.body
        # Only the broker registered at that epoch may change its partitions' ISR.
        stale = self.controller.check_broker_epoch(body["broker_id"], body["broker_epoch"])
        if stale != Errors.NONE:
            self.respond(request, {"throttle_time_ms": 0, "error_code": stale, "topics": []})
            return
        topics = []
        for t in body["topics"]:
            parts = []
            for p in t["partitions"]:
                new_isr = ([b["broker_id"] for b in p["new_isr_with_epochs"]]
                           if "new_isr_with_epochs" in p else p["new_isr"])
                error, part = self.controller.alter_partition(
                    body["broker_id"], t["topic_id"], p["partition_index"], p["leader_epoch"],
                    new_isr, p["partition_epoch"])
                parts.append({"partition_index": p["partition_index"], "error_code": error,
                              "leader_id": part.leader if part else -1,
                              "leader_epoch": part.leader_epoch if part else -1,
                              "isr": list(part.isr) if part else [],
                              "leader_recovery_state": 0,
                              "partition_epoch": part.partition_epoch if part else -1})
            topics.append({"topic_id": t["topic_id"], "partitions": parts})
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE, "topics": topics})

    def handle_allocate_producer_ids_request(self, request: Request) -> None:
        """A broker's next block of producer ids (KIP-730).  Only brokers get this far
        (CLUSTER_ACTION, in :meth:`handle`), and only the one registered at the epoch it
        names gets a block: a stranger that knows a broker's id does not."""
        if request.body is None:
            raise IllegalStateError(f"{request!r}: dispatched without a decoded body")
        body = request.body
        error, block = self.controller.allocate_producer_ids(body["broker_id"],
                                                             body["broker_epoch"])
        self.respond(request, {"throttle_time_ms": 0, "error_code": error,
                               "producer_id_start": -1 if block is None
                               else block.first_producer_id,
                               "producer_id_len": 0 if block is None else block.size})
