"""Requests our broker does not speak get Kafka's answer, never a silent drop.

Kafka's ``SocketServer`` answers an ApiVersions version it does not know in v0 with
UNSUPPORTED_VERSION and its list (KIP-511); any other request it cannot parse -- an API key it does
not know, a version outside what it declares -- closes the connection and logs why, since no
response version exists that the client could read.  A version the client negotiated from our
ApiVersions is always one we answer.
"""

from __future__ import annotations

import logging

import pytest
from reactor_client import api_versions, closed_by_peer, connect, recv_frame

from kafkacore.broker import Broker
from kafkacore.errors import UnsupportedVersionError
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey


@pytest.fixture(scope="module")
def broker():
    with Broker({"num.network.threads": "2", "num.io.threads": "2"}) as b:
        yield b


def _frame(api_key: int, version: int, correlation_id: int = 7) -> bytes:
    # Header v1 (api key, version, correlation id, client id) then a few body bytes: readable as a
    # header whatever the API, which is all a broker can read of a request it does not know.
    payload = (api_key.to_bytes(2, "big", signed=True) + version.to_bytes(2, "big", signed=True)
               + correlation_id.to_bytes(4, "big") + (4).to_bytes(2, "big") + b"test" + b"\0" * 8)
    return len(payload).to_bytes(4, "big") + payload


def _closed_with_reason(broker, caplog, frame: bytes, reason: str) -> None:
    bad, good = connect(broker), connect(broker)
    with caplog.at_level(logging.DEBUG, logger="kafkacore.broker"):
        bad.sendall(frame)
        assert closed_by_peer(bad)
    assert any(reason in r.getMessage() for r in caplog.records), [
        r.getMessage() for r in caplog.records]
    # Everyone else is still served, the offender too once it reconnects.
    assert api_versions(good)[1]["error_code"] == 0
    assert api_versions(connect(broker))[1]["error_code"] == 0


@pytest.mark.parametrize("api_key", [999, 32767, -1])
def test_an_unknown_api_key_closes_the_connection_with_a_reason(broker, caplog, api_key):
    _closed_with_reason(broker, caplog, _frame(api_key, 0), f"API key {api_key}")


@pytest.mark.parametrize("api_key", [ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA,
                                     ApiKey.INIT_PRODUCER_ID])
def test_a_version_we_do_not_declare_closes_the_connection_with_a_reason(broker, caplog, api_key):
    version = codec.REQUESTS[api_key].valid.high + 1
    _closed_with_reason(broker, caplog, _frame(api_key, version), f"v{version}")


@pytest.mark.parametrize("version", [5, 99, 32767])
def test_an_api_versions_version_we_do_not_know_is_answered_in_v0(broker, version):
    s = connect(broker)
    s.sendall(_frame(ApiKey.API_VERSIONS, version, correlation_id=41))
    correlation_id, body = codec.decode_response(ApiKey.API_VERSIONS, 0, recv_frame(s))
    assert (correlation_id, body["error_code"]) == (41, UnsupportedVersionError.errno)
    listed = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    # Kafka 4's oldest Produce (v3, message format 2) up to the newest we declare.
    assert listed[ApiKey.PRODUCE] == (3, codec.REQUESTS[ApiKey.PRODUCE].valid.high)
    assert api_versions(s, 42)[1]["error_code"] == 0  # the connection goes on
