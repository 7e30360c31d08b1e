"""ProducerBatch, its futures and callbacks: exactly-once completion, waiting, split.

Everything here runs the compiled batch on the real MemoryRecordsBuilder; record bytes are read
back with our reader (iter_records) and with kafka-python's, which we did not write.
"""

import concurrent.futures
import gc
import logging
import pickle
import signal
import threading
import time
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch
from support.examples import examples
from waits import wait_until_inside_call

from kafkacore.core.batch import FutureRecordMetadata, ProducerBatch, RecordMetadata
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_records
from kafkacore.core.record_sizes import estimate_size_upper_bound
from kafkacore.errors import IllegalStateError, KafkaTimeoutError

TOPIC = "events"
PARTITION = 3
CREATED_MS = 1_700_000_000_000


def make_batch(capacity=16384, created_ms=CREATED_MS, **builder_args):
    return ProducerBatch(
        TOPIC, PARTITION, MemoryRecordsBuilder(capacity, **builder_args), created_ms
    )


class Recorder:
    """A send() callback that remembers every call, in order."""

    def __init__(self):
        self.calls = []

    def callback_for(self, index):
        def callback(metadata, exception):
            self.calls.append((index, metadata, exception))

        return callback


def append_records(batch, count, recorder=None, value_size=100, first_ts=CREATED_MS):
    futures = []
    for i in range(count):
        callback = recorder.callback_for(i) if recorder is not None else None
        key = None if i % 3 == 0 else f"key-{i}".encode()
        future = batch.try_append(
            first_ts + i, key, bytes([i % 256]) * value_size, None, callback, first_ts + i
        )
        assert future is not None
        futures.append(future)
    return futures


# -- completion happens exactly once ----------------------------------------------------------


def test_success_fires_each_callback_once_in_append_order():
    batch = make_batch()
    recorder = Recorder()
    futures = append_records(batch, 5, recorder)
    assert batch.record_count == 5
    assert recorder.calls == []
    assert not any(f.done() for f in futures)
    assert all(f.running() for f in futures)

    assert batch.done(42, -1, None) is True

    assert [call[0] for call in recorder.calls] == [0, 1, 2, 3, 4]
    for i, (_, metadata, exception) in enumerate(recorder.calls):
        assert exception is None
        assert metadata.offset == 42 + i
        assert metadata == futures[i].result(timeout=0)
    assert all(f.done() and not f.running() for f in futures)
    assert batch.final_state == "succeeded"
    assert batch.is_done


def test_success_then_success_raises_and_fires_nothing_again():
    batch = make_batch()
    recorder = Recorder()
    futures = append_records(batch, 3, recorder)
    assert batch.done(42, -1, None)
    with pytest.raises(IllegalStateError, match="succeeded"):
        batch.done(99, -1, None)
    # Java: a succeeded batch must not change state at all, not even to failed.
    with pytest.raises(IllegalStateError):
        batch.done(-1, -1, RuntimeError("late failure"))
    assert len(recorder.calls) == 3
    assert [f.result(0).offset for f in futures] == [42, 43, 44]
    assert batch.final_state == "succeeded"


def test_failure_then_success_is_ignored():
    batch = make_batch()
    recorder = Recorder()
    futures = append_records(batch, 3, recorder)
    error = RuntimeError("expired in flight")
    assert batch.done(-1, -1, error) is True
    assert batch.done(42, -1, None) is False  # the late success changes nothing
    assert batch.done(-1, -1, ValueError("again")) is False
    assert recorder.calls == [(0, None, error), (1, None, error), (2, None, error)]
    for f in futures:
        assert f.exception(0) is error
        with pytest.raises(RuntimeError) as raised:
            f.result(0)
        assert raised.value is error
    assert batch.final_state == "failed"


def test_abort_completes_once_and_refuses_a_second_completion():
    batch = make_batch()
    recorder = Recorder()
    futures = append_records(batch, 2, recorder)
    reason = ConnectionError("producer closed")
    batch.abort(reason)
    assert batch.final_state == "aborted"
    assert recorder.calls == [(0, None, reason), (1, None, reason)]
    assert all(f.exception(0) is reason for f in futures)
    with pytest.raises(IllegalStateError, match="aborted"):
        batch.abort(reason)
    assert batch.done(7, -1, None) is False
    assert len(recorder.calls) == 2


