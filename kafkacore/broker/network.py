"""SocketServer: the broker's network layer, in the shape of Kafka's ``SocketServer.scala``.

One :class:`Acceptor` thread accepts connections and hands them round-robin to N
:class:`Processor` threads (``num.network.threads``).  Each processor owns a selector and its
connections: it reads complete size-delimited requests, decodes their header and body, puts them
on the shared :class:`~kafkacore.broker.request_channel.RequestChannel` and **mutes** the
connection (stops reading it) until the response to that request has been queued and written.
Handler threads (:mod:`kafkacore.broker.handler`) take requests from the channel and put
responses on the processor's own response queue, waking its selector.

There is one acceptor per listener (``listeners=NAME://host:port,...``).  A connection to an SSL
or SASL_SSL listener first goes through its TLS handshake, and one to a SASL listener through its
SASL exchange, both inside the processor's loop without blocking it (Kafka's ``KafkaChannel``
with its ``SslTransportLayer`` and ``SaslServerAuthenticator``); see docs/broker/security.rst.
"""

from __future__ import annotations

import collections
import errno
import logging
import queue
import select
import selectors
import socket
import ssl
import struct
import threading
import time
from typing import Any

from kafkacore import errors
from kafkacore.broker import request_parser
from kafkacore.broker.authentication_executor import AuthenticationExecutor
from kafkacore.broker.config import BrokerConfig, EndPoint
from kafkacore.broker.faults import FaultInjector
from kafkacore.broker.log.file_records import FileRecords
from kafkacore.broker.memory_pool import MemoryPool
from kafkacore.broker.rate_limited_log import RateLimitedLog
from kafkacore.broker.request_channel import (
    HANDLER_TURN,
    Request,
    RequestChannel,
    Response,
    ResponseAction,
    payload_size,
)
from kafkacore.broker.security import (
    ListenerSecurity,
    Outcome,
    SaslServerAuthenticator,
    SaslState,
    build_listener_security,
    certificate_principal,
)
from kafkacore.broker.selector import Poller, Wakeup
from kafkacore.broker.shutdownable_thread import ShutdownableThread
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_API_KEY_VERSION = struct.Struct(">hh")
#: The most bytes one recv() asks for: a large request is read in pieces of this size.
_RECV_CHUNK = 256 * 1024
#: What one recv() asks for while the frame being read has fewer bytes left than this: small
#: requests come in with one system call, and the bytes of the next ones a pipelining client
#: sent are kept (at most this many, plus one recv, per connection) until their turn.
READ_AHEAD = 64 * 1024
#: How long select() sleeps at most; bounds how late idle connections are noticed.
_POLL_S = 0.3
#: The acceptor's back-off after a failed accept (out of file descriptors): first and longest.
ACCEPT_BACKOFF_MIN_S = 0.05
ACCEPT_BACKOFF_MAX_S = 1.0
#: At most one "accept failed" warning per this many seconds.
ACCEPT_ERROR_LOG_INTERVAL_S = 10.0


#: SO_LINGER on, 0 s: close() resets the connection.
_RESET = struct.pack("ii", 1, 0)
#: What one recv() into a connection's buffer found (Processor._fill).
_NOTHING, _DRAINED, _MORE = object(), object(), object()
#: Readiness bits of the processor's Poller (epoll's and poll()'s are the same numbers).
_READ = select.POLLIN
_WRITE = select.POLLOUT


class TooManyConnectionsError(errors.KafkaError, OSError):
    """``max.connections`` or ``max.connections.per.ip`` would be exceeded."""


class ConnectionQuotas:
    """Counts open connections, in total and per client address (Kafka's ``ConnectionQuotas``).

    The acceptor calls :meth:`inc` before handing a connection on; the processor that closes it
    calls :meth:`dec`.  Guarded by ``_lock`` (acceptor and processors are different threads).
    """

    def __init__(self, max_connections: int, max_per_ip: int, overrides: dict[str, int]) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides)
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}  # guarded by _lock
        self._total = 0  # guarded by _lock

    def inc(self, address: str) -> None:
        with self._lock:
            limit = self.overrides.get(address, self.max_per_ip)
            count = self._counts.get(address, 0)
            if count >= limit:
                raise TooManyConnectionsError(
                    f"too many connections from {address} (max.connections.per.ip={limit})"
                )
            if self._total >= self.max_connections:
                raise TooManyConnectionsError(
                    f"too many connections (max.connections={self.max_connections})"
                )
            self._counts[address] = count + 1
            self._total += 1

    def dec(self, address: str) -> None:
        with self._lock:
            count = self._counts.get(address, 0)
            if count <= 1:
                self._counts.pop(address, None)
            else:
                self._counts[address] = count - 1
            self._total = max(0, self._total - 1)

    def get(self, address: str) -> int:
        with self._lock:
            return self._counts.get(address, 0)

    @property
    def total(self) -> int:
        with self._lock:
            return self._total


