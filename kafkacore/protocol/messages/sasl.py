"""SaslHandshake (17) and SaslAuthenticate (36): a connection's authentication, after
ApiVersions and before anything else.
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "SASL_HANDSHAKE_REQUEST", "SASL_HANDSHAKE_RESPONSE", "SASL_AUTHENTICATE_REQUEST",
    "SASL_AUTHENTICATE_RESPONSE",
]

# -- SaslHandshake (17) and SaslAuthenticate (36) -----------------------------------------------

SASL_HANDSHAKE_REQUEST: Declaration = {
    "apiKey": ApiKey.SASL_HANDSHAKE,
    "type": "request",
    "name": "SaslHandshakeRequest",
    # v1: the tokens that follow travel in SaslAuthenticate requests, not as raw frames.
    "validVersions": "0-1",
    "flexibleVersions": "none",
    "fields": [{"name": "Mechanism", "type": "string", "versions": "0+"}],
}

SASL_HANDSHAKE_RESPONSE: Declaration = {
    "apiKey": ApiKey.SASL_HANDSHAKE,
    "type": "response",
    "name": "SaslHandshakeResponse",
    "validVersions": "0-1",
    "flexibleVersions": "none",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "Mechanisms", "type": "[]string", "versions": "0+"},
    ],
}

SASL_AUTHENTICATE_REQUEST: Declaration = {
    "apiKey": ApiKey.SASL_AUTHENTICATE,
    "type": "request",
    "name": "SaslAuthenticateRequest",
    "validVersions": "0-2",
    "flexibleVersions": "2+",
    "fields": [{"name": "AuthBytes", "type": "bytes", "versions": "0+"}],
}

SASL_AUTHENTICATE_RESPONSE: Declaration = {
    "apiKey": ApiKey.SASL_AUTHENTICATE,
    "type": "response",
    "name": "SaslAuthenticateResponse",
    # v1 adds the session lifetime (KIP-368: the client re-authenticates before it ends).
    "validVersions": "0-2",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ErrorMessage", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        {"name": "AuthBytes", "type": "bytes", "versions": "0+"},
        {"name": "SessionLifetimeMs", "type": "int64", "versions": "1+", "default": 0},
    ],
}
