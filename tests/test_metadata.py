"""Metadata: versioned updates, bounded waits, topic errors, leader epochs; and the same against
tansu through the NetworkClient's metadata updater."""

from __future__ import annotations

import threading
import time

import pytest

from kafkacore import errors
from kafkacore.metadata import Cluster, Metadata, Node, TopicPartition
from kafkacore.network.client import NetworkClient


def response(topics=(), brokers=((1, "h1", 9092), (2, "h2", 9092)), controller=1):
    """A decoded MetadataResponse (the dict shape the codec produces)."""
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": n, "host": h, "port": p, "rack": None} for n, h, p in brokers],
        "cluster_id": "c",
        "controller_id": controller,
        "topics": list(topics),
    }


def topic(name, partitions=(), error=0):
    return {
        "error_code": error,
        "name": name,
        "is_internal": False,
        "partitions": [
            {
                "error_code": 0,
                "partition_index": i,
                "leader_id": leader,
                "leader_epoch": epoch,
                "replica_nodes": [leader] if leader >= 0 else [],
                "isr_nodes": [leader] if leader >= 0 else [],
                "offline_replicas": [],
            }
            for i, (leader, epoch) in enumerate(partitions)
        ],
    }


# -- versions and timing ---------------------------------------------------------------------------


def test_versions_and_update_requests():
    md = Metadata(refresh_backoff_ms=100, metadata_max_age_ms=10_000)
    assert md.version == 0
    md.bootstrap([("localhost", 9092)])
    assert md.fetch().is_bootstrap and md.fetch().nodes == [Node(-1, "localhost", 9092)]
    assert md.update_requested()
    assert md.time_to_next_update(1_000) == 0
    md.update(response(), now_ms=1_000)
    assert md.version == 1 and not md.update_requested()
    assert not md.fetch().is_bootstrap
    # Fresh: next refresh when it is max-age old.
    assert md.time_to_next_update(1_000) == 10_000
    assert md.time_to_next_update(6_000) == 5_000
    assert md.time_to_next_update(11_000) == 0
    # Asked for: as soon as the backoff since the last refresh allows.
    assert md.request_update() == 1
    assert md.time_to_next_update(1_050) == 50
    assert md.time_to_next_update(1_100) == 0
    # A failed refresh also holds the next one back by the backoff.
    md.failed_update(2_000)
    assert md.version == 1
    assert md.time_to_next_update(2_030) == 70


def test_a_new_topic_is_asked_for_at_once_whatever_the_backoff():
    """The first refresh after start asks for no topics; a send to a new topic just after it must
    not wait out retry.backoff.ms (Java's requestUpdateForNewTopics).  With a 60 s backoff the
    first send of a producer waited 60 s whenever its Sender was quicker than its caller."""
    md = Metadata(refresh_backoff_ms=60_000, metadata_max_age_ms=300_000)
    md.bootstrap([("localhost", 9092)])
    md.update(response(), now_ms=1_000)  # the start's refresh, no topics
    md.request_update()
    assert md.time_to_next_update(1_001) == 59_999  # a plain request waits out the backoff
    md.add_topic("new-topic", now_ms=1_001)
    assert md.time_to_next_update(1_001) == 0  # a new topic does not
    md.update(response(), now_ms=1_002)
    md.add_topic("new-topic", now_ms=1_003)  # known now: no refresh, no override
    md.request_update()
    assert md.time_to_next_update(1_003) == 59_999


def test_response_without_brokers_is_a_failed_update():
    md = Metadata()
    md.update(response(brokers=()), now_ms=5)
    assert md.version == 0


def test_request_version_keeps_a_later_request_pending():
    md = Metadata()
    md.add_topic("a", now_ms=0)
    body, request_version = md.new_metadata_request(0)
    assert body["topics"] == [{"name": "a"}] and body["allow_auto_topic_creation"] is True
    md.add_topic("b", now_ms=1)  # asked while the first request was in flight
    md.update(response([topic("a", [(1, 0)])]), 2, request_version=request_version)
    assert md.update_requested()  # "b" still needs its own answer
    body, request_version = md.new_metadata_request(3)
    assert sorted(t["name"] for t in body["topics"]) == ["a", "b"]
    md.update(
        response([topic("a", [(1, 0)]), topic("b", [(2, 0)])]), 4, request_version=request_version
    )
    assert not md.update_requested()


