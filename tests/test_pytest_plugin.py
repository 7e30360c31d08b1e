"""The pytest plugin (kafkacore.testing.pytest_plugin) as a user meets it: a test file of theirs
run by pytest in a child process, with clients we did not write talking to the fixture's broker.
"""

from __future__ import annotations

import pytest
from support.children import child_env

pytest_plugins = ["pytester"]

USER_TESTS = '''
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as kafka_errors


@pytest.fixture(scope="module")
def producer(kafka_broker):
    p = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers, api_version=(2, 5),
                      retries=0, acks=1)
    yield p
    p.close(10)


def read(bootstrap, topic, n):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=(2, 5),
                             consumer_timeout_ms=20000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    values = []
    for message in consumer:
        values.append(message.value)
        if len(values) == n:
            break
    consumer.close()
    return values


def test_a_round_trip(kafka_broker, kafka_topic, producer):
    assert producer.send(kafka_topic, b"hello", partition=0).get(timeout=30).offset == 0
    assert read(kafka_broker.bootstrap_servers, kafka_topic, 1) == [b"hello"]


def test_faults_seen_by_the_application(kafka_broker, producer):
    topic = kafka_broker.new_topic(partitions=3)
    kafka_broker.faults.fail_next("Produce", ["NOT_LEADER_OR_FOLLOWER"])
    with pytest.raises(kafka_errors.NotLeaderForPartitionError):
        producer.send(topic, b"x", partition=2).get(timeout=30)
    kafka_broker.faults.fail_next("Produce", ["REQUEST_TIMED_OUT"])  # left for the plugin


def test_faults_are_switched_off_between_tests(kafka_broker, kafka_topic, producer):
    assert kafka_broker.faults.pending() == {}
    assert producer.send(kafka_topic, b"y", partition=0).get(timeout=30).offset == 0


def test_one_broker_per_session(kafka_broker, request):
    assert request.getfixturevalue("kafka_broker") is kafka_broker
    assert kafka_broker.broker.config["num.partitions"] == 3
'''


@pytest.mark.timeout(180)
def test_a_users_tests_get_a_broker_and_its_faults(pytester, monkeypatch):
    for key, value in child_env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1").items():
        monkeypatch.setenv(key, value)
    pytester.makeini("[pytest]\nkafkacore_broker_config =\n    num.partitions=3\n")
    pytester.makepyfile(test_users_app=USER_TESTS)
    result = pytester.runpytest_subprocess("-p", "kafkacore.testing.pytest_plugin", "-q",
                                           timeout=150)
    result.assert_outcomes(passed=4)


@pytest.mark.timeout(120)
def test_a_bad_setting_is_a_usage_error(pytester, monkeypatch):
    for key, value in child_env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1").items():
        monkeypatch.setenv(key, value)
    pytester.makeini("[pytest]\nkafkacore_broker_config =\n    num.partitions\n")
    pytester.makepyfile(test_x="def test_x(kafka_broker):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "kafkacore.testing.pytest_plugin", timeout=100)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*expected key=value*"])


USER_CLUSTER_TESTS = '''
from kafka import KafkaProducer
from kafkacore.admin import create_topics


def test_killing_a_leader(kafka_cluster):
    create_topics(kafka_cluster.bootstrap_servers, {"orders": 1}, replication_factor=3)
    kafka_cluster.wait_for_isr("orders", 0, [1, 2, 3])
    kafka_cluster.wait_for_topic("orders")
    leader = kafka_cluster.leader_of("orders", 0)
    kafka_cluster.kill(leader)
    assert kafka_cluster.wait_for_leader_change("orders", 0, leader) != leader
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers, acks="all")
    assert producer.send("orders", b"after", partition=0).get(timeout=60).offset == 0
    producer.close(10)


def test_the_killed_broker_is_back(kafka_cluster):
    assert all(node.running for node in kafka_cluster.brokers.values())
    kafka_cluster.wait_for_isr("orders", 0, [1, 2, 3])
'''


@pytest.mark.cluster
@pytest.mark.timeout(240)
def test_a_users_tests_get_a_cluster_to_break(pytester, monkeypatch):
    for key, value in child_env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1").items():
        monkeypatch.setenv(key, value)
    pytester.makeini("[pytest]\nkafkacore_cluster_config =\n    broker.session.timeout.ms=3000\n")
    pytester.makepyfile(test_users_cluster=USER_CLUSTER_TESTS)
    result = pytester.runpytest_subprocess("-p", "kafkacore.testing.pytest_plugin", "-q",
                                           timeout=200)
    result.assert_outcomes(passed=2)
