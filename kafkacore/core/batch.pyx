# cython: language_level=3
"""ProducerBatch: a batch of records on its way to one partition, with a future per record.

This is Java's ``ProducerBatch`` with its helpers ``ProduceRequestResult``,
``FutureRecordMetadata``, ``RecordMetadata`` and ``Thunk``:

* ``try_append`` writes one record through the batch's ``MemoryRecordsBuilder`` and hands back a
  ``FutureRecordMetadata``.  That future is cheap: a few C fields and a reference to the batch's
  single shared ``ProduceRequestResult``; the record's ``RecordMetadata`` is computed on demand.
* The future doubles as Java's ``Thunk``: it carries the record's callback until it fires.
* ``done`` completes the batch exactly once: a compare-and-set on the final state, then the
  callbacks in append order, then the latch that releases every waiting thread.
* ``split`` re-appends the records of a batch the broker found too large into smaller batches and
  moves each future (and callback) along, so the user's futures complete when the new batches do.

Locks and threads are described in batch.pxd.
"""

cimport cython
from cpython.bytearray cimport PyByteArray_CheckExact, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_CheckExact, PyBytes_GET_SIZE
from cpython.exc cimport PyErr_CheckSignals
from cpython.long cimport PyLong_CheckExact
from cpython.number cimport PyIndex_Check, PyNumber_Index
from cpython.object cimport PyCallable_Check
from cpython.pythread cimport (
    NOWAIT_LOCK,
    PY_LOCK_ACQUIRED,
    PY_LOCK_INTR,
    PyLockStatus,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
    PyThread_type_lock,
)
from cpython cimport array
from libc.stdint cimport int32_t, int64_t

from kafkacore.core.partition_map cimport (
    pthread_mutex_destroy,
    pthread_mutex_init,
    pthread_mutex_lock,
    pthread_mutex_t,
    pthread_mutex_trylock,
    pthread_mutex_unlock,
)
from kafkacore.core.memory_records_builder cimport MemoryRecordsBuilder

import array as _array
import concurrent.futures as _cf
import logging
import threading
from functools import partial
from time import monotonic as _monotonic

from kafkacore.core import record_sizes as _record_sizes
from kafkacore.core import record_batch as _record_batch
from kafkacore.errors import IllegalStateError, KafkaTimeoutError


cdef extern from "pythread.h":
    # Not in Cython's cpython/pythread.pxd: the timed, interruptible acquire that threading.Lock
    # uses, and the thread ident as an unsigned long (Cython declares the pre-3.7 signed one).
    ctypedef long long PY_TIMEOUT_T
    PyLockStatus PyThread_acquire_lock_timed(PyThread_type_lock lock, PY_TIMEOUT_T microseconds,
                                             int intr_flag) nogil
    unsigned long _get_ident "PyThread_get_thread_ident"()


cdef enum:
    # Longest single blocking acquire, in microseconds (about 17 minutes: a C enum is an int).
    # Longer or unbounded waits loop, so the platform never sees a timeout it cannot represent.
    MAX_WAIT_CHUNK_US = 1000000000
    # Kafka's "no offset" / "no timestamp" (ProduceResponse.INVALID_OFFSET, NO_TIMESTAMP).
    NO_OFFSET = -1
    NO_TIMESTAMP = -1
    # RecordBatch.NO_SEQUENCE: the batch carries no idempotence sequence.
    NO_SEQUENCE = -1


_log = logging.getLogger("kafkacore")

# What ``concurrent.futures.wait``/``as_completed`` hold while they read a future's state and
# install their waiter (its ``_condition``).  One re-entrant lock for every FutureRecordMetadata
# (those functions acquire it once per future they were given) rather than a Condition per
# record; a batch takes it only around the moment its futures turn done (see _complete).
_STDLIB_LOCK = threading.RLock()

_FINAL_STATE_NAMES = (None, "succeeded", "failed", "aborted", "split")


cdef inline void _acquire(pthread_mutex_t* lock) noexcept:
    """Take one of our tiny locks (a pthread mutex: on Python 3.11 even a non-blocking try of a
    ``PyThread`` lock reads the monotonic clock, and asyncio takes one per record).

    Try without blocking first (the common, uncontended case costs no GIL switch); if that fails,
    block with the GIL released, so the holder can always get the GIL back to finish.  Whoever
    takes one releases it in the same call, on the same thread.
    """
    if pthread_mutex_trylock(lock) != 0:
        with nogil:
            pthread_mutex_lock(lock)


cdef inline int32_t _serialized_size(object data, str what) except -2:
    """len() of a key or value as the builder will write it; -1 for None (Java's null)."""
    cdef Py_ssize_t n
    if data is None:
        return -1
    if PyBytes_CheckExact(data):
        n = PyBytes_GET_SIZE(data)
    elif PyByteArray_CheckExact(data):
        n = PyByteArray_GET_SIZE(data)
    else:
        try:
            n = memoryview(data).nbytes
        except TypeError:
            raise TypeError(
                f"{what} must be bytes-like or None, not {type(data).__name__}") from None
    if n > 0x7FFFFFFF:
        raise ValueError(f"{what} of {n} bytes does not fit a Kafka record")
    return <int32_t>n


cdef inline int64_t _as_int64(object value, str what) except? -1:
    """An integer argument (a clock reading, a timestamp, a partition).

    Cython's own conversion to a C integer would truncate a float; we refuse it instead.
    """
    if PyLong_CheckExact(value):
        return value
    if isinstance(value, float) or not PyIndex_Check(value):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    return PyNumber_Index(value)


cdef inline str _check_topic(object topic):
    # An exact str: RecordMetadata keeps it and is not tracked by the GC (see there), so it must
    # not hold anything that could point back at it.
    if not isinstance(topic, str):
        raise TypeError(f"topic must be a str, not {type(topic).__name__}")
    if type(topic) is not str:
        topic = str.__str__(topic)
    if not topic:
        raise ValueError("topic must not be empty")
    return <str>topic


