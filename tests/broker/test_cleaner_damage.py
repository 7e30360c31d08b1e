"""The log cleaner and damaged data: a batch whose length is damaged, in a late segment of a
compacted log, costs the damaged bytes only; the intact batch after it keeps its keys' latest
values, and the damage is said at ERROR (docs/broker/log_cleaner.rst)."""

from __future__ import annotations

import logging
import struct
import time

import pytest

from kafkacore.broker.log import Log, LogConfig
from kafkacore.broker.log.cleaner_config import CleanerConfig
from kafkacore.broker.log.log_cleaner import LogCleaner
from kafkacore.broker.log.log_validator import LENGTH
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_batches

KEYS_PER_BATCH = 50


def _batch(records) -> bytes:
    b = MemoryRecordsBuilder(1 << 16)
    now = int(time.time() * 1000)
    for key, value in records:
        b.append(now, key, value)
    return bytes(b.build())


def _latest(lg: Log) -> dict[bytes, bytes]:
    """Each key's latest value, read as a fetch does, segment by segment past damage."""
    out: dict[bytes, bytes] = {}
    for segment in lg.segments:
        offset = segment.base_offset
        while offset < segment.next_offset:
            try:
                data = lg.read(offset, 1 << 20).records
            except Exception:  # the damaged batch: go on after it with the next segment
                break
            if not data:
                break
            for batch in iter_batches(data):
                for r in batch.records:
                    out[r.key] = r.value
                offset = batch.last_offset + 1
    return out


@pytest.mark.parametrize("length", [40, 1 << 20], ids=["too-short", "past-the-end"])
def test_a_damaged_batch_length_costs_only_its_own_bytes(tmp_path, caplog, length):
    cfg = LogConfig.from_properties({"cleanup.policy": "compact", "internal.segment.bytes": "20000"})
    lg = Log(tmp_path / "t-0", cfg, topic="t", partition=0)


    def fill(n: int) -> None:  # records of other keys
        for i in range(n):
            lg.append_as_leader(_batch([(b"f%d-%d" % (i, j), b"x")
                                        for j in range(KEYS_PER_BATCH)]))

    fill(30)
    # Old values for keys a0..a49 and b0..b49, then their latest values, each key group a batch.
    a_base = None
    for round_ in range(3):
        for group in (b"a", b"b"):
            info = lg.append_as_leader(_batch([(group + b"%d" % i, b"%s-%d" % (group, round_))
                                               for i in range(KEYS_PER_BATCH)]))
            if (round_, group) == (2, b"a"):
                a_base = info.first_offset
    fill(40)  # the batches above leave the active segment
    # Damage the length of the batch of round 2's "a" keys, in a late segment; the "b" keys'
    # batch after it is intact and holds their latest values.
    target = next(s for s in lg.segments if s.base_offset <= a_base < s.next_offset)
    assert target is not lg.segments[0] and target is not lg.active_segment
    a_latest = next(h for h in target.iter_headers() if h.base_offset == a_base)
    with open(target.log_path, "r+b") as f:
        f.seek(a_latest.position + LENGTH)
        f.write(struct.pack(">i", length))
    b_keys = {b"b%d" % i for i in range(KEYS_PER_BATCH)}

    cleaner = LogCleaner(CleanerConfig(), [tmp_path], lambda: {("t", 0): lg})
    with caplog.at_level(logging.ERROR, logger="kafkacore.broker.log"):
        cleaner.clean_now()

    # The next start recovers the log: only the damaged batch's offsets go.
    lg.close(clean=False)
    lg = Log(tmp_path / "t-0", cfg, topic="t", partition=0)
    try:
        after = _latest(lg)
        assert {after[k] for k in b_keys} == {b"b-2"}  # every b key keeps its latest value
        # The other keys are all there; the "a" keys fall back to their previous value.
        assert sum(k.startswith(b"f") for k in after) == 40 * KEYS_PER_BATCH
        assert {after[b"a%d" % i] for i in range(KEYS_PER_BATCH)} == {b"a-1"}
        lost = [(first, last) for first, last in lg.lost_ranges]
        assert lost == [(a_latest.base_offset, a_latest.last_offset)]
        # The cleaner said it at ERROR, naming the segment, and left the partition alone.
        assert any(r.levelno == logging.ERROR and r.name.endswith("log_cleaner")
                   and target.log_path.name in r.getMessage() for r in caplog.records)
        assert ("t", 0) in cleaner.manager.uncleanable
        # And the log cleans again after the restart, keeping each key's latest value.
        again = LogCleaner(CleanerConfig(), [tmp_path], lambda: {("t", 0): lg})
        assert again.clean_now()
        assert {k: v for k, v in _latest(lg).items()} == after
    finally:
        lg.close()


