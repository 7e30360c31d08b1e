"""The consumer group protocol (KIP-848) on our broker.

First the pieces (the assignors, one reconciliation step, the records replayed), then the
protocol by hand (a partition changes owner only after its owner revoked it; Kafka's errors; a
silent member removed after its session; OffsetCommit checked against the member epoch), then
confluent-kafka consumers with ``group.protocol=consumer``: two share a topic and read each
record once, one leaves and the other gets everything, committed offsets and the group survive a
restart, and the AdminClient describes the group as a consumer group.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import KafkaConsumer
from kafka.protocol.old.consumer_protocol import (
    ConsumerProtocolMemberAssignment_v0,
    ConsumerProtocolMemberMetadata_v0,
)
from reactor_client import Client
from support.examples import examples
from waits import wait_until

from kafkacore.broker import Broker
from kafkacore.broker.group.assignors import RangeAssignor, UniformAssignor
from kafkacore.broker.group.consumer_group import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    reconcile,
)
from kafkacore.broker.group.consumer_group_records import (
    current_assignment_record,
    group_epoch_record,
    member_subscription_record,
    replay,
    target_epoch_record,
    target_member_record,
)
from kafkacore.errors import ConfigError, Errors
from kafkacore.protocol.api_keys import ApiKey

PARTITIONS = 4
SESSION_MS = 3000
T1, T2 = uuid.uuid4(), uuid.uuid4()


# -- the pieces -------------------------------------------------------------------------------


def _count(assignment):
    return {m: sum(len(ps) for ps in a.values()) for m, a in assignment.items()}


def test_uniform_assignor_balances_and_keeps_partitions_where_they_were():
    subs = {"a": frozenset({T1}), "b": frozenset({T1})}
    first = UniformAssignor().assign(subs, {T1: 4}, {})
    assert _count(first) == {"a": 2, "b": 2}
    assert first["a"][T1] | first["b"][T1] == frozenset(range(4))
    # A third member takes one partition; a and b keep what they can of theirs.
    subs["c"] = frozenset({T1})
    second = UniformAssignor().assign(subs, {T1: 4}, first)
    assert sorted(_count(second).values()) == [1, 1, 2]
    moved = sum(len(first[m][T1] - second[m].get(T1, frozenset())) for m in ("a", "b"))
    assert moved == 1
    # Only members subscribed to a topic get its partitions.
    mixed = UniformAssignor().assign({"a": frozenset({T1}), "b": frozenset({T2})},
                                     {T1: 3, T2: 1}, {})
    assert mixed == {"a": {T1: frozenset({0, 1, 2})}, "b": {T2: frozenset({0})}}


def test_range_assignor_gives_consecutive_ranges_per_topic():
    subs = {"b": frozenset({T1, T2}), "a": frozenset({T1, T2})}
    out = RangeAssignor().assign(subs, {T1: 5, T2: 2}, {})
    assert out == {"a": {T1: frozenset({0, 1, 2}), T2: frozenset({0})},
                   "b": {T1: frozenset({3, 4}), T2: frozenset({1})}}


def test_reconcile_revokes_first_then_assigns_what_is_free():
    group = ConsumerGroup("g")
    a = ConsumerGroupMember("a", member_epoch=1, assigned={T1: frozenset({0, 1})})
    b = ConsumerGroupMember("b", member_epoch=0)
    group.update_member(None, a)
    group.update_member(None, b)
    group.assignment_epoch = 2
    group.target = {"a": {T1: frozenset({0})}, "b": {T1: frozenset({1})}}
    # b may not have partition 1 yet: a still owns it.
    b2 = reconcile(group, b, {})
    assert (b2.member_epoch, b2.state, b2.assigned) == (2, MemberState.UNRELEASED_PARTITIONS, {})
    group.update_member(b, b2)
    # a must first revoke 1, keeping its epoch.
    a2 = reconcile(group, a, {T1: frozenset({0, 1})})
    assert (a2.member_epoch, a2.state) == (1, MemberState.UNREVOKED_PARTITIONS)
    assert a2.assigned == {T1: frozenset({0})}
    assert a2.pending_revocation == {T1: frozenset({1})}
    group.update_member(a, a2)
    assert reconcile(group, a2, {T1: frozenset({0, 1})}) == a2  # not revoked yet: no step
    a3 = reconcile(group, a2, {T1: frozenset({0})})
    assert (a3.member_epoch, a3.state) == (2, MemberState.STABLE)
    group.update_member(a2, a3)
    b3 = reconcile(group, b2, {})
    assert (b3.state, b3.assigned) == (MemberState.STABLE, {T1: frozenset({1})})


def test_records_replay_into_the_same_group():
    group = ConsumerGroup("g")
    group.group_epoch = group.assignment_epoch = 3
    m = ConsumerGroupMember("m1", client_id="c", client_host="/h", rebalance_timeout_ms=300,
                            subscribed_topic_names=("t",), member_epoch=3,
                            previous_member_epoch=2, assigned={T1: frozenset({0, 2})},
                            classic=ClassicMemberMetadata(10000, (("range", b"\x00\x00"),)))
    log = [group_epoch_record(group), member_subscription_record("g", m),
           target_member_record("g", "m1", {T1: frozenset({0, 2})}), target_epoch_record(group),
           current_assignment_record("g", m)]
    groups: dict[str, ConsumerGroup] = {}
    for key, value in log:
        replay(groups, key, value)
    back = groups["g"]
    assert (back.group_epoch, back.assignment_epoch) == (3, 3)
    assert back.members["m1"] == m
    assert back.target == {"m1": {T1: frozenset({0, 2})}}
    assert back.owner_epoch(T1, 2) == 3


# -- the protocol by hand ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    config = {
        "num.network.threads": "1", "num.io.threads": "4", "num.partitions": str(PARTITIONS),
        "offsets.topic.num.partitions": "5",
        "log.dirs": str(tmp_path_factory.mktemp("kip848")),
        # Short sessions, so that the expiry test takes seconds, not Kafka's 45.
        "group.consumer.session.timeout.ms": str(SESSION_MS),
        "group.consumer.min.session.timeout.ms": "1000",
        "group.consumer.heartbeat.interval.ms": "500",
        "group.initial.rebalance.delay.ms": "0",  # the classic group of the AdminClient test
    }
    with Broker(config) as b:
        yield b


@pytest.fixture
def client(broker):
    c = Client(broker)
    yield c
    c.sock.close()


def _topic(broker, records=0, name=None):
    name = name or f"kip848-{uuid.uuid4().hex[:8]}"
    c = Client(broker)
    created = c.call(ApiKey.CREATE_TOPICS, 7, {"topics": [
        {"name": name, "num_partitions": PARTITIONS, "replication_factor": 1}],
        "timeout_ms": 5000})
    c.sock.close()
    assert created["topics"][0]["error_code"] == Errors.NONE
    if records:
        p = Producer({"bootstrap.servers": broker.bootstrap_servers})
        for i in range(records):
            p.produce(name, b"v%03d" % i, partition=i % PARTITIONS)
        assert p.flush(30) == 0
    return name, created["topics"][0]["topic_id"]


def _heartbeat(c, group, member, epoch, topics=None, owned=None, assignor=None,
               rebalance_timeout_ms=None, instance=None, version=1):
    if rebalance_timeout_ms is None:  # sent when joining, -1 (unchanged) after, as clients do
        rebalance_timeout_ms = 30000 if epoch == 0 else -1
    return c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, {
        "group_id": group, "member_id": member, "member_epoch": epoch, "instance_id": instance,
        "rack_id": None, "rebalance_timeout_ms": rebalance_timeout_ms,
        "subscribed_topic_names": topics, "subscribed_topic_regex": None,
        "server_assignor": assignor,
        "topic_partitions": None if owned is None else [
            {"topic_id": t, "partitions": sorted(ps)} for t, ps in owned.items()]})


def _assigned(response):
    return {t["topic_id"]: frozenset(t["partitions"])
            for t in response["assignment"]["topic_partitions"] if t["partitions"]}


def _describe(c, group):
    r = c.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group],
                                                   "include_authorized_operations": False})
    return r["groups"][0]


def test_a_partition_changes_owner_only_after_it_was_revoked(broker, client):
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    a = _heartbeat(client, group, "member-a", 0, [topic], {})
    assert a["error_code"] == Errors.NONE and a["member_epoch"] == 1
    assert _assigned(a) == {tid: frozenset(range(PARTITIONS))}
    assert a["heartbeat_interval_ms"] == 500
    b = _heartbeat(client, group, "member-b", 0, [topic], {})
    # b reaches the new epoch, but every partition is still a's.
    assert (b["error_code"], b["member_epoch"], _assigned(b)) == (Errors.NONE, 2, {})
    a = _heartbeat(client, group, "member-a", 1, owned={tid: frozenset(range(PARTITIONS))})
    kept = _assigned(a)[tid]
    assert a["member_epoch"] == 1 and len(kept) == PARTITIONS // 2  # revoke the others first
    b = _heartbeat(client, group, "member-b", 2, owned={})
    assert b["assignment"] is None or _assigned(b) == {}  # still not released
    a = _heartbeat(client, group, "member-a", 1, owned={tid: kept})
    assert (a["member_epoch"], _assigned(a)) == (2, {tid: kept})
    b = _heartbeat(client, group, "member-b", 2, owned={})
    assert _assigned(b) == {tid: frozenset(range(PARTITIONS)) - kept}
    described = _describe(client, group)
    assert (described["error_code"], described["group_state"], described["group_epoch"],
            described["assignor_name"]) == (Errors.NONE, "Stable", 2, "uniform")
    assert {m["member_id"]: m["member_epoch"] for m in described["members"]} == {
        "member-a": 2, "member-b": 2}
    # b leaves: a gets everything at the next epoch.
    left = _heartbeat(client, group, "member-b", -1)
    assert (left["error_code"], left["member_epoch"]) == (Errors.NONE, -1)
    a = _heartbeat(client, group, "member-a", 2, owned={tid: kept})
    assert (a["member_epoch"], _assigned(a)) == (3, {tid: frozenset(range(PARTITIONS))})


def test_a_regex_subscription_follows_the_topics_that_match(broker, client):
    group, prefix = f"g-{uuid.uuid4().hex[:6]}", f"kip848re-{uuid.uuid4().hex[:6]}-"

    def join(member, regex):
        return client.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
            "group_id": group, "member_id": member, "member_epoch": 0, "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": None,
            "subscribed_topic_regex": regex, "server_assignor": None, "topic_partitions": []})

    _, tid1 = _topic(broker, name=prefix + "a")
    r = join("m", prefix.replace("-", "\\-") + ".*")
    assert r["error_code"] == Errors.NONE and _assigned(r) == {tid1: frozenset(range(PARTITIONS))}
    # A topic created later that matches is assigned at the next heartbeat, with a new epoch.
    _, tid2 = _topic(broker, name=prefix + "b")
    again = _heartbeat(client, group, "m", r["member_epoch"], owned=_assigned(r))
    assert again["member_epoch"] == r["member_epoch"] + 1
    assert _assigned(again) == {tid1: frozenset(range(PARTITIONS)),
                                tid2: frozenset(range(PARTITIONS))}
    for bad in ("(", "(?=x)", "(a)\\1"):  # RE2 has no lookarounds nor backreferences
        refused = join("other", bad)
        assert refused["error_code"] == Errors.INVALID_REGULAR_EXPRESSION
        assert bad in refused["error_message"]
    # A pattern that backtracks forever in Python's ``re`` on a name that almost matches: RE2
    # answers at once (with ``re`` this heartbeat would hold its request thread for ever).
    _topic(broker, name=prefix + "a" * 60 + "b")
    hard = join("m2", prefix.replace("-", "\\-") + "(a+)+$")
    assert hard["error_code"] == Errors.NONE
    # And the coordinator goes on: the first member heartbeats as before.
    assert _heartbeat(client, group, "m", again["member_epoch"],
                      owned=_assigned(again))["error_code"] == Errors.NONE


def test_a_member_that_does_not_revoke_in_its_rebalance_timeout_is_removed(broker, client):
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    everything = {tid: frozenset(range(PARTITIONS))}
    a = _heartbeat(client, group, "stubborn", 0, [topic], {}, rebalance_timeout_ms=500)
    b = _heartbeat(client, group, "waiting", 0, [topic], {})
    a = _heartbeat(client, group, "stubborn", a["member_epoch"], owned=everything)
    assert len(_assigned(a)[tid]) == PARTITIONS // 2  # asked to revoke the other half

    def removed():  # it keeps heartbeating but never lets its partitions go
        r = _heartbeat(client, group, "stubborn", a["member_epoch"], owned=everything)
        return r["error_code"] == Errors.UNKNOWN_MEMBER_ID

    wait_until(removed, "the stubborn member removed after its rebalance timeout", bound_s=20)
    b = _heartbeat(client, group, "waiting", b["member_epoch"], owned={})
    assert _assigned(b) == everything


@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from(["join", "beat", "leave"]),
                                st.integers(0, 3)), max_size=25),
       assignor=st.sampled_from(["uniform", "range"]))
def test_no_partition_ever_has_two_owners(broker, client, steps, assignor):
    """Members join, heartbeat and leave in any order, each believing what it was last told;
    at every step no partition is believed owned by two members, and once every member has
    heartbeated a few times more, each partition has exactly one owner."""
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    owned: dict[str, tuple[int, frozenset[int]]] = {}  # member -> (epoch, partitions)

    def beat(member, epoch=None):
        if epoch is None:
            epoch, mine = owned[member]
            r = _heartbeat(client, group, member, epoch, owned={tid: mine} if mine else {})
        else:
            r = _heartbeat(client, group, member, 0, [topic], {}, assignor=assignor)
        if r["error_code"] in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
            owned.pop(member, None)  # it gives its partitions up and joins again
            return beat(member, 0)
        assert r["error_code"] == Errors.NONE, r
        mine = owned.get(member, (0, frozenset()))[1]
        if r["assignment"] is not None:
            mine = _assigned(r).get(tid, frozenset())
        owned[member] = (r["member_epoch"], mine)

    def disjoint():
        seen: list[int] = [p for _, ps in owned.values() for p in ps]
        assert len(seen) == len(set(seen)), owned

    for action, n in steps:
        member = f"m{n}"
        if action == "join" and member not in owned:
            beat(member, 0)
        elif action == "beat" and member in owned:
            beat(member)
        elif action == "leave" and member in owned:
            assert _heartbeat(client, group, member, -1)["error_code"] == Errors.NONE
            del owned[member]
        disjoint()
    for _ in range(4):  # revoke, then assign: a few rounds settle any group
        for member in list(owned):
            beat(member)
            disjoint()
    if owned:
        assert sorted(p for _, ps in owned.values() for p in ps) == list(range(PARTITIONS))
        assert _describe(client, group)["group_state"] == "Stable"


def test_the_range_assignor_when_the_member_asks(broker, client):
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    a = _heartbeat(client, group, "a", 0, [topic], {}, assignor="range")
    assert a["error_code"] == Errors.NONE
    assert _describe(client, group)["assignor_name"] == "range"


@pytest.mark.parametrize("fields, error", [
    ({"assignor": "sticky"}, Errors.UNSUPPORTED_ASSIGNOR),
    ({"member": ""}, Errors.INVALID_REQUEST),  # v1: the consumer names itself (KIP-1082)
    ({"topics": None}, Errors.INVALID_REQUEST),  # a join says what it subscribes to
    ({"rebalance_timeout_ms": -1}, Errors.INVALID_REQUEST),
    ({"epoch": 5}, Errors.UNKNOWN_MEMBER_ID),  # never joined
    ({"epoch": -3}, Errors.INVALID_REQUEST),
])
def test_refusals_carry_kafkas_error_codes(broker, client, fields, error):
    topic, _ = _topic(broker)
    args = {"member": "m", "epoch": 0, "topics": [topic], "owned": {}, "assignor": None,
            "rebalance_timeout_ms": 30000, **fields}
    r = _heartbeat(client, f"g-{uuid.uuid4().hex[:6]}", args["member"], args["epoch"],
                   args["topics"], args["owned"], args["assignor"], args["rebalance_timeout_ms"])
    assert r["error_code"] == error and r["error_message"]


def test_version_0_members_get_their_id_from_the_coordinator(broker, client):
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    r = _heartbeat(client, group, "", 0, [topic], {}, version=0)
    assert r["error_code"] == Errors.NONE and r["member_id"] and r["member_epoch"] == 1
    again = _heartbeat(client, group, r["member_id"], 1, owned=_assigned(r), version=0)
    assert (again["error_code"], again["member_epoch"]) == (Errors.NONE, 1)


def test_a_static_member_comes_back_to_its_partitions(broker, client):
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    a = _heartbeat(client, group, "a1", 0, [topic], {}, instance="instance-a")
    b = _heartbeat(client, group, "b", 0, [topic], {})
    a = _heartbeat(client, group, "a1", a["member_epoch"], owned=_assigned(a))
    a = _heartbeat(client, group, "a1", a["member_epoch"], owned=_assigned(a))
    kept = _assigned(a)
    assert a["member_epoch"] == b["member_epoch"] and len(kept[tid]) == PARTITIONS // 2
    # The instance id is taken while its member is there...
    taken = _heartbeat(client, group, "a2", 0, [topic], {}, instance="instance-a")
    assert taken["error_code"] == Errors.UNRELEASED_INSTANCE_ID
    # ... and free once it left for a while (-2): the new incarnation gets the same partitions.
    left = _heartbeat(client, group, "a1", -2, instance="instance-a")
    assert (left["error_code"], left["member_epoch"]) == (Errors.NONE, -2)
    back = _heartbeat(client, group, "a2", 0, [topic], {}, instance="instance-a")
    assert back["error_code"] == Errors.NONE and _assigned(back) == kept
    assert {m["member_id"] for m in _describe(client, group)["members"]} == {"a2", "b"}


def _classic_join(c, group, topic, member="", protocol_type="consumer", instance=None):
    # kafka-python's encoding of the embedded consumer protocol (an eager member owns nothing
    # when it joins)
    metadata = ConsumerProtocolMemberMetadata_v0(0, [topic], b"").encode()
    return c.call(ApiKey.JOIN_GROUP, 5, {
        "group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
        "member_id": member, "group_instance_id": instance, "protocol_type": protocol_type,
        "protocols": [{"name": "range", "metadata": metadata}]})


def _classic_sync(c, group, member, generation, instance=None):
    r = c.call(ApiKey.SYNC_GROUP, 5, {
        "group_id": group, "generation_id": generation, "member_id": member,
        "group_instance_id": instance, "protocol_type": "consumer", "protocol_name": "range",
        "assignments": []})
    if r["error_code"] != Errors.NONE:
        return r["error_code"], None
    decoded = ConsumerProtocolMemberAssignment_v0.decode(r["assignment"])
    return r["error_code"], {p for _, ps in decoded.assigned_partitions for p in ps}


def _classic_heartbeat(c, group, member, generation, instance=None):
    return c.call(ApiKey.HEARTBEAT, 4, {"group_id": group, "generation_id": generation,
                                        "member_id": member,
                                        "group_instance_id": instance})["error_code"]


def test_a_consumer_group_answers_classic_members(broker, client):
    """A classic member joins a consumer group by JoinGroup and SyncGroup (the coordinator
    assigns), is told to rejoin by its Heartbeat, commits with its generation, and leaves."""
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    assert _heartbeat(client, group, "m", 0, [topic], {})["member_epoch"] == 1
    assert _classic_join(client, group, topic, protocol_type="connect")["error_code"] == \
        Errors.INCONSISTENT_GROUP_PROTOCOL
    first = _classic_join(client, group, topic)
    assert first["error_code"] == Errors.MEMBER_ID_REQUIRED  # KIP-394, as in a classic group
    classic = first["member_id"]
    joined = _classic_join(client, group, topic, classic)
    assert joined["error_code"] == Errors.NONE and joined["generation_id"] == 2
    assert (joined["leader"], joined["members"], joined["protocol_name"]) == ("", [], "range")
    # The consumer-protocol member still owns everything: nothing for the classic one yet.
    assert _classic_sync(client, group, classic, 1) == (Errors.ILLEGAL_GENERATION, None)
    assert _classic_sync(client, group, classic, 2) == (Errors.NONE, set())
    a = _heartbeat(client, group, "m", 1, owned={tid: frozenset(range(PARTITIONS))})
    kept = _assigned(a)[tid]
    assert len(kept) == PARTITIONS // 2
    a = _heartbeat(client, group, "m", 1, owned={tid: kept})  # m revoked the others
    assert a["member_epoch"] == 2
    # The partitions are free: the classic member's heartbeat says rejoin, and it gets them.
    assert _classic_heartbeat(client, group, classic, 1) == Errors.ILLEGAL_GENERATION
    assert _classic_heartbeat(client, group, classic, 2) == Errors.REBALANCE_IN_PROGRESS
    again = _classic_join(client, group, topic, classic)
    assert again["generation_id"] == 2
    assert _classic_sync(client, group, classic, 2) == (
        Errors.NONE, set(range(PARTITIONS)) - kept)
    assert _classic_heartbeat(client, group, classic, 2) == Errors.NONE
    # A consumer-protocol member has no classic heartbeat.
    assert _classic_heartbeat(client, group, "m", 2) == Errors.UNKNOWN_MEMBER_ID
    described = {m["member_id"]: m for m in _describe(client, group)["members"]}
    assert (described["m"]["member_type"], described[classic]["member_type"]) == (1, 0)

    def commit(generation, version):
        r = client.call(ApiKey.OFFSET_COMMIT, version, {
            "group_id": group, "generation_id_or_member_epoch": generation,
            "member_id": classic, "group_instance_id": None, "topics": [{
                "name": topic, "partitions": [{
                    "partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                    "committed_metadata": ""}]}]})
        return r["topics"][0]["partitions"][0]["error_code"]

    assert commit(2, 8) == Errors.NONE  # a classic member may commit with older versions
    assert commit(1, 9) == Errors.ILLEGAL_GENERATION  # its epoch is a generation
    left = client.call(ApiKey.LEAVE_GROUP, 4, {"group_id": group, "members": [
        {"member_id": classic, "group_instance_id": None}]})
    assert [m["error_code"] for m in left["members"]] == [Errors.NONE]
    assert [m["member_id"] for m in _describe(client, group)["members"]] == ["m"]
    listed = client.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [],
                                                 "types_filter": ["consumer"]})["groups"]
    assert group in {g["group_id"] for g in listed}
    assert all(g["group_type"] == "consumer" for g in listed)
    # The classic DescribeGroups does not describe it (Kafka: "not a classic group").
    described = client.call(ApiKey.DESCRIBE_GROUPS, 5, {
        "groups": [group], "include_authorized_operations": False})["groups"][0]
    assert described["error_code"] == Errors.GROUP_ID_NOT_FOUND


def test_a_static_classic_member_is_replaced_by_its_next_instance(broker, client):
    """A classic member with a ``group.instance.id`` in a consumer group: no MEMBER_ID_REQUIRED
    (its instance id names it); restarted, it joins without its member id and takes its old
    place and partitions at once, fencing the old member id (FENCED_INSTANCE_ID); an admin
    client removes it by its instance id."""
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    assert _heartbeat(client, group, "m", 0, [topic], {})["member_epoch"] == 1
    joined = _classic_join(client, group, topic, instance="static-1")
    assert joined["error_code"] == Errors.NONE  # at once: no MEMBER_ID_REQUIRED
    old = joined["member_id"]
    # m revokes half; the static member gets them.
    everything = {tid: frozenset(range(PARTITIONS))}
    kept = _assigned(_heartbeat(client, group, "m", 1, owned=everything))[tid]
    _heartbeat(client, group, "m", 1, owned={tid: kept})
    assert _classic_heartbeat(client, group, old, joined["generation_id"], "static-1") == \
        Errors.REBALANCE_IN_PROGRESS
    rejoined = _classic_join(client, group, topic, old, instance="static-1")
    generation = rejoined["generation_id"]
    error, theirs = _classic_sync(client, group, old, generation, "static-1")
    assert error == Errors.NONE and theirs == set(range(PARTITIONS)) - kept
    # Another member id with its instance id is fenced, as an unknown instance id is unknown.
    assert _classic_join(client, group, topic, "intruder", instance="static-1")[
        "error_code"] == Errors.FENCED_INSTANCE_ID
    assert _classic_heartbeat(client, group, old, generation, "static-2") == \
        Errors.UNKNOWN_MEMBER_ID
    # The instance restarts: a new member id, the same place and partitions, the group epoch
    # unchanged (nobody else moves).
    epoch = _describe(client, group)["group_epoch"]
    new = _classic_join(client, group, topic, instance="static-1")
    assert new["error_code"] == Errors.NONE and new["member_id"] != old
    error, again = _classic_sync(client, group, new["member_id"], new["generation_id"],
                                 "static-1")
    assert error == Errors.NONE and again == theirs
    described = _describe(client, group)
    assert described["group_epoch"] == epoch
    assert {(m["member_id"], m["instance_id"]) for m in described["members"]} == {
        ("m", None), (new["member_id"], "static-1")}
    for call in (lambda: _classic_heartbeat(client, group, old, generation, "static-1"),
                 lambda: _classic_sync(client, group, old, generation, "static-1")[0]):
        assert call() == Errors.FENCED_INSTANCE_ID
    # Removed by its instance id alone (Kafka's removeMembersFromConsumerGroup).
    left = client.call(ApiKey.LEAVE_GROUP, 4, {"group_id": group, "members": [
        {"member_id": "", "group_instance_id": "static-1"},
        {"member_id": "", "group_instance_id": "static-2"}]})
    assert [m["error_code"] for m in left["members"]] == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
    assert [m["member_id"] for m in _describe(client, group)["members"]] == ["m"]


def test_delete_groups_and_offset_delete_respect_the_members(broker, client):
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    joined = _heartbeat(client, group, "m", 0, [topic], {})

    def delete_group():
        r = client.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]})
        return r["results"][0]["error_code"]

    def delete_offsets():
        r = client.call(ApiKey.OFFSET_DELETE, 0, {"group_id": group, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0}]}]})
        return r["error_code"] or r["topics"][0]["partitions"][0]["error_code"]

    assert delete_group() == Errors.NON_EMPTY_GROUP
    assert delete_offsets() == Errors.GROUP_SUBSCRIBED_TO_TOPIC
    assert _heartbeat(client, group, "m", -1)["error_code"] == Errors.NONE
    assert joined["member_epoch"] == 1
    assert delete_group() == Errors.NONE
    assert _describe(client, group)["error_code"] == Errors.GROUP_ID_NOT_FOUND
    assert delete_group() == Errors.GROUP_ID_NOT_FOUND


def test_a_member_with_a_wrong_epoch_is_fenced_and_offsets_are_checked(broker, client):
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    joined = _heartbeat(client, group, "m", 0, [topic], {})
    assert joined["member_epoch"] == 1
    assert _heartbeat(client, group, "m", 7, owned={})["error_code"] == \
        Errors.FENCED_MEMBER_EPOCH

    def commit(epoch, member="m", version=9, group=group):
        r = client.call(ApiKey.OFFSET_COMMIT, version, {
            "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member,
            "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]})
        return r["topics"][0]["partitions"][0]["error_code"]

    assert commit(1) == Errors.NONE
    assert commit(0) == Errors.STALE_MEMBER_EPOCH
    assert commit(2) == Errors.STALE_MEMBER_EPOCH
    assert commit(1, member="stranger") == Errors.UNKNOWN_MEMBER_ID
    assert commit(-1, member="") == Errors.UNKNOWN_MEMBER_ID  # not while the group has members
    # A member of the consumer protocol commits with v9+, the first with a member epoch.
    assert commit(1, version=8) == Errors.UNSUPPORTED_VERSION
    # A membership of a group that does not exist: v9+ says so, older versions as before.
    assert commit(1, group="no-such-group") == Errors.GROUP_ID_NOT_FOUND
    assert commit(1, group="no-such-group", version=8) == Errors.ILLEGAL_GENERATION

    def fetch(member, epoch):
        r = client.call(ApiKey.OFFSET_FETCH, 9, {"groups": [{
            "group_id": group, "member_id": member, "member_epoch": epoch,
            "topics": [{"name": topic, "partition_indexes": [0]}]}], "require_stable": False})
        g = r["groups"][0]
        return g["error_code"], [p["committed_offset"] for t in g["topics"]
                                 for p in t["partitions"]]

    assert fetch("m", 1) == (Errors.NONE, [5])
    assert fetch("m", 0) == (Errors.STALE_MEMBER_EPOCH, [])
    assert fetch("stranger", 1) == (Errors.UNKNOWN_MEMBER_ID, [])
    assert fetch(None, -1) == (Errors.NONE, [5])  # an admin client: no member, no epoch
    # Once the member has left, the empty group takes commits from outside it again.
    assert _heartbeat(client, group, "m", -1)["error_code"] == Errors.NONE
    assert commit(-1, member="") == Errors.NONE


def test_a_silent_member_is_removed_after_its_session(broker, client):
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    assert _heartbeat(client, group, "silent", 0, [topic], {})["error_code"] == Errors.NONE
    assert len(_describe(client, group)["members"]) == 1
    wait_until(lambda: _describe(client, group)["group_state"] == "Empty",
               f"the silent member removed after {SESSION_MS} ms", bound_s=SESSION_MS / 1000 + 20)
    again = _heartbeat(client, group, "silent", 1, owned={tid: frozenset(range(PARTITIONS))})
    assert again["error_code"] == Errors.UNKNOWN_MEMBER_ID


def test_group_consumer_settings_are_checked_and_the_size_bounded(tmp_path):
    base = {"num.network.threads": "1", "num.io.threads": "2", "log.dirs": str(tmp_path),
            "offsets.topic.num.partitions": "1"}
    with pytest.raises(ConfigError, match="group.consumer.min.session.timeout.ms"):
        Broker({**base, "group.consumer.session.timeout.ms": "1000"})
    with pytest.raises(ConfigError, match="sticky"):
        Broker({**base, "group.consumer.assignors": "range,sticky"})
    with pytest.raises(ConfigError, match="group.consumer.migration.policy"):
        Broker({**base, "group.consumer.migration.policy": "sideways"})
    with Broker({**base, "group.consumer.max.size": "1", "group.consumer.assignors": "range",
                 "group.consumer.migration.policy": "disabled",
                 "group.initial.rebalance.delay.ms": "0"}) as b:
        topic, _ = _topic(b)
        c = Client(b)
        # Without the upgrade, a classic group with members stays one.
        member = _classic_join(c, "classic", topic)["member_id"]
        assert _classic_join(c, "classic", topic, member)["error_code"] == Errors.NONE
        assert _heartbeat(c, "classic", "new", 0, [topic], {})["error_code"] == \
            Errors.GROUP_ID_NOT_FOUND
        group = "full"
        assert _heartbeat(c, group, "one", 0, [topic], {})["error_code"] == Errors.NONE
        assert _heartbeat(c, group, "two", 0, [topic], {})["error_code"] == \
            Errors.GROUP_MAX_SIZE_REACHED
        assert _describe(c, group)["assignor_name"] == "range"  # the first configured
        assert _heartbeat(c, group, "one", 1, [topic], {},
                          assignor="uniform")["error_code"] == Errors.UNSUPPORTED_ASSIGNOR
        c.sock.close()


# -- confluent-kafka consumers ------------------------------------------------------------------


def _consumer(bootstrap, group, topic, **extra):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "group.protocol": "consumer", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, **extra})
    c.subscribe([topic])
    return c


def _poll_into(consumer, seen):
    m = consumer.poll(0.2)
    if m is None:
        return
    assert m.error() is None, m.error()
    seen.append((m.partition(), m.offset(), m.value()))

    def committed():
        # A heartbeat may move the member epoch between the fetch and the commit: the commit is
        # then STALE_MEMBER_EPOCH, and the consumer commits again with its new epoch (as Java's
        # does by itself).
        try:
            consumer.commit(message=m, asynchronous=False)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.STALE_MEMBER_EPOCH:
                raise
            return False  # librdkafka's own thread heartbeats meanwhile
        return True

    wait_until(committed, f"offset {m.offset()} of partition {m.partition()} committed", 30)


def _wait_for_split(c1, c2, seen1, seen2):
    """Poll both consumers until each owns partitions, none twice, and together all."""

    def split():
        _poll_into(c1, seen1)
        _poll_into(c2, seen2)
        a1 = {tp.partition for tp in c1.assignment()}
        a2 = {tp.partition for tp in c2.assignment()}
        return a1 and a2 and not a1 & a2 and len(a1 | a2) == PARTITIONS

    wait_until(split, "both consumers own partitions, none twice", bound_s=60)


def _read_each_once(c1, c2, seen1, seen2, n):
    """Poll both until ``n`` records are read between them: each of the topic's exactly once."""

    def all_read():
        _poll_into(c1, seen1)
        _poll_into(c2, seen2)
        return len(seen1) + len(seen2) >= n

    wait_until(all_read, f"{n} records read", bound_s=60)
    values = [v for _, _, v in seen1 + seen2]
    assert sorted(values) == sorted(b"v%03d" % i for i in range(n))  # each exactly once


