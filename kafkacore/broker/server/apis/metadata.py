"""Metadata and DescribeTopicPartitions: topics, their partitions' leaders, and the brokers.

Alone, a broker leads every partition at leader epoch 0 with itself as the only replica; in a
cluster it answers from the controller's image (where it leads, with its own newer ISR).  A topic
asked for that does not exist is auto-created (``auto.create.topics.enable``): by this broker
alone, by the controller in a cluster (Kafka's ``AutoTopicCreationManager``).
See docs/broker/apis.rst.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from kafkacore import errors
from kafkacore.broker.group.group_metadata_manager import OFFSETS_TOPIC
from kafkacore.broker.metadata.metadata_cache import validate_topic_name
from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.server.apis.base import (
    AUTHORIZED_OPERATIONS_OMITTED,
    ZERO_UUID,
    KafkaApisBase,
    body_of,
)
from kafkacore.broker.transaction.transaction_state_manager import TRANSACTION_STATE_TOPIC
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)


class MetadataApis(KafkaApisBase):
    """Metadata (Kafka's ``handleTopicMetadataRequest``) and DescribeTopicPartitions
    (``DescribeTopicPartitionsRequestHandler``)."""

    # -- Metadata --------------------------------------------------------------------------------

    def _metadata_topic(self, version: int, meta: Any) -> dict[str, Any]:
        return {
            "error_code": Errors.NONE,
            "name": meta.name,
            "topic_id": meta.topic_id,
            "is_internal": meta.name in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC),
            "partitions": [self.metadata_partition(meta.name, p)
                           for p in range(meta.partitions)],
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        }

    def handle_metadata_request(self, request: Request) -> None:
        body = body_of(request)
        version = request.api_version
        asked = body["topics"]
        # v0: an empty list means every topic; v1+: null means every topic.
        allow_auto_create = body.get("allow_auto_topic_creation", True) and self.config[
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
                    if self.in_cluster:
                        meta = self._auto_create_in_cluster(name)
                        if meta is None:
                            topics.append(self._metadata_error(name, ZERO_UUID,
                                                               Errors.LEADER_NOT_AVAILABLE))
                            continue
                    else:
                        meta, _ = self.create_topic(name, self.config["num.partitions"],
                                                    {})
                topics.append(self._metadata_topic(version, meta))
        live = self.live_brokers(request.listener_name)
        if body.get("include_topic_authorized_operations", False):  # KIP-430
            for t in topics:
                if t["error_code"] == Errors.NONE:
                    t["topic_authorized_operations"] = self.authorized_operations(
                        request, ResourceType.TOPIC, t["name"])
        self.respond(request, {
            "throttle_time_ms": 0,
            "brokers": [{"node_id": node, "host": host, "port": port, "rack": None}
                        for node, (host, port) in sorted(live.items())],
            "cluster_id": self.cluster_id,
            # Clients cannot reach a KRaft controller: Kafka 4 names a live broker here, one of
            # those listed (the same snapshot: a broker fenced meanwhile is in neither).
            "controller_id": min(live),
            "topics": topics,
            "cluster_authorized_operations":
                self.authorized_operations(request, ResourceType.CLUSTER)
                if body.get("include_cluster_authorized_operations", False)
                else AUTHORIZED_OPERATIONS_OMITTED,
        })

    # -- DescribeTopicPartitions (KIP-966) -------------------------------------------------------

    def handle_describe_topic_partitions_request(self, request: Request) -> None:
        """Metadata's topics with their partitions, a page at a time: topics in name order from
        the cursor's topic and partition, at most ``response_partition_limit`` partitions; the
        answer's cursor says where the next page starts (Kafka's
        ``DescribeTopicPartitionsRequestHandler``).  DESCRIBE on each topic; with no topics
        asked, every topic the principal may describe."""
        body = body_of(request)
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
            topic["partitions"] = [self.metadata_partition(name, p) for p in range(first, last)]
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

    @staticmethod
    def _metadata_error(name: str | None, topic_id: uuid.UUID, error_code: int) -> dict[str, Any]:
        return {"error_code": error_code, "name": name, "topic_id": topic_id,
                "is_internal": False, "partitions": [],
                "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}

    def _auto_create_in_cluster(self, name: str) -> Any:
        """Auto-creation in a cluster: ask the controller (Kafka's ``AutoTopicCreationManager``).
        None if it failed (the client retries on LEADER_NOT_AVAILABLE)."""
        c = self.config
        manager = self.forwarding_manager
        if manager is None:  # left the cluster meanwhile (shutting down)
            return None
        try:
            manager.forward(ApiKey.CREATE_TOPICS, 7, {
                "topics": [{"name": name, "num_partitions": c["num.partitions"],
                            "replication_factor": min(c["default.replication.factor"],
                                                      len(self.live_brokers())),
                            "assignments": [], "configs": []}],
                "timeout_ms": 30000, "validate_only": False})
        except OSError as exc:
            log.info("auto-creating %s: controller unreachable: %s", name, exc)
            return None
        return self.metadata_cache.get(name)


__all__ = ["MetadataApis"]
