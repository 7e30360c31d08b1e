# placeholder until the real module lands
cdef class CopyOnWriteMap:
    pass
