"""The client quota APIs: DescribeClientQuotas (48) and AlterClientQuotas (49).
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "DESCRIBE_CLIENT_QUOTAS_REQUEST", "DESCRIBE_CLIENT_QUOTAS_RESPONSE",
    "ALTER_CLIENT_QUOTAS_REQUEST", "ALTER_CLIENT_QUOTAS_RESPONSE",
]

# -- DescribeClientQuotas (48), AlterClientQuotas (49) -------------------------------------------

#: an entity: its (type, name) pairs; a null name is the type's default (KIP-546)
_QUOTA_ENTITY = [{"name": "EntityType", "type": "string", "versions": "0+"},
                 {"name": "EntityName", "type": "string", "versions": "0+",
                  "nullableVersions": "0+"}]

# v1 is flexible.
DESCRIBE_CLIENT_QUOTAS_REQUEST: Declaration = {
    "apiKey": ApiKey.DESCRIBE_CLIENT_QUOTAS, "type": "request", "name": "DescribeClientQuotasRequest",
    "validVersions": "0-1", "flexibleVersions": "1+",
    "fields": [
        {"name": "Components", "type": "[]ComponentData", "versions": "0+", "fields": [
            {"name": "EntityType", "type": "string", "versions": "0+"},
            {"name": "MatchType", "type": "int8", "versions": "0+"},
            {"name": "Match", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        ]},
        {"name": "Strict", "type": "bool", "versions": "0+"},
    ],
}

DESCRIBE_CLIENT_QUOTAS_RESPONSE: Declaration = {
    "apiKey": ApiKey.DESCRIBE_CLIENT_QUOTAS, "type": "response", "name": "DescribeClientQuotasResponse",
    "validVersions": "0-1", "flexibleVersions": "1+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ErrorMessage", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        {"name": "Entries", "type": "[]EntryData", "versions": "0+", "nullableVersions": "0+",
         "fields": [
             {"name": "Entity", "type": "[]EntityData", "versions": "0+",
              "fields": _QUOTA_ENTITY},
             {"name": "Values", "type": "[]ValueData", "versions": "0+", "fields": [
                 {"name": "Key", "type": "string", "versions": "0+"},
                 {"name": "Value", "type": "float64", "versions": "0+"},
             ]},
         ]},
    ],
}

# v1 is flexible.
ALTER_CLIENT_QUOTAS_REQUEST: Declaration = {
    "apiKey": ApiKey.ALTER_CLIENT_QUOTAS, "type": "request", "name": "AlterClientQuotasRequest",
    "validVersions": "0-1", "flexibleVersions": "1+",
    "fields": [
        {"name": "Entries", "type": "[]EntryData", "versions": "0+", "fields": [
            {"name": "Entity", "type": "[]EntityData", "versions": "0+", "fields": _QUOTA_ENTITY},
            {"name": "Ops", "type": "[]OpData", "versions": "0+", "fields": [
                {"name": "Key", "type": "string", "versions": "0+"},
                {"name": "Value", "type": "float64", "versions": "0+"},
                {"name": "Remove", "type": "bool", "versions": "0+"},
            ]},
        ]},
        {"name": "ValidateOnly", "type": "bool", "versions": "0+"},
    ],
}

ALTER_CLIENT_QUOTAS_RESPONSE: Declaration = {
    "apiKey": ApiKey.ALTER_CLIENT_QUOTAS, "type": "response", "name": "AlterClientQuotasResponse",
    "validVersions": "0-1", "flexibleVersions": "1+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "Entries", "type": "[]EntryData", "versions": "0+", "fields": [
            {"name": "ErrorCode", "type": "int16", "versions": "0+"},
            {"name": "ErrorMessage", "type": "string", "versions": "0+",
             "nullableVersions": "0+"},
            {"name": "Entity", "type": "[]EntityData", "versions": "0+", "fields": _QUOTA_ENTITY},
        ]},
    ],
}
