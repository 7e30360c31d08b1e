"""Consumer groups on our broker, judged by consumers we did not write.

First the protocol by hand (KIP-394's MEMBER_ID_REQUIRED, a generation, SyncGroup, heartbeats,
the generation checked on OffsetCommit, LeaveGroup v3's batch, DescribeGroups, ListGroups); then
confluent-kafka and kafka-python consumers with ``subscribe()`` and a ``group.id``: each reads
everything, a second consumer splits the partitions, a killed consumer's partitions move after
its session timeout, a clean close moves them at once, committed offsets resume.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest
from kafka import KafkaConsumer
from reactor_client import Client
from support.children import child_env
from waits import wait_until

from kafkacore import KafkaProducer
from kafkacore.broker import Broker
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

PARTITIONS = 4


@pytest.fixture(scope="module")
def broker():
    config = {
        "num.network.threads": "1",
        "num.io.threads": "4",
        "num.partitions": str(PARTITIONS),
        # The first rebalance does not wait for more members: tests say when members come.
        "group.initial.rebalance.delay.ms": "0",
        # Short sessions, so that the expiry test takes seconds, not Kafka's 45.
        "group.min.session.timeout.ms": "1000",
    }
    with Broker(config) as b:
        yield b


def _produce(broker, n=40):
    topic = f"groups-{uuid.uuid4().hex[:8]}"
    sent = set()
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        for i in range(n):
            value = b"v%03d" % i
            producer.send(topic, value, partition=i % PARTITIONS)
            sent.add(value)
        producer.flush(timeout=30)
    return topic, sent


# -- the protocol by hand -------------------------------------------------------------------------

def _join(c, group, member_id="", version=5, session_timeout_ms=10000, metadata=b"m",
          rebalance_timeout_ms=10000):
    return c.call(ApiKey.JOIN_GROUP, version, {
        "group_id": group, "session_timeout_ms": session_timeout_ms,
        "rebalance_timeout_ms": rebalance_timeout_ms, "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": metadata}],
    })


@pytest.mark.timeout(60)
def test_join_sync_heartbeat_commit_leave_by_hand(broker):
    group = f"hand-{uuid.uuid4().hex[:8]}"
    c = Client(broker, "test-groups")
    try:
        # KIP-394: the first JoinGroup (v4+) only hands out a member id.
        first = _join(c, group)
        assert first["error_code"] == Errors.MEMBER_ID_REQUIRED
        member = first["member_id"]
        assert member.startswith("test-groups-")
        joined = _join(c, group, member)
        assert joined["error_code"] == Errors.NONE
        assert (joined["generation_id"], joined["leader"], joined["member_id"]) == (
            1, member, member)
        assert joined["protocol_name"] == "range"
        assert [(m["member_id"], m["metadata"]) for m in joined["members"]] == [(member, b"m")]

        synced = c.call(ApiKey.SYNC_GROUP, 5, {
            "group_id": group, "generation_id": 1, "member_id": member,
            "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": member, "assignment": b"all of it"}]})
        assert (synced["error_code"], synced["assignment"]) == (Errors.NONE, b"all of it")

        def heartbeat(generation, member_id=member):
            return c.call(ApiKey.HEARTBEAT, 4, {
                "group_id": group, "generation_id": generation, "member_id": member_id,
                "group_instance_id": None})["error_code"]

        assert heartbeat(1) == Errors.NONE
        assert heartbeat(0) == Errors.ILLEGAL_GENERATION
        assert heartbeat(1, "nobody") == Errors.UNKNOWN_MEMBER_ID

        topic, _ = _produce(broker, 4)

        def commit(generation, member_id):
            response = c.call(ApiKey.OFFSET_COMMIT, 9, {
                "group_id": group, "generation_id_or_member_epoch": generation,
                "member_id": member_id, "group_instance_id": None,
                "topics": [{"name": topic, "partitions": [
                    {"partition_index": 0, "committed_offset": 1,
                     "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
            return response["topics"][0]["partitions"][0]["error_code"]

        assert commit(1, member) == Errors.NONE
        assert commit(2, member) == Errors.ILLEGAL_GENERATION
        assert commit(1, "nobody") == Errors.UNKNOWN_MEMBER_ID
        assert commit(-1, "") == Errors.UNKNOWN_MEMBER_ID  # the group has members: only they commit

        described = c.call(ApiKey.DESCRIBE_GROUPS, 5, {
            "groups": [group], "include_authorized_operations": False})["groups"][0]
        assert (described["group_state"], described["protocol_type"],
                described["protocol_data"]) == ("Stable", "consumer", "range")
        assert [(m["member_id"], m["member_assignment"]) for m in described["members"]] == [
            (member, b"all of it")]
        listed = c.call(ApiKey.LIST_GROUPS, 4, {"states_filter": ["Stable"]})["groups"]
        assert {"group_id": group, "protocol_type": "consumer", "group_state": "Stable"} in listed

        # LeaveGroup v3+: several members at once, one error each.
        left = c.call(ApiKey.LEAVE_GROUP, 5, {"group_id": group, "members": [
            {"member_id": member, "group_instance_id": None, "reason": "test"},
            {"member_id": "nobody", "group_instance_id": None, "reason": None}]})
        assert left["error_code"] == Errors.NONE
        assert [(m["member_id"], m["error_code"]) for m in left["members"]] == [
            (member, Errors.NONE), ("nobody", Errors.UNKNOWN_MEMBER_ID)]
        assert heartbeat(1) == Errors.UNKNOWN_MEMBER_ID
        state = c.call(ApiKey.DESCRIBE_GROUPS, 0, {"groups": [group]})["groups"][0]
        assert (state["group_state"], state["members"]) == ("Empty", [])
        assert commit(-1, "") == Errors.NONE  # an empty group takes commits from anyone again
    finally:
        c.sock.close()


@pytest.mark.timeout(60)
def test_second_member_rebalances_the_first(broker):
    """A join into a Stable group: the first member's heartbeat answers REBALANCE_IN_PROGRESS,
    its rejoin completes the DelayedJoin, both get generation 2 and the leader gets both."""
    group = f"two-{uuid.uuid4().hex[:8]}"
    a, b = Client(broker, "test-groups"), Client(broker, "test-groups")
    try:
        member_a = _join(a, group)["member_id"]
        assert _join(a, group, member_a)["generation_id"] == 1
        a.call(ApiKey.SYNC_GROUP, 3, {"group_id": group, "generation_id": 1,
                                      "member_id": member_a, "group_instance_id": None,
                                      "assignments": []})
        # b's JoinGroup (v3: no MEMBER_ID_REQUIRED step) is parked in the group until a rejoins.
        answer: dict[str, dict] = {}
        waiter = threading.Thread(target=lambda: answer.update(b=_join(b, group, version=3)))
        waiter.start()
        wait_until(lambda: broker.group_coordinator.group(group).state.value
                    == "PreparingRebalance", "b's join starts a rebalance")
        assert a.call(ApiKey.HEARTBEAT, 4, {
            "group_id": group, "generation_id": 1, "member_id": member_a,
            "group_instance_id": None})["error_code"] == Errors.REBALANCE_IN_PROGRESS
        assert "b" not in answer  # still parked: a has not rejoined
        rejoined = _join(a, group, member_a)
        waiter.join(30)
        assert not waiter.is_alive()
        member_b = answer["b"]["member_id"]
        assert (rejoined["generation_id"], answer["b"]["generation_id"]) == (2, 2)
        assert rejoined["leader"] == answer["b"]["leader"] == member_a
        assert {m["member_id"] for m in rejoined["members"]} == {member_a, member_b}
        assert answer["b"]["members"] == []  # only the leader gets the subscriptions
    finally:
        a.sock.close()
        b.sock.close()


@pytest.mark.timeout(60)
def test_member_that_does_not_rejoin_is_dropped_after_the_rebalance_timeout(broker):
    """b's session (30 s) outlives the rebalance timeout (1 s): when c joins and b never rejoins,
    the DelayedJoin expires, b is dropped, and a and c form the next generation without it.
    (With no initial delay, a alone is generation 1, and a rejoining with b generation 2.)"""
    group = f"slow-{uuid.uuid4().hex[:8]}"
    a, b, c = Client(broker, "test-groups"), Client(broker, "test-groups"), Client(broker, "test-groups")
    try:
        def join(client, member_id=""):
            return _join(client, group, member_id, version=3, session_timeout_ms=30000,
                         rebalance_timeout_ms=1000)

        def sync(client, generation, member_id, assignments=()):
            return client.call(ApiKey.SYNC_GROUP, 3, {
                "group_id": group, "generation_id": generation, "member_id": member_id,
                "group_instance_id": None,
                "assignments": [{"member_id": m, "assignment": b"x"} for m in assignments]})

        def starts_rebalance():
            wait_until(lambda: broker.group_coordinator.group(group).state.value
                        == "PreparingRebalance", "a join starts a rebalance")

        member_a = join(a)["member_id"]  # generation 1: a alone
        assert sync(a, 1, member_a, [member_a])["error_code"] == Errors.NONE
        answers: dict[str, dict] = {}
        second = threading.Thread(target=lambda: answers.update(b=join(b)))
        second.start()
        starts_rebalance()
        assert join(a, member_a)["generation_id"] == 2  # a rejoins: generation 2 is a and b
        second.join(30)
        member_b = answers["b"]["member_id"]
        assert sync(a, 2, member_a, [member_a, member_b])["error_code"] == Errors.NONE
        assert sync(b, 2, member_b)["error_code"] == Errors.NONE

        third = threading.Thread(target=lambda: answers.update(c=join(c)))
        third.start()
        starts_rebalance()
        rejoined = join(a, member_a)  # parked until b rejoins, or the rebalance timeout
        third.join(30)
        assert rejoined["generation_id"] == answers["c"]["generation_id"] == 3
        members = {m["member_id"] for m in rejoined["members"]} or {
            m["member_id"] for m in answers["c"]["members"]}
        assert members == {member_a, answers["c"]["member_id"]}
        assert member_b not in broker.group_coordinator.group(group).members
        assert b.call(ApiKey.HEARTBEAT, 3, {
            "group_id": group, "generation_id": 2, "member_id": member_b,
            "group_instance_id": None})["error_code"] == Errors.UNKNOWN_MEMBER_ID
    finally:
        for client in (a, b, c):
            client.sock.close()


# -- consumers we did not write -------------------------------------------------------------------

_CONFLUENT_CHILD = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Consumer
    bootstrap, topic, group, expected, mode = sys.argv[1:6]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 2000,
                         "heartbeat.interval.ms": 200})
    consumer.subscribe([topic])
    seen = []
    reported = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is not None:
            if m.error():
                raise SystemExit(f"consumer error: {m.error()}")
            seen.append(m.value().decode())
        assignment = sorted(tp.partition for tp in consumer.assignment())
        if assignment != reported:
            reported = assignment
            print("ASSIGNED", ",".join(map(str, assignment)), flush=True)
        if mode == "read" and len(seen) >= int(expected):
            break
    if mode == "read":
        print("VALUES", ",".join(sorted(seen)), flush=True)
        consumer.close()
""")


