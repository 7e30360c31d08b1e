"""GROUP config resources (Kafka 4's GroupConfig): described and altered by confluent-kafka's
admin client, checked as Kafka checks them, kept across a restart, and in force for the group's
consumer-protocol members (docs/broker/configs.rst)."""

from __future__ import annotations

import pytest
from waits import wait_until

from kafkacore.broker.server.broker_server import Broker

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)

KAFKA_4_GROUP_CONFIGS = {
    "consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "5000",
    "share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "5000",
    "share.record.lock.duration.ms": "30000", "share.auto.offset.reset": "latest",
    "share.isolation.level": "read_uncommitted", "streams.session.timeout.ms": "45000",
    "streams.heartbeat.interval.ms": "5000", "streams.num.standby.replicas": "0",
}


def _describe(admin, group):
    [future] = admin.describe_configs([ConfigResource("GROUP", group)]).values()
    return future.result(30)


def _alter(admin, group, *entries):
    resource = ConfigResource("GROUP", group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op) for name, value, op in entries])
    [future] = admin.incremental_alter_configs([resource]).values()
    return future.result(30)


def test_group_configs_described_altered_checked_and_kept(tmp_path):
    config = {"log.dirs": str(tmp_path), "num.network.threads": "1", "num.io.threads": "1"}
    with Broker(config) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        described = _describe(admin, "g1")  # a group need not exist to be described
        assert {k: e.value for k, e in described.items()} == KAFKA_4_GROUP_CONFIGS
        assert all(e.source == ConfigSource.DEFAULT_CONFIG.value for e in described.values())
        _alter(admin, "g1", ("consumer.session.timeout.ms", "50000", AlterConfigOpType.SET),
               ("consumer.heartbeat.interval.ms", "6000", AlterConfigOpType.SET),
               ("share.auto.offset.reset", "earliest", AlterConfigOpType.SET))
        described = _describe(admin, "g1")
        assert described["consumer.session.timeout.ms"].value == "50000"
        assert described["consumer.session.timeout.ms"].source == \
            ConfigSource.GROUP_CONFIG.value
        assert described["share.auto.offset.reset"].value == "earliest"
        # Kafka's checks: names, types, the broker's bounds, session > heartbeat
        for bad in [("no.such.config", "1"), ("consumer.session.timeout.ms", "soon"),
                    ("consumer.session.timeout.ms", "1000"),  # below the broker's minimum
                    ("consumer.heartbeat.interval.ms", "20000"),  # above its maximum
                    ("share.record.lock.duration.ms", "999"),
                    ("share.auto.offset.reset", "never")]:
            with pytest.raises(ck.KafkaException) as exc:
                _alter(admin, "g1", (*bad, AlterConfigOpType.SET))
            assert exc.value.args[0].code() == ck.KafkaError.INVALID_CONFIG, bad
        _alter(admin, "g1", ("share.auto.offset.reset", None, AlterConfigOpType.DELETE))
    with Broker(config) as broker:  # persisted in the metadata log
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        described = _describe(admin, "g1")
        assert (described["consumer.session.timeout.ms"].value,
                described["consumer.heartbeat.interval.ms"].value,
                described["share.auto.offset.reset"].value) == ("50000", "6000", "latest")


def test_a_groups_heartbeat_interval_reaches_its_members(tmp_path):
    """A consumer-protocol member (KIP-848) of a group with its own
    consumer.heartbeat.interval.ms is told that interval in its heartbeat answers."""
    from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
    from kafkacore.protocol.api_keys import ApiKey

    with Broker({"num.network.threads": "1", "num.io.threads": "1",
                 "offsets.topic.num.partitions": "1"}) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        _alter(admin, "g2", ("consumer.heartbeat.interval.ms", "7000", AlterConfigOpType.SET))
        client = InterBrokerClient(broker.advertised_host, broker.advertised_port, "test", 30)
        try:
            body = {"group_id": "g2", "member_id": "m-1", "member_epoch": 0,
                    "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000,
                    "subscribed_topic_names": ["t"], "server_assignor": None,
                    "topic_partitions": []}
            # The coordinator loads __consumer_offsets first (COORDINATOR_LOAD_IN_PROGRESS).
            response = wait_until(
                lambda: (r := client.send(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, body))
                ["error_code"] == 0 and r, "the member joins g2")
            assert response["heartbeat_interval_ms"] == 7000
        finally:
            client.close()