@cython.final
@cython.auto_pickle(False)
cdef class ProduceRequestResult:
    """The answer for one batch, shared by all of its records' futures.

    Java builds it on a ``CountDownLatch(1)``; ours is a lock that starts acquired and is released
    once.  Internal: ProducerBatch makes one per batch.
    """

    def __cinit__(self):
        self._state = RESULT_PENDING
        self._base_offset = NO_OFFSET
        self._log_append_time = NO_TIMESTAMP
        if pthread_mutex_init(&self._lock, NULL) != 0:
            raise MemoryError("cannot initialise the lock of a ProduceRequestResult")
        self._lock_ready = True
        self._latch = PyThread_allocate_lock()
        self._settled_latch = PyThread_allocate_lock()
        if self._latch == NULL or self._settled_latch == NULL:
            raise MemoryError("cannot allocate the locks of a ProduceRequestResult")
        # Close the latches: waiters block until _finish() and _settle() open them.
        PyThread_acquire_lock(self._latch, NOWAIT_LOCK)
        PyThread_acquire_lock(self._settled_latch, NOWAIT_LOCK)

    def __init__(self):
        raise TypeError("ProduceRequestResult is made by ProducerBatch, not directly")

    def __dealloc__(self):
        if self._latch != NULL:
            # Nobody can be waiting (a waiter holds a reference), but free it released, as
            # CPython does for a threading.Lock dropped while held.
            if self._state == RESULT_PENDING or self._state == RESULT_SET:
                PyThread_release_lock(self._latch)
            PyThread_free_lock(self._latch)
        if self._settled_latch != NULL:
            if not self._settled:
                PyThread_release_lock(self._settled_latch)
            PyThread_free_lock(self._settled_latch)
        if self._lock_ready:
            pthread_mutex_destroy(&self._lock)

    cdef int _set(self, int64_t base_offset, int64_t log_append_time,
                  object exception) except -1:
        _acquire(&self._lock)
        self._base_offset = base_offset
        self._log_append_time = log_append_time
        self._exception = exception
        self._completing_thread = _get_ident()
        self._state = RESULT_SET
        pthread_mutex_unlock(&self._lock)
        return 0

    cdef int _finish(self, int state) except -1:
        _acquire(&self._lock)
        self._state = state
        pthread_mutex_unlock(&self._lock)
        # Exactly one _finish per result (the final-state CAS of its batch sees to that), so the
        # latch is released exactly once.
        PyThread_release_lock(self._latch)
        return 0

    cdef int _settle(self) except -1:
        # Once per result, like _finish: after the done-callbacks, or at a split.
        _acquire(&self._lock)
        self._completing_thread = 0
        pthread_mutex_unlock(&self._lock)
        self._settled = True
        PyThread_release_lock(self._settled_latch)
        return 0

    cdef int _wait_latch(self, double timeout_s) except -1:
        return _wait_open(self._latch, timeout_s)

    cdef int _wait_settled(self, double timeout_s) except -1:
        if self._settled:
            return 1
        return _wait_open(self._settled_latch, timeout_s)


cdef int _wait_open(PyThread_type_lock latch, double timeout_s) except -1:
    """Block until ``latch`` (a lock held until it opens) can be taken, or ``timeout_s``
    seconds pass (< 0: no bound).  1 = opened, 0 = timed out.  The GIL is released while
    blocked; signals (Ctrl-C) are honoured."""
    cdef PyLockStatus status
    cdef PY_TIMEOUT_T chunk_us
    cdef double deadline = 0.0
    cdef double remaining
    if timeout_s >= 0:
        deadline = _monotonic() + timeout_s
    while True:
        if timeout_s < 0:
            chunk_us = MAX_WAIT_CHUNK_US
        else:
            remaining = deadline - _monotonic()
            if remaining < 0:
                remaining = 0
            chunk_us = <PY_TIMEOUT_T>(remaining * 1e6)
            if chunk_us > MAX_WAIT_CHUNK_US:
                chunk_us = MAX_WAIT_CHUNK_US
        with nogil:
            status = PyThread_acquire_lock_timed(latch, chunk_us, 1)
        if status == PY_LOCK_ACQUIRED:
            # Pass it on: the latch stays open for every other waiter.
            PyThread_release_lock(latch)
            return 1
        if status == PY_LOCK_INTR:
            # A signal arrived (Ctrl-C in the main thread): let its handler run and raise.
            PyErr_CheckSignals()
            continue
        if timeout_s >= 0 and _monotonic() >= deadline:
            return 0


@cython.final
@cython.no_gc
@cython.freelist(64)  # one per acknowledged record with a callback, most dropped at once
cdef class RecordMetadata:
    """What the broker made of one record: topic, partition, offset, timestamp, sizes.

    Immutable and compared by value.  ``offset`` is -1 when the broker gave none (``acks=0``);
    ``timestamp`` is the broker's log append time when the topic uses ``LogAppendTime``, else the
    record's create time.  Sizes are -1 for a null key or value.
    """
    # no_gc: the fields are an exact str and integers, which can never lead back here, so the
    # cycle collector need not track the one RecordMetadata made per acknowledged record.

    def __init__(self, topic, int partition, int64_t offset, int64_t timestamp,
                 int32_t serialized_key_size, int32_t serialized_value_size):
        self.topic = _check_topic(topic)
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.serialized_key_size = serialized_key_size
        self.serialized_value_size = serialized_value_size

    def has_offset(self):
        """Whether the broker assigned an offset (not the case with ``acks=0``)."""
        return self.offset != NO_OFFSET

    def has_timestamp(self):
        """Whether the record has a timestamp."""
        return self.timestamp != NO_TIMESTAMP

    def _key(self):
        return (self.topic, self.partition, self.offset, self.timestamp,
                self.serialized_key_size, self.serialized_value_size)

    def __eq__(self, other):
        if not isinstance(other, RecordMetadata):
            return NotImplemented
        return self._key() == (<RecordMetadata>other)._key()

    def __hash__(self):
        return hash(self._key())

    def __reduce__(self):
        return (RecordMetadata, self._key())

    def __repr__(self):
        return (f"RecordMetadata(topic={self.topic!r}, partition={self.partition}, "
                f"offset={self.offset}, timestamp={self.timestamp}, "
                f"serialized_key_size={self.serialized_key_size}, "
                f"serialized_value_size={self.serialized_value_size})")


def _copy_outcome(target, FutureRecordMetadata source):
    # Done-callback behind as_concurrent_future(): the source is done, so nothing here waits.
    exc = source.exception(0)
    if exc is not None:
        target.set_exception(exc)
    else:
        target.set_result(source.result(0))