def test_racing_completions_complete_exactly_once():
    # A delivery timeout (failure) and the broker's answer (success) race on two threads.  The
    # thread started last usually passes the barrier first, so we alternate the start order.
    winners = set()
    for round_ in range(100):
        batch = make_batch()
        recorder = Recorder()
        append_records(batch, 3, recorder, value_size=10)
        start = threading.Barrier(2)
        outcomes = {}

        def complete(name, exception, batch=batch, start=start, outcomes=outcomes):
            start.wait(5)
            try:
                outcomes[name] = batch.done(0 if exception is None else -1, -1, exception)
            except IllegalStateError:
                outcomes[name] = "refused"

        error = TimeoutError("expired")
        threads = [
            threading.Thread(target=complete, args=("success", None)),
            threading.Thread(target=complete, args=("failure", error)),
        ]
        if round_ % 2:
            threads.reverse()
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        if outcomes["success"] is True:
            # Success won: the failure must not change a succeeded batch (Java raises).
            assert outcomes["failure"] == "refused"
            assert [c[2] for c in recorder.calls] == [None, None, None]
            winners.add("success")
        else:
            # Failure won: the late success is ignored.
            assert outcomes == {"failure": True, "success": False}
            assert [c[2] for c in recorder.calls] == [error, error, error]
            winners.add("failure")
        assert len(recorder.calls) == 3
        assert batch.final_state == ("succeeded" if outcomes["success"] is True else "failed")
    print("winners seen:", winners)  # both orders usually occur; either way exactly one completes


def test_a_completed_batch_takes_no_more_records():
    batch = make_batch()
    append_records(batch, 1)
    batch.done(0, -1, None)
    assert batch.try_append(CREATED_MS, None, b"late", None, None, CREATED_MS) is None
    assert batch.record_count == 1


# -- callbacks ---------------------------------------------------------------------------------


def test_a_failing_callback_is_logged_and_does_not_stop_the_others(caplog):
    batch = make_batch()
    seen = []

    def bad(metadata, exception):
        raise ValueError("user bug")

    for i in range(4):
        callback = bad if i % 2 == 0 else (lambda m, e, i=i: seen.append((i, m.offset)))
        batch.try_append(CREATED_MS, None, b"v", None, callback, CREATED_MS)
    with caplog.at_level(logging.ERROR, logger="kafkacore"):
        assert batch.done(10, -1, None)
    assert seen == [(1, 11), (3, 13)]
    errors = [r for r in caplog.records if r.name == "kafkacore" and r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert all(r.exc_info and r.exc_info[0] is ValueError for r in errors)


def test_keyboard_interrupt_in_a_callback_still_completes_every_record():
    batch = make_batch()
    seen = []

    def interrupt(metadata, exception):
        raise KeyboardInterrupt

    batch.try_append(CREATED_MS, None, b"a", None, interrupt, CREATED_MS)
    future = batch.try_append(CREATED_MS, None, b"b", None, lambda m, e: seen.append(m), CREATED_MS)
    with pytest.raises(KeyboardInterrupt):
        batch.done(5, -1, None)
    assert [m.offset for m in seen] == [6]
    assert future.done() and future.result(0).offset == 6


def test_callbacks_are_dropped_once_fired():
    class Callback:
        def __call__(self, metadata, exception):
            pass

    batch = make_batch()
    callback = Callback()
    ref = weakref.ref(callback)
    future = batch.try_append(CREATED_MS, None, b"v", None, callback, CREATED_MS)
    del callback
    gc.collect()
    assert ref() is not None  # the batch keeps it until it fires
    batch.done(0, -1, None)
    gc.collect()
    assert ref() is None
    assert future.done()


def test_a_callback_can_ask_its_own_batch_for_results():
    # The callbacks run before the latch opens (as in Java, so that flush() returning means every
    # callback has run); a callback asking a future of its own batch gets the answer at once.
    batch = make_batch()
    inside = []
    futures = []

    def callback(metadata, exception):
        inside.append(
            (futures[0].done(), futures[0].result(timeout=5).offset, futures[1].result(timeout=5))
        )

    futures.append(batch.try_append(CREATED_MS, None, b"a", None, callback, CREATED_MS))
    futures.append(batch.try_append(CREATED_MS, None, b"b", None, None, CREATED_MS))
    batch.done(100, -1, None)
    assert inside == [(False, 100, futures[1].result(0))]
    assert futures[1].result(0).offset == 101


# -- futures -----------------------------------------------------------------------------------


def test_result_with_a_timeout_raises_a_timeout_error_in_bounds():
    batch = make_batch()
    (future,) = append_records(batch, 1)
    for call in (future.result, future.get, future.exception):
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError) as raised:
            call(timeout=0.2)
        elapsed = time.monotonic() - started
        assert isinstance(raised.value, TimeoutError)  # like concurrent.futures
        assert 0.2 <= elapsed < 5  # bounded; the slack is for a noisy 2-core machine
    with pytest.raises(TimeoutError):
        future.result(timeout=0)
    with pytest.raises(TimeoutError):
        future.result(timeout=-3)  # a negative bound means "do not wait", as in concurrent.futures


