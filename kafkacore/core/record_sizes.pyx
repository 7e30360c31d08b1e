# cython: language_level=3
"""A record's size on the wire, before it is written (Kafka's ``DefaultRecord.sizeInBytes`` and
``AbstractRecords.estimateSizeInBytesUpperBound``), and the headers made ready to size and write.

The producer sizes every record at ``send()`` (is it larger than ``max.request.size``?) and the
builder before it appends (does it fit?): both use these.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.bytes cimport (
    PyBytes_AS_STRING,
    PyBytes_CheckExact,
    PyBytes_FromStringAndSize,
    PyBytes_GET_SIZE,
)
from cpython.list cimport PyList_AsTuple, PyList_CheckExact
from cpython.tuple cimport PyTuple_CheckExact, PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_Check
from libc.stdint cimport int32_t

from kafkacore.core.bytestream cimport varint_size
from kafkacore.core.record_format cimport MAX_RECORD_OVERHEAD, RECORD_BATCH_OVERHEAD

from collections.abc import Mapping


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object unicode, Py_ssize_t* size) except NULL


cdef Py_ssize_t length_of(object obj, str what) except -2:
    """Byte length of a bytes-like ``obj``, -1 for None; TypeError naming ``what`` otherwise."""
    cdef Py_buffer view
    cdef Py_ssize_t n
    if obj is None:
        return -1
    if PyBytes_CheckExact(obj):
        return PyBytes_GET_SIZE(obj)
    if not PyObject_CheckBuffer(obj):
        raise TypeError(f"{what} must be bytes-like or None, got {type(obj).__name__}")
    try:
        PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE)
    except BufferError as exc:
        raise TypeError(f"{what} must be a contiguous bytes-like object: {exc}") from None
    n = view.len
    PyBuffer_Release(&view)
    return n


cdef tuple normalize_headers_sized(object headers, Py_ssize_t* size):
    """Headers as an immutable tuple of ``(str, bytes | None)`` tuples, and (in ``size[0]``)
    their wire size without the count; TypeError / ValueError on bad input.

    Immutable on purpose: between sizing a record and writing it, an allocation may run a
    finalizer, which could mutate a list the caller handed us; a tuple of str and bytes cannot
    change, so what we write is what we sized.  Each pair is read once and each value converted
    to bytes *before* it is measured: ``bytes(value)`` runs the value's own code (``__bytes__``,
    the buffer of a bytearray another thread may be growing), so a length taken before the
    conversion could be smaller than what is then written.  Well-formed input costs one tuple
    (none for a tuple of ``(str, bytes | None)`` tuples); header keys are encoded once, the
    UTF-8 cached in the str object itself.
    """
    cdef tuple seq
    cdef list out = None  # the normalized pairs, once one pair had to change
    cdef Py_ssize_t i, count, n, total = 0
    cdef bint changed
    if PyTuple_CheckExact(headers):
        seq = <tuple>headers
    elif PyList_CheckExact(headers):
        seq = PyList_AsTuple(headers)
    elif isinstance(headers, Mapping):
        # confluent-kafka's form: {name: value}, in the mapping's order.
        seq = tuple(headers.items())
    else:
        if isinstance(headers, (str, bytes, bytearray)):
            raise TypeError("headers must be a sequence of (str, bytes | None) pairs, got "
                            f"{type(headers).__name__}")
        try:
            seq = tuple(headers)
        except TypeError:
            raise TypeError("headers must be a sequence of (str, bytes | None) pairs, got "
                            f"{type(headers).__name__}") from None
    count = PyTuple_GET_SIZE(seq)
    for i in range(count):
        item = <object>PyTuple_GET_ITEM(seq, i)
        if PyTuple_CheckExact(item) and PyTuple_GET_SIZE(item) == 2:
            key = <object>PyTuple_GET_ITEM(item, 0)
            value = <object>PyTuple_GET_ITEM(item, 1)
            changed = False
        elif PyList_CheckExact(item) and len(item) == 2:
            key, value = item  # read once: the list may change after
            changed = True
        else:
            raise TypeError(f"headers[{i}] must be a (str, bytes | None) pair, got {item!r:.80}")
        if not PyUnicode_Check(key):
            raise TypeError(f"headers[{i}] key must be str, got {type(key).__name__}")
        try:
            PyUnicode_AsUTF8AndSize(key, &n)
        except UnicodeEncodeError as exc:
            raise ValueError(f"headers[{i}] key cannot be encoded as UTF-8: {exc}") from None
        total += bytes_field_size(n)
        if value is not None and not PyBytes_CheckExact(value):
            if PyUnicode_Check(value):
                # A str value is sent as UTF-8, as confluent-kafka does.
                try:
                    value = (<str>value).encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise ValueError(
                        f"headers[{i}] value cannot be encoded as UTF-8: {exc}") from None
            else:
                length_of(value, f"headers[{i}] value")  # the TypeError for a non-bytes-like
                value = bytes(value)
            if not PyBytes_CheckExact(value):  # a subclass's __bytes__ or encode answered
                value = PyBytes_FromStringAndSize(PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value))
            changed = True
        # Measured from what will be written: exact bytes or None.
        total += 1 if value is None else bytes_field_size(PyBytes_GET_SIZE(value))
        if changed and out is None:
            out = list(seq[:i])
        if out is not None:
            out.append(item if not changed else (key, value))
    size[0] = total
    return seq if out is None else tuple(out)


def normalize_headers(object headers):
    """``headers`` (None or any iterable of ``(str, bytes | None)`` pairs) as the immutable
    tuple of pairs the builder writes, or None.  ``send()`` calls it once, before it sizes the
    record and before it takes any lock: a headers iterable is user code, run exactly once and
    never under a partition lock, and what is sized is what is written."""
    cdef Py_ssize_t size
    if headers is None:
        return None
    return normalize_headers_sized(headers, &size)


cdef Py_ssize_t estimate_size_upper_bound_raw(Py_ssize_t klen, Py_ssize_t vlen,
                                              Py_ssize_t headers_size) noexcept:
    """``estimate_size_upper_bound`` from sizes (-1: null), headers already sized (1 if none)."""
    return (RECORD_BATCH_OVERHEAD + MAX_RECORD_OVERHEAD + bytes_field_size(klen)
            + bytes_field_size(vlen) + headers_size)


cpdef Py_ssize_t estimate_size_upper_bound(object key, object value, object headers=None) except -1:
    """Upper bound of the size of a batch holding just this record (Java
    ``AbstractRecords.estimateSizeInBytesUpperBound`` for magic v2): the 61-byte batch header, the
    record's worst-case overhead (21 bytes) and its key, value and headers.

    The producer compares it with ``max.request.size`` and ``buffer.memory`` at ``send()``.
    """
    cdef Py_ssize_t size = RECORD_BATCH_OVERHEAD + MAX_RECORD_OVERHEAD, hsize
    cdef tuple hs
    size += bytes_field_size(length_of(key, "key"))
    size += bytes_field_size(length_of(value, "value"))
    if headers is None:
        size += 1
    else:
        hs = normalize_headers_sized(headers, &hsize)
        size += varint_size(<int32_t>len(hs)) + hsize
    return size
