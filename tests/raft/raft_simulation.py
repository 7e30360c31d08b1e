"""A simulated world for the Raft core: voters in one process, a clock, a network that loses.

``RaftSimulation(seed, voters)`` runs ``KafkaRaftClient`` voters over a simulated network that
drops, delays (so reorders) and duplicates messages and cuts the voters into partitions; it makes
leaders resign, and crashes and restarts voters (a restart loses everything but the persisted
election state and the log).  Everything random comes from the seed, so a failure is replayed
by running its seed again.

After every event ``InvariantChecker`` checks Raft's safety properties:

- election safety: at most one leader per epoch, and every follower follows that one;
- log matching: two logs with an entry of the same offset and epoch agree on every entry up to
  it (each entry's digest covers its whole prefix, and one (offset, epoch) has one digest);
- committed is final: an offset below any voter's high watermark has one entry, everywhere;
- leader completeness: a leader of an epoch holds every entry committed by that epoch;
- the high watermark never moves back on a voter that did not restart, and never covers an
  entry that a majority of the voters does not hold.

Snapshots (KIP-630): each voter's state machine is the sequence of committed entries itself, so
a snapshot (taken every few committed entries, at the high watermark) holds every entry before
its end offset, and the log keeps one or two of them and forgets the entries before the oldest.
The checker reads each new snapshot back: it must hold exactly the prefix its voter's log had
(a snapshot of the committed state), and a snapshot a voter installed from its leader (by
FetchSnapshot, in chunks) must be a prefix every other log agrees with, committed entries
included.  Log matching, committed-is-final and leader completeness then hold across snapshots,
on the prefixes they stand for.

Then ``heal`` ends the faults, and ``run_until_committed`` measures how long the quorum takes to
elect a leader and commit a new record (liveness).
"""

from __future__ import annotations

import heapq
import json
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from kafkacore.raft import (
    KafkaRaftClient,
    MemoryQuorumStateStore,
    MemoryRaftLog,
    OffsetAndEpoch,
    RaftConfig,
    RawSnapshotReader,
)
from kafkacore.raft.epoch_state import FollowerState, LeaderState, ResignedState
from kafkacore.raft.raft_log import LeaderChangeMessage, LogEntry
from kafkacore.raft.raft_messages import Envelope, FetchResponse, FetchSnapshotResponse

#: Timings for the simulation: Kafka's defaults, but requests are given up on sooner (the
#: network loses messages on purpose, and a lost Fetch should not always cost an election).
SIMULATION_CONFIG = RaftConfig(request_timeout_ms=1000, fetch_max_wait_ms=300)


class InvariantViolation(AssertionError):
    """A safety property of Raft does not hold."""


class ObservedLog(MemoryRaftLog):
    """A ``MemoryRaftLog`` that tells the checker the lowest offset it was truncated to, and
    the snapshots it installed from a leader."""

    def __init__(self) -> None:
        super().__init__()
        self.truncated_to: int | None = None
        #: the last snapshot installed from the leader and not yet checked
        self.installed: OffsetAndEpoch | None = None
        self.installs = 0

    def truncate_to(self, offset: int) -> None:
        super().truncate_to(offset)
        self.truncated_to = offset if self.truncated_to is None else min(self.truncated_to, offset)

    def install_snapshot(self, snapshot: RawSnapshotReader) -> None:
        super().install_snapshot(snapshot)
        self.installed = snapshot.snapshot_id
        self.installs += 1


def entry_record(entry: LogEntry) -> bytes:
    """The simulated state machine's record of one committed entry (its snapshots hold them)."""
    change = entry.leader_change
    return json.dumps([entry.offset, entry.epoch, entry.value.hex(), None if change is None else
                       [change.leader_id, change.voters, change.granting_voters, change.version]]
                      ).encode()


def record_entry(record: bytes) -> LogEntry:
    offset, epoch, value, change = json.loads(record)
    return LogEntry(offset, epoch, bytes.fromhex(value), None if change is None else
                    LeaderChangeMessage(change[0], tuple(change[1]), tuple(change[2]), change[3]))


def snapshot_entries(log: MemoryRaftLog, snapshot_id: OffsetAndEpoch) -> list[LogEntry]:
    reader = log.read_snapshot(snapshot_id)
    assert reader is not None, f"no snapshot {snapshot_id}"
    return [record_entry(r) for r in reader.records()]


