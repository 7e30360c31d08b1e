# cython: language_level=3
"""CopyOnWriteMap: a map for many lock-free readers and rare writers (Java ``CopyOnWriteMap``).

The accumulator maps each topic-partition to its deque of batches.  It looks the deque up for
every record, but adds a partition only the first time it sees one: reads outnumber writes by
millions to one.  So reads take no lock at all and see one complete snapshot; a write copies the
whole dict, changes the copy and swaps it in.
"""

cimport cython

from types import GenericAlias, MappingProxyType

from cpython.dict cimport PyDict_Copy

# Marks "no such key" where None is a legitimate value.
cdef object _MISSING = object()


cdef class CopyOnWriteMap:
    """CopyOnWriteMap(mapping=None)

    A mapping whose reads take no lock and always see a complete snapshot, and whose writes
    (:meth:`put`, :meth:`put_if_absent`, :meth:`remove`, :meth:`clear`, :meth:`put_all`) copy
    the whole map under a lock and swap the copy in.  Cheap to read, O(n) to write: meant for
    maps that are read per record and written per new key.
    """

    def __cinit__(self, mapping=None):
        self._map = {} if mapping is None else dict(mapping)
        if pthread_mutex_init(&self._mutex, NULL) != 0:
            raise MemoryError("pthread_mutex_init failed")
        self._initialized = True

    def __dealloc__(self):
        if self._initialized:
            pthread_mutex_destroy(&self._mutex)

    __class_getitem__ = classmethod(GenericAlias)

    # ---------------------------------------------------------------- reads: no lock

    @cython.binding(False)   # a plain builtin method: calls cost what dict.get's do
    def get(self, object key, object default=None):
        """The value for ``key``, or ``default``.  No lock: one snapshot load and one lookup."""
        return self.get_c(key, default)

    def __getitem__(self, key):
        cdef dict m = self._map
        return m[key]

    def __contains__(self, key):
        cdef dict m = self._map
        return key in m

    def __len__(self):
        return len(self._map)

    def __iter__(self):
        # The iterator keeps the snapshot alive; since nobody mutates it, no "dict changed size".
        return iter(self._map)

    def keys(self):
        """The keys of the current snapshot (a view that never changes)."""
        return self._map.keys()

    def values(self):
        """The values of the current snapshot."""
        return self._map.values()

    def items(self):
        """The (key, value) pairs of the current snapshot: always one consistent state."""
        return self._map.items()

    def snapshot(self):
        """The current snapshot as a read-only mapping: several reads from it agree."""
        return MappingProxyType(self._map)

    # ------------------------------------------------------- writes: copy, change, swap

    cdef int _lock(self) except -1:
        cdef pthread_t me = pthread_self()
        if self._locked and pthread_equal(self._owner, me):
            raise RuntimeError(
                "CopyOnWriteMap written to from inside one of its own writes on the same thread "
                "(a key's __hash__/__eq__ or a finalizer wrote to the map)"
            )
        if pthread_mutex_trylock(&self._mutex) != 0:
            # Taken: wait without the GIL, which the holder may need to finish.
            with nogil:
                pthread_mutex_lock(&self._mutex)
        self._owner = me
        self._locked = True
        return 0

    cdef void _unlock(self) noexcept:
        self._locked = False
        pthread_mutex_unlock(&self._mutex)

    def put(self, key, value):
        """Map ``key`` to ``value``; return the previous value or None."""
        cdef dict copy
        self._lock()
        try:
            prev = self._map.get(key)
            copy = PyDict_Copy(self._map)
            copy[key] = value
            self._map = copy   # publish: one reference store
        finally:
            self._unlock()
        return prev

    def put_if_absent(self, key, value):
        """Map ``key`` to ``value`` unless it is mapped; return the value now in the map.

        Like ``dict.setdefault``: of several threads racing to add the same key, exactly one
        wins and every one of them gets the winner's value back.
        """
        cdef dict copy
        # Lock-free first look: the common case (already there) costs one lookup.
        existing = self.get_c(key, _MISSING)
        if existing is not _MISSING:
            return existing
        self._lock()
        try:
            existing = self._map.get(key, _MISSING)
            if existing is not _MISSING:
                return existing
            copy = PyDict_Copy(self._map)
            copy[key] = value
            self._map = copy
        finally:
            self._unlock()
        return value

    def remove(self, key):
        """Remove ``key``; return its value, or None if it was not mapped."""
        cdef dict copy
        self._lock()
        try:
            prev = self._map.get(key, _MISSING)
            if prev is _MISSING:
                return None   # nothing to change: no copy
            copy = PyDict_Copy(self._map)
            del copy[key]
            self._map = copy
        finally:
            self._unlock()
        return prev

    def put_all(self, mapping):
        """Add every pair of ``mapping`` in one copy and one swap."""
        cdef dict copy
        self._lock()
        try:
            copy = PyDict_Copy(self._map)
            copy.update(mapping)
            self._map = copy
        finally:
            self._unlock()

    def clear(self):
        """Remove every key (readers holding the old snapshot keep it)."""
        self._lock()
        try:
            self._map = {}
        finally:
            self._unlock()

    def __repr__(self):
        return f"CopyOnWriteMap({self._map!r})"
