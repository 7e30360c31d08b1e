# cython: language_level=3
"""The compiled half of ``KafkaProducer.send()``: everything it does once per record.

``send()`` checks its arguments, serializes, finds the topic's partition count, chooses a
partition, checks the record's size, and appends the record to the last batch of that partition
under the partition's lock.  All of that is per-record work, so it lives here (DESIGN.md principle
1).  Whatever is per-*batch* stays in Python and is called from here only when needed:

- the first record of a topic waits for metadata in ``KafkaProducer._wait_on_metadata``;
- a record that does not fit the last batch goes to ``RecordAccumulator.append``, which allocates
  a new buffer from the BufferPool (outside the lock) and starts a batch: the seed's two-phase
  locking, written once, in Python.
"""

from cpython.object cimport PyCallable_Check
from cpython.pythread cimport (
    NOWAIT_LOCK,
    WAIT_LOCK,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
)
from libc.stdint cimport int64_t
from posix.time cimport CLOCK_MONOTONIC, CLOCK_REALTIME, clock_gettime, timespec

from kafkacore.core.batch cimport FutureRecordMetadata, ProducerBatch
from kafkacore.core.murmur2 cimport partition_for_key
from kafkacore.core.partition_map cimport CopyOnWriteMap
from kafkacore.core.records cimport estimate_size_upper_bound

from kafkacore.errors import IllegalStateError, RecordTooLargeError, SerializationError

from collections import deque


cdef inline int64_t _clock_ms(int clock) noexcept nogil:
    cdef timespec ts
    clock_gettime(clock, &ts)
    return <int64_t>ts.tv_sec * 1000 + ts.tv_nsec // 1000000


def monotonic_ms():
    """Milliseconds on CLOCK_MONOTONIC, the producer's clock (same as ``time.monotonic()``)."""
    return _clock_ms(CLOCK_MONOTONIC)


cdef inline bint _is_bytes_like(object obj) noexcept:
    return isinstance(obj, (bytes, bytearray, memoryview))


cdef class PartitionQueue:
    """The batches of one partition, oldest first, and the lock that guards them.

    Python code takes the lock with ``with queue:``; the compiled append path takes it directly.
    """

    def __cinit__(self):
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError("cannot allocate a lock")
        self.batches = deque()

    def __dealloc__(self):
        if self._lock != NULL:
            PyThread_free_lock(self._lock)

    cdef int acquire(self) except -1:
        # Try without releasing the GIL first: the lock is held for a few hundred ns at most.
        if PyThread_acquire_lock(self._lock, NOWAIT_LOCK):
            return 0
        with nogil:
            PyThread_acquire_lock(self._lock, WAIT_LOCK)
        return 0

    cdef void release(self) noexcept:
        PyThread_release_lock(self._lock)

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc_info):
        self.release()
        return False


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
        self._cluster = None
        self._counts = {}
        self._sticky = {}
        self._sticky_factory = sticky_factory
        self.closed = False

    cdef int _partition_count(self, str topic, object partition) except -1:
        """The topic's partition count, waiting for metadata (Python) if we do not know it.

        Counts are cached per cluster object: a metadata update publishes a new cluster, which
        empties the cache, so a count is never older than the cluster the record is placed in.
        """
        cluster = self._metadata.cluster
        if cluster is not self._cluster:
            self._counts = {}
            self._cluster = cluster
        count = self._counts.get(topic)
        if count is None:
            count = cluster.partition_count(topic)
            if count:
                self._counts[topic] = count
        if not count or (partition is not None and partition >= count):
            cluster = self._wait_on_metadata(topic, partition)
            count = cluster.partition_count(topic)
            self._counts = {topic: count}
            self._cluster = cluster
        return count

    def append(self, topic, value, key, partition, timestamp, headers, callback):
        """``KafkaProducer.send`` without the interceptors: see its documentation."""
        cdef int count, chosen
        cdef Py_ssize_t size
        cdef int64_t now, start = _clock_ms(CLOCK_MONOTONIC)
        cdef PartitionQueue queue
        cdef ProducerBatch last
        cdef FutureRecordMetadata future = None
        cdef bint full = False
        cdef Py_ssize_t n
        if self.closed:
            raise IllegalStateError("cannot send after the producer is closed")
        if type(topic) is not str or not topic:
            raise TypeError(f"topic must be a non-empty str, not {topic!r}")
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
            timestamp = _clock_ms(CLOCK_REALTIME)
        elif type(timestamp) is not int or timestamp < 0:
            raise ValueError(
                f"timestamp must be a non-negative int of milliseconds, not {timestamp!r}")
        if callback is not None and not PyCallable_Check(callback):
            raise TypeError(f"callback must be callable, not {callback!r}")

        count = self._partition_count(topic, partition)
        size = estimate_size_upper_bound(key, value, headers)
        if size > self._max_request_size:
            raise RecordTooLargeError(
                f"the record is {size} bytes when serialized, larger than "
                f"max.request.size ({self._max_request_size})")
        if size > self._total_memory:
            raise RecordTooLargeError(
                f"the record is {size} bytes when serialized, larger than "
                f"buffer.memory ({self._total_memory})")

        sticky = None
        if partition is not None:
            if partition >= count:
                raise ValueError(
                    f"partition {partition} is out of range: topic {topic!r} has {count} "
                    f"partitions")
            chosen = partition
        elif self._custom_partitioner is not None:
            chosen = self._custom_partition(topic, key, value, count)
        elif key is not None and not self._ignore_keys:
            chosen = partition_for_key(key, count)
        else:
            sticky = self._sticky.get(topic)
            if sticky is None:
                sticky = self._sticky.setdefault(topic, self._sticky_factory(topic))
            chosen = sticky.peek_current_partition(self._cluster)

        # The fast path: the partition's last batch has room (seed 000, tryAppend under the lock).
        now = _clock_ms(CLOCK_MONOTONIC)
        queue = <PartitionQueue>self._batches.get_c((topic, chosen), None)
        if queue is not None:
            queue.acquire()
            try:
                if self._accumulator.closed:
                    raise IllegalStateError("cannot send: the producer is closed")
                n = len(queue.batches)
                if n:
                    last = <ProducerBatch>queue.batches[n - 1]
                    future = last.try_append(timestamp, key, value, headers, callback, now)
                    if future is not None:
                        full = n > 1 or last._builder.is_full()
                    else:
                        last.close_for_record_appends()
            finally:
                queue.release()
        if future is None:
            # The slow path: a new batch, memory from the BufferPool (may block max.block.ms).
            future, full, _new = self._accumulator.append(
                topic, chosen, timestamp, key, value, headers, callback,
                max(self._max_block_ms - (now - start), 0), now)
            full = True  # a new batch was started: the one before it is ready to go
        if sticky is not None:
            sticky.update_partition_info(chosen, size, self._cluster)
        if full:
            self._wakeup()
        return future

    cdef int _custom_partition(self, str topic, object key, object value, int count) except -1:
        available = [p.partition for p in self._cluster.available_partitions_for_topic(topic)]
        chosen = self._custom_partitioner(topic, key, value, count, available)
        if type(chosen) is not int or not 0 <= chosen < count:
            raise ValueError(
                f"partitioner.class returned {chosen!r} for topic {topic!r}, "
                f"which has partitions 0..{count - 1}")
        return chosen
