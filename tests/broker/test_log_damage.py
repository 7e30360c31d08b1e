"""Damaged logs: what recovery keeps after a flipped byte, what reads refuse, what is said.

Every case damages real files the way a disk or an operator can (a flipped byte, a wrong batch
length, a shifted index, a deleted segment) and checks, with kafka-python's record reader (which
checks every CRC itself), that the broker serves only sound batches, keeps the good data after the
damage, and logs each loss at ERROR.
"""

import logging
import os
import struct
import time

import pytest
from kafka.record.memory_records import MemoryRecords

from kafkacore.broker.log import Log, LogConfig, LogManager
from kafkacore.broker.log.log_manager import CLEAN_SHUTDOWN_FILE
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.errors import CorruptMessageError

SEGMENT = LogConfig(segment_bytes=4096, index_interval_bytes=256)
PER_BATCH = 4


def batch(first):
    b = MemoryRecordsBuilder(1 << 16)
    for i in range(first, first + PER_BATCH):
        b.append(1_700_000_000_000 + i, b"k%d" % i, b"value-%06d" % i)
    b.close()
    return bytes(b.build())


def filled(directory, records, config=SEGMENT):
    log = Log(directory, config)
    for first in range(0, records, PER_BATCH):
        log.append_as_leader(batch(first))
    return log


