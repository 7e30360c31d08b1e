"""``KafkaRaftManager``: one controller's voter of the quorum, driven on a thread.

``KafkaRaftClient`` is a state machine without I/O; this drives it, as Kafka's
``KafkaRaftManager`` drives its client: one supervised thread owns it, and in each turn hands
it the messages that arrived (answers from the other voters, requests ``ControllerApis``
received), runs its timers (``poll``), and passes what it returns on: requests to the
:class:`~kafkacore.broker.controller.kafka_network_channel.KafkaNetworkChannel`, responses to
the waiting request.  The client's log is the
:class:`~kafkacore.raft.kafka_metadata_log.KafkaMetadataLog` and its election state the
``quorum-state`` file (``FileQuorumStateStore``), both in the controller's first log dir, so a
restarted controller keeps its log and never votes twice in an epoch.

Everything here is bounded: the inbox (a request beyond it is refused at once, an answer
beyond it dropped, counted and logged: Raft asks again after its request timeout), the time a
request waits for the client's answer (a held Fetch included), the wait for a commit.
The controller (``QuorumController``) sees the quorum through :meth:`status`, :meth:`append`,
:meth:`wait_for_commit`, :meth:`read_committed` and :meth:`wait_for_change`; an operator sees its
counters through :meth:`statistics`.
"""

from __future__ import annotations

import collections
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkacore.broker.controller.kafka_network_channel import KafkaNetworkChannel
from kafkacore.broker.server_common.rate_limited_log import RateLimitedLog
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.errors import Errors, IllegalStateError, NotControllerError
from kafkacore.raft import FileQuorumStateStore, KafkaRaftClient, RaftConfig
from kafkacore.raft.epoch_state import LeaderState
from kafkacore.raft.kafka_metadata_log import KafkaMetadataLog
from kafkacore.raft.raft_log import LogEntry
from kafkacore.raft.raft_messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Envelope,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    LeaderIdAndEpoch,
    RaftRequest,
    RaftResponse,
    VoteRequest,
    VoteResponse,
)
from kafkacore.raft.raw_snapshot_reader import OffsetAndEpoch

log = logging.getLogger(__name__)

#: requests from other voters waiting for the client; more are refused at once.  Also the
#: messages the inbox holds: an answer arriving beyond it is dropped (counted, and logged at
#: most once per ``RateLimitedLog`` interval)
INBOX_BOUND = 256
#: the longest a driver turn sleeps with nothing due (it wakes for any message)
MAX_TURN_WAIT_S = 0.1


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def parse_voters(text: str) -> dict[int, tuple[str, int]]:
    """``controller.quorum.voters`` in Kafka's syntax, ``1@host:port,2@host:port``: id ->
    (host, port).  ``ConfigError``-like ``ValueError`` on anything else."""
    voters: dict[int, tuple[str, int]] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        node, at, address = item.partition("@")
        host, colon, port = address.rpartition(":")
        if not at or not colon or not node.isdigit() or not port.isdigit() or not host:
            raise ValueError(f"controller.quorum.voters: expected id@host:port, got {item!r}")
        if int(node) in voters:
            raise ValueError(f"controller.quorum.voters: voter {node} named twice")
        voters[int(node)] = (host, int(port))
    return voters


@dataclass(frozen=True, slots=True)
class QuorumStatus:
    """What the controller needs of the quorum at one moment."""

    epoch: int
    leader_id: int
    is_leader: bool
    high_watermark: int
    end_offset: int
    #: the voter's state (Kafka's ``EpochState.name``): "Follower", "Prospective", ...
    state: str = ""
    #: the first entry held: the entries before it are in a snapshot (KIP-630)
    log_start_offset: int = 0


