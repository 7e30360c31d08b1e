"""ApiVersions (18): the first request on a connection, answered with the versions of every API
the broker speaks (``ApiVersionsRequest.json``, ``ApiVersionsResponse.json``).
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "API_VERSIONS_REQUEST", "API_VERSIONS_RESPONSE",
]

# -- ApiVersions (18) ---------------------------------------------------------------------------

API_VERSIONS_REQUEST: Declaration = {
    "apiKey": ApiKey.API_VERSIONS,
    "type": "request",
    "name": "ApiVersionsRequest",
    # v3 is flexible and tells the broker the client's software name and version.
    "validVersions": "0-4",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "ClientSoftwareName", "type": "string", "versions": "3+"},
        {"name": "ClientSoftwareVersion", "type": "string", "versions": "3+"},
    ],
}

API_VERSIONS_RESPONSE: Declaration = {
    "apiKey": ApiKey.API_VERSIONS,
    "type": "response",
    "name": "ApiVersionsResponse",
    # NB: whatever the version, the response *header* is v0 (see codec.response_header_version):
    # a client that sent a version the broker does not know must still be able to read it.
    "validVersions": "0-4",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {
            "name": "ApiKeys",
            "type": "[]ApiVersion",
            "versions": "0+",
            "fields": [
                {"name": "ApiKey", "type": "int16", "versions": "0+"},
                {"name": "MinVersion", "type": "int16", "versions": "0+"},
                {"name": "MaxVersion", "type": "int16", "versions": "0+"},
            ],
        },
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {
            "name": "SupportedFeatures",
            "type": "[]SupportedFeatureKey",
            "versions": "3+",
            "taggedVersions": "3+",
            "tag": 0,
            "ignorable": True,
            "fields": [
                {"name": "Name", "type": "string", "versions": "3+"},
                {"name": "MinVersion", "type": "int16", "versions": "3+"},
                {"name": "MaxVersion", "type": "int16", "versions": "3+"},
            ],
        },
        {
            "name": "FinalizedFeaturesEpoch",
            "type": "int64",
            "versions": "3+",
            "taggedVersions": "3+",
            "tag": 1,
            "default": -1,
            "ignorable": True,
        },
        {
            "name": "FinalizedFeatures",
            "type": "[]FinalizedFeatureKey",
            "versions": "3+",
            "taggedVersions": "3+",
            "tag": 2,
            "ignorable": True,
            "fields": [
                {"name": "Name", "type": "string", "versions": "3+"},
                {"name": "MaxVersionLevel", "type": "int16", "versions": "3+"},
                {"name": "MinVersionLevel", "type": "int16", "versions": "3+"},
            ],
        },
        {
            "name": "ZkMigrationReady",
            "type": "bool",
            "versions": "3+",
            "taggedVersions": "3+",
            "tag": 3,
            "default": False,
            "ignorable": True,
        },
    ],
}
