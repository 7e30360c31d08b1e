"""Transactions on our broker (one broker), judged by clients we did not write.

confluent-kafka's transactional producer commits and aborts; confluent-kafka's and
kafka-python's read_committed consumers see exactly the committed records, read_uncommitted ones
see them all; an open transaction holds the last stable offset back (Fetch and ListOffsets);
a second producer with the same transactional id fences the first; the coordinator answers bad
requests with Kafka's error codes.  See docs/broker/transactions.rst.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal

import pytest
from readback import read_confluent, read_kafka_python
from support.topics import new_topic
from waits import wait_until

from kafkacore.testing import LocalBroker

PARTITIONS = 2
COMMITTED = {"isolation.level": "read_committed"}
UNCOMMITTED = {"isolation.level": "read_uncommitted"}


#: the coordinator looks for transactions past their timeout this often (Kafka: 10 s)
ABORT_INTERVAL_MS = "200"


@pytest.fixture(scope="module")
def ours():
    with LocalBroker(kind="kafkacore", config={
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": ABORT_INTERVAL_MS,
    }) as broker:
        yield broker


def transactional_producer(bootstrap: str, transactional_id: str, **config):
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "linger.ms": 5, **config})
    producer.init_transactions(30)
    return producer


def send(producer, topic: str, values: list[bytes]) -> None:
    """Produce into the open transaction and wait until the broker has every record (librdkafka
    drops unsent records on abort; these must reach the log)."""
    for i, v in enumerate(values):
        producer.produce(topic, v, partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def values_of(consumed) -> list[bytes]:
    return sorted(c.value for c in consumed)


def committed_end_offsets(bootstrap: str, topic: str, isolation: str) -> dict[int, int]:
    """ListOffsets LATEST as kafka-python asks it, under ``isolation``."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return {tp.partition: o for tp, o in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def test_commit_and_abort_seen_by_both_isolation_levels(ours):
    topic = new_topic(ours, PARTITIONS)
    producer = transactional_producer(ours.bootstrap, f"tx-{topic}")
    committed = [b"committed-%d" % i for i in range(10)]
    aborted = [b"aborted-%d" % i for i in range(6)]
    producer.begin_transaction()
    send(producer, topic, committed[:5])
    producer.commit_transaction(30)
    producer.begin_transaction()
    send(producer, topic, aborted)
    producer.abort_transaction(30)
    producer.begin_transaction()
    send(producer, topic, committed[5:])
    producer.commit_transaction(30)

    everything = sorted(committed + aborted)
    for reader, committed_config, uncommitted_config in (
        (read_confluent, COMMITTED, UNCOMMITTED),
        (read_kafka_python, {"isolation_level": "read_committed"},
         {"isolation_level": "read_uncommitted"}),
    ):
        got = reader(ours.bootstrap, topic, PARTITIONS, len(committed), config=committed_config)
        assert values_of(got) == sorted(committed), reader.__name__
        got = reader(ours.bootstrap, topic, PARTITIONS, len(everything),
                     config=uncommitted_config)
        assert values_of(got) == everything, reader.__name__
    # Every transaction is ended: the LSO is the high watermark on both partitions.
    assert committed_end_offsets(ours.bootstrap, topic, "read_committed") == \
        committed_end_offsets(ours.bootstrap, topic, "read_uncommitted")


