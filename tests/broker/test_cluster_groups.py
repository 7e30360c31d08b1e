"""Consumer groups on a 3-broker cluster that lose a broker mid-stream, judged by clients we did
not write: two confluent-kafka consumers, or two kafka-python consumers, in one group with
``subscribe()``, each committing synchronously after every record it processes
(tests/support/group_consumers.py), while the leader of a data partition and then the group's
coordinator (the leader of the group's ``__consumer_offsets`` partition) are SIGKILLed.

The records (keyed, acks=all, idempotent, into a topic with replication factor 3 and
``min.insync.replicas=2``) are all written before the group starts, and the group starts from
offsets committed as 0.  The consumers use ``auto.offset.reset=latest``: a group that lost its
offsets would jump to the end and skip records, so "every record consumed" proves that the group
resumed from its commits.  Checked:

- every acknowledged record is processed, with its key and value, at its offset;
- each consumer reads each partition in offset order, with no gap, from where it was assigned;
  and it starts there at the group's last committed offset (between the last commit the client
  saw succeed and the last one it attempted);
- a record processed twice is one whose commit failed (the only redelivery at-least-once allows);
- the committed offsets, watched by a kafka-python admin client throughout, never go backwards
  and never disappear, and end at each partition's end;
- the coordinator moved to another broker, so the offsets it answered with after the kill came
  from another replica of ``__consumer_offsets``.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
import uuid
from collections import defaultdict

import pytest
from support.group_consumers import run_consumer
from support.topics import new_replicated_topic

from kafkacore.broker.group.group_metadata_manager import OFFSETS_TOPIC, partition_for
from kafkacore.testing.cluster import Cluster

PARTITIONS = 4
RECORDS = 600
KEYS = 20
OFFSETS_PARTITIONS = 50  # Kafka's default offsets.topic.num.partitions
BOUND_S = 120.0


def produce(cluster: Cluster, topic: str) -> dict[tuple[int, int], tuple[bytes, bytes]]:
    """RECORDS keyed records, acks=all and idempotent: (partition, offset) -> (key, value)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    acked: dict[tuple[int, int], tuple[bytes, bytes]] = {}
    failures = []

    def on_delivery(err, msg):
        if err is not None:
            failures.append(err)
        else:
            acked[(msg.partition(), msg.offset())] = (msg.key(), msg.value())

    for i in range(RECORDS):
        producer.produce(topic, key=b"key-%02d" % (i % KEYS), value=b"%05d" % i,
                         on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert failures == []
    assert len(acked) == RECORDS
    return acked


def commit_zero(cluster: Cluster, topic: str, group: str) -> None:
    """Offsets 0 committed for every partition (a group "only using Kafka to store offsets",
    generation -1), read back by another consumer of the group."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                             enable_auto_commit=False, request_timeout_ms=30000)
    consumer.assign(tps)
    consumer.commit({tp: OffsetAndMetadata(0, "", -1) for tp in tps})
    consumer.close(autocommit=False)
    reader = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                           enable_auto_commit=False)
    assert {tp.partition: reader.committed(tp) for tp in tps} == dict.fromkeys(
        range(PARTITIONS), 0)
    reader.close(autocommit=False)


class OffsetWatcher(threading.Thread):
    """Reads the group's committed offsets (kafka-python's admin client: FindCoordinator, then
    OffsetFetch) over and over; keeps every successful answer."""

    def __init__(self, cluster: Cluster, group: str) -> None:
        super().__init__(name="offset-watcher", daemon=True)
        self.cluster, self.group = cluster, group
        self.stop = threading.Event()
        self.answers: list[tuple[float, dict[int, int]]] = []
        self.failures = 0
        self.last_failure = ""

    def run(self) -> None:
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        admin = None
        try:
            while not self.stop.wait(0.1):
                try:
                    if admin is None:
                        admin = KafkaAdminClient(
                            bootstrap_servers=self.cluster.bootstrap_servers,
                            request_timeout_ms=5000, retry_backoff_ms=100)
                    got = admin.list_group_offsets(self.group)[self.group]
                except (KafkaError, OSError) as exc:  # a dead or loading coordinator: again
                    self.failures += 1
                    self.last_failure = repr(exc)
                    # kafka-python's admin client keeps a coordinator it found even after
                    # NOT_COORDINATOR: a new client looks it up again.
                    if admin is not None:
                        admin.close()
                        admin = None
                    continue
                self.answers.append((time.monotonic(), {
                    tp.partition: o.offset for tp, o in got.items() if o.offset >= 0}))
        finally:
            if admin is not None:
                admin.close()

    def check(self) -> None:
        """The committed offsets never went backwards and never disappeared."""
        high_water: dict[int, int] = {}
        for t, answer in list(self.answers):
            for p, seen in high_water.items():
                assert p in answer, f"partition {p}'s committed offset disappeared at {t}: " \
                                    f"{answer} (was {seen})"
                assert answer[p] >= seen, f"partition {p}: committed offset went from {seen} " \
                                          f"to {answer[p]}"
            high_water.update(answer)

    def latest(self) -> dict[int, int]:
        return self.answers[-1][1] if self.answers else {}


class Events(threading.Thread):
    """Drains the consumers' events (see tests/support/group_consumers.py)."""

    def __init__(self, source, watcher: OffsetWatcher) -> None:
        super().__init__(name="events", daemon=True)
        self.source = source
        self.watcher = watcher
        self.stop = threading.Event()
        self.all: list[tuple] = []
        self.seen: set[tuple[int, int]] = set()
        self.assigned: dict[int, list[int]] = {}
        self.ok_commits: dict[int, int] = {}
        self.consumers: list = []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                event = self.source.get(timeout=0.1)
            except queue.Empty:
                continue
            self.all.append(event)
            if event[0] == "record":
                self.seen.add((event[3], event[4]))
            elif event[0] == "assign":
                self.assigned[event[2]] = event[3]
            elif event[0] == "commit" and event[6]:
                self.ok_commits[event[4]] = self.ok_commits.get(event[4], 0) + 1

    def wait_for(self, what: str, predicate, timeout_s: float = BOUND_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            errors = [e for e in self.all if e[0] == "error"]
            assert not errors, errors[0][3]
            self.watcher.check()  # fails at once if the group lost its offsets
            dead = [(c.name, c.exitcode) for c in self.consumers if not c.is_alive()]
            assert not dead, f"consumer processes ended early: {dead}"
            assert time.monotonic() < deadline, (
                f"not within {timeout_s} s: {what}; assigned {self.assigned}, "
                f"{len(self.seen)} records seen, last events {self.all[-5:]}")
            time.sleep(0.02)


def run_group_through_kills(cluster: Cluster, kind: str) -> None:
    started = time.monotonic()
    topic = new_replicated_topic(cluster, PARTITIONS)
    acked = produce(cluster, topic)
    group = f"group-{kind}-{uuid.uuid4().hex[:8]}"
    commit_zero(cluster, topic, group)
    offsets_partition = partition_for(group, OFFSETS_PARTITIONS)
    coordinator = cluster.leader_of(OFFSETS_TOPIC, offsets_partition)

    context = multiprocessing.get_context("forkserver")
    source, stop = context.Queue(), context.Event()
    # Three quarters of the stream until the coordinator has been killed: the consumers keep
    # going through the first kill's failover, and cannot finish before the second.
    credits = context.Semaphore(RECORDS * 3 // 4)
    watcher = OffsetWatcher(cluster, group)
    watcher.start()
    events = Events(source, watcher)
    events.start()
    consumers = [context.Process(target=run_consumer, name=f"{kind}-{cid}", args=(
        kind, cid, cluster.bootstrap_servers, topic, group, source, stop, BOUND_S + 60,
        str(cluster.base / f"{group}-consumer-{cid}.log"), credits))
        for cid in (1, 2)]
    for c in consumers:
        c.start()
    events.consumers = consumers
    killed: list[int] = []
    try:
        # 1. Both consumers own partitions and a quarter of the stream is processed: kill the
        #    leader of a data partition that the coordinator does not lead.
        events.wait_for("both consumers assigned, a quarter processed", lambda: (
            sum(1 for p in events.assigned.values() if p) == 2
            and len(events.seen) >= RECORDS // 4))
        leaders = {p: cluster.leader_of(topic, p) for p in range(PARTITIONS)}
        victim_partition = next(p for p, b in leaders.items() if b != coordinator)
        victim = leaders[victim_partition]
        assert len(events.seen) < RECORDS, "the stream ended before the first kill"
        cluster.kill(victim)
        killed.append(victim)
        cluster.wait_for_leader_change(topic, victim_partition, victim)
        cluster.restart(victim)
        # 2. Every partition has a commit, and half the stream is processed: kill the group's
        #    coordinator.  Lost offsets would now send the consumers to the end of the log.
        events.wait_for("half processed, a commit on every partition", lambda: (
            len(events.seen) >= RECORDS // 2 and len(events.ok_commits) == PARTITIONS))
        # The broker restarted above must be back in the offsets partition's ISR first: killing
        # the coordinator while it is the ISR's only member leaves no eligible leader (Kafka
        # elects none without unclean election).
        replicas = cluster.partition_state(OFFSETS_TOPIC, offsets_partition)["replica_nodes"]
        cluster.wait_for_isr(OFFSETS_TOPIC, offsets_partition, replicas)
        before_kill = dict(watcher.latest())
        assert len(events.seen) < RECORDS, "the stream ended before the coordinator was killed"
        cluster.kill(coordinator)
        killed.append(coordinator)
        new_coordinator = cluster.wait_for_leader_change(OFFSETS_TOPIC, offsets_partition,
                                                         coordinator)
        assert new_coordinator != coordinator
        for _ in range(2 * RECORDS):  # the rest, and any record processed again
            credits.release()
        events.wait_for("every record processed", lambda: len(events.seen) == RECORDS)
    finally:
        events.consumers = []  # they end now
        stop.set()
        for c in consumers:
            c.join(30)
            if c.is_alive():
                c.kill()
                c.join(10)
        for broker in set(killed):
            if not cluster._broker(broker).running:  # noqa: SLF001
                cluster.restart(broker)
    events.wait_for("the consumers' last events", lambda: source.empty(), 10)
    events.stop.set()
    events.join(5)  # its last get() is appended before it sees the stop
    assert not events.is_alive()
    final_deadline = time.monotonic() + 30
    last_commit = _last_commits(events.all)
    expected_end = {p: 1 + max(o for q, o in acked if q == p) for p in range(PARTITIONS)}
    while time.monotonic() < final_deadline:
        final = watcher.latest()
        if all(final.get(p) == expected_end[p] or not last_commit[p][1]
               for p in range(PARTITIONS)):
            break
        time.sleep(0.1)
    watcher.stop.set()
    watcher.join(10)
    elapsed = time.monotonic() - started
    check(events.all, acked, watcher, before_kill, expected_end, kind, elapsed)
    assert all(c.exitcode == 0 for c in consumers), [c.exitcode for c in consumers]


def _last_commits(all_events) -> dict[int, tuple[int, bool]]:
    last: dict[int, tuple[float, int, bool]] = {}
    for e in all_events:
        if e[0] == "commit" and (e[4] not in last or e[2] > last[e[4]][0]):
            last[e[4]] = (e[2], e[5], e[6])
    return {p: (o, ok) for p, (_, o, ok) in last.items()}


def check(all_events, acked, watcher, before_kill, expected_end, kind, elapsed) -> None:
    errors = [e for e in all_events if e[0] == "error"]
    assert not errors, errors[0][3]
    records = sorted((e for e in all_events if e[0] == "record"), key=lambda e: e[1])
    commits = [e for e in all_events if e[0] == "commit"]
    assigns = sorted((e for e in all_events if e[0] == "assign"), key=lambda e: e[1])

    # Every acknowledged record processed, as it was written; nothing else.
    processed: dict[tuple[int, int], int] = defaultdict(int)
    for _, _, _, p, o, key, value in records:
        assert acked.get((p, o)) == (key, value), f"partition {p} offset {o}: {key!r} {value!r}"
        processed[(p, o)] += 1
    assert set(processed) == set(acked), "records never consumed (offsets lost?)"

    # A record processed twice is one whose commit failed (at-least-once, nothing more).
    failed = {(e[4], e[5] - 1) for e in commits if not e[6]}
    duplicates = {po: n for po, n in processed.items() if n > 1}
    assert set(duplicates) <= failed, sorted(set(duplicates) - failed)[:10]

    # Each consumer reads each partition in order, without gaps, from where the group's commits
    # say, after every assignment.
    runs: dict[tuple[int, int, int], list[tuple[float, int]]] = defaultdict(list)
    for _, t, cid, p, o, _, _ in records:
        run = sum(1 for a in assigns if a[2] == cid and a[1] <= t)
        runs[(cid, run, p)].append((t, o))
    for (cid, run, p), seq in runs.items():
        offsets = [o for _, o in seq]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), (
            f"consumer {cid} run {run} partition {p}: out of order or a gap: {offsets[:20]}")
        t0 = seq[0][0]
        low = max([e[5] for e in commits if e[4] == p and e[6] and e[2] < t0], default=0)
        high = max([e[5] for e in commits if e[4] == p and e[1] < t0], default=0)
        assert low <= offsets[0] <= high, (
            f"consumer {cid} run {run} partition {p} started at {offsets[0]}, not at the last "
            f"committed offset (between {low} and {high})")

    # The committed offsets, as a client we did not write reads them: never backwards, never
    # gone, and at the end of each partition at the end (unless its very last commit failed).
    assert watcher.answers, "the admin client never read the committed offsets"
    watcher.check()
    assert set(before_kill) == set(range(PARTITIONS))
    last_commit = _last_commits(all_events)
    final = watcher.latest()
    for p in range(PARTITIONS):
        if last_commit[p][1]:
            assert final.get(p) == expected_end[p], (
                f"partition {p}: committed {final}, end {expected_end}; last read failure: "
                f"{watcher.last_failure}, {len(watcher.answers)} reads ({watcher.failures} "
                f"failed), last read at {watcher.answers[-1][0]}, now {time.monotonic()}")
    print(f"\n{kind}: {len(records)} records processed for {len(acked)} written, "
          f"{sum(n - 1 for n in duplicates.values())} redeliveries, {len(failed)} failed "
          f"commits of {len(commits)}, {len(assigns)} assignments, {len(watcher.answers)} "
          f"offset reads ({watcher.failures} refused), {elapsed:.1f} s")


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_confluent_kafka_group_survives_data_leader_and_coordinator_kills(cluster):
    run_group_through_kills(cluster, "confluent")


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_kafka_python_group_survives_data_leader_and_coordinator_kills(cluster):
    run_group_through_kills(cluster, "kafka-python")


def _call(cluster: Cluster, broker: int, api: int, version: int, body: dict,
          timeout_s: float = 10.0) -> dict:
    from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
    from kafkacore.protocol import codec

    full = codec.REQUESTS[api].body.defaults(version)
    full.update(body)
    host, port = cluster.broker_address(broker).split(":")
    client = InterBrokerClient(host, int(port), "test", timeout_s)
    try:
        return client.send(api, version, full)
    finally:
        client.close()


def _commit(cluster: Cluster, broker: int, group: str, topic: str, offset: int) -> int:
    from kafkacore.protocol.api_keys import ApiKey

    answer = _call(cluster, broker, ApiKey.OFFSET_COMMIT, 8, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
        "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}]}]})
    return int(answer["topics"][0]["partitions"][0]["error_code"])


def _fetch(cluster: Cluster, broker: int, group: str, topic: str) -> tuple[int, int]:
    """(the group's error, the committed offset of partition 0) from OffsetFetch v8."""
    from kafkacore.protocol.api_keys import ApiKey

    answer = _call(cluster, broker, ApiKey.OFFSET_FETCH, 8, {"groups": [
        {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}]})
    g = answer["groups"][0]
    return int(g["error_code"]), int(g["topics"][0]["partitions"][0]["committed_offset"])


@pytest.mark.cluster
@pytest.mark.timeout(180)
def test_coordinator_protocol_by_hand_across_a_coordinator_kill(cluster):
    """FindCoordinator names the leader of the group's offsets partition on every broker;
    the others answer NOT_COORDINATOR (16); after the coordinator's death FindCoordinator names
    the new leader, which answers with the commit it replicated."""
    from kafkacore.protocol.api_keys import ApiKey

    topic = new_replicated_topic(cluster, PARTITIONS)
    group = f"by-hand-{uuid.uuid4().hex[:8]}"
    partition = partition_for(group, OFFSETS_PARTITIONS)
    # The first look-up creates __consumer_offsets (if no test did yet); until every broker
    # has it, their answer is COORDINATOR_NOT_AVAILABLE, and clients retry.
    _call(cluster, 1, ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
    cluster.wait_for_topic(OFFSETS_TOPIC)
    # A broker an earlier test restarted may still be catching up on the group's partition: the
    # commit must reach every replica before the coordinator dies, or no one can lead after it.
    state = cluster.partition_state(OFFSETS_TOPIC, partition)
    assert state is not None
    cluster.wait_for_isr(OFFSETS_TOPIC, partition, state["replica_nodes"])
    found = {b: _call(cluster, b, ApiKey.FIND_COORDINATOR, 4,
                      {"key_type": 0, "coordinator_keys": [group]})["coordinators"][0]
             for b in (1, 2, 3)}
    assert {(c["error_code"], c["node_id"]) for c in found.values()} == {
        (0, cluster.leader_of(OFFSETS_TOPIC, partition))}
    coordinator = found[1]["node_id"]
    others = [b for b in (1, 2, 3) if b != coordinator]
    assert _commit(cluster, coordinator, group, topic, 42) == 0
    for b in others:
        assert _commit(cluster, b, group, topic, 7) == 16  # NOT_COORDINATOR
        assert _fetch(cluster, b, group, topic)[0] == 16
    assert _fetch(cluster, coordinator, group, topic) == (0, 42)
    cluster.kill(coordinator)
    try:
        new = cluster.wait_for_leader_change(OFFSETS_TOPIC, partition, coordinator)
        deadline = time.monotonic() + 60
        while True:  # the survivors learn of the election, then the new leader loads
            answers = [_call(cluster, b, ApiKey.FIND_COORDINATOR, 4,
                             {"key_type": 0, "coordinator_keys": [group]})["coordinators"][0]
                       for b in others]
            fetched = _fetch(cluster, new, group, topic)
            if all(a["node_id"] == new for a in answers) and fetched[0] == 0:
                break
            assert time.monotonic() < deadline, (answers, fetched)
            time.sleep(0.05)
        assert fetched == (0, 42)  # the commit was on the new leader's replica
        assert _commit(cluster, new, group, topic, 43) == 0
        assert _fetch(cluster, new, group, topic) == (0, 43)
    finally:
        cluster.restart(coordinator)


def _find_coordinator(cluster: Cluster, broker: int, group: str) -> dict:
    from kafkacore.protocol.api_keys import ApiKey

    return _call(cluster, broker, ApiKey.FIND_COORDINATOR, 4,
                 {"key_type": 0, "coordinator_keys": [group]})["coordinators"][0]


def _join(cluster: Cluster, broker: int, group: str, member_id: str, subscription: bytes) -> dict:
    """JoinGroup v3 (no MEMBER_ID_REQUIRED round): parked until the rebalance completes."""
    from kafkacore.protocol.api_keys import ApiKey

    return _call(cluster, broker, ApiKey.JOIN_GROUP, 3, {
        "group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000,
        "member_id": member_id, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription}]}, timeout_s=60.0)


def _sync(cluster: Cluster, broker: int, group: str, generation: int, member_id: str,
          assignments: dict[str, bytes]) -> dict:
    from kafkacore.protocol.api_keys import ApiKey

    return _call(cluster, broker, ApiKey.SYNC_GROUP, 3, {
        "group_id": group, "generation_id": generation, "member_id": member_id,
        "assignments": [{"member_id": m, "assignment": a} for m, a in assignments.items()]},
        timeout_s=60.0)


def _heartbeat(cluster: Cluster, broker: int, group: str, generation: int, member_id: str
               ) -> int:
    from kafkacore.protocol.api_keys import ApiKey

    return int(_call(cluster, broker, ApiKey.HEARTBEAT, 3, {
        "group_id": group, "generation_id": generation, "member_id": member_id})["error_code"])


@pytest.mark.cluster
@pytest.mark.timeout(240)
def test_membership_survives_a_coordinator_kill(cluster):
    """Two members join and sync (the generation and its assignment are written to
    ``__consumer_offsets`` before SyncGroup answers); the coordinator is SIGKILLed; the new
    coordinator loaded the group, so the members' heartbeats with their old member ids and
    generation are answered NONE (not UNKNOWN_MEMBER_ID: no rebalance), DescribeGroups shows the
    same generation, members and assignments, and a retried SyncGroup gets the assignment."""
    from concurrent.futures import ThreadPoolExecutor

    from kafkacore.protocol.api_keys import ApiKey

    group = f"members-{uuid.uuid4().hex[:8]}"
    partition = partition_for(group, OFFSETS_PARTITIONS)
    _find_coordinator(cluster, 1, group)  # creates __consumer_offsets if no test did yet
    cluster.wait_for_topic(OFFSETS_TOPIC)
    coordinator = cluster.leader_of(OFFSETS_TOPIC, partition)
    # Every replica is in the ISR: whichever is elected next has the group's record.
    state = cluster.partition_state(OFFSETS_TOPIC, partition)
    assert state is not None and len(state["replica_nodes"]) > 1, state
    cluster.wait_for_isr(OFFSETS_TOPIC, partition, state["replica_nodes"])
    deadline = time.monotonic() + 60
    while _find_coordinator(cluster, coordinator, group)["error_code"] != 0:
        assert time.monotonic() < deadline, "the coordinator never loaded its partition"
        time.sleep(0.05)

    # a joins alone (generation 1); b's join starts a rebalance that a learns of by heartbeat.
    a = _join(cluster, coordinator, group, "", b"sub-a")
    assert a["error_code"] == 0, a
    a_id = a["member_id"]
    with ThreadPoolExecutor(2) as pool:
        b_join = pool.submit(_join, cluster, coordinator, group, "", b"sub-b")
        deadline = time.monotonic() + 60
        while _heartbeat(cluster, coordinator, group, a["generation_id"], a_id) != 27:
            assert time.monotonic() < deadline, "b's join never started a rebalance"
            time.sleep(0.05)
        a = _join(cluster, coordinator, group, a_id, b"sub-a")
        b = b_join.result(60)
    assert a["error_code"] == b["error_code"] == 0, (a, b)
    generation, b_id = a["generation_id"], b["member_id"]
    assert b["generation_id"] == generation and a["leader"] == a_id
    assignments = {a_id: b"assignment-a", b_id: b"assignment-b"}
    with ThreadPoolExecutor(1) as pool:
        b_sync = pool.submit(_sync, cluster, coordinator, group, generation, b_id, {})
        a_sync = _sync(cluster, coordinator, group, generation, a_id, assignments)
        b_synced = b_sync.result(60)
    assert (a_sync["error_code"], a_sync["assignment"]) == (0, b"assignment-a")
    assert (b_synced["error_code"], b_synced["assignment"]) == (0, b"assignment-b")

    cluster.kill(coordinator)
    try:
        new = cluster.wait_for_leader_change(OFFSETS_TOPIC, partition, coordinator)
        deadline = time.monotonic() + 60
        while True:  # NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS until it has loaded
            error = _heartbeat(cluster, new, group, generation, a_id)
            if error not in (14, 15, 16):
                break
            assert time.monotonic() < deadline, error
            time.sleep(0.05)
        assert error == 0  # not UNKNOWN_MEMBER_ID (25): the group was restored
        assert _heartbeat(cluster, new, group, generation, b_id) == 0
        described = _call(cluster, new, ApiKey.DESCRIBE_GROUPS, 0, {"groups": [group]})
        d = described["groups"][0]
        assert (d["error_code"], d["group_state"], d["protocol_type"], d["protocol_data"]) == (
            0, "Stable", "consumer", "range")
        assert sorted((m["member_id"], m["member_metadata"], m["member_assignment"])
                      for m in d["members"]) == sorted(
            [(a_id, b"sub-a", b"assignment-a"), (b_id, b"sub-b", b"assignment-b")])
        # A retried SyncGroup of the same generation gets the stored assignment.
        retried = _sync(cluster, new, group, generation, b_id, {})
        assert (retried["error_code"], retried["assignment"]) == (0, b"assignment-b")
    finally:
        cluster.restart(coordinator)
