"""TLS and SASL on the producer's connections.

Against tansu (a broker nobody here wrote): ``--authentication`` makes it require SASL, and it
checks SCRAM users (``tansu user create`` makes SCRAM-SHA-256/512 users, but in tansu 0.6.0 that
command must itself authenticate to a broker that requires it, so no user can be created there:
against tansu we test the refusals).  tansu 0.6.0's ``--cert``/``--key`` cannot be given together
(its argument parser rejects the pair) and ``--cert`` alone does not turn TLS on, so TLS and the
successful SASL exchanges are tested against a scripted peer on our own codec
(``FakeBroker`` from tests/support) behind a real TLS socket (Python's ``ssl``, server side),
with the broker's half of SCRAM played by :class:`kafkacore.broker.security.scram_sasl_server.ScramSaslServer`.
"""

from __future__ import annotations

import logging
import ssl
import subprocess
import time

import pytest
from certs import make_pki
from support.scripted_broker import FakeBroker, api_versions_answer
from test_sender_faults import metadata_answer, produce_answer

from kafkacore import KafkaProducer
from kafkacore.broker.security.scram_sasl_server import ScramSaslServer
from kafkacore.config import ProducerConfig
from kafkacore.core import iter_batches
from kafkacore.errors import (
    AuthenticationError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from kafkacore.network.errors import SecurityProtocolMismatchError, SslAuthenticationError
from kafkacore.network.sasl import (
    parse_jaas_config,
    scram_keys,
    scram_salted_password,
)
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker, resolve_broker_binary

TOPIC = "scripted"  # the topic metadata_answer names
PASSWORD = "s3cr3t-Pa55word"
SASL_VERSIONS = {ApiKey.SASL_HANDSHAKE: 1, ApiKey.SASL_AUTHENTICATE: 2}


class SecureBroker(FakeBroker):
    """FakeBroker behind TLS (if ``tls``) that requires SASL (if ``mechanisms``)."""

    def __init__(self, *, tls=None, mechanisms=(), users=None, lifetime_ms=0):
        self.tls = tls
        self.mechanisms = list(mechanisms)
        self.users = users or {}
        self.lifetime_ms = lifetime_ms
        self.values = []
        self.authentications = []
        self._exchange = None
        super().__init__(self.answer)

    def _serve(self, conn):
        if self.tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(self.tls.cert, self.tls.key)
            conn.settimeout(5)
            try:
                conn = ctx.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError):
                conn.close()
                return
        super()._serve(conn)

    def _scram_lookup(self, name):
        def lookup(user):
            password = self.users.get(user)
            if password is None:
                return None
            hash_name = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[name]
            salt = b"salt-of-" + user.encode()
            salted = scram_salted_password(hash_name, password, salt, 4096)
            _, stored, server = scram_keys(hash_name, salted)
            return salt, 4096, stored, server

        return lookup

    def answer(self, header, body):
        key = header["request_api_key"]
        if key == ApiKey.API_VERSIONS:
            return api_versions_answer(SASL_VERSIONS)
        if key == ApiKey.SASL_HANDSHAKE:
            mech = body["mechanism"]
            if mech not in self.mechanisms:
                return {"error_code": 33, "mechanisms": self.mechanisms}
            self._exchange = (
                mech,
                ScramSaslServer(mech, self._scram_lookup(mech)) if mech.startswith("SCRAM") else None,
            )
            return {"error_code": 0, "mechanisms": self.mechanisms}
        if key == ApiKey.SASL_AUTHENTICATE:
            mech, server = self._exchange
            token = body["auth_bytes"]
            fail = {"error_code": 58, "error_message": "Authentication failed", "auth_bytes": b""}
            if mech == "PLAIN":
                _, user, password = token.decode().split("\0")
                if self.users.get(user) != password:
                    return fail
                self.authentications.append(user)
                reply = b""
            elif mech == "OAUTHBEARER":
                self.authentications.append(token.decode().split("Bearer ")[1].rstrip("\x01"))
                reply = b""
            else:
                try:
                    reply = server.evaluate_response(token)
                except SaslAuthenticationFailedError:
                    return fail
                if server.complete:
                    self.authentications.append(server.username)
            return {
                "error_code": 0,
                "error_message": None,
                "auth_bytes": reply,
                "session_lifetime_ms": self.lifetime_ms,
            }
        if key == ApiKey.METADATA:
            return metadata_answer({1: self}, {0: 1})
        if key == ApiKey.INIT_PRODUCER_ID:
            return {"throttle_time_ms": 0, "error_code": 0, "producer_id": 7, "producer_epoch": 0}
        if key == ApiKey.PRODUCE:
            part = body["topic_data"][0]["partition_data"][0]
            [batch] = iter_batches(bytes(part["records"]))
            base = len(self.values)
            self.values.extend(r.value for r in batch.records)
            return produce_answer([(0, 0, base)])
        return None


