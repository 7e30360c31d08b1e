"""Odd but well-formed requests that made a handler raise (and the broker close the client's
connection): each is answered with Kafka's error code, and the connection serves the next
request.  (TxnOffsetCommit with producer id -1 is in test_txn_ownership.py.)
"""

from __future__ import annotations

import uuid

import pytest
from support.topics import new_topic

from kafkacore.errors import InvalidRequestError
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
    c = InterBrokerClient(host, int(port), "odd-requests", 10.0)
    yield c
    c.close()


def still_served(client, topic: str) -> bool:
    answer = client.send(ApiKey.METADATA, 9, {"topics": [{"name": topic}],
                                              "allow_auto_topic_creation": False})
    return [t["error_code"] for t in answer["topics"]] == [0]


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_v11_by_topic_id_is_invalid_request(broker, client, version):
    """v10 and v11 carry a topic id but may not use it: a null name (or a non-zero id) is
    INVALID_REQUEST for every topic of the request, a null name answered as "" (Kafka's
    ``MetadataRequest.getErrorResponse``)."""
    topic = new_topic(broker)
    some_id = uuid.uuid4()
    answer = client.send(ApiKey.METADATA, version, {
        "topics": [{"topic_id": uuid.UUID(int=0), "name": None},
                   {"topic_id": some_id, "name": topic}],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    assert [(t["name"], t["topic_id"], t["error_code"]) for t in answer["topics"]] == [
        ("", uuid.UUID(int=0), InvalidRequestError.errno),
        (topic, some_id, InvalidRequestError.errno)]
    assert still_served(client, topic)


def test_offset_delete_naming_a_partition_twice(broker, client):
    """A partition named twice in one OffsetDelete is deleted once and answered twice."""
    topic = new_topic(broker)
    group = f"g-{topic}"
    assert client.send(ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0}
                       )["error_code"] == 0
    committed = client.send(ApiKey.OFFSET_COMMIT, 2, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
        "retention_time_ms": -1, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}]}]})
    assert committed["topics"][0]["partitions"][0]["error_code"] == 0
    answer = client.send(ApiKey.OFFSET_DELETE, 0, {"group_id": group, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0}, {"partition_index": 0}]}]})
    assert answer["error_code"] == 0
    assert [p["error_code"] for p in answer["topics"][0]["partitions"]] == [0, 0]
    fetched = client.send(ApiKey.OFFSET_FETCH, 7, {
        "group_id": group, "require_stable": False,
        "topics": [{"name": topic, "partition_indexes": [0]}]})
    assert fetched["topics"][0]["partitions"][0]["committed_offset"] == -1
    assert still_served(client, topic)