def _refusal(body: RaftRequest, error: Errors) -> RaftResponse:
    """The core's answer with ``error`` and nothing known (a request the inbox cannot take)."""
    if isinstance(body, VoteRequest):
        return VoteResponse(error, -1, -1, False)
    if isinstance(body, BeginQuorumEpochRequest):
        return BeginQuorumEpochResponse(error, -1, -1)
    if isinstance(body, EndQuorumEpochRequest):
        return EndQuorumEpochResponse(error, -1, -1)
    if isinstance(body, FetchSnapshotRequest):
        return FetchSnapshotResponse(error, LeaderIdAndEpoch(-1, -1), body.snapshot_id)
    return FetchResponse(error, -1, LeaderIdAndEpoch(-1, -1))


class KafkaRaftManager:
    """The voter ``node_id`` of the quorum ``voters`` (id -> (host, port))."""

    def __init__(self, node_id: int, voters: dict[int, tuple[str, int]], log_dir: str | Path,
                 *, cluster_id: str, config: RaftConfig | None = None, faults: Any = None,
                 sasl: Any = None) -> None:
        if node_id not in voters:
            raise ValueError(f"controller {node_id} is not one of controller.quorum.voters "
                             f"{sorted(voters)}")
        self.node_id = node_id
        self.voters = dict(voters)
        self.config = config or RaftConfig()
        self.log = KafkaMetadataLog(log_dir)
        # The driver's state, all under _cond: the client, the inbox, the requests waiting.
        self._cond = threading.Condition()
        self.client = KafkaRaftClient(node_id, voters, self.log,
                                      FileQuorumStateStore(log_dir), random.Random(), now_ms(),
                                      self.config)
        self._inbox: collections.deque[Envelope] = collections.deque()
        #: correlation id of a request from another voter -> (answer it, give up at this time)
        self._waiting: dict[int, tuple[Callable[[RaftResponse], None], int, RaftRequest]] = {}
        self._next_inbound_id = 1 << 30  # apart from the client's own correlation ids
        #: bumped at every change of the status, for :meth:`wait_for_change`
        self._version = 0
        self._last_status: QuorumStatus | None = None
        #: answers dropped because the inbox was full, since the start (under _cond)
        self._inbox_dropped = 0
        #: the drops' WARNING, one line per interval with the count held back (under _cond)
        self._drop_log = RateLimitedLog(log)
        self.channel = KafkaNetworkChannel(node_id, self.voters, cluster_id=cluster_id,
                                           request_timeout_ms=self.config.request_timeout_ms,
                                           deliver=self.deliver, faults=faults, sasl=sasl)
        self._thread = ShutdownableThread(f"raft-{node_id}", work=self._turn)
        self._stopping = False

    # -- the controller's side -------------------------------------------------------------------

    def status(self) -> QuorumStatus:
        with self._cond:
            return self._status_locked()

    def _status_locked(self) -> QuorumStatus:
        c = self.client
        leader = c.leader_and_epoch
        return QuorumStatus(c.epoch, leader.leader_id, c.is_leader(), c.high_watermark,
                            self.log.end_offset(), c.state.name, self.log.log_start_offset)

    def append(self, values: Sequence[bytes], epoch: int) -> int:
        """Append ``values`` as the leader of ``epoch``; the offset of the last.
        ``NotControllerError`` if this voter no longer leads that epoch."""
        with self._cond:
            if not self.client.is_leader() or self.client.epoch != epoch:
                raise NotControllerError(f"controller {self.node_id} no longer leads epoch "
                                         f"{epoch}")
            last = self.client.append(values, now_ms())
            self._cond.notify_all()  # held Fetches now have records: the driver answers them
            return last

    def wait_for_commit(self, offset: int, epoch: int, timeout_s: float) -> None:
        """Wait (bounded) until the high watermark passes ``offset``.  ``NotControllerError``
        if this voter stops leading ``epoch`` first, or the bound passes (the entries may
        still be committed later, by this leader or the next)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self.client.high_watermark <= offset:
                if not self.client.is_leader() or self.client.epoch != epoch:
                    raise NotControllerError(f"controller {self.node_id} lost the leadership "
                                             f"of epoch {epoch} before offset {offset} was "
                                             "committed")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise NotControllerError(f"offset {offset} not committed within "
                                             f"{timeout_s} s")
                self._cond.wait(min(left, MAX_TURN_WAIT_S))

    def read_committed(self, start: int, max_entries: int, *, from_snapshot: bool = False,
                       ) -> tuple[tuple[LogEntry, ...], int, tuple[OffsetAndEpoch, list[bytes]] | None]:
        """(up to ``max_entries`` committed entries from ``start``, the high watermark, None);
        or, when ``start`` is before the log start offset (the entries are gone: a snapshot
        replaced them), or ``from_snapshot`` and a snapshot ends after ``start``, ((), the high
        watermark, (the latest snapshot's id, its records)): the state machine loads that,
        then reads on from its end offset."""
        with self._cond:
            hw = self.client.high_watermark
            latest = self.log.latest_snapshot_id()
            if latest is not None and (start < self.log.log_start_offset or (
                    from_snapshot and latest.offset > start)):
                reader = self.log.read_snapshot(latest)
                if reader is None:
                    raise IllegalStateError(f"snapshot {latest} listed but not readable")
                return (), hw, (latest, reader.records())
            return self.log.read(start, max(0, min(max_entries, hw - start))), hw, None

    def create_snapshot(self, end_offset: int, records: Sequence[bytes]) -> OffsetAndEpoch:
        """Store the controller's image at ``end_offset`` (every entry before it applied and
        committed) as ``records``; older entries are deleted as the client keeps snapshots
        (``KafkaRaftClient.create_snapshot``)."""
        with self._cond:
            return self.client.create_snapshot(end_offset, records)

    def wait_for_change(self, seen: int, timeout_s: float) -> int:
        """Wait (bounded) until the status changed since version ``seen``; the version now."""
        with self._cond:
            if self._version == seen:
                self._cond.wait(timeout_s)
            return self._version

    def statistics(self) -> dict[str, int]:
        """The quorum's counters since the start: ``inbox_dropped``, answers from the other
        voters dropped because the inbox was full; ``send_dropped``, messages to them dropped
        because a sender's queue was full (logged by the channel as the inbox drops are) or it
        was stopping (Raft sends both again); ``snapshots_installed``, snapshots fetched from a
        leader (FetchSnapshot); and the log's ``log_start_offset`` and
        ``latest_snapshot_offset`` (-1: none)."""
        with self._cond:
            inbox_dropped = self._inbox_dropped
            latest = self.log.latest_snapshot_id()
            snapshots = {"log_start_offset": self.log.log_start_offset,
                         "latest_snapshot_offset": -1 if latest is None else latest.offset,
                         "snapshots_installed": self.log.snapshots_installed}
        return {"inbox_dropped": inbox_dropped, "send_dropped": self.channel.dropped(),
                **snapshots}

    def replica_states(self) -> tuple[int, dict[int, int]]:
        """(high watermark, voter -> its end offset as the leader knows it; -1 unknown) on the
        leader; (high watermark, {}) elsewhere."""
        with self._cond:
            s = self.client.state
            if not isinstance(s, LeaderState):
                return self.client.high_watermark, {}
            ends = {v: r.end_offset for v, r in s.replicas.items()}
            ends[self.node_id] = self.log.end_offset()
            return self.client.high_watermark, ends

    # -- requests from the other voters (ControllerApis) ------------------------------------------

    def handle_request(self, source_id: int, body: RaftRequest,
                       reply: Callable[[RaftResponse], None]) -> None:
        """Hand a request to the client; ``reply`` gets its answer, on the driver's thread, at
        once or when it is ready (a held Fetch), and at the latest after the request timeout
        (``REQUEST_TIMED_OUT``)."""
        with self._cond:
            if self._stopping or len(self._waiting) >= INBOX_BOUND:
                refused = True
            else:
                refused = False
                correlation_id = self._next_inbound_id
                self._next_inbound_id += 1
                wait = body.max_wait_ms if isinstance(body, FetchRequest) else 0
                self._waiting[correlation_id] = (
                    reply, now_ms() + wait + self.config.request_timeout_ms, body)
                self._inbox.append(Envelope(source_id, self.node_id, correlation_id, body))
                self._cond.notify_all()
        if refused:
            reply(_refusal(body, Errors.REQUEST_TIMED_OUT))

    def deliver(self, envelope: Envelope) -> None:
        """Hand the client an answer from another voter (the channel's senders call this, each
        on its own thread).  With the inbox full the answer is dropped, as a message lost on the
        network would be (Raft asks again after its request timeout), but not in silence: it is
        counted (:meth:`statistics`) and logged, one WARNING per interval with the count of the
        drops since the last."""
        with self._cond:
            if len(self._inbox) < INBOX_BOUND:
                self._inbox.append(envelope)
                self._cond.notify_all()
                return
            self._inbox_dropped += 1
            # Under the lock: RateLimitedLog is not thread-safe, and at most one line per
            # interval is written (the rest go to DEBUG).
            self._drop_log.log(
                "inbox-full", "raft %d: inbox full (%d messages), dropped a %s from %d "
                "(%d dropped since the start)", self.node_id, len(self._inbox),
                type(envelope.body).__name__, envelope.source_id, self._inbox_dropped)

    # -- the driver ------------------------------------------------------------------------------

    def _turn(self) -> bool:
        replies: list[tuple[Callable[[RaftResponse], None], RaftResponse]] = []
        with self._cond:
            if self._stopping:
                return False
            if not self._inbox:
                # At least a millisecond: a timer the client left due must not spin the loop.
                wait_ms = max(1, self.client.next_poll_ms - now_ms())
                self._cond.wait(min(wait_ms / 1000.0, MAX_TURN_WAIT_S))
            now = now_ms()
            out: list[Envelope] = []
            while self._inbox:
                out += self.client.handle(self._inbox.popleft(), now)
            out += self.client.poll(now)
            for envelope in out:
                if isinstance(envelope.body, (VoteResponse, BeginQuorumEpochResponse,
                                              EndQuorumEpochResponse, FetchResponse,
                                              FetchSnapshotResponse)):
                    waiting = self._waiting.pop(envelope.correlation_id, None)
                    if waiting is not None:
                        replies.append((waiting[0], envelope.body))
                else:
                    self.channel.send(envelope)
            for correlation_id, (reply, deadline, body) in list(self._waiting.items()):
                if now >= deadline:  # dropped by the client (a held Fetch of a lost epoch)
                    del self._waiting[correlation_id]
                    replies.append((reply, _refusal(body, Errors.REQUEST_TIMED_OUT)))
            status = self._status_locked()
            if status != self._last_status:
                if self._last_status is None or (status.epoch, status.leader_id) != (
                        self._last_status.epoch, self._last_status.leader_id):
                    log.info("raft %d: epoch %d, leader %d%s", self.node_id, status.epoch,
                             status.leader_id, " (this controller)" if status.is_leader else "")
                self._last_status = status
                self._version += 1
                self._cond.notify_all()
        for reply, answer in replies:
            reply(answer)
        return True

    def start(self) -> None:
        self.channel.start()
        self._thread.start()

    def shutdown(self) -> None:
        """Resign if leading (EndQuorumEpoch to the others, best effort), then stop."""
        with self._cond:
            for envelope in self.client.resign(now_ms()):
                if not isinstance(envelope.body, (VoteResponse, BeginQuorumEpochResponse,
                                                  EndQuorumEpochResponse, FetchResponse,
                                                  FetchSnapshotResponse)):
                    self.channel.send(envelope)
        with self._cond:
            self._stopping = True
            waiting, self._waiting = self._waiting, {}
            self._cond.notify_all()
        for reply, _, body in waiting.values():
            reply(_refusal(body, Errors.REQUEST_TIMED_OUT))
        self._thread.shutdown(5.0)
        self.channel.shutdown()
        self.log.close()

    @property
    def thread(self) -> ShutdownableThread:
        return self._thread

