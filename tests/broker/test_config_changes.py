"""Config changes on our broker (AlterConfigs, IncrementalAlterConfigs), judged by confluent-kafka's
AdminClient and kafka-python's KafkaAdminClient: a topic's and a broker's dynamic settings take
effect at once, survive a restart, are described with their source, and bad changes are refused
with Kafka's error codes, changing nothing."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import AlterConfigOp
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpConfigResourceType
from support.topics import new_topic
from test_admin_calls import _call
from waits import wait_until

from kafkacore.broker.config.logging_controller import RESOURCE_TYPE_BROKER_LOGGER
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker

TOPIC, BROKER = 2, 4  # ConfigResource types on the wire


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    with LocalBroker(kind="kafkacore", log_dirs=tmp_path_factory.mktemp("configs"), config={
            "log.retention.check.interval.ms": "200", "log.initial.task.delay.ms": "0"}) as b:
        yield b


def _admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _incremental(admin, kind, name, *entries, validate_only=False):
    resource = ConfigResource(kind, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=op) for key, value, op in entries])
    [future] = admin.incremental_alter_configs([resource], validate_only=validate_only).values()
    return future.result(timeout=30)


def _described(admin, kind, name):
    [future] = admin.describe_configs([ConfigResource(kind, name)]).values()
    return future.result(timeout=30)


def _error_of(call):
    with pytest.raises(KafkaException) as exc:
        call()
    return exc.value.args[0]


def test_a_topics_retention_changes_while_it_runs(ours):
    admin = _admin(ours)
    topic = new_topic(ours, configs={"internal.segment.bytes": "1024"})
    producer = KafkaProducer(bootstrap_servers=ours.bootstrap)
    for _ in range(20):  # one batch each, several batches a segment
        producer.send(topic, b"x" * 200, partition=0).get(timeout=30)
    producer.close()
    _incremental(admin, "topic", topic, ("retention.ms", "1", AlterConfigOpType.SET))
    described = _described(admin, "topic", topic)
    assert described["retention.ms"].value == "1"
    assert described["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert described["internal.segment.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    # Log maintenance deletes the old segments under the new retention.
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=ours.bootstrap)
    try:
        wait_until(lambda: consumer.beginning_offsets([tp])[tp] > 0,
                   "retention deletes segments under retention.ms=1", bound_s=30)
    finally:
        consumer.close()
    # DELETE brings the default back.
    _incremental(admin, "topic", topic, ("retention.ms", None, AlterConfigOpType.DELETE))
    described = _described(admin, "topic", topic)
    assert described["retention.ms"].value == "604800000"
    assert described["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_bad_topic_changes_are_refused_and_change_nothing(ours):
    admin = _admin(ours)
    topic = new_topic(ours, configs={"retention.ms": "1000000"})

    def refused(*entries):
        return _error_of(lambda: _incremental(admin, "topic", topic, *entries))

    wrong_type = refused(("retention.ms", "soon", AlterConfigOpType.SET),
                         ("retention.bytes", "5", AlterConfigOpType.SET))
    assert wrong_type.name() == "INVALID_CONFIG"
    assert "Invalid value soon for configuration retention.ms" in wrong_type.str()
    unknown = refused(("retention.msx", "5", AlterConfigOpType.SET))
    assert unknown.name() == "INVALID_CONFIG"
    assert "Unknown topic config name: retention.msx" in unknown.str()
    below = refused(("retention.ms", "-5", AlterConfigOpType.SET))
    assert below.name() == "INVALID_CONFIG"
    appended = refused(("retention.ms", "5", AlterConfigOpType.APPEND))
    assert appended.name() == "INVALID_CONFIG"
    missing = _error_of(lambda: _incremental(admin, "topic", "no-such-topic",
                                             ("retention.ms", "5", AlterConfigOpType.SET)))
    assert missing.name() == "UNKNOWN_TOPIC_OR_PART"  # librdkafka's name
    # validate_only checks and changes nothing.
    _incremental(admin, "topic", topic, ("retention.ms", "5", AlterConfigOpType.SET),
                 validate_only=True)
    described = _described(admin, "topic", topic)
    assert described["retention.ms"].value == "1000000"
    assert described["retention.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def _kafka_python_alter(broker, kind, name, configs, incremental=True):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        return admin.alter_configs([KpConfigResource(kind, name, configs=configs)],
                                   incremental=incremental, raise_on_unknown=False)
    finally:
        admin.close()


def _alter_default(broker, operation, value):
    response = _call(broker, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
        {"resource_type": BROKER, "resource_name": "", "configs": [
            {"name": "log.retention.ms", "config_operation": operation, "value": value}]}],
        "validate_only": False})
    assert response["responses"][0]["error_code"] == Errors.NONE, response


def test_broker_defaults_reach_every_topic_and_survive_a_restart(ours):
    admin = _admin(ours)
    topic = new_topic(ours)
    # Both clients refuse the empty name of the cluster-wide default (Java's kafka-configs
    # --entity-default sends it): we send it ourselves.
    _alter_default(ours, 0, "3600000")
    described = _described(admin, "broker", "1")
    assert described["log.retention.ms"].value == "3600000"
    assert described["log.retention.ms"].source == \
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    assert _described(admin, "topic", topic)["retention.ms"].value == "3600000"
    assert _described(admin, "topic", topic)["retention.ms"].source == \
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    [default] = _call(ours, ApiKey.DESCRIBE_CONFIGS, 4, {
        "resources": [{"resource_type": BROKER, "resource_name": "",
                       "configuration_keys": None}],
        "include_synoyms": False, "include_documentation": False})["results"]
    assert [(c["name"], c["value"]) for c in default["configs"]] == [
        ("log.retention.ms", "3600000")]
    # This broker's own value wins over the cluster-wide default.
    _incremental(admin, "broker", "1", ("log.retention.ms", "7200000", AlterConfigOpType.SET))
    assert _described(admin, "broker", "1")["log.retention.ms"].source == \
        ConfigSource.DYNAMIC_BROKER_CONFIG.value
    ours.restart()
    admin = _admin(ours)
    assert _described(admin, "topic", topic)["retention.ms"].value == "7200000"
    assert _described(admin, "broker", "1")["log.retention.ms"].value == "7200000"
    # A setting that needs a restart, an unknown one, a wrong value: refused, nothing changed.
    static = _error_of(lambda: _incremental(admin, "broker", "1",
                                            ("num.io.threads", "4", AlterConfigOpType.SET)))
    assert static.name() == "INVALID_REQUEST"
    unknown = _error_of(lambda: _incremental(
        admin, "broker", "1", ("log.retention.hourz", "4", AlterConfigOpType.SET)))
    assert unknown.name() == "INVALID_CONFIG"
    wrong = _error_of(lambda: _incremental(admin, "broker", "1",
                                           ("log.retention.ms", "x", AlterConfigOpType.SET)))
    assert wrong.name() == "INVALID_CONFIG"
    other = _call(ours, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
        {"resource_type": BROKER, "resource_name": "7", "configs": [
            {"name": "log.retention.ms", "config_operation": 0, "value": "5"}]}],
        "validate_only": False})  # (a client sends it to broker 7, which does not exist)
    assert other["responses"][0]["error_code"] == Errors.INVALID_REQUEST
    assert _described(admin, "broker", "1")["log.retention.ms"].value == "7200000"
    _incremental(admin, "broker", "1", ("log.retention.ms", None, AlterConfigOpType.DELETE))
    _alter_default(ours, 1, None)
    assert _described(admin, "broker", "1")["log.retention.ms"].source == \
        ConfigSource.DEFAULT_CONFIG.value


def test_confluent_kafkas_alter_configs_replaces_the_whole_set(ours):
    admin = _admin(ours)
    topic = new_topic(ours, configs={"retention.bytes": "100000"})
    [future] = admin.alter_configs([ConfigResource(
        "topic", topic, set_config={"retention.ms": "654321"})]).values()
    future.result(timeout=30)
    described = _described(admin, "topic", topic)
    assert described["retention.ms"].value == "654321"
    assert described["retention.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def test_kafka_python_alters_configs_both_ways(ours):
    topic = new_topic(ours, configs={"retention.bytes": "100000"})
    _kafka_python_alter(ours, KpConfigResourceType.TOPIC, topic, {"retention.ms": "123456"})
    # AlterConfigs replaces the whole set; kafka-python sends the others it finds described as
    # the topic's own along with the new one, so they stay.
    _kafka_python_alter(ours, KpConfigResourceType.TOPIC, topic, {"max.message.bytes": "20000"},
                        incremental=False)
    described = _described(_admin(ours), "topic", topic)
    assert [described[k].value for k in ("max.message.bytes", "retention.bytes", "retention.ms")
            ] == ["20000", "100000", "123456"]


def test_every_version_answers_and_checks(ours):
    topic = new_topic(ours)
    for version in (0, 1):
        response = _call(ours, ApiKey.INCREMENTAL_ALTER_CONFIGS, version, {
            "resources": [
                {"resource_type": TOPIC, "resource_name": topic, "configs": [
                    {"name": "cleanup.policy", "config_operation": 2, "value": "delete"},
                    {"name": "flush.ms", "config_operation": 0, "value": str(1000 + version)}]},
                {"resource_type": TOPIC, "resource_name": topic + "-x", "configs": []},
                {"resource_type": 99, "resource_name": "x", "configs": []}],
            "validate_only": False})
        assert [r["error_code"] for r in response["responses"]] == [
            Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.INVALID_REQUEST]
    for version in (0, 1, 2):
        response = _call(ours, ApiKey.ALTER_CONFIGS, version, {
            "resources": [{"resource_type": TOPIC, "resource_name": topic, "configs": [
                {"name": "flush.ms", "value": str(2000 + version)},
                {"name": "flush.ms", "value": "1"}]}],
            "validate_only": False})
        assert response["responses"][0]["error_code"] == Errors.INVALID_REQUEST  # repeated
        response = _call(ours, ApiKey.ALTER_CONFIGS, version, {
            "resources": [{"resource_type": TOPIC, "resource_name": topic, "configs": [
                {"name": "flush.ms", "value": str(2000 + version)}]}],
            "validate_only": False})
        assert response["responses"][0]["error_code"] == Errors.NONE
    described = _described(_admin(ours), "topic", topic)
    assert described["flush.ms"].value == "2002"
    # AlterConfigs replaced the whole set: cleanup.policy, set before, is back to its default.
    assert described["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG.value


def test_broker_loggers_change_at_run_time(ours):
    """BROKER_LOGGER, judged by kafka-python's admin client (confluent-kafka has no such
    resource type): the broker's loggers are described with their levels, a SET changes what
    the broker writes at once, DELETE brings the parent's level back, bad changes change
    nothing."""
    logger = "kafkacore.broker.config.config_admin_manager"  # writes "topic ...: configs now" at INFO
    topic = new_topic(ours)
    admin = KafkaAdminClient(bootstrap_servers=ours.bootstrap)
    try:
        [node] = [str(b["broker_id"]) for b in admin.describe_cluster()["brokers"]]

        def levels():
            described = admin.describe_configs([KpConfigResource(
                KpConfigResourceType.BROKER_LOGGER, node)], config_filter="all")
            entries = described["broker_logger"][node]
            assert {e["config_source"] for e in entries.values()} == {
                "DYNAMIC_BROKER_LOGGER_CONFIG"}
            return {name: e["value"] for name, e in entries.items()}

        def alter(configs, validate_only=False):
            result = admin.alter_configs([KpConfigResource(
                KpConfigResourceType.BROKER_LOGGER, node, configs=configs)],
                validate_only=validate_only, raise_on_unknown=False)
            return str(result["broker_logger"][node])

        def change_a_topic(ms):
            _incremental(_admin(ours), "topic", topic, ("flush.ms", str(ms),
                                                        AlterConfigOpType.SET))
            return f"topic {topic}: configs now {{'flush.ms': '{ms}'}}"

        before = levels()
        assert (before["root"], before["kafkacore.broker"], before[logger]) == (
            "INFO", "INFO", "INFO")
        assert alter({logger: (AlterConfigOp.SET, "WARN")}, validate_only=True) == "OK"
        assert levels() == before
        assert alter({logger: (AlterConfigOp.SET, "WARN")}) == "OK"
        assert levels() == {**before, logger: "WARN"}
        # The broker answers a change after it logged it: at WARN the line is not written.
        assert change_a_topic(1001) not in ours.log_path.read_text()
        for configs, error, says in [
                ({logger: (AlterConfigOp.SET, "LOUD")}, "INVALID_CONFIG",
                 "Valid log levels are FATAL, ERROR, WARN, INFO, DEBUG, TRACE"),
                ({"no.such.logger": (AlterConfigOp.SET, "INFO")}, "INVALID_CONFIG",
                 "Logger no.such.logger does not exist"),
                ({"root": (AlterConfigOp.DELETE, None)}, "INVALID_REQUEST", "root"),
                ({logger: (AlterConfigOp.APPEND, "INFO")}, "INVALID_REQUEST", "APPEND")]:
            outcome = alter({**configs, "kafkacore.broker": (AlterConfigOp.SET, "ERROR")})
            assert error in outcome and says in outcome, outcome
        assert levels() == {**before, logger: "WARN"}  # the valid SET with them was not made
        assert alter({logger: (AlterConfigOp.DELETE, None)}) == "OK"
        assert levels() == before  # kafkacore.broker's again
        assert change_a_topic(1002) in ours.log_path.read_text()
    finally:
        admin.close()
    wrong_broker = _call(ours, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
        {"resource_type": RESOURCE_TYPE_BROKER_LOGGER, "resource_name": "7", "configs": []}],
        "validate_only": False})["responses"]
    assert wrong_broker[0]["error_code"] == Errors.INVALID_REQUEST
    # AlterConfigs, the older call, does not change loggers (nor does Kafka's).
    replaced = _call(ours, ApiKey.ALTER_CONFIGS, 2, {"resources": [
        {"resource_type": RESOURCE_TYPE_BROKER_LOGGER, "resource_name": node, "configs": [
            {"name": logger, "value": "WARN"}]}], "validate_only": False})["responses"]
    assert replaced[0]["error_code"] == Errors.INVALID_REQUEST


@pytest.mark.cluster
def test_config_changes_reach_every_broker_of_a_cluster(cluster):
    """In a cluster the controller keeps the change; every broker applies it from its pull."""
    from types import SimpleNamespace

    topic = new_topic(cluster, replication_factor=3)
    cluster.wait_for_topic(topic)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    _incremental(admin, "topic", topic, ("retention.ms", "4000000", AlterConfigOpType.SET))
    refused = _error_of(lambda: _incremental(
        admin, "topic", topic, ("retention.ms", "later", AlterConfigOpType.SET)))
    assert refused.name() == "INVALID_CONFIG"
    host, port = cluster.broker_address(2).rsplit(":", 1)
    _alter_default(SimpleNamespace(host=host, port=int(port)), 0, "5000000")

    def described(broker, kind, name, key):
        host, port = cluster.broker_address(broker).rsplit(":", 1)
        [result] = _call(SimpleNamespace(host=host, port=int(port)), ApiKey.DESCRIBE_CONFIGS, 4, {
            "resources": [{"resource_type": kind, "resource_name": name,
                           "configuration_keys": [key]}],
            "include_synoyms": False, "include_documentation": False})["results"]
        return [(c["value"], c["config_source"]) for c in result["configs"]]

    try:
        for broker in (1, 2, 3):
            wait_until(lambda b=broker: described(b, TOPIC, topic, "retention.ms") == [
                ("4000000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)],
                f"broker {broker} has the topic's retention.ms", bound_s=30)
            wait_until(lambda b=broker: described(b, BROKER, str(b), "log.retention.ms") == [
                ("5000000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)],
                f"broker {broker} has the default log.retention.ms", bound_s=30)
    finally:
        _alter_default(SimpleNamespace(host=host, port=int(port)), 1, None)
