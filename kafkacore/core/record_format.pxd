# cython: language_level=3
"""The record batch's wire format (magic v2), shared by the builder, the reader and the broker's
checks: the header's field offsets, the attribute bits, the codec numbers, big-endian loads.

Declarations and inline functions only: nothing here is a module at run time.
"""
#
# Record batch, magic v2 (Kafka >= 0.11), as written by the Java producer
# (org.apache.kafka.common.record.DefaultRecordBatch / DefaultRecord):
#
#   RecordBatch =>
#     BaseOffset => Int64            offset of the first record (the broker assigns it; we write 0)
#     Length => Int32                bytes after this field, up to the end of the batch
#     PartitionLeaderEpoch => Int32  set by the broker; a producer writes -1
#     Magic => Int8                  2
#     CRC => Uint32                  CRC-32C of everything from Attributes to the end
#     Attributes => Int16            bits 0-2 compression codec (0 none, 1 gzip, 2 snappy, 3 lz4,
#                                    4 zstd), bit 3 timestamp type (0 CreateTime, 1 LogAppendTime),
#                                    bit 4 transactional, bit 5 control batch
#     LastOffsetDelta => Int32       offset delta of the last record
#     BaseTimestamp => Int64         timestamp of the first record
#     MaxTimestamp => Int64          largest timestamp in the batch
#     ProducerId => Int64            -1 without idempotence
#     ProducerEpoch => Int16         -1 without idempotence
#     BaseSequence => Int32          sequence number of the first record, -1 without idempotence
#     RecordsCount => Int32          number of records
#     Records => [Record]            compressed as one block when the codec is not none
#
#   Record =>
#     Length => Varint               bytes after this field
#     Attributes => Int8             unused, 0
#     TimestampDelta => Varlong      timestamp - BaseTimestamp
#     OffsetDelta => Varint          offset - BaseOffset
#     KeyLength => Varint            -1 for a null key
#     Key => Bytes
#     ValueLength => Varint          -1 for a null value
#     Value => Bytes
#     HeaderCount => Varint
#     Headers => [Header]
#
#   Header =>
#     HeaderKeyLength => Varint
#     HeaderKey => String            UTF-8
#     HeaderValueLength => Varint    -1 for a null value
#     HeaderValue => Bytes
#
# Varints are zigzag-encoded base-128 varints (protobuf's sint32/sint64).

from libc.stdint cimport int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t


# -- the batch header, field by field ---------------------------------------------------------
# Each offset is the previous field's offset plus its size, so the layout above is the only
# source of truth.
cdef enum:
    BASE_OFFSET_OFFSET = 0
    BASE_OFFSET_LENGTH = 8
    LENGTH_OFFSET = BASE_OFFSET_OFFSET + BASE_OFFSET_LENGTH                        # 8
    LENGTH_LENGTH = 4
    PARTITION_LEADER_EPOCH_OFFSET = LENGTH_OFFSET + LENGTH_LENGTH                 # 12
    PARTITION_LEADER_EPOCH_LENGTH = 4
    MAGIC_OFFSET = PARTITION_LEADER_EPOCH_OFFSET + PARTITION_LEADER_EPOCH_LENGTH  # 16
    MAGIC_LENGTH = 1
    CRC_OFFSET = MAGIC_OFFSET + MAGIC_LENGTH                                      # 17
    CRC_LENGTH = 4
    ATTRIBUTES_OFFSET = CRC_OFFSET + CRC_LENGTH                                   # 21
    ATTRIBUTES_LENGTH = 2
    LAST_OFFSET_DELTA_OFFSET = ATTRIBUTES_OFFSET + ATTRIBUTES_LENGTH              # 23
    LAST_OFFSET_DELTA_LENGTH = 4
    BASE_TIMESTAMP_OFFSET = LAST_OFFSET_DELTA_OFFSET + LAST_OFFSET_DELTA_LENGTH   # 27
    BASE_TIMESTAMP_LENGTH = 8
    MAX_TIMESTAMP_OFFSET = BASE_TIMESTAMP_OFFSET + BASE_TIMESTAMP_LENGTH          # 35
    MAX_TIMESTAMP_LENGTH = 8
    PRODUCER_ID_OFFSET = MAX_TIMESTAMP_OFFSET + MAX_TIMESTAMP_LENGTH              # 43
    PRODUCER_ID_LENGTH = 8
    PRODUCER_EPOCH_OFFSET = PRODUCER_ID_OFFSET + PRODUCER_ID_LENGTH               # 51
    PRODUCER_EPOCH_LENGTH = 2
    BASE_SEQUENCE_OFFSET = PRODUCER_EPOCH_OFFSET + PRODUCER_EPOCH_LENGTH          # 53
    BASE_SEQUENCE_LENGTH = 4
    RECORDS_COUNT_OFFSET = BASE_SEQUENCE_OFFSET + BASE_SEQUENCE_LENGTH            # 57
    RECORDS_COUNT_LENGTH = 4
    RECORDS_OFFSET = RECORDS_COUNT_OFFSET + RECORDS_COUNT_LENGTH                  # 61
    RECORD_BATCH_OVERHEAD = RECORDS_OFFSET
    # BaseOffset + Length: the part of the header that Length does not count.
    LOG_OVERHEAD = LENGTH_OFFSET + LENGTH_LENGTH                                  # 12

# Attribute bits.
cdef enum:
    COMPRESSION_CODEC_MASK = 0x07
    TIMESTAMP_TYPE_MASK = 0x08
    TRANSACTIONAL_FLAG_MASK = 0x10
    CONTROL_FLAG_MASK = 0x20

# Codecs (the attribute values).
cdef enum:
    CODEC_NONE = 0
    CODEC_GZIP = 1
    CODEC_SNAPPY = 2
    CODEC_LZ4 = 3
    CODEC_ZSTD = 4

cdef enum:
    MAGIC_V2 = 2
    NO_TIMESTAMP = -1
    NO_PARTITION_LEADER_EPOCH = -1
    # Java DefaultRecord.MAX_RECORD_OVERHEAD: length (5) + attributes (1) + timestampDelta (10)
    # + offsetDelta (5), everything but key, value and headers.
    MAX_RECORD_OVERHEAD = 21
    # Above this many bytes the CRC runs without the GIL (below, releasing costs more than it buys).
    CRC_NOGIL_THRESHOLD = 64 * 1024
    # xerial snappy framing (Java's SnappyOutputStream): 16-byte header, 32 KiB input blocks.
    XERIAL_HEADER_LENGTH = 16
    XERIAL_BLOCK_SIZE = 32 * 1024
    # LZ4 frame as Kafka's Lz4BlockOutputStream writes it: 64 KiB independent blocks.
    LZ4_BLOCK_SIZE = 64 * 1024
    LZ4_INCOMPRESSIBLE = 0x80000000


# -- big-endian loads (the reader's counterpart of bytestream's put_*) -------------------------

cdef inline int16_t get_int16(const unsigned char* p) noexcept nogil:
    return <int16_t>((<uint16_t>p[0] << 8) | <uint16_t>p[1])


cdef inline int32_t get_int32(const unsigned char* p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8)
                     | <uint32_t>p[3])


cdef inline int64_t get_int64(const unsigned char* p) noexcept nogil:
    return <int64_t>((<uint64_t><uint32_t>get_int32(p) << 32)
                     | <uint64_t><uint32_t>get_int32(p + 4))
