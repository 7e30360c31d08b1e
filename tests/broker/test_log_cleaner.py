"""The log cleaner: compacted logs keep each key's latest record, at the same offset; tombstones
go after delete.retention.ms; aborted transactions' records go; an interrupted swap is finished
(or discarded) at the next start; a broker's compacted topic, read by confluent-kafka while it is
cleaned, and __consumer_offsets through many commits."""

from __future__ import annotations

import shutil
import time
import uuid

import pytest
from waits import wait_until

from kafkacore.broker.log import Log, LogConfig
from kafkacore.broker.log.cleaner_config import CleanerConfig
from kafkacore.broker.log.end_transaction_marker import end_transaction_marker
from kafkacore.broker.log.log import CLEANED_SUFFIX, SWAP_SUFFIX
from kafkacore.broker.log.log_cleaner import DELETE_HORIZON_FLAG, LogCleaner
from kafkacore.broker.log.log_cleaner_manager import CLEANER_OFFSET_CHECKPOINT
from kafkacore.broker.log.log_segment import LOG_SUFFIX, file_name
from kafkacore.broker.log.log_validator import read_header
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_batches

KEYS = 40


def _log(tmp_path, **props: str) -> Log:
    cfg = LogConfig.from_properties({"cleanup.policy": "compact", "internal.segment.bytes": "8000",
                                     **props})
    return Log(tmp_path / "t-0", cfg, topic="t", partition=0)


def _batch(records, *, producer_id=-1, epoch=-1, sequence=-1, transactional=False) -> bytes:
    b = MemoryRecordsBuilder(4096, producer_id=producer_id, producer_epoch=epoch,
                             base_sequence=sequence, is_transactional=transactional)
    now = int(time.time() * 1000)
    for key, value in records:
        b.append(now, key, value)
    return bytes(b.build())


def _write_updates(lg: Log, updates: int, *, tombstone_keys=()) -> dict[bytes, bytes | None]:
    """``updates`` records over KEYS keys, 4 to a batch; the last record of each key in
    ``tombstone_keys`` is a tombstone.  Returns each key's latest value."""
    latest: dict[bytes, bytes | None] = {}
    for first in range(0, updates, 4):
        records = []
        for n in range(first, min(first + 4, updates)):
            key = b"k%d" % (n % KEYS)
            last_of_key = n + KEYS >= updates
            value = None if last_of_key and (n % KEYS) in tombstone_keys else b"v%d" % n
            records.append((key, value))
            latest[key] = value
        lg.append_as_leader(_batch(records))
    return latest


def _fill(lg: Log, n: int = 400) -> None:
    """Records of other keys, so that what was written before leaves the active segment."""
    for first in range(0, n, 4):
        lg.append_as_leader(_batch([(b"f%d" % i, b"x") for i in range(first, first + 4)]))


def _read_all(lg: Log) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """(offset, key, value, batch attributes) of every record, by reading the log as a fetch
    does (gaps and all)."""
    out, offset = [], lg.log_start_offset
    while offset < lg.log_end_offset:
        data = lg.read(offset, 1 << 20).records
        if not data:
            break
        for batch in iter_batches(data):
            out.extend((r.offset, r.key, r.value, batch.attributes) for r in batch.records)
            offset = batch.last_offset + 1
    return out


def _cleaner(tmp_path, lg: Log, **kw) -> LogCleaner:
    return LogCleaner(CleanerConfig(**kw), [tmp_path], lambda: {("t", 0): lg})


