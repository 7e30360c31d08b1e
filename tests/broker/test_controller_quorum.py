"""Three controllers as a Raft quorum (KIP-595): kill or cut off the active one and the cluster
goes on.  Judged by clients we did not write: kafka-python's admin client creates the topics
and describes the quorum, confluent-kafka produces with acks=all across the failover and reads
the records back.  See docs/broker/quorum.rst.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from readback import produce_confluent, read_confluent
from test_describe_quorum import METADATA_TOPIC, describe
from waits import wait_until

from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing.cluster import Cluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    with Cluster(brokers=3, controllers=3,
                 log_dir=tmp_path_factory.mktemp("quorum")) as cluster:
        yield cluster


@pytest.fixture
def cluster(quorum):
    """The module's cluster; whatever a test killed or cut off is brought back after it."""
    yield quorum
    for node_id, node in [*quorum.controllers.items(), *quorum.brokers.items()]:
        if not node.running:
            quorum.restart(node_id)
    quorum.reset_faults()
    quorum.wait_for_brokers()


def create_topic(cluster: Cluster, replication_factor: int) -> str:
    """A topic created by kafka-python's admin client (a broker forwards it to the active
    controller); its name."""
    name = f"q-{uuid.uuid4().hex[:10]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                             request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(name, 1, replication_factor,
                                      topic_configs={"min.insync.replicas": "2"})])
    finally:
        admin.close()
    return name


def produce_in_background(cluster: Cluster, topic: str, values: list[bytes], timeout_s: float,
                          spread_s: float) -> tuple[threading.Thread, dict]:
    """confluent-kafka producing ``values`` with acks=all and idempotence, spread over
    ``spread_s``, on a thread already started; its ``(delivered, errors)`` lands in the dict's
    ``"out"`` once the thread is joined."""
    produced: dict = {}
    producing = threading.Thread(target=lambda: produced.update(out=produce_confluent(
        cluster.bootstrap_servers, topic, values, {"acks": "all", "enable.idempotence": True},
        timeout_s=timeout_s, spread_s=spread_s)))
    producing.start()
    return producing, produced


def describe_quorum(cluster: Cluster) -> dict:
    """kafka-python's DescribeQuorum answer for ``__cluster_metadata`` partition 0."""
    return describe(cluster.bootstrap_servers)


def test_only_the_active_controller_answers(cluster):
    """The others say NOT_CONTROLLER to a broker's request (a broker then moves on), and
    NOT_LEADER_OR_FOLLOWER for the partition to DescribeQuorum, naming the leader, in every
    version (Kafka's ``KafkaRaftClient.handleDescribeQuorumRequest``)."""
    active = cluster.active_controller()
    epoch = cluster.quorum_status(active)["epoch"]
    ask = {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}
    for node_id, node in cluster.controllers.items():
        client = InterBrokerClient("127.0.0.1", node.port, "quorum-test", 10.0)
        try:
            quorums = [client.send(ApiKey.DESCRIBE_QUORUM, v, ask) for v in (0, 1, 2)]
            heartbeat = client.send(ApiKey.BROKER_HEARTBEAT, 0, {
                "broker_id": 1, "broker_epoch": -1, "current_metadata_offset": 0,
                "want_fence": False, "want_shut_down": False})
        finally:
            client.close()
        for version, quorum in enumerate(quorums):
            assert quorum["error_code"] == Errors.NONE, (node_id, version)
            [partition] = quorum["topics"][0]["partitions"]
            assert (partition["leader_id"], partition["leader_epoch"]) == (active, epoch)
            if node_id == active:
                assert partition["error_code"] == Errors.NONE
                assert len(partition["current_voters"]) == len(cluster.controllers)
            else:
                assert partition["error_code"] == Errors.NOT_LEADER_OR_FOLLOWER, version
                assert partition["current_voters"] == []
                if version >= 2:
                    assert "not the current leader" in partition["error_message"]
        if node_id == active:
            assert heartbeat["error_code"] == Errors.STALE_BROKER_EPOCH  # judged, not refused
        else:
            assert heartbeat["error_code"] == Errors.NOT_CONTROLLER


def test_the_active_controller_killed_the_cluster_goes_on(cluster):
    first = cluster.active_controller()
    before = create_topic(cluster, 3)
    cluster.wait_for_isr(before, 0, [1, 2, 3])
    cluster.wait_for_topic(before)
    quorum_before = describe_quorum(cluster)
    assert quorum_before["leader_id"] == first
    leader = cluster.leader_of(before, 0)

    # Records with acks=all all through: the active controller dies, then the partition's
    # leader, whose successor only the new active controller can elect.
    values = [b"v%d" % i for i in range(40)]
    producing, produced = produce_in_background(cluster, before, values, 90.0, 6.0)
    cluster.kill(first)
    second = cluster.active_controller()
    assert second != first
    cluster.kill(leader)
    assert cluster.wait_for_leader_change(before, 0, leader) != leader
    producing.join(120)
    delivered, errors = produced["out"]
    assert None not in delivered, errors

    # What was committed before is there, and a new topic is created by the new controller.
    assert cluster.partition_state(before, 0) is not None
    after = create_topic(cluster, 2)
    cluster.wait_for_topic(after)
    assert [r.value for r in read_confluent(cluster.bootstrap_servers, before, 1, 40)] == values
    delivered, errors = produce_confluent(cluster.bootstrap_servers, after, [b"a", b"b"],
                                          {"acks": "all"})
    assert None not in delivered, errors

    # DescribeQuorum (kafka-python) names the new leader, in a later epoch, of the same voters.
    quorum_after = describe_quorum(cluster)
    assert quorum_after["leader_id"] == second
    assert quorum_after["leader_epoch"] > quorum_before["leader_epoch"]
    assert sorted(v["replica_id"] for v in quorum_after["current_voters"]) == sorted(
        cluster.controllers)
    assert quorum_after["high_watermark"] > quorum_before["high_watermark"]

    # Restarted with its log, the old active controller follows the new one and catches up.
    cluster.restart(first)
    wait_until(lambda: (s := cluster.quorum_status(first))["leader_id"] != first
               and s["leader_id"] >= 0 and not s["active"]
               and s["high_watermark"] >= quorum_after["high_watermark"],
               f"restarted controller {first} follows and catches up", 60)