def test_a_waiting_thread_is_released_by_done_on_another_thread():
    batch = make_batch()
    futures = append_records(batch, 3)
    got = {}

    def wait_for(i):
        try:
            got[i] = futures[i].result(timeout=10)
        except BaseException as e:  # noqa: BLE001 - the assertion below reports it
            got[i] = e

    waiters = [threading.Thread(target=wait_for, args=(i,)) for i in range(3)]
    for t in waiters:
        t.start()
    for t in waiters:
        wait_until_inside_call(t, "result")
    assert got == {}  # all three are inside result(), and none came back: they wait
    batch.done(1000, -1, None)
    for t in waiters:
        t.join(5)
        assert not t.is_alive()
    assert {i: m.offset for i, m in got.items()} == {0: 1000, 1: 1001, 2: 1002}


def test_a_signal_interrupts_a_wait_in_the_main_thread():
    # Ctrl-C must reach a main thread blocked in result(): the wait lets signal handlers run.
    class Interrupted(Exception):
        pass

    def handler(signum, frame):
        raise Interrupted

    batch = make_batch()
    (future,) = append_records(batch, 1)
    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        started = time.monotonic()
        with pytest.raises(Interrupted):
            future.result(timeout=5)  # without signal handling: KafkaTimeoutError after 5 s
        assert time.monotonic() - started < 4
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not future.done()
    batch.done(0, -1, None)
    assert future.result(timeout=0).offset == 0


def test_a_waiting_thread_sees_the_failure():
    batch = make_batch()
    (future,) = append_records(batch, 1)
    error = RuntimeError("NOT_LEADER")
    got = []

    def wait_for_exception():
        got.append(future.exception(timeout=10))

    waiter = threading.Thread(target=wait_for_exception)
    waiter.start()
    wait_until_inside_call(waiter, "exception")
    assert got == []  # inside exception(), waiting: the failure must wake it
    batch.done(-1, -1, error)
    waiter.join(5)
    assert not waiter.is_alive()
    assert got == [error]


def test_exception_is_none_on_success():
    batch = make_batch()
    (future,) = append_records(batch, 1)
    batch.done(0, -1, None)
    assert future.exception() is None
    assert future.exception(timeout=0) is None


def test_cancel_is_refused():
    batch = make_batch()
    (future,) = append_records(batch, 1)
    assert future.cancel() is False
    assert future.cancelled() is False
    batch.done(0, -1, None)
    assert future.cancel() is False
    assert future.cancelled() is False


def test_done_callbacks_before_and_after_completion(caplog):
    batch = make_batch()
    order = []
    future = batch.try_append(
        CREATED_MS, None, b"v", None, lambda m, e: order.append("send callback"), CREATED_MS
    )
    future.add_done_callback(lambda f: order.append(("done callback", f is future, f.done())))
    future.add_done_callback(lambda f: 1 / 0)  # logged, does not stop anything
    with caplog.at_level(logging.ERROR, logger="kafkacore"):
        batch.done(0, -1, None)
    assert order == ["send callback", ("done callback", True, True)]
    assert any(r.exc_info and r.exc_info[0] is ZeroDivisionError for r in caplog.records)
    # Once done, a new done-callback runs at once, on the calling thread.
    future.add_done_callback(lambda f: order.append("late"))
    assert order[-1] == "late"


def test_done_callbacks_one_or_many_with_waiters_coming_and_going():
    # One done-callback is kept on its own, more in a list; a concurrent.futures waiter (wait()
    # installs one and removes it at its timeout) comes and goes among them in either shape.
    batch = make_batch()
    one, many, waited_first = append_records(batch, 3)
    ran = []
    one.add_done_callback(lambda f: ran.append("one"))
    concurrent.futures.wait([one], timeout=0)
    for i in range(3):
        many.add_done_callback(lambda f, i=i: ran.append(f"many {i}"))
        concurrent.futures.wait([many], timeout=0)
    concurrent.futures.wait([waited_first], timeout=0)
    waited_first.add_done_callback(lambda f: ran.append("after a waiter"))
    batch.done(0, -1, None)
    assert ran == ["one", "many 0", "many 1", "many 2", "after a waiter"]


