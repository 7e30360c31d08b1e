"""A client whose security.protocol is not the listener's fails the call within seconds, with
an error that names the protocol the listener wants, logged once.

Our broker (in this process) with a SASL_PLAINTEXT, an SSL and a SASL_SSL listener: a SASL
listener answers ApiVersions and hangs up on the next request, which is not SaslHandshake (as
Kafka's does); a TLS listener hangs up on plaintext bytes without a byte of answer.  Each test
sets max.block.ms to 60 s and fails if the call takes 20: the bound says the client did not
wait for max.block.ms, not how fast it was.
"""

from __future__ import annotations

import logging

import pytest
from certs import make_pki

from kafkacore import KafkaProducer
from kafkacore.broker.server.broker_server import Broker
from kafkacore.compat import confluent
from kafkacore.network.errors import SecurityProtocolMismatchError

USERS = "alice:alice-secret"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("wrong-turn"))


def _broker(protocol, pki):
    settings = {"listeners": f"{protocol}://127.0.0.1:0", "num.partitions": 1}
    if protocol.startswith("SASL_"):
        settings.update({"sasl.enabled.mechanisms": "PLAIN", "sasl.users": USERS})
    if protocol.endswith("SSL"):
        settings.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.cert),
                         "ssl.key.location": str(pki.key)})
    return Broker(settings)


def _send_fails(bootstrap, **settings):
    """send() twice: both raise SecurityProtocolMismatchError; the first is returned."""
    with KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=60000, **settings) as producer:
        with pytest.raises(SecurityProtocolMismatchError) as first:
            producer.send("wrong-turn", b"x")
        with pytest.raises(SecurityProtocolMismatchError):
            producer.send("wrong-turn", b"y")  # the verdict holds: no second wait
    return first.value


def _said_once(caplog):
    said = [r for r in caplog.records if r.levelno >= logging.WARNING
            and "security.protocol" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]
    return said[0].getMessage()


@pytest.mark.timeout(20)
def test_plaintext_client_at_a_sasl_listener(pki, caplog):
    caplog.set_level(logging.INFO, logger="kafkacore")
    with _broker("SASL_PLAINTEXT", pki) as broker:
        error = _send_fails(broker.bootstrap_servers)
    assert error.wanted == "SASL_PLAINTEXT"
    assert "the listener wants security.protocol SASL_PLAINTEXT" in str(error)
    assert "this client uses PLAINTEXT" in str(error)
    assert "answers SaslHandshake (mechanisms PLAIN)" in str(error)
    assert "SASL_PLAINTEXT" in _said_once(caplog)
    # No "InitProducerId failed; retrying" for every reconnect.
    retries = [r for r in caplog.records if "InitProducerId failed" in r.getMessage()
               and r.levelno >= logging.WARNING]
    assert retries == []


@pytest.mark.timeout(20)
def test_plaintext_client_at_a_tls_listener(pki, caplog):
    caplog.set_level(logging.INFO, logger="kafkacore")
    with _broker("SSL", pki) as broker:
        error = _send_fails(broker.bootstrap_servers)
    assert "the listener wants security.protocol SSL (or SASL_SSL)" in str(error)
    assert "answers a TLS handshake" in str(error)
    assert "SSL" in _said_once(caplog)


@pytest.mark.timeout(20)
def test_tls_client_without_sasl_at_a_sasl_ssl_listener(pki):
    with _broker("SASL_SSL", pki) as broker:
        error = _send_fails(broker.bootstrap_servers, security_protocol="SSL",
                            ssl_truststore_location=str(pki.ca))
    assert error.wanted == "SASL_SSL" and "this client uses SSL" in str(error)


@pytest.mark.timeout(20)
def test_confluent_facade_at_a_sasl_listener_says_so(pki):
    with _broker("SASL_PLAINTEXT", pki) as broker:
        p = confluent.Producer({"bootstrap.servers": broker.bootstrap_servers,
                                "max.block.ms": 60000})
        with pytest.raises(confluent.KafkaException) as info:
            p.produce("wrong-turn", b"x")
        p.close(0)
    err = info.value.args[0]
    assert err.code() == confluent.KafkaError._AUTHENTICATION and not err.retriable()
    assert "the listener wants security.protocol SASL_PLAINTEXT" in err.str()


@pytest.mark.timeout(20)
def test_the_right_protocol_still_works_after_a_wrong_turn(pki):
    # The same listener, the right settings: nothing of the verdict is global.
    with _broker("SASL_PLAINTEXT", pki) as broker:
        _send_fails(broker.bootstrap_servers)
        with KafkaProducer(bootstrap_servers=broker.bootstrap_servers,
                           security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                           sasl_username="alice", sasl_password="alice-secret") as producer:
            assert producer.send("wrong-turn", b"ok").get(timeout=15).offset == 0


@pytest.mark.timeout(20)
def test_a_proxy_in_front_of_a_dead_broker_is_no_wrong_turn(closed_port):
    # The proxy accepts each connection and drops it, as a TLS listener does: the TLS probe
    # that suspicion leads to finds no TLS, so the client keeps waiting (max.block.ms) with
    # the ordinary reason, and never calls it a wrong security.protocol.
    from support.tcp_proxy import TcpProxy

    from kafkacore.errors import KafkaTimeoutError

    with TcpProxy() as proxy:
        proxy.set_target("127.0.0.1", closed_port)
        with KafkaProducer(bootstrap_servers=proxy.address, max_block_ms=3000) as producer:
            with pytest.raises(KafkaTimeoutError):
                producer.send("wrong-turn", b"x")
        # white-box: the network client's authentication error, kept for the Sender
        assert proxy.connections == 0 and not isinstance(
            producer._client.authentication_error, SecurityProtocolMismatchError)
