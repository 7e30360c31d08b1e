"""``KafkaNetworkChannel``: the quorum's messages on the wire between controllers.

The Raft core (:mod:`kafkacore.raft`) speaks in dataclasses and leaves the network to its
driver.  This module is the network, as Kafka's ``KafkaNetworkChannel`` and ``RaftUtil`` are:

- the conversions between the core's messages and the bodies of Kafka's requests: Vote (52) v2
  (its ``PreVote``, KIP-996), BeginQuorumEpoch (53) and EndQuorumEpoch (54) v0, Fetch (v16)
  of ``__cluster_metadata`` with KIP-595's fields (``LastFetchedEpoch``, ``DivergingEpoch``,
  ``CurrentLeader``) and KIP-630's ``SnapshotId``, and FetchSnapshot (59) v0, a snapshot's chunk;
- the log's entries as record batches, one batch per run of entries of one epoch, its
  ``partitionLeaderEpoch`` that epoch (a leader's ``LeaderChange`` entry is a record whose key
  is ``LeaderChange``: Kafka writes it in a control batch, which our record builder does not
  make);
- the senders: for each other voter two supervised threads, each with its own connection and a
  bounded queue, one for Fetch (a long poll, held by the leader for up to its wait) and one for
  the rest, so that a Vote is never stuck behind a held Fetch (a FetchSnapshot goes on the
  Fetch lane: a follower sends one or the other).  A message that cannot be sent
  (queue full, connection refused, isolated) is dropped: Raft sends again after
  ``controller.quorum.request.timeout.ms``, as it does for a message lost on the network.  A
  drop at a full queue is counted (``dropped``) and logged at WARNING, one line per interval
  with the count held back (``RateLimitedLog``), as the driver's inbox drops are.
"""

from __future__ import annotations

import collections
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kafkacore.broker.metadata.metadata_log import METADATA_TOPIC_ID
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.broker.server_common.rate_limited_log import RateLimitedLog
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_batches
from kafkacore.errors import Errors, IllegalStateError
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.raft.raft_log import LeaderChangeMessage, LogEntry
from kafkacore.raft.raft_messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Envelope,
    EpochEndOffset,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    LeaderIdAndEpoch,
    RaftRequest,
    RaftResponse,
    ReplicaState,
    VoteRequest,
    VoteResponse,
)
from kafkacore.raft.raw_snapshot_reader import OffsetAndEpoch

log = logging.getLogger(__name__)

#: Kafka's name of the quorum's topic
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
#: the key that marks a ``LeaderChange`` entry in a batch (Kafka: a control record)
LEADER_CHANGE_KEY = b"LeaderChange"
#: v2: the first with ``PreVote`` (KIP-996)
VOTE_VERSION = 2
BEGIN_QUORUM_EPOCH_VERSION = 0
END_QUORUM_EPOCH_VERSION = 0
FETCH_VERSION = 16
FETCH_SNAPSHOT_VERSION = 0
#: what one quorum Fetch may bring back
FETCH_MAX_BYTES = 8 * 1024 * 1024
#: messages waiting for each sender; more are dropped (Raft resends)
SENDER_QUEUE_BOUND = 64


def _partition(body: dict[str, Any]) -> dict[str, Any]:
    """The one partition of a quorum message (ValueError if it is not ``__cluster_metadata-0``)."""
    topics = body.get("topics") or []
    if len(topics) != 1 or len(topics[0]["partitions"]) != 1:
        raise ValueError("a quorum message names exactly one partition")
    part: dict[str, Any] = topics[0]["partitions"][0]
    if part.get("partition_index", part.get("partition", 0)) != 0:
        raise ValueError("the quorum has one partition, 0")
    return part


def _topics(partition: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"topic_name": CLUSTER_METADATA_TOPIC,
             "partitions": [{"partition_index": 0, **partition}]}]


# -- the log's entries as record batches -----------------------------------------------------------

