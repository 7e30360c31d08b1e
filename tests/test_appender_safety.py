"""The compiled paths under misuse and races (issue 11, Part 1 items 6-8): typed errors, every
record completed once, nothing hung, nothing read out of bounds, memory bounded."""

from __future__ import annotations

import threading

import pytest

from kafkacore.core.batch import BatchFuture, ProducerBatch
from kafkacore.core.records import MemoryRecordsBuilder
from kafkacore.errors import KafkaTimeoutError

CREATED_MS = 1_700_000_000_000


def make_batch():
    return ProducerBatch("events", 0, MemoryRecordsBuilder(16384), CREATED_MS)


# -- BatchFuture: a completion that raises stops nothing ------------------------------------


def test_a_row_completion_that_raises_still_completes_the_rest_of_the_batch(caplog):
    # A BatchFuture given as an ordinary callback has no row (-1): completing it raises.  Before
    # the fix that stopped _complete half-way: the next record's future was never completed and
    # its result() without a timeout hung for good.
    batch = make_batch()
    broken = BatchFuture("events", 1)
    batch.try_append(CREATED_MS, None, b"a", None, broken, CREATED_MS)
    seen = []
    later = batch.try_append(CREATED_MS, None, b"b", None, lambda m, e: seen.append(m), CREATED_MS)
    batch.done(40, -1, None)
    assert later.result(5).offset == 41
    assert [m.offset for m in seen] == [41]
    assert any("send_batch" in r.getMessage() for r in caplog.records)


def test_empty_batch_future_is_done_and_runs_a_late_callback_once():
    future = BatchFuture("events", 0)
    calls = []
    future.add_done_callback(calls.append)
    assert calls == [future]
    assert future.result().failed == 0


def test_batch_future_callbacks_race_completion_and_each_runs_once():
    # add_done_callback on one thread while the rows complete on another: each callback runs
    # exactly once, whichever side wins.
    for _ in range(30):
        batch = make_batch()
        futures = [BatchFuture("events", 1) for _ in range(20)]
        # BatchFuture rows are completed through _record_done: reach it via a one-row call.
        for f in futures:
            f.set_partition(0, 0)
        counts = [0] * len(futures)
        start = threading.Barrier(2)

        def register(futures=futures, counts=counts, start=start):
            start.wait(5)
            for i, f in enumerate(futures):
                f.add_done_callback(lambda f, i=i: counts.__setitem__(i, counts[i] + 1))

        t = threading.Thread(target=register)
        t.start()
        start.wait(5)
        for f in futures:
            f._complete_row(0, 7, None)
        t.join(5)
        assert not t.is_alive()
        assert counts == [1] * len(futures)
        assert all(f.result(0).offsets[0] == 7 for f in futures)
        del batch


def test_a_done_callback_raising_keyboard_interrupt_does_not_stop_the_others():
    future = BatchFuture("events", 1)
    ran = []

    def interrupt(f):
        raise KeyboardInterrupt

    future.add_done_callback(interrupt)
    future.add_done_callback(lambda f: ran.append(f))
    with pytest.raises(KeyboardInterrupt):
        future._complete_row(0, 3, None)
    assert ran == [future]
    assert future.result().offsets[0] == 3


def test_batch_future_result_times_out_while_rows_are_pending():
    future = BatchFuture("events", 2)
    future._complete_row(0, 1, None)
    with pytest.raises(KafkaTimeoutError):
        future.result(0.01)
