"""Fetch: consumers' and followers' reads, through the
:class:`~kafkacore.broker.server.replica_manager.ReplicaManager`.

Consumers read below the high watermark (READ on each topic), followers up to the log end
(CLUSTER_ACTION on the cluster); incremental fetch sessions (KIP-227) say which partitions to
read and which answers to send, and a consumer's records count against its byte-rate quota.
See docs/broker/replication.rst.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.server.apis.base import INT32_MAX, ZERO_UUID, KafkaApisBase, body_of
from kafkacore.broker.server.fetch_session import FetchPartitionData, PartitionKey
from kafkacore.broker.server.replica_manager import FetchParams, FetchPartitionInfo
from kafkacore.errors import Errors


class FetchApis(KafkaApisBase):
    """Kafka's ``handleFetchRequest``."""

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
        body = body_of(request)
        version = request.api_version
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
        context = self.fetch_manager.new_context(
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

        self.replica_manager.fetch_messages(params, infos, respond)

    def _fetch_throttle(self, request: Request, answered: list[tuple[Any, dict[str, Any]]]
                        ) -> int:
        """A consumer's Fetch against its byte rate: the records it gets are recorded, and
        over the quota it is throttled.  The records still go with this answer (Kafka sends a
        throttled Fetch empty and takes the bytes back, which never lets through a batch larger
        than the sensor's allowance): the throttle time makes up for them."""
        size = sum(len(part["records"] or b"") for _, part in answered)
        throttle_ms = request.throttle_time_ms = self.quotas.fetch.record_request(
            request.principal, request.header.get("client_id") or "", size)
        return throttle_ms


__all__ = ["FetchApis"]
