# placeholder until the real module lands
cdef class BufferPool:
    pass
