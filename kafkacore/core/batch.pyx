# placeholder until the real module lands
cdef class ProducerBatch:
    pass
cdef class FutureRecordMetadata:
    pass
cdef class RecordMetadata:
    pass
