"""ByteBufferOutputStream: Java's growth rule, big-endian and varint encodings, views, bad input."""

from __future__ import annotations

import array
import gc
import struct
import sys
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.util import encode_varint
from support.examples import examples

from kafkacore.core import BufferPool, MemoryRecordsBuilder
from kafkacore.core.bytestream import ByteBufferOutputStream

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def f32(x: float) -> float:
    """Round to an IEEE 754 single, as Java's float arithmetic does."""
    return struct.unpack("f", struct.pack("f", x))[0]


def java_grow(limit: int, position: int, needed: int) -> int:
    """Java ByteBufferOutputStream.expandBuffer: max((int) (limit * 1.1f), position + needed)."""
    return max(int(f32(f32(limit) * f32(1.1))), position + needed)


def written(stream: ByteBufferOutputStream) -> bytes:
    view = stream.getbuffer()
    try:
        return bytes(view)
    finally:
        view.release()


class PoolBuffer(bytearray):
    """A bytearray that can be weakly referenced, to watch the stream let go of it."""


# -- construction ----------------------------------------------------------------------------


def test_int_capacity_allocates_a_bytearray():
    s = ByteBufferOutputStream(64)
    assert isinstance(s.buffer, bytearray)
    assert (s.position, s.limit, s.initial_capacity, s.remaining()) == (0, 64, 64, 64)


def test_zero_capacity_grows_on_first_write():
    s = ByteBufferOutputStream(0)
    s.write(b"abc")
    assert written(s) == b"abc"
    assert s.limit == 3  # max(int(0 * 1.1), 0 + 3)


@pytest.mark.parametrize("bad", [-1, -(2**40)])
def test_negative_capacity_is_a_value_error(bad):
    with pytest.raises(ValueError, match="negative capacity"):
        ByteBufferOutputStream(bad)


@pytest.mark.parametrize("bad", [None, "16", 1.5, True, object(), [1, 2]])
def test_non_buffer_argument_is_a_type_error(bad):
    with pytest.raises(TypeError):
        ByteBufferOutputStream(bad)


def test_read_only_buffer_is_refused():
    with pytest.raises(TypeError, match="writable"):
        ByteBufferOutputStream(b"read-only bytes")
    with pytest.raises(TypeError, match="writable"):
        ByteBufferOutputStream(memoryview(bytearray(8)).toreadonly())


def test_wrapped_buffer_is_written_in_place():
    pooled = bytearray(16)
    s = ByteBufferOutputStream(pooled)
    s.write(b"hello")
    s.write_int32(7)
    assert s.buffer is pooled
    assert pooled[:9] == b"hello\x00\x00\x00\x07"
    assert (s.limit, s.initial_capacity) == (16, 16)


def test_wrapped_writable_memoryview():
    backing = bytearray(8)
    s = ByteBufferOutputStream(memoryview(backing)[2:6])
    s.write(b"wxyz")
    assert backing == b"\x00\x00wxyz\x00\x00"


# -- growth ----------------------------------------------------------------------------------


def test_growth_by_exactly_1_1():
    s = ByteBufferOutputStream(100)
    s.write(bytes(100))
    assert s.limit == 100  # exactly full: no growth yet
    s.write(b"x")
    assert s.limit == 110  # int(100 * 1.1f)
    s.write(bytes(9))
    assert s.limit == 110
    s.write(b"y")
    assert s.limit == 121  # int(110 * 1.1f)
    assert written(s) == bytes(100) + b"x" + bytes(9) + b"y"


def test_growth_to_position_plus_n_when_bigger():
    s = ByteBufferOutputStream(100)
    s.write(bytes(60))
    s.write(bytes(500))  # 60 + 500 > int(100 * 1.1f)
    assert s.limit == 560
    assert s.position == 560


def test_growth_uses_java_float_arithmetic():
    # 1572869 * 1.1 = 1730155.9 in double precision, but 1730156 in float (Java's 1.1f).
    limit = 1572869
    assert int(limit * 1.1) == 1730155
    s = ByteBufferOutputStream(limit)
    s.position = limit
    s.write(b"x")
    assert s.limit == 1730156 == java_grow(limit, limit, 1)


def test_growth_copies_written_bytes_and_keeps_position():
    s = ByteBufferOutputStream(4)
    s.write(b"abcd")
    s.write(b"efgh")
    assert written(s) == b"abcdefgh"
    assert s.position == 8


