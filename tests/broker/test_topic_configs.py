"""Kafka 4's topic configs: every one accepted at a valid value, each refused out of Kafka's
bounds (INVALID_CONFIG), and ``compression.type`` recompressing what a producer sent
(docs/broker/configs.rst)."""

from __future__ import annotations

import pytest
from support.topics import new_topic

from kafkacore.broker.config.config_source import ConfigType
from kafkacore.broker.metadata.metadata_cache import RESOURCE_TYPE_TOPIC
from kafkacore.broker.server.broker_server import Broker
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.protocol.api_keys import ApiKey

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: E402

#: every topic config of Kafka 4 (its LogConfig), each at a valid value other than its default
KAFKA_4_TOPIC_CONFIGS = {
    "segment.bytes": "1048576", "segment.ms": "3600000", "segment.jitter.ms": "10",
    "segment.index.bytes": "4096", "flush.messages": "100000", "flush.ms": "60000",
    "retention.bytes": "1073741824", "retention.ms": "86400000", "max.message.bytes": "2000000",
    "index.interval.bytes": "8192", "delete.retention.ms": "1000", "min.compaction.lag.ms": "5",
    "max.compaction.lag.ms": "86400000", "file.delete.delay.ms": "1000",
    "min.cleanable.dirty.ratio": "0.3", "cleanup.policy": "compact,delete",
    "unclean.leader.election.enable": "false", "min.insync.replicas": "1",
    "compression.type": "zstd", "compression.gzip.level": "5", "compression.lz4.level": "10",
    "compression.zstd.level": "-5", "preallocate": "true",
    "message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "86400000",
    "message.timestamp.after.max.ms": "60000", "leader.replication.throttled.replicas": "*",
    "follower.replication.throttled.replicas": "0:1,1:1", "remote.storage.enable": "false",
    "local.retention.ms": "-2", "local.retention.bytes": "-2", "remote.log.copy.disable": "true",
    "remote.log.delete.on.disable": "true",
}


@pytest.fixture(scope="module")
def broker():
    with Broker({"num.network.threads": "1", "num.io.threads": "1"}) as b:
        yield b


@pytest.fixture(scope="module")
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def _create(admin, name, configs):
    futures = admin.create_topics([NewTopic(name, 1, 1, config=configs)], operation_timeout=30)
    return futures[name].result(30)


def test_every_kafka_4_topic_config_is_accepted_and_described(admin):
    _create(admin, "every-config", KAFKA_4_TOPIC_CONFIGS)
    [described] = admin.describe_configs(
        [ConfigResource("TOPIC", "every-config")]).values()
    entries = described.result(30)
    assert {k: entries[k].value for k in KAFKA_4_TOPIC_CONFIGS} == KAFKA_4_TOPIC_CONFIGS
    assert set(entries) == set(KAFKA_4_TOPIC_CONFIGS)  # nothing Kafka 4 does not have


@pytest.mark.parametrize("name,value", [
    ("segment.bytes", "16384"),  # Kafka 4: at least 1 MiB
    ("segment.jitter.ms", "-1"),
    ("segment.index.bytes", "3"),
    ("file.delete.delay.ms", "-1"),
    ("compression.type", "brotli"),
    ("compression.gzip.level", "0"),
    ("compression.lz4.level", "18"),
    ("compression.zstd.level", "23"),
    ("preallocate", "yes"),
    ("unclean.leader.election.enable", "1"),
    ("message.timestamp.after.max.ms", "-1"),
    ("leader.replication.throttled.replicas", "all"),
    ("local.retention.ms", "-3"),
    ("remote.storage.enable", "true"),  # no tiered storage here, as Kafka without it
    ("message.downconversion.enable", "true"),  # gone in Kafka 4
    ("max.compaction.lag.ms", "0"),
])
def test_a_value_out_of_kafkas_bounds_is_invalid_config(admin, name, value):
    with pytest.raises(ck.KafkaException) as exc:
        _create(admin, f"bad-{name}-{value}".replace(".", "-").replace("*", "x"), {name: value})
    assert exc.value.args[0].code() == ck.KafkaError.INVALID_CONFIG


def _batches(broker, topic):
    """(codec, values) of every batch of partition 0, read raw with a Fetch and decoded by
    kafka-python."""
    from kafka.record.memory_records import MemoryRecords

    client = InterBrokerClient(broker.advertised_host, broker.advertised_port, "test", 30)
    try:
        response = client.send(ApiKey.FETCH, 12, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "session_id": 0, "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
    finally:
        client.close()
    records = MemoryRecords(bytes(response["responses"][0]["partitions"][0]["records"]))
    out = []
    while records.has_next():
        batch = records.next_batch()
        out.append((batch.compression_type, [r.value for r in batch]))
    return out


@pytest.mark.parametrize("producer_codec", ["zstd", "none", "gzip"])
def test_compression_type_gzip_recompresses_what_the_producer_sent(broker, producer_codec):
    topic = new_topic(broker, configs={"compression.type": "gzip",
                                       "compression.gzip.level": "1"})
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers,
                            "compression.codec": producer_codec, "linger.ms": 50})
    for i in range(10):
        producer.produce(topic, value=b"value %d " % i * 20, partition=0)
    assert producer.flush(30) == 0
    batches = _batches(broker, topic)
    gzip_codec = 1  # the codec bits of a batch's attributes
    assert batches and all(codec == gzip_codec for codec, _ in batches)
    assert [v for _, values in batches for v in values] == [b"value %d " % i * 20
                                                            for i in range(10)]


