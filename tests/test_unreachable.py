"""No broker at the address given: the user hears about it, and the timeout says why.

A loopback port nobody listens on refuses every connection at once; the tests look at what the
user sees (a WARNING on the ``kafkacore`` logger, the KafkaTimeoutError's message).
"""

from __future__ import annotations

import logging

import pytest

from kafkacore import KafkaProducer
from kafkacore.errors import KafkaTimeoutError
from kafkacore.network import client
from kafkacore.network.errors import SecurityProtocolMismatchError


def test_timeout_names_the_brokers_tried_and_why(closed_port):
    address = f"127.0.0.1:{closed_port}"
    with KafkaProducer(bootstrap_servers=address, max_block_ms=1000) as producer:
        with pytest.raises(KafkaTimeoutError) as caught:
            producer.send("nowhere", b"v")
        producer.close(0)
    message = str(caught.value)
    assert "Topic nowhere not present in metadata after 1000 ms." in message
    assert f"Brokers tried: {address} (ConnectionRefusedError" in message


def test_one_warning_when_no_bootstrap_server_is_reachable(closed_port, caplog):
    address = f"127.0.0.1:{closed_port}"
    caplog.set_level(logging.WARNING, logger="kafkacore")
    # Many refused attempts (reconnect backoff of 10 ms) within the wait, one warning for them.
    with KafkaProducer(bootstrap_servers=address, max_block_ms=1500, reconnect_backoff_ms=10,
                       reconnect_backoff_max_ms=20) as producer:
        with pytest.raises(KafkaTimeoutError):
            producer.partitions_for("nowhere")
        # white-box: the network client's failure count of the bootstrap node; nothing public
        attempts = producer._client._node_states[-1].failures
        producer.close(0)
    assert attempts > 1  # several refusals...
    warnings = [r for r in caplog.records if "no bootstrap server is reachable" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert warnings[0].levelno == logging.WARNING
    assert address in warnings[0].getMessage()
    assert client.UNREACHABLE_WARNING_INTERVAL_S >= 10  # ...one warning within the interval


def test_no_warning_and_no_report_when_the_broker_is_there(bootstrap, make_topic, caplog):
    caplog.set_level(logging.WARNING, logger="kafkacore")
    topic = make_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        producer.send(topic, b"v").get(30)
        # white-box: the report a metadata timeout would carry, read without waiting for one
        assert producer._metadata.connection_report() == ""
    assert not [r for r in caplog.records if "reachable" in r.getMessage()]


def test_a_topic_that_does_not_exist_and_a_partition_beyond_the_topic_say_so():
    """Auto-create off: sending to a missing topic, or to partition 99 of a 4-partition topic,
    ends well before max.block.ms (60 s) with what the broker said."""
    import time

    from kafkacore.admin import create_topics
    from kafkacore.testing import LocalBroker

    with LocalBroker(kind="kafkacore", config={"auto.create.topics.enable": "false"}) as broker:
        create_topics(broker.bootstrap, {"four": 4})
        with KafkaProducer(bootstrap_servers=broker.bootstrap) as producer:
            assert producer.config["max.block.ms"] == 60000
            for topic, partition, words in [
                ("missing", None, "Topic missing not present in metadata after .* ms: the "
                                  "brokers answer UNKNOWN_TOPIC_OR_PARTITION"),
                ("four", 99, r"Invalid partition given with record: 99 is not in the range "
                             r"\[0...4\)"),
            ]:
                start = time.monotonic()
                with pytest.raises(KafkaTimeoutError, match=words):
                    producer.send(topic, b"v", partition=partition)
                assert time.monotonic() - start < 30


def test_a_plaintext_client_at_our_tls_listener_hears_why(tmp_path):
    """Our broker's TLS listener drops a plaintext ApiVersions request; a TLS handshake it
    answers makes that a wrong turn: the call fails at once, naming the protocol to set."""
    from certs import make_pki

    from kafkacore.broker import Broker

    pki = make_pki(tmp_path, client_cn="client")
    config = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PEM",
              "ssl.keystore.location": str(pki.cert), "ssl.key.location": str(pki.key),
              "log.dirs": str(tmp_path / "data")}
    with Broker(config) as broker:
        address = broker.bootstrap_servers
        with KafkaProducer(bootstrap_servers=address, max_block_ms=60000) as producer:
            with pytest.raises(SecurityProtocolMismatchError) as caught:
                producer.send("t", b"v")
    message = str(caught.value)
    assert f"{address} closed our plaintext connections without a byte of answer and answers " \
           "a TLS handshake: the listener wants security.protocol SSL (or SASL_SSL)" in message


def test_a_plaintext_client_at_a_tls_server_that_sends_an_alert(tmp_path):
    """openssl s_server answers a plaintext request with TLS bytes: named for what they are."""
    import shutil
    import socket
    import subprocess
    import time

    from certs import make_pki

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    pki = make_pki(tmp_path, client_cn="client")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(["openssl", "s_server", "-accept", f"127.0.0.1:{port}", "-cert",
                               str(pki.cert), "-key", str(pki.key), "-quiet"],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "openssl s_server did not start"
                time.sleep(0.05)
        with KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}",
                           max_block_ms=60000) as producer:
            with pytest.raises(SecurityProtocolMismatchError) as caught:
                producer.send("t", b"v")
    finally:
        server.kill()
        server.wait()
    assert "the listener wants security.protocol SSL (or SASL_SSL)" in str(caught.value)


def test_tls_bytes_in_answer_to_a_plaintext_request_are_named():
    """A TLS server that answers a plaintext request with an alert record (a protocol_version
    alert, as TLS stacks send for a record they cannot read): the bytes are named, not taken
    for a frame size of 352 MB."""
    import socket
    import threading

    alert = bytes([21, 3, 3, 0, 2, 2, 70])  # type alert, TLS 1.2, length 2, fatal, 70
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def answer() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.recv(1024)
                conn.sendall(alert)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        address = f"127.0.0.1:{server.getsockname()[1]}"
        with KafkaProducer(bootstrap_servers=address, max_block_ms=60000) as producer:
            with pytest.raises(SecurityProtocolMismatchError) as caught:
                producer.send("t", b"v")
    finally:
        stop.set()
        thread.join(10)
        server.close()
    assert "answered ApiVersions with TLS bytes: the listener wants security.protocol SSL " \
           "(or SASL_SSL)" in str(caught.value)
