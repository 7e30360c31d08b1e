"""BufferPool: Java's allocate/deallocate cases, FIFO waiters, timeouts, close, and a stress run.

Every test ends by checking the pool's books: whatever happened, all memory must come back.
"""

import _thread
import math
import random
import signal
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples
from waits import wait_until

from kafkacore.core.buffer_pool import BufferPool, BufferPoolStatistics
from kafkacore.core.bytestream import ByteBufferOutputStream
from kafkacore.errors import (
    BufferExhaustedError,
    IllegalStateError,
    KafkaTimeoutError,
    RecordTooLargeError,
)

POOLABLE = 100


def books_balance(pool):
    """The pool's invariant: every byte is available, handed out, or set aside for a waiter."""
    s = pool.statistics()
    assert s.available_memory == s.unallocated_memory + s.free_buffers * s.poolable_size
    assert s.available_memory + s.allocated_memory + s.reserved_memory == s.total_memory
    return s


class Waiter(threading.Thread):
    """A thread blocked in allocate(); keeps what it got or the exception it raised."""

    def __init__(self, pool, size, max_ms, order=None):
        super().__init__(daemon=True)
        self.pool, self.size, self.max_ms, self.order = pool, size, max_ms, order
        self.buffer = None
        self.error = None
        self.finished = threading.Event()

    def run(self):
        try:
            self.buffer = self.pool.allocate(self.size, self.max_ms)
            if self.order is not None:
                self.order.append(self.name)
        except BaseException as e:  # noqa: B036 - the test inspects it
            self.error = e
        finally:
            self.finished.set()


def start_waiters(pool, sizes, max_ms=10_000, order=None):
    """Start waiters one at a time, each only after the previous one is queued (FIFO order)."""
    waiters = []
    for i, size in enumerate(sizes):
        before = pool.queued()
        w = Waiter(pool, size, max_ms, order)
        w.name = f"w{i}"
        w.start()
        wait_until(lambda before=before: pool.queued() == before + 1, "one more waiter queued")
        waiters.append(w)
    return waiters


# ------------------------------------------------------------------- the four cases


def test_fresh_buffers_have_the_exact_size_and_are_zeroed():
    pool = BufferPool(2000, POOLABLE)
    for size in (1, 333, POOLABLE, 565):
        # Leave junk in memory the allocator is likely to hand straight back.
        junk = pool.allocate(size, 0)
        junk[:] = b"\xff" * size
        pool.deallocate(junk, size)
        if size == POOLABLE:
            pool.allocate(POOLABLE, 0)  # take the pooled one off the free list
        del junk
        buf = pool.allocate(size, 0)
        assert type(buf) is bytearray and len(buf) == size
        assert buf == bytearray(size)
    assert books_balance(pool).allocated_memory == 1 + 333 + 2 * POOLABLE + 565


def test_case1_poolable_request_reuses_a_free_buffer_unzeroed():
    pool = BufferPool(1000, POOLABLE)
    a = pool.allocate(POOLABLE, 0)
    a[:5] = b"hello"
    pool.deallocate(a)
    s = books_balance(pool)
    assert (s.free_buffers, s.unallocated_memory, s.available_memory) == (1, 900, 1000)
    b = pool.allocate(POOLABLE, 0)
    assert b is a
    # Documented: like Java, a reused buffer is not cleared.
    assert bytes(b[:5]) == b"hello"
    s = books_balance(pool)
    assert (s.free_buffers, s.unallocated_memory, s.allocated_memory) == (0, 900, POOLABLE)


def test_case2_poolable_request_with_empty_free_list_takes_unallocated_memory():
    pool = BufferPool(1000, POOLABLE)
    a = pool.allocate(POOLABLE, 0)
    assert pool.unallocated_memory() == 900
    assert pool.statistics().free_buffers == 0
    pool.deallocate(a)
    assert pool.statistics().free_buffers == 1