def test_an_isolated_controller_steps_down_and_follows_once_healed(cluster):
    first = cluster.active_controller()
    cluster.isolate(first)
    try:
        # Check quorum: no majority fetches from it, so it resigns on its own.
        wait_until(lambda: not cluster.quorum_status(first)["active"],
                   f"isolated controller {first} stops acting", 30)
        second = cluster.active_controller()
        assert second != first
        name = create_topic(cluster, 3)  # decided without it
        committed = cluster.quorum_status(second)["high_watermark"]
    finally:
        cluster.heal(first)
    wait_until(lambda: (s := cluster.quorum_status(first))["leader_id"] not in (-1, first)
               and not s["is_leader"] and s["high_watermark"] >= committed,
               f"healed controller {first} follows the leader and has the topic's records", 60)
    cluster.wait_for_topic(name)


def test_a_controller_cut_off_rejoins_without_disrupting_the_leader(cluster):
    """Pre-Vote (KIP-996) between real controllers: a follower cut off times out on its leader
    again and again, asks for pre-votes nobody answers, and never raises its epoch; healed, it
    follows the same leader in the same epoch (without pre-votes it would stand in a later
    epoch at its first timeout, and its Vote would unseat the leader once healed)."""
    active = cluster.active_controller()
    epoch = cluster.quorum_status(active)["epoch"]
    cut = min(n for n in cluster.controllers if n != active)
    cluster.isolate(cut)
    try:
        for round_ in (1, 2):  # two pre-vote rounds, each begun by a fetch timeout
            wait_until(lambda: cluster.quorum_status(cut)["state"] == "Prospective",
                       f"cut-off controller {cut} asks for pre-votes (round {round_})", 30)
            wait_until(lambda: cluster.quorum_status(cut)["state"] != "Prospective",
                       f"cut-off controller {cut} ends pre-vote round {round_}", 30)
            assert cluster.quorum_status(cut)["epoch"] == epoch
        name = create_topic(cluster, 2)  # the others go on deciding without it
        committed = cluster.quorum_status(active)["high_watermark"]
    finally:
        cluster.heal(cut)
    wait_until(lambda: (s := cluster.quorum_status(cut))["state"] == "Follower"
               and s["leader_id"] == active and s["high_watermark"] >= committed,
               f"healed controller {cut} follows {active} again and has the topic", 60)
    assert cluster.quorum_status(cut)["epoch"] == epoch
    status = cluster.quorum_status(active)
    assert (status["is_leader"], status["active"], status["epoch"]) == (True, True, epoch)
    cluster.wait_for_topic(name)


def test_a_rolling_restart_of_the_controllers_loses_nothing_acknowledged(cluster):
    """Each controller in turn stopped (SIGTERM) and started again with its log, the active one
    among them, while confluent-kafka produces with acks=all: every record it was told was
    written is read back, in order; the quorum ends with three voters caught up."""
    topic = create_topic(cluster, 3)
    cluster.wait_for_isr(topic, 0, [1, 2, 3])
    cluster.wait_for_topic(topic)
    values = [b"r%03d" % i for i in range(90)]
    producing, produced = produce_in_background(cluster, topic, values, 120.0, 9.0)
    try:
        for node_id in sorted(cluster.controllers, key=lambda n: n == cluster.active_controller()):
            pid = cluster.pids[node_id]
            cluster.restart(node_id)  # stop (SIGTERM), start again with the same log
            assert cluster.pids[node_id] != pid
            # The next one goes only once this one is back in the quorum, caught up with what
            # the leader had committed: a majority stays up at every step.
            committed = cluster.quorum_status(cluster.active_controller())["high_watermark"]
            wait_until(lambda n=node_id, hw=committed: (s := cluster.quorum_status(n))[
                "leader_id"] >= 0 and s["high_watermark"] >= hw,
                f"restarted controller {node_id} knows a leader and catches up", 60)
    finally:
        producing.join(180)
    delivered, errors = produced["out"]
    assert None not in delivered, errors
    assert [r.value for r in read_confluent(cluster.bootstrap_servers, topic, 1,
                                            len(values))] == values
    quorum = describe_quorum(cluster)
    assert sorted(v["replica_id"] for v in quorum["current_voters"]) == sorted(cluster.controllers)
    # Brokers still reach the (possibly new) active controller: a topic is created.
    cluster.wait_for_topic(create_topic(cluster, 2))
