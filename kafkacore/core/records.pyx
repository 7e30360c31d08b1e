# skeleton while the real module is written
from kafkacore.core.bytestream cimport ByteBufferOutputStream

cdef class MemoryRecordsBuilder:
    cpdef int append(self, int64_t timestamp_ms, object key, object value,
                     object headers=None) except -1:
        raise NotImplementedError
    cpdef bint has_room_for(self, int64_t timestamp_ms, object key, object value,
                            object headers=None) except -1:
        raise NotImplementedError
    cpdef bint is_full(self) except -1:
        raise NotImplementedError
    cpdef Py_ssize_t estimated_size_in_bytes(self) except -1:
        raise NotImplementedError
    cpdef close_for_record_appends(self):
        raise NotImplementedError
    cpdef close(self):
        raise NotImplementedError
    cpdef abort(self):
        raise NotImplementedError
    cpdef object build(self):
        raise NotImplementedError
    cpdef set_producer_state(self, int64_t producer_id, int producer_epoch, int base_sequence,
                             bint is_transactional):
        raise NotImplementedError
    cpdef reopen_and_rewrite_producer_state(self, int64_t producer_id, int producer_epoch,
                                            int base_sequence, bint is_transactional):
        raise NotImplementedError
    cpdef set_estimated_compression_ratio(self, double ratio):
        raise NotImplementedError
    cdef int _append_record(self, int64_t timestamp_ms, object key, object value,
                            object headers) except -1:
        raise NotImplementedError
    cdef int _write_header(self) except -1:
        raise NotImplementedError

cdef class Record:
    pass

cdef class RecordBatch:
    pass

def iter_records(data):
    raise NotImplementedError

def crc32c(data, value=0):
    raise NotImplementedError
