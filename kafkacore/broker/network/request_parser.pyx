# cython: language_level=3
"""The parts of request parsing that run for every request, compiled: the request header, and
the body of a Produce request (Kafka's ``RequestHeader.parse`` and ``ProduceRequest.parse``).

For small requests the Python codec's walk (a function call per field, a ``memoryview`` slice per
string) costs more than the handler's own work.  These functions read the same bytes into the
same dicts as :func:`kafkacore.protocol.codec.decode` does (the records as views of the frame,
not copies), which stays the reference: the property test ``tests/broker/test_request_parser.py``
checks that both give equal results, or the same error class, on generated, truncated and
garbled frames; every other request, and a Produce version outside :data:`PRODUCE_VERSIONS`, is
read by the Python codec.

The bytes come from a client, so every read is checked against the end of the frame first, and
counts are never trusted: an array's count must fit in the bytes left (each element takes at
least one byte) before anything is built for it.  The frame is held as a typed memoryview for
the whole call (its buffer cannot move or shrink meanwhile), and the GIL is held throughout.
"""

from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t

from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.codec import ProtocolError

#: The Produce versions read here (the declaration's 0-12: v12's body is v11's, sent by a
#: transaction version 2 producer; a newer one goes to the codec).
PRODUCE_VERSIONS = range(0, 13)

cdef enum:
    #: Produce v9 is the first flexible version (KIP-482: compact lengths, tag buffers).
    PRODUCE_FIRST_FLEXIBLE = 9
    #: Produce v3 adds the transactional id.
    PRODUCE_FIRST_TRANSACTIONAL = 3


cdef struct Cursor:
    const uint8_t* data
    Py_ssize_t pos
    Py_ssize_t end


cdef inline int need(Cursor* c, int64_t n, str what) except -1:
    """Raise unless ``n`` more bytes are there (``n`` may be anything a client sent)."""
    if n < 0 or n > c.end - c.pos:
        raise ProtocolError(
            f"{what}: truncated, need {n} bytes at offset {c.pos}, {c.end - c.pos} left")
    return 0


cdef inline int16_t read_int16(Cursor* c) noexcept:
    """Big-endian; the caller has checked the bounds."""
    cdef const uint8_t* p = c.data + c.pos
    c.pos += 2
    return <int16_t>((p[0] << 8) | p[1])


cdef inline int32_t read_int32(Cursor* c) noexcept:
    cdef const uint8_t* p = c.data + c.pos
    c.pos += 4
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16)
                     | (<uint32_t>p[2] << 8) | <uint32_t>p[3])


cdef int64_t read_uvarint(Cursor* c) except -1:
    """An unsigned varint of at most five bytes (lengths, counts, tags)."""
    cdef int64_t value = 0
    cdef int shift = 0
    cdef uint8_t b
    while True:
        if c.pos >= c.end:
            raise ProtocolError(f"truncated varint at offset {c.pos}")
        b = c.data[c.pos]
        c.pos += 1
        value |= (<int64_t>(b & 0x7F)) << shift
        if not b & 0x80:
            return value
        shift += 7
        if shift > 28:
            raise ProtocolError(f"unsigned varint longer than 5 bytes at offset {c.pos}")


cdef int64_t read_length(Cursor* c, bint compact, bint wide, str what) except -2:
    """A length or count: compact = uvarint(n + 1), classic = int16 or int32; -1 is null."""
    cdef int64_t n
    if compact:
        n = read_uvarint(c) - 1
    elif wide:
        need(c, 4, what)
        n = read_int32(c)
    else:
        need(c, 2, what)
        n = read_int16(c)
    if n < -1:
        raise ProtocolError(f"{what}: negative length {n} at offset {c.pos}")
    return n


cdef object read_string(Cursor* c, bint compact, bint nullable, str what):
    cdef int64_t n = read_length(c, compact, False, what)
    if n == -1:
        if not nullable:
            raise ProtocolError(f"{what}: null string where it is not nullable")
        return None
    need(c, n, what)
    c.pos += n
    try:
        return PyUnicode_DecodeUTF8(<const char*>(c.data + c.pos - n), n, NULL)
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"{what}: invalid UTF-8: {exc}") from None


cdef object read_records(Cursor* c, bint compact, object frame_view, str what):
    """A nullable ``records`` field: a slice of ``frame_view`` (the frame's ``memoryview``), not
    a copy.  The log writes the batches' offsets into it and writes the file from it."""
    cdef int64_t n = read_length(c, compact, True, what)
    if n == -1:
        return None
    need(c, n, what)
    c.pos += n
    return frame_view[c.pos - n : c.pos]


cdef int64_t read_array_count(Cursor* c, bint compact, str what) except -1:
    """A non-nullable array's count, refused unless that many elements could fit."""
    cdef int64_t n = read_length(c, compact, True, what)
    if n == -1:
        raise ProtocolError(f"{what}: null array where it is not nullable")
    if n > c.end - c.pos:  # every element takes at least one byte
        raise ProtocolError(f"{what}: array of {n} elements in {c.end - c.pos} bytes")
    return n


cdef int skip_tags(Cursor* c, str what) except -1:
    """A tag buffer whose tags are all unknown here: checked (order, bounds) and skipped."""
    cdef int64_t count = read_uvarint(c)
    cdef int64_t _i, tag, size, last = -1
    for _i in range(count):  # each tag takes two bytes at least: bounded by the frame
        tag = read_uvarint(c)
        size = read_uvarint(c)
        if tag <= last:
            raise ProtocolError(f"{what}: tagged fields out of order ({tag} after {last})")
        last = tag
        need(c, size, what)
        c.pos += size
    return 0