def test_one_done_callback_per_record_leaves_the_cycle_collector_nothing_to_walk():
    # asyncio code adds a done-callback to every record: that must not cost an object the
    # collector tracks per record in flight (it walks all of them at every collection).
    batch = make_batch(capacity=1 << 20)
    futures = append_records(batch, 2000, value_size=1)
    gc.collect()
    tracked = len(gc.get_objects())
    for future in futures:
        future.add_done_callback(len)
    assert len(gc.get_objects()) - tracked < 100
    batch.done(0, -1, None)


def test_add_done_callback_races_completion():
    # Registrations racing done() on another thread: every callback runs, exactly once.
    for _ in range(50):
        batch = make_batch()
        futures = append_records(batch, 20, value_size=1)
        counts = [0] * 20
        start = threading.Barrier(2)

        def register(futures=futures, counts=counts, start=start):
            start.wait(5)
            for i, f in enumerate(futures):
                f.add_done_callback(lambda f, i=i: counts.__setitem__(i, counts[i] + 1))

        t = threading.Thread(target=register)
        t.start()
        start.wait(5)
        batch.done(0, -1, None)
        t.join(5)
        assert counts == [1] * 20


def test_as_concurrent_future_works_with_wait_and_as_completed():
    batch = make_batch()
    futures = append_records(batch, 3)
    bridged = [f.as_concurrent_future() for f in futures]
    assert all(isinstance(b, concurrent.futures.Future) for b in bridged)
    done, pending = concurrent.futures.wait(bridged, timeout=0.05)
    assert not done and len(pending) == 3
    batch.done(7, -1, None)
    done, pending = concurrent.futures.wait(bridged, timeout=5)
    assert len(done) == 3 and not pending
    offsets = sorted(b.result().offset for b in concurrent.futures.as_completed(bridged, timeout=5))
    assert offsets == [7, 8, 9]

    failed = make_batch()
    (future,) = append_records(failed, 1)
    bridge = future.as_concurrent_future()
    failed.done(-1, -1, KeyError("x"))
    assert isinstance(bridge.exception(timeout=5), KeyError)


def test_the_futures_themselves_work_with_wait_and_as_completed():
    # No bridge: the standard library's own functions, given our futures.
    batch = make_batch()
    futures = append_records(batch, 3)
    assert all(isinstance(f, concurrent.futures.Future) for f in futures)
    assert type(futures[0]) is FutureRecordMetadata
    done, pending = concurrent.futures.wait(futures, timeout=0)
    assert not done and pending == set(futures)
    done, pending = concurrent.futures.wait(
        futures, timeout=0, return_when=concurrent.futures.FIRST_COMPLETED)
    assert not done

    # A waiter installed before completion is woken by it (the completion runs on another
    # thread once this one blocks inside wait(), its waiters installed).
    main = threading.current_thread()

    def complete_once_waited_for():
        # Blocked in the Event.wait() that wait() calls after installing its waiters.
        wait_until_inside_call(
            main, "acquire", within=(concurrent.futures.wait, threading.Event.wait)
        )
        batch.done(7, -1, None)

    completer = threading.Thread(target=complete_once_waited_for)
    completer.start()
    done, pending = concurrent.futures.wait(futures, timeout=30)
    completer.join(5)
    assert done == set(futures) and not pending
    offsets = sorted(f.result().offset for f in concurrent.futures.as_completed(futures, timeout=5))
    assert offsets == [7, 8, 9]
    # Done futures: wait returns at once with all of them, FIRST_EXCEPTION too.
    done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
    assert done == set(futures)


def test_as_completed_yields_in_completion_order_across_batches():
    first, second = make_batch(), make_batch()
    (a,) = append_records(first, 1)
    (b,) = append_records(second, 1)
    seen = []
    it = concurrent.futures.as_completed([a, b], timeout=30)
    second.done(5, -1, None)
    seen.append(next(it))
    first.done(-1, -1, KeyError("x"))
    seen.append(next(it))
    assert seen == [b, a]
    assert isinstance(a.exception(0), KeyError) and b.result(0).offset == 5


def test_wait_first_exception_stops_at_the_failed_record():
    ok, bad = make_batch(), make_batch()
    (good,) = append_records(ok, 1)
    (failing,) = append_records(bad, 1)
    threading.Thread(target=bad.done, args=(-1, -1, ValueError("no"))).start()
    done, pending = concurrent.futures.wait(
        [good, failing], timeout=30, return_when=concurrent.futures.FIRST_EXCEPTION)
    assert done == {failing} and pending == {good}
    ok.done(0, -1, None)


