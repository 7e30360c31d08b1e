"""``LogValidator``: check a Produce request's batches and give them their offsets.

Kafka's ``LogValidator`` in our terms: the compiled reader (``check_batches``, the checks of
``iter_batches`` without a Python object per record) checks every byte of every batch (framing,
CRC-32C, varints, decompression), once per request, and ``analyze`` and ``assign_offsets``,
which run for every partition of every Produce request, are compiled too (log_validator_core.pyx):
they read each batch's 61-byte header in C.  This module keeps ``BatchHeader``, the layout and
the slower checks (a follower's compacted batches, a read's ``verified_end``).

Offsets are assigned in place by writing each batch's ``baseOffset``, a field the CRC does not
cover, so an uncompressed batch is stored exactly as the producer built it, unless its
``maxTimestamp`` is not its records' largest (Sarama writes -1): Kafka sets it from the records,
because ListOffsets by time and the time index trust it, and so do we, with a new CRC.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kafkacore.core.crc import crc32c
from kafkacore.core.record_batch import iter_batches
from kafkacore.errors import (
    CorruptMessageError,
    CorruptRecordError,
    InvalidRecordError,
)

# v2 batch header layout (DefaultRecordBatch): field offsets in bytes.
BASE_OFFSET = 0
LENGTH = 8
PARTITION_LEADER_EPOCH = 12
MAGIC = 16
CRC = 17
ATTRIBUTES = 21
LAST_OFFSET_DELTA = 23
BASE_TIMESTAMP = 27
MAX_TIMESTAMP = 35
PRODUCER_ID = 43
RECORD_BATCH_OVERHEAD = 61
LOG_OVERHEAD = 12  # baseOffset + length: the part the length does not count

TIMESTAMP_TYPE_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
NO_SEQUENCE = -1
NO_PRODUCER_ID = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_AND_LENGTH = struct.Struct(">qi")
_INT32 = struct.Struct(">i")


class BatchHeader(NamedTuple):
    """The fields of one batch header that the log acts on, and where the batch sits."""

    position: int
    size: int  # LOG_OVERHEAD + length
    base_offset: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def last_sequence(self) -> int:
        """``DefaultRecordBatch.lastSequence``: sequences wrap at Integer.MAX_VALUE."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)


def read_header(buf: bytes | bytearray | memoryview, position: int) -> BatchHeader:
    """Decode the header at ``position`` (the caller checked that 61 bytes are there)."""
    fields = _HEADER.unpack_from(buf, position)
    return BatchHeader(position, LOG_OVERHEAD + fields[1], fields[0], *fields[2:])


def whole_batches_end(data: bytes, max_offset: int | None) -> int:
    """Where the last whole batch in ``data`` ends (stopping before a batch at or above
    ``max_offset``): a read returns whole batches only.  Reads two fields per batch."""
    pos, n = 0, len(data)
    while n - pos >= LOG_OVERHEAD:
        base_offset, length = _BASE_AND_LENGTH.unpack_from(data, pos)
        size = LOG_OVERHEAD + length
        if size > n - pos or size < RECORD_BATCH_OVERHEAD:
            break
        if max_offset is not None and base_offset >= max_offset:
            break
        pos += size
    return pos


def verified_end(data: bytes | bytearray | memoryview) -> tuple[int, str | None]:
    """Check whole batches read back from a segment before they are served: each frames, is
    magic 2, has no more records than its lastOffsetDelta says (fewer once the log cleaner
    removed some), starts after the previous batch (offsets grow; a gap is legal: a compacted
    log has them), and matches its CRC-32C.  Returns (end of the good prefix, why it ends
    there), with ``(len(data), None)`` when every batch is good.  The CRC runs in C (about
    9 GB/s here)."""
    pos, n = 0, len(data)
    expected = None
    previous = 0  # where the batch before ``pos`` starts
    while pos < n:
        if n - pos < RECORD_BATCH_OVERHEAD:
            return pos, f"{n - pos} stray bytes at byte {pos}"
        h = read_header(data, pos)
        if h.magic != 2 or h.size < RECORD_BATCH_OVERHEAD or h.size > n - pos:
            return pos, f"batch at byte {pos} does not frame (magic {h.magic}, {h.size} bytes)"
        if expected is not None and h.base_offset < expected:
            # One of the two base offsets (outside the CRC) is wrong; which one, only the
            # batches around them can tell: neither is served.
            return previous, (f"batch at byte {pos} starts at offset {h.base_offset}, below "
                              f"{expected}, where the batch before it ends")
        if not 0 <= h.record_count <= h.last_offset_delta + 1 or not crc_ok(data, h):
            return pos, f"batch at offset {h.base_offset} fails its CRC or its record count"
        expected = h.last_offset + 1
        previous = pos
        pos += h.size
    return pos, None


