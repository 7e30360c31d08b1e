# cython: language_level=3
"""The Produce and Fetch responses, written by compiled code (Kafka's ``ProduceResponse`` and
``FetchResponse`` serialized).

Every Produce request gets one, and every poll of a consumer or a follower a Fetch response, so
for small requests (and for fetches naming many partitions) the Python codec's walk over the
response (a function call per field, a type check per value) is a large part of the broker's
work.  This writes the same bytes as :func:`kafkacore.protocol.codec.encode_response` does
for the body fitted to the version
(:func:`~kafkacore.broker.network.api_request_handler.fit_to_version`), for the bodies the
handlers build: dicts, ints, strings, UUIDs and lists, with no tagged field set but those
written here.  Fitting happens as it writes: a field the version lacks is
skipped, as ``fit_to_version`` drops it.  Anything else (a value of another type, an int out of
its range, a key no version has, another tagged field with a value) makes
:func:`encode_produce_response` or :func:`encode_fetch_response` return None, and the caller
fits and encodes with the codec, which stays the reference and raises its typed error for what
is wrong.  The property tests ``tests/broker/test_response_encoder.py`` and
``tests/broker/test_response_encoder_fetch.py`` check that both give the same bytes.

A Fetch response is a list of parts, as the codec makes it: the bytes, and each partition's
records in its place, a file region (:class:`~kafkacore.broker.log.file_records.FileRecords`)
that the network thread sends from its segment file, or a ``bytes`` (copied when short).  Its
tagged fields (diverging epoch, current leader, snapshot id) are written here; left to the
codec: the NodeEndpoints tagged field (v16+) when set, records of another buffer type
(``bytearray``, ``memoryview``), arrays that are not lists, and versions past 17.

The bytes are written into one growing C buffer (released on every path), then copied once into
the frame (or, for a Fetch, the frame's bytes parts) handed to the network thread; the GIL is
held throughout.
"""

from cpython.bool cimport PyBool_Check
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.long cimport PyLong_Check
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

from uuid import UUID

from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

#: The Produce versions written here (the declaration's 0-12: v12 answers as v11 does; a newer one
#: goes to the codec).
PRODUCE_VERSIONS = range(0, 13)

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
ZERO_UUID = UUID(int=0)


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


# -- Fetch ------------------------------------------------------------------------------------

#: The Fetch versions written here (the declaration's 0-17; a newer one goes to the codec).
FETCH_VERSIONS = range(0, 18)

cdef enum:
    #: v1 adds the throttle time, v4 the last stable offset and the aborted transactions, v5
    #: the log start offset, v7 the error code and session id, v11 the preferred read replica,
    #: v12 is flexible (the diverging epoch, current leader and snapshot id are tagged fields),
    #: v13 names topics by id.
    FETCH_FIRST_THROTTLE = 1
    FETCH_FIRST_LAST_STABLE_OFFSET = 4
    FETCH_FIRST_LOG_START_OFFSET = 5
    FETCH_FIRST_SESSION = 7
    FETCH_FIRST_PREFERRED_READ_REPLICA = 11
    FETCH_FIRST_FLEXIBLE = 12
    FETCH_FIRST_TOPIC_ID = 13
    #: A ``bytes`` value of records up to this size is copied into the frame; a longer one
    #: goes into the list of parts as it is (as the codec puts it there).
    INLINE_RECORDS = 512

#: A partition's tagged fields written here, in tag order: (tag, name, its fields as
#: (name, width)); each is a small structure with no tagged field of its own.
_FETCH_TAGGED = (
    (0, "diverging_epoch", (("epoch", 4), ("end_offset", 8))),
    (1, "current_leader", (("leader_id", 4), ("leader_epoch", 4))),
    (2, "snapshot_id", (("end_offset", 8), ("epoch", 4))),
)