def _confluent_child(broker, topic, group, expected, mode, cwd):
    return subprocess.Popen(
        [sys.executable, "-c", _CONFLUENT_CHILD, broker.bootstrap_servers, topic, group,
         str(expected), mode],
        stdout=subprocess.PIPE, text=True, env=child_env(), cwd=cwd)


@pytest.mark.timeout(120)
def test_confluent_kafka_subscribe_reads_everything(broker, tmp_path):
    topic, sent = _produce(broker)
    child = _confluent_child(broker, topic, f"ck-{uuid.uuid4().hex[:8]}", len(sent), "read",
                             tmp_path)
    out, _ = child.communicate(timeout=90)
    assert child.returncode == 0, out
    values = [line for line in out.splitlines() if line.startswith("VALUES ")]
    assert values, out
    got = values[0].split(" ", 1)[1].split(",")
    assert len(got) == len(sent)  # nothing twice
    assert {v.encode() for v in got} == sent
    assigned = [line for line in out.splitlines() if line.startswith("ASSIGNED ")]
    assert "ASSIGNED 0,1,2,3" in assigned


def _kafka_python(broker, topic, group, **config):
    settings = {"bootstrap_servers": broker.bootstrap_servers, "group_id": group,
                "auto_offset_reset": "earliest", "session_timeout_ms": 2000,
                "heartbeat_interval_ms": 200, "enable_auto_commit": False}
    settings.update(config)
    consumer = KafkaConsumer(**settings)
    # kafka-python's leader rejoins when the topic's metadata changes after it assigned; when a
    # short poll() returns in the middle of that rejoin, kafka-python 3.0.12 may never finish it
    # (its need_rejoin() turns False while the join is in flight).  So the topic is known before
    # subscribing, and the polls below (500 ms) are long enough for a join to finish in one.
    assert consumer.partitions_for_topic(topic) == set(range(PARTITIONS))
    consumer.subscribe([topic])
    return consumer


