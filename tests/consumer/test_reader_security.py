"""PartitionReader over SASL: the producer's security settings and its NetworkClient, reused
as they are; a wrong password is a typed error at the first call, not a hang."""

from __future__ import annotations

import pytest

from kafkacore import KafkaProducer
from kafkacore.broker.server.broker_server import Broker
from kafkacore.consumer import OffsetSpec, PartitionReader
from kafkacore.errors import AuthenticationError, KafkaError

ALICE = ("alice", "alice-secret")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with Broker({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
                 "sasl.users": f"{ALICE[0]}:{ALICE[1]}", "num.network.threads": 1,
                 "log.dirs": str(tmp_path_factory.mktemp("sasl-read"))}) as b:
        yield b


def sasl(password: str) -> dict:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": ALICE[0], "sasl.password": password}


def test_read_over_sasl(broker):
    bootstrap = broker.bootstrap_servers
    # The broker creates the topic on the producer's first Metadata request (one partition).
    with KafkaProducer({"bootstrap.servers": bootstrap, **sasl(ALICE[1])}) as producer:
        for i in range(20):
            producer.send("secure", value=b"%d" % i, partition=0)
        producer.flush()
    with PartitionReader({"bootstrap.servers": bootstrap, **sasl(ALICE[1])}) as reader:
        assert reader.list_offsets([("secure", 0)], OffsetSpec.LATEST) == {("secure", 0): 20}
        assert reader.read_range("secure", 0, 0, 20).column("value").to_pylist() == [
            b"%d" % i for i in range(20)]


def test_wrong_password_is_a_typed_error(broker):
    with PartitionReader({"bootstrap.servers": broker.bootstrap_servers, **sasl("wrong"),
                          "default.api.timeout.ms": 20000}) as reader:
        with pytest.raises(KafkaError) as caught:
            reader.partitions_for(["secure"])
    assert isinstance(caught.value, AuthenticationError), caught.value
    assert "wrong" not in str(caught.value)
