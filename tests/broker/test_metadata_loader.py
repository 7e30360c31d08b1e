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
        loader._apply_records([  # noqa: SLF001 - one pull's records
            {"type": "TopicRecord", "name": "grown", "topic_id": str(grown)},
            _partition(grown, 0, me)])
        assert broker.metadata_cache.get("grown").partitions == 1
        assert ("grown", 0) in broker.replica_manager.partitions
        # CreatePartitions, then DeleteTopics, both in the next pull: the topic goes.
        loader._apply_records([  # noqa: SLF001
            _partition(grown, 1, me), {"type": "RemoveTopicRecord", "topic_id": str(grown)}])
        assert broker.metadata_cache.get("grown") is None
        assert not any(t == "grown" for t, _ in broker.replica_manager.partitions)
        # And the pull after it is applied to the replica manager as any other.
        loader._apply_records([  # noqa: SLF001
            {"type": "TopicRecord", "name": "other", "topic_id": str(other)},
            _partition(other, 0, me), _partition(other, 1, me)])
        assert broker.metadata_cache.get("other").partitions == 2
        assert broker.replica_manager.partitions[("other", 1)].is_leader
