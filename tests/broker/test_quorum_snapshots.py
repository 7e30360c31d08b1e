"""The controller's snapshots of the quorum's log (KIP-630, docs/broker/quorum.rst): the
``QuorumController`` writes its image at a committed offset every
``metadata.log.max.record.bytes.between.snapshots``, the log deletes the entries before its
oldest snapshot, and a restarted controller loads its latest snapshot and replays only the
entries after it.

A quorum of one voter, in this process, on real files and threads (the quorum's network part is
the cluster test's, ``test_controller_quorum.py``)."""

from __future__ import annotations

from dataclasses import asdict

import pytest
from waits import wait_until

from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.controller.kafka_raft_manager import KafkaRaftManager
from kafkacore.broker.controller.quorum_controller import QuorumController
from kafkacore.errors import Errors
from kafkacore.raft import RaftConfig

pytestmark = pytest.mark.pure_python  # one process, no socket

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


def test_snapshots_bound_the_log_and_a_restart_loads_the_latest(tmp_path):
    raft, controller = _start(tmp_path)
    try:
        for b in (1, 2, 3):
            controller.register_broker(b, "127.0.0.1", 9000 + b, f"incarnation-{b}")
        for i in range(30):
            assert controller.create_topic(f"t{i}", 2, 3, {"retention.ms": "1000"})[0] == 0
        assert controller.delete_topic("t3") == Errors.NONE
        assert controller.allocate_producer_ids(1, controller.brokers[1].epoch)[0] == Errors.NONE
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
        # It goes on from there: ids, epochs and topics follow the old ones.
        assert restarted.create_topic("after", 1, 3, {})[0] == Errors.NONE
        assert restarted.register_broker(4, "127.0.0.1", 9004, "incarnation-4") > max(
            r["epoch"] for r in before["brokers"].values())
    finally:
        _stop(raft, restarted)