def test_pooled_buffer_that_grows_is_released():
    pooled = PoolBuffer(32)
    ref = weakref.ref(pooled)
    s = ByteBufferOutputStream(pooled)
    s.write(b"a" * 32)
    # While the stream writes into it, the pooled buffer is pinned: it cannot be resized.
    with pytest.raises(BufferError):
        pooled.append(0)
    s.write(b"b")  # grows: a new bytearray, the pooled one is no longer the stream's
    assert s.buffer is not pooled
    assert type(s.buffer) is bytearray
    assert (s.initial_capacity, s.limit) == (32, 35)
    assert written(s) == b"a" * 32 + b"b"
    # The stream let go of its export: the pooled buffer is an ordinary bytearray again ...
    pooled.append(0)
    del pooled
    gc.collect()
    # ... and nothing in the stream keeps it alive (Java: it goes to the GC).
    assert ref() is None


# -- fixed-width writes ----------------------------------------------------------------------

FIXED = [
    ("write_int8", ">b", -(2**7), 2**7 - 1),
    ("write_uint8", ">B", 0, 2**8 - 1),
    ("write_int16", ">h", -(2**15), 2**15 - 1),
    ("write_uint16", ">H", 0, 2**16 - 1),
    ("write_int32", ">i", INT32_MIN, INT32_MAX),
    ("write_uint32", ">I", 0, 2**32 - 1),
    ("write_int64", ">q", INT64_MIN, INT64_MAX),
]


@pytest.mark.parametrize("method,fmt,lo,hi", FIXED)
def test_fixed_width_big_endian(method, fmt, lo, hi):
    s = ByteBufferOutputStream(0)
    values = [lo, hi, 0, 1, (lo + hi) // 2, hi - 1]
    for v in values:
        getattr(s, method)(v)
    assert written(s) == b"".join(struct.pack(fmt, v) for v in values)


@pytest.mark.parametrize("method,fmt,lo,hi", FIXED)
def test_fixed_width_out_of_range(method, fmt, lo, hi):
    s = ByteBufferOutputStream(16)
    for bad in (lo - 1, hi + 1, 2**80):
        with pytest.raises(ValueError, match="out of range"):
            getattr(s, method)(bad)
    with pytest.raises(TypeError):
        getattr(s, method)(1.0)
    with pytest.raises(TypeError):
        getattr(s, method)("1")
    assert s.position == 0


# -- varints ---------------------------------------------------------------------------------

VARINTS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-2, "03"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (-65, "8101"),
    (150, "ac02"),
    (300, "d804"),
    (INT32_MAX, "feffffff0f"),
    (INT32_MIN, "ffffffff0f"),
]

VARLONGS = VARINTS + [
    (2**31, "8080808010"),
    (INT64_MAX, "feffffffffffffffff01"),
    (INT64_MIN, "ffffffffffffffffff01"),
]


@pytest.mark.parametrize("value,hexbytes", VARINTS)
def test_varint_known_bytes(value, hexbytes):
    s = ByteBufferOutputStream(0)
    s.write_varint(value)
    assert written(s).hex() == hexbytes


@pytest.mark.parametrize("value,hexbytes", VARLONGS)
def test_varlong_known_bytes(value, hexbytes):
    s = ByteBufferOutputStream(0)
    s.write_varlong(value)
    assert written(s).hex() == hexbytes


def test_varint_range():
    s = ByteBufferOutputStream(8)
    for bad in (INT32_MAX + 1, INT32_MIN - 1):
        with pytest.raises(ValueError):
            s.write_varint(bad)
    for bad in (INT64_MAX + 1, INT64_MIN - 1):
        with pytest.raises(ValueError):
            s.write_varlong(bad)
    with pytest.raises(TypeError):
        s.write_varint(None)


def kafka_python_varint(value: int) -> bytes:
    out = bytearray()
    encode_varint(value, out.append)
    return bytes(out)


@given(st.integers(INT64_MIN, INT64_MAX))
def test_varlong_matches_kafka_python(value):
    s = ByteBufferOutputStream(0)
    s.write_varlong(value)
    assert written(s) == kafka_python_varint(value)


@given(st.integers(INT32_MIN, INT32_MAX))
def test_varint_matches_kafka_python(value):
    s = ByteBufferOutputStream(0)
    s.write_varint(value)
    assert written(s) == kafka_python_varint(value)


def test_varint_grows_only_by_its_exact_size():
    # A 1-byte varint into a stream with 1 byte left must not grow it (Java writes byte by byte).
    s = ByteBufferOutputStream(1)
    s.write_varint(5)
    assert s.limit == 1


