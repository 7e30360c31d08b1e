"""The metadata log (docs/broker/apis.rst, how topics are stored): records appended per change,
a torn last batch cut off, snapshots by size, and a broker killed after creating topics."""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict

import pytest
from waits import wait_until

from kafkacore import admin
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.controller.quorum_controller import STATE_LOG_NAME, QuorumController
from kafkacore.broker.log.log_manager import LogManager
from kafkacore.broker.metadata.metadata_cache import METADATA_LOG_NAME, MetadataCache
from kafkacore.broker.metadata.metadata_log import MetadataLog
from kafkacore.broker.security.authorizer.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from kafkacore.broker.security.authorizer.standard_authorizer import ACLS_FILE, StandardAuthorizer
from kafkacore.errors import Errors, KafkaStorageError
from kafkacore.metadata import Metadata
from kafkacore.network.client import NetworkClient, clock_ms
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker


def _records(n: int, start: int = 0) -> list[dict]:
    return [{"type": "TopicRecord", "name": f"t{i}", "topic_id": str(uuid.UUID(int=i + 1))}
            for i in range(start, start + n)]


def test_records_come_back_in_order_after_a_reopen(tmp_path):
    mlog = MetadataLog(tmp_path, "m")
    assert mlog.load() == (None, [])
    mlog.append(_records(3))
    mlog.append(_records(2, start=3))
    assert mlog.end_offset == 5
    mlog.close()
    again = MetadataLog(tmp_path, "m")
    assert again.load() == (None, _records(5))
    assert again.end_offset == 5


def test_a_torn_last_batch_is_cut_off_whole_and_the_log_goes_on(tmp_path):
    mlog = MetadataLog(tmp_path, "m")
    mlog.load()
    mlog.append(_records(2))
    mlog.close()
    path = tmp_path / "m.log"
    whole = path.read_bytes()
    # A crash in the middle of the second batch's write: half of its line is there.
    second = MetadataLog(tmp_path, "x")
    second.load()
    second.append(_records(3, start=2))
    second.close()
    path.write_bytes(whole + (tmp_path / "x.log").read_bytes()[:40])
    again = MetadataLog(tmp_path, "m")
    assert again.load() == (None, _records(2))
    assert path.read_bytes() == whole
    again.append(_records(1, start=2))
    again.close()
    assert MetadataLog(tmp_path, "m").load() == (None, _records(3))


def test_damage_before_the_last_batch_is_an_error_not_a_silent_loss(tmp_path):
    mlog = MetadataLog(tmp_path, "m")
    mlog.load()
    mlog.append(_records(1))
    mlog.append(_records(1, start=1))
    mlog.close()
    path = tmp_path / "m.log"
    data = bytearray(path.read_bytes())
    data[20] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(KafkaStorageError, match="damaged"):
        MetadataLog(tmp_path, "m").load()


def test_a_snapshot_empties_the_log_and_records_it_holds_are_not_replayed(tmp_path):
    mlog = MetadataLog(tmp_path, "m", max_bytes_between_snapshots=1)
    mlog.load()
    mlog.append(_records(2))
    log_before_reset = (tmp_path / "m.log").read_bytes()
    assert mlog.maybe_snapshot(lambda: {"state": "two topics"})
    assert (tmp_path / "m.log").stat().st_size == 0
    mlog.append(_records(1, start=2))
    mlog.close()
    snapshot, records = MetadataLog(tmp_path, "m").load()
    assert snapshot == {"state": "two topics", "end_offset": 2}
    assert records == _records(1, start=2)
    # A crash between the snapshot and the reset leaves records the snapshot holds: skipped.
    (tmp_path / "m.log").write_bytes(log_before_reset + (tmp_path / "m.log").read_bytes())
    assert MetadataLog(tmp_path, "m").load()[1] == _records(1, start=2)