def crc_ok(buf: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    """Does the batch's stored CRC-32C match its bytes (attributes to the end)?"""
    view = memoryview(buf)[header.position + ATTRIBUTES : header.position + header.size]
    try:
        return crc32c(view) == header.crc
    finally:
        view.release()


def _check_compacted(records: bytes | bytearray | memoryview, h: BatchHeader) -> BatchHeader:
    """A batch the log cleaner rewrote: its CRC, every record decoded (the compiled reader),
    offsets inside the batch's range and increasing.  Slower than ``check_batches`` (an object
    per record), and only for a follower copying a compacted range."""
    if not crc_ok(records, h):
        raise CorruptMessageError(f"batch at byte {h.position} fails its CRC")
    try:
        batch = next(iter_batches(memoryview(records)[h.position : h.position + h.size]))
        offsets = [r.offset for r in batch.records]
    except (CorruptRecordError, StopIteration) as exc:
        raise CorruptMessageError(f"batch at byte {h.position}: {exc}") from None
    if len(offsets) != h.record_count or offsets != sorted(set(offsets)) or (
            offsets and not h.base_offset <= offsets[0] <= offsets[-1] <= h.last_offset):
        raise InvalidRecordError(f"batch at byte {h.position}: record offsets outside "
                                 f"[{h.base_offset}, {h.last_offset}] or out of order")
    if h.is_transactional and not h.has_producer_id:
        raise InvalidRecordError("a transactional batch without a producer id")
    return h


def check_compacted_keys(records: bytes | bytearray | memoryview, headers: list[BatchHeader],
                         topic_partition: str) -> None:
    """A compacted topic keeps each key's latest record: a record without a key could never be
    cleaned, so Kafka's ``LogValidator`` refuses it (``INVALID_RECORD``, with one
    ``RecordError`` per keyless record: KIP-467's ``record_errors``, each naming the record's
    index in its batch).  Control batches (markers) have keys of their own and are skipped."""
    errors: list[dict[str, object]] = []
    for h in headers:
        if h.is_control:
            continue
        view = memoryview(records)[h.position : h.position + h.size]
        try:
            batch = next(iter_batches(view))
            for index, record in enumerate(batch.records):
                if record.key is None:
                    errors.append({"batch_index": index, "batch_index_error_message":
                                   "Compacted topic cannot accept message without key in "
                                   f"topic partition {topic_partition}."})
        finally:
            view.release()
    if errors:
        exc = InvalidRecordError(
            f"One or more records have been rejected due to {len(errors)} record errors in "
            "total, and only showing the first three errors at most: "
            + ", ".join(f"RecordError(batchIndex={e['batch_index']}, message="
                        f"'{e['batch_index_error_message']}')" for e in errors[:3]))
        exc.record_errors = errors  # type: ignore[attr-defined]
        raise exc


#: ``compression.type`` -> the codec id in a batch's attributes
_CODEC_IDS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
_CODEC_MASK = 0x07


def recompress(records: bytes | bytearray | memoryview, headers: list[BatchHeader],
               compression_type: str, level: int | None, max_message_bytes: int
               ) -> tuple[bytes | bytearray | memoryview, list[BatchHeader]]:
    """The batches with the topic's ``compression.type`` (Kafka's LogValidator: a batch whose
    codec is not the topic's is rebuilt with it; ``producer`` keeps every batch as it came).
    A rebuilt batch keeps its records (timestamps, keys, values, headers), producer id, epoch,
    base sequence and transactional flag; control batches are kept as they are.  Returns the
    new bytes and their headers (checked again, max.message.bytes included); the same when
    nothing differs."""
    target = _CODEC_IDS.get(compression_type)
    if target is None or all(h.is_control or h.attributes & _CODEC_MASK == target
                             for h in headers):
        return records, headers
    from kafkacore.core.memory_records_builder import MemoryRecordsBuilder

    out = bytearray()
    for h in headers:
        view = memoryview(records)[h.position : h.position + h.size]
        try:
            if h.is_control or h.attributes & _CODEC_MASK == target:
                out += view
                continue
            batch = next(iter_batches(view))
            builder = MemoryRecordsBuilder(
                max(2 * h.size, 4096), compression=_CODEC_NAMES[target],
                compression_level=level, producer_id=h.producer_id,
                producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                is_transactional=h.is_transactional,
                partition_leader_epoch=h.partition_leader_epoch)
            for r in batch.records:
                builder.append(r.timestamp, r.key, r.value, r.headers)
            out += builder.build()
        finally:
            view.release()
    return out, analyze(out, max_message_bytes)


# The two per-request functions, compiled (log_validator_core.pyx): it takes BatchHeader and
# _check_compacted from this module, so the import comes after them.
from kafkacore.broker.log.log_validator_core import analyze, assign_offsets  # noqa: E402

__all__ = [
    "BatchHeader",
    "analyze",
    "check_compacted_keys",
    "recompress",
    "assign_offsets",
    "crc_ok",
    "read_header",
    "verified_end",
    "whole_batches_end",
]