def decode_request_header(frame, bint flexible):
    """The request header (v2 when ``flexible``, else v1): ``(header dict, end offset)``."""
    cdef const uint8_t[::1] view = frame
    cdef Cursor c
    c.data = &view[0] if view.shape[0] else NULL
    c.pos = 0
    c.end = view.shape[0]
    need(&c, 8, "RequestHeader")
    cdef int16_t api_key = read_int16(&c)
    cdef int16_t api_version = read_int16(&c)
    cdef int32_t correlation_id = read_int32(&c)
    # The client id keeps its two-byte length in v2 too (the codec's flexibleVersions "none").
    header = {
        "request_api_key": api_key,
        "request_api_version": api_version,
        "correlation_id": correlation_id,
        "client_id": read_string(&c, False, True, "client_id"),
    }
    if flexible:
        skip_tags(&c, "RequestHeader")  # the header declares no tagged field
    return header, c.pos


def decode_produce_request(frame, Py_ssize_t offset, int version):
    """A Produce request's body of ``version`` (one of :data:`PRODUCE_VERSIONS`) at ``offset``:
    ``(body dict, end offset)``, equal to the codec's dict.  One difference: each partition's
    ``records`` is a ``memoryview`` of ``frame`` where the codec gives a copy (``bytes``), so
    the batches go from the frame the network thread read to the segment file without being
    copied; it is writable when ``frame`` is (a ``bytearray``, as the network thread's is), and
    the log then writes the batches' offsets into it in place."""
    if version not in PRODUCE_VERSIONS:
        raise ValueError(f"Produce v{version} is read by the codec, not here")
    cdef const uint8_t[::1] view = frame
    frame_view = memoryview(frame)
    cdef Cursor c
    c.data = &view[0] if view.shape[0] else NULL
    c.end = view.shape[0]
    if offset < 0 or offset > c.end:
        raise ValueError(f"offset {offset} outside a frame of {c.end} bytes")
    c.pos = offset
    cdef bint compact = version >= PRODUCE_FIRST_FLEXIBLE
    cdef int64_t topic_count, partition_count, _i, _j
    body = {}
    if version >= PRODUCE_FIRST_TRANSACTIONAL:
        body["transactional_id"] = read_string(&c, compact, True, "transactional_id")
    need(&c, 6, "ProduceRequest")
    body["acks"] = read_int16(&c)
    body["timeout_ms"] = read_int32(&c)
    topic_count = read_array_count(&c, compact, "topic_data")
    topics = []
    for _i in range(topic_count):
        topic = {"name": read_string(&c, compact, False, "name")}
        partition_count = read_array_count(&c, compact, "partition_data")
        partitions = []
        for _j in range(partition_count):
            need(&c, 4, "PartitionProduceData")
            partition = {"index": read_int32(&c)}
            partition["records"] = read_records(&c, compact, frame_view, "records")
            if compact:
                skip_tags(&c, "PartitionProduceData")
            partitions.append(partition)
        topic["partition_data"] = partitions
        if compact:
            skip_tags(&c, "TopicProduceData")
        topics.append(topic)
    body["topic_data"] = topics
    if compact:
        skip_tags(&c, "ProduceRequest")
    return body, c.pos


def parse_request(frame):
    """Decode a request frame: (header, body, trailing bytes).  ``body`` is None for a version we
    cannot read; bytes after a body are ignored, as Kafka ignores them, and counted.

    An API key or version outside our declarations still has a readable header (its first fields
    never change, and the client id keeps its two-byte length even in flexible headers), so
    :class:`~kafkacore.broker.server.kafka_apis.KafkaApis` can answer it with a reason.
    Anything else that does not decode raises :class:`~kafkacore.protocol.codec.ProtocolError` or
    ``ValueError``.
    """
    cdef Py_ssize_t pos
    cdef const uint8_t[::1] view
    if len(frame) < 8:
        raise ProtocolError(f"a request of {len(frame)} bytes is shorter than its header")
    view = frame
    cdef int api_key = <int16_t>(view[0] << 8 | view[1])
    cdef int api_version = <int16_t>(view[2] << 8 | view[3])
    readable = _READABLE.get(api_key << 16 | api_version) if api_key >= 0 and api_version >= 0 \
        else None
    if readable is None:
        header, _ = codec.decode(codec.REQUEST_HEADER_MESSAGE, 1, frame)
        return header, None, 0
    message, flexible, compiled = readable
    # The header and a Produce body are read here, into the codec's dicts; every other body by
    # the codec itself (codec.decode).
    header, pos = decode_request_header(frame, flexible)
    if compiled:
        body, pos = decode_produce_request(frame, pos, api_version)
    else:
        body, pos = codec.decode(message, api_version, frame, pos)
    return header, body, len(frame) - pos


#: ``api_key << 16 | api_version`` -> (the request's message, whether its header is flexible,
#: whether its body is read by the compiled Produce parser), for every request version we can
#: read: one lookup per request, instead of asking the message's version ranges each time.
cdef dict _READABLE = {
    api_key << 16 | version: (
        message, version in message.flexible,
        api_key == ApiKey.PRODUCE and version in PRODUCE_VERSIONS)
    for api_key, message in codec.REQUESTS.items()
    for version in range(message.valid.low, message.valid.high + 1)
}