def test_wait_and_completion_racing_never_miss_a_record():
    # Completion on another thread while wait() installs its waiter: wait() must always return
    # with every future done (a missed notification would hang until the bound, and fail).
    for _ in range(100):
        batch = make_batch()
        futures = append_records(batch, 5, value_size=1)
        t = threading.Thread(target=batch.done, args=(0, -1, None))
        t.start()
        done, pending = concurrent.futures.wait(futures, timeout=30)
        t.join(5)
        assert len(done) == 5 and not pending


def test_wrap_future_and_await():
    import asyncio

    batch = make_batch()
    futures = append_records(batch, 2)

    async def main():
        wrapped = asyncio.wrap_future(futures[0])
        asyncio.get_running_loop().call_soon(
            lambda: threading.Thread(target=batch.done, args=(40, -1, None)).start())
        first = await wrapped
        second = await futures[1]
        return first, second

    first, second = asyncio.run(main())
    assert (first.offset, second.offset) == (40, 41)

    failed = make_batch()
    (future,) = append_records(failed, 1)
    failed.done(-1, -1, KeyError("gone"))

    async def awaiting():
        await future

    with pytest.raises(KeyError, match="gone"):
        asyncio.run(awaiting())


def test_add_callback_and_add_errback_kafka_python_style():
    batch = make_batch()
    (future,) = append_records(batch, 1)
    got = []
    chained = future.add_callback(got.append).add_errback(lambda e: got.append(("err", e)))
    assert chained is future
    future.add_callback(lambda tag, md: got.append((tag, md.offset)), "tag")
    batch.done(3, -1, None)
    assert got[0].offset == 3 and got[1] == ("tag", 3) and len(got) == 2

    failed = make_batch()
    (future,) = append_records(failed, 1)
    errors = []
    future.add_callback(lambda md: errors.append("called on failure"))
    failed.done(-1, -1, ValueError("x"))
    future.add_errback(errors.append)  # done already: runs at once
    assert len(errors) == 1 and isinstance(errors[0], ValueError)
    with pytest.raises(TypeError):
        future.add_callback(None)


def test_future_repr():
    batch = make_batch()
    (future,) = append_records(batch, 1)
    assert "pending" in repr(future) and "events-3" in repr(future)
    batch.done(12, -1, None)
    assert "offset=12" in repr(future)


# -- RecordMetadata ----------------------------------------------------------------------------


def test_metadata_fields_create_time_and_sizes():
    batch = make_batch()
    f_null_key = batch.try_append(1111, None, b"x" * 100, None, None, 1111)
    f_keyed = batch.try_append(2222, b"abc", bytearray(7), None, None, 2222)
    f_null_value = batch.try_append(3333, memoryview(b"kk"), None, None, None, 3333)
    batch.done(500, -1, None)  # -1: the topic uses CreateTime
    assert f_null_key.result() == RecordMetadata(TOPIC, PARTITION, 500, 1111, -1, 100)
    assert f_keyed.result() == RecordMetadata(TOPIC, PARTITION, 501, 2222, 3, 7)
    assert f_null_value.result() == RecordMetadata(TOPIC, PARTITION, 502, 3333, 2, -1)


def test_metadata_log_append_time_replaces_create_time():
    batch = make_batch()
    futures = append_records(batch, 3)
    batch.done(0, 1_800_000_000_000, None)
    assert [f.result().timestamp for f in futures] == [1_800_000_000_000] * 3


def test_metadata_without_offset_when_broker_gives_none():
    batch = make_batch()
    futures = append_records(batch, 2)
    batch.done(-1, -1, None)  # acks=0: no offsets
    assert [f.result().offset for f in futures] == [-1, -1]
    assert not futures[0].result().has_offset()
    assert futures[0].result().has_timestamp()


def test_metadata_is_a_value():
    a = RecordMetadata("t", 1, 2, 3, 4, 5)
    b = RecordMetadata("t", 1, 2, 3, 4, 5)
    assert a == b and hash(a) == hash(b) and a != RecordMetadata("t", 1, 3, 3, 4, 5)
    assert pickle.loads(pickle.dumps(a)) == a
    assert repr(a) == (
        "RecordMetadata(topic='t', partition=1, offset=2, timestamp=3, "
        "serialized_key_size=4, serialized_value_size=5)"
    )
    with pytest.raises(AttributeError):
        a.offset = 9


# -- room in the batch -------------------------------------------------------------------------