def test_an_open_transaction_holds_the_last_stable_offset(ours):
    topic = new_topic(ours, PARTITIONS)
    plain = transactional_producer(ours.bootstrap, f"tx-before-{topic}")
    plain.begin_transaction()
    send(plain, topic, [b"before-0", b"before-1"])
    plain.commit_transaction(30)
    hw_before = committed_end_offsets(ours.bootstrap, topic, "read_uncommitted")

    producer = transactional_producer(ours.bootstrap, f"tx-{topic}")
    producer.begin_transaction()
    send(producer, topic, [b"open-0", b"open-1"])
    # The open records are in the log (read_uncommitted sees them) but past the LSO.
    got = read_confluent(ours.bootstrap, topic, PARTITIONS, 4, config=UNCOMMITTED)
    assert values_of(got) == [b"before-0", b"before-1", b"open-0", b"open-1"]
    assert committed_end_offsets(ours.bootstrap, topic, "read_committed") == hw_before
    assert committed_end_offsets(ours.bootstrap, topic, "read_uncommitted") != hw_before
    got = read_kafka_python(ours.bootstrap, topic, PARTITIONS, 2,
                            config={"isolation_level": "read_committed"})
    assert values_of(got) == [b"before-0", b"before-1"]

    producer.commit_transaction(30)
    wait_until(lambda: committed_end_offsets(ours.bootstrap, topic, "read_committed")
               == committed_end_offsets(ours.bootstrap, topic, "read_uncommitted"),
               what="the LSO reaching the high watermark")
    got = read_confluent(ours.bootstrap, topic, PARTITIONS, 4, config=COMMITTED)
    assert values_of(got) == [b"before-0", b"before-1", b"open-0", b"open-1"]


