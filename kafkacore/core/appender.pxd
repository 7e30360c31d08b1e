# cython: language_level=3
"""Declarations of the compiled half of ``send()``: PartitionQueue and RecordAppender.

Concurrency: a RecordAppender is shared by every thread that calls ``send()``.  Its own fields are
set once in ``__init__`` (immutable after), except the per-topic caches, which are dicts replaced
or updated whole under the GIL; the partition counts live in one (cluster, counts) tuple replaced
in one store, and each call reads it once: its snapshot (see ``_snapshot``).  A PartitionQueue's
``batches`` deque and the batches in it are guarded by the queue's own lock.
"""

from libc.stdint cimport int64_t

from kafkacore.core.batch cimport BatchFuture
from kafkacore.core.partition_map cimport CopyOnWriteMap, pthread_mutex_t


cdef class _Column:
    """A column of send_batch keys or values, read row by row without Python objects."""
    cdef:
        # What keeps the memory alive: the list, or the Arrow array.  Immutable.
        object _owner
        # List columns: the items (bytes, bytearray, str or None).
        list _items
        # An Arrow array; with 64-bit offsets (large_binary, large_string).
        bint _arrow, _wide
        # keys=None: every row is null.
        bint _all_null
        # Arrow buffers, exported for the column's life (released in __dealloc__).
        Py_buffer _validity, _offsets, _data
        bint _has_validity, _has_offsets, _has_data
        # The array's offset into its buffers (an Arrow slice).
        Py_ssize_t _offset
        readonly Py_ssize_t length

    cdef int _init_arrow(self, object arrow_array, str what) except -1
    cdef Py_ssize_t _start(self, Py_ssize_t row) noexcept
    cdef Py_ssize_t _end(self, Py_ssize_t row) noexcept
    cdef int get(self, Py_ssize_t row, const unsigned char** p, Py_ssize_t* n) except -1
    cdef object item(self, Py_ssize_t row)


cdef class PartitionQueue:
    cdef:
        # Guards ``batches`` and every append to the batches in it (the deque lock of Java's
        # ``RecordAccumulator``).
        pthread_mutex_t _mutex
        # _mutex was initialised (so __dealloc__ destroys it only then).
        bint _initialized
        # The partition's batches, oldest first: appends go to the last, the Sender drains the
        # first.  [_mutex]
        readonly object batches

    cdef int acquire(self) except -1
    cdef void release(self) noexcept


cdef class _StickyRun:
    cdef:
        # The topic's BuiltInPartitioner.  Immutable.
        object partitioner
        # Its current partition as we last asked (-1: ask again), and the bytes sent there
        # since; ints changed with the GIL held (a race costs a few bytes of count).
        int partition
        Py_ssize_t bytes
        # batch.size: the partitioner switches once this many bytes went to one partition.
        Py_ssize_t limit

    cdef int current(self, object cluster) except -1
    cdef int produced(self, int partition, Py_ssize_t size, object cluster) except -1


cdef class ClosedFlag:
    cdef:
        # Set once by RecordAccumulator.close(), with the GIL held; never cleared.
        public bint is_set


cdef class CurrentCluster:
    cdef:
        # The metadata's current Cluster (immutable); replaced in one store, with the GIL held.
        public object cluster


cdef class _TopicEntry:
    cdef:
        # The topic (the exact str the entry was made for).  Immutable.
        str topic
        # The cluster snapshot ``count`` was read from (None until the first record), and the
        # topic's partition count in it.  Written together, in C, with the GIL held.
        object cluster
        int count
        # The topic's sticky run (records without a key or partition); None until needed.
        # Set once.
        _StickyRun sticky
        # PartitionQueue or None, by partition: queues already found in the accumulator's map.
        # Grows, under the GIL; entries are set once.
        list queues


cdef class RecordAppender:
    cdef:
        # tp -> PartitionQueue: the accumulator's map (reads take no lock).  Immutable ref.
        CopyOnWriteMap _batches
        # The Python accumulator: its ``append`` is the slow path (a new batch, which needs
        # BufferPool memory) and its ``closed`` flag refuses appends after close.  Immutable ref.
        object _accumulator
        # The producer's Metadata: ``cluster`` is read once per record (a reference read).
        object _metadata
        # The producer's slow metadata wait: ``wait_on_metadata(topic, partition) -> cluster``.
        object _wait_on_metadata
        # Wakes the Sender when a batch fills up or a new one starts.
        object _wakeup
        # Settings, immutable.
        object _key_serializer
        object _value_serializer
        object _custom_partitioner
        bint _ignore_keys
        Py_ssize_t _max_request_size
        Py_ssize_t _total_memory
        # max.block.ms: the metadata wait and the BufferPool wait share it.
        int64_t _max_block_ms
        # topic -> a new BuiltInPartitioner (the sticky partitioner lives in partitioner.py).
        object _sticky_factory
        # topic -> _TopicEntry: partition count (with its cluster), sticky run and queues,
        # found with one lookup per record.  Entries are added, never removed.
        dict _topics
        # The entry used last (tried first, by identity of the topic); replaced in one store.
        _TopicEntry _last_entry
        # The metadata's current cluster, read once per call (its snapshot).  Immutable ref.
        CurrentCluster _current
        # The accumulator's closed flag, read under the partition's lock.  Immutable ref.
        ClosedFlag _closed_flag
        # Set by close(): send() refuses at once (the accumulator re-checks under the lock).
        public bint closed

    cdef object _append(self, object topic, object value, object key, object partition,
                        object timestamp, object headers, object callback)
    cdef _TopicEntry _entry(self, str topic)
    cdef object _snapshot(self, _TopicEntry entry, str topic, object partition, int* count,
                          int64_t* now_ms)
    cdef object _checked_sticky(self, str topic, _StickyRun sticky, object cluster, int* count,
                                int* chosen)
    cdef PartitionQueue _queue_for(self, _TopicEntry entry, str topic, int partition)
    cdef _StickyRun _sticky_run(self, _TopicEntry entry, str topic)
    cdef int _custom_partition(self, object cluster, str topic, object key, object value,
                               int count) except -1
    cdef int _append_run(self, _TopicEntry entry, str topic, int p, BatchFuture sink,
                         _Column value_col, _Column key_col, list stamps, list row_headers,
                         const long long* order, Py_ssize_t* pos, Py_ssize_t end, int64_t ts,
                         int64_t now, int64_t start) except -1
