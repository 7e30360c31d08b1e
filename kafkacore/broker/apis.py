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
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkacore import errors
from kafkacore.broker import faults
from kafkacore.broker.api_request_handler import ApiRequestHandler
from kafkacore.broker.group_coordinator import OffsetAndMetadata
from kafkacore.broker.group_metadata import JoinGroupResult, SyncGroupResult
from kafkacore.broker.group_metadata_manager import OFFSETS_TOPIC
from kafkacore.broker.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, LogConfig
from kafkacore.broker.metadata_cache import validate_topic_name
from kafkacore.broker.request_channel import Request
from kafkacore.protocol.api_keys import ApiKey

if TYPE_CHECKING:
    from kafkacore.broker.server import Broker

log = logging.getLogger(__name__)

NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNSUPPORTED_VERSION = 35
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
INVALID_REQUIRED_ACKS = 21
LEADER_NOT_AVAILABLE = 5
NOT_CONTROLLER = 41
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
TOPIC_ALREADY_EXISTS = 36
COORDINATOR_NOT_AVAILABLE = 15
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_CONFIG = 40
INVALID_REQUEST = 42
UNKNOWN_TOPIC_ID = 100
ILLEGAL_SASL_STATE = 34

RESOURCE_TYPE_TOPIC = 2
CONFIG_SOURCE_TOPIC = 1  #: DYNAMIC_TOPIC_CONFIG
CONFIG_SOURCE_DEFAULT = 5  #: DEFAULT_CONFIG

#: "authorized operations" not computed (Kafka's ``Int.MinValue`` sentinel).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
INT32_MAX = 2**31 - 1
ZERO_UUID = uuid.UUID(int=0)