def test_a_second_producer_fences_the_first(ours):
    from confluent_kafka import KafkaError, KafkaException

    topic = new_topic(ours, PARTITIONS)
    txn_id = f"tx-{topic}"
    zombie = transactional_producer(ours.bootstrap, txn_id)
    zombie.begin_transaction()
    send(zombie, topic, [b"zombie-0", b"zombie-1"])

    # The new producer's InitProducerId aborts the zombie's open transaction and fences it.
    successor = transactional_producer(ours.bootstrap, txn_id)
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(30)
    error = raised.value.args[0]
    assert error.code() == KafkaError._FENCED and error.fatal(), error

    successor.begin_transaction()
    send(successor, topic, [b"successor-0"])
    successor.commit_transaction(30)
    everything = read_confluent(ours.bootstrap, topic, PARTITIONS, 3, config=UNCOMMITTED)
    assert values_of(everything) == [b"successor-0", b"zombie-0", b"zombie-1"]
    for reader, config in ((read_confluent, COMMITTED),
                           (read_kafka_python, {"isolation_level": "read_committed"})):
        got = reader(ours.bootstrap, topic, PARTITIONS, 1, config=config)
        assert values_of(got) == [b"successor-0"], reader.__name__


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int | None]:
    """The group's committed offsets as confluent-kafka's consumer reads them."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        got = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 30)
        return {tp.partition: (tp.offset if tp.offset >= 0 else None) for tp in got}
    finally:
        consumer.close()


def test_offsets_sent_to_a_transaction_count_only_when_it_commits(ours):
    from confluent_kafka import Consumer, TopicPartition

    topic = new_topic(ours, PARTITIONS)
    group = f"g-{topic}"
    consumer = Consumer({"bootstrap.servers": ours.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        producer = transactional_producer(ours.bootstrap, f"tx-{topic}")
        producer.begin_transaction()
        send(producer, topic, [b"out-0"])
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 7), TopicPartition(topic, 1, 3)],
            consumer.consumer_group_metadata(), 30)
        producer.abort_transaction(30)
        assert committed_offsets(ours.bootstrap, group, topic) == {0: None, 1: None}

        producer.begin_transaction()
        send(producer, topic, [b"out-1"])
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 2)],
            consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
    finally:
        consumer.close()
    assert committed_offsets(ours.bootstrap, group, topic) == {0: 5, 1: 2}
    got = read_confluent(ours.bootstrap, topic, PARTITIONS, 1, config=COMMITTED)
    assert values_of(got) == [b"out-1"]


def test_transactional_offsets_survive_a_restart(tmp_path):
    """The pending offsets and the markers are read back from __consumer_offsets."""
    from confluent_kafka import Consumer, TopicPartition

    with LocalBroker(kind="kafkacore", log_dirs=tmp_path) as broker:
        topic = new_topic(broker, PARTITIONS)
        group = f"g-{topic}"
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                             "enable.auto.commit": False})
        try:
            producer = transactional_producer(broker.bootstrap, f"tx-{topic}")
            # The aborted commit is the later one: read naively, it would win.
            for offset, end in ((4, producer.commit_transaction),
                                (9, producer.abort_transaction)):
                producer.begin_transaction()
                send(producer, topic, [b"x"])
                producer.send_offsets_to_transaction(
                    [TopicPartition(topic, 0, offset)], consumer.consumer_group_metadata(), 30)
                end(30)
        finally:
            consumer.close()
        broker.restart()
        assert committed_offsets(broker.bootstrap, group, topic) == {0: 4, 1: None}


def _open_a_transaction_and_die(bootstrap: str, topic: str, transactional_id: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 2000, "message.timeout.ms": 2000})
    producer.init_transactions(30)
    producer.begin_transaction()
    send(producer, topic, [b"left-open-0", b"left-open-1"])
    os.kill(os.getpid(), signal.SIGKILL)  # no abort, no goodbye


def test_a_transaction_left_open_is_aborted_after_its_timeout(ours):
    topic = new_topic(ours, PARTITIONS)
    child = multiprocessing.get_context("forkserver").Process(
        target=_open_a_transaction_and_die, args=(ours.bootstrap, topic, f"tx-{topic}"))
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    got = read_confluent(ours.bootstrap, topic, PARTITIONS, 2, config=UNCOMMITTED)
    assert values_of(got) == [b"left-open-0", b"left-open-1"]
    # The coordinator aborts it by itself: the ABORT markers let the LSO reach the HW.
    wait_until(lambda: committed_end_offsets(ours.bootstrap, topic, "read_committed")
               == committed_end_offsets(ours.bootstrap, topic, "read_uncommitted"),
               bound_s=30, what="the coordinator aborting the transaction")
    other = transactional_producer(ours.bootstrap, f"tx-other-{topic}")
    other.begin_transaction()
    send(other, topic, [b"later"])
    other.commit_transaction(30)
    for reader, config in ((read_confluent, COMMITTED),
                           (read_kafka_python, {"isolation_level": "read_committed"})):
        got = reader(ours.bootstrap, topic, PARTITIONS, 1, config=config)
        assert values_of(got) == [b"later"], reader.__name__


def test_kafka_python_transactional_producer(ours):
    from kafka import KafkaProducer

    topic = new_topic(ours, PARTITIONS)
    producer = KafkaProducer(bootstrap_servers=ours.bootstrap, transactional_id=f"tx-{topic}")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(4):
            producer.send(topic, b"kp-committed-%d" % i, partition=i % PARTITIONS)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, b"kp-aborted-%d" % i, partition=i % PARTITIONS)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close()
    committed = [b"kp-committed-%d" % i for i in range(4)]
    aborted = [b"kp-aborted-%d" % i for i in range(3)]
    got = read_confluent(ours.bootstrap, topic, PARTITIONS, 4, config=COMMITTED)
    assert values_of(got) == sorted(committed)
    got = read_kafka_python(ours.bootstrap, topic, PARTITIONS, 7,
                            config={"isolation_level": "read_uncommitted"})
    assert values_of(got) == sorted(committed + aborted)


def test_aiokafka_transactional_producer(ours):
    from aiokafka import AIOKafkaProducer

    topic = new_topic(ours, PARTITIONS)

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=ours.bootstrap,
                                    transactional_id=f"tx-{topic}")
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(4):
                    await producer.send_and_wait(topic, b"aio-committed-%d" % i,
                                                 partition=i % PARTITIONS)
            await producer.begin_transaction()
            for i in range(3):
                await producer.send_and_wait(topic, b"aio-aborted-%d" % i,
                                             partition=i % PARTITIONS)
            await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(run())
    committed = [b"aio-committed-%d" % i for i in range(4)]
    aborted = [b"aio-aborted-%d" % i for i in range(3)]
    got = read_kafka_python(ours.bootstrap, topic, PARTITIONS, 4,
                            config={"isolation_level": "read_committed"})
    assert values_of(got) == sorted(committed)
    got = read_confluent(ours.bootstrap, topic, PARTITIONS, 7, config=UNCOMMITTED)
    assert values_of(got) == sorted(committed + aborted)


def test_bad_transactional_requests_get_kafkas_errors(ours):
    """Each wrong request gets Kafka's error code; the coordinator serves everyone else."""
    from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
    from kafkacore.errors import (
        ConcurrentTransactionsError,
        InvalidProducerIdMappingError,
        InvalidRequestError,
        InvalidTransactionTimeoutError,
        InvalidTxnStateError,
        ProducerFencedError,
        UnknownTopicOrPartitionError,
    )
    from kafkacore.protocol.api_keys import ApiKey

    host, port = ours.bootstrap.split(":")
    client = InterBrokerClient(host, int(port), "bad-input", 10.0)
    topic = new_topic(ours, PARTITIONS)
    txn_id = f"tx-{topic}"

    def send(api: ApiKey, version: int, **body):
        return client.send(api, version, body)

    try:
        found = send(ApiKey.FIND_COORDINATOR, 3, key="", key_type=1)
        assert found["error_code"] == InvalidRequestError.errno
        assert send(ApiKey.FIND_COORDINATOR, 3, key=txn_id, key_type=1)["error_code"] == 0
        too_long = send(ApiKey.INIT_PRODUCER_ID, 4, transactional_id=txn_id,
                        transaction_timeout_ms=900001, producer_id=-1, producer_epoch=-1)
        assert too_long["error_code"] == InvalidTransactionTimeoutError.errno
        init = send(ApiKey.INIT_PRODUCER_ID, 4, transactional_id=txn_id,
                    transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
        assert init["error_code"] == 0
        pid, epoch = init["producer_id"], init["producer_epoch"]

        def end(committed: bool, producer_id: int = pid, producer_epoch: int = epoch,
                transactional_id: str = txn_id) -> int:
            return send(ApiKey.END_TXN, 3, transactional_id=transactional_id,
                        producer_id=producer_id, producer_epoch=producer_epoch,
                        committed=committed)["error_code"]

        def add(partition: int, producer_id: int = pid, producer_epoch: int = epoch) -> int:
            answer = send(ApiKey.ADD_PARTITIONS_TO_TXN, 3,
                          v3_and_below_transactional_id=txn_id,
                          v3_and_below_producer_id=producer_id,
                          v3_and_below_producer_epoch=producer_epoch,
                          v3_and_below_topics=[{"name": topic, "partitions": [partition]}])
            [t] = answer["results_by_topic_v3_and_below"]
            return t["results_by_partition"][0]["partition_error_code"]

        assert end(True) == InvalidTxnStateError.errno  # nothing open
        assert end(True, transactional_id=f"unknown-{topic}") == \
            InvalidProducerIdMappingError.errno
        assert add(0, producer_id=pid + 1) == InvalidProducerIdMappingError.errno
        assert add(0, producer_epoch=epoch - 1) == ProducerFencedError.errno
        assert add(99) == UnknownTopicOrPartitionError.errno
        assert add(0) == 0
        assert end(True, producer_epoch=epoch + 1) == ProducerFencedError.errno
        assert end(True) == 0
        # While the markers are written or once done: a retry of the commit is harmless, an
        # abort of it is refused (CONCURRENT_TRANSACTIONS first while CompleteCommit is being
        # written, then INVALID_TXN_STATE).
        def abort_refused() -> int | None:
            error = end(False)
            return None if error == ConcurrentTransactionsError.errno else error

        assert wait_until(abort_refused, what="the abort's answer after CompleteCommit") \
            == InvalidTxnStateError.errno
        retry = end(True)
        assert retry in (0, ConcurrentTransactionsError.errno)
        garbage = send(ApiKey.INIT_PRODUCER_ID, 4, transactional_id="\u0000\ufffd" * 2000,
                       transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
        assert garbage["error_code"] == 0  # alone, this broker coordinates every id
    finally:
        client.close()
    # The coordinator still serves a real client.
    producer = transactional_producer(ours.bootstrap, f"tx-after-{topic}")
    producer.begin_transaction()
    producer.produce(topic, b"still-served", partition=1)
    producer.commit_transaction(30)
    got = read_confluent(ours.bootstrap, topic, PARTITIONS, 1, config=COMMITTED)
    assert values_of(got) == [b"still-served"]


def test_transactional_requests_are_authorized(tmp_path):
    """WRITE on the transactional id for the producer's requests, CLUSTER_ACTION for the
    markers (Kafka's checks), with SASL users and the StandardAuthorizer."""
    import functools

    from kafkacore.broker.security.authorizer import (
        AccessControlEntry,
        AclBinding,
        AclOperation,
        AclPermissionType,
        PatternType,
        ResourcePattern,
        ResourceType,
    )
    from kafkacore.broker.server.broker_server import Broker
    from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
    from kafkacore.errors import (
        ClusterAuthorizationFailedError,
        TransactionalIdAuthorizationFailedError,
    )
    from kafkacore.network.sasl import PlainMechanism
    from kafkacore.protocol.api_keys import ApiKey

    refused = TransactionalIdAuthorizationFailedError.errno
    config = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
              "sasl.users": "admin:admin-secret,alice:alice-secret",
              "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:admin", "log.dirs": str(tmp_path)}
    with Broker(config) as broker:
        host, port = broker.bootstrap_servers.split(":")
        alice = InterBrokerClient(host, int(port), "alice", 10.0,
                                  sasl=functools.partial(PlainMechanism, "alice", "alice-secret"))
        try:
            def init() -> int:
                return alice.send(ApiKey.INIT_PRODUCER_ID, 4, {
                    "transactional_id": "tx-alice", "transaction_timeout_ms": 60000,
                    "producer_id": -1, "producer_epoch": -1})["error_code"]

            found = alice.send(ApiKey.FIND_COORDINATOR, 3, {"key": "tx-alice", "key_type": 1})
            assert found["error_code"] == refused
            assert init() == refused
            end = alice.send(ApiKey.END_TXN, 3, {"transactional_id": "tx-alice",
                                                 "producer_id": 0, "producer_epoch": 0,
                                                 "committed": True})
            assert end["error_code"] == refused
            markers = alice.send(ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [
                {"producer_id": 0, "producer_epoch": 0, "transaction_result": True,
                 "coordinator_epoch": 0, "topics": [{"name": "t", "partition_indexes": [0]}]}]})
            [[[partition]]] = [[t["partitions"] for t in m["topics"]]
                               for m in markers["markers"]]
            assert partition["error_code"] == ClusterAuthorizationFailedError.errno
            pattern = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx-alice",
                                      PatternType.LITERAL)
            assert broker.authorizer.create_acls([
                AclBinding(pattern, AccessControlEntry("User:alice", "*", op,
                                                       AclPermissionType.ALLOW))
                for op in (AclOperation.WRITE, AclOperation.DESCRIBE)]) == [None, None]
            assert alice.send(ApiKey.FIND_COORDINATOR, 3,
                              {"key": "tx-alice", "key_type": 1})["error_code"] == 0
            assert init() == 0
        finally:
            alice.close()