def _fetch_keys(version):
    """As :func:`_keys`, for the Fetch structures: (body, topic, partition, aborted
    transaction, and each of the partition's tagged structures).  The partition's tagged fields
    are written here, so they count among its fields (not left at their defaults); the body's
    NodeEndpoints (v16+) is left to the codec when set."""
    body = codec.RESPONSES[ApiKey.FETCH].body
    topic = body.by_name["responses"].struct
    partition = topic.by_name["partitions"].struct
    structs = [body, topic, partition, partition.by_name["aborted_transactions"].struct]
    structs += [partition.by_name[name].struct for _, name, _ in _FETCH_TAGGED]
    out = []
    for s in structs:
        fixed, tagged, absent = s.layout(version)
        names = frozenset(f.name for f in fixed)
        defaults = {f.name: f.default_for(version) for f in tagged.values()}
        if s is partition:
            names |= frozenset(defaults)
            defaults = {}
        out.append((names, defaults, frozenset(f.name for f in absent)))
    tagged_defaults = tuple(
        partition.by_name[name].default_for(version) if version >= FETCH_FIRST_FLEXIBLE else None
        for _, name, _ in _FETCH_TAGGED)
    return tuple(out), tagged_defaults


_FETCH_KEYS = {version: _fetch_keys(version) for version in FETCH_VERSIONS}


cdef int write_uuid(Writer* w, object value) except -1:
    if type(value) is not UUID:
        raise _Unfit
    cdef bytes raw = value.bytes
    if len(raw) != 16:
        raise _Unfit
    reserve(w, 16)
    memcpy(w.data + w.size, <const char*>raw, 16)
    w.size += 16
    return 0


cdef int write_records(Writer* w, object value, bint compact, list regions) except -1:
    """A partition's records: null, a ``bytes`` (copied when small), or a file region
    (:class:`~kafkacore.broker.log.file_records.FileRecords`), which goes into ``regions`` with
    where it falls in the frame, to be sent from its file."""
    cdef Py_ssize_t n
    if value is None:
        return write_length(w, -1, compact, True)
    if type(value) is bytes:
        n = len(<bytes>value)
    elif hasattr(value, "write_to"):
        n = len(value)
    else:
        raise _Unfit  # another buffer type: the codec's
    if n < 0 or n > 0x7FFFFFFF:
        raise _Unfit
    write_length(w, n, compact, True)
    if type(value) is bytes and n <= INLINE_RECORDS:
        reserve(w, n)
        memcpy(w.data + w.size, <const char*><bytes>value, n)
        w.size += n
    else:  # a region goes into the parts even when empty: who sends the parts closes it
        regions.append((w.size, value, n))
    return 0


cdef int write_fetch_tagged(Writer* w, dict p, tuple keys, tuple defaults) except -1:
    """The partition's tag buffer: each tagged field that differs from its default."""
    cdef int i
    cdef Py_ssize_t start
    cdef int width
    present = []
    for i in range(3):
        tag, name, fields = _FETCH_TAGGED[i]
        if name in p and p[name] != defaults[i]:
            present.append((tag, plain_dict(p[name]), fields, i))
    write_uvarint(w, len(present))
    for tag, value, fields, i in present:
        check_keys(<dict>value, keys[4 + i])
        write_uvarint(w, tag)
        write_uvarint(w, 0)  # the size, filled in below (a few bytes: one byte holds it)
        start = w.size
        for name, width in fields:
            if width == 4:
                write_int32(w, (<dict>value).get(name, -1))
            else:
                write_int64(w, (<dict>value).get(name, -1))
        write_uvarint(w, 0)  # the structure's own (empty) tag buffer
        if w.size - start >= 0x80:
            raise _Unfit
        w.data[start - 1] = <char>(<uint8_t>(w.size - start))
    return 0