def test_full_batch_returns_none_and_keeps_its_records():
    batch = make_batch(capacity=1024)
    recorder = Recorder()
    futures = []
    while True:
        f = batch.try_append(
            CREATED_MS, None, b"v" * 100, None, recorder.callback_for(len(futures)), CREATED_MS
        )
        if f is None:
            break
        futures.append(f)
        assert len(futures) < 20, "a 1 KiB batch cannot take 20 records of 100 bytes"
    assert 5 <= len(futures) <= 9
    assert batch.record_count == len(futures)
    assert batch.try_append(CREATED_MS, None, b"v" * 100, None, None, CREATED_MS) is None
    batch.close()
    assert len(list(iter_records(batch.records()))) == len(futures)
    batch.done(0, -1, None)
    assert [c[0] for c in recorder.calls] == list(range(len(futures)))


def test_empty_batch_takes_one_oversized_record():
    batch = make_batch(capacity=64)
    big = b"B" * 5000
    future = batch.try_append(CREATED_MS, b"k", big, None, None, CREATED_MS)
    assert future is not None
    assert batch.try_append(CREATED_MS, None, b"small", None, None, CREATED_MS) is None
    assert batch.max_record_size > 5000
    batch.close()
    (record,) = iter_records(batch.records())
    assert record.value == big
    batch.done(3, -1, None)
    assert future.result().serialized_value_size == 5000


def test_max_record_size_tracks_the_largest_record():
    batch = make_batch()
    batch.try_append(CREATED_MS, None, b"x" * 10, None, None, CREATED_MS)
    small = batch.max_record_size
    batch.try_append(CREATED_MS, None, b"x" * 500, None, None, CREATED_MS)
    large = batch.max_record_size
    batch.try_append(CREATED_MS, None, b"x" * 20, None, None, CREATED_MS)
    assert 10 < small < large and large >= 500 and batch.max_record_size == large


# -- split (MESSAGE_TOO_LARGE) -----------------------------------------------------------------


def _fill_for_split(count=40, value_size=150, **builder_args):
    batch = make_batch(capacity=65536, **builder_args)
    recorder = Recorder()
    futures = []
    for i in range(count):
        headers = [("n", str(i).encode())] if i % 2 else None
        f = batch.try_append(
            CREATED_MS + i,
            f"k{i}".encode(),
            bytes([65 + i % 26]) * value_size,
            headers,
            recorder.callback_for(i),
            CREATED_MS + i,
        )
        futures.append(f)
    return batch, futures, recorder


@pytest.mark.parametrize("compression", ["none", "gzip", "zstd"])
def test_split_preserves_every_record(compression):
    batch, futures, recorder = _fill_for_split(compression=compression)
    batch.close()
    original = [
        (r.timestamp, r.key, r.value, list(r.headers)) for r in iter_records(batch.records())
    ]
    pieces = batch.split(1024)
    assert len(pieces) > 3
    assert all(p.is_split_batch and p.topic == TOPIC and p.partition == PARTITION for p in pieces)
    assert all(p.created_ms == CREATED_MS for p in pieces)
    assert sum(p.record_count for p in pieces) == 40
    again = []
    for piece in pieces:
        piece.close()
        data = bytes(piece.records())
        records = list(iter_records(data))
        assert len(records) == piece.record_count
        again += [(r.timestamp, r.key, r.value, list(r.headers)) for r in records]
        # An oracle we did not write reads the same records.
        oracle = list(DefaultRecordBatch(data))
        assert [(r.key, r.value) for r in oracle] == [(r.key, r.value) for r in records]
    assert again == original
    assert batch.final_state == "split"
    assert recorder.calls == []


def test_split_completes_the_original_futures_once_with_new_offsets():
    batch, futures, recorder = _fill_for_split()
    batch.close()
    waited = []

    def wait_for_last():
        waited.append(futures[-1].result(timeout=10))

    waiter = threading.Thread(target=wait_for_last)
    waiter.start()
    # It blocks on the ORIGINAL batch's result and must follow the record to its piece.
    wait_until_inside_call(waiter, "result")
    assert waited == []
    pieces = batch.split(1024)
    late = []
    futures[0].add_done_callback(lambda f: late.append(f.result(0).offset))

    # The original batch can no longer complete the moved records.
    assert batch.done(1, -1, None) is False
    with pytest.raises(IllegalStateError):
        batch.abort(RuntimeError("closing"))
    with pytest.raises(IllegalStateError):
        batch.split(1024)
    assert recorder.calls == [] and not any(f.done() for f in futures)
    assert batch.await_done(0.05) is False

    expected = {}
    index = 0
    for n, piece in enumerate(pieces):
        base = 1000 * (n + 1)
        for delta in range(piece.record_count):
            expected[index] = base + delta
            index += 1
        assert piece.done(base, -1, None)
    assert batch.await_done(5) is True

    assert sorted(c[0] for c in recorder.calls) == list(range(40))  # each callback once
    assert [c[0] for c in recorder.calls] == list(range(40))  # still in record order
    for i, metadata, exception in recorder.calls:
        assert exception is None and metadata.offset == expected[i]
        assert metadata.timestamp == CREATED_MS + i
    assert [f.result(0).offset for f in futures] == [expected[i] for i in range(40)]
    waiter.join(5)
    assert [m.offset for m in waited] == [expected[39]]
    assert late == [expected[0]]