def test_idle_topics_expire():
    md = Metadata(metadata_max_idle_ms=1_000)
    md.add_topic("old", now_ms=0)
    md.add_topic("new", now_ms=900)
    body, _ = md.new_metadata_request(1_500)
    assert [t["name"] for t in body["topics"]] == ["new"]
    md.update(response([topic("old", [(1, 0)]), topic("new", [(1, 0)])]), 1_500)
    assert md.fetch().topics == {"new"}  # an answer for a forgotten topic is not kept


def test_bad_arguments():
    with pytest.raises(ValueError):
        Metadata(refresh_backoff_ms=-1)
    with pytest.raises(TypeError):
        Metadata().add_topic("")
    with pytest.raises(ValueError):
        Metadata().await_update(0, -5)


# -- the cluster snapshot ---------------------------------------------------------------------------


def test_cluster_queries():
    md = Metadata()
    md.add_topic("t", 0)
    md.update(response([topic("t", [(1, 3), (-1, 3), (2, 0), (7, 1)])]), 0)
    c = md.fetch()
    assert c.partition_count("t") == 4
    assert [p.partition for p in c.partitions_for_topic("t")] == [0, 1, 2, 3]
    # Partition 1 has no leader; partition 3's leader (7) is not among the brokers.
    assert [p.partition for p in c.available_partitions_for_topic("t")] == [0, 2]
    assert c.leader_for("t", 0) == 1 and c.leader_for("t", 1) is None
    assert c.leader_for("t", 3) is None and c.leader_for("t", 9) is None
    assert c.node(2) == Node(2, "h2", 9092)
    assert c.partitions_for_node(1) == [TopicPartition("t", 0)]
    assert c.partitions_for_node(1) == [("t", 0)]  # plain tuples compare equal
    assert c.partition_count("unknown") is None
    assert c.controller_id == 1 and c.cluster_id == "c"
    assert isinstance(Cluster().nodes, list)


# -- leader epochs -------------------------------------------------------------------------------


def test_stale_leader_epochs_are_ignored():
    md = Metadata()
    md.add_topic("t", 0)
    md.update(response([topic("t", [(1, 5)])]), 0)
    assert md.fetch().leader_for("t", 0) == 1
    assert md.last_seen_leader_epoch(TopicPartition("t", 0)) == 5
    # A broker that has not heard of the new leader yet answers with an older epoch: ignored.
    md.update(response([topic("t", [(2, 4)])]), 1)
    assert md.fetch().leader_for("t", 0) == 1
    assert md.fetch().partition("t", 0).leader_epoch == 5
    # The same epoch or a newer one is accepted.
    md.update(response([topic("t", [(2, 6)])]), 2)
    assert md.fetch().leader_for("t", 0) == 2
    assert md.last_seen_leader_epoch(TopicPartition("t", 0)) == 6
    # No epoch at all (an old broker): accepted, and the epoch forgotten.
    md.update(response([topic("t", [(1, -1)])]), 3)
    assert md.fetch().leader_for("t", 0) == 1
    assert md.last_seen_leader_epoch(TopicPartition("t", 0)) is None


