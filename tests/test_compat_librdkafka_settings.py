"""Every librdkafka producer setting is accepted, by kafkacore.compat.confluent.Producer and by
KafkaProducer: librdkafka's names of our settings as ours, the settings with a meaning here
mapped (statistics as librdkafka's JSON, debug contexts as log levels, the partitioners), and
the rest named in one warning.  A name neither client has is a ConfigError with a
did-you-mean."""

from __future__ import annotations

import json
import logging
import time

import pytest

from kafkacore import KafkaProducer
from kafkacore.compat import confluent
from kafkacore.compat.librdkafka import PARTITIONERS
from kafkacore.config import (
    ALIASES,
    CONVERTED_ALIASES,
    LIBRDKAFKA_MAPPED,
    LIBRDKAFKA_SETTINGS,
    NO_COUNTERPART,
    NOT_NEEDED,
    SETTINGS_BY_NAME,
    ProducerConfig,
)
from kafkacore.errors import ConfigError

BASE = {"bootstrap.servers": "127.0.0.1:9092"}

#: The librdkafka settings a confluent user copies (the issue's 24), with typical values.
COPIED = {
    "debug": "broker,topic,msg",
    "statistics.interval.ms": 100,
    "stats_cb": None,  # filled in by the test
    "throttle_cb": lambda event: None,
    "error_cb": lambda err: None,
    "batch.num.messages": 1000,
    "socket.keepalive.enable": True,
    "client.rack": "rack-1",
    "enable.gapless.guarantee": False,
    "log.connection.close": False,
    "partitioner": "murmur2_random",
    "queue.buffering.max.messages": 100000,
    "delivery.report.only.error": False,
    "socket.timeout.ms": 60000,
    "socket.nagle.disable": True,
    "api.version.request": True,
    "broker.address.family": "v4",
    "topic.metadata.refresh.interval.ms": 300000,
    "queue.buffering.max.ms": 5,
    "message.timeout.ms": 30000,
    "compression.codec": "lz4",
    "request.required.acks": -1,
    "message.send.max.retries": 10,
    "sticky.partitioning.linger.ms": 10,
}

#: librdkafka's top-level statistics fields (its STATISTICS.md) a producer's document has.
TOP_LEVEL = {"name", "client_id", "type", "ts", "time", "age", "replyq", "msg_cnt", "msg_size",
             "msg_max", "msg_size_max", "tx", "tx_bytes", "rx", "rx_bytes", "txmsgs",
             "txmsg_bytes", "rxmsgs", "rxmsg_bytes", "simple_cnt", "metadata_cache_cnt",
             "brokers", "topics"}

MAPPED_VALUES = {"debug": "all", "log_level": 6, "logger": logging.getLogger("x"),
                 "statistics.interval.ms": 1000, "stats_cb": print, "throttle_cb": print,
                 "error_cb": print, "socket.keepalive.enable": "true",
                 "partitioner": "consistent_random", "compression.level": 5}


def _value(name: str):
    """A value librdkafka would take for ``name``: ours where it is one of our settings."""
    if name in MAPPED_VALUES:
        return MAPPED_VALUES[name]
    ours = ALIASES.get(name, name)
    if name in CONVERTED_ALIASES:
        return 1024
    if ours in SETTINGS_BY_NAME:
        return {"security.protocol": "PLAINTEXT", "sasl.mechanism": "PLAIN",
                "transactional.id": None, "max.in.flight.requests.per.connection": 5,
                "ssl.endpoint.identification.algorithm": "https"}.get(
                    ours, SETTINGS_BY_NAME[ours].default)
    return "librdkafka's value"


@pytest.mark.parametrize("name", sorted(set(LIBRDKAFKA_SETTINGS) - {"bootstrap.servers",
                                                                    "metadata.broker.list"}))
def test_every_librdkafka_producer_setting_is_accepted(name):
    if name in NO_COUNTERPART:  # delivery callbacks: KafkaProducer would never call them
        with pytest.raises(ConfigError, match="no counterpart for"):
            ProducerConfig({**BASE, name: print})
        return
    cfg = ProducerConfig({**BASE, name: _value(name)})
    ours = ALIASES.get(name, CONVERTED_ALIASES.get(name, (name,))[0])
    known = (ours in SETTINGS_BY_NAME or name in LIBRDKAFKA_MAPPED or name in NOT_NEEDED
             or name in cfg.without_effect)
    assert known, name


