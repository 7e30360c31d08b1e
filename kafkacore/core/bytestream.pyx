# cython: language_level=3
"""ByteBufferOutputStream: an output stream over a buffer that grows by 1.1x when it is full.

This is Java's ``org.apache.kafka.common.utils.ByteBufferOutputStream``.  A MemoryRecordsBuilder
writes a record batch through it into the buffer that the BufferPool handed out; when a record does
not fit (the first record of a batch may be larger than ``batch.size``), the stream allocates a
bigger bytearray, copies what was written and carries on.

The growth rule, exactly as Java's ``expandBuffer``::

    new_size = max(int(limit * 1.1f), position + needed)

computed with a 32-bit float factor (Java's ``1.1f``), so our capacities match the Java client's
byte for byte.

After growth the stream no longer refers to the buffer it started with.  For a pooled buffer this
means: the batch later gives ``stream.buffer`` (the grown bytearray) back to the pool together with
``stream.initial_capacity``.  The pool sees a buffer whose size is not its poolable size, so it does
not keep it; it only adds the size back to its non-pooled memory.  The original pooled buffer is
simply dropped (Java: left to the GC), and the pool's accounting stays right because it counts
sizes, not objects.
"""

cimport cython
from cpython.buffer cimport (
    PyBUF_SIMPLE,
    PyBUF_WRITABLE,
    PyBuffer_FillInfo,
    PyBuffer_Release,
    PyObject_CheckBuffer,
    PyObject_GetBuffer,
)
from cpython.bytearray cimport PyByteArray_FromStringAndSize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.stdint cimport INT32_MAX, INT32_MIN
from libc.string cimport memmove

# Java's REALLOCATION_FACTOR is the float 1.1f; we multiply in float precision like Java does.
cdef float REALLOCATION_FACTOR = 1.1


cdef inline int64_t _checked_int(object value, object lo, object hi, str what) except? -1:
    """``value`` as int64 after checking it is an int in [lo, hi] (TypeError / ValueError)."""
    if not isinstance(value, int):
        raise TypeError(f"{what}() needs an int, got {type(value).__name__}")
    if not (lo <= value <= hi):
        raise ValueError(f"{what}(): {value} is out of range [{lo}, {hi}]")
    return <int64_t>value