def test_a_batch_of_topics_is_one_append_and_is_published_when_it_is_on_disk(tmp_path):
    cache = MetadataCache(tmp_path)
    with cache.batch():
        a, created_a = cache.add_topic("a", 3, {"cleanup.policy": "compact"})
        b, created_b = cache.add_topic("b", 1)
        assert created_a and created_b
        assert cache.add_topic("a", 3)[1] is False  # named twice: the second is refused
        assert cache.get("a") is None  # not published before its records are on disk
    assert (tmp_path / f"{METADATA_LOG_NAME}.log").read_bytes().count(b"\n") == 1
    assert cache.get("a").partitions == 3 and cache.get("a").topic_id == a.topic_id
    cache.grow_topic("b", 4)
    cache.remove_topic("a")
    cache.add_topic("a", 2)  # again, with a new id
    restarted = MetadataCache(tmp_path)
    assert [(t.name, t.partitions, t.configs) for t in restarted.topics()] == [
        ("a", 2, {}), ("b", 4, {})]
    assert restarted.get("a").topic_id not in (a.topic_id, None)
    assert restarted.name_of(b.topic_id) == "b" and restarted.name_of(a.topic_id) is None


def test_a_metadata_file_of_the_earlier_format_is_read_as_the_snapshot(tmp_path):
    topic_id = uuid.uuid4()
    (tmp_path / f"{METADATA_LOG_NAME}.json").write_text(json.dumps(
        {"topics": [{"name": "old", "id": str(topic_id), "partitions": 2, "configs": {}}]}))
    cache = MetadataCache(tmp_path)
    cache.add_topic("new", 1)
    restarted = MetadataCache(tmp_path)
    assert [(t.name, t.partitions) for t in restarted.topics()] == [("new", 1), ("old", 2)]
    assert restarted.get("old").topic_id == topic_id


def test_new_logs_go_to_the_log_dir_holding_the_fewest(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs)
    manager.startup()
    for i in range(4):
        manager.get_or_create_log(f"t{i}", 0)
    assert sorted(lg.dir.parent.name for lg in manager.all_logs().values()) == ["a", "a", "b", "b"]
    gone = manager.get_log("t0", 0).dir.parent
    manager.delete_log("t0", 0)
    assert manager.get_or_create_log("t9", 0).dir.parent == gone
    manager.shutdown()
    reopened = LogManager(dirs)
    reopened.startup()
    assert reopened.get_or_create_log("t10", 0).dir.parent.name in ("a", "b")
    assert len(reopened.all_logs()) == 5
    reopened.shutdown()


def test_a_log_left_by_an_earlier_topic_of_the_same_name_is_replaced(tmp_path):
    manager = LogManager([tmp_path])
    manager.startup()
    old_id, new_id = uuid.uuid4(), uuid.uuid4()
    assert manager.get_or_create_log("t", 0, topic_id=old_id).topic_id == old_id
    fresh = manager.get_or_create_log("t", 0, topic_id=new_id)
    assert fresh.topic_id == new_id
    assert manager.get_or_create_log("t", 0).topic_id == new_id
    manager.shutdown()


