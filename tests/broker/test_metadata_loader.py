"""The broker's MetadataLoader replaying the controller's records into a real (standalone)
broker: what one pull's records change is applied, whatever order they come in."""

import uuid

from kafkacore.broker import Broker


def _partition(topic_id: uuid.UUID, index: int, broker_id: int) -> dict:
    return {"type": "PartitionRecord", "topic_id": str(topic_id), "partition_id": index,
            "leader": broker_id, "leader_epoch": 0, "replicas": [broker_id], "isr": [broker_id],
            "partition_epoch": 0}


def test_a_topic_grown_and_deleted_in_one_pull_is_gone_and_the_next_pull_applies(tmp_path):
    with Broker({"log.dirs": str(tmp_path)}) as broker:
        me = broker.broker_id
        loader = broker.new_metadata_loader(None)  # records handed in directly: no pulls
        grown, other = uuid.uuid4(), uuid.uuid4()
        loader.handle_commit([  # one pull's records
            {"type": "TopicRecord", "name": "grown", "topic_id": str(grown)},
            _partition(grown, 0, me)])
        assert broker.metadata_cache.get("grown").partitions == 1
        assert ("grown", 0) in broker.replica_manager.partitions
        # CreatePartitions, then DeleteTopics, both in the next pull: the topic goes.
        loader.handle_commit([
            _partition(grown, 1, me), {"type": "RemoveTopicRecord", "topic_id": str(grown)}])
        assert broker.metadata_cache.get("grown") is None
        assert not any(t == "grown" for t, _ in broker.replica_manager.partitions)
        # And the pull after it is applied to the replica manager as any other.
        loader.handle_commit([
            {"type": "TopicRecord", "name": "other", "topic_id": str(other)},
            _partition(other, 0, me), _partition(other, 1, me)])
        assert broker.metadata_cache.get("other").partitions == 2
        assert broker.replica_manager.partitions[("other", 1)].is_leader


def _topics(loader, me, count, per_topic, first=0):
    """``count`` topics of ``per_topic`` partitions led by ``me`` (replicas me, 2, 3), each
    topic's records as one pull brings them; {name: topic id}."""
    made = {}
    for k in range(first, first + count):
        topic_id = uuid.uuid4()
        made[f"t-{k}"] = topic_id
        loader.handle_commit([{"type": "TopicRecord", "name": f"t-{k}", "topic_id": str(topic_id)},
                              *({**_partition(topic_id, i, me), "replicas": [me, 2, 3]}
                                for i in range(per_topic))])
    return made


def _change(topic_id, index, leader, isr, epoch, partition_epoch):
    return {"type": "PartitionChangeRecord", "topic_id": str(topic_id), "partition_id": index,
            "leader": leader, "leader_epoch": epoch, "replicas": [1, 2, 3], "isr": isr,
            "partition_epoch": partition_epoch}


def test_one_partition_change_among_many_looks_at_that_partition_only(tmp_path):
    """Kafka's brokers apply a ``TopicsDelta``: one PartitionChangeRecord makes the replica
    manager look at that partition, not at every partition of the image, however many there
    are (``ReplicaManager.last_apply_examined``); a broker's registration or fencing looks at
    none; a coordinator's leadership listener hears only of a delta of its own topic."""
    with Broker({"log.dirs": str(tmp_path), "node.id": 1}) as broker:
        rm = broker.replica_manager
        loader = broker.new_metadata_loader(None)
        loader.handle_commit([{"type": "RegisterBrokerRecord", "broker_id": b, "broker_epoch": b,
                               "host": "127.0.0.1", "port": 9000 + b} for b in (1, 2, 3)])
        assert rm.last_apply_examined == 0
        heard = []
        rm.add_leadership_listener("t-0", heard.append)
        ids = _topics(loader, 1, 10, 4)
        assert len(rm.partitions) == 40
        heard.clear()
        loader.handle_commit([_change(ids["t-7"], 3, 1, [1, 2], 0, 1)])
        assert rm.last_apply_examined == 1
        # (a leader keeps its own ISR within its epoch; the partition epoch is the image's)
        changed = rm.partitions[("t-7", 3)]
        assert changed.partition_epoch == 1 and changed.is_leader
        assert heard == []  # not t-0's
        ids.update(_topics(loader, 1, 30, 4, first=10))
        assert len(rm.partitions) == 160
        # Four times the partitions: the same one looked at; this broker follows it now.
        loader.handle_commit([_change(ids["t-37"], 0, 2, [1, 2, 3], 1, 1)])
        assert rm.last_apply_examined == 1
        assert not rm.partitions[("t-37", 0)].is_leader
        assert rm.partitions[("t-37", 0)].leader_id == 2
        # Fenced, then registered again: no partition looked at, the brokers known anew.
        loader.handle_commit([{"type": "FenceBrokerRecord", "broker_id": 3, "broker_epoch": 3}])
        assert rm.last_apply_examined == 0 and 3 not in rm.brokers
        loader.handle_commit([{"type": "RegisterBrokerRecord", "broker_id": 3,
                               "broker_epoch": 4, "host": "127.0.0.1", "port": 9103}])
        assert rm.last_apply_examined == 0 and rm.brokers[3] == ("127.0.0.1", 9103)
        # t-0's listener hears of t-0's change: this broker no longer leads partition 2.
        heard.clear()
        loader.handle_commit([_change(ids["t-0"], 2, 3, [1, 2, 3], 1, 1)])
        assert heard == [{0: 0, 1: 0, 3: 0}]
        # The whole image (as after falling behind a snapshot) looks at every partition.
        rm.apply_image(rm.brokers, loader._topics)  # noqa: SLF001 - the loader's image
        assert rm.last_apply_examined >= 160