def state_records(log: MemoryRaftLog, end_offset: int) -> list[bytes]:
    """The state machine's image at ``end_offset``: its latest snapshot, then the entries."""
    latest = log.latest_snapshot_id()
    entries = snapshot_entries(log, latest) if latest is not None else []
    start = len(entries)
    if start < log.log_start_offset:
        raise InvariantViolation(f"the log starts at {log.log_start_offset}, its snapshot ends "
                                 f"at {start}")
    entries += log.read(start, end_offset - start)
    return [entry_record(e) for e in entries]


@dataclass
class SimNode:
    node_id: int
    log: ObservedLog = field(default_factory=ObservedLog)
    store: MemoryQuorumStateStore = field(default_factory=MemoryQuorumStateStore)
    client: KafkaRaftClient | None = None
    incarnation: int = 0
    #: When a poll is already scheduled (heap entries at other times are stale).
    scheduled_poll: float = float("inf")


@dataclass
class Faults:
    drop: float
    duplicate: float
    max_delay_ms: int
    crash_interval_ms: int
    partition_interval_ms: int

    @classmethod
    def random(cls, rng: random.Random) -> Faults:
        return cls(
            drop=rng.choice([0.0, 0.02, 0.1, 0.25]),
            duplicate=rng.choice([0.0, 0.05, 0.2]),
            max_delay_ms=rng.choice([5, 30, 150]),
            crash_interval_ms=rng.choice([700, 1500, 4000]),
            partition_interval_ms=rng.choice([800, 2000, 5000]),
        )


class InvariantChecker:
    """Raft's safety properties, checked incrementally after every event."""

    def __init__(self, nodes: dict[int, SimNode]) -> None:
        self.nodes = nodes
        self.majority = len(nodes) // 2 + 1
        self.leaders_by_epoch: dict[int, int] = {}
        self.digests: dict[int, list[int]] = {n: [] for n in nodes}
        self.digest_of: dict[tuple[int, int], int] = {}
        #: Per committed offset: its entry's digest, and the lowest epoch it was seen committed in.
        self.committed: list[list[int]] = []
        self.last_hw: dict[int, int] = {n: 0 for n in nodes}
        #: each node's snapshots already read back
        self.snapshots_seen: dict[int, set[OffsetAndEpoch]] = {n: set() for n in nodes}

    def restarted(self, node_id: int) -> None:
        self.last_hw[node_id] = 0

    def check(self, node_ids: set[int], now_ms: int) -> None:
        for node_id in node_ids:
            self._check_node(node_id, now_ms)
        for node in self.nodes.values():
            if node.client is not None and isinstance(node.client.state, LeaderState):
                self._check_leader_completeness(node, now_ms)

    def _fail(self, now_ms: int, what: str) -> None:
        raise InvariantViolation(f"t={now_ms}ms: {what}")

    def _check_node(self, node_id: int, now_ms: int) -> None:
        node = self.nodes[node_id]
        client = node.client
        if client is None:
            return
        state = client.state
        # Election safety.
        if isinstance(state, (LeaderState, ResignedState)):
            first = self.leaders_by_epoch.setdefault(state.epoch, node_id)
            if first != node_id:
                self._fail(now_ms, f"two leaders in epoch {state.epoch}: {first} and {node_id}")
        elif isinstance(state, FollowerState):
            leader = self.leaders_by_epoch.get(state.epoch)
            if leader != state.leader:
                self._fail(
                    now_ms,
                    f"node {node_id} follows {state.leader} in epoch {state.epoch}, "
                    f"whose leader is {leader}",
                )
        # Log matching: bring this node's digests up to date with its log.
        log = node.log
        digests = self.digests[node_id]
        keep = len(digests)
        if log.truncated_to is not None:
            keep = min(keep, log.truncated_to)
            log.truncated_to = None
        del digests[keep:]
        if log.installed is not None:
            # A snapshot from the leader replaced the whole log: the digests of the prefix it
            # stands for, checked entry by entry against every other log's.
            snapshot_id, log.installed = log.installed, None
            entries = snapshot_entries(log, snapshot_id)
            if [e.offset for e in entries] != list(range(snapshot_id.offset)):
                self._fail(now_ms, f"node {node_id} installed snapshot {snapshot_id} holding "
                           f"offsets other than 0..{snapshot_id.offset - 1}")
            del digests[:]
            self._extend(node_id, digests, entries, now_ms)
            self.snapshots_seen[node_id].add(snapshot_id)
        elif keep < log.log_start_offset:
            self._fail(now_ms, f"node {node_id}'s log starts at {log.log_start_offset}, past "
                       f"the {keep} entries it had")
        else:
            self._extend(node_id, digests, log.read(keep, log.end_offset() - keep), now_ms)
        for snapshot_id in log.snapshot_ids():
            if snapshot_id not in self.snapshots_seen[node_id]:
                # A snapshot this node took: exactly the prefix its log had.
                self.snapshots_seen[node_id].add(snapshot_id)
                entries = snapshot_entries(log, snapshot_id)
                mine = digests[: snapshot_id.offset]
                theirs: list[int] = []
                for e in entries:
                    theirs.append(hash((theirs[-1] if theirs else 0, e.epoch, e.value,
                                        e.leader_change)))
                if theirs != mine or snapshot_id.offset > log.high_watermark:
                    self._fail(now_ms, f"node {node_id}'s snapshot {snapshot_id} is not the "
                               "committed prefix of its log")
        # The high watermark.
        hw = log.high_watermark
        if hw < self.last_hw[node_id]:
            self._fail(
                now_ms, f"node {node_id}'s high watermark went back {self.last_hw[node_id]} -> {hw}"
            )
        if hw > self.last_hw[node_id]:
            holders = sum(
                1 for d in self.digests.values() if len(d) >= hw and d[hw - 1] == digests[hw - 1]
            )
            if holders < self.majority:
                self._fail(
                    now_ms,
                    f"node {node_id}'s high watermark {hw} covers an entry only {holders} "
                    "voters hold",
                )
            for offset in range(self.last_hw[node_id], hw):
                if offset < len(self.committed):
                    seen = self.committed[offset]
                    if seen[0] != digests[offset]:
                        self._fail(
                            now_ms, f"offset {offset} committed twice, with different entries"
                        )
                    seen[1] = min(seen[1], client.epoch)
                else:
                    self.committed.append([digests[offset], client.epoch])
            self.last_hw[node_id] = hw

    def _extend(self, node_id: int, digests: list[int], entries: Iterable[LogEntry],
                now_ms: int) -> None:
        for entry in entries:
            if entry.offset != len(digests):
                self._fail(now_ms, f"node {node_id}: offset {entry.offset} after "
                           f"{len(digests)} entries")
            previous = digests[-1] if digests else 0
            digest = hash((previous, entry.epoch, entry.value, entry.leader_change))
            known = self.digest_of.setdefault((entry.offset, entry.epoch), digest)
            if known != digest:
                self._fail(
                    now_ms,
                    f"log matching: node {node_id} has offset {entry.offset} of epoch "
                    f"{entry.epoch} with a different prefix or value than another voter",
                )
            digests.append(digest)

    def _check_leader_completeness(self, node: SimNode, now_ms: int) -> None:
        assert node.client is not None
        epoch = node.client.epoch
        offset = len(self.committed) - 1
        while offset >= 0 and self.committed[offset][1] > epoch:
            offset -= 1
        if offset < 0:
            return
        digests = self.digests[node.node_id]
        if len(digests) <= offset or digests[offset] != self.committed[offset][0]:
            self._fail(
                now_ms,
                f"leader completeness: leader {node.node_id} of epoch {epoch} lacks offset "
                f"{offset}, committed by then",
            )