def _poll_until(consumers, condition, bound_s, what):
    """Poll every consumer (each in turn) until ``condition()``; the records each returned."""
    got = {id(c): [] for c in consumers}
    deadline = time.monotonic() + bound_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {bound_s} s: {what}")
        for c in consumers:
            for records in c.poll(timeout_ms=500).values():
                got[id(c)].extend(r.value for r in records)
    return [got[id(c)] for c in consumers]


def _partitions(consumer):
    return {tp.partition for tp in consumer.assignment()}


@pytest.mark.timeout(120)
def test_kafka_python_subscribe_reads_everything(broker):
    topic, sent = _produce(broker)
    consumer = _kafka_python(broker, topic, f"kp-{uuid.uuid4().hex[:8]}")
    try:
        got: list[bytes] = []

        def done():
            return len(got) >= len(sent)

        deadline = time.monotonic() + 60
        while not done() and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(r.value for r in records)
        assert sorted(got) == sorted(sent)
        assert _partitions(consumer) == set(range(PARTITIONS))
    finally:
        consumer.close()


@pytest.mark.timeout(120)
def test_second_consumer_splits_then_clean_close_hands_back(broker):
    """Two kafka-python consumers split the partitions; when one closes (LeaveGroup), the other
    gets them all back long before any session timeout could have noticed."""
    topic, sent = _produce(broker)
    group = f"split-{uuid.uuid4().hex[:8]}"
    # Sessions longer than the waits below: only the LeaveGroup can explain the hand-back.
    first = _kafka_python(broker, topic, group, session_timeout_ms=60000,
                          heartbeat_interval_ms=500, max_poll_records=4)
    second = None
    try:
        _poll_until([first], lambda: _partitions(first) == set(range(PARTITIONS)), 30,
                    "the first consumer owns every partition")
        second = _kafka_python(broker, topic, group, session_timeout_ms=60000,
                               heartbeat_interval_ms=500, max_poll_records=4)

        def split():
            a, b = _partitions(first), _partitions(second)
            return a and b and not a & b and a | b == set(range(PARTITIONS))

        _poll_until([first, second], split, 40, "the partitions split between the consumers")
        assert len(_partitions(first)) == len(_partitions(second)) == PARTITIONS // 2
        group_metadata = broker.group_coordinator.group(group)
        with group_metadata.lock:
            assert len(group_metadata.members) == 2
            assert group_metadata.state.value == "Stable"

        second.close()  # LeaveGroup
        second = None
        _poll_until([first], lambda: _partitions(first) == set(range(PARTITIONS)), 30,
                    "the survivor owns every partition again")
    finally:
        first.close()
        if second is not None:
            second.close()


