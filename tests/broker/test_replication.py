"""Replication on a real cluster (a controller and three brokers, each its own process), judged by
clients we did not write, and the purgatory's delayed operations observed on a live broker.

The kill tests produce with acks=all and idempotence into a topic with replication factor 3 and
``min.insync.replicas=2``, SIGKILL the leader of a partition mid-stream, and check that a new
leader was elected, that the producer acknowledged every record, and that confluent-kafka (in a
child process) reads back every acknowledged record exactly once, in send order per partition.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from readback import read_confluent
from support.topics import new_replicated_topic
from waits import wait_until

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.broker import Broker
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing.cluster import Cluster

PARTITIONS = 2
RECORDS = 400


def check_read_back(cluster: Cluster, topic: str, acked: dict[int, list[bytes]]) -> None:
    """Every acknowledged value once, in send order, on its partition."""
    total = sum(len(v) for v in acked.values())
    rows = read_confluent(cluster.bootstrap_servers, topic, PARTITIONS, total, timeout_s=90)
    got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for row in sorted(rows, key=lambda r: (r.partition, r.offset)):
        got[row.partition].append(row.value)
    for p in range(PARTITIONS):
        assert len(got[p]) == len(set(got[p])), f"duplicates on partition {p}"
        assert got[p] == acked[p], f"partition {p}: lost, duplicated or reordered records"


def kill_leader_mid_stream(cluster: Cluster, topic: str, send, flush) -> tuple[int, int]:
    """Send RECORDS records (partition i % PARTITIONS), SIGKILL partition 0's leader halfway,
    flush; returns (old leader, new leader).  The killed broker is restarted afterwards."""
    old = cluster.leader_of(topic, 0)
    try:
        for i in range(RECORDS):
            if i == RECORDS // 2:
                cluster.kill(old)
            send(i)
        flush()
        new = cluster.wait_for_leader_change(topic, 0, old)
    finally:
        cluster.restart(old)
    assert new != old
    return old, new


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_confluent_kafka_producer_survives_the_leader_being_killed(cluster):
    from confluent_kafka import Producer

    topic = new_replicated_topic(cluster, PARTITIONS)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5,
                         "message.timeout.ms": 120000})
    acked: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    failures = []

    def on_delivery(err, msg):
        if err is not None:
            failures.append(err)
        else:
            acked[msg.partition()].append(msg.value())

    def send(i):
        producer.produce(topic, value=b"confluent-%d" % i, partition=i % PARTITIONS,
                         on_delivery=on_delivery)
        producer.poll(0)

    def flush():
        assert producer.flush(120) == 0

    kill_leader_mid_stream(cluster, topic, send, flush)
    assert failures == []
    # idempotence keeps the send order, so the acknowledged order is the send order
    for p in range(PARTITIONS):
        assert acked[p] == [b"confluent-%d" % i for i in range(p, RECORDS, PARTITIONS)]
    check_read_back(cluster, topic, acked)


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_kafka_python_producer_survives_the_leader_being_killed(cluster):
    from kafka import KafkaProducer as PythonProducer

    topic = new_replicated_topic(cluster, PARTITIONS)
    producer = PythonProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                              enable_idempotence=True, linger_ms=5, retries=1000,
                              request_timeout_ms=30000, delivery_timeout_ms=120000)
    futures = []

    def send(i):
        futures.append(producer.send(topic, value=b"kafka-python-%d" % i,
                                     partition=i % PARTITIONS))

    kill_leader_mid_stream(cluster, topic, send, lambda: producer.flush(120))
    acked: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for i, f in enumerate(futures):
        md = f.get(timeout=60)
        acked[md.partition].append(b"kafka-python-%d" % i)
    producer.close(30)
    check_read_back(cluster, topic, acked)


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_our_producer_survives_the_leader_being_killed(cluster):
    topic = new_replicated_topic(cluster, PARTITIONS)
    futures = []
    with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                       enable_idempotence=True, linger_ms=5,
                       delivery_timeout_ms=120000) as producer:

        def send(i):
            futures.append(producer.send(topic, value=b"ours-%d" % i, partition=i % PARTITIONS))

        kill_leader_mid_stream(cluster, topic, send, lambda: producer.flush(120))
        acked: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        for i, f in enumerate(futures):
            md = f.result(timeout=60)
            acked[md.partition].append(b"ours-%d" % i)
    for p in range(PARTITIONS):
        assert acked[p] == [b"ours-%d" % i for i in range(p, RECORDS, PARTITIONS)]
    check_read_back(cluster, topic, acked)


def _produce_request(topic: str, partition: int, value: bytes, acks: int,
                     timeout_ms: int = 60000) -> dict:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    import time

    builder.append(0, timestamp=int(time.time() * 1000), key=None, value=value, headers=[])
    return {"transactional_id": None, "acks": acks, "timeout_ms": timeout_ms, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition,
                                            "records": bytes(builder.build())}]}]}


def _client(address: str) -> InterBrokerClient:
    host, _, port = address.rpartition(":")
    return InterBrokerClient(host, int(port), "test", timeout_s=120)


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_acks_all_with_a_paused_follower_waits_for_the_isr_to_shrink(cluster):
    topic = new_replicated_topic(cluster)
    leader = cluster.leader_of(topic, 0)
    follower = next(b for b in (1, 2, 3) if b != leader)
    client = _client(cluster.broker_address(leader))
    try:
        # Everything in sync: acks=all is answered once both followers have fetched.
        first = client.send(ApiKey.PRODUCE, 9, _produce_request(topic, 0, b"before", -1))
        assert first["responses"][0]["partition_responses"][0]["error_code"] == 0
        epoch = cluster.partition_state(topic, 0)["leader_epoch"]
        cluster.pause(follower)
        try:
            response = client.send(ApiKey.PRODUCE, 9, _produce_request(topic, 0, b"paused", -1))
            # The leader answered only after the ISR shrank: its own view says so.
            isr, isr_epoch = _leader_isr(client, topic, with_epoch=True)
        finally:
            cluster.resume(follower)
    finally:
        client.close()
    part = response["responses"][0]["partition_responses"][0]
    assert part["error_code"] == 0 and part["base_offset"] == 1
    assert follower not in isr and leader in isr and len(isr) == 2
    # Same leader epoch: the leader shrank the ISR itself (replica.lag.time.max.ms); a fencing
    # by the controller (broker.session.timeout.ms) would have bumped the epoch.
    assert isr_epoch == epoch
    cluster.wait_for_isr(topic, 0, [1, 2, 3])  # caught up again after the resume: back in


def _leader_isr(client: InterBrokerClient, topic: str, with_epoch: bool = False):
    body = codec.REQUESTS[ApiKey.METADATA].body.defaults(12)
    body.update(topics=[{"name": topic, "topic_id": uuid.UUID(int=0)}],
                allow_auto_topic_creation=False)
    partition = client.send(ApiKey.METADATA, 12, body)["topics"][0]["partitions"][0]
    isr = list(partition["isr_nodes"])
    return (isr, partition["leader_epoch"]) if with_epoch else isr


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_min_insync_replicas_refuses_acks_all_when_the_isr_is_too_small(cluster):
    topic = new_replicated_topic(cluster)
    leader = cluster.leader_of(topic, 0)
    followers = [b for b in (1, 2, 3) if b != leader]
    for f in followers:
        cluster.pause(f)
    client = _client(cluster.broker_address(leader))
    try:
        cluster.wait_for_isr(topic, 0, [leader])
        wait_until(lambda: _leader_isr(client, topic) == [leader], "the leader's ISR shrunk to itself")
        response = client.send(ApiKey.PRODUCE, 9, _produce_request(topic, 0, b"x", -1))
        code = response["responses"][0]["partition_responses"][0]["error_code"]
        assert code == 19  # NOT_ENOUGH_REPLICAS, refused before the append
        response = client.send(ApiKey.PRODUCE, 9, _produce_request(topic, 0, b"y", 1))
        assert response["responses"][0]["partition_responses"][0]["error_code"] == 0
    finally:
        client.close()
        for f in followers:
            cluster.resume(f)
    cluster.wait_for_isr(topic, 0, [1, 2, 3])


# -- the long poll, on a broker in this process (its purgatory can be watched) -----------------


def test_a_long_poll_fetch_is_answered_as_soon_as_data_arrives():
    with Broker({"num.partitions": "1"}) as broker:
        topic = f"poll-{uuid.uuid4().hex[:8]}"
        assert create_topics(broker.bootstrap_servers, {topic: 1}) == {topic: 0}
        purgatory = broker.replica_manager.fetch_purgatory
        client = _client(broker.bootstrap_servers)
        result: dict = {}

        def fetch():
            result["response"] = client.send(ApiKey.FETCH, 12, {
                "replica_id": -1, "max_wait_ms": 60000, "min_bytes": 1, "max_bytes": 1 << 20,
                "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": topic, "partitions": [
                    {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                     "last_fetched_epoch": -1, "log_start_offset": -1,
                     "partition_max_bytes": 1 << 20}]}],
                "forgotten_topics_data": [], "rack_id": ""})

        poller = threading.Thread(target=fetch)
        poller.start()
        try:
            wait_until(lambda: purgatory.watched() == 1, "the fetch waiting in the purgatory")
            assert "response" not in result
            producer = _client(broker.bootstrap_servers)
            try:
                producer.send(ApiKey.PRODUCE, 9, _produce_request(topic, 0, b"wake up", 1))
            finally:
                producer.close()
            poller.join(30)  # far below the 60 s the fetch would otherwise wait
            assert not poller.is_alive()
        finally:
            client.close()
            poller.join(5)
        part = result["response"]["responses"][0]["partitions"][0]
        assert part["error_code"] == 0 and b"wake up" in part["records"]
        assert purgatory.expired() == 0  # completed by the append, not by the timer


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_move_leader_elects_the_broker_asked_for_with_a_new_epoch(cluster):
    topic = new_replicated_topic(cluster)
    before = cluster.partition_state(topic, 0)
    target = next(b for b in (1, 2, 3) if b != before["leader_id"])
    cluster.move_leader(topic, 0, target)
    after = cluster.partition_state(topic, 0)
    assert after["leader_id"] == target and after["leader_epoch"] > before["leader_epoch"]
    cluster.wait_for_topic(topic)
    client = _client(cluster.broker_address(target))
    try:
        wait_until(lambda: client.send(ApiKey.PRODUCE, 9, _produce_request(topic, 0, b"moved", -1))[
            "responses"][0]["partition_responses"][0]["error_code"] == 0,
            "an acks=all produce accepted by the new leader")
    finally:
        client.close()


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_an_isolated_leader_loses_its_partitions_and_comes_back_when_healed(cluster):
    topic = new_replicated_topic(cluster)
    leader = cluster.leader_of(topic, 0)
    cluster.isolate(leader)
    try:
        new = cluster.wait_for_leader_change(topic, 0, leader)
    finally:
        cluster.heal(leader)
    assert new != leader
    cluster.wait_for_isr(topic, 0, [1, 2, 3])  # healed: it fetches again and rejoins


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_after_an_election_every_broker_names_the_new_leader_and_not_the_dead_one(cluster):
    topic = new_replicated_topic(cluster)
    old = cluster.leader_of(topic, 0)
    cluster.kill(old)
    try:
        new = cluster.wait_for_leader_change(topic, 0, old)
        cluster.wait_for_leader_known(topic, 0, new)
        for broker in (b for b in (1, 2, 3) if b != old):
            client = _client(cluster.broker_address(broker))
            try:
                body = codec.REQUESTS[ApiKey.METADATA].body.defaults(12)
                body.update(topics=[{"name": topic, "topic_id": uuid.UUID(int=0)}])
                answer = client.send(ApiKey.METADATA, 12, body)
            finally:
                client.close()
            assert answer["topics"][0]["partitions"][0]["leader_id"] == new, broker
            # What a client connects to next: the dead broker is no longer offered.
            assert old not in {b["node_id"] for b in answer["brokers"]}, broker
    finally:
        cluster.restart(old)
    cluster.wait_for_isr(topic, 0, [1, 2, 3])


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_the_cluster_command_prints_its_bootstrap_servers_and_stops_on_sigterm(tmp_path):
    import signal
    import subprocess
    import sys

    from support.children import child_env

    process = subprocess.Popen([sys.executable, "-m", "kafkacore.broker", "cluster",
                                "--brokers", "2", "--log-dirs", str(tmp_path)],
                               stdout=subprocess.PIPE, env=child_env(), cwd=tmp_path)
    try:
        line = process.stdout.readline().decode()
        assert line.startswith("kafkacore-cluster bootstrap servers 127.0.0.1:")
        servers = line.rsplit(" ", 1)[1].strip().split(",")
        assert len(servers) == 2
        name = f"cli-{uuid.uuid4().hex[:8]}"
        assert create_topics(servers[0], {name: 2}, replication_factor=2) == {name: 0}
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
        process.stdout.close()


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_a_restarted_old_leader_truncates_what_only_it_had(cluster):
    """acks=1 records that only the leader got (its followers were cut off) are gone once it dies:
    the new leader never had them.  When the old leader comes back it asks the new one where its
    epoch ends (OffsetForLeaderEpoch), cuts them from its own log, and copies the new leader's."""
    topic = new_replicated_topic(cluster)
    old = cluster.leader_of(topic, 0)
    followers = [b for b in (1, 2, 3) if b != old]
    client = _client(cluster.broker_address(old))
    try:
        assert _produce(client, topic, b"replicated", -1) == 0  # on all three
        # Isolated followers drop any fetch response that arrives from now on (a paused one
        # would still read the answer to the fetch it sent before it stopped).
        for f in followers:
            cluster.isolate(f)
        try:
            # acks=1: written on the leader only, answered at once (well within the lag time,
            # so the ISR still holds the followers when the leader dies).
            assert _produce(client, topic, b"only-on-the-old-leader", 1) == 0
            cluster.kill(old)
        finally:
            for f in followers:
                cluster.heal(f)
    finally:
        client.close()
    try:
        new = cluster.wait_for_leader_change(topic, 0, old)
        cluster.wait_for_topic(topic)
        client = _client(cluster.broker_address(new))
        try:
            wait_until(lambda: _produce(client, topic, b"after-the-election", -1) == 0,
                  "an acks=all produce on the new leader")
        finally:
            client.close()
    finally:
        cluster.restart(old)
    cluster.wait_for_isr(topic, 0, [1, 2, 3])
    cluster.move_leader(topic, 0, old)  # read the old leader's own log back
    cluster.wait_for_topic(topic)
    rows = read_confluent(cluster.bootstrap_servers, topic, 1, 2, timeout_s=90)
    assert [r.value for r in sorted(rows, key=lambda r: r.offset)] == [
        b"replicated", b"after-the-election"]
    assert [r.offset for r in sorted(rows, key=lambda r: r.offset)] == [0, 1]


