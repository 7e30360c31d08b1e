"""SASL/SCRAM as both sides run it, and what a secured producer's settings look like.

A SCRAM exchange (RFC 5802) proves to the broker that the client knows the password, and to the
client that the broker knows it too, without the password ever crossing the wire.  We run the
client's half (``ScramMechanism``) against the broker's half (``ScramSaslServer``) in one process and
print the four messages, then show that a producer's settings never print a secret.

Run it from the repository's root:

    python tutorials/25_tls_and_sasl.py

Needs: nothing but kafkacore (no broker: both halves run in this process).
"""

import hashlib
import os

from kafkacore.broker.security.scram_sasl_server import ScramSaslServer
from kafkacore.config import ProducerConfig
from kafkacore.network.sasl import (
    ScramMechanism,
    parse_jaas_config,
    scram_keys,
    scram_salted_password,
)


def main() -> None:
    # --- start
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="alice-secret";'
    )
    module, options = parse_jaas_config(jaas)
    print("login module:", module, "user:", options["username"])

    # What the broker stores for alice: a salt, an iteration count, StoredKey and ServerKey.
    salt, iterations = os.urandom(16), 4096
    salted = scram_salted_password("sha512", options["password"], salt, iterations)
    _, stored_key, server_key = scram_keys("sha512", salted)
    users = {"alice": (salt, iterations, stored_key, server_key)}

    client = ScramMechanism("SCRAM-SHA-512", options["username"], options["password"])
    server = ScramSaslServer("SCRAM-SHA-512", users.get)
    client_first = client.initial_response()
    server_first = server.evaluate_response(client_first)
    client_final = client.evaluate_challenge(server_first)
    assert client_final is not None
    server_final = server.evaluate_response(client_final)
    assert client.evaluate_challenge(server_final) is None
    for who, message in [
        ("client", client_first),
        ("broker", server_first),
        ("client", client_final),
        ("broker", server_final),
    ]:
        print(f"{who:>6}: {message.decode()[:90]}")
    assert client.complete and server.complete
    assert b"alice-secret" not in client_final  # only a proof travels, never the password
    print("proof checked:", hashlib.sha512(client_final).hexdigest()[:16], "...")

    # A confluent-kafka style config works as it is; secrets are hidden when printed.
    cfg = ProducerConfig(
        {
            "bootstrap.servers": "broker.example:9093",
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "SCRAM-SHA-512",  # librdkafka's name for sasl.mechanism
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
            "ssl.ca.location": "/etc/kafka/ca.pem",  # librdkafka's name for ssl.truststore.location
        }
    )
    print(cfg)
    assert "alice-secret" not in repr(cfg) and "alice-secret" not in cfg.describe()
    # --- end


if __name__ == "__main__":
    main()