def test_a_produce_response_moves_a_leader_at_once_if_its_epoch_is_newer():
    # KIP-951: NOT_LEADER_OR_FOLLOWER with current_leader (and node_endpoints for a new broker).
    md = Metadata()
    md.add_topic("t", 0)
    md.update(response([topic("t", [(1, 5), (1, 5)])]), 0)
    version, tp0, tp1 = md.version, TopicPartition("t", 0), TopicPartition("t", 1)
    broker3 = Node(3, "127.0.0.1", 9093)
    # Stale or equal epochs, unknown partitions and unreachable leaders are not taken.
    assert md.update_partition_leadership({tp0: (2, 5), tp1: (2, 4)}) == set()
    assert md.update_partition_leadership({TopicPartition("t", 9): (2, 8)}) == set()
    assert md.update_partition_leadership({tp0: (3, 6)}) == set()  # node 3: no address
    assert md.fetch().leader_for("t", 0) == 1
    # A newer epoch moves the partition, with the new broker's address from the response.
    assert md.update_partition_leadership({tp0: (3, 6)}, [broker3]) == {tp0}
    cluster = md.fetch()
    assert cluster.leader_for("t", 0) == 3 and cluster.leader_for("t", 1) == 1
    assert cluster.node(3) == broker3
    assert cluster.partitions_for_node(3) == [tp0]
    assert md.last_seen_leader_epoch(tp0) == 6 and md.version == version
    # A refresh from a broker that has not heard of it yet does not move it back.
    md.update(response([topic("t", [(1, 5), (1, 5)])]), 1)
    assert md.fetch().partition("t", 0).leader_epoch == 6
    md.update(response([topic("t", [(2, 7), (1, 5)])]), 2)
    assert md.fetch().leader_for("t", 0) == 2


# -- waiting ------------------------------------------------------------------------------------


def test_await_update_is_bounded():
    md = Metadata()
    start = time.monotonic()
    with pytest.raises(errors.KafkaTimeoutError):
        md.await_update(md.version, 300)
    # It waited its bound and then raised (no upper bound: a loaded machine may wake late;
    # a wait that never ended would hit the test's timeout).
    assert time.monotonic() - start >= 0.3


def test_await_update_returns_when_another_thread_updates():
    md = Metadata()
    md.add_topic("t", 0)
    threading.Timer(0.1, md.update, args=(response([topic("t", [(1, 0)])]), 1)).start()
    assert md.await_update(0, 5_000) == 1


def test_close_wakes_waiters():
    md = Metadata()
    threading.Timer(0.1, md.close).start()
    with pytest.raises(errors.IllegalStateError):
        md.await_update(0, 5_000)


def _answer_in_thread(md, answers, delay=0.05):
    """Play the Sender: whenever an update is requested, apply the next canned response."""
    stop = threading.Event()

    def run():
        pending = list(answers)
        while not stop.is_set() and pending:
            if md.update_requested():
                time.sleep(delay)
                md.update(pending[0] if len(pending) == 1 else pending.pop(0))
            time.sleep(0.01)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return stop, t


@pytest.mark.parametrize(
    ("code", "exc"),
    [(17, errors.InvalidTopicError), (29, errors.TopicAuthorizationFailedError)],
)
def test_fatal_topic_errors_end_the_wait_at_once(code, exc):
    md = Metadata()
    stop, t = _answer_in_thread(md, [response([topic("t", error=code)])])
    start = time.monotonic()
    with pytest.raises(exc):
        md.wait_for_topic("t", max_wait_ms=10_000)
    assert time.monotonic() - start < 5  # not the 10 s bound: fatal at the first answer
    stop.set()
    t.join()
    assert md.fetch().topic_errors == {"t": code}


@pytest.mark.parametrize("code", [3, 5])  # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE
def test_retriable_topic_errors_wait_until_the_bound(code):
    md = Metadata(refresh_backoff_ms=10)
    stop, t = _answer_in_thread(md, [response([topic("t", error=code)])])
    start = time.monotonic()
    with pytest.raises(errors.KafkaTimeoutError, match="not present in metadata after 400 ms"):
        md.wait_for_topic("t", max_wait_ms=400)
    assert 0.4 <= time.monotonic() - start < 5  # bounded; slack for a noisy machine
    stop.set()
    t.join()