def test_compression_type_producer_keeps_the_producers_codec(broker):
    topic = new_topic(broker)  # compression.type=producer, Kafka's default
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers,
                            "compression.codec": "lz4"})
    producer.produce(topic, value=b"x" * 100, partition=0)
    assert producer.flush(30) == 0
    lz4_codec = 3
    assert [codec for codec, _ in _batches(broker, topic)] == [lz4_codec]


def test_describe_configs_documents_what_has_no_effect_here(broker):
    client = InterBrokerClient(broker.advertised_host, broker.advertised_port, "test", 30)
    try:
        topic = new_topic(broker)
        response = client.send(ApiKey.DESCRIBE_CONFIGS, 4, {
            "resources": [{"resource_type": RESOURCE_TYPE_TOPIC, "resource_name": topic,
                           "configuration_keys": ["preallocate", "compression.type"]}],
            "include_synoyms": False, "include_documentation": True})
    finally:
        client.close()
    docs = {c["name"]: (c["documentation"], c["config_type"])
            for c in response["results"][0]["configs"]}
    assert "no effect on this broker" in docs["preallocate"][0]
    assert "recompress" in docs["compression.type"][0]
    assert (docs["preallocate"][1], docs["compression.type"][1]) == (ConfigType.BOOLEAN,
                                                                     ConfigType.STRING)


# -- what the configs mean in the log ------------------------------------------------------------

def _filled_log(path, **props):
    import time

    from kafkacore.broker.log import Log, LogConfig
    from kafkacore.core.memory_records_builder import MemoryRecordsBuilder

    cfg = LogConfig.from_properties({"internal.segment.bytes": "2000", **props})
    lg = Log(path, cfg, topic="t", partition=0)
    for i in range(40):
        b = MemoryRecordsBuilder(1 << 12)
        b.append(int(time.time() * 1000), b"k", b"v%03d" % i + b"." * 100)
        lg.append_as_leader(bytes(b.build()))
    return lg


def test_file_delete_delay_ms_keeps_a_deleted_segments_files_until_it_passes(tmp_path):
    import os

    lg = _filled_log(tmp_path / "t-0", **{"retention.bytes": "3000",
                                           "file.delete.delay.ms": "60000"})
    first = lg.segments[0]
    now = 1_000_000_000_000
    assert lg.delete_old_segments(now_ms=now) > 0 and lg.log_start_offset > 0
    names = sorted(os.listdir(tmp_path / "t-0"))
    assert first.log_path.name in names and first.log_path.name.endswith(".log.deleted")
    assert os.path.getsize(first.log_path) == first.size  # whole, for a read still sending it
    assert lg.delete_doomed_files(now + 59_999) == 0
    assert lg.delete_doomed_files(now + 60_000) > 0
    assert not any(n.endswith(".deleted") for n in os.listdir(tmp_path / "t-0"))
    lg.close()


def test_file_delete_delay_ms_zero_deletes_at_once_and_a_restart_clears_leftovers(tmp_path):
    import os

    lg = _filled_log(tmp_path / "t-0", **{"retention.bytes": "3000",
                                           "file.delete.delay.ms": "0"})
    assert lg.delete_old_segments() > 0
    assert not any(n.endswith(".deleted") for n in os.listdir(tmp_path / "t-0"))
    (tmp_path / "t-0" / "00000000000000000000.log.deleted").write_bytes(b"left by a stop")
    lg.close()
    from kafkacore.broker.log import Log

    again = Log(tmp_path / "t-0", lg.config, topic="t", partition=0)
    assert not any(n.endswith(".deleted") for n in os.listdir(tmp_path / "t-0"))
    again.close()


def test_segment_jitter_ms_rolls_each_segment_a_little_before_segment_ms(tmp_path):
    lg = _filled_log(tmp_path / "t-0", **{"segment.ms": "100000",
                                           "segment.jitter.ms": "50000"})
    jitters = [s.roll_jitter_ms for s in lg.segments[1:]]
    assert all(0 <= j < 50000 for j in jitters) and len(set(jitters)) > 1
    lg.close()


def test_segment_index_bytes_rolls_a_segment_whose_index_is_full(tmp_path):
    # 24 bytes: three offset-index entries, two time-index entries; an entry every batch
    lg = _filled_log(tmp_path / "t-0", **{"segment.index.bytes": "24",
                                           "index.interval.bytes": "0"})
    assert len(lg.segments) >= 8  # 2000-byte segments alone would make 4
    assert all(len(s.index) <= 3 and len(s.time_index) <= 2 for s in lg.segments)
    lg.close()