@cython.final
@cython.freelist(1024)
@cython.auto_pickle(False)
# Not tracked by the cycle collector: a producer makes millions of these, and tracking them made
# every collection walk all the futures in flight (measured: it tripled the cost of send_batch).
# The references a future holds cannot keep a cycle alive for good: its callback and
# done-callbacks are dropped when its batch completes, and every batch completes.
@cython.no_gc
cdef class FutureRecordMetadata:
    """The future of one record, as returned by ``send`` (Java's ``FutureRecordMetadata``).

    It follows the API of ``concurrent.futures.Future`` (``result``, ``exception``, ``done``,
    ``add_done_callback``, ...) and works with the standard library's functions that take one:
    ``concurrent.futures.wait``/``as_completed``, ``asyncio.wrap_future`` and ``await``.  It is
    not a subclass (that would cost a Condition per record): it answers ``isinstance(future,
    concurrent.futures.Future)`` through ``__class__`` (as proxies do), and gives ``wait`` the
    three private attributes it reads, ``_condition``, ``_state`` and ``_waiters``.
    kafka-python's ``add_callback``/``add_errback`` are here too.  A record cannot be recalled
    once appended, so ``cancel()`` is always False.
    """

    def __init__(self):
        raise TypeError("FutureRecordMetadata is made by ProducerBatch.try_append, not directly")

    cdef RecordMetadata _metadata(self):
        cdef ProduceRequestResult result = self._result
        cdef RecordMetadata metadata = RecordMetadata.__new__(RecordMetadata)
        metadata.topic = result.topic
        metadata.partition = result.partition
        if result._base_offset == NO_OFFSET:
            metadata.offset = NO_OFFSET
        else:
            metadata.offset = result._base_offset + self._relative_offset
        if result._log_append_time != NO_TIMESTAMP:
            metadata.timestamp = result._log_append_time
        else:
            metadata.timestamp = self._timestamp
        metadata.serialized_key_size = self._key_size
        metadata.serialized_value_size = self._value_size
        return metadata

    cdef int _wait(self, object timeout) except -1:
        cdef ProduceRequestResult result
        cdef double timeout_s = -1.0
        cdef double deadline = 0.0
        cdef int state
        if timeout is not None:
            timeout_s = timeout
            if timeout_s != timeout_s:
                raise ValueError("timeout must be a number of seconds, not NaN")
            if timeout_s < 0:
                timeout_s = 0
        while True:
            result = self._result
            state = result._state
            if state == RESULT_DONE:
                return 0
            if state == RESULT_SET and result._completing_thread == _get_ident():
                # We are inside one of this batch's callbacks: the answer is final already, and
                # the latch would only open after we return.
                return 0
            if state == RESULT_SPLIT:
                # Our record moved to a new batch; split() re-pointed _result before opening
                # the old latch, so the next loop waits on the new result.
                if self._result is result:
                    raise IllegalStateError("record was not moved by the split of its batch")
                continue
            if timeout_s < 0:
                result._wait_latch(-1.0)
                continue
            if deadline == 0.0:
                deadline = _monotonic() + timeout_s
            if not result._wait_latch(max(0.0, deadline - _monotonic())):
                raise KafkaTimeoutError(
                    f"record for {result.topic}-{result.partition} was not acknowledged "
                    f"within {timeout} s")

    def result(self, timeout=None):
        """Wait for the broker's answer; return the :class:`RecordMetadata` or raise its error.

        ``timeout`` is in seconds (None: no bound); when it passes, raise
        :class:`kafkacore.errors.KafkaTimeoutError`, a :class:`TimeoutError`.
        """
        self._wait(timeout)
        exception = self._result._exception
        if exception is not None:
            raise exception
        return self._metadata()

    def get(self, timeout=None):
        """Java's name for :meth:`result`."""
        return self.result(timeout)

    def exception(self, timeout=None):
        """Wait like :meth:`result`; return the error the record failed with, or None."""
        cdef ProduceRequestResult result = self._result
        if timeout is None and result._state == RESULT_DONE:
            # Done: nothing to wait for (a done-callback asks this of every record).
            return result._exception
        self._wait(timeout)
        return self._result._exception

    def done(self):
        """Whether the record is acknowledged or failed, and its batch's callbacks have run."""
        return self._result._state == RESULT_DONE

    def running(self):
        """True until done: an appended record is on its way and cannot be cancelled."""
        return self._result._state != RESULT_DONE

    def cancelled(self):
        """Always False: records are never cancelled."""
        return False

    def cancel(self):
        """Refuse: a record that was appended to a batch cannot be recalled.  Returns False."""
        return False

    def add_done_callback(self, fn):
        """Call ``fn(future)`` when the record is done; at once if it is done already.

        Done-callbacks run after the batch's send() callbacks, on the thread completing the batch;
        an exception raised by ``fn`` is logged (logger ``kafkacore``) and ignored.
        """
        if not PyCallable_Check(fn):
            raise TypeError(f"fn must be callable, not {type(fn).__name__}")
        if not _keep_done_callback(self, fn):
            _run_done_callback(fn, self)

    def add_callback(self, fn, *args, **kwargs):
        """kafka-python's name: call ``fn(*args, metadata, **kwargs)`` when the record is
        acknowledged (never if it fails).  Returns this future, so calls chain."""
        if not PyCallable_Check(fn):
            raise TypeError(f"fn must be callable, not {type(fn).__name__}")
        if args or kwargs:
            fn = partial(fn, *args, **kwargs)
        self.add_done_callback(partial(_on_success, fn))
        return self

    def add_errback(self, fn, *args, **kwargs):
        """kafka-python's name: call ``fn(*args, exception, **kwargs)`` when the record fails
        (never if it is acknowledged).  Returns this future, so calls chain."""
        if not PyCallable_Check(fn):
            raise TypeError(f"fn must be callable, not {type(fn).__name__}")
        if args or kwargs:
            fn = partial(fn, *args, **kwargs)
        self.add_done_callback(partial(_on_failure, fn))
        return self

    def __await__(self):
        """``await future`` in a coroutine: the record's :class:`RecordMetadata`, without
        blocking the event loop (the loop is woken from the producer's I/O thread)."""
        import asyncio

        return asyncio.wrap_future(self).__await__()

    # -- what the standard library reads --------------------------------------------------
    # concurrent.futures.wait/as_completed take ``_condition``, read ``_state`` and append a
    # waiter to ``_waiters`` (then call ``waiter.add_result(future)`` or ``add_exception``
    # when it is done); asyncio.wrap_future checks isinstance(future, concurrent.futures.Future).

    @property
    def __class__(self):
        # isinstance() asks __class__ when the real type does not match (unittest.mock and
        # object proxies rely on this); type(future) stays FutureRecordMetadata.
        return StdlibFuture

    @property
    def _condition(self):
        return _STDLIB_LOCK

    @property
    def _state(self):
        return "FINISHED" if self._result._state == RESULT_DONE else "RUNNING"

    @property
    def _waiters(self):
        return _Waiters(self)

    def as_concurrent_future(self):
        """A ``concurrent.futures.Future`` that completes with this one.

        For ``concurrent.futures.wait``/``as_completed`` and ``asyncio.wrap_future``, which need the
        real class.  It costs a Condition and a done-callback, so make one only where needed.
        """
        target = _cf.Future()
        target.set_running_or_notify_cancel()
        self.add_done_callback(partial(_copy_outcome, target))
        return target

    def __repr__(self):
        cdef ProduceRequestResult result = self._result
        if result._state != RESULT_DONE:
            state = "pending"
        elif result._exception is not None:
            state = f"failed: {result._exception!r}"
        else:
            state = f"offset={self._metadata().offset}"
        return f"<FutureRecordMetadata {result.topic}-{result.partition} {state}>"