def _takes_over(consumer, who, topic, n):
    """The other member gone, ``consumer`` owns every partition, and the group's committed
    offsets cover all ``n`` records."""
    wait_until(lambda: (consumer.poll(0.2), len(consumer.assignment()) == PARTITIONS)[1],
               f"{who} owns every partition", bound_s=60)
    committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)],
                                   timeout=10)
    assert sum(tp.offset for tp in committed) == n


def test_two_consumers_share_a_topic_then_one_gets_everything(broker):
    n = 40
    topic, _ = _topic(broker, records=n)
    group = f"g-{uuid.uuid4().hex[:6]}"
    c1 = _consumer(broker.bootstrap_servers, group, topic)
    c2 = _consumer(broker.bootstrap_servers, group, topic)
    try:
        seen1, seen2 = [], []

        _wait_for_split(c1, c2, seen1, seen2)

        _read_each_once(c1, c2, seen1, seen2, n)
        c2.close()
        _takes_over(c1, "the remaining consumer", topic, n)
    finally:
        c1.close()


def test_a_confluent_consumer_subscribes_with_a_regex(broker, client):
    """librdkafka sends a ``^``-pattern as the member's SubscribedTopicRegex: the coordinator
    resolves it (with RE2) to the topics that match, and only those."""
    prefix = f"kip848rx-{uuid.uuid4().hex[:6]}-"
    a, _ = _topic(broker, records=6, name=prefix + "a")
    b, _ = _topic(broker, records=4, name=prefix + "b")
    _topic(broker, records=3, name="other-" + prefix)  # does not match
    group = f"g-{uuid.uuid4().hex[:6]}"
    c = _consumer(broker.bootstrap_servers, group, f"^{prefix}.*")
    try:
        seen = []

        def read_all():
            m = c.poll(0.2)
            if m is not None:
                assert m.error() is None, m.error()
                seen.append((m.topic(), m.value()))
            return len(seen) >= 10

        wait_until(read_all, "10 records of the two matching topics", bound_s=60)
        assert sorted(seen) == sorted([(a, b"v%03d" % i) for i in range(6)]
                                      + [(b, b"v%03d" % i) for i in range(4)])
        assert {tp.topic for tp in c.assignment()} == {a, b}
        [member] = _describe(client, group)["members"]
        # librdkafka joins its patterns as ``(p1)|(p2)``
        assert (member["subscribed_topic_regex"], member["subscribed_topic_names"]) == (
            f"(^{prefix}.*)", [])
    finally:
        c.close()


