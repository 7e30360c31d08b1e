# cython: language_level=3
"""The Produce response, written by compiled code (Kafka's ``ProduceResponse`` serialized).

Every Produce request gets one, so for small requests the Python codec's walk over the response
(a function call per field, a type check per value) is a large part of the broker's work.  This
writes the same bytes as :func:`kafkacore.protocol.codec.encode_response` does for the body
fitted to the version (:func:`~kafkacore.broker.api_request_handler.fit_to_version`), for the
bodies the handler builds: dicts, ints, strings and lists, with no tagged field set.  Fitting
happens as it writes: a field the version lacks is skipped, as ``fit_to_version`` drops it.
Anything else (a value of another type, an int out of its range, a key no version has, a tagged
field with a value) makes :func:`encode_produce_response` return None, and the caller fits and
encodes with the codec, which stays the reference and raises its typed error for what is
wrong.  The property test ``tests/broker/test_response_encoder.py`` checks that both give the
same bytes.

The bytes are written into one growing C buffer (released on every path), then copied once into
the frame handed to the network thread; the GIL is held throughout.
"""

from cpython.bool cimport PyBool_Check
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.long cimport PyLong_Check
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

#: The Produce versions written here (the declaration's 0-11; a newer one goes to the codec).
PRODUCE_VERSIONS = range(0, 12)

cdef enum:
    #: v1 adds the throttle time, v2 the log append time, v5 the log start offset, v8 the
    #: record errors and error message, v9 is flexible.
    FIRST_THROTTLE = 1
    FIRST_LOG_APPEND_TIME = 2
    FIRST_LOG_START_OFFSET = 5
    FIRST_RECORD_ERRORS = 8
    FIRST_FLEXIBLE = 9


class _Unfit(Exception):
    """The body is not of the plain shape written here: the codec writes it."""


def _keys(version):
    """Per structure: the fields ``version`` writes (the codec's layout), its tagged fields'
    defaults (a tagged field is written only when it differs from them, which we leave to the
    codec), and the fields it lacks (skipped)."""
    body = codec.RESPONSES[ApiKey.PRODUCE].body
    topic = body.by_name["responses"].struct
    partition = topic.by_name["partition_responses"].struct
    record_error = partition.by_name["record_errors"].struct
    out = []
    for s in (body, topic, partition, record_error):
        fixed, tagged, absent = s.layout(version)
        out.append((frozenset(f.name for f in fixed),
                    {f.name: f.default_for(version) for f in tagged.values()},
                    frozenset(f.name for f in absent)))
    return tuple(out)


_KEYS = {version: _keys(version) for version in PRODUCE_VERSIONS}


cdef struct Writer:
    char* data
    Py_ssize_t size
    Py_ssize_t capacity


cdef int reserve(Writer* w, Py_ssize_t n) except -1:
    cdef Py_ssize_t capacity
    cdef char* grown
    if n <= w.capacity - w.size:
        return 0
    capacity = max(w.capacity * 2, w.size + n, 256)
    grown = <char*>PyMem_Realloc(w.data, capacity)
    if grown == NULL:
        raise MemoryError()
    w.data = grown
    w.capacity = capacity
    return 0


cdef int write_big_endian(Writer* w, uint64_t value, int width) except -1:
    reserve(w, width)
    cdef int i
    for i in range(width):
        w.data[w.size + i] = <char>(<uint8_t>(value >> (8 * (width - 1 - i))))
    w.size += width
    return 0


cdef int write_uvarint(Writer* w, uint64_t value) except -1:
    reserve(w, 10)
    while value >= 0x80:
        w.data[w.size] = <char>(<uint8_t>((value & 0x7F) | 0x80))
        w.size += 1
        value >>= 7
    w.data[w.size] = <char>(<uint8_t>value)
    w.size += 1
    return 0


cdef inline object plain_int(object value):
    """``value`` if the codec would take it as an integer (an int, not a bool), else _Unfit."""
    if not PyLong_Check(value) or PyBool_Check(value):
        raise _Unfit
    return value


cdef int write_int16(Writer* w, object value) except -1:
    cdef int16_t v = plain_int(value)  # OverflowError out of range: the codec's to refuse
    return write_big_endian(w, <uint16_t>v, 2)


cdef int write_int32(Writer* w, object value) except -1:
    cdef int32_t v = plain_int(value)
    return write_big_endian(w, <uint32_t>v, 4)


cdef int write_int64(Writer* w, object value) except -1:
    cdef int64_t v = plain_int(value)
    return write_big_endian(w, <uint64_t>v, 8)


