"""The controller's snapshots of the quorum's log (KIP-630, docs/broker/quorum.rst): the
``QuorumController`` writes its image at a committed offset every
``metadata.log.max.record.bytes.between.snapshots``, the log deletes the entries before its
oldest snapshot, and a restarted controller loads its latest snapshot and replays only the
entries after it.

First a quorum of one voter, in this process, on real files and threads; then three controller
processes (``Cluster(controllers=3)``), where one stopped while the others moved their log start
past its end catches up by FetchSnapshot, and ends with the leader's image."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from waits import wait_until

from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.controller.kafka_raft_manager import KafkaRaftManager
from kafkacore.broker.controller.quorum_controller import QuorumController
from kafkacore.broker.security.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafkacore.errors import Errors
from kafkacore.raft import RaftConfig
from kafkacore.testing.cluster import Cluster

#: a few topics' records: snapshots come every few changes
SNAPSHOT_BYTES = 3000


def _start(tmp_path) -> tuple[KafkaRaftManager, QuorumController]:
    config = BrokerConfig({"log.dirs": str(tmp_path), "node.id": 1,
                           "metadata.log.max.record.bytes.between.snapshots": SNAPSHOT_BYTES})
    # Never dialled: a quorum of one has nobody to send to.
    raft = KafkaRaftManager(1, {1: ("127.0.0.1", 9)}, tmp_path, cluster_id="snapshots",
                            config=RaftConfig(election_timeout_ms=20))
    controller = QuorumController(config, raft)
    raft.start()
    controller.start()
    wait_until(lambda: controller.active_epoch >= 0, "the controller is active")
    return raft, controller


def _stop(raft: KafkaRaftManager, controller: QuorumController) -> None:
    controller.shutdown()
    raft.shutdown()


def _image(controller: QuorumController) -> dict:
    with controller.lock:
        return {"topics": {n: (t.topic_id, t.configs, [asdict(p) for p in t.partitions])
                           for n, t in controller.replication.topics.items()},
                "brokers": {b: asdict(r) for b, r in controller.brokers.items()},
                "next_producer_id": controller.producer_ids.next_producer_id,
                "records": controller.snapshot_records()}


@pytest.mark.pure_python  # one process, no socket
def test_snapshots_bound_the_log_and_a_restart_loads_the_latest(tmp_path):
    raft, controller = _start(tmp_path)
    try:
        for b in (1, 2, 3):
            controller.register_broker(b, "127.0.0.1", 9000 + b, f"incarnation-{b}")
        for i in range(30):
            assert controller.create_topic(f"t{i}", 2, 3, {"retention.ms": "1000"})[0] == 0
        assert controller.delete_topic("t3") == Errors.NONE
        assert controller.allocate_producer_ids(1, controller.brokers[1].epoch)[0] == Errors.NONE
        acl = AclBinding(ResourcePattern(ResourceType.TOPIC, "t", PatternType.PREFIXED),
                         AccessControlEntry("User:alice", "*", AclOperation.READ,
                                            AclPermissionType.ALLOW))
        assert controller.create_acls([acl]) == [None]
        for i in range(30, 40):  # more changes after those: the ACL is in a snapshot
            assert controller.create_topic(f"t{i}", 1, 3, {})[0] == 0
        stats = raft.statistics()
        assert controller.snapshots_written >= 2
        # The entries before the older of the two snapshots kept are gone from the log.
        assert 0 < stats["log_start_offset"] <= stats["latest_snapshot_offset"]
        assert raft.log.snapshot_ids()[0].offset == stats["log_start_offset"]
        assert raft.log.log_start_offset <= raft.status().high_watermark
        # A broker fetching from before the log start takes the whole image instead.
        error, records, start, _ = controller.fetch_records(0, 100)
        assert (error, records, start) == (Errors.OFFSET_OUT_OF_RANGE, [],
                                           stats["log_start_offset"])
        before = _image(controller)
        end = raft.log.end_offset()
    finally:
        _stop(raft, controller)

    raft, restarted = _start(tmp_path)
    try:
        latest = raft.log.latest_snapshot_id()
        assert latest is not None
        assert restarted.snapshots_loaded == 1
        # Only the entries after the snapshot are replayed (and this epoch's LeaderChange).
        assert restarted.entries_replayed <= end - latest.offset + 1
        assert _image(restarted) == before
        assert any(r["type"] == "AccessControlEntryRecord" for r in before["records"])
        # It goes on from there: ids, epochs and topics follow the old ones.
        assert restarted.create_topic("after", 1, 3, {})[0] == Errors.NONE
        assert restarted.register_broker(4, "127.0.0.1", 9004, "incarnation-4") > max(
            r["epoch"] for r in before["brokers"].values())
    finally:
        _stop(raft, restarted)


def _cluster_image(cluster: Cluster, controller: int) -> tuple[int, list[str]]:
    image = cluster.metadata_image(controller)
    return image["applied"], sorted(json.dumps(r, sort_keys=True) for r in image["records"])


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_a_controller_behind_the_log_start_catches_up_by_fetch_snapshot(tmp_path):
    with Cluster(brokers=1, controllers=3, log_dir=tmp_path, config={
            "metadata.log.max.record.bytes.between.snapshots": SNAPSHOT_BYTES}) as cluster:
        active = cluster.active_controller()
        behind = min(c for c in cluster.controllers if c != active)
        cluster.stop(behind)
        # It has at most what the leader had when it stopped.
        its_end = cluster.quorum_status(active)["end_offset"]
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                                 request_timeout_ms=30000)
        try:
            rounds = 0
            # Topics (kafka-python's CreateTopics, forwarded to the active controller) until
            # the leader's log starts after the stopped controller's end.
            while cluster.quorum_status(active := cluster.active_controller())[
                    "log_start_offset"] <= its_end:
                assert rounds < 20, "the leader never deleted the entries before its snapshots"
                admin.create_topics([NewTopic(f"s{rounds}-{i}", 1, 1) for i in range(5)])
                rounds += 1
        finally:
            admin.close()
        committed = cluster.quorum_status(active)["high_watermark"]

        cluster.restart(behind)
        # Its voter installs the leader's snapshot, and its controller loads it (the replayer
        # runs after the voter).
        status = wait_until(lambda: (s := cluster.quorum_status(behind))["snapshots_installed"]
                            >= 1 and s["snapshots_loaded"] >= 1
                            and s["high_watermark"] >= committed and s,
                            f"controller {behind} installs the leader's snapshot, loads it and "
                            "catches up", 60)
        assert status["log_start_offset"] > its_end
        # Its image is the leader's, at the same offset (nothing changes now).
        leader_image, its_image = wait_until(
            lambda: (a := _cluster_image(cluster, cluster.active_controller()))[0] == (
                b := _cluster_image(cluster, behind))[0] and (a, b),
            f"controller {behind} has applied as far as the leader", 30)
        assert its_image == leader_image
        assert any('"TopicRecord"' in r and f'"s{rounds - 1}-4"' in r for r in its_image[1])
