"""The records a consumer group (KIP-848) leaves in ``__consumer_offsets`` (Kafka's
``GroupCoordinatorRecordHelpers`` and the schemas of its group-coordinator module).

Each key is an ``int16`` record type, then the key's fields in the old (non-flexible) encoding;
each value an ``int16`` version (0), then its fields in the flexible encoding, tagged fields
last.  A null value (tombstone) deletes what the key names.  Replaying a partition's records in
order rebuilds every group: :func:`replay`.

=====  ==========================================  ===========================================
type   key (group id, ...)                         value
=====  ==========================================  ===========================================
3      ConsumerGroupMetadata                       the group epoch
4      ConsumerGroupPartitionMetadata              subscribed topics: id, name, partitions
5      ConsumerGroupMemberMetadata (+ member id)   the member's subscription and client
6      ConsumerGroupTargetAssignmentMetadata       the assignment epoch
7      ConsumerGroupTargetAssignmentMember (+ id)  the member's target partitions
8      ConsumerGroupCurrentMemberAssignment (+ id) the member's epochs, state, partitions
=====  ==========================================  ===========================================
"""

from __future__ import annotations

from typing import Any

from kafkacore.broker.group.consumer_group import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    Partitions,
)
from kafkacore.protocol import codec

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
RECORD_TYPES = range(GROUP_METADATA, CURRENT_MEMBER_ASSIGNMENT + 1)

_TOPIC_PARTITIONS = [{"name": "TopicId", "type": "uuid", "versions": "0+"},
                     {"name": "Partitions", "type": "[]int32", "versions": "0+"}]


def _data(name: str, fields: list[dict[str, Any]], flexible: str = "0+") -> codec.Message:
    return codec.compile_message({"type": "data", "name": name, "validVersions": "0-32767",
                                  "flexibleVersions": flexible, "fields": fields})


_GROUP_KEY = _data("ConsumerGroupKey", [{"name": "GroupId", "type": "string",
                                         "versions": "0+"}], "none")
_MEMBER_KEY = _data("ConsumerGroupMemberKey", [
    {"name": "GroupId", "type": "string", "versions": "0+"},
    {"name": "MemberId", "type": "string", "versions": "0+"}], "none")
