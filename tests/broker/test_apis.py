"""KafkaApis at every version our declarations have, by hand over a socket (our codec).

Real clients each speak one version of each API (tests/broker/test_clients.py); these tests ask
every other version too, and check the answers' contents and Kafka's error codes.
"""

from __future__ import annotations

import uuid

import pytest
from reactor_client import Client

from kafkacore import KafkaProducer, errors
from kafkacore.broker import Broker
from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey


@pytest.fixture(scope="module")
def broker():
    with Broker({"num.network.threads": "1", "num.io.threads": "2",
                 "num.partitions": "2"}) as b:
        yield b




@pytest.fixture
def client(broker):
    c = Client(broker, "test-apis")
    yield c
    c.sock.close()


@pytest.fixture(scope="module")
def topic(broker):
    """A one-partition topic holding three records, and its topic id."""
    name = f"apis-{uuid.uuid4().hex[:8]}"
    c = Client(broker, "test-apis")
    created = c.call(ApiKey.CREATE_TOPICS, 7, {"topics": [
        {"name": name, "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 5000})
    c.sock.close()
    assert created["topics"][0]["error_code"] == 0
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        for i in range(3):
            producer.send(name, b"r%d" % i, partition=0)
        producer.flush(timeout=30)
    return name, created["topics"][0]["topic_id"]


def metadata_body(version, names, allow_auto_create=True):
    topics = [{"name": n} for n in names]
    return {"topics": topics, "allow_auto_topic_creation": allow_auto_create} if version >= 4 \
        else {"topics": topics}


@pytest.mark.parametrize("version", range(13))
def test_metadata_every_version(broker, client, topic, version):
    name, topic_id = topic
    response = client.call(ApiKey.METADATA, version, metadata_body(version, [name]))
    assert [(b["node_id"], b["port"]) for b in response["brokers"]] == [
        (broker.broker_id, broker.advertised_port)]
    [t] = response["topics"]
    assert (t["error_code"], t["name"]) == (0, name)
    assert [(p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])
            for p in t["partitions"]] == [(0, broker.broker_id, [broker.broker_id],
                                            [broker.broker_id])]
    if version >= 10:
        assert t["topic_id"] == topic_id != uuid.UUID(int=0)


def test_metadata_auto_creates_with_num_partitions_unless_told_not_to(client):
    made, refused, bad = (f"auto-{uuid.uuid4().hex[:8]}" for _ in range(3))
    response = client.call(ApiKey.METADATA, 12, metadata_body(12, [made]))
    assert [(t["name"], t["error_code"], len(t["partitions"])) for t in response["topics"]] == [
        (made, 0, 2)]
    response = client.call(ApiKey.METADATA, 12, metadata_body(12, [refused, bad + "!"], False))
    assert [(t["name"], t["error_code"]) for t in response["topics"]] == [
        (refused, 3), (bad + "!", 17)]
    everything = client.call(ApiKey.METADATA, 12, {"topics": None})
    names = {t["name"] for t in everything["topics"]}
    assert made in names and refused not in names


@pytest.mark.parametrize("version", range(1, 11))
def test_list_offsets_every_version(client, topic, version):
    name, _ = topic
    answers = {}
    for ts in (-1, -2):
        response = client.call(ApiKey.LIST_OFFSETS, version, {"replica_id": -1, "topics": [
            {"name": name, "partitions": [{"partition_index": 0, "timestamp": ts,
                                           "max_num_offsets": 1}]}]})
        [p] = response["topics"][0]["partitions"]
        assert p["error_code"] == 0
        answers[ts] = p["offset"]
    assert answers == {-1: 3, -2: 0}


@pytest.mark.parametrize(("api_key", "version"), [
    (ApiKey.PRODUCE, 2), (ApiKey.FETCH, 3), (ApiKey.LIST_OFFSETS, 0)])
def test_versions_kafka_4_removed_are_refused(broker, api_key, version):
    """Message formats 0 and 1 are gone from Kafka 4 (KIP-896) and from us: these versions are
    not advertised, and a client that sends one anyway is refused, not served."""
    refused = Client(broker, "test-apis")
    body = codec.REQUESTS[api_key].body.defaults(version)
    with pytest.raises(ConnectionError):
        refused.call(api_key, version, body)


@pytest.mark.parametrize("version", range(4, 18))
def test_fetch_every_version(client, topic, version):
    name, topic_id = topic
    ids = {"topic_id": topic_id} if version >= 13 else {"topic": name}

    def fetch(offset):
        response = client.call(ApiKey.FETCH, version, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "session_id": 0, "session_epoch": -1,
            "topics": [{**ids, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                "partition_max_bytes": 1 << 20}]}]})
        if version >= 7:
            assert (response["error_code"], response["session_id"]) == (0, 0)
        return response["responses"][0]["partitions"][0]

    p = fetch(0)
    assert (p["error_code"], p["high_watermark"]) == (0, 3)
    from kafka.record.memory_records import MemoryRecords

    records = MemoryRecords(bytes(p["records"]))
    values = []
    while records.has_next():
        values += [r.value for r in records.next_batch()]
    assert values == [b"r0", b"r1", b"r2"]
    at_end = fetch(3)
    assert (at_end["error_code"], len(at_end["records"] or b"")) == (0, 0)
    assert fetch(4)["error_code"] == 1  # OFFSET_OUT_OF_RANGE