def readable(log):
    """Every offset a consumer gets, reading from the start and seeking past a refused batch
    (kafka-python's reader checks each CRC, so a bad byte served would fail here)."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        try:
            data = log.read(offset, 1 << 16).records
        except CorruptMessageError:
            offset += PER_BATCH  # a consumer seeking past the refused batch
            continue
        records = MemoryRecords(data)
        while (b := records.next_batch()) is not None:
            assert b.validate_crc()
            out.extend(r.offset for r in b)
        offset = out[-1] + 1
    return out


def crash_and_flip(tmp_path, records, segment_index, at, *, keep_checkpoint):
    """A log manager's log, killed (no clean marker) after writing its recovery point or not,
    then one byte flipped ``at`` bytes into segment ``segment_index``."""
    mgr = LogManager([tmp_path], SEGMENT)
    mgr.startup()
    log = mgr.get_or_create_log("t", 0)
    for first in range(0, records, PER_BATCH):
        log.append_as_leader(batch(first))
    log.flush()
    if keep_checkpoint:
        mgr.checkpoint_recovery_points()
    target = log.segments[segment_index]
    log.close(clean=False)
    with open(target.log_path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x01]))
    again = LogManager([tmp_path], SEGMENT)
    again.startup()
    return again, again.get_log("t", 0), target.base_offset


def test_flipped_byte_in_an_old_segment_loses_only_its_batch(tmp_path, caplog):
    # The unclean stop scans every segment (no recovery point yet): Kafka would cut the log at
    # the damage and drop every later segment; we lose the one batch.
    mgr, log, base = crash_and_flip(tmp_path, 20_000, 3, 200, keep_checkpoint=False)
    assert log.log_end_offset == 20_000
    assert len(log.lost_ranges) == 1
    first, last = log.lost_ranges[0]
    assert base <= first and last - first + 1 == PER_BATCH
    kept = readable(log)
    assert kept == [o for o in range(20_000) if not first <= o <= last]
    assert any(r.levelname == "ERROR" and f"offsets {first} to {last}" in r.getMessage()
               for r in caplog.records)
    # The repaired file is whole again: a clean restart loads it and finds the same.
    mgr.shutdown()
    assert readable(Log(log.dir, SEGMENT, had_clean_shutdown=True)) == kept


def test_flipped_byte_below_the_recovery_point_is_refused_then_repaired(tmp_path, caplog):
    mgr, log, base = crash_and_flip(tmp_path, 2_000, 1, 200, keep_checkpoint=True)
    # Trusted (below the recovery point), so loaded; the read checks the CRC and refuses.
    kept = readable(log)
    assert len(kept) == 2_000 - PER_BATCH and log.damaged_from == base
    assert any("refusing damaged data" in r.getMessage() for r in caplog.records
               if r.levelname == "ERROR")
    # A clean shutdown does not mark the dir clean: the next start scans the damaged segment.
    mgr.shutdown()
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    again = LogManager([tmp_path], SEGMENT)
    again.startup()
    repaired = again.get_log("t", 0)
    assert len(repaired.lost_ranges) == 1 and readable(repaired) == kept
    again.shutdown()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()


def test_a_wrong_batch_length_after_a_clean_shutdown_is_refused_not_skipped(tmp_path, caplog):
    log = filled(tmp_path / "t-0", 400)
    segment = log.segments[1]
    headers = list(segment.iter_headers())
    victim = headers[5]
    log.close()
    with open(segment.log_path, "r+b") as f:
        f.seek(victim.position + 8)
        f.write(struct.pack(">i", victim.size - 12 + 40))  # the length says 40 bytes more
    again = Log(tmp_path / "t-0", SEGMENT, had_clean_shutdown=True)
    with pytest.raises(CorruptMessageError):
        again.read(victim.base_offset, 1 << 16)
    # Before the damage: served up to it, never across it.
    got = again.read(headers[3].base_offset, 1 << 16)
    offsets = [r.offset for b in iter(MemoryRecords(got.records).next_batch, None) for r in b]
    assert offsets == list(range(headers[3].base_offset, victim.base_offset))
    assert any(r.levelname == "ERROR" for r in caplog.records)


def test_a_shifted_index_is_caught_and_rebuilt(tmp_path, caplog):
    log = filled(tmp_path / "t-0", 400)
    segment = log.segments[0]
    log.close()
    data = segment.index.path.read_bytes()
    assert len(data) >= 16
    # Every entry's position moved to the next entry's: still sorted and inside the file.
    entries = list(struct.iter_unpack(">ii", data))
    shifted = [(o, p2) for (o, _), (_, p2) in zip(entries, entries[1:], strict=False)]
    segment.index.path.write_bytes(b"".join(struct.pack(">ii", *e) for e in shifted))
    again = Log(tmp_path / "t-0", SEGMENT, had_clean_shutdown=True)
    assert readable(again) == list(range(400))
    assert any(r.levelname == "ERROR" and "index" in r.getMessage() for r in caplog.records)


def test_a_shifted_index_found_by_a_read_is_rebuilt(tmp_path, caplog):
    # The last entry is sound (the load check passes); an earlier one points one batch late.
    log = filled(tmp_path / "t-0", 400)
    segment = log.segments[0]
    log.close()
    entries = list(struct.iter_unpack(">ii", segment.index.path.read_bytes()))
    assert len(entries) >= 3
    positions = [h.position for h in Log(tmp_path / "t-0", SEGMENT,
                                         had_clean_shutdown=True).segments[0].iter_headers()]
    o, p = entries[0]
    later = positions[positions.index(p) + 1]  # the next batch: sorted, before entry 1
    assert later < entries[1][1]
    entries[0] = (o, later)
    segment.index.path.write_bytes(b"".join(struct.pack(">ii", *e) for e in entries))
    again = Log(tmp_path / "t-0", SEGMENT, had_clean_shutdown=True)
    assert readable(again) == list(range(400))
    for offset in range(0, 400, 7):
        got = again.read(offset, 100)
        first = MemoryRecords(got.records).next_batch()
        assert first.base_offset <= offset <= first.base_offset + PER_BATCH - 1
    assert any("index entry" in r.getMessage() for r in caplog.records)


def test_a_deleted_middle_segment_is_said_loudly(tmp_path, caplog):
    log = filled(tmp_path / "t-0", 2_000)
    middle = log.segments[2]
    gap = (middle.base_offset, middle.next_offset - 1)
    log.close()
    os.unlink(middle.log_path)
    os.unlink(middle.index.path)
    with caplog.at_level(logging.WARNING):
        again = Log(tmp_path / "t-0", SEGMENT, had_clean_shutdown=True)
        assert again.lost_ranges == [gap]
        errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
        assert any(f"offsets {gap[0]} to {gap[1]}" in m for m in errors)
        assert readable(again) == [o for o in range(2_000) if not gap[0] <= o <= gap[1]]
        got = again.read(gap[0], 1 << 16)  # a fetch inside the hole gets what follows it ...
        assert got.first_offset == gap[1] + 1
        assert any("missing" in r.getMessage() for r in caplog.records)  # ... and it is said


def served(log):
    """(offset, value) of every record a consumer gets, seeking past refused batches."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        try:
            data = log.read(offset, 1 << 16).records
        except CorruptMessageError:
            offset += 1
            continue
        records = MemoryRecords(data)
        while (b := records.next_batch()) is not None:
            out.extend((r.offset, r.value) for r in b)
        offset = out[-1][0] + 1
    return out


