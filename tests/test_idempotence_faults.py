"""librdkafka's idempotence tests, as faults on our replicated cluster (issue 11, part 2).

librdkafka proves its idempotent producer against its mock cluster (tests/0144-idempotence_mock.c
among others); here the same faults are switched on in the leader of a partition of a real
kafkacore cluster (:class:`~kafkacore.testing.cluster.Cluster`: a controller and three brokers, each its
own process; the topic has replication factor 3 and ``min.insync.replicas=2``, the producers
``acks=all`` and idempotent). Each scenario is run by two producers: ours, and confluent-kafka's
(librdkafka itself, in a child process), the control that checks the scenario and the cluster.

- Produce responses 2..N answered with REQUEST_TIMED_OUT (or NOT_ENOUGH_REPLICAS_AFTER_APPEND)
  *after* the append, N inside and outside the five-in-flight window: every retry is a duplicate
  the leader must recognise.
- The same, and then the leader killed (or its leadership moved) while the retries are being
  refused: the retries of batches already written go to the new leader, which must recognise
  them from the producer state it replicated.
- Produce answered NOT_LEADER_OR_FOLLOWER (nothing written), the leader unchanged.
- The leader's responses delayed past the message timeout, then released.
- Connections to the leader cut mid-stream: by isolating it (a failover), and by a TCP proxy
  inside a Produce request (half of it reaches the broker) or inside its response (appended,
  half an answer). Every broker advertises its proxy's address (``advertised.listeners``), so
  clients and followers reach each broker only through it.

Judged by reading the partition back with confluent-kafka and kafka-python: no duplicates, no
acknowledged record missing, send order kept; every delivery report arrives exactly once and
every failure is a typed error.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from dataclasses import dataclass

import pytest
from readback import fetch_batches, read_confluent, read_kafka_python
from support.tcp_proxy import TcpProxy
from support.topics import new_replicated_topic
from waits import wait_until

from kafkacore import KafkaProducer
from kafkacore import errors as kerrors
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing.cluster import Cluster

# One cluster for the module; only in the tox env that runs the cluster tests.
pytestmark = [pytest.mark.timeout(300), pytest.mark.cluster]

BROKERS = 3
RECORDS = 60


@dataclass
class FaultyCluster:
    cluster: Cluster
    proxies: dict[int, TcpProxy]

    @property
    def bootstrap_servers(self) -> str:
        """The proxies' addresses: the only way clients reach the brokers."""
        return ",".join(p.address for p in self.proxies.values())

    def new_topic(self) -> tuple[str, int]:
        """A one-partition replicated topic, every replica in sync; returns it and its leader."""
        name = new_replicated_topic(self.cluster, prefix="idempotence", timeout_s=120)
        return name, self.cluster.leader_of(name, 0)


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    proxies = {i: TcpProxy() for i in range(1, BROKERS + 1)}
    try:
        with Cluster(BROKERS, log_dir=tmp_path_factory.mktemp("idem"), advertised_listeners={
                i: f"PLAINTEXT://{p.address}" for i, p in proxies.items()}) as cluster:
            for i, proxy in proxies.items():
                host, _, port = cluster.broker_address(i).rpartition(":")
                proxy.set_target(host, int(port))
            yield FaultyCluster(cluster, proxies)
    finally:
        for proxy in proxies.values():
            proxy.close()


@pytest.fixture(autouse=True)
def no_faults_left(faulty):
    yield
    c = faulty.cluster
    for i, node in c.brokers.items():
        if not node.running:  # a test that failed half-way through a kill
            c.restart(i)
    c.reset_faults()
    for proxy in faulty.proxies.values():
        proxy.clear_cuts()


def values(start, stop):
    return [b"record-%06d" % i for i in range(start, stop)]


def injected_produce_errors(cluster: Cluster, broker: int) -> int:
    return int(cluster.fault_status(broker)["injected"].get("Produce", 0))


