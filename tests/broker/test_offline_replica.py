"""A partition a broker is a replica of but cannot host (its log cannot be created: the
descriptor budget is spent, or the directory is not the topic's) is offline on that broker, as
Kafka's ``HostedPartition.Offline``: Produce and Fetch there get KAFKA_STORAGE_ERROR, its
Metadata lists that replica offline, it is said once at ERROR, and the broker keeps serving
every other partition; every broker lists the controller's partitions (the scale run's
brokers listed different ones: docs/broker/quorum.rst)."""

from __future__ import annotations

import base64
import logging
import time
import uuid

import pytest
from kafka import KafkaProducer
from kafka.errors import KafkaStorageError as KpStorageError
from kafka.record.default_records import DefaultRecordBatchBuilder
from waits import wait_until

from kafkacore.broker.controller.controller_server import ControllerServer
from kafkacore.broker.server.broker_server import Broker
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey


def _batch() -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, int(time.time() * 1000), None, b"v", [])
    return bytes(builder.build())


def _produce(client: InterBrokerClient, topic: str, index: int) -> int:
    response = client.send(ApiKey.PRODUCE, 9, {
        "transactional_id": None, "acks": 1, "timeout_ms": 10000, "topic_data": [
            {"name": topic, "partition_data": [{"index": index, "records": _batch()}]}]})
    return response["responses"][0]["partition_responses"][0]["error_code"]


def _partitions(client: InterBrokerClient, topic: str) -> dict[int, dict]:
    response = client.send(ApiKey.METADATA, 12, {
        "topics": [{"topic_id": uuid.UUID(int=0), "name": topic}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    [t] = response["topics"]
    return {p["partition_index"]: p for p in t["partitions"]}


@pytest.fixture
def two_brokers(tmp_path):
    """An in-process controller and brokers 1 and 2."""
    controller = ControllerServer({"node.id": 0, "process.roles": "controller",
                                   "log.dirs": str(tmp_path / "c")}).start()
    brokers: list[Broker] = []
    try:
        for i in (1, 2):
            brokers.append(Broker({
                "node.id": i, "process.roles": "broker", "log.dirs": str(tmp_path / f"b{i}"),
                "controller.quorum.bootstrap.servers": controller.bootstrap_servers,
                "broker.heartbeat.interval.ms": "100", "replica.fetch.backoff.ms": "50",
                # broker 2 never fetches t-1: it stays in the ISR (eligible to lead) however
                # slow the machine
                "replica.lag.time.max.ms": "600000",
            }).start())
        wait_until(lambda: controller.controller.active_brokers() == {1, 2},
                   "both brokers registered")
        yield controller.controller, brokers
    finally:
        for b in reversed(brokers):
            b.stop()
        controller.stop()


def test_a_replica_whose_log_cannot_be_created_is_offline_there_and_the_rest_served(
        two_brokers, tmp_path, caplog):
    quorum, (one, two) = two_brokers
    # Broker 2's log dir holds a t-1 of another topic id (an earlier topic of that name whose
    # deletion it missed): it cannot create the new t-1's log there.
    stray = tmp_path / "b2" / "t-1"
    stray.mkdir()
    other = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    (stray / "partition.metadata").write_text(f"version: 0\ntopic_id: {other}\n")
    caplog.set_level(logging.ERROR, logger="kafkacore.broker.server.replica_manager")
    with quorum.lock:
        error, _, info = quorum.create_topic("t", 3, 2, {})
    assert error == Errors.NONE
    rm2 = two.replica_manager
    wait_until(lambda: ("t", 1) in rm2.offline_partitions
               and {("t", 0), ("t", 2)} <= rm2.partitions.keys(), "broker 2 applied t")
    # The controller (which does not know) makes broker 2 the leader of t-1, broker 1 of t-0.
    for index, leader in ((1, 2), (0, 1)):
        if info.partitions[index].leader != leader:
            assert quorum.elect_leader("t", index, leader) == Errors.NONE
    clients = {b.broker_id: InterBrokerClient(b.advertised_host, b.advertised_port, "test", 30)
               for b in (one, two)}
    try:
        def led() -> bool:
            return all(_partitions(c, "t")[1]["leader_id"] == 2
                       and _partitions(c, "t")[0]["leader_id"] == 1 for c in clients.values())
        wait_until(led, "both brokers listing t-1 led by 2 and t-0 by 1")
        # Every broker lists every partition; broker 2 says its own t-1 replica is offline.
        for client in clients.values():
            parts = _partitions(client, "t")
            assert sorted(parts) == [0, 1, 2]
            assert all(p["error_code"] == Errors.NONE for p in parts.values())
        assert _partitions(clients[2], "t")[1]["offline_replicas"] == [2]
        assert _partitions(clients[2], "t")[0]["offline_replicas"] == []
        # Produce and Fetch of t-1 at broker 2: KAFKA_STORAGE_ERROR; the others are served.
        assert _produce(clients[2], "t", 1) == Errors.KAFKA_STORAGE_ERROR
        fetch = clients[2].send(ApiKey.FETCH, 12, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": "t", "partitions": [{
                "partition": 1, "current_leader_epoch": -1, "fetch_offset": 0,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""})
        assert fetch["responses"][0]["partitions"][0]["error_code"] == \
            Errors.KAFKA_STORAGE_ERROR
        assert _produce(clients[1], "t", 0) == Errors.NONE
    finally:
        for c in clients.values():
            c.close()
    # A client we did not write gets Kafka's error for t-1, and writes t-0.
    producer = KafkaProducer(bootstrap_servers=[one.bootstrap_servers, two.bootstrap_servers],
                             retries=0, request_timeout_ms=10_000, max_block_ms=30_000)
    try:
        producer.send("t", b"ok", partition=0).get(timeout=30)
        with pytest.raises(KpStorageError):
            producer.send("t", b"no", partition=1).get(timeout=30)
    finally:
        producer.close(timeout=10)
    # Said once, at ERROR, though t-1 changed again since (its new leader).
    said = [r for r in caplog.records if "cannot host" in r.getMessage()
            and r.getMessage().startswith("broker 2:")]
    assert len(said) == 1 and "t-1" in said[0].getMessage()
    assert not any(r.getMessage().startswith("broker 1:") and "cannot host" in r.getMessage()
                   for r in caplog.records)
