"""The config APIs: DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs (44).
"""

from __future__ import annotations

from typing import Any

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "DESCRIBE_CONFIGS_REQUEST", "DESCRIBE_CONFIGS_RESPONSE", "ALTER_CONFIGS_REQUEST",
    "ALTER_CONFIGS_RESPONSE", "INCREMENTAL_ALTER_CONFIGS_REQUEST",
    "INCREMENTAL_ALTER_CONFIGS_RESPONSE",
]

# -- DescribeConfigs (32) ------------------------------------------------------------------------

DESCRIBE_CONFIGS_REQUEST: Declaration = {
    "apiKey": ApiKey.DESCRIBE_CONFIGS,
    "type": "request",
    "name": "DescribeConfigsRequest",
    # v1 adds IncludeSynoyms (Kafka's spelling); v2 is v1; v3 adds IncludeDocumentation (and
    # the answer each value's type); v4 is flexible.
    "validVersions": "0-4",
    "flexibleVersions": "4+",
    "fields": [
        {
            "name": "Resources",
            "type": "[]DescribeConfigsResource",
            "versions": "0+",
            "fields": [
                {"name": "ResourceType", "type": "int8", "versions": "0+"},
                {"name": "ResourceName", "type": "string", "versions": "0+"},
                {
                    "name": "ConfigurationKeys",
                    "type": "[]string",
                    "versions": "0+",
                    "nullableVersions": "0+",
                },
            ],
        },
        {"name": "IncludeSynoyms", "type": "bool", "versions": "1+", "default": False},
        {"name": "IncludeDocumentation", "type": "bool", "versions": "3+", "default": False},
    ],
}

DESCRIBE_CONFIGS_RESPONSE: Declaration = {
    "apiKey": ApiKey.DESCRIBE_CONFIGS,
    "type": "response",
    "name": "DescribeConfigsResponse",
    "validVersions": "0-4",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {
            "name": "Results",
            "type": "[]DescribeConfigsResult",
            "versions": "0+",
            "fields": [
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {"name": "ErrorMessage", "type": "string", "versions": "0+",
                 "nullableVersions": "0+"},
                {"name": "ResourceType", "type": "int8", "versions": "0+"},
                {"name": "ResourceName", "type": "string", "versions": "0+"},
                {
                    "name": "Configs",
                    "type": "[]DescribeConfigsResourceResult",
                    "versions": "0+",
                    "fields": [
                        {"name": "Name", "type": "string", "versions": "0+"},
                        {"name": "Value", "type": "string", "versions": "0+",
                         "nullableVersions": "0+"},
                        {"name": "ReadOnly", "type": "bool", "versions": "0+"},
                        {"name": "IsDefault", "type": "bool", "versions": "0"},
                        {"name": "ConfigSource", "type": "int8", "versions": "1+",
                         "default": -1, "ignorable": True},
                        {"name": "IsSensitive", "type": "bool", "versions": "0+"},
                        {
                            "name": "Synonyms",
                            "type": "[]DescribeConfigsSynonym",
                            "versions": "1+",
                            "ignorable": True,
                            "fields": [
                                {"name": "Name", "type": "string", "versions": "1+"},
                                {"name": "Value", "type": "string", "versions": "1+",
                                 "nullableVersions": "0+"},
                                {"name": "Source", "type": "int8", "versions": "1+"},
                            ],
                        },
                        {"name": "ConfigType", "type": "int8", "versions": "3+", "default": 0,
                         "ignorable": True},
                        {"name": "Documentation", "type": "string", "versions": "3+",
                         "nullableVersions": "0+", "ignorable": True},
                    ],
                },
            ],
        },
    ],
}

# -- AlterConfigs (33), IncrementalAlterConfigs (44) ---------------------------------------------


def _alter_configs(api_key: int, name: str, valid: str, flexible: str,
                   incremental: bool) -> tuple[Declaration, Declaration]:
    """AlterConfigs and IncrementalAlterConfigs share their shape; the incremental one gives
    each config an operation (SET, DELETE, APPEND, SUBTRACT)."""
    config_fields: list[dict[str, Any]] = [{"name": "Name", "type": "string", "versions": "0+"}]
    if incremental:
        config_fields.append({"name": "ConfigOperation", "type": "int8", "versions": "0+"})
    config_fields.append({"name": "Value", "type": "string", "versions": "0+",
                          "nullableVersions": "0+"})
    request: Declaration = {
        "apiKey": api_key, "type": "request", "name": f"{name}Request",
        "validVersions": valid, "flexibleVersions": flexible,
        "fields": [
            {"name": "Resources", "type": "[]AlterConfigsResource", "versions": "0+", "fields": [
                {"name": "ResourceType", "type": "int8", "versions": "0+"},
                {"name": "ResourceName", "type": "string", "versions": "0+"},
                {"name": "Configs", "type": "[]AlterableConfig", "versions": "0+",
                 "fields": config_fields},
            ]},
            {"name": "ValidateOnly", "type": "bool", "versions": "0+"},
        ],
    }
    response: Declaration = {
        "apiKey": api_key, "type": "response", "name": f"{name}Response",
        "validVersions": valid, "flexibleVersions": flexible,
        "fields": [
            {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
            {"name": "Responses", "type": "[]AlterConfigsResourceResponse", "versions": "0+",
             "fields": [
                 {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                 {"name": "ErrorMessage", "type": "string", "versions": "0+",
                  "nullableVersions": "0+"},
                 {"name": "ResourceType", "type": "int8", "versions": "0+"},
                 {"name": "ResourceName", "type": "string", "versions": "0+"},
             ]},
        ],
    }
    return request, response


# v1 is v0; v2 is flexible.
ALTER_CONFIGS_REQUEST, ALTER_CONFIGS_RESPONSE = _alter_configs(
    ApiKey.ALTER_CONFIGS, "AlterConfigs", "0-2", "2+", incremental=False)
# v1 is flexible.
INCREMENTAL_ALTER_CONFIGS_REQUEST, INCREMENTAL_ALTER_CONFIGS_RESPONSE = _alter_configs(
    ApiKey.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs", "0-1", "1+", incremental=True)
