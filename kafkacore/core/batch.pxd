# cython: language_level=3
"""Declarations of ProducerBatch, its shared result, and the per-record futures.

Concurrency, in one place (each field below repeats which rule guards it):

* **Appends** (``try_append``) run on user threads, *guarded by the deque lock of its partition*
  (the accumulator's per-partition lock).  Every field marked "deque lock" is written only there.
* **Completion** (``done``/``abort``/``split``) runs on the Sender thread (or on whichever thread
  expires or aborts the batch) after the batch has left its deque, so it never races an append.
  Two completions may race each other (a delivery timeout and a late broker answer): the final
  state is a compare-and-set under the batch's own tiny lock ``_state_lock``.
* **Waiting** (``FutureRecordMetadata.result`` and friends) runs on any user thread, at any time.
  Waiters block on the result's ``_latch`` with the GIL released; the result's small ``_lock``
  guards its state and the registration of done-callbacks.
* Sender bookkeeping (``attempts``, ``last_attempt_ms``, ``drained_ms``, the retry flag) is written
  by the Sender thread only (re-enqueueing happens under the deque lock too).
"""

from cpython.pythread cimport PyThread_type_lock
from libc.stdint cimport int32_t, int64_t

from kafkacore.core.memory_records_builder cimport MemoryRecordsBuilder
from kafkacore.core.partition_map cimport pthread_mutex_t


# ProducerBatch's final state (Java's FinalState), plus SPLIT: the batch handed its records and
# their futures to new batches and must never complete them itself.
cdef enum FinalState:
    FINAL_NONE = 0
    FINAL_SUCCEEDED = 1
    FINAL_FAILED = 2
    FINAL_ABORTED = 3
    FINAL_SPLIT = 4


# ProduceRequestResult's life.  A result only moves forward: PENDING -> SET -> DONE, or
# PENDING -> SPLIT.
cdef enum ResultState:
    # No answer yet; waiters block on the latch.
    RESULT_PENDING = 0
    # Values (base offset, log append time, exception) are final, the batch's callbacks are
    # running on the completing thread; the latch is still closed (Java: set() before done()).
    RESULT_SET = 1
    # Callbacks have run, the latch is open: every future of the batch is done.
    RESULT_DONE = 2
    # The batch was split: its futures now point at the new batches' results; waiters that woke
    # up here follow their future's new result.
    RESULT_SPLIT = 3


cdef class ProduceRequestResult:
    """One per batch, shared by all of its futures (Java's ProduceRequestResult)."""
    cdef:
        # Where the batch goes; RecordMetadata needs them.  Immutable.
        readonly str topic
        readonly int partition
        # The broker's answer.  Written once, by the completing thread, under _lock, before the
        # state leaves PENDING; read by anyone once the state says SET or DONE.
        int64_t _base_offset
        int64_t _log_append_time
        object _exception
        # A ResultState.  Written under _lock; read without it for the fast paths (a single
        # aligned int written under the GIL: a stale read only sends the reader to the slow path).
        int _state
        # Thread ident (PyThread_get_thread_ident) of the thread running the batch's callbacks
        # while the state is SET, so that a callback asking its own future for the result gets it
        # at once instead of waiting for a latch that its own thread will open.  Under _lock.
        unsigned long _completing_thread
        # Guards _state, the answer fields, and every done-callback list of the futures pointing
        # here (FutureRecordMetadata._done_callbacks).  Held for a few C statements only.
        pthread_mutex_t _lock
        bint _lock_ready
        # Java's CountDownLatch(1), as a lock: acquired at creation, released once (DONE or SPLIT).
        # A waiter acquires it (GIL released, bounded), then releases it at once for the next one.
        PyThread_type_lock _latch
        # A second latch, opened once the futures' done-callbacks (add_callback, add_errback,
        # add_done_callback) have run too, or at a split: what flush() waits for.  _settled
        # says whether it is open (written once, before the release, by the completing thread).
        PyThread_type_lock _settled_latch
        bint _settled

    # PENDING -> SET: record the answer and who is completing.
    cdef int _set(self, int64_t base_offset, int64_t log_append_time,
                  object exception) except -1
    # SET -> DONE (or PENDING -> SPLIT with state=RESULT_SPLIT): open the latch for every waiter.
    cdef int _finish(self, int state) except -1
    # Block until the latch opens or timeout_s seconds pass (< 0: no bound).  1 = opened,
    # 0 = timed out.  The GIL is released while blocked; signals (Ctrl-C) are honoured.
    cdef int _wait_latch(self, double timeout_s) except -1
    # DONE -> settled (after the done-callbacks), or at a split: open the second latch.
    cdef int _settle(self) except -1
    # Block until the second latch opens or timeout_s seconds pass, as _wait_latch.
    cdef int _wait_settled(self, double timeout_s) except -1