class StdlibFuture(_cf.Future):
    """What a :class:`FutureRecordMetadata` reports as its ``__class__``, so that
    ``isinstance(future, concurrent.futures.Future)`` holds and ``asyncio.wrap_future`` accepts
    it.  Never instantiated: every call lands on FutureRecordMetadata's own methods."""

    def __init__(self):
        raise TypeError("StdlibFuture is a name for isinstance(); send() makes the futures")


def _on_success(fn, future):
    # add_callback's done-callback: the future is done, nothing here waits.
    if future.exception(0) is None:
        fn(future.result(0))


def _on_failure(fn, future):
    exception = future.exception(0)
    if exception is not None:
        fn(exception)


@cython.final
@cython.auto_pickle(False)
cdef class _NotifyWaiter:
    """A concurrent.futures waiter, kept among a future's done-callbacks until it is done."""
    cdef object waiter

    def __call__(self, future):
        if (<FutureRecordMetadata>future)._result._exception is None:
            self.waiter.add_result(future)
        else:
            self.waiter.add_exception(future)


@cython.final
@cython.auto_pickle(False)
cdef class _Waiters:
    """``future._waiters`` as concurrent.futures uses it: ``append`` and ``remove``.

    Called with ``_STDLIB_LOCK`` held, so the future cannot turn done between the caller's look
    at ``_state`` and ``append``: a future that was done then needs no waiter (it was counted as
    done), one that was not gets notified when it is.
    """
    cdef FutureRecordMetadata future

    def __cinit__(self, FutureRecordMetadata future):
        self.future = future

    def append(self, waiter):
        cdef _NotifyWaiter entry = _NotifyWaiter.__new__(_NotifyWaiter)
        entry.waiter = waiter
        # A future done already needs no waiter: it was counted as done.
        _keep_done_callback(self.future, entry)

    def remove(self, waiter):
        cdef FutureRecordMetadata future = self.future
        cdef ProduceRequestResult result = future._result
        cdef object held
        cdef Py_ssize_t i
        cdef object found = None
        _acquire(&result._lock)
        held = future._done_callbacks
        # Identity checks only: no user code runs under the lock.
        if type(held) is _NotifyWaiter and (<_NotifyWaiter>held).waiter is waiter:
            found = held
            future._done_callbacks = None
        elif type(held) is list:
            for i in range(len(<list>held)):
                entry = (<list>held)[i]
                if type(entry) is _NotifyWaiter and (<_NotifyWaiter>entry).waiter is waiter:
                    found = (<list>held).pop(i)
                    break
        pthread_mutex_unlock(&result._lock)
        # ``found`` and ``held`` are dropped here, outside the lock.  A waiter of a future that
        # completed since is gone already: nothing to remove.
        found = held = None


cdef bint _keep_done_callback(FutureRecordMetadata future, object fn) except -1:
    """Keep ``fn`` among the future's done-callbacks if it is not done; False if it is done.

    One callback (the usual case: one per record) is kept as it is, without a list: a list per
    record lives as long as its batch and is tracked by the cycle collector, whose collections
    then walk every one in flight.  A second callback turns it into a list.
    """
    cdef ProduceRequestResult result
    cdef list pair = None
    cdef object held
    cdef int state
    while True:
        held = None  # dropped here, never under the lock (dropping may run Python code)
        result = future._result
        _acquire(&result._lock)
        state = result._state
        if state == RESULT_PENDING or state == RESULT_SET:
            held = future._done_callbacks
            if held is None:
                future._done_callbacks = fn
            elif type(held) is list:
                (<list>held).append(fn)
            elif pair is not None:
                pair[0] = held
                future._done_callbacks = pair
            else:
                pthread_mutex_unlock(&result._lock)
                # Made outside the lock (it may run the cycle collector), then try again.
                pair = [None, fn]
                continue
            pthread_mutex_unlock(&result._lock)
            return True
        pthread_mutex_unlock(&result._lock)
        if state == RESULT_DONE:
            return False
        # RESULT_SPLIT: _result was re-pointed before the split was published; go again.
        if future._result is result:
            raise IllegalStateError("record was not moved by the split of its batch")


cdef object _fire_done_callback(object fn, object future, object fatal):
    """Call a done-callback at completion (of a record's future or a ``BatchFuture``); return
    the first BaseException to raise at the end (``fatal``, or this one's), so that every other
    callback still runs first (KeyboardInterrupt, SystemExit)."""
    try:
        fn(future)
    except Exception:
        _log.exception("exception calling done-callback for %r", future)
    except BaseException as e:
        if fatal is None:
            return e
    return fatal


cdef int _run_done_callback(object fn, FutureRecordMetadata future) except -1:
    try:
        fn(future)
    except Exception:
        _log.exception("exception calling done-callback for %r", future)
    return 0


