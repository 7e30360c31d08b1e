"""ListOffsets, OffsetForLeaderEpoch and DeleteRecords: where a partition's log starts and ends,
where a leader epoch ends in it, and moving its start up.

ListOffsets answers from the partition's log (the high watermark, or the last stable offset for
read_committed; the log start; the first offset at a timestamp).  OffsetForLeaderEpoch answers
followers truncating before they fetch and consumers checking their position (KIP-101,
KIP-320).  (Committed offsets are the group coordinator's: :mod:`~kafkacore.broker.server.apis.groups`.)
See docs/broker/apis.rst.
"""

from __future__ import annotations

from typing import Any

from kafkacore import errors
from kafkacore.broker.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.server.apis.base import KafkaApisBase, body_of
from kafkacore.broker.server.delayed_fetch import READ_COMMITTED
from kafkacore.errors import Errors


class OffsetsApis(KafkaApisBase):
    """Kafka's ``handleListOffsetRequest``, ``handleOffsetForLeaderEpochRequest`` and
    ``handleDeleteRecordsRequest``."""

    def handle_list_offsets_request(self, request: Request) -> None:
        body = body_of(request)
        version = request.api_version
        topics = []
        for topic in body["topics"]:
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
                    read_committed = body.get("isolation_level", 0) == READ_COMMITTED
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

    # -- OffsetForLeaderEpoch (KIP-101, KIP-320) -------------------------------------------------

    def handle_offset_for_leader_epoch_request(self, request: Request) -> None:
        """Where a leader epoch ends in the leader's log: followers truncate there before
        fetching, and consumers check their position after a leader change."""
        body = body_of(request)
        rm = self.replica_manager
        # Kafka: a follower (replica id >= 0) needs CLUSTER_ACTION, a consumer DESCRIBE on
        # the topic.
        cluster_refused = body.get("replica_id", -2) >= 0 and not self.authorize(
            request, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)
        topics = []
        for t in body["topics"]:
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

    # -- DeleteRecords ---------------------------------------------------------------------------

    def handle_delete_records_request(self, request: Request) -> None:
        """Move each partition's log start offset up to the offset asked (-1: the high
        watermark); readers then see the log start there.  DELETE on the topic, the leader
        only, never past the high watermark (OFFSET_OUT_OF_RANGE)."""
        body = body_of(request)
        topics = []
        moved = False
        for t in body["topics"]:
            allowed = self.authorize_topic(request, AclOperation.DELETE, t["name"])
            parts = []
            for p in t["partitions"]:
                result = {"partition_index": p["partition_index"], "low_watermark": -1,
                          "error_code": Errors.NONE}
                parts.append(result)
                if not allowed:
                    result["error_code"] = Errors.TOPIC_AUTHORIZATION_FAILED
                    continue
                partition, error = self.replica_manager.leader_partition_or_error(
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


__all__ = ["OffsetsApis"]
