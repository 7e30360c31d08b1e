"""The request and response headers (apache/kafka's ``RequestHeader.json`` and
``ResponseHeader.json``): what comes before every body.
"""

from __future__ import annotations

from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "REQUEST_HEADER", "RESPONSE_HEADER",
]

# -- headers -------------------------------------------------------------------------------------

REQUEST_HEADER: Declaration = {
    "type": "header",
    "name": "RequestHeader",
    # v0 has no client id (only ControlledShutdown v0 used it); v1 adds it; v2 is flexible.
    "validVersions": "0-2",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "RequestApiKey", "type": "int16", "versions": "0+"},
        {"name": "RequestApiVersion", "type": "int16", "versions": "0+"},
        {"name": "CorrelationId", "type": "int32", "versions": "0+"},
        # Always the old two-byte length, even in v2: a broker must be able to read the client id
        # of an ApiVersionsRequest of a version it does not know yet.
        {
            "name": "ClientId",
            "type": "string",
            "versions": "1+",
            "nullableVersions": "1+",
            "ignorable": True,
            "flexibleVersions": "none",
        },
    ],
}

RESPONSE_HEADER: Declaration = {
    "type": "header",
    "name": "ResponseHeader",
    "validVersions": "0-1",
    "flexibleVersions": "1+",
    "fields": [
        {"name": "CorrelationId", "type": "int32", "versions": "0+"},
    ],
}