@pytest.fixture
def pki(tmp_path):
    return make_pki(tmp_path / "good")


def produce(broker, n=50, **settings):
    settings.setdefault("max_block_ms", 20000)
    with KafkaProducer(bootstrap_servers=broker.bootstrap, **settings) as producer:
        futures = [producer.send(TOPIC, b"v%03d" % i) for i in range(n)]
        producer.flush(timeout=30)
    return [f.get(timeout=0) for f in futures]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_sasl_produce(pki, mechanism, protocol):
    tls = pki if protocol == "SASL_SSL" else None
    broker = SecureBroker(tls=tls, mechanisms=[mechanism], users={"alice": PASSWORD})
    try:
        extra = {"ssl_truststore_location": str(pki.ca)} if tls else {}
        produce(
            broker,
            security_protocol=protocol,
            sasl_mechanism=mechanism,
            sasl_jaas_config=(
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="alice" password="{PASSWORD}";'
            ),
            **extra,
        )
    finally:
        broker.close()
    assert broker.values == [b"v%03d" % i for i in range(50)]
    assert set(broker.authentications) == {"alice"}


def test_ssl_produce_with_librdkafka_names(pki):
    broker = SecureBroker(tls=pki)
    try:
        config = {
            "bootstrap.servers": broker.bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca),  # librdkafka's name for ssl.truststore.location
        }
        with KafkaProducer(config) as producer:
            futures = [producer.send(TOPIC, b"v%03d" % i) for i in range(20)]
            producer.flush(timeout=30)
        for f in futures:
            f.get(timeout=0)
    finally:
        broker.close()
    assert broker.values == [b"v%03d" % i for i in range(20)]


def test_oauthbearer_token_callback_and_reauthentication(pki):
    tokens = iter(f"token-{i}" for i in range(1000))
    broker = SecureBroker(tls=pki, mechanisms=["OAUTHBEARER"], lifetime_ms=300)
    try:
        with KafkaProducer(
            bootstrap_servers=broker.bootstrap,
            security_protocol="SASL_SSL",
            ssl_truststore_location=str(pki.ca),
            sasl_mechanism="OAUTHBEARER",
            sasl_oauthbearer_token_provider=lambda config: (next(tokens), time.time() + 1),
        ) as producer:
            producer.send(TOPIC, b"first").get(timeout=20)
            deadline = time.monotonic() + 20
            # KIP-368: the broker gave a 300 ms session; the client authenticates again.
            while len(broker.authentications) < 4 and time.monotonic() < deadline:
                producer.send(TOPIC, b"more").get(timeout=20)
                time.sleep(0.05)
    finally:
        broker.close()
    assert len(broker.authentications) >= 4
    assert len(set(broker.authentications)) == len(broker.authentications)  # fresh tokens


def bounded_failure(broker, error_type, *, n=20, **settings):
    """Produce expecting ``error_type``: raised within seconds, and every future fails with it."""
    caught = []
    start = time.monotonic()
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap, max_block_ms=60000, **settings
    ) as producer:
        futures = []
        for i in range(n):
            try:
                futures.append(producer.send(TOPIC, b"x%d" % i))
            except error_type as exc:
                caught.append(exc)
        for f in futures:
            with pytest.raises(error_type) as info:
                f.get(timeout=30)
            caught.append(info.value)
    # Far below max.block.ms (60 s) and delivery.timeout.ms (120 s): not retried until then.
    assert time.monotonic() - start < 30
    assert len(caught) == n
    return caught[0]


SASL = dict(
    security_protocol="SASL_PLAINTEXT",
    sasl_mechanism="SCRAM-SHA-512",
    sasl_username="alice",
)


def test_wrong_password_is_fatal_and_secret_free(caplog):
    broker = SecureBroker(mechanisms=["SCRAM-SHA-512"], users={"alice": PASSWORD})
    caplog.set_level(logging.DEBUG)
    try:
        exc = bounded_failure(
            broker, SaslAuthenticationFailedError, sasl_password="wrong-" + PASSWORD, **SASL
        )
    finally:
        broker.close()
    assert "wrong-" + PASSWORD not in str(exc)
    assert PASSWORD not in caplog.text


