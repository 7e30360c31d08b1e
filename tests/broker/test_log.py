"""The broker's log on disk (kafkacore.broker.log): real files in temporary directories.

Batches come from two builders, ours and kafka-python's ``DefaultRecordBatchBuilder``; what the
log stores is read back with kafka-python's record reader, which checks the CRC itself.
"""

import os
import pathlib
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from support.examples import examples

import kafkacore
from kafkacore.broker.log import Log, LogConfig, LogManager, ProducerIdManager
from kafkacore.broker.log.log_manager import CLEAN_SHUTDOWN_FILE
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_batches
from kafkacore.errors import (
    BrokerResponseError,
    CorruptMessageError,
    InvalidConfigError,
    InvalidRecordError,
    InvalidTimestampError,
    KafkaStorageError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
)


def ours(values, *, ts=1_700_000_000_000, compression="none", pid=-1, epoch=-1, seq=-1):
    b = MemoryRecordsBuilder(
        1 << 16, compression=compression, producer_id=pid, producer_epoch=epoch, base_sequence=seq
    )
    for i, v in enumerate(values):
        b.append(ts + i, b"key-%d" % i, v)
    b.close()
    return bytes(b.build())


def theirs(values, *, ts=1_700_000_000_000, compression=0, pid=-1, epoch=-1, seq=-1):
    b = DefaultRecordBatchBuilder(2, compression, False, pid, epoch, seq, 1 << 20)
    for i, v in enumerate(values):
        b.append(i, ts + i, b"key-%d" % i, v, [("h", b"x")])
    return bytes(b.build())


def read_back(data):
    """(offset, key, value, timestamp, timestamp_type) of every record, by kafka-python's reader
    (which raises on a bad CRC)."""
    out = []
    records = MemoryRecords(bytes(data))
    while True:
        batch = records.next_batch()
        if batch is None:
            return out
        assert batch.validate_crc()
        out.extend((r.offset, r.key, r.value, r.timestamp, r.timestamp_type) for r in batch)


def read_back_aiokafka(data):
    """The same, by aiokafka's reader: (offset, key, value, timestamp, timestamp_type)."""
    out = []
    records = AioMemoryRecords(bytes(data))
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        out.extend((r.offset, r.key, r.value, r.timestamp, r.timestamp_type) for r in batch)
    return out


def read_all(log):
    data = b""
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        got = log.read(offset, 1 << 20)
        assert got.records
        data += got.records
        last = list(iter_batches(got.records))[-1]
        offset = last.last_offset + 1
    return read_back(data)


def values(n, start=0):
    return [b"value-%06d" % i for i in range(start, start + n)]


@pytest.fixture
def log_dir(tmp_path):
    return tmp_path / "topic-0"


# -- append and read --------------------------------------------------------------------------


@pytest.mark.parametrize("build", [ours, theirs], ids=["ours", "kafka-python"])
@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_append_assigns_consecutive_offsets_and_reads_back(log_dir, build, codec):
    compression = codec if build is ours else {"none": 0, "gzip": 1}[codec]
    log = Log(log_dir)
    infos = [
        log.append_as_leader(build(values(5, 5 * i), compression=compression)) for i in range(4)
    ]
    assert [(i.first_offset, i.last_offset, i.record_count) for i in infos] == [
        (0, 4, 5),
        (5, 9, 5),
        (10, 14, 5),
        (15, 19, 5),
    ]
    assert all(i.log_append_time_ms == -1 and not i.duplicate for i in infos)
    assert log.log_end_offset == log.high_watermark == 20
    got = read_all(log)
    assert [(o, v) for o, _, v, _, _ in got] == list(enumerate(values(20)))
    assert all(tt == 0 for *_, tt in got)  # CreateTime kept
    stored = log.read(0, 1 << 20).records  # one segment: every batch
    assert read_back_aiokafka(stored) == got  # a second reader nobody here wrote agrees