cdef class RecordMetadata:
    """What the broker made of one record (Java's RecordMetadata).  Immutable."""
    cdef:
        # Topic and partition the record went to.
        readonly str topic
        readonly int partition
        # base offset + the record's offset delta; -1 when the broker gave no offset (acks=0).
        readonly int64_t offset
        # The log append time when the topic uses LogAppendTime, else the record's create time.
        readonly int64_t timestamp
        # Serialized sizes, -1 for a null key or value.
        readonly int32_t serialized_key_size
        readonly int32_t serialized_value_size


cdef class FutureRecordMetadata:
    """One per record; also our Thunk (it carries the record's callback until it fires)."""
    cdef:
        # The batch's shared result.  Written under the deque lock when created, and by split()
        # (Sender thread) when the record moves to a new batch, BEFORE the old result opens its
        # latch in state SPLIT, so a waiter woken by SPLIT always finds the new result here.
        ProduceRequestResult _result
        # The record's offset delta in its (current) batch.  Same rule as _result.
        int32_t _relative_offset
        # The record's create timestamp (ms), as appended.  Immutable.
        int64_t _timestamp
        # Serialized key and value sizes, -1 for None.  Immutable.
        int32_t _key_size
        int32_t _value_size
        # The user's send() callback, or None.  Set under the deque lock; the completing thread
        # fires it once and drops it (sets None), so a thunk cannot fire twice.
        object _callback
        # The record's row in a send_batch() call (its callback is then that call's BatchFuture),
        # or -1.  Immutable.
        Py_ssize_t _row
        # The fn(future) registered by add_done_callback before completion: None, the one
        # callable, or a list of two or more.  Changed under _result._lock while the result is
        # not DONE; read by the completing thread after it set DONE under that lock (so no
        # callback can be missed or come late).
        object _done_callbacks

    # The record's metadata from the result's answer (call only once the result is SET/DONE).
    cdef RecordMetadata _metadata(self)
    # Wait (bounded by timeout, seconds or None) until this record's result is DONE, following
    # splits; raise KafkaTimeoutError when the bound passes.
    cdef int _wait(self, object timeout) except -1