class KafkaChannel:
    """One client connection, owned by one processor (read and written only by its thread)."""

    __slots__ = (
        "id", "sock", "fd", "address", "buffer", "expected", "muted", "sends", "last_active",
        "events", "listener", "tls", "handshake_events", "authenticator", "close_after_send",
        "reserved", "trailing_bytes_logged", "certificate_principal", "readable_while_muted",
        "write_lock", "closed",
    )

    def __init__(self, connection_id: str, sock: socket.socket, address: tuple[str, int],
                 listener: str = "PLAINTEXT") -> None:
        self.id = connection_id
        self.sock = sock
        self.fd = sock.fileno()  #: its descriptor in the processor's Poller (kept after close)
        self.address = address
        #: Bytes read and not yet handed on: the rest of the current frame, and what came after
        #: it (a pipelining client's next requests, at most READ_AHEAD and one recv more).
        self.buffer = bytearray()
        #: The current frame's size once its 4 bytes are read (they are no longer in buffer).
        self.expected: int | None = None
        self.muted = False  #: a request of this connection is being handled: do not read
        #: The unwritten response: buffers, and fetched records as file regions (FileRecords).
        self.sends: collections.deque[Any] = collections.deque()
        self.last_active = time.monotonic()
        self.events = 0  #: what the poller watches it for (0: not registered)
        self.listener = listener  #: the name of the listener it came in on
        self.tls = isinstance(sock, ssl.SSLSocket)
        #: While the TLS handshake runs: what it waits for (READ or WRITE); 0 once done.
        self.handshake_events = _READ if self.tls else 0
        #: The SASL exchange of a SASL listener's connection (None on other listeners).
        self.authenticator: SaslServerAuthenticator | None = None
        #: Close once ``sends`` is written, for this reason (a failed authentication).
        self.close_after_send: str | None = None
        #: Bytes of the broker's MemoryPool held by this connection's request (being read, or
        #: in the handlers): given back when its response arrives or the connection closes.
        self.reserved = 0
        #: ``User:<subject>`` of the client's verified certificate, once TLS is up (None: none).
        self.certificate_principal: str | None = None
        #: Bytes after a request's body were seen (and logged) on this connection.
        self.trailing_bytes_logged = False
        #: Bytes to read came while a request was in the handlers and the buffer already held
        #: READ_AHEAD (or on TLS): no longer watched for reads; read them as soon as the
        #: connection is unmuted, without waiting a turn.
        self.readable_while_muted = False
        #: Held by a handler thread writing its response here (Processor._write_now) and by the
        #: processor closing the socket, so that a write never goes to a closed descriptor
        #: (nor, reused, to another connection's).
        self.write_lock = threading.Lock()
        self.closed = False  #: set under write_lock by close()


def parse_request(frame: bytes) -> tuple[dict[str, Any], dict[str, Any] | None, int]:
    """Decode a request frame: (header, body, trailing bytes).  ``body`` is None for a version we
    cannot read; bytes after a body are ignored, as Kafka ignores them, and counted.

    An API key or version outside our declarations still has a readable header (its first fields
    never change, and the client id keeps its two-byte length even in flexible headers), so
    :class:`~kafkacore.broker.apis.KafkaApis` can answer it with a reason.  Anything else that
    does not decode raises :class:`~kafkacore.protocol.codec.ProtocolError` or ``ValueError``.
    """
    if len(frame) < 8:
        raise codec.ProtocolError(f"a request of {len(frame)} bytes is shorter than its header")
    api_key, api_version = _API_KEY_VERSION.unpack_from(frame, 0)
    readable = _READABLE.get(api_key << 16 | api_version)  # (a negative key or version: no entry)
    if readable is None:
        header, _ = codec.decode(codec.REQUEST_HEADER_MESSAGE, 1, frame)
        return header, None, 0
    message, flexible, compiled = readable
    # The header and a Produce body are read by compiled code (request_parser.pyx), which gives
    # the codec's dicts; every other body by the codec itself (codec.decode_request).
    header, pos = request_parser.decode_request_header(frame, flexible)
    if compiled:
        body, pos = request_parser.decode_produce_request(frame, pos, api_version)
    else:
        body, pos = codec.decode(message, api_version, frame, pos)
    return header, body, len(frame) - pos


#: ``api_key << 16 | api_version`` -> (the request's message, whether its header is flexible,
#: whether its body is read by the compiled Produce parser), for every request version we can
#: read: one lookup per request, instead of asking the message's version ranges each time.
_READABLE: dict[int, tuple[codec.Message, bool, bool]] = {
    api_key << 16 | version: (
        message, version in message.flexible,
        api_key == ApiKey.PRODUCE and version in request_parser.PRODUCE_VERSIONS)
    for api_key, message in codec.REQUESTS.items()
    for version in range(message.valid.low, message.valid.high + 1)
}