def encode_entries(entries: tuple[LogEntry, ...]) -> bytes:
    """Record batches holding ``entries``: one per run of one epoch."""
    out = []
    i = 0
    now = int(time.time() * 1000)
    while i < len(entries):
        first = entries[i]
        builder = MemoryRecordsBuilder(1 << 12, base_offset=first.offset,
                                       partition_leader_epoch=first.epoch)
        while i < len(entries) and entries[i].epoch == first.epoch:
            e = entries[i]
            if e.leader_change is not None:
                c = e.leader_change
                builder.append(now, LEADER_CHANGE_KEY, json.dumps(
                    {"leader_id": c.leader_id, "voters": list(c.voters),
                     "granting_voters": list(c.granting_voters), "version": c.version}).encode())
            else:
                builder.append(now, None, e.value)
            i += 1
        out.append(bytes(builder.build()))
    return b"".join(out)


def decode_entries(data: bytes | None) -> tuple[LogEntry, ...]:
    """The entries of record batches (``CorruptRecordError`` if damaged)."""
    entries = []
    for batch in iter_batches(data or b""):
        for r in batch.records:
            if r.key == LEADER_CHANGE_KEY:
                c = json.loads(r.value or b"")
                entries.append(LogEntry(r.offset, batch.partition_leader_epoch, b"",
                                        LeaderChangeMessage(c["leader_id"], tuple(c["voters"]),
                                                            tuple(c["granting_voters"]),
                                                            c["version"])))
            else:
                entries.append(LogEntry(r.offset, batch.partition_leader_epoch, r.value or b""))
    return tuple(entries)


# -- requests: core message <-> wire body ----------------------------------------------------------

def request_to_wire(req: RaftRequest, cluster_id: str) -> tuple[int, int, dict[str, Any]]:
    """(api key, version, body) of a request of the core."""
    if isinstance(req, VoteRequest):
        return ApiKey.VOTE, VOTE_VERSION, {
            "cluster_id": cluster_id, "voter_id": req.voter_id, "topics": _topics({
                "candidate_epoch": req.candidate_epoch, "candidate_id": req.candidate_id,
                "last_offset_epoch": req.last_offset_epoch, "last_offset": req.last_offset,
                "pre_vote": req.pre_vote})}
    if isinstance(req, BeginQuorumEpochRequest):
        return ApiKey.BEGIN_QUORUM_EPOCH, BEGIN_QUORUM_EPOCH_VERSION, {
            "cluster_id": cluster_id, "topics": _topics(
                {"leader_id": req.leader_id, "leader_epoch": req.leader_epoch})}
    if isinstance(req, EndQuorumEpochRequest):
        return ApiKey.END_QUORUM_EPOCH, END_QUORUM_EPOCH_VERSION, {
            "cluster_id": cluster_id, "topics": _topics(
                {"leader_id": req.leader_id, "leader_epoch": req.leader_epoch,
                 "preferred_successors": list(req.preferred_successors)})}
    if isinstance(req, FetchSnapshotRequest):
        return ApiKey.FETCH_SNAPSHOT, FETCH_SNAPSHOT_VERSION, {
            "cluster_id": cluster_id, "replica_id": req.replica_id, "max_bytes": req.max_bytes,
            "topics": [{"name": CLUSTER_METADATA_TOPIC, "partitions": [{
                "partition": 0, "current_leader_epoch": req.current_leader_epoch,
                "snapshot_id": {"end_offset": req.snapshot_id.offset,
                                "epoch": req.snapshot_id.epoch},
                "position": req.position}]}]}
    return ApiKey.FETCH, FETCH_VERSION, {
        "cluster_id": cluster_id,
        "replica_state": {"replica_id": req.replica_state.replica_id,
                          "replica_epoch": req.replica_state.replica_epoch},
        "max_wait_ms": req.max_wait_ms, "min_bytes": 0, "max_bytes": FETCH_MAX_BYTES,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic_id": METADATA_TOPIC_ID, "partitions": [{
            "partition": 0, "current_leader_epoch": req.current_leader_epoch,
            "fetch_offset": req.fetch_offset, "last_fetched_epoch": req.last_fetched_epoch,
            "log_start_offset": -1, "partition_max_bytes": FETCH_MAX_BYTES}]}],
        "forgotten_topics_data": [], "rack_id": ""}