def test_the_settings_without_effect_are_named_in_one_warning(caplog):
    caplog.set_level(logging.INFO, logger="kafkacore")
    cfg = ProducerConfig({**BASE, "batch.num.messages": 10, "client.rack": "r1",
                          "enable.gapless.guarantee": True, "log.connection.close": False,
                          "socket.nagle.disable": True, "queue.buffering.max.ms": 7})
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    text = warnings[0].getMessage()
    for name in ("batch.num.messages (a batch is bounded in bytes", "client.rack",
                 "enable.gapless.guarantee", "log.connection.close", "socket.nagle.disable"):
        assert name in text
    assert "queue.buffering.max.ms" not in text and cfg["linger.ms"] == 7


def test_a_name_no_client_has_is_an_error_with_a_did_you_mean():
    with pytest.raises(ConfigError, match="unknown setting 'statistics.interval'; did you "
                                          "mean 'statistics.interval.ms'"):
        ProducerConfig({**BASE, "statistics.interval": 100})
    with pytest.raises(ConfigError, match="did you mean 'socket.keepalive.enable'"):
        ProducerConfig({**BASE, "socket.keepalive.enabled": True})
    with pytest.raises(ConfigError, match="'brokr' is not a librdkafka debug context; did you "
                                          "mean 'broker'"):
        ProducerConfig({**BASE, "debug": "brokr"})
    with pytest.raises(ConfigError, match="'partitioner'.*not a librdkafka partitioner"):
        ProducerConfig({**BASE, "partitioner": "murmur3"})


def test_mapped_settings_take_effect():
    cfg = ProducerConfig({**BASE, "partitioner": "fnv1a", "compression.codec": "zstd",
                          "compression.level": 7, "debug": "eos,msg"})
    assert cfg["partitioner.class"] is PARTITIONERS["fnv1a"]
    assert cfg["compression.zstd.level"] == 7
    assert cfg.librdkafka["debug"] == ("eos", "msg")
    assert ProducerConfig({**BASE, "partitioner": "murmur2_random"})["partitioner.class"] is None
    # librdkafka's FNV-1a and CRC32, by their published check values
    assert PARTITIONERS["fnv1a"]("t", b"a", None, 2**32, None) == 0xE40C292C
    assert PARTITIONERS["consistent"]("t", b"123456789", None, 2**32, None) == 0xCBF43926


