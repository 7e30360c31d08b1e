# cython: language_level=3
"""What a network thread does for every request, compiled: Kafka's ``KafkaChannel`` and the
per-request half of its ``Processor``
(:class:`kafkacore.broker.network.socket_server.Processor` is the other half, and the thread).

A one-record Produce costs the processor some 600 Python bytecodes: take the previous response's
bookkeeping, read the next frame, parse its header, make the ``Request``, queue it, and the
handler's own write of the answer.  Most of them read and write attributes of the processor and
of the connection.  Compiled as they were, they got slower (docs/benchmarks.rst): CPython 3.11
caches where each attribute lives at each instruction, and compiled code asks the type every
time.  So the connection (:class:`KafkaChannel`) and the state this path touches are C fields of
:class:`ProcessorCore`, and the path itself is C; the rare paths (TLS handshakes, SASL, memory
waits, throttles, injected faults, closing) stay in Python in the subclass, which this code
calls by name.  See docs/broker/reactor.rst.
"""

import collections
import logging
import queue
import select
import socket
import ssl
import struct
import threading

from kafkacore.broker.log.file_records import FileRecords
from kafkacore.broker.network.request import Request
from kafkacore.broker.network.request_channel import HANDLER_TURN, ResponseAction
from kafkacore.broker.network.request_parser import parse_request

from cpython.bytearray cimport PyByteArray_AS_STRING
from libc.stdint cimport int32_t, uint32_t
from libc.time cimport timespec

cdef extern from "<time.h>" nogil:
    int clock_gettime(int clk_id, timespec *tp)
    enum:
        CLOCK_MONOTONIC

#: The most bytes one recv() asks for: a large request is read in pieces of this size.
RECV_CHUNK = 256 * 1024
#: What one recv() asks for while the frame being read has fewer bytes left than this: small
#: requests come in with one system call, and the bytes of the next ones a pipelining client
#: sent are kept (at most this many, plus one recv, per connection) until their turn.
READ_AHEAD = 64 * 1024
#: Readiness bits of the processor's Poller (epoll's and poll()'s are the same numbers).
READ = select.POLLIN
WRITE = select.POLLOUT

cdef Py_ssize_t _RECV_CHUNK = RECV_CHUNK
cdef Py_ssize_t _READ_AHEAD = READ_AHEAD
cdef int _READ = READ
cdef int _WRITE = WRITE

#: How long the poller sleeps at most; bounds how late idle connections are noticed.
POLL_S = 0.3

#: SO_LINGER on, 0 s: close() resets the connection.
_RESET = struct.pack("ii", 1, 0)

#: The processor's log (the same name as the rest of it, kafkacore.broker.network.socket_server).
log = logging.getLogger("kafkacore.broker.network.socket_server")

cdef object _SEND = ResponseAction.SEND
cdef object _WRITTEN = ResponseAction.WRITTEN
cdef object _NO_OP = ResponseAction.NO_OP


cdef enum Filled:
    #: What one recv() into a connection's buffer found (ProcessorCore._fill).
    NOTHING = 0  # the socket was empty, the connection closed, or reading stopped
    DRAINED = 1  # some bytes, and the socket is now empty
    MORE = 2  # some bytes, maybe more