@cython.final
@cython.auto_pickle(False)
cdef class ProducerBatch:
    """The records for one partition that travel together (Java's ``ProducerBatch``).

    ``try_append`` is called by the accumulator under the deque lock of the batch's partition;
    ``done``/``abort``/``split`` by the Sender once the batch has left the deque.  See batch.pxd.
    """

    def __cinit__(self, *args, **kwargs):
        if pthread_mutex_init(&self._state_lock, NULL) != 0:
            raise MemoryError("cannot initialise the state lock of a ProducerBatch")
        self._state_lock_ready = True

    def __dealloc__(self):
        if self._state_lock_ready:
            pthread_mutex_destroy(&self._state_lock)

    def __init__(self, topic, partition, MemoryRecordsBuilder builder not None,
                 created_ms, bint is_split_batch=False):
        cdef int64_t partition_number = _as_int64(partition, "partition")
        if self._builder is not None:
            raise IllegalStateError("ProducerBatch.__init__ called twice")
        if not 0 <= partition_number <= 0x7FFFFFFF:
            raise ValueError(f"partition must be in 0..2**31-1, not {partition_number}")
        if builder._num_records != 0 or builder._appends_closed:
            raise ValueError("a ProducerBatch starts from an empty, open MemoryRecordsBuilder")
        self.topic = _check_topic(topic)
        self.partition = <int>partition_number
        self._builder = builder
        self._result = ProduceRequestResult.__new__(ProduceRequestResult)
        self._result.topic = self.topic
        self._result.partition = self.partition
        self._thunks = []
        self.created_ms = _as_int64(created_ms, "created_ms")
        self.last_append_ms = self.created_ms
        self.last_attempt_ms = self.created_ms
        self.drained_ms = 0
        self.is_split_batch = is_split_batch

    # -- the append path (user threads, under the deque lock) ----------------------------------

    # try_append: start
    cpdef FutureRecordMetadata try_append(self, object timestamp_ms, object key, object value,
                                          object headers, object callback, object now_ms,
                                          Py_ssize_t row=-1):
        """Append one record; return its future, or None if the batch has no room for it.

        An empty batch always takes its first record, however large (Java's rule: every record
        fits somewhere).  ``callback(metadata, exception)`` fires once when the batch completes.
        """
        cdef MemoryRecordsBuilder builder = self._builder
        cdef int32_t key_size, value_size
        cdef Py_ssize_t written_before
        cdef int offset_delta
        cdef int64_t timestamp = _as_int64(timestamp_ms, "timestamp_ms")
        cdef int64_t now = _as_int64(now_ms, "now_ms")
        if (callback is not None and not PyCallable_Check(callback)
                and type(callback) is not BatchFuture):  # send_batch's slow path passes its sink
            raise TypeError(f"callback must be callable or None, not {type(callback).__name__}")
        key_size = _serialized_size(key, "key")
        value_size = _serialized_size(value, "value")
        if self._final_state != FINAL_NONE:
            # Completed batches take nothing: a record appended now would never be answered.
            return None
        if not builder.has_room_for(timestamp, key, value, headers):
            if self.record_count > 0 or builder._appends_closed:
                return None
        written_before = builder._uncompressed_records_size
        offset_delta = builder.append(timestamp, key, value, headers)
        return self._record_appended(written_before, offset_delta, timestamp, key_size,
                                     value_size, callback, row, now)

    cdef FutureRecordMetadata _record_appended(self, Py_ssize_t written_before,
                                               int offset_delta, int64_t timestamp,
                                               int32_t key_size, int32_t value_size,
                                               object callback, Py_ssize_t row, int64_t now):
        """The bookkeeping after a record went into the builder, and its future."""
        cdef Py_ssize_t size = self._builder._uncompressed_records_size - written_before
        if size > self.max_record_size:
            self.max_record_size = size
        self.last_append_ms = now
        # The future is also the thunk: it keeps the callback until the batch fires it.
        cdef FutureRecordMetadata future = FutureRecordMetadata.__new__(FutureRecordMetadata)
        future._result = self._result
        future._relative_offset = offset_delta
        future._timestamp = timestamp
        future._key_size = key_size
        future._value_size = value_size
        future._callback = callback
        future._row = row
        self._thunks.append(future)
        self.record_count += 1
        return future
    # try_append: end

    # append_row: start
    cdef FutureRecordMetadata append_row(self, int64_t timestamp_ms, const unsigned char* kp,
                                         Py_ssize_t klen, const unsigned char* vp,
                                         Py_ssize_t vlen, object headers, object callback,
                                         Py_ssize_t row, int64_t now_ms):
        cdef MemoryRecordsBuilder builder = self._builder
        cdef Py_ssize_t written_before
        cdef int offset_delta
        if self._final_state != FINAL_NONE:
            return None
        written_before = builder._uncompressed_records_size
        offset_delta = builder.append_raw(timestamp_ms, kp, klen, vp, vlen, headers)
        if offset_delta < 0:
            return None
        # callback: for send_batch, the call's BatchFuture (row says which of its records).
        return self._record_appended(written_before, offset_delta, timestamp_ms,
                                     <int32_t>klen, <int32_t>vlen, callback, row, now_ms)
    # append_row: end

    # -- completion (Sender thread, or whoever expires/aborts the batch) -----------------------

    cdef int _cas_final_state(self, int new_state) except -1:
        cdef int found
        _acquire(&self._state_lock)
        found = self._final_state
        if found == FINAL_NONE:
            self._final_state = new_state
        pthread_mutex_unlock(&self._state_lock)
        return found

    # done: start
    cpdef bint done(self, int64_t base_offset, int64_t log_append_time,
                    object exception) except -1:
        """Complete the batch: succeeded if ``exception`` is None, else failed.

        Returns True if this call completed it (callbacks fired, futures resolved), False if it
        was completed before: a failure after a failure or abort, or a late success after one, is
        ignored and logged.  A batch that succeeded must not change state again: that raises
        :class:`~kafkacore.errors.IllegalStateError` (Java does the same).
        """
        cdef int wanted, found
        if exception is not None and not isinstance(exception, BaseException):
            raise TypeError(f"exception must be an exception instance or None, "
                            f"not {type(exception).__name__}")
        wanted = FINAL_SUCCEEDED if exception is None else FINAL_FAILED
        found = self._cas_final_state(wanted)
        if found == FINAL_NONE:
            self._complete(base_offset, log_append_time, exception)
            return True
        if found == FINAL_SUCCEEDED:
            raise IllegalStateError(
                f"a succeeded batch for {self.topic}-{self.partition} must not change state "
                f"again (to {_FINAL_STATE_NAMES[wanted]})")
        _log.debug("ignored %s for batch %s-%d (base offset %d): already %s",
                   _FINAL_STATE_NAMES[wanted], self.topic, self.partition, base_offset,
                   _FINAL_STATE_NAMES[found])
        return False
    # done: end

    cpdef abort(self, object exception):
        """Fail the batch with ``exception`` (producer closed, transaction aborted).

        Raises :class:`~kafkacore.errors.IllegalStateError` if it was completed already.
        """
        cdef int found
        if not isinstance(exception, BaseException):
            raise TypeError(f"exception must be an exception instance, "
                            f"not {type(exception).__name__}")
        found = self._cas_final_state(FINAL_ABORTED)
        if found != FINAL_NONE:
            raise IllegalStateError(f"batch for {self.topic}-{self.partition} was already "
                                    f"completed in final state {_FINAL_STATE_NAMES[found]}")
        self._complete(NO_OFFSET, NO_TIMESTAMP, exception)

    # complete: start
    cdef int _complete(self, int64_t base_offset, int64_t log_append_time,
                       object exception) except -1:
        # Only the winner of the final-state CAS gets here, so this runs once per batch.
        cdef ProduceRequestResult result = self._result
        cdef list thunks = self._thunks
        cdef Py_ssize_t i, n = len(thunks)
        cdef FutureRecordMetadata future
        cdef object callback, callbacks, fn
        cdef object fatal = None
        self._thunks = []
        # 1. The answer first, so a callback asking any future of this batch gets it.
        result._set(base_offset, log_append_time, exception)
        # 2. The send() callbacks, in append order; one failing does not stop the others.
        for i in range(n):
            future = <FutureRecordMetadata>thunks[i]
            callback = future._callback
            if callback is None:
                continue
            future._callback = None
            if type(callback) is BatchFuture:  # a send_batch row: a C call, no Python frame
                # It may raise (a done-callback's KeyboardInterrupt, or a bug): every other
                # record must still complete and the latch open, so remember it for the end.
                try:
                    (<BatchFuture>callback)._record_done(
                        future._row,
                        NO_OFFSET if base_offset == NO_OFFSET or exception is not None
                        else base_offset + future._relative_offset,
                        exception)
                except Exception:
                    _log.error("error completing row %d of a send_batch call for %s-%d",
                               future._row, self.topic, self.partition, exc_info=True)
                except BaseException as e:
                    if fatal is None:
                        fatal = e
                continue
            try:
                if exception is None:
                    callback(future._metadata(), None)
                else:
                    callback(None, exception)
            except Exception:
                _log.error("error in the send() callback of a record for %s-%d",
                           self.topic, self.partition, exc_info=True)
            except BaseException as e:
                # KeyboardInterrupt, SystemExit: finish completing (every record must end), then
                # let it go on.
                if fatal is None:
                    fatal = e
        # 3. Open the latch: result() returns in every waiting thread, and done() turns True.
        # Under the lock concurrent.futures.wait holds while it installs its waiters (once per
        # batch, not per record): a waiter installed before this gets notified in step 4.
        _STDLIB_LOCK.acquire()
        try:
            result._finish(RESULT_DONE)
        finally:
            _STDLIB_LOCK.release()
        # 4. The futures' done-callbacks.  After DONE nobody appends to these lists any more.
        for i in range(n):
            future = <FutureRecordMetadata>thunks[i]
            callbacks = future._done_callbacks
            if callbacks is None:
                continue
            future._done_callbacks = None
            if type(callbacks) is list:
                for fn in callbacks:
                    fatal = _fire_done_callback(fn, future, fatal)
            else:  # the one callback, kept without a list
                fatal = _fire_done_callback(callbacks, future, fatal)
        # 5. Settled: flush() returns once every callback of its records has run.
        result._settle()
        if fatal is not None:
            raise fatal
        return 0
    # complete: end

    def await_done(self, timeout=None):
        """Wait until the batch is done and every callback of its records ran (``send()``
        callbacks, then the futures' done-callbacks); False if ``timeout`` seconds pass first.

        Java's ``produceFuture.await``, for ``flush``.  A split batch is done when all the batches
        its records moved to are done.  ``timeout`` None waits without bound.
        """
        cdef ProduceRequestResult result = self._result
        cdef double timeout_s = -1.0
        cdef double deadline = 0.0
        cdef ProducerBatch child
        if timeout is not None:
            timeout_s = timeout
            if timeout_s != timeout_s:
                raise ValueError("timeout must be a number of seconds, not NaN")
            timeout_s = max(timeout_s, 0.0)
            deadline = _monotonic() + timeout_s
        if (result._state == RESULT_SET or (result._state == RESULT_DONE and not result._settled)) \
                and result._completing_thread == _get_ident():
            return True  # called from one of this batch's own callbacks
        if not result._wait_latch(timeout_s):
            return False
        # The done-callbacks (add_callback, add_errback) run after the latch opens: wait for
        # them too, as kafka-python's flush does.
        if result._state == RESULT_DONE and not result._wait_settled(
                -1.0 if timeout_s < 0 else max(0.0, deadline - _monotonic())):
            return False
        if result._state == RESULT_SPLIT:
            for child in self._split_batches:
                if not child.await_done(
                        None if timeout is None else max(0.0, deadline - _monotonic())):
                    return False
        return True

    @property
    def final_state(self):
        """None while in flight, then "succeeded", "failed", "aborted" or "split"."""
        return _FINAL_STATE_NAMES[self._final_state]

    @property
    def is_done(self):
        """True once the batch reached a final state (a split batch counts as done)."""
        return self._final_state != FINAL_NONE

    # -- splitting a batch the broker found too large (MESSAGE_TOO_LARGE) ----------------------

    cdef int _append_for_split(self, object record, FutureRecordMetadata future) except -2:
        cdef MemoryRecordsBuilder builder = self._builder
        cdef Py_ssize_t written_before, size
        cdef int offset_delta
        timestamp = record.timestamp
        key = record.key
        value = record.value
        headers = record.headers
        if self.record_count > 0 and not builder.has_room_for(timestamp, key, value, headers):
            return -1
        written_before = builder._uncompressed_records_size
        offset_delta = builder.append(timestamp, key, value, headers)
        size = builder._uncompressed_records_size - written_before
        if size > self.max_record_size:
            self.max_record_size = size
        self._thunks.append(future)
        self.record_count += 1
        return offset_delta

    def _new_split_batch(self, record, int split_batch_size):
        capacity = max(
            _record_sizes.estimate_size_upper_bound(record.key, record.value, record.headers),
            split_batch_size)
        builder = MemoryRecordsBuilder(
            capacity,
            compression=self._builder.compression,
            compression_level=self._builder.compression_level)
        return ProducerBatch(self.topic, self.partition, builder, self.created_ms, True)

    # split: start
    def split(self, int split_batch_size):
        """Re-append this batch's records into new batches of about ``split_batch_size`` bytes.

        Each record keeps its future and callback: they move to the new batch, and complete when
        it does.  This batch ends in final state "split" and never completes them itself
        (``done`` returns False, ``abort`` raises).  Returns the new batches, in record order,
        closed for appends, on fresh heap buffers.
        """
        cdef list thunks = self._thunks
        cdef list new_batches = []
        cdef list moves = []
        cdef ProducerBatch current = None
        cdef FutureRecordMetadata future
        cdef ProduceRequestResult old_result = self._result
        cdef int offset_delta, found
        cdef Py_ssize_t i
        cdef int32_t sequence
        if split_batch_size <= 0:
            raise ValueError(f"split_batch_size must be > 0, not {split_batch_size}")
        if self._final_state != FINAL_NONE:
            raise IllegalStateError(f"cannot split a batch in final state "
                                    f"{_FINAL_STATE_NAMES[self._final_state]}")
        data = self.records()
        try:
            # The records are copied out as bytes.  Our own bytes, so no bomb: no limit.
            batches = list(_record_batch.iter_batches(data, max_decompressed_bytes=1 << 62))
        finally:
            data.release()  # while a view is alive the builder's stream refuses writes
        if len(batches) != 1:
            raise IllegalStateError(f"a producer batch holds one record batch, not {len(batches)}")
        records = batches[0].records
        if len(records) != len(thunks) or not thunks:
            raise IllegalStateError(f"cannot split: {len(records)} records read back for "
                                    f"{len(thunks)} futures")
        # Build the new batches first; nothing the user can see changes until they all exist.
        for i in range(len(records)):
            record = records[i]
            future = <FutureRecordMetadata>thunks[i]
            if current is None:
                current = self._new_split_batch(record, split_batch_size)
            offset_delta = current._append_for_split(record, future)
            if offset_delta < 0:
                current.close_for_record_appends()
                new_batches.append(current)
                current = self._new_split_batch(record, split_batch_size)
                offset_delta = current._append_for_split(record, future)
            moves.append((future, current._result, offset_delta))
        current.close_for_record_appends()
        new_batches.append(current)
        # Publish: win the final state, so that a late done()/abort() of this batch cannot fire
        # the moved callbacks a second time.
        found = self._cas_final_state(FINAL_SPLIT)
        if found != FINAL_NONE:
            raise IllegalStateError(f"batch completed ({_FINAL_STATE_NAMES[found]}) while "
                                    f"it was being split")
        for future, new_result, offset_delta in moves:
            future._result = new_result
            future._relative_offset = offset_delta
        self._thunks = []
        self._split_batches = new_batches
        # Wake the waiters of the old result only now: they find their futures re-pointed.
        old_result._finish(RESULT_SPLIT)
        old_result._settle()
        if self._builder._base_sequence != NO_SEQUENCE:
            sequence = self._builder._base_sequence
            for current in new_batches:
                current.set_producer_state(self._builder._producer_id,
                                           self._builder._producer_epoch, sequence,
                                           self._builder._is_transactional)
                sequence += current.record_count
        return new_batches
    # split: end

    # -- the Sender's bookkeeping ---------------------------------------------------------------

    def reenqueued(self, int64_t now_ms):
        """The batch goes back to its deque for another try (Java reenqueued)."""
        self.attempts += 1
        self.last_attempt_ms = max(self.last_append_ms, now_ms)
        self.last_append_ms = max(self.last_append_ms, now_ms)
        self._retry = True

    def in_retry(self):
        """Whether the batch has been re-enqueued after a failed attempt."""
        return self._retry

    def drained(self, int64_t now_ms):
        """The Sender took the batch out of its deque to send it."""
        self.drained_ms = max(self.drained_ms, now_ms)

    def queue_time_ms(self):
        """How long the batch waited in the accumulator before it was drained."""
        return self.drained_ms - self.created_ms

    def waited_time_ms(self, int64_t now_ms):
        """Time since the last attempt (or creation), for back-off and linger decisions."""
        return max(0, now_ms - self.last_attempt_ms)

    def has_reached_delivery_timeout(self, int64_t delivery_timeout_ms, int64_t now_ms):
        """Whether ``delivery.timeout.ms`` has passed since the batch was created."""
        return delivery_timeout_ms <= now_ms - self.created_ms

    # -- the builder, seen through the batch ----------------------------------------------------

    def is_full(self):
        """Whether the builder takes no more records (closed, or its write limit reached)."""
        return self._builder.is_full()

    def estimated_size_in_bytes(self):
        """The builder's estimate of the finished batch's size."""
        return self._builder.estimated_size_in_bytes()

    def close_for_record_appends(self):
        """No more appends; the header (producer state) can still change."""
        self._builder.close_for_record_appends()

    def close(self):
        """Finish the batch bytes: header, CRC, compression.  Appends are refused from now on."""
        self._builder.close()

    def abort_record_appends(self):
        """Throw away the builder's records (before ``abort``, while holding the deque lock)."""
        self._builder.abort()

    def records(self):
        """The complete record batch, as the broker will receive it (closes the builder)."""
        return self._builder.build()

    def set_producer_state(self, int64_t producer_id, int producer_epoch, int base_sequence,
                           bint is_transactional):
        """Idempotence/transactions: write the producer id, epoch and first sequence."""
        self._builder.set_producer_state(producer_id, producer_epoch, base_sequence,
                                         is_transactional)

    def reset_producer_state(self, int64_t producer_id, int producer_epoch, int base_sequence):
        """KIP-360: give a batch that is being retried a new epoch (or producer id) and sequence,
        rewriting its header and CRC if it is already closed (Java ``resetProducerState``).
        BufferError while a view of its bytes from :meth:`records` is alive."""
        self._builder.reopen_and_rewrite_producer_state(producer_id, producer_epoch, base_sequence,
                                                        self._builder._is_transactional)

    @property
    def is_closed(self):
        return self._builder.is_closed

    @property
    def buffer(self):
        """The builder's current buffer (for BufferPool.deallocate)."""
        return self._builder.buffer

    @property
    def initial_capacity(self):
        """The size the buffer was allocated with (for BufferPool.deallocate)."""
        return self._builder.initial_capacity

    @property
    def producer_id(self):
        return self._builder._producer_id

    @property
    def producer_epoch(self):
        return self._builder._producer_epoch

    @property
    def base_sequence(self):
        return self._builder._base_sequence

    @property
    def is_transactional(self):
        return self._builder._is_transactional

    @property
    def has_sequence(self):
        return self._builder._base_sequence != NO_SEQUENCE

    @property
    def last_sequence(self):
        return self._builder._base_sequence + self.record_count - 1

    def __repr__(self):
        return (f"ProducerBatch(topic={self.topic!r}, partition={self.partition}, "
                f"record_count={self.record_count}, final_state={self.final_state!r})")