def _stats_received(poll, seen, deadline_s=20.0, until=lambda stats: True):
    """The first statistics (JSON, as librdkafka's stats_cb gets them) that satisfy ``until``.

    Statistics are taken on a timer, so one taken before a delivery can still be waiting to be
    polled after it: wait for the state, not for the first report."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for raw in seen:
            stats = json.loads(raw)
            if until(stats):
                return stats
        seen.clear()
        poll()
    raise AssertionError("no statistics within the bound" if not seen
                         else f"no statistics satisfied the wait: last {seen[-1][:200]}")


def test_the_copied_settings_on_confluent_s_producer_and_stats_cb_gets_librdkafka_s_json(
        bootstrap, make_topic, caplog):
    topic = make_topic(1)
    seen: list[str] = []
    config = {**COPIED, "bootstrap.servers": bootstrap, "stats_cb": seen.append}
    caplog.set_level(logging.WARNING, logger="kafkacore.config")
    p = confluent.Producer(config)
    warnings = [r for r in caplog.records if r.name == "kafkacore.config"]
    assert len(warnings) == 1 and "client.rack" in warnings[0].getMessage()
    delivered = []
    p.produce(topic, b"v", key=b"k", on_delivery=lambda err, msg: delivered.append(err))
    assert p.flush(30) == 0 and delivered == [None]
    stats = _stats_received(lambda: p.poll(0.2), seen, until=lambda s: s.get("txmsgs", 0) >= 1)
    assert TOP_LEVEL <= set(stats) and stats["type"] == "producer"
    assert topic in stats["topics"]
    assert any(b["state"] == "UP" for b in stats["brokers"].values())
    p.close()
    logging.getLogger("kafkacore").setLevel(logging.NOTSET)  # undo debug's levels
    for name in ("kafkacore.network", "kafkacore.metadata", "kafkacore.sender",
                 "kafkacore.accumulator"):
        logging.getLogger(name).setLevel(logging.NOTSET)


def test_the_copied_settings_on_kafka_producer(bootstrap, make_topic):
    topic = make_topic(1)
    seen: list[str] = []
    settings = {k: v for k, v in COPIED.items() if k not in ("queue.buffering.max.messages",)}
    settings.update({"bootstrap.servers": bootstrap, "stats_cb": seen.append, "debug": "eos"})
    with KafkaProducer(settings) as producer:
        producer.send(topic, b"v").get(timeout=30)
        stats = _stats_received(lambda: time.sleep(0.05), seen)
    assert TOP_LEVEL <= set(stats) and stats["client_id"] == producer.client_id
    assert stats["eos"]["idemp_state"] == "Assigned"
    logging.getLogger("kafkacore.transaction_manager").setLevel(logging.NOTSET)
    logging.getLogger("kafkacore.sender").setLevel(logging.NOTSET)


def test_partitioner_consistent_random_puts_keys_where_librdkafka_does(bootstrap, make_topic):
    from confluent_kafka import Producer as Theirs

    keys = [b"key-%d" % i for i in range(20)]
    where = {}
    theirs = Theirs({"bootstrap.servers": bootstrap})  # librdkafka's default: consistent_random
    topic = make_topic(5)
    for key in keys:
        theirs.produce(topic, b"v", key=key, on_delivery=lambda err, msg: where.__setitem__(
            msg.key(), msg.partition()))
    assert theirs.flush(30) == 0
    ours = {}
    p = confluent.Producer({"bootstrap.servers": bootstrap, "partitioner": "consistent_random"})
    for key in keys:
        p.produce(topic, b"v", key=key, on_delivery=lambda err, msg: ours.__setitem__(
            msg.key(), msg.partition()))
    assert p.flush(30) == 0
    p.close()
    assert ours == where and len(set(ours.values())) > 1


def _set_producer_quota(broker, client_id: str, bytes_per_s: float) -> None:
    """AlterClientQuotas (KIP-546), encoded by kafka-python's classes, to our broker."""
    import socket
    import struct

    from kafka.protocol.admin import AlterClientQuotasRequest, AlterClientQuotasResponse

    entry = AlterClientQuotasRequest.EntryData
    request = AlterClientQuotasRequest[1](entries=[entry(
        entity=[entry.EntityData(entity_type="client-id", entity_name=client_id)],
        ops=[entry.OpData(key="producer_byte_rate", value=bytes_per_s, remove=False)])],
        validate_only=False)
    request.with_header(correlation_id=1, client_id="quota-admin")
    with socket.create_connection(("127.0.0.1", broker.socket_server.bound_port), 30) as s:
        s.sendall(bytes(request.encode(header=True, framed=True)))
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        response = AlterClientQuotasResponse.decode(s.recv(size, socket.MSG_WAITALL),
                                                    version=1, header=True)
    assert [e.error_code for e in response.entries] == [0]


def test_throttle_cb_hears_a_broker_that_throttles(tmp_path):
    from kafkacore.broker import Broker
    from kafkacore.compat.librdkafka import ThrottleEvent

    with Broker({"log.dirs": str(tmp_path), "quota.window.num": "3"}) as broker:
        _set_producer_quota(broker, "slow-producer", 20 * 1024.0)
        events: list = []
        p = confluent.Producer({"bootstrap.servers": broker.bootstrap_servers,
                                "client.id": "slow-producer", "batch.size": 16 * 1024,
                                "throttle_cb": events.append})
        for _ in range(100):  # past the burst a new sensor allows (2 windows' worth)
            p.produce("throttled", b"x" * 1024)
            p.poll(0)
        assert p.flush(60) == 0
        deadline = time.monotonic() + 20
        while not events and time.monotonic() < deadline:
            p.poll(0.1)
        p.close()
    assert events and isinstance(events[0], ThrottleEvent)
    assert events[0].throttle_time > 0 and events[0].broker_id >= 0
    assert "throttled for" in str(events[0])
