"""Incremental fetch sessions (KIP-227): kafka-python's consumer (its ``FetchSessionHandler``)
against our broker, Kafka's session errors asked by hand, the cache's bound, and a cluster's
followers fetching incrementally."""

from __future__ import annotations

import threading

import pytest
from kafka import KafkaConsumer, TopicPartition
from reactor_client import Client
from support.topics import new_replicated_topic, new_topic
from waits import wait_until

from kafkacore import KafkaProducer
from kafkacore.broker import Broker
from kafkacore.broker.server.fetch_session import FetchSessionCache
from kafkacore.broker.server.fetch_session_handler import FetchSessionHandler
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

SLOTS = 4


@pytest.fixture(scope="module")
def broker():
    with Broker({"num.network.threads": "1", "num.io.threads": "2",
                 "max.incremental.fetch.session.cache.slots": str(SLOTS)}) as b:
        yield b


class FetchClient(Client):
    def __init__(self, broker):
        super().__init__(broker, "test-fetch-sessions")

    def fetch(self, topic_id, session_id, epoch, offsets, forget=(), version=16, name=None,
              max_wait_ms=0):
        """A Fetch of ``{partition: offset}``; returns (error, session id, {partition: answer})."""
        ids = {"topic_id": topic_id} if version >= 13 else {"topic": name}
        topics = [{**ids, "partitions": [
            {"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 20}
            for p, o in offsets.items()]}] if offsets else []
        forgotten = [{**ids, "partitions": list(forget)}] if forget else []
        response = self.call(ApiKey.FETCH, version, {
            "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
            "session_id": session_id, "session_epoch": epoch, "topics": topics,
            "forgotten_topics_data": forgotten})
        parts = {p["partition_index"]: p for t in response["responses"] for p in t["partitions"]}
        return response["error_code"], response["session_id"], parts


@pytest.fixture(autouse=True)
def no_sessions(request):
    """Each test starts with an empty session cache (the cluster's test has its own)."""
    if "broker" in request.fixturenames:
        cache = request.getfixturevalue("broker").fetch_manager.cache
        for session in cache:
            cache.remove(session.id)


@pytest.fixture
def client(broker):
    c = FetchClient(broker)
    yield c
    c.close()


def produce(broker, topic, partitions, count=1, tag=0):
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        for p in partitions:
            for i in range(count):
                producer.send(topic, b"%d-%d-%d" % (tag, p, i), partition=p)
        producer.flush(timeout=30)


def topic_id_of(client, name):
    response = client.call(ApiKey.METADATA, 12, {"topics": [{"name": name}],
                                                 "allow_auto_topic_creation": False})
    return response["topics"][0]["topic_id"]


def test_kafka_python_consumer_reads_everything_once_over_one_incremental_session(broker):
    """kafka-python asks for a session on its first fetch and fetches incrementally after it:
    every record of every round arrives once, and the broker saw one full fetch only."""
    partitions, rounds = 12, 4
    topic = new_topic(broker, partitions)
    before = broker.fetch_manager.statistics()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, fetch_max_wait_ms=100)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        got: list[bytes] = []
        for r in range(rounds):
            # each round writes to half of the partitions: the others have nothing new
            produce(broker, topic, range(r % 2, partitions, 2), count=3, tag=r)
            expected = (r + 1) * partitions // 2 * 3

            def read(expected=expected):
                for records in consumer.poll(200).values():
                    got.extend(record.value for record in records)
                return len(got) >= expected

            wait_until(read, f"round {r}'s records")
    finally:
        consumer.close()
    assert len(got) == len(set(got)) == rounds * partitions // 2 * 3
    after = broker.fetch_manager.statistics()
    assert after["full_fetches"] - before["full_fetches"] == 1
    assert after["session_errors"] == before["session_errors"]
    assert after["incremental_fetches"] - before["incremental_fetches"] >= rounds - 1