@pytest.mark.parametrize("bit", [0, 1, 2, 5, 8, 16, 30, 31, 40, 56, 62, 63])
def test_a_flipped_base_offset_bit_never_renumbers_records(tmp_path, bit):
    # The base offset is the one header field the CRC does not cover: a flip there must not
    # serve records under another offset, and recovery puts it back (nothing is lost).
    log = filled(tmp_path / "t-0", 400)
    segment = log.segments[1]
    victim = list(segment.iter_headers())[3]
    log.close()
    with open(segment.log_path, "r+b") as f:
        f.seek(victim.position)
        (base,) = struct.unpack(">Q", f.read(8))
        f.seek(victim.position)
        f.write(struct.pack(">Q", base ^ (1 << bit)))
    loaded = Log(tmp_path / "t-0", SEGMENT, had_clean_shutdown=True)
    got = served(loaded)
    assert all(value == b"value-%06d" % offset for offset, value in got)
    assert len(got) >= 400 - 2 * PER_BATCH  # at most the flipped batch and a neighbour refused
    loaded.close(clean=False)
    recovered = Log(tmp_path / "t-0", SEGMENT)  # unclean, no recovery point: scanned
    assert served(recovered) == [(o, b"value-%06d" % o) for o in range(400)]
    assert recovered.lost_ranges == []


RECORDS = 300


def _consume(bootstrap, topic, bound_s=10.0):
    """(offset, value) read by kafka-python from the start, and the error that stopped it."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got, error = [], None
    deadline = time.monotonic() + bound_s
    try:
        while time.monotonic() < deadline and (not got or got[-1][0] < RECORDS - 1):
            for records in consumer.poll(200).values():
                got += [(r.offset, r.value) for r in records]
    except Exception as exc:  # kafka-python raises what the broker answered
        error = exc
    finally:
        consumer.close()
    return got, error


@pytest.mark.parametrize("where", ["base offset", "record bytes"])
def test_kafka_python_is_told_of_damage_then_reads_the_repaired_log(tmp_path, caplog, where):
    """A damaged old segment after a clean shutdown: kafka-python reads every record before the
    damage under its own offset and is then told (CORRUPT_MESSAGE); the next start repairs the
    base offset, or cuts the one damaged batch, and kafka-python reads the rest."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    from kafkacore.broker.server.broker_server import Broker

    config = {"log.dirs": str(tmp_path)}
    with Broker(config) as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        admin.create_topics([NewTopic("t", 1, 1, topic_configs={"internal.segment.bytes": "4096"})])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0)
        for i in range(RECORDS):  # one batch each
            producer.send("t", b"value-%06d" % i, partition=0).get(10)
        producer.close(10)
    segment = sorted((tmp_path / "t-0").glob("*.log"))[2]
    data = bytearray(segment.read_bytes())
    data[3 if where == "base offset" else 150] ^= 0x40  # a base-offset bit, or a record byte
    segment.write_bytes(bytes(data))
    first_damaged = int(segment.name[:20])
    with Broker(config) as broker:  # after a clean shutdown: the segment is loaded, not read
        got, error = _consume(broker.bootstrap_servers, "t")
        assert all(value == b"value-%06d" % offset for offset, value in got)
        assert len(got) >= first_damaged and error is not None  # told, not skipped in silence
        assert any("refusing damaged data" in r.getMessage() for r in caplog.records)
    with Broker(config) as broker:  # not marked clean: recovered, the damage repaired or cut
        got, error = _consume(broker.bootstrap_servers, "t")
        assert error is None and all(value == b"value-%06d" % o for o, value in got)
        lost = set(range(RECORDS)) - {o for o, _ in got}
        assert len(lost) == (0 if where == "base offset" else 1)