def test_compaction_keeps_each_keys_latest_record_at_its_offset(tmp_path):
    lg = _log(tmp_path)
    latest = _write_updates(lg, 2000)
    before = {off: (k, v) for off, k, v, _ in _read_all(lg)}
    end = lg.log_end_offset
    stats = _cleaner(tmp_path, lg).clean_now()
    assert stats and stats[0].segments_swapped >= 1
    after = _read_all(lg)
    # Every surviving record is the one that was at its offset, and offsets only grow.
    assert all(before[off] == (k, v) for off, k, v, _ in after)
    assert [a[0] for a in after] == sorted(a[0] for a in after)
    # Below the active segment one record per key is left; the log end did not move.
    active = lg.active_segment.base_offset
    cleaned = [a for a in after if a[0] < active]
    assert len(cleaned) <= KEYS and len({k for _, k, _, _ in cleaned}) == len(cleaned)
    assert {k: v for _, k, v, _ in after} == latest
    assert lg.log_end_offset == end and len(after) < 2000 // 4
    # The checkpoint says where the next clean starts: the active segment.
    text = (tmp_path / CLEANER_OFFSET_CHECKPOINT).read_text().split()
    assert text[-3:] == ["t", "0", str(active)]
    # Reopened (an unclean start recovers every segment), the cleaned log is the same.
    lg.close(clean=False)
    again = Log(tmp_path / "t-0", lg.config, topic="t", partition=0)
    assert _read_all(again) == after and again.lost_ranges == []


def test_a_full_offset_map_cleans_a_segment_at_a_time_until_done(tmp_path):
    from kafkacore.broker.log.offset_map import BYTES_PER_ENTRY

    lg = _log(tmp_path)
    latest = _write_updates(lg, 2000)
    # Room for 100 keys (90 at the load factor): less than one segment's records.
    cleaner = _cleaner(tmp_path, lg, dedupe_buffer_size=100 * BYTES_PER_ENTRY)
    dirty_segments = len(lg.segments) - 1
    stats = cleaner.clean_now()
    assert len(stats) == dirty_segments  # each clean maps one more segment, then stops
    assert cleaner.threads[0].cleaner.offset_map.max_entries == 90
    active = lg.active_segment.base_offset
    cleaned = [a for a in _read_all(lg) if a[0] < active]
    assert len({k for _, k, _, _ in cleaned}) == len(cleaned) <= KEYS
    assert {k: v for _, k, v, _ in _read_all(lg)} == latest


def test_tombstones_stay_for_delete_retention_ms_then_go(tmp_path):
    lg = _log(tmp_path, **{"delete.retention.ms": "3600000",
                           "min.cleanable.dirty.ratio": "0.01"})
    latest = _write_updates(lg, 1000, tombstone_keys={3, 5})
    _fill(lg)
    _cleaner(tmp_path, lg).clean_now()
    cleaned = [a for a in _read_all(lg) if a[0] < lg.active_segment.base_offset]
    tombstones = [a for a in cleaned if a[2] is None]
    # Kept, and stamped with a delete horizon an hour away.
    assert {k for _, k, _, _ in tombstones} <= {b"k3", b"k5"} and tombstones
    assert all(attrs & DELETE_HORIZON_FLAG for *_, attrs in tombstones)
    assert {k: v for _, k, v, _ in _read_all(lg) if not k.startswith(b"f")} == latest
    # A later clean (more updates) keeps them and remembers when to clean again for them.
    cleaner = _cleaner(tmp_path, lg)
    _fill(lg)
    assert cleaner.clean_now()
    assert [a for a in _read_all(lg) if a[2] is None] == tombstones
    horizon = cleaner.manager.delete_horizon(("t", 0))
    assert horizon is not None and horizon > time.time() * 1000 + 3500_000



def test_tombstones_go_once_their_horizon_has_passed(tmp_path):
    lg = _log(tmp_path, **{"delete.retention.ms": "0"})
    latest = _write_updates(lg, 1000, tombstone_keys={3, 5})
    _fill(lg)
    stats = _cleaner(tmp_path, lg).clean_now()
    # The first clean stamps the horizon (now), the second, since it has passed, removes them.
    assert len(stats) == 2 and stats[1].tombstones_removed == 2
    active = lg.active_segment.base_offset
    assert not [a for a in _read_all(lg) if a[0] < active and a[2] is None]
    assert {k: v for _, k, v, _ in _read_all(lg) if v is not None and not k.startswith(b"f")} \
        == {k: v for k, v in latest.items() if v is not None}