cdef inline double monotonic() noexcept nogil:
    """time.monotonic(), without the call (the same clock)."""
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef class KafkaChannel:
    """One client connection, owned by one processor (read and written only by its thread,
    except the answer a handler writes itself under ``write_lock``)."""

    cdef public str id
    cdef public object sock
    #: its descriptor in the processor's Poller (kept after close)
    cdef public int fd
    cdef public tuple address
    #: Bytes read and not yet handed on: the rest of the current frame, and what came after it
    #: (a pipelining client's next requests, at most READ_AHEAD and one recv more).
    cdef public bytearray buffer
    #: The current frame's size once its 4 bytes are read (they are no longer in buffer); -1
    #: between frames.
    cdef public Py_ssize_t expected
    #: a request of this connection is being handled: do not read
    cdef public bint muted
    #: The unwritten response: buffers, and fetched records as file regions (FileRecords).
    cdef public object sends
    cdef public double last_active
    #: what the poller watches it for (0: not registered)
    cdef public int events
    #: the name of the listener it came in on
    cdef public str listener
    cdef public bint tls
    #: While the TLS handshake runs: what it waits for (READ or WRITE); 0 once done.
    cdef public int handshake_events
    #: The SASL exchange of a SASL listener's connection (None on other listeners).
    cdef public object authenticator
    #: Close once ``sends`` is written, for this reason (a failed authentication).
    cdef public object close_after_send
    #: Bytes of the broker's MemoryPool held by this connection's request (being read, or in
    #: the handlers): given back when its response arrives or the connection closes.
    cdef public Py_ssize_t reserved
    #: ``User:<subject>`` of the client's verified certificate, once TLS is up (None: none).
    cdef public object certificate_principal
    #: Bytes after a request's body were seen (and logged) on this connection.
    cdef public bint trailing_bytes_logged
    #: Bytes to read came while a request was in the handlers and the buffer already held
    #: READ_AHEAD (or on TLS): no longer watched for reads; read them as soon as the connection
    #: is unmuted, without waiting a turn.
    cdef public bint readable_while_muted
    #: Held by a handler thread writing its response here (ProcessorCore.write_now) and by the
    #: processor closing the socket, so that a write never goes to a closed descriptor (nor,
    #: reused, to another connection's).
    cdef public object write_lock
    #: set under write_lock by close()
    cdef public bint closed

    def __init__(self, str connection_id, sock, tuple address, str listener="PLAINTEXT"):
        self.id = connection_id
        self.sock = sock
        self.fd = sock.fileno()
        self.address = address
        self.buffer = bytearray()
        self.expected = -1
        self.muted = False
        self.sends = collections.deque()
        self.last_active = monotonic()
        self.events = 0
        self.listener = listener
        self.tls = isinstance(sock, ssl.SSLSocket)
        self.handshake_events = _READ if self.tls else 0
        self.authenticator = None
        self.close_after_send = None
        self.reserved = 0
        self.certificate_principal = None
        self.trailing_bytes_logged = False
        self.readable_while_muted = False
        # Lock order: leaf. Serialises writes of responses to this connection.
        self.write_lock = threading.Lock()
        self.closed = False


