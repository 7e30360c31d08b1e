"""Limits one request cannot pass (Kafka's caps, and ours where Kafka has none): partitions per
CreateTopics and records per CreatePartitions, partitions per broker, the broker's own file
descriptors, and the partitions a fetch session (and one client's sessions) may hold.  Judged
by confluent-kafka's and kafka-python's admin clients against a broker process, a 3-broker
cluster and, for the fetch sessions, Kafka's own Fetch asked by hand."""

from __future__ import annotations

import resource

import kafka.errors
import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka import KafkaAdminClient
from kafka.admin import NewPartitions as KpNewPartitions
from kafka.admin import NewTopic as KpNewTopic
from support.topics import new_topic
from test_admin_calls import _call
from test_fetch_sessions import FetchClient, topic_id_of
from waits import wait_until

from kafkacore import KafkaProducer
from kafkacore.broker import Broker
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.controller.quorum_controller import QuorumController
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker

#: Kafka's messages for its two caps (ReplicationControlManager, EventHandlerExceptionInfo)
EXCESSIVE_PARTITIONS_MESSAGE = "Excessively large number of partitions per request."
EXCESSIVE_BATCH_MESSAGE = "Unable to perform excessively large batch operation."


def _admin(bootstrap: str) -> AdminClient:
    """confluent-kafka's admin client, once it knows the cluster.  librdkafka (2.10 and later)
    drops its bootstrap connections when the first Metadata names the brokers, and a request
    queued on one of them at that moment fails in the client (``_DESTROY_BROKER``, "Broker handle
    destroyed without termination") without reaching any broker: CI met it once."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.list_topics(timeout=30)
    return admin


def _create(bootstrap: str, topics: list[NewTopic], **options) -> dict[str, KafkaError | None]:
    """confluent-kafka's CreateTopics: topic -> its error (None: created)."""
    admin = _admin(bootstrap)
    out: dict[str, KafkaError | None] = {}
    for name, future in admin.create_topics(topics, request_timeout=60, **options).items():
        try:
            future.result(timeout=60)
            out[name] = None
        except KafkaException as exc:
            out[name] = exc.args[0]
    return out


def _grow(bootstrap: str, topic: str, count: int) -> KafkaError | None:
    admin = _admin(bootstrap)
    try:
        admin.create_partitions([NewPartitions(topic, count)])[topic].result(timeout=60)
    except KafkaException as exc:
        return exc.args[0]
    return None


def _refused_whole(where: str) -> None:
    """One CreateTopics of 20,000 partitions, and a fuzzed CreatePartitions: each refused with
    POLICY_VIOLATION and Kafka's message, nothing made; then an ordinary request still works."""
    answers = _create(where, [NewTopic("huge-a", 12_000, 1), NewTopic("huge-b", 8_000, 1)])
    assert {n: (e.code(), e.str()) for n, e in answers.items()} == {
        n: (KafkaError.POLICY_VIOLATION, EXCESSIVE_PARTITIONS_MESSAGE)
        for n in ("huge-a", "huge-b")}
    topic = new_topic(where, 2)
    error = _grow(where, topic, 100_000)  # the most confluent-kafka sends
    assert (error.code(), error.str()) == (KafkaError.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE)
    assert _grow(where, topic, 3) is None
    admin = KafkaAdminClient(bootstrap_servers=where)
    try:
        assert not {"huge-a", "huge-b"} & set(admin.list_topics())
        # (in a cluster, the broker asked may pull the controller's image a moment later)
        wait_until(lambda: len(admin.describe_topics([topic])[0]["partitions"]) == 3,
                   "the topic has its third partition")
    finally:
        admin.close()


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    """Our broker alone (its own controller), for this module."""
    with Broker({"log.dirs": str(tmp_path_factory.mktemp("limits"))}) as broker:
        yield broker


def test_a_broker_refuses_20000_partitions_in_one_request_and_serves_on(ours):
    _refused_whole(ours.bootstrap_servers)


@pytest.mark.cluster
def test_the_controller_refuses_20000_partitions_in_one_request_and_serves_on(cluster):
    _refused_whole(cluster.bootstrap_servers)


def test_max_partitions_per_broker_on_a_broker_alone(tmp_path):
    with Broker({"log.dirs": str(tmp_path), "max.partitions.per.broker": "10"}) as broker:
        where = broker.bootstrap_servers
        assert _create(where, [NewTopic("eight", 8, 1)]) == {"eight": None}
        # validate_only is checked as a creation is
        for options in ({"validate_only": True}, {}):
            [error] = _create(where, [NewTopic("three", 3, 1)], **options).values()
            assert error.code() == KafkaError.POLICY_VIOLATION
            assert "max.partitions.per.broker=10" in error.str()
        assert _grow(where, "eight", 11).code() == KafkaError.POLICY_VIOLATION
        assert _grow(where, "eight", 10) is None
        assert broker.log_manager.log_count == 10