def test_aborted_transactions_records_and_spent_markers_go(tmp_path):
    lg = _log(tmp_path, **{"delete.retention.ms": "0"})
    pid = 7
    # An aborted transaction writes k-aborted; a committed one writes k-committed.
    lg.append_as_leader(_batch([(b"k-aborted", b"x")], producer_id=pid, epoch=0, sequence=0,
                               transactional=True))
    lg.append_as_leader(end_transaction_marker(pid, 0, False, 0, int(time.time() * 1000)),
                        from_coordinator=True)
    lg.append_as_leader(_batch([(b"k-committed", b"y")], producer_id=pid, epoch=0, sequence=1,
                               transactional=True))
    lg.append_as_leader(end_transaction_marker(pid, 0, True, 0, int(time.time() * 1000)),
                        from_coordinator=True)
    _write_updates(lg, 600)
    _cleaner(tmp_path, lg).clean_now()
    records = _read_all(lg)
    keys = {k for _, k, _, _ in records}
    assert b"k-aborted" not in keys and b"k-committed" in keys
    # The abort marker has no record left and its horizon passed: gone with its index entry.
    assert lg.collect_aborted_transactions(0, lg.log_end_offset) == []
    assert lg.last_stable_offset == lg.log_end_offset


@pytest.mark.parametrize("stage", ["cleaned", "swap", "swap-half-deleted"])
def test_a_stop_during_the_swap_is_recovered_at_the_next_start(tmp_path, stage):
    lg = _log(tmp_path / "a")
    latest = _write_updates(lg, 1500)
    original = _read_all(lg)
    lg.close()
    # A compacted twin gives the segment a stop could have left behind.
    twin_dir = tmp_path / "b"
    shutil.copytree(tmp_path / "a", twin_dir)
    twin = Log(twin_dir / "t-0", lg.config, topic="t", partition=0)
    _cleaner(twin_dir, twin).clean_now()
    first, boundary = twin.segments[0], twin.segments[1].base_offset
    # The swap of the first group of segments: that group compacted, the rest as it was.
    swapped = [r for r in _read_all(twin) if r[0] < boundary] + \
        [r for r in original if r[0] >= boundary]
    twin.close()
    cleaned = (twin_dir / "t-0" / file_name(first.base_offset, LOG_SUFFIX)).read_bytes()
    d = tmp_path / "a" / "t-0"
    suffix = CLEANED_SUFFIX if stage == "cleaned" else SWAP_SUFFIX
    (d / (file_name(first.base_offset, LOG_SUFFIX) + suffix)).write_bytes(cleaned)
    if stage == "swap-half-deleted":  # the stop came after the first old segment was deleted
        (d / file_name(first.base_offset, LOG_SUFFIX)).unlink()
    reopened = Log(d, lg.config, topic="t", partition=0)
    records = _read_all(reopened)
    assert records == (original if stage == "cleaned" else swapped)
    assert {k: v for _, k, v, _ in records} == latest
    assert not [p for p in d.iterdir() if p.name.endswith((CLEANED_SUFFIX, SWAP_SUFFIX))]


def test_a_transaction_kept_only_as_an_empty_batch_keeps_its_marker(tmp_path):
    """The producer's last batch is transactional and all its records are superseded: it stays,
    empty, and so does its COMMIT marker, so that a replay of the log (no snapshot) does not
    take the transaction for an open one."""
    lg = _log(tmp_path, **{"delete.retention.ms": "0"})
    lg.append_as_leader(_batch([(b"k0", b"t")], producer_id=11, epoch=0, sequence=0,
                               transactional=True))
    lg.append_as_leader(end_transaction_marker(11, 0, True, 0, int(time.time() * 1000)),
                        from_coordinator=True)
    _write_updates(lg, 800)
    stats = _cleaner(tmp_path, lg).clean_now()
    assert stats and sum(s.markers_removed for s in stats) == 0
    lg.close()
    for snapshot in (tmp_path / "t-0").glob("*.snapshot"):
        snapshot.unlink()
    again = Log(tmp_path / "t-0", lg.config, topic="t", partition=0)
    assert again.last_stable_offset == again.log_end_offset