def test_wrong_mechanism():
    broker = SecureBroker(mechanisms=["SCRAM-SHA-256"], users={"alice": PASSWORD})
    try:
        exc = bounded_failure(broker, UnsupportedSaslMechanismError, sasl_password=PASSWORD, **SASL)
    finally:
        broker.close()
    assert "SCRAM-SHA-256" in str(exc)


@pytest.mark.parametrize(
    ("case", "words"),
    [("untrusted", "not trusted"), ("host", "host name mismatch"), ("expired", "expired")],
)
def test_certificate_problems_name_the_cause(tmp_path, case, words):
    served = make_pki(
        tmp_path / "served",
        hosts=("other.example",) if case == "host" else ("localhost", "127.0.0.1"),
        expired=case == "expired",
    )
    trusted = make_pki(tmp_path / "other").ca if case == "untrusted" else served.ca
    broker = SecureBroker(tls=served)
    try:
        exc = bounded_failure(
            broker,
            SslAuthenticationError,
            security_protocol="SSL",
            ssl_truststore_location=str(trusted),
        )
    finally:
        broker.close()
    assert words in str(exc)
    assert isinstance(exc, AuthenticationError)


def test_no_host_check_when_the_algorithm_is_empty(tmp_path):
    served = make_pki(tmp_path / "served", hosts=("other.example",))
    broker = SecureBroker(tls=served)
    try:
        produce(
            broker,
            n=5,
            security_protocol="SSL",
            ssl_truststore_location=str(served.ca),
            ssl_endpoint_identification_algorithm="",
        )
    finally:
        broker.close()
    assert len(broker.values) == 5


@pytest.fixture(scope="module")
def tansu_sasl():
    """tansu with --authentication (SASL required)."""
    binary = resolve_broker_binary()
    port = LocalBroker().port
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--authentication",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        from kafkacore.testing.localbroker import _answers_api_versions

        deadline = time.monotonic() + 20
        while not _answers_api_versions("127.0.0.1", port):
            assert time.monotonic() < deadline and proc.poll() is None, "tansu did not start"
            time.sleep(0.02)

        class Address:
            bootstrap = f"127.0.0.1:{port}"

        yield Address
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_tansu_refuses_an_unknown_user(tansu_sasl, mechanism):
    exc = bounded_failure(
        tansu_sasl,
        AuthenticationError,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_username="nobody",
        sasl_password=PASSWORD,
    )
    assert PASSWORD not in str(exc)


def test_tls_client_to_a_plaintext_port(broker, pki):
    exc = bounded_failure(
        broker,
        SslAuthenticationError,
        security_protocol="SSL",
        ssl_truststore_location=str(pki.ca),
    )
    assert "TLS" in str(exc)


def test_plaintext_client_to_a_tls_port_says_the_listener_wants_ssl(pki):
    # A TLS server reads our ApiVersions as a broken ClientHello and hangs up without a byte
    # of answer, on every connection: the client calls it a TLS listener (tests/test_wrong_turn.py)
    # and send() fails with the reason, not at max.block.ms.
    broker = SecureBroker(tls=pki)
    try:
        with KafkaProducer(bootstrap_servers=broker.bootstrap, max_block_ms=60000) as producer:
            with pytest.raises(SecurityProtocolMismatchError, match="wants security.protocol SSL"):
                producer.send(TOPIC, b"x")
    finally:
        broker.close()
    assert broker.values == []


def test_secrets_stay_out_of_repr_describe_and_errors():
    cfg = ProducerConfig(
        bootstrap_servers="h:9092",
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        sasl_jaas_config=(
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="u" password="{PASSWORD}";'
        ),
        ssl_key_password=PASSWORD,
    )
    assert PASSWORD not in repr(cfg)
    assert PASSWORD not in cfg.describe()
    with pytest.raises(Exception) as info:
        ProducerConfig(bootstrap_servers="h:9092", sasl_password=12345678)
    assert "12345678" not in str(info.value)


def test_jaas_config_in_javas_form():
    module, options = parse_jaas_config(
        "org.apache.kafka.common.security.scram.ScramLoginModule required\n"
        '  username="al ice" password="p\\"w;x";'
    )
    assert module == "org.apache.kafka.common.security.scram.ScramLoginModule"
    assert options == {"username": "al ice", "password": 'p"w;x'}


def test_scram_against_rfc7677_test_vector():
    # RFC 7677 section 3: user "user", password "pencil", fixed nonces.
    from kafkacore.network.sasl import ScramMechanism

    m = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert m.initial_response() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = m.evaluate_challenge(
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert final == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert m.evaluate_challenge(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None
    assert m.complete