def _produce(client: InterBrokerClient, topic: str, value: bytes, acks: int) -> int:
    response = client.send(ApiKey.PRODUCE, 9, _produce_request(topic, 0, value, acks))
    return response["responses"][0]["partition_responses"][0]["error_code"]


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_a_clean_stop_moves_the_leadership_before_the_broker_exits(cluster):
    topic = new_replicated_topic(cluster)
    leader = cluster.leader_of(topic, 0)
    before = cluster.partition_state(topic, 0)
    try:
        cluster.stop(leader)  # returns once the process has exited
        # Controlled shutdown: re-elected before the exit, not after broker.session.timeout.ms.
        after = cluster.partition_state(topic, 0)
    finally:
        cluster.restart(leader)
    assert after["leader_id"] not in (-1, leader)
    assert after["leader_epoch"] > before["leader_epoch"] and leader not in after["isr_nodes"]
    cluster.wait_for_isr(topic, 0, [1, 2, 3])


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_producer_ids_are_unique_across_the_brokers(cluster):
    """Every broker answers InitProducerId; two producers that ask two brokers must not get the
    same id (they would fence each other's epochs after a failover)."""
    ids = []
    for node in (1, 2, 3):
        host, _, port = cluster.broker_address(node).rpartition(":")
        client = InterBrokerClient(host, int(port), "test", 10.0)
        try:
            for _ in range(2):
                body = codec.REQUESTS[ApiKey.INIT_PRODUCER_ID].body.defaults(4)
                body.update(transactional_id=None, transaction_timeout_ms=60000)
                answer = client.send(ApiKey.INIT_PRODUCER_ID, 4, body)
                assert answer["error_code"] == 0, answer
                ids.append(answer["producer_id"])
        finally:
            client.close()
    assert len(set(ids)) == len(ids), ids