def test_what_may_be_cleaned_lags_the_active_segment_the_lso_and_min_compaction_lag(tmp_path):
    from kafkacore.broker.log.log_cleaner_manager import LogCleanerManager

    lg = _log(tmp_path, **{"min.compaction.lag.ms": "3600000",
                           "max.compaction.lag.ms": "7200000"})
    _write_updates(lg, 1000)
    manager = LogCleanerManager([tmp_path], lambda: {("t", 0): lg})
    now = int(time.time() * 1000)
    active = lg.active_segment.base_offset
    # Written just now: younger than min.compaction.lag.ms, nothing may be cleaned yet.
    young = manager.cleanable(("t", 0), lg, None, now)
    assert (young.uncleanable_offset, young.dirty_bytes) == (0, 0)
    # Two hours on: every segment but the active one, and past max.compaction.lag.ms.
    later = manager.cleanable(("t", 0), lg, None, now + 2 * 3600_000)
    assert later.uncleanable_offset == active and later.needs_compaction_now
    assert later.dirty_ratio == 1.0
    # An open transaction: nothing from its first offset on is cleanable (the LSO).
    lg.append_as_leader(_batch([(b"k0", b"open")], producer_id=5, epoch=0, sequence=0,
                               transactional=True))
    first_open = lg.log_end_offset - 1
    _fill(lg, 2000)
    bounded = manager.cleanable(("t", 0), lg, None, now + 2 * 3600_000)
    assert lg.last_stable_offset == first_open
    assert bounded.uncleanable_offset <= first_open < lg.active_segment.base_offset


def test_the_producers_last_batch_is_kept_empty_for_its_sequence(tmp_path):
    lg = _log(tmp_path)
    # The producer's last batch holds only keys a later plain batch overwrites.
    lg.append_as_leader(_batch([(b"k0", b"a"), (b"k1", b"b")], producer_id=3, epoch=0,
                               sequence=0))
    _write_updates(lg, 800)
    _cleaner(tmp_path, lg).clean_now()
    seg = lg.segments[0]
    first = read_header(seg.pread(61, 0), 0)
    assert (first.producer_id, first.record_count, first.last_offset_delta,
            first.base_sequence) == (3, 0, 1, 0)
    assert lg.producer_state.last_entry(3).last_seq == 1


# -- the broker, judged by confluent-kafka ---------------------------------------------------------

@pytest.fixture(scope="module")
def broker():
    from kafkacore.broker import Broker

    with Broker({"num.network.threads": "1", "num.io.threads": "2", "num.partitions": "1",
                 "log.cleaner.backoff.ms": "50", "offsets.topic.num.partitions": "1",
                 "offsets.topic.segment.bytes": "10000", "group.initial.rebalance.delay.ms": "0",
                 "transaction.state.log.num.partitions": "1",
                 "transaction.state.log.segment.bytes": "10000",
                 "log.cleaner.delete.retention.ms": "0"}) as b:
        yield b


def test_a_compacted_topic_shrinks_while_confluent_kafka_reads_it(broker):
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, ConfigResource
    from support.topics import new_topic

    bootstrap = broker.bootstrap_servers
    topic = new_topic(broker, configs={"cleanup.policy": "compact", "internal.segment.bytes": "65536",
                                       "min.cleanable.dirty.ratio": "0.01"})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_configs([resource])[resource].result(10)
    assert described["cleanup.policy"].value == "compact"

    keys, updates = 1000, 30_000
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                            "batch.size": 16384})  # a request must fit segment.bytes
    latest, failed = {}, []
    for n in range(updates):
        key, value = b"key-%d" % (n % keys), b"value-%d" % n
        producer.produce(topic, value, key, on_delivery=lambda e, m: e and failed.append(e))
        latest[key] = value
        if n % 5000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0 and failed == []
    lg = broker.log_manager.get_log(topic, 0)

    # A consumer reads from the start while the cleaner works; it sees every key's latest value.
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition(topic, 0, 0)])
    seen, last_offset = {}, -1
    first = consumer.consume(1000, 5)  # reading begins while the cleaner works
    assert first
    for m in first:
        last_offset, seen[m.key()] = m.offset(), m.value()
    wait_until(lambda: lg.size_in_bytes < 65536 * 2, "the cleaner compacts the topic",
               bound_s=60)
    producer.produce(topic, b"last", b"end")  # a marker of the end of what was written
    producer.flush(10)
    latest[b"end"] = b"last"

    def read_to_end():
        nonlocal last_offset
        for m in consumer.consume(500, 1):
            assert m.error() is None, m.error()
            assert m.offset() > last_offset
            last_offset = m.offset()
            seen[m.key()] = m.value()
        return seen.get(b"end") == b"last"

    wait_until(read_to_end, "confluent-kafka reads the compacted topic to its end", bound_s=60)
    consumer.close()
    assert seen == latest
    records = 0  # below the active segment: about one record per key
    offset = lg.log_start_offset
    while offset < lg.active_segment.base_offset:
        data = lg.read(offset, 1 << 20, max_offset=lg.active_segment.base_offset).records
        if not data:
            break
        for batch in iter_batches(data):
            records += batch.record_count
            offset = batch.last_offset + 1
    assert records <= keys