def request_from_wire(api_key: int, body: dict[str, Any]) -> tuple[int, RaftRequest]:
    """(the sender's id, the core's request) of a request body; ValueError if malformed."""
    if api_key == ApiKey.FETCH_SNAPSHOT:
        topics = body["topics"]
        if len(topics) != 1 or topics[0]["name"] != CLUSTER_METADATA_TOPIC \
                or len(topics[0]["partitions"]) != 1 or topics[0]["partitions"][0]["partition"]:
            raise ValueError("a voter fetches the snapshot of __cluster_metadata-0 only")
        sp = topics[0]["partitions"][0]
        snapshot_id = OffsetAndEpoch(sp["snapshot_id"]["end_offset"], sp["snapshot_id"]["epoch"])
        return body["replica_id"], FetchSnapshotRequest(
            body["replica_id"], sp["current_leader_epoch"], snapshot_id, sp["position"],
            body["max_bytes"])
    p = _partition(body)
    if api_key == ApiKey.VOTE:
        # v0 has neither VoterId nor PreVote: -1 and False, as Kafka reads them.
        return p["candidate_id"], VoteRequest(p["candidate_epoch"], p["candidate_id"],
                                              p["last_offset_epoch"], p["last_offset"],
                                              body.get("voter_id", -1),
                                              p.get("pre_vote", False))
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        return p["leader_id"], BeginQuorumEpochRequest(p["leader_id"], p["leader_epoch"])
    if api_key == ApiKey.END_QUORUM_EPOCH:
        return p["leader_id"], EndQuorumEpochRequest(p["leader_id"], p["leader_epoch"],
                                                     tuple(p["preferred_successors"]))
    if api_key == ApiKey.FETCH:
        if body["topics"][0].get("topic_id") != METADATA_TOPIC_ID:
            raise ValueError("a voter fetches __cluster_metadata only")
        replica_id = fetch_replica_id(body)
        return replica_id, FetchRequest(ReplicaState(replica_id), p["current_leader_epoch"],
                                        p["fetch_offset"], p["last_fetched_epoch"],
                                        body["max_wait_ms"])
    raise ValueError(f"API key {api_key} is not a message of the quorum")


def fetch_replica_id(body: dict[str, Any]) -> int:
    """Who sends a Fetch: ``ReplicaState.ReplicaId`` (v15+) or ``ReplicaId``."""
    state = body.get("replica_state")
    return int(state["replica_id"]) if state else int(body.get("replica_id", -1))


# -- responses: core message <-> wire body ---------------------------------------------------------

def response_to_wire(resp: RaftResponse) -> dict[str, Any]:
    """The response body of a response of the core."""
    if isinstance(resp, VoteResponse):
        return {"error_code": Errors.NONE, "topics": _topics({
            "error_code": resp.error_code, "leader_id": resp.leader_id,
            "leader_epoch": resp.leader_epoch, "vote_granted": resp.vote_granted})}
    if isinstance(resp, (BeginQuorumEpochResponse, EndQuorumEpochResponse)):
        return {"error_code": Errors.NONE, "topics": _topics({
            "error_code": resp.error_code, "leader_id": resp.leader_id,
            "leader_epoch": resp.leader_epoch})}
    if isinstance(resp, FetchSnapshotResponse):
        return {"throttle_time_ms": 0, "error_code": Errors.NONE, "topics": [{
            "name": CLUSTER_METADATA_TOPIC, "partitions": [{
                "index": 0, "error_code": resp.error_code,
                "snapshot_id": {"end_offset": resp.snapshot_id.offset,
                                "epoch": resp.snapshot_id.epoch},
                "current_leader": {"leader_id": resp.current_leader.leader_id,
                                   "leader_epoch": resp.current_leader.leader_epoch},
                "size": resp.size, "position": resp.position,
                "unaligned_records": resp.unaligned_records}]}]}
    diverging = resp.diverging_epoch
    snapshot = resp.snapshot_id
    return {"throttle_time_ms": 0, "error_code": Errors.NONE, "session_id": 0, "responses": [{
        "topic_id": METADATA_TOPIC_ID, "partitions": [{
            "partition_index": 0, "error_code": resp.error_code,
            "high_watermark": resp.high_watermark, "last_stable_offset": resp.high_watermark,
            "log_start_offset": 0,
            "diverging_epoch": {"epoch": -1, "end_offset": -1} if diverging is None
            else {"epoch": diverging.epoch, "end_offset": diverging.end_offset},
            "current_leader": {"leader_id": resp.current_leader.leader_id,
                               "leader_epoch": resp.current_leader.leader_epoch},
            "snapshot_id": {"end_offset": -1, "epoch": -1} if snapshot is None
            else {"end_offset": snapshot.offset, "epoch": snapshot.epoch},
            "aborted_transactions": None, "preferred_read_replica": -1,
            "records": encode_entries(resp.records)}]}],
        "node_endpoints": []}