def test_case3_odd_size_takes_unallocated_memory_and_is_not_pooled():
    pool = BufferPool(1000, POOLABLE)
    a = pool.allocate(250, 0)
    assert pool.unallocated_memory() == 750
    pool.deallocate(a)
    s = books_balance(pool)
    assert (s.free_buffers, s.unallocated_memory) == (0, 1000)


def test_case4_odd_size_frees_up_pooled_buffers():
    pool = BufferPool(400, POOLABLE)
    bufs = [pool.allocate(POOLABLE, 0) for _ in range(4)]
    assert pool.available_memory() == 0
    for b in bufs:
        pool.deallocate(b)
    s = books_balance(pool)
    assert (s.free_buffers, s.unallocated_memory) == (4, 0)
    # 250 bytes: free_up turns three pooled buffers back into plain bytes (300), 50 are left over.
    big = pool.allocate(250, 0)
    s = books_balance(pool)
    assert (s.free_buffers, s.unallocated_memory, s.allocated_memory) == (1, 50, 250)
    pool.deallocate(big)
    assert pool.available_memory() == 400


def test_larger_than_total_fails_at_once():
    pool = BufferPool(1000, POOLABLE)
    t0 = time.monotonic()
    with pytest.raises(RecordTooLargeError, match="hard limit of 1000"):
        pool.allocate(1001, 60_000)
    assert time.monotonic() - t0 < 10  # not the 60 s bound
    assert isinstance(RecordTooLargeError("x"), ValueError)
    assert pool.allocate(1000, 0) is not None  # exactly the total is fine


def test_grown_buffer_returns_its_memory_but_is_not_pooled():
    """A batch whose stream outgrew its pooled buffer gives back (new_buffer, initial_capacity)."""
    pool = BufferPool(1000, POOLABLE)
    pooled = pool.allocate(POOLABLE, 0)
    grown = bytearray(len(pooled) * 2)  # what ByteBufferOutputStream makes when it grows
    grown[: len(pooled)] = pooled
    pool.deallocate(grown, POOLABLE)
    s = books_balance(pool)
    assert (s.free_buffers, s.unallocated_memory, s.allocated_memory) == (0, 1000, 0)
    # A pooled bytearray resized in place is not pooled either: it no longer has the pool's size.
    b = pool.allocate(POOLABLE, 0)
    b.extend(b"more")
    pool.deallocate(b, POOLABLE)
    s = books_balance(pool)
    assert (s.free_buffers, s.unallocated_memory) == (0, 1000)


def test_with_the_real_byte_buffer_output_stream():
    """The batch's stream writes into a pooled buffer; if it grows, the pool gets bytes back."""
    pool = BufferPool(1000, POOLABLE)
    fits = ByteBufferOutputStream(pool.allocate(POOLABLE, 0))
    fits.write(b"x" * POOLABLE)
    grows = ByteBufferOutputStream(pool.allocate(POOLABLE, 0))
    original = grows.buffer
    grows.write(b"y" * (POOLABLE + 1))  # Java's rule: a new, bigger buffer
    assert grows.buffer is not original and len(grows.buffer) > POOLABLE

    pool.deallocate(fits.buffer, fits.initial_capacity)
    pool.deallocate(grows.buffer, grows.initial_capacity)
    s = books_balance(pool)
    # Only the stream that kept its pooled buffer gave a buffer back; the other gave bytes.
    assert (s.free_buffers, s.unallocated_memory, s.allocated_memory) == (1, 900, 0)
    assert pool.allocate(POOLABLE, 0) is fits.buffer


def test_only_exact_bytearrays_are_pooled():
    pool = BufferPool(1000, POOLABLE)
    pool.allocate(POOLABLE, 0)

    class Sub(bytearray):
        pass

    pool.deallocate(Sub(POOLABLE))
    assert pool.statistics().free_buffers == 0
    assert pool.available_memory() == 1000


# ------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "args, error",
    [
        ((0, 10), ValueError),
        ((-5, 10), ValueError),
        ((100, 0), ValueError),
        ((1.5, 10), TypeError),
        (("100", 10), TypeError),
        ((None, 10), TypeError),
        ((True, 10), TypeError),
        ((2**63, 10), ValueError),
    ],
)
def test_constructor_rejects_bad_sizes(args, error):
    with pytest.raises(error):
        BufferPool(*args)