class KafkaApis(ApiRequestHandler):
    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.request_channel)
        self.broker = broker
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
            ApiKey.DESCRIBE_CONFIGS: self.handle_describe_configs_request,
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
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.handle_offset_for_leader_epoch_request,
        }
        self.metadata_cache = broker.metadata_cache
        self.log_manager = broker.log_manager
        self.producer_id_manager = broker.producer_id_manager

    def handle(self, request: Request) -> None:
        api_key = request.api_key
        if api_key == ApiKey.API_VERSIONS and request.body is None:
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
            self.send_error_response(request, UNSUPPORTED_VERSION)
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

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> tuple[Any, bool]:
        """Record the topic (persisted first), then create its partitions' logs."""
        config = self.topic_config(configs)
        topic, created = self.metadata_cache.add_topic(name, partitions, configs)
        if created:
            for p in range(partitions):
                self.log_manager.get_or_create_log(name, p, config, topic.topic_id)
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
            return {"error_code": NONE, "partition_index": p, "leader_id": me, "leader_epoch": 0,
                    "replica_nodes": [me], "isr_nodes": [me], "offline_replicas": []}
        state = rm.image_topics.get(topic, {}).get(p)
        if state is None:
            return {"error_code": LEADER_NOT_AVAILABLE, "partition_index": p, "leader_id": -1,
                    "leader_epoch": -1, "replica_nodes": [], "isr_nodes": [],
                    "offline_replicas": []}
        leader, epoch, isr = state.leader, state.leader_epoch, state.isr
        local = rm.partitions.get((topic, p))
        if local is not None and local.is_leader and local.leader_epoch >= epoch:
            leader, epoch, isr = me, local.leader_epoch, local.isr
        return {"error_code": NONE if leader >= 0 else LEADER_NOT_AVAILABLE,
                "partition_index": p, "leader_id": leader, "leader_epoch": epoch,
                "replica_nodes": list(state.replicas), "isr_nodes": list(isr),
                "offline_replicas": [r for r in state.replicas if r not in rm.brokers]}

    def _metadata_topic(self, version: int, meta: Any) -> dict[str, Any]:
        return {
            "error_code": NONE,
            "name": meta.name,
            "topic_id": meta.topic_id,
            "is_internal": meta.name == OFFSETS_TOPIC,
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
            topics = [self._metadata_topic(version, t) for t in self.metadata_cache.topics()]
        else:
            for entry in asked:
                name = entry.get("name")
                if name is None:  # v10+: by topic id
                    topic_id = entry.get("topic_id", ZERO_UUID)
                    name = self.metadata_cache.name_of(topic_id)
                    if name is None:
                        topics.append(self._metadata_error(None, topic_id, UNKNOWN_TOPIC_ID))
                        continue
                meta = self.metadata_cache.get(name)
                if meta is None:
                    try:
                        validate_topic_name(name)
                    except errors.InvalidTopicError:
                        topics.append(self._metadata_error(name, ZERO_UUID,
                                                           INVALID_TOPIC_EXCEPTION))
                        continue
                    if not allow_auto_create:
                        topics.append(self._metadata_error(name, ZERO_UUID,
                                                           UNKNOWN_TOPIC_OR_PARTITION))
                        continue
                    # Kafka answers LEADER_NOT_AVAILABLE while the controller creates the
                    # topic; here creation is synchronous, so the topic is usable at once.
                    if self.broker.lifecycle is not None:
                        meta = self._auto_create_in_cluster(name)
                        if meta is None:
                            topics.append(self._metadata_error(name, ZERO_UUID,
                                                               LEADER_NOT_AVAILABLE))
                            continue
                    else:
                        meta, _ = self.create_topic(name, self.broker.config["num.partitions"],
                                                    {})
                topics.append(self._metadata_topic(version, meta))
        live = self._live_brokers(request.listener_name)
        self.respond(request, {
            "throttle_time_ms": 0,
            "brokers": [{"node_id": node, "host": host, "port": port, "rack": None}
                        for node, (host, port) in sorted(live.items())],
            "cluster_id": self.broker.cluster_id,
            # Clients cannot reach a KRaft controller: Kafka 4 names a live broker here.
            "controller_id": min(self._live_brokers()),
            "topics": topics,
            "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        })

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

    def _forward_to_controller(self, request: Request) -> bool:
        """In a cluster, topics are the controller's: send it the request as it came and pass
        its answer back (Kafka's request forwarding).  False when this broker is alone."""
        if self.broker.lifecycle is None:
            return False
        assert request.body is not None
        try:
            response = self.broker.forwarding_manager.forward(request.api_key, request.api_version,
                                                     request.body)
        except OSError as exc:
            log.info("forwarding API %d to the controller failed: %s", request.api_key, exc)
            self.send_error_response(request, NOT_CONTROLLER)
            return True
        self.respond(request, response)
        return True

    # -- CreateTopics ----------------------------------------------------------------------------

    def handle_create_topics_request(self, request: Request) -> None:
        assert request.body is not None
        if self._forward_to_controller(request):
            return
        body = request.body
        names = [t["name"] for t in body["topics"]]
        results = []
        for t in body["topics"]:
            results.append(self._create_one_topic(t, names.count(t["name"]) > 1,
                                                  body.get("validate_only", False)))
        self.respond(request, {"throttle_time_ms": 0, "topics": results})

    def _create_one_topic(self, t: dict[str, Any], repeated: bool,
                          validate_only: bool) -> dict[str, Any]:
        name = t["name"]
        result: dict[str, Any] = {
            "name": name, "topic_id": ZERO_UUID, "error_code": NONE, "error_message": None,
            "num_partitions": -1, "replication_factor": -1, "configs": None,
        }

        def fail(code: int, message: str) -> dict[str, Any]:
            result.update(error_code=code, error_message=message)
            return result

        if repeated:
            return fail(INVALID_REQUEST, f"topic {name!r} appears more than once in the request")
        try:
            validate_topic_name(name)
        except errors.InvalidTopicError as exc:
            return fail(INVALID_TOPIC_EXCEPTION, str(exc))
        if self.metadata_cache.get(name) is not None:
            return fail(TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        assignments = t["assignments"]
        if assignments:
            if t["num_partitions"] != -1 or t["replication_factor"] != -1:
                return fail(INVALID_REQUEST, "assignments come with num_partitions and "
                                             "replication_factor -1")
            indexes = sorted(a["partition_index"] for a in assignments)
            if indexes != list(range(len(indexes))):
                return fail(INVALID_PARTITIONS, "assigned partitions must be 0..n-1")
            if any(a["broker_ids"] != [self.broker.broker_id] for a in assignments):
                return fail(INVALID_REPLICATION_FACTOR,
                            f"this cluster has one broker, {self.broker.broker_id}")
            partitions = len(indexes)
        else:
            partitions = t["num_partitions"]
            if partitions == -1:
                partitions = self.broker.config["num.partitions"]
            if partitions <= 0:
                return fail(INVALID_PARTITIONS, f"number of partitions must be positive, "
                                                f"got {partitions}")
            rf = t["replication_factor"]
            if rf not in (-1, 1):
                return fail(INVALID_REPLICATION_FACTOR,
                            f"replication factor {rf} is larger than the 1 broker available")
        configs: dict[str, str] = {}
        for c in t["configs"]:
            if c["value"] is not None:
                configs[c["name"]] = c["value"]
        try:
            config = self.topic_config(configs)
        except errors.InvalidConfigError as exc:
            return fail(INVALID_CONFIG, str(exc))
        if not validate_only:
            meta, created = self.create_topic(name, partitions, configs)
            if not created:  # created by another request meanwhile
                return fail(TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
            result["topic_id"] = meta.topic_id
        result.update(
            num_partitions=partitions,
            replication_factor=1,
            configs=[
                {"name": k, "value": v, "read_only": False,
                 "config_source": CONFIG_SOURCE_TOPIC if k in configs else CONFIG_SOURCE_DEFAULT,
                 "is_sensitive": False}
                for k, v in config.to_properties().items()
            ],
        )
        return result

    # -- DeleteTopics ----------------------------------------------------------------------------

    def handle_delete_topics_request(self, request: Request) -> None:
        """Forget the topic (persisted first, so a crash cannot bring it back), then delete its
        partitions' logs."""
        assert request.body is not None
        if self._forward_to_controller(request):
            return
        results = []
        for name in request.body["topic_names"]:
            meta = self.metadata_cache.remove_topic(name)
            if meta is None:
                results.append({"name": name, "error_code": UNKNOWN_TOPIC_OR_PARTITION})
                continue
            for p in range(meta.partitions):
                self.log_manager.delete_log(name, p)
            results.append({"name": name, "error_code": NONE})
        self.respond(request, {"throttle_time_ms": 0, "responses": results})

    # -- DescribeConfigs -------------------------------------------------------------------------

    def handle_describe_configs_request(self, request: Request) -> None:
        """A topic's configs: its own (DYNAMIC_TOPIC_CONFIG) and the broker's defaults
        (DEFAULT_CONFIG).  Other resource types (brokers, loggers) are not described yet."""
        assert request.body is not None
        results = []
        for res in request.body["resources"]:
            result: dict[str, Any] = {"error_code": NONE, "error_message": None,
                                      "resource_type": res["resource_type"],
                                      "resource_name": res["resource_name"], "configs": []}
            meta = self.metadata_cache.get(res["resource_name"])
            if res["resource_type"] != RESOURCE_TYPE_TOPIC:
                result.update(error_code=INVALID_REQUEST,
                              error_message="this broker describes topics only")
            elif meta is None:
                result.update(error_code=UNKNOWN_TOPIC_OR_PARTITION,
                              error_message=f"topic {res['resource_name']!r} does not exist")
            else:
                keys = res["configuration_keys"]
                for name, value in self.topic_config(meta.configs).to_properties().items():
                    if keys is not None and name not in keys:
                        continue
                    own = name in meta.configs
                    result["configs"].append({
                        "name": name, "value": value, "read_only": False, "is_default": not own,
                        "config_source": CONFIG_SOURCE_TOPIC if own else CONFIG_SOURCE_DEFAULT,
                        "is_sensitive": False, "synonyms": [],
                    })
            results.append(result)
        self.respond(request, {"throttle_time_ms": 0, "results": results})

    # -- Produce ---------------------------------------------------------------------------------

    def handle_produce_request(self, request: Request) -> None:
        """Append through the :class:`~kafkacore.broker.replica_manager.ReplicaManager`; with
        acks=all the answer waits in the produce purgatory until the ISR has the batches."""
        assert request.body is not None
        body = request.body
        acks = body["acks"]
        entries: dict[tuple[str, int], tuple[dict[str, Any], Any]] = {}
        order: list[tuple[str, list[tuple[str, int]]]] = []
        for topic in body["topic_data"]:
            keys = []
            for pd in topic["partition_data"]:
                response: dict[str, Any] = {
                    "index": pd["index"], "error_code": NONE, "base_offset": -1,
                    "log_append_time_ms": -1, "log_start_offset": -1, "record_errors": [],
                    "error_message": None,
                }
                key = (topic["name"], pd["index"])
                keys.append(key)
                if acks not in (0, 1, -1):
                    response["error_code"] = INVALID_REQUIRED_ACKS
                elif pd["records"] is None:
                    response.update(error_code=CORRUPT_MESSAGE, error_message="null records")
                elif key not in entries:
                    entries[key] = (response, pd["records"])
                    continue
                entries.setdefault(key, (response, None))
            order.append((topic["name"], keys))
        valid = {k: v for k, v in entries.items() if v[1] is not None}
        invalid = {k: v[0] for k, v in entries.items() if v[1] is None}

        def respond(results: dict[tuple[str, int], dict[str, Any]]) -> None:
            results = {**invalid, **results}
            responses = [{"name": name, "partition_responses": [results[k] for k in keys]}
                         for name, keys in order]
            if acks == 0:
                # acks=0: the producer reads no answer, so none is sent (Kafka closes the
                # connection instead when the append failed, so the producer notices).
                if any(p["error_code"] != NONE for t in responses
                       for p in t["partition_responses"]):
                    self.request_channel.close_connection(request, "acks=0 produce failed")
                else:
                    self.request_channel.send_no_response(request)
                return
            self.respond(request, {"responses": responses, "throttle_time_ms": 0})

        self.broker.replica_manager.append_records(body.get("timeout_ms", 30000), acks, valid,
                                                   respond)

    # -- Fetch -----------------------------------------------------------------------------------

    def handle_fetch_request(self, request: Request) -> None:
        """Read through the :class:`~kafkacore.broker.replica_manager.ReplicaManager`.

        Consumers read below the high watermark; a follower (a replica id >= 0, in
        ``replica_state`` since v15) reads up to the log end and reports its log end offset by
        the offset it asks for.  With less than ``min_bytes`` the answer waits up to
        ``max_wait_ms`` in the fetch purgatory (a long poll) and comes as soon as data does.

        Incremental fetch sessions (KIP-227): we never create one, answering every fetch with
        session id 0 and every partition asked, which KIP-227 allows ("full fetch response").
        """
        assert request.body is not None
        body = request.body
        version = request.api_version
        from kafkacore.broker.replica_manager import FetchParams, FetchPartitionInfo

        replica_id = (body.get("replica_state") or {}).get("replica_id", -1) if version >= 15 \
            else body.get("replica_id", -1)
        params = FetchParams(replica_id, body["max_wait_ms"], body["min_bytes"],
                             body.get("max_bytes", INT32_MAX) if version >= 3 else INT32_MAX)
        infos: list[Any] = []
        topics: list[tuple[str, uuid.UUID, list[Any]]] = []
        unknown: dict[int, dict[str, Any]] = {}
        for topic in body["topics"]:
            if version >= 13:
                topic_id = topic["topic_id"]
                name = self.metadata_cache.name_of(topic_id)
            else:
                topic_id, name = ZERO_UUID, topic["topic"]
            entries = []
            for fp in topic["partitions"]:
                info = FetchPartitionInfo(name or "", topic_id, fp["partition"],
                                          fp["fetch_offset"], fp.get("current_leader_epoch", -1),
                                          fp["partition_max_bytes"])
                if name is None:
                    unknown[id(info)] = {
                        "partition_index": fp["partition"], "error_code": UNKNOWN_TOPIC_ID,
                        "high_watermark": -1, "last_stable_offset": -1,
                        "log_start_offset": -1, "aborted_transactions": None,
                        "preferred_read_replica": -1, "records": b""}
                else:
                    infos.append(info)
                entries.append(info)
            topics.append((name or "", topic_id, entries))

        def respond(results: list[dict[str, Any]]) -> None:
            by_info = dict(zip((id(i) for i in infos), results, strict=True))
            by_info.update(unknown)
            self.respond(request, {
                "throttle_time_ms": 0, "error_code": NONE, "session_id": 0,
                "responses": [{"topic": name, "topic_id": topic_id,
                               "partitions": [by_info[id(i)] for i in entries]}
                              for name, topic_id, entries in topics],
            })

        self.broker.replica_manager.fetch_messages(params, infos, respond)

    # -- ListOffsets -----------------------------------------------------------------------------

    def handle_list_offsets_request(self, request: Request) -> None:
        assert request.body is not None
        version = request.api_version
        topics = []
        for topic in request.body["topics"]:
            parts = []
            for p in topic["partitions"]:
                part: dict[str, Any] = {"partition_index": p["partition_index"],
                                        "error_code": NONE, "old_style_offsets": [],
                                        "timestamp": -1, "offset": -1, "leader_epoch": -1}
                lg = self.get_partition_log(topic["name"], p["partition_index"])
                if lg is None:
                    part["error_code"] = UNKNOWN_TOPIC_OR_PARTITION
                    parts.append(part)
                    continue
                ts = p["timestamp"]
                if ts == LATEST_TIMESTAMP:
                    # A consumer sees up to the high watermark (the last stable offset when
                    # read_committed, the same here: no transactions).
                    found: tuple[int, int] | None = (lg.high_watermark, -1)
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
        """An idempotent producer's id (Kafka's ``ProducerIdManager``, blocks reserved on disk).

        A transactional id needs a transaction coordinator, which this broker does not have yet.
        """
        assert request.body is not None
        body = request.body
        response = {"throttle_time_ms": 0, "error_code": NONE, "producer_id": -1,
                     "producer_epoch": -1}
        if body["transactional_id"] is not None:
            response["error_code"] = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif body.get("producer_id", -1) >= 0 and 0 <= body.get("producer_epoch", -1) < 32766:
            # KIP-360: an idempotent producer bumps its epoch to reset its sequences.
            response.update(producer_id=body["producer_id"],
                            producer_epoch=body["producer_epoch"] + 1)
        else:
            response.update(producer_id=self.producer_id_manager.generate_producer_id(),
                            producer_epoch=0)
        self.respond(request, response)

    # -- FindCoordinator, OffsetCommit, OffsetFetch ----------------------------------------------

    def handle_find_coordinator_request(self, request: Request) -> None:
        """The coordinator of a group is the leader of its ``__consumer_offsets`` partition
        (created on the first look-up, as Kafka does); COORDINATOR_NOT_AVAILABLE while that
        partition has no live leader.  Key type 1 (transactions) is not served yet."""
        body, version = request.body, request.api_version
        assert body is not None
        keys = body["coordinator_keys"] if version >= 4 else [body["key"]]
        live = self._live_brokers(request.listener_name)
        nodes = {}
        for key in keys:
            node, error = (-1, "", -1), COORDINATOR_NOT_AVAILABLE
            if body.get("key_type", 0) == 0:
                leader = self._group_coordinator_of(key)
                if leader in live:
                    node, error = (leader, *live[leader]), NONE
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

    def handle_offset_commit_request(self, request: Request) -> None:
        """Answered once the commit is on the offsets topic's in-sync replicas (the answer
        waits in the produce purgatory, as an acks=all produce)."""
        body = request.body
        assert body is not None
        coordinator = self.broker.group_coordinator
        offsets = {}
        unknown = set()
        for t in body["topics"]:
            if request.api_version >= 10:  # topics by id (KIP-848)
                t["name"] = self.metadata_cache.name_of(t["topic_id"])
            name = t.get("name")
            for p in t["partitions"]:
                tp = (name, p["partition_index"])
                meta = None if name is None else self.metadata_cache.get(name)
                if meta is None or not 0 <= tp[1] < meta.partitions:
                    unknown.add(tp)
                    continue
                offsets[tp] = OffsetAndMetadata(
                    p["committed_offset"], p.get("committed_leader_epoch", -1),
                    p["committed_metadata"], p.get("commit_timestamp", -1))

        def send_response(errors: dict[tuple[str | None, int], int]) -> None:
            errors = {**errors, **dict.fromkeys(unknown, UNKNOWN_TOPIC_OR_PARTITION)}
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

        coordinator.handle_commit_offsets(
            body["group_id"], body.get("generation_id_or_member_epoch", -1), offsets,
            member_id=body.get("member_id", ""), response_callback=send_response)

    def _offset_fetch_topics(
        self, group_id: str, topics: list[dict[str, Any]] | None, version: int
    ) -> list[dict[str, Any]]:
        asked = None
        if topics is not None:
            if version >= 10:  # topics by id (KIP-848)
                for t in topics:
                    t["name"] = self.metadata_cache.name_of(t["topic_id"])
            asked = [(t["name"], p) for t in topics for p in t["partition_indexes"]]
        error, found = self.broker.group_coordinator.handle_fetch_offsets(group_id, asked)
        if error != NONE:
            # v0-1 have no top-level error: each partition carries it.
            found = dict.fromkeys(asked or [], None)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), value in found.items():
            by_topic.setdefault(topic, []).append({
                "partition_index": partition,
                # -1 and an empty metadata string: nothing committed (Kafka's INVALID_OFFSET).
                "committed_offset": -1 if value is None else value.offset,
                "committed_leader_epoch": -1 if value is None else value.leader_epoch,
                "metadata": "" if value is None else value.metadata,
                "error_code": error if error != NONE else
                              NONE if topic is not None else UNKNOWN_TOPIC_ID,
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

        def status(group_id: str) -> int:
            return self.broker.group_coordinator.validate_group_status(group_id,
                                                                       allow_empty=True)

        if version >= 8:
            groups = [
                {"group_id": g["group_id"], "error_code": status(g["group_id"]),
                 "topics": self._offset_fetch_topics(g["group_id"], g["topics"], version)}
                for g in body["groups"]
            ]
            response = {"throttle_time_ms": 0, "groups": groups}
        else:
            response = {
                "throttle_time_ms": 0,
                "error_code": status(body["group_id"]) if version >= 2 else NONE,
                "topics": self._offset_fetch_topics(body["group_id"], body["topics"], version),
            }
        self.respond(request, response)

    # -- SaslHandshake, SaslAuthenticate ---------------------------------------------------------

    def handle_sasl_handshake_request(self, request: Request) -> None:
        """On a SASL listener the processor's authenticator answers these (see
        :mod:`kafkacore.broker.security`); here the listener has no SASL: ILLEGAL_SASL_STATE,
        as Kafka's ``handleSaslHandshakeRequest``."""
        self.respond(request, {"error_code": ILLEGAL_SASL_STATE, "mechanisms": []})

    def handle_sasl_authenticate_request(self, request: Request) -> None:
        self.respond(request, {
            "error_code": ILLEGAL_SASL_STATE, "auth_bytes": b"", "session_lifetime_ms": 0,
            "error_message": f"SaslAuthenticate on listener {request.listener_name}, which has "
                             "no SASL"})

    # -- the classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup -----------------

    def handle_join_group_request(self, request: Request) -> None:
        """Parked in the group until the rebalance completes; answered by the callback, from
        whichever thread completes it (a handler, or the rebalance purgatory's reaper)."""
        body, version = request.body, request.api_version
        assert body is not None

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
            send_response,
        )

    def handle_heartbeat_request(self, request: Request) -> None:
        body = request.body
        assert body is not None
        error = self.broker.group_coordinator.handle_heartbeat(
            body["group_id"], body["member_id"], body["generation_id"])
        self.respond(request, {"throttle_time_ms": 0, "error_code": error})

    def handle_leave_group_request(self, request: Request) -> None:
        body, version = request.body, request.api_version
        assert body is not None
        if version >= 3:  # several members at once (KIP-345)
            members = [(m["member_id"], m.get("group_instance_id")) for m in body["members"]]
        else:
            members = [(body["member_id"], None)]
        error, member_errors = self.broker.group_coordinator.handle_leave_group(
            body["group_id"], [m for m, _ in members])
        if version < 3 and error == NONE and member_errors:
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
            error, summary = self.broker.group_coordinator.handle_describe_group(group_id)
            groups.append({"error_code": error, "group_id": group_id,
                           "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED, **summary})
        self.respond(request, {"throttle_time_ms": 0, "groups": groups})

    def handle_list_groups_request(self, request: Request) -> None:
        body = request.body
        assert body is not None
        states = {s.lower() for s in body.get("states_filter") or []}
        types = {t.lower() for t in body.get("types_filter") or []}
        listed = [] if types and "classic" not in types else [
            {"group_id": group_id, "protocol_type": protocol_type, "group_state": state,
             "group_type": "classic"}
            for group_id, protocol_type, state in
            self.broker.group_coordinator.handle_list_groups()
            if not states or state.lower() in states
        ]
        self.respond(request, {"throttle_time_ms": 0, "error_code": NONE, "groups": listed})

    # -- OffsetForLeaderEpoch (KIP-101, KIP-320) -------------------------------------------------

    def handle_offset_for_leader_epoch_request(self, request: Request) -> None:
        """Where a leader epoch ends in the leader's log: followers truncate there before
        fetching, and consumers check their position after a leader change."""
        assert request.body is not None
        rm = self.broker.replica_manager
        topics = []
        for t in request.body["topics"]:
            parts = []
            for p in t["partitions"]:
                error, epoch, end = rm.last_offset_for_leader_epoch(
                    t["topic"], p["partition"], p.get("current_leader_epoch", -1),
                    p["leader_epoch"])
                parts.append({"error_code": error, "partition": p["partition"],
                              "leader_epoch": epoch, "end_offset": end})
            topics.append({"topic": t["topic"], "partitions": parts})
        self.respond(request, {"throttle_time_ms": 0, "topics": topics})