cdef class ProcessorCore:
    """The per-request half of a network thread (the base of
    :class:`~kafkacore.broker.network.socket_server.Processor`, which sets the configuration fields,
    starts
    the thread and keeps the rare paths: new connections, TLS handshakes, SASL, memory waits,
    throttles, injected faults, closing).

    One turn (:meth:`do_work`) does what Kafka's ``Processor.run`` does, in the same order:
    new connections (from the acceptor), new responses (from the handlers), poll (select; read
    requests, write responses), idle connections.
    """

    # -- set once, by Processor.__init__ --
    #: The processor's number (``Request.processor``).
    cdef public int id
    cdef public object channel
    cdef public object memory_pool
    #: Faults switched on by tests (docs/broker/faults.rst).
    cdef public object faults
    cdef public Py_ssize_t max_request_size
    cdef public Py_ssize_t sasl_max_receive_size
    cdef public double idle_s
    cdef public object _poller
    #: how handlers and other threads wake this one from its poll (an eventfd)
    cdef public object _wakeup
    cdef public int _wakeup_fd
    #: True while the thread runs (ShutdownableThread's flag, a C field here).
    cdef public bint _running

    # -- this thread's state --
    #: connection id -> channel, least recently active first (for the idle check).
    cdef public object _channels
    #: descriptor -> connection, for what the poller reports.
    cdef public dict _by_fd
    #: Handlers' responses (appended by them, taken by this thread: a deque is safe for one
    #: consumer and many producers without a lock).
    cdef public object _responses
    #: True while this thread is in (or about to enter) its poll: only then does a new response
    #: need a wake-up (see enqueue_response).
    cdef public bint _sleeping
    #: Sleeping handlers our requests went to, woken on our way to sleep (Poller.poll).
    cdef public list _handlers_to_wake
    #: TLS connections whose socket holds decrypted bytes already read from the kernel: the
    #: poller cannot see those, so the loop reads them without waiting.
    cdef public set _tls_pending
    #: Connections whose next request waits for the memory pool (not read meanwhile).
    cdef public dict _memory_waiters
    #: Responses held back by an injected latency: (time received, response), oldest first.
    cdef public object _held
    #: connection id -> when its throttle ends (monotonic s): muted until then (KIP-219).
    cdef public dict _throttled
    #: connection id -> (when, why): refused connections closed a little later (KIP-306).
    cdef public dict _delayed_closes
    cdef public object _new_connections
    cdef public object _authentication_results
    #: Counters of the rare events, by name (statistics()).
    cdef public object _stats
    #: The counters of every request, as C integers.
    cdef public long long requests
    cdef public long long responses
    cdef public long long responses_written_by_handlers
    cdef public long long bytes_read
    cdef public long long bytes_written
    #: requests by API key (``requests.api_key.<key>`` in statistics())
    cdef public dict _requests_by_api
    #: when close_excess_idle next has anything to look at (Kafka's Selector keeps the same
    #: ``nextIdleCloseCheckTime``): the oldest connection's last activity plus the idle time
    cdef public double _next_idle_check

    def __cinit__(self, *args, **kwargs):
        self._channels = collections.OrderedDict()
        self._by_fd = {}
        self._responses = collections.deque()
        self._handlers_to_wake = []
        self._tls_pending = set()
        self._memory_waiters = {}
        self._held = collections.deque()
        self._throttled = {}
        self._delayed_closes = {}
        self._new_connections = queue.SimpleQueue()
        self._authentication_results = queue.SimpleQueue()
        self._stats = collections.Counter()
        self._requests_by_api = {}

    # -- handler threads call this --------------------------------------------------------------

    def enqueue_response(self, response):
        """A handler's response (see
        :class:`~kafkacore.broker.network.request_channel.RequestChannel`).

        Most are written here, by the answering thread itself (:meth:`_write_now`): what is
        left for this processor (unmute the connection, free the request's memory) can wait
        for its next turn, which the client's next request brings, so it is not woken for it,
        unless it holds something that cannot wait (read-ahead bytes of the connection's next
        request, connections waiting for memory).

        The wake-up (a write to the eventfd its poller watches: a system call, and a thread
        switch) is paid only when this processor sleeps; a processor that is busy finds the
        response at the start of its next turn.  No response is left behind while it sleeps: it
        raises ``_sleeping`` *before* it looks at the queue a last time (poll), and we append
        *before* we look at ``_sleeping``, so one of us sees the other.  Two handlers may both
        wake one sleep: harmless, the eventfd counts them as one.  A handler thread pays the
        wake-up at the end of its turn, on its way to the next request or to sleep
        (:class:`~kafkacore.broker.network.request_channel.HandlerTurn`), so that we do not wake
        only
        to wait for the GIL it still holds.
        """
        cdef KafkaChannel ch
        if response.action is _SEND and self._write_now(response):
            self._responses.append(response)
            ch = self._channels.get(response.request.connection_id)
            if not (self._sleeping and (ch is None or ch.buffer or ch.readable_while_muted
                                        or self._memory_waiters)):
                return
        else:
            self._responses.append(response)
        if self._sleeping:
            self._sleeping = False
            owed = HANDLER_TURN.owed
            if owed is None:
                self._wakeup.wake()
            else:  # a handler thread: it wakes us when its turn ends
                owed.append(self._wakeup)

    cdef bint _write_now(self, response) except -1:
        """Write a response from the thread that made it, if nothing else is due first on
        its connection; True if it is all written (the response is then WRITTEN).

        Safe beside the processor: while a request of the connection is being handled the
        processor writes nothing to it (the muting rule), and it closes the socket only under
        the connection's ``write_lock``.  TLS, throttled answers, fetched file regions and
        injected faults take the processor's way.  A partial write leaves the rest to it.
        """
        cdef KafkaChannel ch
        cdef Py_ssize_t sent, total = 0
        cdef list views
        request = response.request
        ch = self._channels.get(request.connection_id)
        if (ch is None or ch.tls or ch.sends or request.throttle_time_ms or self._held
                or self.faults.latency_ms > 0 or self.faults.isolated):
            return False
        views = response.payload
        if len(views) != 1 or type(views[0]) is not bytes:  # (one frame: most answers)
            views = []
            for chunk in response.payload:
                if isinstance(chunk, FileRecords):
                    return False
                views.append(memoryview(chunk).cast("B"))
        with ch.write_lock:
            if ch.closed:
                return False
            try:
                sent = ch.sock.sendmsg(views)
            except OSError:  # (BlockingIOError too) the processor writes it, or closes
                return False
        response.written = sent
        for view in views:
            total += len(view)
        if sent < total:  # (rare) the rest is left to the processor
            for i, view in enumerate(views):
                if sent < len(view):
                    views[i] = memoryview(view)[sent:]
                    response.payload = views[i:]
                    return False
                sent -= len(view)
        response.action = _WRITTEN
        response.payload = None
        return True

    # -- the processor's own thread -------------------------------------------------------------

    def do_work(self):
        # One turn; an exception here is logged and the next turn runs (ShutdownableThread).
        # Each step runs only when it has something to do: a call costs more than the test,
        # and a busy processor takes a turn or two per request.
        cdef double timeout = POLL_S
        if not self._new_connections.empty():
            self.configure_new_connections()
        if self._responses:
            self.process_new_responses()
        if not self._authentication_results.empty():
            self.process_authentication_results()
        if self._memory_waiters:
            self.retry_memory_waiters()
        if self.faults.isolated:
            self.enforce_isolation()
        if self._held:
            timeout = self.release_held_responses()
        if self._throttled:
            timeout = min(timeout, self.unmute_throttled())
        self.poll(timeout)
        if self._delayed_closes:
            self.close_delayed()
        self.close_excess_idle()  # (one comparison until a connection can be idle)

    cpdef process_new_responses(self):
        responses = self._responses
        while responses:
            response = responses.popleft()
            if self.faults.latency_ms > 0 or self._held:
                # An injected latency: held, in order, until due (release_held_responses).
                self._held.append((monotonic(), response))
                continue
            self.process_response(response)

    cpdef process_response(self, response):
        cdef KafkaChannel ch = self._channels.get(response.request.connection_id)
        if ch is None:  # closed while its request was being handled
            response.release()
            return
        self._release_memory(ch)  # the request is handled: its bytes are free
        throttle_ms = response.request.throttle_time_ms
        if throttle_ms > 0:
            # Over its quota (KIP-219): the answer goes now, nothing is read until the end.
            self._throttled[ch.id] = monotonic() + throttle_ms / 1000.0
        action = response.action
        if action is _WRITTEN:  # by the handler: the rest is ours
            self.responses += 1
            self.responses_written_by_handlers += 1
            self._wrote(ch, response.written)
            self._sent(ch)
        elif action is _SEND:
            if response.written:  # the part the handler wrote (_write_now)
                self._wrote(ch, response.written)
            for chunk in response.payload:
                if isinstance(chunk, FileRecords):  # sent from its file
                    ch.sends.append(chunk)
                    continue
                view = memoryview(chunk).cast("B")
                if len(view):
                    ch.sends.append(view)
            self.responses += 1
            # Written at once: the socket is almost always writable, and waiting for the
            # poller to say so would cost a loop turn and two changes of the socket's interest.
            # What does not fit waits until the socket is writable.
            if not ch.handshake_events:
                self._write(ch)
            if ch.sends and ch.id in self._channels:
                self._update_interest(ch)
        elif action is _NO_OP:
            self._unmute(ch)
        else:
            self.close(ch, response.reason)

    cpdef poll(self, double timeout_s=POLL_S):
        cdef double timeout = timeout_s
        cdef KafkaChannel ch
        cdef int fd, mask
        if self._tls_pending:
            timeout = 0
        elif self._delayed_closes:
            first = min([when for when, _ in self._delayed_closes.values()])
            timeout = max(0.0, min(timeout, first - monotonic()))
        if timeout > 0:
            self._sleeping = True  # from here on a handler's response wakes us
            if self._responses:  # ... and one queued before that is seen here
                timeout = 0
        try:
            # The handlers our requests went to are woken on the way (Poller.poll).
            ready = self._poller.poll(timeout, self._handlers_to_wake)
        finally:
            self._sleeping = False
        if self._responses:
            # Responses the handlers wrote themselves and did not wake us for: their
            # connections are unmuted first, so that what woke us is read at once.
            self.process_new_responses()
        by_fd = self._by_fd
        for fd, mask in ready:
            ch = by_fd.get(fd)
            if ch is None:
                if fd == self._wakeup_fd:
                    self._wakeup.clear()
                continue  # (a connection closed earlier in this loop)
            try:
                if ch.handshake_events:
                    self._handshake(ch)
                    continue
                # A hang-up or an error counts as both: the read or write that follows says
                # what happened (as selectors does it).
                if mask & ~_READ and ch.events & _WRITE:
                    self._write(ch)
                if mask & ~_WRITE and ch.events & _READ and ch.fd in by_fd:
                    if not ch.muted:
                        self._read(ch)
                    elif ch.tls or ch.expected >= 0 or len(ch.buffer) >= _READ_AHEAD:
                        # Muting is lazy (_complete_receive): the client sent more while
                        # its request is handled (or its frame waits for memory), more
                        # than we keep: now stop watching this socket for reads.
                        ch.readable_while_muted = True
                        self._update_interest(ch)
                    else:
                        # ... or little enough to keep: it waits in the buffer, and the
                        # socket stays watched (no change of interest, twice, per request).
                        self._fill(ch)
            except Exception:
                # A bug met on one connection (Kafka's processChannelException): that one
                # connection goes, the thread and everyone else's connections stay.
                log.exception("error on connection %s; closing it", ch.id)
                self._stats["connection_errors"] += 1
                self.close(ch, "internal error on this connection")
        if self._tls_pending:
            for connection_id in list(self._tls_pending):
                self._tls_pending.discard(connection_id)
                ch = self._channels.get(connection_id)
                if ch is not None and not ch.muted:
                    self._read(ch)

    cpdef _wake_handlers(self):
        """Wake the sleeping handlers our requests went to this turn (RequestQueue.put), now:
        before a wait that is not our poll (a full queue) and at shutdown."""
        wake = self._handlers_to_wake
        while wake:
            wake.pop().wake()

    # -- reading and writing ---------------------------------------------------------------------

    cpdef _read(self, KafkaChannel ch):
        """Hand on the next request of the connection: from its buffer if it is there already,
        else from the socket, read with as few system calls as the bytes allow."""
        cdef int read = MORE
        while not self._take_request(ch):
            if read != MORE:
                return
            read = self._fill(ch)

    cdef int _fill(self, KafkaChannel ch) except -1:
        """One recv() into the connection's buffer: NOTHING read (the socket was empty, the
        connection closed, or the client closed behind requests still to be taken), or some
        bytes and the socket now DRAINED, or maybe MORE.

        A frame with fewer than READ_AHEAD bytes left is read with one recv() of READ_AHEAD
        (its size, body and, from a pipelining client, the next requests), a larger one in
        recv()s that end exactly at its end, so that its bytes are handed on without a copy.
        """
        cdef Py_ssize_t need, asked
        cdef bytes data
        need = _READ_AHEAD if ch.expected < 0 else ch.expected - len(ch.buffer)
        asked = _READ_AHEAD if need < _READ_AHEAD else min(need, _RECV_CHUNK)
        try:
            data = ch.sock.recv(asked)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return NOTHING
        except OSError as exc:
            self.close(ch, f"read failed: {exc}", level=logging.DEBUG)
            return NOTHING
        if not data:
            if ch.muted and ch.buffer:
                # The client sent more, then closed, while a request of its is being handled
                # (an acks=0 Produce, then close): what it sent is still taken when the
                # connection is unmuted (Kafka closes such a channel once its completed
                # receives are processed).  Reading stops; the close is read again then.
                self._update_interest(ch)
                return NOTHING
            why = "the client closed the connection"
            if ch.buffer or ch.expected >= 0:
                why += f" in the middle of a request ({len(ch.buffer)} bytes read)"
            self.close(ch, why, level=logging.DEBUG)
            return NOTHING
        self._touch(ch)
        self.bytes_read += len(data)
        ch.buffer += data
        # Fewer bytes than asked: the socket is empty, and asking again would only raise
        # BlockingIOError.  (TLS may hold decrypted bytes the poller cannot see: ask again.)
        return MORE if len(data) == asked or ch.tls else DRAINED

    cdef bint _take_request(self, KafkaChannel ch) except -1:
        """Hand on the request whose frame the buffer completes; True when the connection
        waits for something other than bytes (its request handled, memory, or it closed)."""
        cdef bytearray buffer, frame
        cdef const unsigned char *head
        cdef Py_ssize_t limit, expected
        cdef int32_t size
        if ch.muted:
            return True
        buffer = ch.buffer
        if ch.expected < 0:
            if len(buffer) < 4:
                return False
            head = <const unsigned char *>PyByteArray_AS_STRING(buffer)
            size = <int32_t>((<uint32_t>head[0] << 24) | (<uint32_t>head[1] << 16)
                             | (<uint32_t>head[2] << 8) | <uint32_t>head[3])
            del buffer[:4]
            limit, setting = self.max_request_size, "socket.request.max.bytes"
            if ch.authenticator is not None and not ch.authenticator.authenticated:
                # Nobody we know yet: no 100 MB buffers for them (Kafka's
                # sasl.server.max.receive.size).
                limit, setting = self.sasl_max_receive_size, "sasl.server.max.receive.size"
            if size < 0 or size > limit:
                self._stats["invalid_requests"] += 1
                if buffer and not ch.tls:
                    # Reset, not closed: Kafka reads only the 4 bytes of the size, and closing
                    # with the rest unread resets the connection.  A TLS client that dialled a
                    # plaintext port (its ClientHello read as a size) learns that way that the
                    # broker hung up mid-handshake, not that TLS went wrong.
                    ch.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
                self.close(ch, f"request size {size} is not within 0 and {setting}={limit}")
                return True
            ch.expected = size
            if not self._reserve_memory(ch):
                return True
        expected = ch.expected
        if len(buffer) < expected:
            return False
        if len(buffer) == expected:
            frame = buffer  # handed over as is: no copy of a large request
            ch.buffer = bytearray()
        else:  # the next request's bytes came with it (a small copy: see _fill)
            frame = buffer[:expected]
            del buffer[:expected]
        ch.expected = -1
        self._complete_receive(ch, frame)
        return True

    cdef bint _reserve_memory(self, KafkaChannel ch) except -1:
        """Take the bytes of the request whose size was just read from the pool; if it has not
        got them, stop reading this connection until it has (retry_memory_waiters)."""
        if self.memory_pool.try_allocate(ch.expected):
            ch.reserved = ch.expected
            return True
        self._stats["memory_waits"] += 1
        ch.muted = True
        self._memory_waiters[ch.id] = ch
        self._update_interest(ch)
        return False

    cpdef _release_memory(self, KafkaChannel ch):
        if ch.reserved:
            self.memory_pool.release(ch.reserved)
            ch.reserved = 0

    cdef int _complete_receive(self, KafkaChannel ch, bytearray frame) except -1:
        try:
            header, body, trailing = parse_request(frame)
        except Exception as exc:  # any bad bytes: this connection goes, nobody else notices
            self._stats["invalid_requests"] += 1
            self.close(ch, f"could not parse a request of {len(frame)} bytes: {exc}")
            return 0
        if trailing:
            self._stats["requests_with_trailing_bytes"] += 1
            if not ch.trailing_bytes_logged:
                ch.trailing_bytes_logged = True
                log.debug("connection %s: %d bytes after the body of a request (api key %d v%d) "
                          "ignored; logged once per connection", ch.id, trailing,
                          header["request_api_key"], header["request_api_version"])
        if ch.authenticator is not None:
            try:
                if self._authenticate(ch, header, body):
                    return 0
            except Exception:  # a bug in a mechanism: this connection goes, the thread stays
                log.exception("SASL error on connection %s", ch.id)
                self.close(ch, "internal error during SASL authentication")
                return 0
        request = Request(self.id, ch.id, header, body, ch.address, len(frame), ch.listener)
        # Kafka's DefaultKafkaPrincipalBuilder: the SASL user, else the client certificate's
        # subject, else ANONYMOUS.
        if ch.authenticator is not None and ch.authenticator.principal is not None:
            request.principal = "User:" + ch.authenticator.principal
        elif ch.certificate_principal is not None:
            request.principal = ch.certificate_principal
        # The muting rule: no more requests from this connection until the response is
        # queued and written, so at most one of its requests is in the handlers at a time and
        # the responses leave in the order the requests came (handlers run in parallel).  The
        # poller keeps watching it for reads: most clients wait for the answer, and then
        # muting costs no system call at all; what a pipelining client sends meanwhile waits
        # in the buffer, up to READ_AHEAD, before the socket stops being watched (poll).
        ch.muted = True
        self.requests += 1
        api_key = header["request_api_key"]
        self._requests_by_api[api_key] = self._requests_by_api.get(api_key, 0) + 1
        queue_ = self.channel.request_queue
        while self._running:
            if len(queue_) >= queue_.maxsize:
                self._wake_handlers()  # before we wait for them to make room
            try:
                sleeper = self.channel.send_request(request, POLL_S)
            except queue.Full:
                # Handlers are behind: this processor waits, and so do its clients (Kafka's
                # queued.max.requests back-pressure).
                continue
            if sleeper is not None:
                self._handlers_to_wake.append(sleeper)
            return 0
        return 0

    cpdef _write(self, KafkaChannel ch):
        cdef Py_ssize_t sent
        if ch.tls:
            self._write_tls(ch)
            return
        sends = ch.sends
        while sends:
            head = sends[0]
            try:
                if isinstance(head, FileRecords):
                    # Zero copy (Kafka's FileRecords.writeTo): the kernel sends from the file.
                    sent = head.write_to(ch.sock, head.remaining)
                    if head.remaining:
                        self._wrote(ch, sent)
                        return  # the socket is full
                    sends.popleft().close()
                    self._wrote(ch, sent)
                    continue
                buffers = []
                for chunk in sends:
                    if isinstance(chunk, FileRecords) or len(buffers) == 64:
                        break
                    buffers.append(chunk)
                sent = ch.sock.sendmsg(buffers)
            except BlockingIOError:
                return
            except (OSError, EOFError) as exc:
                self.close(ch, f"write failed: {exc}", level=logging.DEBUG)
                return
            self._wrote(ch, sent)
            while sent:
                head = sends[0]
                if sent >= len(head):
                    sent -= len(head)
                    sends.popleft()
                else:
                    sends[0] = head[sent:]  # a partial write: keep the rest for next time
                    return
        self._sent(ch)

    cpdef _wrote(self, KafkaChannel ch, Py_ssize_t sent):
        self.bytes_written += sent
        if sent:
            self._touch(ch)

    cpdef _sent(self, KafkaChannel ch):
        """A response is written: unmute, or close if it was a refusal."""
        if ch.close_after_send is not None:
            self._close_after_send(ch)
            return
        self._unmute(ch)

    cpdef _unmute(self, KafkaChannel ch):
        if ch.id in self._throttled:  # muted until its throttle time is over (unmute_throttled)
            self._update_interest(ch)
            return
        ch.muted = False
        if ch.tls:
            self._update_interest(ch)
            if not ch.handshake_events and (ch.buffer or ch.sock.pending()):
                self._tls_pending.add(ch.id)  # a pipelined request already decrypted
            return
        # A pipelining client's next request, read ahead, goes on at once, and the socket's
        # interest stays as it is: whether it is watched depends on how much the buffer holds.
        if ch.buffer and self._take_request(ch):
            return
        self._update_interest(ch)
        if ch.readable_while_muted:
            ch.readable_while_muted = False
            self._read(ch)  # the next request is there: this turn, not the next one

    cpdef _touch(self, KafkaChannel ch):
        ch.last_active = monotonic()
        self._channels.move_to_end(ch.id)

    cpdef _update_interest(self, KafkaChannel ch):
        cdef int events = 0
        if ch.handshake_events:
            events = ch.handshake_events
        elif not ch.muted:
            events |= _READ
        if ch.sends:
            events |= _WRITE
        if events == ch.events:
            return
        if ch.events == 0:
            self._poller.register(ch.fd, events)
            self._by_fd[ch.fd] = ch
        elif events == 0:
            self._poller.unregister(ch.fd)
            del self._by_fd[ch.fd]
        else:
            self._poller.modify(ch.fd, events)
        ch.events = events
