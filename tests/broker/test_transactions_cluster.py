"""Transactions on a 3-broker cluster (topics with replication factor 3, min.insync.replicas 2),
judged by confluent-kafka's, kafka-python's and aiokafka's transactional producers and by
confluent-kafka's and kafka-python's consumers: commits and aborts; markers written by the
coordinator to leaders on other brokers; a transaction that survives the SIGKILL of its
coordinator (the next leader of its ``__transaction_state`` partition loads the Ongoing state
from its replica and commits it); a zombie producer fenced; a transaction left open by a
SIGKILLed producer aborted by the coordinator after its timeout; transaction version 2's
Produce v12, whose leaders add their partitions through a coordinator on another broker.
See docs/broker/transactions.rst.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import uuid

import pytest
from readback import read_confluent, read_kafka_python
from waits import wait_until

from kafkacore.admin import create_topics
from kafkacore.broker.group.group_metadata_manager import partition_for
from kafkacore.broker.transaction.transaction_state_manager import TRANSACTION_STATE_TOPIC
from kafkacore.testing.cluster import Cluster

PARTITIONS = 3
TXN_PARTITIONS = 5  # fewer than Kafka's 50 transaction.state.log.num.partitions: a faster start
COMMITTED = {"isolation.level": "read_committed"}
UNCOMMITTED = {"isolation.level": "read_uncommitted"}

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with Cluster(3, log_dir=tmp_path_factory.mktemp("transactions"),
                 config={"transaction.state.log.num.partitions": str(TXN_PARTITIONS),
                         "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}
                 ) as c:
        yield c


def new_topic(cluster: Cluster) -> str:
    name = f"txn-{uuid.uuid4().hex[:10]}"
    assert create_topics(cluster.bootstrap_servers, {name: PARTITIONS}, replication_factor=3,
                         configs={"min.insync.replicas": "2"}) == {name: 0}
    for p in range(PARTITIONS):
        cluster.wait_for_isr(name, p, [1, 2, 3])
    cluster.wait_for_topic(name)
    return name


def transactional_producer(cluster: Cluster, transactional_id: str):
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "transactional.id": transactional_id, "linger.ms": 5,
                         "message.timeout.ms": 60000})
    producer.init_transactions(60)
    return producer


def send(producer, topic: str, values: list[bytes]) -> None:
    for i, v in enumerate(values):
        producer.produce(topic, v, partition=i % PARTITIONS)
    assert producer.flush(60) == 0


def values_of(consumed) -> list[bytes]:
    return sorted(c.value for c in consumed)


def check_read_back(cluster: Cluster, topic: str, committed: list[bytes],
                    everything: list[bytes]) -> None:
    for reader, committed_config, uncommitted_config in (
        (read_confluent, COMMITTED, UNCOMMITTED),
        (read_kafka_python, {"isolation_level": "read_committed"},
         {"isolation_level": "read_uncommitted"}),
    ):
        got = reader(cluster.bootstrap_servers, topic, PARTITIONS, len(committed),
                     config=committed_config)
        assert values_of(got) == sorted(committed), reader.__name__
        got = reader(cluster.bootstrap_servers, topic, PARTITIONS, len(everything),
                     config=uncommitted_config)
        assert values_of(got) == sorted(everything), reader.__name__


def test_commit_and_abort_on_replicated_partitions(cluster):
    topic = new_topic(cluster)
    producer = transactional_producer(cluster, f"tx-{topic}")
    committed = [b"committed-%d" % i for i in range(12)]
    aborted = [b"aborted-%d" % i for i in range(6)]
    producer.begin_transaction()
    send(producer, topic, committed[:6])
    producer.commit_transaction(60)
    producer.begin_transaction()
    send(producer, topic, aborted)
    producer.abort_transaction(60)
    producer.begin_transaction()
    send(producer, topic, committed[6:])
    producer.commit_transaction(60)
    check_read_back(cluster, topic, committed, committed + aborted)


def test_an_open_transaction_survives_its_coordinator_being_killed(cluster):
    topic = new_topic(cluster)
    txn_id = f"tx-{topic}"
    producer = transactional_producer(cluster, txn_id)
    txn_partition = partition_for(txn_id, TXN_PARTITIONS)
    coordinator = cluster.leader_of(TRANSACTION_STATE_TOPIC, txn_partition)
    producer.begin_transaction()
    send(producer, topic, [b"before-kill-%d" % i for i in range(3)])
    cluster.kill(coordinator)
    try:
        cluster.wait_for_leader_change(TRANSACTION_STATE_TOPIC, txn_partition, coordinator)
        send(producer, topic, [b"after-kill-%d" % i for i in range(3)])
        producer.commit_transaction(120)
    finally:
        cluster.restart(coordinator)
    committed = [b"before-kill-%d" % i for i in range(3)] + [b"after-kill-%d" % i
                                                             for i in range(3)]
    check_read_back(cluster, topic, committed, committed)


def test_kafka_python_and_aiokafka_producers_commit_and_abort(cluster):
    from aiokafka import AIOKafkaProducer
    from kafka import KafkaProducer

    topic = new_topic(cluster)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                             transactional_id=f"tx-kp-{topic}")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, b"kp-committed-%d" % i, partition=i % PARTITIONS)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, b"kp-aborted-%d" % i, partition=i % PARTITIONS)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close()

    async def aiokafka_transactions() -> None:
        aio = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                               transactional_id=f"tx-aio-{topic}")
        await aio.start()
        try:
            async with aio.transaction():
                for i in range(3):
                    await aio.send_and_wait(topic, b"aio-committed-%d" % i,
                                            partition=i % PARTITIONS)
            await aio.begin_transaction()
            for i in range(3):
                await aio.send_and_wait(topic, b"aio-aborted-%d" % i, partition=i % PARTITIONS)
            await aio.abort_transaction()
        finally:
            await aio.stop()

    asyncio.run(aiokafka_transactions())
    committed = [b"%s-committed-%d" % (who, i) for who in (b"kp", b"aio") for i in range(3)]
    aborted = [b"%s-aborted-%d" % (who, i) for who in (b"kp", b"aio") for i in range(3)]
    check_read_back(cluster, topic, committed, committed + aborted)


def test_a_zombie_producer_is_fenced(cluster):
    from confluent_kafka import KafkaError, KafkaException

    topic = new_topic(cluster)
    txn_id = f"tx-{topic}"
    zombie = transactional_producer(cluster, txn_id)
    zombie.begin_transaction()
    send(zombie, topic, [b"zombie-%d" % i for i in range(3)])
    successor = transactional_producer(cluster, txn_id)
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(60)
    error = raised.value.args[0]
    assert error.code() == KafkaError._FENCED and error.fatal(), error
    successor.begin_transaction()
    send(successor, topic, [b"successor-0"])
    successor.commit_transaction(60)
    check_read_back(cluster, topic, [b"successor-0"],
                    [b"successor-0"] + [b"zombie-%d" % i for i in range(3)])


def _open_a_transaction_and_die(bootstrap: str, topic: str, transactional_id: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 3000, "message.timeout.ms": 3000})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, b"left-open-%d" % i, partition=i % PARTITIONS)
    assert producer.flush(60) == 0
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_killed_producers_transaction_is_aborted_after_its_timeout(cluster):
    from kafka import KafkaConsumer, TopicPartition

    topic = new_topic(cluster)
    child = multiprocessing.get_context("forkserver").Process(
        target=_open_a_transaction_and_die,
        args=(cluster.bootstrap_servers, topic, f"tx-{topic}"))
    child.start()
    child.join(120)
    assert child.exitcode == -signal.SIGKILL

    def end_offsets(isolation: str) -> dict[int, int]:
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                                 isolation_level=isolation)
        try:
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            return {tp.partition: o for tp, o in consumer.end_offsets(tps).items()}
        finally:
            consumer.close()

    wait_until(lambda: end_offsets("read_committed") == end_offsets("read_uncommitted"),
               what="the coordinator aborting the transaction", bound_s=60, step_s=0.5)
    later = transactional_producer(cluster, f"tx-later-{topic}")
    later.begin_transaction()
    send(later, topic, [b"later"])
    later.commit_transaction(60)
    check_read_back(cluster, topic, [b"later"],
                    [b"later"] + [b"left-open-%d" % i for i in range(3)])


def test_transaction_version_2_leaders_add_their_partitions_through_the_coordinator(cluster):
    """KIP-890 part 2 across brokers: Produce v12 to each partition's leader (two of them not
    the coordinator), which adds the partition through the coordinator's AddPartitionsToTxn;
    EndTxn v5 bumps the epoch; a late batch of the old epoch is refused on every leader."""
    from test_transactions_v2 import TransactionV2Client

    from kafkacore.errors import Errors

    topic = new_topic(cluster)
    txn_id = f"tx-{topic}"
    clients = {b: TransactionV2Client(cluster.broker_address(b), txn_id, topic)
               for b in (1, 2, 3)}
    try:
        clients[1].find_coordinator()
        coordinator = cluster.leader_of(TRANSACTION_STATE_TOPIC,
                                        partition_for(txn_id, TXN_PARTITIONS))
        leaders = {p: cluster.leader_of(topic, p) for p in range(PARTITIONS)}
        others = [b for b in (1, 2, 3) if b != coordinator]
        for p in (0, 1):  # two partitions led by brokers other than the coordinator
            if leaders[p] == coordinator:
                cluster.move_leader(topic, p, others[p])
                leaders[p] = others[p]
        pid, epoch = clients[coordinator].init()
        for p, leader in leaders.items():
            assert clients[leader].produce(pid, epoch, 0, b"v2-%d" % p, p) == Errors.NONE
        assert clients[coordinator].end(pid, epoch, True) == (Errors.NONE, pid, epoch + 1)
        # Read back first: then every partition has its marker (epoch + 1).
        got = read_confluent(cluster.bootstrap_servers, topic, PARTITIONS, PARTITIONS,
                             config=COMMITTED)
        assert values_of(got) == [b"v2-0", b"v2-1", b"v2-2"]
        for p, leader in leaders.items():
            assert clients[leader].produce(pid, epoch, 1, b"late", p) \
                == Errors.INVALID_PRODUCER_EPOCH
    finally:
        for client in clients.values():
            client.close()
