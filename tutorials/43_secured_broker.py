"""A secured cluster end to end: our broker on a SASL_SSL listener, our producer, a reader.

We make a throwaway certificate, start kafkacore's broker with ``listeners=SASL_SSL://...``,
SCRAM-SHA-512 users from ``sasl.users`` and ``connections.max.reauth.ms`` (KIP-368), produce
with kafkacore's producer, read the records back with confluent-kafka using the same settings,
and watch a wrong password fail fast with a typed error while the broker keeps serving.

The same broker from a shell::

    python -m kafkacore.broker --listeners SASL_SSL://127.0.0.1:9093 \\
        --config ssl.keystore.location=broker.pem --config sasl.users=alice:alice-secret

See docs/broker/security.rst.
"""

import datetime
import ipaddress
import pathlib
import tempfile
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kafkacore import KafkaProducer, errors
from kafkacore.broker.server.broker_server import Broker


def self_signed_pem(directory: pathlib.Path) -> pathlib.Path:
    """One PEM file: a certificate for 127.0.0.1 and localhost, then its key.  The broker
    reads both from it (ssl.keystore.location); clients trust the certificate itself."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
        .sign(key, hashes.SHA256())
    )
    pem = directory / "broker.pem"
    pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    pem.chmod(0o600)
    return pem


def main() -> None:
    directory = pathlib.Path(tempfile.mkdtemp(prefix="kafkacore-tutorial-43-"))
    pem = self_signed_pem(directory)
    # --- start
    broker_settings = {
        "listeners": "SASL_SSL://127.0.0.1:0",  # port 0: the OS picks a free one
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pem),  # certificate chain and key in one PEM file
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "sasl.users": "alice:alice-secret",  # stored salted (RFC 5802), never as given
        "connections.max.reauth.ms": 2000,  # sessions last 2 s: clients re-authenticate
        "num.partitions": 1,
    }
    client_settings = {
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(pem),  # librdkafka's name; ssl.truststore.location works too
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
    }
    with Broker(broker_settings) as broker:
        bootstrap = broker.bootstrap_servers
        print("SASL_SSL listener on", bootstrap)
        with KafkaProducer({"bootstrap.servers": bootstrap, **client_settings}) as producer:
            started = time.monotonic()
            sent = 0
            # Produce for a little longer than two sessions: the producer re-authenticates
            # on its open connections without losing a record.
            while time.monotonic() - started < 4.5:
                producer.send("secured", value=b"record-%d" % sent)
                sent += 1
                if sent % 50 == 0:
                    producer.flush(timeout=30)
                    time.sleep(0.05)
            producer.flush(timeout=30)
        assert broker.socket_server is not None  # set once the broker has started
        stats = [p.statistics() for p in broker.socket_server.processors]
        reauths = sum(s.get("reauthentications", 0) for s in stats)
        print(f"produced {sent} records; TLS handshakes: "
              f"{sum(s.get('ssl_handshakes', 0) for s in stats)}, SASL logins: "
              f"{sum(s.get('authenticated', 0) for s in stats)}, re-authentications: {reauths}")
        assert reauths >= 1
        # --- end

        # Read back with a client we did not write, with the same settings.
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "tutorial-43",
                             **client_settings})
        consumer.assign([TopicPartition("secured", 0, 0)])
        values: list[bytes | None] = []
        deadline = time.monotonic() + 60
        while len(values) < sent and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.close()
        assert values == [b"record-%d" % i for i in range(sent)]
        print(f"confluent-kafka read back all {len(values)} records, in order")

        # A wrong password: a typed error, at once, not a retry storm until max.block.ms.
        wrong = {"bootstrap.servers": bootstrap, **client_settings,
                 "sasl.password": "not-her-password", "max.block.ms": 60000}
        started = time.monotonic()
        with KafkaProducer(wrong) as producer:
            try:
                producer.send("secured", value=b"nope").result(timeout=60)
                raise AssertionError("a wrong password was accepted")
            except errors.SaslAuthenticationFailedError as exc:
                print(f"wrong password -> {type(exc).__name__} after "
                      f"{time.monotonic() - started:.1f} s: {exc}")
                assert "not-her-password" not in str(exc)


if __name__ == "__main__":
    main()