cdef int write_length(Writer* w, Py_ssize_t n, bint compact, bint wide) except -1:
    """compact: uvarint(n + 1), 0 for null (-1); classic: int16 or int32, -1 for null."""
    if compact:
        return write_uvarint(w, <uint64_t>(n + 1))
    if wide:
        return write_big_endian(w, <uint32_t><int32_t>n, 4)
    return write_big_endian(w, <uint16_t><int16_t>n, 2)


cdef int write_string(Writer* w, object value, bint compact, bint nullable) except -1:
    cdef Py_ssize_t n
    cdef const char* utf8
    if value is None:
        if not nullable:
            raise _Unfit
        return write_length(w, -1, compact, False)
    if not isinstance(value, str):
        raise _Unfit
    utf8 = PyUnicode_AsUTF8AndSize(value, &n)  # a lone surrogate raises: the codec's to refuse
    if not compact and n > 0x7FFF:
        raise _Unfit
    write_length(w, n, compact, False)
    reserve(w, n)
    memcpy(w.data + w.size, utf8, n)
    w.size += n
    return 0


cdef int check_keys(dict value, tuple keys) except -1:
    """Every key is a field this version writes, a tagged field left at its default, or a field
    this version lacks (skipped)."""
    cdef frozenset fixed = keys[0]
    cdef dict tagged = keys[1]
    cdef frozenset absent = keys[2]
    for key in value:
        if key in fixed or key in absent:
            continue
        if not (key in tagged and value[key] == tagged[key]):
            raise _Unfit
    return 0


cdef dict plain_dict(object value):
    if type(value) is not dict:
        raise _Unfit
    return <dict>value


cdef list plain_list(object value):
    if type(value) is not list:
        raise _Unfit
    return <list>value


cdef int write_partition(Writer* w, dict p, int version, tuple keys) except -1:
    cdef bint compact = version >= FIRST_FLEXIBLE
    check_keys(p, keys)
    write_int32(w, p.get("index", 0))
    write_int16(w, p.get("error_code", 0))
    write_int64(w, p.get("base_offset", 0))
    if version >= FIRST_LOG_APPEND_TIME:
        write_int64(w, p.get("log_append_time_ms", -1))
    if version >= FIRST_LOG_START_OFFSET:
        write_int64(w, p.get("log_start_offset", -1))
    if version >= FIRST_RECORD_ERRORS:
        record_errors = plain_list(p.get("record_errors", []))
        write_length(w, len(record_errors), compact, True)
        for e in record_errors:
            record_error = plain_dict(e)
            check_keys(record_error, _KEYS[version][3])
            write_int32(w, record_error.get("batch_index", 0))
            write_string(w, record_error.get("batch_index_error_message"), compact, True)
            if compact:
                write_uvarint(w, 0)  # no tagged fields
        write_string(w, p.get("error_message"), compact, True)
    if compact:
        write_uvarint(w, 0)  # CurrentLeader left at its default (check_keys): not written
    return 0


cdef int write_body(Writer* w, dict body, int version) except -1:
    cdef bint compact = version >= FIRST_FLEXIBLE
    cdef tuple keys = _KEYS[version]
    check_keys(body, keys[0])
    responses = plain_list(body.get("responses", []))
    write_length(w, len(responses), compact, True)
    for t in responses:
        topic = plain_dict(t)
        check_keys(topic, keys[1])
        write_string(w, topic.get("name", ""), compact, False)
        partitions = plain_list(topic.get("partition_responses", []))
        write_length(w, len(partitions), compact, True)
        for p in partitions:
            write_partition(w, plain_dict(p), version, keys[2])
        if compact:
            write_uvarint(w, 0)
    if version >= FIRST_THROTTLE:
        write_int32(w, body.get("throttle_time_ms", 0))
    if compact:
        write_uvarint(w, 0)  # NodeEndpoints left at its default (check_keys): not written
    return 0


def encode_produce_response(int version, correlation_id, body):
    """The frame of a Produce response (size, header, body) as one ``bytes``, or None when the
    codec must write it (see the module's docstring)."""
    if version not in PRODUCE_VERSIONS or type(body) is not dict:
        return None
    cdef Writer w
    w.data = NULL
    w.size = 0
    w.capacity = 0
    cdef int32_t size
    cdef int i
    try:
        write_big_endian(&w, 0, 4)  # the size, filled in below
        write_int32(&w, correlation_id)
        if version >= FIRST_FLEXIBLE:
            write_uvarint(&w, 0)  # response header v1: an empty tag buffer
        write_body(&w, <dict>body, version)
        size = <int32_t>(w.size - 4)
        for i in range(4):
            w.data[i] = <char>(<uint8_t>(<uint32_t>size >> (8 * (3 - i))))
        return PyBytes_FromStringAndSize(w.data, w.size)
    except (_Unfit, OverflowError, UnicodeEncodeError):
        return None
    finally:
        PyMem_Free(w.data)