# -- bytes-like writes -----------------------------------------------------------------------


def test_write_accepts_any_bytes_like():
    s = ByteBufferOutputStream(0)
    s.write(b"ab")
    s.write(bytearray(b"cd"))
    s.write(memoryview(b"xxefxx")[2:4])
    s.write(array.array("B", [0x67, 0x68]))
    s.write(b"")
    assert written(s) == b"abcdefgh"


@pytest.mark.parametrize("bad", ["text", 5, None, [1, 2], 3.0])
def test_write_non_buffer_is_a_type_error(bad):
    s = ByteBufferOutputStream(4)
    with pytest.raises(TypeError, match="bytes-like"):
        s.write(bad)
    assert s.position == 0


def test_write_own_buffer_into_itself():
    backing = bytearray(b"abcdefgh")
    s = ByteBufferOutputStream(backing)
    s.position = 4
    s.write(backing[:4])  # a copy: fine
    s.position = 2
    s.write(memoryview(backing)[0:4])  # overlapping source and destination: memmove
    assert written(s) == b"ababcd"


def test_write_own_buffer_while_growing():
    backing = bytearray(b"abcd")
    s = ByteBufferOutputStream(backing)
    s.position = 4
    s.write(backing)  # grows; the source (the old buffer) stays valid during the copy
    assert written(s) == b"abcdabcd"


# -- position, limit, ensure_remaining -------------------------------------------------------


def test_position_backwards_overwrites():
    s = ByteBufferOutputStream(8)
    s.write(b"12345678")
    s.position = 2
    s.write(b"xy")
    assert s.position == 4
    assert written(s) == b"12xy"


def test_position_past_limit_grows_like_java():
    s = ByteBufferOutputStream(10)
    s.position = 61  # what MemoryRecordsBuilder does to skip the batch header
    assert s.position == 61
    assert s.limit == java_grow(10, 0, 61) == 61


@pytest.mark.parametrize("bad", [-1, -100])
def test_negative_position_is_a_value_error(bad):
    s = ByteBufferOutputStream(8)
    with pytest.raises(ValueError):
        s.position = bad
    with pytest.raises(TypeError):
        s.position = "3"


def test_ensure_remaining():
    s = ByteBufferOutputStream(100)
    s.write(bytes(95))
    s.ensure_remaining(5)
    assert s.limit == 100
    s.ensure_remaining(6)
    assert s.limit == 110
    assert s.remaining() == 15
    with pytest.raises(ValueError):
        s.ensure_remaining(-1)
    with pytest.raises(TypeError):
        s.ensure_remaining(None)


# -- views -----------------------------------------------------------------------------------


def test_getbuffer_is_zero_copy_and_read_only():
    backing = bytearray(16)
    s = ByteBufferOutputStream(backing)
    s.write(b"abc")
    view = s.getbuffer()
    assert view.readonly
    assert bytes(view) == b"abc"
    assert len(view) == 3
    backing[0:1] = b"z"  # the view shares the stream's memory
    assert bytes(view) == b"zbc"
    with pytest.raises(TypeError):
        view[0] = 1
    view.release()


def test_writes_refused_while_a_view_is_alive():
    s = ByteBufferOutputStream(4)
    s.write(b"ab")
    view = s.getbuffer()
    sliced = view[1:]
    assert s.exports == 1
    for action in (
        lambda: s.write(b"c"),
        lambda: s.write_int32(1),
        lambda: s.write_varint(1),
        lambda: s.ensure_remaining(100),
    ):
        with pytest.raises(BufferError, match="getbuffer"):
            action()
    with pytest.raises(BufferError):
        s.position = 0
    view.release()
    # A slice keeps the export alive until it, too, is gone.
    with pytest.raises(BufferError):
        s.write(b"c")
    del sliced
    gc.collect()
    assert s.exports == 0
    s.write(b"cdefgh")  # grows now
    assert written(s) == b"abcdefgh"


def test_view_outlives_the_stream():
    s = ByteBufferOutputStream(8)
    s.write(b"payload")
    view = s.getbuffer()
    del s
    gc.collect()
    assert bytes(view) == b"payload"


# -- the garbage collector: a stream it takes apart gives its export back -------------------


def exported(buffer: bytearray) -> bool:
    """Whether a buffer export of ``buffer`` is still held (a bytearray then refuses to resize)."""
    try:
        buffer.append(0)
    except BufferError:
        return True
    del buffer[-1]
    return False


