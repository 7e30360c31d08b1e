"""The compiled data plane: everything that runs once per record.

Each module is a Cython ``.pyx`` with a ``.pxd`` so the others can ``cimport`` it.  There is no
pure-Python twin (docs/design.rst, principle 3): if these imports fail, kafkacore does not work.
"""

from kafkacore.core.batch import (
    BatchFuture,
    BatchResult,
    FutureRecordMetadata,
    ProducerBatch,
    RecordMetadata,
)
from kafkacore.core.buffer_pool import BufferPool
from kafkacore.core.bytestream import ByteBufferOutputStream
from kafkacore.core.crc import crc32c
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.partition_map import CopyOnWriteMap
from kafkacore.core.record_batch import Record, RecordBatch, iter_batches, iter_records
from kafkacore.core.record_sizes import estimate_size_upper_bound

__all__ = [
    "BatchFuture",
    "BatchResult",
    "BufferPool",
    "ByteBufferOutputStream",
    "CopyOnWriteMap",
    "FutureRecordMetadata",
    "MemoryRecordsBuilder",
    "ProducerBatch",
    "Record",
    "RecordBatch",
    "RecordMetadata",
    "crc32c",
    "estimate_size_upper_bound",
    "iter_batches",
    "iter_records",
]

#: The compiled modules; the test suite checks each one is an extension module, not source.
COMPILED_MODULES = (
    "kafkacore.core.appender",
    "kafkacore.core.batch",
    "kafkacore.core.buffer_pool",
    "kafkacore.core.bytestream",
    "kafkacore.core.compression",
    "kafkacore.core.crc",
    "kafkacore.core.murmur2",
    "kafkacore.core.partition_map",
    "kafkacore.core.record_sizes",
    "kafkacore.core.memory_records_builder",
    "kafkacore.core.record_batch",
    "kafkacore.core.arrow_records",  # the read path: fetched record batches into Arrow columns
    "kafkacore.broker.server_common.timer",  # the broker's timing wheel: compiled, but the broker's alone
    "kafkacore.broker.network.request_parser",  # the broker's request header and Produce body
    "kafkacore.broker.network.response_encoder",  # the broker's Produce response
    "kafkacore.broker.log.log_validator_core",  # the log's LogValidator (analyze, assign_offsets)
)