@pytest.mark.timeout(120)
def test_killed_consumer_is_expired_after_its_session_timeout(broker, tmp_path):
    """A confluent-kafka consumer SIGKILLed (no LeaveGroup): its DelayedHeartbeat expires after
    session.timeout.ms (2 s), the group rebalances and the survivor gets its partitions."""
    topic, _ = _produce(broker, 8)
    group = f"kill-{uuid.uuid4().hex[:8]}"
    survivor = _kafka_python(broker, topic, group, session_timeout_ms=10000,
                             heartbeat_interval_ms=300)
    child = None
    try:
        _poll_until([survivor], lambda: _partitions(survivor) == set(range(PARTITIONS)), 30,
                    "the survivor owns every partition")
        child = _confluent_child(broker, topic, group, 0, "hold", tmp_path)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(child.stdout), daemon=True)
        reader.start()

        def child_has_half():
            return any(line.split() == ["ASSIGNED", line.split()[-1]]
                       and len(line.split()[-1].split(",")) == 2 for line in list(lines))

        _poll_until([survivor], lambda: child_has_half() and len(_partitions(survivor)) == 2,
                    40, "the confluent-kafka consumer and the survivor split the partitions")
        group_metadata = broker.group_coordinator.group(group)
        with group_metadata.lock:
            child_members = [m for m in group_metadata.members if m.startswith("rdkafka")]
        assert len(child_members) == 1

        os.kill(child.pid, signal.SIGKILL)  # no LeaveGroup
        child.wait(timeout=30)
        _poll_until([survivor], lambda: _partitions(survivor) == set(range(PARTITIONS)), 40,
                    "the killed consumer's partitions come back to the survivor")
        with group_metadata.lock:
            assert child_members[0] not in group_metadata.members
            assert len(group_metadata.members) == 1
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait(timeout=30)
        survivor.close()


@pytest.mark.timeout(120)
def test_committed_offsets_resume(broker):
    """A consumer reads part of the topic and commits; the next one in the group reads exactly
    the rest."""
    topic, sent = _produce(broker)
    group = f"resume-{uuid.uuid4().hex[:8]}"
    first = _kafka_python(broker, topic, group, max_poll_records=5)
    try:
        head: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(head) < len(sent) // 2 and time.monotonic() < deadline:
            for records in first.poll(timeout_ms=500).values():
                head.extend(r.value for r in records)
        assert len(sent) // 2 <= len(head) < len(sent)
        first.commit()  # the positions: everything poll() returned
    finally:
        first.close()
    second = _kafka_python(broker, topic, group)
    try:
        tail: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(head) + len(tail) < len(sent) and time.monotonic() < deadline:
            for records in second.poll(timeout_ms=500).values():
                tail.extend(r.value for r in records)
        assert sorted(head + tail) == sorted(sent)  # nothing lost, nothing twice
    finally:
        second.close()
