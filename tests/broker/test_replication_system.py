"""Kafka's replication system test on our cluster: a stream of 100,000 keyed records, idempotent
and acks=all, into a topic with replication factor 3 and ``min.insync.replicas=2`` on three
brokers, while the leader of a partition is SIGKILLed five times (and restarted once it has been
replaced) and one broker is cut off for 30 s.

Judged as Kafka's ``replication_test.py`` judges it: every record is reported exactly once, within
``delivery.timeout.ms``; confluent-kafka (in a child process) reads back every acknowledged record
once, at the offset it was acknowledged at, and each key's records in send order.  The same
scenario produced by confluent-kafka is the control that checks the cluster itself.

The faults follow the stream's progress (fault ``k`` starts once ``TRIGGERS[k]`` records have been
reported), and the stream waits for each fault to be over before it runs past ``GATES[k]``.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
import time

import pytest
from readback import read_confluent
from support.replication_stream import (
    KEYS,
    RECORDS,
    StreamResult,
    confluent_stream,
    key_of,
    run_stream,
    value_of,
)
from support.topics import new_replicated_topic

from kafkacore import KafkaProducer
from kafkacore.testing.cluster import Cluster

PARTITIONS = 6
WINDOW = 2_500  # records outstanding at most
ISOLATION_S = 30.0
#: the faults, in order; the isolation comes third, between kills
FAULTS = ["kill", "kill", "isolate", "kill", "kill", "kill"]
KILLS = FAULTS.count("kill")
TRIGGERS = [RECORDS * (k + 1) // (len(FAULTS) + 2) for k in range(len(FAULTS))]
GATES = [t + 4 * WINDOW for t in TRIGGERS]
DELIVERY_TIMEOUT_MS = 120_000
#: the Sender expires batches on its own poll, up to a request timeout's worth late
REPORT_GRACE_S = 35.0
BOUND_S = 600.0


def wait_for_full_isr(cluster: Cluster, topic: str) -> None:
    for p in range(PARTITIONS):
        cluster.wait_for_isr(topic, p, [1, 2, 3], timeout_s=120)


class FaultDriver(threading.Thread):
    """Runs ``FAULTS`` as the stream reaches ``TRIGGERS``; sets ``gates[k]`` when fault ``k``
    is over (the broker back and every partition's ISR full again)."""

    def __init__(self, cluster: Cluster, topic: str, completed, gates, stream_over) -> None:
        super().__init__(name="fault-driver", daemon=True)
        self.cluster, self.topic = cluster, topic
        self.completed, self.gates, self.stream_over = completed, gates, stream_over
        self.error: BaseException | None = None
        self.log: list[str] = []

    def run(self) -> None:
        try:
            for k, (fault, trigger) in enumerate(zip(FAULTS, TRIGGERS, strict=True)):
                deadline = time.monotonic() + BOUND_S
                while self.completed.value < trigger:
                    if self.stream_over.is_set() or time.monotonic() > deadline:
                        raise AssertionError(f"the stream stopped at {self.completed.value} "
                                             f"reports, before fault {k} at {trigger}")
                    time.sleep(0.01)
                self._fault(k, fault)
                self.gates[k].set()
        except BaseException as e:  # the test raises it; open the gates so the stream ends
            self.error = e
            for gate in self.gates:
                gate.set()

    def _fault(self, k: int, fault: str) -> None:
        c, partition = self.cluster, k % PARTITIONS
        start, reports = time.monotonic(), self.completed.value
        victim = c.leader_of(self.topic, partition)
        if fault == "kill":
            c.kill(victim)
            try:
                new = c.wait_for_leader_change(self.topic, partition, victim)
            finally:
                c.restart(victim)
        else:
            c.isolate(victim)
            try:
                new = c.wait_for_leader_change(self.topic, partition, victim)
                # the fault's length is the scenario's, not an assertion's
                time.sleep(max(0.0, ISOLATION_S - (time.monotonic() - start)))
            finally:
                c.heal(victim)
        wait_for_full_isr(c, self.topic)
        self.log.append(f"{fault} broker {victim} (leader of {self.topic}-{partition}) at "
                        f"{reports} reports: leader -> {new}, back in sync after "
                        f"{time.monotonic() - start:.1f} s")


def run_scenario(cluster: Cluster, produce) -> tuple[str, StreamResult, FaultDriver]:
    """``produce(topic, completed, gates)`` runs the stream and returns its result."""
    topic = new_replicated_topic(cluster, PARTITIONS, timeout_s=120)
    context = multiprocessing.get_context("forkserver")
    completed = context.Value("q", 0, lock=False)
    gates = [context.Event() for _ in FAULTS]
    stream_over = threading.Event()
    driver = FaultDriver(cluster, topic, completed, gates, stream_over)
    driver.start()
    try:
        result = produce(topic, completed, gates)
    finally:
        stream_over.set()
        driver.join(BOUND_S)
    assert not driver.is_alive()
    if driver.error is not None:
        raise driver.error
    assert len(driver.log) == len(FAULTS)
    return topic, result, driver


def check(cluster: Cluster, topic: str, result: StreamResult, driver: FaultDriver,
          name: str) -> None:
    # Every record reported exactly once, within delivery.timeout.ms.
    missing = [i for i, n in enumerate(result.reports) if n == 0]
    twice = [i for i, n in enumerate(result.reports) if n > 1]
    assert not missing, f"{len(missing)} records never reported, first {missing[:5]}"
    assert not twice, f"{len(twice)} records reported more than once, first {twice[:5]}"
    slowest = max(result.latency)
    assert slowest <= DELIVERY_TIMEOUT_MS / 1000 + REPORT_GRACE_S, slowest
    # With one broker down at a time and two replicas in sync, nothing has to fail.
    assert not result.errors, (f"{len(result.errors)} records failed, e.g. "
                               f"{list(result.errors.items())[:5]}")
    # Read back by confluent-kafka: 0 lost acknowledged, 0 duplicates, order per key kept.
    rows = read_confluent(cluster.bootstrap_servers, topic, PARTITIONS, RECORDS, timeout_s=180)
    at: dict[tuple[int, int], bytes] = {}
    seen: dict[bytes, int] = {}
    for row in rows:
        at[(row.partition, row.offset)] = row.value
        seen[row.value] = seen.get(row.value, 0) + 1
        assert row.key == key_of(int(row.value)), row
    duplicates = {v: n for v, n in seen.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} records read back more than once"
    lost = [i for i in range(RECORDS)
            if at.get((result.partition[i], result.offset[i])) != value_of(i)]
    assert not lost, (f"{len(lost)} acknowledged records not at their offset, first "
                      f"{[(i, result.partition[i], result.offset[i]) for i in lost[:5]]}")
    last_seq: dict[int, int] = {}
    home: dict[int, int] = {}
    for (partition, offset) in sorted(at):
        i = int(at[(partition, offset)])
        key, seq = i % KEYS, i // KEYS
        assert home.setdefault(key, partition) == partition, f"key {key} in two partitions"
        assert seq > last_seq.get(key, -1), f"key {key} out of order at {partition}/{offset}"
        last_seq[key] = seq
    print(f"\n{name}: {RECORDS} records, {len(rows)} read back, {KILLS} kills + "
          f"{ISOLATION_S:.0f} s isolation, stream {result.elapsed_s:.1f} s, slowest report "
          f"{slowest:.1f} s, 0 failed, 0 lost, 0 duplicates")
    for line in driver.log:
        print("  " + line)


@pytest.mark.cluster
@pytest.mark.slow  # about 70 s (TESTING.md, Tiers)
@pytest.mark.timeout(900)
def test_our_producer_loses_and_duplicates_nothing_through_kills_and_an_isolation(cluster):
    def produce(topic, completed, gates):
        result = StreamResult(RECORDS)

        def on_report(i):
            def callback(metadata, exception):
                if exception is None:
                    result.report(i, metadata.partition, metadata.offset, None)
                else:
                    result.report(i, -1, -1, exception)
                completed.value += 1  # only the producer's I/O thread writes it
            return callback

        with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                           enable_idempotence=True, linger_ms=5,
                           delivery_timeout_ms=DELIVERY_TIMEOUT_MS) as producer:
            def send(i):
                producer.send(topic, value=value_of(i), key=key_of(i), callback=on_report(i))

            start = time.monotonic()
            run_stream(send, time.sleep, completed, gates, GATES, WINDOW, BOUND_S, result)
            producer.flush(BOUND_S)
            result.elapsed_s = time.monotonic() - start
        return result

    topic, result, driver = run_scenario(cluster, produce)
    check(cluster, topic, result, driver, "kafkacore")


@pytest.mark.cluster
@pytest.mark.slow  # about 70 s (TESTING.md, Tiers)
@pytest.mark.timeout(900)
def test_confluent_kafka_control_loses_and_duplicates_nothing_on_the_same_cluster(cluster,
                                                                                  tmp_path):
    out = str(tmp_path / "confluent.pickle")

    def produce(topic, completed, gates):
        context = multiprocessing.get_context("forkserver")
        child = context.Process(target=confluent_stream, args=(
            cluster.bootstrap_servers, topic, completed, gates, GATES, WINDOW, BOUND_S,
            DELIVERY_TIMEOUT_MS, out))
        child.start()
        child.join(BOUND_S + 60)
        if child.is_alive():
            child.kill()
            child.join(10)
            raise AssertionError("the confluent-kafka producer did not finish")
        assert child.exitcode == 0, child.exitcode
        assert os.path.exists(out)
        with open(out, "rb") as f:
            data = pickle.load(f)
        assert data["unflushed"] == 0
        print(f"\nconfluent-kafka error_cb: {data['client_errors'][:10]}")
        return data["result"]

    topic, result, driver = run_scenario(cluster, produce)
    check(cluster, topic, result, driver, "confluent-kafka")
