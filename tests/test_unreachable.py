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