class Processor(ShutdownableThread):
    """A network thread: its own selector, its own connections (Kafka's ``Processor``).

    Each turn of :meth:`run` does what Kafka's does, in the same order:
    ``configure_new_connections`` (from the acceptor), ``process_new_responses`` (from the
    handlers), ``poll`` (select; read requests, write responses), ``close_excess_idle``.
    """

    def __init__(self, processor_id: int, config: BrokerConfig, channel: RequestChannel,
                 quotas: ConnectionQuotas, faults: FaultInjector | None = None,
                 memory_pool: MemoryPool | None = None,
                 authentication_executor: AuthenticationExecutor | None = None) -> None:
        super().__init__(f"kafkacore-network-thread-{processor_id}")
        self.id = processor_id
        #: Runs SaslAuthenticate steps off this thread (None: here, on the network thread).
        self.authentication_executor = authentication_executor
        self._authentication_results: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self.memory_pool = memory_pool if memory_pool is not None else MemoryPool(
            config["queued.max.request.bytes"])
        #: Connections whose next request waits for the memory pool (not read meanwhile).
        self._memory_waiters: dict[str, KafkaChannel] = {}
        #: Faults switched on by tests (see docs/broker/faults.rst): isolation and latency are
        #: done here, between the handlers and the sockets.
        self.faults = faults if faults is not None else FaultInjector()
        #: Responses held back by an injected latency: (time received, response), oldest first.
        self._held: collections.deque[tuple[float, Response]] = collections.deque()
        self.channel = channel
        self.quotas = quotas
        self.max_request_size: int = config["socket.request.max.bytes"]
        self.idle_s: float = config["connections.max.idle.ms"] / 1000.0
        self.sasl_max_receive_size: int = config["sasl.server.max.receive.size"]
        self.failed_auth_delay_s: float = (
            config["connection.failed.authentication.delay.ms"] / 1000.0)
        #: connection id -> (when, why): refused connections closed a little later (KIP-306),
        #: so a client reads the refusal before the end of the stream, and a guessing client
        #: is slowed down.
        self._delayed_closes: dict[str, tuple[float, str]] = {}
        #: connection id -> when its throttle ends (monotonic s): muted until then (KIP-219);
        #: one entry per connection at most, each bounded by the quota's longest throttle
        self._throttled: dict[str, float] = {}
        self._poller = Poller()
        #: descriptor -> connection, for what the poller reports (guarded: this thread only).
        self._by_fd: dict[int, KafkaChannel] = {}
        #: how handlers and other threads wake this one from its poll (an eventfd)
        self._wakeup = Wakeup()
        self._wakeup_fd = self._wakeup.fd
        self._poller.register(self._wakeup_fd, _READ)
        self._new_connections: queue.SimpleQueue[
            tuple[socket.socket, str, ListenerSecurity | None]] = queue.SimpleQueue()
        #: Handlers' responses (appended by them, taken by this thread: a deque is safe for one
        #: consumer and many producers without a lock).
        self._responses: collections.deque[Response] = collections.deque()
        #: True while this thread is in (or about to enter) its poll: only then does a new
        #: response need a wake-up (see enqueue_response).
        self._sleeping = False
        #: Sleeping handlers our requests went to, woken on our way to sleep (Poller.poll).
        self._handlers_to_wake: list[Wakeup] = []
        #: connection id -> channel, least recently active first (for the idle check).
        self._channels: collections.OrderedDict[str, KafkaChannel] = collections.OrderedDict()
        #: TLS connections whose socket holds decrypted bytes already read from the kernel:
        #: select() cannot see those, so the loop reads them without waiting.
        self._tls_pending: set[str] = set()
        self._next_index = 0
        self._stats = collections.Counter[str]()
        #: requests by API key (named ``requests.api_key.<key>`` in statistics(): kept by key
        #: here, so that counting one costs no string built per request)
        self._requests_by_api = collections.Counter[int]()
        #: when close_excess_idle next has anything to look at (Kafka's Selector keeps the same
        #: ``nextIdleCloseCheckTime``): the oldest connection's last activity plus the idle time
        self._next_idle_check = 0.0
        #: Refused and failed connections: a WARNING each, one line per kind per interval.
        self._refusals = RateLimitedLog(log)
        channel.add_processor(self)
        self.faults.attach(self.name, self.wakeup)

    # -- other threads call these ---------------------------------------------------------------

    def accept(self, sock: socket.socket, host: str,
               security: ListenerSecurity | None = None) -> None:
        """The acceptor hands over a new connection (from ``host``, counted in the quotas)."""
        self._new_connections.put((sock, host, security))
        self.wakeup()

    def enqueue_response(self, response: Response) -> None:
        """A handler's response (see :class:`RequestChannel`).

        Most are written here, by the answering thread itself (:meth:`_write_now`): what is
        left for this processor (unmute the connection, free the request's memory) can wait
        for its next turn, which the client's next request brings, so it is not woken for it,
        unless it holds something that cannot wait (read-ahead bytes of the connection's next
        request, connections waiting for memory).

        The wake-up (a write to the eventfd its poller watches: a system call, and a thread
        switch) is paid only when this processor sleeps; a processor that is busy finds the response at
        the start of its next turn.  No response is left behind while it sleeps: it raises
        ``_sleeping`` *before* it looks at the queue a last time (poll), and we append *before*
        we look at ``_sleeping``, so one of us sees the other.  Two handlers may both wake one
        sleep: harmless, the eventfd counts them as one.  A handler thread pays the wake-up at
        the end of its turn, on its way to the next request or to sleep
        (:class:`~kafkacore.broker.request_channel.HandlerTurn`), so that we do not wake only to
        wait for the GIL it still holds.
        """
        if response.action is ResponseAction.SEND and self._write_now(response):
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
                self.wakeup()
            else:  # a handler thread: it wakes us when its turn ends
                owed.append(self._wakeup)

    def _write_now(self, response: Response) -> bool:
        """Write a response from the thread that made it, if nothing else is due first on
        its connection; True if it is all written (the response is then WRITTEN).

        Safe beside the processor: while a request of the connection is being handled the
        processor writes nothing to it (the muting rule), and it closes the socket only under
        the connection's ``write_lock``.  TLS, throttled answers, fetched file regions and
        injected faults take the processor's way.  A partial write leaves the rest to it.
        """
        request = response.request
        ch = self._channels.get(request.connection_id)
        if (ch is None or ch.tls or ch.sends or request.throttle_time_ms or self._held
                or self.faults.latency_ms > 0 or self.faults.isolated):
            return False
        views = response.payload
        assert views is not None
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
        if sent < sum(map(len, views)):  # (rare) the rest is left to the processor
            for i, view in enumerate(views):
                if sent < len(view):
                    views[i] = memoryview(view)[sent:]
                    response.payload = views[i:]
                    return False
                sent -= len(view)
        response.action = ResponseAction.WRITTEN
        response.payload = None
        return True

    def wakeup(self) -> None:
        self._wakeup.wake()

    def statistics(self) -> dict[str, int]:
        """Counters of this processor (read from other threads; each value is one int)."""
        while True:
            try:  # the processor may add a key meanwhile: copy again
                stats = dict(self._stats)
                for api_key, count in list(self._requests_by_api.items()):
                    stats[f"requests.api_key.{api_key}"] = count
                break
            except RuntimeError:
                continue
        stats["connections"] = len(self._channels)
        stats["waiting_for_memory"] = len(self._memory_waiters)
        return stats

    # -- the processor's own thread -------------------------------------------------------------

    def do_work(self) -> None:
        # One turn; an exception here is logged and the next turn runs (ShutdownableThread).
        # Each step runs only when it has something to do: a call costs more than the test,
        # and a busy processor takes a turn or two per request.
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
        timeout = _POLL_S
        if self._held:
            timeout = self.release_held_responses()
        if self._throttled:
            timeout = min(timeout, self.unmute_throttled())
        self.poll(timeout)
        if self._delayed_closes:
            self.close_delayed()
        self.close_excess_idle()

    def on_shutdown(self) -> None:
        self._wake_handlers()  # never leave a handler waiting for a wake-up we owe it
        for ch in list(self._channels.values()):
            self.close(ch, "the broker is shutting down", level=logging.DEBUG)
        self.channel.remove_processor(self.id)
        self.faults.detach(self.name)
        self._poller.close()
        self._wakeup.close()

    def configure_new_connections(self) -> None:
        # (each turn runs these checks: an empty() costs less than the queue.Empty raised)
        while not self._new_connections.empty():
            try:
                sock, host, security = self._new_connections.get_nowait()
            except queue.Empty:
                return
            try:
                local = sock.getsockname()
                remote = sock.getpeername()
            except OSError:  # the client has already gone
                self.quotas.dec(host)
                sock.close()
                continue
            connection_id = f"{local[0]}:{local[1]}-{remote[0]}:{remote[1]}-{self._next_index}"
            self._next_index += 1
            listener = "PLAINTEXT"
            authenticator = None
            if security is not None:
                listener = security.endpoint.name
                authenticator = security.new_authenticator()
                if security.ssl_context is not None:
                    # The handshake is driven by poll(), never here: the client speaks first.
                    sock = security.ssl_context.wrap_socket(
                        sock, server_side=True, do_handshake_on_connect=False)
            ch = KafkaChannel(connection_id, sock, (host, remote[1]), listener)
            ch.authenticator = authenticator
            self._channels[connection_id] = ch
            self._stats["accepted"] += 1
            self._update_interest(ch)

    def process_new_responses(self) -> None:
        responses = self._responses
        while responses:
            response = responses.popleft()
            if self.faults.latency_ms > 0 or self._held:
                # An injected latency: held, in order, until due (release_held_responses).
                self._held.append((time.monotonic(), response))
                continue
            self.process_response(response)

    def process_response(self, response: Response) -> None:
        ch = self._channels.get(response.request.connection_id)
        if ch is None:  # closed while its request was being handled
            response.release()
            return
        self._release_memory(ch)  # the request is handled: its bytes are free
        throttle_ms = response.request.throttle_time_ms
        if throttle_ms > 0:
            # Over its quota (KIP-219): the answer goes now, nothing is read until the end.
            self._throttled[ch.id] = time.monotonic() + throttle_ms / 1000.0
        if response.action is ResponseAction.WRITTEN:  # by the handler: the rest is ours
            self._stats["responses"] += 1
            self._stats["responses_written_by_handlers"] += 1
            self._wrote(ch, response.written)
            self._sent(ch)
        elif response.action is ResponseAction.SEND:
            assert response.payload is not None
            if response.written:  # the part the handler wrote (_write_now)
                self._wrote(ch, response.written)
            for chunk in response.payload:
                if hasattr(chunk, "write_to"):  # FileRecords: sent from its file
                    ch.sends.append(chunk)
                    continue
                view = memoryview(chunk).cast("B")
                if len(view):
                    ch.sends.append(view)
            self._stats["responses"] += 1
            # Written at once: the socket is almost always writable, and waiting for the
            # poller to say so would cost a loop turn and two changes of the socket's interest.
            # What does not fit waits until the socket is writable.
            if not ch.handshake_events:
                self._write(ch)
            if ch.sends and ch.id in self._channels:
                self._update_interest(ch)
        elif response.action is ResponseAction.NO_OP:
            self._unmute(ch)
        else:
            self.close(ch, response.reason)

    def unmute_throttled(self) -> float:
        """Unmute the connections whose throttle time is over; how long poll() may sleep."""
        if not self._throttled:
            return _POLL_S
        now = time.monotonic()
        for ch_id, until in list(self._throttled.items()):
            if until <= now:
                del self._throttled[ch_id]
                ch = self._channels.get(ch_id)
                if ch is not None and not ch.sends:  # else unmuted when the answer is written
                    self._unmute(ch)
        if not self._throttled:
            return _POLL_S
        return max(0.0, min(_POLL_S, min(self._throttled.values()) - now))

    def release_held_responses(self) -> float:
        """Queue the held responses that are due; returns how long poll() may sleep."""
        if not self._held:
            return _POLL_S
        delay_s = self.faults.latency_ms / 1000.0
        now = time.monotonic()
        while self._held and self._held[0][0] + delay_s <= now:
            self.process_response(self._held.popleft()[1])
        if self._held:
            return max(0.0, min(_POLL_S, self._held[0][0] + delay_s - now))
        return _POLL_S

    def enforce_isolation(self) -> None:
        """While the broker is isolated: close every connection, read nothing, write nothing."""
        if not self.faults.isolated:
            return
        for ch in list(self._channels.values()):
            self.close(ch, "the broker is isolated (an injected fault)", level=logging.DEBUG)
        for _, response in self._held:
            response.release()
        self._held.clear()
        self.faults.isolation_enforced(self.name)

    def poll(self, timeout_s: float = _POLL_S) -> None:
        timeout = timeout_s
        if self._tls_pending:
            timeout = 0
        elif self._delayed_closes:
            first = min(when for when, _ in self._delayed_closes.values())
            timeout = max(0.0, min(timeout, first - time.monotonic()))
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
                    elif ch.tls or ch.expected is not None or len(ch.buffer) >= READ_AHEAD:
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
                pending = self._channels.get(connection_id)
                if pending is not None and not pending.muted:
                    self._read(pending)

    def _wake_handlers(self) -> None:
        """Wake the sleeping handlers our requests went to this turn (RequestQueue.put), now:
        before a wait that is not our poll (a full queue) and at shutdown."""
        wake = self._handlers_to_wake
        while wake:
            wake.pop().wake()

    def _handshake(self, ch: KafkaChannel) -> None:
        """One step of the TLS handshake; it tells what it waits for next (Kafka's
        ``SslTransportLayer.handshake``).  Never blocks: the socket is non-blocking."""
        assert isinstance(ch.sock, ssl.SSLSocket)
        try:
            ch.sock.do_handshake()
        except ssl.SSLWantReadError:
            ch.handshake_events = _READ
        except ssl.SSLWantWriteError:
            ch.handshake_events = _WRITE
        except (ssl.SSLError, OSError) as exc:
            # Not TLS (a plaintext client), a client certificate missing or untrusted, garbage:
            # this connection goes; the reason is logged as Kafka's SslAuthenticationException.
            self._stats["ssl_handshake_failed"] += 1
            self.close(ch, f"TLS handshake failed: {getattr(exc, 'reason', None) or exc}")
            return
        else:
            ch.handshake_events = 0
            self._stats["ssl_handshakes"] += 1
            ch.certificate_principal = certificate_principal(ch.sock.getpeercert())
            if ch.sock.pending():  # the client's first request came with its last flight
                self._tls_pending.add(ch.id)
        self._touch(ch)
        self._update_interest(ch)

    def close_delayed(self) -> None:
        """Close the refused connections whose delay is over
        (``connection.failed.authentication.delay.ms``)."""
        if not self._delayed_closes:
            return
        now = time.monotonic()
        for connection_id, (when, reason) in list(self._delayed_closes.items()):
            if when <= now:
                del self._delayed_closes[connection_id]
                ch = self._channels.get(connection_id)
                if ch is not None:
                    self.close(ch, reason)

    def close_excess_idle(self) -> None:
        """Close connections idle longer than ``connections.max.idle.ms``, oldest first."""
        now = time.monotonic()
        if now < self._next_idle_check:
            return  # the oldest connection cannot be idle yet (activity only makes it younger)
        deadline = now - self.idle_s
        stale = []
        for ch in self._channels.values():
            if ch.last_active > deadline:
                self._next_idle_check = ch.last_active + self.idle_s
                break  # ordered by activity: the rest are younger
            stale.append(ch)
        else:
            self._next_idle_check = now + self.idle_s  # none left (a new one is younger)
        for ch in stale:
            if ch.id in self._delayed_closes:
                continue
            if ch.sends:
                # A response the client has not read for that long: it is not reading (the
                # socket is full).  Closed, as Kafka's idle check does, so a client that never
                # reads holds nothing for ever.
                self._stats["blocked_closed"] += 1
                self.close(ch, f"a response unread for more than {self.idle_s * 1000:.0f} ms")
                continue
            if ch.muted:  # a request is being handled: not idle
                self._touch(ch)
                continue
            self._stats["idle_closed"] += 1
            self.close(ch, f"idle for more than {self.idle_s * 1000:.0f} ms",
                       level=logging.DEBUG)

    # -- reading and writing ---------------------------------------------------------------------

    def _read(self, ch: KafkaChannel) -> None:
        """Hand on the next request of the connection: from its buffer if it is there already,
        else from the socket, read with as few system calls as the bytes allow."""
        read = _MORE
        while not self._take_request(ch):
            if read is not _MORE:
                return
            read = self._fill(ch)

    def _fill(self, ch: KafkaChannel) -> object:
        """One recv() into the connection's buffer: _NOTHING read (the socket was empty, the
        connection closed, or the client closed behind requests still to be taken), or some
        bytes and the socket now _DRAINED, or maybe _MORE.

        A frame with fewer than READ_AHEAD bytes left is read with one recv() of READ_AHEAD
        (its size, body and, from a pipelining client, the next requests), a larger one in
        recv()s that end exactly at its end, so that its bytes are handed on without a copy.
        """
        need = READ_AHEAD if ch.expected is None else ch.expected - len(ch.buffer)
        asked = READ_AHEAD if need < READ_AHEAD else min(need, _RECV_CHUNK)
        try:
            data = ch.sock.recv(asked)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return _NOTHING
        except OSError as exc:
            self.close(ch, f"read failed: {exc}", level=logging.DEBUG)
            return _NOTHING
        if not data:
            if ch.muted and ch.buffer:
                # The client sent more, then closed, while a request of its is being handled
                # (an acks=0 Produce, then close): what it sent is still taken when the
                # connection is unmuted (Kafka closes such a channel once its completed
                # receives are processed).  Reading stops; the close is read again then.
                self._update_interest(ch)
                return _NOTHING
            why = "the client closed the connection"
            if ch.buffer or ch.expected is not None:
                why += f" in the middle of a request ({len(ch.buffer)} bytes read)"
            self.close(ch, why, level=logging.DEBUG)
            return _NOTHING
        self._touch(ch)
        self._stats["bytes_read"] += len(data)
        ch.buffer += data
        # Fewer bytes than asked: the socket is empty, and asking again would only raise
        # BlockingIOError.  (TLS may hold decrypted bytes the poller cannot see: ask again.)
        return _MORE if len(data) == asked or ch.tls else _DRAINED

    def _take_request(self, ch: KafkaChannel) -> bool:
        """Hand on the request whose frame the buffer completes; True when the connection
        waits for something other than bytes (its request handled, memory, or it closed)."""
        if ch.muted:
            return True
        buffer = ch.buffer
        if ch.expected is None:
            if len(buffer) < 4:
                return False
            size = _SIZE.unpack_from(buffer)[0]
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
        ch.expected = None
        self._complete_receive(ch, frame)
        return True

    def _reserve_memory(self, ch: KafkaChannel) -> bool:
        """Take the bytes of the request whose size was just read from the pool; if it has not
        got them, stop reading this connection until it has (retry_memory_waiters)."""
        assert ch.expected is not None
        if self.memory_pool.try_allocate(ch.expected):
            ch.reserved = ch.expected
            return True
        self._stats["memory_waits"] += 1
        ch.muted = True
        self._memory_waiters[ch.id] = ch
        self._update_interest(ch)
        return False

    def retry_memory_waiters(self) -> None:
        if not self._memory_waiters:
            return
        for ch in list(self._memory_waiters.values()):
            assert ch.expected is not None
            if not self.memory_pool.try_allocate(ch.expected):
                return  # first come, first served: the others wait behind it
            del self._memory_waiters[ch.id]
            ch.reserved = ch.expected
            self._unmute(ch)

    def _release_memory(self, ch: KafkaChannel) -> None:
        if ch.reserved:
            self.memory_pool.release(ch.reserved)
            ch.reserved = 0

    def _complete_receive(self, ch: KafkaChannel, frame: bytes | bytearray) -> None:
        try:
            header, body, trailing = parse_request(frame)
        except Exception as exc:  # any bad bytes: this connection goes, nobody else notices
            self._stats["invalid_requests"] += 1
            self.close(ch, f"could not parse a request of {len(frame)} bytes: {exc}")
            return
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
                    return
            except Exception:  # a bug in a mechanism: this connection goes, the thread stays
                log.exception("SASL error on connection %s", ch.id)
                self.close(ch, "internal error during SASL authentication")
                return
        request = Request(self.id, ch.id, header, body, ch.address, len(frame),
                          listener_name=ch.listener)
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
        self._stats["requests"] += 1
        self._requests_by_api[request.api_key] += 1
        queue_ = self.channel.request_queue
        while self._running:
            if len(queue_) >= queue_.maxsize:
                self._wake_handlers()  # before we wait for them to make room
            try:
                sleeper = self.channel.send_request(request, timeout_s=_POLL_S)
            except queue.Full:
                # Handlers are behind: this processor waits, and so do its clients (Kafka's
                # queued.max.requests back-pressure).
                continue
            if sleeper is not None:
                self._handlers_to_wake.append(sleeper)
            return

    def _authenticate(self, ch: KafkaChannel, header: dict[str, Any],
                      body: dict[str, Any] | None) -> bool:
        """The SASL gate of a SASL listener (Kafka's ``SaslServerAuthenticator`` and
        ``Processor``'s expired-session check).  True when the frame was dealt with here."""
        auth = ch.authenticator
        assert auth is not None
        api_key, version = header["request_api_key"], header["request_api_version"]
        if api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            if body is None:
                self.close(ch, f"SASL request {api_key} v{version} is not a version we read")
                return True
            ch.muted = True  # until the answer is written, like any response
            self._update_interest(ch)
            if api_key == ApiKey.SASL_AUTHENTICATE and self.authentication_executor is not None:
                # The costly step (a PLAIN password's PBKDF2) runs off this thread, after the
                # delay its source earned by failing (AuthenticationExecutor).
                def step(auth: SaslServerAuthenticator = auth) -> tuple[Any, bool]:
                    answer, outcome = auth.handle(api_key, version, body)
                    return (answer, outcome), outcome is Outcome.FAILED

                def done(result: Any, error: BaseException | None, ch_id: str = ch.id,
                         reauth: bool = auth.state is SaslState.REAUTH_AUTHENTICATE) -> None:
                    self._authentication_results.put((ch_id, header, body, reauth, result, error))
                    self.wakeup()

                if not self.authentication_executor.submit(ch.address[0], step, done):
                    self.close(ch, "too many SASL authentications waiting; try again later")
                return True
            was_reauthenticating = auth.state is SaslState.REAUTH_AUTHENTICATE
            self._answer_sasl(ch, header, body, was_reauthenticating,
                              auth.handle(api_key, version, body))
            return True
        if not auth.authenticated:
            if api_key == ApiKey.API_VERSIONS and (
                    auth.state is SaslState.HANDSHAKE_OR_VERSIONS_REQUEST):
                return False  # KIP-511: the client may ask for versions first
            self._stats["unauthenticated_requests"] += 1
            self.close(ch, f"API key {api_key} before SASL authentication completed "
                           f"(state {auth.state.value})")
            return True
        if auth.session_expired(time.monotonic()):
            # KIP-368: the session ended without a re-authentication: no more requests.
            self._stats["expired_sessions_closed"] += 1
            self.close(ch, f"the SASL session of {auth.principal!r} expired "
                           "(connections.max.reauth.ms) without re-authentication")
            return True
        return False

    def process_authentication_results(self) -> None:
        """The SaslAuthenticate answers the AuthenticationExecutor has worked out."""
        while not self._authentication_results.empty():
            try:
                ch_id, header, body, reauth, result, error = (
                    self._authentication_results.get_nowait())
            except queue.Empty:
                return
            ch = self._channels.get(ch_id)
            if ch is None:
                continue  # closed meanwhile
            if error is not None:
                log.error("SASL error on connection %s", ch.id, exc_info=error)
                self.close(ch, "internal error during SASL authentication")
                continue
            self._answer_sasl(ch, header, body, reauth, result)

    def _answer_sasl(self, ch: KafkaChannel, header: dict[str, Any], body: dict[str, Any],
                     was_reauthenticating: bool, result: tuple[dict[str, Any], Outcome]) -> None:
        answer, outcome = result
        api_key, version = header["request_api_key"], header["request_api_version"]
        self._release_memory(ch)  # answered here: the request's bytes are free
        if api_key == ApiKey.SASL_AUTHENTICATE and version < 1:
            answer.pop("session_lifetime_ms", None)  # v0 does not carry it
        payload = codec.encode_response(api_key, version, header["correlation_id"], answer)
        size = payload_size(payload)
        ch.sends.extend(memoryview(c).cast("B") for c in [size.to_bytes(4, "big"), *payload])
        if outcome is Outcome.FAILED:
            self._stats["authentication_failed"] += 1
            ch.close_after_send = (
                f"SASL authentication failed (error {answer['error_code']}: "
                f"{answer.get('error_message') or 'mechanism ' + repr(body.get('mechanism'))})")
            # As Kafka's "Failed authentication with /host": the message names no secret.
            self._refusals.log("failed authentications",
                               "failed authentication with %s on %s: %s",
                               ch.address[0], ch.listener, ch.close_after_send)
        elif outcome is Outcome.AUTHENTICATED:
            self._stats["reauthentications" if was_reauthenticating else "authenticated"] += 1
        self._update_interest(ch)

    def _write(self, ch: KafkaChannel) -> None:
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

    def _wrote(self, ch: KafkaChannel, sent: int) -> None:
        self._stats["bytes_written"] += sent
        if sent:
            self._touch(ch)

    def _write_tls(self, ch: KafkaChannel) -> None:
        # SSLSocket has no sendmsg(): one buffer at a time.  After a "want write" OpenSSL must
        # be given the same bytes again, which is what the head of ``sends`` still holds.
        while ch.sends:
            head = ch.sends[0]
            if isinstance(head, FileRecords):
                # TLS must encrypt in our memory: read the region one chunk at a time, so one
                # chunk, not the whole fetch, is what a slow reader holds.
                try:
                    chunk = head.read_chunk(_RECV_CHUNK)
                except (OSError, EOFError) as exc:
                    self.close(ch, f"reading fetched records failed: {exc}")
                    return
                head.advance(len(chunk))
                if not head.remaining:
                    ch.sends.popleft().close()
                ch.sends.appendleft(memoryview(chunk))
                continue
            try:
                sent = ch.sock.send(head[:_RECV_CHUNK])
            except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                return
            except OSError as exc:
                self.close(ch, f"write failed: {exc}", level=logging.DEBUG)
                return
            self._wrote(ch, sent)
            if sent >= len(head):
                ch.sends.popleft()
            else:
                ch.sends[0] = head[sent:]
        self._sent(ch)

    def _sent(self, ch: KafkaChannel) -> None:
        """A response is written: unmute, or close if it was a refusal."""
        if ch.close_after_send is not None:
            if self.failed_auth_delay_s > 0:
                # Stay muted: nothing more is read from it; the loop closes it when due.
                self._update_interest(ch)
                self._delayed_closes[ch.id] = (
                    time.monotonic() + self.failed_auth_delay_s, ch.close_after_send)
            else:
                self.close(ch, ch.close_after_send)
            return
        self._unmute(ch)

    def _unmute(self, ch: KafkaChannel) -> None:
        if ch.id in self._throttled:  # muted until its throttle time is over (unmute_throttled)
            self._update_interest(ch)
            return
        ch.muted = False
        sock = ch.sock
        if isinstance(sock, ssl.SSLSocket):
            self._update_interest(ch)
            if not ch.handshake_events and (ch.buffer or sock.pending()):
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

    def _touch(self, ch: KafkaChannel) -> None:
        ch.last_active = time.monotonic()
        self._channels.move_to_end(ch.id)

    def _update_interest(self, ch: KafkaChannel) -> None:
        events = 0
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

    def close(self, ch: KafkaChannel, reason: str, level: int | None = None) -> None:
        """Close ``ch``.  Without a ``level`` the close is a refusal (bad input, a failed
        authentication, an internal error on the connection): a WARNING, rate-limited."""
        if self._channels.pop(ch.id, None) is None:
            return
        if level is None:
            self._refusals.log("connections closed", "closing connection %s from %s: %s",
                               ch.id, ch.address[0], reason)
        else:
            log.log(level, "closing connection %s: %s", ch.id, reason)
        if ch.events:
            self._poller.unregister(ch.fd)
            del self._by_fd[ch.fd]
            ch.events = 0
        if isinstance(ch.sock, ssl.SSLSocket) and not ch.handshake_events:
            # TLS's close_notify, so the client knows the stream ended whole (a client may
            # drop the last response if the connection ends without it); never waits for the
            # client's own close_notify.
            try:
                ch.sock.unwrap()
            except (ssl.SSLError, OSError, ValueError):
                pass
        with ch.write_lock:
            ch.closed = True
            ch.sock.close()
        for chunk in ch.sends:
            if isinstance(chunk, FileRecords):
                chunk.close()
        ch.sends.clear()
        self._release_memory(ch)
        self._memory_waiters.pop(ch.id, None)
        self._tls_pending.discard(ch.id)
        self._delayed_closes.pop(ch.id, None)
        self._throttled.pop(ch.id, None)
        self.quotas.dec(ch.address[0])
        self._stats["closed"] += 1

    def connection_ids(self) -> list[str]:
        return list(self._channels)