def describe(envelope: Envelope) -> str:
    """One line for a trace: who to whom, the message, its records as an offset range."""
    body = envelope.body
    text = repr(body)
    if isinstance(body, FetchSnapshotResponse):
        text = repr(replace(body, unaligned_records=b"")).replace(
            "unaligned_records=b''", f"{len(body.unaligned_records)} bytes"
        )
    if isinstance(body, FetchResponse) and body.records:
        first, last = body.records[0], body.records[-1]
        text = repr(replace(body, records=())).replace(
            "records=()",
            f"records=[{first.offset}..{last.offset}] epochs {first.epoch}..{last.epoch}",
        )
    return f"{envelope.source_id}->{envelope.destination_id} #{envelope.correlation_id} {text}"


class RaftSimulation:
    """Voters, a clock, a network and faults, all from one seed."""

    def __init__(self, seed: int, voters: int, config: RaftConfig | None = None) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        # Small fetches too: a follower then holds part of what a leader sent, the ground on
        # which the commit rule matters (an old epoch's entries on a majority, the new leader's
        # first entry not yet).
        self.config = config or replace(
            SIMULATION_CONFIG,
            fetch_max_entries=self.rng.choice([2, 10, 100]),
            # Chunks of a few records, or the whole snapshot in one.
            fetch_snapshot_max_bytes=self.rng.choice([100, 1000, 1 << 20]),
            snapshots_retained=self.rng.choice([1, 2]),
        )
        #: a voter snapshots its state once this many entries were committed since its last
        #: snapshot (0: never)
        self.snapshot_every = self.rng.choice([0, 5, 20])
        self.now = 0
        self.nodes = {i: SimNode(i) for i in range(1, voters + 1)}
        self.voter_ids = tuple(self.nodes)
        self.faults: Faults | None = Faults.random(self.rng)
        self.group: dict[int, int] = {i: 0 for i in self.nodes}
        self.checker = InvariantChecker(self.nodes)
        self._queue: list[tuple[int, int, str, object]] = []
        self._seq = 0
        self.events = 0
        self.trace: Callable[[str], None] | None = None
        for node in self.nodes.values():
            self._start(node)
        if self.faults is not None:
            self._push(self.rng.randrange(self.faults.crash_interval_ms), "crash", None)
            self._push(self.rng.randrange(self.faults.partition_interval_ms), "partition", None)
            self._push(self.rng.randrange(50, 200), "append", None)
            if self.snapshot_every:
                self._push(self.rng.randrange(100, 400), "snapshot", None)

    # -- the event queue -----------------------------------------------------------------------

    def _push(self, at: int, kind: str, data: object) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (at, self._seq, kind, data))

    def _schedule_poll(self, node: SimNode, earliest: int) -> None:
        if node.client is None:
            return
        at = max(node.client.next_poll_ms, earliest)
        if at < node.scheduled_poll:
            node.scheduled_poll = at
            self._push(at, "poll", (node.node_id, node.incarnation))

    def _start(self, node: SimNode) -> None:
        node.client = KafkaRaftClient(
            node.node_id,
            self.voter_ids,
            node.log,
            node.store,
            random.Random(self.rng.getrandbits(64)),
            self.now,
            self.config,
        )
        node.scheduled_poll = float("inf")
        self._schedule_poll(node, self.now)

    # -- the network ---------------------------------------------------------------------------

    def _send(self, envelope: Envelope, source_inc: int, destination_inc: int) -> None:
        faults = self.faults
        if self.group[envelope.source_id] != self.group[envelope.destination_id]:
            return
        copies = 1
        if faults is not None:
            if self.rng.random() < faults.drop:
                return
            if self.rng.random() < faults.duplicate:
                copies = 2
        max_delay = faults.max_delay_ms if faults is not None else 10
        for _ in range(copies):
            at = self.now + self.rng.randint(1, max_delay)
            self._push(at, "deliver", (envelope, source_inc, destination_inc))

    def _emit(
        self, node: SimNode, out: list[Envelope], request: tuple[Envelope, int] | None
    ) -> None:
        for envelope in out:
            destination = self.nodes[envelope.destination_id]
            # A response goes back on the connection its request came on: if the requester has
            # restarted since, that connection is gone and so is the response.
            if (
                request is not None
                and envelope.correlation_id == request[0].correlation_id
                and (envelope.destination_id == request[0].source_id)
            ):
                destination_inc = request[1]
            else:
                destination_inc = destination.incarnation
            self._send(envelope, node.incarnation, destination_inc)

    # -- one event -----------------------------------------------------------------------------

    def step(self) -> bool:
        """Run the next event; False when there is none."""
        if not self._queue:
            return False
        at, _, kind, data = heapq.heappop(self._queue)
        self.now = at
        self.events += 1
        touched: set[int] = set()
        if kind == "poll":
            node_id, incarnation = data  # type: ignore[misc]
            node = self.nodes[node_id]
            if (
                node.client is not None
                and node.incarnation == incarnation
                and node.scheduled_poll == at
            ):
                node.scheduled_poll = float("inf")
                self._emit(node, node.client.poll(self.now), None)
                self._schedule_poll(node, self.now + 1)
                touched.add(node_id)
        elif kind == "deliver":
            envelope, source_inc, destination_inc = data  # type: ignore[misc]
            node = self.nodes[envelope.destination_id]
            source = self.nodes[envelope.source_id]
            if (
                node.client is not None
                and node.incarnation == destination_inc
                and source.incarnation == source_inc
                and self.group[envelope.source_id] == self.group[envelope.destination_id]
            ):
                if self.trace is not None:
                    self.trace(f"{self.now:>7} {describe(envelope)}")
                self._emit(node, node.client.handle(envelope, self.now), (envelope, source_inc))
                self._schedule_poll(node, self.now)
                touched.add(node.node_id)
        elif kind == "crash":
            self._crash_some()
        elif kind == "restart":
            node = self.nodes[data]  # type: ignore[index]
            if node.client is None:
                self._start(node)
                self.checker.restarted(node.node_id)
                touched.add(node.node_id)
        elif kind == "partition":
            self._partition()
        elif kind == "append":
            touched |= self._append()
        elif kind == "snapshot":
            touched |= self._snapshot_some()
        if touched:
            self.checker.check(touched, self.now)
        return True

    def _crash_some(self) -> None:
        if self.faults is None:
            return
        node = self.nodes[self.rng.choice(self.voter_ids)]
        if node.client is not None and node.client.is_leader() and self.rng.random() < 0.3:
            # A graceful shutdown's first half: the leader resigns (EndQuorumEpoch) and stays up.
            if self.trace is not None:
                self.trace(f"{self.now:>7} {node.node_id} resigns")
            self._emit(node, node.client.resign(self.now), None)
            self._schedule_poll(node, self.now)
            self.checker.check({node.node_id}, self.now)
        elif node.client is not None:
            if self.trace is not None:
                self.trace(f"{self.now:>7} crash {node.node_id}")
            node.client = None
            node.incarnation += 1
            self._push(self.now + self.rng.randint(100, 3000), "restart", node.node_id)
        self._push(
            self.now + self.rng.randrange(1, self.faults.crash_interval_ms * 2), "crash", None
        )

    def _partition(self) -> None:
        if self.faults is None:
            return
        if self.rng.random() < 0.4:
            self.group = {i: 0 for i in self.nodes}
        else:
            self.group = {i: self.rng.randrange(2) for i in self.nodes}
        if self.trace is not None:
            self.trace(f"{self.now:>7} partition {self.group}")
        self._push(
            self.now + self.rng.randrange(1, self.faults.partition_interval_ms * 2),
            "partition",
            None,
        )

    def snapshot(self, node: SimNode) -> OffsetAndEpoch | None:
        """``node``'s state machine snapshots its image at the high watermark, if it has
        ``snapshot_every`` committed entries since its last snapshot."""
        client = node.client
        if client is None:
            return None
        latest = node.log.latest_snapshot_id()
        hw = client.high_watermark
        if hw - (latest.offset if latest is not None else 0) < max(1, self.snapshot_every):
            return None
        if self.trace is not None:
            self.trace(f"{self.now:>7} {node.node_id} snapshots at {hw}")
        return client.create_snapshot(hw, state_records(node.log, hw))

    def _snapshot_some(self) -> set[int]:
        if self.faults is None:
            return set()
        self._push(self.now + self.rng.randrange(100, 400), "snapshot", None)
        return {n.node_id for n in self.nodes.values() if self.snapshot(n) is not None}

    def _append(self) -> set[int]:
        if self.faults is None:
            return set()
        self._push(self.now + self.rng.randrange(20, 300), "append", None)
        leaders = [n for n in self.nodes.values() if n.client is not None and n.client.is_leader()]
        if not leaders:
            return set()
        node = self.rng.choice(leaders)
        assert node.client is not None
        count = self.rng.randint(1, 3)
        node.client.append([f"{self.seed}:{self.now}:{i}".encode() for i in range(count)], self.now)
        self._emit(node, [], None)
        self._schedule_poll(node, self.now)
        return {node.node_id}

    # -- phases --------------------------------------------------------------------------------

    def run_for(self, duration_ms: int) -> None:
        end = self.now + duration_ms
        while self._queue and self._queue[0][0] <= end:
            self.step()
        self.now = end

    def heal(self) -> None:
        """End the faults: every voter up, one partition, no loss (delays stay)."""
        self.faults = None
        self.group = {i: 0 for i in self.nodes}
        for node in self.nodes.values():
            if node.client is None:
                self._start(node)
                self.checker.restarted(node.node_id)

    def run_until_committed(self, bound_ms: int) -> int:
        """Append through the leader until a record commits; the simulated ms it took."""
        start = self.now
        pending: tuple[int, int, int] | None = None  # (node, epoch, offset)
        while self.now - start <= bound_ms:
            if pending is not None:
                node = self.nodes[pending[0]]
                client = node.client
                if client is None or not client.is_leader() or client.epoch != pending[1]:
                    pending = None
                elif client.high_watermark > pending[2]:
                    return self.now - start
            if pending is None:
                for node in self.nodes.values():
                    if node.client is not None and node.client.is_leader():
                        offset = node.client.append([b"liveness"], self.now)
                        pending = (node.node_id, node.client.epoch, offset)
                        self._schedule_poll(node, self.now)
                        break
            if not self.step():
                break
        raise InvariantViolation(
            f"liveness: no record committed within {bound_ms} simulated ms of the network healing"
        )


def run_seed(seed: int, voters: int, chaos_ms: int = 8000, liveness_bound_ms: int = 15000) -> int:
    """One seeded run: chaos, then heal; returns the ms to a commit after healing."""
    sim = RaftSimulation(seed, voters)
    sim.run_for(chaos_ms)
    sim.heal()
    return sim.run_until_committed(liveness_bound_ms)
