"""A topic's configs are checked by the controller before anything is recorded (Kafka's
``ControllerConfigurationValidator``), and a broker's metadata loader that meets a record it
cannot apply says so once, skips it, and applies the rest: no record wedges a broker."""

from __future__ import annotations

import logging
import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from support.topics import new_topic

from kafkacore.broker import Broker

#: configs no Kafka broker accepts: a number that is not, a value below its minimum, an
#: unknown name
BAD_CONFIGS = [{"segment.bytes": "not-a-number"}, {"retention.ms": "-7"},
               {"no.such.setting": "1"}]


def _create(bootstrap: str, topic: NewTopic, validate_only: bool = False) -> KafkaError | None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([topic], request_timeout=30,
                                 validate_only=validate_only)[topic.topic]
    try:
        future.result(timeout=30)
    except KafkaException as exc:
        return exc.args[0]
    return None


@pytest.mark.cluster
def test_the_controller_refuses_bad_configs_and_the_cluster_serves_on(cluster):
    """Each bad config is INVALID_CONFIG, with and without validate_only, and nothing is
    recorded; CreateTopics and an auto-creating Metadata keep working on every broker."""
    for configs in BAD_CONFIGS:
        for validate_only in (True, False):
            name = f"bad-{uuid.uuid4().hex[:8]}"
            error = _create(cluster.bootstrap_servers, NewTopic(name, 1, 1, config=configs),
                            validate_only)
            assert error is not None and error.code() == KafkaError.INVALID_CONFIG, \
                (configs, validate_only, error)
            # Nothing recorded: the controller's image has no such topic.
            assert name not in {t["name"] for t in cluster.metadata()["topics"]}
    # The cluster serves on: a topic created through each broker, and one auto-created by a
    # kafka-python consumer's Metadata, each with a leader every broker knows.
    for broker in (1, 2, 3):
        topic = new_topic(cluster.broker_address(broker), 2, replication_factor=2)
        cluster.wait_for_topic(topic)
    # confluent-kafka's producer asks Metadata for a topic nobody made: it is auto-created
    # and the record delivered.
    auto = f"auto-{uuid.uuid4().hex[:8]}"
    delivered: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "message.timeout.ms": 30000})
    producer.produce(auto, b"v", on_delivery=lambda err, _msg: delivered.append(err))
    assert producer.flush(40) == 0
    assert delivered == [None]
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        assert not any(t.startswith("bad-") for t in admin.list_topics())
    finally:
        admin.close()


def _partition(topic_id: uuid.UUID, index: int, broker_id: int) -> dict:
    return {"type": "PartitionRecord", "topic_id": str(topic_id), "partition_id": index,
            "leader": broker_id, "leader_epoch": 0, "replicas": [broker_id], "isr": [broker_id],
            "partition_epoch": 0}


def test_the_loader_skips_what_it_cannot_apply_and_applies_the_rest(tmp_path, caplog):
    """A pull whose records hold a topic with configs no broker can parse (as a controller
    that did not check them recorded it), a malformed partition record, a record that is no
    record, and a good topic: the good topic is applied, each bad thing is logged once at
    ERROR, and the next pull is applied as if nothing had happened."""
    with Broker({"log.dirs": str(tmp_path)}) as broker:
        me = broker.broker_id
        loader = broker.new_metadata_loader(None)  # records handed in directly: no pulls
        bad, good, later = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
        caplog.set_level(logging.ERROR, logger="kafkacore.broker.metadata.metadata_loader")
        loader._apply_records([  # noqa: SLF001 - one pull's records
            {"type": "TopicRecord", "name": "bad", "topic_id": str(bad)},
            {"type": "ConfigRecord", "resource_name": "bad", "name": "segment.bytes",
             "value": "not-a-number"},
            _partition(bad, 0, me),
            {**_partition(good, 0, me), "topic_id": "not-a-uuid"},
            {"type": "TopicRecord", "name": "good", "topic_id": str(good)},
            {**_partition(good, 1, me), "leader": "one"},
            ["not", "a", "record"],
            _partition(good, 0, me)])
        assert broker.metadata_cache.get("bad") is None
        assert broker.log_manager.get_log("bad", 0) is None
        assert broker.metadata_cache.get("good").partitions == 1
        assert broker.replica_manager.partitions[("good", 0)].is_leader
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 4, [r.getMessage() for r in errors]
        assert "topic bad" in errors[-1].getMessage()
        # The next pull: a new topic, and a change to the skipped one, which stays skipped.
        caplog.clear()
        loader._apply_records([  # noqa: SLF001
            {"type": "TopicRecord", "name": "later", "topic_id": str(later)},
            _partition(later, 0, me), _partition(later, 1, me),
            {**_partition(bad, 0, me), "type": "PartitionChangeRecord", "leader_epoch": 1}])
        assert broker.metadata_cache.get("later").partitions == 2
        assert broker.replica_manager.partitions[("later", 1)].is_leader
        assert broker.metadata_cache.get("bad") is None
        assert not [r for r in caplog.records if r.levelno == logging.ERROR]
