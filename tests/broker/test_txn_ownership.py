"""Every transaction in a partition has an owner: a coordinator that will end it.

A raw Produce with a transactional batch and no transactional id, a TxnOffsetCommit of a producer
the coordinator does not know, a plain client's write to ``__consumer_offsets``: each is refused
with Kafka's error, and nothing is left for ``read_committed`` consumers to wait on.  Where a
hang can still arise (a coordinator that lost its ``__transaction_state``), the operator finds it
and aborts it with :func:`kafkacore.admin.find_hanging_transactions` and
:func:`kafkacore.admin.abort_transaction`, and a confluent-kafka ``read_committed`` consumer
goes on.  See docs/broker/transactions.rst, "Hanging transactions".
"""

from __future__ import annotations

import shutil

import pytest
from readback import read_confluent
from support.topics import new_topic

from kafkacore.testing import LocalBroker

COMMITTED = {"isolation.level": "read_committed"}


@pytest.fixture(scope="module")
def ours():
    with LocalBroker(kind="kafkacore") as broker:
        yield broker


@pytest.fixture
def client(ours):
    from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient

    host, port = ours.bootstrap.split(":")
    c = InterBrokerClient(host, int(port), "raw-client", 10.0)
    yield c
    c.close()


def produce(client, topic: str, partition: int, *, transactional_id: str | None = None,
            producer_id: int = -1, epoch: int = -1, transactional: bool = False,
            value: bytes = b"v") -> int:
    """One batch by a raw Produce v9; its partition's error code."""
    from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
    from kafkacore.protocol import codec
    from kafkacore.protocol.api_keys import ApiKey

    builder = MemoryRecordsBuilder(1024, producer_id=producer_id, producer_epoch=epoch,
                                   base_sequence=0 if producer_id >= 0 else -1,
                                   is_transactional=transactional)
    builder.append(0, None, value)
    body = codec.REQUESTS[ApiKey.PRODUCE].body.defaults(9)
    body.update(transactional_id=transactional_id, acks=-1, timeout_ms=10000, topic_data=[
        {"name": topic, "partition_data": [{"index": partition,
                                            "records": bytes(builder.build())}]}])
    answer = client.send(ApiKey.PRODUCE, 9, body)
    return answer["responses"][0]["partition_responses"][0]["error_code"]


