"""Transactions written the way the Spark sink writes them (kafkacore/spark/sink.py
``_write_exactly_once``: a new producer per transaction with the same transactional id,
init_transactions, begin, a record to every partition, send_offsets_to_transaction, commit,
close), on a 3-broker cluster (RF 3, min.insync.replicas 2) whose brokers are SIGKILLed and
restarted while the transactions go on: the leader of the output topic's partition 0, then the
coordinator of the transactional ids.

Nothing but a newer producer of the same id may fence a producer, and a failover is no reason for
a transaction to fail: no transaction fails (no INVALID_PRODUCER_EPOCH, no PRODUCER_FENCED, no
timeout), and a read_committed consumer (confluent-kafka) reads each committed transaction's
records exactly once.

Each transaction of a producer starts on every partition with several requests in flight, each
verified with the coordinator (KIP-890) before its batches are written: a later request verified
first must not be written before the first (see test_producer_state's verification tests).  It
was, on a partition that knew no epoch of the producer (its first transaction there): the first
batches were then out of sequence for good, the producer retried them until the coordinator
aborted the transaction at transaction.timeout.ms, and the retry after that abort was answered
INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from readback import read_confluent

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.broker.group.group_metadata_manager import partition_for
from kafkacore.broker.transaction.transaction_state_manager import TRANSACTION_STATE_TOPIC
from kafkacore.testing.cluster import Cluster

PARTITIONS = 3
TXN_PARTITIONS = 50  # Kafka's default, as the demo's cluster: the ids spread over the brokers
IDS = 8  # transactional ids written at once, as Spark tasks do
RECORDS = 500  # per partition and transaction: several requests per partition
COMMITTED = {"isolation.level": "read_committed"}

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with Cluster(3, log_dir=tmp_path_factory.mktemp("transactions-failover")) as c:
        yield c


class Writer(threading.Thread):
    """One transactional id's transactions, one new producer each, until told to stop: the
    committed transactions' numbers, and every error a transaction ended with."""

    def __init__(self, bootstrap: str, topic: str, transactional_id: str) -> None:
        super().__init__(name=f"writer-{transactional_id}", daemon=True)
        self.bootstrap = bootstrap
        self.topic = topic
        self.transactional_id = transactional_id
        self.committed: list[int] = []
        self.errors: list[tuple[int, str, BaseException]] = []
        self.stopping = threading.Event()
        # Lock order: leaf. Guards the condition's count.
        self.progress = threading.Condition()

    def run(self) -> None:
        n = 0
        while not self.stopping.is_set():
            self.transaction(n)
            n += 1

    def transaction(self, n: int) -> None:
        producer = KafkaProducer(bootstrap_servers=self.bootstrap,
                                 transactional_id=self.transactional_id, linger_ms=5)
        stage = "init_transactions"
        try:
            producer.init_transactions(120)
            stage = "send"
            producer.begin_transaction()
            futures = [producer.send(self.topic, b"%s-%d-%d-%d" % (
                self.transactional_id.encode(), n, p, i), partition=p)
                for i in range(RECORDS) for p in range(PARTITIONS)]
            producer.flush(120)
            for f in futures:
                f.get(120)
            stage = "send_offsets_to_transaction"
            producer.send_offsets_to_transaction({(self.topic, 0): (n + 1, None)},
                                                 self.transactional_id, 120)
            stage = "commit_transaction"
            producer.commit_transaction(120)
            with self.progress:
                self.committed.append(n)
                self.progress.notify_all()
        except Exception as exc:  # recorded, judged by the test
            self.errors.append((n, stage, exc))
            try:
                producer.abort_transaction(1.0)
            except Exception:  # fenced or never begun: the next init_transactions settles it
                pass
        finally:
            producer.close(0)

    def wait_for_commits(self, count: int, bound_s: float = 120.0) -> None:
        with self.progress:
            reached = self.progress.wait_for(lambda: len(self.committed) >= count
                                             or not self.is_alive(), bound_s)
        assert reached and len(self.committed) >= count, (
            f"{self.transactional_id}: {len(self.committed)} of {count} transactions "
            f"committed; errors {self.errors}")


def test_the_newest_producer_of_an_id_is_not_fenced_through_failovers(cluster):
    topic = f"txn-failover-{uuid.uuid4().hex[:8]}"
    assert create_topics(cluster.bootstrap_servers, {topic: PARTITIONS}, replication_factor=3,
                         configs={"min.insync.replicas": "2"}) == {topic: 0}
    for p in range(PARTITIONS):
        cluster.wait_for_isr(topic, p, [1, 2, 3])
    cluster.wait_for_topic(topic)
    prefix = uuid.uuid4().hex[:6]
    writers = [Writer(cluster.bootstrap_servers, topic, f"sink-{prefix}-{i}")
               for i in range(IDS)]
    for w in writers:
        w.start()
    try:
        for w in writers:
            w.wait_for_commits(3)
        # the leader of the output's partition 0, then the coordinator of each id, one broker
        # at a time (the ids of one broker lose their coordinator together)
        victims = [("leader", topic)]
        for w in writers:
            victims.append(("coordinator", w.transactional_id))
        killed: set[int] = set()
        for kind, name in victims:
            broker = cluster.leader_of(topic, 0) if kind == "leader" else cluster.leader_of(
                TRANSACTION_STATE_TOPIC, partition_for(name, TXN_PARTITIONS))
            if kind == "coordinator" and broker in killed:
                continue
            killed.add(broker)
            before = [len(w.committed) for w in writers]
            for w, b in zip(writers, before, strict=True):  # kill while transactions go on
                w.wait_for_commits(b + 1)
            cluster.kill(broker)
            for w, b in zip(writers, before, strict=True):  # they go on without it
                w.wait_for_commits(b + 3)
            cluster.restart(broker)
            cluster.wait_for_brokers()
            for p in range(PARTITIONS):
                cluster.wait_for_isr(topic, p, [1, 2, 3])
            before = [len(w.committed) for w in writers]
            for w, b in zip(writers, before, strict=True):  # and with it back
                w.wait_for_commits(b + 2)
    finally:
        for w in writers:
            w.stopping.set()
        for w in writers:
            w.join(180)
    fenced = [(w.transactional_id, n, stage, repr(exc)) for w in writers
              for n, stage, exc in w.errors]
    assert not fenced, fenced
    expected = sorted(b"%s-%d-%d-%d" % (w.transactional_id.encode(), n, p, i)
                      for w in writers for n in w.committed for p in range(PARTITIONS)
                      for i in range(RECORDS))
    consumed = read_confluent(cluster.bootstrap_servers, topic, PARTITIONS, len(expected),
                              timeout_s=120, config=COMMITTED)
    assert sorted(c.value for c in consumed) == expected
