# skeleton while the real module is written
cdef class ByteBufferOutputStream:
    cdef int _expand(self, Py_ssize_t n) except -1:
        raise NotImplementedError
    cdef int _refuse_exported(self) except -1:
        raise BufferError("exported")
    cdef int write_object(self, object data) except -1:
        raise NotImplementedError