# -- send_batch: one future for many records -----------------------------------------------------

cdef array.array _INT_TEMPLATE = _array.array("i")
cdef array.array _LONGLONG_TEMPLATE = _array.array("q")


cdef class BatchResult:
    """What became of each record of a ``send_batch`` call, by its position in the call.

    ``partitions[i]`` and ``offsets[i]`` (``array.array`` of ints) say where record ``i`` went;
    ``offsets[i]`` is -1 if it failed (or the broker gave no offsets, ``acks=0``), and then
    ``errors[i]`` holds the exception.  ``errors`` is a list of None when nothing failed.
    """

    cdef readonly str topic
    cdef readonly object partitions
    cdef readonly object offsets
    cdef readonly list errors
    cdef readonly Py_ssize_t failed

    def __len__(self):
        return len(self.offsets)

    def __repr__(self):
        return (f"BatchResult(topic={self.topic!r}, records={len(self.offsets)}, "
                f"failed={self.failed})")


cdef class BatchFuture:
    """The future of a ``send_batch`` call (``concurrent.futures`` style, plus Java's ``get``).

    It is done when every record of the call is acknowledged or failed; ``result()`` then gives
    a :class:`BatchResult`.  It does not raise when some records failed: the per-record errors are
    in the result (``failed`` counts them), so that the caller can tell which ones.
    """

    def __cinit__(self, str topic, Py_ssize_t num_records):
        cdef array.array partitions, offsets
        cdef Py_ssize_t i
        if num_records < 0:
            raise ValueError(f"num_records must be >= 0, not {num_records}")
        self.topic = topic
        self.num_records = num_records
        partitions = array.clone(_INT_TEMPLATE, num_records, True)
        offsets = array.clone(_LONGLONG_TEMPLATE, num_records, False)
        self._partitions = partitions
        self._offsets = offsets
        self._partition_ptr = partitions.data.as_ints
        self._offset_ptr = offsets.data.as_longlongs
        for i in range(num_records):
            self._offset_ptr[i] = NO_OFFSET
        self._errors = None
        self._failed = 0
        self._pending = num_records
        self._latch = ProduceRequestResult.__new__(ProduceRequestResult)
        self._latch.topic = topic
        self._latch.partition = -1
        self._done_callbacks = None
        self._result = None
        if num_records == 0:
            self._finish()

    cdef int _record_done(self, Py_ssize_t row, int64_t offset, object exception) except -1:
        cdef bint last
        cdef list errors = None
        if row < 0 or row >= self.num_records:
            raise IllegalStateError(f"record row {row} outside 0..{self.num_records - 1}")
        if exception is not None and self._errors is None:
            # Made before taking the lock: an allocation may run the GC, and so Python code.
            errors = [None] * self.num_records
        # The bookkeeping under the latch's lock: completions of rows in different batches may
        # come from more than one thread, and no Python code runs while it is held.
        _acquire(&self._latch._lock)
        if self._result is not None:
            pthread_mutex_unlock(&self._latch._lock)
            raise IllegalStateError(f"record row {row} completed after its send_batch call")
        self._offset_ptr[row] = offset
        if exception is not None:
            if self._errors is None:
                self._errors = errors
            if self._errors[row] is None:
                self._failed += 1
            self._errors[row] = exception
        self._pending -= 1
        last = self._pending == 0
        pthread_mutex_unlock(&self._latch._lock)
        if last:
            self._finish()
        return 0

    def _complete_row(self, Py_ssize_t row, int64_t offset, object exception):
        """Complete one row as its batch would (internal: for tests without a broker)."""
        self._record_done(row, offset, exception)

    cdef int _fail_rows(self, object rows, object exception) except -1:
        for row in rows:
            self._record_done(row, NO_OFFSET, exception)
        return 0

    def _finish(self):
        cdef BatchResult result = BatchResult.__new__(BatchResult)
        cdef object fatal = None
        result.topic = self.topic
        result.partitions = self._partitions
        result.offsets = self._offsets
        result.errors = self._errors if self._errors is not None else [None] * self.num_records
        result.failed = self._failed
        # Done and the callbacks taken in one step under the lock, so that add_done_callback
        # either appends before this (the callback runs below) or sees the result (it runs the
        # callback itself): exactly once either way.
        _acquire(&self._latch._lock)
        self._result = result
        callbacks, self._done_callbacks = self._done_callbacks, None
        pthread_mutex_unlock(&self._latch._lock)
        try:
            self._latch._set(NO_OFFSET, NO_TIMESTAMP, None)
        finally:
            # Whatever happens, result() must return in every waiting thread.
            self._latch._finish(RESULT_DONE)
        for fn in callbacks or ():
            fatal = _fire_done_callback(fn, self, fatal)
        if fatal is not None:
            raise fatal

    def set_partition(self, Py_ssize_t row, int partition):
        """Record where row ``row`` goes (the appender does this before appending it).

        Refused once the call is done: its arrays are then the result's, which the caller may
        have grown (``array.extend`` moves them), and the pointer we write through would not."""
        if self._result is not None:
            raise IllegalStateError(f"the send_batch call for {self.topic} is done: "
                                    f"its partitions are final")
        if row < 0 or row >= self.num_records:
            raise IndexError(f"row {row} outside 0..{self.num_records - 1}")
        self._partition_ptr[row] = partition

    def done(self):
        """True once every record is acknowledged or failed."""
        return self._result is not None

    def result(self, timeout=None):
        """Wait (at most ``timeout`` seconds; None: no bound) and return the BatchResult.

        Raises :class:`~kafkacore.errors.KafkaTimeoutError` if the bound passes first.
        """
        cdef double timeout_s = -1.0
        if self._result is not None:
            return self._result
        if timeout is not None:
            timeout_s = max(<double>timeout, 0.0)
        if not self._latch._wait_latch(timeout_s):
            raise KafkaTimeoutError(
                f"{self._pending} of {self.num_records} records for {self.topic} were not "
                f"acknowledged within {timeout} s")
        return self._result

    def get(self, timeout=None):
        """Java's name for :meth:`result`."""
        return self.result(timeout)

    def exception(self, timeout=None):
        """The first record's error, or None if every record was acknowledged."""
        result = self.result(timeout)
        if result.failed:
            return next(e for e in result.errors if e is not None)
        return None

    def add_done_callback(self, fn):
        """Call ``fn(future)`` once the call is done (at once if it already is)."""
        cdef list fresh = [fn]  # made before the lock: allocation may run the GC
        _acquire(&self._latch._lock)
        if self._result is None:
            if self._done_callbacks is None:
                self._done_callbacks = fresh
            else:
                self._done_callbacks.append(fn)
            pthread_mutex_unlock(&self._latch._lock)
            return
        pthread_mutex_unlock(&self._latch._lock)
        fn(self)

    def __repr__(self):
        state = "done" if self._result is not None else f"{self._pending} pending"
        return f"<BatchFuture {self.topic}: {self.num_records} records, {state}>"