@pytest.mark.parametrize("time_type", ["CreateTime", "LogAppendTime"])
def test_a_writable_view_is_written_in_place_and_other_buffers_are_copied(log_dir, time_type):
    """A Produce request's records are views of the frame: the log writes the offsets (and,
    on LogAppendTime topics, the timestamp and a new CRC) into the frame and stores it from
    there; a caller's bytearray or bytes stay as they were."""
    log = Log(log_dir, LogConfig(message_timestamp_type=time_type))
    first, second = theirs(values(2), ts=1000), theirs(values(3, 2), ts=1000)
    mine = bytearray(first)
    log.append_as_leader(mine)
    assert mine == first
    frame = bytearray(b"head" + second + b"tail")
    info = log.append_as_leader(memoryview(frame)[4:-4])
    assert frame[:4] == b"head" and frame[-4:] == b"tail"
    assert struct.unpack_from(">q", frame, 4)[0] == info.first_offset == 2
    stored = log.read(0, 1 << 20).records
    assert bytes(stored)[len(first):] == frame[4:-4]  # what the frame says is what is stored
    assert [(o, v) for o, _, v, _, _ in read_back(stored)] == list(enumerate(values(5)))
    assert log.append_as_leader(memoryview(first)).first_offset == 5  # read-only: copied
    assert [(o, v) for o, _, v, _, _ in read_all(log)][5:] == [(5, values(2)[0]),
                                                               (6, values(2)[1])]


def test_stored_bytes_are_the_producers_bytes_but_the_base_offset(log_dir):
    log = Log(log_dir)
    log.append_as_leader(ours(values(3)))
    sent = ours(values(2, 3))
    log.append_as_leader(sent)
    stored = log.read(3, 1 << 20).records
    assert stored[8:12] == sent[8:12] and stored[16:] == sent[16:]  # length, magic, CRC, records
    assert struct.unpack_from(">q", stored)[0] == 3  # only baseOffset (and leader epoch) rewritten
    log.append_as_leader(memoryview(sent), leader_epoch=7)  # any buffer; the leader epoch stamped
    again = DefaultRecordBatch(bytearray(log.read(5, 1 << 20).records))
    assert (again.base_offset, again.leader_epoch) == (5, 7) and again.validate_crc()


def test_read_bounds(log_dir):
    log = Log(log_dir)
    for i in range(10):
        log.append_as_leader(ours(values(10, 10 * i)))
    one = len(ours(values(10)))
    got = log.read(25, 2 * one)  # the batch holding 25 starts at 20; whole batches only
    assert got.first_offset == 20 and len(got.records) == 2 * one
    assert [b.base_offset for b in iter_batches(got.records)] == [20, 30]
    assert len(log.read(25, 1).records) == one  # min_one_batch: one batch even above max_bytes
    assert log.read(25, 1, min_one_batch=False).records == b""
    bounded = log.read(0, 1 << 20, max_offset=40)  # the high watermark is exclusive
    assert [b.base_offset for b in iter_batches(bounded.records)] == [0, 10, 20, 30]
    end = log.read(100, 1 << 20)
    assert end.records == b"" and end.log_end_offset == 100
    for bad in (-1, 101):
        with pytest.raises(OffsetOutOfRangeError) as exc:
            log.read(bad, 100)
        assert exc.value.errno == 1


def test_index_lookups_find_every_offset(log_dir):
    log = Log(log_dir, LogConfig(index_interval_bytes=200))
    for i in range(50):
        log.append_as_leader(ours(values(i % 4 + 1)))
    segment = log.active_segment
    assert len(segment.index) > 5
    for target in range(log.log_end_offset):
        offset, position = segment.index.lookup(target)
        assert offset <= target or (offset, position) == (0, 0)
        header = segment.translate_offset(target)
        assert header.base_offset <= target <= header.last_offset
        assert position <= header.position
    log.close()
    assert (log_dir / "00000000000000000000.index").stat().st_size == 8 * len(segment.index)


def test_index_file_reloaded_after_clean_close(log_dir):
    log = Log(log_dir, LogConfig(index_interval_bytes=100))
    for i in range(30):
        log.append_as_leader(ours(values(3, 3 * i)))
    entries = len(log.active_segment.index)
    log.close()
    again = Log(log_dir, LogConfig(index_interval_bytes=100), had_clean_shutdown=True)
    assert len(again.active_segment.index) == entries and again.log_end_offset == 90
    assert [o for o, *_ in read_all(again)] == list(range(90))


# -- segments: rolling and retention ------------------------------------------------------------


