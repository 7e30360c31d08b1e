"""The ACL APIs: DescribeAcls (29), CreateAcls (30) and DeleteAcls (31).
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "DESCRIBE_ACLS_REQUEST", "DESCRIBE_ACLS_RESPONSE", "CREATE_ACLS_REQUEST",
    "CREATE_ACLS_RESPONSE", "DELETE_ACLS_REQUEST", "DELETE_ACLS_RESPONSE",
]

# -- DescribeAcls (29), CreateAcls (30), DeleteAcls (31) ----------------------------------------
# Kafka 4 answers v1-3 (v0, without pattern types, was removed by KIP-896); v2 is flexible and
# v3 adds the USER resource type (no new field).

_ACL_FILTER_FIELDS = [
    {"name": "ResourceTypeFilter", "type": "int8", "versions": "0+"},
    {"name": "ResourceNameFilter", "type": "string", "versions": "0+", "nullableVersions": "0+"},
    {"name": "PatternTypeFilter", "type": "int8", "versions": "1+", "default": 3},
    {"name": "PrincipalFilter", "type": "string", "versions": "0+", "nullableVersions": "0+"},
    {"name": "HostFilter", "type": "string", "versions": "0+", "nullableVersions": "0+"},
    {"name": "Operation", "type": "int8", "versions": "0+"},
    {"name": "PermissionType", "type": "int8", "versions": "0+"},
]

DESCRIBE_ACLS_REQUEST: Declaration = {
    "apiKey": ApiKey.DESCRIBE_ACLS,
    "type": "request",
    "name": "DescribeAclsRequest",
    "validVersions": "1-3",
    "flexibleVersions": "2+",
    "fields": _ACL_FILTER_FIELDS,
}

DESCRIBE_ACLS_RESPONSE: Declaration = {
    "apiKey": ApiKey.DESCRIBE_ACLS,
    "type": "response",
    "name": "DescribeAclsResponse",
    "validVersions": "1-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ErrorMessage", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        {
            "name": "Resources",
            "type": "[]DescribeAclsResource",
            "versions": "0+",
            "fields": [
                {"name": "ResourceType", "type": "int8", "versions": "0+"},
                {"name": "ResourceName", "type": "string", "versions": "0+"},
                {"name": "PatternType", "type": "int8", "versions": "1+", "default": 3},
                {
                    "name": "Acls",
                    "type": "[]AclDescription",
                    "versions": "0+",
                    "fields": [
                        {"name": "Principal", "type": "string", "versions": "0+"},
                        {"name": "Host", "type": "string", "versions": "0+"},
                        {"name": "Operation", "type": "int8", "versions": "0+"},
                        {"name": "PermissionType", "type": "int8", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}

CREATE_ACLS_REQUEST: Declaration = {
    "apiKey": ApiKey.CREATE_ACLS,
    "type": "request",
    "name": "CreateAclsRequest",
    "validVersions": "1-3",
    "flexibleVersions": "2+",
    "fields": [
        {
            "name": "Creations",
            "type": "[]AclCreation",
            "versions": "0+",
            "fields": [
                {"name": "ResourceType", "type": "int8", "versions": "0+"},
                {"name": "ResourceName", "type": "string", "versions": "0+"},
                {"name": "ResourcePatternType", "type": "int8", "versions": "1+", "default": 3},
                {"name": "Principal", "type": "string", "versions": "0+"},
                {"name": "Host", "type": "string", "versions": "0+"},
                {"name": "Operation", "type": "int8", "versions": "0+"},
                {"name": "PermissionType", "type": "int8", "versions": "0+"},
            ],
        },
    ],
}

CREATE_ACLS_RESPONSE: Declaration = {
    "apiKey": ApiKey.CREATE_ACLS,
    "type": "response",
    "name": "CreateAclsResponse",
    "validVersions": "1-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {
            "name": "Results",
            "type": "[]AclCreationResult",
            "versions": "0+",
            "fields": [
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {"name": "ErrorMessage", "type": "string", "versions": "0+",
                 "nullableVersions": "0+"},
            ],
        },
    ],
}

DELETE_ACLS_REQUEST: Declaration = {
    "apiKey": ApiKey.DELETE_ACLS,
    "type": "request",
    "name": "DeleteAclsRequest",
    "validVersions": "1-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "Filters", "type": "[]DeleteAclsFilter", "versions": "0+",
         "fields": _ACL_FILTER_FIELDS},
    ],
}

DELETE_ACLS_RESPONSE: Declaration = {
    "apiKey": ApiKey.DELETE_ACLS,
    "type": "response",
    "name": "DeleteAclsResponse",
    "validVersions": "1-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {
            "name": "FilterResults",
            "type": "[]DeleteAclsFilterResult",
            "versions": "0+",
            "fields": [
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {"name": "ErrorMessage", "type": "string", "versions": "0+",
                 "nullableVersions": "0+"},
                {
                    "name": "MatchingAcls",
                    "type": "[]DeleteAclsMatchingAcl",
                    "versions": "0+",
                    "fields": [
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                        {"name": "ErrorMessage", "type": "string", "versions": "0+",
                         "nullableVersions": "0+"},
                        {"name": "ResourceType", "type": "int8", "versions": "0+"},
                        {"name": "ResourceName", "type": "string", "versions": "0+"},
                        {"name": "PatternType", "type": "int8", "versions": "1+", "default": 3},
                        {"name": "Principal", "type": "string", "versions": "0+"},
                        {"name": "Host", "type": "string", "versions": "0+"},
                        {"name": "Operation", "type": "int8", "versions": "0+"},
                        {"name": "PermissionType", "type": "int8", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}