def assert_transactional_id_patterns(ours, txn_id: str) -> None:
    """ListTransactions v2's TransactionalIdPattern (KIP-1152) is matched whole, by RE2: a
    pattern RE2 refuses is INVALID_REGULAR_EXPRESSION, one that backtracks in Python's ``re``
    answers at once."""
    from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
    from kafkacore.errors import InvalidRegularExpressionError
    from kafkacore.protocol.api_keys import ApiKey

    host, port = ours.bootstrap.split(":")
    client = InterBrokerClient(host, int(port), "patterns", 10.0)

    def listed(pattern: str) -> tuple[int, set[str]]:
        answer = client.send(ApiKey.LIST_TRANSACTIONS, 2, {
            "state_filters": [], "producer_id_filters": [], "duration_filter": -1,
            "transactional_id_pattern": pattern})
        return answer["error_code"], {t["transactional_id"]
                                      for t in answer["transaction_states"]}

    try:
        error, ids = listed("tx-.*")
        assert error == 0 and txn_id in ids
        assert txn_id not in listed("tx")[1]  # the whole id must match
        assert listed("(?=tx).*")[0] == InvalidRegularExpressionError.errno  # a lookahead
        assert listed("(a+)+$")[0] == 0  # RE2 needs no backtracking
    finally:
        client.close()