def test_consumer_offsets_stay_bounded_through_many_commits(broker):
    ck = pytest.importorskip("confluent_kafka")
    from support.topics import new_topic

    bootstrap = broker.bootstrap_servers
    topic = new_topic(broker)
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "g-" + uuid.uuid4().hex,
                            "enable.auto.commit": False})
    for n in range(1000):
        consumer.commit(offsets=[ck.TopicPartition(topic, 0, n)], asynchronous=False)
    lg = broker.log_manager.get_log("__consumer_offsets", 0)
    # 1000 commits of ~100 bytes each would be ~100 kB; compacted, one per key remains
    # below the active segment (segment.bytes 10000).
    wait_until(lambda: lg.size_in_bytes < 3 * 10000, "the cleaner bounds __consumer_offsets",
               bound_s=60)
    committed = consumer.committed([ck.TopicPartition(topic, 0)], timeout=10)
    consumer.close()
    assert committed[0].offset == 999


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_rewritten_compressed_batches_read_by_kafka_python(tmp_path, codec):
    """A batch that loses records is written again with its codec; kafka-python's reader (not
    ours) checks its CRC and reads the survivors at their offsets."""
    from kafka.record import MemoryRecords

    lg = _log(tmp_path)
    now = int(time.time() * 1000)
    expected = {}
    for first in range(0, 1200, 6):
        b = MemoryRecordsBuilder(8192, compression=codec)
        for n in range(first, first + 6):
            b.append(now, b"k%d" % (n % KEYS), b"value %d" % n)
            expected[n] = (b"k%d" % (n % KEYS), b"value %d" % n)
        lg.append_as_leader(bytes(b.build()))
    _fill(lg)
    _cleaner(tmp_path, lg).clean_now()
    seen, offset = {}, 0
    while offset < lg.active_segment.base_offset:
        records = MemoryRecords(lg.read(offset, 1 << 20).records)
        while (batch := records.next_batch()) is not None:
            assert batch.validate_crc()
            for r in batch:
                seen[r.offset] = (r.key, r.value)
            offset = batch.base_offset + batch.last_offset_delta + 1
    below = {o: kv for o, kv in seen.items() if kv[0].startswith(b"k")}
    assert below and all(expected[o] == kv for o, kv in below.items())
    assert len(below) == KEYS  # one per key: each key's latest


def test_a_follower_copies_a_cleaned_range(tmp_path):
    """A follower fetching a range its leader already cleaned appends the thinned batches (and
    the empty ones) at their offsets."""
    leader = _log(tmp_path / "leader")
    leader.append_as_leader(_batch([(b"k0", b"a")], producer_id=9, epoch=0, sequence=0))
    _write_updates(leader, 800)
    _cleaner(tmp_path / "leader", leader).clean_now()
    follower = Log(tmp_path / "follower" / "t-0", leader.config, topic="t", partition=0)
    offset = 0
    while offset < leader.log_end_offset:
        data = leader.read(offset, 1 << 16).records
        follower.append_as_follower(data)
        offset = follower.log_end_offset
    assert _read_all(follower) == _read_all(leader)
    assert follower.producer_state.last_entry(9).last_seq == 0


