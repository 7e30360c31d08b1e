"""A full disk under a real broker: a 2 MiB tmpfs as its only log dir.

The broker must say so once (ERROR), take the dir offline and answer KAFKA_STORAGE_ERROR (Kafka's
answer), lose nothing it acknowledged, and serve again once space returns.  Mounting a tmpfs
needs root (or CAP_SYS_ADMIN); where that is not allowed the test skips and says why.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.record.default_records import DefaultRecordBatchBuilder
from waits import wait_until

from kafkacore.broker.server.broker_server import Broker
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.errors import KafkaStorageError
from kafkacore.protocol.api_keys import ApiKey

VALUE = 16 * 1024


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot run mount: {exc}")
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {done.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, timeout=30)


def _produce(client, topic, i):
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, int(time.time() * 1000), None, b"%06d" % i + bytes(VALUE), [])
    response = client.send(ApiKey.PRODUCE, 9, {
        "transactional_id": None, "acks": 1, "timeout_ms": 10000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": bytes(builder.build())}]}]})
    part = response["responses"][0]["partition_responses"][0]
    return part["error_code"], part["base_offset"]


@pytest.mark.timeout(120)
def test_a_full_disk_takes_the_dir_offline_loudly_and_it_comes_back(small_disk, caplog):
    ballast = small_disk / "ballast"
    ballast.write_bytes(bytes(512 * 1024))  # taken back later: the space that "returns"
    config = {"log.dirs": str(small_disk), "log.dir.failure.probe.interval.ms": "50",
              "log.segment.bytes": str(256 * 1024)}
    with caplog.at_level(logging.WARNING), Broker(config) as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        admin.create_topics([NewTopic("full", 1, 1)])
        admin.close()
        client = InterBrokerClient(broker.advertised_host, broker.advertised_port, "test", 30)
        try:
            acked, error = [], 0
            for i in range(1000):  # 2 MiB / 16 KiB: full long before
                error, offset = _produce(client, "full", i)
                if error:
                    break
                acked.append((offset, i))
            assert error == KafkaStorageError.errno and acked
            # Every later append is refused at once, and the dir is reported offline once.
            for i in range(50):
                assert _produce(client, "full", 10_000 + i)[0] == KafkaStorageError.errno
            offline = [r for r in caplog.records
                       if r.levelname == "ERROR" and "is offline" in r.getMessage()]
            assert len(offline) == 1 and str(small_disk) in offline[0].getMessage()
            assert "No space left" in offline[0].getMessage()
            # Space returns: the probe brings the dir back, appends are accepted again.
            os.unlink(ballast)
            wait_until(lambda: _produce(client, "full", 20_000)[0] == 0, "append accepted",
                       bound_s=20)
            assert any("online again" in r.getMessage() for r in caplog.records)
        finally:
            client.close()
        # Nothing acknowledged was lost: kafka-python reads back every acked record.
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers,
                                 auto_offset_reset="earliest", consumer_timeout_ms=10000)
        tp = TopicPartition("full", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = {}
        deadline = time.monotonic() + 30
        while len(got) < len(acked) + 1 and time.monotonic() < deadline:
            for records in consumer.poll(1000).values():
                for r in records:
                    got[r.offset] = int(r.value[:6])
        consumer.close()
        for offset, i in acked:
            assert got.get(offset) == i