def test_admin_tools_see_and_abort_a_hanging_transaction(ours):
    """kafka-python's admin client (what ``kafka-transactions.sh`` does): ListTransactions and
    DescribeTransactions at the coordinator, DescribeProducers at the leader, and an
    administrative abort (WriteTxnMarkers with coordinator epoch -1) that frees the LSO."""
    from kafka import TopicPartition
    from kafka.admin import AbortTransactionSpec, KafkaAdminClient, TransactionState

    topic = new_topic(ours, PARTITIONS)
    txn_id = f"tx-{topic}"
    producer = transactional_producer(ours.bootstrap, txn_id)
    producer.begin_transaction()
    send(producer, topic, [b"hanging-0"])  # partition 0 only
    admin = KafkaAdminClient(bootstrap_servers=ours.bootstrap)
    try:
        listed = [t for txns in admin.list_transactions().values() for t in txns
                  if t.transactional_id == txn_id]
        assert [t.state for t in listed] == [TransactionState.ONGOING]
        ongoing = admin.list_transactions(state_filters=["Ongoing"], duration_filter_ms=0)
        assert txn_id in {t.transactional_id for txns in ongoing.values() for t in txns}
        done = admin.list_transactions(state_filters=["CompleteCommit"])
        assert txn_id not in {t.transactional_id for txns in done.values() for t in txns}
        assert_transactional_id_patterns(ours, txn_id)

        described = admin.describe_transactions([txn_id])[txn_id]
        assert described.state == TransactionState.ONGOING
        assert described.topic_partitions == {TopicPartition(topic, 0)}
        assert described.producer_id == listed[0].producer_id

        tp = TopicPartition(topic, 0)
        [state] = admin.describe_producers([tp])[tp].active_producers
        assert state.producer_id == described.producer_id
        assert state.producer_epoch == described.producer_epoch
        assert state.current_transaction_start_offset == 0
        assert committed_end_offsets(ours.bootstrap, topic, "read_committed")[0] == 0

        admin.abort_transaction(AbortTransactionSpec(tp, state.producer_id,
                                                     state.producer_epoch))
        assert committed_end_offsets(ours.bootstrap, topic, "read_committed") == \
            committed_end_offsets(ours.bootstrap, topic, "read_uncommitted")
        [state] = admin.describe_producers([tp])[tp].active_producers
        assert state.current_transaction_start_offset == -1
    finally:
        admin.close()
    later = transactional_producer(ours.bootstrap, f"tx-later-{topic}")
    later.begin_transaction()
    send(later, topic, [b"later"])
    later.commit_transaction(30)
    got = read_confluent(ours.bootstrap, topic, PARTITIONS, 2, config=UNCOMMITTED)
    assert values_of(got) == [b"hanging-0", b"later"]
    got = read_kafka_python(ours.bootstrap, topic, PARTITIONS, 1,
                            config={"isolation_level": "read_committed"})
    assert values_of(got) == [b"later"]