@pytest.mark.parametrize(
    "size, max_ms, error",
    [
        (0, 0, ValueError),
        (-1, 0, ValueError),
        (1.0, 0, TypeError),
        ("10", 0, TypeError),
        (None, 0, TypeError),
        (10, -1, ValueError),
        (10, math.nan, ValueError),
        (10, math.inf, ValueError),
        (10, "5", TypeError),
        (10, None, TypeError),
    ],
)
def test_allocate_rejects_bad_input(size, max_ms, error):
    pool = BufferPool(1000, POOLABLE)
    with pytest.raises(error):
        pool.allocate(size, max_ms)
    assert books_balance(pool).available_memory == 1000


def test_deallocate_rejects_more_than_was_allocated():
    pool = BufferPool(1000, POOLABLE)
    a = pool.allocate(300, 0)
    with pytest.raises(ValueError, match="only 300 bytes are allocated"):
        pool.deallocate(a, 301)
    with pytest.raises(ValueError, match="positive"):
        pool.deallocate(a, 0)
    with pytest.raises(TypeError):
        pool.deallocate(a, "300")
    with pytest.raises(TypeError):
        pool.deallocate(None, 300)
    pool.deallocate(a)
    # Given back twice: that would push the pool above its total.
    with pytest.raises(ValueError, match="allocated"):
        pool.deallocate(a)
    assert books_balance(pool).available_memory == 1000


def test_pooled_buffer_given_back_twice_is_refused():
    pool = BufferPool(1000, POOLABLE)
    a = pool.allocate(POOLABLE, 0)
    other = pool.allocate(500, 0)  # so that the byte count alone would not catch it
    pool.deallocate(a)
    with pytest.raises(ValueError, match="given back twice"):
        pool.deallocate(a)
    pool.deallocate(other)
    s = books_balance(pool)
    assert (s.free_buffers, s.available_memory) == (1, 1000)


# ----------------------------------------------------------------------- waiting


def test_timeout_is_bounded_and_leaves_nothing_behind():
    pool = BufferPool(1000, POOLABLE)
    held = pool.allocate(1000, 0)
    for max_ms in (0, 150, 400):
        t0 = time.monotonic()
        with pytest.raises(BufferExhaustedError, match=f"max blocking time {max_ms} ms"):
            pool.allocate(POOLABLE, max_ms)
        elapsed = time.monotonic() - t0
        assert max_ms / 1000 <= elapsed < max_ms / 1000 + 5  # slack for a noisy machine
        s = books_balance(pool)
        assert (s.waiters, s.reserved_memory, s.allocated_memory) == (0, 0, 1000)
    assert issubclass(BufferExhaustedError, KafkaTimeoutError)
    pool.deallocate(held)
    assert pool.available_memory() == 1000


def test_waiter_that_times_out_gives_back_what_it_accumulated():
    pool = BufferPool(1000, POOLABLE)
    a, b = pool.allocate(500, 0), pool.allocate(500, 0)
    (w,) = start_waiters(pool, [800], max_ms=600)
    pool.deallocate(a)
    # The head waiter has set aside the 500 bytes that came back, and still waits for 300.
    s = books_balance(pool)
    assert (s.waiters, s.reserved_memory, s.available_memory) == (1, 500, 0)
    assert w.finished.wait(5)
    assert isinstance(w.error, BufferExhaustedError)
    s = books_balance(pool)
    assert (s.waiters, s.reserved_memory, s.available_memory) == (0, 0, 500)
    pool.deallocate(b)
    assert pool.available_memory() == 1000