def test_a_classic_member_that_does_not_rejoin_is_removed(broker, client):
    """Told to rejoin, a classic member has its rebalance timeout to do so, however often it
    heartbeats: then it is removed and its partitions go to the others."""
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    assert _heartbeat(client, group, "m", 0, [topic], {})["error_code"] == Errors.NONE
    member = _classic_join(client, group, topic)["member_id"]
    joined = client.call(ApiKey.JOIN_GROUP, 5, {
        "group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 1000,
        "member_id": member, "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": ConsumerProtocolMemberMetadata_v0(
            0, [topic], b"").encode()}]})
    generation = joined["generation_id"]
    assert _classic_sync(client, group, member, generation)[0] == Errors.NONE
    # m lets its partitions go (two steps): the classic member must rejoin to get them.
    _heartbeat(client, group, "m", 1, owned={})
    assert _heartbeat(client, group, "m", 1, owned={})["member_epoch"] == generation
    assert _classic_heartbeat(client, group, member, generation) == Errors.REBALANCE_IN_PROGRESS

    def removed():
        return _classic_heartbeat(client, group, member, generation) == Errors.UNKNOWN_MEMBER_ID

    wait_until(removed, "the member that never rejoined removed", bound_s=20)
    beat = _heartbeat(client, group, "m", 1, owned={})
    assert _assigned(beat) == {tid: frozenset(range(PARTITIONS))}