def _topics(bootstrap: str) -> dict[str, tuple[uuid.UUID, int]]:
    """Every topic the broker knows: name -> (topic id, partitions), from one Metadata."""
    with NetworkClient(bootstrap, Metadata(allow_auto_topic_creation=False)) as client:
        admin.refresh_metadata(client, clock_ms() + 10_000)
        response = client.send_and_receive(client.metadata.fetch().nodes[0].node_id,
                                           ApiKey.METADATA, {
            "topics": None, "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}, 10_000)
    assert response.error is None and response.body is not None
    return {t["name"]: (t["topic_id"], len(t["partitions"])) for t in response.body["topics"]}


def test_topics_created_in_one_request_survive_kill_9(tmp_path):
    names = {f"kill-{i:03d}": 1 + i % 3 for i in range(300)}
    broker = LocalBroker(kind="kafkacore", log_dirs=tmp_path)
    with broker:
        assert set(admin.create_topics(broker.bootstrap, names).values()) == {Errors.NONE}
        before = _topics(broker.bootstrap)
        assert {n: p for n, (_, p) in before.items() if n in names} == names
        broker.kill()
        broker.start()
        assert _topics(broker.bootstrap) == before


# -- the controller ------------------------------------------------------------------------------


def _controller(tmp_path) -> QuorumController:
    controller = QuorumController(BrokerConfig({"log.dirs": str(tmp_path), "node.id": 0}))
    for b in (1, 2, 3):
        controller.register_broker(b, "127.0.0.1", 9000 + b, f"incarnation-{b}")
    return controller


def _state(controller: QuorumController) -> dict:
    return {name: (t.topic_id, t.configs, [asdict(p) for p in t.partitions])
            for name, t in controller.replication.topics.items()}


def test_the_controller_appends_one_batch_per_request_and_replays_it_at_a_restart(tmp_path):
    controller = _controller(tmp_path)
    lines = (tmp_path / f"{STATE_LOG_NAME}.log").read_bytes().count(b"\n")
    with controller.batch():
        for i in range(50):
            assert controller.create_topic(f"t{i}", 2, 3, {"retention.ms": "1000"})[0] == 0
    assert (tmp_path / f"{STATE_LOG_NAME}.log").read_bytes().count(b"\n") == lines + 1
    info = controller.replication.topics["t7"]
    leader = info.partitions[1].leader
    assert controller.alter_partition(leader, uuid.UUID(info.topic_id), 1,
                                      info.partitions[1].leader_epoch, [leader],
                                      info.partitions[1].partition_epoch)[0] == 0
    assert controller.create_partitions("t8", 4, None, False) == (0, None)
    assert controller.delete_topic("t9") == 0
    before = _state(controller)
    restarted = QuorumController(BrokerConfig({"log.dirs": str(tmp_path), "node.id": 0}))
    assert _state(restarted) == before
    assert restarted.register_broker(1, "127.0.0.1", 9001, "again") > 3  # epochs go on


def test_brokers_fetch_the_records_from_their_offset(tmp_path):
    controller = _controller(tmp_path)
    error, records, start, end = controller.fetch_records(0, 1000)
    assert error == 0 and start == 0 and len(records) == end
    assert [r["type"] for r in records] == ["RegisterBrokerRecord"] * 3
    controller.create_topic("t", 1, 2, {})
    error, new, _, end2 = controller.fetch_records(end, 1000)
    assert [r["type"] for r in new] == ["TopicRecord", "PartitionRecord"] and end2 == end + 2
    assert controller.fetch_records(end2, 1000)[1] == []  # caught up: nothing, however many
    assert controller.fetch_records(end2 + 1, 1000)[0] == Errors.OFFSET_OUT_OF_RANGE
    # After a snapshot the records before it are gone: a broker behind takes the whole image.
    controller.metadata_log.max_bytes_between_snapshots = 1
    controller.create_topic("u", 1, 1, {})
    assert controller.records_start == controller.metadata_log.end_offset
    assert controller.fetch_records(end2, 1000)[0] == Errors.OFFSET_OUT_OF_RANGE
    restarted = QuorumController(BrokerConfig({"log.dirs": str(tmp_path), "node.id": 0}))
    assert _state(restarted) == _state(controller)
    # At a restart every broker is fenced until it registers again, and brokers learn it.
    error, fenced, _, _ = restarted.fetch_records(restarted.records_start, 1000)
    assert [(r["type"], r["broker_id"]) for r in fenced] == [
        ("FenceBrokerRecord", b) for b in (1, 2, 3)]


def test_the_controllers_acls_are_records_of_its_log_and_its_snapshot(tmp_path):
    """CreateAcls and DeleteAcls on the lone controller: AccessControlEntryRecord and
    RemoveAccessControlEntryRecord in its log (what brokers fetch), replayed at a restart, kept
    in its snapshot, and fed to the controller's own authorizer."""
    controller = _controller(tmp_path)
    deny, allow = (AclBinding(ResourcePattern(ResourceType.TOPIC, "t"),
                              AccessControlEntry("User:mallory", "*", AclOperation.READ, kind))
                   for kind in (AclPermissionType.DENY, AclPermissionType.ALLOW))
    bad = AclBinding(ResourcePattern(ResourceType.ANY, "t"), deny.entry)
    end = controller.fetch_records(0, 1000)[3]
    results = controller.create_acls([deny, allow, deny, bad])
    assert results[:3] == [None, None, None] and results[3] is not None  # bad: refused
    _, records, _, end2 = controller.fetch_records(end, 1000)
    assert [r["type"] for r in records] == ["AccessControlEntryRecord"] * 2
    assert controller.create_acls([allow]) == [None]  # already there: no record
    assert controller.fetch_records(end2, 1000)[1] == []
    restarted = QuorumController(BrokerConfig({"log.dirs": str(tmp_path), "node.id": 0}))
    assert restarted.acls(AclBindingFilter()) == [deny, allow]
    # Removed, then a snapshot replaces the log: the ACL left is in it.
    restarted.metadata_log.max_bytes_between_snapshots = 1
    assert restarted.delete_acls([AclBindingFilter(permission_type=AclPermissionType.DENY)]) \
        == [[deny]]
    assert restarted.records_start == restarted.metadata_log.end_offset  # snapshot taken
    authorizer = StandardAuthorizer()
    again = QuorumController(BrokerConfig({"log.dirs": str(tmp_path), "node.id": 0}),
                             authorizer=authorizer)
    assert again.acls(AclBindingFilter()) == [allow]
    assert authorizer.authorize("User:mallory", "10.0.0.1", AclOperation.READ,
                                ResourceType.TOPIC, "t")
    again.delete_acls([AclBindingFilter()])
    assert not authorizer.authorize("User:mallory", "10.0.0.1", AclOperation.READ,
                                    ResourceType.TOPIC, "t")


def test_a_broker_behind_the_snapshot_takes_the_acls_whole_then_follows_their_records(tmp_path):
    """A broker that starts after the controller's snapshot replaced its log takes the ACLs with
    the image (one DescribeAcls, no ids), then applies the RemoveAccessControlEntryRecord of one
    of them by its id: the id is the binding's."""
    from kafkacore.broker.controller.controller_server import ControllerServer
    from kafkacore.broker.server.broker_server import Broker

    deny, allow = (AclBinding(ResourcePattern(ResourceType.TOPIC, "t"),
                              AccessControlEntry("User:mallory", "*", AclOperation.READ, kind))
                   for kind in (AclPermissionType.DENY, AclPermissionType.ALLOW))
    controller = ControllerServer({"node.id": 0, "process.roles": "controller",
                                   "log.dirs": str(tmp_path / "c")}).start()
    try:
        quorum = controller.controller
        quorum.metadata_log.max_bytes_between_snapshots = 1
        assert quorum.create_acls([deny, allow]) == [None, None]
        assert quorum.records_start == quorum.metadata_log.end_offset > 0  # a snapshot only
        quorum.metadata_log.max_bytes_between_snapshots = 1 << 30
        with Broker({"node.id": 1, "process.roles": "broker", "log.dirs": str(tmp_path / "b"),
                     "controller.quorum.bootstrap.servers": controller.bootstrap_servers,
                     "authorizer.class.name":
                         "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                     "broker.heartbeat.interval.ms": "100"}) as broker:
            authorizer = broker.authorizer
            assert authorizer.acls(AclBindingFilter()) == [deny, allow]
            assert not authorizer.authorize("User:mallory", "h", AclOperation.READ,
                                            ResourceType.TOPIC, "t")
            assert quorum.delete_acls([AclBindingFilter(
                permission_type=AclPermissionType.DENY)]) == [[deny]]
            assert quorum.records_start < quorum.metadata_log.end_offset  # a record to fetch
            wait_until(lambda: authorizer.acls(AclBindingFilter()) == [allow],
                       "the broker replays the removal")
            assert authorizer.authorize("User:mallory", "h", AclOperation.READ,
                                        ResourceType.TOPIC, "t")
            assert not (tmp_path / "b" / ACLS_FILE).exists()  # a cluster's broker: no file
    finally:
        controller.stop()