cdef class ProducerBatch:
    """Records for one partition, their futures and callbacks (Java's ProducerBatch)."""
    cdef:
        # Where the records go.  Immutable.
        readonly str topic
        readonly int partition
        # Writes the records into the batch's buffer.  Appends: deque lock; close/build and
        # producer state: Sender thread after drain.
        MemoryRecordsBuilder _builder
        # Shared by the futures of this batch (Java produceFuture).  Immutable reference.
        ProduceRequestResult _result
        # The thunks, in append order: the futures, each carrying its callback.  A plain list so
        # that a columnar append can extend it in one call.  Appended under the deque lock;
        # emptied by the completing thread after completion or by split().
        list _thunks
        # Records appended (Java recordCount); equals len(_thunks) until completion.  Deque lock.
        readonly int record_count
        # Largest record appended, in bytes as encoded (uncompressed).  Deque lock.
        readonly Py_ssize_t max_record_size
        # Clock readings in ms (the caller's clock; the batch never reads a clock itself).
        readonly int64_t created_ms        # immutable
        readonly int64_t last_append_ms    # deque lock (appends and reenqueued)
        public int64_t last_attempt_ms     # Sender thread (it stamps each send attempt)
        readonly int64_t drained_ms        # Sender thread
        # Times this batch was re-enqueued for another try.  Sender thread.
        readonly int attempts
        # Whether the batch is being retried (Java retry).  Sender thread.
        bint _retry
        # Made by split() from a bigger batch.  Immutable.
        readonly bint is_split_batch
        # A FinalState.  Compare-and-set under _state_lock; read without it on the append path
        # (a stale FINAL_NONE there is harmless: completion happens only after the batch left the
        # deque, see the module docstring).
        int _final_state
        # After split(): the new batches, so that await_done() can follow the records there.
        # Written once by split() before the old result opens its latch; None before.
        list _split_batches
        # The tiny lock of the final-state compare-and-set.
        pthread_mutex_t _state_lock
        bint _state_lock_ready

    # Times are taken as objects and checked to be integers: Cython would truncate a float.
    cpdef FutureRecordMetadata try_append(self, object timestamp_ms, object key, object value,
                                          object headers, object callback, object now_ms,
                                          Py_ssize_t row=*)
    # try_append for compiled callers that have checked their arguments: key and value as
    # pointer + length (-1: null); ``callback`` a callable, None, or a send_batch call's
    # BatchFuture with the record's ``row`` in it.  Deque lock, like try_append.  None when full.
    cdef FutureRecordMetadata append_row(self, int64_t timestamp_ms, const unsigned char* kp,
                                         Py_ssize_t klen, const unsigned char* vp,
                                         Py_ssize_t vlen, object headers, object callback,
                                         Py_ssize_t row, int64_t now_ms)
    # What try_append and append_row share once the builder took the record: sizes, times,
    # the record's future (which is also its thunk).
    cdef FutureRecordMetadata _record_appended(self, Py_ssize_t written_before,
                                               int offset_delta, int64_t timestamp,
                                               int32_t key_size, int32_t value_size,
                                               object callback, Py_ssize_t row, int64_t now)
    cpdef bint done(self, int64_t base_offset, int64_t log_append_time,
                    object exception) except -1
    cpdef abort(self, object exception)

    # CAS _final_state from FINAL_NONE to new_state; returns the state found (FINAL_NONE = won).
    cdef int _cas_final_state(self, int new_state) except -1
    # Java completeFutureAndFireCallbacks: set the result, fire the thunks, open the latch, run
    # the futures' done-callbacks.
    cdef int _complete(self, int64_t base_offset, int64_t log_append_time,
                       object exception) except -1
    # Append a record read back from this batch, moving its existing future (split only).
    # Returns the record's offset delta in this batch, or -1 when it does not fit.
    cdef int _append_for_split(self, object record, FutureRecordMetadata future) except -2


cdef class BatchFuture:
    """The one future of a ``send_batch`` call: every record's partition, offset or error."""
    cdef:
        # The topic and how many records the call sent.  Immutable.
        readonly str topic
        readonly Py_ssize_t num_records
        # Per record: partition (set by the appender before the record is appended), offset
        # (written once, when the record's batch completes; -1 until then and on failure).
        # array.array('i') and array.array('q'), their memory reached through the pointers.
        object _partitions
        object _offsets
        int* _partition_ptr
        long long* _offset_ptr
        # None until a record fails, then one entry per record (None or the exception).
        # These, _pending, _done_callbacks and _result change under _latch._lock (rows complete
        # from more than one thread; add_done_callback races the last one).
        list _errors
        Py_ssize_t _failed
        # Records not yet completed.
        Py_ssize_t _pending
        # The latch, done-callback list and "done" state: a ProduceRequestResult does exactly
        # that for a batch, so it does it here too.
        ProduceRequestResult _latch
        list _done_callbacks
        object _result

    cdef int _record_done(self, Py_ssize_t row, int64_t offset, object exception) except -1
    # Fail every record from row ``start`` on that was never appended (the call stopped).
    cdef int _fail_rows(self, object rows, object exception) except -1