def test_a_classic_group_becomes_a_consumer_group(broker, client):
    """A member of the new protocol joins a classic group: its member keeps its partitions and
    generation as a member of the consumer group, a JoinGroup parked in the classic rebalance
    is answered REBALANCE_IN_PROGRESS, and the classic member is told to rejoin."""
    topic, tid = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    a = _classic_join(client, group, topic)["member_id"]
    joined = _classic_join(client, group, topic, a)
    generation = joined["generation_id"]
    everything = ConsumerProtocolMemberAssignment_v0(0, [(topic, list(range(PARTITIONS)))],
                                                     b"").encode()
    synced = client.call(ApiKey.SYNC_GROUP, 5, {
        "group_id": group, "generation_id": generation, "member_id": a,
        "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": a, "assignment": everything}]})
    assert synced["error_code"] == Errors.NONE
    # A second classic member's JoinGroup waits for a to rejoin.
    other = Client(broker)
    b = _classic_join(other, group, topic)["member_id"]
    parked: list = []
    joining = threading.Thread(target=lambda: parked.append(_classic_join(other, group, topic,
                                                                          b)))
    joining.start()
    wait_until(lambda: broker.group_coordinator.group(group).state.value == "PreparingRebalance",
               "the classic group rebalancing")
    new = _heartbeat(client, group, "new", 0, [topic], {})
    assert new["error_code"] == Errors.NONE and new["member_epoch"] == generation + 1
    joining.join(30)
    other.sock.close()
    assert parked[0]["error_code"] == Errors.REBALANCE_IN_PROGRESS
    described = {m["member_id"]: m for m in _describe(client, group)["members"]}
    assert set(described) == {a, b, "new"}  # b too: it rejoins with its member id
    assert described[a]["member_epoch"] == generation and described[a]["member_type"] == 0
    assert {p for t in described[a]["assignment"]["topic_partitions"]
            for p in t["partitions"]} == set(range(PARTITIONS))  # kept until it rejoins
    assert _assigned(new) == {}  # every partition is still a's
    assert _classic_heartbeat(client, group, a, generation) == Errors.REBALANCE_IN_PROGRESS
    again = _classic_join(client, group, topic, a)  # eager: a revoked everything first
    assert _classic_sync(client, group, a, again["generation_id"])[0] == Errors.NONE
    a_now = _classic_join(client, group, topic, a)
    _, mine = _classic_sync(client, group, a, a_now["generation_id"])
    theirs = _assigned(_heartbeat(client, group, "new", new["member_epoch"], owned={}))
    assert mine and theirs and not mine & theirs[tid]