def test_an_incremental_fetch_answers_only_what_changed(broker, client):
    topic = new_topic(broker, 3)
    topic_id = topic_id_of(client, topic)
    error, session, parts = client.fetch(topic_id, 0, 0, {0: 0, 1: 0, 2: 0})
    assert error == Errors.NONE and session != 0 and sorted(parts) == [0, 1, 2]
    # nothing new: an empty answer, on the same session
    assert client.fetch(topic_id, session, 1, {}) == (Errors.NONE, session, {})
    produce(broker, topic, [1], count=2)
    error, _, parts = client.fetch(topic_id, session, 2, {})
    assert list(parts) == [1] and parts[1]["high_watermark"] == 2 and parts[1]["records"]
    # moving partition 1's offset past its records: nothing new again
    assert client.fetch(topic_id, session, 3, {1: 2}) == (Errors.NONE, session, {})
    # forgetting partitions shrinks the session; forgetting the last one closes it
    assert client.fetch(topic_id, session, 4, {}, forget=[0, 1])[:2] == (Errors.NONE, session)
    assert broker.fetch_manager.cache.get(session).partitions.keys() == {(topic_id, 2)}
    assert client.fetch(topic_id, session, 5, {}, forget=[2]) == (Errors.NONE, 0, {})
    assert broker.fetch_manager.cache.get(session) is None


def test_an_incremental_fetch_waits_in_the_purgatory_for_its_sessions_partitions(broker, client):
    """An incremental fetch naming no partition still long-polls on all of its session's, and
    its answer, made when the data comes, has the partition that got it only."""
    topic = new_topic(broker, 3)
    topic_id = topic_id_of(client, topic)
    _, session, _ = client.fetch(topic_id, 0, 0, {0: 0, 1: 0, 2: 0})
    purgatory = broker.replica_manager.fetch_purgatory
    answer: list = []
    waiting = threading.Thread(target=lambda: answer.append(
        client.fetch(topic_id, session, 1, {}, max_wait_ms=25_000)))
    waiting.start()
    wait_until(lambda: purgatory.num_delayed() >= 1, "the fetch waiting in the purgatory")
    produce(broker, topic, [2])
    waiting.join(30)
    [(error, session_id, parts)] = answer
    assert (error, session_id, list(parts)) == (Errors.NONE, session, [2])
    assert parts[2]["high_watermark"] == 1


def test_session_errors(broker, client):
    topic = new_topic(broker, 1)
    topic_id = topic_id_of(client, topic)
    _, session, _ = client.fetch(topic_id, 0, 0, {0: 0})
    assert client.fetch(topic_id, session, 1, {})[:2] == (Errors.NONE, session)
    # a retried request (the same epoch again) and a wrong one
    for epoch in (1, 7):
        assert client.fetch(topic_id, session, epoch, {}) == (
            Errors.INVALID_FETCH_SESSION_EPOCH, 0, {})
    assert client.fetch(topic_id, session + 1, 2, {}) == (Errors.FETCH_SESSION_ID_NOT_FOUND, 0, {})
    # made with topic ids (v13+), asked by name (v12)
    assert client.fetch(None, session, 2, {0: 0}, version=12, name=topic) == (
        Errors.FETCH_SESSION_TOPIC_ID_ERROR, 0, {})
    # epoch -1 closes the session and answers in full, without one
    error, session_id, parts = client.fetch(topic_id, session, -1, {0: 0})
    assert (error, session_id, list(parts)) == (Errors.NONE, 0, [0])
    assert client.fetch(topic_id, session, 2, {}) == (Errors.FETCH_SESSION_ID_NOT_FOUND, 0, {})


def test_a_flood_of_new_sessions_never_grows_the_cache_past_its_slots(broker, client):
    topic = new_topic(broker, 2)
    topic_id = topic_id_of(client, topic)
    flood = [FetchClient(broker) for _ in range(5)]
    try:
        sessions = [c.fetch(topic_id, 0, 0, {0: 0, 1: 0})[1] for _ in range(SLOTS) for c in flood]
    finally:
        for c in flood:
            c.close()
    assert len(broker.fetch_manager.cache) == SLOTS
    # the first ones got a session, those after them none: sessions in use are not pushed out
    kept = [s for s in sessions if s != 0]
    assert {s.id for s in broker.fetch_manager.cache} >= set(kept[-SLOTS:])
    assert sessions[-1] == 0


