"""InitProducerId with a producer id and epoch (KIP-360) answered as Kafka's coordinator does:
a client that starts a new transactional id at producer id 0 and epoch 0 is accepted (Kafka's
``isValidProducerId``: the id has no epoch yet), and an id whose epoch is exhausted moves to a
new producer id, a retry of that call getting the same answer.  Raw requests through our codec
(what the Node.js client sends).  See docs/broker/transactions.rst.
"""

from __future__ import annotations

import pytest
from readback import read_confluent
from support.topics import new_topic

from kafkacore.broker.transaction.transaction_metadata import MAX_PRODUCER_EPOCH
from kafkacore.errors import ProducerFencedError
from kafkacore.protocol.api_keys import ApiKey


@pytest.fixture
def broker(tmp_path):
    from kafkacore.broker.server.broker_server import Broker

    with Broker({"log.dirs": str(tmp_path), "num.partitions": "1"}) as b:
        yield b


@pytest.fixture
def client(broker):
    from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient

    host, port = broker.bootstrap_servers.split(":")
    c = InterBrokerClient(host, int(port), "init-producer-id", 10.0)
    yield c
    c.close()


def init(client, txn_id: str, producer_id: int, epoch: int) -> tuple[int, int, int]:
    answer = client.send(ApiKey.INIT_PRODUCER_ID, 4, {
        "transactional_id": txn_id, "transaction_timeout_ms": 60000,
        "producer_id": producer_id, "producer_epoch": epoch})
    return answer["error_code"], answer["producer_id"], answer["producer_epoch"]


def test_a_new_transactional_id_at_producer_id_0_epoch_0_is_accepted(broker, client):
    """The id is new: producer id 0 and epoch 0 fence nobody; the answer is the id's producer
    id at epoch 0, and a transaction with it commits and is read by confluent-kafka."""
    from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
    from kafkacore.protocol import codec

    topic = new_topic(broker)
    txn_id = f"tx-{topic}"
    assert client.send(ApiKey.FIND_COORDINATOR, 3, {"key": txn_id, "key_type": 1}
                       )["error_code"] == 0
    error, producer_id, epoch = init(client, txn_id, 0, 0)
    assert (error, epoch) == (0, 0)
    assert init(client, txn_id, producer_id, epoch) == (0, producer_id, 1)  # the next bump
    epoch = 1
    added = client.send(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": producer_id,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": topic, "partitions": [0]}]})
    [t] = added["results_by_topic_v3_and_below"]
    assert t["results_by_partition"][0]["partition_error_code"] == 0
    builder = MemoryRecordsBuilder(1024, producer_id=producer_id, producer_epoch=epoch,
                                   base_sequence=0, is_transactional=True)
    builder.append(0, None, b"from-epoch-0")
    body = codec.REQUESTS[ApiKey.PRODUCE].body.defaults(9)
    body.update(transactional_id=txn_id, acks=-1, timeout_ms=10000, topic_data=[
        {"name": topic, "partition_data": [{"index": 0, "records": bytes(builder.build())}]}])
    produced = client.send(ApiKey.PRODUCE, 9, body)
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == 0
    ended = client.send(ApiKey.END_TXN, 3, {"transactional_id": txn_id,
                                            "producer_id": producer_id,
                                            "producer_epoch": epoch, "committed": True})
    assert ended["error_code"] == 0
    got = read_confluent(broker.bootstrap_servers, topic, 1, 1, timeout_s=30,
                         config={"isolation.level": "read_committed"})
    assert [c.value for c in got] == [b"from-epoch-0"]


def test_an_exhausted_epoch_moves_to_a_new_producer_id(broker, client):
    """The id's epoch is one below the last (set in the coordinator's memory, as thousands of
    restarts would leave it): the next InitProducerId bumps it to the last epoch, the one after
    moves to a new producer id at epoch 0, a retry of that one (its answer lost) gets the same
    new id, and an older epoch of the old id is fenced."""
    txn_id = "tx-exhausted"
    assert client.send(ApiKey.FIND_COORDINATOR, 3, {"key": txn_id, "key_type": 1}
                       )["error_code"] == 0
    error, old_id, _ = init(client, txn_id, -1, -1)
    assert error == 0
    metadata = broker.transaction_coordinator.txn_manager.get_transaction_state(txn_id)[2]
    with metadata.lock:
        metadata.producer_epoch = MAX_PRODUCER_EPOCH - 1
    assert init(client, txn_id, old_id, MAX_PRODUCER_EPOCH - 1) == \
        (0, old_id, MAX_PRODUCER_EPOCH)
    error, new_id, epoch = init(client, txn_id, old_id, MAX_PRODUCER_EPOCH)
    assert (error, epoch) == (0, 0) and new_id != old_id
    assert init(client, txn_id, old_id, MAX_PRODUCER_EPOCH) == (0, new_id, 0)  # a retry
    assert init(client, txn_id, old_id, MAX_PRODUCER_EPOCH - 1)[0] == ProducerFencedError.errno
    assert init(client, txn_id, new_id, 0) == (0, new_id, 1)
