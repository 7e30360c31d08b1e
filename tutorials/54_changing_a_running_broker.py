"""Changing a running broker: a topic's retention, a broker default, a group nobody uses.

We start kafkacore's broker with log maintenance every 200 ms, fill a topic whose segments are
small, then, with kafka-python's admin client and no restart:

1. shorten the topic's ``retention.ms`` (IncrementalAlterConfigs) and watch log maintenance
   delete its old segments: the log start offset moves;
2. set a broker-wide default (``log.retention.bytes``) and see a topic inherit it, described with
   the source of the value;
3. have a bad change refused, with Kafka's error, and nothing changed;
4. delete a consumer group once its consumer has left (DeleteGroups).

Every claim is checked with ``assert``.  The same changes from a shell, against any broker::

    kafka-configs.sh --bootstrap-server 127.0.0.1:9092 --alter --entity-type topics \\
        --entity-name orders --add-config retention.ms=1

See docs/broker/admin.rst.
"""

import time
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

from kafkacore import KafkaProducer
from kafkacore.broker.server.broker_server import Broker


def described(admin: Any, kind: Any, name: str, key: str) -> tuple[str, str]:
    """(value, source) of one setting, as DescribeConfigs answers."""
    response = admin.describe_configs([ConfigResource(kind, name)], config_filter="all")
    [by_name] = response.values()  # {"topic": {name: {key: {...}}}}
    found = by_name[name][key]
    return found["value"], found["config_source"]


def main() -> None:
    settings = {"log.retention.check.interval.ms": "200", "log.initial.task.delay.ms": "0"}
    with Broker(settings) as broker:
        bootstrap = broker.bootstrap_servers
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic("orders", 1, 1,
                                      topic_configs={"internal.segment.bytes": "2000"})])
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
        for i in range(60):
            producer.send("orders", value=b"order %03d " % i + b"." * 100).get(timeout=30)
        producer.close()
        tp = TopicPartition("orders", 0)
        consumer = KafkaConsumer(bootstrap_servers=bootstrap)
        start = consumer.beginning_offsets([tp])[tp]
        print(f"orders: 60 records, log start offset {start}")
        assert start == 0

        # --- start retention
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "orders",
                                            configs={"retention.ms": "1"})], incremental=True)
        print("retention.ms of orders:", described(admin, ConfigResourceType.TOPIC, "orders",
                                                    "retention.ms"))
        deadline = time.monotonic() + 30
        while start == 0 and time.monotonic() < deadline:  # maintenance runs every 200 ms
            time.sleep(0.1)
            start = consumer.beginning_offsets([tp])[tp]
        print(f"log maintenance deleted the old segments: log start offset now {start}")
        assert start > 0
        # --- end retention

        # --- start default
        admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, str(broker.broker_id),
                                            configs={"log.retention.bytes": "50000000"})],
                            incremental=True)
        inherited = described(admin, ConfigResourceType.TOPIC, "orders", "retention.bytes")
        print("retention.bytes of orders, inherited:", inherited)
        assert inherited[0] == "50000000"
        # --- end default

        # --- start refused
        result = admin.alter_configs([ConfigResource(
            ConfigResourceType.TOPIC, "orders", configs={"retention.ms": "soon"})],
            incremental=True, raise_on_unknown=False)
        [outcome] = [str(e) for by_name in result.values() for e in by_name.values()]
        print("retention.ms=soon:", outcome)
        assert "InvalidConfigurationError" in outcome
        assert described(admin, ConfigResourceType.TOPIC, "orders", "retention.ms")[0] == "1"
        # --- end refused

        # --- start group
        member = KafkaConsumer("orders", bootstrap_servers=bootstrap, group_id="billing",
                               enable_auto_commit=False)
        member.poll(timeout_ms=5000)
        member.commit()
        member.close()
        deleted = admin.delete_groups(["billing"])
        print("delete the group billing:", deleted)
        assert deleted == {"billing": "OK"}
        assert admin.list_groups() == []  # the only group is gone
        # --- end group
        consumer.close()
        admin.close()


if __name__ == "__main__":
    main()