def test_offset_fetch_require_stable_waits_for_the_transaction(ours):
    """KIP-447: while a transaction holds a group's commit, OffsetFetch with require_stable
    answers UNSTABLE_OFFSET_COMMIT for that partition (and the committed offset without it)."""
    from confluent_kafka import Consumer, TopicPartition

    from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
    from kafkacore.errors import UnstableOffsetCommitError
    from kafkacore.protocol.api_keys import ApiKey

    topic = new_topic(ours, PARTITIONS)
    group = f"g-{topic}"
    consumer = Consumer({"bootstrap.servers": ours.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    producer = transactional_producer(ours.bootstrap, f"tx-{topic}")
    host, port = ours.bootstrap.split(":")
    client = InterBrokerClient(host, int(port), "offset-fetch", 10.0)
    try:
        producer.begin_transaction()
        send(producer, topic, [b"x"])
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 3)],
                                             consumer.consumer_group_metadata(), 30)

        def fetch(require_stable: bool) -> dict[int, tuple[int, int]]:
            answer = client.send(ApiKey.OFFSET_FETCH, 7, {
                "group_id": group, "require_stable": require_stable,
                "topics": [{"name": topic, "partition_indexes": [0, 1]}]})
            return {p["partition_index"]: (p["error_code"], p["committed_offset"])
                    for t in answer["topics"] for p in t["partitions"]}

        assert fetch(True) == {0: (UnstableOffsetCommitError.errno, -1), 1: (0, -1)}
        assert fetch(False) == {0: (0, -1), 1: (0, -1)}
        producer.commit_transaction(30)
        wait_until(lambda: fetch(True) == {0: (0, 3), 1: (0, -1)},
                   what="the commit's marker in __consumer_offsets", step_s=0.1)
    finally:
        client.close()
        consumer.close()