def test_segments_roll_at_segment_bytes(log_dir):
    cfg = LogConfig(segment_bytes=1000)
    log = Log(log_dir, cfg)
    for i in range(40):
        log.append_as_leader(ours(values(2, 2 * i)))
    names = sorted(p.name for p in log_dir.glob("*.log"))
    assert len(names) == len(log.segments) > 3
    assert names[0] == "00000000000000000000.log"
    assert all(len(n) == len("00000000000000000000.log") for n in names)
    bases = [s.base_offset for s in log.segments]
    assert names == [f"{b:020d}.log" for b in bases]
    assert all(s.size <= 1000 for s in log.segments)
    assert [o for o, *_ in read_all(log)] == list(range(80))
    # a producer-state snapshot per roll, named by the new segment's base offset
    assert {int(p.stem) for p in log_dir.glob("*.snapshot")} == set(bases[1:])


def test_segments_roll_at_segment_ms(log_dir):
    log = Log(log_dir, LogConfig(segment_ms=60_000))
    log.append_as_leader(ours(values(1)))
    log.append_as_leader(ours(values(1)))
    assert len(log.segments) == 1
    log.active_segment.created_ms -= 61_000  # the segment is older than segment.ms
    log.append_as_leader(ours(values(1)))
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_retention_bytes_deletes_whole_old_segments(log_dir):
    log = Log(log_dir, LogConfig(segment_bytes=1000, retention_bytes=2500, retention_ms=-1))
    for i in range(40):
        log.append_as_leader(ours(values(2, 2 * i)))
    before = len(log.segments)
    deleted = log.delete_old_segments()
    assert deleted == before - len(log.segments) > 0
    assert log.size_in_bytes - log.segments[0].size < 2500 <= log.size_in_bytes + 1000
    assert log.log_start_offset == log.segments[0].base_offset > 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    got = read_all(log)
    assert [o for o, *_ in got] == list(range(log.log_start_offset, 80))
    assert not (log_dir / "00000000000000000000.log").exists()


def test_retention_ms_rolls_then_deletes_expired_segments_never_newer_ones(log_dir):
    ts = 1_700_000_000_000
    log = Log(log_dir, LogConfig(segment_bytes=1000, retention_ms=10_000))
    for _ in range(20):
        log.append_as_leader(ours(values(2), ts=ts))
    log.append_as_leader(ours(values(2), ts=ts + 100_000))  # a newer batch in the active segment
    before = len(log.segments)
    assert before > 2
    assert log.delete_old_segments(now_ms=ts + 50_000) == before - 1
    assert len(log.segments) == 1 and log.log_end_offset == 42
    assert log.delete_old_segments(now_ms=ts + 200_000) == 1  # rolled, then deleted
    assert log.log_start_offset == log.log_end_offset == 42 and log.active_segment.size == 0
    assert log.append_as_leader(ours(values(1))).first_offset == 42


def test_retention_disabled_keeps_everything(log_dir):
    log = Log(log_dir, LogConfig(segment_bytes=1000, retention_ms=-1, retention_bytes=-1))
    for _ in range(20):
        log.append_as_leader(ours(values(2), ts=0))
    assert log.delete_old_segments(now_ms=1 << 50) == 0 and log.log_start_offset == 0


# -- recovery ---------------------------------------------------------------------------------


def _filled(log_dir, n=10):
    log = Log(log_dir)
    for i in range(n):
        log.append_as_leader(theirs(values(3, 3 * i)))
    size = log.active_segment.size
    log.flush()
    return log, size, size // n


@pytest.mark.parametrize("cut", [1, 30, 61, 80])
def test_recovery_truncates_a_torn_tail_mid_batch(log_dir, cut):
    log, size, one = _filled(log_dir)
    os.truncate(log_dir / "00000000000000000000.log", size - one + cut)  # last batch torn
    again = Log(log_dir)  # no clean-shutdown marker: recover
    assert again.recovered_bytes_truncated == cut
    assert again.log_end_offset == 27
    assert [v for _, _, v, _, _ in read_all(again)] == values(27)
    assert again.append_as_leader(ours([b"after"])).first_offset == 27


def test_recovery_cuts_garbage_and_a_bad_crc(log_dir):
    log, size, one = _filled(log_dir)
    path = log_dir / "00000000000000000000.log"
    with open(path, "r+b") as f:
        f.seek(size - one + 70)  # inside the last batch's records: its CRC no longer matches
        f.write(b"\xff")
        f.seek(0, 2)
        f.write(os.urandom(500))  # and garbage after it
    again = Log(log_dir)
    assert again.log_end_offset == 27 and again.active_segment.size == size - one
    assert again.recovered_bytes_truncated == one + 500
    assert [o for o, *_ in read_all(again)] == list(range(27))