def response_from_wire(api_key: int, body: dict[str, Any]) -> RaftResponse:
    """The core's response of a response body; ValueError if malformed."""
    if api_key == ApiKey.FETCH:
        top = body["error_code"]
        part = body["responses"][0]["partitions"][0]
        leader = part.get("current_leader") or {"leader_id": -1, "leader_epoch": -1}
        diverging = part.get("diverging_epoch")
        snapshot = part.get("snapshot_id")
        return FetchResponse(
            Errors(top if top != Errors.NONE else part["error_code"]), part["high_watermark"],
            LeaderIdAndEpoch(leader["leader_id"], leader["leader_epoch"]),
            None if not diverging or diverging["end_offset"] < 0
            else EpochEndOffset(diverging["epoch"], diverging["end_offset"]),
            decode_entries(part["records"]),
            None if not snapshot or snapshot["end_offset"] < 0
            else OffsetAndEpoch(snapshot["end_offset"], snapshot["epoch"]))
    if api_key == ApiKey.FETCH_SNAPSHOT:
        top = body["error_code"]
        sp = body["topics"][0]["partitions"][0] if body["topics"] else None
        if sp is None:
            return FetchSnapshotResponse(Errors(top), LeaderIdAndEpoch(-1, -1),
                                         OffsetAndEpoch(-1, -1))
        leader = sp.get("current_leader") or {"leader_id": -1, "leader_epoch": -1}
        return FetchSnapshotResponse(
            Errors(top if top != Errors.NONE else sp["error_code"]),
            LeaderIdAndEpoch(leader["leader_id"], leader["leader_epoch"]),
            OffsetAndEpoch(sp["snapshot_id"]["end_offset"], sp["snapshot_id"]["epoch"]),
            sp["size"], sp["position"], bytes(sp["unaligned_records"] or b""))
    p = _partition(body)
    error = Errors(body["error_code"] if body["error_code"] != Errors.NONE else p["error_code"])
    if api_key == ApiKey.VOTE:
        return VoteResponse(error, p["leader_id"], p["leader_epoch"], p["vote_granted"])
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        return BeginQuorumEpochResponse(error, p["leader_id"], p["leader_epoch"])
    if api_key == ApiKey.END_QUORUM_EPOCH:
        return EndQuorumEpochResponse(error, p["leader_id"], p["leader_epoch"])
    raise ValueError(f"API key {api_key} is not a message of the quorum")


# -- the senders -----------------------------------------------------------------------------------