def test_a_prepare_commit_left_by_a_dead_coordinator_is_completed(tmp_path):
    """The coordinator wrote PrepareCommit and stopped before any marker: the next one to load
    ``__transaction_state`` finds the decision there and writes the markers and CompleteCommit
    (the write-then-act rule).  The broker stops right after that write: nothing else of the
    transaction's end happens before it goes."""
    import threading
    import time

    from kafkacore.broker.server.broker_server import Broker
    from kafkacore.broker.transaction.transaction_metadata import TransactionState

    config = {"log.dirs": str(tmp_path), "num.partitions": "1"}
    with Broker(config) as broker:
        topic = new_topic(broker)
        txn_id = f"tx-{topic}"
        producer = transactional_producer(broker.bootstrap_servers, txn_id,
                                          **{"reconnect.backoff.max.ms": 100})
        producer.begin_transaction()
        for value in (b"decided-0", b"decided-1"):
            producer.produce(topic, value, partition=0)
        assert producer.flush(30) == 0
        manager = broker.transaction_coordinator.txn_manager
        _, coordinator_epoch, metadata = manager.get_transaction_state(txn_id)
        with metadata.lock:
            transit = metadata.prepare_abort_or_commit(TransactionState.PREPARE_COMMIT,
                                                       int(time.time() * 1000))
        written = threading.Event()
        manager.append_transaction_to_log(txn_id, coordinator_epoch, metadata, transit,
                                          lambda error: written.set())
        assert written.wait(10) and metadata.state == TransactionState.PREPARE_COMMIT
        lg = broker.log_manager.get_log(topic, 0)
        assert (lg.last_stable_offset, lg.high_watermark) == (0, 2)
    producer.purge()
    del producer

    with Broker(config) as broker:
        lg = broker.log_manager.get_log(topic, 0)
        wait_until(lambda: lg.last_stable_offset == lg.high_watermark == 3,
                   what="the COMMIT marker written by the new coordinator")
        metadata = broker.transaction_coordinator.txn_manager.get_transaction_state(txn_id)[2]
        wait_until(lambda: metadata.state == TransactionState.COMPLETE_COMMIT,
                   what="CompleteCommit")
        got = read_confluent(broker.bootstrap_servers, topic, 1, 2, config=COMMITTED)
        assert values_of(got) == [b"decided-0", b"decided-1"]


