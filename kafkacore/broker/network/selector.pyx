# cython: language_level=3
"""Where the broker's threads sleep, compiled: the processors' ``epoll`` and every thread's
wake-up (Kafka's ``Selector`` over a Java NIO selector, and its ``wakeup()``).

A processor that queued requests for sleeping handlers owes each a wake-up, and pays it just
before it sleeps itself (docs/broker/reactor.rst).  Paid from Python, each wake-up and then
the sleep let go of the :term:`GIL` and take it back: the handler just woken (often on the
processor's own core) wants the GIL the processor takes back between them, and one of the two
waits for the other, a thread switch more per request.  Here the wake-ups and the
``epoll_wait`` are one call that lets go of the GIL once, before the first wake-up, and takes
it back only after the sleep: the woken handler finds the GIL free.

A :class:`Wakeup` is an ``eventfd``: waking is one ``write()``, and a sleeper waits in one
``poll()`` and clears it with one ``read()``, in one stretch without the GIL (a pipe read
through ``select.poll`` and ``os.read`` took it back between them).  Many wake-ups before one
sleep count as one.  Linux only, as the broker is (``epoll``, ``eventfd``).
"""

from libc.errno cimport EINTR, errno
from libc.stdint cimport uint32_t, uint64_t
from posix.unistd cimport close, read, write

cdef extern from "sys/epoll.h" nogil:
    ctypedef union epoll_data_t:
        void *ptr
        int fd
        uint32_t u32
        uint64_t u64

    cdef struct epoll_event:
        uint32_t events
        epoll_data_t data

    int epoll_create1(int flags)
    int epoll_ctl(int epfd, int op, int fd, epoll_event *event)
    int epoll_wait(int epfd, epoll_event *events, int maxevents, int timeout)
    enum:
        EPOLL_CTL_ADD
        EPOLL_CTL_MOD
        EPOLL_CTL_DEL
        EPOLL_CLOEXEC

cdef extern from "sys/eventfd.h" nogil:
    int eventfd(unsigned int initval, int flags)
    enum:
        EFD_NONBLOCK
        EFD_CLOEXEC

cdef extern from "poll.h" nogil:
    ctypedef unsigned long nfds_t

    cdef struct pollfd:
        int fd
        short events
        short revents

    int poll(pollfd *fds, nfds_t nfds, int timeout)
    enum:
        POLLIN

cdef enum:
    #: The most events one poll() reports; the rest stay ready for the next (epoll is level
    #: triggered).
    MAX_EVENTS = 256
    #: The wake-ups one poll() pays without the GIL; more (more handlers than this asleep at
    #: once) are paid with it first.
    MAX_WAKES = 32


cdef int _raise_errno(int code) except -1:
    """The OSError of a failed system call (its subclass for the errno, as ``os`` raises);
    ``code`` is read by the caller before any Python runs, which could change ``errno``."""
    from os import strerror
    raise OSError(code, strerror(code))


cdef int _timeout_ms(double timeout_s) except -2:
    """epoll's and poll()'s milliseconds, rounded up (a shorter sleep would spin); negative
    waits without end.  NaN is refused (its cast to an int is undefined in C)."""
    if timeout_s != timeout_s:
        raise ValueError("timeout_s is NaN")
    if timeout_s < 0:
        return -1
    if timeout_s >= 2147483.0:
        return 2147483647
    cdef int ms = <int>(timeout_s * 1000.0)
    if ms < timeout_s * 1000.0:
        ms += 1
    return ms


cdef inline void _write_wakes(const int *fds, int count) noexcept nogil:
    """Wake each ``eventfd`` in ``fds``.  A failed write needs nothing: EAGAIN means the
    counter is full (a wake-up is pending anyway), EBADF a closed one (shutdown)."""
    cdef uint64_t one = 1
    cdef int i
    for i in range(count):
        write(fds[i], &one, 8)


