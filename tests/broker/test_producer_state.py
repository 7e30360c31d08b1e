"""Idempotence on the broker: Kafka 4's producer-state rules, on a real ``Log`` in a temp dir.

Batches carry a producer id, epoch and base sequence, built by our builder and by kafka-python's;
the rules are ``ProducerAppendInfo.checkSequence`` / ``checkProducerEpoch`` and
``ProducerStateEntry.findDuplicateBatch`` of Kafka 4.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from support.examples import examples

from kafkacore.broker.log import Log, LogConfig
from kafkacore.broker.log.producer_state import NUM_BATCHES_TO_RETAIN, ProducerStateManager
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_records
from kafkacore.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError

PID = 4242
INT_MAX = (1 << 31) - 1


def ours(seq, n=2, *, pid=PID, epoch=0, ts=1_700_000_000_000):
    b = MemoryRecordsBuilder(1 << 12, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    for i in range(n):
        b.append(ts, None, b"seq-%d" % (seq + i))
    b.close()
    return bytes(b.build())


def theirs(seq, n=2, *, pid=PID, epoch=0, ts=1_700_000_000_000):
    b = DefaultRecordBatchBuilder(2, 0, False, pid, epoch, seq, 1 << 16)
    for i in range(n):
        b.append(i, ts, None, b"seq-%d" % (seq + i), [])
    return bytes(b.build())


@pytest.fixture(params=[ours, theirs], ids=["ours", "kafka-python"])
def build(request):
    return request.param


@pytest.fixture
def log(tmp_path):
    return Log(tmp_path / "t-0")


def stored_values(log):
    return (
        [r.value for r in iter_records(log.read(0, 1 << 24).records)] if log.log_end_offset else []
    )


def test_consecutive_sequences_are_appended(log, build):
    infos = [log.append_as_leader(build(seq)) for seq in (0, 2, 4)]
    assert [(i.first_offset, i.last_offset, i.duplicate) for i in infos] == [
        (0, 1, False),
        (2, 3, False),
        (4, 5, False),
    ]
    entry = log.producer_state.last_entry(PID)
    assert entry.producer_epoch == 0 and entry.last_seq == 5


@pytest.mark.parametrize("replayed", range(NUM_BATCHES_TO_RETAIN))
def test_a_retry_of_one_of_the_last_five_batches_gets_its_original_offsets(log, build, replayed):
    for k in range(NUM_BATCHES_TO_RETAIN + 2):  # seven batches; the last five are remembered
        log.append_as_leader(build(2 * k))
    before = stored_values(log)
    k = 2 + replayed
    info = log.append_as_leader(build(2 * k))
    assert info.duplicate
    assert (info.first_offset, info.last_offset, info.record_count) == (2 * k, 2 * k + 1, 2)
    assert stored_values(log) == before  # not written twice
    assert log.append_as_leader(build(14)).first_offset == 14  # and the producer carries on


def test_a_batch_older_than_the_last_five_is_out_of_order(log, build):
    for k in range(NUM_BATCHES_TO_RETAIN + 2):
        log.append_as_leader(build(2 * k))
    with pytest.raises(OutOfOrderSequenceNumberError) as exc:
        log.append_as_leader(build(2))  # batch 1, forgotten
    assert exc.value.errno == 45


def test_a_gap_is_out_of_order_and_changes_nothing(log, build):
    log.append_as_leader(build(0))
    size = log.active_segment.size
    for seq in (3, 1, -1):
        with pytest.raises(OutOfOrderSequenceNumberError):
            log.append_as_leader(build(seq))
    assert log.log_end_offset == 2 and log.active_segment.size == size
    assert log.producer_state.last_entry(PID).last_seq == 1
    assert log.append_as_leader(build(2)).first_offset == 2


def test_same_range_under_a_different_epoch_is_not_a_duplicate(log, build):
    log.append_as_leader(build(0, epoch=0))
    info = log.append_as_leader(build(0, epoch=1))  # a bumped epoch starting at 0: new data
    assert not info.duplicate and info.first_offset == 2


def test_an_older_epoch_is_fenced(log, build):
    log.append_as_leader(build(0, epoch=3))
    with pytest.raises(InvalidProducerEpochError) as exc:
        log.append_as_leader(build(2, epoch=2))
    assert exc.value.errno == 47
    assert log.log_end_offset == 2


def test_an_epoch_bump_must_start_at_sequence_zero(log, build):
    log.append_as_leader(build(0, epoch=0))
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append_as_leader(build(2, epoch=1))
    info = log.append_as_leader(build(0, epoch=1))
    assert info.first_offset == 2
    entry = log.producer_state.last_entry(PID)
    assert entry.producer_epoch == 1 and len(entry.batch_metadata) == 1  # old epoch's batches gone


def test_an_unknown_producer_is_accepted_at_any_sequence_as_kafka_4_does(log, build):
    # KIP-360: with no state for the producer id (never seen, or its batches were deleted by
    # retention) Kafka 4 accepts any sequence instead of answering UNKNOWN_PRODUCER_ID.
    info = log.append_as_leader(build(17))
    assert not info.duplicate and info.first_offset == 0
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append_as_leader(build(20))  # from now on it is known: 19 must follow
    assert log.append_as_leader(build(19)).first_offset == 2


def test_sequences_wrap_at_int_max(log, build):
    log.append_as_leader(build(INT_MAX - 1, n=2))  # last sequence INT_MAX
    assert log.producer_state.last_entry(PID).last_seq == INT_MAX
    assert log.append_as_leader(build(0)).first_offset == 2
    wrapped = build(INT_MAX, n=3)  # INT_MAX, 0, 1 in one batch
    other = Log(log.dir.parent / "t-1")
    other.append_as_leader(build(INT_MAX - 3, n=3))
    assert other.append_as_leader(wrapped).last_offset == 5
    assert other.producer_state.last_entry(PID).last_seq == 1


def test_batches_without_producer_id_are_not_tracked(log):
    b = MemoryRecordsBuilder(1024)
    b.append(0, None, b"plain")
    b.close()
    plain = bytes(b.build())
    assert log.append_as_leader(plain).first_offset == 0
    assert log.append_as_leader(plain).first_offset == 1  # the same bytes again: a new record
    assert log.producer_state.producers == {}


def test_producers_are_independent_and_one_request_may_carry_several_batches(log):
    request = ours(0, pid=1) + ours(0, pid=2) + ours(2, pid=1)
    info = log.append_as_leader(request)
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 5, 6)
    assert log.producer_state.last_entry(1).last_seq == 3
    assert log.producer_state.last_entry(2).last_seq == 1
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append_as_leader(ours(4, pid=1) + ours(5, pid=2))  # pid 2 is wrong: nothing written
    assert log.log_end_offset == 6 and log.producer_state.last_entry(1).last_seq == 3


def test_log_append_time_duplicate_answers_the_original_append_time(tmp_path, build):
    log = Log(tmp_path / "t-0", LogConfig(message_timestamp_type="LogAppendTime"))
    first = log.append_as_leader(build(0))
    again = log.append_as_leader(build(0))
    assert again.duplicate and again.log_append_time_ms == first.log_append_time_ms


# -- across restarts ------------------------------------------------------------------------------


def test_state_survives_a_clean_restart_through_the_snapshot(tmp_path, build):
    log = Log(tmp_path / "t-0")
    for k in range(6):
        log.append_as_leader(build(2 * k, epoch=5))
    log.close()
    assert (tmp_path / "t-0" / "00000000000000000012.snapshot").exists()
    again = Log(tmp_path / "t-0", had_clean_shutdown=True)
    entry = again.producer_state.last_entry(PID)
    assert entry.producer_epoch == 5 and len(entry.batch_metadata) == NUM_BATCHES_TO_RETAIN
    for k in range(1, 6):  # every remembered batch is still a duplicate after the restart
        info = again.append_as_leader(build(2 * k, epoch=5))
        assert info.duplicate and info.first_offset == 2 * k
    with pytest.raises(InvalidProducerEpochError):
        again.append_as_leader(build(12, epoch=4))
    assert again.append_as_leader(build(12, epoch=5)).first_offset == 12


def test_state_is_rebuilt_from_the_log_after_a_crash(tmp_path, build):
    log = Log(tmp_path / "t-0", LogConfig(segment_bytes=400))
    for k in range(12):
        log.append_as_leader(build(2 * k))
    log.flush()
    snapshots = sorted(p.name for p in (tmp_path / "t-0").glob("*.snapshot"))
    assert snapshots  # taken at the rolls
    log.close(clean=False)  # as after kill -9: the newest snapshot is older than the log end
    again = Log(tmp_path / "t-0", LogConfig(segment_bytes=400))
    assert again.producer_state.last_entry(PID).last_seq == 23
    assert again.append_as_leader(build(22)).duplicate
    assert again.append_as_leader(build(24)).first_offset == 24


def test_a_damaged_snapshot_is_ignored_and_the_log_replayed(tmp_path, build):
    log = Log(tmp_path / "t-0")
    for k in range(3):
        log.append_as_leader(build(2 * k))
    log.close()
    snap = tmp_path / "t-0" / "00000000000000000006.snapshot"
    data = bytearray(snap.read_bytes())
    data[-1] ^= 0xFF
    snap.write_bytes(bytes(data))
    again = Log(tmp_path / "t-0", had_clean_shutdown=True)
    assert not snap.exists()
    assert again.producer_state.last_entry(PID).last_seq == 5
    assert again.append_as_leader(build(4)).duplicate


def test_snapshot_file_round_trip(tmp_path, log):
    for pid in (1, 2, 3):
        for k in range(pid + 4):
            log.append_as_leader(ours(2 * k, pid=pid, epoch=pid))
    log.close()
    path = tmp_path / "t-0" / f"{log.log_end_offset:020d}.snapshot"
    assert ProducerStateManager.read_snapshot(path) == log.producer_state.producers


def test_truncation_rebuilds_producer_state(log, build):
    for k in range(4):
        log.append_as_leader(build(2 * k))
    log.truncate_to(4)
    assert log.producer_state.last_entry(PID).last_seq == 3
    assert log.append_as_leader(build(4)).first_offset == 4  # the truncated batch is new again


def test_idle_producers_expire(tmp_path):
    log = Log(tmp_path / "t-0", LogConfig(producer_id_expiration_ms=1000))
    log.append_as_leader(ours(0, ts=10_000))
    assert log.remove_expired_producers(now_ms=10_500) == 0
    assert log.remove_expired_producers(now_ms=11_000) == 1
    assert log.producer_state.last_entry(PID) is None
    assert log.append_as_leader(ours(8)).first_offset == 2  # unknown again: any sequence


@settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    actions=st.lists(
        st.one_of(
            st.tuples(st.just("send"), st.integers(1, 4)),
            st.tuples(st.just("retry"), st.integers(0, NUM_BATCHES_TO_RETAIN - 1)),
            st.tuples(st.just("restart"), st.booleans()),
        ),
        max_size=40,
    )
)
def test_any_mix_of_sends_retries_and_restarts_writes_each_record_once(tmp_path_factory, actions):
    directory = tmp_path_factory.mktemp("mix") / "t-0"
    cfg = LogConfig(segment_bytes=500)
    log = Log(directory, cfg)
    sent = []  # (first_seq, n, first_offset) of every batch written
    seq = 0
    for action, arg in actions:
        if action == "send":
            info = log.append_as_leader(ours(seq, arg))
            assert not info.duplicate and info.first_offset == seq
            sent.append((seq, arg, info.first_offset))
            seq += arg
        elif action == "retry" and len(sent) > arg:
            first_seq, n, first_offset = sent[-1 - arg]  # one of the last five: a duplicate
            info = log.append_as_leader(ours(first_seq, n))
            assert info.duplicate and (info.first_offset, info.record_count) == (first_offset, n)
        elif action == "restart":
            log.close(clean=arg)  # clean=False: the files as kill -9 leaves them
            log = Log(directory, cfg, had_clean_shutdown=arg)
    values = []
    while len(values) < log.log_end_offset:
        values += [r.value for r in iter_records(log.read(len(values), 1 << 20).records)]
    assert values == [b"seq-%d" % i for i in range(seq)]


def transactional(seq, n=2, *, pid=PID, epoch=0, ts=1_700_000_000_000):
    b = MemoryRecordsBuilder(1 << 12, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                             is_transactional=True)
    for i in range(n):
        b.append(ts, None, b"seq-%d" % (seq + i))
    b.close()
    return bytes(b.build())


def test_a_later_batch_cannot_overtake_one_being_verified(log):
    """Kafka's VerificationStateEntry (KIP-890): while the batch with a transaction's first
    sequences here is verified with the coordinator (or retried after a retriable answer), a
    later batch of that producer is out of order, even where the partition knows no epoch of
    the producer (which otherwise accepts any sequence).  Written first, it would leave the
    earlier batch out of sequence for good, and its producer retrying until its transaction
    times out and is fenced."""
    log.producer_state.start_verification(PID, 0, 0)
    log.producer_state.start_verification(PID, 0, 2)
    with pytest.raises(OutOfOrderSequenceNumberError, match="earliest seen sequence"):
        log.append_as_leader(transactional(2))
    assert log.log_end_offset == 0
    log.append_as_leader(transactional(0))  # the transaction opens: the verification is over
    log.append_as_leader(transactional(2))
    assert stored_values(log) == [b"seq-0", b"seq-1", b"seq-2", b"seq-3"]
    assert log.producer_state.verifications == {}


def test_a_verification_of_an_older_epoch_does_not_hold_a_newer_one(log):
    log.producer_state.start_verification(PID, 0, 0)
    log.producer_state.start_verification(PID, 1, 4)  # a new epoch starts over
    log.append_as_leader(transactional(4, epoch=1))  # no epoch known here: any sequence
    assert stored_values(log) == [b"seq-4", b"seq-5"]


def test_a_verification_refused_for_good_holds_nothing_back(log):
    log.producer_state.start_verification(PID, 0, 0)
    log.producer_state.end_verification(PID, 0)
    log.append_as_leader(transactional(2))
    assert stored_values(log) == [b"seq-2", b"seq-3"]