def test_split_pieces_can_fail_separately():
    batch, futures, recorder = _fill_for_split(count=10, value_size=400)
    batch.close()
    first, *rest = batch.split(1024)
    error = RuntimeError("still too large")
    first.done(-1, -1, error)
    for p in rest:
        p.done(50, -1, None)
    for i in range(first.record_count):
        assert futures[i].exception(0) is error
    for f in futures[first.record_count :]:
        assert f.exception(0) is None
    assert len(recorder.calls) == 10


@settings(max_examples=examples(40), deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=700), min_size=1, max_size=30),
    split_size=st.integers(min_value=64, max_value=3000),
)
def test_split_property_every_record_once_in_order(sizes, split_size):
    batch = make_batch(capacity=65536)
    calls = []
    futures = [
        batch.try_append(
            CREATED_MS + i,
            None,
            bytes([i % 256]) * n,
            None,
            lambda m, e, i=i: calls.append((i, m.offset)),
            CREATED_MS,
        )
        for i, n in enumerate(sizes)
    ]
    batch.close()
    pieces = batch.split(split_size)
    values = []
    base = 0
    for piece in pieces:
        records = list(iter_records(piece.records()))
        values += [r.value for r in records]
        # Java's rule: a piece is sized for its first record or split_size, whichever is larger.
        limit = max(split_size, estimate_size_upper_bound(records[0].key, records[0].value, None))
        assert piece.record_count == 1 or piece.estimated_size_in_bytes() <= limit
        piece.done(base, -1, None)
        base += 1000
    assert values == [bytes([i % 256]) * n for i, n in enumerate(sizes)]
    assert [i for i, _ in calls] == list(range(len(sizes)))
    assert [f.result(0).offset for f in futures] == [offset for _, offset in calls]


def test_split_gives_the_pieces_consecutive_sequences():
    batch, _, _ = _fill_for_split(count=20)
    batch.set_producer_state(77, 3, 500, False)
    pieces = batch.split(1024)
    sequence = 500
    for p in pieces:
        assert (p.producer_id, p.producer_epoch, p.base_sequence) == (77, 3, sequence)
        sequence += p.record_count
    assert sequence == 520


def test_split_refuses_completed_batches():
    batch, _, _ = _fill_for_split(count=3)
    batch.done(0, -1, None)
    with pytest.raises(IllegalStateError):
        batch.split(1024)
    with pytest.raises(ValueError):
        make_batch().split(0)


def test_split_of_a_split_piece_still_reaches_the_original_future():
    batch, futures, recorder = _fill_for_split(count=12, value_size=200)
    batch.close()
    pieces = batch.split(2048)
    smaller = pieces[0].split(400)
    assert len(smaller) > 1
    for n, piece in enumerate(smaller + pieces[1:]):
        piece.done(10 * n, -1, None)
    assert all(f.done() for f in futures)
    assert len(recorder.calls) == 12


# -- bookkeeping -------------------------------------------------------------------------------


def test_delivery_timeout_and_reenqueue_bookkeeping():
    batch = make_batch(created_ms=1000)
    assert (batch.created_ms, batch.last_append_ms, batch.last_attempt_ms) == (1000, 1000, 1000)
    batch.try_append(1500, None, b"v", None, None, 1500)
    assert batch.last_append_ms == 1500
    assert not batch.has_reached_delivery_timeout(120_000, 1000 + 119_999)
    assert batch.has_reached_delivery_timeout(120_000, 1000 + 120_000)
    assert not batch.in_retry() and batch.attempts == 0
    batch.drained(2000)
    assert batch.queue_time_ms() == 1000
    batch.reenqueued(3000)
    assert batch.attempts == 1 and batch.in_retry()
    assert batch.last_attempt_ms == 3000 and batch.last_append_ms == 3000
    assert batch.waited_time_ms(3500) == 500
    assert batch.waited_time_ms(2500) == 0
    batch.reenqueued(2000)  # an older clock reading never moves times back
    assert batch.attempts == 2 and batch.last_attempt_ms == 3000