class Acceptor(ShutdownableThread):
    """Accepts connections and hands them round-robin to the processors (Kafka's ``Acceptor``).

    Out of file descriptors (``EMFILE``/``ENFILE``), a pending connection stays in the backlog
    and the listening socket stays readable: polling it again at once would spin a core and
    write the same warning thousands of times a second.  The acceptor instead stops accepting
    for a back-off (doubling from :data:`ACCEPT_BACKOFF_MIN_S` to :data:`ACCEPT_BACKOFF_MAX_S`)
    and logs one warning per :data:`ACCEPT_ERROR_LOG_INTERVAL_S`, with how many accepts failed
    since; the processors go on serving the connections they have.
    """

    def __init__(self, host: str, port: int, processors: list[Processor],
                 quotas: ConnectionQuotas, config: BrokerConfig,
                 faults: FaultInjector | None = None,
                 security: ListenerSecurity | None = None) -> None:
        name = security.endpoint.name if security is not None else "PLAINTEXT"
        super().__init__(f"kafkacore-acceptor-{name}")
        self.security = security
        self.processors = processors
        self.faults = faults
        self.quotas = quotas
        self._send_buffer: int = config["socket.send.buffer.bytes"]
        self._receive_buffer: int = config["socket.receive.buffer.bytes"]
        self.server_socket = socket.create_server((host, port), backlog=1024, reuse_port=False)
        self.server_socket.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.server_socket, selectors.EVENT_READ)
        self._current = 0
        self.refused = 0
        #: Connections accepted and closed at once while the broker was isolated.
        self.isolated_refused = 0
        #: accept() calls that failed (out of file descriptors, ...), and the back-off now.
        self.accept_errors = 0
        #: Connections over a quota: a WARNING each, one line per interval.
        self._refusals = RateLimitedLog(log)
        self._backoff_s = 0.0
        self._woken = threading.Event()  # set by wakeup(): ends a back-off early
        self._errors_unlogged = 0
        self._next_error_log = 0.0

    @property
    def port(self) -> int:
        return int(self.server_socket.getsockname()[1])

    def wakeup(self) -> None:
        self._woken.set()

    def do_work(self) -> None:
        if self._backoff_s:
            if self._woken.wait(self._backoff_s):
                return
        if self._selector.select(_POLL_S):
            self._accept_all()

    def on_shutdown(self) -> None:
        self._selector.close()
        self.server_socket.close()

    def _accept_failed(self, exc: OSError) -> None:
        self.accept_errors += 1
        self._errors_unlogged += 1
        if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
            self._backoff_s = min(ACCEPT_BACKOFF_MAX_S,
                                  max(ACCEPT_BACKOFF_MIN_S, self._backoff_s * 2))
        now = time.monotonic()
        if now >= self._next_error_log:
            log.warning("accept failed on %s: %s (%d failed accepts since the last warning; "
                        "accepting again in %.0f ms; open connections are still served)",
                        self.name, exc, self._errors_unlogged, self._backoff_s * 1000)
            self._errors_unlogged = 0
            self._next_error_log = now + ACCEPT_ERROR_LOG_INTERVAL_S

    def _accept_all(self) -> None:
        while self._running:
            try:
                sock, address = self.server_socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. too many open files: back off (see the class)
                self._accept_failed(exc)
                return
            self._backoff_s = 0.0
            host = address[0]
            if self.faults is not None and self.faults.isolated:
                self.isolated_refused += 1
                sock.close()  # an injected fault: accepted and closed, never served
                continue
            try:
                self.quotas.inc(host)
            except TooManyConnectionsError as exc:
                self.refused += 1
                self._refusals.log("connections refused", "refusing a connection from %s: %s",
                                   address, exc)
                sock.close()
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._send_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._send_buffer)
            if self._receive_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._receive_buffer)
            processor = self._next_processor()
            if processor is None:
                self.quotas.dec(host)
                sock.close()
                continue
            processor.accept(sock, host, self.security)

    def _next_processor(self) -> Processor | None:
        """Round-robin over the processors still alive: a dead one would never answer."""
        for _ in range(len(self.processors)):
            processor = self.processors[self._current % len(self.processors)]
            self._current += 1
            if processor.is_alive():
                return processor
        log.error("%s: no network thread is alive; closing a new connection", self.name)
        return None