def test_fetch_an_unknown_topic(client):
    response = client.call(ApiKey.FETCH, 12, {"replica_id": -1, "max_bytes": 1 << 20,
                                              "session_epoch": -1, "topics": [
        {"topic": "nope-" + uuid.uuid4().hex, "partitions": [{"partition": 0}]}]})
    assert response["responses"][0]["partitions"][0]["error_code"] == 3
    response = client.call(ApiKey.FETCH, 13, {"replica_id": -1, "max_bytes": 1 << 20,
                                              "session_epoch": -1, "topics": [
        {"topic_id": uuid.uuid4(), "partitions": [{"partition": 0}]}]})
    assert response["responses"][0]["partitions"][0]["error_code"] == 100  # UNKNOWN_TOPIC_ID


@pytest.mark.parametrize("version", [0, 4, 5, 7])
def test_create_topics_errors(client, topic, version):
    name, _ = topic
    fresh = f"ct-{version}-{uuid.uuid4().hex[:8]}"
    cases = [
        ({"name": fresh, "num_partitions": 3, "replication_factor": 1}, 0),
        ({"name": name, "num_partitions": 1, "replication_factor": 1}, 36),  # already exists
        ({"name": "bad name", "num_partitions": 1, "replication_factor": 1}, 17),
        ({"name": "..", "num_partitions": 1, "replication_factor": 1}, 17),
        ({"name": "x" * 250, "num_partitions": 1, "replication_factor": 1}, 17),
        ({"name": fresh + "-z", "num_partitions": 0, "replication_factor": 1}, 37),
        ({"name": fresh + "-r", "num_partitions": 1, "replication_factor": 3}, 38),
        ({"name": fresh + "-c", "num_partitions": 1, "replication_factor": 1,
          "configs": [{"name": "retention.ms", "value": "soon"}]}, 40),
        ({"name": fresh + "-u", "num_partitions": 1, "replication_factor": 1,
          "configs": [{"name": "no.such.config", "value": "1"}]}, 40),
    ]
    response = client.call(ApiKey.CREATE_TOPICS, version, {
        "topics": [c for c, _ in cases], "timeout_ms": 5000})
    assert [(t["name"], t["error_code"]) for t in response["topics"]] == [
        (c["name"], code) for c, code in cases]
    meta = client.call(ApiKey.METADATA, 12, metadata_body(12, [fresh, fresh + "-z"], False))
    assert [(t["error_code"], len(t["partitions"])) for t in meta["topics"]] == [(0, 3), (3, 0)]


@pytest.mark.parametrize("version", range(6))
def test_init_producer_id_every_version(client, version):
    first = client.call(ApiKey.INIT_PRODUCER_ID, version,
                        {"transactional_id": None, "transaction_timeout_ms": -1,
                         "producer_id": -1, "producer_epoch": -1})
    second = client.call(ApiKey.INIT_PRODUCER_ID, version,
                         {"transactional_id": None, "transaction_timeout_ms": -1,
                          "producer_id": -1, "producer_epoch": -1})
    assert first["error_code"] == second["error_code"] == 0
    assert second["producer_id"] > first["producer_id"] >= 0
    if version >= 3:
        # An existing id and epoch, without a transactional id: Kafka hands out a new id and
        # never bumps the epoch of an id the asker may not own (it would fence its producer).
        again = client.call(ApiKey.INIT_PRODUCER_ID, version, {
            "transactional_id": None, "transaction_timeout_ms": -1,
            "producer_id": first["producer_id"], "producer_epoch": first["producer_epoch"]})
        assert again["error_code"] == 0
        assert again["producer_id"] > second["producer_id"] and again["producer_epoch"] == 0
        half = client.call(ApiKey.INIT_PRODUCER_ID, version, {
            "transactional_id": None, "transaction_timeout_ms": -1,
            "producer_id": first["producer_id"], "producer_epoch": -1})
        assert half["error_code"] == errors.InvalidRequestError.errno


