"""Transactions on a 3-broker cluster (topics with replication factor 3, min.insync.replicas 2),
judged by confluent-kafka's transactional producer and confluent-kafka's and kafka-python's
consumers: commits and aborts; markers written by the coordinator to leaders on other brokers;
a transaction that survives the SIGKILL of its coordinator (the next leader of its
``__transaction_state`` partition loads the Ongoing state from its replica and commits it).
See docs/broker/transactions.rst.
"""

from __future__ import annotations

import pytest
from readback import read_confluent, read_kafka_python
from support.topics import new_replicated_topic

from kafkacore.broker import Cluster
from kafkacore.broker.group_metadata_manager import partition_for
from kafkacore.broker.transaction.transaction_state_manager import TRANSACTION_STATE_TOPIC

PARTITIONS = 3
TXN_PARTITIONS = 5  # transaction.state.log.num.partitions of the session cluster (pyproject.toml)
COMMITTED = {"isolation.level": "read_committed"}
UNCOMMITTED = {"isolation.level": "read_uncommitted"}

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


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
    topic = new_replicated_topic(cluster, PARTITIONS)
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
    topic = new_replicated_topic(cluster, PARTITIONS)
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
