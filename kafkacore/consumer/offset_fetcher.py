"""ListOffsets: the earliest, the latest, or the first offset at a timestamp, per partition.

The Java consumer's ``OffsetFetcher``: partitions grouped by leader, one request per leader,
each with the leader epoch we know (KIP-320); what fails retriably is asked again after a
metadata refresh and backoff, until ``default.api.timeout.ms``.  Under read_committed the
request's isolation level is 1, so LATEST is the last stable offset.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from kafkacore import errors
from kafkacore.consumer.fetcher import _STALE_METADATA, ClientSession, _NodeDown
from kafkacore.errors import Errors
from kafkacore.metadata import TopicPartition
from kafkacore.network.client import clock_ms
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

#: Retriable answers that need no metadata refresh: the broker has no offset to give yet (a
#: new leader whose high watermark is not known), or has not caught up with our epoch.
_RETRY_LATER = frozenset({Errors.OFFSET_NOT_AVAILABLE, Errors.UNKNOWN_LEADER_EPOCH,
                          Errors.REQUEST_TIMED_OUT})


def list_offsets(session: ClientSession, wanted: dict[TopicPartition, int],
                 timeout_ms: int) -> dict[TopicPartition, tuple[int, int]]:
    """``{tp: timestamp}`` (-2 earliest, -1 latest, else ms) -> ``{tp: (offset, timestamp)}``
    as the leaders answer; offset -1 where no record has a timestamp at or after the one
    asked for."""
    deadline = clock_ms() + timeout_ms
    found: dict[TopicPartition, tuple[int, int]] = {}
    todo = dict(wanted)
    attempt = 0
    while todo:
        by_leader: dict[int, dict[TopicPartition, int]] = defaultdict(dict)
        epochs: dict[TopicPartition, int] = {}
        for tp in todo:
            node, epochs[tp] = session.leader(tp, deadline)
            by_leader[node][tp] = todo[tp]
        sent = []
        for node, parts in by_leader.items():
            try:
                sent.append((node, parts, session.send(
                    node, ApiKey.LIST_OFFSETS, _request(session, parts, epochs), deadline)))
            except _NodeDown:
                pass  # retried below, after a refresh
        retry_stale = len(sent) < len(by_leader)
        for node, parts, done in sent:
            response = session.wait(done, deadline)
            if response.error is not None:
                if not (response.was_disconnected or response.error.retriable):
                    raise response.error
                log.debug("ListOffsets to node %d: %s; retrying", node, response.error)
                retry_stale = True
                continue
            for topic in response.response_body()["topics"]:
                for p in topic["partitions"]:
                    tp = TopicPartition(topic["name"], p["partition_index"])
                    if tp not in parts:
                        continue
                    code = p["error_code"]
                    if not code:
                        found[tp] = (p["offset"], p["timestamp"])
                        todo.pop(tp, None)
                    elif code in _STALE_METADATA and code != Errors.UNKNOWN_TOPIC_OR_PARTITION:
                        retry_stale = True
                    elif code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
                        # Gone, or a broker that has not heard of it yet: session.leader()
                        # tells the two apart on the next round, after a refresh.
                        retry_stale = True
                    elif code not in _RETRY_LATER:
                        raise errors.for_code(code)(f"ListOffsets of {tp.topic}-{tp.partition}")
        if not todo:
            break
        if clock_ms() >= deadline:
            raise errors.KafkaTimeoutError(
                f"ListOffsets of {sorted(todo)} not answered within {timeout_ms} ms")
        if retry_stale:
            session.refresh(deadline)
        session.sleep(session.backoff_ms(attempt), deadline)
        attempt += 1
    return found


def _request(session: ClientSession, parts: dict[TopicPartition, int],
             epochs: dict[TopicPartition, int]) -> dict[str, Any]:
    topics: dict[str, list[dict[str, int]]] = defaultdict(list)
    for tp, timestamp in parts.items():
        topics[tp.topic].append({"partition_index": tp.partition,
                                 "current_leader_epoch": epochs[tp], "timestamp": timestamp})
    return {
        "replica_id": -1,
        "isolation_level": session.isolation_level,
        "topics": [{"name": name, "partitions": ps} for name, ps in topics.items()],
        "timeout_ms": session.config["request.timeout.ms"],
    }