def test_unclean_recovery_keeps_the_segments_after_a_torn_one(log_dir, caplog):
    log = Log(log_dir, LogConfig(segment_bytes=600))
    for i in range(20):
        log.append_as_leader(ours(values(3, 3 * i)))
    log.flush()
    second = log.segments[1]
    os.truncate(second.log_path, second.size - 5)
    again = Log(log_dir, LogConfig(segment_bytes=600))
    # Only the torn batch is lost (Kafka would drop every later segment); it is said loudly.
    torn = (second.next_offset - 3, second.next_offset - 1)
    assert again.lost_ranges == [torn]
    assert len(again.segments) == len(log.segments) and again.log_end_offset == 60
    kept = [o for o, *_ in read_all(again)]
    assert kept == [o for o in range(60) if not torn[0] <= o <= torn[1]]
    assert any(r.levelname == "ERROR" and "are lost" in r.getMessage() for r in caplog.records)


def test_log_manager_clean_shutdown_marker_and_startup(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    mgr = LogManager(dirs, LogConfig())
    mgr.startup()
    for p in range(4):
        mgr.get_or_create_log("orders", p).append_as_leader(ours(values(p + 1)))
    assert mgr.get_or_create_log("orders", 1) is mgr.get_log("orders", 1)
    assert {lg.dir.parent for lg in mgr.all_logs().values()} == set(dirs)  # spread over dirs
    mgr.shutdown()
    assert all((d / CLEAN_SHUTDOWN_FILE).exists() for d in dirs)
    again = LogManager(dirs, LogConfig())
    again.startup()
    assert not any((d / CLEAN_SHUTDOWN_FILE).exists() for d in dirs)
    assert {k: lg.log_end_offset for k, lg in again.all_logs().items()} == {
        ("orders", p): p + 1 for p in range(4)
    }
    assert again.delete_log("orders", 0) and again.get_log("orders", 0) is None
    assert not any((d / "orders-0").exists() for d in dirs)
    again.shutdown()


_KILL_CHILD = textwrap.dedent(
    """
    import os, sys
    from kafkacore.broker.log import Log, LogConfig
    from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
    log = Log(sys.argv[1], LogConfig(flush_messages=1, segment_bytes=256 * 1024))
    out = os.fdopen(int(sys.argv[2]), "w", buffering=1)
    n = 0
    while n < 100_000:
        b = MemoryRecordsBuilder(1 << 14)
        for _ in range(100):
            b.append(0, None, b"%d" % n)
            n += 1
        b.close()
        info = log.append_as_leader(b.build())
        out.write("%d\\n" % info.last_offset)  # acknowledged: fsync'd before append returned
    """
)


def test_kill_9_loses_no_acknowledged_record(log_dir):
    read_fd, write_fd = os.pipe()
    root = str(pathlib.Path(kafkacore.__file__).resolve().parent.parent)  # the kafkacore under test
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen(
        [sys.executable, "-c", _KILL_CHILD, str(log_dir), str(write_fd)],
        pass_fds=(write_fd,),
        env=env,
        cwd=log_dir.parent,
    )
    os.close(write_fd)
    acked = -1
    with os.fdopen(read_fd) as pipe:
        for line in pipe:
            acked = int(line)
            if acked >= 30_000:  # mid-stream: kill it while it keeps appending
                child.send_signal(signal.SIGKILL)
                break
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert acked >= 30_000
    log = Log(log_dir, LogConfig(segment_bytes=256 * 1024))
    got = read_all(log)
    assert len(got) >= acked + 1  # every acknowledged record is there ...
    assert [int(v) for _, _, v, _, _ in got] == list(range(len(got)))  # ... once, in order
    assert [o for o, *_ in got] == list(range(len(got)))


# -- LogAppendTime -------------------------------------------------------------------------------


@pytest.mark.parametrize("build", [ours, theirs], ids=["ours", "kafka-python"])
def test_log_append_time_sets_max_timestamp_and_recomputes_the_crc(log_dir, build):
    log = Log(log_dir, LogConfig(message_timestamp_type="LogAppendTime"))
    info = log.append_as_leader(build(values(4), ts=1000))
    assert info.log_append_time_ms > 1_600_000_000_000
    stored = log.read(0, 1 << 20).records
    batch = DefaultRecordBatch(bytearray(stored))
    assert batch.validate_crc()  # kafka-python checks our recomputed CRC
    assert batch.timestamp_type == 1 and batch.max_timestamp == info.log_append_time_ms
    got = read_back(stored)
    assert read_back_aiokafka(stored) == got
    assert {(ts, tt) for *_, ts, tt in got} == {(info.log_append_time_ms, 1)}
    assert [v for _, _, v, _, _ in got] == values(4)


# -- bad input ---------------------------------------------------------------------------------


def test_rejected_appends_raise_typed_errors_and_change_nothing(log_dir):
    log = Log(log_dir, LogConfig(max_message_bytes=2000))
    log.append_as_leader(ours(values(2)))
    good = bytearray(ours(values(3)))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    magic1 = bytearray(good)
    magic1[16] = 1
    cases = [
        (bytes(bad_crc), CorruptMessageError, 2),
        (bytes(magic1), InvalidRecordError, 87),
        (bytes(good[:-3]), CorruptMessageError, 2),
        (bytes(good) + b"\x00" * 10, CorruptMessageError, 2),
        (b"", InvalidRecordError, 87),
        (ours([b"x" * 3000]), MessageTooLargeError, 10),
    ]
    size = log.active_segment.size
    for data, error, errno in cases:
        with pytest.raises(error) as exc:
            log.append_as_leader(data)
        assert exc.value.errno == errno
        assert log.log_end_offset == 2 and log.active_segment.size == size
    assert log.append_as_leader(bytes(good)).first_offset == 2


@settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzz_corrupted_appends_only_typed_errors(tmp_path_factory, data):
    log = Log(tmp_path_factory.mktemp("fuzz") / "t-0")
    log.append_as_leader(ours(values(2)))
    buf = bytearray(ours(values(3)) + theirs(values(2)))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        buf = buf[: data.draw(st.integers(0, len(buf)))]
    size = log.active_segment.size
    try:
        info = log.append_as_leader(bytes(buf))
    except BrokerResponseError:
        assert log.log_end_offset == 2 and log.active_segment.size == size
    else:
        assert info.first_offset == 2 and log.log_end_offset == info.last_offset + 1
        assert [o for o, *_ in read_all(log)] == list(range(log.log_end_offset))
    log.close()


# -- the rest of the interface ----------------------------------------------------------------


def test_fetch_offset_by_timestamp(log_dir):
    log = Log(log_dir, LogConfig(segment_bytes=1000))
    for i in range(20):
        log.append_as_leader(ours(values(2), ts=1000 * i))
    # The first record at or after the time (records 2i and 2i+1 at 1000i and 1000i + 1).
    assert log.fetch_offset_by_timestamp(5000) == (10, 5000)
    assert log.fetch_offset_by_timestamp(5001) == (11, 5001)
    assert log.fetch_offset_by_timestamp(5002) == (12, 6000)
    assert log.fetch_offset_by_timestamp(10**9) is None
    assert log.fetch_offset_by_timestamp(-2) == (0, -1)
    assert log.fetch_offset_by_timestamp(-1) == (40, -1)
    assert log.fetch_offset_by_timestamp(-3) == (39, 19001)


def test_truncate_to(log_dir):
    log = Log(log_dir, LogConfig(segment_bytes=600))
    for i in range(20):
        log.append_as_leader(ours(values(3, 3 * i)))
    log.truncate_to(31)  # inside the batch 30..32: the whole batch goes
    assert log.log_end_offset == 30
    assert all(s.base_offset < 30 for s in log.segments)
    assert [o for o, *_ in read_all(log)] == list(range(30))
    assert log.append_as_leader(ours(values(1))).first_offset == 30


def test_append_as_follower_keeps_offsets(log_dir):
    leader = Log(log_dir.parent / "leader-0")
    for i in range(5):
        leader.append_as_leader(ours(values(2, 2 * i)))
    follower = Log(log_dir)
    info = follower.append_as_follower(leader.read(0, 1 << 20).records)
    assert (info.first_offset, info.last_offset) == (0, 9)
    assert read_all(follower) == read_all(leader)
    with pytest.raises(OffsetOutOfRangeError):
        follower.append_as_follower(leader.read(4, 1 << 20).records)


def test_high_watermark_defaults_to_log_end_and_can_be_set(log_dir):
    log = Log(log_dir)
    log.append_as_leader(ours(values(5)))
    assert log.high_watermark == 5
    log.high_watermark = 3
    assert log.high_watermark == 3
    log.append_as_leader(ours(values(5)))
    assert log.high_watermark == 3
    log.high_watermark = None
    assert log.high_watermark == 10
    assert log.last_stable_offset == 10


def test_log_config_properties_round_trip_and_typed_errors():
    cfg = LogConfig.from_properties(
        {"internal.segment.bytes": "1000", "message.timestamp.type": "LogAppendTime"}
    )
    assert cfg.segment_size == 1000 and cfg.log_append_time
    assert LogConfig.from_properties(cfg.to_properties()) == cfg
    props = LogConfig().to_properties()
    assert props["retention.ms"] == "604800000" and props["max.message.bytes"] == "1048588"
    assert props["flush.messages"] == str((1 << 63) - 1) and props["cleanup.policy"] == "delete"
    for bad in (
        {"segment.bytes": "lots"},
        {"segment.bytes": "3"},
        {"segment.bytes": "16384"},  # Kafka 4: at least 1 MiB
        {"message.timestamp.type": "Now"},
        {"cleanup.policy": "compacted"},
        {"cleanup.policy": "compact,compact"},
        {"min.cleanable.dirty.ratio": "1.5"},
        {"delete.retention.ms": "soon"},
        {"no.such.config": "1"},
    ):
        with pytest.raises(InvalidConfigError) as exc:
            LogConfig.from_properties(bad)
        assert exc.value.errno == 40


def test_producer_ids_never_repeat_across_restarts(tmp_path):
    first = ProducerIdManager(tmp_path, block_size=10)
    ids = [first.generate_producer_id() for _ in range(15)]
    second = ProducerIdManager(tmp_path, block_size=10)  # as after a crash: the block is skipped
    more = [second.generate_producer_id() for _ in range(5)]
    assert ids == list(range(15)) and more == list(range(20, 25))
    assert len(set(ids + more)) == 20


def test_producer_ids_start_at_first_id_and_never_go_back(tmp_path):
    first = ProducerIdManager(tmp_path, block_size=10, first_id=3 << 40)
    assert [first.generate_producer_id() for _ in range(2)] == [3 << 40, (3 << 40) + 1]
    again = ProducerIdManager(tmp_path, block_size=10, first_id=3 << 40)  # after a restart
    assert again.generate_producer_id() == (3 << 40) + 10


def test_batches_larger_than_the_scan_chunks_read_and_recover(log_dir):
    big = [os.urandom(30_000) for _ in range(3)]  # 90 KB batches: above translate's 8 KB reads
    log = Log(log_dir)
    for i in range(6):
        log.append_as_leader(theirs(big, ts=i))
    for offset in range(18):
        got = log.read(offset, 1)  # min_one_batch: the whole 90 KB batch
        assert [o for o, *_ in read_back(got.records)] == list(
            range(offset // 3 * 3, offset // 3 * 3 + 3)
        )
    log.flush()
    os.truncate(log.active_segment.log_path, log.active_segment.size - 40_000)
    again = Log(log_dir)
    assert again.log_end_offset == 15
    assert [v for _, _, v, _, _ in read_all(again)] == big * 5


def test_concurrent_appends_get_distinct_consecutive_offsets(log_dir):
    log = Log(log_dir, LogConfig(segment_bytes=4000))
    results = []

    def producer(k):
        for i in range(50):
            results.append(log.append_as_leader(ours([b"%d-%d" % (k, i)] * 2)))

    threads = [threading.Thread(target=producer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted((r.first_offset, r.last_offset) for r in results) == [
        (2 * i, 2 * i + 1) for i in range(200)
    ]
    got = read_all(log)
    assert [o for o, *_ in got] == list(range(400))
    for k in range(4):  # each thread's records in its own order
        mine = [v for _, _, v, _, _ in got if v.startswith(b"%d-" % k)]
        assert mine == [b"%d-%d" % (k, i) for i in range(50) for _ in range(2)]


def test_log_manager_cleanup_applies_retention_to_every_log(tmp_path):
    mgr = LogManager([tmp_path], LogConfig(segment_bytes=1000, retention_ms=1000))
    mgr.startup()
    for p in range(2):
        for _ in range(20):
            mgr.get_or_create_log("t", p).append_as_leader(ours(values(2), ts=5000))
    kept = mgr.get_or_create_log("k", 0, LogConfig(retention_ms=-1))
    kept.append_as_leader(ours(values(2), ts=5000))
    segments = sum(len(lg.segments) for lg in mgr.all_logs().values())
    deleted = mgr.cleanup_logs(now_ms=10_000)
    # every segment of the t logs (their active ones after a roll), none of k's
    assert deleted == segments - len(kept.segments)
    assert all(mgr.get_log("t", p).log_start_offset == 40 for p in range(2))
    assert kept.log_start_offset == 0
    mgr.shutdown()


def test_flush_ms_and_flush_messages(tmp_path):
    mgr = LogManager([tmp_path], LogConfig(flush_ms=1000))
    mgr.startup()
    log = mgr.get_or_create_log("t", 0)
    log.append_as_leader(ours(values(1)))
    assert mgr.flush_dirty_logs(now_ms=log.last_flush_ms + 10) == 0  # not yet due
    assert mgr.flush_dirty_logs(now_ms=log.last_flush_ms + 1000) == 1
    assert mgr.flush_dirty_logs(now_ms=log.last_flush_ms + 5000) == 0  # nothing unflushed
    every3 = Log(tmp_path / "u-0", LogConfig(flush_messages=3))
    flushes = [every3.last_flush_ms]
    for _ in range(3):
        every3.last_flush_ms = -1  # a marker the next fsync overwrites
        every3.append_as_leader(ours(values(1)))
        flushes.append(every3.last_flush_ms)
    assert [f == -1 for f in flushes[1:]] == [True, True, False]  # fsync at the 3rd record
    mgr.shutdown()


def test_files_that_are_not_segments_are_left_alone(log_dir):
    log = Log(log_dir)
    log.append_as_leader(ours(values(2)))
    log.close()
    (log_dir / "notes.log").write_text("not a segment")
    again = Log(log_dir, had_clean_shutdown=True)
    assert again.log_end_offset == 2 and (log_dir / "notes.log").exists()


def test_create_time_bounds_refuse_batches_from_too_far_away(log_dir):
    log = Log(log_dir, LogConfig(message_timestamp_before_max_ms=86_400_000))
    now = time.time_ns() // 1_000_000
    log.append_as_leader(ours(values(1), ts=now))
    for ts in (now + 2 * 3600 * 1000, now - 2 * 86_400_000):  # 2 h ahead (default: 1 h), 2 days old
        with pytest.raises(InvalidTimestampError) as exc:
            log.append_as_leader(ours(values(1), ts=ts))
        assert exc.value.errno == 32
    assert log.log_end_offset == 1
    stamped = Log(log_dir.parent / "lat-0", LogConfig(message_timestamp_type="LogAppendTime"))
    assert (
        stamped.append_as_leader(ours(values(1), ts=now + 10**9)).first_offset == 0
    )  # not checked


def test_topic_id_and_topic_configs_survive_a_restart(tmp_path):
    topic_id = uuid.uuid4()
    mgr = LogManager([tmp_path])
    mgr.startup()
    lat = LogConfig(message_timestamp_type="LogAppendTime")
    mgr.get_or_create_log("t", 0, lat, topic_id=topic_id).append_as_leader(ours(values(1)))
    mgr.shutdown()
    # Kafka's partition.metadata format: the id as Uuid.toString(), URL-safe base64, unpadded
    text = (tmp_path / "t-0" / "partition.metadata").read_text().split()
    assert text[:3] == ["version:", "0", "topic_id:"] and len(text[3]) == 22
    again = LogManager([tmp_path])
    again.startup(topic_configs={"t": lat})
    log = again.get_log("t", 0)
    assert log.topic_id == topic_id and log.config.log_append_time
    assert log.append_as_leader(ours(values(1))).log_append_time_ms > 0
    log.update_config(LogConfig())
    assert log.append_as_leader(ours(values(1))).log_append_time_ms == -1
    with pytest.raises(KafkaStorageError):
        Log(tmp_path / "t-0", topic_id=uuid.uuid4())  # another topic's directory
    again.shutdown()


def test_log_manager_creates_a_batch_of_logs_side_by_side(tmp_path):
    """A CreateTopics' logs in one call: each in the emptier log dir, each with its topic id;
    one that cannot be created is refused loudly and the rest are kept."""
    dirs = [tmp_path / "a", tmp_path / "b"]
    mgr = LogManager(dirs)
    mgr.startup()
    ids = {"x": uuid.uuid4(), "y": uuid.uuid4()}
    before = mgr.get_or_create_log("x", 0, topic_id=ids["x"])
    wanted = [(t, p, None, ids[t]) for t in ("x", "y") for p in range(4)] + [("y", 1, None, None)]
    logs = mgr.get_or_create_logs(wanted)
    assert logs[0] is before and logs[-1] is logs[5]  # the existing one, a repeat
    assert [mgr.get_log(t, p) for t, p, _, _ in wanted] == logs
    assert sorted(len(list(d.iterdir())) for d in dirs) == [4, 4]
    assert all(lg.topic_id == ids[lg.topic] for lg in logs)
    assert all((lg.dir / "partition.metadata").read_text().count("topic_id") == 1 for lg in logs)
    mgr.shutdown()

    one = LogManager([tmp_path / "c"])
    one.startup()
    Log(tmp_path / "c" / "z-1", topic_id=uuid.uuid4()).close()  # another topic's
    with pytest.raises(KafkaStorageError, match="belongs to topic id"):
        one.get_or_create_logs([("z", p, None, uuid.uuid4()) for p in range(3)])
    assert [one.get_log("z", p) is not None for p in range(3)] == [True, False, True]
    one.shutdown()


def test_follower_append_with_an_offset_gap(log_dir):
    leader = Log(log_dir.parent / "leader-0")
    leader.append_as_leader(ours(values(2)))
    follower = Log(log_dir)
    follower.append_as_follower(leader.read(0, 1 << 20).records)
    moved = bytearray(ours(values(3, 2)))
    struct.pack_into(">q", moved, 0, 100)  # the leader's next batch starts at 100 (compacted)
    info = follower.append_as_follower(bytes(moved))
    assert (info.first_offset, info.last_offset) == (100, 102) and follower.log_end_offset == 103
    assert [o for o, *_ in read_back(follower.read(0, 1 << 20).records)] == [0, 1, 100, 101, 102]
    assert (
        follower.read(50, 1 << 20).first_offset == 100
    )  # a fetch inside the gap gets what follows
    follower.close()
    again = Log(log_dir)
    assert again.log_end_offset == 103


def test_retention_ms_falls_back_to_file_time_without_timestamps(log_dir):
    log = Log(log_dir, LogConfig(segment_bytes=400, retention_ms=60_000))
    for _ in range(20):
        log.append_as_leader(ours(values(1), ts=-1))  # NO_TIMESTAMP in the batches
    assert len(log.segments) > 2 and all(s.max_timestamp == -1 for s in log.segments)
    now = time.time_ns() // 1_000_000
    assert log.delete_old_segments(now_ms=now) == 0  # files just written: not expired
    before = len(log.segments)
    assert log.delete_old_segments(now_ms=now + 120_000) == before  # rolled, then all deleted
    assert log.log_start_offset == log.log_end_offset == 20


def test_recovery_point_checkpoint_spares_flushed_segments_the_scan(tmp_path):
    def crash_with_damaged_first_segment(keep_checkpoint):
        root = tmp_path / ("kept" if keep_checkpoint else "lost")
        mgr = LogManager([root], LogConfig(segment_bytes=600))
        mgr.startup()
        log = mgr.get_or_create_log("t", 0)
        for i in range(20):
            log.append_as_leader(ours(values(3, 3 * i)))
        log.flush()
        mgr.checkpoint_recovery_points()
        first = log.segments[0].log_path
        log.close(clean=False)  # kill -9: no clean-shutdown marker
        if not keep_checkpoint:
            (root / "recovery-point-offset-checkpoint").unlink()
        data = bytearray(first.read_bytes())
        data[100] ^= 0xFF  # damage inside the first batch of the oldest segment
        first.write_bytes(bytes(data))
        again = LogManager([root], LogConfig(segment_bytes=600))
        again.startup()
        return again.get_log("t", 0)

    trusted = crash_with_damaged_first_segment(True)
    assert trusted.log_end_offset == 60  # below the recovery point: loaded, not scanned
    with pytest.raises(CorruptMessageError):  # ... yet the damaged batch is never served
        trusted.read(0, 1 << 20)
    assert trusted.damaged_from == 0
    scanned = crash_with_damaged_first_segment(False)
    # No checkpoint: every segment scanned; only the damaged batch is lost (Kafka cuts there).
    assert scanned.log_end_offset == 60 and scanned.lost_ranges == [(0, 2)]
    assert [o for o, *_ in read_all(scanned)] == list(range(3, 60))
    lines = (tmp_path / "kept" / "recovery-point-offset-checkpoint").read_text().split("\n")
    assert lines[:3] == ["0", "1", "t 0 60"]  # Kafka's OffsetCheckpointFile format