def test_topics_and_producer_ids_survive_a_restart(tmp_path):
    config = {"log.dirs": str(tmp_path)}
    with Broker(config) as b:
        c = Client(b, "test-apis")
        c.call(ApiKey.CREATE_TOPICS, 7, {"topics": [
            {"name": "kept", "num_partitions": 4, "replication_factor": 1,
             "configs": [{"name": "retention.ms", "value": "1000"}]}]})
        topic_id = c.call(ApiKey.METADATA, 12, metadata_body(12, ["kept"]))["topics"][0][
            "topic_id"]
        pid = c.call(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None})["producer_id"]
        c.sock.close()
    with Broker(config) as b:
        c = Client(b, "test-apis")
        [t] = c.call(ApiKey.METADATA, 12, metadata_body(12, ["kept"], False))["topics"]
        assert (t["error_code"], t["topic_id"], len(t["partitions"])) == (0, topic_id, 4)
        assert b.log_manager.get_log("kept", 0).config.retention_ms == 1000
        assert c.call(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None})[
            "producer_id"] > pid
        c.sock.close()


@pytest.mark.parametrize("version", range(1, 5))
def test_delete_topics(broker, client, version):
    name = f"del-{version}-{uuid.uuid4().hex[:8]}"
    client.call(ApiKey.CREATE_TOPICS, 7, {"topics": [
        {"name": name, "num_partitions": 2, "replication_factor": 1}]})
    log_dirs = [broker.log_manager.get_log(name, p).dir for p in range(2)]
    missing = "nope-" + uuid.uuid4().hex
    response = client.call(ApiKey.DELETE_TOPICS, version, {"topic_names": [name, missing],
                                                           "timeout_ms": 5000})
    assert [(r["name"], r["error_code"]) for r in response["responses"]] == [
        (name, 0), (missing, 3)]
    assert not any(d.exists() for d in log_dirs)
    meta = client.call(ApiKey.METADATA, 12, metadata_body(12, [name], False))
    assert meta["topics"][0]["error_code"] == 3
    # The name is free again, for a new topic with a new id.
    again = client.call(ApiKey.CREATE_TOPICS, 7, {"topics": [
        {"name": name, "num_partitions": 1, "replication_factor": 1}]})
    assert again["topics"][0]["error_code"] == 0


def test_kafka_python_admin_creates_and_deletes(broker):
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"kpadmin-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(name, 3, 1)])
        assert name in admin.list_topics()
        admin.delete_topics([name])
        assert name not in admin.list_topics()
    finally:
        admin.close()


@pytest.mark.parametrize("version", range(5))
def test_describe_configs_of_a_topic(client, version):
    name = f"dc-{uuid.uuid4().hex[:8]}"
    client.call(ApiKey.CREATE_TOPICS, 7, {"topics": [
        {"name": name, "num_partitions": 1, "replication_factor": 1,
         "configs": [{"name": "retention.ms", "value": "60000"}]}]})
    response = client.call(ApiKey.DESCRIBE_CONFIGS, version, {"resources": [
        {"resource_type": 2, "resource_name": name,
         "configuration_keys": ["retention.ms", "segment.bytes"]},
        {"resource_type": 2, "resource_name": "nope-" + name, "configuration_keys": None},
        {"resource_type": 8, "resource_name": "1", "configuration_keys": None},  # loggers
        {"resource_type": 1, "resource_name": "1", "configuration_keys": None}]})  # unknown
    ok, missing, loggers, unknown = response["results"]
    assert [(r["error_code"]) for r in response["results"]] == [
        Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NONE, Errors.INVALID_REQUEST]
    assert "root" in {c["name"] for c in loggers["configs"]}
    got = {c["name"]: c for c in ok["configs"]}
    assert {k: c["value"] for k, c in got.items()} == {"retention.ms": "60000",
                                                       "segment.bytes": str(1 << 30)}
    if version == 0:
        assert (got["retention.ms"]["is_default"], got["segment.bytes"]["is_default"]) == (
            False, True)
    else:
        assert (got["retention.ms"]["config_source"], got["segment.bytes"]["config_source"]) == (
            1, 5)


def test_kafka_python_admin_describes_topic_configs(broker):
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    name = f"kpdc-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(name, 1, 1, topic_configs={"cleanup.policy": "delete",
                                                                 "retention.bytes": "12345"})])
        result = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
        configs = result["topic"][name]
        assert (configs["retention.bytes"]["value"], configs["retention.bytes"]["config_source"]) \
            == ("12345", "DYNAMIC_TOPIC_CONFIG")
    finally:
        admin.close()