def test_waiters_are_served_first_come_first_served():
    pool = BufferPool(300, POOLABLE)
    held = [pool.allocate(POOLABLE, 0) for _ in range(3)]
    order = []
    w0, w1, w2 = start_waiters(pool, [POOLABLE, 2 * POOLABLE, POOLABLE], order=order)

    pool.deallocate(held.pop())  # 100 bytes: w0's
    assert w0.finished.wait(5) and w0.error is None and len(w0.buffer) == POOLABLE
    assert pool.queued() == 2

    pool.deallocate(held.pop())  # 100 bytes: w1 is first now and sets them aside...
    s = books_balance(pool)
    assert (s.waiters, s.reserved_memory) == (2, 100)
    # ...although w2 asked for just 100: no overtaking.  Nor can a newcomer barge in: it queues
    # behind w2 and times out.
    assert not w2.finished.is_set()
    with pytest.raises(BufferExhaustedError):
        pool.allocate(1, 50)
    s = books_balance(pool)
    assert (s.waiters, s.reserved_memory) == (2, 100)

    pool.deallocate(held.pop())
    assert w1.finished.wait(5) and w1.error is None and len(w1.buffer) == 2 * POOLABLE
    assert pool.queued() == 1 and not w2.finished.is_set()

    pool.deallocate(w0.buffer)
    assert w2.finished.wait(5) and w2.error is None
    # The pooled buffer w0 gave back went to w2 whole.
    assert w2.buffer is w0.buffer
    assert order == ["w0", "w1", "w2"]
    pool.deallocate(w1.buffer)
    pool.deallocate(w2.buffer)
    s = books_balance(pool)
    assert (s.waiters, s.available_memory) == (0, 300)


def test_a_waiter_that_leaves_lets_the_next_one_through():
    pool = BufferPool(300, POOLABLE)
    held = [pool.allocate(POOLABLE, 0) for _ in range(3)]
    (first,) = start_waiters(pool, [300], max_ms=400)
    (second,) = start_waiters(pool, [POOLABLE], max_ms=10_000)
    pool.deallocate(held.pop())
    # first is head and sets the 100 bytes aside; when it times out they pass to second.
    assert first.finished.wait(5) and isinstance(first.error, BufferExhaustedError)
    assert second.finished.wait(5) and second.error is None, second.error
    pool.deallocate(second.buffer)
    for b in held:
        pool.deallocate(b)
    s = books_balance(pool)
    assert (s.waiters, s.available_memory) == (0, 300)


def test_waiting_releases_the_gil():
    pool = BufferPool(POOLABLE, POOLABLE)
    held = pool.allocate(POOLABLE, 0)
    (w,) = start_waiters(pool, [POOLABLE], max_ms=3000)
    # If the waiter held the GIL while blocked, this loop could only run after it timed out.
    spins = 0
    deadline = time.monotonic() + 0.1
    while time.monotonic() < deadline:
        spins += 1
    assert pool.queued() == 1 and not w.finished.is_set()
    pool.deallocate(held)
    assert w.finished.wait(5) and w.error is None


def test_close_wakes_every_waiter_with_an_error():
    pool = BufferPool(300, POOLABLE)
    a, b = pool.allocate(200, 0), pool.allocate(POOLABLE, 0)
    waiters = start_waiters(pool, [250, POOLABLE, 50])
    pool.deallocate(b)  # the head (250) sets 100 aside before the close
    assert pool.statistics().reserved_memory == 100
    pool.close()
    for w in waiters:
        assert w.finished.wait(5)
        assert isinstance(w.error, IllegalStateError) and "closed" in str(w.error)
    s = books_balance(pool)
    assert (s.closed, s.waiters, s.reserved_memory, s.allocated_memory) == (True, 0, 0, 200)
    with pytest.raises(IllegalStateError, match="closed"):
        pool.allocate(1, 0)
    pool.deallocate(a)  # giving back after close is fine (batches still in flight)
    assert pool.available_memory() == 300 and pool.closed