def test_buffer_and_capacity_come_from_the_builder():
    pooled = bytearray(4096)
    builder = MemoryRecordsBuilder(pooled)
    batch = ProducerBatch(TOPIC, PARTITION, builder, CREATED_MS)
    assert batch.initial_capacity == 4096
    assert batch.buffer is pooled
    assert batch.estimated_size_in_bytes() > 0
    assert not batch.is_full() and not batch.is_closed
    batch.try_append(CREATED_MS, None, b"v", None, None, CREATED_MS)
    batch.close()
    assert batch.is_closed


def test_await_done():
    batch = make_batch()
    append_records(batch, 1)
    assert batch.await_done(0.05) is False
    t = threading.Timer(0.05, batch.done, args=(0, -1, None))
    t.start()
    assert batch.await_done(5) is True
    t.join(5)


def test_producer_batch_repr():
    batch = make_batch()
    assert repr(batch) == (
        "ProducerBatch(topic='events', partition=3, record_count=0, final_state=None)"
    )


# -- bad input ---------------------------------------------------------------------------------


def test_bad_constructor_arguments():
    with pytest.raises(TypeError, match="topic"):
        ProducerBatch(7, 0, MemoryRecordsBuilder(1024), 0)
    with pytest.raises(ValueError, match="topic"):
        ProducerBatch("", 0, MemoryRecordsBuilder(1024), 0)
    with pytest.raises(ValueError, match="partition"):
        ProducerBatch("t", -1, MemoryRecordsBuilder(1024), 0)
    with pytest.raises(TypeError, match="partition"):
        ProducerBatch("t", 1.0, MemoryRecordsBuilder(1024), 0)
    with pytest.raises(TypeError):
        ProducerBatch("t", 0, bytearray(1024), 0)
    with pytest.raises(TypeError):
        ProducerBatch("t", 0, None, 0)
    with pytest.raises(TypeError, match="created_ms"):
        ProducerBatch("t", 0, MemoryRecordsBuilder(1024), 12.5)
    used = MemoryRecordsBuilder(1024)
    used.append(0, None, b"x")
    with pytest.raises(ValueError, match="empty"):
        ProducerBatch("t", 0, used, 0)
    with pytest.raises(TypeError):
        FutureRecordMetadata()


def test_bad_append_arguments():
    batch = make_batch()
    with pytest.raises(TypeError, match="key"):
        batch.try_append(0, "text key", b"v", None, None, 0)
    with pytest.raises(TypeError, match="value"):
        batch.try_append(0, None, 12, None, None, 0)
    with pytest.raises(TypeError, match="callback"):
        batch.try_append(0, None, b"v", None, "not callable", 0)
    with pytest.raises(TypeError, match="timestamp_ms"):
        batch.try_append(1.5, None, b"v", None, None, 0)  # refused, not truncated
    with pytest.raises(TypeError, match="now_ms"):
        batch.try_append(0, None, b"v", None, None, "now")
    with pytest.raises(ValueError, match="timestamp"):
        batch.try_append(-5, None, b"v", None, None, 0)
    with pytest.raises(TypeError, match="headers"):
        batch.try_append(0, None, b"v", [(1, b"x")], None, 0)
    assert batch.record_count == 0  # nothing half-appended
    assert batch.try_append(0, None, b"v", None, None, 0) is not None
    batch.close()
    assert [r.value for r in iter_records(batch.records())] == [b"v"]  # the builder is intact


def test_bad_completion_arguments():
    batch = make_batch()
    (future,) = append_records(batch, 1)
    with pytest.raises(TypeError, match="exception"):
        batch.done(0, -1, "an error string")
    with pytest.raises(TypeError, match="exception"):
        batch.done(0, -1, RuntimeError)  # a class, not an instance
    with pytest.raises(TypeError, match="exception"):
        batch.abort(None)
    with pytest.raises(TypeError):
        future.result(timeout="soon")
    with pytest.raises(ValueError, match="NaN"):
        future.result(timeout=float("nan"))
    with pytest.raises(TypeError, match="callable"):
        future.add_done_callback(42)
    assert batch.final_state is None  # none of that completed anything
    assert batch.done(0, -1, None)
