"""``ControllerApis``: the requests the controller answers."""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any

from kafkacore.broker.api_request_handler import ApiRequestHandler
from kafkacore.broker.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.authorizer.acl_apis import AclApis
from kafkacore.broker.metadata_log import METADATA_TOPIC_ID
from kafkacore.broker.request_channel import Request
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

if TYPE_CHECKING:
    from kafkacore.broker.controller.controller_server import ControllerServer

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
#: at most this many metadata records in one Fetch answer (the broker fetches again)
MAX_RECORDS_PER_FETCH = 10_000


class ControllerApis(ApiRequestHandler):
    """The APIs the controller answers (Kafka's ``ControllerApis``)."""

    def __init__(self, server: ControllerServer) -> None:
        super().__init__(server.request_channel)
        self.authorizer = server.authorizer
        self.config = server.config
        self.controller = server.controller
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
        }
        acl_apis = AclApis(self, server.acls)
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
                request, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER):
            # Only brokers talk to the controller (Kafka: CLUSTER_ACTION for registrations,
            # heartbeats, AlterPartition and the Envelope of forwarded requests); a request
            # whose answer has no error code to carry the refusal closes the connection.
            self.send_error_response(request, Errors.CLUSTER_AUTHORIZATION_FAILED)
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

    def handle_fetch_request(self, request: Request) -> None:
        """The metadata records from the broker's offset (KRaft brokers fetch
        ``__cluster_metadata`` from the controller quorum): each record's value is its JSON,
        in one record batch whose base offset is the fetch offset."""
        assert request.body is not None
        responses = []
        for t in request.body["topics"]:
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
                    p["fetch_offset"], MAX_RECORDS_PER_FETCH)
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

    def handle_create_topics_request(self, request: Request) -> None:
        assert request.body is not None
        body = request.body
        default_rf = self.config["default.replication.factor"]
        default_partitions = self.config["num.partitions"]
        results = []
        # The request's topics are one batch of records: one append, one fsync.
        with self.controller.batch():
            for t in body["topics"]:
                results.append(self._create_topic(t, default_partitions, default_rf,
                                                  body.get("validate_only", False)))
        self.respond(request, {"throttle_time_ms": 0, "topics": results})

    def _create_topic(self, t: dict[str, Any], default_partitions: int, default_rf: int,
                      validate_only: bool) -> dict[str, Any]:
        result: dict[str, Any] = {
            "name": t["name"], "topic_id": uuid.UUID(int=0), "error_code": Errors.NONE,
            "error_message": None, "num_partitions": -1, "replication_factor": -1,
            "configs": None}
        configs = {c["name"]: c["value"] for c in t["configs"] if c["value"] is not None}
        if t["assignments"]:
            result.update(error_code=Errors.INVALID_REQUEST,
                          error_message="manual replica assignments are not supported")
            return result
        partitions = t["num_partitions"] if t["num_partitions"] != -1 else default_partitions
        rf = t["replication_factor"] if t["replication_factor"] != -1 else default_rf
        if validate_only:
            result.update(num_partitions=partitions, replication_factor=rf)
            return result
        error, message, info = self.controller.create_topic(t["name"], partitions, rf, configs)
        result.update(error_code=error, error_message=message)
        if info is not None:
            result.update(topic_id=uuid.UUID(info.topic_id), num_partitions=partitions,
                          replication_factor=rf)
        return result

    def handle_delete_topics_request(self, request: Request) -> None:
        assert request.body is not None
        results = [{"name": name, "error_code": self.controller.delete_topic(name)}
                   for name in request.body["topic_names"]]
        self.respond(request, {"throttle_time_ms": 0, "responses": results})

    def handle_create_partitions_request(self, request: Request) -> None:
        assert request.body is not None
        body = request.body
        results = []
        for t in body["topics"]:
            error, message = self.controller.create_partitions(
                t["name"], t["count"], t["assignments"], body["validate_only"])
            results.append({"name": t["name"], "error_code": error, "error_message": message})
        self.respond(request, {"throttle_time_ms": 0, "results": results})

    def handle_describe_configs_request(self, request: Request) -> None:
        """A topic's own configs (DYNAMIC_TOPIC_CONFIG): what brokers need to open its logs."""
        assert request.body is not None
        results = []
        for res in request.body["resources"]:
            info = self.controller.replication.topics.get(res["resource_name"])
            result: dict[str, Any] = {"error_code": Errors.NONE, "error_message": None,
                                      "resource_type": res["resource_type"],
                                      "resource_name": res["resource_name"], "configs": []}
            if info is None:
                result["error_code"] = Errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                result["configs"] = [
                    {"name": k, "value": v, "read_only": False, "is_default": False,
                     "config_source": 1, "is_sensitive": False, "synonyms": []}
                    for k, v in info.configs.items()]
            results.append(result)
        self.respond(request, {"throttle_time_ms": 0, "results": results})

    def handle_broker_registration_request(self, request: Request) -> None:
        assert request.body is not None
        body = request.body
        listener = body["listeners"][0] if body["listeners"] else None
        if listener is None:
            self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.INVALID_REQUEST,
                                   "broker_epoch": -1})
            return
        epoch = self.controller.register_broker(body["broker_id"], listener["host"],
                                                listener["port"], str(body["incarnation_id"]))
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                               "broker_epoch": epoch})

    def handle_broker_heartbeat_request(self, request: Request) -> None:
        assert request.body is not None
        body = request.body
        error, fenced = self.controller.heartbeat(body["broker_id"], body["broker_epoch"],
                                                  body["want_shut_down"])
        self.respond(request, {"throttle_time_ms": 0, "error_code": error, "is_caught_up": True,
                               "is_fenced": fenced,
                               "should_shut_down": body["want_shut_down"] and error == Errors.NONE})

    def handle_alter_partition_request(self, request: Request) -> None:
        assert request.body is not None
        body = request.body
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
