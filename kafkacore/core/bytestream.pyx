# placeholder until the real module lands
cdef class ByteBufferOutputStream:
    pass