cdef class Wakeup:
    """One thread's wake-up: an ``eventfd`` that another thread writes to wake it."""

    cdef readonly int fd
    cdef readonly bint closed  # close() was called: nobody sleeps on it; the descriptor lives on

    def __cinit__(self):
        self.fd = -1
        self.closed = False

    def __init__(self):
        self.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)
        if self.fd < 0:
            _raise_errno(errno)

    def wake(self):
        """Wake the thread that sleeps on this (or make its next sleep return at once)."""
        with nogil:
            _write_wakes(&self.fd, 1)

    def clear(self):
        """Forget the wake-ups so far (the owner, after a poller said it was woken)."""
        cdef uint64_t count
        with nogil:
            read(self.fd, &count, 8)

    def wait(self, double timeout_s, list wakes=None):
        """Pay the wake-ups in ``wakes`` (a list of :class:`Wakeup`, emptied), then sleep
        until woken or ``timeout_s`` has passed, without the GIL; True if woken."""
        cdef int fds[MAX_WAKES]
        cdef int count_wakes
        cdef int ms = _timeout_ms(timeout_s)  # (before the wake-ups are taken: none is lost)
        cdef list _held = _take_wakes(wakes, fds, &count_wakes)  # kept alive until written
        cdef pollfd p
        cdef uint64_t count
        cdef int ready
        p.fd = -1 if self.closed else self.fd  # closed: poll() skips it, and only the time counts
        p.events = POLLIN
        p.revents = 0
        with nogil:
            _write_wakes(fds, count_wakes)
            ready = poll(&p, 1, ms)
            if ready > 0:
                read(self.fd, &count, 8)
        return ready > 0

    def close(self):
        """Stop sleeping on this; the descriptor itself is closed when the last reference goes.

        Another thread may have copied ``fd`` to write it after letting go of the GIL (a
        processor paying its owed wake-ups): closing the number now could let a new file take
        it and receive those 8 bytes.  A writer holds a reference while it writes, so the
        descriptor outlives every write (``__dealloc__``).
        """
        self.closed = True

    def __dealloc__(self):
        if self.fd >= 0:
            close(self.fd)
            self.fd = -1


cdef list _take_wakes(list wakes, int *fds, int *count):
    """Empty ``wakes`` into ``fds`` (at most MAX_WAKES; the rest are woken here, with the
    GIL): the descriptors to write while the GIL is let go, in ``count``.  Answers the
    :class:`Wakeup` objects themselves, which the caller keeps until it has written: while
    they live, their descriptors stay open (:meth:`Wakeup.close`)."""
    cdef Wakeup wakeup
    cdef list held
    count[0] = 0
    if not wakes:
        return None
    while len(wakes) > MAX_WAKES:
        (<Wakeup?>wakes.pop()).wake()
    held = list(wakes)
    for wakeup in held:
        fds[count[0]] = wakeup.fd
        count[0] += 1
    del wakes[:]
    return held


cdef class Poller:
    """Which descriptors are ready (``epoll``), and the wake-ups paid on the way to sleep.

    The processor registers a connection's descriptor with what it waits for (``POLLIN``,
    ``POLLOUT``: epoll's bits are the same numbers) and keeps its own descriptor -> connection
    map; ``poll`` answers ``[(fd, events), ...]`` as ``select.epoll.poll`` does.
    """

    cdef int epfd
    cdef epoll_event events[MAX_EVENTS]

    def __cinit__(self):
        self.epfd = -1

    def __init__(self):
        self.epfd = epoll_create1(EPOLL_CLOEXEC)
        if self.epfd < 0:
            _raise_errno(errno)

    cdef int _ctl(self, int op, int fd, uint32_t mask) except -1:
        cdef epoll_event event
        event.events = mask
        event.data.u64 = 0
        event.data.fd = fd
        if self.epfd < 0:
            raise ValueError("I/O operation on a closed poller")
        if epoll_ctl(self.epfd, op, fd, &event) < 0:
            _raise_errno(errno)
        return 0

    def register(self, int fd, unsigned int mask):
        self._ctl(EPOLL_CTL_ADD, fd, mask)

    def modify(self, int fd, unsigned int mask):
        self._ctl(EPOLL_CTL_MOD, fd, mask)

    def unregister(self, int fd):
        self._ctl(EPOLL_CTL_DEL, fd, 0)

    def poll(self, double timeout_s, list wakes=None):
        """Pay the wake-ups in ``wakes`` (a list of :class:`Wakeup`, emptied), then wait at
        most ``timeout_s`` for a registered descriptor to be ready: its ``(fd, events)``."""
        cdef int fds[MAX_WAKES]
        cdef int count, ready, i, saved
        if self.epfd < 0:
            raise ValueError("I/O operation on a closed poller")
        cdef int ms = _timeout_ms(timeout_s)  # (before the wake-ups are taken: none is lost)
        cdef list _held = _take_wakes(wakes, fds, &count)  # kept alive until written
        with nogil:
            _write_wakes(fds, count)
            ready = epoll_wait(self.epfd, self.events, MAX_EVENTS, ms)
            saved = errno
        if ready < 0:
            if saved == EINTR:
                return []  # a signal: the caller's loop polls again
            _raise_errno(saved)
        return [(self.events[i].data.fd, self.events[i].events) for i in range(ready)]

    def close(self):
        if self.epfd >= 0:
            close(self.epfd)
            self.epfd = -1

    def __dealloc__(self):
        if self.epfd >= 0:
            close(self.epfd)