def test_an_empty_group_gives_its_id_to_the_other_protocol(broker, client):
    """One group per id: an empty consumer group makes way for a classic one, and an empty
    classic group for a consumer group; a classic member then commits with its generation."""
    topic, _ = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"

    def listed():
        groups = client.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [],
                                                     "types_filter": []})["groups"]
        return [g["group_type"] for g in groups if g["group_id"] == group]

    assert _heartbeat(client, group, "m", 0, [topic], {})["error_code"] == Errors.NONE
    assert _heartbeat(client, group, "m", -1)["error_code"] == Errors.NONE
    member = _classic_join(client, group, topic)["member_id"]
    joined = _classic_join(client, group, topic, member)
    assert joined["error_code"] == Errors.NONE and joined["leader"] == member  # classic
    assert listed() == ["classic"]
    synced = client.call(ApiKey.SYNC_GROUP, 5, {
        "group_id": group, "generation_id": joined["generation_id"], "member_id": member,
        "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": member, "assignment": b""}]})
    assert synced["error_code"] == Errors.NONE
    r = client.call(ApiKey.OFFSET_COMMIT, 9, {
        "group_id": group, "generation_id_or_member_epoch": joined["generation_id"],
        "member_id": member, "group_instance_id": None, "topics": [{
            "name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                           "committed_leader_epoch": -1,
                                           "committed_metadata": ""}]}]})
    assert r["topics"][0]["partitions"][0]["error_code"] == Errors.NONE
    left = client.call(ApiKey.LEAVE_GROUP, 4, {"group_id": group, "members": [
        {"member_id": member, "group_instance_id": None}]})
    assert [m["error_code"] for m in left["members"]] == [Errors.NONE]
    assert _heartbeat(client, group, "m2", 0, [topic], {})["error_code"] == Errors.NONE
    assert listed() == ["consumer"]


