"""The classic group protocol: JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14),
DescribeGroups (15), ListGroups (16) and DeleteGroups (42).

The consumer group protocol of KIP-848 is in :mod:`~kafkacore.protocol.messages.consumer_group`;
the group's committed offsets in :mod:`~kafkacore.protocol.messages.offsets`.
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "JOIN_GROUP_REQUEST", "JOIN_GROUP_RESPONSE", "HEARTBEAT_REQUEST", "HEARTBEAT_RESPONSE",
    "LEAVE_GROUP_REQUEST", "LEAVE_GROUP_RESPONSE", "SYNC_GROUP_REQUEST", "SYNC_GROUP_RESPONSE",
    "DESCRIBE_GROUPS_REQUEST", "DESCRIBE_GROUPS_RESPONSE", "LIST_GROUPS_REQUEST",
    "LIST_GROUPS_RESPONSE", "DELETE_GROUPS_REQUEST", "DELETE_GROUPS_RESPONSE",
]

# -- the classic group protocol: JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14),
# DescribeGroups (15), ListGroups (16) ----------------------------------------------------------

JOIN_GROUP_REQUEST: Declaration = {
    "apiKey": ApiKey.JOIN_GROUP,
    "type": "request",
    "name": "JoinGroupRequest",
    # Kafka 4.0 keeps v2+ (KIP-896); v4 a new member first gets its id with MEMBER_ID_REQUIRED
    # (KIP-394); v5 static members (KIP-345); v6 flexible; v8 the reason (KIP-800).
    "validVersions": "2-9",
    "flexibleVersions": "6+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "SessionTimeoutMs", "type": "int32", "versions": "0+"},
        {"name": "RebalanceTimeoutMs", "type": "int32", "versions": "1+", "default": -1,
         "ignorable": True},
        {"name": "MemberId", "type": "string", "versions": "0+"},
        {"name": "GroupInstanceId", "type": "string", "versions": "5+",
         "nullableVersions": "5+", "default": None},
        {"name": "ProtocolType", "type": "string", "versions": "0+"},
        {
            "name": "Protocols",
            "type": "[]JoinGroupRequestProtocol",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "Metadata", "type": "bytes", "versions": "0+"},
            ],
        },
        {"name": "Reason", "type": "string", "versions": "8+", "nullableVersions": "8+",
         "default": None, "ignorable": True},
    ],
}

JOIN_GROUP_RESPONSE: Declaration = {
    "apiKey": ApiKey.JOIN_GROUP,
    "type": "response",
    "name": "JoinGroupResponse",
    "validVersions": "2-9",
    "flexibleVersions": "6+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "2+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "GenerationId", "type": "int32", "versions": "0+", "default": -1},
        {"name": "ProtocolType", "type": "string", "versions": "7+", "nullableVersions": "7+",
         "default": None, "ignorable": True},
        {"name": "ProtocolName", "type": "string", "versions": "0+", "nullableVersions": "7+"},
        {"name": "Leader", "type": "string", "versions": "0+"},
        {"name": "SkipAssignment", "type": "bool", "versions": "9+", "default": False},
        {"name": "MemberId", "type": "string", "versions": "0+"},
        {
            "name": "Members",
            "type": "[]JoinGroupResponseMember",
            "versions": "0+",
            "fields": [
                {"name": "MemberId", "type": "string", "versions": "0+"},
                {"name": "GroupInstanceId", "type": "string", "versions": "5+",
                 "ignorable": True, "nullableVersions": "5+", "default": None},
                {"name": "Metadata", "type": "bytes", "versions": "0+"},
            ],
        },
    ],
}

HEARTBEAT_REQUEST: Declaration = {
    "apiKey": ApiKey.HEARTBEAT,
    "type": "request",
    "name": "HeartbeatRequest",
    "validVersions": "0-4",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "GenerationId", "type": "int32", "versions": "0+"},
        {"name": "MemberId", "type": "string", "versions": "0+"},
        {"name": "GroupInstanceId", "type": "string", "versions": "3+",
         "nullableVersions": "3+", "default": None},
    ],
}

HEARTBEAT_RESPONSE: Declaration = {
    "apiKey": ApiKey.HEARTBEAT,
    "type": "response",
    "name": "HeartbeatResponse",
    "validVersions": "0-4",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
    ],
}

LEAVE_GROUP_REQUEST: Declaration = {
    "apiKey": ApiKey.LEAVE_GROUP,
    "type": "request",
    "name": "LeaveGroupRequest",
    # v3 leaves several members at once (KIP-345); v5 a reason per member (KIP-800).
    "validVersions": "0-5",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "MemberId", "type": "string", "versions": "0-2"},
        {
            "name": "Members",
            "type": "[]MemberIdentity",
            "versions": "3+",
            "fields": [
                {"name": "MemberId", "type": "string", "versions": "3+"},
                {"name": "GroupInstanceId", "type": "string", "versions": "3+",
                 "nullableVersions": "3+", "default": None},
                {"name": "Reason", "type": "string", "versions": "5+",
                 "nullableVersions": "5+", "default": None, "ignorable": True},
            ],
        },
    ],
}

LEAVE_GROUP_RESPONSE: Declaration = {
    "apiKey": ApiKey.LEAVE_GROUP,
    "type": "response",
    "name": "LeaveGroupResponse",
    "validVersions": "0-5",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {
            "name": "Members",
            "type": "[]MemberResponse",
            "versions": "3+",
            "fields": [
                {"name": "MemberId", "type": "string", "versions": "3+"},
                {"name": "GroupInstanceId", "type": "string", "versions": "3+",
                 "nullableVersions": "3+"},
                {"name": "ErrorCode", "type": "int16", "versions": "3+"},
            ],
        },
    ],
}

SYNC_GROUP_REQUEST: Declaration = {
    "apiKey": ApiKey.SYNC_GROUP,
    "type": "request",
    "name": "SyncGroupRequest",
    # v3 static members; v4 flexible; v5 the protocol type and name, checked by the coordinator.
    "validVersions": "0-5",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "GenerationId", "type": "int32", "versions": "0+"},
        {"name": "MemberId", "type": "string", "versions": "0+"},
        {"name": "GroupInstanceId", "type": "string", "versions": "3+",
         "nullableVersions": "3+", "default": None},
        {"name": "ProtocolType", "type": "string", "versions": "5+", "nullableVersions": "5+",
         "default": None, "ignorable": True},
        {"name": "ProtocolName", "type": "string", "versions": "5+", "nullableVersions": "5+",
         "default": None, "ignorable": True},
        {
            "name": "Assignments",
            "type": "[]SyncGroupRequestAssignment",
            "versions": "0+",
            "fields": [
                {"name": "MemberId", "type": "string", "versions": "0+"},
                {"name": "Assignment", "type": "bytes", "versions": "0+"},
            ],
        },
    ],
}

SYNC_GROUP_RESPONSE: Declaration = {
    "apiKey": ApiKey.SYNC_GROUP,
    "type": "response",
    "name": "SyncGroupResponse",
    "validVersions": "0-5",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ProtocolType", "type": "string", "versions": "5+", "nullableVersions": "5+",
         "default": None, "ignorable": True},
        {"name": "ProtocolName", "type": "string", "versions": "5+", "nullableVersions": "5+",
         "default": None, "ignorable": True},
        {"name": "Assignment", "type": "bytes", "versions": "0+"},
    ],
}

DESCRIBE_GROUPS_REQUEST: Declaration = {
    "apiKey": ApiKey.DESCRIBE_GROUPS,
    "type": "request",
    "name": "DescribeGroupsRequest",
    "validVersions": "0-5",
    "flexibleVersions": "5+",
    "fields": [
        {"name": "Groups", "type": "[]string", "versions": "0+"},
        {"name": "IncludeAuthorizedOperations", "type": "bool", "versions": "3+"},
    ],
}

DESCRIBE_GROUPS_RESPONSE: Declaration = {
    "apiKey": ApiKey.DESCRIBE_GROUPS,
    "type": "response",
    "name": "DescribeGroupsResponse",
    "validVersions": "0-5",
    "flexibleVersions": "5+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {
            "name": "Groups",
            "type": "[]DescribedGroup",
            "versions": "0+",
            "fields": [
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {"name": "GroupId", "type": "string", "versions": "0+"},
                {"name": "GroupState", "type": "string", "versions": "0+"},
                {"name": "ProtocolType", "type": "string", "versions": "0+"},
                {"name": "ProtocolData", "type": "string", "versions": "0+"},
                {
                    "name": "Members",
                    "type": "[]DescribedGroupMember",
                    "versions": "0+",
                    "fields": [
                        {"name": "MemberId", "type": "string", "versions": "0+"},
                        {"name": "GroupInstanceId", "type": "string", "versions": "4+",
                         "ignorable": True, "nullableVersions": "4+", "default": None},
                        {"name": "ClientId", "type": "string", "versions": "0+"},
                        {"name": "ClientHost", "type": "string", "versions": "0+"},
                        {"name": "MemberMetadata", "type": "bytes", "versions": "0+"},
                        {"name": "MemberAssignment", "type": "bytes", "versions": "0+"},
                    ],
                },
                {"name": "AuthorizedOperations", "type": "int32", "versions": "3+",
                 "default": -2147483648},
            ],
        },
    ],
}

LIST_GROUPS_REQUEST: Declaration = {
    "apiKey": ApiKey.LIST_GROUPS,
    "type": "request",
    "name": "ListGroupsRequest",
    # v4 filters by state (KIP-518); v5 by type (KIP-848).
    "validVersions": "0-5",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "StatesFilter", "type": "[]string", "versions": "4+"},
        {"name": "TypesFilter", "type": "[]string", "versions": "5+"},
    ],
}

LIST_GROUPS_RESPONSE: Declaration = {
    "apiKey": ApiKey.LIST_GROUPS,
    "type": "response",
    "name": "ListGroupsResponse",
    "validVersions": "0-5",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {
            "name": "Groups",
            "type": "[]ListedGroup",
            "versions": "0+",
            "fields": [
                {"name": "GroupId", "type": "string", "versions": "0+"},
                {"name": "ProtocolType", "type": "string", "versions": "0+"},
                {"name": "GroupState", "type": "string", "versions": "4+", "ignorable": True},
                {"name": "GroupType", "type": "string", "versions": "5+", "ignorable": True},
            ],
        },
    ],
}

# -- DeleteGroups (42) ---------------------------------------------------------------------------

DELETE_GROUPS_REQUEST: Declaration = {
    "apiKey": ApiKey.DELETE_GROUPS, "type": "request", "name": "DeleteGroupsRequest",
    # v1 is v0; v2 is flexible.
    "validVersions": "0-2", "flexibleVersions": "2+",
    "fields": [{"name": "GroupsNames", "type": "[]string", "versions": "0+"}],
}

DELETE_GROUPS_RESPONSE: Declaration = {
    "apiKey": ApiKey.DELETE_GROUPS, "type": "response", "name": "DeleteGroupsResponse",
    "validVersions": "0-2", "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "Results", "type": "[]DeletableGroupResult", "versions": "0+", "fields": [
            {"name": "GroupId", "type": "string", "versions": "0+"},
            {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        ]},
    ],
}