_VALUES = {
    GROUP_METADATA: _data("ConsumerGroupMetadataValue", [
        {"name": "Epoch", "type": "int32", "versions": "0+"}]),
    PARTITION_METADATA: _data("ConsumerGroupPartitionMetadataValue", [
        {"name": "Topics", "type": "[]TopicMetadata", "versions": "0+", "fields": [
            {"name": "TopicId", "type": "uuid", "versions": "0+"},
            {"name": "TopicName", "type": "string", "versions": "0+"},
            {"name": "NumPartitions", "type": "int32", "versions": "0+"},
            {"name": "PartitionMetadata", "type": "[]PartitionMetadata", "versions": "0+",
             "fields": [{"name": "Partition", "type": "int32", "versions": "0+"},
                        {"name": "Racks", "type": "[]string", "versions": "0+"}]}]}]),
    MEMBER_METADATA: _data("ConsumerGroupMemberMetadataValue", [
        {"name": "InstanceId", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        {"name": "RackId", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        {"name": "ClientId", "type": "string", "versions": "0+"},
        {"name": "ClientHost", "type": "string", "versions": "0+"},
        {"name": "SubscribedTopicNames", "type": "[]string", "versions": "0+"},
        {"name": "SubscribedTopicRegex", "type": "string", "versions": "0+",
         "nullableVersions": "0+"},
        {"name": "RebalanceTimeoutMs", "type": "int32", "versions": "0+", "default": -1},
        {"name": "ServerAssignor", "type": "string", "versions": "0+",
         "nullableVersions": "0+"},
        # Only a member of the classic protocol has it (a tagged field: absent otherwise).
        {"name": "ClassicMemberMetadata", "type": "ClassicMemberMetadata", "versions": "0+",
         "nullableVersions": "0+", "default": None, "taggedVersions": "0+", "tag": 0,
         "fields": [
             {"name": "SessionTimeoutMs", "type": "int32", "versions": "0+"},
             {"name": "SupportedProtocols", "type": "[]ClassicProtocol", "versions": "0+",
              "fields": [{"name": "Name", "type": "string", "versions": "0+"},
                         {"name": "Metadata", "type": "bytes", "versions": "0+"}]}]}]),
    TARGET_ASSIGNMENT_METADATA: _data("ConsumerGroupTargetAssignmentMetadataValue", [
        {"name": "AssignmentEpoch", "type": "int32", "versions": "0+"}]),
    TARGET_ASSIGNMENT_MEMBER: _data("ConsumerGroupTargetAssignmentMemberValue", [
        {"name": "TopicPartitions", "type": "[]TopicPartition", "versions": "0+",
         "fields": _TOPIC_PARTITIONS}]),
    CURRENT_MEMBER_ASSIGNMENT: _data("ConsumerGroupCurrentMemberAssignmentValue", [
        {"name": "MemberEpoch", "type": "int32", "versions": "0+"},
        {"name": "PreviousMemberEpoch", "type": "int32", "versions": "0+"},
        {"name": "State", "type": "int8", "versions": "0+"},
        {"name": "AssignedPartitions", "type": "[]TopicPartitions", "versions": "0+",
         "fields": _TOPIC_PARTITIONS},
        {"name": "PartitionsPendingRevocation", "type": "[]TopicPartitions", "versions": "0+",
         "fields": _TOPIC_PARTITIONS}]),
}

Record = tuple[bytes, bytes | None]


def _key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    if member_id is None:
        body = codec.encode_bytes(_GROUP_KEY, record_type, {"group_id": group_id})
    else:
        body = codec.encode_bytes(_MEMBER_KEY, record_type,
                                  {"group_id": group_id, "member_id": member_id})
    return record_type.to_bytes(2, "big") + body


def _value(record_type: int, body: dict[str, Any]) -> bytes:
    return b"\x00\x00" + codec.encode_bytes(_VALUES[record_type], 0, body)


def _topic_partitions(partitions: Partitions) -> list[dict[str, Any]]:
    return [{"topic_id": t, "partitions": sorted(ps)}
            for t, ps in sorted(partitions.items(), key=lambda kv: str(kv[0]))]


def _partitions(items: list[dict[str, Any]]) -> Partitions:
    return {i["topic_id"]: frozenset(i["partitions"]) for i in items if i["partitions"]}


def group_epoch_record(group: ConsumerGroup) -> Record:
    return (_key(GROUP_METADATA, group.group_id),
            _value(GROUP_METADATA, {"epoch": group.group_epoch}))


def partition_metadata_record(group: ConsumerGroup) -> Record:
    topics = [{"topic_id": tid, "topic_name": name, "num_partitions": n,
               "partition_metadata": []}
              for name, (tid, n) in sorted(group.subscription_metadata.items())]
    return (_key(PARTITION_METADATA, group.group_id),
            _value(PARTITION_METADATA, {"topics": topics}))


def member_subscription_record(group_id: str, m: ConsumerGroupMember) -> Record:
    return (_key(MEMBER_METADATA, group_id, m.member_id), _value(MEMBER_METADATA, {
        "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
        "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed_topic_names),
        "subscribed_topic_regex": m.subscribed_topic_regex,
        "rebalance_timeout_ms": m.rebalance_timeout_ms, "server_assignor": m.server_assignor,
        "classic_member_metadata": None if m.classic is None else {
            "session_timeout_ms": m.classic.session_timeout_ms,
            "supported_protocols": [{"name": n, "metadata": md}
                                    for n, md in m.classic.supported_protocols]}}))


def target_epoch_record(group: ConsumerGroup) -> Record:
    return (_key(TARGET_ASSIGNMENT_METADATA, group.group_id),
            _value(TARGET_ASSIGNMENT_METADATA, {"assignment_epoch": group.assignment_epoch}))


def target_member_record(group_id: str, member_id: str, target: Partitions) -> Record:
    return (_key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
            _value(TARGET_ASSIGNMENT_MEMBER, {"topic_partitions": _topic_partitions(target)}))


def current_assignment_record(group_id: str, m: ConsumerGroupMember) -> Record:
    return (_key(CURRENT_MEMBER_ASSIGNMENT, group_id, m.member_id),
            _value(CURRENT_MEMBER_ASSIGNMENT, {
                "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
                "state": int(m.state), "assigned_partitions": _topic_partitions(m.assigned),
                "partitions_pending_revocation": _topic_partitions(m.pending_revocation)}))


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """A member leaves: its current assignment, target and subscription are deleted (in this
    order, Kafka's, so a replay never sees an assignment without its member)."""
    return [(_key(CURRENT_MEMBER_ASSIGNMENT, group_id, member_id), None),
            (_key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), None),
            (_key(MEMBER_METADATA, group_id, member_id), None)]


def group_tombstones(group_id: str) -> list[Record]:
    """An empty group is deleted: its target, subscription metadata and epoch go (the epoch
    last: replaying its tombstone forgets the group)."""
    return [(_key(TARGET_ASSIGNMENT_METADATA, group_id), None),
            (_key(PARTITION_METADATA, group_id), None),
            (_key(GROUP_METADATA, group_id), None)]


def record_type(key: bytes) -> int:
    return int.from_bytes(key[:2], "big") if len(key) >= 2 else -1


def group_of(key: bytes) -> str:
    """The group id of a consumer group record's key."""
    rt = record_type(key)
    message = _MEMBER_KEY if rt in (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER,
                                    CURRENT_MEMBER_ASSIGNMENT) else _GROUP_KEY
    return str(codec.decode(message, rt, key[2:])[0]["group_id"])


def replay(groups: dict[str, ConsumerGroup], key: bytes, value: bytes | None) -> None:
    """Apply one record to ``groups`` (Kafka's ``GroupMetadataManager.replay``)."""
    rt = record_type(key)
    member_record = rt in (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT)
    k = codec.decode(_MEMBER_KEY if member_record else _GROUP_KEY, rt, key[2:])[0]
    group_id = k["group_id"]
    if value is None:
        group = groups.get(group_id)
        if group is None:
            return
        if rt == GROUP_METADATA:
            del groups[group_id]
        elif rt == MEMBER_METADATA:
            group.remove_member(k["member_id"])
        elif rt == TARGET_ASSIGNMENT_MEMBER:
            group.target.pop(k["member_id"], None)
        elif rt == CURRENT_MEMBER_ASSIGNMENT and k["member_id"] in group.members:
            m = group.members[k["member_id"]]
            group.update_member(m, ConsumerGroupMember(**{
                **m.__dict__, "assigned": {}, "pending_revocation": {}}))
        return
    v = codec.decode(_VALUES[rt], int.from_bytes(value[:2], "big"), value[2:])[0]
    group = groups.setdefault(group_id, ConsumerGroup(group_id))
    if rt == GROUP_METADATA:
        group.group_epoch = v["epoch"]
    elif rt == PARTITION_METADATA:
        group.subscription_metadata = {t["topic_name"]: (t["topic_id"], t["num_partitions"])
                                       for t in v["topics"]}
    elif rt == TARGET_ASSIGNMENT_METADATA:
        group.assignment_epoch = v["assignment_epoch"]
    elif rt == TARGET_ASSIGNMENT_MEMBER:
        group.target[k["member_id"]] = _partitions(v["topic_partitions"])
    else:
        old = group.members.get(k["member_id"])
        m = ConsumerGroupMember(**(old.__dict__ if old else {"member_id": k["member_id"]}))
        if rt == MEMBER_METADATA:
            m.instance_id, m.rack_id = v["instance_id"], v["rack_id"]
            m.client_id, m.client_host = v["client_id"], v["client_host"]
            m.subscribed_topic_names = tuple(v["subscribed_topic_names"])
            m.subscribed_topic_regex = v["subscribed_topic_regex"]
            m.rebalance_timeout_ms = v["rebalance_timeout_ms"]
            m.server_assignor = v["server_assignor"]
            classic = v.get("classic_member_metadata")
            m.classic = None if classic is None else ClassicMemberMetadata(
                classic["session_timeout_ms"], tuple(
                    (p["name"], bytes(p["metadata"])) for p in classic["supported_protocols"]))
        elif rt == CURRENT_MEMBER_ASSIGNMENT:
            m.member_epoch, m.previous_member_epoch = (v["member_epoch"],
                                                       v["previous_member_epoch"])
            m.state = MemberState(v["state"]) if v["state"] in MemberState._value2member_map_ \
                else MemberState.UNKNOWN
            m.assigned = _partitions(v["assigned_partitions"])
            m.pending_revocation = _partitions(v["partitions_pending_revocation"])
        group.update_member(old, m)