def test_clients_read_through_a_producers_kept_empty_batch(broker):
    """kafka-python's idempotent producer writes first; confluent-kafka's plain one overwrites
    every key.  The cleaner keeps the idempotent producer's last batch, empty; kafka-python's and
    confluent-kafka's consumers read through it to every key's latest value."""
    ck = pytest.importorskip("confluent_kafka")
    kafka = pytest.importorskip("kafka")
    from support.topics import new_topic

    bootstrap = broker.bootstrap_servers
    topic = new_topic(broker, configs={"cleanup.policy": "compact", "internal.segment.bytes": "65536",
                                       "min.cleanable.dirty.ratio": "0.01"})
    idempotent = kafka.KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
    for n in range(20):
        idempotent.send(topic, key=b"key-%d" % n, value=b"first")
    idempotent.flush(30)
    idempotent.close()
    plain = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 16384})
    latest, failed = {}, []
    for n in range(5000):
        key = b"key-%d" % (n % 20)
        plain.produce(topic, b"value-%d" % n, key, on_delivery=lambda e, m: e and failed.append(e))
        latest[key] = b"value-%d" % n
    plain.produce(topic, b"last", b"end")
    latest[b"end"] = b"last"
    assert plain.flush(30) == 0 and failed == []
    lg = broker.log_manager.get_log(topic, 0)

    def first_batch_emptied():  # read as a fetch reads: the cleaner may swap segments meanwhile
        first = read_header(lg.read(0, 1).records.ljust(61, b"\0"), 0)
        return first.has_producer_id and first.record_count == 0

    wait_until(first_batch_emptied, "the idempotent producer's batch is kept empty", bound_s=60)

    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                            "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition(topic, 0, 0)])
    seen_ck: dict[bytes, bytes] = {}

    def ck_reads_to_end():
        for m in consumer.consume(500, 1):
            assert m.error() is None, m.error()
            seen_ck[m.key()] = m.value()
        return seen_ck.get(b"end") == b"last"

    wait_until(ck_reads_to_end, "confluent-kafka reads to the end", bound_s=60)
    consumer.close()

    kp = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    tp = kafka.TopicPartition(topic, 0)
    kp.assign([tp])
    kp.seek(tp, 0)
    seen_kp: dict[bytes, bytes] = {}

    def kp_reads_to_end():
        for records in kp.poll(1000).values():
            seen_kp.update((r.key, r.value) for r in records)
        return seen_kp.get(b"end") == b"last"

    wait_until(kp_reads_to_end, "kafka-python reads to the end", bound_s=60)
    kp.close()
    assert seen_ck == latest and seen_kp == latest


def test_transaction_state_stays_bounded_through_many_transactions(broker):
    """Each transaction writes its id's state several times (Ongoing, PrepareCommit,
    CompleteCommit) to __transaction_state; compacted, the latest state is what stays."""
    ck = pytest.importorskip("confluent_kafka")
    from support.topics import new_topic

    bootstrap = broker.bootstrap_servers
    topic = new_topic(broker)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": uuid.uuid4().hex})
    producer.init_transactions(30)
    for n in range(150):
        producer.begin_transaction()
        producer.produce(topic, b"%d" % n, b"k")
        producer.commit_transaction(30)
    lg = broker.log_manager.get_log("__transaction_state", 0)
    # 150 transactions write ~450 records (~40 kB); compacted, a segment or two remain.
    wait_until(lambda: lg.size_in_bytes < 3 * 10000, "the cleaner bounds __transaction_state",
               bound_s=60)
    producer.begin_transaction()  # the coordinator still knows the id after the clean
    producer.produce(topic, b"after", b"k")
    producer.commit_transaction(30)


def test_a_topic_altered_to_compact_is_cleaned(broker):
    """cleanup.policy changed by IncrementalAlterConfigs (confluent-kafka's AdminClient): the
    cleaner takes the topic from its next turn."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )
    from support.topics import new_topic

    bootstrap = broker.bootstrap_servers
    topic = new_topic(broker, configs={"internal.segment.bytes": "65536"})
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 16384})
    for n in range(8000):
        producer.produce(topic, b"value-%d" % n, b"key-%d" % (n % 100))
    assert producer.flush(30) == 0
    lg = broker.log_manager.get_log(topic, 0)
    size = lg.size_in_bytes
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [ConfigEntry("cleanup.policy", "compact",
                           incremental_operation=AlterConfigOpType.SET),
               ConfigEntry("min.cleanable.dirty.ratio", "0.01",
                           incremental_operation=AlterConfigOpType.SET)]
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(10)
    wait_until(lambda: lg.size_in_bytes < size / 2, "the altered topic is compacted",
               bound_s=60)
    assert lg.config.compact
