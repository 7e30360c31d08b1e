# cython: language_level=3
"""The compiled half of ``KafkaProducer.send()``: everything it does once per record.

``send()`` checks its arguments, serializes, finds the topic's partition count, chooses a
partition, checks the record's size, and appends the record to the last batch of that partition
under the partition's lock.  All of that is per-record work, so it lives here
(docs/design.rst, principle 1).  Whatever is per-*batch* stays in Python and is called from
here only when needed:

- the first record of a topic waits for metadata in ``KafkaProducer._wait_on_metadata``;
- a record that does not fit the last batch goes to ``RecordAccumulator.append``, which allocates
  a new buffer from the BufferPool (outside the lock) and starts a batch: Java's two-phase
  locking, written once, in Python.
"""

from cpython.object cimport PyCallable_Check
from libc.stdint cimport INT32_MAX, INT64_MAX, int64_t
from posix.time cimport CLOCK_MONOTONIC, CLOCK_REALTIME, clock_gettime, timespec

cimport cython
from cpython cimport array
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.dict cimport PyDict_GetItemWithError
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_CheckExact, PyUnicode_GET_LENGTH

from kafkacore.core.batch cimport BatchFuture, FutureRecordMetadata, ProducerBatch
from kafkacore.core.murmur2 cimport partition_for_key
from kafkacore.core.partition_map cimport (
    pthread_mutex_destroy,
    pthread_mutex_init,
    pthread_mutex_lock,
    pthread_mutex_trylock,
    pthread_mutex_unlock,
)
from kafkacore.core.murmur2 cimport murmur2_raw
from kafkacore.core.record_sizes cimport estimate_size_upper_bound, estimate_size_upper_bound_raw

from kafkacore.core.record_sizes import normalize_headers
from kafkacore.errors import IllegalStateError, RecordTooLargeError, SerializationError

import array as _array
from collections import deque

cdef array.array _LONGLONG_TEMPLATE = _array.array("q")


