"""Tutorial 2: build a gzip record batch with headers, read its 61-byte header, decode it back.

We append three records (one with headers, one with a null key) to a MemoryRecordsBuilder, close
it, and print the batch header field by field next to its bytes.  Then iter_records decodes the
batch, checking the CRC-32C and every length on the way.

Run it from the repository's root:

    python tutorials/02_build_and_decode_batch.py

Needs: kafkacore's compiled core, built in place once
(``python setup.py build_ext --inplace``); no broker.
"""

import gzip
import struct

from kafkacore.core.crc import crc32c
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_batches, iter_records

T0 = 1_700_000_000_000  # milliseconds since the epoch

builder = MemoryRecordsBuilder(bytearray(16384), compression="gzip")
records = [
    (T0, b"user-1", b'{"clicks": 3}', [("trace-id", b"abc123"), ("région", None)]),
    (T0 + 5, None, b'{"clicks": 1}', None),
    (T0 + 2, b"user-2", b'{"clicks": 8}', []),
]
for timestamp, key, value, headers in records:
    delta = builder.append(timestamp, key, value, headers)
    print(f"appended offset delta {delta}: key={key!r} value={value!r} headers={headers}")

print(f"before close: {builder.uncompressed_bytes_written} bytes uncompressed "
      f"(61 header + {builder.uncompressed_bytes_written - 61} records)")
batch = bytes(builder.build())  # close(): gzip the records, fill in the header, then the CRC
print(f"after close: {len(batch)} bytes, compression ratio {builder.compression_ratio:.2f}")

# The header, field by field: (name, struct format) in wire order, big-endian.
FIELDS = [
    ("baseOffset", "q"), ("batchLength", "i"), ("partitionLeaderEpoch", "i"), ("magic", "b"),
    ("crc", "I"), ("attributes", "h"), ("lastOffsetDelta", "i"), ("baseTimestamp", "q"),
    ("maxTimestamp", "q"), ("producerId", "q"), ("producerEpoch", "h"), ("baseSequence", "i"),
    ("recordCount", "i"),
]
header = {}
offset = 0
print()
print(f"{'offset':>6}  {'field':<21} {'bytes':<24} value")
for name, fmt in FIELDS:
    size = struct.calcsize(">" + fmt)
    (value,) = struct.unpack_from(">" + fmt, batch, offset)
    header[name] = value
    shown = f"0x{value:08x}" if name == "crc" else value
    print(f"{offset:>6}  {name:<21} {batch[offset:offset + size].hex(' '):<24} {shown}")
    offset += size
assert offset == 61

# What the header says, checked against what we put in.
assert header["batchLength"] == len(batch) - 12  # everything after the length field
assert header["partitionLeaderEpoch"] == -1 and header["magic"] == 2
assert header["attributes"] & 0x07 == 1  # codec bits: gzip
assert header["lastOffsetDelta"] == 2 and header["recordCount"] == 3
assert header["baseTimestamp"] == T0 and header["maxTimestamp"] == T0 + 5
assert (header["producerId"], header["producerEpoch"], header["baseSequence"]) == (-1, -1, -1)
# The CRC-32C covers the bytes from attributes (offset 21) to the end.
assert header["crc"] == crc32c(batch[21:])
# After the header: one gzip stream holding the records.
print(f"\nrecords section starts with {batch[61:64].hex(' ')} (gzip magic 1f 8b)")
assert batch[61:63] == b"\x1f\x8b" and len(gzip.decompress(batch[61:])) == \
    builder.uncompressed_bytes_written - 61

# Decode it back.
print()
decoded = list(iter_records(batch))
for record in decoded:
    print(f"offset={record.offset} timestamp=T0+{record.timestamp - T0} key={record.key!r} "
          f"value={record.value!r} headers={record.headers}")
assert [(r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
    (t, k, v, list(h or [])) for t, k, v, h in records
]
(decoded_batch,) = list(iter_batches(batch))
assert decoded_batch.compression == "gzip" and decoded_batch.crc == header["crc"]

# One flipped bit in the records section, and the CRC catches it.
damaged = bytearray(batch)
damaged[100] ^= 0x01
try:
    list(iter_records(damaged))
except Exception as e:  # kafkacore.errors.CorruptRecordError
    print(f"\nflipped one bit: {type(e).__name__}: {e}")
    assert type(e).__name__ == "CorruptRecordError"
else:
    raise AssertionError("a damaged batch decoded")