def test_keyboard_interrupt_while_waiting_gives_back_the_memory():
    pool = BufferPool(1000, POOLABLE)
    a, b = pool.allocate(500, 0), pool.allocate(500, 0)

    def interrupter():
        wait_until(lambda: pool.queued() == 1, "a waiter queued")
        pool.deallocate(a)  # the main thread's wait sets these 500 bytes aside
        wait_until(lambda: pool.statistics().reserved_memory == 500, "500 bytes set aside")
        _thread.interrupt_main()

    t = threading.Thread(target=interrupter, daemon=True)
    # interrupt_main() does nothing if SIGINT is ignored, as it is for a process started in the
    # background by a non-interactive shell (CI): install Python's handler for this test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        t.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            pool.allocate(800, 30_000)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - t0 < 5.0
    t.join(5)
    s = books_balance(pool)
    assert (s.waiters, s.reserved_memory, s.available_memory) == (0, 0, 500)
    pool.deallocate(b)
    assert pool.available_memory() == 1000


def test_failed_buffer_creation_gives_the_memory_back():
    # No machine can make a 2**50-byte bytearray: a real MemoryError after the bytes were counted.
    pool = BufferPool(2**52, POOLABLE)
    with pytest.raises(MemoryError):
        pool.allocate(2**50, 0)
    s = books_balance(pool)
    assert (s.allocated_memory, s.available_memory) == (0, 2**52)


# --------------------------------------------------------------------- statistics


def test_statistics_snapshot_and_repr():
    pool = BufferPool(1000, POOLABLE)
    a = pool.allocate(POOLABLE, 0)
    b = pool.allocate(POOLABLE, 0)
    pool.deallocate(a)
    s = pool.statistics()
    assert isinstance(s, BufferPoolStatistics)
    assert s == BufferPoolStatistics(
        waiters=0,
        free_buffers=1,
        unallocated_memory=800,
        available_memory=900,
        allocated_memory=100,
        reserved_memory=0,
        total_memory=1000,
        poolable_size=POOLABLE,
        closed=False,
    )
    assert (pool.total_memory, pool.poolable_size) == (1000, POOLABLE)
    assert (pool.available_memory(), pool.unallocated_memory(), pool.queued()) == (900, 800, 0)
    assert "available=900" in repr(pool)
    with pytest.raises(AttributeError):
        pool.total_memory = 5
    pool.deallocate(b)


# ------------------------------------------------------------------------- stress


def test_stress_ten_threads_all_memory_comes_back():
    poolable = 1024
    pool = BufferPool(6 * poolable, poolable)
    sizes = [poolable, poolable, poolable, 100, 3000, poolable, 5000, poolable]
    threads, rounds = 10, 50_000
    errors, max_queued = [], [0] * threads
    barrier = threading.Barrier(threads)

    def work(tid):
        rnd = random.Random(tid)
        plan = [rnd.choice(sizes) for _ in range(64)]
        seen = 0
        barrier.wait()
        try:
            for i in range(rounds):
                size = plan[i & 63]
                buf = pool.allocate(size, 10_000)
                buf[0] = tid  # nobody else may hold this buffer while we do
                if (i & 63) == 0:
                    seen = max(seen, pool.queued())
                if len(buf) != size or buf[0] != tid:
                    errors.append(f"thread {tid}: bad buffer")
                pool.deallocate(buf)
        except BaseException as e:  # noqa: B036
            errors.append(e)
        max_queued[tid] = seen

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert not any(w.is_alive() for w in workers)
    assert errors == []
    assert max(max_queued) > 0, "the run never made a thread wait: make the pool smaller"
    s = books_balance(pool)
    assert (s.waiters, s.allocated_memory, s.reserved_memory) == (0, 0, 0)
    assert s.available_memory == 6 * poolable


# ------------------------------------------------------- a model of Java's rules


class Model:
    """Java's BufferPool bookkeeping, single-threaded and without waiting, written plainly."""

    def __init__(self, total, poolable):
        self.total, self.poolable = total, poolable
        self.non_pooled, self.free, self.allocated = total, [], 0

    def allocate(self, size):
        """-> ("pooled", buffer) | ("fresh", None) | ("exhausted", None) | ("too large", None)"""
        if size > self.total:
            return "too large", None
        if size == self.poolable and self.free:
            self.allocated += size
            return "pooled", self.free.pop()
        if self.non_pooled + len(self.free) * self.poolable >= size:
            while self.free and self.non_pooled < size:  # free_up
                self.free.pop()
                self.non_pooled += self.poolable
            self.non_pooled -= size
            self.allocated += size
            return "fresh", None
        return "exhausted", None

    def deallocate(self, buffer, size):
        self.allocated -= size
        if size == self.poolable and len(buffer) == self.poolable:
            self.free.append(buffer)
        else:
            self.non_pooled += size