cdef int write_fetch_partition(Writer* w, dict p, int version, tuple keys, tuple tag_defaults,
                               list regions) except -1:
    cdef bint compact = version >= FETCH_FIRST_FLEXIBLE
    check_keys(p, keys[2])
    write_int32(w, p.get("partition_index", 0))
    write_int16(w, p.get("error_code", 0))
    write_int64(w, p.get("high_watermark", 0))
    if version >= FETCH_FIRST_LAST_STABLE_OFFSET:
        write_int64(w, p.get("last_stable_offset", -1))
    if version >= FETCH_FIRST_LOG_START_OFFSET:
        write_int64(w, p.get("log_start_offset", -1))
    if version >= FETCH_FIRST_LAST_STABLE_OFFSET:
        aborted = p.get("aborted_transactions", [])
        if aborted is None:
            write_length(w, -1, compact, True)
        else:
            aborted = plain_list(aborted)
            write_length(w, len(aborted), compact, True)
            for a in aborted:
                txn = plain_dict(a)
                check_keys(txn, keys[3])
                write_int64(w, txn.get("producer_id", 0))
                write_int64(w, txn.get("first_offset", 0))
                if compact:
                    write_uvarint(w, 0)
    if version >= FETCH_FIRST_PREFERRED_READ_REPLICA:
        write_int32(w, p.get("preferred_read_replica", -1))
    write_records(w, p.get("records"), compact, regions)
    if compact:
        write_fetch_tagged(w, p, keys, tag_defaults)
    return 0


cdef int write_fetch_body(Writer* w, dict body, int version, list regions) except -1:
    cdef bint compact = version >= FETCH_FIRST_FLEXIBLE
    keys, tag_defaults = _FETCH_KEYS[version]
    check_keys(body, keys[0])
    if version >= FETCH_FIRST_THROTTLE:
        write_int32(w, body.get("throttle_time_ms", 0))
    if version >= FETCH_FIRST_SESSION:
        write_int16(w, body.get("error_code", 0))
        write_int32(w, body.get("session_id", 0))
    responses = plain_list(body.get("responses", []))
    write_length(w, len(responses), compact, True)
    for t in responses:
        topic = plain_dict(t)
        check_keys(topic, keys[1])
        if version >= FETCH_FIRST_TOPIC_ID:
            write_uuid(w, topic.get("topic_id", ZERO_UUID))
        else:
            write_string(w, topic.get("topic", ""), compact, False)
        partitions = plain_list(topic.get("partitions", []))
        write_length(w, len(partitions), compact, True)
        for p in partitions:
            write_fetch_partition(w, plain_dict(p), version, keys, tag_defaults, regions)
        if compact:
            write_uvarint(w, 0)
    if compact:
        write_uvarint(w, 0)  # NodeEndpoints left at its default (check_keys): not written
    return 0


def encode_fetch_response(int version, correlation_id, body):
    """The frame of a Fetch response (size, header, body) as a list of parts: ``bytes``, and
    the records' file regions (and long ``bytes`` values) in their places, uncopied; or None
    when the codec must write it (see the module's docstring).  The size counts every part."""
    if version not in FETCH_VERSIONS or type(body) is not dict:
        return None
    cdef Writer w
    w.data = NULL
    w.size = 0
    w.capacity = 0
    cdef list regions = []
    cdef int64_t total
    cdef Py_ssize_t at, previous = 0
    cdef int i
    try:
        write_big_endian(&w, 0, 4)  # the size, filled in below
        write_int32(&w, correlation_id)
        if version >= FETCH_FIRST_FLEXIBLE:
            write_uvarint(&w, 0)  # response header v1: an empty tag buffer
        write_fetch_body(&w, <dict>body, version, regions)
        total = w.size - 4
        for _, _, n in regions:
            total += <Py_ssize_t>n
        if total > 0x7FFFFFFF:
            raise _Unfit
        for i in range(4):
            w.data[i] = <char>(<uint8_t>(<uint32_t>total >> (8 * (3 - i))))
        parts = []
        for at, region, _ in regions:
            if at > previous:
                parts.append(PyBytes_FromStringAndSize(w.data + previous, at - previous))
            parts.append(region)
            previous = at
        if w.size > previous:
            parts.append(PyBytes_FromStringAndSize(w.data + previous, w.size - previous))
        return parts
    except (_Unfit, OverflowError, UnicodeEncodeError):
        return None
    finally:
        PyMem_Free(w.data)