def test_an_unused_transactional_id_expires(tmp_path):
    """``transactional.id.expiration.ms``: an id whose producer went quiet is forgotten, by a
    tombstone in ``__transaction_state``, so a restart does not bring it back; the next
    producer with that id starts afresh."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import TransactionalIdNotFoundError

    config = {"transactional.id.expiration.ms": "500",
              "transaction.remove.expired.transaction.cleanup.interval.ms": "100",
              "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"}
    with LocalBroker(kind="kafkacore", log_dirs=tmp_path, config=config) as broker:
        topic = new_topic(broker)
        txn_id = f"tx-{topic}"
        producer = transactional_producer(broker.bootstrap, txn_id)
        producer.begin_transaction()
        send(producer, topic, [b"before-expiry"])
        producer.commit_transaction(30)
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)

        def forgotten() -> bool:
            try:
                admin.describe_transactions([txn_id])
            except TransactionalIdNotFoundError:
                return True
            return False

        try:
            wait_until(forgotten, what="the id's expiration", step_s=0.1)
        finally:
            admin.close()
        broker.restart()
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            assert forgotten()
        finally:
            admin.close()
        again = transactional_producer(broker.bootstrap, txn_id)
        again.begin_transaction()
        send(again, topic, [b"after-expiry"])
        again.commit_transaction(30)
        got = read_confluent(broker.bootstrap, topic, PARTITIONS, 2, config=COMMITTED)
        assert values_of(got) == [b"after-expiry", b"before-expiry"]


def test_a_transactional_batch_for_a_partition_not_added_is_refused(ours):
    """KIP-890: the leader asks the coordinator before a producer's first transactional batch
    opens a transaction in a partition; one the producer never added gets INVALID_TXN_STATE
    and opens nothing (the LSO stays at the high watermark)."""
    from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
    from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
    from kafkacore.errors import InvalidTxnStateError
    from kafkacore.protocol import codec
    from kafkacore.protocol.api_keys import ApiKey

    topic = new_topic(ours, PARTITIONS)
    txn_id = f"tx-{topic}"
    host, port = ours.bootstrap.split(":")
    client = InterBrokerClient(host, int(port), "not-added", 10.0)
    try:
        assert client.send(ApiKey.FIND_COORDINATOR, 3,
                           {"key": txn_id, "key_type": 1})["error_code"] == 0
        init = client.send(ApiKey.INIT_PRODUCER_ID, 4, {
            "transactional_id": txn_id, "transaction_timeout_ms": 60000,
            "producer_id": -1, "producer_epoch": -1})
        pid, epoch = init["producer_id"], init["producer_epoch"]

        def produce(partition: int, sequence: int) -> int:
            builder = MemoryRecordsBuilder(1024, producer_id=pid, producer_epoch=epoch,
                                           base_sequence=sequence, is_transactional=True)
            builder.append(0, None, b"v")
            body = codec.REQUESTS[ApiKey.PRODUCE].body.defaults(9)
            body.update(transactional_id=txn_id, acks=-1, timeout_ms=10000, topic_data=[
                {"name": topic, "partition_data": [
                    {"index": partition, "records": bytes(builder.build())}]}])
            answer = client.send(ApiKey.PRODUCE, 9, body)
            return answer["responses"][0]["partition_responses"][0]["error_code"]

        assert produce(0, 0) == InvalidTxnStateError.errno
        assert committed_end_offsets(ours.bootstrap, topic, "read_committed") == \
            committed_end_offsets(ours.bootstrap, topic, "read_uncommitted")
        added = client.send(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
            "v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": [0]}]})
        [t] = added["results_by_topic_v3_and_below"]
        assert t["results_by_partition"][0]["partition_error_code"] == 0
        assert produce(0, 0) == 0
        assert produce(1, 0) == InvalidTxnStateError.errno  # partition 1 is still not added
        assert committed_end_offsets(ours.bootstrap, topic, "read_committed")[0] == 0
        ended = client.send(ApiKey.END_TXN, 3, {"transactional_id": txn_id, "producer_id": pid,
                                                "producer_epoch": epoch, "committed": True})
        assert ended["error_code"] == 0
    finally:
        client.close()
    got = read_confluent(ours.bootstrap, topic, PARTITIONS, 1, config=COMMITTED)
    assert values_of(got) == [b"v"]