CLASSIC = {"group.protocol": "classic", "session.timeout.ms": 6000,
           "heartbeat.interval.ms": 500}


@pytest.mark.parametrize("first", ["consumer", "classic"])
def test_a_classic_and_a_consumer_protocol_consumer_share_a_group(broker, first):
    """Kafka 4's migration: a classic consumer joins a consumer group, or a consumer of the new
    protocol joins a classic group (which becomes a consumer group).  Either way each partition
    has one owner, each record is read once, and a leaving member's partitions go to the
    other."""
    n = 40
    topic, _ = _topic(broker, records=n)
    group = f"g-{uuid.uuid4().hex[:6]}"
    second = "classic" if first == "consumer" else "consumer"
    extra = {"consumer": {}, "classic": CLASSIC}
    c1 = _consumer(broker.bootstrap_servers, group, topic, **extra[first])
    c2 = None
    try:
        seen1, seen2 = [], []
        wait_until(lambda: (_poll_into(c1, seen1), len(c1.assignment()) == PARTITIONS)[1],
                   f"the {first} consumer owns every partition", bound_s=60)
        c2 = _consumer(broker.bootstrap_servers, group, topic, **extra[second])

        _wait_for_split(c1, c2, seen1, seen2)
        hand = Client(broker)
        members = _describe(hand, group)["members"]
        hand.sock.close()
        assert sorted(m["member_type"] for m in members) == [0, 1]  # classic, consumer

        _read_each_once(c1, c2, seen1, seen2, n)
        c1.close()
        _takes_over(c2, f"the {second} consumer", topic, n)
        # The last member of the new protocol gone, the group is classic again (downgrade).
        hand = Client(broker)
        groups = hand.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [],
                                                   "types_filter": []})["groups"]
        hand.sock.close()
        assert [g["group_type"] for g in groups if g["group_id"] == group] == [second]
    finally:
        c1.close()
        if c2 is not None:
            c2.close()


