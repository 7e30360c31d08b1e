"""Tutorial 1: a ByteBufferOutputStream outgrows its pooled buffer, 1.1x at a time.

We wrap a 100-byte bytearray (think: a buffer from the BufferPool, batch.size = 100) and write
8-byte integers into it.  Each time a chunk does not fit, the stream allocates a new bytearray of
max(int(limit * 1.1f), position + needed) bytes, copies what it wrote, and carries on.  Then one big
write shows the second half of the rule, and we check what happened to the pooled buffer.

Run it from the repository's root:

    python tutorials/01_bytestream_growth.py

Needs: kafkacore's compiled core, built in place once
(``python setup.py build_ext --inplace``); no broker.
"""

from kafkacore.core.bytestream import ByteBufferOutputStream

pooled = bytearray(100)  # what BufferPool.allocate(100, ...) would hand out
stream = ByteBufferOutputStream(pooled)
print(f"start: position={stream.position} limit={stream.limit} wraps the pooled buffer: "
      f"{stream.buffer is pooled}")

WRITES = 60
limits = [stream.limit]
for i in range(WRITES):
    stream.write_int64(i)
    if stream.limit != limits[-1]:
        print(f"write #{i + 1:2}: position={stream.position:3}  grew {limits[-1]:3} -> "
              f"{stream.limit:3}  (x{stream.limit / limits[-1]:.3f})")
        limits.append(stream.limit)

# int(limit * 1.1f) each time, like Java: 100 -> 110 -> 121 -> 133 -> 146 -> 160 -> ...
assert limits == [100, 110, 121, 133, 146, 160, 176, 193, 212, 233, 256, 281, 309, 339, 372, 409,
                  449, 493][: len(limits)]
assert limits[-1] >= WRITES * 8 and stream.position == WRITES * 8

# A write bigger than 10% of the buffer: position + n wins over limit * 1.1.
before = stream.limit
stream.write(b"x" * 1000)
print(f"big write: position={stream.position} limit {before} -> {stream.limit} "
      f"(= position + 1000, not {int(before * 1.1)})")
assert stream.limit == WRITES * 8 + 1000

# The stream no longer refers to the pooled buffer.  Its owner gives back stream.buffer (the grown
# bytearray) with stream.initial_capacity (100): the pool sees a buffer that is not its poolable
# size, so it only adds 100 bytes back to its non-pooled memory; the original bytearray goes to the
# garbage collector.  The accounting stays right because the pool counts sizes, not objects.
print(f"stream.buffer is the pooled buffer: {stream.buffer is pooled}; "
      f"initial_capacity={stream.initial_capacity}; len(stream.buffer)={len(memoryview(stream.buffer))}")
assert stream.buffer is not pooled and stream.initial_capacity == 100
pooled.append(0)  # no longer pinned by the stream: resizing it is allowed again

# The bytes survived every copy.
view = stream.getbuffer()
assert bytes(view[:16]) == (0).to_bytes(8, "big") + (1).to_bytes(8, "big")
assert bytes(view[-1000:]) == b"x" * 1000

# While a view from getbuffer() is alive, the stream refuses to write (it could move the memory).
try:
    stream.write(b"!")
except BufferError as e:
    print(f"write with a live view: BufferError: {e}")
else:
    raise AssertionError("the stream wrote while a view was alive")
view.release()
stream.write(b"!")
print(f"after view.release(): position={stream.position}")
assert stream.position == WRITES * 8 + 1000 + 1