@pytest.fixture
def printed(monkeypatch):
    """What CPython prints through ``sys.excepthook`` while the test runs: a bytearray that dies
    with exports left reports ``SystemError: deallocated bytearray object has exported
    buffers`` that way (PyErr_Print), not as an exception anyone could catch."""
    seen: list[BaseException] = []
    monkeypatch.setattr(sys, "excepthook", lambda kind, value, tb: seen.append(value))
    return seen


def test_a_stream_the_garbage_collector_takes_apart_releases_its_export(printed):
    # Streams kept alive only by a reference cycle.  Made before the cycle, they come first in
    # the collector's list, so it clears them (tp_clear) before the cycle's collapse would
    # free them the ordinary way; the automatic collector is off so that the order holds.
    buffers = [bytearray(64) for _ in range(4)]
    gc.collect()
    gc.disable()
    try:
        streams = [ByteBufferOutputStream(b) for b in buffers]
        cycle: list = streams[:]  # a list made after the streams
        cycle.append(cycle)
        del streams, cycle
    finally:
        gc.enable()
    gc.collect()
    assert [exported(b) for b in buffers] == [False] * 4
    del buffers
    assert printed == []


def test_a_pooled_batch_buffer_held_by_a_disconnect_cycle_goes_back_clean(printed):
    """The producer's case: the view of a batch that a Produce request carries is a local of a
    frame in the traceback of the error that closed the connection, and the connection keeps
    that error (a cycle the collector must take apart); the batch expires meanwhile and gives
    its buffer back to the BufferPool.  After the collection the pooled buffer has no export
    left, and when the pool (its last holder) is gone, nothing is printed."""
    pool = BufferPool(1 << 16, 1024)

    class Connection:
        close_error: BaseException | None = None

    def write(request: memoryview) -> None:
        raise ConnectionResetError("connection reset by peer")

    def send_and_disconnect(pool: BufferPool) -> bytearray:
        buffer = pool.allocate(1024, 0)
        builder = MemoryRecordsBuilder(buffer, write_limit=1024)
        builder.append(0, b"key", b"value")
        connection = Connection()
        try:
            write(builder.build())
        except ConnectionResetError as e:
            connection.close_error = e  # connection -> error -> traceback -> frames -> connection
        pool.deallocate(builder.buffer, builder.initial_capacity)  # the batch expired
        return buffer

    gc.collect()
    gc.disable()
    try:
        buffer = send_and_disconnect(pool)
    finally:
        gc.enable()
    gc.collect()
    assert pool.statistics().free_buffers == 1
    assert not exported(buffer)
    del buffer, pool  # the free list held the last reference
    assert printed == []


def test_repr_mentions_sizes():
    s = ByteBufferOutputStream(8)
    s.write(b"ab")
    assert "position=2" in repr(s) and "limit=8" in repr(s)


# -- model-based: any sequence of writes matches a bytearray and Java's growth --------------

operations = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.binary(max_size=300)),
        st.tuples(st.just("int32"), st.integers(INT32_MIN, INT32_MAX)),
        st.tuples(st.just("int64"), st.integers(INT64_MIN, INT64_MAX)),
        st.tuples(st.just("varint"), st.integers(INT32_MIN, INT32_MAX)),
        st.tuples(st.just("varlong"), st.integers(INT64_MIN, INT64_MAX)),
        st.tuples(st.just("ensure"), st.integers(0, 400)),
    ),
    max_size=60,
)


@settings(max_examples=examples(150), deadline=None)
@given(st.integers(0, 200), operations)
def test_stream_matches_model(capacity, ops):
    s = ByteBufferOutputStream(capacity)
    model = bytearray()
    limit = capacity
    for op, arg in ops:
        if op == "write":
            data = arg
        elif op == "int32":
            data = struct.pack(">i", arg)
        elif op == "int64":
            data = struct.pack(">q", arg)
        elif op in ("varint", "varlong"):
            data = kafka_python_varint(arg)
        else:
            if arg > limit - len(model):
                limit = java_grow(limit, len(model), arg)
            s.ensure_remaining(arg)
            assert s.limit == limit
            continue
        if len(data) > limit - len(model):
            limit = java_grow(limit, len(model), len(data))
        model += data
        if op == "write":
            s.write(arg)
        else:
            getattr(s, f"write_{op}")(arg)
        assert s.limit == limit
        assert s.position == len(model)
    assert written(s) == bytes(model)
    assert s.initial_capacity == capacity