@pytest.mark.parametrize("first", ["consumer", "classic"])
def test_a_static_classic_consumer_restarts_into_its_place(broker, first):
    """confluent-kafka's classic consumer with ``group.instance.id`` in a consumer group (joined
    into it, or adopted with the classic group it was in): closed (a static member does not
    leave) and started again, it takes its place and partitions back at once, long before its
    session (a minute) would have freed them."""
    topic, _ = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    static = {**CLASSIC, "group.instance.id": "static-a", "session.timeout.ms": 60000}
    c1 = c2 = c3 = None
    hand = Client(broker)
    try:
        def owns_all(c):
            c.poll(0.1)
            return len(c.assignment()) == PARTITIONS

        def owners(other):
            c1.poll(0.1)
            other.poll(0.1)
            a1 = {tp.partition for tp in c1.assignment()}
            a2 = {tp.partition for tp in other.assignment()}
            return a1 and a2 and not a1 & a2 and len(a1 | a2) == PARTITIONS

        if first == "consumer":
            c1 = _consumer(broker.bootstrap_servers, group, topic)
            wait_until(lambda: owns_all(c1), "the first consumer owns every partition", 30)
            c2 = _consumer(broker.bootstrap_servers, group, topic, **static)
        else:
            c2 = _consumer(broker.bootstrap_servers, group, topic, **static)
            wait_until(lambda: owns_all(c2), "the first consumer owns every partition", 30)
            c1 = _consumer(broker.bootstrap_servers, group, topic)
        wait_until(lambda: owners(c2), "both consumers own partitions", bound_s=30)
        [before] = [m for m in _describe(hand, group)["members"] if m["instance_id"]]
        c2.close()
        c2 = None
        c3 = _consumer(broker.bootstrap_servers, group, topic, **static)
        wait_until(lambda: owners(c3), "the restarted consumer owns partitions again",
                   bound_s=30)
        members = _describe(hand, group)["members"]
        [after] = [m for m in members if m["instance_id"]]
        assert len(members) == 2 and after["instance_id"] == "static-a"
        assert after["member_id"] != before["member_id"]
    finally:
        hand.sock.close()
        for c in (c1, c2, c3):
            if c is not None:
                c.close()


def test_kafka_python_classic_consumer_joins_and_the_group_goes_back_to_classic(broker):
    """kafka-python (classic only) joins confluent-kafka's consumer group; when the
    confluent-kafka consumer leaves, the group is classic again and kafka-python has it all."""
    n = 40
    topic, _ = _topic(broker, records=n)
    group = f"g-{uuid.uuid4().hex[:6]}"
    modern = _consumer(broker.bootstrap_servers, group, topic)
    classic = None
    try:
        seen_modern, seen_classic = [], []
        wait_until(lambda: (_poll_into(modern, seen_modern),
                            len(modern.assignment()) == PARTITIONS)[1],
                   "the consumer-protocol consumer owns every partition", bound_s=60)
        classic = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap_servers,
                                group_id=group, auto_offset_reset="earliest",
                                enable_auto_commit=False, session_timeout_ms=6000,
                                heartbeat_interval_ms=500)

        def poll_classic():
            for records in classic.poll(timeout_ms=100).values():
                seen_classic.extend(r.value for r in records)
                classic.commit()

        def split():
            _poll_into(modern, seen_modern)
            poll_classic()
            a1 = {tp.partition for tp in modern.assignment()}
            a2 = {tp.partition for tp in classic.assignment()}
            return a1 and a2 and not a1 & a2 and len(a1 | a2) == PARTITIONS

        wait_until(split, "both consumers own partitions, none twice", bound_s=60)
        wait_until(lambda: (_poll_into(modern, seen_modern), poll_classic(),
                            len(seen_modern) + len(seen_classic) >= n)[2],
                   f"{n} records read", bound_s=60)
        values = [v for _, _, v in seen_modern] + seen_classic
        assert sorted(values) == sorted(b"v%03d" % i for i in range(n))  # each exactly once
        modern.close()
        wait_until(lambda: (poll_classic(), len(classic.assignment()) == PARTITIONS)[1],
                   "kafka-python owns every partition", bound_s=60)
        hand = Client(broker)
        groups = hand.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [],
                                                   "types_filter": []})["groups"]
        hand.sock.close()
        assert [g["group_type"] for g in groups if g["group_id"] == group] == ["classic"]
    finally:
        modern.close()
        if classic is not None:
            classic.close()


def test_admin_client_describes_a_consumer_group(broker):
    """librdkafka asks ConsumerGroupDescribe first, and DescribeGroups for a classic group."""
    topic, _ = _topic(broker, records=4)
    group, classic = f"g-{uuid.uuid4().hex[:6]}", f"classic-{uuid.uuid4().hex[:6]}"
    c = _consumer(broker.bootstrap_servers, group, topic)
    old = _consumer(broker.bootstrap_servers, classic, topic, **{"group.protocol": "classic"})
    try:
        wait_until(lambda: (c.poll(0.2), old.poll(0.2), c.assignment() and old.assignment())[2],
                   "both consumers assigned", bound_s=60)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        described = admin.describe_consumer_groups([group])[group].result(timeout=30)
        assert described.type == ConsumerGroupType.CONSUMER
        assert described.partition_assignor == "uniform"
        assert len(described.members) == 1
        assert {tp.partition for tp in described.members[0].assignment.topic_partitions} == \
            set(range(PARTITIONS))
        described = admin.describe_consumer_groups([classic])[classic].result(timeout=30)
        assert (described.type, len(described.members)) == (ConsumerGroupType.CLASSIC, 1)
    finally:
        c.close()
        old.close()


