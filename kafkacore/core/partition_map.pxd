# cython: language_level=3
"""Declarations of CopyOnWriteMap (Java ``CopyOnWriteMap``): the accumulator's partition map.

cimporters call ``get_c`` (inline, below) on the hot path: it takes no lock and costs one dict
lookup.  Python callers use ``get``, which costs about what ``dict.get`` does.

Concurrency: readers take no lock.  They read ``_map`` once (one reference, taken under the GIL)
and use that snapshot, which nobody mutates after it was published.  Writers take ``_mutex``, copy
the snapshot, change the copy and publish it with one reference store.  ``_mutex`` guards the
writer's copy-change-swap sequence and ``_owner``/``_locked``; ``_map`` is written only with
``_mutex`` held.
"""

cimport cython
from cpython.dict cimport PyDict_GetItemWithError
from cpython.object cimport PyObject


cdef extern from "<pthread.h>" nogil:
    # Opaque to Cython; the C compiler sees the real types.
    ctypedef struct pthread_mutex_t:
        pass
    ctypedef struct pthread_mutexattr_t:
        pass
    ctypedef unsigned long pthread_t
    int pthread_mutex_init(pthread_mutex_t* mutex, const pthread_mutexattr_t* attr)
    int pthread_mutex_destroy(pthread_mutex_t* mutex)
    int pthread_mutex_lock(pthread_mutex_t* mutex)
    int pthread_mutex_trylock(pthread_mutex_t* mutex)
    int pthread_mutex_unlock(pthread_mutex_t* mutex)
    pthread_t pthread_self()
    int pthread_equal(pthread_t a, pthread_t b)


@cython.final
cdef class CopyOnWriteMap:
    cdef:
        # The current snapshot.  Immutable by convention once published: writers build a new
        # dict and store it here with _mutex held; readers load it without a lock.
        dict _map
        # Serialises writers.  A writer may run Python code while holding it (a key's __hash__
        # or __eq__, the copy), which can give up the GIL; so a writer that finds it taken waits
        # for it with the GIL released, else the two threads would deadlock.
        pthread_mutex_t _mutex
        # _mutex was initialised (so __dealloc__ destroys it only then).
        bint _initialized
        # The thread holding _mutex, valid while _locked.  [_mutex, and written with the GIL]
        pthread_t _owner
        # Whether a writer holds _mutex.  Lets a write from inside a write on the same thread (a
        # finalizer or __eq__ that writes to the map) fail with an error instead of deadlocking.
        # [_mutex, and written with the GIL]
        bint _locked

    cdef inline object get_c(self, object key, object default):
        """The value for ``key`` in the current snapshot, or ``default``.  No lock."""
        # Hold our own reference to the snapshot: the key's __eq__ may run Python code, another
        # thread may swap _map meanwhile, and the old dict must stay alive until we are done.
        cdef dict m = self._map
        # Borrowed from m, which we hold.  Cython declares it ``except? NULL``, so an error from
        # the key's __hash__/__eq__ propagates; a plain NULL means "no such key".
        cdef PyObject* v = PyDict_GetItemWithError(m, key)
        if v == NULL:
            return default
        return <object>v

    # Take / release _mutex (see above).
    cdef int _lock(self) except -1
    cdef void _unlock(self) noexcept