def test_max_partitions_per_broker_in_the_controller(tmp_path):
    controller = QuorumController(BrokerConfig({
        "log.dirs": str(tmp_path), "process.roles": "controller",
        "max.partitions.per.broker": "4"}))
    for b in (1, 2):
        controller.register_broker(b, "127.0.0.1", 9000 + b, f"incarnation-{b}")
    # Two partitions with two replicas each: two on each broker.
    assert controller.create_topic("a", 2, 2, {})[0] == Errors.NONE
    assert controller.create_topic("b", 3, 1, {})[0] == Errors.NONE  # 2 + 1 or 2 + 2
    error, message, _ = controller.create_topic("c", 2, 2, {})
    assert error == Errors.POLICY_VIOLATION and "max.partitions.per.broker=4" in message
    assert "c" not in controller.replication.topics
    error, message = controller.create_partitions("a", 4, None, False)
    assert error == Errors.POLICY_VIOLATION and "c" not in controller.replication.topics
    assert len(controller.replication.topics["a"].partitions) == 2
    assert controller.replication.partition_counts() == {1: 3, 2: 4} or \
        controller.replication.partition_counts() == {1: 4, 2: 3}


def test_partitions_past_the_descriptor_budget_are_refused_not_the_log_dir(tmp_path):
    """A broker process whose descriptor limit is cut to 400 while it runs: a request for more
    partitions than that leaves (a quarter is kept back) is refused with POLICY_VIOLATION; the
    log dir stays online, the broker serves, and SIGTERM stops it.  Without the budget, logs are opened
    until the descriptors run out, and the log dir is taken offline."""
    broker = LocalBroker(kind="kafkacore", log_dirs=tmp_path / "logs")
    broker.start()
    try:
        resource.prlimit(broker.pid, resource.RLIMIT_NOFILE, (400, 400))
        [error] = _create(broker.bootstrap, [NewTopic("many", 500, 1)]).values()
        assert error is not None and error.code() == KafkaError.POLICY_VIOLATION, error
        assert "file descriptor" in error.str()
        # Still serving: a small topic is made, written and read back.
        topic = new_topic(broker, 3)
        with KafkaProducer({"bootstrap.servers": broker.bootstrap}) as producer:
            for p in range(3):
                producer.send(topic, b"v%d" % p, partition=p)
            producer.flush(timeout=30)
        response = _call(broker, ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None})
        assert [d["error_code"] for d in response["results"]] == [Errors.NONE]
        # SIGTERM stops it, cleanly.
        assert broker.stop(30) == 0
    finally:
        broker.stop()


# -- fetch sessions ------------------------------------------------------------------------------

@pytest.fixture
def small_sessions(tmp_path):
    """A broker whose sessions hold at most 3 partitions, and one client's at most 5."""
    with Broker({"log.dirs": str(tmp_path)}) as broker:
        cache = broker.fetch_manager.cache
        cache.max_session_partitions = 3
        cache.client_share = 5
        client = FetchClient(broker)
        try:
            yield broker, client
        finally:
            client.close()


def test_a_full_fetch_past_a_sessions_bound_is_answered_whole_without_a_session(small_sessions):
    broker, client = small_sessions
    topic = new_topic(broker, 4)
    topic_id = topic_id_of(client, topic)
    # Four partitions: answered, every one, with no session (as Kafka answers a full cache).
    error, session, parts = client.fetch(topic_id, 0, 0, {0: 0, 1: 0, 2: 0, 3: 0})
    assert (error, session, sorted(parts)) == (Errors.NONE, 0, [0, 1, 2, 3])
    assert len(broker.fetch_manager.cache) == 0
    # Three: a session; an incremental fetch that would make it four ends it, and the
    # client's next (full) fetch starts over.
    error, session, _ = client.fetch(topic_id, 0, 0, {0: 0, 1: 0, 2: 0})
    assert error == Errors.NONE and session != 0
    assert client.fetch(topic_id, session, 1, {3: 0})[0] == Errors.FETCH_SESSION_ID_NOT_FOUND
    assert broker.fetch_manager.cache.total_partitions == 0


def test_one_clients_sessions_take_their_own_place_not_the_cache(small_sessions):
    broker, client = small_sessions
    topic = new_topic(broker, 3)
    topic_id = topic_id_of(client, topic)
    _, first, _ = client.fetch(topic_id, 0, 0, {0: 0, 1: 0, 2: 0})
    _, second, _ = client.fetch(topic_id, 0, 0, {0: 0, 1: 0, 2: 0})
    # 3 + 3 > 5: the second took the first's place; the client never holds more than its share.
    assert 0 not in (first, second) and first != second
    assert broker.fetch_manager.cache.get(first) is None
    assert broker.fetch_manager.cache.total_partitions == 3
    assert client.fetch(topic_id, first, 1, {})[0] == Errors.FETCH_SESSION_ID_NOT_FOUND
    assert client.fetch(topic_id, second, 1, {})[:2] == (Errors.NONE, second)


def test_kafka_python_admin_sees_the_same_caps(ours):
    """kafka-python's admin client gets the same typed errors (a client we did not write),
    for a CreatePartitions asking for the largest count the protocol carries."""
    admin = KafkaAdminClient(bootstrap_servers=ours.bootstrap_servers)
    try:
        with pytest.raises(kafka.errors.PolicyViolationError, match="Excessively large"):
            admin.create_topics([KpNewTopic("huge-kp", 20_000, 1)], timeout_ms=60_000)
        topic = new_topic(ours, 1)
        with pytest.raises(kafka.errors.PolicyViolationError, match="excessively large batch"):
            admin.create_partitions({topic: KpNewPartitions(2**31 - 1)})
        [described] = admin.describe_topics([topic])
        assert len(described["partitions"]) == 1
    finally:
        admin.close()