def test_commits_and_the_group_survive_a_restart(tmp_path):
    config = {"num.network.threads": "1", "num.io.threads": "2", "log.dirs": str(tmp_path),
              "offsets.topic.num.partitions": "3", "num.partitions": str(PARTITIONS)}
    group = "restarted"
    with Broker(config) as b:
        topic, tid = _topic(b, records=20)
        c = _consumer(b.bootstrap_servers, group, topic)
        seen = []
        try:
            wait_until(lambda: (_poll_into(c, seen), len(seen) >= 20)[1], "20 records read",
                       bound_s=60)
        finally:
            c.close()
        # A member by hand stays in the group across the restart.
        hand = Client(b)
        joined = _heartbeat(hand, group, "stays", 0, [topic], {})
        hand.sock.close()
        assert joined["member_epoch"] > 0
    with Broker(config) as b:
        hand = Client(b)
        described = _describe(hand, group)
        assert [m["member_id"] for m in described["members"]] == ["stays"]
        assert described["members"][0]["member_epoch"] == joined["member_epoch"]
        assert described["group_epoch"] >= joined["member_epoch"]
        again = _heartbeat(hand, group, "stays", joined["member_epoch"], owned=_assigned(joined))
        assert again["error_code"] == Errors.NONE
        assert _heartbeat(hand, group, "stays", -1)["error_code"] == Errors.NONE
        hand.sock.close()
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        p.produce(topic, b"after", partition=0)
        assert p.flush(30) == 0
        c = _consumer(b.bootstrap_servers, group, topic)
        seen = []
        try:
            wait_until(lambda: (_poll_into(c, seen), seen)[1], "the new record", bound_s=60)
        finally:
            c.close()
        assert [v for _, _, v in seen] == [b"after"]  # resumed from the committed offsets


def test_a_classic_member_of_a_consumer_group_survives_a_restart(tmp_path):
    """What the group keeps of a classic member (its session timeout and protocols) is in the
    member's record: after a restart it is still a classic member at its generation."""
    config = {"num.network.threads": "1", "num.io.threads": "2", "log.dirs": str(tmp_path),
              "offsets.topic.num.partitions": "1", "num.partitions": str(PARTITIONS)}
    group = "mixed-restarted"
    with Broker(config) as b:
        topic, _ = _topic(b)
        c = Client(b)
        assert _heartbeat(c, group, "m", 0, [topic], {})["error_code"] == Errors.NONE
        classic = _classic_join(c, group, topic)["member_id"]
        generation = _classic_join(c, group, topic, classic)["generation_id"]
        c.sock.close()
    with Broker(config) as b:
        c = Client(b)
        described = {m["member_id"]: m for m in _describe(c, group)["members"]}
        assert described[classic]["member_type"] == 0
        assert _classic_sync(c, group, classic, generation)[0] == Errors.NONE
        # It waits for m's partitions, as it did before the restart.
        assert _classic_heartbeat(c, group, classic, generation) == Errors.NONE
        assert _classic_heartbeat(c, group, classic, generation + 1) == \
            Errors.ILLEGAL_GENERATION
        c.sock.close()


# -- a coordinator failover --------------------------------------------------------------------


@pytest.mark.cluster
@pytest.mark.timeout(240)
def test_a_consumer_group_survives_a_coordinator_kill(cluster):
    """Two members reach a stable assignment and one commits; the coordinator is SIGKILLed; the
    new one replayed the group's records, so both heartbeat on with their epochs and partitions,
    ConsumerGroupDescribe shows the same group, and commits are still checked by epoch."""
    import time

    from support.topics import new_replicated_topic
    from test_cluster_groups import OFFSETS_PARTITIONS, _call, _find_coordinator

    from kafkacore.broker.group.group_metadata_manager import OFFSETS_TOPIC, partition_for

    topic = new_replicated_topic(cluster, PARTITIONS, prefix="kip848")
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    partition = partition_for(group, OFFSETS_PARTITIONS)
    _find_coordinator(cluster, 1, group)  # creates __consumer_offsets if no test did yet
    cluster.wait_for_topic(OFFSETS_TOPIC)
    coordinator = cluster.leader_of(OFFSETS_TOPIC, partition)
    state = cluster.partition_state(OFFSETS_TOPIC, partition)
    cluster.wait_for_isr(OFFSETS_TOPIC, partition, state["replica_nodes"])
    wait_until(lambda: _find_coordinator(cluster, coordinator, group)["error_code"] == 0,
               "the coordinator loaded its partition", bound_s=60)

    def heartbeat(broker, member, epoch, topics=None, owned=None):
        return _call(cluster, broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
            "group_id": group, "member_id": member, "member_epoch": epoch,
            "rebalance_timeout_ms": 30000 if epoch == 0 else -1,
            "subscribed_topic_names": topics, "topic_partitions": None if owned is None else [
                {"topic_id": t, "partitions": sorted(ps)} for t, ps in owned.items()]})

    def commit(broker, epoch):
        r = _call(cluster, broker, ApiKey.OFFSET_COMMIT, 9, {
            "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": "a",
            "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": 0, "committed_metadata": ""}]}]})
        return r["topics"][0]["partitions"][0]["error_code"]

    a = heartbeat(coordinator, "a", 0, [topic], {})
    b = heartbeat(coordinator, "b", 0, [topic], {})
    a = heartbeat(coordinator, "a", a["member_epoch"], owned=_assigned(a))  # revokes half
    a = heartbeat(coordinator, "a", a["member_epoch"], owned=_assigned(a))
    b = heartbeat(coordinator, "b", b["member_epoch"], owned={})
    assert a["member_epoch"] == b["member_epoch"] == 2, (a, b)
    mine = {"a": _assigned(a), "b": _assigned(b)}
    assert commit(coordinator, 2) == Errors.NONE

    cluster.kill(coordinator)
    try:
        new = cluster.wait_for_leader_change(OFFSETS_TOPIC, partition, coordinator)
        deadline = time.monotonic() + 60
        while True:  # NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS until it has loaded
            again = heartbeat(new, "a", 2, owned=mine["a"])
            if again["error_code"] not in (Errors.NOT_COORDINATOR,
                                           Errors.COORDINATOR_LOAD_IN_PROGRESS,
                                           Errors.COORDINATOR_NOT_AVAILABLE):
                break
            assert time.monotonic() < deadline, again
            time.sleep(0.05)
        assert (again["error_code"], again["member_epoch"]) == (Errors.NONE, 2)
        assert heartbeat(new, "b", 2, owned=mine["b"])["error_code"] == Errors.NONE
        described = _call(cluster, new, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {
            "group_ids": [group], "include_authorized_operations": False})["groups"][0]
        assert (described["group_state"], described["group_epoch"]) == ("Stable", 2)
        assert {m["member_id"]: {t["topic_id"]: frozenset(t["partitions"])
                                 for t in m["assignment"]["topic_partitions"]}
                for m in described["members"]} == mine
        assert commit(new, 2) == Errors.NONE
        assert commit(new, 1) == Errors.STALE_MEMBER_EPOCH
    finally:
        cluster.restart(coordinator)