def test_wait_for_topic_sees_the_topic_appear():
    md = Metadata(refresh_backoff_ms=10)
    answers = [response([topic("t", error=3)])] * 3 + [response([topic("t", [(1, 0)] * 2)])]
    stop, t = _answer_in_thread(md, answers)
    cluster, waited_ms = md.wait_for_topic("t", max_wait_ms=5_000)
    assert cluster.partition_count("t") == 2 and waited_ms >= 0
    # A partition beyond the count keeps the wait going until the bound.
    with pytest.raises(errors.KafkaTimeoutError, match="Partition 5 of topic t"):
        md.wait_for_topic("t", 5, max_wait_ms=200)
    stop.set()
    t.join()


# -- against tansu ---------------------------------------------------------------------------------


class SenderThread:
    """The Sender's share of metadata work: poll the client in a loop (as kafkacore.sender does)."""

    def __init__(self, client):
        self.client = client
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            self.client.poll(100)

    def close(self):
        self.stop.set()
        self.client.wakeup()
        self.thread.join(5)
        self.client.close()


def test_unknown_and_invalid_topics_on_tansu(bootstrap, make_topic):
    md = Metadata(refresh_backoff_ms=20, allow_auto_topic_creation=False)
    sender = SenderThread(NetworkClient(bootstrap, md))
    try:
        name = make_topic(2)
        cluster, _ = md.wait_for_topic(name, max_wait_ms=10_000, wakeup=sender.client.wakeup)
        assert cluster.partition_count(name) == 2
        start = time.monotonic()
        with pytest.raises(errors.KafkaTimeoutError):
            md.wait_for_topic("no-such-topic", max_wait_ms=500, wakeup=sender.client.wakeup)
        assert time.monotonic() - start >= 0.5
        assert md.fetch().topic_errors.get("no-such-topic") == 3
        with pytest.raises(errors.InvalidTopicError):
            md.wait_for_topic("bad topic!", max_wait_ms=10_000, wakeup=sender.client.wakeup)
    finally:
        sender.close()


def test_auto_creation_like_the_java_producer(bootstrap):
    # Java's producer asks the broker to create missing topics; tansu does.
    md = Metadata(refresh_backoff_ms=20)
    sender = SenderThread(NetworkClient(bootstrap, md))
    try:
        name = f"auto-{time.monotonic_ns()}"
        cluster, _ = md.wait_for_topic(name, max_wait_ms=10_000, wakeup=sender.client.wakeup)
        assert cluster.partition_count(name) >= 1
    finally:
        sender.close()


def test_an_illegal_topic_never_enters_the_metadata_request():
    md = Metadata()
    md.add_topic("good", now_ms=0)
    for bad in ("bad\udcff", "a b", "x" * 250, ".", ".."):
        with pytest.raises(errors.InvalidTopicError):
            md.add_topic(bad)
    # white-box: past add_topic's check, as if one slipped in: the others are still asked for
    md._topics["bad\udcff"] = 1
    body, _ = md.new_metadata_request(now_ms=0)
    assert [t["name"] for t in body["topics"]] == ["good"]


@pytest.mark.parametrize("answers, partition, words", [
    ([response([topic("t", error=3)])], None,
     "Topic t not present in metadata after .* ms: the brokers answer "
     "UNKNOWN_TOPIC_OR_PARTITION: the topic does not exist"),
    ([response([topic("t", [(1, 0)] * 4)])], 99,
     r"Partition 99 of topic t with partition count 4 is not present in metadata after .* ms: "
     r"Invalid partition given with record: 99 is not in the range \[0...4\)"),
])
def test_a_settled_no_ends_the_wait_with_its_reason(answers, partition, words):
    """The brokers keep saying the topic does not exist, or that the partition is beyond the
    topic's: the wait ends after SETTLED_ANSWER_MS, not max.block.ms, and says why."""
    from kafkacore.metadata import SETTLED_ANSWER_MS

    md = Metadata(refresh_backoff_ms=10)
    stop, t = _answer_in_thread(md, answers)
    start = time.monotonic()
    with pytest.raises(errors.KafkaTimeoutError, match=words):
        md.wait_for_topic("t", partition, max_wait_ms=60_000)
    assert SETTLED_ANSWER_MS / 1000 <= time.monotonic() - start < 30
    stop.set()
    t.join()
