# cython: language_level=3
"""The codecs for the compiled modules (compression.pyx)."""


# The codec number of a name (None: none); TypeError / ValueError otherwise.
cdef int codec_of(object compression) except -1
# The level to use for ``codec`` (None: the codec's default); ValueError if out of range.
cdef object check_level(int codec, object level)
# ``data`` compressed with ``codec`` at ``level``, as Kafka's producer frames it.
cdef object compress(int codec, object level, object data)
# A records section (a memoryview) decompressed into at most ``limit`` bytes.
cdef object decompress(int codec, object data, Py_ssize_t limit)
