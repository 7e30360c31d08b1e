"""KafkaApis: one method per API, called by the request handlers (Kafka's ``KafkaApis``).

Each ``handle_*_request`` method is named after its counterpart in Kafka's ``KafkaApis.scala``.
Produce and Fetch go through the ``ReplicaManager`` (leaders, followers, the produce and fetch
purgatories, see docs/broker/replication.rst).  Alone (no controller), a broker leads every
partition at leader epoch 0 with itself as the only replica; in a cluster it forwards CreateTopics
and DeleteTopics to the controller and answers Metadata from the controller's image.
See docs/broker/apis.rst.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkacore import errors
from kafkacore.broker.config.config_admin_manager import ConfigAdminManager
from kafkacore.broker.config.config_helper import ConfigHelper
from kafkacore.broker.config.config_source import ConfigSource
from kafkacore.broker.controller.controller_apis import (
    create_topic_result,
    election_results,
    reassignment_results,
)
from kafkacore.broker.controller.replication_control_manager import (
    ELECTION_PREFERRED,
    ELECTION_UNCLEAN,
    EXCESSIVE_BATCH_MESSAGE,
    EXCESSIVE_PARTITIONS_MESSAGE,
    MAX_PARTITIONS_PER_BATCH,
    MAX_RECORDS_PER_USER_OP,
    create_partitions_error,
    manual_assignment_error,
    partitions_added,
    total_partitions_requested,
)
from kafkacore.broker.group.consumer_group_apis import ConsumerGroupApis
from kafkacore.broker.group.group_coordinator import OffsetAndMetadata
from kafkacore.broker.group.group_metadata import JoinGroupResult, SyncGroupResult
from kafkacore.broker.group.group_metadata_manager import OFFSETS_TOPIC
from kafkacore.broker.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, LogConfig
from kafkacore.broker.log.log_manager import NewLog
from kafkacore.broker.metadata.metadata_cache import validate_topic_name
from kafkacore.broker.network import faults
from kafkacore.broker.network.api_request_handler import ApiRequestHandler
from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.security.authorizer.acl_apis import AclApis
from kafkacore.broker.server.delayed_fetch import READ_COMMITTED
from kafkacore.broker.server.replica_manager import ADMIN_CLIENT_ID
from kafkacore.broker.transaction.add_partitions_to_txn_manager import (
    has_transactional_records,
    txn_offset_commit_error,
)
from kafkacore.broker.transaction.transaction_state_manager import TRANSACTION_STATE_TOPIC
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

if TYPE_CHECKING:
    from kafkacore.broker.server.broker_server import Broker

log = logging.getLogger(__name__)

#: FindCoordinator key types
COORDINATOR_TYPE_GROUP = 0
COORDINATOR_TYPE_TRANSACTION = 1

#: "authorized operations" not computed (Kafka's ``Int.MinValue`` sentinel).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
INT32_MAX = 2**31 - 1
ZERO_UUID = uuid.UUID(int=0)


class KafkaApis(ApiRequestHandler):
    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.request_channel)
        self.broker = broker
        self.authorizer = broker.authorizer
        acl_apis = AclApis(self, self.authorizer, lambda: broker.forwarding_manager)
        consumer_group_apis = ConsumerGroupApis(self)
        config_helper = ConfigHelper(self)
        config_admin = ConfigAdminManager(
            self, broker.config, broker.broker_id, metadata_cache=broker.metadata_cache,
            log_manager=broker.log_manager, dynamic_config=broker.dynamic_config)
        #: api key -> handler; ApiVersions lists exactly these keys.
        self.handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.API_VERSIONS: self.handle_api_versions_request,
            ApiKey.METADATA: self.handle_metadata_request,
            ApiKey.CREATE_TOPICS: self.handle_create_topics_request,
            ApiKey.PRODUCE: self.handle_produce_request,
            ApiKey.FETCH: self.handle_fetch_request,
            ApiKey.LIST_OFFSETS: self.handle_list_offsets_request,
            ApiKey.INIT_PRODUCER_ID: self.handle_init_producer_id_request,
            ApiKey.DELETE_TOPICS: self.handle_delete_topics_request,
            ApiKey.DESCRIBE_CONFIGS: config_helper.handle_describe_configs_request,
            ApiKey.ALTER_CONFIGS: config_admin.handle_alter_configs_request,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: config_admin.handle_incremental_alter_configs_request,
            ApiKey.DESCRIBE_CLIENT_QUOTAS: self.handle_describe_client_quotas_request,
            ApiKey.ALTER_CLIENT_QUOTAS: self.handle_alter_client_quotas_request,
            ApiKey.CREATE_PARTITIONS: self.handle_create_partitions_request,
            ApiKey.ELECT_LEADERS: self.handle_elect_leaders_request,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS:
                self.handle_alter_partition_reassignments_request,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: self.handle_list_partition_reassignments_request,
            ApiKey.DELETE_RECORDS: self.handle_delete_records_request,
            ApiKey.DESCRIBE_CLUSTER: self.handle_describe_cluster_request,
            ApiKey.DESCRIBE_LOG_DIRS: self.handle_describe_log_dirs_request,
            ApiKey.DESCRIBE_TOPIC_PARTITIONS: self.handle_describe_topic_partitions_request,
            ApiKey.FIND_COORDINATOR: self.handle_find_coordinator_request,
            ApiKey.OFFSET_COMMIT: self.handle_offset_commit_request,
            ApiKey.OFFSET_FETCH: self.handle_offset_fetch_request,
            ApiKey.SASL_HANDSHAKE: self.handle_sasl_handshake_request,
            ApiKey.SASL_AUTHENTICATE: self.handle_sasl_authenticate_request,
            ApiKey.JOIN_GROUP: self.handle_join_group_request,
            ApiKey.SYNC_GROUP: self.handle_sync_group_request,
            ApiKey.HEARTBEAT: self.handle_heartbeat_request,
            ApiKey.LEAVE_GROUP: self.handle_leave_group_request,
            ApiKey.DESCRIBE_GROUPS: self.handle_describe_groups_request,
            ApiKey.LIST_GROUPS: self.handle_list_groups_request,
            ApiKey.DELETE_GROUPS: self.handle_delete_groups_request,
            ApiKey.OFFSET_DELETE: self.handle_offset_delete_request,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.handle_offset_for_leader_epoch_request,
            ApiKey.ADD_PARTITIONS_TO_TXN: self.handle_add_partitions_to_txn_request,
            ApiKey.ADD_OFFSETS_TO_TXN: self.handle_add_offsets_to_txn_request,
            ApiKey.END_TXN: self.handle_end_txn_request,
            ApiKey.WRITE_TXN_MARKERS: self.handle_write_txn_markers_request,
            ApiKey.TXN_OFFSET_COMMIT: self.handle_txn_offset_commit_request,
            ApiKey.DESCRIBE_PRODUCERS: self.handle_describe_producers_request,
            ApiKey.DESCRIBE_TRANSACTIONS: self.handle_describe_transactions_request,
            ApiKey.LIST_TRANSACTIONS: self.handle_list_transactions_request,
            ApiKey.CREATE_ACLS: acl_apis.handle_create_acls_request,
            ApiKey.DESCRIBE_ACLS: acl_apis.handle_describe_acls_request,
            ApiKey.DELETE_ACLS: acl_apis.handle_delete_acls_request,
            ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_group_apis.handle_consumer_group_heartbeat_request,  # noqa: E501
            ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_group_apis.handle_consumer_group_describe_request,  # noqa: E501
        }
        self.metadata_cache = broker.metadata_cache
        self.log_manager = broker.log_manager
        self.producer_id_manager = broker.producer_id_manager

    def handle(self, request: Request) -> None:
        api_key = request.api_key
        if request.body is None and api_key == ApiKey.API_VERSIONS:
            self.handle_unparsed_api_versions_request(request)
            return
        handler = self.handlers.get(api_key)
        if handler is None:
            self.request_channel.close_connection(
                request, f"unknown or unsupported API key {api_key} (client "
                         f"{request.header.get('client_id')!r})")
            return
        low, high = self.supported_versions(api_key)
        if request.body is None or not low <= request.api_version <= high:
            self.send_error_response(request, Errors.UNSUPPORTED_VERSION)
            return
        injected = self.broker.faults.next_error(api_key)
        if injected is not None and self.answer_injected_error(request, injected):
            return
        handler(request)

    #: APIs that change nothing (Metadata's auto-creation aside): an injected error is set in
    #: the answer the handler builds, so the error lands in the per-partition fields.
    READ_ONLY_APIS = frozenset({ApiKey.METADATA, ApiKey.FETCH, ApiKey.LIST_OFFSETS,
                                ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR,
                                ApiKey.DESCRIBE_CONFIGS})

    def answer_injected_error(self, request: Request, injected: faults.InjectedError) -> bool:
        """Answer ``request`` with an error a test asked for (``broker.faults.fail_next``).

        Returns False when the handler must still run: it then builds its answer and
        :meth:`respond` puts the error in it (Produce after the append, the read-only APIs,
        and APIs whose answer has no top-level error code).  See docs/broker/faults.rst.
        """
        assert request.body is not None
        code = injected.error_code
        if request.api_key == ApiKey.PRODUCE and not injected.after_append:
            if request.body["acks"] == 0:
                self.request_channel.close_connection(request, "acks=0 produce failed "
                                                               "(an injected fault)")
            else:
                self.respond(request, faults.produce_error_body(request.body, code))
            return True
        if request.api_key not in self.READ_ONLY_APIS and not injected.after_append:
            body = self.error_response_body(request, code)
            if body is not None:
                self.request_channel.send_response(request, body)
                return True
        request.injected_error = code
        return False

    def respond(self, request: Request, body: dict[str, Any]) -> None:
        """Send ``body`` fitted to ``request``'s version, with the error a test injected."""
        if request.injected_error:
            body = faults.set_error_codes(body, request.injected_error)
        super().respond(request, body)

    # -- topics ----------------------------------------------------------------------------------

    def topic_config(self, configs: dict[str, str]) -> LogConfig:
        """A topic's :class:`~kafkacore.broker.log.LogConfig`: its own settings over the
        broker-wide defaults (raises ``InvalidConfigError``)."""
        return LogConfig.from_properties(configs, base=self.log_manager.default_config)

    def partition_cap_error(self, adding: int) -> str | None:
        """Why this broker, alone, may not take ``adding`` more partitions (None: it may):
        ``max.partitions.per.broker``, and the logs its descriptors allow."""
        held = self.log_manager.log_count
        cap = self.broker.config["max.partitions.per.broker"]
        if held + adding > cap:
            return (f"Broker {self.broker.broker_id} would hold {held + adding} partitions, "
                    f"more than max.partitions.per.broker={cap}.")
        if held + adding > self.log_manager.max_logs:
            return (f"Broker {self.broker.broker_id} would hold {held + adding} partitions, "
                    f"more than its file descriptor limit allows ({self.log_manager.max_logs}).")
        return None

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> tuple[Any, bool]:
        """Record the topic (persisted first), then create its partitions' logs."""
        config = self.topic_config(configs)
        topic, created = self.metadata_cache.add_topic(name, partitions, configs)
        if created:
            self.log_manager.get_or_create_logs(
                [(name, p, config, topic.topic_id) for p in range(partitions)])
        return topic, created

    def get_partition_log(self, topic: str, partition: int) -> Any:
        """The partition's log, or None when the topic or the partition does not exist."""
        meta = self.metadata_cache.get(topic)
        if meta is None or not 0 <= partition < meta.partitions:
            return None
        lg = self.log_manager.get_log(topic, partition)
        if lg is None:  # the topic is known but this log was lost: recreate it empty
            lg = self.log_manager.get_or_create_log(
                topic, partition, self.topic_config(meta.configs), meta.topic_id)
        return lg

    # -- Metadata --------------------------------------------------------------------------------

    def _metadata_partition(self, topic: str, p: int) -> dict[str, Any]:
        """A partition's leader, epoch, replicas and ISR: the controller's image, or this
        broker's own view where it leads (its ISR is the newest)."""
        rm = self.broker.replica_manager
        me = self.broker.broker_id
        if rm.standalone:
            return {"error_code": Errors.NONE, "partition_index": p, "leader_id": me,
                    "leader_epoch": 0, "replica_nodes": [me], "isr_nodes": [me],
                    "offline_replicas": []}
        state = rm.image_topics.get(topic, {}).get(p)
        if state is None:
            return {"error_code": Errors.LEADER_NOT_AVAILABLE, "partition_index": p,
                    "leader_id": -1, "leader_epoch": -1, "replica_nodes": [], "isr_nodes": [],
                    "offline_replicas": []}
        leader, epoch, isr = state.leader, state.leader_epoch, state.isr
        local = rm.partitions.get((topic, p))
        if local is not None and local.is_leader and local.leader_epoch >= epoch:
            leader, epoch, isr = me, local.leader_epoch, local.isr
        return {"error_code": Errors.NONE if leader >= 0 else Errors.LEADER_NOT_AVAILABLE,
                "partition_index": p, "leader_id": leader, "leader_epoch": epoch,
                "replica_nodes": list(state.replicas), "isr_nodes": list(isr),
                "offline_replicas": [r for r in state.replicas if r not in rm.brokers]}

    def _metadata_topic(self, version: int, meta: Any) -> dict[str, Any]:
        return {
            "error_code": Errors.NONE,
            "name": meta.name,
            "topic_id": meta.topic_id,
            "is_internal": meta.name in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC),
            "partitions": [self._metadata_partition(meta.name, p)
                           for p in range(meta.partitions)],
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        }

    def handle_metadata_request(self, request: Request) -> None:
        assert request.body is not None
        version = request.api_version
        body = request.body
        asked = body["topics"]
        # v0: an empty list means every topic; v1+: null means every topic.
        allow_auto_create = body.get("allow_auto_topic_creation", True) and self.broker.config[
            "auto.create.topics.enable"]
        topics: list[dict[str, Any]] = []
        if asked is None or (version == 0 and not asked):
            # Every topic the principal may DESCRIBE; the others are left out in silence.
            topics = [self._metadata_topic(version, t) for t in self.metadata_cache.topics()
                      if self.authorize_topic(request, AclOperation.DESCRIBE, t.name)]
        elif version < 12 and any(e.get("name") is None or e.get("topic_id", ZERO_UUID)
                                  != ZERO_UUID for e in asked):
            # v10-11 carry topic ids but may not use them (Kafka: INVALID_REQUEST for the whole
            # request, each topic answered with it and a null name as "")
            topics = [self._metadata_error(e.get("name") or "", e.get("topic_id", ZERO_UUID),
                                           Errors.INVALID_REQUEST) for e in asked]
        else:
            for entry in asked:
                name = entry.get("name")
                if name is None:  # v12+: by topic id
                    topic_id = entry.get("topic_id", ZERO_UUID)
                    name = self.metadata_cache.name_of(topic_id)
                    if name is None:
                        topics.append(self._metadata_error(None, topic_id, Errors.UNKNOWN_TOPIC_ID))
                        continue
                if not self.authorize_topic(request, AclOperation.DESCRIBE, name):
                    # Whether it exists is not told to whoever may not describe it.
                    topics.append(self._metadata_error(name, ZERO_UUID,
                                                       Errors.TOPIC_AUTHORIZATION_FAILED))
                    continue
                meta = self.metadata_cache.get(name)
                if meta is None:
                    try:
                        validate_topic_name(name)
                    except errors.InvalidTopicError:
                        topics.append(self._metadata_error(name, ZERO_UUID,
                                                           Errors.INVALID_TOPIC_EXCEPTION))
                        continue
                    if not allow_auto_create:
                        topics.append(self._metadata_error(name, ZERO_UUID,
                                                           Errors.UNKNOWN_TOPIC_OR_PARTITION))
                        continue
                    if not self.may_create_topic(request, name):
                        topics.append(self._metadata_error(name, ZERO_UUID,
                                                           Errors.TOPIC_AUTHORIZATION_FAILED))
                        continue
                    # Kafka answers LEADER_NOT_AVAILABLE while the controller creates the
                    # topic; here creation is synchronous, so the topic is usable at once.
                    if self.broker.lifecycle is not None:
                        meta = self._auto_create_in_cluster(name)
                        if meta is None:
                            topics.append(self._metadata_error(name, ZERO_UUID,
                                                               Errors.LEADER_NOT_AVAILABLE))
                            continue
                    else:
                        meta, _ = self.create_topic(name, self.broker.config["num.partitions"],
                                                    {})
                topics.append(self._metadata_topic(version, meta))
        live = self._live_brokers(request.listener_name)
        if body.get("include_topic_authorized_operations", False):  # KIP-430
            for t in topics:
                if t["error_code"] == Errors.NONE:
                    t["topic_authorized_operations"] = self.authorized_operations(
                        request, ResourceType.TOPIC, t["name"])
        self.respond(request, {
            "throttle_time_ms": 0,
            "brokers": [{"node_id": node, "host": host, "port": port, "rack": None}
                        for node, (host, port) in sorted(live.items())],
            "cluster_id": self.broker.cluster_id,
            # Clients cannot reach a KRaft controller: Kafka 4 names a live broker here, one of
            # those listed (the same snapshot: a broker fenced meanwhile is in neither).
            "controller_id": min(live),
            "topics": topics,
            "cluster_authorized_operations":
                self.authorized_operations(request, ResourceType.CLUSTER)
                if body.get("include_cluster_authorized_operations", False)
                else AUTHORIZED_OPERATIONS_OMITTED,
        })

    # -- DescribeCluster -------------------------------------------------------------------------

    #: DescribeCluster's EndpointType (KIP-919): a broker answers for the brokers.
    ENDPOINT_TYPE_BROKER = 1

    def handle_describe_cluster_request(self, request: Request) -> None:
        """The admin client's view of the cluster: the live brokers and a controller id, as
        Metadata gives them, without topics.  Anyone may ask; the cluster's authorized
        operations need DESCRIBE on the cluster (0 otherwise), as in Kafka's ``KafkaApis``."""
        assert request.body is not None
        body = request.body
        response: dict[str, Any] = {
            "throttle_time_ms": 0, "error_code": Errors.NONE, "error_message": None,
            "endpoint_type": self.ENDPOINT_TYPE_BROKER, "cluster_id": self.broker.cluster_id,
            "controller_id": -1, "brokers": [],
            "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}
        if body.get("endpoint_type", self.ENDPOINT_TYPE_BROKER) != self.ENDPOINT_TYPE_BROKER:
            response.update(error_code=Errors.MISMATCHED_ENDPOINT_TYPE,
                            error_message="this is a broker's endpoint, not a controller's")
            self.respond(request, response)
            return
        live = self._live_brokers(request.listener_name)
        response.update(
            brokers=[{"broker_id": node, "host": host, "port": port, "rack": None,
                      "is_fenced": False} for node, (host, port) in sorted(live.items())],
            # Clients cannot reach a KRaft controller: Kafka 4 names a live broker here.
            controller_id=min(live))
        if body["include_cluster_authorized_operations"]:
            response["cluster_authorized_operations"] = (
                self.authorized_operations(request, ResourceType.CLUSTER)
                if self.authorize(request, AclOperation.DESCRIBE, ResourceType.CLUSTER) else 0)
        self.respond(request, response)

    # -- DescribeLogDirs --------------------------------------------------------------------------

    def handle_describe_log_dirs_request(self, request: Request) -> None:
        """This broker's log dirs and the partitions in them (DESCRIBE on the cluster)."""
        assert request.body is not None
        asked = request.body["topics"]
        if not self.authorize(request, AclOperation.DESCRIBE, ResourceType.CLUSTER):
            self.respond(request, {"throttle_time_ms": 0,
                                   "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED,
                                   "results": []})
            return
        wanted = None if asked is None else {(t["topic"], p) for t in asked
                                             for p in t["partitions"]}
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                               "results": self.broker.replica_manager.describe_log_dirs(wanted)})

    # -- DescribeTopicPartitions (KIP-966) -------------------------------------------------------

    def handle_describe_topic_partitions_request(self, request: Request) -> None:
        """Metadata's topics with their partitions, a page at a time: topics in name order from
        the cursor's topic and partition, at most ``response_partition_limit`` partitions; the
        answer's cursor says where the next page starts (Kafka's
        ``DescribeTopicPartitionsRequestHandler``).  DESCRIBE on each topic; with no topics
        asked, every topic the principal may describe."""
        assert request.body is not None
        body = request.body
        limit = max(1, min(body["response_partition_limit"], 2000))
        cursor = body["cursor"]
        if body["topics"]:
            names = sorted({t["name"] for t in body["topics"]})
        else:
            names = [t.name for t in self.metadata_cache.topics()
                     if self.authorize_topic(request, AclOperation.DESCRIBE, t.name)]
        if cursor is not None:
            if cursor["partition_index"] < 0 or (body["topics"] and
                                                 cursor["topic_name"] not in names):
                # Kafka's answer to a bad cursor: every topic asked, with the error.
                self.respond(request, {"throttle_time_ms": 0, "next_cursor": None, "topics": [
                    self._topic_partitions_error(t["name"], Errors.INVALID_REQUEST)
                    for t in body["topics"]]})
                return
            names = [n for n in names if n >= cursor["topic_name"]]
        topics: list[dict[str, Any]] = []
        next_cursor = None
        for name in names:
            if limit <= 0:
                next_cursor = {"topic_name": name, "partition_index": 0}
                break
            meta = self.metadata_cache.get(name)
            allowed = self.authorize_topic(request, AclOperation.DESCRIBE, name)
            if not allowed or meta is None:
                # Whether it exists is not told to whoever may not describe it.
                error = Errors.UNKNOWN_TOPIC_OR_PARTITION if allowed \
                    else Errors.TOPIC_AUTHORIZATION_FAILED
                topics.append(self._topic_partitions_error(name, error))
                continue
            first = cursor["partition_index"] if cursor and name == cursor["topic_name"] else 0
            last = min(meta.partitions, first + limit)
            topic = self._metadata_topic(0, meta)
            topic["partitions"] = [self._metadata_partition(name, p) for p in range(first, last)]
            topic["topic_authorized_operations"] = self.authorized_operations(
                request, ResourceType.TOPIC, name)
            topics.append(topic)
            limit -= last - first
            if last < meta.partitions:
                next_cursor = {"topic_name": name, "partition_index": last}
                break
        self.respond(request, {"throttle_time_ms": 0, "topics": topics,
                               "next_cursor": next_cursor})

    @staticmethod
    def _topic_partitions_error(name: str, error: int) -> dict[str, Any]:
        return {"error_code": error, "name": name, "topic_id": ZERO_UUID, "is_internal": False,
                "partitions": [], "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}

    def may_create_topic(self, request: Request, name: str) -> bool:
        """CREATE on the cluster, or on the topic (Kafka: either one will do)."""
        return (self.authorize(request, AclOperation.CREATE, ResourceType.CLUSTER)
                or self.authorize_topic(request, AclOperation.CREATE, name))

    @staticmethod
    def _metadata_error(name: str | None, topic_id: uuid.UUID, error_code: int) -> dict[str, Any]:
        return {"error_code": error_code, "name": name, "topic_id": topic_id,
                "is_internal": False, "partitions": [],
                "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}

    def _live_brokers(self, listener_name: str | None = None) -> dict[int, tuple[str, int]]:
        """Broker id -> (host, port) of every live broker (just this one, alone, at the address
        of the listener asked).  In a cluster, brokers register one listener's address."""
        me = {self.broker.broker_id: self.broker.advertised_address(listener_name)}
        rm = self.broker.replica_manager
        if rm.standalone or not rm.brokers:
            return me
        return dict(rm.brokers)

    def _auto_create_in_cluster(self, name: str) -> Any:
        """Auto-creation in a cluster: ask the controller (Kafka's ``AutoTopicCreationManager``).
        None if it failed (the client retries on LEADER_NOT_AVAILABLE)."""
        c = self.broker.config
        try:
            self.broker.forwarding_manager.forward(ApiKey.CREATE_TOPICS, 7, {
                "topics": [{"name": name, "num_partitions": c["num.partitions"],
                            "replication_factor": min(c["default.replication.factor"],
                                                      len(self._live_brokers())),
                            "assignments": [], "configs": []}],
                "timeout_ms": 30000, "validate_only": False})
        except OSError as exc:
            log.info("auto-creating %s: controller unreachable: %s", name, exc)
            return None
        return self.metadata_cache.get(name)

    def forward_to_controller(self, request: Request,
                               refused: tuple[str, list[dict[str, Any]]] | None = None) -> bool:
        """In a cluster, topics are the controller's: send it the request as it came and pass
        its answer back (Kafka's request forwarding).  False when this broker is alone.
        ``refused``: (the response's list, entries) for what this broker refused to forward."""
        if self.broker.lifecycle is None:
            return False
        assert request.body is not None
        try:
            response = self.broker.forwarding_manager.forward(request.api_key, request.api_version,
                                                     request.body)
        except OSError as exc:
            log.info("forwarding API %d to the controller failed: %s", request.api_key, exc)
            self.send_error_response(request, Errors.NOT_CONTROLLER)
            return True
        if refused is not None:
            response[refused[0]] = [*response[refused[0]], *refused[1]]
        self.respond(request, response)
        return True

    # -- CreateTopics ----------------------------------------------------------------------------

    def handle_create_topics_request(self, request: Request) -> None:
        assert request.body is not None
        body = request.body
        refused = [{"name": t["name"], "topic_id": ZERO_UUID,
                    "error_code": Errors.TOPIC_AUTHORIZATION_FAILED, "error_message": None,
                    "num_partitions": -1, "replication_factor": -1, "configs": None}
                   for t in body["topics"] if not self.may_create_topic(request, t["name"])]
        if refused:
            body["topics"] = [t for t in body["topics"]
                              if t["name"] not in {r["name"] for r in refused}]
        if self.forward_to_controller(request, ("topics", refused)):
            return
        if total_partitions_requested(body["topics"], self.broker.config["num.partitions"]) \
                > MAX_PARTITIONS_PER_BATCH:  # as the controller of a cluster refuses it
            self.respond(request, {"throttle_time_ms": 0, "topics": [*refused, *(
                create_topic_result(t["name"], Errors.POLICY_VIOLATION,
                                    EXCESSIVE_PARTITIONS_MESSAGE) for t in body["topics"])]})
            return
        counts = Counter(t["name"] for t in body["topics"])
        results = list(refused)
        new_logs: list[NewLog] = []
        # The request's topics are one batch of metadata records: one append, one fsync; then
        # their logs, created side by side.
        with self.metadata_cache.batch():
            for t in body["topics"]:
                results.append(self._create_one_topic(t, counts[t["name"]] > 1,
                                                      body.get("validate_only", False), new_logs))
        self.log_manager.get_or_create_logs(new_logs)
        self.respond(request, {"throttle_time_ms": 0, "topics": results})

    def _create_one_topic(self, t: dict[str, Any], repeated: bool, validate_only: bool,
                          new_logs: list[NewLog]) -> dict[str, Any]:
        """One topic's answer; its metadata recorded, its logs added to ``new_logs``."""
        name = t["name"]
        result: dict[str, Any] = {
            "name": name, "topic_id": ZERO_UUID, "error_code": Errors.NONE, "error_message": None,
            "num_partitions": -1, "replication_factor": -1, "configs": None,
        }

        def fail(code: int, message: str) -> dict[str, Any]:
            result.update(error_code=code, error_message=message)
            return result

        if repeated:
            return fail(Errors.INVALID_REQUEST,
                        f"topic {name!r} appears more than once in the request")
        try:
            validate_topic_name(name)
        except errors.InvalidTopicError as exc:
            return fail(Errors.INVALID_TOPIC_EXCEPTION, str(exc))
        if self.metadata_cache.get(name) is not None:
            return fail(Errors.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        assignments = t["assignments"]
        if assignments:
            if t["num_partitions"] != -1 or t["replication_factor"] != -1:
                return fail(Errors.INVALID_REQUEST, "assignments come with num_partitions and "
                                             "replication_factor -1")
            indexes = sorted(a["partition_index"] for a in assignments)
            if indexes != list(range(len(indexes))):
                return fail(Errors.INVALID_PARTITIONS, "assigned partitions must be 0..n-1")
            if any(a["broker_ids"] != [self.broker.broker_id] for a in assignments):
                return fail(Errors.INVALID_REPLICATION_FACTOR,
                            f"this cluster has one broker, {self.broker.broker_id}")
            partitions = len(indexes)
        else:
            partitions = t["num_partitions"]
            if partitions == -1:
                partitions = self.broker.config["num.partitions"]
            if partitions <= 0:
                return fail(Errors.INVALID_PARTITIONS, f"number of partitions must be positive, "
                                                f"got {partitions}")
            rf = t["replication_factor"]
            if rf not in (-1, 1):
                return fail(Errors.INVALID_REPLICATION_FACTOR,
                            f"replication factor {rf} is larger than the 1 broker available")
        configs: dict[str, str] = {}
        for c in t["configs"]:
            if c["value"] is not None:
                configs[c["name"]] = c["value"]
        try:
            config = self.topic_config(configs)
        except errors.InvalidConfigError as exc:
            return fail(Errors.INVALID_CONFIG, str(exc))
        over = self.partition_cap_error(partitions + len(new_logs))
        if over is not None:
            return fail(Errors.POLICY_VIOLATION, over)
        if not validate_only:
            meta, created = self.metadata_cache.add_topic(name, partitions, configs)
            if not created:  # created by another request meanwhile
                return fail(Errors.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
            new_logs.extend((name, p, config, meta.topic_id) for p in range(partitions))
            result["topic_id"] = meta.topic_id
        result.update(
            num_partitions=partitions,
            replication_factor=1,
            configs=[
                {"name": k, "value": v, "read_only": False,
                 "config_source": ConfigSource.TOPIC_CONFIG if k in configs
                 else ConfigSource.DEFAULT_CONFIG,
                 "is_sensitive": False}
                for k, v in config.to_properties().items()
            ],
        )
        return result

    # -- DeleteTopics ----------------------------------------------------------------------------

    def handle_delete_topics_request(self, request: Request) -> None:
        """Forget the topic (persisted first, so a crash cannot bring it back), then delete its
        partitions' logs.  v6 names a topic by name or by id; DELETE on the topic."""
        assert request.body is not None
        body = request.body
        asked = [(t["name"], t["topic_id"]) for t in body["topics"]] \
            if request.api_version >= 6 else [(n, ZERO_UUID) for n in body["topic_names"]]
        results: list[dict[str, Any]] = []
        names: list[str] = []
        for name, topic_id in asked:
            if name is None:
                name = self.metadata_cache.name_of(topic_id)
                if name is None:
                    results.append(self._deleted(None, topic_id, Errors.UNKNOWN_TOPIC_ID,
                                                 f"no topic has id {topic_id}"))
                    continue
            if not self.authorize_topic(request, AclOperation.DELETE, name):
                results.append(self._deleted(name, topic_id, Errors.TOPIC_AUTHORIZATION_FAILED))
                continue
            names.append(name)
        if request.api_version >= 6:
            body["topics"] = [{"name": n, "topic_id": self._topic_id(n)} for n in names]
        else:
            body["topic_names"] = names
        if self.forward_to_controller(request, ("responses", results)):
            return
        for name in names:
            topic_id = self._topic_id(name)
            meta = self.metadata_cache.remove_topic(name)
            if meta is None:
                results.append(self._deleted(name, topic_id, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                             f"topic {name!r} does not exist"))
                continue
            for p in range(meta.partitions):
                self.log_manager.delete_log(name, p)
            results.append(self._deleted(name, topic_id, Errors.NONE))
        self.respond(request, {"throttle_time_ms": 0, "responses": results})

    @staticmethod
    def _deleted(name: str | None, topic_id: uuid.UUID, error: int,
                 message: str | None = None) -> dict[str, Any]:
        """One DeleteTopics answer."""
        return {"name": name, "topic_id": topic_id, "error_code": error, "error_message": message}

    # -- CreatePartitions ------------------------------------------------------------------------

    def handle_create_partitions_request(self, request: Request) -> None:
        """Add partitions to topics (never remove them: keys would change partition).  Kafka's
        checks: ALTER on the topic, a topic named once, then what the controller checks; in a
        cluster the controller adds them (forwarded), alone this broker does."""
        assert request.body is not None
        body = request.body
        results: list[dict[str, Any]] = []
        counts = Counter(t["name"] for t in body["topics"])
        for t in body["topics"]:
            if counts[t["name"]] > 1:
                results.append({"name": t["name"], "error_code": Errors.INVALID_REQUEST,
                                "error_message": "Duplicate topic in request."})
            elif not self.authorize_topic(request, AclOperation.ALTER, t["name"]):
                results.append({"name": t["name"], "error_code": Errors.TOPIC_AUTHORIZATION_FAILED,
                                "error_message": None})
        refused = {r["name"] for r in results}
        body["topics"] = [t for t in body["topics"] if t["name"] not in refused]
        if self.forward_to_controller(request, ("results", results)):
            return
        current = {t["name"]: meta.partitions for t in body["topics"]
                   if (meta := self.metadata_cache.get(t["name"])) is not None}
        if partitions_added(current, body["topics"]) > MAX_RECORDS_PER_USER_OP:
            self.respond(request, {"throttle_time_ms": 0, "results": [*results, *(
                {"name": t["name"], "error_code": Errors.POLICY_VIOLATION,
                 "error_message": EXCESSIVE_BATCH_MESSAGE} for t in body["topics"])]})
            return
        for t in body["topics"]:
            error, message = self._create_partitions(t, body["validate_only"])
            results.append({"name": t["name"], "error_code": error, "error_message": message})
        self.respond(request, {"throttle_time_ms": 0, "results": results})

    def _create_partitions(self, t: dict[str, Any], validate_only: bool) -> tuple[int, str | None]:
        meta = self.metadata_cache.get(t["name"])
        if meta is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {t['name']!r} does not exist"
        error, message = create_partitions_error(meta.partitions, t["count"], t["assignments"])
        if error == Errors.NONE and t["assignments"] is not None:
            # Alone, every replica is this broker.
            error, message = manual_assignment_error(
                [a["broker_ids"] for a in t["assignments"]], {self.broker.broker_id},
                {self.broker.broker_id}, 1)
        if error == Errors.NONE:
            over = self.partition_cap_error(t["count"] - meta.partitions)
            if over is not None:
                error, message = Errors.POLICY_VIOLATION, over
        if error != Errors.NONE or validate_only:
            return error, message
        config = self.topic_config(meta.configs)
        for p in range(meta.partitions, t["count"]):
            self.log_manager.get_or_create_log(t["name"], p, config, meta.topic_id)
        self.metadata_cache.grow_topic(t["name"], t["count"])
        return Errors.NONE, None

    # -- DescribeClientQuotas, AlterClientQuotas (KIP-546) -------------------------------------

    def handle_describe_client_quotas_request(self, request: Request) -> None:
        """From this broker's image of the quotas (Kafka's brokers answer it themselves)."""
        assert request.body is not None
        body = request.body
        answer: dict[str, Any] = {"throttle_time_ms": 0, "error_code": Errors.NONE,
                                  "error_message": None, "entries": None}
        if not self.authorize(request, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER):
            answer["error_code"] = Errors.CLUSTER_AUTHORIZATION_FAILED
        else:
            try:
                answer["entries"] = self.metadata_cache.describe_client_quotas(
                    body["components"], body["strict"])
            except errors.BrokerResponseError as exc:
                answer.update(error_code=exc.errno, error_message=exc.error_message)
        self.respond(request, answer)

    def handle_alter_client_quotas_request(self, request: Request) -> None:
        """ALTER_CONFIGS on the cluster; then made by the controller (or here, alone), as
        ClientQuotaRecords in the metadata log."""
        assert request.body is not None
        body = request.body
        if not self.authorize(request, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER):
            self.respond(request, {"throttle_time_ms": 0, "entries": [
                {"error_code": Errors.CLUSTER_AUTHORIZATION_FAILED, "error_message": None,
                 "entity": e["entity"]} for e in body["entries"]]})
            return
        if self.forward_to_controller(request):
            return
        self.respond(request, {"throttle_time_ms": 0, "entries": self.metadata_cache
                               .alter_client_quotas(body["entries"], body["validate_only"])})

    # -- ElectLeaders ----------------------------------------------------------------------------

    def handle_elect_leaders_request(self, request: Request) -> None:
        """ALTER on the cluster; the controller elects (forwarded).  Alone, this broker leads
        every partition already: no election is needed."""
        assert request.body is not None
        body = request.body
        asked = body["topic_partitions"]
        wanted = [] if asked is None else [(t["topic"], p) for t in asked
                                           for p in t["partitions"]]
        error = Errors.NONE
        if not self.authorize(request, AclOperation.ALTER, ResourceType.CLUSTER):
            error = Errors.CLUSTER_AUTHORIZATION_FAILED
        elif body.get("election_type", ELECTION_PREFERRED) not in (ELECTION_PREFERRED,
                                                                   ELECTION_UNCLEAN):
            error = Errors.INVALID_REQUEST
        if error != Errors.NONE:
            self.respond(request, {"throttle_time_ms": 0, "error_code": error,
                                   "replica_election_results": election_results(
                                       dict.fromkeys(wanted, (error, None)))})
            return
        if self.forward_to_controller(request):
            return
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                               "replica_election_results": election_results({
                                   tp: (Errors.ELECTION_NOT_NEEDED, None)
                                   if self._partition_exists(*tp) else
                                   (Errors.UNKNOWN_TOPIC_OR_PARTITION, None)
                                   for tp in wanted})})

    # -- AlterPartitionReassignments, ListPartitionReassignments (KIP-455) -----------------------

    def handle_alter_partition_reassignments_request(self, request: Request) -> None:
        """ALTER on the cluster; the controller moves the replicas (forwarded).  Alone, the
        only assignment there can be is this broker."""
        assert request.body is not None
        moves = [(t["name"], p["partition_index"], p["replicas"])
                 for t in request.body["topics"] for p in t["partitions"]]
        if not self.authorize(request, AclOperation.ALTER, ResourceType.CLUSTER):
            self.respond(request, {**reassignment_results(dict.fromkeys(
                [(n, i) for n, i, _ in moves], (Errors.CLUSTER_AUTHORIZATION_FAILED, None))),
                "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED})
            return
        if self.forward_to_controller(request):
            return
        me = [self.broker.broker_id]
        self.respond(request, reassignment_results({
            (name, index): (Errors.UNKNOWN_TOPIC_OR_PARTITION, None)
            if not self._partition_exists(name, index) else
            (Errors.NO_REASSIGNMENT_IN_PROGRESS, None) if target is None else
            (Errors.NONE, None) if target == me else
            (Errors.INVALID_REPLICA_ASSIGNMENT, f"this cluster has one broker, {me[0]}")
            for name, index, target in moves}))

    def handle_list_partition_reassignments_request(self, request: Request) -> None:
        """DESCRIBE on the cluster; the controller knows the moves under way."""
        if not self.authorize(request, AclOperation.DESCRIBE, ResourceType.CLUSTER):
            self.send_error_response(request, Errors.CLUSTER_AUTHORIZATION_FAILED)
            return
        if self.forward_to_controller(request):
            return
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                               "error_message": None, "topics": []})

    # -- DeleteRecords ---------------------------------------------------------------------------

    def handle_delete_records_request(self, request: Request) -> None:
        """Move each partition's log start offset up to the offset asked (-1: the high
        watermark); readers then see the log start there.  DELETE on the topic, the leader
        only, never past the high watermark (OFFSET_OUT_OF_RANGE)."""
        assert request.body is not None
        topics = []
        moved = False
        for t in request.body["topics"]:
            allowed = self.authorize_topic(request, AclOperation.DELETE, t["name"])
            parts = []
            for p in t["partitions"]:
                result = {"partition_index": p["partition_index"], "low_watermark": -1,
                          "error_code": Errors.NONE}
                parts.append(result)
                if not allowed:
                    result["error_code"] = Errors.TOPIC_AUTHORIZATION_FAILED
                    continue
                partition, error = self.broker.replica_manager.leader_partition_or_error(
                    t["name"], p["partition_index"])
                if partition is None:
                    result["error_code"] = error
                    continue
                log_ = partition.log
                offset = log_.high_watermark if p["offset"] == -1 else p["offset"]
                if offset < 0:
                    result["error_code"] = Errors.OFFSET_OUT_OF_RANGE
                    continue
                try:
                    moved = log_.maybe_increment_log_start_offset(offset) or moved
                except errors.BrokerResponseError as exc:  # past the HW; a storage error
                    result["error_code"] = exc.errno
                    continue
                result["low_watermark"] = log_.log_start_offset
            topics.append({"name": t["name"], "partitions": parts})
        if moved:  # on disk before the answer: a restarted broker does not bring them back
            self.log_manager.checkpoint_log_start_offsets()
        self.respond(request, {"throttle_time_ms": 0, "topics": topics})

    # -- Produce ---------------------------------------------------------------------------------

    def handle_produce_request(self, request: Request) -> None:
        """Append through the :class:`~kafkacore.broker.server.replica_manager.ReplicaManager`; with
        acks=all the answer waits in the produce purgatory until the ISR has the batches."""
        assert request.body is not None
        body = request.body
        acks = body["acks"]
        transactional_id = body.get("transactional_id")
        # Kafka: WRITE on the transactional id (if any) for the whole request, then WRITE on
        # each topic.
        # A transactional batch needs a transactional id (Kafka's ``hasTransactionalRecords``
        # check): without one no coordinator would ever end the transaction it opens.
        refused = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED if (
            has_transactional_records(body) if transactional_id is None
            else not self.authorize(request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                    transactional_id)) else Errors.NONE
        # Kafka: an authorized partition of a request with acks other than 0, 1, -1 is answered
        # INVALID_REQUIRED_ACKS (ReplicaManager's check, after the authorization).
        bad_acks = Errors.NONE if acks in (0, 1, -1) else Errors.INVALID_REQUIRED_ACKS
        #: (topic, partition) -> (its answer, its records) to append, or its answer with an
        #: error; a partition named twice is answered by its first entry
        valid: dict[tuple[str, int], tuple[dict[str, Any], Any]] = {}
        invalid: dict[tuple[str, int], dict[str, Any]] = {}
        order: list[tuple[str, list[tuple[str, int]]]] = []
        for topic in body["topic_data"]:
            name = topic["name"]
            keys = []
            topic_refused = refused or (
                bad_acks if self.authorize_topic(request, AclOperation.WRITE, name)
                else Errors.TOPIC_AUTHORIZATION_FAILED)
            for pd in topic["partition_data"]:
                key = (name, pd["index"])
                keys.append(key)
                if key in valid or key in invalid:
                    continue
                response: dict[str, Any] = {
                    "index": pd["index"], "error_code": topic_refused, "base_offset": -1,
                    "log_append_time_ms": -1, "log_start_offset": -1, "record_errors": [],
                    "error_message": None,
                }
                if topic_refused:
                    invalid[key] = response
                elif pd["records"] is None:
                    response.update(error_code=Errors.CORRUPT_MESSAGE, error_message="null records")
                    invalid[key] = response
                else:
                    valid[key] = (response, pd["records"])
            order.append((name, keys))

        def respond(results: dict[tuple[str, int], dict[str, Any]]) -> None:
            if invalid:
                results = {**invalid, **results}
            responses = [{"name": name, "partition_responses": list(map(results.__getitem__, keys))}
                         for name, keys in order]
            if acks == 0:
                # acks=0: the producer reads no answer, so none is sent (Kafka closes the
                # connection instead when the append failed, so the producer notices).
                if any(p["error_code"] != Errors.NONE for t in responses
                       for p in t["partition_responses"]):
                    self.request_channel.close_connection(request, "acks=0 produce failed")
                else:
                    self.request_channel.send_no_response(request)
                return
            self.respond(request, {"responses": responses, "throttle_time_ms": throttle_ms})

        # Kafka records a Produce's whole request size against the producer's byte rate.
        throttle_ms = request.throttle_time_ms = self.broker.quotas.produce.record_request(
            request.principal, request.header.get("client_id") or "", request.size)
        timeout_ms = body.get("timeout_ms", 30000)
        # Kafka: only its own admin client id may write to the internal topics.
        internal = request.header.get("client_id") == ADMIN_CLIENT_ID
        if transactional_id is None or not valid:
            self.broker.replica_manager.append_records(timeout_ms, acks, valid, respond,
                                                       internal_topics_allowed=internal)
            return

        def verified(failed: dict[tuple[str, int], int]) -> None:
            for key, error in failed.items():
                invalid[key] = valid.pop(key)[0]
                invalid[key]["error_code"] = error
            self.broker.replica_manager.append_records(timeout_ms, acks, valid, respond,
                                                       internal_topics_allowed=internal)

        # KIP-890: the coordinator confirms the partitions of a transaction's first batches
        # (part 1); from v12 (transaction version 2, part 2) it adds them to the transaction.
        self.broker.transaction_coordinator.add_partitions_manager.verify(
            transactional_id, valid, verified, add=request.api_version >= 12)

    # -- Fetch -----------------------------------------------------------------------------------

    def handle_fetch_request(self, request: Request) -> None:
        """Read through the :class:`~kafkacore.broker.server.replica_manager.ReplicaManager`.

        Consumers read below the high watermark; a follower (a replica id >= 0, in
        ``replica_state`` since v15) reads up to the log end and reports its log end offset by
        the offset it asks for.  With less than ``min_bytes`` the answer waits up to
        ``max_wait_ms`` in the fetch purgatory (a long poll) and comes as soon as data does.

        Incremental fetch sessions (KIP-227): the :class:`~kafkacore.broker.server.fetch_session.FetchManager`
        turns the session id and epoch into a context that says which partitions to read (those
        asked, or a session's) and which of their answers to send (all, or what changed).
        """
        assert request.body is not None
        body = request.body
        version = request.api_version
        from kafkacore.broker.server.fetch_session import FetchPartitionData, PartitionKey
        from kafkacore.broker.server.replica_manager import FetchParams, FetchPartitionInfo

        replica_id = (body.get("replica_state") or {}).get("replica_id", -1) if version >= 15 \
            else body.get("replica_id", -1)
        # A follower's fetch moves the high watermark: only a broker (CLUSTER_ACTION on the
        # cluster) may send one; a consumer needs READ on each topic.  Kafka answers both
        # refusals with TOPIC_AUTHORIZATION_FAILED on every partition.
        follower_refused = replica_id >= 0 and not self.authorize(
            request, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)
        params = FetchParams(replica_id, body["max_wait_ms"], body["min_bytes"],
                             body.get("max_bytes", INT32_MAX) if version >= 3 else INT32_MAX,
                             body.get("isolation_level", 0))
        # Partitions are named by topic id from v13, by topic name before.
        topic_field = "topic_id" if version >= 13 else "topic"
        fetch_data = {
            (topic[topic_field], fp["partition"]): FetchPartitionData(
                fp["fetch_offset"], fp.get("log_start_offset", -1), fp["partition_max_bytes"],
                fp.get("current_leader_epoch", -1))
            for topic in body["topics"] for fp in topic["partitions"]}
        to_forget = [(t[topic_field], p) for t in body.get("forgotten_topics_data") or ()
                     for p in t["partitions"]]
        # A follower's session is privileged in the cache: only if it is a broker's.
        context = self.broker.fetch_manager.new_context(
            body.get("session_id", 0), body.get("session_epoch", -1), fetch_data, to_forget,
            version >= 13, replica_id >= 0 and not follower_refused, request.client_address[0])

        #: topic as asked -> (name, topic id, error for all its partitions)
        topics: dict[Any, tuple[str, uuid.UUID, int]] = {}
        infos: list[Any] = []
        keys: list[PartitionKey] = []  # in answer order, with their partition's answer
        unknown: dict[PartitionKey, dict[str, Any]] = {}
        for key, data in context.partitions():
            topic = topics.get(key[0])
            if topic is None:
                name, topic_id = (self.metadata_cache.name_of(key[0]), key[0]) if version >= 13 \
                    else (key[0], ZERO_UUID)
                error = Errors.UNKNOWN_TOPIC_ID if name is None else Errors.NONE
                if not error and (follower_refused or replica_id < 0 and not self.authorize_topic(
                        request, AclOperation.READ, name)):
                    error = Errors.TOPIC_AUTHORIZATION_FAILED
                topic = topics[key[0]] = (name or "", topic_id, error)
            keys.append(key)
            if topic[2]:
                unknown[key] = {
                    "partition_index": key[1], "error_code": topic[2],
                    "high_watermark": -1, "last_stable_offset": -1,
                    "log_start_offset": -1, "aborted_transactions": None,
                    "preferred_read_replica": -1, "records": b""}
            else:
                infos.append(FetchPartitionInfo(topic[0], topic[1], key[1], data.fetch_offset,
                                                data.current_leader_epoch, data.max_bytes))

        def respond(results: list[dict[str, Any]]) -> None:
            read = iter(results)
            answers = [(key, unknown.get(key) or next(read)) for key in keys]
            error, session_id, answered = context.update_and_generate_response_data(answers)
            sent = {id(part) for _, part in answered}
            for _, part in answers:  # not sent: give back any file region it holds
                if id(part) not in sent and hasattr(part["records"], "close"):
                    part["records"].close()
            responses: dict[Any, dict[str, Any]] = {}
            for key, part in answered:
                entry = responses.get(key[0])
                if entry is None:
                    name, topic_id, _ = topics[key[0]]
                    entry = responses[key[0]] = {"topic": name, "topic_id": topic_id,
                                                 "partitions": []}
                entry["partitions"].append(part)
            throttle_ms = 0 if replica_id >= 0 else self._fetch_throttle(request, answered)
            self.respond(request, {
                "throttle_time_ms": throttle_ms, "error_code": error, "session_id": session_id,
                "responses": list(responses.values())})

        self.broker.replica_manager.fetch_messages(params, infos, respond)

    def _fetch_throttle(self, request: Request, answered: list[tuple[Any, dict[str, Any]]]
                        ) -> int:
        """A consumer's Fetch against its byte rate: the records it gets are recorded, and
        over the quota it is throttled.  The records still go with this answer (Kafka sends a
        throttled Fetch empty and takes the bytes back, which never lets through a batch larger
        than the sensor's allowance): the throttle time makes up for them."""
        size = sum(len(part["records"] or b"") for _, part in answered)
        throttle_ms = request.throttle_time_ms = self.broker.quotas.fetch.record_request(
            request.principal, request.header.get("client_id") or "", size)
        return throttle_ms

    # -- ListOffsets -----------------------------------------------------------------------------

    def handle_list_offsets_request(self, request: Request) -> None:
        assert request.body is not None
        version = request.api_version
        topics = []
        for topic in request.body["topics"]:
            parts = []
            for p in topic["partitions"]:
                part: dict[str, Any] = {"partition_index": p["partition_index"],
                                        "error_code": Errors.NONE, "old_style_offsets": [],
                                        "timestamp": -1, "offset": -1, "leader_epoch": -1}
                if not self.authorize_topic(request, AclOperation.DESCRIBE, topic["name"]):
                    part["error_code"] = Errors.TOPIC_AUTHORIZATION_FAILED
                    parts.append(part)
                    continue
                lg = self.get_partition_log(topic["name"], p["partition_index"])
                if lg is None:
                    part["error_code"] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                    parts.append(part)
                    continue
                ts = p["timestamp"]
                if ts == LATEST_TIMESTAMP:
                    # A consumer sees up to the high watermark, read_committed up to the LSO.
                    read_committed = request.body.get("isolation_level", 0) == READ_COMMITTED
                    found: tuple[int, int] | None = (
                        lg.last_stable_offset if read_committed else lg.high_watermark, -1)
                elif ts == EARLIEST_TIMESTAMP:
                    found = (lg.log_start_offset, -1)
                else:
                    try:
                        found = lg.fetch_offset_by_timestamp(ts)
                    except errors.BrokerResponseError as exc:
                        part["error_code"] = exc.errno
                        parts.append(part)
                        continue
                if found is not None:
                    part.update(offset=found[0], timestamp=found[1], leader_epoch=0)
                    if version == 0:
                        part["old_style_offsets"] = [found[0]]
                parts.append(part)
            topics.append({"name": topic["name"], "partitions": parts})
        self.respond(request, {"throttle_time_ms": 0, "topics": topics})

    # -- InitProducerId --------------------------------------------------------------------------

    def handle_init_producer_id_request(self, request: Request) -> None:
        """An idempotent producer's id (Kafka's ``ProducerIdManager``, blocks reserved on disk);
        with a transactional id, the transaction coordinator's answer (see
        docs/broker/transactions.rst)."""
        assert request.body is not None
        body = request.body
        response = {"throttle_time_ms": 0, "error_code": Errors.NONE, "producer_id": -1,
                    "producer_epoch": -1}
        refused = self.init_producer_id_refused(request, body["transactional_id"])
        if refused:
            response["error_code"] = refused
        elif body["transactional_id"] is not None:
            def send_response(error: int, producer_id: int, producer_epoch: int) -> None:
                self.respond(request, {**response, "error_code": error,
                                       "producer_id": producer_id,
                                       "producer_epoch": producer_epoch})

            self.broker.transaction_coordinator.handle_init_producer_id(
                body["transactional_id"], body["transaction_timeout_ms"],
                body.get("producer_id", -1), body.get("producer_epoch", -1), send_response)
            return
        elif (body.get("producer_id", -1) == -1) != (body.get("producer_epoch", -1) == -1):
            # An id without an epoch, or the reverse.
            response["error_code"] = Errors.INVALID_REQUEST
        else:
            # Without a transactional id, Kafka hands out a new producer id whatever id and
            # epoch were sent: nothing proves the asker owns them, and bumping the epoch of
            # someone else's id would fence that producer (Java's idempotent producer bumps
            # its epoch by itself).
            response.update(producer_id=self.producer_id_manager.generate_producer_id(),
                            producer_epoch=0)
        self.respond(request, response)

    def init_producer_id_refused(self, request: Request, transactional_id: str | None) -> int:
        """Kafka's checks: WRITE on the transactional id; without one, IDEMPOTENT_WRITE on the
        cluster or WRITE on at least one topic.  The error code, or NONE."""
        if transactional_id is not None:
            return Errors.NONE if self.authorize(request, AclOperation.WRITE,
                                          ResourceType.TRANSACTIONAL_ID, transactional_id) \
                else Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if self.authorize(request, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER):
            return Errors.NONE
        if self.authorizer is not None and self.authorizer.authorize_by_resource_type(
                request.principal, request.client_address[0], AclOperation.WRITE,
                ResourceType.TOPIC):
            return Errors.NONE
        return Errors.CLUSTER_AUTHORIZATION_FAILED

    # -- transactions: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, WriteTxnMarkers ---------------

    def handle_add_partitions_to_txn_request(self, request: Request) -> None:
        """v0-3 (clients): one transaction; v4+ (brokers, KIP-890): several, each perhaps only
        verified.  Unknown (or unauthorized) partitions fail the transaction's request, the
        others then answer OPERATION_NOT_ATTEMPTED, as Kafka."""
        body, version = request.body, request.api_version
        assert body is not None
        if version >= 4 and not self.authorize(request, AclOperation.CLUSTER_ACTION,
                                               ResourceType.CLUSTER):
            self.respond(request, {"throttle_time_ms": 0,
                                   "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED,
                                   "results_by_transaction": []})
            return
        if version < 4:
            transactions = [{"transactional_id": body["v3_and_below_transactional_id"],
                             "producer_id": body["v3_and_below_producer_id"],
                             "producer_epoch": body["v3_and_below_producer_epoch"],
                             "verify_only": False, "topics": body["v3_and_below_topics"]}]
        else:
            transactions = body["transactions"]
        results: list[Any] = [None] * len(transactions)
        remaining = [len(transactions)]
        # Lock order: leaf. Guards this request's fan-in count and results.
        lock = threading.Lock()

        def finish(i: int, topic_results: list[dict[str, Any]]) -> None:
            with lock:
                results[i] = topic_results
                remaining[0] -= 1
                if remaining[0]:
                    return
            if version < 4:
                self.respond(request, {"throttle_time_ms": 0,
                                       "results_by_topic_v3_and_below": results[0]})
            else:
                self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                                       "results_by_transaction": [
                                           {"transactional_id": t["transactional_id"],
                                            "topic_results": r}
                                           for t, r in zip(transactions, results, strict=True)]})

        if not transactions:
            self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                                   "results_by_transaction": []})
            return
        for i, txn in enumerate(transactions):
            partitions = {(t["name"], p) for t in txn["topics"] for p in t["partitions"]}
            unknown = {tp for tp in partitions if not self._partition_exists(*tp)}
            refused = {tp for tp in partitions
                       if not self.authorize_topic(request, AclOperation.WRITE, tp[0])}

            def topic_results(error_of: Callable[[tuple[str, int]], int],
                              txn: dict[str, Any] = txn) -> list[dict[str, Any]]:
                return [{"name": t["name"], "results_by_partition": [
                    {"partition_index": p, "partition_error_code": error_of((t["name"], p))}
                    for p in t["partitions"]]} for t in txn["topics"]]

            if version < 4 and not self.authorize(request, AclOperation.WRITE,
                                                  ResourceType.TRANSACTIONAL_ID,
                                                  txn["transactional_id"]):
                finish(i, topic_results(lambda tp: Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
                continue
            if refused or unknown:
                finish(i, topic_results(
                    lambda tp, refused=refused, unknown=unknown: Errors.TOPIC_AUTHORIZATION_FAILED
                    if tp in refused else Errors.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                    else Errors.OPERATION_NOT_ATTEMPTED))
                continue
            self.broker.transaction_coordinator.handle_add_partitions(
                txn["transactional_id"], txn["producer_id"], txn["producer_epoch"], partitions,
                lambda error, i=i, topic_results=topic_results: finish(
                    i, topic_results(lambda tp: error)),
                verify_only=txn.get("verify_only", False))

    def _partition_exists(self, topic: str, partition: int) -> bool:
        meta = self.metadata_cache.get(topic)
        return meta is not None and 0 <= partition < meta.partitions

    def handle_add_offsets_to_txn_request(self, request: Request) -> None:
        """The group's ``__consumer_offsets`` partition joins the transaction, so that its
        offsets get the transaction's marker."""
        body = request.body
        assert body is not None
        refused = self._transactional_id_refused(request, body["transactional_id"])
        if not refused and not self.authorize(request, AclOperation.READ, ResourceType.GROUP,
                                              body["group_id"]):
            refused = Errors.GROUP_AUTHORIZATION_FAILED
        if refused:
            self.respond(request, {"throttle_time_ms": 0, "error_code": refused})
            return
        partition = self.broker.group_coordinator.group_manager.partition_for(body["group_id"])
        self.broker.transaction_coordinator.handle_add_partitions(
            body["transactional_id"], body["producer_id"], body["producer_epoch"],
            {(OFFSETS_TOPIC, partition)},
            lambda error: self.respond(request, {"throttle_time_ms": 0, "error_code": error}))

    def _transactional_id_refused(self, request: Request, transactional_id: str) -> int:
        """Kafka's check of the transactional requests: WRITE on the transactional id."""
        if self.authorize(request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                          transactional_id):
            return Errors.NONE
        return Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    def handle_end_txn_request(self, request: Request) -> None:
        body = request.body
        assert body is not None
        refused = self._transactional_id_refused(request, body["transactional_id"])
        if refused:
            self.respond(request, {"throttle_time_ms": 0, "error_code": refused,
                                   "producer_id": -1, "producer_epoch": -1})
            return
        # v5 is transaction version 2 (KIP-890 part 2): the epoch is bumped at every
        # transaction's end, and the answer says which producer id and epoch come next.
        self.broker.transaction_coordinator.handle_end_transaction(
            body["transactional_id"], body["producer_id"], body["producer_epoch"],
            body["committed"],
            lambda error, producer_id, epoch: self.respond(request, {
                "throttle_time_ms": 0, "error_code": error,
                "producer_id": producer_id, "producer_epoch": epoch}),
            bump_epoch=request.api_version >= 5)

    def handle_txn_offset_commit_request(self, request: Request) -> None:
        """A transaction's offsets: written to the group's offsets partition as the producer's
        transactional batch, visible once the transaction commits."""
        body = request.body
        assert body is not None
        offsets = {}
        unknown: dict[tuple[str, int], int] = {}
        refused = self._transactional_id_refused(request, body["transactional_id"])
        if not refused and not self.authorize(request, AclOperation.READ, ResourceType.GROUP,
                                              body["group_id"]):
            refused = Errors.GROUP_AUTHORIZATION_FAILED
        for t in body["topics"]:
            for p in t["partitions"]:
                tp = (t["name"], p["partition_index"])
                if refused:
                    unknown[tp] = refused
                    continue
                if not self.authorize_topic(request, AclOperation.READ, tp[0]):
                    unknown[tp] = Errors.TOPIC_AUTHORIZATION_FAILED
                    continue
                if not self._partition_exists(*tp):
                    unknown[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                offsets[tp] = OffsetAndMetadata(p["committed_offset"],
                                                p.get("committed_leader_epoch", -1),
                                                p["committed_metadata"], -1)

        def send_response(errors: dict[tuple[str, int], int]) -> None:
            errors = {**errors, **unknown}
            self.respond(request, {"throttle_time_ms": 0, "topics": [
                {"name": t["name"], "partitions": [
                    {"partition_index": p["partition_index"],
                     "error_code": errors.get((t["name"], p["partition_index"]), Errors.NONE)}
                    for p in t["partitions"]]}
                for t in body["topics"]]})

        def commit() -> None:
            self.broker.group_coordinator.handle_commit_offsets(
                body["group_id"], body.get("generation_id", -1), offsets,
                member_id=body.get("member_id", ""), response_callback=send_response,
                producer=(body["producer_id"], body["producer_epoch"]),
                group_instance_id=body.get("group_instance_id"))

        if not offsets:
            commit()
            return

        # The coordinator confirms that the group's offsets partition is in the producer's
        # transaction before anything is written (KIP-890 part 1; v5, transaction version 2:
        # no AddOffsetsToTxn came before, and the partition joins the transaction here).  An
        # unknown producer's commit would otherwise hold the group's offsets unstable forever.
        def added(results: dict[tuple[str, int], int]) -> None:
            error = next(iter(results.values()), Errors.NONE)
            if error == Errors.NONE:
                commit()
            else:
                send_response(dict.fromkeys(offsets, txn_offset_commit_error(error)))

        partition = self.broker.group_coordinator.group_manager.partition_for(body["group_id"])
        manager = self.broker.transaction_coordinator.add_partitions_manager
        tp = (OFFSETS_TOPIC, partition)
        add = request.api_version >= 5
        if not add and manager.in_transaction(tp, body["producer_id"], body["producer_epoch"]):
            commit()
            return
        manager.ask_coordinator(body["transactional_id"], body["producer_id"],
                                body["producer_epoch"], [tp], added, add=add)

    def handle_write_txn_markers_request(self, request: Request) -> None:
        """A transaction coordinator's markers for the partitions this broker leads (only
        brokers may send them: CLUSTER_ACTION)."""
        body = request.body
        assert body is not None
        markers = body["markers"]
        allowed = self.authorize(request, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)

        def send_response(results: dict[tuple[int, str, int], int]) -> None:
            self.respond(request, {"markers": [
                {"producer_id": m["producer_id"], "topics": [
                    {"name": t["name"], "partitions": [
                        {"partition_index": p, "error_code": results.get(
                            (m["producer_id"], t["name"], p), Errors.UNKNOWN_SERVER_ERROR)}
                        for p in t["partition_indexes"]]}
                    for t in m["topics"]]}
                for m in markers]})

        if not allowed:
            send_response({(m["producer_id"], t["name"], p): Errors.CLUSTER_AUTHORIZATION_FAILED
                           for m in markers for t in m["topics"]
                           for p in t["partition_indexes"]})
            return
        self.broker.transaction_coordinator.marker_manager.append_markers(markers, send_response)

    # -- the transaction admin calls: DescribeProducers, DescribeTransactions, ListTransactions

    def handle_describe_producers_request(self, request: Request) -> None:
        """The producers a partition's leader knows (its producer state): the tools look for
        hanging transactions with it."""
        body = request.body
        assert body is not None
        topics = []
        for t in body["topics"]:
            parts = []
            for index in t["partition_indexes"]:
                part: dict[str, Any] = {"partition_index": index, "error_code": Errors.NONE,
                                        "error_message": None, "active_producers": []}
                parts.append(part)
                if not self.authorize_topic(request, AclOperation.READ, t["name"]):
                    part["error_code"] = Errors.TOPIC_AUTHORIZATION_FAILED
                    continue
                partition, error = self.broker.replica_manager.leader_partition_or_error(
                    t["name"], index)
                if partition is None:
                    part["error_code"] = error
                    continue
                part["active_producers"] = [
                    {"producer_id": e.producer_id, "producer_epoch": e.producer_epoch,
                     "last_sequence": e.last_seq, "last_timestamp": e.last_timestamp,
                     "coordinator_epoch": e.coordinator_epoch,
                     "current_txn_start_offset": e.current_txn_first_offset}
                    for e in partition.log.producer_state.active_producers()]
            topics.append({"name": t["name"], "partitions": parts})
        self.respond(request, {"throttle_time_ms": 0, "topics": topics})

    def handle_describe_transactions_request(self, request: Request) -> None:
        body = request.body
        assert body is not None
        coordinator = self.broker.transaction_coordinator
        states = []
        for txn_id in body["transactional_ids"]:
            if self.authorize(request, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                              txn_id):
                states.append(coordinator.handle_describe_transactions(txn_id))
            else:
                states.append({**coordinator.handle_describe_transactions(""),
                               "transactional_id": txn_id,
                               "error_code": Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})
        self.respond(request, {"throttle_time_ms": 0, "transaction_states": states})

    def handle_list_transactions_request(self, request: Request) -> None:
        body = request.body
        assert body is not None
        error, unknown, found = self.broker.transaction_coordinator.handle_list_transactions(
            body["state_filters"], body["producer_id_filters"], body.get("duration_filter", -1),
            body.get("transactional_id_pattern"))
        self.respond(request, {
            "throttle_time_ms": 0, "error_code": error, "unknown_state_filters": unknown,
            "transaction_states": [
                {"transactional_id": m.transactional_id, "producer_id": m.producer_id,
                 "transaction_state": m.state.state_name}
                for m in found if self.authorize(request, AclOperation.DESCRIBE,
                                                 ResourceType.TRANSACTIONAL_ID,
                                                 m.transactional_id)]})

    # -- FindCoordinator, OffsetCommit, OffsetFetch ----------------------------------------------

    def handle_find_coordinator_request(self, request: Request) -> None:
        """The coordinator of a group is the leader of its ``__consumer_offsets`` partition
        (created on the first look-up, as Kafka does); COORDINATOR_NOT_AVAILABLE while that
        partition has no live leader.  A transactional id's (key type 1) is the leader of its
        ``__transaction_state`` partition, likewise."""
        body, version = request.body, request.api_version
        assert body is not None
        keys = body["coordinator_keys"] if version >= 4 else [body["key"]]
        live = self._live_brokers(request.listener_name)
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
        manager = self.broker.group_coordinator.group_manager
        if not manager.ensure_offsets_topic():
            return -1
        if self.broker.replica_manager.standalone:
            return int(self.broker.broker_id)
        state = self._metadata_partition(OFFSETS_TOPIC, manager.partition_for(group_id))
        return int(state["leader_id"])

    def _transaction_coordinator_of(self, transactional_id: str) -> int:
        """The leader of the id's ``__transaction_state`` partition, or -1."""
        manager = self.broker.transaction_coordinator.txn_manager
        if not manager.ensure_topic():
            return -1
        if self.broker.replica_manager.standalone:
            return int(self.broker.broker_id)
        state = self._metadata_partition(TRANSACTION_STATE_TOPIC,
                                         manager.partition_for(transactional_id))
        return int(state["leader_id"])

    def handle_offset_commit_request(self, request: Request) -> None:
        """Answered once the commit is on the offsets topic's in-sync replicas (the answer
        waits in the produce purgatory, as an acks=all produce)."""
        body = request.body
        assert body is not None
        coordinator = self.broker.group_coordinator
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
        error, found = self.broker.group_coordinator.handle_fetch_offsets(group_id, asked)
        if error != Errors.NONE:
            # v0-1 have no top-level error: each partition carries it.
            found = dict.fromkeys(asked or [], None)
        unstable = self.broker.group_coordinator.group_manager.pending_offset_partitions(
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
            {"name": topic, "topic_id": self._topic_id(topic), "partitions": parts}
            for topic, parts in by_topic.items()
        ]

    def _topic_id(self, name: str | None) -> uuid.UUID:
        meta = None if name is None else self.metadata_cache.get(name)
        return uuid.UUID(int=0) if meta is None else meta.topic_id

    def handle_offset_fetch_request(self, request: Request) -> None:
        body, version = request.body, request.api_version
        assert body is not None

        def may_describe(group_id: str) -> bool:
            return self.authorize(request, AclOperation.DESCRIBE, ResourceType.GROUP, group_id)

        def status(group_id: str) -> int:
            if not may_describe(group_id):
                return Errors.GROUP_AUTHORIZATION_FAILED
            return self.broker.group_coordinator.validate_group_status(group_id,
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
                error = self.broker.group_coordinator.validate_offset_fetch(
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

    # -- SaslHandshake, SaslAuthenticate ---------------------------------------------------------

    def handle_sasl_handshake_request(self, request: Request) -> None:
        """On a SASL listener the processor's authenticator answers these (see
        :mod:`kafkacore.broker.security.authentication`); here the listener has no SASL: ILLEGAL_SASL_STATE,
        as Kafka's ``handleSaslHandshakeRequest``."""
        self.respond(request, {"error_code": Errors.ILLEGAL_SASL_STATE, "mechanisms": []})

    def handle_sasl_authenticate_request(self, request: Request) -> None:
        self.respond(request, {
            "error_code": Errors.ILLEGAL_SASL_STATE, "auth_bytes": b"", "session_lifetime_ms": 0,
            "error_message": f"SaslAuthenticate on listener {request.listener_name}, which has "
                             "no SASL"})

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
        body, version = request.body, request.api_version
        assert body is not None
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

        self.broker.group_coordinator.handle_join_group(
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
        body = request.body
        assert body is not None
        if self.group_refused(request, body["group_id"]):
            return

        def send_response(result: SyncGroupResult) -> None:
            self.respond(request, {
                "throttle_time_ms": 0, "error_code": result.error,
                "protocol_type": result.protocol_type, "protocol_name": result.protocol_name,
                "assignment": result.assignment,
            })

        self.broker.group_coordinator.handle_sync_group(
            body["group_id"], body["generation_id"], body["member_id"],
            body.get("protocol_type"), body.get("protocol_name"),
            {a["member_id"]: a["assignment"] for a in body["assignments"]},
            send_response, body.get("group_instance_id"),
        )

    def handle_heartbeat_request(self, request: Request) -> None:
        body = request.body
        assert body is not None
        if self.group_refused(request, body["group_id"]):
            return
        error = self.broker.group_coordinator.handle_heartbeat(
            body["group_id"], body["member_id"], body["generation_id"],
            body.get("group_instance_id"))
        self.respond(request, {"throttle_time_ms": 0, "error_code": error})

    def handle_leave_group_request(self, request: Request) -> None:
        body, version = request.body, request.api_version
        assert body is not None
        if self.group_refused(request, body["group_id"]):
            return
        if version >= 3:  # several members at once (KIP-345)
            members = [(m["member_id"], m.get("group_instance_id")) for m in body["members"]]
        else:
            members = [(body["member_id"], None)]
        error, member_errors = self.broker.group_coordinator.handle_leave_group(
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
        body = request.body
        assert body is not None
        groups = []
        for group_id in body["groups"]:
            if not self.authorize(request, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
                groups.append({"error_code": Errors.GROUP_AUTHORIZATION_FAILED,
                               "group_id": group_id, "group_state": "", "protocol_type": "",
                               "protocol_data": "", "members": [],
                               "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})
                continue
            error, summary = self.broker.group_coordinator.handle_describe_group(group_id)
            operations = self.authorized_operations(request, ResourceType.GROUP, group_id) \
                if body.get("include_authorized_operations", False) \
                else AUTHORIZED_OPERATIONS_OMITTED  # KIP-430
            groups.append({"error_code": error, "group_id": group_id,
                           "authorized_operations": operations, **summary})
        self.respond(request, {"throttle_time_ms": 0, "groups": groups})

    def handle_list_groups_request(self, request: Request) -> None:
        body = request.body
        assert body is not None
        states = {s.lower() for s in body.get("states_filter") or []}
        types = {t.lower() for t in body.get("types_filter") or []}
        coordinator = self.broker.group_coordinator
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
        assert request.body is not None
        asked = request.body["groups_names"]
        refused = {g: Errors.GROUP_AUTHORIZATION_FAILED for g in asked
                   if not self.authorize(request, AclOperation.DELETE, ResourceType.GROUP, g)}

        def send_response(results: dict[str, int]) -> None:
            results = {**results, **refused}
            self.respond(request, {"throttle_time_ms": 0, "results": [
                {"group_id": g, "error_code": results[g]} for g in dict.fromkeys(asked)]})

        self.broker.group_coordinator.handle_delete_groups(
            [g for g in dict.fromkeys(asked) if g not in refused], send_response)

    def handle_offset_delete_request(self, request: Request) -> None:
        """DELETE on the group (else GROUP_AUTHORIZATION_FAILED for the whole request), READ
        on each topic; partitions of unknown topics are UNKNOWN_TOPIC_OR_PARTITION."""
        assert request.body is not None
        body = request.body
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
                elif not self._partition_exists(*tp):
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

        self.broker.group_coordinator.handle_delete_offsets(body["group_id"], partitions,
                                                            send_response)

    # -- OffsetForLeaderEpoch (KIP-101, KIP-320) -------------------------------------------------

    def handle_offset_for_leader_epoch_request(self, request: Request) -> None:
        """Where a leader epoch ends in the leader's log: followers truncate there before
        fetching, and consumers check their position after a leader change."""
        assert request.body is not None
        rm = self.broker.replica_manager
        # Kafka: a follower (replica id >= 0) needs CLUSTER_ACTION, a consumer DESCRIBE on
        # the topic.
        cluster_refused = request.body.get("replica_id", -2) >= 0 and not self.authorize(
            request, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)
        topics = []
        for t in request.body["topics"]:
            parts = []
            refused = Errors.CLUSTER_AUTHORIZATION_FAILED if cluster_refused else Errors.NONE if \
                self.authorize_topic(request, AclOperation.DESCRIBE, t["topic"]) \
                else Errors.TOPIC_AUTHORIZATION_FAILED
            for p in t["partitions"]:
                if refused:
                    parts.append({"error_code": refused, "partition": p["partition"],
                                  "leader_epoch": -1, "end_offset": -1})
                    continue
                error, epoch, end = rm.last_offset_for_leader_epoch(
                    t["topic"], p["partition"], p.get("current_leader_epoch", -1),
                    p["leader_epoch"])
                parts.append({"error_code": error, "partition": p["partition"],
                              "leader_epoch": epoch, "end_offset": end})
            topics.append({"topic": t["topic"], "partitions": parts})
        self.respond(request, {"throttle_time_ms": 0, "topics": topics})

