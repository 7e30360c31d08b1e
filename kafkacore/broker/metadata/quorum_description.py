"""What DescribeQuorum answers about the ``__cluster_metadata`` log, and the leader epoch of a
quorum of one.

Until the controller quorum lands (issue 40) there is one voter: the controller process, or a
broker started alone, which is its own controller.  It is the leader of ``__cluster_metadata``
partition 0, its high watermark is its metadata log's end offset (a record is committed once
its one voter has it on disk), and the brokers that fetch the records from it are observers.

Each start of that voter is an election it wins alone: the epoch goes up by one and is kept in
Kafka's ``quorum-state`` file (:class:`~kafkacore.raft.quorum_state_store.FileQuorumStateStore`)
in the first log dir, so that the epoch never goes back across restarts.
See docs/broker/controller.rst.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kafkacore.errors import Errors
from kafkacore.raft.quorum_state_store import ElectionState, FileQuorumStateStore

#: the topic of the metadata log (Kafka's ``Topic.CLUSTER_METADATA_TOPIC_NAME``)
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
#: a replica's directory id when there is none to give (Kafka's ``Uuid.ZERO_UUID``, KIP-853)
NO_DIRECTORY_ID = uuid.UUID(int=0)
#: a log end offset or time a leader does not know (Kafka reports -1)
UNKNOWN = -1


def now_ms() -> int:
    """The wall clock, as DescribeQuorum's timestamps are given."""
    return time.time_ns() // 1_000_000


def elect_self(directory: str | Path, node_id: int) -> int:
    """The lone voter's election at its start: the next epoch, persisted (fsync'd) before it
    leads, as a candidate that votes for itself and wins."""
    store = FileQuorumStateStore(directory)
    last = store.read()
    epoch = (last.epoch if last is not None else 0) + 1
    store.write(ElectionState(epoch=epoch, voted_id=node_id, leader_id=node_id))
    return epoch


def replica_state(replica_id: int, log_end_offset: int = UNKNOWN,
                  last_fetch_timestamp: int = UNKNOWN,
                  last_caught_up_timestamp: int = UNKNOWN) -> dict[str, Any]:
    """One voter's or observer's ``ReplicaState``."""
    return {"replica_id": replica_id, "replica_directory_id": NO_DIRECTORY_ID,
            "log_end_offset": log_end_offset, "last_fetch_timestamp": last_fetch_timestamp,
            "last_caught_up_timestamp": last_caught_up_timestamp}


def asks_for_the_metadata_partition(body: dict[str, Any]) -> bool:
    """Exactly ``__cluster_metadata`` partition 0, as Kafka's ``hasValidTopicPartition``."""
    topics = body["topics"]
    return (len(topics) == 1 and topics[0]["topic_name"] == CLUSTER_METADATA_TOPIC
            and [p["partition_index"] for p in topics[0]["partitions"]] == [0])


def describe_quorum_response(body: dict[str, Any], *, leader_id: int, leader_epoch: int,
                             high_watermark: int, voters: list[dict[str, Any]],
                             observers: list[dict[str, Any]],
                             nodes: Iterable[tuple[int, list[tuple[str, str, int]]]],
                             ) -> dict[str, Any]:
    """DescribeQuorum's answer, newest version (fitted to the request's by the sender).  A
    request for anything but ``__cluster_metadata`` partition 0 gets UNKNOWN_TOPIC_OR_PARTITION
    for each partition it names, as Kafka's leader answers.  ``nodes``: (voter id, its
    listeners as (name, host, port)), v2's endpoints."""
    if not asks_for_the_metadata_partition(body):
        return {"error_code": Errors.NONE, "error_message": None, "nodes": [], "topics": [
            {"topic_name": t["topic_name"], "partitions": [
                {"partition_index": p["partition_index"],
                 "error_code": Errors.UNKNOWN_TOPIC_OR_PARTITION,
                 "error_message": None, "leader_id": UNKNOWN, "leader_epoch": UNKNOWN,
                 "high_watermark": UNKNOWN, "current_voters": [], "observers": []}
                for p in t["partitions"]]} for t in body["topics"]]}
    return {"error_code": Errors.NONE, "error_message": None, "topics": [{
        "topic_name": CLUSTER_METADATA_TOPIC, "partitions": [{
            "partition_index": 0, "error_code": Errors.NONE, "error_message": None,
            "leader_id": leader_id, "leader_epoch": leader_epoch,
            "high_watermark": high_watermark, "current_voters": voters,
            "observers": observers}]}],
        "nodes": [{"node_id": node, "listeners": [
            {"name": name, "host": host, "port": port} for name, host, port in listeners]}
            for node, listeners in nodes]}


__all__ = ["CLUSTER_METADATA_TOPIC", "NO_DIRECTORY_ID", "UNKNOWN", "asks_for_the_metadata_partition",
           "describe_quorum_response", "elect_self", "now_ms", "replica_state"]
