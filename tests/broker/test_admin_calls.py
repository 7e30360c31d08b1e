"""Our broker's admin and bookkeeping answers, judged by clients we did not write (kafka-python,
confluent-kafka, kcat): what a batch's header says once stored, the configs a broker describes,
partitions added, records deleted, the cluster described."""

from __future__ import annotations

import socket
import struct
import subprocess

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c
from reactor_client import recv_frame
from support.topics import new_replicated_topic, new_topic
from waits import wait_until

from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker

T0 = 1_700_000_000_000


@pytest.fixture(scope="module")
def ours():
    with LocalBroker(kind="kafkacore") as broker:
        yield broker


def _call(broker, api_key, version, body):
    payload = b"".join(bytes(memoryview(c).cast("B")) for c in
                       codec.encode_request(api_key, version, 1, "admin-calls", body))
    with socket.create_connection((broker.host, broker.port), timeout=30) as s:
        s.settimeout(30)
        s.sendall(len(payload).to_bytes(4, "big") + payload)
        _, response = codec.decode_response(api_key, version, recv_frame(s))
    return response


def _batch_without_max_timestamp(timestamps):
    """A batch as Sarama writes it: maxTimestamp -1 whatever its records say (kafka-python's
    builder, its max timestamp overwritten and its CRC-32C recomputed by kafka-python's)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i, ts in enumerate(timestamps):
        builder.append(i, timestamp=ts, key=None, value=b"v%d" % i, headers=[])
    batch = bytearray(builder.build())
    struct.pack_into(">q", batch, 35, -1)  # maxTimestamp
    struct.pack_into(">I", batch, 17, calc_crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_a_batch_without_its_max_timestamp_is_found_by_time(ours):
    topic = new_topic(ours)
    # Timestamps out of order: the largest is the second record's, not the last one's.
    timestamps = [T0, T0 + 5000, T0 + 1000]
    response = _call(ours, ApiKey.PRODUCE, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 30000,
        "topic_data": [{"name": topic, "partition_data": [
            {"index": 0, "records": _batch_without_max_timestamp(timestamps)}]}]})
    answer = response["responses"][0]["partition_responses"][0]
    assert answer["error_code"] == Errors.NONE and answer["base_offset"] == 0

    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=ours.bootstrap, request_timeout_ms=30000)
    try:
        found = consumer.offsets_for_times({tp: T0 + 4000})[tp]
        # The first record at or after the time (Kafka's time index answer), not its batch
        assert found is not None and found.offset == 1 and found.timestamp == T0 + 5000
        assert consumer.offsets_for_times({tp: T0 + 5001})[tp] is None
        # The stored header now says what its records say, and its CRC matches (the consumer
        # checks it): the records come back as they were sent.
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        records = consumer.poll(timeout_ms=10000, max_records=10).get(tp, [])
        assert [(r.offset, r.timestamp) for r in records] == list(enumerate(timestamps))
    finally:
        consumer.close()


# -- DescribeConfigs: a broker's settings -------------------------------------------------------


def test_confluent_describes_a_brokers_configs(ours):
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

    admin = AdminClient({"bootstrap.servers": ours.bootstrap})
    resource = ConfigResource("broker", "1")
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    assert configs["num.io.threads"].value == "8"
    assert configs["num.io.threads"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["auto.create.topics.enable"].value == "true"
    assert configs["node.id"].value == "1"
    # A secret is described as sensitive, never shown.
    assert configs["sasl.users"].is_sensitive and configs["sasl.users"].value is None


def test_kafka_python_describes_broker_and_topic_configs_in_every_version(ours):
    from kafka.admin import ConfigResource, ConfigResourceType

    topic = new_topic(ours, configs={"retention.ms": "1234"})
    admin = KafkaAdminClient(bootstrap_servers=ours.bootstrap, request_timeout_ms=30000)
    try:
        described = admin.describe_configs([
            ConfigResource(ConfigResourceType.BROKER, "1"),
            ConfigResource(ConfigResourceType.TOPIC, topic, ["retention.ms"])],
            config_filter="all")
        modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    finally:
        admin.close()
    broker = described["broker"]["1"]
    assert broker["message.max.bytes"]["value"] == "1048588"
    assert broker["message.max.bytes"]["config_type"] == "INT"
    assert broker["message.max.bytes"]["config_source"] == "DEFAULT_CONFIG"
    assert described["topic"][topic] == modified["topic"][topic]
    assert {k: (v["value"], v["config_source"], v["config_type"])
            for k, v in modified["topic"][topic].items()} == {
        "retention.ms": ("1234", "DYNAMIC_TOPIC_CONFIG", "LONG")}
    for version in range(5):  # v3 adds each value's type; v4 is flexible
        answer = _call(ours, ApiKey.DESCRIBE_CONFIGS, version, {
            "resources": [{"resource_type": 4, "resource_name": "1",
                           "configuration_keys": ["log.retention.ms", "num.partitions"]}],
            **({"include_synoyms": False} if version >= 1 else {}),
            **({"include_documentation": True} if version >= 3 else {})})
        [result] = answer["results"]
        assert result["error_code"] == Errors.NONE
        values = {c["name"]: c["value"] for c in result["configs"]}
        assert values == {"log.retention.ms": "604800000", "num.partitions": "1"}, version
        if version >= 3:
            types = {c["name"]: c["config_type"] for c in result["configs"]}
            assert types == {"log.retention.ms": 5, "num.partitions": 3}  # LONG, INT
            assert all(c["documentation"] for c in result["configs"])
    # A broker describes itself only (Kafka's ConfigHelper).
    answer = _call(ours, ApiKey.DESCRIBE_CONFIGS, 2, {
        "resources": [{"resource_type": 4, "resource_name": "7", "configuration_keys": None}],
        "include_synoyms": False})
    assert answer["results"][0]["error_code"] == Errors.INVALID_REQUEST


# -- CreatePartitions ---------------------------------------------------------------------------


def _partitions_seen_by_kafka_python(bootstrap, topic):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        return consumer.partitions_for_topic(topic)
    finally:
        consumer.close()


def _grow_with_confluent(bootstrap, topic, count, validate_only=False):
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(topic, count)],
                            validate_only=validate_only)[topic].result(timeout=30)


def _check_create_partitions(bootstrap, topic, settle=lambda: None):
    """``settle``: wait until every broker knows the partitions added (a cluster)."""
    from confluent_kafka import KafkaException, Producer
    from kafka.admin import NewPartitions
    from kafka.errors import InvalidPartitionsError

    # validate_only changes nothing.
    _grow_with_confluent(bootstrap, topic, 5, validate_only=True)
    assert _partitions_seen_by_kafka_python(bootstrap, topic) == {0}
    _grow_with_confluent(bootstrap, topic, 3)
    wait_until(lambda: _partitions_seen_by_kafka_python(bootstrap, topic) == {0, 1, 2},
               "kafka-python sees three partitions")
    settle()
    # A count that lowers (or keeps) the count is refused, with a message; nothing changes.
    with pytest.raises(KafkaException) as refused:
        _grow_with_confluent(bootstrap, topic, 2)
    assert refused.value.args[0].name() == "INVALID_PARTITIONS"
    assert "3 partition" in refused.value.args[0].str()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        with pytest.raises(InvalidPartitionsError):
            admin.create_partitions({topic: NewPartitions(3)}, raise_errors=True)
    finally:
        admin.close()
    assert _partitions_seen_by_kafka_python(bootstrap, topic) == {0, 1, 2}
    # The new partitions take records.
    producer = Producer({"bootstrap.servers": bootstrap})
    delivered = []
    producer.produce(topic, b"to-2", partition=2,
                     on_delivery=lambda err, msg: delivered.append((err, msg.partition())))
    assert producer.flush(30) == 0
    assert delivered == [(None, 2)]


def test_create_partitions_on_a_single_broker(ours):
    _check_create_partitions(ours.bootstrap, new_topic(ours))


@pytest.mark.cluster
def test_create_partitions_through_the_controller(cluster):
    topic = new_topic(cluster, replication_factor=3)
    cluster.wait_for_topic(topic)  # every broker knows it before a client asks any of them
    _check_create_partitions(
        cluster.bootstrap_servers, topic,
        settle=lambda: [cluster.wait_for_leader_known(topic, p, cluster.leader_of(topic, p))
                        for p in (1, 2)])


# -- DescribeCluster ----------------------------------------------------------------------------


def _check_describe_cluster(bootstrap, broker_ids):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_cluster(include_authorized_operations=True).result(timeout=30)
    assert sorted(n.id for n in described.nodes) == broker_ids
    assert described.controller.id in broker_ids
    assert described.cluster_id
    # No authorizer: every operation on the cluster is allowed, and listed.
    assert "DESCRIBE" in {op.name for op in described.authorized_operations}
    kp_admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        answer = kp_admin.describe_cluster()
    finally:
        kp_admin.close()
    assert answer["cluster_id"] == described.cluster_id
    assert sorted(b["broker_id"] for b in answer["brokers"]) == broker_ids


def test_describe_cluster_of_a_single_broker(ours):
    _check_describe_cluster(ours.bootstrap, [1])
    # A broker is not a controller's endpoint (KIP-919).
    answer = _call(ours, ApiKey.DESCRIBE_CLUSTER, 1, {
        "include_cluster_authorized_operations": False, "endpoint_type": 2})
    assert answer["error_code"] == Errors.MISMATCHED_ENDPOINT_TYPE


@pytest.mark.cluster
def test_describe_cluster_of_three_brokers(cluster):
    # Every broker is in the answer once the controller has them all (a topic on all three).
    cluster.wait_for_topic(new_topic(cluster, replication_factor=3))
    _check_describe_cluster(cluster.bootstrap_servers, [1, 2, 3])


# -- DeleteRecords ------------------------------------------------------------------------------


def test_delete_records_moves_the_log_start_for_every_reader(tmp_path):
    from confluent_kafka import Consumer, KafkaException
    from confluent_kafka import TopicPartition as CkTopicPartition
    from confluent_kafka.admin import AdminClient

    with LocalBroker(kind="kafkacore", log_dirs=str(tmp_path)) as broker:
        topic = new_topic(broker)
        subprocess.run(["kcat", "-P", "-b", broker.bootstrap, "-t", topic, "-p", "0"],
                       input="".join(f"r{i}\n" for i in range(10)), text=True, check=True,
                       timeout=60)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        [deleted] = admin.delete_records([CkTopicPartition(topic, 0, 4)]).values()
        assert deleted.result(timeout=30).low_watermark == 4
        # Past the high watermark: refused, nothing moves.
        [refused] = admin.delete_records([CkTopicPartition(topic, 0, 11)]).values()
        with pytest.raises(KafkaException) as exc:
            refused.result(timeout=30)
        assert exc.value.args[0].name() == "OFFSET_OUT_OF_RANGE"

        def earliest():
            consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "lw"})
            try:
                return consumer.get_watermark_offsets(CkTopicPartition(topic, 0), timeout=30)
            finally:
                consumer.close()

        assert earliest() == (4, 10)
        # kcat reading from the beginning starts at the new log start.
        out = subprocess.run(["kcat", "-C", "-b", broker.bootstrap, "-t", topic, "-p", "0",
                              "-o", "beginning", "-e", "-f", "%o %s\n"],
                             capture_output=True, text=True, check=True, timeout=60)
        assert [line.split()[0] for line in out.stdout.splitlines()] == [
            str(i) for i in range(4, 10)]
        broker.restart()
        assert earliest() == (4, 10)  # the log start survives a restart


@pytest.mark.cluster
def test_deleted_records_stay_deleted_when_the_leader_changes(cluster):
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as CkTopicPartition
    from confluent_kafka.admin import AdminClient

    topic = new_replicated_topic(cluster)
    bootstrap = cluster.bootstrap_servers

    def produce(values):
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for v in values:
            producer.produce(topic, v, partition=0)
        assert producer.flush(30) == 0

    produce([b"r%d" % i for i in range(10)])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    [deleted] = admin.delete_records([CkTopicPartition(topic, 0, 4)]).values()
    assert deleted.result(timeout=30).low_watermark == 4
    # An acks=all record is acknowledged once every in-sync follower has fetched again: each
    # has then been told the leader's new log start.
    produce([b"after"])
    leader = cluster.leader_of(topic)
    cluster.stop(leader)
    cluster.wait_for_leader_change(topic, 0, leader)

    def low_watermark():
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lw"})
        try:
            return consumer.get_watermark_offsets(CkTopicPartition(topic, 0), timeout=10)
        except Exception:  # the new leader is not known to every broker yet
            return None
        finally:
            consumer.close()

    wait_until(lambda: low_watermark() is not None, "the new leader answers")
    assert low_watermark() == (4, 11)