@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("allocate"), st.sampled_from([100, 100, 100, 1, 50, 150, 250, 600])),
            st.tuples(st.just("allocate"), st.integers(1, 700)),
            st.tuples(st.just("deallocate"), st.integers(0, 50)),
            st.tuples(st.just("grow and deallocate"), st.integers(0, 50)),
        ),
        max_size=60,
    )
)
@settings(max_examples=examples(300), deadline=None)
def test_bookkeeping_matches_a_model_of_javas_rules(ops):
    pool, model = BufferPool(600, POOLABLE), Model(600, POOLABLE)
    held = []  # (buffer, size)
    for op, arg in ops:
        if op == "allocate":
            outcome, expected = model.allocate(arg)
            if outcome == "too large":
                with pytest.raises(RecordTooLargeError):
                    pool.allocate(arg, 0)
            elif outcome == "exhausted":
                with pytest.raises(BufferExhaustedError):
                    pool.allocate(arg, 0)
            else:
                buf = pool.allocate(arg, 0)
                assert len(buf) == arg
                if outcome == "pooled":
                    assert buf is expected  # the buffer on top of the free list
                else:
                    assert all(buf is not b for b in model.free)
                held.append((buf, arg))
        elif held:
            buf, size = held.pop(arg % len(held))
            if op == "grow and deallocate":
                buf = bytearray(len(buf) + 7)  # the stream moved to a bigger buffer
            pool.deallocate(buf, size)
            model.deallocate(buf, size)
        s = books_balance(pool)
        assert (s.unallocated_memory, s.free_buffers, s.allocated_memory) == (
            model.non_pooled,
            len(model.free),
            model.allocated,
        )
    for buf, size in held:
        pool.deallocate(buf, size)
    assert pool.available_memory() == 600


def test_stress_with_timeouts_and_grown_buffers():
    """Threads that hold several buffers, give up after 0-20 ms, and sometimes return grown ones:
    timeouts race with hand-overs all the time, and the books must still balance at the end."""
    poolable = 1000
    pool = BufferPool(5 * poolable, poolable)
    errors, counts = [], {"ok": 0, "timed out": 0}
    count_lock = threading.Lock()
    stop = time.monotonic() + 2.0

    def work(tid):
        rnd = random.Random(tid)
        held = []
        try:
            while time.monotonic() < stop:
                if rnd.random() < 0.5 or not held:
                    size = rnd.choice([poolable, poolable, 1, 333, 2500, 4999, 5 * poolable])
                    try:
                        buf = pool.allocate(size, rnd.choice([0, 1, 5, 20]))
                    except BufferExhaustedError:
                        with count_lock:
                            counts["timed out"] += 1
                        continue
                    buf[0] = tid
                    held.append((buf, size))
                    with count_lock:
                        counts["ok"] += 1
                if held and (len(held) > 2 or rnd.random() < 0.5):
                    buf, size = held.pop(rnd.randrange(len(held)))
                    if buf[0] != tid:
                        errors.append(f"thread {tid}: someone else wrote into our buffer")
                    if rnd.random() < 0.1:
                        buf = bytearray(len(buf) + 5)  # grown
                    pool.deallocate(buf, size)
        except BaseException as e:  # noqa: B036
            errors.append(e)
        finally:
            for buf, size in held:
                pool.deallocate(buf, size)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert errors == []
    assert counts["ok"] > 0 and counts["timed out"] > 0
    s = books_balance(pool)
    assert (s.waiters, s.allocated_memory, s.reserved_memory) == (0, 0, 0)
    assert s.available_memory == 5 * poolable