cdef inline int64_t _clock_ns(int clock) noexcept nogil:
    cdef timespec ts
    clock_gettime(clock, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec


cdef inline int64_t _clock_ms(int clock) noexcept nogil:
    return _clock_ns(clock) // 1000000


# The record's timestamp is the wall clock (Java: ``time.milliseconds()`` in ``doSend``), and send
# also needs the monotonic clock.  A clock read costs 100-140 ns on some virtual machines (this
# one), a tenth of a record's whole budget, so send reads only the monotonic clock and adds the
# wall clock's offset from it, read again every WALL_OFFSET_TTL_NS: a step of the wall clock (NTP,
# an operator) shows in timestamps within that time; a slew moves both clocks alike.  Only
# threads holding the GIL read or write these two.
cdef enum:
    WALL_OFFSET_TTL_NS = 100000000  # 100 ms
cdef int64_t _wall_offset_ns = 0
cdef int64_t _wall_offset_read_ns = 0
cdef bint _wall_offset_known = False


cdef inline int64_t _wall_clock_ms(int64_t monotonic_ns) noexcept:
    """CLOCK_REALTIME in milliseconds, from a CLOCK_MONOTONIC reading just taken."""
    global _wall_offset_ns, _wall_offset_read_ns, _wall_offset_known
    cdef int64_t before, wall, after
    if not _wall_offset_known or monotonic_ns - _wall_offset_read_ns >= WALL_OFFSET_TTL_NS:
        before = _clock_ns(CLOCK_MONOTONIC)
        wall = _clock_ns(CLOCK_REALTIME)
        after = _clock_ns(CLOCK_MONOTONIC)
        # The wall clock was read between the two monotonic reads: take their midpoint.
        _wall_offset_ns = wall - (before + (after - before) // 2)
        _wall_offset_read_ns = after
        _wall_offset_known = True
        if monotonic_ns < after:
            monotonic_ns = after
    return (monotonic_ns + _wall_offset_ns) // 1000000


def monotonic_ms():
    """Milliseconds on CLOCK_MONOTONIC, the producer's clock (same as ``time.monotonic()``)."""
    return _clock_ms(CLOCK_MONOTONIC)


cdef inline bint _is_bytes_like(object obj) noexcept:
    return isinstance(obj, (bytes, bytearray, memoryview))


@cython.final
cdef class PartitionQueue:
    """The batches of one partition, oldest first, and the lock that guards them.

    Python code takes the lock with ``with queue:``; the compiled append path takes it directly.
    The lock is a pthread mutex, not a ``PyThread`` lock: on Python 3.11 even a non-blocking try
    of a ``PyThread`` lock reads the monotonic clock (to compute a deadline it never uses), and
    this lock is taken once per record.  A mutex must be released by the thread that took it:
    every holder takes and releases it in one call (``with``, or try/finally).
    """

    def __cinit__(self):
        if pthread_mutex_init(&self._mutex, NULL) != 0:
            raise MemoryError("cannot initialise a partition lock")
        self._initialized = True
        self.batches = deque()

    def __dealloc__(self):
        if self._initialized:
            pthread_mutex_destroy(&self._mutex)

    cdef int acquire(self) except -1:
        # Try without releasing the GIL first: the lock is held for a few hundred ns at most.
        # Else wait with the GIL released, so that the holder can take it back to finish.
        if pthread_mutex_trylock(&self._mutex) == 0:
            return 0
        with nogil:
            pthread_mutex_lock(&self._mutex)
        return 0

    cdef void release(self) noexcept:
        pthread_mutex_unlock(&self._mutex)

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc_info):
        self.release()
        return False


@cython.final
@cython.auto_pickle(False)
cdef class ClosedFlag:
    """The accumulator's ``closed`` (Java's ``volatile boolean closed``), as a C field: the
    send path reads it once per record, under the partition's lock, without a lookup."""

    def __cinit__(self):
        self.is_set = False


@cython.final
@cython.auto_pickle(False)
cdef class CurrentCluster:
    """Where the metadata keeps its current ``Cluster`` (its ``cluster`` property reads and
    writes this): a C field, which the send path reads once per record without a lookup."""

    def __cinit__(self, cluster=None):
        self.cluster = cluster


@cython.final
@cython.auto_pickle(False)
cdef class _TopicEntry:
    """What send() keeps about one topic, found with one dict lookup per record."""

    def __cinit__(self):
        self.topic = None
        self.cluster = None
        self.count = 0
        self.sticky = None
        self.queues = []


@cython.final
cdef class RecordAppender:
    """send()'s per-record work; one per producer."""

    def __init__(self, *, batches, accumulator, metadata, wait_on_metadata, wakeup,
                 key_serializer, value_serializer, custom_partitioner, bint ignore_keys,
                 Py_ssize_t max_request_size, Py_ssize_t total_memory,
                 int64_t max_block_ms, sticky_factory):
        self._batches = batches
        self._accumulator = accumulator
        self._metadata = metadata
        self._wait_on_metadata = wait_on_metadata
        self._wakeup = wakeup
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._custom_partitioner = custom_partitioner
        self._ignore_keys = ignore_keys
        self._max_request_size = max_request_size
        self._total_memory = total_memory
        self._max_block_ms = max_block_ms
        self._topics = {}
        self._last_entry = None
        self._current = metadata.current
        self._closed_flag = accumulator.closed_flag
        self._sticky_factory = sticky_factory
        self.closed = False

    cdef _TopicEntry _entry(self, str topic):
        """The topic's entry (made on its first record; never removed).

        The entry used last is tried first, by identity of the topic string: a producer that
        sends to one topic, with the same string, skips the dict (a hash lookup costs as much
        as the rest of this function)."""
        cdef _TopicEntry entry = self._last_entry  # one read: another thread may replace it
        if entry is not None and entry.topic is topic:
            return entry
        cdef PyObject* found = PyDict_GetItemWithError(self._topics, topic)
        if found != NULL:
            entry = <_TopicEntry>found
        else:
            entry = _TopicEntry.__new__(_TopicEntry)
            entry.topic = topic
            entry = <_TopicEntry>self._topics.setdefault(topic, entry)
        self._last_entry = entry
        return entry

    cdef object _snapshot(self, _TopicEntry entry, str topic, object partition, int* count,
                          int64_t* now_ms):
        """This call's view of the cluster: returns the cluster and sets ``count[0]`` to the
        topic's partition count in it, waiting for metadata (Python) if we do not know it
        (then ``now_ms[0]`` is read again: the wait took time).

        Java resolves the cluster once per append; so do we: every choice a call makes is
        checked against this one snapshot, never against a cache another thread may be
        replacing meanwhile.  The count is kept in the topic's entry beside the cluster it was
        read from; a new cluster (the metadata's ``cluster`` is another object) reads it anew.
        """
        cdef object cluster = self._current.cluster
        cdef object _old
        cdef int n
        if entry.cluster is cluster and (partition is None or partition < entry.count):
            count[0] = entry.count
            return cluster
        found = cluster.partition_count(topic)
        if not found or (partition is not None and partition >= found):
            cluster = self._wait_on_metadata(topic, partition)
            found = cluster.partition_count(topic)
            now_ms[0] = _clock_ms(CLOCK_MONOTONIC)
        n = found or 0
        count[0] = n
        if n:
            # Both fields in C, with the GIL and no Python code between them: a reader sees
            # the old pair or the new one.  ``_old`` keeps the replaced cluster alive until the
            # store is done (its release may run Python code).
            _old = entry.cluster
            entry.count = n
            entry.cluster = cluster
        return cluster

    cdef object _checked_sticky(self, str topic, _StickyRun sticky, object cluster, int* count,
                                int* chosen):
        """The sticky partition, checked against the call's snapshot (``cluster``,
        ``count[0]``).  The partitioner may have switched on a newer cluster in another thread
        (the topic grew): then the call moves to the metadata's current cluster if that one
        has the partition and no fewer partitions; otherwise the answer is an
        IllegalStateError, never an index outside what the call sized.  Returns the cluster
        the call goes on with."""
        cdef int p = sticky.current(cluster)
        cdef int newer
        if 0 <= p < count[0]:
            chosen[0] = p
            return cluster
        fresh = self._metadata.cluster
        if fresh is not cluster:
            newer = fresh.partition_count(topic) or 0
            if newer >= count[0] and 0 <= p < newer:
                count[0] = newer
                chosen[0] = p
                return fresh
        sticky.partition = -1  # ask again next time
        raise IllegalStateError(
            f"the partitioner chose partition {p} of topic {topic!r}, which has partitions "
            f"0..{count[0] - 1} in this call's view of the cluster")

    cdef _StickyRun _sticky_run(self, _TopicEntry entry, str topic):
        cdef _StickyRun run = entry.sticky
        if run is None:
            # The factory gives every caller the topic's one BuiltInPartitioner.
            run = _StickyRun(self._sticky_factory(topic))
            if entry.sticky is None:
                entry.sticky = run
            run = entry.sticky
        return run

    cdef PartitionQueue _queue_for(self, _TopicEntry entry, str topic, int partition):
        """The partition's queue, or None before its first batch.

        Queues are never removed from the accumulator's map, so we keep the ones we found in
        the topic's entry, by partition: no (topic, partition) tuple built and hashed per
        record.
        """
        cdef list queues = entry.queues
        cdef PartitionQueue queue = None
        if partition < len(queues):
            queue = <PartitionQueue>queues[partition]
        if queue is None:
            queue = <PartitionQueue>self._batches.get_c((topic, partition), None)
            if queue is not None:
                if len(queues) <= partition:
                    queues.extend([None] * (partition + 1 - len(queues)))
                queues[partition] = queue
        return queue

    def append(self, topic, value, key, partition, timestamp, headers, callback):
        """``KafkaProducer.send`` without the interceptors: see its documentation."""
        return self._append(topic, value, key, partition, timestamp, headers, callback)

    # send: start
    def send(self, topic, value=None, key=None, partition=None, timestamp=None, headers=None,
             callback=None, *, on_delivery=None, timestamp_ms=None):
        """``KafkaProducer.send``, compiled: same arguments, checks and errors (see there).

        A producer with no interceptor and no transaction has nothing to run in Python before
        the append, so its ``send`` is this method: a record then costs no Python frame."""
        if on_delivery is not None or timestamp_ms is not None:
            from kafkacore.producer import _other_clients  # rare: the other clients' names
            callback, timestamp = _other_clients(
                topic, value, key, timestamp, headers, callback, on_delivery, timestamp_ms)
        return self._append(topic, value, key, partition, timestamp, headers, callback)
    # send: end

    cdef object _append(self, object topic, object value, object key, object partition,
                        object timestamp, object headers, object callback):
        cdef int count, chosen
        cdef Py_ssize_t size
        cdef int64_t monotonic_ns = _clock_ns(CLOCK_MONOTONIC)
        cdef int64_t ts, start = monotonic_ns // 1000000
        cdef int64_t now = start
        cdef object cluster
        cdef PartitionQueue queue
        cdef ProducerBatch last
        cdef FutureRecordMetadata future = None
        cdef bint full = False
        cdef Py_ssize_t n
        if self.closed:
            raise IllegalStateError("cannot send after the producer is closed")
        topic = _topic(topic)
        if self._key_serializer is not None:
            key = self._key_serializer(topic, key)
        if self._value_serializer is not None:
            value = self._value_serializer(topic, value)
        if key is not None and not _is_bytes_like(key):
            raise SerializationError(
                f"key must be bytes-like or None (or set key.serializer), not {type(key).__name__}")
        if value is not None and not _is_bytes_like(value):
            raise SerializationError(
                f"value must be bytes-like or None (or set value.serializer), "
                f"not {type(value).__name__}")
        if partition is not None and (type(partition) is not int or partition < 0):
            raise ValueError(f"partition must be a non-negative int, not {partition!r}")
        if timestamp is None:
            ts = _wall_clock_ms(monotonic_ns)
        elif type(timestamp) is not int or not 0 <= timestamp <= INT64_MAX:
            raise ValueError(
                f"timestamp must be a non-negative int of milliseconds within int64, not "
                f"{timestamp!r}")
        else:
            ts = timestamp
        if callback is not None and not PyCallable_Check(callback):
            raise TypeError(f"callback must be callable, not {callback!r}")
        # Once, here: a headers iterable is user code (it must not run under the partition
        # lock, nor twice), and the record is sized from what will be written.
        if headers is not None:
            headers = normalize_headers(headers)

        # Bytes (or None) key and value, the common case, go to the batch as pointer and length.
        cdef bint raw = (key is None or PyBytes_CheckExact(key)) and (
            value is None or PyBytes_CheckExact(value))
        cdef _TopicEntry entry = self._entry(topic)
        cluster = self._snapshot(entry, topic, partition, &count, &now)
        if raw and headers is None:
            size = estimate_size_upper_bound_raw(
                -1 if key is None else PyBytes_GET_SIZE(key),
                -1 if value is None else PyBytes_GET_SIZE(value), 1)
        else:
            size = estimate_size_upper_bound(key, value, headers)
        if size > self._max_request_size:
            raise RecordTooLargeError(
                f"the record is {size} bytes when serialized, larger than "
                f"max.request.size ({self._max_request_size})")
        if size > self._total_memory:
            raise RecordTooLargeError(
                f"the record is {size} bytes when serialized, larger than "
                f"buffer.memory ({self._total_memory})")

        cdef _StickyRun sticky = None
        if partition is not None:
            if partition >= count:
                raise ValueError(
                    f"partition {partition} is out of range: topic {topic!r} has {count} "
                    f"partitions")
            chosen = partition
        elif self._custom_partitioner is not None:
            chosen = self._custom_partition(cluster, topic, key, value, count)
        elif key is not None and not self._ignore_keys:
            chosen = partition_for_key(key, count)
        else:
            sticky = entry.sticky
            if sticky is None:
                sticky = self._sticky_run(entry, topic)
            if 0 <= sticky.partition < count:  # the usual case: the run goes on, in range
                chosen = sticky.partition
            else:
                cluster = self._checked_sticky(topic, sticky, cluster, &count, &chosen)

        # The fast path: the partition's last batch has room (Java's
        # ``RecordAccumulator.tryAppend``, under the lock).  ``now`` is the clock read at the
        # start of the call, or after a wait for metadata.
        queue = self._queue_for(entry, topic, chosen)
        if queue is not None:
            queue.acquire()
            try:
                if self._closed_flag.is_set:
                    raise IllegalStateError("cannot send: the producer is closed")
                n = len(queue.batches)
                if n:
                    last = <ProducerBatch>queue.batches[n - 1]
                    if raw:  # straight to the builder, no Python objects
                        future = last.append_row(
                            ts,
                            NULL if key is None else <const unsigned char*>PyBytes_AS_STRING(key),
                            -1 if key is None else PyBytes_GET_SIZE(key),
                            NULL if value is None
                            else <const unsigned char*>PyBytes_AS_STRING(value),
                            -1 if value is None else PyBytes_GET_SIZE(value),
                            headers, callback, -1, now)
                    else:
                        future = last.try_append(ts, key, value, headers, callback, now)
                    if future is not None:
                        # Wake the Sender when this batch just filled up.  (Java also wakes it
                        # while older batches wait; we woke it when the newer batch began.)
                        full = last._builder.is_full()
                    else:
                        last.close_for_record_appends()
            finally:
                queue.release()
        if future is None:
            # The slow path: a new batch, memory from the BufferPool (may block max.block.ms).
            # Once per batch is often enough to tell the metadata this topic is still in use
            # (metadata.max.idle.ms is minutes); Java does it on every send.
            self._metadata.add_topic(topic)
            future, full, _new = self._accumulator.append(
                topic, chosen, ts, key, value, headers, callback,
                max(self._max_block_ms - (now - start), 0), now)
            full = True  # a new batch was started: the one before it is ready to go
        if sticky is not None:
            sticky.produced(chosen, size, cluster)
        if full:
            self._wakeup()
        return future

    cdef int _custom_partition(self, object cluster, str topic, object key, object value,
                               int count) except -1:
        available = [p.partition for p in cluster.available_partitions_for_topic(topic)]
        chosen = self._custom_partitioner(topic, key, value, count, available)
        if type(chosen) is not int or not 0 <= chosen < count:
            raise ValueError(
                f"partitioner.class returned {chosen!r} for topic {topic!r}, "
                f"which has partitions 0..{count - 1}")
        return chosen

    # -- send_batch: whole columns at once --------------------------------------------------

    def append_columns(self, topic, values, keys=None, partitions=None, timestamps=None,
                       headers=None):
        """``KafkaProducer.send_batch``: see its documentation."""
        cdef _Column value_col, key_col
        cdef Py_ssize_t n, row, i, size
        cdef int count, p
        cdef int64_t ts, start = _clock_ms(CLOCK_MONOTONIC)
        cdef int64_t now = start
        cdef const unsigned char* kp
        cdef const unsigned char* vp
        cdef Py_ssize_t klen, vlen
        cdef _StickyRun sticky = None
        cdef BatchFuture sink
        cdef list explicit = None, stamps = None, row_headers = None
        cdef int* parts
        cdef int chosen
        cdef object cluster
        if self.closed:
            raise IllegalStateError("cannot send after the producer is closed")
        topic = _topic(topic)
        value_col = _Column(values, "values")
        n = value_col.length
        key_col = _Column(keys, "keys", n)
        if partitions is not None:
            explicit = _int_list(partitions, "partitions", n)
        if timestamps is not None:
            stamps = _int_list(timestamps, "timestamps", n)
        if headers is not None:
            row_headers = list(headers)
            if len(row_headers) != n:
                raise ValueError(f"headers has {len(row_headers)} rows, values has {n}")
            # Each row's headers made immutable once, now: no user code runs later in the call
            # (not under a partition lock), and the rows are sized from what will be written.
            for row in range(n):
                row_headers[row] = normalize_headers(row_headers[row])
        sink = BatchFuture(topic, n)
        if n == 0:
            return sink

        # Check every row before appending any: a bad row must not leave half a call sent.
        cdef _TopicEntry entry = self._entry(topic)
        cluster = self._snapshot(entry, topic, max(explicit) if explicit else None, &count, &now)
        for row in range(n):
            value_col.get(row, &vp, &vlen)
            key_col.get(row, &kp, &klen)
            if row_headers is None or row_headers[row] is None:
                size = estimate_size_upper_bound_raw(klen, vlen, 1)
            else:  # also checks the headers' types, before anything is appended
                size = estimate_size_upper_bound(
                    key_col.item(row), value_col.item(row), row_headers[row])
            if size > self._max_request_size or size > self._total_memory:
                raise RecordTooLargeError(
                    f"row {row} is {size} bytes when serialized, larger than "
                    f"max.request.size ({self._max_request_size}) or buffer.memory "
                    f"({self._total_memory})")
            if explicit is not None:
                p = explicit[row]
                if p < 0 or p >= count:
                    raise ValueError(f"partitions[{row}] = {p} is out of range: topic "
                                     f"{topic!r} has {count} partitions")
            if stamps is not None and (stamps[row] is not None and stamps[row] < 0):
                raise ValueError(f"timestamps[{row}] = {stamps[row]} is negative")

        # Choose each row's partition, exactly as send() would.
        parts = sink._partition_ptr
        for row in range(n):
            if explicit is not None:
                parts[row] = explicit[row]
                continue
            key_col.get(row, &kp, &klen)
            if self._custom_partitioner is not None:
                parts[row] = self._custom_partition(
                    cluster, topic, key_col.item(row), value_col.item(row), count)
            elif klen >= 0 and not self._ignore_keys:
                parts[row] = <int>((<unsigned int>murmur2_raw(kp, klen) & 0x7fffffffu)
                                   % <unsigned int>count)
            else:
                # Sticky, as send() does it: the partitioner is asked only at a switch.
                if sticky is None:
                    sticky = self._sticky_run(entry, topic)
                value_col.get(row, &vp, &vlen)
                # Checked against the snapshot: ``count`` sizes the arrays below.  It may
                # only grow (to a newer cluster that has the partition), so the rows chosen
                # before stay in range.
                cluster = self._checked_sticky(topic, sticky, cluster, &count, &chosen)
                parts[row] = chosen
                sticky.produced(chosen, estimate_size_upper_bound_raw(klen, vlen, 1), cluster)

        # Group the rows by partition, keeping call order within each (a stable counting sort),
        # so each partition's rows go in under few holds of its lock.
        cdef array.array order_array = array.clone(_LONGLONG_TEMPLATE, n, False)
        cdef array.array fill_array = array.clone(_LONGLONG_TEMPLATE, count + 1, True)
        cdef long long* order = order_array.data.as_longlongs
        cdef long long* fill = fill_array.data.as_longlongs
        cdef Py_ssize_t pos = 0, end
        for row in range(n):
            if not 0 <= parts[row] < count:  # cannot happen (checked when chosen): C, so check
                raise IllegalStateError(f"row {row}: partition {parts[row]} outside 0..{count - 1}")
            fill[parts[row] + 1] += 1
        for i in range(count):
            fill[i + 1] += fill[i]
        for row in range(n):
            order[fill[parts[row]]] = row
            fill[parts[row]] += 1
        # fill[p] is now where partition p's rows end in ``order``.

        now = _clock_ms(CLOCK_MONOTONIC)
        ts = _clock_ms(CLOCK_REALTIME)
        try:
            for p in range(count):
                end = fill[p]
                while pos < end:  # order[:pos] are appended: their batches will complete them
                    self._append_run(entry, topic, p, sink, value_col, key_col, stamps, row_headers,
                                     order, &pos, end, ts, now, start)
        except BaseException as exc:
            # Memory or time ran out part-way: the rows not appended fail, the others go on.
            sink._fail_rows([order[i] for i in range(pos, n)], exc)
            if not isinstance(exc, Exception):
                raise
        self._wakeup()
        return sink

    cdef int _append_run(self, _TopicEntry entry, str topic, int p, BatchFuture sink,
                         _Column value_col, _Column key_col, list stamps, list row_headers,
                         const long long* order, Py_ssize_t* pos, Py_ssize_t end, int64_t ts,
                         int64_t now, int64_t start) except -1:
        """Append partition ``p``'s rows ``order[pos[0]:end]`` into its last batch, under one
        hold of its lock, until that batch is full; then one row through the slow path (a new
        batch).  ``pos[0]`` always says the first position not yet appended."""
        cdef PartitionQueue queue = self._queue_for(entry, topic, p)
        cdef ProducerBatch last
        cdef FutureRecordMetadata future
        cdef const unsigned char* kp
        cdef const unsigned char* vp
        cdef Py_ssize_t klen, vlen, m, row
        cdef int64_t row_ts
        cdef object h
        if queue is not None:
            queue.acquire()
            try:
                if self._closed_flag.is_set:
                    raise IllegalStateError("cannot send: the producer is closed")
                m = len(queue.batches)
                if m:
                    last = <ProducerBatch>queue.batches[m - 1]
                    while pos[0] < end:
                        row = order[pos[0]]
                        value_col.get(row, &vp, &vlen)
                        key_col.get(row, &kp, &klen)
                        row_ts = ts if stamps is None or stamps[row] is None else stamps[row]
                        h = None if row_headers is None else row_headers[row]
                        future = last.append_row(row_ts, kp, klen, vp, vlen, h, sink, row, now)
                        if future is None:
                            last.close_for_record_appends()
                            break
                        pos[0] += 1
                    else:
                        return 0
            finally:
                queue.release()
        # A new batch for this row: the accumulator's two-phase slow path (BufferPool memory).
        self._metadata.add_topic(topic)
        row = order[pos[0]]
        row_ts = ts if stamps is None or stamps[row] is None else stamps[row]
        self._accumulator.append(
            topic, p, row_ts, key_col.item(row), value_col.item(row),
            None if row_headers is None else row_headers[row], sink,
            max(self._max_block_ms - (now - start), 0), now, row)
        pos[0] += 1
        return 0


cdef list _int_list(object column, str what, Py_ssize_t n):
    """A column of ints (list, array, or pyarrow array) as a list, checked."""
    if hasattr(column, "to_pylist"):
        column = column.to_pylist()
    items = list(column)
    if len(items) != n:
        raise ValueError(f"{what} has {len(items)} rows, values has {n}")
    for i, item in enumerate(items):
        if item is not None and type(item) is not int:
            raise TypeError(f"{what}[{i}] must be an int, not {type(item).__name__}")
        if item is None and what == "partitions":
            raise TypeError(f"partitions[{i}] is None: give every row a partition, or none")
        # Range-checked here, before any row is appended: a C conversion later would raise a
        # bare OverflowError part-way through the call.
        if what == "partitions" and not 0 <= item <= INT32_MAX:
            raise ValueError(f"partitions[{i}] = {item} is out of range 0..{INT32_MAX}")
        if what == "timestamps" and item is not None and item > INT64_MAX:
            raise ValueError(f"timestamps[{i}] = {item} is outside int64 (milliseconds)")
    return items


cdef inline str _topic(object topic):
    """The topic as an exact str (a str subclass is a valid topic: it is copied)."""
    if PyUnicode_CheckExact(topic) and PyUnicode_GET_LENGTH(topic) > 0:
        return <str>topic
    if not isinstance(topic, str) or not topic:
        raise TypeError(f"topic must be a non-empty str, not {topic!r}")
    if type(topic) is not str:
        topic = str.__str__(topic)
    return <str>topic


# No tp_clear, as for ByteBufferOutputStream: Cython's would Py_CLEAR each Py_buffer's obj
# without PyBuffer_Release, leaving the exports behind; __dealloc__ releases them.
@cython.no_gc_clear
cdef class _Column:
    """A column of keys or values, read without making a Python object per row.

    A Python list (items bytes, bytearray, str (as UTF-8) or None), or a pyarrow array of
    binary, large_binary, string or large_string (read straight from its Arrow buffers: validity
    bitmap, offsets, data).
    """

    def __cinit__(self, object column, str what, Py_ssize_t expected=-1):
        cdef Py_ssize_t i
        cdef object item
        self._owner = column
        if column is None:
            if expected < 0:
                raise TypeError(f"{what} must be a list or a pyarrow array, not None")
            self._all_null = True
            self.length = expected
            return
        type_name = type(column).__module__ + "." + type(column).__name__
        if type_name.startswith("pyarrow"):
            self._init_arrow(column, what)
        elif isinstance(column, (list, tuple)):
            self._items = list(column)
            self.length = len(self._items)
            # Items we point into must not change while the call runs (Python code runs
            # between reading a row and copying it: headers, the GC, the slow path), so every
            # mutable item is copied now: our list holds only bytes, str and None.
            for i in range(self.length):
                item = self._items[i]
                if not (item is None or PyBytes_CheckExact(item) or PyUnicode_CheckExact(item)):
                    if isinstance(item, (bytes, bytearray, memoryview, str)):
                        self._items[i] = bytes(item) if not isinstance(item, str) else str(item)
                    else:
                        raise SerializationError(
                            f"{what}[{i}] must be bytes, bytearray, str or None, "
                            f"not {type(item).__name__}")
        else:
            raise TypeError(f"{what} must be a list or a pyarrow array, "
                            f"not {type(column).__name__}")
        if expected >= 0 and self.length != expected:
            raise ValueError(f"{what} has {self.length} rows, values has {expected}")

    cdef int _init_arrow(self, object arrow_array, str what) except -1:
        kind = str(arrow_array.type)
        if type(arrow_array).__name__ == "ChunkedArray":
            arrow_array = arrow_array.combine_chunks()
            self._owner = arrow_array
        if kind in ("binary", "string"):
            self._wide = False
        elif kind in ("large_binary", "large_string"):
            self._wide = True
        else:
            raise SerializationError(
                f"{what} must be a binary, large_binary, string or large_string array, "
                f"not {kind}")
        self._arrow = True
        self.length = len(arrow_array)
        self._offset = arrow_array.offset
        validity, offsets, data = arrow_array.buffers()
        if validity is not None:
            PyObject_GetBuffer(validity, &self._validity, PyBUF_SIMPLE)
            self._has_validity = True
        PyObject_GetBuffer(offsets, &self._offsets, PyBUF_SIMPLE)
        self._has_offsets = True
        if data is not None:
            PyObject_GetBuffer(data, &self._data, PyBUF_SIMPLE)
            self._has_data = True
        # The buffers must hold what the offsets say, or we would read past them: every offset
        # checked once here (monotonic, inside the data), and the bitmap's length.
        cdef Py_ssize_t width = 8 if self._wide else 4, row, prev, cur
        cdef Py_ssize_t data_len = self._data.len if self._has_data else 0
        if self._offset < 0 or self._offsets.len < (self._offset + self.length + 1) * width:
            raise ValueError(f"{what}: Arrow offsets buffer is too short")
        if self._has_validity and self._validity.len * 8 < self._offset + self.length:
            raise ValueError(f"{what}: Arrow validity bitmap is too short")
        prev = self._start(0)
        if prev < 0 or prev > data_len:
            raise ValueError(f"{what}: Arrow offset {prev} at row 0 is outside the data buffer")
        for row in range(self.length):
            cur = self._end(row)
            if cur < prev or cur > data_len:
                raise ValueError(f"{what}: Arrow offsets are not monotonic inside the data buffer"
                                 f" at row {row} ({prev} then {cur}, {data_len} bytes of data)")
            prev = cur
        return 0

    def __dealloc__(self):
        if self._has_validity:
            PyBuffer_Release(&self._validity)
        if self._has_offsets:
            PyBuffer_Release(&self._offsets)
        if self._has_data:
            PyBuffer_Release(&self._data)

    cdef Py_ssize_t _start(self, Py_ssize_t row) noexcept:
        if self._wide:
            return <Py_ssize_t>(<const long long*>self._offsets.buf)[self._offset + row]
        return (<const int*>self._offsets.buf)[self._offset + row]

    cdef Py_ssize_t _end(self, Py_ssize_t row) noexcept:
        return self._start(row + 1)

    cdef int get(self, Py_ssize_t row, const unsigned char** p, Py_ssize_t* n) except -1:
        """Row ``row`` as pointer and length; length -1 for null."""
        cdef PyObject* item
        cdef Py_ssize_t bit, s
        if self._all_null:
            p[0] = NULL
            n[0] = -1
            return 0
        if self._arrow:
            if self._has_validity:
                bit = self._offset + row
                if not ((<const unsigned char*>self._validity.buf)[bit >> 3] >> (bit & 7)) & 1:
                    p[0] = NULL
                    n[0] = -1
                    return 0
            s = self._start(row)
            n[0] = self._end(row) - s
            if self._has_data:
                p[0] = <const unsigned char*>self._data.buf + s
            else:  # every row empty or null: Arrow may leave out the data buffer
                p[0] = <const unsigned char*>""
            return 0
        item = PyList_GET_ITEM(self._items, row)
        if <object>item is None:
            p[0] = NULL
            n[0] = -1
        elif PyBytes_CheckExact(<object>item):
            p[0] = <const unsigned char*>PyBytes_AS_STRING(<object>item)
            n[0] = PyBytes_GET_SIZE(<object>item)
        else:
            p[0] = <const unsigned char*>PyUnicode_AsUTF8AndSize(<object>item, n)
        return 0

    cdef object item(self, Py_ssize_t row):
        """Row ``row`` as bytes or None (the slow path and custom partitioners want objects)."""
        cdef const unsigned char* p
        cdef Py_ssize_t n
        self.get(row, &p, &n)
        if n < 0:
            return None
        return (<const char*>p)[:n]


@cython.final
cdef class _StickyRun:
    """The sticky partition of one topic, counted in C between switches.

    ``BuiltInPartitioner`` (partitioner.py) decides; we only count the bytes that go to its
    current partition and call it when they reach its ``sticky_batch_size``: that is when it
    switches, so it sees the same sums it would see record by record.
    """

    def __cinit__(self, partitioner):
        self.partitioner = partitioner
        self.partition = -1
        self.bytes = 0
        self.limit = partitioner.sticky_batch_size

    cdef int current(self, object cluster) except -1:
        if self.partition < 0:
            self.partition = self.partitioner.peek_current_partition(cluster)
            self.bytes = 0
        return self.partition

    cdef int produced(self, int partition, Py_ssize_t size, object cluster) except -1:
        if partition != self.partition:
            return 0  # another thread switched meanwhile: its count is not ours
        self.bytes += size
        if self.bytes >= self.limit:
            self.partitioner.update_partition_info(partition, self.bytes, cluster)
            self.partition = -1
        return 0


# -- AIOKafkaProducer.send, compiled ------------------------------------------------------------
# ``future = await producer.send(...)`` awaits a coroutine in aiokafka.  A Python coroutine costs
# a frame, its creation and its cleanup, once per record, and the record almost never waits.  So
# the asyncio producer's send is a compiled call that appends at once and returns a QueuedRecord:
# an awaitable that is finished before anyone awaits it.  ``await`` takes its future through the
# type's C slots, in which nothing is allocated: ``am_send`` (Python 3.10 and 3.11 ask it first)
# hands the future over as the return value, ``tp_iternext`` (3.12 and later) as StopIteration's
# value.  Only a record that would wait returns a coroutine, which waits in a worker thread.

cdef extern from "Python.h":
    ctypedef enum PySendResult:
        PYGEN_RETURN
        PYGEN_ERROR
        PYGEN_NEXT
    ctypedef PySendResult (*sendfunc)(PyObject*, PyObject*, PyObject**)
    ctypedef PyObject* (*iternextfunc)(PyObject*)
    ctypedef struct PyAsyncMethods:
        sendfunc am_send
    ctypedef struct _TypeSlots "PyTypeObject":
        PyAsyncMethods* tp_as_async
        iternextfunc tp_iternext
    void PyType_Modified(object type)
    void PyErr_SetObject(object type, object value)
    void Py_INCREF(PyObject* o)


@cython.final
@cython.no_gc  # holds only its record's future, which cannot lead back here
@cython.freelist(16)
@cython.auto_pickle(False)
cdef class QueuedRecord:
    """What :meth:`AIOKafkaProducer.send <kafkacore.aio.AIOKafkaProducer.send>` returns for a
    record it queued at once: awaiting it gives the record's
    :class:`~kafkacore.core.FutureRecordMetadata` without suspending.

    It has a coroutine's methods (``send``, ``throw``, ``close``), so ``asyncio.create_task``
    and ``asyncio.ensure_future`` take it as they take aiokafka's coroutine.
    """
    cdef FutureRecordMetadata _future

    def __init__(self):
        raise TypeError("QueuedRecord is made by AIOKafkaProducer.send, not directly")

    def __await__(self):
        return self

    def __next__(self):  # replaced by _queued_next below; here so the type is an iterator
        raise StopIteration(self._future)

    def send(self, value):
        """The coroutine protocol: finished at the first step, with the record's future."""
        raise StopIteration(self._future)

    def throw(self, typ, val=None, tb=None):
        """The coroutine protocol: an exception thrown in is raised (nothing is left to undo:
        the record is queued)."""
        if val is None:
            val = typ() if isinstance(typ, type) else typ
        if tb is not None:
            val = val.with_traceback(tb)
        raise val

    def close(self):
        """The coroutine protocol: nothing to close."""


cdef PySendResult _queued_send(PyObject* queued, PyObject* arg, PyObject** result) noexcept:
    cdef PyObject* future = <PyObject*>(<QueuedRecord>queued)._future
    Py_INCREF(future)
    result[0] = future
    return PYGEN_RETURN


cdef PyObject* _queued_next(PyObject* queued) noexcept:
    PyErr_SetObject(StopIteration, (<QueuedRecord>queued)._future)
    return NULL


cdef _TypeSlots* _queued_slots = <_TypeSlots*>QueuedRecord
if _queued_slots.tp_as_async == NULL:  # Cython gives the type one for __await__
    raise ImportError("QueuedRecord has no async slots to fill")
_queued_slots.tp_as_async.am_send = _queued_send
_queued_slots.tp_iternext = _queued_next
PyType_Modified(QueuedRecord)


@cython.final
@cython.auto_pickle(False)
cdef class AsyncSend:
    """``AIOKafkaProducer.send`` when nothing in Python runs before the append (no serializer,
    interceptor or transaction): an append that never waits, else ``append_waiting``'s
    coroutine (the append that waits, in a worker thread)."""
    cdef RecordAppender _appender
    cdef object _append_waiting
    cdef tuple _would_wait

    def __init__(self, RecordAppender appender not None, append_waiting, tuple would_wait):
        self._appender = appender
        self._append_waiting = append_waiting
        self._would_wait = would_wait

    # async send: start
    def send(self, topic, value=None, key=None, partition=None, timestamp_ms=None, headers=None):
        """Queue one record: see ``AIOKafkaProducer.send``."""
        if headers is not None:
            # Once, here: a one-shot iterable must reach the second append intact.
            headers = normalize_headers(headers)
        try:
            future = self._appender._append(
                topic, value, key, partition, timestamp_ms, headers, None)
        except self._would_wait:
            return self._append_waiting(topic, value, key, partition, timestamp_ms, headers, None)
        cdef QueuedRecord queued = QueuedRecord.__new__(QueuedRecord)
        queued._future = future
        return queued
    # async send: end