def end_offsets(bootstrap: str, topic: str, isolation: str) -> int:
    """ListOffsets LATEST of partition 0 as kafka-python asks it, under ``isolation``."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
    try:
        tp = TopicPartition(topic, 0)
        return consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()


def init_producer_id(client, transactional_id: str) -> tuple[int, int]:
    from kafkacore.protocol.api_keys import ApiKey

    found = client.send(ApiKey.FIND_COORDINATOR, 3, {"key": transactional_id, "key_type": 1})
    assert found["error_code"] == 0
    init = client.send(ApiKey.INIT_PRODUCER_ID, 4, {
        "transactional_id": transactional_id, "transaction_timeout_ms": 60000,
        "producer_id": -1, "producer_epoch": -1})
    assert init["error_code"] == 0
    return init["producer_id"], init["producer_epoch"]


def test_a_transactional_batch_without_its_owner_is_refused(ours, client):
    """What an attacker's script (or a bug) sends: a transactional batch with no transactional
    id is TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka's check before anything else), one with
    an id whose producer is another is INVALID_PRODUCER_ID_MAPPING (the coordinator's answer to
    the leader's verification); neither opens a transaction, and a read_committed consumer
    reads what comes after."""
    from kafkacore.errors import (
        InvalidProducerIdMappingError,
        TransactionalIdAuthorizationFailedError,
    )

    topic = new_topic(ours)
    assert produce(client, topic, 0, producer_id=4242, epoch=0, transactional=True) == \
        TransactionalIdAuthorizationFailedError.errno
    txn_id = f"tx-{topic}"
    producer_id, epoch = init_producer_id(client, txn_id)
    assert produce(client, topic, 0, transactional_id=txn_id, producer_id=producer_id + 1,
                   epoch=epoch, transactional=True) == InvalidProducerIdMappingError.errno
    assert produce(client, topic, 0, value=b"after") == 0
    assert end_offsets(ours.bootstrap, topic, "read_committed") == \
        end_offsets(ours.bootstrap, topic, "read_uncommitted") == 1
    got = read_confluent(ours.bootstrap, topic, 1, 1, timeout_s=30, config=COMMITTED)
    assert [c.value for c in got] == [b"after"]


def test_a_txn_offset_commit_of_an_unknown_producer_is_refused(ours, client):
    """TxnOffsetCommit is verified with the transaction coordinator before anything is written
    (KIP-890 part 1): a producer id the id does not have (or -1) is INVALID_PRODUCER_ID_MAPPING,
    and the group's require_stable OffsetFetch is not left UNSTABLE_OFFSET_COMMIT."""
    from kafkacore.errors import InvalidProducerIdMappingError
    from kafkacore.protocol.api_keys import ApiKey

    topic = new_topic(ours)
    group = f"g-{topic}"
    txn_id = f"tx-{topic}"
    producer_id, epoch = init_producer_id(client, txn_id)
    assert client.send(ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0}
                       )["error_code"] == 0

    def commit(producer: int) -> int:
        answer = client.send(ApiKey.TXN_OFFSET_COMMIT, 3, {
            "transactional_id": txn_id, "group_id": group, "producer_id": producer,
            "producer_epoch": epoch, "generation_id": -1, "member_id": "",
            "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]})
        [t] = answer["topics"]
        return t["partitions"][0]["error_code"]

    assert commit(producer_id + 1) == InvalidProducerIdMappingError.errno
    assert commit(-1) == InvalidProducerIdMappingError.errno  # answered, not a closed socket
    fetched = client.send(ApiKey.OFFSET_FETCH, 7, {
        "group_id": group, "require_stable": True,
        "topics": [{"name": topic, "partition_indexes": [0]}]})
    [t] = fetched["topics"]
    assert (t["partitions"][0]["error_code"], t["partitions"][0]["committed_offset"]) == (0, -1)


def test_a_plain_client_may_not_write_to_the_internal_topics(ours, client):
    """Kafka's ReplicaManager: a Produce to ``__consumer_offsets`` or ``__transaction_state``
    from any client but Kafka's own admin client id is INVALID_TOPIC_EXCEPTION; kafka-python's
    producer is told so too."""
    from confluent_kafka import KafkaError, Producer

    from kafkacore.errors import InvalidTopicError
    from kafkacore.protocol.api_keys import ApiKey

    for key, key_type in (("any-group", 0), ("any-txn", 1)):  # both topics exist after this
        assert client.send(ApiKey.FIND_COORDINATOR, 3, {"key": key, "key_type": key_type}
                           )["error_code"] == 0
    assert produce(client, "__consumer_offsets", 0) == InvalidTopicError.errno
    assert produce(client, "__transaction_state", 0) == InvalidTopicError.errno
    reports = []
    producer = Producer({"bootstrap.servers": ours.bootstrap, "message.timeout.ms": 10000})
    producer.produce("__consumer_offsets", b"forged", partition=0,
                     on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(30) == 0
    [error] = reports
    assert error is not None and error.code() == KafkaError.TOPIC_EXCEPTION


def test_an_operator_finds_and_aborts_a_transaction_whose_coordinator_lost_it(tmp_path):
    """The hang that can still arise: a transaction is open in a partition and its coordinator
    lost ``__transaction_state`` (here, deleted while the broker was down).  Nobody will write
    its marker; ``find_hanging_transactions`` finds it (DescribeProducers, ListTransactions,
    DescribeTransactions) and ``abort_transaction`` writes the ABORT marker (WriteTxnMarkers);
    a confluent-kafka read_committed consumer then reads what was committed after it."""
    from confluent_kafka import Producer

    from kafkacore.admin import abort_transaction, find_hanging_transactions

    with LocalBroker(kind="kafkacore", log_dirs=tmp_path) as broker:
        topic = new_topic(broker)
        txn_id = f"tx-{topic}"
        producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id,
                             "linger.ms": 5})
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(topic, b"orphaned", partition=0)
        assert producer.flush(30) == 0
        assert find_hanging_transactions(broker.bootstrap, [topic],
                                         max_transaction_timeout_ms=0) == []  # it has an owner
        broker.stop()
        producer.purge()
        del producer
        lost = sorted(tmp_path.glob("__transaction_state-*"))
        assert lost
        for path in lost:
            shutil.rmtree(path)
        broker.start()

        assert end_offsets(broker.bootstrap, topic, "read_committed") == 0
        assert end_offsets(broker.bootstrap, topic, "read_uncommitted") == 1
        # the default timeout (15 minutes, as Kafka's tool) does not call it hanging yet
        assert find_hanging_transactions(broker.bootstrap, [topic]) == []
        [hanging] = find_hanging_transactions(broker.bootstrap, [topic],
                                              max_transaction_timeout_ms=0)
        assert (hanging.topic, hanging.partition, hanging.start_offset) == (topic, 0, 0)
        assert hanging.transactional_id is None  # no coordinator knows the producer id
        abort_transaction(broker.bootstrap, topic, 0, hanging.producer_id,
                          hanging.producer_epoch, hanging.coordinator_epoch)
        assert find_hanging_transactions(broker.bootstrap, [topic],
                                         max_transaction_timeout_ms=0) == []

        later = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id})
        later.init_transactions(30)
        later.begin_transaction()
        later.produce(topic, b"committed-after", partition=0)
        later.commit_transaction(30)
        got = read_confluent(broker.bootstrap, topic, 1, 1, timeout_s=30, config=COMMITTED)
        assert [c.value for c in got] == [b"committed-after"]