class _SenderLane:
    """One connection to one voter and its queue, drained by one supervised thread."""

    def __init__(self, name: str, client: InterBrokerClient, timeout_s: float,
                 deliver: Callable[[Envelope], None], cluster_id: str) -> None:
        self.client = client
        self.timeout_s = timeout_s
        self.deliver = deliver
        self.cluster_id = cluster_id
        self._queue: collections.deque[Envelope] = collections.deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._sending = False
        self.dropped = 0
        self.thread = ShutdownableThread(name, work=self._turn)

    def offer(self, envelope: Envelope) -> str | None:
        """Queue ``envelope``; or drop it, counted, and say why (``"full"``, ``"stopping"``)."""
        with self._cond:
            if self._stopping or len(self._queue) >= SENDER_QUEUE_BOUND:
                self.dropped += 1
                return "stopping" if self._stopping else "full"
            self._queue.append(envelope)
            self._cond.notify()
            return None

    def _turn(self) -> bool:
        with self._cond:
            if not self._queue:
                self._cond.wait(0.5)
            if not self._queue:
                return True  # ends when shut down (ShutdownableThread)
            envelope = self._queue.popleft()
            self._sending = True
        try:
            self._send(envelope)
        finally:
            with self._cond:
                self._sending = False
                self._cond.notify_all()
        return True

    def _send(self, envelope: Envelope) -> None:
        body = envelope.body
        if isinstance(body, (VoteResponse, BeginQuorumEpochResponse, EndQuorumEpochResponse,
                             FetchResponse, FetchSnapshotResponse)):
            raise IllegalStateError(f"a response handed to a sender: {envelope!r}")
        api_key, version, wire = request_to_wire(body, self.cluster_id)
        timeout = self.timeout_s + (body.max_wait_ms / 1000.0
                                    if isinstance(body, FetchRequest) else 0.0)
        try:
            answer = self.client.send(api_key, version, wire, timeout_s=timeout)
            response = response_from_wire(api_key, answer)
        except (OSError, ValueError, KeyError, IndexError) as exc:
            log.debug("raft: %s to %d not answered: %s", type(body).__name__,
                      envelope.destination_id, exc)
            return
        self.deliver(Envelope(envelope.destination_id, envelope.source_id,
                              envelope.correlation_id, response))

    def start(self) -> None:
        self.thread.start()

    def drain(self, timeout_s: float) -> None:
        """Take no more messages; wait (bounded) until those queued are sent (a resigning
        leader's EndQuorumEpoch)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            while self._queue or self._sending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)

    def shutdown(self) -> None:
        with self._cond:
            self._stopping = True
            self._queue.clear()
            self._cond.notify_all()
        self.thread.initiate_shutdown()
        self.client.close()  # aborts a held Fetch
        self.thread.shutdown(5.0)


class KafkaNetworkChannel:
    """Sends the core's requests to the other voters and hands their answers to ``deliver``
    (Kafka's ``KafkaNetworkChannel``)."""

    def __init__(self, node_id: int, voters: dict[int, tuple[str, int]], *, cluster_id: str,
                 request_timeout_ms: int, deliver: Callable[[Envelope], None],
                 faults: Any = None, sasl: Any = None) -> None:
        self.node_id = node_id
        timeout_s = request_timeout_ms / 1000.0
        #: the drops' WARNING, one line per interval (RateLimitedLog is not thread-safe)
        self._drop_log = RateLimitedLog(log)
        self._drop_lock = threading.Lock()
        self._lanes: dict[tuple[int, bool], _SenderLane] = {}
        for voter, (host, port) in voters.items():
            if voter == node_id:
                continue
            for fetch in (False, True):
                kind = "fetch" if fetch else "control"
                name = f"raft-{node_id}-to-{voter}-{kind}"
                client = InterBrokerClient(host, port, name, timeout_s, faults, sasl=sasl)
                self._lanes[voter, fetch] = _SenderLane(name, client, timeout_s, deliver,
                                                        cluster_id)

    def send(self, envelope: Envelope) -> None:
        lane = self._lanes.get((envelope.destination_id,
                                isinstance(envelope.body, (FetchRequest, FetchSnapshotRequest))))
        if lane is None:
            raise IllegalStateError(f"node {self.node_id} has no voter "
                                    f"{envelope.destination_id} to send to")
        why = lane.offer(envelope)
        if why == "full":
            # A full queue means that voter has not taken a message for a while (down, or cut
            # off): worth a line, but not one per message.
            with self._drop_lock:
                self._drop_log.log(
                    "send-queue-full", "raft %d: queue to %d full (%d messages), dropped a %s "
                    "(%d dropped since the start)", self.node_id, envelope.destination_id,
                    SENDER_QUEUE_BOUND, type(envelope.body).__name__, self.dropped())
        elif why == "stopping":
            log.debug("raft %d: stopping, dropped a %s to %d", self.node_id,
                      type(envelope.body).__name__, envelope.destination_id)

    def dropped(self) -> int:
        """Messages dropped since the start because a sender's queue was full or stopping."""
        return sum(lane.dropped for lane in self._lanes.values())

    def start(self) -> None:
        for lane in self._lanes.values():
            lane.start()

    def shutdown(self, drain_s: float = 1.0) -> None:
        """Stop the senders, after the control messages queued are sent (bounded by
        ``drain_s``: a resigning leader's EndQuorumEpoch lets the others elect at once)."""
        deadline = time.monotonic() + drain_s
        for (_, fetch), lane in self._lanes.items():
            if not fetch:
                lane.drain(max(0.0, deadline - time.monotonic()))
        for lane in self._lanes.values():
            lane.shutdown()