class SocketServer:
    """An acceptor per listener; the processors and the connection quotas they share."""

    def __init__(self, config: BrokerConfig, channel: RequestChannel,
                 faults: FaultInjector | None = None,
                 security: dict[str, ListenerSecurity | None] | None = None) -> None:
        self.config = config
        self.request_channel = channel
        self.faults = faults if faults is not None else FaultInjector()
        self.connection_quotas = ConnectionQuotas(
            config["max.connections"],
            config["max.connections.per.ip"],
            config["max.connections.per.ip.overrides"],
        )
        #: One pool for every processor: the bound is the broker's (queued.max.request.bytes).
        self.memory_pool = MemoryPool(config["queued.max.request.bytes"])
        if security is None:
            security = build_listener_security(config)
        #: SASL listeners' authentication steps run here, off the network threads.
        self.authentication_executor: AuthenticationExecutor | None = None
        if any(s is not None and s.credentials is not None for s in security.values()):
            self.authentication_executor = AuthenticationExecutor(
                config["connection.failed.authentication.delay.ms"])
        self.processors = [
            Processor(i, config, channel, self.connection_quotas, self.faults, self.memory_pool,
                      self.authentication_executor)
            for i in range(config["num.network.threads"])
        ]
        #: listener name -> its acceptor, in the order of ``listeners``.
        self.acceptors: dict[str, Acceptor] = {}
        for endpoint in config.listeners:
            self.acceptors[endpoint.name] = Acceptor(
                endpoint.host, endpoint.port, self.processors, self.connection_quotas, config,
                self.faults, security.get(endpoint.name),
            )
        #: The first listener's acceptor.
        self.acceptor = next(iter(self.acceptors.values()))

    @property
    def bound_port(self) -> int:
        """The port listened on (the one the OS chose when the listener says port 0)."""
        return self.acceptor.port

    def bound_port_of(self, listener: str) -> int:
        """The port of the listener named ``listener``."""
        return self.acceptors[listener.upper()].port

    def endpoints(self) -> list[EndPoint]:
        """The listeners with the ports actually bound."""
        return [EndPoint(e.name, e.host, self.acceptors[e.name].port, e.security_protocol)
                for e in self.config.listeners]

    def startup(self) -> None:
        if self.authentication_executor is not None:
            self.authentication_executor.start()
        for p in self.processors:
            p.start()
        for acceptor in self.acceptors.values():
            acceptor.start()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        for acceptor in self.acceptors.values():
            acceptor.initiate_shutdown()
        for acceptor in self.acceptors.values():
            if acceptor.is_alive():
                acceptor.join(timeout_s)
            else:
                acceptor.server_socket.close()
        for p in self.processors:
            p.initiate_shutdown()
        for p in self.processors:
            if p.is_alive():
                p.join(timeout_s)
            elif p.ident is None:
                # Never started (a broker that stopped before it caught up with the metadata
                # log): its own loop did not run on_shutdown, which closes its sockets.
                p.on_shutdown()
        if self.authentication_executor is not None:
            self.authentication_executor.shutdown(timeout_s)

    def statistics(self) -> list[dict[str, int]]:
        """One dict of counters per processor (connections, accepted, requests, ...)."""
        return [p.statistics() for p in self.processors]
