# cython: language_level=3
"""Declarations of the compiled half of ``send()``: PartitionQueue and RecordAppender.

Concurrency: a RecordAppender is shared by every thread that calls ``send()``.  Its own fields are
set once in ``__init__`` (immutable after), except the per-topic caches, which are dicts replaced
or updated whole under the GIL (a stale entry is re-checked against the metadata's cluster
object, see ``_partition_count``).  A PartitionQueue's ``batches`` deque and the batches in it are
guarded by the queue's own lock.
"""

from cpython.pythread cimport PyThread_type_lock
from libc.stdint cimport int64_t

from kafkacore.core.partition_map cimport CopyOnWriteMap


cdef class PartitionQueue:
    cdef:
        # Guards ``batches`` and every append to the batches in it (seed 000: the deque lock).
        PyThread_type_lock _lock
        # The partition's batches, oldest first: appends go to the last, the Sender drains the
        # first.  [_lock]
        readonly object batches

    cdef int acquire(self) except -1
    cdef void release(self) noexcept


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
        # The cluster object the count cache below was filled from; a new cluster empties it.
        object _cluster
        # topic -> partition count in ``_cluster``.
        dict _counts
        # topic -> BuiltInPartitioner (sticky partition for records without a key).
        dict _sticky
        # Set by close(): send() refuses at once (the accumulator re-checks under the lock).
        public bint closed

    cdef int _partition_count(self, str topic, object partition) except -1
    cdef int _custom_partition(self, str topic, object key, object value, int count) except -1