# No tp_clear: Cython types Py_buffer.obj as an object, so its generated tp_clear would
# Py_CLEAR(_pybuf.obj) -- drop our reference to the buffer without PyBuffer_Release.  A stream
# that the garbage collector cleared (one kept alive by a reference cycle, for example a frame
# in an exception's traceback) then left its export behind: the bytearray could never be resized
# again, and when it died CPython printed "SystemError: deallocated bytearray object has
# exported buffers".  Cycles through a stream are still broken by the tp_clear of their other
# members; __dealloc__ releases _pybuf, the one way the export is given back.
@cython.no_gc_clear
cdef class ByteBufferOutputStream:
    """An output stream over a writable buffer that grows by Java's 1.1x rule.

    ``ByteBufferOutputStream(initial_capacity_or_buffer)``: an ``int`` allocates a bytearray of
    that many bytes; a writable bytes-like object (a ``bytearray`` from the BufferPool, a writable
    ``memoryview``, ...) is wrapped without a copy and written from its start.

    Writes are big-endian (network order) like Java's ``ByteBuffer``; varints are Kafka's zigzag
    varints.  ``getbuffer()`` returns a read-only view of the bytes written; while such a view is
    alive the stream refuses writes (``BufferError``), so a view never sees its bytes change or its
    memory freed.
    """

    def __cinit__(self, initial_capacity_or_buffer):
        cdef Py_ssize_t capacity
        self._has_pybuf = False
        self._exports = 0
        self._position = 0
        arg = initial_capacity_or_buffer
        if isinstance(arg, bool):
            raise TypeError("ByteBufferOutputStream() needs an int capacity or a writable buffer,"
                            " got bool")
        if isinstance(arg, int):
            if arg < 0:
                raise ValueError(f"ByteBufferOutputStream(): negative capacity {arg}")
            capacity = arg
            buffer = PyByteArray_FromStringAndSize(NULL, capacity)
        elif PyObject_CheckBuffer(arg):
            buffer = arg
        else:
            raise TypeError("ByteBufferOutputStream() needs an int capacity or a writable buffer,"
                            f" got {type(arg).__name__}")
        try:
            PyObject_GetBuffer(buffer, &self._pybuf, PyBUF_WRITABLE)
        except BufferError as exc:
            raise TypeError("ByteBufferOutputStream() needs a writable, contiguous buffer"
                            f" (bytearray, ...), got {type(arg).__name__}: {exc}") from None
        self._has_pybuf = True
        self._buffer = buffer
        self._data = <unsigned char*>self._pybuf.buf
        self._limit = self._pybuf.len
        self._initial_capacity = self._pybuf.len

    def __dealloc__(self):
        if self._has_pybuf:
            PyBuffer_Release(&self._pybuf)
            self._has_pybuf = False

    # -- growth ------------------------------------------------------------------------------

    cdef int _expand(self, Py_ssize_t n) except -1:
        cdef Py_buffer fresh
        cdef Py_ssize_t grown, new_size
        if n > PY_SSIZE_T_MAX - self._position:
            raise MemoryError(f"cannot grow the stream by {n} bytes")
        # Java: Math.max((int) (buffer.limit() * REALLOCATION_FACTOR), position + remainingRequired)
        grown = <Py_ssize_t>(<float>self._limit * REALLOCATION_FACTOR)
        new_size = self._position + n
        if grown > new_size:
            new_size = grown
        new_buffer = PyByteArray_FromStringAndSize(NULL, new_size)
        PyObject_GetBuffer(new_buffer, &fresh, PyBUF_WRITABLE)
        if self._position:
            memcpy(fresh.buf, self._data, <size_t>self._position)
        # Drop our hold on the old buffer: a pooled buffer is now the pool's (and the GC's) alone.
        PyBuffer_Release(&self._pybuf)
        self._pybuf = fresh
        self._buffer = new_buffer
        self._data = <unsigned char*>fresh.buf
        self._limit = new_size
        return 0

    cdef int _refuse_exported(self) except -1:
        raise BufferError(
            f"ByteBufferOutputStream: {self._exports} view(s) from getbuffer() still alive;"
            " release them (del / memoryview.release()) before writing")

    # -- buffer protocol: getbuffer() views count as exports -----------------------------------

    def __getbuffer__(self, Py_buffer* view, int flags):
        # Read-only view of [0, position); PyBuffer_FillInfo refuses PyBUF_WRITABLE requests.
        PyBuffer_FillInfo(view, self, self._data, self._position, 1, flags)
        self._exports += 1

    def __releasebuffer__(self, Py_buffer* view):
        self._exports -= 1

    # -- Python API ----------------------------------------------------------------------------

    cdef int write_object(self, object data) except -1:
        cdef Py_buffer view
        cdef Py_ssize_t n
        if PyBytes_CheckExact(data):
            self.write_raw(<const unsigned char*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
            return 0
        if not PyObject_CheckBuffer(data):
            raise TypeError(f"write() needs a bytes-like object, got {type(data).__name__}")
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            n = view.len
            self.ensure_remaining_c(n)
            # memmove: the source may be our own buffer (a bytearray the caller also holds).
            if n:
                memmove(self._data + self._position, view.buf, <size_t>n)
                self._position += n
        finally:
            PyBuffer_Release(&view)
        return 0

    def write(self, data):
        """Write a bytes-like object (anything with the buffer protocol), growing if needed."""
        self.write_object(data)

    def write_int8(self, value):
        """Write a signed byte."""
        self.write_int8_c(<int8_t>_checked_int(value, -0x80, 0x7F, "write_int8"))

    def write_uint8(self, value):
        """Write an unsigned byte."""
        self.write_int8_c(<int8_t>_checked_int(value, 0, 0xFF, "write_uint8"))

    def write_int16(self, value):
        """Write a big-endian signed 16-bit integer."""
        self.write_int16_c(<int16_t>_checked_int(value, -0x8000, 0x7FFF, "write_int16"))

    def write_uint16(self, value):
        """Write a big-endian unsigned 16-bit integer."""
        self.write_int16_c(<int16_t>_checked_int(value, 0, 0xFFFF, "write_uint16"))

    def write_int32(self, value):
        """Write a big-endian signed 32-bit integer."""
        self.write_int32_c(<int32_t>_checked_int(value, INT32_MIN, INT32_MAX, "write_int32"))

    def write_uint32(self, value):
        """Write a big-endian unsigned 32-bit integer (a CRC, for example)."""
        self.write_uint32_c(<uint32_t>_checked_int(value, 0, 0xFFFFFFFF, "write_uint32"))

    def write_int64(self, value):
        """Write a big-endian signed 64-bit integer."""
        self.write_int64_c(_checked_int(value, -0x8000000000000000, 0x7FFFFFFFFFFFFFFF,
                                        "write_int64"))

    def write_varint(self, value):
        """Write a 32-bit integer as a zigzag varint (1 to 5 bytes), as Kafka's ByteUtils does."""
        self.write_varint_c(<int32_t>_checked_int(value, INT32_MIN, INT32_MAX, "write_varint"))

    def write_varlong(self, value):
        """Write a 64-bit integer as a zigzag varlong (1 to 10 bytes)."""
        self.write_varlong_c(_checked_int(value, -0x8000000000000000, 0x7FFFFFFFFFFFFFFF,
                                          "write_varlong"))

    @property
    def position(self):
        """Bytes written so far; the offset of the next write.

        Setting it moves the write position (Java ``position(int)``): backwards to overwrite, or
        forwards past the limit, which grows the buffer like a write of that many bytes would.
        Negative positions raise ``ValueError``.
        """
        return self._position

    @position.setter
    def position(self, value):
        cdef int64_t pos = _checked_int(value, 0, PY_SSIZE_T_MAX, "position")
        if self._exports:
            self._refuse_exported()
        if pos > self._position:
            self.ensure_remaining_c(<Py_ssize_t>pos - self._position)
        self._position = <Py_ssize_t>pos

    @property
    def limit(self):
        """Capacity of the current buffer (it changes when the stream grows)."""
        return self._limit

    @property
    def initial_capacity(self):
        """Capacity the stream started with (Java ``initialCapacity``), unchanged by growth."""
        return self._initial_capacity

    @property
    def buffer(self):
        """The object written into (the wrapped buffer, or after growth the new bytearray).

        The owner gives this back to the BufferPool, with ``initial_capacity`` as the size.
        """
        return self._buffer

    def remaining(self):
        """Bytes that fit before the stream has to grow: ``limit - position``."""
        return self._limit - self._position

    def ensure_remaining(self, n):
        """Make room for ``n`` more bytes, growing by Java's rule if they do not fit."""
        self.ensure_remaining_c(<Py_ssize_t>_checked_int(n, 0, PY_SSIZE_T_MAX,
                                                         "ensure_remaining"))

    def getbuffer(self):
        """A read-only, zero-copy ``memoryview`` of the bytes written (``[0:position]``).

        While it (or any view derived from it) is alive, writes raise ``BufferError``; release it
        with ``del`` or ``view.release()``.
        """
        return memoryview(self)

    @property
    def exports(self):
        """Number of live views handed out by ``getbuffer()``."""
        return self._exports

    def __repr__(self):
        return (f"<ByteBufferOutputStream position={self._position} limit={self._limit}"
                f" initial_capacity={self._initial_capacity}>")
