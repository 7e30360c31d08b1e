"""Our broker's listeners PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL, judged by clients we did
not write (confluent-kafka in a child process, kafka-python) and by our producer.

Certificates are made here (tests/certs.py); users come from ``sasl.users`` and from Kafka's
per-listener JAAS setting.  See docs/broker/security.rst.
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import subprocess
import sys
import time

import pytest
from certs import make_pki
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactor_client import api_versions_frame, closed_by_peer, recv_frame
from readback import produce_confluent, read_confluent, read_kafka_python
from support.children import child_env
from support.examples import examples
from support.topics import new_topic
from waits import wait_until

from kafkacore import KafkaProducer, errors
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.security.authentication import CredentialCache, parse_users
from kafkacore.broker.server.broker_server import Broker
from kafkacore.network.errors import SecurityProtocolMismatchError, SslAuthenticationError
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

PARTITIONS = 2
LISTENERS = ("PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
             "SASL_SSL://127.0.0.1:0")
ALICE = ("alice", "alice-secret")
BOB = ("bob", "bob-secret")  # a PLAIN user of the SASL_SSL listener only, from its JAAS setting


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"), client_cn="client-1")


def broker_config(pki, **extra) -> dict:
    return {
        "listeners": LISTENERS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.cert),
        "ssl.key.location": str(pki.key),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.users": f"{ALICE[0]}:{ALICE[1]}",
        "listener.name.sasl_ssl.plain.sasl.jaas.config":
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_{BOB[0]}="{BOB[1]}";',
        "num.partitions": PARTITIONS,
        "num.network.threads": 2,
        **extra,
    }


@pytest.fixture(scope="module")
def secured(pki):
    with Broker(broker_config(pki)) as broker:
        yield broker


def stat(broker, name: str) -> int:
    return sum(p.get(name, 0) for p in broker.socket_server.statistics())



def librdkafka(broker, pki, protocol, mechanism=None, user=ALICE) -> tuple[str, dict]:
    """(bootstrap, librdkafka settings) for ``protocol`` (and ``mechanism``, as ``user``)."""
    config: dict = {"security.protocol": protocol}
    if "SSL" in protocol:
        config["ssl.ca.location"] = str(pki.ca)
    if mechanism:
        config.update({"sasl.mechanism": mechanism, "sasl.username": user[0],
                       "sasl.password": user[1]})
    return broker.bootstrap_servers_of(protocol), config


def ours(broker, pki, protocol, mechanism=None, user=ALICE, **extra) -> dict:
    bootstrap, config = librdkafka(broker, pki, protocol, mechanism, user)
    return {"bootstrap.servers": bootstrap, **config, **extra}


def produce_ours(config: dict, topic: str, n: int) -> list:
    with KafkaProducer({"linger.ms": 2, **config}) as producer:
        futures = [producer.send(topic, value=b"ours-%d" % i) for i in range(n)]
        producer.flush(timeout=60)
        return [f.result(timeout=10) for f in futures]


# -- clients we did not write --------------------------------------------------------------------


@pytest.mark.parametrize("protocol,mechanism,user", [
    ("SSL", None, ALICE),
    ("SASL_SSL", "SCRAM-SHA-512", ALICE),
    ("SASL_SSL", "PLAIN", BOB),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256", ALICE),
    ("SASL_PLAINTEXT", "PLAIN", ALICE),
])
def test_confluent_kafka_produces_and_consumes(secured, pki, protocol, mechanism, user):
    topic = new_topic(secured.bootstrap_servers_of("PLAINTEXT"), PARTITIONS)
    values = [b"rd-%d" % i for i in range(200)]
    bootstrap, config = librdkafka(secured, pki, protocol, mechanism, user)
    delivered, problems = produce_confluent(bootstrap, topic, values, config)
    assert problems == [] and None not in delivered
    rows = read_confluent(bootstrap, topic, PARTITIONS, len(values), config=config)
    assert sorted(r.value for r in rows) == sorted(values)
    assert {(r.partition, r.offset) for r in rows} == set(delivered)


@pytest.mark.parametrize("protocol,mechanism", [
    ("SSL", None), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
])
def test_kafka_python_produces_and_consumes(secured, pki, protocol, mechanism):
    from kafka import KafkaProducer as KpProducer

    topic = new_topic(secured.bootstrap_servers_of("PLAINTEXT"), PARTITIONS)
    config: dict = {"security_protocol": protocol}
    if "SSL" in protocol:
        config.update(ssl_cafile=str(pki.ca), ssl_check_hostname=True)
    if mechanism:
        config.update(sasl_mechanism=mechanism, sasl_plain_username=ALICE[0],
                      sasl_plain_password=ALICE[1])
    bootstrap = secured.bootstrap_servers_of(protocol)
    producer = KpProducer(bootstrap_servers=bootstrap, **config)
    try:
        futures = [producer.send(topic, b"kp-%d" % i) for i in range(100)]
        producer.flush(timeout=60)
        metas = [f.get(timeout=10) for f in futures]
    finally:
        producer.close(timeout=10)
    rows = read_kafka_python(bootstrap, topic, PARTITIONS, 100, config=config)
    assert sorted(r.value for r in rows) == sorted(b"kp-%d" % i for i in range(100))
    assert {(r.partition, r.offset) for r in rows} == {(m.partition, m.offset) for m in metas}


# -- our producer, read back by confluent-kafka over TLS ------------------------------------------


@pytest.mark.parametrize("protocol,mechanism", [
    ("SSL", None), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "SCRAM-SHA-256"),
    ("SASL_SSL", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("SASL_PLAINTEXT", "PLAIN"),
])
def test_our_producer_read_back_by_confluent(secured, pki, protocol, mechanism):
    topic = new_topic(secured.bootstrap_servers_of("PLAINTEXT"), PARTITIONS)
    metas = produce_ours(ours(secured, pki, protocol, mechanism), topic, 500)
    bootstrap, config = librdkafka(secured, pki, protocol, mechanism)  # the same credentials
    rows = read_confluent(bootstrap, topic, PARTITIONS, 500, config=config)
    assert sorted(r.value for r in rows) == sorted(b"ours-%d" % i for i in range(500))
    assert {(r.partition, r.offset) for r in rows} == {(m.partition, m.offset) for m in metas}


# -- bad cases -----------------------------------------------------------------------------------


@pytest.mark.parametrize("user", [("alice", "wrong"), ("mallory", "alice-secret")])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_wrong_password_or_unknown_user_is_a_typed_error(secured, pki, mechanism, user, caplog):
    failed = stat(secured, "authentication_failed")
    topic = new_topic(secured.bootstrap_servers_of("PLAINTEXT"), PARTITIONS)
    config = ours(secured, pki, "SASL_SSL", mechanism, user, **{"max.block.ms": 60000})
    with caplog.at_level(logging.DEBUG, logger="kafkacore"), KafkaProducer(config) as producer:
        # send() waits for metadata, which the refusal ends: each send raises the typed
        # error (Java's producer throws it from send() too), none is accepted and then lost.
        for i in range(3):
            with pytest.raises(errors.SaslAuthenticationFailedError) as raised:
                producer.send(topic, value=b"never-%d" % i).result(timeout=30)
            message = str(raised.value)
            assert "invalid credentials" in message and user[1] not in message
    assert stat(secured, "authentication_failed") > failed
    # Neither the broker's log nor the client's quotes the password.
    assert not [r for r in caplog.records if user[1] in r.getMessage()]
    assert any("failed authentication with 127.0.0.1" in r.getMessage()
               for r in caplog.records if r.name.startswith("kafkacore.broker"))
    # The broker still serves everyone else.
    assert len(produce_ours(ours(secured, pki, "SASL_SSL", "SCRAM-SHA-512"), topic, 3)) == 3


# SASL's logic, pure Python on every interpreter: py312 only (TESTING.md, Tiers).
@pytest.mark.pure_python
def test_wrong_password_with_confluent_and_kafka_python(secured, pki, caplog):
    from kafka import KafkaProducer as KpProducer
    from kafka.errors import KafkaError

    topic = new_topic(secured.bootstrap_servers_of("PLAINTEXT"), PARTITIONS)
    bootstrap, config = librdkafka(secured, pki, "SASL_SSL", "SCRAM-SHA-512", ("alice", "nope"))
    delivered, problems = produce_confluent(bootstrap, topic, [b"x"], config, timeout_s=30)
    assert delivered == [None]
    assert any("Authentication failed" in p and "invalid credentials" in p for p in problems), \
        problems
    # kafka-python reads the refusal as its SaslAuthenticationFailedError (in its log) and its
    # constructor gives up when max_block_ms is over: it read the answer before the close
    # (connection.failed.authentication.delay.ms).
    with caplog.at_level(logging.WARNING, logger="kafka"), pytest.raises(KafkaError):
        KpProducer(bootstrap_servers=bootstrap, security_protocol="SASL_SSL",
                   ssl_cafile=str(pki.ca), sasl_mechanism="SCRAM-SHA-512",
                   sasl_plain_username="alice", sasl_plain_password="nope", max_block_ms=3000,
                   bootstrap_timeout_ms=3000)
    assert any("SaslAuthenticationFailedError" in r.getMessage() and "invalid credentials"
               in r.getMessage() for r in caplog.records)
    assert len(produce_ours(ours(secured, pki, "SASL_SSL", "PLAIN"), topic, 2)) == 2


def test_a_mechanism_the_broker_does_not_enable(secured, pki):
    config = ours(secured, pki, "SASL_SSL", "OAUTHBEARER",
                  **{"sasl.oauthbearer.token.provider": lambda _: "token"})
    with pytest.raises(errors.UnsupportedSaslMechanismError, match="SCRAM-SHA-512"):
        produce_ours(config, new_topic(secured.bootstrap_servers_of("PLAINTEXT"), PARTITIONS), 1)


def connect_raw(broker, listener: str, context: ssl.SSLContext | None = None,
                timeout_s: float = 10.0) -> socket.socket:
    host, port = broker.advertised_address(listener)
    s = socket.create_connection((host, port), timeout=timeout_s)
    if context is not None:
        s = context.wrap_socket(s, server_hostname=host)
    s.settimeout(timeout_s)
    return s


def client_context(pki, *, certificate: bool = False) -> ssl.SSLContext:
    # Not create_default_context(): from Python 3.13 it adds VERIFY_X509_STRICT, which the
    # tests' minimal certificates (no key identifiers) do not meet; clients do not set it.
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=str(pki.ca))
    if certificate:
        ctx.load_cert_chain(str(pki.client_cert), str(pki.client_key))
    return ctx


def sasl_request(s: socket.socket, api_key: int, version: int, body: dict, correlation_id=7):
    payload = b"".join(codec.encode_request(api_key, version, correlation_id, "raw", body))
    s.sendall(len(payload).to_bytes(4, "big") + payload)
    return codec.decode_response(api_key, version, recv_frame(s))[1]


def plain_login(s: socket.socket, user=ALICE, version: int = 1) -> dict:
    assert sasl_request(s, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
    token = b"\0" + user[0].encode() + b"\0" + user[1].encode()
    return sasl_request(s, ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token})


def metadata_frame(correlation_id: int = 9) -> bytes:
    payload = b"".join(codec.encode_request(ApiKey.METADATA, 1, correlation_id, "raw",
                                            {"topics": []}))
    return len(payload).to_bytes(4, "big") + payload


def test_only_api_versions_and_sasl_before_authentication(secured):
    before = stat(secured, "unauthenticated_requests")
    s = connect_raw(secured, "SASL_PLAINTEXT")
    s.sendall(api_versions_frame(1))
    _, body = codec.decode_response(ApiKey.API_VERSIONS, 0, recv_frame(s))
    assert {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE} <= {
        k["api_key"] for k in body["api_keys"]}
    s.sendall(metadata_frame())  # not yet authenticated: Kafka closes the connection
    assert closed_by_peer(s)
    assert stat(secured, "unauthenticated_requests") == before + 1
    s = connect_raw(secured, "SASL_PLAINTEXT")
    assert plain_login(s)["error_code"] == 0
    s.sendall(metadata_frame())
    _, meta = codec.decode_response(ApiKey.METADATA, 1, recv_frame(s))
    assert [(b["host"], b["port"]) for b in meta["brokers"]] == [
        secured.advertised_address("SASL_PLAINTEXT")]


def test_jaas_users_belong_to_their_listener_and_mechanism(secured, pki):
    # bob is a PLAIN user of the SASL_SSL listener only (its listener.name...jaas.config).
    assert plain_login(connect_raw(secured, "SASL_SSL", client_context(pki)), BOB)[
        "error_code"] == 0
    answer = plain_login(connect_raw(secured, "SASL_PLAINTEXT"), BOB)
    assert answer["error_code"] == errors.SaslAuthenticationFailedError.errno
    with pytest.raises(errors.SaslAuthenticationFailedError):
        produce_ours(ours(secured, pki, "SASL_SSL", "SCRAM-SHA-512", BOB), new_topic(secured.bootstrap_servers_of("PLAINTEXT"), PARTITIONS), 1)


def test_large_frames_before_authentication_are_refused(secured):
    invalid = stat(secured, "invalid_requests")
    s = connect_raw(secured, "SASL_PLAINTEXT")
    s.sendall((524288 + 1).to_bytes(4, "big"))  # sasl.server.max.receive.size + 1
    assert closed_by_peer(s)
    assert stat(secured, "invalid_requests") == invalid + 1
    s = connect_raw(secured, "SASL_PLAINTEXT")  # once authenticated, the usual limit
    assert plain_login(s)["error_code"] == 0
    names = [{"name": "!" * 200 + str(i)} for i in range(3000)]  # invalid: never created
    payload = b"".join(codec.encode_request(ApiKey.METADATA, 1, 9, "raw", {"topics": names}))
    assert len(payload) > 524288
    s.sendall(len(payload).to_bytes(4, "big") + payload)
    assert codec.decode_response(ApiKey.METADATA, 1, recv_frame(s))[0] == 9


def test_failed_authentication_is_answered_then_closed(secured):
    s = connect_raw(secured, "SASL_PLAINTEXT")
    answer = plain_login(s, ("alice", "wrong"))
    assert answer["error_code"] == errors.SaslAuthenticationFailedError.errno
    assert "invalid credentials" in answer["error_message"]
    assert closed_by_peer(s)
    s = connect_raw(secured, "SASL_PLAINTEXT")  # garbage in place of a token: the same answer
    assert sasl_request(s, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})[
        "error_code"] == 0
    answer = sasl_request(s, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\xff\x00garbage"})
    assert answer["error_code"] == errors.SaslAuthenticationFailedError.errno
    assert closed_by_peer(s)


# SASL's logic, pure Python on every interpreter: py312 only (TESTING.md, Tiers).
@pytest.mark.pure_python
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
       tokens=st.lists(st.binary(max_size=200) | st.text(max_size=80).map(str.encode),
                       min_size=1, max_size=3))
def test_fuzz_sasl_tokens_are_refused_and_never_hurt_the_broker(secured, mechanism, tokens):
    s = connect_raw(secured, "SASL_PLAINTEXT")
    assert sasl_request(s, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})["error_code"] == 0
    for token in tokens:
        try:
            answer = sasl_request(s, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": token})
        except (ConnectionError, OSError):
            break  # refused and closed before this token
        if answer["error_code"]:
            assert answer["error_code"] == errors.SaslAuthenticationFailedError.errno
            assert closed_by_peer(s)
            break
    s.close()
    assert plain_login(connect_raw(secured, "SASL_PLAINTEXT"))["error_code"] == 0


def test_plaintext_and_garbage_to_a_tls_port_do_not_hurt_the_broker(secured, pki):
    failed = stat(secured, "ssl_handshake_failed")
    plain = connect_raw(secured, "SSL")
    plain.sendall(api_versions_frame(1))  # a PLAINTEXT client: its bytes are no ClientHello
    assert closed_by_peer(plain)
    garbage = connect_raw(secured, "SASL_SSL")
    garbage.sendall(os.urandom(3000))
    assert closed_by_peer(garbage)
    # Clients stuck half-way through their ClientHello (on both processors) do not stop the
    # processors that own them: other clients still complete handshakes and produce.
    stuck = [connect_raw(secured, "SSL") for _ in range(4)]
    for s in stuck:
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    wait_until(lambda: stat(secured, "ssl_handshake_failed") >= failed + 2,
               what="both bad handshakes counted")
    metas = produce_ours(ours(secured, pki, "SSL"), new_topic(secured.bootstrap_servers_of("PLAINTEXT"), PARTITIONS), 20)
    assert len(metas) == 20
    for s in stuck:
        s.close()


@pytest.mark.parametrize(
    ("case", "words"),
    [("untrusted", "not trusted"), ("host", "host name mismatch"), ("expired", "expired")],
)
def test_certificate_problems_name_the_cause(tmp_path, case, words):
    served = make_pki(tmp_path / "served",
                      hosts=("other.example",) if case == "host" else ("localhost", "127.0.0.1"),
                      expired=case == "expired")
    trusted = make_pki(tmp_path / "other").ca if case == "untrusted" else served.ca
    with Broker(broker_config(served, listeners="SSL://127.0.0.1:0")) as broker:
        config = {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SSL",
                  "ssl.ca.location": str(trusted), "max.block.ms": 60000}
        with pytest.raises(SslAuthenticationError, match=words):
            produce_ours(config, "t", 1)
        # Refused by the client, counted by the broker, which still serves a good client.
        wait_until(lambda: stat(broker, "ssl_handshake_failed") >= 1, what="refusal counted")
        good = {**config, "ssl.ca.location": str(served.ca),
                "ssl.endpoint.identification.algorithm": ""}
        if case != "expired":
            assert len(produce_ours(good, "t", 3)) == 3


def test_plaintext_client_to_a_tls_port_is_told_the_protocol(secured, pki):
    # The broker reads our ApiVersions as a broken ClientHello and hangs up.  The client then
    # tries a TLS handshake, which the listener answers: send() fails with the protocol to set,
    # long before max.block.ms (docs/producer/security.rst, "A wrong turn").
    failed = stat(secured, "ssl_handshake_failed")
    config = {"bootstrap.servers": secured.bootstrap_servers_of("SSL"), "max.block.ms": 60000}
    with KafkaProducer(config) as producer, pytest.raises(
            SecurityProtocolMismatchError, match="wants security.protocol SSL"):
        producer.send("t", b"x")
    assert stat(secured, "ssl_handshake_failed") > failed


def test_pipelined_requests_in_one_tls_record_are_all_answered(secured, pki):
    # Three requests in one write: OpenSSL decrypts them together, so the second and third sit
    # inside the SSL object, where select() cannot see them, while the first is handled.
    s = connect_raw(secured, "SSL", client_context(pki))
    s.sendall(b"".join(api_versions_frame(i) for i in (1, 2, 3)))
    answered = [codec.decode_response(ApiKey.API_VERSIONS, 0, recv_frame(s))[0] for _ in range(3)]
    assert answered == [1, 2, 3]


def test_tls_client_to_the_plaintext_port_names_the_cause(secured, pki):
    config = ours(secured, pki, "SSL", **{"bootstrap.servers":
                                          secured.bootstrap_servers_of("PLAINTEXT")})
    with pytest.raises(SslAuthenticationError, match="PLAINTEXT port"):
        produce_ours(config, new_topic(secured.bootstrap_servers_of("PLAINTEXT"), PARTITIONS), 1)


def test_sasl_on_a_listener_without_sasl_is_illegal_state(secured):
    s = connect_raw(secured, "PLAINTEXT")
    answer = sasl_request(s, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert answer["error_code"] == errors.IllegalSaslStateError.errno


# -- mutual TLS ----------------------------------------------------------------------------------


@pytest.mark.parametrize("client_auth", ["required", "requested"])
def test_mutual_tls(pki, client_auth):
    config = broker_config(pki, **{"listeners": "SSL://127.0.0.1:0", "ssl.client.auth": client_auth,
                                   "ssl.truststore.location": str(pki.ca)})
    with Broker(config) as broker:
        topic = f"mtls-{client_auth}"
        with_cert = ours(broker, pki, "SSL", **{"ssl.keystore.location": str(pki.client_cert),
                                                "ssl.key.location": str(pki.client_key)})
        assert len(produce_ours(with_cert, topic, 10)) == 10
        bootstrap, rd = librdkafka(broker, pki, "SSL")
        rd.update({"ssl.certificate.location": str(pki.client_cert),
                   "ssl.key.location": str(pki.client_key)})
        assert len(read_confluent(bootstrap, topic, PARTITIONS, 10, config=rd)) == 10
        s = connect_raw(broker, "SSL", client_context(pki))  # no client certificate
        if client_auth == "required":
            # TLS 1.3: the client finishes first; the broker's refusal arrives as an alert.
            with pytest.raises((ssl.SSLError, ConnectionError)):
                s.sendall(api_versions_frame(1))
                recv_frame(s)
            wait_until(lambda: stat(broker, "ssl_handshake_failed") >= 1,
                       what="the refused handshake counted")
        else:
            s.sendall(api_versions_frame(1))
            assert codec.decode_response(ApiKey.API_VERSIONS, 0, recv_frame(s))[1][
                "error_code"] == 0


# -- re-authentication (KIP-368) -----------------------------------------------------------------


@pytest.fixture(scope="module")
def reauth_broker(pki):
    config = broker_config(pki, **{"listeners": "SASL_SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
                                   "connections.max.reauth.ms": 1500})
    with Broker(config) as broker:
        yield broker


@pytest.fixture(scope="module")
def long_reauth_broker(pki):
    """Sessions of 4 s: a client re-authenticates at 85-95% of its session, so a loaded machine
    (every test on two workers) still has 200 ms or more to spare."""
    config = broker_config(pki, **{"listeners": "SASL_SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
                                   "connections.max.reauth.ms": 4000})
    with Broker(config) as broker:
        yield broker


# SASL's logic, pure Python on every interpreter: py312 only (TESTING.md, Tiers).
@pytest.mark.pure_python
@pytest.mark.timeout(120)
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_our_producer_keeps_producing_across_reauthentications(long_reauth_broker, pki, mechanism):
    topic = new_topic(long_reauth_broker.bootstrap_servers_of("PLAINTEXT"), PARTITIONS)
    start = stat(long_reauth_broker, "reauthentications")
    expired = stat(long_reauth_broker, "expired_sessions_closed")
    config = ours(long_reauth_broker, pki, "SASL_SSL", mechanism, **{"linger.ms": 2})
    futures = []
    with KafkaProducer(config) as producer:
        deadline = time.monotonic() + 60
        # Produce, a little at a time, until the broker has seen two re-authentications.
        while stat(long_reauth_broker, "reauthentications") < start + 2:
            assert time.monotonic() < deadline, "no two re-authentications within 60 s"
            futures += [producer.send(topic, value=b"r-%d" % i)
                        for i in range(len(futures), len(futures) + 20)]
            producer.flush(timeout=30)
            time.sleep(0.05)
        producer.flush(timeout=30)
    metas = [f.result(timeout=10) for f in futures]
    assert stat(long_reauth_broker, "expired_sessions_closed") == expired
    bootstrap, rd = librdkafka(long_reauth_broker, pki, "SASL_SSL", "SCRAM-SHA-512")
    rows = read_confluent(bootstrap, topic, PARTITIONS, len(futures), config=rd)
    assert sorted(r.value for r in rows) == sorted(b"r-%d" % i for i in range(len(futures)))
    assert {(r.partition, r.offset) for r in rows} == {(m.partition, m.offset) for m in metas}


# SASL's logic, pure Python on every interpreter: py312 only (TESTING.md, Tiers).
@pytest.mark.pure_python
@pytest.mark.timeout(120)
def test_confluent_and_kafka_python_reauthenticate_with_our_broker(reauth_broker, pki):
    from kafka import KafkaProducer as KpProducer

    topic = new_topic(reauth_broker.bootstrap_servers_of("PLAINTEXT"), PARTITIONS)
    start = stat(reauth_broker, "reauthentications")
    expired = stat(reauth_broker, "expired_sessions_closed")
    bootstrap, config = librdkafka(reauth_broker, pki, "SASL_SSL", "SCRAM-SHA-512")
    values = [b"rd-%d" % i for i in range(80)]
    # Over 4 s, sessions of 1.5 s: librdkafka re-authenticates (KIP-368) on its connections.
    delivered, problems = produce_confluent(bootstrap, topic, values, config, spread_s=4.0)
    assert problems == [] and None not in delivered
    after_confluent = stat(reauth_broker, "reauthentications")
    assert after_confluent > start
    producer = KpProducer(bootstrap_servers=bootstrap, security_protocol="SASL_SSL",
                          ssl_cafile=str(pki.ca), sasl_mechanism="SCRAM-SHA-512",
                          sasl_plain_username=ALICE[0], sasl_plain_password=ALICE[1])
    try:
        deadline = time.monotonic() + 60
        sent = 0
        while stat(reauth_broker, "reauthentications") <= after_confluent:
            assert time.monotonic() < deadline, "kafka-python did not re-authenticate in 60 s"
            producer.send(topic, b"kp-%d" % sent).get(timeout=30)
            sent += 1
            time.sleep(0.05)
    finally:
        producer.close(timeout=10)
    assert stat(reauth_broker, "expired_sessions_closed") == expired  # all in time
    rows = read_confluent(bootstrap, topic, PARTITIONS, len(values) + sent, config=config)
    assert len(rows) == len(values) + sent


def test_a_client_that_does_not_reauthenticate_is_disconnected(reauth_broker, pki):
    closed = stat(reauth_broker, "expired_sessions_closed")
    s = connect_raw(reauth_broker, "SASL_SSL", client_context(pki))
    answered_at = time.monotonic()
    answer = plain_login(s)
    assert answer["error_code"] == 0 and answer["session_lifetime_ms"] == 1500
    s.sendall(metadata_frame())  # within the session: served
    assert codec.decode_response(ApiKey.METADATA, 1, recv_frame(s))[0] == 9
    wait_until(lambda: time.monotonic() > answered_at + 1.6, what="the session's end")
    s.sendall(metadata_frame(10))  # after it, without re-authenticating: closed
    assert closed_by_peer(s)
    assert stat(reauth_broker, "expired_sessions_closed") == closed + 1


def test_reauthentication_keeps_the_principal(reauth_broker, pki):
    s = connect_raw(reauth_broker, "SASL_SSL", client_context(pki))
    assert plain_login(s)["error_code"] == 0
    assert plain_login(s)["error_code"] == 0  # the same user again: a re-authentication
    answer = plain_login(s, BOB)  # another user on the same connection: refused
    assert answer["error_code"] == errors.SaslAuthenticationFailedError.errno
    assert "principal" in answer["error_message"]
    assert closed_by_peer(s)


def test_sasl_authenticate_v0_has_no_session_lifetime(reauth_broker, pki):
    s = connect_raw(reauth_broker, "SASL_SSL", client_context(pki))
    answer = plain_login(s, version=0)
    assert answer["error_code"] == 0 and "session_lifetime_ms" not in answer


# -- configuration -------------------------------------------------------------------------------


def test_configuration_errors_name_the_setting_and_hide_secrets(pki):
    with pytest.raises(errors.ConfigError, match="keystore"):
        Broker({"listeners": "SSL://127.0.0.1:0"})
    with pytest.raises(errors.ConfigError, match="ssl.client.auth"):
        BrokerConfig({"ssl.client.auth": "maybe"})
    with pytest.raises(errors.ConfigError, match="ssl.truststore"):
        Broker({"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.cert),
                "ssl.key.location": str(pki.key), "ssl.client.auth": "required"})
    per_listener = Broker({"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                           "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN"})
    assert per_listener.listener_security["SASL_PLAINTEXT"].mechanisms == ["PLAIN"]
    with pytest.raises(errors.ConfigError, match="sasl.enabled.mechanisms"):
        Broker({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "GSSAPI"})
    with pytest.raises(errors.ConfigError, match="entry 2") as raised:
        parse_users("alice:s3cret-pw,bob")
    assert "s3cret-pw" not in str(raised.value)
    config = BrokerConfig({"sasl.users": "alice:s3cret-pw", "ssl.key.password": "k3y-pw"})
    assert "s3cret-pw" not in repr(config.as_dict()) and "k3y-pw" not in repr(config.as_dict())
    cache = CredentialCache(config, "SASL_SSL", ["PLAIN", "SCRAM-SHA-512"])
    scram = cache.get("SCRAM-SHA-512", "alice")
    assert scram.iterations >= 4096 and len(scram.salt) >= 16
    assert b"s3cret-pw" not in scram.stored_key + scram.server_key + scram.salt
    assert "s3cret-pw" not in repr(cache.__dict__)


def test_pem_text_settings_truststore_certificates_and_enabled_protocols(pki):
    config = {
        "listeners": "SSL://127.0.0.1:0",
        "ssl.keystore.certificate.chain": pki.cert.read_text(),
        "ssl.keystore.key": pki.key.read_text(),
        "ssl.truststore.certificates": pki.ca.read_text(),
        "ssl.client.auth": "required",
        "ssl.enabled.protocols": "TLSv1.3",
    }
    with Broker(config) as broker:
        s = connect_raw(broker, "SSL", client_context(pki, certificate=True))
        assert s.version() == "TLSv1.3"
        s.sendall(api_versions_frame(1))
        assert codec.decode_response(ApiKey.API_VERSIONS, 0, recv_frame(s))[0] == 1
        old_client = client_context(pki, certificate=True)
        old_client.maximum_version = ssl.TLSVersion.TLSv1_2  # refused: TLSv1.3 only
        with pytest.raises(ssl.SSLError):
            connect_raw(broker, "SSL", old_client)
        wait_until(lambda: stat(broker, "ssl_handshake_failed") >= 1, what="refusal counted")


def test_command_line_broker_with_sasl_ssl(pki, tmp_path):
    args = [sys.executable, "-m", "kafkacore.broker", "--listeners", "SASL_SSL://127.0.0.1:0",
            "--config", f"ssl.keystore.location={pki.cert}",
            "--config", f"ssl.key.location={pki.key}",
            "--config", "sasl.users=alice:alice-secret",
            "--config", "sasl.enabled.mechanisms=SCRAM-SHA-512"]
    child = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, cwd=tmp_path,
                             env=child_env())
    try:
        line = child.stdout.readline()
        assert line.startswith("kafkacore-broker listening on "), line
        bootstrap = line.split()[-1]
        config = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
                  "ssl.ca.location": str(pki.ca), "sasl.mechanism": "SCRAM-SHA-512",
                  "sasl.username": "alice", "sasl.password": "alice-secret"}
        assert len(produce_ours(config, "cli-topic", 5)) == 5
        plain = {**config, "sasl.mechanism": "PLAIN"}  # not in sasl.enabled.mechanisms
        with pytest.raises(errors.UnsupportedSaslMechanismError, match="SCRAM-SHA-512"):
            produce_ours(plain, "cli-topic", 1)
    finally:
        child.terminate()
        child.wait(timeout=30)