# -- the same through a broker, read back by confluent-kafka -------------------------------------

def _produce_raw(broker, topic: str, batches) -> None:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
    from kafkacore.errors import Errors
    from kafkacore.protocol.api_keys import ApiKey

    client = InterBrokerClient(broker.advertised_host, broker.advertised_port, "test", 30)
    try:
        for records in batches:
            builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
            now = int(time.time() * 1000)
            for i, (key, value) in enumerate(records):
                builder.append(i, now, key, value, [])
            response = client.send(ApiKey.PRODUCE, 9, {
                "transactional_id": None, "acks": 1, "timeout_ms": 10000, "topic_data": [
                    {"name": topic, "partition_data": [
                        {"index": 0, "records": bytes(builder.build())}]}]})
            part = response["responses"][0]["partition_responses"][0]
            assert part["error_code"] == Errors.NONE
    finally:
        client.close()


def _consume_latest(broker, topic: str) -> dict[bytes, bytes]:
    ck = pytest.importorskip("confluent_kafka")
    from waits import wait_until

    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "read",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    latest: dict[bytes, bytes] = {}
    try:
        consumer.assign([ck.TopicPartition(topic, 0, 0)])
        _, end = consumer.get_watermark_offsets(ck.TopicPartition(topic, 0), timeout=30)
        last = [-1]

        def read_to_end() -> bool:
            for m in consumer.consume(500, timeout=0.5):
                if m.error() is None:
                    latest[m.key()] = m.value()
                    last[0] = m.offset()
            return last[0] >= end - 1

        wait_until(read_to_end, "confluent-kafka reads the partition to its end")
    finally:
        consumer.close()
    return latest


def test_a_broker_keeps_the_intact_batch_after_damage_the_cleaner_met(tmp_path, caplog):
    """Written with the cleaner off; one batch length damaged on disk; the next start's cleaner
    meets it (ERROR, nothing swapped); the start after that recovers the log; confluent-kafka
    reads every key's latest value but the damaged batch's."""
    from support.topics import new_topic
    from waits import wait_until

    from kafkacore.broker.server.broker_server import Broker

    base = {"log.dirs": str(tmp_path), "num.network.threads": "1", "num.io.threads": "1",
            "log.cleaner.backoff.ms": "50"}
    fill = [[(b"f%d-%d" % (i, j), b"x") for j in range(KEYS_PER_BATCH)] for i in range(30)]
    rounds = [[(g + b"%d" % i, b"%s-%d" % (g, r)) for i in range(KEYS_PER_BATCH)]
              for r in range(3) for g in (b"a", b"b")]
    with Broker({**base, "log.cleaner.enable": "false"}) as broker:  # nothing cleaned yet
        topic = new_topic(broker, configs={"cleanup.policy": "compact",
                                           "internal.segment.bytes": "20000"})
        _produce_raw(broker, topic, fill + rounds + fill[:20])
        lg = broker.log_manager.get_log(topic, 0)
        a_base = len(fill) * KEYS_PER_BATCH + 4 * KEYS_PER_BATCH  # round 2's "a" batch
        target = next(s for s in lg.segments if s.base_offset <= a_base < s.next_offset)
        assert target is not lg.segments[0] and target is not lg.active_segment
        a_latest = next(h for h in target.iter_headers() if h.base_offset == a_base)
        path = target.log_path
    with open(path, "r+b") as f:  # damaged while the broker is down
        f.seek(a_latest.position + LENGTH)
        f.write(struct.pack(">i", 40))
    with caplog.at_level(logging.ERROR, logger="kafkacore.broker.log"), Broker(base) as broker:
        manager = broker.log_manager.cleaner.manager
        wait_until(lambda: (topic, 0) in manager.uncleanable, "the cleaner meets the damage")
    assert any(r.levelno == logging.ERROR and path.name in r.getMessage()
               and r.name.endswith("log_cleaner") for r in caplog.records)
    with Broker(base) as broker:  # the log dir was not marked clean: recovered
        latest = _consume_latest(broker, topic)
    assert {latest[b"b%d" % i] for i in range(KEYS_PER_BATCH)} == {b"b-2"}
    assert {latest[b"a%d" % i] for i in range(KEYS_PER_BATCH)} == {b"a-1"}
    assert sum(k.startswith(b"f") for k in latest) == len(fill) * KEYS_PER_BATCH