def high_watermark(cluster: Cluster, topic: str) -> int:
    """The partition's high watermark as its leader answers ListOffsets; -1 while there is no
    leader to ask (an election under way)."""
    try:
        leader = cluster.leader_of(topic, 0, timeout_s=0)
        client = InterBrokerClient("127.0.0.1", cluster.brokers[leader].port, "hw", 5.0)
    except Exception:  # noqa: BLE001 - no leader just now: the caller asks again
        return -1
    try:
        answer = client.send(ApiKey.LIST_OFFSETS, 7, {
            "replica_id": -1, "isolation_level": 0, "timeout_ms": 5000, "topics": [
                {"name": topic, "partitions": [
                    {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
        p = answer["topics"][0]["partitions"][0]
        return int(p["offset"]) if p["error_code"] == 0 else -1
    except OSError:
        return -1
    finally:
        client.close()


# -- the two producers ---------------------------------------------------------------------------

class Reports:
    """Delivery reports by value: every report counted, so a second one for a record shows."""

    def __init__(self):
        self.lock = threading.Lock()
        self.by_value: dict[bytes, list[tuple[str | None, int]]] = {}

    def add(self, value, error, offset):
        with self.lock:
            self.by_value.setdefault(value, []).append((error, offset))

    def count(self):
        with self.lock:
            return sum(len(r) for r in self.by_value.values())


def ours(faulty, **settings):
    config = dict(bootstrap_servers=faulty.bootstrap_servers, enable_idempotence=True, acks="all",
                  linger_ms=0, batch_size=1, max_in_flight_requests_per_connection=5,
                  retry_backoff_ms=10, retry_backoff_max_ms=100)
    config.update(settings)
    return KafkaProducer(**config)


def send_ours(producer, topic, vals, reports):
    def report(value):
        def on_done(metadata, exception):
            if exception is None:
                reports.add(value, None, metadata.offset)
            else:
                # A typed error or a bug: the class name is kept, checked by the test.
                reports.add(value, type(exception).__name__, -1)
        return on_done

    return [producer.send(topic, v, partition=0, callback=report(v)) for v in vals]


def _confluent_child(conn, bootstrap, topic, batches, settings, gates):
    """In a child process: produce each list of values in ``batches`` with confluent-kafka's
    idempotent producer, waiting for every delivery report of one list and for the parent's
    word before the next; sends back [(value, error name or None, offset)] for each list.
    ``gates``: {index: event}, the record at that index is produced once the event is set."""
    from confluent_kafka import Producer

    config = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
              "linger.ms": 0, "batch.num.messages": 1,
              "max.in.flight.requests.per.connection": 5, "retry.backoff.ms": 10,
              "retry.backoff.max.ms": 100}
    pace_s = settings.pop("_pace_s", 0)
    config.update(settings)
    producer = Producer(config)
    fatal = []
    for vals in batches:
        reports = []

        def on_delivery(err, msg, reports=reports):
            name = None if err is None else err.name()
            if err is not None and err.fatal():
                fatal.append(err.str())
            reports.append((msg.value(), name, msg.offset() if err is None else -1))

        for i, v in enumerate(vals):
            if i in gates:
                while not gates[i].wait(0.1):
                    producer.poll(0)
            while True:
                try:
                    producer.produce(topic, v, partition=0, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
            if pace_s:
                time.sleep(pace_s)  # paced, so the parent's cuts fall inside the stream
        deadline = time.monotonic() + 150
        while len(reports) < len(vals) and time.monotonic() < deadline:
            producer.poll(0.1)
        # A second report for a record would arrive now.
        producer.poll(0.5)
        conn.send((reports, fatal))
        if conn.recv() != "go":
            break
    producer.flush(30)


class ConfluentChild:
    """confluent-kafka's producer in a child process, driven list by list."""

    def __init__(self, faulty, topic, batches, gates=None, **settings):
        context = multiprocessing.get_context("forkserver")
        self.conn, child_conn = context.Pipe()
        settings = {k.replace("_", ".") if not k.startswith("_") else k: v
                    for k, v in settings.items()}
        self.process = context.Process(
            target=_confluent_child,
            args=(child_conn, faulty.bootstrap_servers, topic, batches, settings, gates or {}),
            daemon=True)
        self.process.start()
        self.fatal: list[str] = []

    def next_reports(self, reports, bound_s=200):
        assert self.conn.poll(bound_s), "confluent-kafka's producer did not report in time"
        got, fatal = self.conn.recv()
        self.fatal = fatal
        for value, error, offset in got:
            reports.add(value, error, offset)

    def go(self):
        self.conn.send("go")

    def close(self):
        try:
            self.conn.send("stop")
        except OSError:
            pass
        self.process.join(60)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(10)


def produce(faulty, which, topic, sent, during=None):
    """Produce ``sent`` with ``which`` producer ("ours" or "confluent"), run ``during()`` while
    the records are on their way, and return the delivery reports."""
    reports = Reports()
    if which == "ours":
        with ours(faulty) as producer:
            send_ours(producer, topic, sent, reports)
            if during is not None:
                during()
            producer.flush(150)
        return reports
    child = ConfluentChild(faulty, topic, [sent])
    try:
        if during is not None:
            during()
        child.next_reports(reports)
    finally:
        child.close()
    assert not child.fatal, child.fatal
    return reports


# -- what every scenario checks ------------------------------------------------------------------

def check(faulty, topic, sent, reports, *, must_succeed, resent_in_a_new_epoch=False):
    """No duplicates, no gaps, order kept, one report per record, every failure typed.

    ``resent_in_a_new_epoch``: librdkafka, when it finds a sequence gap while records of
    unknown outcome are in flight ("skipped sequence numbers" in its ``eos`` debug log), bumps its
    producer epoch and sends those records again under the new epoch, as new records: a
    duplicate the broker must not (cannot) suppress.  Then a record may be in the log twice, but
    only once per producer epoch, the second copy in a later epoch: the broker still recognised
    every retry within an epoch.
    """
    for v in sent:
        got = reports.by_value.get(v, [])
        assert len(got) == 1, f"{v!r}: {len(got)} delivery reports"
    failed = {v: r[0][0] for v, r in reports.by_value.items() if r[0][0] is not None}
    untyped = {v: e for v, e in failed.items() if not _typed(e)}
    assert not untyped, f"failures that are not typed Kafka errors: {untyped}"
    if must_succeed:
        assert not failed, f"failed: {sorted(set(failed.values()))} for {len(failed)} records"
    acked = [v for v in sent if v not in failed]
    resent: set[bytes] = set()
    if resent_in_a_new_epoch:
        epochs: dict[bytes, list[int]] = {}
        for batch in fetch_batches(faulty.bootstrap_servers, topic, 0):
            for record in batch:
                epochs.setdefault(record.value, []).append(batch.producer_epoch)
        for value, copies in epochs.items():
            assert copies == sorted(set(copies)), (
                f"{value!r} in producer epochs {copies}: a retry the broker did not recognise")
            if len(copies) > 1:
                resent.add(value)
    # Read back up to the high watermark (the cluster holds what it holds), and at least every
    # acknowledged record (a new leader's high watermark may still be catching up).
    marks: list[int] = []
    wait_until(lambda: marks.append(high_watermark(faulty.cluster, topic)) or marks[-1] >= 0,
               "a high watermark", 60)
    end = max(marks[-1], len(acked) + len(resent))
    order = {v: i for i, v in enumerate(sent)}
    # librdkafka reports a record it learns was persisted only from a later batch's success
    # (its "possibly persisted" state) with no offset (None): nothing to compare.
    offsets = {v: o for v, r in reports.by_value.items() for (e, o) in r
               if e is None and o is not None}
    for reader in (read_confluent, read_kafka_python):
        consumed = reader(faulty.bootstrap_servers, topic, 1, end, timeout_s=60)
        read = [c.value for c in consumed]
        twice = {v for v in read if read.count(v) > 1}
        assert twice <= resent, f"{reader.__name__}: duplicates in the log: {sorted(twice)}"
        assert set(acked) <= set(read), f"{reader.__name__}: acknowledged records missing"
        assert set(read) <= set(sent), f"{reader.__name__}: records nobody sent"
        firsts = list(dict.fromkeys(read))
        assert [order[v] for v in firsts] == sorted(order[v] for v in firsts), "order not kept"
        at = {c.offset: c.value for c in consumed}
        misplaced = [(v, o, at.get(o)) for v, o in offsets.items() if at.get(o) != v]
        assert not misplaced, f"reported offsets that are not where the records are: {misplaced}"


def _typed(error_name):
    # Ours: a class of kafkacore.errors; confluent-kafka: librdkafka's error name.
    if error_name.startswith("_") or error_name.isupper():
        return True
    cls = getattr(kerrors, error_name, None)
    return isinstance(cls, type) and issubclass(cls, kerrors.KafkaError)


PRODUCERS = ["ours", "confluent"]


# -- the cluster's proxies -----------------------------------------------------------------------

def test_every_broker_is_reached_through_the_proxy_it_advertises(faulty):
    topic, leader = faulty.new_topic()
    metadata = faulty.cluster.metadata([topic])
    advertised = {b["node_id"]: f"{b['host']}:{b['port']}" for b in metadata["brokers"]}
    assert advertised == {i: p.address for i, p in faulty.proxies.items()}
    before = faulty.proxies[leader].connections
    reports = produce(faulty, "ours", topic, values(0, 3))
    assert faulty.proxies[leader].connections > before  # the leader was reached through it
    check(faulty, topic, values(0, 3), reports, must_succeed=True)


def test_advertised_listeners_are_checked():
    with pytest.raises(ValueError, match="no broker 4"):
        Cluster(3, advertised_listeners={4: "PLAINTEXT://127.0.0.1:1"})
    with pytest.raises(ValueError, match="PLAINTEXT://host:port"):
        Cluster(3, advertised_listeners={1: "127.0.0.1:1"})


# -- Produce responses 2..N: REQUEST_TIMED_OUT after the append -----------------------------------

# N - 1 timed-out responses: inside the five-in-flight window (3, 5) and outside it (6, 10).
WINDOW = [3, 5, 6, 10]


@pytest.mark.parametrize("n", WINDOW)
@pytest.mark.parametrize("which", PRODUCERS)
def test_timed_out_after_append_responses_2_to_n(faulty, which, n):
    topic, leader = faulty.new_topic()
    faulty.cluster.fail_next(leader, "Produce", [0] + ["REQUEST_TIMED_OUT"] * (n - 1),
                             after_append=True)
    sent = values(0, RECORDS)
    reports = produce(faulty, which, topic, sent)
    assert faulty.cluster.fault_status(leader)["pending"] == {}, "the faults were not all met"
    check(faulty, topic, sent, reports, must_succeed=True)


@pytest.mark.parametrize("which", PRODUCERS)
def test_not_enough_replicas_after_append(faulty, which):
    # The acks=all answer of a leader whose ISR shrank after the append: written, and retriable.
    topic, leader = faulty.new_topic()
    faulty.cluster.fail_next(leader, "Produce", [0] + ["NOT_ENOUGH_REPLICAS_AFTER_APPEND"] * 4,
                             after_append=True)
    sent = values(0, RECORDS)
    reports = produce(faulty, which, topic, sent)
    assert faulty.cluster.fault_status(leader)["pending"] == {}
    check(faulty, topic, sent, reports, must_succeed=True)


@pytest.mark.parametrize("which", PRODUCERS)
def test_not_leader_or_follower_answers(faulty, which):
    # Nothing written: the producer refreshes its metadata, finds the same leader, and resends
    # batches 2..5 and whatever was in flight behind them (OUT_OF_ORDER_SEQUENCE_NUMBER).
    topic, leader = faulty.new_topic()
    faulty.cluster.fail_next(leader, "Produce", [0] + ["NOT_LEADER_OR_FOLLOWER"] * 4)
    sent = values(0, RECORDS)
    reports = produce(faulty, which, topic, sent)
    assert faulty.cluster.fault_status(leader)["pending"] == {}
    check(faulty, topic, sent, reports, must_succeed=True)


# -- the leader changes while responses 2..N are being failed ------------------------------------

#: Retries refused (nothing written) until the leader changes: enough for any producer.
REFUSALS = 100_000


@pytest.mark.parametrize("n", [3, 10])
@pytest.mark.parametrize("change", ["kill", "move"])
@pytest.mark.parametrize("which", PRODUCERS)
def test_leader_changes_while_responses_2_to_n_are_failed(faulty, which, change, n):
    """Responses 2..N say REQUEST_TIMED_OUT after the append (the batches are written and
    replicated: acks=all); then every retry is refused NOT_LEADER_OR_FOLLOWER until the leader
    is killed (SIGKILL) or its leadership moved. The retries of the written batches reach the new
    leader, which must answer them as duplicates from the producer state it replicated."""
    c = faulty.cluster
    topic, leader = faulty.new_topic()
    before = injected_produce_errors(c, leader)
    c.fail_next(leader, "Produce", [0] + ["REQUEST_TIMED_OUT"] * (n - 1), after_append=True)
    c.fail_next(leader, "Produce", ["NOT_LEADER_OR_FOLLOWER"] * REFUSALS)
    sent = values(0, RECORDS)
    moved = []

    def change_leader():
        # Every timed-out answer given, and at least one retry refused.
        wait_until(lambda: injected_produce_errors(c, leader) - before >= n,
                   f"{n} injected errors on broker {leader}", 120, step_s=0.02)
        if change == "kill":
            c.kill(leader)
            try:
                moved.append(c.wait_for_leader_change(topic, 0, leader))
            finally:
                c.restart(leader)
        else:
            target = next(b for b in c.partition_state(topic, 0)["isr_nodes"] if b != leader)
            # The old leader keeps refusing (its refusals are switched off after the test):
            # every retry is answered by the new leader.
            c.move_leader(topic, 0, target)
            moved.append(target)

    reports = produce(faulty, which, topic, sent, during=change_leader)
    assert moved and moved[0] != leader
    check(faulty, topic, sent, reports, must_succeed=True,
          resent_in_a_new_epoch=which == "confluent")


# -- a leader delayed past the message timeout, then released ------------------------------------

def test_ours_survives_a_leader_slower_than_the_delivery_timeout(faulty):
    c = faulty.cluster
    topic, leader = faulty.new_topic()
    reports = Reports()
    before, during, after = values(0, 5), values(5, 25), values(25, 45)
    with ours(faulty, delivery_timeout_ms=3000, request_timeout_ms=1500) as producer:
        send_ours(producer, topic, before, reports)
        producer.flush(60)
        c.set_latency(leader, 60_000)
        futures = send_ours(producer, topic, during, reports)
        wait_until(lambda: all(f.done() for f in futures), "the delayed records failing", 60)
        c.set_latency(leader, 0)
        send_ours(producer, topic, after, reports)
        # Bounded: a wedged producer would fail these after delivery.timeout.ms.
        producer.flush(60)
    timed_out = {reports.by_value[v][0][0] for v in during}
    assert timed_out <= {"KafkaTimeoutError"}, timed_out
    assert all(reports.by_value[v][0][0] is None for v in before + after), \
        {v: reports.by_value[v] for v in after if reports.by_value[v][0][0] is not None}
    check(faulty, topic, before + during + after, reports, must_succeed=False)


def test_confluent_survives_a_leader_slower_than_the_message_timeout(faulty):
    c = faulty.cluster
    topic, leader = faulty.new_topic()
    reports = Reports()
    before, during, after = values(0, 5), values(5, 25), values(25, 45)
    child = ConfluentChild(faulty, topic, [before, during, after],
                           message_timeout_ms=3000, request_timeout_ms=1500)
    try:
        child.next_reports(reports)
        c.set_latency(leader, 60_000)
        child.go()
        child.next_reports(reports)
        c.set_latency(leader, 0)
        child.go()
        child.next_reports(reports)
    finally:
        child.close()
    assert not child.fatal, child.fatal
    assert {reports.by_value[v][0][0] for v in during} <= {"_MSG_TIMED_OUT", "_TIMED_OUT"}
    assert all(reports.by_value[v][0][0] is None for v in before + after)
    check(faulty, topic, before + during + after, reports, must_succeed=False)


# -- connections cut mid-stream ------------------------------------------------------------------

STREAM = 3000


def isolating(faulty, topic):
    """One cut: isolate the leader until another broker leads, heal it, and wait for it to be
    back in sync (so the next cut finds two in-sync replicas)."""
    c = faulty.cluster

    def cut_once(k, release):
        leader = c.leader_of(topic, 0)
        c.isolate(leader)
        try:
            c.wait_for_leader_change(topic, 0, leader)
        finally:
            c.heal(leader)
        c.wait_for_isr(topic, 0, range(1, BROKERS + 1), timeout_s=120)
    return cut_once


def cutting_frames(faulty, topic):
    """One cut: half of the next Produce request to the leader (odd cuts) or of a Produce
    response from it (even)."""
    def cut_once(k, release):
        proxy = faulty.proxies[faulty.cluster.leader_of(topic, 0)]
        before = proxy.connections
        done = proxy.cut_mid_request(0) if k % 2 else proxy.cut_mid_response(0)
        # The cut waits for the next Produce: let the stream go on past its gate, or a loaded
        # machine, where the producer reached the gate before the log reached the goal, would
        # send nothing more to be cut.
        release()
        assert done.wait(60), "no Produce went through the proxy to be cut"
        # The cut batch must be sent again: the producer comes back to the leader.
        wait_until(lambda: proxy.connections > before, "a new connection to the leader", 60)
    return cut_once


def cut_points(cuts):
    """Cut ``k`` starts once the log holds ``goals[k]`` records; the stream produces nothing
    past ``gates[k]`` until cut ``k`` is armed (over, for a cut that needs no traffic), so every
    cut falls inside the stream."""
    goals = [k * STREAM // (cuts + 2) for k in range(1, cuts + 1)]
    gates = [g + STREAM // (2 * (cuts + 2)) for g in goals]
    return goals, gates


def cuts_while_streaming(faulty, topic, cut_once, goals, gate_events):
    at = []
    for k, goal in enumerate(goals):
        wait_until(lambda g=goal: high_watermark(faulty.cluster, topic) >= g,
                   f"{goal} records in the log", 120, step_s=0.02)
        at.append(high_watermark(faulty.cluster, topic))
        cut_once(k + 1, gate_events[k].set)
        gate_events[k].set()
    return at


def stream(faulty, which, topic, cut_once, cuts):
    goals, gates = cut_points(cuts)
    reports = Reports()
    sent = values(0, STREAM)
    if which == "ours":
        gate_events = [threading.Event() for _ in gates]
        with ours(faulty, batch_size=2048, linger_ms=1, reconnect_backoff_ms=20,
                  reconnect_backoff_max_ms=200) as producer:
            done = threading.Event()

            def run():
                try:
                    for i in range(0, STREAM, 10):
                        for gate, event in zip(gates, gate_events, strict=True):
                            if i <= gate < i + 10:
                                event.wait(300)
                        send_ours(producer, topic, sent[i:i + 10], reports)
                        time.sleep(0.01)  # paced, so the cuts fall inside the stream
                finally:
                    done.set()

            t = threading.Thread(target=run, daemon=True)
            t.start()
            try:
                cuts_while_streaming(faulty, topic, cut_once, goals, gate_events)
            finally:
                for event in gate_events:
                    event.set()
                t.join(300)
            producer.flush(150)
    else:
        context = multiprocessing.get_context("forkserver")
        gate_events = [context.Event() for _ in gates]
        child = ConfluentChild(faulty, topic, [sent], dict(zip(gates, gate_events, strict=True)),
                               _pace_s=0.001, linger_ms=1, batch_num_messages=10,
                               reconnect_backoff_ms=20, reconnect_backoff_max_ms=200)
        try:
            try:
                cuts_while_streaming(faulty, topic, cut_once, goals, gate_events)
            finally:
                for event in gate_events:
                    event.set()
            child.next_reports(reports)
        finally:
            child.close()
        assert not child.fatal, child.fatal
    check(faulty, topic, sent, reports, must_succeed=True)


@pytest.mark.parametrize("which", PRODUCERS)
def test_survives_connections_cut_by_isolating_the_leader(faulty, which):
    topic, _ = faulty.new_topic()
    stream(faulty, which, topic, isolating(faulty, topic), cuts=2)


@pytest.mark.parametrize("which", PRODUCERS)
def test_survives_connections_to_the_leader_cut_inside_requests_and_responses(faulty, which):
    topic, _ = faulty.new_topic()
    stream(faulty, which, topic, cutting_frames(faulty, topic), cuts=4)