def test_eviction_rules():
    """Kafka's: stale sessions go first; a follower pushes out a consumer; a young session
    stays; an old one gives way to a larger one only."""
    now = [0]
    cache = FetchSessionCache(2, eviction_ms=1000, clock_ms=lambda: now[0])

    def create(privileged, size):
        return cache.maybe_create_session(privileged, True, size, lambda: dict.fromkeys(
            ((None, i) for i in range(size)), None))

    consumer, follower = create(False, 5), create(True, 5)
    assert create(False, 50) == 0  # nobody old enough to go
    follower2 = create(True, 1)  # a follower pushes out the consumer
    assert follower2 and cache.get(consumer) is None
    now[0] = 1500  # both old now, but used recently enough after a touch
    cache.touch(cache.get(follower))
    cache.touch(cache.get(follower2))
    assert create(False, 50) == 0  # a consumer never pushes out a follower
    assert create(True, 1) == 0  # nor a follower a larger or equal one
    bigger = create(True, 3)
    assert bigger and cache.get(follower2) is None and cache.get(follower) is not None
    now[0] = 3000  # follower unused since 1500: stale
    cache.touch(cache.get(bigger))
    assert create(False, 1) and cache.get(follower) is None
    assert len(cache) == 2 and cache.evictions == 3


def test_the_cache_bounds_the_partitions_of_all_sessions():
    cache = FetchSessionCache(10, eviction_ms=1000, clock_ms=lambda: 0, max_partitions=10)

    def create(privileged, size):
        return cache.maybe_create_session(privileged, True, size, lambda: dict.fromkeys(
            ((None, i) for i in range(size)), None))

    assert create(False, 11) == 0
    consumer = create(False, 6)
    assert create(False, 6) == 0 and create(True, 6)  # the follower's takes the consumer's place
    assert cache.get(consumer) is None and cache.total_partitions == 6
    session = cache.get(create(False, 4))
    session.partitions.update(dict.fromkeys([(None, 4), (None, 5)]))  # an incremental add
    assert not cache.touch(session) and cache.get(session.id) is None  # grown too large: closed
    assert cache.total_partitions == 6


def test_the_fetcher_side_names_only_what_changed_and_starts_over_on_trouble():
    handler = FetchSessionHandler(node_id=1)

    def answer(sent, session_id, partitions, error=Errors.NONE):
        response = {"error_code": error, "session_id": session_id}
        return handler.handle_response(sent, response, set(partitions))

    full = handler.build({"a": {"offset": 0}, "b": {"offset": 0}})
    assert (full.session_id, full.epoch, list(full.to_send)) == (0, 0, ["a", "b"])
    assert answer(full, 7, ["a", "b"])
    step = handler.build({"a": {"offset": 3}, "b": {"offset": 0}, "c": {"offset": 0}})
    assert (step.session_id, step.epoch, list(step.to_send), step.to_forget) == (
        7, 1, ["a", "c"], [])
    assert answer(step, 7, ["a"])
    step = handler.build({"a": {"offset": 3}, "c": {"offset": 0}})
    assert (step.epoch, step.to_send, step.to_forget) == (2, {}, ["b"])
    assert not answer(step, 7, ["b"])  # a partition it was not asked for: start over
    again = handler.build({"a": {"offset": 3}, "c": {"offset": 0}})
    assert (again.session_id, again.epoch, len(again.to_send)) == (7, 0, 2)  # closes session 7
    assert not answer(again, 0, [], Errors.FETCH_SESSION_ID_NOT_FOUND)
    assert handler.build({"a": {"offset": 3}}).session_id == 0


@pytest.mark.cluster
def test_followers_fetch_incrementally(cluster):
    """Once their sessions exist, idle followers name (almost) no partition in their fetches,
    where a full fetch names every partition they follow."""
    partitions = 30
    new_replicated_topic(cluster, partitions)  # returned once every ISR is full
    brokers = sorted(cluster.brokers)

    def totals():
        stats = [cluster.statistics(b)["fetch_sessions"] for b in brokers]
        return {k: sum(s[k] for s in stats) for k in stats[0]}

    before = totals()
    after = wait_until(lambda: (t := totals())["incremental_fetches"]
                       - before["incremental_fetches"] >= 30 and t, "30 incremental fetches")
    fetches = after["incremental_fetches"] - before["incremental_fetches"]
    named = after["incremental_partitions_named"] - before["incremental_partitions_named"]
    # A full fetch names every partition its leader leads for the follower: of this topic alone
    # 10 (30 over 3 leaders). An incremental one names only those whose position moved: on an
    # idle cluster none, and a few where a broker an earlier test restarted is catching up.
    full = partitions // len(brokers)
    assert named < fetches * full / 3, (named, fetches)
    assert all(cluster.statistics(b)["fetch_sessions"]["NumIncrementalFetchSessions"] >= 2
               for b in brokers)
